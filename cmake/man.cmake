# SPDX-License-Identifier: BSD-3-Clause
# Manual pages (docs/man/): section 3 for the API, grouped as pthread's are,
# distlock(1), distlock-bench(1), distlock(7), distlock_pthread(7) and distlock_preload(8).
# Every function has a page of its own name
# (`man dist_mutex_trylock`): a symbolic link to its group's page.
# Included by the top-level CMakeLists.txt before cmake/install.cmake.

# Debian wants manual pages gzipped (and, in cmake/package.cmake, a copyright
# file and a changelog per package); on by default for a /usr install, the
# packages' prefix.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(_dl_debian_default ON)
else()
  set(_dl_debian_default OFF)
endif()
option(DISTLOCK_DEBIAN
  "Install as a Debian package wants: gzipped manual pages, share/doc/PACKAGE/{copyright,changelog.Debian.gz}"
  ${_dl_debian_default})

set(DL_MAN_DIR ${PROJECT_SOURCE_DIR}/docs/man)
set(DL_MAN_OUT ${PROJECT_BINARY_DIR}/man)
file(MAKE_DIRECTORY ${DL_MAN_OUT})
if(DISTLOCK_DEBIAN)
  find_program(DL_GZIP gzip REQUIRED)
  set(DL_MAN_EXT .gz)
else()
  set(DL_MAN_EXT "")
endif()
set(DL_MAN_BUILT "")
# dl_man_page(SOURCE VAR): VAR = the file to install for SOURCE (gzipped
# at build time with DISTLOCK_DEBIAN, without a timestamp).
function(dl_man_page src var)
  if(DISTLOCK_DEBIAN)
    get_filename_component(name ${src} NAME)
    add_custom_command(OUTPUT ${DL_MAN_OUT}/${name}.gz
      COMMAND ${DL_GZIP} -9nc ${src} > ${DL_MAN_OUT}/${name}.gz
      DEPENDS ${src} VERBATIM)
    set(DL_MAN_BUILT ${DL_MAN_BUILT} ${DL_MAN_OUT}/${name}.gz PARENT_SCOPE)
    set(${var} ${DL_MAN_OUT}/${name}.gz PARENT_SCOPE)
  else()
    set(${var} ${src} PARENT_SCOPE)
  endif()
endfunction()
# page: the other names it documents
set(DL_MAN3_GROUPS
  "dist_mutex_init:dist_mutex_destroy,DIST_MUTEX_INITIALIZER"
  "dist_mutex_lock:dist_mutex_trylock,dist_mutex_timedlock,dist_mutex_clocklock,dist_mutex_unlock"
  "dist_mutex_consistent:"
  "dist_mutex_lockall:dist_mutex_trylockall,dist_mutex_timedlockall"
  "dist_mutexattr_init:dist_mutexattr_destroy,dist_mutexattr_settype,dist_mutexattr_setfair,dist_mutexattr_setlease,dist_mutexattr_setrobust,dist_mutexattr_getrobust,dist_mutexattr_gettype"
  "dist_mutex_getfence:dist_rwlock_getfence"
  "dist_mutex_getlease:dist_rwlock_getlease"
  "dist_onlost:"
  "dist_rwlock_init:dist_rwlock_destroy,DIST_RWLOCK_INITIALIZER"
  "dist_rwlock_rdlock:dist_rwlock_tryrdlock,dist_rwlock_timedrdlock,dist_rwlock_clockrdlock"
  "dist_rwlock_wrlock:dist_rwlock_trywrlock,dist_rwlock_timedwrlock,dist_rwlock_clockwrlock"
  "dist_rwlock_unlock:"
  "dist_rwlockattr_init:dist_rwlockattr_destroy,dist_rwlockattr_setlease"
  "dist_sem_init:dist_sem_destroy,dist_sem_unlink,DIST_SEM_INITIALIZER"
  "dist_sem_wait:dist_sem_trywait,dist_sem_timedwait,dist_sem_clockwait,dist_sem_post,dist_sem_getvalue"
  "dist_strerror:dist_lasterror,dist_version"
  "dist_cond_init:dist_cond_destroy,DIST_COND_INITIALIZER"
  "dist_cond_wait:dist_cond_timedwait,dist_cond_clockwait"
  "dist_cond_signal:dist_cond_broadcast"
  "dist_condattr_init:dist_condattr_destroy,dist_condattr_setclock,dist_condattr_getclock"
  "dist_barrier_init:dist_barrier_destroy,dist_barrierattr_init,dist_barrierattr_destroy"
  "dist_barrier_wait:dist_barrier_timedwait"
  "dist_once:DIST_ONCE_INITIALIZER")

