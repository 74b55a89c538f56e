// The quantized wire's two-shot in its three forms (src/kernels/twoshot_pull_wire.cu: pull over
// peer memory and over pinned host memory; src/kernels/twoshot_wire.cu: push over peer memory;
// issue 37): every codec (INT8, INT4, FP8 e4m3 and e5m2) at worlds 2..8 sharing the GPU,
// bf16/fp16/fp32, counts that end mid-group, many steps (small slots), in place, unaligned
// buffers: every rank's output bit-identical and equal, bit for bit, to a host emulation of the
// kernel's arithmetic (the codec of kernels/layout/wire_codec.h, which the CPU tests check against
// CUDA's FP8 conversions and the stated bounds), and within the stated error of the exact sum; a
// NaN in one rank's input makes its group NaN on every rank; graph replays give the eager bits;
// the per-call codec (tpcommAllReduceWire). Forced on one GPU (an NVLink fabric to the planner) by
// TPCOMM_ALGO=twoshot / twoshot_pull / host_twoshot and the wire knob.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "kernels/layout/chunk_layout.h"
#include "kernels/layout/device_comm.h"
#include "kernels/layout/wire_codec.h"
#include "tests/gpu/harness.h"
#include "tests/support/wire_reference.h"

namespace tpcomm::test {
namespace {

struct Codec {
  WireCodec c;
  const char* knob;
};
constexpr Codec kCodecs[] = {{WireCodec::kInt8, "int8"},
                             {WireCodec::kInt4, "int4"},
                             {WireCodec::kFp8E4M3, "fp8"},
                             {WireCodec::kFp8E5M2, "fp8_e5m2"}};

// A form: the algorithm forced to take it, its rows' prefix.
struct Form {
  WireForm form;
  int algo;
  const char* prefix;
};
constexpr Form kForms[] = {{WireForm::kPull, tpcommAlgoTwoShotPull, "p2p_twoshot_pull_"},
                           {WireForm::kPush, tpcommAlgoTwoShot, "p2p_twoshot_"},
                           {WireForm::kHost, tpcommAlgoHostTwoShot, "host_twoshot_"}};

std::string variantOf(const Form& f, const Codec& k) {
  return std::string(f.prefix) + k.knob;
}

constexpr size_t kSlotBytes = size_t{1} << 20;  // the communicators' TPCOMM_BUFFER_BYTES

// Runs one all-reduce of `in` on every rank of g (offset elements into the buffers); every rank's
// output into got[r]. The variant that ran into *variant.
// wire: the call's own codec (tpcommAllReduceWire), or -2 for tpcommAllReduce.
void runAllReduce(Group& g, tpcommDataType_t dt, size_t count, bool in_place, size_t offset,
                  const std::vector<std::vector<uint8_t>>& in,
                  std::vector<std::vector<uint8_t>>* got, std::string* variant, int wire = -2) {
  const size_t es = elemSize(dt), bytes = count * es, off = offset * es;
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    cudaMemcpy(g.send[r] + off, in[r].data(), bytes, cudaMemcpyHostToDevice);
    cudaMemset(g.recv[r], 0xCD, g.capacity);
    cudaDeviceSynchronize();
  }
  {
    GroupScope scope;
    for (int r = 0; r < g.world; ++r) {
      char* src = g.send[r] + off;
      void* dst = in_place ? src : g.recv[r] + off;
      ASSERT_EQ(
          wire == -2
              ? tpcommAllReduce(src, dst, count, dt, tpcommSum, g.comms[r], g.streams[r])
              : tpcommAllReduceWire(src, dst, count, dt, tpcommSum, wire, g.comms[r], g.streams[r]),
          tpcommSuccess)
          << tpcommGetLastError();
    }
  }
  got->assign(g.world, std::vector<uint8_t>(bytes));
  for (int r = 0; r < g.world; ++r) {
    ASSERT_TRUE(drained(g, r));
    cudaMemcpy((*got)[r].data(), (in_place ? g.send[r] : g.recv[r]) + off, bytes,
               cudaMemcpyDeviceToHost);
  }
  tpcommCallInfo_t info;
  ASSERT_EQ(tpcommCommGetLastCall(g.comms[0], &info), tpcommSuccess);
  *variant = tpcommVariantName(info.variant);
}

// A group forced onto a form, opted into codec k (nullptr: not opted in).
std::unique_ptr<Group> wireGroup(int world, const Form& f, const Codec* k, size_t capacity) {
  tpcommConfig_t cfg = configFor(f.algo, 0, 5000);
  cfg.bufferBytes = kSlotBytes;
  static std::set<std::string> knobs;  // the config's strings outlive the group
  cfg.launchKnobs =
      knobs.insert(k ? std::string("wire=") + k->knob + ",wire_min_bytes=0" : "wire_min_bytes=0")
          .first->c_str();
  std::string err;
  auto g = makeGroup(world, &cfg, capacity, &err);
  EXPECT_TRUE(g) << err;
  return g;
}

// One case: the output of every rank the same bits, the emulation's bits, within the bound.
void checkCase(Group& g, const Form& f, const Codec& k, tpcommDataType_t dt, size_t count,
               bool in_place, size_t offset, uint64_t seed, int wire = -2) {
  const size_t es = elemSize(dt);
  std::vector<std::vector<uint8_t>> in;
  for (int r = 0; r < g.world; ++r) in.push_back(makeInput(dt, count, seed, r));
  std::vector<std::vector<uint8_t>> got;
  std::string variant;
  runAllReduce(g, dt, count, in_place, offset, in, &got, &variant, wire);
  if (::testing::Test::HasFatalFailure()) return;
  const std::string what = variantOf(f, k) + " world " + std::to_string(g.world) + " " +
                           dtypeName(dt) + " count " + std::to_string(count) +
                           (in_place ? " in place" : "") + " offset " + std::to_string(offset);
  EXPECT_EQ(variant, variantOf(f, k)) << what;
  std::vector<int> owner;
  const std::vector<float> want =
      emulateWire(k.c, dt, count, g.world, kSlotBytes, in, &owner, f.form);
  size_t wrong = 0, over = 0;
  for (int r = 0; r < g.world; ++r) {
    EXPECT_EQ(memcmp(got[r].data(), got[0].data(), count * es), 0) << what << ": rank " << r;
    for (size_t e = 0; e < count; ++e) {
      const float v = asFloat(dt, got[r].data() + e * es);
      if (memcmp(&v, &want[e], 4) != 0 && !(std::isnan(v) && std::isnan(want[e]))) {
        if (wrong++ == 0)
          ADD_FAILURE() << what << ": rank " << r << " element " << e << " is " << v
                        << ", the emulation " << want[e];
      }
    }
  }
  EXPECT_EQ(wrong, 0u) << what;
  // Against the exact sum: each non-owner's contribution within its group's bound, the owner's
  // re-encoded sum within its own, and two roundings to the datatype.
  for (size_t g0 = 0; g0 * kWireGroup < count; ++g0) {
    double exact[kWireGroup] = {}, bound[kWireGroup] = {};
    for (int r = 0; r < g.world; ++r) {
      float x[kWireGroup] = {};
      for (int i = 0; i < kWireGroup && g0 * kWireGroup + i < count; ++i)
        x[i] = asFloat(dt, in[r].data() + (g0 * kWireGroup + i) * es);
      const float amax = wireScaleOf(x, kWireGroup);
      for (int i = 0; i < kWireGroup; ++i) {
        exact[i] += x[i];
        if (r != owner[g0]) bound[i] += wireErrorBound(k.c, x[i], amax);
      }
    }
    double amax = 0, bmax = 0;
    for (int i = 0; i < kWireGroup; ++i) {
      amax = std::max(amax, std::fabs(exact[i]));
      bmax = std::max(bmax, bound[i]);
    }
    const double ulp = dt == tpcommFloat32   ? std::ldexp(1.0, -23)
                       : dt == tpcommFloat16 ? std::ldexp(1.0, -10)
                                             : std::ldexp(1.0, -7);
    for (int i = 0; i < kWireGroup && g0 * kWireGroup + i < count; ++i) {
      // The encoded sum's group amax is at most amax + bmax, rounded to the datatype.
      const double amax_sum = (amax + bmax) * (1 + ulp);
      const double total = bound[i] +
                           wireErrorBound(k.c, std::fabs(exact[i]) + bound[i], amax_sum) +
                           2 * ulp * amax_sum + 1e-6 * amax;
      if (std::fabs(want[g0 * kWireGroup + i] - exact[i]) > total && over++ == 0)
        ADD_FAILURE() << what << ": element " << g0 * kWireGroup + i << " is "
                      << want[g0 * kWireGroup + i] << ", exact " << exact[i] << ", bound " << total;
    }
  }
}

// Every form, codec and world.
TEST(Wire, EveryCodecAndFormAtWorlds2To8) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (const Form& f : kForms)
    for (const Codec& k : kCodecs)
      for (int w = 2; w <= std::min(8, maxTestWorld()); ++w) {
        auto g = wireGroup(w, f, &k, size_t{8} << 20);
        ASSERT_TRUE(g);
        // One step and several (a 256 KiB pull slot: ~6k groups a step at 8 ranks), a count that
        // ends mid-group and mid-vector, fp32 and fp16, in place, unaligned.
        checkCase(*g, f, k, tpcommBfloat16, 1000003, false, 0, 1);
        checkCase(*g, f, k, tpcommBfloat16, 777, true, 0, 2);
        checkCase(*g, f, k, tpcommFloat32, 300001, false, 3, 3);
        checkCase(*g, f, k, tpcommFloat16, 65536, true, 5, 4);
        if (HasFailure()) return;
        printf("[ wire     ] %s world=%d: passed\n", variantOf(f, k).c_str(), w);
      }
}

