# SPDX-License-Identifier: BSD-3-Clause
# <distlock/pthread.h>, the one-line port of a pthread program: its tests.
# tests/port/ holds a small multi-file pthread program (a bank) written
# for one host; the build makes its ported copy by adding one line to its
# header (below the includes of <pthread.h> and <semaphore.h>) and builds
# both: bank_plain as written, bank_ported linked with the library.
# tests/port/test_port.sh runs them as several processes, and the port's
# edges (tests/port/edges.c).  Included by the top-level CMakeLists.txt.
if(DISTLOCK_TESTS)
  enable_testing()
  set(DLPT_SRC ${PROJECT_SOURCE_DIR}/tests/port)
  set(DLPT_GEN ${CMAKE_CURRENT_BINARY_DIR}/port_ported)
  set(DLPT_FILES ledger.c journal.c queue.c audit.c teller.c main.c)
  set(DLPT_PORTED)
  foreach(f ${DLPT_FILES})
    configure_file(${DLPT_SRC}/${f} ${DLPT_GEN}/${f} COPYONLY)
    list(APPEND DLPT_PORTED ${DLPT_GEN}/${f})
  endforeach()
  # The port: one line, after <semaphore.h> (made when configuring, again
  # whenever bank.h changes).
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${DLPT_SRC}/bank.h)
  file(READ ${DLPT_SRC}/bank.h DLPT_HEADER)
  string(REPLACE "#include <semaphore.h>\n" "#include <semaphore.h>\n#include <distlock/pthread.h>\n"
         DLPT_HEADER "${DLPT_HEADER}")
  file(WRITE ${DLPT_GEN}/bank.h "${DLPT_HEADER}")
  list(TRANSFORM DLPT_FILES PREPEND ${DLPT_SRC}/ OUTPUT_VARIABLE DLPT_PLAIN)

  add_executable(bank_plain ${DLPT_PLAIN})
  target_link_libraries(bank_plain PRIVATE Threads::Threads)
  add_executable(bank_ported ${DLPT_PORTED})
  target_include_directories(bank_ported PRIVATE ${DLPT_GEN})
  target_link_libraries(bank_ported PRIVATE distlock Threads::Threads)
  add_executable(port_edges ${DLPT_SRC}/edges.c)
  target_link_libraries(port_edges PRIVATE distlock Threads::Threads)
  foreach(t bank_plain bank_ported port_edges)
    target_compile_definitions(${t} PRIVATE _GNU_SOURCE)
    dl_target_flags(${t})
  endforeach()

  add_test(NAME port
    COMMAND bash ${PROJECT_SOURCE_DIR}/tools/with-redis.sh
            bash ${DLPT_SRC}/test_port.sh ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(port PROPERTIES TIMEOUT 300)
endif()
