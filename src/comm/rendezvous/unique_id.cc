#include "comm/rendezvous/unique_id.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "common/random.h"

namespace tpcomm {
namespace {
constexpr char kMagic[8] = {'T', 'P', 'C', 'O', 'M', 'M', 'I', 'D'};
// 2: the name and the secret are separate draws (1 named the socket by its only key).
constexpr uint32_t kIdVersion = 2;
}  // namespace

tpcommResult_t makeUniqueId(tpcommUniqueId* id) {
  memset(id, 0, sizeof(*id));
  UniqueIdData d{};
  memcpy(d.magic, kMagic, sizeof(kMagic));
  d.version = kIdVersion;
  d.creator_uid = static_cast<uint32_t>(geteuid());
  TPCOMM_CHECK(randomBytes(d.name, sizeof(d.name)));
  TPCOMM_CHECK(randomBytes(d.secret, sizeof(d.secret)));
  memcpy(id->internal, &d, sizeof(d));
  return tpcommSuccess;
}

tpcommResult_t parseUniqueId(const tpcommUniqueId& id, UniqueIdData* data) {
  memcpy(data, id.internal, sizeof(*data));
  if (memcmp(data->magic, kMagic, sizeof(kMagic)) != 0)
    return fail(tpcommInvalidArgument,
                "unique id: not made by tpcommGetUniqueId (bad magic; was it copied in full?)");
  if (data->version != kIdVersion)
    return fail(tpcommRemoteError, "unique id: version %u, this library speaks %u", data->version,
                kIdVersion);
  return tpcommSuccess;
}

std::string rendezvousName(const UniqueIdData& data) {
  static const char* hex = "0123456789abcdef";
  std::string name = "tpcomm.";
  for (uint8_t b : data.name) {
    name += hex[b >> 4];
    name += hex[b & 15];
  }
  return name;
}

}  // namespace tpcomm
