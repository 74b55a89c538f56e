#include "comm/rendezvous/bootstrap_wire.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/error.h"

#if OPENSSL_VERSION_NUMBER < 0x30000000L
#error "tpcomm needs OpenSSL 3 or later (a private OSSL_LIB_CTX for the handshake's HMAC)"
#endif

namespace tpcomm {
namespace {

// What a MAC covers, as one packed block (no padding: 8 + 32 + 32 + 4 + 4 + 8 bytes).
struct MacInput {
  char label[8];
  uint8_t root_nonce[kNonceBytes];
  uint8_t peer_nonce[kNonceBytes];
  int32_t rank;
  int32_t nranks;
  uint64_t len;
};
static_assert(sizeof(MacInput) == 88, "MacInput must have no padding");

// OpenSSL's own reason for the failure just seen (the first error queued), and an empty queue.
std::string opensslError() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "OpenSSL gave no reason";
  char text[256];
  ERR_error_string_n(e, text, sizeof(text));
  return text;
}

// HMAC from a library context of our own: OSSL_LIB_CTX_new reads no configuration (only
// libcrypto's default context loads OPENSSL_CONF or openssl.cnf, on its first fetch), and the
// default provider is loaded into it by name. Set up once per process, kept for its life.
struct HmacSource {
  OSSL_LIB_CTX* ctx = nullptr;
  EVP_MAC* mac = nullptr;
  std::string error;  // why it could not be set up; empty when mac is usable

  HmacSource() {
    ERR_clear_error();
    ctx = OSSL_LIB_CTX_new();
    if (!ctx) {
      error = "OSSL_LIB_CTX_new: " + opensslError();
      return;
    }
    if (!OSSL_PROVIDER_load(ctx, "default")) {
      error = "loading OpenSSL's default provider: " + opensslError();
      return;
    }
    mac = EVP_MAC_fetch(ctx, "HMAC", nullptr);
    if (!mac) error = "fetching HMAC from OpenSSL's default provider: " + opensslError();
  }
};

const HmacSource& hmacSource() {
  // Never destroyed: another thread may still compute a MAC while the process exits.
  static const HmacSource* source = new HmacSource();
  return *source;
}

const char* g_fail_mac_for_testing = nullptr;

tpcommResult_t macFailed(const std::string& why) {
  return fail(tpcommSystemError, "bootstrap: HMAC-SHA256 (OpenSSL libcrypto) failed: %s",
              why.c_str());
}

}  // namespace

void failHandshakeMacForTesting(const char* why) {
  g_fail_mac_for_testing = why;
}

tpcommResult_t handshakeMac(const UniqueIdData& id, MacRole role, const uint8_t* root_nonce,
                            const uint8_t* peer_nonce, int rank, int nranks, uint64_t len,
                            uint8_t* out) {
  if (g_fail_mac_for_testing) return macFailed(g_fail_mac_for_testing);
  MacInput in{};
  memcpy(in.label, role == MacRole::kPeer ? "tpc-peer" : "tpc-root", sizeof(in.label));
  memcpy(in.root_nonce, root_nonce, kNonceBytes);
  memcpy(in.peer_nonce, peer_nonce, kNonceBytes);
  in.rank = rank;
  in.nranks = nranks;
  in.len = len;
  const HmacSource& source = hmacSource();
  if (!source.mac) return macFailed(source.error);
  ERR_clear_error();
  EVP_MAC_CTX* m = EVP_MAC_CTX_new(source.mac);
  char digest[] = "SHA2-256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                               OSSL_PARAM_construct_end()};
  size_t n = 0;
  const bool ok = m && EVP_MAC_init(m, id.secret, sizeof(id.secret), params) &&
                  EVP_MAC_update(m, reinterpret_cast<const uint8_t*>(&in), sizeof(in)) &&
                  EVP_MAC_final(m, out, &n, kMacBytes) && n == kMacBytes;
  EVP_MAC_CTX_free(m);
  if (!ok) return macFailed(opensslError());
  return tpcommSuccess;
}

bool macEqual(const uint8_t* a, const uint8_t* b) {
  return CRYPTO_memcmp(a, b, kMacBytes) == 0;
}

std::string frame(MsgType type, const void* body, size_t n, int32_t code, uint32_t aux) {
  FrameHeader h{kWireMagic, kWireVersion, static_cast<uint32_t>(type), static_cast<uint32_t>(n),
                code,       aux};
  std::string out(reinterpret_cast<const char*>(&h), sizeof(h));
  out.append(static_cast<const char*>(body), n);
  return out;
}

std::string reasonFrame(tpcommResult_t code, const std::string& text, uint32_t aux) {
  const std::string t = text.substr(0, kMaxReasonBytes);
  return frame(MsgType::kReason, t.data(), t.size(), static_cast<int32_t>(code), aux);
}

std::string sanitizedReason(const char* text, size_t n) {
  std::string out(text, n);
  for (char& ch : out)
    if (ch < 0x20 || ch > 0x7e) ch = '?';
  return out;
}

int msLeft(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

sockaddr_un socketAddress(const std::string& name, socklen_t* len) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path + 1, name.data(), name.size());
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return addr;
}

bool peerCredentials(int fd, ucred* out) {
  socklen_t n = sizeof(*out);
  return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, out, &n) == 0;
}

tpcommResult_t waitFd(int fd, short events, Clock::time_point deadline, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int r = poll(&p, 1, msLeft(deadline));
    if (r > 0) return tpcommSuccess;
    if (r == 0) return fail(tpcommTimeout, "bootstrap: timed out %s", what);
    if (errno != EINTR) return fail(tpcommSystemError, "bootstrap: poll: %s", strerror(errno));
  }
}

tpcommResult_t sendAll(int fd, const void* buf, size_t n, Clock::time_point deadline) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    TPCOMM_CHECK(waitFd(fd, POLLOUT, deadline, "sending to a peer"));
    const ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return fail(tpcommRemoteError, "bootstrap: send: %s (did a peer exit?)", strerror(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return tpcommSuccess;
}

tpcommResult_t recvAll(int fd, void* buf, size_t n, Clock::time_point deadline, const char* what) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    TPCOMM_CHECK(waitFd(fd, POLLIN, deadline, what));
    const ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
    if (r == 0) return fail(tpcommRemoteError, "bootstrap: peer closed the connection %s", what);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return fail(tpcommRemoteError, "bootstrap: recv: %s", strerror(errno));
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
  return tpcommSuccess;
}

bool sendNow(int fd, const std::string& bytes) {
  const ssize_t w = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  return w == static_cast<ssize_t>(bytes.size());
}

}  // namespace tpcomm
