#include "comm/stream_order.h"

#include "common/error.h"

namespace tpcomm {

bool streamToProbe(const StreamOrder& o, const StreamUse& now, cudaStream_t* which) {
  const bool capture = now.capturing && o.capture_seen && now.capture != o.capture;
  *which = o.capture_stream;
  return capture;
}

OrderStep orderStep(const StreamOrder& o, const StreamUse& now, const StreamUse& probed) {
  if (!now.capturing) {
    // The event was recorded right after that call (afterCall), whatever its stream does now.
    if (!o.eager_seen || now.stream == o.eager_stream) return OrderStep::kNothing;
    return OrderStep::kWaitEager;
  }
  if (o.capture_seen && now.capture == o.capture)
    return now.stream == o.capture_stream ? OrderStep::kNothing : OrderStep::kWaitInCapture;
  // Another capture of this communicator still open: its later calls could not be ordered after
  // its earlier ones once this capture is the one remembered.
  if (o.capture_seen && probed.capturing && probed.capture == o.capture)
    return OrderStep::kRefuseOtherCaptureOpen;
  // A capture's first call: its graph depends on nothing outside it, and its replays run where
  // and when the user launches them. Earlier eager calls need no edge either.
  return OrderStep::kNothing;
}

void rememberCall(StreamOrder* o, const StreamUse& now) {
  if (now.capturing) {
    o->capture_seen = true;
    o->capture = now.capture;
    o->capture_stream = now.stream;
  } else {
    o->eager_seen = true;
    o->eager_stream = now.stream;
  }
}

tpcommResult_t streamOrderCreate(StreamOrder* o) {
  TPCOMM_CUDA_CHECK(cudaEventCreateWithFlags(&o->eager_event, cudaEventDisableTiming));
  TPCOMM_CUDA_CHECK(cudaEventCreateWithFlags(&o->capture_event, cudaEventDisableTiming));
  return tpcommSuccess;
}

void streamOrderDestroy(StreamOrder* o) {
  if (o->eager_event) cudaEventDestroy(o->eager_event);
  if (o->capture_event) cudaEventDestroy(o->capture_event);
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

// `later` waits for everything enqueued on `earlier` so far (inside one capture: an edge).
tpcommResult_t waitFor(cudaStream_t later, cudaStream_t earlier, cudaEvent_t e) {
  TPCOMM_CUDA_CHECK(cudaEventRecord(e, earlier));
  TPCOMM_CUDA_CHECK(cudaStreamWaitEvent(later, e, 0));
  return tpcommSuccess;
}

}  // namespace

tpcommResult_t afterCall(StreamOrder* o, cudaStream_t s, cudaStreamCaptureStatus cap) {
  if (cap == cudaStreamCaptureStatusNone) TPCOMM_CUDA_CHECK(cudaEventRecord(o->eager_event, s));
  return tpcommSuccess;
}

tpcommResult_t orderCallSlow(StreamOrder* o, cudaStream_t s, cudaStreamCaptureStatus cap,
                             const char* op, int rank) {
  // An invalidated capture: the launch itself fails and says why; nothing to remember.
  if (cap == cudaStreamCaptureStatusInvalidated) return tpcommSuccess;
  StreamUse now{s, false, 0};
  if (cap == cudaStreamCaptureStatusActive) TPCOMM_CHECK(streamUse(s, &now));
  StreamUse probed{};
  cudaStream_t p = nullptr;
  if (streamToProbe(*o, now, &p)) TPCOMM_CHECK(streamUse(p, &probed));
  switch (orderStep(*o, now, probed)) {
    case OrderStep::kNothing:
      break;
    case OrderStep::kWaitEager:
      TPCOMM_CUDA_CHECK(cudaStreamWaitEvent(s, o->eager_event, 0));
      break;
    case OrderStep::kWaitInCapture:
      TPCOMM_CHECK(waitFor(s, o->capture_stream, o->capture_event));
      break;
    case OrderStep::kRefuseOtherCaptureOpen:
      return fail(tpcommInvalidUsage,
                  "%s: rank %d: this communicator's previous call went into another graph capture "
                  "that is still open (capture %llu), and calls of one communicator can be "
                  "ordered in one open capture at a time: end that capture before this one "
                  "(capture %llu) takes a call",
                  op, rank, o->capture, now.capture);
  }
  rememberCall(o, now);
  return tpcommSuccess;
}

}  // namespace tpcomm
