// One parser for byte counts written by people: the TPCOMM_* size variables and tpcomm-bench's
// --min/--max. "65536", "64K", "64KB", "64KiB", "16m", "1G": a whole number with an optional
// K, M or G (powers of 1024, any case), optionally followed by i, B or iB.
#pragma once

#include <cstddef>
#include <string>

namespace tpcomm {

// True and *out set on success; else false and *why says what is wrong (junk, no digits, an
// unknown suffix, or a value that does not fit in size_t). *out is untouched on failure.
bool parseByteSize(const char* text, size_t* out, std::string* why);

}  // namespace tpcomm
