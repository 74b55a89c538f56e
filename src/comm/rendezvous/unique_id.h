// The bytes inside a tpcommUniqueId: a magic, a version, 128 random bits that name the
// rendezvous socket and, drawn apart from them, 256 random bits of secret that every rank proves
// it knows (bootstrap_wire.h). The name is visible to every local user (/proc/net/unix), so it
// must tell nothing about the secret: the two are independent draws from the kernel's CSPRNG.
// The socket still checks each peer's uid (SO_PEERCRED), since abstract sockets have no
// permissions.
#pragma once

#include <cstdint>
#include <string>

#include "tpcomm/tpcomm.h"

namespace tpcomm {

constexpr size_t kIdNameBytes = 16;
constexpr size_t kIdSecretBytes = 32;

struct UniqueIdData {
  char magic[8];  // "TPCOMMID"
  uint32_t version;
  uint32_t creator_uid;
  uint8_t name[kIdNameBytes];      // names the socket: public once rank 0 listens
  uint8_t secret[kIdSecretBytes];  // never leaves the id: keys the handshake's MACs
};
static_assert(sizeof(UniqueIdData) <= TPCOMM_UNIQUE_ID_BYTES, "unique id too large");

tpcommResult_t makeUniqueId(tpcommUniqueId* id);
// Checks magic and version; fills data.
tpcommResult_t parseUniqueId(const tpcommUniqueId& id, UniqueIdData* data);
// Abstract socket name (leading NUL not included) derived from data.name only.
std::string rendezvousName(const UniqueIdData& data);

}  // namespace tpcomm
