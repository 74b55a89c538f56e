// A rank other than 0 in the rendezvous (bootstrap.h, bootstrap_wire.h): connect without
// blocking, check rank 0's uid, prove we hold the id, check that rank 0 does too, and only then
// send our handle and read the table. Rank 0's Reason frames end the wait with rank 0's own error,
// or (kReasonRetry: rank 0 dropped this connection, not this rank) send us to connect again until
// the deadline. When our own side fails (the HMAC), rank 0 is told why in a Reason of ours.
#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "comm/rendezvous/bootstrap_sides.h"
#include "common/error.h"
#include "common/log.h"
#include "common/random.h"

namespace tpcomm {
namespace {

tpcommResult_t connectRoot(const std::string& name, int rank, int timeout_ms,
                           Clock::time_point deadline, Fd* out) {
  socklen_t alen = 0;
  const sockaddr_un addr = socketAddress(name, &alen);
  for (;;) {
    Fd c(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (c.fd < 0) return fail(tpcommSystemError, "bootstrap: socket: %s", strerror(errno));
    int err = connect(c.fd, reinterpret_cast<const sockaddr*>(&addr), alen) == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      TPCOMM_CHECK(waitFd(c.fd, POLLOUT, deadline, "connecting to rank 0"));
      socklen_t n = sizeof(err);
      if (getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &n) != 0) err = errno;
    }
    if (err == 0) {
      *out = std::move(c);
      return tpcommSuccess;
    }
    // Not listening yet (ECONNREFUSED, ENOENT), or its queue is full (EAGAIN): retry.
    if (err != ECONNREFUSED && err != ENOENT && err != EAGAIN && err != EINTR)
      return fail(tpcommSystemError, "bootstrap: rank %d: connect to @%s: %s", rank, name.c_str(),
                  strerror(err));
    if (msLeft(deadline) == 0) {
      if (err == EAGAIN)
        return fail(tpcommTimeout,
                    "bootstrap: rank %d could not reach rank 0 within %d ms: the connection queue "
                    "of @%s stayed full (is another process flooding it, or is rank 0 stopped?)",
                    rank, timeout_ms, name.c_str());
      return fail(tpcommTimeout,
                  "bootstrap: rank %d could not reach rank 0 within %d ms (is it running, with "
                  "the same unique id, on this machine?)",
                  rank, timeout_ms);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(5, msLeft(deadline) + 1)));
  }
}

// Set when rank 0 dropped the connection and asked for another (kReasonRetry).
struct Dropped {
  bool again = false;
  int count = 0;
  std::string why;  // rank 0's word, the last time
};

// Rank 0's Reason (h and its text): a retry (tpcommRemoteError, dropped->again set, lastError()
// untouched), or rank 0's own code and error.
tpcommResult_t reasonOfRankZero(const FrameHeader& h, const char* text, int rank, int root_pid,
                                Dropped* dropped) {
  std::string why = sanitizedReason(text, h.length);
  if (why.rfind("bootstrap: ", 0) == 0) why.erase(0, 11);
  if (h.aux == kReasonRetry) {
    dropped->again = true;
    ++dropped->count;
    dropped->why = why;
    // Not an error of this rank (no WARN for each one: a flood may cause many); it connects again.
    TPCOMM_DEBUG(INIT, "bootstrap: rank %d connects again: %s", rank, why.c_str());
    return tpcommRemoteError;
  }
  const tpcommResult_t code = h.code > 0 && h.code < tpcommNumResults
                                  ? static_cast<tpcommResult_t>(h.code)
                                  : tpcommRemoteError;
  return fail(code, "bootstrap: rank %d: rank 0 (pid %d) ended the rendezvous: %s", rank, root_pid,
              why.c_str());
}

