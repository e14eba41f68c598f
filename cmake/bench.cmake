# SPDX-License-Identifier: BSD-3-Clause
# distlock-bench (tools/bench/), the benchmark of SPEC "The benchmark tool",
# and its smoke test.  Included by the top-level CMakeLists.txt after
# cmake/preload.cmake and before cmake/install.cmake, which installs the
# program.
#
# Measure with a Release build and no sanitizers:
#   cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DDISTLOCK_TESTS=OFF
#   cmake --build build-bench -j2 && build-bench/distlock-bench

file(GLOB DL_BENCH_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tools/bench/*.c)
add_executable(distlock-bench ${DL_BENCH_SOURCES})
target_compile_definitions(distlock-bench PRIVATE _GNU_SOURCE)
# The bench reads the library's counters (shim/base/status.h) and the SHA1s of
# its embedded scripts (shim/script/script.h) to tell them apart in the SLOWLOG,
# and reads its URL and connects as the library does: distlock_internal, which
# also brings hiredis.  Its redis-server is started by tools/launch/.
target_link_libraries(distlock-bench PRIVATE distlock_internal distlock_launch m)
dl_target_flags(distlock-bench)

# W8 preloads the interposer: the bench finds it in the build tree, or
# where cmake --install puts it.
target_compile_definitions(distlock-bench PRIVATE
  DISTLOCK_PRELOAD_PATH="$<TARGET_FILE:distlock_preload>"
  DISTLOCK_PRELOAD_INSTALLED="${CMAKE_INSTALL_FULL_LIBDIR}/$<TARGET_FILE_NAME:distlock_preload>")
add_dependencies(distlock-bench distlock_preload)

if(DISTLOCK_TESTS)
  enable_testing()
  # A tiny run (--quick) of the floor, W1, W2 and W3 against a redis-server
  # the bench starts itself: checks the RESULT line format and that no
  # update was lost.  Never a speed target: those are in the bench output.
  add_test(NAME bench_smoke
    COMMAND ${CMAKE_COMMAND} -E env --unset=DISTLOCK_URL --unset=DISTLOCK_PREFIX
            --unset=DISTLOCK_LEASE_MS --unset=DISTLOCK_IO_TIMEOUT_MS --unset=DISTLOCK_LOG
            --unset=DISTLOCK_PASSWORD --unset=DISTLOCK_MAP --unset=LD_PRELOAD
            bash ${PROJECT_SOURCE_DIR}/tests/bench/smoke.sh $<TARGET_FILE:distlock-bench>)
  set_tests_properties(bench_smoke PROPERTIES TIMEOUT 120)
endif()
