#include "comm/lifecycle/host_id.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "common/env.h"

namespace tpcomm {
namespace {

// FNV-1a: a stable, dependency-free 64-bit digest; the id names a machine, it protects nothing.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

std::string bootId() {
  char buf[64] = {};
  if (FILE* f = fopen("/proc/sys/kernel/random/boot_id", "r")) {
    if (!fgets(buf, sizeof(buf), f)) buf[0] = '\0';
    fclose(f);
  }
  buf[strcspn(buf, "\n")] = '\0';
  return buf;
}

}  // namespace

std::string hostIdFrom(const std::string& override_id, const std::string& boot_id,
                       const std::string& hostname) {
  if (!override_id.empty()) return override_id;
  char hex[32];
  const std::string what = boot_id.empty() ? "hostname:" + hostname : "boot:" + boot_id;
  snprintf(hex, sizeof(hex), "h%016llx", static_cast<unsigned long long>(fnv1a(what)));
  return hex;
}

std::string thisHostId() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) name[0] = '\0';
  return hostIdFrom(env().host_id, bootId(), name);
}

}  // namespace tpcomm
