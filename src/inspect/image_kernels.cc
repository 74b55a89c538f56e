#include "inspect/image_kernels.h"

#include <cctype>

#include "inspect/elf_reader.h"

namespace tpcomm::inspect {

namespace {

constexpr uint16_t kElfMachineCuda = 190;  // EM_CUDA

bool isNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.';
}

}  // namespace

bool cubinKernels(const uint8_t* data, size_t size, std::vector<std::string>* names,
                  std::string* error) {
  names->clear();
  ElfImage cubin;
  std::string why;
  if (!parseElfInMemory(data, size, &cubin, &why)) {
    *error = "corrupt cubin: " + why;
    return false;
  }
  if (cubin.machine != kElfMachineCuda) {
    *error = "corrupt cubin: e_machine " + std::to_string(cubin.machine) + ", not CUDA (190)";
    return false;
  }
  if (cubin.sections.empty()) {
    *error = "corrupt cubin: no section table (e_shoff 0)";
    return false;
  }
  bool named = false;
  for (const ElfSection& s : cubin.sections) {
    named |= !s.name.empty();
    if (s.name.compare(0, 6, ".text.") == 0) names->push_back(s.name.substr(6));
  }
  if (!named) {
    *error = "corrupt cubin: no section names (bad e_shstrndx)";
    return false;
  }
  return true;
}

std::vector<std::string> ptxKernels(const std::string& text) {
  std::vector<std::string> names;
  const size_t n = text.size();
  size_t i = 0;
  bool entry_next = false;  // the last token was `.entry`: the next one is the kernel's name
  while (i < n) {
    const char c = text[i];
    if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      while (i < n && text[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < n && text[i + 1] == '*') {
      const size_t end = text.find("*/", i + 2);
      i = end == std::string::npos ? n : end + 2;
    } else if (c == '"') {  // .file paths: whatever they contain is no directive
      const size_t end = text.find('"', i + 1);
      i = end == std::string::npos ? n : end + 1;
    } else if (isNameChar(c)) {
      size_t j = i;
      while (j < n && isNameChar(text[j])) ++j;
      const std::string token = text.substr(i, j - i);
      if (entry_next) names.push_back(token);
      entry_next = token == ".entry";
      i = j;
    } else {
      if (!std::isspace(static_cast<unsigned char>(c))) entry_next = false;
      ++i;
    }
  }
  return names;
}

}  // namespace tpcomm::inspect
