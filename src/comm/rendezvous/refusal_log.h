// Who may connect to a rendezvous socket (our uid), and the refused connections, logged one by
// one up to a few and then only counted, with one summary line at the end: a flood of foreign
// connections must not become a flood of log lines.
#pragma once

namespace tpcomm {

constexpr int kShownRefusals = 5;

class RefusalLog {
 public:
  explicit RefusalLog(const char* who) : who_(who) {}
  ~RefusalLog();  // logs how many refusals were not shown, if any
  RefusalLog(const RefusalLog&) = delete;
  RefusalLog& operator=(const RefusalLog&) = delete;

  void note(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  int count() const { return shown_ + hidden_; }

 private:
  const char* who_;  // "rank 0", named in every line
  int shown_ = 0;
  int hidden_ = 0;
};

enum class Accepted { kOurs, kRefused, kNone };

// Accepts one connection on a non-blocking listening socket and checks its uid (SO_PEERCRED):
// kOurs fills *out and *pid; kRefused (another uid: closed, noted in *refusals); kNone when the
// queue is empty, or after a short pause when accept fails otherwise (out of descriptors: the
// queue stays readable, and a poll loop must not spin on it).
Accepted acceptOurs(int listen_fd, RefusalLog* refusals, int* out, int* pid);

}  // namespace tpcomm
