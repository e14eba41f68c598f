# SPDX-License-Identifier: BSD-3-Clause
# The LD_PRELOAD interposer (SPEC "The interposer"): libdistlock_preload.so,
# and its tests.  Included by the top-level CMakeLists.txt after the core
# library (it uses dl_library_objects, dl_internal_library and
# distlock_internal).
#
# A sanitizer runtime cannot be LD_PRELOADed into the uninstrumented
# programs the interposer exists for, so the interposer and the programs
# its tests preload it into are built without sanitizers
# (dl_target_flags PLAIN), and in sanitized builds the library is compiled
# a second time, uninstrumented, for the interposer: distlock_internal_plain,
# the same internal interface as distlock_internal.

# Every file of shim/preload: a new kind is a new wrap_<kind>.c there
# (shim/preload/kind.h), picked up at the next build.
file(GLOB DLP_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/shim/preload/*.c)

if(DL_SANITIZED)
  dl_library_objects(distlock_objs_plain)
  dl_target_flags(distlock_objs_plain PLAIN)
  dl_internal_library(distlock_internal_plain distlock_objs_plain)
  set(DLP_INTERNAL distlock_internal_plain)
else()
  set(DLP_INTERNAL distlock_internal)
endif()

# Only the wrappers are exported, and without a symbol version: references
# to any version bind to them.  They are the functions marked DLP_EXPORT
# (default visibility; everything else of the interposer is hidden), and
# --exclude-libs keeps the library's own dist_* inside (a program linked
# with libdistlock keeps its own copy), so no list of names is kept here.
# tests/preload/test_map.sh checks that every export is a libc name, and
# unversioned.  The one version script keeps the bounds of the section of
# real functions (shim/preload/real.h), which the linker makes, out of
# the dynamic symbols.
set(DLP_VERSION_SCRIPT ${PROJECT_SOURCE_DIR}/shim/preload/preload.map)
add_library(distlock_preload SHARED ${DLP_SOURCES})
set_target_properties(distlock_preload PROPERTIES
  OUTPUT_NAME distlock_preload
  C_VISIBILITY_PRESET hidden
  LINK_DEPENDS ${DLP_VERSION_SCRIPT})
target_include_directories(distlock_preload PRIVATE ${PROJECT_SOURCE_DIR}/shim/preload)
target_compile_definitions(distlock_preload PRIVATE _GNU_SOURCE)
target_link_libraries(distlock_preload PRIVATE ${DLP_INTERNAL} ${CMAKE_DL_LIBS})
dl_target_flags(distlock_preload PLAIN)
target_link_options(distlock_preload PRIVATE -Wl,--exclude-libs,ALL
  -Wl,--version-script=${DLP_VERSION_SCRIPT} -Wl,-z,defs)
# install(): cmake/install.cmake installs distlock_preload when the target exists.

if(DISTLOCK_TESTS)
  enable_testing()
  set(DLP_TDIR ${PROJECT_SOURCE_DIR}/tests/preload)

  # Legacy code: plain pthreads and file locks, no distlock anywhere.
  add_library(preload_legacylib SHARED ${DLP_TDIR}/legacylib.c)
  add_executable(preload_legacy ${DLP_TDIR}/legacy.c)
  target_link_libraries(preload_legacy preload_legacylib Threads::Threads)
  # A stripped copy, mapped by exe+0xOFFSET.
  add_custom_command(TARGET preload_legacy POST_BUILD
    COMMAND ${CMAKE_OBJCOPY} --strip-all $<TARGET_FILE:preload_legacy>
            ${CMAKE_CURRENT_BINARY_DIR}/preload_legacy_stripped
    COMMENT "Stripping a copy of preload_legacy")

  # The same program with its ledger lock named g_books_lock.
  add_executable(preload_legacy_books ${DLP_TDIR}/legacy.c)
  target_compile_definitions(preload_legacy_books PRIVATE LEGACY_BOOKS)
  target_link_libraries(preload_legacy_books preload_legacylib Threads::Threads)

  add_executable(preload_engage ${DLP_TDIR}/engage.c)
  target_link_libraries(preload_engage PkgConfig::HIREDIS Threads::Threads)

  add_executable(preload_w8 ${DLP_TDIR}/w8.c)
  target_link_libraries(preload_w8 Threads::Threads)

  # Legacy code with POSIX named semaphores (sem_open), no distlock.
  add_executable(preload_semlegacy ${DLP_TDIR}/semlegacy.c)
  target_link_libraries(preload_semlegacy Threads::Threads)

  # Legacy code with a global pthread barrier, no distlock.
  add_executable(preload_barlegacy ${DLP_TDIR}/barlegacy.c)
  target_link_libraries(preload_barlegacy Threads::Threads)

  # Legacy code of the newer POSIX calls (robust mutexes, clock waits), and
  # a wall clock set back for the clock tests (preloaded in front of libc).
  add_executable(preload_posixlegacy ${DLP_TDIR}/posixlegacy.c)
  target_link_libraries(preload_posixlegacy Threads::Threads)
  add_library(preload_fakeclock SHARED ${DLP_TDIR}/fakeclock.c)
  target_link_libraries(preload_fakeclock ${CMAKE_DL_LIBS})

  # The reader of C++ globals' names alone, checked against c++filt
  # (test_cxx.sh, which builds its C++ programs itself with g++).
  add_executable(preload_demangle_check ${DLP_TDIR}/demangle_check.c
    ${PROJECT_SOURCE_DIR}/shim/preload/demangle.c)
  target_include_directories(preload_demangle_check PRIVATE ${PROJECT_SOURCE_DIR}/shim/preload
    $<TARGET_PROPERTY:distlock_internal,INTERFACE_INCLUDE_DIRECTORIES>)

  foreach(t preload_legacylib preload_legacy preload_legacy_books preload_engage preload_w8
            preload_semlegacy preload_barlegacy preload_demangle_check preload_posixlegacy
            preload_fakeclock)
    target_compile_definitions(${t} PRIVATE _GNU_SOURCE)
    dl_target_flags(${t} PLAIN)
  endforeach()
  # The W8 loop is measured as a release build would run it.
  target_compile_options(preload_w8 PRIVATE -O2)

  set(DLP_ARGS $<TARGET_FILE:distlock_preload> ${CMAKE_CURRENT_BINARY_DIR})
  set(DLP_WITH_REDIS ${PROJECT_SOURCE_DIR}/tools/with-redis.sh)
  # name, timeout (s), needs a redis-server of its own
  foreach(spec "map;30;0" "engage;60;1" "legacy;120;1" "launch;120;1" "outage;60;0" "onloss;60;0" "w8;60;0"
               "programs;300;1" "sem;120;1" "cond;60;1" "barrier;120;1" "cxx;240;1"
               "robust;120;1" "clocks;120;1" "keeper;120;0")
    list(GET spec 0 name)
    list(GET spec 1 timeout)
    list(GET spec 2 redis)
    if(redis)
      add_test(NAME preload_${name}
        COMMAND bash ${DLP_WITH_REDIS} bash ${DLP_TDIR}/test_${name}.sh ${DLP_ARGS})
    else()
      add_test(NAME preload_${name} COMMAND bash ${DLP_TDIR}/test_${name}.sh ${DLP_ARGS})
    endif()
    # The scripts run programs with LD_PRELOAD themselves; nothing of a
    # sanitizer's environment applies to them.
    set_tests_properties(preload_${name} PROPERTIES TIMEOUT ${timeout}
      ENVIRONMENT "ASAN_OPTIONS=;TSAN_OPTIONS=")
  endforeach()
endif()
