// Calls of one communicator run in the order they were issued, whatever the stream. Every kernel
// reads the communicator's one epoch and uses its one set of slots, so two of them running at
// once mix their data. NCCL does the same for its communicators: every launch stream first waits
// on the communicator's device stream, which then waits on the launch (ncclLaunchPrepare and
// ncclLaunchFinish, src/enqueue.cc). tpcomm needs no stream of its own: every eager call records
// an event on its stream after its launch (afterCall), and a call on another stream waits for it,
// so the earlier stream may be destroyed in between (a stream per call is a common pattern).
// Inside one graph capture an event recorded after each call and a wait on it from another stream
// become a graph edge; no stream but the call's own is ever asked about or used.
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

// How many captures a communicator remembers at once (the most recently used ones). A capture
// forgotten while still open (more than this many open at once, each taking calls) loses only
// the edge between its calls on different streams; replayed, those kernels can then overlap,
// which the kernels' concurrency check reports (docs/PROTOCOL.md, "Streams").
constexpr int kRememberedCaptures = 8;

// A capture's last call: its stream, and an event recorded on it inside the capture right after
// the launch (afterCall), which a later call of the same capture on another stream waits for (an
// edge in the graph, whatever has become of that stream since).
struct CaptureMark {
  unsigned long long capture = 0;  // 0: unused
  cudaStream_t stream = nullptr;
  unsigned long long last_use = 0;  // for the least recently used to be replaced
  cudaEvent_t event = nullptr;
};

// What a communicator remembers of its earlier calls: the last eager call's stream, and each
// recent capture's last call (a capture's calls are ordered among themselves, and the eager calls
// among themselves; a replay runs when the user launches it).
struct StreamOrder {
  bool eager_seen = false;
  cudaStream_t eager_stream = nullptr;
  // Created at init (none may be created inside a capture), freed at destroy; the eager event is
  // recorded only outside captures and the captures' only inside theirs, so that neither mode
  // waits on the other's record.
  cudaEvent_t eager_event = nullptr;
  CaptureMark captures[kRememberedCaptures];
  unsigned long long uses = 0;  // captured calls ordered so far (CaptureMark::last_use)
  int current = -1;             // the mark of the captured call being made (for afterCall), else -1
};

enum class OrderStep {
  kNothing,        // the stream of the call before, or a capture's first call
  kWaitEager,      // this stream waits for the last eager call's event (afterCall)
  kWaitInCapture,  // the same capture on another stream: an edge from its last call
};

// The mark of `capture` among the remembered ones, or -1.
int captureMarkOf(const StreamOrder& o, unsigned long long capture);
// The decision (pure): what the call `now` needs to be ordered after the earlier ones.
OrderStep orderStep(const StreamOrder& o, const StreamUse& now);
// What the communicator remembers after a call it ordered; for a captured call, the index of the
// mark it took (its capture's, else the least recently used one's), else -1.
int rememberCall(StreamOrder* o, const StreamUse& now);

tpcommResult_t streamOrderCreate(StreamOrder* o);
void streamOrderDestroy(StreamOrder* o);

// Orders a call on `s` (cap: its capture status, from checkStream) after the communicator's
// previous one; then remembers s. The same eager stream as the last call's returns at once.
tpcommResult_t orderCallSlow(StreamOrder* o, cudaStream_t s, cudaStreamCaptureStatus cap,
                             const char* op, int rank);
// After a call's launch on s: the event a later call on another stream will wait for (an eager
// call's, or inside a capture its capture's).
tpcommResult_t afterCall(StreamOrder* o, cudaStream_t s, cudaStreamCaptureStatus cap);
inline tpcommResult_t orderCall(StreamOrder* o, cudaStream_t s, cudaStreamCaptureStatus cap,
                                const char* op, int rank) {
  if (cap == cudaStreamCaptureStatusNone && o->eager_seen && s == o->eager_stream)
    return tpcommSuccess;
  return orderCallSlow(o, s, cap, op, rank);
}

}  // namespace tpcomm
