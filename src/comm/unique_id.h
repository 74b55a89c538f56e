// The bytes inside a tpcommUniqueId: a magic, a version and 128 random bits that name the
// rendezvous socket. Random (getrandom), so another user cannot guess the socket name; and the
// socket still checks each peer's uid (SO_PEERCRED) since abstract sockets have no permissions.
#pragma once

#include <cstdint>
#include <string>

#include "tpcomm/tpcomm.h"

namespace tpcomm {

struct UniqueIdData {
  char magic[8];  // "TPCOMMID"
  uint32_t version;
  uint32_t creator_uid;
  uint8_t key[16];
};
static_assert(sizeof(UniqueIdData) <= TPCOMM_UNIQUE_ID_BYTES, "unique id too large");

tpcommResult_t makeUniqueId(tpcommUniqueId* id);
// Checks magic and version; fills data.
tpcommResult_t parseUniqueId(const tpcommUniqueId& id, UniqueIdData* data);
// Abstract socket name (leading NUL not included) derived from the key.
std::string rendezvousName(const UniqueIdData& data);

}  // namespace tpcomm