// The call's own codec (tpcommAllReduceWire) on a communicator not opted in: each codec in turn,
// then none (0: the plain two-shot), then the communicator's (-1: none either), back to back on
// the same slots; the same through the push form. A codec outside -1..4 is refused by name.
TEST(Wire, TheCallsOwnCodec) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (const Form* f : {&kForms[0], &kForms[1]}) {
    auto g = wireGroup(4, *f, nullptr, size_t{4} << 20);
    ASSERT_TRUE(g);
    for (const Codec& k : kCodecs) {
      checkCase(*g, *f, k, tpcommBfloat16, 300001, false, 0, 31, static_cast<int>(k.c));
      if (HasFailure()) return;
      for (int wire : {0, -1}) {
        std::vector<std::vector<uint8_t>> in, got;
        for (int r = 0; r < 4; ++r) in.push_back(makeInput(tpcommBfloat16, 4096, 32, r));
        std::string variant;
        runAllReduce(*g, tpcommBfloat16, 4096, false, 0, in, &got, &variant, wire);
        ASSERT_FALSE(HasFatalFailure());
        EXPECT_EQ(variant, f->algo == tpcommAlgoTwoShot ? "p2p_twoshot" : "p2p_twoshot_pull")
            << "wire " << wire;
      }
    }
    EXPECT_EQ(tpcommAllReduceWire(g->send[0], g->recv[0], 16, tpcommBfloat16, tpcommSum, 5,
                                  g->comms[0], g->streams[0]),
              tpcommInvalidArgument);
    EXPECT_NE(std::string(tpcommGetLastError()).find("wire 5"), std::string::npos)
        << tpcommGetLastError();
  }
}

