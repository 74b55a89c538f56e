// The bound on a communicator's NCCL-served calls. NCCL's kernels wait for their peers without a
// deadline, so a dead peer would hang an NCCL-served call for ever. Each eager call is bracketed
// by two CUDA events (timing disabled) that a Watchdog (watchdog.h) watches: once the start event
// has completed (the NCCL kernel is running), the end event must complete within the timeout, or
// the watch ends the call (for an NCCL communicator tpcomm owns, ncclCommAbort from the
// watchdog's thread, which makes NCCL's kernels return) and marks the communicator broken: later
// calls fail with tpcommTimeout and a message naming the call. Calls captured into CUDA graphs are
// not watched (a replay is invisible to the host). Started lazily, on the first eager NCCL call.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/lifecycle/watchdog.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

// Reused CUDA events of one device (creating events per call would cost more than recording
// them). Made on `device` whatever device is current: a group's calls are finished at
// tpcommGroupEnd, where another rank's device may be current.
class EventPool {
 public:
  explicit EventPool(int device) : device_(device) {}
  ~EventPool();
  tpcommResult_t take(cudaEvent_t* e);
  void give(cudaEvent_t e);

 private:
  const int device_;
  std::mutex mu_;
  std::vector<cudaEvent_t> free_;
};

class NcclWatch {
 public:
  // end_call: what ends a hung call (ncclCommAbort; a test's stand-in), run on the watchdog's
  // thread, never while a launch below is running on another thread unless that launch is itself
  // stuck for a whole timeout (NCCL waiting for the hung kernel; aborting is what releases it).
  // Null when the NCCL communicator is the caller's: then the hang is reported, not ended.
  NcclWatch(int device, int timeout_ms, std::function<void()> end_call);
  ~NcclWatch();  // joins the watchdog before the events go

  // Records the start event on s, then runs launch (which enqueues one NCCL operation on s).
  // A call inside an open NCCL group launches at ncclGroupEnd: its end is recorded by finish().
  tpcommResult_t begin(cudaStream_t s, const std::function<tpcommResult_t()>& launch,
                       cudaEvent_t* start);
  // After a launch that failed with the communicator in error (the caller knows: NCCL reported
  // it): NCCL may have put a kernel on the stream before it saw the error (a peer's socket closed
  // while the call was enqueued), and nothing would ever finish that kernel, so the caller's
  // stream would hang. A communicator in error must be aborted anyway (NCCL's rule): end it now,
  // as a hang would, so that later calls fail at once with this launch's message.
  void breakAfterFailedLaunch();
  // Records the end event after the operation and hands the pair to the watchdog.
  tpcommResult_t finish(cudaStream_t s, cudaEvent_t start, std::string what);

  // Every call asks (checkAsync): one atomic load.
  bool hung() const { return hung_.load(std::memory_order_acquire); }
  bool ended() const;  // the hung call was ended (the NCCL communicator is gone)
  // Joins the watchdog (a hang being handled is finished first); then ended() is final.
  void stop() { dog_.stop(); }
  std::string report() const;  // why the communicator is broken; empty while it is not

 private:
  void onHang(const std::string& what, double ran_ms);
  void breakWith(const std::string& msg);
  const char* abortNote() const;

  const int timeout_ms_;
  const std::function<void()> end_call_;
  std::timed_mutex launch_mu_;
  mutable std::mutex report_mu_;
  std::string report_;
  std::atomic<bool> hung_{false};  // set after report_
  bool ended_ = false;
  std::shared_ptr<EventPool> pool_;  // shared with the watched operations, which return events
  Watchdog dog_;                     // last: destroyed (joined) first
};

}  // namespace tpcomm
