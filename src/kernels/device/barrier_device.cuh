// Named barriers between the warps of one block (PTX bar.sync / bar.arrive / bar.red): the split
// one-shot's pushers and reducers (oneshot.cu) and the bulk protocol (bulk_device.cuh)
// synchronise subsets of a block with them. Ids 1..15; 0 is __syncthreads.
#pragma once

namespace tpcomm {

// `arrive` signals without waiting, `sync` waits for `threads` arrivals in all (both sides
// counted).
__device__ __forceinline__ void namedBarrierSync(unsigned id, unsigned threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void namedBarrierArrive(unsigned id, unsigned threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// The same as a block-wide "or" over the `threads` arriving threads' predicates.
__device__ __forceinline__ bool namedBarrierOr(unsigned id, unsigned threads, bool pred) {
  unsigned out;
  asm volatile(
      "{\n\t.reg .pred p, q;\n\tsetp.ne.u32 p, %1, 0;\n\t"
      "bar.red.or.pred q, %2, %3, p;\n\tselp.u32 %0, 1, 0, q;\n\t}"
      : "=r"(out)
      : "r"(pred ? 1u : 0u), "r"(id), "r"(threads)
      : "memory");
  return out != 0u;
}

// Who uses which ids, so no two users collide within a kernel.
constexpr unsigned kBarReducedFirst = 1;  // split one-shot: "reduced step s", 1..4
constexpr unsigned kBarPushedFirst = 5;   // split one-shot: "pushed step j", 5..8
constexpr unsigned kBarBulkPushed = 9;    // bulk: among a block's pushing threads
constexpr unsigned kBarBulkFlags = 10;    // bulk: among a block's reducing threads

}  // namespace tpcomm
