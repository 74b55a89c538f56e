// The stream-order table (src/comm/call/stream_order.h): which calls of one communicator wait for
// the one before them, where inside a capture the wait is an edge, how several open captures keep
// their own order, and that a second call on the same eager stream asks CUDA nothing. The streams
// here are opaque handles that are only compared, never used.
#include <gtest/gtest.h>

#include "comm/call/stream_order.h"

namespace tpcomm {
namespace {

cudaStream_t fakeStream(uintptr_t n) {
  return reinterpret_cast<cudaStream_t>(n * 0x100);
}
const cudaStream_t kA = fakeStream(1), kB = fakeStream(2);

StreamUse eager(cudaStream_t s) {
  return StreamUse{s, false, 0};
}
StreamUse captured(cudaStream_t s, unsigned long long id) {
  return StreamUse{s, true, id};
}

OrderStep stepFor(const StreamOrder& o, const StreamUse& now) {
  return orderStep(o, now);
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

TEST(StreamOrder, OneCaptureOverTwoStreamsGetsEdges) {
  StreamOrder o;
  rememberCall(&o, eager(kA));
  // Earlier eager calls need no edge into a capture: the graph runs when the user launches it.
  EXPECT_EQ(stepFor(o, captured(kA, 7)), OrderStep::kNothing);
  const int m = rememberCall(&o, captured(kA, 7));
  EXPECT_EQ(m, captureMarkOf(o, 7));
  EXPECT_EQ(stepFor(o, captured(kA, 7)), OrderStep::kNothing);
  EXPECT_EQ(stepFor(o, captured(kB, 7)), OrderStep::kWaitInCapture);  // a forked stream
  rememberCall(&o, captured(kB, 7));
  EXPECT_EQ(stepFor(o, captured(kA, 7)), OrderStep::kWaitInCapture);
  // The eager chain is remembered apart: an eager call on A after the capture waits for nothing.
  EXPECT_EQ(stepFor(o, eager(kA)), OrderStep::kNothing);
  EXPECT_EQ(stepFor(o, eager(kB)), OrderStep::kWaitEager);
}

// Two captures open at once, each taking calls on two streams: each keeps its own last call, so
// neither's edges point into the other (which would join the two graphs, or fail).
TEST(StreamOrder, InterleavedCapturesKeepTheirOwnOrder) {
  StreamOrder o;
  const int m7 = rememberCall(&o, captured(kA, 7));
  const int m8 = rememberCall(&o, captured(kB, 8));
  ASSERT_NE(m7, m8);
  EXPECT_EQ(stepFor(o, captured(kA, 7)), OrderStep::kNothing);  // capture 7's last was on A
  EXPECT_EQ(stepFor(o, captured(kB, 8)), OrderStep::kNothing);
  EXPECT_EQ(stepFor(o, captured(kB, 7)), OrderStep::kWaitInCapture);
  EXPECT_EQ(rememberCall(&o, captured(kB, 7)), m7);
  EXPECT_EQ(o.captures[m7].stream, kB);
  EXPECT_EQ(o.captures[m8].stream, kB);
  EXPECT_EQ(stepFor(o, captured(kA, 8)), OrderStep::kWaitInCapture);
  // A new capture on a stream that carried another one's calls: its first call.
  EXPECT_EQ(stepFor(o, captured(kA, 9)), OrderStep::kNothing);
}

// Past kRememberedCaptures captures the least recently used one is forgotten; the others, the
// recently used included, keep their marks.
TEST(StreamOrder, TheLeastRecentlyUsedCaptureIsForgotten) {
  StreamOrder o;
  for (unsigned long long id = 1; id <= kRememberedCaptures; ++id)
    rememberCall(&o, captured(kA, id));
  rememberCall(&o, captured(kA, 1));  // capture 1 used again: capture 2 is now the oldest
  rememberCall(&o, captured(kA, 100));
  EXPECT_EQ(captureMarkOf(o, 2), -1);
  EXPECT_GE(captureMarkOf(o, 1), 0);
  EXPECT_GE(captureMarkOf(o, 100), 0);
  for (unsigned long long id = 3; id <= kRememberedCaptures; ++id)
    EXPECT_GE(captureMarkOf(o, id), 0);
  EXPECT_EQ(stepFor(o, captured(kB, 2)), OrderStep::kNothing);  // forgotten: a first call
  EXPECT_EQ(stepFor(o, captured(kB, 3)), OrderStep::kWaitInCapture);
  EXPECT_EQ(captureMarkOf(o, 0), -1);  // 0 marks an unused entry, never a capture
}

TEST(StreamOrder, EagerStreamNowCapturingStillOrders) {
  StreamOrder o;
  rememberCall(&o, eager(kA));
  // A began a capture since (or was destroyed): the event recorded right after the eager call
  // still stands for it, so the call on B waits for it.
  EXPECT_EQ(stepFor(o, eager(kB)), OrderStep::kWaitEager);
}

// The hot path: the same eager stream as the call before returns before any CUDA call (there is
// no GPU here, so any CUDA call would fail) and changes nothing.
TEST(StreamOrder, SameEagerStreamAsksCudaNothing) {
  StreamOrder o;
  rememberCall(&o, eager(kA));
  EXPECT_EQ(orderCall(&o, kA, cudaStreamCaptureStatusNone, "test", 0), tpcommSuccess);
  EXPECT_EQ(o.eager_stream, kA);
  EXPECT_EQ(captureMarkOf(o, 1), -1);
  EXPECT_EQ(o.current, -1);
}

// Capture id 0 names no capture: the unused marks (capture 0) are not its, and it waits for
// nothing.
TEST(StreamOrder, CaptureIdZeroHasNoMark) {
  const StreamOrder o;
  EXPECT_EQ(captureMarkOf(o, 0), -1);
  EXPECT_EQ(stepFor(o, captured(kA, 0)), OrderStep::kNothing);
}

}  // namespace
}  // namespace tpcomm
