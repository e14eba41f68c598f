# SPDX-License-Identifier: BSD-3-Clause
# libFuzzer targets for the parsers of untrusted text: DISTLOCK_URL
# (fuzz_url), the DISTLOCK_* environment (fuzz_env), the interposer's
# DISTLOCK_MAP (fuzz_map) and the mangled symbols it reads C++ names from
# (fuzz_demangle).  Off by default; needs clang:
#
#   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DDISTLOCK_FUZZ=ON -DDISTLOCK_TESTS=OFF
#   cmake --build build-fuzz --target fuzz_url fuzz_env fuzz_map
#   build-fuzz/fuzz_url -max_total_time=60 /tmp/new-inputs fuzz/corpus/url
#
# tests/fuzz/run.sh does all of that.  Each fuzzer compiles the few library
# sources its parser needs directly, instrumented (no Lua, no hiredis, no
# threads): config.c + error.c (dl_fail, dl_quote) for the URL and the
# environment (no TLS layer: the client context is conn/'s, a check
# config.c runs only when conn/tls.c registered it), map.c alone for the
# map, demangle.c alone for the symbols.  So they take only the include
# directories of the internal interface (distlock_internal), not its
# uninstrumented objects.  With DISTLOCK_TESTS on, ctest also
# replays each committed corpus once (fuzz_*_corpus, no fuzzing).
include_guard(GLOBAL)

option(DISTLOCK_FUZZ "Build the libFuzzer targets (clang only)" OFF)

if(DISTLOCK_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "DISTLOCK_FUZZ needs clang (libFuzzer): configure with "
                        "-DCMAKE_C_COMPILER=clang (this build uses ${CMAKE_C_COMPILER_ID})")
  endif()
  set(DLF_SAN -fsanitize=fuzzer,address,undefined)
  set(DLF_DIR ${PROJECT_SOURCE_DIR}/fuzz)

  function(dl_add_fuzzer name)
    add_executable(${name} ${DLF_DIR}/${name}.c ${ARGN})
    target_include_directories(${name} PRIVATE ${DLF_DIR}
      $<TARGET_PROPERTY:distlock_internal,INTERFACE_INCLUDE_DIRECTORIES>
      ${PROJECT_SOURCE_DIR}/shim/preload)
    target_compile_definitions(${name} PRIVATE _GNU_SOURCE)
    dl_target_flags(${name} PLAIN)     # libFuzzer's own sanitizers, below
    target_compile_options(${name} PRIVATE ${DLF_SAN} -fno-sanitize-recover=undefined
      -fno-omit-frame-pointer -g)
    target_link_options(${name} PRIVATE ${DLF_SAN})
    if(DISTLOCK_TESTS)
      string(REPLACE "fuzz_" "" corpus ${name})
      add_test(NAME ${name}_corpus COMMAND ${name} -runs=0 ${DLF_DIR}/corpus/${corpus})
      set_tests_properties(${name}_corpus PROPERTIES TIMEOUT 120)
    endif()
  endfunction()

  dl_add_fuzzer(fuzz_url ${PROJECT_SOURCE_DIR}/shim/base/config.c ${PROJECT_SOURCE_DIR}/shim/base/error.c)
  dl_add_fuzzer(fuzz_env ${PROJECT_SOURCE_DIR}/shim/base/config.c ${PROJECT_SOURCE_DIR}/shim/base/error.c)
  dl_add_fuzzer(fuzz_map ${PROJECT_SOURCE_DIR}/shim/preload/map.c)
  dl_add_fuzzer(fuzz_demangle ${PROJECT_SOURCE_DIR}/shim/preload/demangle.c)
endif()
