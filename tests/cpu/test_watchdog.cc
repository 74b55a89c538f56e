// The watchdog that bounds NCCL-served calls (comm/lifecycle/watchdog.h), driven by fake
// operations: the verdict on one operation, the look period, and the thread: a hung operation fires
// the hang callback once, within the timeout and a look period, and the callback's "abort" releases
// it; operations that finish, or never start, never fire; the thread starts lazily and stops
// cleanly.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "comm/lifecycle/watchdog.h"

namespace tpcomm {
namespace {

using std::chrono::milliseconds;

TEST(Watchdog, JudgesFromTheStartNotFromTheQueue) {
  const WatchClock::time_point t0 = WatchClock::now();
  const milliseconds timeout(100);
  WatchClock::time_point since{};
  // Queued behind other work for far longer than the timeout: not a hang.
  EXPECT_EQ(judgeOp(false, false, &since, t0 + milliseconds(1000), timeout), OpState::kQueued);
  EXPECT_EQ(since, WatchClock::time_point{});
  // Seen started: the clock starts there.
  EXPECT_EQ(judgeOp(true, false, &since, t0 + milliseconds(2000), timeout), OpState::kRunning);
  EXPECT_EQ(since, t0 + milliseconds(2000));
  EXPECT_EQ(judgeOp(true, false, &since, t0 + milliseconds(2100), timeout), OpState::kRunning);
  EXPECT_EQ(judgeOp(true, false, &since, t0 + milliseconds(2101), timeout), OpState::kHung);
  // Finished wins over everything, even past the timeout.
  EXPECT_EQ(judgeOp(true, true, &since, t0 + milliseconds(9000), timeout), OpState::kDone);
  WatchClock::time_point fresh{};
  EXPECT_EQ(judgeOp(false, true, &fresh, t0, timeout), OpState::kDone);
}

TEST(Watchdog, LooksATenthOfTheTimeoutBetween1And100Ms) {
  EXPECT_EQ(watchPeriod(milliseconds(5000)), milliseconds(100));
  EXPECT_EQ(watchPeriod(milliseconds(300)), milliseconds(30));
  EXPECT_EQ(watchPeriod(milliseconds(5)), milliseconds(1));
}

// A fake operation: started and finished as the test (or the "abort") says.
struct FakeState {
  std::atomic<bool> started{false};
  std::atomic<bool> finished{false};
  std::atomic<bool> destroyed{false};
};
class FakeOp : public WatchedOp {
 public:
  explicit FakeOp(std::shared_ptr<FakeState> s) : s_(std::move(s)) {}
  ~FakeOp() override { s_->destroyed = true; }
  bool started() override { return s_->started; }
  bool finished() override { return s_->finished; }

 private:
  std::shared_ptr<FakeState> s_;
};

struct HangLog {
  std::mutex mu;
  int calls = 0;
  std::string what;
  WatchClock::time_point when{};
};

double msBetween(WatchClock::time_point a, WatchClock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

TEST(Watchdog, AbortsAHungOperationOnceWithinTheTimeout) {
  constexpr int kTimeoutMs = 80;
  auto hung = std::make_shared<FakeState>();
  auto later = std::make_shared<FakeState>();
  HangLog log;
  Watchdog dog(milliseconds(kTimeoutMs), [&](const std::string& what, double) {
    std::lock_guard<std::mutex> lock(log.mu);
    log.calls++;
    log.what = what;
    log.when = WatchClock::now();
    hung->finished = true;  // the "abort" releases the operation
  });
  hung->started = true;
  const WatchClock::time_point t0 = WatchClock::now();
  dog.watch(std::make_unique<FakeOp>(hung), "call A");
  dog.watch(std::make_unique<FakeOp>(later), "call B");  // queued behind A, never starts
  while (!dog.fired() && WatchClock::now() - t0 < milliseconds(5 * kTimeoutMs))
    std::this_thread::sleep_for(milliseconds(1));
  ASSERT_TRUE(dog.fired()) << "no hang reported in 5 timeouts";
  std::this_thread::sleep_for(milliseconds(3 * kTimeoutMs));  // any second report would be here
  std::lock_guard<std::mutex> lock(log.mu);
  const double ms = msBetween(t0, log.when);
  printf("[ watchdog ] hung op reported after %.1f ms (timeout %d ms)\n", ms, kTimeoutMs);
  EXPECT_EQ(log.calls, 1);
  EXPECT_EQ(log.what, "call A");
  EXPECT_GE(ms, kTimeoutMs);
  // One watch period late at most, plus the scheduling slack of a loaded 2-core machine (40 ms
  // failed once there, at 129.6 ms); far below the 5 timeouts a missed report would take.
  EXPECT_LT(ms, kTimeoutMs + watchPeriod(milliseconds(kTimeoutMs)).count() + 150);
  EXPECT_TRUE(hung->finished);
  EXPECT_EQ(dog.pending(), 0u) << "a fired watchdog keeps nothing";
  EXPECT_TRUE(later->destroyed);
  // Once fired, new operations are dropped, not watched.
  auto after = std::make_shared<FakeState>();
  after->started = true;
  dog.watch(std::make_unique<FakeOp>(after), "call C");
  EXPECT_EQ(dog.pending(), 0u);
  EXPECT_TRUE(after->destroyed);
}

TEST(Watchdog, LongQueuedAndFinishingOperationsNeverFire) {
  constexpr int kTimeoutMs = 40;
  std::atomic<int> hangs{0};
  Watchdog dog(milliseconds(kTimeoutMs), [&](const std::string&, double) { hangs++; });
  // Each runs for half the timeout, back to back, for many timeouts in all: progress.
  for (int i = 0; i < 8; ++i) {
    auto s = std::make_shared<FakeState>();
    dog.watch(std::make_unique<FakeOp>(s), "call " + std::to_string(i));
    std::this_thread::sleep_for(milliseconds(kTimeoutMs));  // queued (not started) meanwhile
    s->started = true;
    std::this_thread::sleep_for(milliseconds(kTimeoutMs / 2));
    s->finished = true;
  }
  std::this_thread::sleep_for(milliseconds(2 * kTimeoutMs));
  EXPECT_EQ(hangs.load(), 0);
  EXPECT_FALSE(dog.fired());
  EXPECT_EQ(dog.pending(), 0u) << "finished operations are released";
}

TEST(Watchdog, ThreadStartsLazilyAndStopsWithPendingWork) {
  std::atomic<int> setups{0};
  std::atomic<int> hangs{0};
  auto s = std::make_shared<FakeState>();
  {
    Watchdog dog(
        milliseconds(10000), [&](const std::string&, double) { hangs++; }, [&] { setups++; });
    std::this_thread::sleep_for(milliseconds(20));
    EXPECT_EQ(setups.load(), 0) << "no thread before the first watched operation";
    s->started = true;
    dog.watch(std::make_unique<FakeOp>(s), "never finishes");
    for (int i = 0; i < 200 && setups.load() == 0; ++i)
      std::this_thread::sleep_for(milliseconds(1));
    EXPECT_EQ(setups.load(), 1);
  }  // joined here, well before the timeout: no report, the operation dropped
  EXPECT_EQ(hangs.load(), 0);
  EXPECT_TRUE(s->destroyed);
}

}  // namespace
}  // namespace tpcomm
