// Renders inspector results: a table for people, JSON for scripts (`tpcomm inspect --json`,
// `tpcomm doctor --json`). Both list every image of every file, a summary of the native and PTX
// targets, and one verdict per requested compute capability.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/json.h"
#include "inspect/inspect.h"

namespace tpcomm::inspect {

using CcList = std::vector<std::pair<int, int>>;  // (major, minor) pairs

std::string humanReport(const std::vector<FileReport>& files, const CcList& ccs);

// {"files": [{"path", "elf_type", "errors": [...], "containers": [{"section", "offset", "size",
//   "entries": [{"kind", "target", "sm", "variant", "compressed", "stored_size", "size",
//   "header_size", "flags", "contents", "problem", "kernels", "kernel_names": [...]}]}],
//   "native": [...], "ptx": [...], "lto_ir": [...],
//   "verdicts": [{"cc", "verdict", "can_run", "detail"}]}], "all_can_run": bool}
// kind: SASS | PTX | LTO-IR | unknown; variant: "" | "a" | "f"; contents: read | not-opened |
// corrupt (problem says why when not read); kernels: -1 when not read; verdict: native |
// ptx-jit | no-image | no-device-code | unknown (can_run false: not vouched for).
// jsonValue() for embedding (doctor).
json::Value jsonValue(const std::vector<FileReport>& files, const CcList& ccs);
std::string jsonReport(const std::vector<FileReport>& files, const CcList& ccs);

// True when every file can run on every cc (kNative, kPtxJit or kNoDeviceCode).
bool allCanRun(const std::vector<FileReport>& files, const CcList& ccs);
// True when some file certainly cannot run on some cc (kNoImage; kUnknown is not certain).
bool anyCannotRun(const std::vector<FileReport>& files, const CcList& ccs);

}  // namespace tpcomm::inspect
