// Every field of a rank handle checked before anything reads it: the handles of
// tpcommCommInitRankEnd come from the framework's all-gather, so a truncated, corrupt or foreign
// one must be an error naming the rank and the field, never a read past a string's end.
#include <cstring>

#include "comm/lifecycle/rank_info.h"
#include "common/error.h"
#include "topo/topology.h"

namespace tpcomm {
namespace {

tpcommResult_t badField(int r, const char* field, long long value, const char* expected) {
  return fail(tpcommInvalidArgument,
              "rank handle %d: %s=%lld, expected %s (a corrupt or foreign handle: pass the bytes "
              "of tpcommCommInitRankBegin unchanged)",
              r, field, value, expected);
}

tpcommResult_t checkString(int r, const char* field, const char* s, size_t n) {
  if (memchr(s, '\0', n)) return tpcommSuccess;
  return fail(tpcommInvalidArgument,
              "rank handle %d: %s is not NUL-terminated within its %zu bytes (a corrupt or "
              "foreign handle: pass the bytes of tpcommCommInitRankBegin unchanged)",
              r, field, n);
}

#define TPCOMM_RANGE(field, lo, hi, expected) \
  if (i.field < (lo) || i.field > (hi))       \
  return badField(r, #field, static_cast<long long>(i.field), expected)
#define TPCOMM_STRING(field) TPCOMM_CHECK(checkString(r, #field, i.field, sizeof(i.field)))

}  // namespace

tpcommResult_t checkHandleFields(const RankInfo& i, int r) {
  TPCOMM_STRING(boot_id);
  TPCOMM_STRING(host_id);
  if (i.host_id[0] == '\0')
    return fail(tpcommInvalidArgument,
                "rank handle %d: host_id is empty (a corrupt or foreign handle: pass the bytes of "
                "tpcommCommInitRankBegin unchanged)",
                r);
  TPCOMM_STRING(pci_bus_id);
  TPCOMM_STRING(pci_bus_id_norm);
  TPCOMM_STRING(host_shm);
  TPCOMM_STRING(knobs);
  if (i.host_shm[0] != '\0' && (i.host_shm[0] != '/' || strchr(i.host_shm + 1, '/')))
    return fail(tpcommInvalidArgument,
                "rank handle %d: host_shm is not a shared-memory name (\"/name\", one slash)", r);
  TPCOMM_RANGE(pid, 1, 4194304, "a process id 1..2^22 (Linux pid_max)");
  TPCOMM_RANGE(device, 0, 1023, "a CUDA ordinal 0..1023");
  TPCOMM_RANGE(cc_major, 1, 99, "a compute capability major 1..99");
  TPCOMM_RANGE(cc_minor, 0, 9, "a compute capability minor 0..9");
  if (i.slot_bytes < (64u << 10) || i.slot_bytes > (uint64_t{1} << 34) || i.slot_bytes % 256)
    return badField(r, "slot_bytes", static_cast<long long>(i.slot_bytes),
                    "a multiple of 256 in 65536..2^34");
  TPCOMM_RANGE(timeout_ms, 1, 3600 * 1000, "1..3600000 ms");
  TPCOMM_RANGE(max_blocks, 0, 1024, "0..1024");
  TPCOMM_RANGE(transport, 0, 2, "0 (auto), 1 (p2p) or 2 (host)");
  TPCOMM_RANGE(algo, -1, tpcommNumAlgos - 1, "-1 (auto) or a tpcommAlgo_t");
  if (i.algo == tpcommAlgoAuto)
    return badField(r, "algo", i.algo, "-1 (auto) or a forced algorithm");
  TPCOMM_RANGE(strict, 0, 1, "0 or 1");
  TPCOMM_RANGE(nccl_mode, tpcommNcclAuto, tpcommNcclGiven, "a tpcommNcclMode_t");
  TPCOMM_RANGE(nccl_wanted, 0, r == 0 ? 1 : 0, r == 0 ? "0 or 1" : "0 (only rank 0 offers NCCL)");
  if (i.view.count > static_cast<uint32_t>(kMaxRanks))
    return badField(r, "view.count", i.view.count, "0..8 GPUs (kMaxRanks)");
  if (i.view.fabric_verdict > static_cast<uint8_t>(FabricVerdict::kNoP2p))
    return badField(r, "view.fabric_verdict", i.view.fabric_verdict, "a FabricVerdict 0..3");
  for (uint32_t g = 0; g < i.view.count; ++g) {
    const MachineView::Gpu& gpu = i.view.gpus[g];
    TPCOMM_CHECK(checkString(r, "view.gpus[].bus", gpu.bus, sizeof(gpu.bus)));
    if (gpu.access > 1 || gpu.nvlink > 1 || gpu.broken > 1 ||
        gpu.path > static_cast<uint8_t>(topo::PathClass::kUnknown))
      return fail(tpcommInvalidArgument,
                  "rank handle %d: view.gpus[%u] has access=%u nvlink=%u broken=%u path=%u, "
                  "expected flags 0/1 and a path class 0..%d",
                  r, g, gpu.access, gpu.nvlink, gpu.broken, gpu.path,
                  static_cast<int>(topo::PathClass::kUnknown));
  }
  return tpcommSuccess;
}

#undef TPCOMM_RANGE
#undef TPCOMM_STRING

}  // namespace tpcomm
