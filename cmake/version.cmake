# SPDX-License-Identifier: BSD-3-Clause
# The version: project(distlock VERSION ...) is the one source; the public
# header spells it out (DISTLOCK_VERSION_*), so users read a plain file, and
# configuring fails if the two disagree.  Also the linker version script of
# libdistlock.so (dist_version() is shim/base/version.c, among the library's
# sources).  Included by the top-level CMakeLists.txt.

file(STRINGS ${PROJECT_SOURCE_DIR}/include/distlock.h DL_VERSION_LINES
     REGEX "^#define DISTLOCK_VERSION_(MAJOR|MINOR|PATCH) +[0-9]+")
foreach(part MAJOR MINOR PATCH)
  string(REGEX MATCH "DISTLOCK_VERSION_${part} +([0-9]+)" _ "${DL_VERSION_LINES}")
  set(DL_HEADER_VERSION_${part} "${CMAKE_MATCH_1}")
endforeach()
set(DL_HEADER_VERSION
    "${DL_HEADER_VERSION_MAJOR}.${DL_HEADER_VERSION_MINOR}.${DL_HEADER_VERSION_PATCH}")
if(NOT DL_HEADER_VERSION STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR "include/distlock.h says version ${DL_HEADER_VERSION}, "
          "project() says ${PROJECT_VERSION}: change both")
endif()

# Every dist_* symbol gets the version node DISTLOCK_0; nothing else leaves
# the .so (the hidden visibility of distlock_objs already hides dl_*; the
# script also keeps out what a static dependency would bring in).
set(DL_VERSION_SCRIPT ${PROJECT_SOURCE_DIR}/cmake/libdistlock.map)
target_link_options(distlock PRIVATE "LINKER:--version-script=${DL_VERSION_SCRIPT}")
set_property(TARGET distlock APPEND PROPERTY LINK_DEPENDS ${DL_VERSION_SCRIPT})

if(DISTLOCK_TESTS)
  enable_testing()
  # The header's macros, dist_version() and project() agree, in the shared
  # library as built; and libdistlock.so exports only dist_* (DISTLOCK_0).
  add_executable(version_check ${PROJECT_SOURCE_DIR}/tests/install/version.c)
  target_compile_definitions(version_check PRIVATE
    EXPECT_MAJOR=${PROJECT_VERSION_MAJOR} EXPECT_MINOR=${PROJECT_VERSION_MINOR}
    EXPECT_PATCH=${PROJECT_VERSION_PATCH} EXPECT_VERSION="${PROJECT_VERSION}")
  target_link_libraries(version_check PRIVATE distlock)
  dl_target_flags(version_check)
  add_test(NAME version COMMAND version_check)
  add_test(NAME abi_exports
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/install/exports.sh $<TARGET_FILE:distlock>
            ${PROJECT_SOURCE_DIR}/include/distlock.h)
  set_tests_properties(version abi_exports PROPERTIES TIMEOUT 30)
endif()
