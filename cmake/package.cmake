# SPDX-License-Identifier: BSD-3-Clause
# Debian packages with CPack, one per install component (cmake/install.cmake):
#   libdistlock0     lib    libdistlock.so.0
#   libdistlock-dev  dev    header, libdistlock.a, libdistlock.so, pkg-config,
#                           CMake package, section 3 manual pages
#   distlock-tools   tools  distlock, distlock-bench, libdistlock_preload.so,
#                           manual pages of sections 1, 7 and 8
# Build them from a Release tree configured for /usr:
#   cmake -S . -B build-deb -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
#         -DDISTLOCK_TESTS=OFF -DDISTLOCK_EXAMPLES=OFF
#   cmake --build build-deb -j2 && (cd build-deb && cpack -G DEB)
# tests/packages/check.sh builds, lints, unpacks and uses them.
# Included at the end of the top-level CMakeLists.txt.

set(DL_DEB_MAINTAINER "the distlock authors <distlock@users.noreply.github.com>"
    CACHE STRING "Maintainer field of the Debian packages")
set(DL_DEB_RELEASE 1)
set(DL_DEB_VERSION "${PROJECT_VERSION}-${DL_DEB_RELEASE}")
set(DL_DEB_PACKAGES lib:libdistlock0 dev:libdistlock-dev tools:distlock-tools)

# Debian wants a copyright file and a Debian changelog in each package's
# /usr/share/doc/PACKAGE (option DISTLOCK_DEBIAN, cmake/man.cmake).
if(DISTLOCK_DEBIAN)
  find_program(DL_GZIP gzip REQUIRED)
  file(READ ${PROJECT_SOURCE_DIR}/LICENSE DL_LICENSE_TEXT)
  string(REGEX REPLACE "^BSD 3-Clause License\n\n[^\n]*\n[^\n]*\n\n" "" DL_LICENSE_BODY
         "${DL_LICENSE_TEXT}")
  # Debian's copyright format: the license text indented, blank lines as " ."
  string(REGEX REPLACE "\n\n" "\n.\n" DL_LICENSE_BODY "${DL_LICENSE_BODY}")
  string(REGEX REPLACE "\n" "\n " DL_LICENSE_BODY "${DL_LICENSE_BODY}")
  string(REGEX REPLACE "\n $" "" DL_LICENSE_BODY "${DL_LICENSE_BODY}")
  string(TIMESTAMP DL_DEB_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
  foreach(entry ${DL_DEB_PACKAGES})
    string(REPLACE ":" ";" entry "${entry}")
    list(GET entry 0 comp)
    list(GET entry 1 pkg)
    set(dir ${PROJECT_BINARY_DIR}/debian-doc/${pkg})
    file(MAKE_DIRECTORY ${dir})
    file(WRITE ${dir}/copyright
"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: distlock

Files: *
Copyright: 2026 the distlock authors
License: BSD-3-Clause

License: BSD-3-Clause
 ${DL_LICENSE_BODY}
")
    file(WRITE ${dir}/changelog.Debian
"${pkg} (${DL_DEB_VERSION}) unstable; urgency=medium

  * Built from the distlock sources with CPack; the changes are in
    CHANGELOG.md of the sources.

 -- ${DL_DEB_MAINTAINER}  ${DL_DEB_DATE}
")
    execute_process(COMMAND ${DL_GZIP} -9nf ${dir}/changelog.Debian RESULT_VARIABLE rc)
    if(rc)
      message(FATAL_ERROR "gzip ${dir}/changelog.Debian failed")
    endif()
    install(FILES ${dir}/copyright ${dir}/changelog.Debian.gz
            DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${pkg} COMPONENT ${comp})
  endforeach()
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME distlock)
set(CPACK_PACKAGE_VENDOR "the distlock authors")
set(CPACK_PACKAGE_CONTACT "${DL_DEB_MAINTAINER}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPack would put it before each
# component's description, whose first line is that package's synopsis.
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL lib dev tools)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${DL_DEB_RELEASE})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${DL_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Depends on the shared libraries the binaries use (libc, hiredis, uuid, ...).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# A shlibs file for libdistlock.so.0 (libdistlock_preload.so has no soname
# and gets none).  CPack's postinst/postrm call ldconfig; Debian wants the
# trigger too.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
file(WRITE ${PROJECT_BINARY_DIR}/debian-control/triggers "activate-noawait ldconfig\n")

set(CPACK_DEBIAN_LIB_PACKAGE_NAME libdistlock0)
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/debian-control/triggers)
set(CPACK_COMPONENT_LIB_DESCRIPTION
"distributed locks on Redis that behave like pthread locks (library)
distlock gives C programs a dist_mutex_t and a dist_rwlock_t that mirror
pthread_mutex_t and pthread_rwlock_t, kept in Redis, so that a lock is
shared by every thread of every process on every host that names it:
leases renewed while held, push wake-ups, fair mode, fencing tokens,
EOWNERDEAD and ENOLCK when a hold lapsed; one Redis, Sentinel, Cluster or
Redlock.
.
This package holds the shared library.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libdistlock-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# The static library and pkg-config's Requires.private need these.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libdistlock0 (= ${DL_DEB_VERSION}), libhiredis-dev, uuid-dev, libssl-dev")
set(CPACK_DEBIAN_DEV_PACKAGE_SHLIBDEPS OFF)
set(CPACK_COMPONENT_DEV_DESCRIPTION
"distributed locks on Redis that behave like pthread locks (development)
distlock gives C programs a dist_mutex_t and a dist_rwlock_t that mirror
pthread_mutex_t and pthread_rwlock_t, kept in Redis.
.
This package holds the header, the static library, the pkg-config file,
the CMake package (find_package(distlock)) and the section 3 manual pages.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME distlock-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
# libdistlock_preload.so sits in the library path, so that a bare
# LD_PRELOAD=libdistlock_preload.so finds it.
set(CPACK_DEBIAN_TOOLS_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/debian-control/triggers)
# distlock-bench starts redis-server and runs redis-benchmark.
set(CPACK_DEBIAN_TOOLS_PACKAGE_SUGGESTS "redis-server, redis-tools")
set(CPACK_COMPONENT_TOOLS_DESCRIPTION
"distributed locks on Redis: command-line tool, interposer and benchmark
distlock runs a command under a lock kept in Redis, like flock(1) across
hosts, and shows, lists and breaks locks. libdistlock_preload.so makes
chosen pthread mutexes, read-write locks and lock files of an unmodified
program distributed locks through LD_PRELOAD. distlock-bench measures the
library against a naive Redis lock.
.
This package also holds distlock(7), the overview of the library.")

include(CPack)
