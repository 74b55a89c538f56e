// Rank 0 of the rendezvous (bootstrap.h, bootstrap_wire.h): one poll loop serves every connection
// at once, each through its handshake stages with its own short deadline, so a silent, slow or
// malformed connection costs the genuine ranks nothing. Connections that fail the uid check, the
// protocol or the proof are dropped (told why, logged rate-limited); a rank that proved it holds
// the id and then disagrees (world size, handle size, a rank claimed twice, leaving early) ends
// the rendezvous, and every connected rank is told why. The handshake slots hold connections that
// have not proved the secret yet; strangers can take them, but never a connection that has proved
// it, and a rank whose unproved connection was dropped is told to connect again.
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "comm/rendezvous/bootstrap_sides.h"
#include "comm/rendezvous/name_holder.h"
#include "comm/rendezvous/refusal_log.h"
#include "common/error.h"
#include "common/random.h"

namespace tpcomm {
namespace {

// A genuine peer answers each step within microseconds of rank 0's; this bounds what a connection
// that stalls mid-handshake may hold (an fd, a slot among kMaxPending).
constexpr int kHandshakeMs = 2000;
// Connections that have not proved the secret yet; when a new one comes, the oldest goes (a
// genuine rank answers the challenge at once, so it is never the oldest for long, and a rank whose
// connection went anyway connects again). Proved ones are bounded by the world size instead.
constexpr size_t kMaxUnproved = 64;

enum class Stage { kJoin, kBlob, kJoined };

struct Conn {
  Fd fd;
  int pid = 0;
  Stage stage = Stage::kJoin;
  int rank = -1;
  Clock::time_point handshake_deadline;
  uint8_t nonce[kNonceBytes] = {};
  std::vector<char> in;  // the frame being read: header, then the body the stage expects
  size_t have = 0;
  bool dropped = false;
};

// What reading a connection led to.
enum class Step { kKeep, kDrop, kFatal };

class Root {
 public:
  Root(const UniqueIdData& id, int nranks, size_t len, void* all, int timeout_ms)
      : id_(id),
        nranks_(nranks),
        len_(len),
        all_(static_cast<char*>(all)),
        timeout_ms_(timeout_ms),
        deadline_(Clock::now() + std::chrono::milliseconds(timeout_ms)),
        joined_(static_cast<size_t>(nranks), false),
        failed_(static_cast<size_t>(nranks)) {}

  tpcommResult_t run(int listen_fd);

 private:
  void acceptAll(int listen_fd);
  Step readFrom(Conn& c);
  Step onJoin(Conn& c);
  Step onBlob(Conn& c);
  Step drop(Conn& c, const std::string& why, bool retry = false);
  Step onPeerReason(Conn& c);
  Step fatal(tpcommResult_t r);
  void expect(Conn& c, size_t body);
  size_t unprovedCount() const;
  tpcommResult_t timedOut();
  tpcommResult_t endWithReason(tpcommResult_t r);
  tpcommResult_t sendTables();

