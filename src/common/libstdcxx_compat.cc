// libtpcomm.so and the CLI link libstdc++ statically (cmake/PortableLink.cmake). GCC 12's
// libstdc++.a, built on glibc 2.36, refers to arc4random (glibc 2.36) from std::random_device,
// which every use of a standard exception drags in although tpcomm never constructs one. This
// definition answers that reference inside the binary, so the binaries keep glibc 2.34 as their
// floor (the binary wheel's manylinux_2_34 tag) instead of 2.36. Same contract as glibc's: 32
// random bits from the kernel, and no return without them.
#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>

extern "C" uint32_t arc4random(void) noexcept {
  uint32_t value = 0;
  for (;;) {
    const ssize_t got = getrandom(&value, sizeof(value), 0);
    if (got == static_cast<ssize_t>(sizeof(value))) return value;
    if (got < 0 && errno != EINTR) abort();  // glibc's arc4random also aborts without entropy
  }
}