// Reads the next frame header; a Reason ends this connection (reasonOfRankZero).
tpcommResult_t readHeader(int fd, int rank, int root_pid, MsgType want, size_t want_len,
                          Clock::time_point deadline, const char* what, Dropped* dropped) {
  FrameHeader h{};
  TPCOMM_CHECK(recvAll(fd, &h, sizeof(h), deadline, what));
  if (h.magic != kWireMagic || h.version != kWireVersion)
    return fail(tpcommRemoteError,
                "bootstrap: rank %d: the process holding the rendezvous name (pid %d) does not "
                "speak tpcomm's rendezvous protocol v%u (another tpcomm version, or not tpcomm)",
                rank, root_pid, kWireVersion);
  if (h.type == static_cast<uint32_t>(MsgType::kReason) && h.length <= kMaxReasonBytes) {
    char text[kMaxReasonBytes];
    TPCOMM_CHECK(recvAll(fd, text, h.length, deadline, "reading rank 0's reason"));
    return reasonOfRankZero(h, text, rank, root_pid, dropped);
  }
  if (h.type != static_cast<uint32_t>(want) || h.length != want_len)
    return fail(tpcommRemoteError,
                "bootstrap: rank %d: rank 0 (pid %d) sent message type %u of %u bytes %s "
                "(expected type %u of %zu bytes)",
                rank, root_pid, h.type, h.length, what, static_cast<unsigned>(want), want_len);
  return tpcommSuccess;
}

// lastError() without its "tpcommSomething: " prefix.
std::string lastErrorText() {
  const std::string e = lastError();
  const size_t colon = e.find(": ");
  return e.rfind("tpcomm", 0) == 0 && colon != std::string::npos ? e.substr(colon + 2) : e;
}

// Our own side of the handshake failed: rank 0 hears why, as it is, rather than a closed socket.
tpcommResult_t tellRankZero(int fd, int rank, tpcommResult_t r) {
  sendNow(fd, reasonFrame(r, lastErrorText(), static_cast<uint32_t>(rank)));
  return r;
}

// Sends a frame. If rank 0 closed the connection first, its Reason (a retry, or why it ended the
// rendezvous) may still be ours to read, and says more than a broken pipe.
tpcommResult_t sendFrame(int fd, int rank, int root_pid, const std::string& bytes,
                         Clock::time_point deadline, Dropped* dropped) {
  const tpcommResult_t r = sendAll(fd, bytes.data(), bytes.size(), deadline);
  if (r != tpcommRemoteError) return r;
  const std::string send_error = lastErrorText();
  const auto soon = std::min(deadline, Clock::now() + std::chrono::milliseconds(100));
  FrameHeader h{};
  char text[kMaxReasonBytes];
  if (recvAll(fd, &h, sizeof(h), soon, "") == tpcommSuccess && h.magic == kWireMagic &&
      h.version == kWireVersion && h.type == static_cast<uint32_t>(MsgType::kReason) &&
      h.length <= kMaxReasonBytes && recvAll(fd, text, h.length, soon, "") == tpcommSuccess)
    return reasonOfRankZero(h, text, rank, root_pid, dropped);
  return fail(r, "%s", send_error.c_str());
}

// Whether process `pid` is alive: not gone, not a zombie.
bool processAlive(int pid) {
  if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM)) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;  // no /proc here: kill() said it exists
  const size_t paren = line.rfind(')');        // "pid (comm) state ...": comm may hold anything
  return paren == std::string::npos || paren + 2 >= line.size() ||
         (line[paren + 2] != 'Z' && line[paren + 2] != 'X');
}

// A connection closed before rank 0 said a word (no challenge, no Reason), by a listener that
// still lives: a copy of a name its rendezvous let go, held by a child forked from it until that
// child closes it (bootstrap_hold.cc, name_holder.cc), with this connection in its queue. The
// next rank 0 is on its way: connect again. A listener that died (a crashed rank 0) ends the wait
// at once, as the closed connection says.
bool closedUnanswered(int fd, int listener_pid, Clock::time_point deadline, Dropped* dropped) {
  if (waitFd(fd, POLLIN, deadline, "waiting for rank 0's challenge") != tpcommSuccess) return false;
  char b;
  const ssize_t r = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  if (!(r == 0 || (r < 0 && errno == ECONNRESET)) || !processAlive(listener_pid)) return false;
  dropped->again = true;
  ++dropped->count;
  dropped->why = "the listener (pid " + std::to_string(listener_pid) +
                 ") closed the connection unanswered: a copy of a released name, held by a "
                 "child forked from it";
  return true;
}

