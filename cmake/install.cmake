# SPDX-License-Identifier: BSD-3-Clause
# Installation: the headers (distlock.h, and distlock/pthread.h: the
# one-line port), both libraries, a pkg-config file and a CMake package, so that after `cmake --install` a program links with either
#   cc app.c $(pkg-config --cflags --libs distlock)
# or
#   find_package(distlock REQUIRED)
#   target_link_libraries(app distlock::distlock)
# Included at the end of the top-level CMakeLists.txt.
#
# Each file belongs to a component, which cmake/package.cmake makes a Debian
# package of: lib (libdistlock.so.0), dev (header, libdistlock.a, the .so
# link, pkg-config, CMake package, man3) and tools (distlock,
# distlock-bench, the interposer, man1/7/8).
include(CMakePackageConfigHelpers)

set(DL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/distlock)

install(FILES ${PROJECT_SOURCE_DIR}/include/distlock.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
# <distlock/pthread.h>, the one-line port of a pthread program: beside it.
install(FILES ${PROJECT_SOURCE_DIR}/include/distlock/pthread.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/distlock COMPONENT dev)

# distlock::distlock is the shared library; distlock::distlock_static the
# archive (same file name, libdistlock.a).
set_target_properties(distlock_static PROPERTIES EXPORT_NAME distlock_static)
install(TARGETS distlock distlock_static
  EXPORT distlockTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}    # libdistlock.so.0.1.0 + soname links
    COMPONENT lib NAMELINK_COMPONENT dev         # libdistlock.so: development only
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)

# The tools: the interposer, the distlock command, the benchmark.
install(TARGETS distlock_preload LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT tools)
install(TARGETS distlock-cli distlock-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)

# --- CMake package.  The exported archive names PkgConfig::HIREDIS,
# PkgConfig::UUID, PkgConfig::OPENSSL and Threads::Threads (link-only: the
# shared library keeps them private); distlockConfig.cmake finds them
# again in the consumer's project before loading the targets.
install(EXPORT distlockTargets
  NAMESPACE distlock::
  FILE distlockTargets.cmake
  DESTINATION ${DL_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/distlockConfig.cmake.in
  ${PROJECT_BINARY_DIR}/distlockConfig.cmake
  INSTALL_DESTINATION ${DL_CMAKE_DIR})
# 0.x: a new minor version may change the interface.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/distlockConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/distlockConfig.cmake
  ${PROJECT_BINARY_DIR}/distlockConfigVersion.cmake
  DESTINATION ${DL_CMAKE_DIR} COMPONENT dev)

# --- pkg-config.  Written at install time, so that the prefix given to
# `cmake --install --prefix P` (not only the configured one) lands in it.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(DL_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  set(DL_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(DL_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(DL_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
install(CODE "
  set(DL_PC_IN [[${PROJECT_SOURCE_DIR}/cmake/distlock.pc.in]])
  set(DL_PC_OUT [[${PROJECT_BINARY_DIR}/distlock.pc]])
  set(DL_PC_LIBDIR [[${DL_PC_LIBDIR}]])
  set(DL_PC_INCLUDEDIR [[${DL_PC_INCLUDEDIR}]])
  set(DL_PC_VERSION [[${PROJECT_VERSION}]])
" COMPONENT dev)
install(CODE [[
  set(DL_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  configure_file("${DL_PC_IN}" "${DL_PC_OUT}" @ONLY)
]] COMPONENT dev)
install(FILES ${PROJECT_BINARY_DIR}/distlock.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

if(DISTLOCK_TESTS)
  enable_testing()
  # The other way in: a project that builds distlock from its sources with
  # add_subdirectory (tests/install/subdir.sh: its consumers link
  # distlock::distlock and distlock::distlock_static, see no shim/ and no
  # flags of ours).  cmake --install and the packages are checked by
  # tests/install/check.sh and tests/packages/check.sh (tools/test.sh).
  add_test(NAME install_subdir
    COMMAND ${CMAKE_COMMAND} -E env --unset=DISTLOCK_URL --unset=DISTLOCK_PREFIX
            --unset=DISTLOCK_LEASE_MS --unset=DISTLOCK_IO_TIMEOUT_MS --unset=DISTLOCK_LOG
            --unset=DISTLOCK_PASSWORD --unset=DISTLOCK_MAP --unset=LD_PRELOAD
            bash ${PROJECT_SOURCE_DIR}/tests/install/subdir.sh add_subdirectory)
  # A build of its own (plain): no sanitizer's options apply to it.
  set_tests_properties(install_subdir PROPERTIES TIMEOUT 600
    ENVIRONMENT "ASAN_OPTIONS=;TSAN_OPTIONS=;UBSAN_OPTIONS=")
endif()
