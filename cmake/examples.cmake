# SPDX-License-Identifier: BSD-3-Clause
# examples/: short programs for users to copy, built against the shared
# library and run by ctest (examples) against a private redis-server.
# Included by the top-level CMakeLists.txt after cmake/preload.cmake.
option(DISTLOCK_EXAMPLES "Build the programs of examples/" ${PROJECT_IS_TOP_LEVEL})

if(DISTLOCK_EXAMPLES)
  foreach(ex hello_lock config_swap fenced_write job_runner)
    # example_ prefix: no clash with the project's other targets
    add_executable(example_${ex} ${PROJECT_SOURCE_DIR}/examples/${ex}.c)
    target_link_libraries(example_${ex} PRIVATE distlock)
    dl_target_flags(example_${ex})
  endforeach()
  # The "legacy" program links nothing of distlock; it is preloaded, so it
  # is built without sanitizers, like the interposer (cmake/preload.cmake).
  add_executable(legacy_counter ${PROJECT_SOURCE_DIR}/examples/legacy_counter.c)
  target_link_libraries(legacy_counter PRIVATE Threads::Threads)
  dl_target_flags(legacy_counter PLAIN)

  if(DISTLOCK_TESTS)
    enable_testing()
    set(DL_EX_ARGS ${CMAKE_CURRENT_BINARY_DIR} $<TARGET_FILE:distlock_preload>)
    add_test(NAME examples
      COMMAND ${CMAKE_COMMAND} -E env --unset=DISTLOCK_URL --unset=DISTLOCK_PREFIX
              --unset=DISTLOCK_LEASE_MS --unset=DISTLOCK_IO_TIMEOUT_MS --unset=DISTLOCK_LOG
              --unset=DISTLOCK_PASSWORD --unset=DISTLOCK_MAP --unset=LD_PRELOAD
              bash ${PROJECT_SOURCE_DIR}/tools/with-redis.sh
              bash ${PROJECT_SOURCE_DIR}/tests/examples/run.sh ${DL_EX_ARGS})
    # The preloaded program must not inherit a sanitizer's options.  Under
    # ThreadSanitizer, fenced_write forks (process B) and B's lock starts
    # the library's threads: TSan's default die_after_fork=1 ends B ("starting
    # new threads after multi-threaded fork is not supported"; TSan counts its
    # own background thread), so the examples keep the suites' setting.
    if(DISTLOCK_TSAN)
      set(DL_EX_TSAN "die_after_fork=0")
    else()
      set(DL_EX_TSAN "")
    endif()
    set_tests_properties(examples PROPERTIES TIMEOUT 120
                         ENVIRONMENT "ASAN_OPTIONS=;TSAN_OPTIONS=${DL_EX_TSAN}")
  endif()
endif()
