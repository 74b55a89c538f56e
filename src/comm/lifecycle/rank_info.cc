#include "comm/lifecycle/rank_info.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "comm/lifecycle/host_id.h"
#include "common/error.h"
#include "topo/topology.h"

namespace tpcomm {
namespace {

void readBootId(char* out, size_t n) {
  memset(out, 0, n);
  if (FILE* f = fopen("/proc/sys/kernel/random/boot_id", "r")) {
    if (!fgets(out, static_cast<int>(n), f)) out[0] = '\0';
    fclose(f);
  }
  out[strcspn(out, "\n")] = '\0';
}

}  // namespace

tpcommResult_t fillIdentity(int rank, int nranks, int device, const Settings& s, RankInfo* out) {
  memset(out, 0, sizeof(*out));
  out->magic = kInfoMagic;
  out->version = kInfoVersion;
  out->rank = rank;
  out->nranks = nranks;
  out->pid = static_cast<int32_t>(getpid());
  out->device = device;
  readBootId(out->boot_id, sizeof(out->boot_id));
  snprintf(out->host_id, sizeof(out->host_id), "%s", thisHostId().c_str());
  TPCOMM_CUDA_CHECK(cudaDeviceGetPCIBusId(out->pci_bus_id, sizeof(out->pci_bus_id), device));
  snprintf(out->pci_bus_id_norm, sizeof(out->pci_bus_id_norm), "%s",
           topo::normalizeBusId(out->pci_bus_id).c_str());
  TPCOMM_CUDA_CHECK(
      cudaDeviceGetAttribute(&out->cc_major, cudaDevAttrComputeCapabilityMajor, device));
  TPCOMM_CUDA_CHECK(
      cudaDeviceGetAttribute(&out->cc_minor, cudaDevAttrComputeCapabilityMinor, device));
  out->slot_bytes = s.slot_bytes;
  out->timeout_ms = s.timeout_ms;
  out->max_blocks = s.max_blocks;
  out->transport = s.transport;
  out->algo = s.algo;
  out->strict = s.strict ? 1 : 0;
  out->nccl_mode = s.nccl_mode;
  const std::string knobs = planKnobsText(s.knobs);
  if (knobs.size() >= sizeof(out->knobs))
    return fail(tpcommInvalidArgument,
                "launch knobs: %zu characters of them differ from the defaults, more than a rank "
                "handle carries (%zu): %s",
                knobs.size(), sizeof(out->knobs) - 1, knobs.c_str());
  snprintf(out->knobs, sizeof(out->knobs), "%s", knobs.c_str());
  return tpcommSuccess;
}

void packHandle(const RankInfo& info, tpcommRankHandle* h) {
  memset(h, 0, sizeof(*h));
  memcpy(h->internal, &info, sizeof(info));
}

tpcommResult_t unpackHandles(const tpcommRankHandle* all, int nranks, RankInfo* out) {
  for (int r = 0; r < nranks; ++r) {
    RankInfo& i = out[r];
    memcpy(&i, all[r].internal, sizeof(RankInfo));
    if (i.magic != kInfoMagic)
      return fail(tpcommInvalidArgument,
                  "rank handle %d: not made by tpcommCommInitRankBegin (bad magic)", r);
    if (i.version != kInfoVersion)
      return fail(tpcommRemoteError, "rank handle %d: version %u, this library speaks %u", r,
                  i.version, kInfoVersion);
    TPCOMM_CHECK(checkHandleFields(i, r));
    if (i.rank != r)
      return fail(tpcommInvalidArgument,
                  "rank handles out of order: position %d holds rank %d's (gather in rank order)",
                  r, i.rank);
    if (i.nranks != nranks)
      return fail(tpcommInvalidArgument, "rank %d was initialised with nranks=%d, this rank %d", r,
                  i.nranks, nranks);
    const RankInfo& z = out[0];
    if (i.slot_bytes != z.slot_bytes || i.timeout_ms != z.timeout_ms ||
        i.max_blocks != z.max_blocks || i.transport != z.transport || i.algo != z.algo ||
        i.strict != z.strict || i.nccl_mode != z.nccl_mode)
      return fail(
          tpcommRemoteError,
          "rank %d settings differ from rank 0's (bufferBytes %llu/%llu, timeoutMs %d/%d, "
          "maxBlocks %d/%d, transport %d/%d, algo %d/%d, strict %d/%d, ncclMode %d/%d): every "
          "rank must use the same config and TPCOMM_* environment",
          r, static_cast<unsigned long long>(i.slot_bytes),
          static_cast<unsigned long long>(z.slot_bytes), i.timeout_ms, z.timeout_ms, i.max_blocks,
          z.max_blocks, i.transport, z.transport, i.algo, z.algo, i.strict, z.strict, i.nccl_mode,
          z.nccl_mode);
    if (strcmp(i.knobs, z.knobs) != 0)
      return fail(tpcommRemoteError,
                  "rank %d's launch knobs differ from rank 0's (\"%s\" / \"%s\", as they differ "
                  "from the defaults): every rank must use the same TPCOMM_KNOBS and "
                  "config.launchKnobs, or the ranks would plan different kernels",
                  r, i.knobs, z.knobs);
  }
  return tpcommSuccess;
}

}  // namespace tpcomm