// A NaN (or an infinity) in one rank's input: its group is NaN on every rank, the others finite.
TEST(Wire, ANonFiniteInputMakesItsGroupNaN) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (const Form& f : kForms)
    for (const Codec& k : kCodecs)
      for (float bad : {NAN, INFINITY}) {
        auto g = wireGroup(4, f, &k, size_t{1} << 20);
        ASSERT_TRUE(g);
        const size_t count = 4096;
        std::vector<std::vector<uint8_t>> in;
        for (int r = 0; r < 4; ++r) in.push_back(makeInput(tpcommBfloat16, count, 9, r));
        fromDouble(tpcommBfloat16, bad, in[1].data() + 100 * 2);  // group 3
        std::vector<std::vector<uint8_t>> got;
        std::string variant;
        runAllReduce(*g, tpcommBfloat16, count, false, 0, in, &got, &variant);
        ASSERT_FALSE(HasFatalFailure());
        for (int r = 0; r < 4; ++r)
          for (size_t e = 0; e < count; ++e) {
            const bool nan = std::isnan(asFloat(tpcommBfloat16, got[r].data() + e * 2));
            ASSERT_EQ(nan, e / kWireGroup == 3)
                << variantOf(f, k) << " " << bad << ": rank " << r << " element " << e;
          }
      }
}

