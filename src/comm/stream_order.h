// Calls of one communicator run in the order they were issued, whatever the stream. Every kernel
// reads the communicator's one epoch and uses its one set of slots, so two of them running at
// once mix their data. NCCL does the same for its communicators: every launch stream first waits
// on the communicator's device stream, which then waits on the launch (ncclLaunchPrepare and
// ncclLaunchFinish, src/enqueue.cc). tpcomm needs no stream of its own: every eager call records
// an event on its stream after its launch (afterCall), and a call on another stream waits for it,
// so the earlier stream may be destroyed in between (a stream per call is a common pattern).
// Inside one graph capture a record on the previous captured call's stream and a wait become a
// graph edge (the capture's streams live while it is open).
// Graph replays are the user's launches, which tpcomm cannot see (docs/PROTOCOL.md, "Streams").
#pragma once

#include <cuda_runtime_api.h>

#include "tpcomm/tpcomm.h"

namespace tpcomm {

// Where a stream is now: eager, or capturing (with the capture sequence's id).
struct StreamUse {
  cudaStream_t stream = nullptr;
  bool capturing = false;
  unsigned long long capture = 0;  // cudaStreamGetCaptureInfo's id, when capturing
};

// What a communicator remembers of its earlier calls: the last eager call's stream and the last
// captured call's capture and stream (a capture's calls are ordered among themselves, and the
// eager calls among themselves; a replay runs when the user launches it).
struct StreamOrder {
  bool eager_seen = false;
  cudaStream_t eager_stream = nullptr;
  bool capture_seen = false;
  unsigned long long capture = 0;
  cudaStream_t capture_stream = nullptr;
  // Created at init (none may be created inside a capture), freed at destroy; one for eager
  // record/wait pairs and one for those inside captures, so that neither mode waits on the
  // other's record.
  cudaEvent_t eager_event = nullptr;
  cudaEvent_t capture_event = nullptr;
};

enum class OrderStep {
  kNothing,        // the stream of the call before, or a capture's first call
  kWaitEager,      // this stream waits for the last eager call's event (afterCall)
  kWaitInCapture,  // the same capture on another stream: an edge from the last captured call
  kRefuseOtherCaptureOpen,  // the last captured call's capture is still open elsewhere
};

// Whether orderStep needs to know the state now of a remembered stream, and which (*which): the
// last captured call's stream before a call goes into another capture. The caller asks CUDA about
// it only then (that stream must still exist: a capture stream destroyed while the communicator's
// next call goes into a new capture is not supported; eager streams are never asked about).
bool streamToProbe(const StreamOrder& o, const StreamUse& now, cudaStream_t* which);
// The decision (pure): `probed` is the state now of streamToProbe's stream, where it named one.
OrderStep orderStep(const StreamOrder& o, const StreamUse& now, const StreamUse& probed);
// What the communicator remembers after a call it ordered.
void rememberCall(StreamOrder* o, const StreamUse& now);

tpcommResult_t streamOrderCreate(StreamOrder* o);
void streamOrderDestroy(StreamOrder* o);

// Orders a call on `s` (cap: its capture status, from checkStream) after the communicator's
// previous one, or refuses it (tpcommInvalidUsage); then remembers s. The same eager stream as
// the last call's returns at once.
tpcommResult_t orderCallSlow(StreamOrder* o, cudaStream_t s, cudaStreamCaptureStatus cap,
                             const char* op, int rank);
// After an eager call's launch on s: the event a call on another stream will wait for.
tpcommResult_t afterCall(StreamOrder* o, cudaStream_t s, cudaStreamCaptureStatus cap);
inline tpcommResult_t orderCall(StreamOrder* o, cudaStream_t s, cudaStreamCaptureStatus cap,
                                const char* op, int rank) {
  if (cap == cudaStreamCaptureStatusNone && o->eager_seen && s == o->eager_stream)
    return tpcommSuccess;
  return orderCallSlow(o, s, cap, op, rank);
}

}  // namespace tpcomm
