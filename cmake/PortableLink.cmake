# What the binary wheel ships (libtpcomm.so and the `tpcomm` CLI, scripts/build_wheel.sh) carries
# its own copy of libstdc++: the C ABI and the CLI pass no C++ object to anyone, and the system
# libstdc++ of the build machine (GCC 12: GLIBCXX_3.4.30) would otherwise be the user's floor,
# above what glibc alone asks (docs/PYTHON.md, "glibc and driver floor"). libgcc stays shared
# (libgcc_s.so.1, on every system): its static unwinder would ask for glibc 2.35's _dl_find_object.
# --exclude-libs keeps every static archive's symbols (libstdc++, cudart) out of the dynamic symbol
# table, and the shared library's version script its own template instances (std::vector<...>
# that nvcc-compiled objects leave visible): only the C API is exported, so another copy of the
# C++ runtime in the process (torch's) never binds to this one's code or the other way round.
# Not under the sanitizers, whose runtimes replace operator new and need the shared libstdc++.
option(TPCOMM_STATIC_CXX_RUNTIME "Link libstdc++ into libtpcomm.so and the CLI" ON)

function(tpcomm_portable_link target)
  if(TPCOMM_STATIC_CXX_RUNTIME AND NOT TPCOMM_SANITIZE)
    target_link_options(${target} PRIVATE
      "$<$<LINK_LANGUAGE:CXX>:-static-libstdc++;-Wl,--exclude-libs,ALL>")
    get_target_property(_type ${target} TYPE)
    if(_type STREQUAL "EXECUTABLE")
      # Takes src/common/libstdcxx_compat.cc's object out of tpcomm_static.a before libstdc++.a,
      # searched last, asks for the symbol.
      target_link_options(${target} PRIVATE "-Wl,--undefined=arc4random")
    endif()
  endif()
  get_target_property(_type ${target} TYPE)
  if(_type STREQUAL "SHARED_LIBRARY")
    set(_map ${PROJECT_SOURCE_DIR}/cmake/tpcomm_exports.map)
    target_link_options(${target} PRIVATE "-Wl,--version-script=${_map}")
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${_map})
  endif()
endfunction()