// Graphs: 5 calls captured, replayed 20 times: the eager bits every time, on every rank.
TEST(Wire, GraphReplay) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (const Form& f : kForms) {
    const Codec& k = kCodecs[0];
    auto g = wireGroup(4, f, &k, size_t{4} << 20);
    ASSERT_TRUE(g);
    const size_t count = size_t{1} << 20;
    std::vector<std::vector<uint8_t>> in, eager;
    for (int r = 0; r < 4; ++r) in.push_back(makeInput(tpcommBfloat16, count, 21, r));
    std::string variant;
    runAllReduce(*g, tpcommBfloat16, count, false, 0, in, &eager, &variant);
    ASSERT_EQ(variant, variantOf(f, k));
    std::vector<cudaGraphExec_t> exec(4);
    for (int r = 0; r < 4; ++r) {
      cudaSetDevice(g->devs[r]);
      cudaMemset(g->recv[r], 0, count * 2);
      cudaDeviceSynchronize();
    }
    std::vector<cudaGraph_t> graphs(4);
    for (int r = 0; r < 4; ++r)
      ASSERT_EQ(cudaStreamBeginCapture(g->streams[r], cudaStreamCaptureModeRelaxed), cudaSuccess);
    for (int i = 0; i < 5; ++i) {
      GroupScope scope;
      for (int r = 0; r < 4; ++r)
        ASSERT_EQ(tpcommAllReduce(g->send[r], g->recv[r], count, tpcommBfloat16, tpcommSum,
                                  g->comms[r], g->streams[r]),
                  tpcommSuccess)
            << tpcommGetLastError();
    }
    for (int r = 0; r < 4; ++r) {
      ASSERT_EQ(cudaStreamEndCapture(g->streams[r], &graphs[r]), cudaSuccess);
      ASSERT_EQ(cudaGraphInstantiate(&exec[r], graphs[r], 0), cudaSuccess);
    }
    for (int rep = 0; rep < 20; ++rep)
      for (int r = 0; r < 4; ++r) ASSERT_EQ(cudaGraphLaunch(exec[r], g->streams[r]), cudaSuccess);
    std::vector<uint8_t> got(count * 2);
    for (int r = 0; r < 4; ++r) {
      ASSERT_TRUE(drained(*g, r));
      cudaMemcpy(got.data(), g->recv[r], count * 2, cudaMemcpyDeviceToHost);
      EXPECT_EQ(memcmp(got.data(), eager[0].data(), count * 2), 0)
          << variantOf(f, k) << ": rank " << r;
      cudaGraphExecDestroy(exec[r]);
      cudaGraphDestroy(graphs[r]);
    }
  }
}

}  // namespace
}  // namespace tpcomm::test
