// The stream-order table (src/comm/stream_order.h): which calls of one communicator wait for the
// one before them, where inside a capture the wait is an edge, which mixes are refused, and that
// a second call on the same eager stream asks CUDA nothing. The streams here are opaque handles
// that are only compared, never used.
#include <gtest/gtest.h>

#include "comm/stream_order.h"

namespace tpcomm {
namespace {

cudaStream_t fakeStream(uintptr_t n) {
  return reinterpret_cast<cudaStream_t>(n * 0x100);
}
const cudaStream_t kA = fakeStream(1), kB = fakeStream(2);
const StreamUse kIdle{};  // what a probe of a non-capturing stream returns

StreamUse eager(cudaStream_t s) {
  return StreamUse{s, false, 0};
}
StreamUse captured(cudaStream_t s, unsigned long long id) {
  return StreamUse{s, true, id};
}

// The decision for `now`, with `probed` standing for what CUDA says of the probed stream.
OrderStep stepFor(const StreamOrder& o, const StreamUse& now, const StreamUse& probed = kIdle) {
  cudaStream_t which = nullptr;
  const bool probe = streamToProbe(o, now, &which);
  return orderStep(o, now, probe ? probed : kIdle);
}

TEST(StreamOrder, EagerCallsWaitOnlyWhenTheStreamChanges) {
  StreamOrder o;
  EXPECT_EQ(stepFor(o, eager(kA)), OrderStep::kNothing);  // the first call
  rememberCall(&o, eager(kA));
  EXPECT_EQ(stepFor(o, eager(kA)), OrderStep::kNothing);
  EXPECT_EQ(stepFor(o, eager(kB)), OrderStep::kWaitEager);
  rememberCall(&o, eager(kB));
  EXPECT_EQ(o.eager_stream, kB);
  EXPECT_EQ(stepFor(o, eager(kA)), OrderStep::kWaitEager);
  // The legacy default stream is a null handle, and still a stream to wait for.
  rememberCall(&o, eager(nullptr));
  EXPECT_EQ(stepFor(o, eager(kA)), OrderStep::kWaitEager);
}

TEST(StreamOrder, ProbesOnlyWhereTheAnswerMatters) {
  StreamOrder o;
  cudaStream_t which = nullptr;
  EXPECT_FALSE(streamToProbe(o, eager(kA), &which));
  rememberCall(&o, eager(kA));
  EXPECT_FALSE(streamToProbe(o, eager(kA), &which));
  // Another eager stream: the event recorded after the call stands for it (the earlier stream
  // may be gone), so nothing is asked about that stream.
  EXPECT_FALSE(streamToProbe(o, eager(kB), &which));
  // A capture's first call: no captured call before it, nothing to ask.
  EXPECT_FALSE(streamToProbe(o, captured(kB, 7), &which));
  rememberCall(&o, captured(kB, 7));
  EXPECT_FALSE(streamToProbe(o, captured(kA, 7), &which));  // same capture: an edge, no question
  ASSERT_TRUE(streamToProbe(o, captured(kA, 8), &which));
  EXPECT_EQ(which, kB);
}

TEST(StreamOrder, OneCaptureOverTwoStreamsGetsEdges) {
  StreamOrder o;
  rememberCall(&o, eager(kA));
  // Earlier eager calls need no edge into a capture: the graph runs when the user launches it.
  EXPECT_EQ(stepFor(o, captured(kA, 7)), OrderStep::kNothing);
  rememberCall(&o, captured(kA, 7));
  EXPECT_EQ(stepFor(o, captured(kA, 7)), OrderStep::kNothing);
  EXPECT_EQ(stepFor(o, captured(kB, 7)), OrderStep::kWaitInCapture);  // a forked stream
  rememberCall(&o, captured(kB, 7));
  EXPECT_EQ(stepFor(o, captured(kA, 7)), OrderStep::kWaitInCapture);
  // The eager chain is remembered apart: an eager call on A after the capture waits for nothing.
  EXPECT_EQ(stepFor(o, eager(kA)), OrderStep::kNothing);
  EXPECT_EQ(stepFor(o, eager(kB)), OrderStep::kWaitEager);
}

TEST(StreamOrder, AnotherOpenCaptureIsRefusedAnEndedOneIsNot) {
  StreamOrder o;
  rememberCall(&o, captured(kA, 7));
  // Capture 7 still open on A while capture 8 on B takes a call: refused.
  EXPECT_EQ(stepFor(o, captured(kB, 8), captured(kA, 7)), OrderStep::kRefuseOtherCaptureOpen);
  // Capture 7 ended; A idle, or capturing a new capture 9: capture 8's first call is free.
  EXPECT_EQ(stepFor(o, captured(kB, 8), kIdle), OrderStep::kNothing);
  EXPECT_EQ(stepFor(o, captured(kB, 8), captured(kA, 9)), OrderStep::kNothing);
  // The same stream starting its next capture.
  EXPECT_EQ(stepFor(o, captured(kA, 8), kIdle), OrderStep::kNothing);
}

TEST(StreamOrder, EagerStreamNowCapturingStillOrders) {
  StreamOrder o;
  rememberCall(&o, eager(kA));
  // A began a capture since (or was destroyed): the event recorded right after the eager call
  // still stands for it, so the call on B waits for it.
  EXPECT_EQ(stepFor(o, eager(kB), captured(kA, 3)), OrderStep::kWaitEager);
  EXPECT_EQ(stepFor(o, eager(kB), kIdle), OrderStep::kWaitEager);
}

// The hot path: the same eager stream as the call before returns before any CUDA call (there is
// no GPU here, so any CUDA call would fail) and changes nothing.
TEST(StreamOrder, SameEagerStreamAsksCudaNothing) {
  StreamOrder o;
  rememberCall(&o, eager(kA));
  EXPECT_EQ(orderCall(&o, kA, cudaStreamCaptureStatusNone, "test", 0), tpcommSuccess);
  EXPECT_EQ(o.eager_stream, kA);
  EXPECT_FALSE(o.capture_seen);
}

}  // namespace
}  // namespace tpcomm
