#include "comm/lifecycle/watchdog.h"

#include <algorithm>
#include <utility>

namespace tpcomm {

OpState judgeOp(bool started, bool finished, WatchClock::time_point* since,
                WatchClock::time_point now, std::chrono::milliseconds timeout) {
  if (finished) return OpState::kDone;
  if (!started) return OpState::kQueued;
  if (*since == WatchClock::time_point{}) *since = now;
  return now - *since > timeout ? OpState::kHung : OpState::kRunning;
}

std::chrono::milliseconds watchPeriod(std::chrono::milliseconds timeout) {
  return std::clamp(timeout / 10, std::chrono::milliseconds(1), std::chrono::milliseconds(100));
}

Watchdog::Watchdog(std::chrono::milliseconds timeout, OnHang on_hang,
                   std::function<void()> thread_setup)
    : timeout_(timeout), on_hang_(std::move(on_hang)), thread_setup_(std::move(thread_setup)) {}

Watchdog::~Watchdog() {
  stop();
}

void Watchdog::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  ops_.clear();
}

void Watchdog::watch(std::unique_ptr<WatchedOp> op, std::string what) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (fired_ || stop_) return;
    ops_.push_back(Entry{std::move(op), std::move(what)});
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  }
  wake_.notify_all();
}

bool Watchdog::fired() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fired_;
}

size_t Watchdog::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ops_.size();
}

void Watchdog::run() {
  if (thread_setup_) thread_setup_();
  const std::chrono::milliseconds period = watchPeriod(timeout_);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    // Asleep while nothing is pending; else one look per period.
    if (ops_.empty())
      wake_.wait(lock, [this] { return stop_ || !ops_.empty(); });
    else
      wake_.wait_for(lock, period, [this] { return stop_; });
    if (stop_) return;
    const WatchClock::time_point now = WatchClock::now();
    std::string hung;
    double ran_ms = 0;
    for (size_t i = 0; i < ops_.size();) {
      Entry& e = ops_[i];
      const bool finished = e.op->finished();
      const OpState s = judgeOp(!finished && e.op->started(), finished, &e.since, now, timeout_);
      if (s == OpState::kHung && hung.empty()) {
        hung = e.what;
        ran_ms = std::chrono::duration<double, std::milli>(now - e.since).count();
      }
      if (s == OpState::kDone) {
        ops_.erase(ops_.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    if (hung.empty()) continue;
    fired_ = true;
    ops_.clear();
    // Outside the lock: ending the operation may take a while, and may ask pending() or fired().
    lock.unlock();
    on_hang_(hung, ran_ms);
    lock.lock();
  }
}

}  // namespace tpcomm
