# SPDX-License-Identifier: BSD-3-Clause
# Compile and link flags, per target: nothing is set for the whole
# directory, so a project that takes distlock in with add_subdirectory or
# FetchContent gets none of them, and the targets that must not be
# instrumented (the interposer, the programs it is preloaded into) are
# simply never given a sanitizer.  Included by the top-level
# CMakeLists.txt before any target.
include_guard(GLOBAL)

option(DISTLOCK_SANITIZE "Build with AddressSanitizer + UndefinedBehaviorSanitizer" OFF)
option(DISTLOCK_TSAN "Build with ThreadSanitizer" OFF)
if(DISTLOCK_SANITIZE AND DISTLOCK_TSAN)
  message(FATAL_ERROR "DISTLOCK_SANITIZE and DISTLOCK_TSAN cannot be combined: "
                      "ThreadSanitizer runs alone")
endif()

set(DL_WARNINGS -Wall -Wextra -Wno-unused-parameter)
set(DL_SAN_COMPILE "")
set(DL_SAN_LINK "")
if(DISTLOCK_SANITIZE)
  set(DL_SAN_COMPILE -fsanitize=address,undefined -fno-omit-frame-pointer
                     -fno-sanitize-recover=undefined)
  set(DL_SAN_LINK -fsanitize=address,undefined)
elseif(DISTLOCK_TSAN)
  set(DL_SAN_COMPILE -fsanitize=thread -fno-omit-frame-pointer)
  set(DL_SAN_LINK -fsanitize=thread)
endif()
# Whether this build instruments anything: the interposer then needs a
# second, uninstrumented build of the library (cmake/preload.cmake).
if(DL_SAN_COMPILE)
  set(DL_SANITIZED ON)
else()
  set(DL_SANITIZED OFF)
endif()

# dl_target_flags(TARGET [PLAIN]): C11, position-independent code, the
# project's warnings and, unless PLAIN, the sanitizer of this build
# (compile options; link options too where TARGET is linked: executables
# and shared libraries).  Every target of the project goes through here:
# the library, its tools and tests with the sanitizer, the interposer and
# what it is preloaded into PLAIN (a sanitizer runtime cannot be
# LD_PRELOADed into an uninstrumented program).
function(dl_target_flags target)
  cmake_parse_arguments(arg "PLAIN" "" "" ${ARGN})
  set_target_properties(${target} PROPERTIES
    C_STANDARD 11 C_STANDARD_REQUIRED ON POSITION_INDEPENDENT_CODE ON)
  target_compile_options(${target} PRIVATE ${DL_WARNINGS})
  if(NOT arg_PLAIN AND DL_SANITIZED)
    target_compile_options(${target} PRIVATE ${DL_SAN_COMPILE})
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "EXECUTABLE" OR type STREQUAL "SHARED_LIBRARY"
       OR type STREQUAL "MODULE_LIBRARY")
      target_link_options(${target} PRIVATE ${DL_SAN_LINK})
    endif()
  endif()
endfunction()
