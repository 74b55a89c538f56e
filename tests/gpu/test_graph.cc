// CUDA graphs and long call sequences: 100 calls of varying sizes captured per rank and replayed
// 1000 times (inputs refreshed every 100 replays, every output checked each time), and 100k
// back-to-back calls of varying sizes with no host sync, each output compared on the GPU with
// the first (reference-checked) result of its size.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/gpu/check_kernel.h"
#include "tests/gpu/harness.h"

namespace tpcomm::test {
namespace {

// bf16 element counts. With auto at world 2 every call is a one-shot (plan/policy.cc), and these
// mix its three shapes: the lean kernel (512, 32768, 524288: whole vectors, one step), the
// general kernel's single step (4097, 131075: a partial last vector) and multi-step calls
// (1572867: two 1 MiB steps and a partial third).
const std::vector<size_t> kGraphCounts = {512, 4097, 32768, 131075, 524288, 1572867};

// Captures 100 calls of `algo` per rank at `world` ranks (sizes in turn from `sizes`,
// communicators made with launch knobs `knobs`), replays the graphs 1000 times and checks every
// output. `variant`, where given, must be what every call ran.
void captureAndReplay(int algo, const char* knobs = nullptr,
                      const std::vector<size_t>& sizes = kGraphCounts, int variant = -1,
                      int world = 2) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const tpcommDataType_t dt = tpcommBfloat16;
  const int ncalls = 100;
  std::vector<size_t> counts, offsets;
  size_t total = 0;
  for (int i = 0; i < ncalls; ++i) {
    counts.push_back(sizes[i % sizes.size()]);
    offsets.push_back(total);
    total += (counts.back() + 63) / 64 * 64;  // keep every slice 128-byte aligned
  }
  tpcommConfig_t cfg = configFor(algo);
  cfg.launchKnobs = knobs;
  std::string err;
  auto g = makeGroup(world, &cfg, total * 2, &err);
  ASSERT_TRUE(g) << err;

  std::vector<cudaGraphExec_t> exec(world);
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaStreamBeginCapture(g->streams[r], cudaStreamCaptureModeGlobal), cudaSuccess);
  }
  for (int i = 0; i < ncalls; ++i) {
    for (int r = 0; r < world; ++r) {
      char* in = g->send[r] + offsets[i] * 2;
      char* out = g->recv[r] + offsets[i] * 2;
      ASSERT_EQ(tpcommAllReduce(in, out, counts[i], dt, tpcommSum, g->comms[r], g->streams[r]),
                tpcommSuccess)
          << tpcommGetLastError();
    }
  }
  // All captures end before any instantiation (refused while a stream captures, global mode).
  std::vector<cudaGraph_t> graphs(world);
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaStreamEndCapture(g->streams[r], &graphs[r]), cudaSuccess);
  }
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaGraphInstantiate(&exec[r], graphs[r], 0), cudaSuccess);
    cudaGraphDestroy(graphs[r]);
  }
  tpcommStats_t st;
  tpcommCommGetStats(g->comms[0], &st);
  EXPECT_EQ(st.captured, static_cast<uint64_t>(ncalls));
  const int ran = algo == tpcommAlgoAuto ? tpcommAlgoOneShot : algo;
  EXPECT_EQ(st.calls[ran], static_cast<uint64_t>(ncalls)) << tpcommAlgoName(ran);
  if (variant >= 0) {
    uint64_t v[tpcommNumVariants] = {};
    tpcommCommGetVariantStats(g->comms[0], v, tpcommNumVariants);
    EXPECT_EQ(v[variant], static_cast<uint64_t>(ncalls)) << tpcommVariantName(variant);
  }

  for (int round = 0; round < 10; ++round) {
    std::vector<std::vector<std::vector<uint8_t>>> in(ncalls);
    for (int r = 0; r < world; ++r) {
      cudaSetDevice(g->devs[r]);
      cudaMemset(g->recv[r], 0xCD, total * 2);
      for (int i = 0; i < ncalls; ++i) {
        in[i].push_back(makeInput(dt, counts[i], 7000 + round * 131 + i, r));
        cudaMemcpy(g->send[r] + offsets[i] * 2, in[i].back().data(), counts[i] * 2,
                   cudaMemcpyHostToDevice);
      }
    }
    for (int rep = 0; rep < 100; ++rep)
      for (int r = 0; r < world; ++r) {
        cudaSetDevice(g->devs[r]);
        ASSERT_EQ(cudaGraphLaunch(exec[r], g->streams[r]), cudaSuccess);
      }
    for (int r = 0; r < world; ++r) {
      cudaSetDevice(g->devs[r]);
      ASSERT_EQ(cudaStreamSynchronize(g->streams[r]), cudaSuccess);
      tpcommResult_t async;
      tpcommCommGetAsyncError(g->comms[r], &async);
      ASSERT_EQ(async, tpcommSuccess) << "round " << round;
    }
    for (int i = 0; i < ncalls; ++i) {
      const std::vector<uint8_t> ref = reference(dt, counts[i], in[i]);
      std::vector<uint8_t> got0(counts[i] * 2), got(counts[i] * 2);
      for (int r = 0; r < world; ++r) {
        cudaSetDevice(g->devs[r]);
        cudaMemcpy(got.data(), g->recv[r] + offsets[i] * 2, got.size(), cudaMemcpyDeviceToHost);
        ASSERT_EQ(countWrong(dt, counts[i], got.data(), ref.data(), in[i]), 0u)
            << "round " << round << " call " << i << " rank " << r;
        if (r == 0)
          got0 = got;
        else
          ASSERT_EQ(got, got0) << "ranks differ, round " << round << " call " << i;
      }
    }
  }
  for (int r = 0; r < world; ++r) cudaGraphExecDestroy(exec[r]);
}

