# `cmake --install` and a CMake package: find_package(tpcomm) gives tpcomm::tpcomm.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS tpcomm EXPORT tpcommTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tpcomm DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TPCOMM_BUILD_TOOLS)
  install(TARGETS tpcomm_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT tpcommTargets NAMESPACE tpcomm:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tpcomm)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tpcommConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/tpcommConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tpcomm)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/tpcommConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tpcommConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/tpcommConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tpcomm)
