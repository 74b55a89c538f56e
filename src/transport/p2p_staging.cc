#include "transport/p2p_staging.h"

#include <cstring>
#include <mutex>
#include <set>
#include <utility>

#include "common/error.h"
#include "common/log.h"

namespace tpcomm {

tpcommResult_t stagingCreate(int device, size_t slot_bytes, bool with_ce, Staging* s) {
  *s = Staging{};
  s->device = device;
  s->slot_bytes = slot_bytes;
  TPCOMM_CUDA_CHECK(cudaSetDevice(device));
  const size_t total = kNumSlots * slot_bytes;
  const size_t pull_bytes = pullOutboxBytes(slot_bytes);
  const size_t ce_bytes = with_ce ? ceAreaBytes(slot_bytes) : 0;
  TPCOMM_CUDA_CHECK(
      cudaMalloc(reinterpret_cast<void**>(&s->buf), total + kPrintBytes + pull_bytes + ce_bytes));
  TPCOMM_CUDA_CHECK(cudaMemset(s->buf, kSentinelByte, total));
  s->prints = s->buf + total;
  // Zeroed together: no record; pull slots need no initial value (a flag says what is current)
  // but their flags start at 0; no CE flag, no acknowledgement.
  TPCOMM_CUDA_CHECK(cudaMemset(s->prints, 0, kPrintBytes + pull_bytes + ce_bytes));
  s->pull = s->prints + kPrintBytes;
  if (with_ce) s->ce = s->pull + pull_bytes;
  TPCOMM_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&s->state), sizeof(RankState)));
  TPCOMM_CUDA_CHECK(cudaMemset(s->state, 0, sizeof(RankState)));
  TPCOMM_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&s->host_error), sizeof(HostError),
                                  cudaHostAllocMapped));
  memset(static_cast<void*>(const_cast<HostError*>(s->host_error)), 0, sizeof(HostError));
  s->host_error->peer = -1;
  TPCOMM_CUDA_CHECK(
      cudaHostGetDevicePointer(reinterpret_cast<void**>(&s->host_error_dev), s->host_error, 0));
  TPCOMM_CUDA_CHECK(cudaDeviceSynchronize());  // the memsets are done before any peer writes
  TPCOMM_DEBUG(P2P, "device %d: %zu staging bytes (%d slots), %zu pull outbox bytes", device, total,
               kNumSlots, pull_bytes);
  return tpcommSuccess;
}

void stagingDestroy(Staging* s) {
  if (s->device >= 0) cudaSetDevice(s->device);
  if (s->buf) cudaFree(s->buf);
  if (s->state) cudaFree(s->state);
  if (s->host_error) cudaFreeHost(s->host_error);
  cudaGetLastError();
  *s = Staging{};
}

tpcommResult_t stagingExport(const Staging& s, cudaIpcMemHandle_t* handle) {
  TPCOMM_CUDA_CHECK(cudaIpcGetMemHandle(handle, s.buf));
  return tpcommSuccess;
}

tpcommResult_t stagingOpenPeer(const cudaIpcMemHandle_t& handle, int peer_rank, char** ptr) {
  void* p = nullptr;
  const cudaError_t err = cudaIpcOpenMemHandle(&p, handle, cudaIpcMemLazyEnablePeerAccess);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return fail(tpcommUnhandledCudaError,
                "cudaIpcOpenMemHandle of rank %d's staging buffer failed: %s. Its GPU must be "
                "visible to this process (CUDA_VISIBLE_DEVICES) and reachable by P2P; otherwise "
                "use the host transport (TPCOMM_TRANSPORT=host)",
                peer_rank, cudaGetErrorString(err));
  }
  *ptr = static_cast<char*>(p);
  return tpcommSuccess;
}

void stagingClosePeer(char* ptr) {
  if (ptr) cudaIpcCloseMemHandle(ptr);
  cudaGetLastError();
}

tpcommResult_t enablePeerAccess(int device, int peer_device) {
  if (device == peer_device) return tpcommSuccess;
  // Remembered per process, so a second communicator does not provoke (and clear) the
  // cudaErrorPeerAccessAlreadyEnabled that sanitizers report as an API error.
  static std::mutex mu;
  static std::set<std::pair<int, int>> enabled;
  std::lock_guard<std::mutex> lock(mu);
  if (enabled.count({device, peer_device})) return tpcommSuccess;
  int can = 0;
  TPCOMM_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, device, peer_device));
  if (!can)
    return fail(tpcommUnsupported, "GPU %d cannot access GPU %d's memory (no P2P)", device,
                peer_device);
  TPCOMM_CUDA_CHECK(cudaSetDevice(device));
  const cudaError_t err = cudaDeviceEnablePeerAccess(peer_device, 0);
  if (err == cudaErrorPeerAccessAlreadyEnabled)
    cudaGetLastError();  // enabled by someone else
  else
    TPCOMM_CUDA_CHECK(err);
  enabled.insert({device, peer_device});
  return tpcommSuccess;
}

}  // namespace tpcomm
