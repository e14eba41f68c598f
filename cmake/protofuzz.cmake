# SPDX-License-Identifier: BSD-3-Clause
# The protocol fuzzer (tests/protofuzz/): simulated processes drive the Lua
# scripts directly against a real redis-server and check the protocol's
# invariants after every step.  Its core uses hiredis and the embedded
# scripts only (distlock_internal: dl_scripts[] and shim/script/script.h).
#   - tests/test_protofuzz.c, a ctest suite: a short seeded run;
#   - distlock-protofuzz (tools/protofuzz.c), long runs: tools/protofuzz.sh.
# Included by the top-level CMakeLists.txt.

file(GLOB DL_PF_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/protofuzz/*.c)

function(dl_protofuzz_core target)
  target_sources(${target} PRIVATE ${DL_PF_SOURCES})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tests/protofuzz)
  target_compile_definitions(${target} PRIVATE _GNU_SOURCE)
  target_link_libraries(${target} distlock_internal)
endfunction()

if(DISTLOCK_TESTS)
  add_executable(distlock-protofuzz ${PROJECT_SOURCE_DIR}/tools/protofuzz.c)
  dl_protofuzz_core(distlock-protofuzz)
  dl_target_flags(distlock-protofuzz)
  if(TARGET test_protofuzz)
    dl_protofuzz_core(test_protofuzz)
  endif()
endif()
