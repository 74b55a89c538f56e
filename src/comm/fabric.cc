#include "comm/fabric.h"

#include <cstring>

#include "common/error.h"
#include "common/log.h"

namespace tpcomm {

tpcommResult_t detectFabric(tpcommComm* c, const RankInfo* all) {
  bool any_no_p2p = false;
  bool all_nvlink = true;
  c->ranks_share_gpu = false;
  for (int a = 0; a < c->world; ++a)
    for (int b = a + 1; b < c->world; ++b)
      if (strcmp(all[a].pci_bus_id, all[b].pci_bus_id) == 0) c->ranks_share_gpu = true;
  for (int p = 0; p < c->world; ++p) {
    if (strcmp(all[p].pci_bus_id, all[c->rank].pci_bus_id) == 0) continue;
    int peer_dev = -1;
    if (cudaDeviceGetByPCIBusId(&peer_dev, all[p].pci_bus_id) != cudaSuccess) {
      cudaGetLastError();
      // Not visible here (CUDA_VISIBLE_DEVICES): IPC may still reach it; assume PCIe P2P.
      all_nvlink = false;
      continue;
    }
    int can = 0, atomics = 0;
    TPCOMM_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, c->device, peer_dev));
    if (!can) {
      any_no_p2p = true;
      continue;
    }
    // Native P2P atomics are an NVLink property (PCIe P2P does not carry them).
    TPCOMM_CUDA_CHECK(cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported,
                                                c->device, peer_dev));
    if (!atomics) all_nvlink = false;
  }
  c->fabric = any_no_p2p ? Fabric::kHost : all_nvlink ? Fabric::kNvlink : Fabric::kPcie;
  if (c->settings.transport == 2) c->fabric = Fabric::kHost;
  if (c->settings.transport == 1 && any_no_p2p)
    return fail(tpcommUnsupported,
                "TPCOMM_TRANSPORT=p2p, but some GPU pairs of this communicator have no P2P access");
  c->two_islands = false;
  TPCOMM_INFO(INIT, "rank %d: fabric %s%s", c->rank, fabricName(c->fabric),
              c->ranks_share_gpu ? " (some ranks share a GPU)" : "");
  return tpcommSuccess;
}

}  // namespace tpcomm
