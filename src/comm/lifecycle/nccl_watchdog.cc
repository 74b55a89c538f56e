#include "comm/lifecycle/nccl_watchdog.h"

#include <cstdio>
#include <utility>

#include "common/error.h"
#include "common/log.h"

namespace tpcomm {
namespace {

// true once the event's work is done; an event that can no longer be waited for (a broken
// context) counts as done: there is nothing left to bound.
bool eventDone(cudaEvent_t e) {
  const cudaError_t r = cudaEventQuery(e);
  if (r == cudaErrorNotReady) return false;
  if (r != cudaSuccess) cudaGetLastError();  // not sticky for this thread's next call
  return true;
}

class EventPairOp : public WatchedOp {
 public:
  EventPairOp(std::shared_ptr<EventPool> pool, cudaEvent_t start, cudaEvent_t end)
      : pool_(std::move(pool)), start_(start), end_(end) {}
  ~EventPairOp() override {
    pool_->give(start_);
    pool_->give(end_);
  }
  bool started() override { return eventDone(start_); }
  bool finished() override { return eventDone(end_); }

 private:
  std::shared_ptr<EventPool> pool_;
  cudaEvent_t start_, end_;
};

}  // namespace

EventPool::~EventPool() {
  for (cudaEvent_t e : free_) cudaEventDestroy(e);
}

tpcommResult_t EventPool::take(cudaEvent_t* e) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      *e = free_.back();
      free_.pop_back();
      return tpcommSuccess;
    }
  }
  int current = -1;
  TPCOMM_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device_) TPCOMM_CUDA_CHECK(cudaSetDevice(device_));
  const cudaError_t r = cudaEventCreateWithFlags(e, cudaEventDisableTiming);
  if (current != device_) cudaSetDevice(current);
  if (r != cudaSuccess) return failCuda(r, "cudaEventCreateWithFlags", __FILE__, __LINE__);
  return tpcommSuccess;
}

void EventPool::give(cudaEvent_t e) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(e);
}

NcclWatch::NcclWatch(int device, int timeout_ms, std::function<void()> end_call)
    : timeout_ms_(timeout_ms),
      end_call_(std::move(end_call)),
      pool_(std::make_shared<EventPool>(device)),
      dog_(
          std::chrono::milliseconds(timeout_ms),
          [this](const std::string& what, double ran_ms) { onHang(what, ran_ms); },
          [device] { cudaSetDevice(device); }) {}

NcclWatch::~NcclWatch() = default;

tpcommResult_t NcclWatch::begin(cudaStream_t s, const std::function<tpcommResult_t()>& launch,
                                cudaEvent_t* start) {
  std::lock_guard<std::timed_mutex> lock(launch_mu_);
  if (hung()) return fail(tpcommTimeout, "%s", report().c_str());
  TPCOMM_CHECK(pool_->take(start));
  const cudaError_t r = cudaEventRecord(*start, s);
  if (r != cudaSuccess) {
    pool_->give(*start);
    return failCuda(r, "cudaEventRecord(start of an NCCL call)", __FILE__, __LINE__);
  }
  const tpcommResult_t res = launch();
  if (res != tpcommSuccess) pool_->give(*start);
  return res;
}

void NcclWatch::breakAfterFailedLaunch() {
  std::lock_guard<std::timed_mutex> lock(launch_mu_);
  if (hung()) return;
  const std::string why = lastError();
  breakWith(why + abortNote());
  setLastError(why);  // the launch's own message stays the caller's
}

const char* NcclWatch::abortNote() const {
  return end_call_ ? "; the NCCL communicator was aborted"
                   : "; the caller's ncclComm_t was not aborted (tpcomm does not own it): abort "
                     "it with ncclCommAbort to release the stream";
}

// The communicator is broken from here on: the report, then the end of its NCCL calls.
void NcclWatch::breakWith(const std::string& msg) {
  {
    std::lock_guard<std::mutex> lock(report_mu_);
    report_ = msg;
  }
  hung_.store(true, std::memory_order_release);
  TPCOMM_WARN(COLL, "%s", msg.c_str());
  if (end_call_) {
    end_call_();
    std::lock_guard<std::mutex> lock(report_mu_);
    ended_ = true;
  }
}

tpcommResult_t NcclWatch::finish(cudaStream_t s, cudaEvent_t start, std::string what) {
  cudaEvent_t end = nullptr;
  tpcommResult_t res = pool_->take(&end);
  if (res == tpcommSuccess) {
    const cudaError_t r = cudaEventRecord(end, s);
    if (r != cudaSuccess) {
      pool_->give(end);
      res = failCuda(r, "cudaEventRecord(end of an NCCL call)", __FILE__, __LINE__);
    }
  }
  if (res != tpcommSuccess) {
    pool_->give(start);
    return res;
  }
  dog_.watch(std::make_unique<EventPairOp>(pool_, start, end), std::move(what));
  return tpcommSuccess;
}

bool NcclWatch::ended() const {
  std::lock_guard<std::mutex> lock(report_mu_);
  return ended_;
}

std::string NcclWatch::report() const {
  std::lock_guard<std::mutex> lock(report_mu_);
  return report_;
}

void NcclWatch::onHang(const std::string& what, double ran_ms) {
  // No launch may race the abort: wait for one in progress, but not for ever, since a launch that
  // waits for the hung kernel (NCCL's full work queue) returns only once the abort is done.
  const bool quiet = launch_mu_.try_lock_for(std::chrono::milliseconds(timeout_ms_));
  char msg[512];
  snprintf(msg, sizeof(msg),
           "%s ran %.0f ms on the GPU without finishing (timeout %d ms): a peer is not taking "
           "part%s",
           what.c_str(), ran_ms, timeout_ms_, abortNote());
  breakWith(msg);
  if (quiet) launch_mu_.unlock();
}

}  // namespace tpcomm
