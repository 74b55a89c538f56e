// libFuzzer target: an ELF image in memory (parseElfInMemory), the reader the inspector uses for
// the cubins embedded in fat binaries.
#include "inspect/elf_reader.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tpcomm::inspect::ElfImage elf;
  std::string error;
  tpcomm::inspect::parseElfInMemory(data, size, &elf, &error);
  return 0;
}
