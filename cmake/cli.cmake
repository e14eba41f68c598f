# SPDX-License-Identifier: BSD-3-Clause
# The distlock command-line tool (tools/cli/), its man page and its tests.
# Included by the top-level CMakeLists.txt before cmake/install.cmake.

file(GLOB DL_CLI_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tools/cli/*.c)
add_executable(distlock-cli ${DL_CLI_SOURCES})
# The target name `distlock` is the shared library's; the program is still
# called distlock.
set_target_properties(distlock-cli PROPERTIES OUTPUT_NAME distlock)
target_compile_definitions(distlock-cli PRIVATE _GNU_SOURCE
  DISTLOCK_VERSION="${PROJECT_VERSION}")
# The tool uses the library's internals (shim/: configuration,
# connections, keys, scripts, process state): distlock_internal.
target_link_libraries(distlock-cli PRIVATE distlock_internal)
dl_target_flags(distlock-cli)
# cmake/install.cmake installs the program, cmake/man.cmake its page.

if(DISTLOCK_TESTS)
  enable_testing()
  # Each script starts its own redis-server (tools/with-redis.sh, on a free
  # port of 127.0.0.1) and stops it; DISTLOCK_URL is cleared first so a
  # developer's own server is never touched.
  foreach(t usage run signals inspect multi tls metrics top views_multi sem)
    add_test(NAME cli_${t}
      COMMAND ${CMAKE_COMMAND} -E env --unset=DISTLOCK_URL --unset=DISTLOCK_PREFIX
              --unset=DISTLOCK_LEASE_MS --unset=DISTLOCK_IO_TIMEOUT_MS --unset=DISTLOCK_LOG
              --unset=DISTLOCK_PASSWORD
              bash ${PROJECT_SOURCE_DIR}/tools/with-redis.sh
              bash ${PROJECT_SOURCE_DIR}/tests/cli/test_${t}.sh $<TARGET_FILE:distlock-cli>)
    set_tests_properties(cli_${t} PROPERTIES TIMEOUT 120)
  endforeach()
  # status, list and break on every kind: a condition's waiters and a
  # counting semaphore come from a program of the test's own
  # (tests/cli/kinds_helper.c, on the public library).
  add_executable(cli_kinds_helper ${PROJECT_SOURCE_DIR}/tests/cli/kinds_helper.c)
  target_link_libraries(cli_kinds_helper PRIVATE distlock)
  dl_target_flags(cli_kinds_helper)
  add_test(NAME cli_kinds
    COMMAND ${CMAKE_COMMAND} -E env --unset=DISTLOCK_URL --unset=DISTLOCK_PREFIX
            --unset=DISTLOCK_LEASE_MS --unset=DISTLOCK_IO_TIMEOUT_MS --unset=DISTLOCK_LOG
            --unset=DISTLOCK_PASSWORD
            bash ${PROJECT_SOURCE_DIR}/tools/with-redis.sh
            bash ${PROJECT_SOURCE_DIR}/tests/cli/test_kinds.sh $<TARGET_FILE:distlock-cli>
            $<TARGET_FILE:cli_kinds_helper>)
  set_tests_properties(cli_kinds PROPERTIES TIMEOUT 120)
  # The man page renders without warnings, and `cmake --install` puts the
  # program and the page in place.
  add_test(NAME cli_install
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/cli/test_install.sh ${PROJECT_BINARY_DIR}
            ${PROJECT_SOURCE_DIR}/docs/man/distlock.1)
  set_tests_properties(cli_install PROPERTIES TIMEOUT 60)
endif()
