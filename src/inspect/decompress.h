// Decompresses one fat-binary image payload. nvcc's fatbinary compresses images with one of two
// codecs, named by the entry header's flags (src/inspect/fatbin.h):
//   0x8000: a standard zstd frame (the zstd magic 28 b5 2f fd leads the payload);
//   0x2000: one raw LZ4 block, no LZ4 frame header (what LZ4_decompress_safe reads).
// Both were checked on nvcc 13.0 output: `-Xfatbin -compress-all` and `--compress-mode=size` write
// zstd, `--compress-mode=speed` LZ4; the decompressed cubins are ELF files of exactly the
// uncompressed size the header gives. The codecs are liblz4 and libzstd: a decompressor is not
// something to write by hand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tpcomm::inspect {

enum class Codec { kNone, kLz4, kZstd, kUnknown };

// The codec an entry header's flags name; kUnknown for a compression bit no codec is known for
// (0x1000, which ZLUDA calls "compressed, old") or for several bits at once.
Codec codecOf(uint64_t flags);
const char* codecName(Codec codec);  // "none", "lz4", "zstd", "unknown"

// Decompresses `size` bytes at `data` into *out, which must come out exactly `expected` bytes
// long. False with *error set ("zstd: Unknown frame descriptor", "lz4: 100 of 3368 bytes") when
// the payload is not a valid stream of that codec or of that length.
bool decompress(Codec codec, const uint8_t* data, size_t size, uint64_t expected, std::string* out,
                std::string* error);

}  // namespace tpcomm::inspect
