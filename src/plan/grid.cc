#include "plan/grid.h"

#include <algorithm>
#include <string>

#include "plan/policy.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

namespace {

// The grid of at most `cap` blocks.
GridPlan shapeGrid(int algo, size_t bytes, size_t chunk_bytes, int world, const LaunchKnobs& k,
                   int cap) {
  const size_t step_bytes = std::min(bytes, std::max<size_t>(chunk_bytes, 16));
  // Two-shot: a block owns a sub-range of every segment; a segment is 1/world of the step.
  // Island (push or pull): the same, with world/2 segments (one per island member).
  const bool twoshot =
      algo == tpcommAlgoTwoShot || algo == tpcommAlgoHostTwoShot || algo == tpcommAlgoTwoShotPull;
  const int segments = twoshot              ? std::max(world, 1)
                       : isIslandAlgo(algo) ? std::max(world / 2, 1)
                                            : 1;
  const size_t share = (step_bytes + segments - 1) / static_cast<size_t>(segments);
  const bool ll = algo == tpcommAlgoHostOneShot || algo == tpcommAlgoHostTwoShot;
  const bool bulk = algo == tpcommAlgoHostBulk;
  const int target = bulk ? k.bulk_block_bytes : ll ? k.host_block_bytes : k.block_bytes;
  const size_t per_block_target = static_cast<size_t>(std::max(target, 16));
  GridPlan g;
  g.blocks = static_cast<int>(
      std::min<size_t>(static_cast<size_t>(cap),
                       std::max<size_t>(1, (share + per_block_target - 1) / per_block_target)));
  // One vector (16 bytes) per thread per batch; whole warps; at most max_threads.
  const size_t vecs_per_block = ((share + 15) / 16 + g.blocks - 1) / g.blocks;
  // The multi-step one-shot over peer memory keeps a vector per thread (grid.h).
  const bool split_oneshot =
      (algo == tpcommAlgoOneShot || algo == tpcommAlgoOneShotPull) && bytes > step_bytes;
  g.push_batch = k.push_batch > 0 ? std::clamp(k.push_batch, 1, 4)
                 : bytes >= kBatchFromBytes && !bulk && !split_oneshot ? 4
                                                                       : 1;
  // Bulk keeps a thread per vector whatever the batch: its reads of host memory want every
  // thread the block can have in flight, and a batch only deepens the pushes.
  const size_t batch = bulk ? 1 : static_cast<size_t>(g.push_batch);
  size_t threads = (vecs_per_block + batch - 1) / batch;
  threads = (threads + 31) / 32 * 32;
  g.threads = static_cast<int>(std::clamp<size_t>(threads, 32, static_cast<size_t>(k.max_threads)));
  g.push_eighths = std::clamp(k.push_eighths, 1, 7);
  return g;
}

}  // namespace

GridPlan planGrid(int algo, size_t bytes, size_t chunk_bytes, int world, const LaunchKnobs& k,
                  int resident_cap) {
  GridPlan g = shapeGrid(algo, bytes, chunk_bytes, world, k,
                         k.max_blocks > 0 ? k.max_blocks : kDefaultMaxBlocks);
  if (resident_cap <= 0 || g.blocks <= resident_cap) return g;
  g = shapeGrid(algo, bytes, chunk_bytes, world, k, resident_cap);
  g.co_resident_capped = true;
  return g;
}

}  // namespace tpcomm
