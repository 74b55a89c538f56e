#include "comm/registry.h"

#include <mutex>
#include <unordered_set>

#include "common/error.h"

namespace tpcomm {
namespace {

std::mutex& mu() {
  static std::mutex m;
  return m;
}
std::unordered_set<const tpcommComm*>& live() {
  static auto* s = new std::unordered_set<const tpcommComm*>();  // never destroyed: atexit-safe
  return *s;
}

}  // namespace

void registerComm(tpcommComm* c) {
  std::lock_guard<std::mutex> l(mu());
  live().insert(c);
}

void unregisterComm(tpcommComm* c) {
  std::lock_guard<std::mutex> l(mu());
  live().erase(c);
}

tpcommResult_t checkComm(const tpcommComm* c, const char* op, bool need_ready) {
  if (!c) return fail(tpcommInvalidArgument, "%s: comm is NULL", op);
  {
    std::lock_guard<std::mutex> l(mu());
    if (!live().count(c))
      return fail(tpcommInvalidUsage,
                  "%s: comm %p is not a live communicator (destroyed, or never created)", op,
                  static_cast<const void*>(c));
  }
  if (need_ready && c->state != CommState::kReady)
    return fail(tpcommInvalidUsage,
                "%s: comm %p is between tpcommCommInitRankBegin and End; finish it first", op,
                static_cast<const void*>(c));
  return tpcommSuccess;
}

}  // namespace tpcomm
