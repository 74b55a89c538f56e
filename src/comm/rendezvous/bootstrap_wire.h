// The rendezvous wire protocol (version 2), shared by rank 0 (bootstrap_root.cc), the other ranks
// (bootstrap_peer.cc) and the answer a completed rank 0 gives latecomers (rendezvous_hold.cc):
//
//   rank 0 -> peer   Challenge {rank 0's nonce}                     (or Reason, then close)
//   peer -> rank 0   Join {rank, nranks, len, peer's nonce, MAC_peer}
//   rank 0 -> peer   Accept {MAC_root}                              (or Reason)
//   peer -> rank 0   Blob (len bytes: this rank's handle)
//   rank 0 -> peer   Table (nranks * len bytes)                     (or Reason)
//
// MAC_x = HMAC-SHA256(the id's secret, label_x | rank 0's nonce | peer's nonce | rank | nranks |
// len). Each side proves it knows the secret without sending it; fresh nonces on both sides make a
// proof good for one connection only; distinct labels stop a proof from being reflected back. A
// peer sends its handle only after rank 0's proof checks, and rank 0 reads a handle only after the
// peer's. The rest needs no MAC: a connected Unix socket is kernel-delivered, nobody can inject.
//
// Reason frames go both ways. From rank 0 they end the peer's wait with rank 0's error, or (with
// kReasonRetry) tell it that this connection was dropped and it should connect again. From a peer
// they say why its own side of the handshake failed (aux: the rank it is), so that rank 0 names
// that failure rather than a rank that "never connected"; before the peer's proof, rank 0 only
// reports such a reason (anyone could send it), after it the reason ends the rendezvous.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "comm/rendezvous/unique_id.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

constexpr uint32_t kWireMagic = 0x7c0b0002u;
constexpr uint32_t kWireVersion = 2;
constexpr size_t kNonceBytes = 32;
constexpr size_t kMacBytes = 32;
constexpr size_t kMaxReasonBytes = 512;

enum class MsgType : uint32_t { kChallenge = 1, kJoin, kAccept, kBlob, kTable, kReason };

struct FrameHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t type;    // MsgType
  uint32_t length;  // bytes of the body that follows
  int32_t code;     // Reason: the tpcommResult_t its sender failed with
  uint32_t aux;     // Reason: from rank 0, kReasonRetry or 0; from a peer, the rank it is
};

// A Reason from rank 0 with this aux: the connection was dropped (a slot taken by strangers, a
// stalled handshake), not the rank; the peer connects again until its deadline.
constexpr uint32_t kReasonRetry = 1;

struct Challenge {
  uint8_t nonce[kNonceBytes];
};

struct Join {
  int32_t rank;
  int32_t nranks;
  uint64_t len;
  uint8_t nonce[kNonceBytes];
  uint8_t mac[kMacBytes];
};

struct Accept {
  uint8_t mac[kMacBytes];
};

enum class MacRole { kPeer, kRoot };

// The proof of `role` for one connection (see above); tpcommSystemError, with OpenSSL's own
// reason, if libcrypto fails. The HMAC comes from a private OpenSSL library context with the
// default provider loaded explicitly: no configuration file (OPENSSL_CONF, the system
// openssl.cnf: a FIPS host's names a provider this static libcrypto cannot load) is ever read
// for it, whatever the rest of the process did with OpenSSL.
tpcommResult_t handshakeMac(const UniqueIdData& id, MacRole role, const uint8_t* root_nonce,
                            const uint8_t* peer_nonce, int rank, int nranks, uint64_t len,
                            uint8_t* out);
// Constant time, so the time a wrong proof takes to refuse tells nothing about the right one.
bool macEqual(const uint8_t* a, const uint8_t* b);
// Tests only: makes every later handshakeMac of this process fail with `why` (nullptr: stop).
void failHandshakeMacForTesting(const char* why);

// Header + body as one string of bytes, ready to send.
std::string frame(MsgType type, const void* body, size_t n, int32_t code = 0, uint32_t aux = 0);
std::string reasonFrame(tpcommResult_t code, const std::string& text, uint32_t aux = 0);
// Printable ASCII only: a reason comes from another process and ends up in our log.
std::string sanitizedReason(const char* text, size_t n);

using Clock = std::chrono::steady_clock;
int msLeft(Clock::time_point deadline);

// Closes the descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd, o.fd);
    return *this;
  }
  Fd(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

// Abstract namespace address (sun_path[0] == '\0'; nothing is created in the file system).
sockaddr_un socketAddress(const std::string& name, socklen_t* len);
// SO_PEERCRED of a connected socket; false if it cannot be read.
bool peerCredentials(int fd, ucred* out);

// Waits with poll until the deadline (tpcommTimeout naming `what`).
tpcommResult_t waitFd(int fd, short events, Clock::time_point deadline, const char* what);
tpcommResult_t sendAll(int fd, const void* buf, size_t n, Clock::time_point deadline);
tpcommResult_t recvAll(int fd, void* buf, size_t n, Clock::time_point deadline, const char* what);
// One non-blocking send of the whole of `bytes`; false if it did not all go. For the small
// frames rank 0 sends into a fresh socket's empty buffer (so never blocks on a hostile reader).
bool sendNow(int fd, const std::string& bytes);

}  // namespace tpcomm
