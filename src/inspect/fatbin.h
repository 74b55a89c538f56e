// Walks the CUDA fat binaries in one ELF section (.nv_fatbin or __nv_relfatbin) and lists their
// images: kind, architecture with its a/f variant, compression, size.
//
// NVIDIA does not document the format. The layout below was assembled from public
// reimplementations (ZLUDA's dark_api fatbin reader, the nvopen-tools FORMAT_SPECIFICATION.md,
// a Kaitai description of fatbin files, LLVM's ELF.h notes) and then checked field by field
// against nvcc 13.0 output: objects built with
//   -gencode arch=compute_{80,90,100,120}[a|f],code={sm_*,compute_*}, -arch=sm_90a, -dlto,
//   code=lto_90, -rdc=true, -G, -Xfatbin -compress-all, --no-compress, -shared, and linked
//   programs, dumped byte by byte and compared with what `nvcc --dryrun` handed to `fatbinary`
//   (--image3=kind=elf|ptx|nvvm,sm=90a,...), i.e. with what each file must contain;
// then on the H200 machine against `cuobjdump --list-elf --list-ptx` (same images, same order)
// and the driver (cudaFuncGetAttributes agrees with every cc 9.0 verdict).
//
// Section = containers back to back (nvcc keeps their sizes multiples of 8; zero bytes between
// containers, as a linker may pad, are skipped):
//   container header, 16 bytes:
//     +0 u32 magic 0xBA55ED50   +4 u16 version (1)   +6 u16 header size (16)
//     +8 u64 size of the entries that follow the header
//   entry ("file") header, `header size` bytes: 64, 72, 80, 96, 112 and 120 all occur (nvcc 13:
//   64 for sm_<100 cubins, 72 for -G cubins (+ source name), 80 for PTX, 96 for images with an
//   options block, 112 for sm_100+ cubins, 120 for LTO IR), so the walk always advances by the
//   header's own size fields:
//     +0  u16 kind: 1 = PTX, 2 = ELF cubin (SASS), 8 = NVVM IR for link-time optimization
//     +2  u16 entry version (0x0101)
//     +4  u32 header size
//     +8  u64 payload size, padded to 8: the next entry starts at header size + this
//     +16 u32 compressed payload size (0 when not compressed)
//     +20 u32 offset of an options block inside the header (0 = none)
//     +24 u32 code version: PTX ISA (major << 16 | minor) for PTX, cubin ABI version for ELF
//     +28 u32 SM number (80, 90, 100, 120...)
//     +32 u32 name offset, +36 u32 name length (the source file name in -G builds, else 0)
//     +40 u64 flags (below)
//     +48 u64 unknown (0, except on LTO IR)
//     +56 u64 uncompressed payload size (0 when not compressed)
//   flags: 0x1 64-bit, 0x2 debug (-G), 0x10 Linux; compression 0x8000 (a zstd frame; nvcc 13:
//   PTX by default, everything with -Xfatbin -compress-all or --compress-mode=size, -G cubins),
//   0x2000 (one raw LZ4 block; nvcc 13 --compress-mode=speed, CUDA 11-12's default), the
//   compressed payload being the `compressed size` bytes after the header (decompress.h); per
//   ZLUDA (not produced here) 0x1000 (an older compression, codec unknown), 0x20 macOS,
//   0x40 Windows;
//   0x100000 arch-specific `a` target, 0x200000 family-specific `f` target (both verified on
//   cubins and PTX for sm_90a/100a/100f/120a/120f vs plain sm_100/120).
// The variant must come from these flags: nvcc 13 writes identical cubin e_flags for sm_120,
// sm_120a and sm_120f (0x6007802), and for sm_100/100a/100f (0x6006402), checked here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tpcomm::inspect {

enum class ImageKind { kCubin, kPtx, kLtoIr, kUnknown };
enum class ArchVariant { kPlain, kArchSpecific /* sm_90a */, kFamilySpecific /* sm_100f */ };

constexpr uint32_t kFatbinMagic = 0xBA55ED50u;

// Entry header flag bits (see the layout above).
constexpr uint64_t kFlagCompressedOld = 0x1000;
constexpr uint64_t kFlagCompressedLz4 = 0x2000;
constexpr uint64_t kFlagCompressedZstd = 0x8000;
constexpr uint64_t kFlagArchSpecific = 0x100000;
constexpr uint64_t kFlagFamilySpecific = 0x200000;

enum class ImageContents {
  kRead,       // opened: kernels and kernel_names are exact
  kNotOpened,  // not looked into: LTO IR, an unknown kind or codec, the decompression budget
  kCorrupt     // opened and broken (not a CUDA ELF file, a stream that does not decompress):
               // the driver cannot load it either
};

struct FatbinEntry {
  ImageKind kind = ImageKind::kUnknown;
  uint16_t raw_kind = 0;
  int sm = 0;  // 90 for sm_90a; major = sm / 10, minor = sm % 10
  ArchVariant variant = ArchVariant::kPlain;
  bool compressed = false;
  uint64_t stored_size = 0;  // bytes in the file (compressed size when compressed)
  uint64_t size = 0;         // bytes once uncompressed
  uint32_t header_size = 0;
  uint32_t code_version = 0;
  uint64_t flags = 0;
  uint64_t offset = 0;  // of the entry header, from the start of the section
  // Whether the image's contents were read (decompressed where needed): its kernels are known
  // only then. Containers whose images hold no kernel at all, like the empty device-link stub
  // nvcc adds to linked programs, cannot fail a launch.
  ImageContents contents = ImageContents::kNotOpened;
  std::string problem;  // why not kRead ("corrupt cubin: no section table (e_shoff 0)", ...)
  // The kernels' mangled names: a cubin's .text.<name> sections, PTX's .entry directives;
  // `kernels` counts them, -1 when not kRead.
  std::vector<std::string> kernel_names;
  int kernels = -1;
};

struct FatbinContainer {
  std::string section;  // ".nv_fatbin" or "__nv_relfatbin"
  uint64_t offset = 0;  // of the container header, from the start of the section
  uint64_t size = 0;    // header + entries
  std::vector<FatbinEntry> entries;
};

// How many bytes the images of one file may decompress to, in total, and one image at most: a
// hostile header may claim gigabytes from a few bytes of zstd. Images past the budget stay
// kNotOpened (their kernels unknown), the walk goes on.
struct DecompressBudget {
  uint64_t left = 0;
  static constexpr uint64_t kMaxImage = 1ull << 30;
  // Generous for real files (nvcc's compression saves 2-8x): 16x the file plus 256 MiB.
  static DecompressBudget forFile(uint64_t file_size) {
    return DecompressBudget{16 * file_size + (256ull << 20)};
  }
};

// Parses every container in the bytes of one section and appends them to *out, decompressing
// cubin and PTX images to list their kernels (within *budget; nullptr: the budget of a file the
// size of the section). Returns false with *error set ("truncated fatbin container at
// .nv_fatbin+0x40: ...") when the bytes do not follow the layout; containers parsed before the
// fault are kept. A corrupt image is no layout fault: it is marked kCorrupt and the walk goes on.
bool parseFatbinSection(const std::string& section, const uint8_t* data, size_t size,
                        std::vector<FatbinContainer>* out, std::string* error,
                        DecompressBudget* budget = nullptr);

// "sm_90a" / "compute_120f" / "lto_90" style name of an entry's target.
std::string targetName(const FatbinEntry& e);
const char* kindName(ImageKind kind);      // "SASS", "PTX", "LTO-IR", "unknown"
const char* variantSuffix(ArchVariant v);  // "", "a", "f"

}  // namespace tpcomm::inspect
