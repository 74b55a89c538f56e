#include "comm/lifecycle/registry.h"

#include <mutex>
#include <new>
#include <unordered_set>
#include <vector>

#include "common/error.h"

namespace tpcomm {
namespace {

struct Registry {
  std::mutex mu;
  std::unordered_set<const tpcommComm*> live;
  // Every destroyed communicator's address (8 bytes each, for the life of the process): what lets
  // createComm avoid them, and checkComm say "destroyed".
  std::unordered_set<const tpcommComm*> retired;
};

Registry& registry() {
  static auto* r = new Registry();  // never destroyed: atexit-safe
  return *r;
}

constexpr std::align_val_t kAlign{alignof(tpcommComm)};

}  // namespace

tpcommComm* createComm() {
  Registry& r = registry();
  std::lock_guard<std::mutex> l(r.mu);
  // The allocator hands a freed block out again first: hold each block at a retired address
  // until one is new, then give the held ones back. Each retired address is held at most once,
  // so this ends.
  std::vector<void*> held;
  void* p = ::operator new(sizeof(tpcommComm), kAlign);
  while (r.retired.count(static_cast<const tpcommComm*>(p))) {
    held.push_back(p);
    p = ::operator new(sizeof(tpcommComm), kAlign);
  }
  for (void* q : held) ::operator delete(q, kAlign);
  auto* c = new (p) tpcommComm();
  r.live.insert(c);
  return c;
}

void retireComm(tpcommComm* c) {
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> l(r.mu);
    r.live.erase(c);
    r.retired.insert(c);
  }
  c->~tpcommComm();
  ::operator delete(c, kAlign);
}

void registerComm(tpcommComm* c) {
  Registry& r = registry();
  std::lock_guard<std::mutex> l(r.mu);
  r.retired.erase(c);
  r.live.insert(c);
}

void unregisterComm(tpcommComm* c) {
  Registry& r = registry();
  std::lock_guard<std::mutex> l(r.mu);
  r.live.erase(c);
}

tpcommResult_t checkComm(const tpcommComm* c, const char* op, bool need_ready) {
  if (!c) return fail(tpcommInvalidArgument, "%s: comm is NULL", op);
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> l(r.mu);
    if (!r.live.count(c)) {
      if (r.retired.count(c))
        return fail(tpcommInvalidUsage,
                    "%s: comm %p is not a live communicator: a destroyed communicator "
                    "(tpcommCommDestroy, or an init that failed, freed it)",
                    op, static_cast<const void*>(c));
      return fail(tpcommInvalidUsage,
                  "%s: comm %p is not a live communicator (tpcomm never created it)", op,
                  static_cast<const void*>(c));
    }
  }
  if (need_ready && c->state != CommState::kReady)
    return fail(tpcommInvalidUsage,
                "%s: comm %p is between tpcommCommInitRankBegin and End; finish it first", op,
                static_cast<const void*>(c));
  return tpcommSuccess;
}

}  // namespace tpcomm
