#include "comm/call/stream_order.h"

#include "common/error.h"

namespace tpcomm {

int captureMarkOf(const StreamOrder& o, unsigned long long capture) {
  for (int i = 0; i < kRememberedCaptures; ++i)
    if (o.captures[i].capture == capture && capture != 0) return i;
  return -1;
}

OrderStep orderStep(const StreamOrder& o, const StreamUse& now) {
  if (!now.capturing) {
    // The event was recorded right after that call (afterCall), whatever its stream does now.
    if (!o.eager_seen || now.stream == o.eager_stream) return OrderStep::kNothing;
    return OrderStep::kWaitEager;
  }
  // A capture's first call: its graph depends on nothing outside it, and its replays run where
  // and when the user launches them. Earlier eager calls need no edge either.
  const int m = captureMarkOf(o, now.capture);
  if (m < 0 || o.captures[m].stream == now.stream) return OrderStep::kNothing;
  return OrderStep::kWaitInCapture;
}

int rememberCall(StreamOrder* o, const StreamUse& now) {
  if (!now.capturing) {
    o->eager_seen = true;
    o->eager_stream = now.stream;
    return -1;
  }
  int m = captureMarkOf(*o, now.capture);
  if (m < 0) {  // the least recently used mark (an unused one has last_use 0)
    m = 0;
    for (int i = 1; i < kRememberedCaptures; ++i)
      if (o->captures[i].last_use < o->captures[m].last_use) m = i;
  }
  CaptureMark& k = o->captures[m];
  k.capture = now.capture;
  k.stream = now.stream;
  k.last_use = ++o->uses;
  return m;
}

tpcommResult_t streamOrderCreate(StreamOrder* o) {
  TPCOMM_CUDA_CHECK(cudaEventCreateWithFlags(&o->eager_event, cudaEventDisableTiming));
  for (CaptureMark& k : o->captures)
    TPCOMM_CUDA_CHECK(cudaEventCreateWithFlags(&k.event, cudaEventDisableTiming));
  return tpcommSuccess;
}

void streamOrderDestroy(StreamOrder* o) {
  if (o->eager_event) cudaEventDestroy(o->eager_event);
  for (CaptureMark& k : o->captures)
    if (k.event) cudaEventDestroy(k.event);
  *o = StreamOrder{};
}

namespace {

tpcommResult_t streamUse(cudaStream_t s, StreamUse* u) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  TPCOMM_CUDA_CHECK(cudaStreamGetCaptureInfo(s, &st, &id));
  u->stream = s;
  u->capturing = st == cudaStreamCaptureStatusActive;
  u->capture = u->capturing ? id : 0;
  return tpcommSuccess;
}

}  // namespace

tpcommResult_t afterCall(StreamOrder* o, cudaStream_t s, cudaStreamCaptureStatus cap) {
  if (cap == cudaStreamCaptureStatusNone) {
    TPCOMM_CUDA_CHECK(cudaEventRecord(o->eager_event, s));
  } else if (cap == cudaStreamCaptureStatusActive && o->current >= 0) {
    // Inside the capture: the record is no node, it marks the stream's place after the launch.
    TPCOMM_CUDA_CHECK(cudaEventRecord(o->captures[o->current].event, s));
    o->current = -1;
  }
  return tpcommSuccess;
}

tpcommResult_t orderCallSlow(StreamOrder* o, cudaStream_t s, cudaStreamCaptureStatus cap,
                             const char* /*op*/, int /*rank*/) {
  o->current = -1;
  // An invalidated capture: the launch itself fails and says why; nothing to remember.
  if (cap == cudaStreamCaptureStatusInvalidated) return tpcommSuccess;
  StreamUse now{s, false, 0};
  if (cap == cudaStreamCaptureStatusActive) TPCOMM_CHECK(streamUse(s, &now));
  switch (orderStep(*o, now)) {
    case OrderStep::kNothing:
      break;
    case OrderStep::kWaitEager:
      TPCOMM_CUDA_CHECK(cudaStreamWaitEvent(s, o->eager_event, 0));
      break;
    case OrderStep::kWaitInCapture:
      TPCOMM_CUDA_CHECK(
          cudaStreamWaitEvent(s, o->captures[captureMarkOf(*o, now.capture)].event, 0));
      break;
  }
  o->current = rememberCall(o, now);
  return tpcommSuccess;
}

}  // namespace tpcomm
