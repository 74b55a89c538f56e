#include "common/random.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "common/error.h"

namespace tpcomm {

tpcommResult_t randomBytes(void* out, size_t n) {
  auto* p = static_cast<uint8_t*>(out);
  while (n > 0) {
    const ssize_t got = getrandom(p, n, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return fail(tpcommSystemError, "getrandom failed: %s", strerror(errno));
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
  return tpcommSuccess;
}

}  // namespace tpcomm
