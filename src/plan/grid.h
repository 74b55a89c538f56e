// How many blocks and threads a call launches: a pure function of the call and the
// communicator's launch knobs, identical on every rank (ranks' blocks pair up by index).
//
// Measured on 2x H200 (docs/BENCHMARKS.md): one SM pushes only ~9.4 GB/s into a peer's memory,
// so latency and bandwidth both come from spreading a message over many SMs: a block is given
// about `block_bytes` of the message (per step), not a fixed share of threads.
#pragma once

#include <cstddef>
#include <string>

namespace tpcomm {

struct LaunchKnobs {
  int block_bytes = 2048;        // target message bytes per block (per step; two-shot: per segment)
  int host_block_bytes = 1024;   // the same for the host-memory LL algorithms (measured: fewer
                                 // bytes per block poll PCIe less per thread and win up to 64 KiB)
  int bulk_block_bytes = 16384;  // the same for host_bulk: one fence and one flag per block and
                                 // step favour larger shares (measured below)
  int oneshot_step_bytes = 1 << 20;  // one-shot over peer memory: message bytes per step at
                                     // most (0: a source's whole region of a slot; see below)
  int bulk_step_bytes = 0;           // host_bulk: message bytes per step (0: a whole outbox slot;
                                     // shorter steps measured slower at every size, see below)
  int max_blocks = 0;                // 0: kDefaultMaxBlocks
  int max_threads = 512;             // threads per block at most (the kernels' launch bound)
  int push_batch = 0;    // vectors a thread loads before storing them (1..4; 0: planGrid's
                         // rule, by size and algorithm)
  bool pdl = true;       // programmatic dependent launch (sm_90+)
  int push_eighths = 2;  // multi-step one-shot: eighths of a block's threads that push (1..7)
  bool lean = true;      // one-shot calls that fit it run the lean kernel (oneShotLeanFits)
  // host_oneshot calls that fit one step of the sentinel inboxes (512 KiB at world 2) take the
  // sentinel protocol instead of LL packets: data once each way plus the reader's clearing
  // writes, against LL's flag with every 4 bytes. 2x H200, P2P unused, same run, us (LL /
  // sentinel / NCCL without P2P): 3.6 / 2.7-3.0 / 11.4 at 1 KiB, 4.9 / 3.1-3.2 / 12.5 at 16 KiB,
  // 8.2 / 5.3 / 17.2 at 64 KiB, 12.6 / 7.5-7.7 / 23.5 at 128 KiB, 21.9 / 12.8-13.0 / 37.4 at
  // 256 KiB, 40.7 / 25.6-26.0 / 47.2 at 512 KiB (1-8 KiB per block alike; docs/BENCHMARKS.md).
  bool host_sentinel = true;
};

constexpr int kDefaultMaxBlocks = 128;

// A multi-step one-shot call splits each block into pushing and reducing warps (oneshot.cu).
// Its steps are at most 1 MiB of the message, with one vector per thread per round (push batch
// 1: 512 threads for a block's 8 KiB of a step): the first step's push and the last step's
// reduce overlap nothing, and with the slot's whole 8 MiB region (world 2, 16 MiB slots) that
// fill and drain was a quarter of a 32 MiB call. Short steps need the batch of 1: with the batch
// of 4 the grid gives a block of a 1 MiB step only 128 threads (32 of them pushing). Third run,
// the same sweep with the batch of 1 (docs/bench/s5/sweep_step_3.json), us at 8 / 16 / 32 / 64
// MiB: 1 MiB steps 28.4 / 53.5 / 95.8 / 188.5, 2 MiB 29.0 / 55.0 / 104.3 / 203.2, 4 MiB 32.1 /
// 57.6 / 104.5 / 201.2 (batch 4 in that run: 1 MiB steps 35.5 / 68.7 / 139.5 / 276.4, 4 MiB 31.0
// / 55.0 / 102.7 / 198.6). The first two runs, batch 4 (the size rule below)
// (`tpcomm-bench --backends oneshot,twoshot,nccl --sweep-knobs --min 8M --max 64M --factor 2`,
// docs/bench/s5/sweep_step_{1,2}.json), us at 8 / 16 / 32 / 64 MiB: 1 MiB steps 35.5 / 68.5 / 140.8
// / 277.1, 2 MiB 36.5 / 63.4 / 115.8 / 216.0, 3 MiB 32.2 / 56.9 / 104.0 / 199.8, 4 MiB 30.9 /
// 54.6 / 102.2 / 197.0, 6 MiB 34.9 / 57.9 / 107.8 / 199.9, 8 MiB (the whole region) 31.8 / 61.0 /
// 111.1 / 205.1; two-shot 29.1 / 59.1 / 118.2 / 234.7; NCCL 46.7 / 77.9 / 137.3 / 247.8.
// The push share, measured with 8 MiB steps and batch 4 (not yet again with 1 MiB steps and
// batch 1) on 2x H200, bf16, `tpcomm-bench --sweep-knobs` (us at 16 / 32 / 64 MiB; NCCL 77 /
// 137 / 247): 1/8 pushing 62.6 / 116.1 / 223.5, 2/8 61.4 / 110.4 / 206.0, 3/8 66.7 / 115.9 /
// 211.3, 4/8 72.6 / 125.1 / 225.4, 5/8 83.0 / 142.2 / 250.4. The reduce side (three HBM streams
// and the polls) needs more threads than the push side to keep up with the link.

// host_bulk, 2x H200, `TPCOMM_TRANSPORT=host tpcomm-bench --backends host_bulk --sweep-knobs`
// with 1 MiB steps (us at 64 KiB / 1 MiB / 16 MiB / 64 MiB): 8 KiB per block 14.6 / 53.9 / 459 /
// 1712, 16 KiB 12.3 / 51.2 / 448 / 1691, 32 KiB 14.2 / 50.5 / 461 / 1792, 64 KiB 20.9 / 51.5 /
// 529 / 1906; 2 of 8 warps pushing at least as good as 4 and 6 from 16 KiB per block on; a push
// batch of 4 within noise of 1 (bulk keeps a thread per vector whatever the batch). Steps shorter
// than the 1 MiB slot (bulk_step_bytes, same sweep) lose everywhere: 256 KiB steps 58 us at
// 1 MiB against 50, 64 KiB steps 112, 16 KiB steps 401 (the grid follows the step, and each step
// pays a fence and a flag round trip per block). Keeping the grid large while the steps shrink
// (2-8 KiB per block) loses as well: at 256 KiB, 16 blocks of 4 KiB in 64 KiB steps take 45 us
// against the default's 21.6, and no variant of 2-16 KiB per block by 32 KiB..slot steps beat
// the default from 128 KiB to 2 MiB (docs/bench/bulk/sweep_grid_step.json): a step's writes and
// its peers' reads do not overlap enough to pay for the extra fences and flag round trips.

// Measured (docs/BENCHMARKS.md): a batch of 4 loads per thread wins at 16 MiB and above (the
// link is saturated and the reloads between steps cost), a batch of 1 below (latency); the
// multi-step one-shot keeps the batch of 1 (above).
constexpr size_t kBatchFromBytes = 8u << 20;

struct GridPlan {
  int blocks = 1;
  int threads = 32;
  int push_batch = 1;
  int push_eighths = 2;  // LaunchKnobs::push_eighths
};

// chunk_bytes: the most bytes one step of the algorithm handles (one-shot: a peer region of the
// slot; two-shot and island: a chunk). world: ranks.
GridPlan planGrid(int algo, size_t bytes, size_t chunk_bytes, int world, const LaunchKnobs& k);

// Why a set of knobs cannot be used ("" if it can), naming the first field out of range.
// threads_bound: the kernels' launch bound (kThreadsPerBlock).
std::string launchKnobsError(const LaunchKnobs& k, int threads_bound);

}  // namespace tpcomm
