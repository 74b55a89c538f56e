#include "inspect/inspect.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "inspect/elf_reader.h"

namespace tpcomm::inspect {

namespace {

constexpr uint32_t kShtNobits = 8;

// Closes the descriptor on every return path.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

bool readAt(int fd, uint64_t file_size, uint64_t offset, uint64_t size, std::string* out) {
  if (offset > file_size || size > file_size - offset) return false;
  out->resize(size);
  uint64_t done = 0;
  while (done < size) {
    const ssize_t n = pread(fd, &(*out)[done], size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<uint64_t>(n);
  }
  return true;
}

bool isFatbinSection(const std::string& name) {
  return name == ".nv_fatbin" || name == "__nv_relfatbin";
}

}  // namespace

size_t FileReport::entryCount() const {
  size_t n = 0;
  for (const FatbinContainer& c : containers) n += c.entries.size();
  return n;
}

bool inspectFile(const std::string& path, FileReport* out) {
  *out = FileReport();
  out->path = path;
  auto fail = [out](const std::string& message) {
    out->errors.push_back(message);
    return false;
  };

  Fd f;
  f.fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) return fail(std::string("cannot open: ") + strerror(errno));
  struct stat st;
  if (fstat(f.fd, &st) != 0) return fail(std::string("cannot stat: ") + strerror(errno));
  if (S_ISDIR(st.st_mode)) return fail("is a directory, not an ELF file");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);

  std::string magic;
  if (readAt(f.fd, file_size, 0, 8, &magic) && magic == "!<arch>\n")
    return fail("a static archive, not an ELF file: extract its objects (ar x) and inspect those");

  ByteReader read = [&f, file_size](uint64_t offset, uint64_t size, std::string* bytes) {
    return readAt(f.fd, file_size, offset, size, bytes);
  };
  ElfImage elf;
  std::string error;
  if (!parseElf(read, file_size, &elf, &error)) return fail(error);
  out->elf_type = elf.type;

  // Section headers may alias: several naming the same bytes (a hostile file: 4096 headers on
  // one 1 MiB fat binary). Each (offset, size) is parsed once, and the bytes parsed in all stay
  // within the file's size, so the work is bounded by the file, not by its section count.
  std::set<std::pair<uint64_t, uint64_t>> seen;
  uint64_t parsed = 0;
  DecompressBudget budget = DecompressBudget::forFile(file_size);
  for (const ElfSection& s : elf.sections) {
    if (!isFatbinSection(s.name) || s.type == kShtNobits) continue;
    if (!seen.insert({s.offset, s.size}).second) continue;
    std::string bytes;
    if (!read(s.offset, s.size, &bytes))
      return fail("truncated: section " + s.name + " (" + std::to_string(s.size) +
                  " bytes at offset " + std::to_string(s.offset) +
                  ") runs past the end of the file (" + std::to_string(file_size) + " bytes)");
    if (s.size > file_size - parsed)
      return fail("fatbin sections overlap: " + std::to_string(seen.size()) +
                  " distinct ones hold more bytes than the file has (" + std::to_string(file_size) +
                  ")");
    parsed += s.size;
    if (!parseFatbinSection(s.name, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                            &out->containers, &error, &budget))
      return fail(error);
  }
  return true;
}

bool parseCc(const std::string& text, int* major, int* minor) {
  const size_t dot = text.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 2 != text.size()) return false;
  for (size_t i = 0; i < text.size(); ++i)
    if (i != dot && (text[i] < '0' || text[i] > '9')) return false;
  if (dot > 2) return false;  // majors are one or two digits
  *major = std::stoi(text.substr(0, dot));
  *minor = text[dot + 1] - '0';
  return *major > 0;
}

const std::vector<std::pair<int, int>>& knownCcs() {
  static const std::vector<std::pair<int, int>> kCcs = {
      {7, 5}, {8, 0}, {8, 6}, {8, 7}, {8, 9}, {9, 0}, {10, 0}, {10, 3}, {11, 0}, {12, 0}, {12, 1}};
  return kCcs;
}

}  // namespace tpcomm::inspect
