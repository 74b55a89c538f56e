# Install rules for the Python wheel (pyproject.toml, scikit-build-core): libtpcomm.so and the
# `tpcomm` CLI go inside the package, next to the Python files that load them by absolute path:
#
#   tpcomm/lib/libtpcomm.so    loaded by tpcomm/_loader.py with ctypes
#   tpcomm/bin/tpcomm          run by tpcomm.doctor(), tpcomm.inspect() and the `tpcomm` script
#
# Everything here is in the install component "python", which the wheel build installs alone
# (install.components), so the headers and the CMake package config of cmake/Install.cmake stay
# out of the wheel. Off by default: a plain `cmake --install` never writes <prefix>/tpcomm/.
option(TPCOMM_INSTALL_PYTHON "Install the library and CLI into the Python package layout" OFF)

if(TPCOMM_INSTALL_PYTHON OR SKBUILD)
  # The real file under the plain name: a wheel is a zip and cannot hold the SONAME symlinks, and
  # ctypes loads by path, so one copy named libtpcomm.so is all the package needs.
  install(FILES $<TARGET_FILE:tpcomm> DESTINATION tpcomm/lib RENAME libtpcomm.so
          PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                      WORLD_READ WORLD_EXECUTE
          COMPONENT python)
  if(TPCOMM_BUILD_TOOLS)
    install(TARGETS tpcomm_cli RUNTIME DESTINATION tpcomm/bin COMPONENT python)
  else()
    message(WARNING "tpcomm: TPCOMM_BUILD_TOOLS=OFF, so the wheel has no CLI: tpcomm.doctor() and "
                    "tpcomm.inspect() will fail")
  endif()
endif()