set(DL_MAN_LINK_DIR ${PROJECT_BINARY_DIR}/man3-links)
file(MAKE_DIRECTORY ${DL_MAN_LINK_DIR})
set(DL_MAN3_PAGES "")
set(DL_MAN3_LINKS "")
set(DL_MAN3_NAMES "")        # every function with a page, for the test
foreach(group ${DL_MAN3_GROUPS})
  string(REPLACE ":" ";" group "${group}")
  list(GET group 0 page)
  dl_man_page(${DL_MAN_DIR}/${page}.3 file)
  list(APPEND DL_MAN3_PAGES ${file})
  list(APPEND DL_MAN3_NAMES ${page})
  list(LENGTH group n)
  if(n GREATER 1)
    list(GET group 1 aliases)
    string(REPLACE "," ";" aliases "${aliases}")
    foreach(alias ${aliases})
      # A relative link, made at configure time; install(FILES) keeps it a link.
      file(REMOVE ${DL_MAN_LINK_DIR}/${alias}.3 ${DL_MAN_LINK_DIR}/${alias}.3.gz)
      file(CREATE_LINK ${page}.3${DL_MAN_EXT} ${DL_MAN_LINK_DIR}/${alias}.3${DL_MAN_EXT} SYMBOLIC)
      list(APPEND DL_MAN3_LINKS ${DL_MAN_LINK_DIR}/${alias}.3${DL_MAN_EXT})
      list(APPEND DL_MAN3_NAMES ${alias})
    endforeach()
  endif()
endforeach()

install(FILES ${DL_MAN3_PAGES} ${DL_MAN3_LINKS}
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man3 COMPONENT dev)
# distlock(1) is the CLI's page; cmake/cli.cmake leaves its installation
# to this file.
foreach(src ${DL_MAN_DIR}/distlock.1 ${DL_MAN_DIR}/distlock-bench.1
            ${DL_MAN_DIR}/distlock.7 ${DL_MAN_DIR}/distlock_preload.8)
  string(REGEX MATCH "[0-9]$" section ${src})
  dl_man_page(${src} file)
  install(FILES ${file} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section} COMPONENT tools)
endforeach()
# distlock_pthread(7) goes with <distlock/pthread.h>, for developers.
dl_man_page(${DL_MAN_DIR}/distlock_pthread.7 DL_MAN_PORT)
install(FILES ${DL_MAN_PORT} DESTINATION ${CMAKE_INSTALL_MANDIR}/man7 COMPONENT dev)
if(DL_MAN_BUILT)
  add_custom_target(distlock_man ALL DEPENDS ${DL_MAN_BUILT})
endif()

if(DISTLOCK_TESTS)
  enable_testing()
  # Every page renders without a warning of man --warnings, says this
  # version, and every function of distlock.h has a page named after it.
  list(JOIN DL_MAN3_NAMES "," DL_MAN3_NAMES_CSV)
  add_test(NAME man_pages
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/install/man.sh ${PROJECT_VERSION}
            ${PROJECT_SOURCE_DIR}/include/distlock.h ${DL_MAN3_NAMES_CSV}
            ${DL_MAN_DIR})
  set_tests_properties(man_pages PROPERTIES TIMEOUT 60)
endif()
