// A host thread that bounds operations it cannot interrupt itself: work queued on a GPU that may
// never finish (an NCCL kernel waiting for a dead peer). Each watched operation says whether it
// has started and finished (CUDA events, in nccl_watchdog.h); one that started and has not
// finished within the timeout fires the hang callback once, which ends it (ncclCommAbort) and
// poisons its owner. Free of CUDA, so the CPU tests drive it with fake operations.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tpcomm {

using WatchClock = std::chrono::steady_clock;

// One operation under watch; polled from the watchdog's thread only.
class WatchedOp {
 public:
  virtual ~WatchedOp() = default;
  virtual bool started() = 0;   // its work began (what ran before it on its queue is done)
  virtual bool finished() = 0;  // its work is done (or can no longer be waited for)
};

enum class OpState { kQueued, kRunning, kDone, kHung };

// Where one operation stands at `now`. *since: when it was first seen started (set here; a
// default-constructed time point means not yet). Pure, for the CPU tests.
OpState judgeOp(bool started, bool finished, WatchClock::time_point* since,
                WatchClock::time_point now, std::chrono::milliseconds timeout);

// How often the thread looks while operations are pending: a tenth of the timeout, 1..100 ms, so
// a hang is seen within about 10% past the timeout and an idle watchdog costs nothing.
std::chrono::milliseconds watchPeriod(std::chrono::milliseconds timeout);

class Watchdog {
 public:
  // Called once, on the watchdog's thread, with the hung operation's name and how long it ran.
  using OnHang = std::function<void(const std::string& what, double ran_ms)>;
  // thread_setup runs first on the watchdog's thread (cudaSetDevice).
  Watchdog(std::chrono::milliseconds timeout, OnHang on_hang,
           std::function<void()> thread_setup = nullptr);
  ~Watchdog();  // stop()
  // Stops and joins the thread (a hang callback in progress finishes first); pending operations
  // are dropped. Idempotent.
  void stop();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Watches op (named `what` in the hang report). Starts the thread on first use. Dropped once
  // the watchdog has fired: its owner refuses further work by then.
  void watch(std::unique_ptr<WatchedOp> op, std::string what);
  bool fired() const;
  size_t pending() const;

 private:
  struct Entry {
    std::unique_ptr<WatchedOp> op;
    std::string what;
    WatchClock::time_point since{};
  };
  void run();

  const std::chrono::milliseconds timeout_;
  const OnHang on_hang_;
  const std::function<void()> thread_setup_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::vector<Entry> ops_;
  bool stop_ = false;
  bool fired_ = false;
  std::thread thread_;
};

}  // namespace tpcomm
