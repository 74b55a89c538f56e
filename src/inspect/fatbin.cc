#include "inspect/fatbin.h"

#include <cstdio>

#include "inspect/bytes.h"
#include "inspect/decompress.h"
#include "inspect/image_kernels.h"

namespace tpcomm::inspect {

namespace {

constexpr uint64_t kContainerHeaderSize = 16;
constexpr uint64_t kEntryBaseSize = 64;  // the fields every entry header has (fatbin.h)
constexpr uint64_t kFlagAnyCompression =
    kFlagCompressedOld | kFlagCompressedLz4 | kFlagCompressedZstd;

std::string where(const std::string& section, uint64_t offset) {
  char buf[32];
  snprintf(buf, sizeof(buf), "+0x%llx", static_cast<unsigned long long>(offset));
  return section + buf;
}

ImageKind kindOf(uint16_t raw) {
  switch (raw) {
    case 1:
      return ImageKind::kPtx;
    case 2:
      return ImageKind::kCubin;
    case 8:
      return ImageKind::kLtoIr;
    default:
      return ImageKind::kUnknown;
  }
}

// Opens a cubin or PTX image (decompressing it first where needed) and lists its kernels into e.
// `payload` is the image's `padded` bytes after its header.
void readContents(const uint8_t* payload, uint64_t padded, uint32_t compressed_size,
                  DecompressBudget* budget, FatbinEntry* e) {
  if (e->kind != ImageKind::kCubin && e->kind != ImageKind::kPtx) return;  // LTO IR: bitcode
  const Codec codec = codecOf(e->flags);
  std::string inflated;
  const uint8_t* bytes = payload;
  uint64_t size = padded;
  if (codec == Codec::kUnknown) {
    char flags[32];
    snprintf(flags, sizeof(flags), "0x%llx", static_cast<unsigned long long>(e->flags));
    e->problem =
        std::string("compressed with a codec the inspector does not know (flags ") + flags + ")";
    return;
  }
  if (codec != Codec::kNone) {
    if (compressed_size == 0 || compressed_size > padded) {
      e->contents = ImageContents::kCorrupt;
      e->problem = "compressed size " + std::to_string(compressed_size) +
                   " does not fit the payload of " + std::to_string(padded) + " bytes";
      return;
    }
    if (e->size > DecompressBudget::kMaxImage || e->size > budget->left) {
      e->problem = "not decompressed: " + std::to_string(e->size) +
                   " bytes exceed the inspector's decompression budget for this file";
      return;
    }
    budget->left -= e->size;
    std::string error;
    if (!decompress(codec, payload, compressed_size, e->size, &inflated, &error)) {
      e->contents = ImageContents::kCorrupt;
      e->problem = error;
      return;
    }
    bytes = reinterpret_cast<const uint8_t*>(inflated.data());
    size = inflated.size();
  }
  if (e->kind == ImageKind::kCubin) {
    std::string error;
    if (!cubinKernels(bytes, size, &e->kernel_names, &error)) {
      e->contents = ImageContents::kCorrupt;
      e->problem = error;
      return;
    }
  } else {
    e->kernel_names = ptxKernels(std::string(reinterpret_cast<const char*>(bytes), size));
  }
  e->contents = ImageContents::kRead;
  e->kernels = static_cast<int>(e->kernel_names.size());
}

// Parses the entries between `begin` and `end` (offsets in the section) into *c.
bool parseEntries(const std::string& section, const uint8_t* data, uint64_t begin, uint64_t end,
                  DecompressBudget* budget, FatbinContainer* c, std::string* error) {
  uint64_t pos = begin;
  while (pos < end) {
    if (end - pos < kEntryBaseSize) {
      *error = "truncated fatbin entry header at " + where(section, pos) + ": " +
               std::to_string(end - pos) + " bytes left in the container, need 64";
      return false;
    }
    const uint8_t* h = data + pos;
    FatbinEntry e;
    e.offset = pos;
    e.raw_kind = load16(h);
    e.kind = kindOf(e.raw_kind);
    e.header_size = load32(h + 4);
    const uint64_t padded = load64(h + 8);
    const uint32_t compressed_size = load32(h + 16);
    e.code_version = load32(h + 24);
    e.sm = static_cast<int>(load32(h + 28));
    e.flags = load64(h + 40);
    const uint64_t uncompressed_size = load64(h + 56);
    if (e.header_size < kEntryBaseSize || e.header_size > end - pos) {
      *error = "bad fatbin entry header size " + std::to_string(e.header_size) + " at " +
               where(section, pos) + " (container has " + std::to_string(end - pos) +
               " bytes left)";
      return false;
    }
    if (padded > end - pos - e.header_size) {
      *error = "truncated fatbin entry at " + where(section, pos) + ": payload of " +
               std::to_string(padded) + " bytes, container has " +
               std::to_string(end - pos - e.header_size) + " left";
      return false;
    }
    e.compressed = (e.flags & kFlagAnyCompression) != 0;
    if (e.flags & kFlagArchSpecific)
      e.variant = ArchVariant::kArchSpecific;
    else if (e.flags & kFlagFamilySpecific)
      e.variant = ArchVariant::kFamilySpecific;
    e.stored_size = e.compressed && compressed_size ? compressed_size : padded;
    e.size = e.compressed && uncompressed_size ? uncompressed_size : padded;
    readContents(h + e.header_size, padded, compressed_size, budget, &e);
    c->entries.push_back(e);
    pos += e.header_size + padded;
  }
  return true;
}

}  // namespace

bool parseFatbinSection(const std::string& section, const uint8_t* data, size_t size,
                        std::vector<FatbinContainer>* out, std::string* error,
                        DecompressBudget* budget) {
  DecompressBudget own = DecompressBudget::forFile(size);
  if (!budget) budget = &own;
  uint64_t pos = 0;
  while (pos < size) {
    // Containers are 8-byte aligned; the linker pads between them with zeros.
    if (data[pos] == 0) {
      ++pos;
      continue;
    }
    const uint8_t* h = data + pos;
    const uint32_t magic = size - pos >= 4 ? load32(h) : 0;
    if (magic != kFatbinMagic) {
      char buf[96];
      snprintf(buf, sizeof(buf), ": found 0x%08x, expected the fatbin magic 0x%08x", magic,
               kFatbinMagic);
      *error = "no fatbin container at " + where(section, pos) + buf;
      return false;
    }
    if (size - pos < kContainerHeaderSize) {
      *error = "truncated fatbin container header at " + where(section, pos) + ": " +
               std::to_string(size - pos) + " bytes left in the section, need 16";
      return false;
    }
    const uint64_t header_size = load16(h + 6);
    const uint64_t body_size = load64(h + 8);
    if (header_size < kContainerHeaderSize || header_size > size - pos) {
      *error = "bad fatbin container header size " + std::to_string(header_size) + " at " +
               where(section, pos);
      return false;
    }
    if (body_size > size - pos - header_size) {
      *error = "truncated fatbin container at " + where(section, pos) + ": header says " +
               std::to_string(header_size + body_size) + " bytes, the section has " +
               std::to_string(size - pos) + " left";
      return false;
    }
    FatbinContainer c;
    c.section = section;
    c.offset = pos;
    c.size = header_size + body_size;
    const bool ok = parseEntries(section, data, pos + header_size, pos + c.size, budget, &c, error);
    out->push_back(std::move(c));
    if (!ok) return false;
    pos += header_size + body_size;
  }
  return true;
}

const char* kindName(ImageKind kind) {
  switch (kind) {
    case ImageKind::kCubin:
      return "SASS";
    case ImageKind::kPtx:
      return "PTX";
    case ImageKind::kLtoIr:
      return "LTO-IR";
    default:
      return "unknown";
  }
}

const char* variantSuffix(ArchVariant v) {
  switch (v) {
    case ArchVariant::kArchSpecific:
      return "a";
    case ArchVariant::kFamilySpecific:
      return "f";
    default:
      return "";
  }
}

std::string targetName(const FatbinEntry& e) {
  const char* prefix = "sm_";
  if (e.kind == ImageKind::kPtx) prefix = "compute_";
  if (e.kind == ImageKind::kLtoIr) prefix = "lto_";
  return prefix + std::to_string(e.sm) + variantSuffix(e.variant);
}

}  // namespace tpcomm::inspect