TEST(Graph, CaptureHundredCallsReplayThousandTimes) {
  captureAndReplay(tpcommAlgoAuto);
}
// Two-shot is what auto runs from 256 KiB at larger worlds and over PCIe: captured the same way.
TEST(Graph, CaptureHundredTwoShotCallsReplayThousandTimes) {
  captureAndReplay(tpcommAlgoTwoShot);
}
// The pull variants (what a fabric whose peer stores collapse runs): the one-shot's three shapes
// (lean, general single step, split multi-step) and the two-shot, captured the same way.
TEST(Graph, CaptureHundredOneShotPullCallsReplayThousandTimes) {
  captureAndReplay(tpcommAlgoOneShotPull);
}
TEST(Graph, CaptureHundredTwoShotPullCallsReplayThousandTimes) {
  captureAndReplay(tpcommAlgoTwoShotPull);
}
// The one-step LL pull (oneshot_pull_ll.cu) for every call, whole and partial vectors up to a
// full LL slot: the epochs, so the slots and flags, change from replay to replay although the
// nodes do not.
TEST(Graph, CaptureHundredOneShotPullLLCallsReplayThousandTimes) {
  captureAndReplay(tpcommAlgoOneShotPull, "pull_ll_bytes=65536",
                   {1, 512, 4097, 32768, 20001, 32767}, tpcommVariantP2pOneShotPullLL);
}
// The island over pull at world 4 (four ranks sharing the GPU: islands of two), its three
// publishes a step replayed as captured.
TEST(Graph, CaptureHundredIslandPullCallsReplayThousandTimes) {
  captureAndReplay(tpcommAlgoIslandPull, nullptr, kGraphCounts, -1, 4);
}

// The copy-engine one-shot: its peer copies become memcpy nodes, and the epoch its flags carry
// must change from one replay to the next although the nodes do not.
TEST(Graph, CaptureHundredCeCallsReplayThousandTimes) {
  captureAndReplay(tpcommAlgoOneShotCe);
}

