# libtpcomm.so and the `tpcomm` CLI, what the binary wheel ships (scripts/build_wheel.sh), need
# nothing from the system but glibc and libgcc_s (docs/PYTHON.md, "glibc and driver floor"):
# - OpenSSL's libcrypto is linked in (libcrypto.a), so the library works wherever it is copied
#   and on systems without libcrypto.so.3 (RHEL 8 has 1.1); only HMAC-SHA256 is used.
# - So is libstdc++: the C ABI and the CLI pass no C++ object to anyone, and the build machine's
#   libstdc++ (GCC 12: GLIBCXX_3.4.30) would otherwise be the user's floor, above glibc's.
#   libgcc stays shared (libgcc_s.so.1 is everywhere): its static unwinder would ask for glibc
#   2.35's _dl_find_object.
# --exclude-libs keeps every static archive's symbols (libstdc++, libcrypto, cudart) out of the
# dynamic symbol table, and the shared library's version script its own template instances
# (std::vector<...> that nvcc-compiled objects leave visible): only the C API is exported, so
# another copy of OpenSSL or of the C++ runtime in the process (Python's, torch's) never binds to
# this one's code or the other way round. libstdc++ stays shared under the sanitizers, whose
# runtimes replace operator new.
option(TPCOMM_SELF_CONTAINED "Link libcrypto and libstdc++ into libtpcomm.so and the CLI" ON)
# Read by find_package(OpenSSL), which comes after this file; the other kind of libcrypto that an
# earlier configure of this build folder cached would otherwise stay.
if(TPCOMM_SELF_CONTAINED)
  set(OPENSSL_USE_STATIC_LIBS TRUE)
  set(_tpcomm_other_crypto "\\.so(\\.[0-9.]+)?$")
else()
  set(_tpcomm_other_crypto "\\.a$")
endif()
if(OPENSSL_CRYPTO_LIBRARY MATCHES "${_tpcomm_other_crypto}")
  unset(OPENSSL_CRYPTO_LIBRARY CACHE)
endif()

function(tpcomm_portable_link target)
  if(TPCOMM_SELF_CONTAINED AND NOT TPCOMM_SANITIZE)
    target_link_options(${target} PRIVATE
      "$<$<LINK_LANGUAGE:CXX>:-static-libstdc++;-Wl,--exclude-libs,ALL>")
    get_target_property(_type ${target} TYPE)
    if(_type STREQUAL "EXECUTABLE")
      # Takes src/common/libstdcxx_compat.cc's object out of tpcomm_static.a before libstdc++.a,
      # searched last, asks for the symbol.
      target_link_options(${target} PRIVATE "-Wl,--undefined=arc4random")
    endif()
  endif()
  # Full RELRO: every relocation is resolved at load time (-z now), after which the dynamic
  # loader makes the GOT read-only (-z relro), so no function pointer of it can be overwritten
  # later. tests/cpu/test_link_hardening.cc checks both on the built files.
  target_link_options(${target} PRIVATE "LINKER:-z,relro" "LINKER:-z,now")
  get_target_property(_type ${target} TYPE)
  if(_type STREQUAL "SHARED_LIBRARY")
    set(_map ${PROJECT_SOURCE_DIR}/cmake/tpcomm_exports.map)
    target_link_options(${target} PRIVATE "-Wl,--version-script=${_map}")
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${_map})
  endif()
endfunction()
