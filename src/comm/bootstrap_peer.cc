// A rank other than 0 in the rendezvous (bootstrap.h, bootstrap_wire.h): connect without
// blocking, check rank 0's uid, prove we hold the id, check that rank 0 does too, and only then
// send our handle and read the table. Rank 0's Reason frames end the wait with rank 0's own error.
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "comm/bootstrap_sides.h"
#include "common/error.h"
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

// Reads the next frame header; a Reason ends the rendezvous with rank 0's code and text.
tpcommResult_t readHeader(int fd, int rank, int root_pid, MsgType want, size_t want_len,
                          Clock::time_point deadline, const char* what) {
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
    std::string why = sanitizedReason(text, h.length);
    if (why.rfind("bootstrap: ", 0) == 0) why.erase(0, 11);
    const tpcommResult_t code = h.code > 0 && h.code < tpcommNumResults
                                    ? static_cast<tpcommResult_t>(h.code)
                                    : tpcommRemoteError;
    return fail(code, "bootstrap: rank %d: rank 0 (pid %d) ended the rendezvous: %s", rank,
                root_pid, why.c_str());
  }
  if (h.type != static_cast<uint32_t>(want) || h.length != want_len)
    return fail(tpcommRemoteError,
                "bootstrap: rank %d: rank 0 (pid %d) sent message type %u of %u bytes %s "
                "(expected type %u of %zu bytes)",
                rank, root_pid, h.type, h.length, what, static_cast<unsigned>(want), want_len);
  return tpcommSuccess;
}

}  // namespace

tpcommResult_t peerGather(const UniqueIdData& id, const std::string& name, int rank, int nranks,
                          const void* mine, size_t len, void* all, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  Fd c;
  TPCOMM_CHECK(connectRoot(name, rank, timeout_ms, deadline, &c));
  ucred cred{};
  if (!peerCredentials(c.fd, &cred) || cred.uid != geteuid())
    return fail(tpcommRemoteError,
                "bootstrap: rank %d: the rendezvous socket belongs to uid %u, not us: refusing it",
                rank, static_cast<unsigned>(cred.uid));
  const int root = static_cast<int>(cred.pid);

  Challenge ch{};
  TPCOMM_CHECK(readHeader(c.fd, rank, root, MsgType::kChallenge, sizeof(ch), deadline,
                          "waiting for rank 0's challenge"));
  TPCOMM_CHECK(recvAll(c.fd, &ch, sizeof(ch), deadline, "reading rank 0's challenge"));
  Join j{};
  j.rank = rank;
  j.nranks = nranks;
  j.len = len;
  TPCOMM_CHECK(randomBytes(j.nonce, sizeof(j.nonce)));
  TPCOMM_CHECK(handshakeMac(id, MacRole::kPeer, ch.nonce, j.nonce, rank, nranks, len, j.mac));
  const std::string join = frame(MsgType::kJoin, &j, sizeof(j));
  TPCOMM_CHECK(sendAll(c.fd, join.data(), join.size(), deadline));

  Accept acc{};
  TPCOMM_CHECK(readHeader(c.fd, rank, root, MsgType::kAccept, sizeof(acc), deadline,
                          "waiting for rank 0 to accept this rank"));
  TPCOMM_CHECK(recvAll(c.fd, &acc, sizeof(acc), deadline, "reading rank 0's proof"));
  uint8_t expect[kMacBytes];
  TPCOMM_CHECK(handshakeMac(id, MacRole::kRoot, ch.nonce, j.nonce, rank, nranks, len, expect));
  if (!macEqual(acc.mac, expect))
    return fail(tpcommRemoteError,
                "bootstrap: rank %d: the process holding the rendezvous name @%s (pid %d) does not "
                "know the unique id: refusing to send it this rank's handle",
                rank, name.c_str(), root);

  const std::string blob = frame(MsgType::kBlob, mine, len);
  TPCOMM_CHECK(sendAll(c.fd, blob.data(), blob.size(), deadline));
  const size_t table = len * static_cast<size_t>(nranks);
  TPCOMM_CHECK(readHeader(c.fd, rank, root, MsgType::kTable, table, deadline,
                          "waiting for rank 0 to send every rank's handle"));
  TPCOMM_CHECK(recvAll(c.fd, all, table, deadline, "reading every rank's handle"));
  if (memcmp(static_cast<const char*>(all) + static_cast<size_t>(rank) * len, mine, len) != 0)
    return fail(tpcommRemoteError,
                "bootstrap: rank %d: rank 0 (pid %d) sent a table whose entry for this rank is "
                "not this rank's handle",
                rank, root);
  return tpcommSuccess;
}

}  // namespace tpcomm
