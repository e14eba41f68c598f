# SPDX-License-Identifier: BSD-3-Clause
# The distlock command-line tool (tools/cli/), its man page and its tests.
# Included by the top-level CMakeLists.txt before cmake/install.cmake.

file(GLOB DL_CLI_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tools/cli/*.c)
add_executable(distlock-cli ${DL_CLI_SOURCES})
# The target name `distlock` is the shared library's; the program is still
# called distlock.
set_target_properties(distlock-cli PROPERTIES OUTPUT_NAME distlock)
target_compile_definitions(distlock-cli PRIVATE _GNU_SOURCE
  DISTLOCK_VERSION="${PROJECT_VERSION}")
# Static: the tool uses internal headers of shim/ (introspect.h, config.h,
# conn.h, script.h, process.h), which distlock_static carries.
target_link_libraries(distlock-cli PRIVATE distlock_static)

# cmake/install.cmake installs the distlock-cli binary (its
# `if(TARGET distlock-cli)` rule), so here only the man page is, and the
# binary only if that file is absent: nothing is installed twice.
if(NOT EXISTS ${CMAKE_SOURCE_DIR}/cmake/install.cmake)
  install(TARGETS distlock-cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
endif()
# cmake/man.cmake installs the page with the others (gzipped for Debian).
if(NOT EXISTS ${CMAKE_SOURCE_DIR}/cmake/man.cmake)
  install(FILES ${CMAKE_SOURCE_DIR}/docs/distlock.1
          DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT tools)
endif()

if(DISTLOCK_TESTS)
  enable_testing()
  # Each script starts its own redis-server (tools/with-redis.sh, on a free
  # port of 127.0.0.1) and stops it; DISTLOCK_URL is cleared first so a
  # developer's own server is never touched.
  foreach(t usage run signals inspect multi tls)
    add_test(NAME cli_${t}
      COMMAND ${CMAKE_COMMAND} -E env --unset=DISTLOCK_URL --unset=DISTLOCK_PREFIX
              --unset=DISTLOCK_LEASE_MS --unset=DISTLOCK_IO_TIMEOUT_MS --unset=DISTLOCK_LOG
              --unset=DISTLOCK_PASSWORD
              bash ${CMAKE_SOURCE_DIR}/tools/with-redis.sh
              bash ${CMAKE_SOURCE_DIR}/tests/cli/test_${t}.sh $<TARGET_FILE:distlock-cli>)
    set_tests_properties(cli_${t} PROPERTIES TIMEOUT 120)
  endforeach()
  # The man page renders without warnings, and `cmake --install` puts the
  # program and the page in place.
  add_test(NAME cli_install
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/test_install.sh ${CMAKE_BINARY_DIR}
            ${CMAKE_SOURCE_DIR}/docs/distlock.1)
  set_tests_properties(cli_install PROPERTIES TIMEOUT 60)
endif()