// 100k calls of `algo` (auto: what the policy picks) at `world` ranks, of irregular sizes with
// no host sync, every output compared on the GPU with its size's first, reference-checked result.
void hundredThousandCalls(int algo, int world = 2) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const tpcommDataType_t dt = tpcommBfloat16;
  const size_t counts[] = {1, 100, 2048, 4099, 16384, 65536, 262147, 1048576};
  const int nsizes = 8;
  const tpcommConfig_t cfg = configFor(algo);
  std::string err;
  size_t per = 0;
  for (size_t c : counts) per += (c + 63) / 64 * 64;
  auto g = makeGroup(world, &cfg, per * 2 * 2, &err);  // recv holds outputs and expected values
  ASSERT_TRUE(g) << err;
  std::vector<size_t> off;
  size_t o = 0;
  for (size_t c : counts) {
    off.push_back(o);
    o += (c + 63) / 64 * 64 * 2;
  }
  const size_t expected_base = per * 2;  // expected outputs live after the outputs in recv
  std::vector<unsigned long long*> bad(world);
  // First pass: one call per size, checked against the host reference, kept as expected bits.
  for (int s = 0; s < nsizes; ++s) {
    std::vector<std::vector<uint8_t>> in;
    for (int r = 0; r < world; ++r) {
      in.push_back(makeInput(dt, counts[s], 99 + s, r));
      cudaSetDevice(g->devs[r]);
      cudaMemcpy(g->send[r] + off[s], in.back().data(), counts[s] * 2, cudaMemcpyHostToDevice);
    }
    for (int r = 0; r < world; ++r)
      ASSERT_EQ(tpcommAllReduce(g->send[r] + off[s], g->recv[r] + expected_base + off[s], counts[s],
                                dt, tpcommSum, g->comms[r], g->streams[r]),
                tpcommSuccess);
    const std::vector<uint8_t> ref = reference(dt, counts[s], in);
    for (int r = 0; r < world; ++r) {
      cudaSetDevice(g->devs[r]);
      ASSERT_EQ(cudaStreamSynchronize(g->streams[r]), cudaSuccess);
      std::vector<uint8_t> got(counts[s] * 2);
      cudaMemcpy(got.data(), g->recv[r] + expected_base + off[s], got.size(),
                 cudaMemcpyDeviceToHost);
      ASSERT_EQ(countWrong(dt, counts[s], got.data(), ref.data(), in), 0u) << counts[s];
    }
  }
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaMalloc(&bad[r], sizeof(unsigned long long)), cudaSuccess);
    cudaMemset(bad[r], 0, sizeof(unsigned long long));
    cudaDeviceSynchronize();  // legacy-stream memset; the checks run on non-blocking streams
  }
  const int kCalls = 100000;
  for (int i = 0; i < kCalls; ++i) {
    const int s = (i * 7 + i / 13) % nsizes;  // irregular size sequence
    for (int r = 0; r < world; ++r)
      ASSERT_EQ(tpcommAllReduce(g->send[r] + off[s], g->recv[r] + off[s], counts[s], dt, tpcommSum,
                                g->comms[r], g->streams[r]),
                tpcommSuccess)
          << "call " << i << ": " << tpcommGetLastError();
    for (int r = 0; r < world; ++r) {
      cudaSetDevice(g->devs[r]);
      launchCompare(g->recv[r] + off[s], g->recv[r] + expected_base + off[s], counts[s] * 2, bad[r],
                    g->streams[r]);
    }
  }
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaStreamSynchronize(g->streams[r]), cudaSuccess);
    unsigned long long b = 0;
    cudaMemcpy(&b, bad[r], sizeof(b), cudaMemcpyDeviceToHost);
    EXPECT_EQ(b, 0ull) << "rank " << r << ": bytes differing from the first result";
    tpcommResult_t async;
    tpcommCommGetAsyncError(g->comms[r], &async);
    EXPECT_EQ(async, tpcommSuccess);
    cudaFree(bad[r]);
  }
  uint64_t v[tpcommNumVariants] = {};
  tpcommCommGetVariantStats(g->comms[0], v, tpcommNumVariants);
  std::string ran;
  for (int k = 0; k < tpcommNumVariants; ++k)
    if (v[k]) ran += std::string(" ") + tpcommVariantName(k) + "=" + std::to_string(v[k]);
  printf("[stress   ] %s: %d calls per rank; ran:%s\n", tpcommAlgoName(algo), kCalls, ran.c_str());
}

TEST(Stress, HundredThousandCallsWithoutSync) {
  hundredThousandCalls(tpcommAlgoAuto);
}
TEST(Stress, HundredThousandOneShotPullCallsWithoutSync) {
  hundredThousandCalls(tpcommAlgoOneShotPull);
}
TEST(Stress, HundredThousandTwoShotPullCallsWithoutSync) {
  hundredThousandCalls(tpcommAlgoTwoShotPull);
}
// The island over pull needs four ranks (two islands of two, sharing the GPU): its three
// publishes a step and four-slot rotation through 100k calls of every size.
TEST(Stress, HundredThousandIslandPullCallsWithoutSync) {
  hundredThousandCalls(tpcommAlgoIslandPull, 4);
}

// The copy-engine one-shot, whose landing slot is the host's count of steps: 100k calls of
// irregular sizes rotate it through every slot many times over, each reuse behind its guard.
TEST(Stress, HundredThousandCeCallsWithoutSync) {
  hundredThousandCalls(tpcommAlgoOneShotCe);
}

}  // namespace
}  // namespace tpcomm::test
