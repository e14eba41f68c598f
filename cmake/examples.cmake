# SPDX-License-Identifier: BSD-3-Clause
# examples/: short programs for users to copy, built against the shared
# library and run by ctest (examples) against a private redis-server.
# Included by the top-level CMakeLists.txt after cmake/preload.cmake.
option(DISTLOCK_EXAMPLES "Build the programs of examples/" ON)

if(DISTLOCK_EXAMPLES)
  foreach(ex hello_lock config_swap fenced_write job_runner)
    # example_ prefix: no clash with the project's other targets
    add_executable(example_${ex} ${CMAKE_SOURCE_DIR}/examples/${ex}.c)
    target_link_libraries(example_${ex} PRIVATE distlock)
  endforeach()
  # The "legacy" program links nothing of distlock; it is preloaded, so it
  # is built without sanitizers, like the interposer (cmake/preload.cmake).
  add_executable(legacy_counter ${CMAKE_SOURCE_DIR}/examples/legacy_counter.c)
  target_link_libraries(legacy_counter PRIVATE Threads::Threads)
  if(COMMAND dlp_unsanitized)
    dlp_unsanitized(legacy_counter)
  endif()

  if(DISTLOCK_TESTS)
    enable_testing()
    set(DL_EX_ARGS ${CMAKE_CURRENT_BINARY_DIR})
    if(TARGET distlock_preload)
      list(APPEND DL_EX_ARGS $<TARGET_FILE:distlock_preload>)
    endif()
    add_test(NAME examples
      COMMAND ${CMAKE_COMMAND} -E env --unset=DISTLOCK_URL --unset=DISTLOCK_PREFIX
              --unset=DISTLOCK_LEASE_MS --unset=DISTLOCK_IO_TIMEOUT_MS --unset=DISTLOCK_LOG
              --unset=DISTLOCK_PASSWORD --unset=DISTLOCK_MAP --unset=LD_PRELOAD
              bash ${CMAKE_SOURCE_DIR}/tools/with-redis.sh
              bash ${CMAKE_SOURCE_DIR}/tests/examples/run.sh ${DL_EX_ARGS})
    # The preloaded program must not inherit a sanitizer's options.
    set_tests_properties(examples PROPERTIES TIMEOUT 120 ENVIRONMENT "ASAN_OPTIONS=;TSAN_OPTIONS=")
  endif()
endif()
