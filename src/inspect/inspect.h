// The fat-binary inspector's API, for `tpcomm inspect`, `tpcomm doctor` and the start-up check:
// read the CUDA images an ELF file carries and say whether a device of a given compute
// capability can run them. Pure C++: no CUDA driver, runtime or headers, no GPU.
//
//   tpcomm::inspect::FileReport r;
//   if (!inspectFile("/usr/lib/libtpcomm.so", &r)) puts(r.errors[0].c_str());
//   Verdict v = verdictFor(r, 9, 0);  // v.kind == VerdictKind::kNative, v.detail "sm_90 cubin"
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "inspect/elf_reader.h"
#include "inspect/fatbin.h"
#include "inspect/verdict.h"

namespace tpcomm::inspect {

struct FileReport {
  std::string path;
  uint16_t elf_type = 0;  // kElfRelocatable / kElfExecutable / kElfShared
  // Every container of .nv_fatbin and __nv_relfatbin, in file order; each holds its entries.
  std::vector<FatbinContainer> containers;
  // Why the file could not be read completely (no such file, not ELF, truncated container...).
  // Empty on success. Containers read before the fault stay listed.
  std::vector<std::string> errors;

  size_t entryCount() const;
};

// Reads `path` and lists its CUDA images into *out. Returns false, with the reason in
// out->errors, when the file cannot be opened, is not a 64-bit little-endian ELF file, or holds
// a fat binary that does not parse.
bool inspectFile(const std::string& path, FileReport* out);

// Whether a device of compute capability cc_major.cc_minor can run every kernel of the file.
// The driver loads the containers of .nv_fatbin (one per translation unit, or one per device
// link); each must offer a compatible cubin, else compatible PTX. A relocatable object that
// only has __nv_relfatbin is judged by those containers instead. Containers whose cubins hold
// no kernel (nvcc's empty device-link stub) are skipped; a file without device code gets
// kNoDeviceCode, which counts as "can run": there is nothing that could fail to load. A file
// that could not be read completely gets kNoImage ("unknown: ..."): it cannot be vouched for.
Verdict verdictFor(const FileReport& report, int cc_major, int cc_minor);

// Parses "9.0" / "12.1" into major and minor; false on anything else.
bool parseCc(const std::string& text, int* major, int* minor);

// The compute capabilities `--cc all-known` stands for: every architecture tpcomm targets and
// the ones their families reach (7.5 8.0 8.6 8.7 8.9 9.0 10.0 10.3 11.0 12.0 12.1).
const std::vector<std::pair<int, int>>& knownCcs();

}  // namespace tpcomm::inspect