// One connection: the handshake and the all-gather.
tpcommResult_t attempt(const UniqueIdData& id, const std::string& name, int rank, int nranks,
                       const void* mine, size_t len, void* all, int timeout_ms,
                       Clock::time_point deadline, Dropped* dropped) {
  Fd c;
  TPCOMM_CHECK(connectRoot(name, rank, timeout_ms, deadline, &c));
  ucred cred{};
  if (!peerCredentials(c.fd, &cred) || cred.uid != geteuid())
    return fail(tpcommRemoteError,
                "bootstrap: rank %d: the rendezvous socket @%s belongs to uid %u (pid %d), not "
                "us: refusing it",
                rank, name.c_str(), static_cast<unsigned>(cred.uid), static_cast<int>(cred.pid));
  const int root = static_cast<int>(cred.pid);
  if (closedUnanswered(c.fd, root, deadline, dropped)) return tpcommRemoteError;

  Challenge ch{};
  TPCOMM_CHECK(readHeader(c.fd, rank, root, MsgType::kChallenge, sizeof(ch), deadline,
                          "waiting for rank 0's challenge", dropped));
  TPCOMM_CHECK(recvAll(c.fd, &ch, sizeof(ch), deadline, "reading rank 0's challenge"));
  Join j{};
  j.rank = rank;
  j.nranks = nranks;
  j.len = len;
  tpcommResult_t r = randomBytes(j.nonce, sizeof(j.nonce));
  if (r == tpcommSuccess)
    r = handshakeMac(id, MacRole::kPeer, ch.nonce, j.nonce, rank, nranks, len, j.mac);
  if (r != tpcommSuccess) return tellRankZero(c.fd, rank, r);
  TPCOMM_CHECK(
      sendFrame(c.fd, rank, root, frame(MsgType::kJoin, &j, sizeof(j)), deadline, dropped));

  Accept acc{};
  TPCOMM_CHECK(readHeader(c.fd, rank, root, MsgType::kAccept, sizeof(acc), deadline,
                          "waiting for rank 0 to accept this rank", dropped));
  TPCOMM_CHECK(recvAll(c.fd, &acc, sizeof(acc), deadline, "reading rank 0's proof"));
  uint8_t expect[kMacBytes];
  r = handshakeMac(id, MacRole::kRoot, ch.nonce, j.nonce, rank, nranks, len, expect);
  if (r != tpcommSuccess) return tellRankZero(c.fd, rank, r);
  if (!macEqual(acc.mac, expect))
    return fail(tpcommRemoteError,
                "bootstrap: rank %d: the process holding the rendezvous name @%s (pid %d) does not "
                "know the unique id: refusing to send it this rank's handle",
                rank, name.c_str(), root);

  TPCOMM_CHECK(sendFrame(c.fd, rank, root, frame(MsgType::kBlob, mine, len), deadline, dropped));
  const size_t table = len * static_cast<size_t>(nranks);
  TPCOMM_CHECK(readHeader(c.fd, rank, root, MsgType::kTable, table, deadline,
                          "waiting for rank 0 to send every rank's handle", dropped));
  TPCOMM_CHECK(recvAll(c.fd, all, table, deadline, "reading every rank's handle"));
  if (memcmp(static_cast<const char*>(all) + static_cast<size_t>(rank) * len, mine, len) != 0)
    return fail(tpcommRemoteError,
                "bootstrap: rank %d: rank 0 (pid %d) sent a table whose entry for this rank is "
                "not this rank's handle",
                rank, root);
  return tpcommSuccess;
}

}  // namespace

tpcommResult_t peerGather(const UniqueIdData& id, const std::string& name, int rank, int nranks,
                          const void* mine, size_t len, void* all, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  Dropped dropped;
  for (;;) {
    dropped.again = false;
    const tpcommResult_t r =
        attempt(id, name, rank, nranks, mine, len, all, timeout_ms, deadline, &dropped);
    if (r == tpcommSuccess) return r;
    if (dropped.again) {
      if (msLeft(deadline) > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min(2, msLeft(deadline))));
        continue;
      }
      return fail(tpcommTimeout,
                  "bootstrap: rank %d: rank 0 dropped %d connection(s) of this rank before it "
                  "could prove the unique id, and it connected again until its deadline (%d ms); "
                  "the last time: %s",
                  rank, dropped.count, timeout_ms, dropped.why.c_str());
    }
    if (dropped.count == 0) return r;
    const std::string why = lastErrorText();
    return fail(r,
                "%s (before that, rank 0 had dropped %d connection(s) of this rank before it "
                "could prove the unique id; the last time: %s)",
                why.c_str(), dropped.count, dropped.why.c_str());
  }
}

}  // namespace tpcomm
