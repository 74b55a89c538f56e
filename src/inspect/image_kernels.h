// The kernels one image holds, read from its (decompressed) bytes: the `.text.<name>` sections of
// a SASS cubin (ptxas gives each kernel its own), or the `.entry <name>` directives of PTX.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tpcomm::inspect {

// Lists the kernels (mangled names) of a cubin. False with *error set when the bytes are not a
// readable CUDA ELF file: no ELF header, e_machine not CUDA, no section table (e_shoff 0), no
// section names (a bad e_shstrndx), a table past the end. A cubin nvcc wrote always has all of
// them, so such an image is corrupt, not "without kernels".
bool cubinKernels(const uint8_t* data, size_t size, std::vector<std::string>* names,
                  std::string* error);

// Lists the kernels of PTX text: the name after each `.entry` directive, comments skipped.
std::vector<std::string> ptxKernels(const std::string& text);

}  // namespace tpcomm::inspect