  const UniqueIdData& id_;
  const int nranks_;
  const size_t len_;
  char* all_;
  const int timeout_ms_;
  const Clock::time_point deadline_;
  std::vector<bool> joined_;  // by rank: its handle is in all_
  // By rank: the last failure a connection reported for it before proving the secret (so
  // unverified: "pid N: its reason"), named if that rank is still missing at the deadline.
  std::vector<std::string> failed_;
  int njoined_ = 1;  // rank 0's own
  std::vector<Conn> conns_;
  RefusalLog refusals_{"rank 0"};
  tpcommResult_t fatal_ = tpcommSuccess;
};

void Root::expect(Conn& c, size_t body) {
  c.in.assign(sizeof(FrameHeader) + body, 0);
  c.have = 0;
}

size_t Root::unprovedCount() const {
  size_t n = 0;
  for (const Conn& c : conns_) n += c.stage == Stage::kJoin && !c.dropped;
  return n;
}

// `retry`: the connection, not the rank, was refused (a slot, a stall); a genuine rank connects
// again, a stranger is none the wiser.
Step Root::drop(Conn& c, const std::string& why, bool retry) {
  c.dropped = true;
  c.rank = -1;  // its claim, if any, is free again
  refusals_.note("pid %d %s", c.pid, why.c_str());
  sendNow(c.fd.fd,
          reasonFrame(tpcommInvalidUsage,
                      "rank 0 refused this connection: pid " + std::to_string(c.pid) + " " + why,
                      retry ? kReasonRetry : 0));
  return Step::kDrop;
}

// A peer's Reason: its side of the handshake failed. Before its proof anyone could have sent it,
// so it is only noted (and named at the deadline if that rank never joins); after the proof it is
// the rank's own word and ends the rendezvous.
Step Root::onPeerReason(Conn& c) {
  FrameHeader h;
  memcpy(&h, c.in.data(), sizeof(h));
  std::string why = sanitizedReason(c.in.data() + sizeof(h), h.length);
  if (why.rfind("bootstrap: ", 0) == 0) why.erase(0, 11);
  const int rank =
      h.aux > 0 && h.aux < static_cast<uint32_t>(nranks_) ? static_cast<int>(h.aux) : -1;
  if (c.stage == Stage::kBlob) {
    const tpcommResult_t code = h.code > 0 && h.code < tpcommNumResults
                                    ? static_cast<tpcommResult_t>(h.code)
                                    : tpcommRemoteError;
    return fatal(fail(code, "bootstrap: rank %d (pid %d) failed its handshake: %s", c.rank, c.pid,
                      why.c_str()));
  }
  if (rank > 0) failed_[static_cast<size_t>(rank)] = "pid " + std::to_string(c.pid) + ": " + why;
  c.dropped = true;
  refusals_.note("pid %d, which says it is rank %d, could not complete its handshake: %s", c.pid,
                 rank, why.c_str());
  return Step::kDrop;
}

Step Root::fatal(tpcommResult_t r) {
  fatal_ = r;
  return Step::kFatal;
}

void Root::acceptAll(int listen_fd) {
  for (int i = 0; i < 64; ++i) {  // bounded, so a flood cannot starve the connections we have
    Fd fd;
    int pid = 0;
    const Accepted a = acceptOurs(listen_fd, &refusals_, &fd.fd, &pid);
    if (a == Accepted::kNone) return;
    if (a == Accepted::kRefused) continue;
    if (unprovedCount() >= kMaxUnproved) {
      const auto oldest = std::find_if(conns_.begin(), conns_.end(), [](const Conn& o) {
        return o.stage == Stage::kJoin && !o.dropped;
      });
      drop(*oldest,
           "had not proved the unique id when " + std::to_string(kMaxUnproved) +
               " newer connections had not either (a flood of strangers?)",
           /*retry=*/true);
      conns_.erase(oldest);
    }
    Conn c;
    c.fd = std::move(fd);
    c.pid = pid;
    c.handshake_deadline = Clock::now() + std::chrono::milliseconds(kHandshakeMs);
    if (randomBytes(c.nonce, sizeof(c.nonce)) != tpcommSuccess) continue;
    Challenge ch{};
    memcpy(ch.nonce, c.nonce, sizeof(ch.nonce));
    if (!sendNow(c.fd.fd, frame(MsgType::kChallenge, &ch, sizeof(ch)))) {
      refusals_.note("pid %d: could not send it the challenge", c.pid);
      continue;
    }
    expect(c, sizeof(Join));
    conns_.push_back(std::move(c));
  }
}

Step Root::readFrom(Conn& c) {
  if (c.stage == Stage::kJoined) {  // a joined rank only waits: any byte or EOF is a departure
    char b;
    const ssize_t r = recv(c.fd.fd, &b, 1, MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) return Step::kKeep;
    return fatal(fail(tpcommRemoteError,
                      "bootstrap: rank %d (pid %d) %s before every rank had joined", c.rank, c.pid,
                      r > 0 ? "sent unexpected bytes" : "left"));
  }
  const ssize_t r = recv(c.fd.fd, c.in.data() + c.have, c.in.size() - c.have, MSG_DONTWAIT);
  const char* what = c.stage == Stage::kJoin ? "hello" : "handle";
  if (r < 0) {
    if (errno == EAGAIN || errno == EINTR) return Step::kKeep;
    return drop(c, std::string("broke the connection: ") + strerror(errno));
  }
  if (r == 0)
    return drop(c, "closed the connection after " + std::to_string(c.have) + " of " +
                       std::to_string(c.in.size()) + " bytes of its " + what + " (truncated)");
  const size_t before = c.have;
  c.have += static_cast<size_t>(r);
  if (before < sizeof(FrameHeader) && c.have >= sizeof(FrameHeader)) {
    FrameHeader h;
    memcpy(&h, c.in.data(), sizeof(h));
    const MsgType want = c.stage == Stage::kJoin ? MsgType::kJoin : MsgType::kBlob;
    if (h.magic != kWireMagic || h.version != kWireVersion)
      return drop(c, "does not speak tpcomm's rendezvous protocol v" +
                         std::to_string(kWireVersion) + " (another tpcomm version, or not tpcomm)");
    if (h.type == static_cast<uint32_t>(MsgType::kReason) && h.length <= kMaxReasonBytes) {
      c.in.resize(sizeof(FrameHeader) + h.length);
      if (c.have > c.in.size()) return drop(c, "sent more than its reason");
    } else if (h.type != static_cast<uint32_t>(want) ||
               h.length != c.in.size() - sizeof(FrameHeader))
      return drop(c, "sent a message of type " + std::to_string(h.type) + " and " +
                         std::to_string(h.length) + " bytes where its " + what + " of " +
                         std::to_string(c.in.size() - sizeof(FrameHeader)) + " bytes belongs");
  }
  if (c.have < c.in.size()) return Step::kKeep;
  FrameHeader h;
  memcpy(&h, c.in.data(), sizeof(h));
  if (h.type == static_cast<uint32_t>(MsgType::kReason)) return onPeerReason(c);
  return c.stage == Stage::kJoin ? onJoin(c) : onBlob(c);
}

Step Root::onJoin(Conn& c) {
  Join j;
  memcpy(&j, c.in.data() + sizeof(FrameHeader), sizeof(j));
  uint8_t mac[kMacBytes];
  if (handshakeMac(id_, MacRole::kPeer, c.nonce, j.nonce, j.rank, j.nranks, j.len, mac) !=
      tpcommSuccess)
    return fatal(tpcommSystemError);
  if (!macEqual(mac, j.mac)) return drop(c, "does not know the unique id (its proof is wrong)");
  // From here on the peer holds the id: a disagreement is a broken job, not a stranger.
  if (j.nranks != nranks_)
    return fatal(fail(tpcommInvalidArgument,
                      "bootstrap: rank %d (pid %d) was initialised with nranks=%d, rank 0 with "
                      "nranks=%d",
                      j.rank, c.pid, j.nranks, nranks_));
  if (j.len != len_)
    return fatal(fail(tpcommRemoteError,
                      "bootstrap: rank %d (pid %d) sends %llu-byte handles, rank 0 %zu: every "
                      "rank must run the same tpcomm version",
                      j.rank, c.pid, static_cast<unsigned long long>(j.len), len_));
  if (j.rank <= 0 || j.rank >= nranks_)
    return fatal(fail(tpcommInvalidArgument, "bootstrap: pid %d claims rank %d, outside 1..%d",
                      c.pid, j.rank, nranks_ - 1));
  for (const Conn& o : conns_)
    if (&o != &c && !o.dropped && o.rank == j.rank)
      return fatal(fail(tpcommInvalidUsage,
                        "bootstrap: rank %d was claimed twice (pids %d and %d): the unique id is "
                        "used by two jobs, or two processes were given one rank; make a new id "
                        "(tpcommGetUniqueId) for each communicator",
                        j.rank, o.pid, c.pid));
  Accept acc{};
  if (handshakeMac(id_, MacRole::kRoot, c.nonce, j.nonce, j.rank, j.nranks, j.len, acc.mac) !=
      tpcommSuccess)
    return fatal(tpcommSystemError);
  if (!sendNow(c.fd.fd, frame(MsgType::kAccept, &acc, sizeof(acc))))
    return drop(c, "could not be sent rank 0's proof");
  c.rank = j.rank;
  c.stage = Stage::kBlob;
  expect(c, len_);
  return Step::kKeep;
}

Step Root::onBlob(Conn& c) {
  memcpy(all_ + static_cast<size_t>(c.rank) * len_, c.in.data() + sizeof(FrameHeader), len_);
  joined_[static_cast<size_t>(c.rank)] = true;
  ++njoined_;
  c.stage = Stage::kJoined;
  c.in.clear();
  return Step::kKeep;
}

tpcommResult_t Root::endWithReason(tpcommResult_t r) {
  const std::string why = reasonFrame(r, lastError());
  for (Conn& c : conns_) sendNow(c.fd.fd, why);
  return r;
}

tpcommResult_t Root::timedOut() {
  std::string never, failed;
  for (int r = 1; r < nranks_; ++r) {
    const size_t i = static_cast<size_t>(r);
    if (joined_[i]) continue;
    if (failed_[i].empty())
      never += " " + std::to_string(r);
    else
      failed += (failed.empty() ? "" : "; ") + ("rank " + std::to_string(r)) +
                " connected but its handshake failed (" + failed_[i] + ")";
  }
  std::string what = "that never connected:" + never;
  if (!failed.empty())
    what = never.empty() ? "that did not join: " + failed
                         : "that did not join: never connected:" + never + "; " + failed;
  const int refused = refusals_.count();
  return fail(
      tpcommTimeout, "bootstrap: rank 0 waited %d ms for ranks %s%s", timeout_ms_, what.c_str(),
      refused ? (" (" + std::to_string(refused) + " connection(s) refused, see the log)").c_str()
              : "");
}

tpcommResult_t Root::sendTables() {
  const std::string table = frame(MsgType::kTable, all_, len_ * static_cast<size_t>(nranks_));
  for (Conn& c : conns_) {
    if (c.stage == Stage::kJoined) {
      // A rank that cannot take the table (it died) fails the rendezvous; the ranks not yet
      // sent theirs hear why rather than waiting for their deadline.
      const tpcommResult_t r = sendAll(c.fd.fd, table.data(), table.size(), deadline_);
      if (r != tpcommSuccess) return endWithReason(r);
    } else {
      drop(c, "was still in its handshake when the rendezvous completed (every rank had joined)");
    }
  }
  return tpcommSuccess;
}

tpcommResult_t Root::run(int listen_fd) {
  std::vector<pollfd> fds;
  while (njoined_ < nranks_) {
    auto wake = deadline_;
    for (const Conn& c : conns_)
      if (c.stage != Stage::kJoined && c.handshake_deadline < wake) wake = c.handshake_deadline;
    fds.assign(1, pollfd{listen_fd, POLLIN, 0});
    for (const Conn& c : conns_) fds.push_back(pollfd{c.fd.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), msLeft(wake)) < 0) {
      if (errno != EINTR)
        return endWithReason(fail(tpcommSystemError, "bootstrap: poll: %s", strerror(errno)));
      continue;  // revents are not set; the next round also checks the deadlines
    }
    // Connections first (fds[i + 1] is conns_[i]), then new ones.
    const auto now = Clock::now();
    for (size_t i = 0; i < conns_.size(); ++i) {
      Conn& c = conns_[i];
      Step s = Step::kKeep;
      if (fds[i + 1].revents) s = readFrom(c);
      if (s == Step::kKeep && c.stage != Stage::kJoined && now >= c.handshake_deadline)
        s = drop(c,
                 "sent " + std::to_string(c.have) + " bytes of its " +
                     (c.stage == Stage::kJoin ? "hello" : "handle") + " in " +
                     std::to_string(kHandshakeMs) + " ms (too slow or silent)",
                 /*retry=*/true);
      if (s == Step::kFatal) return endWithReason(fatal_);
    }
    conns_.erase(
        std::remove_if(conns_.begin(), conns_.end(), [](const Conn& c) { return c.dropped; }),
        conns_.end());
    if (fds[0].revents) acceptAll(listen_fd);
    if (njoined_ < nranks_ && Clock::now() >= deadline_) return endWithReason(timedOut());
  }
  return sendTables();
}

}  // namespace

tpcommResult_t rootGather(const UniqueIdData& id, const std::string& name, int nranks,
                          const void* mine, size_t len, void* all, int timeout_ms,
                          std::unique_ptr<RendezvousHold>* hold) {
  Fd srv(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (srv.fd < 0) return fail(tpcommSystemError, "bootstrap: socket: %s", strerror(errno));
  socklen_t alen = 0;
  const sockaddr_un addr = socketAddress(name, &alen);
  TPCOMM_CHECK(bindName(srv.fd, name, addr, alen, timeout_ms));
  // A deep queue, so a burst of foreign connections does not turn genuine ranks away (they would
  // retry until their deadline, but need not).
  if (listen(srv.fd, SOMAXCONN) != 0)
    return fail(tpcommSystemError, "bootstrap: listen: %s", strerror(errno));
  memcpy(all, mine, len);
  Root root(id, nranks, len, all, timeout_ms);
  TPCOMM_CHECK(root.run(srv.fd));
  if (!hold) return tpcommSuccess;
  const int fd = srv.fd;
  srv.fd = -1;
  return RendezvousHold::start(fd, hold);
}

}  // namespace tpcomm
