/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_runner.h - runs a suite's cmocka tests each in a process of its
 * own with a time limit, so that a crash, an abort, a sanitizer report or
 * a hang fails that one test and the later tests still run.
 *
 * The group setup runs once in the runner (the parent), so a suite's
 * servers are started once; each test then runs in a forked child that
 * inherits them (the harness stops a server only from the process that
 * started it, and every server by its pid at the end).  The child is the
 * leader of a process group of its own, which the runner SIGKILLs when the
 * test runs past its limit, its helpers and servers with it.  Each child
 * runs its one test with cmocka's own runner (so its output is cmocka's);
 * the runner then prints the summary of the whole suite in cmocka's words
 * ("[  PASSED  ] N test(s)." / "[  FAILED  ] ...") and returns the number
 * of tests that failed.
 *
 * Environment:
 *   TH_FILTER=name[,name...] run only these tests (shell patterns); the
 *                           program's arguments do the same
 *   TH_TEST_TIMEOUT=s       the default time limit of a test (120 s)
 *   TH_FORK=0               no child processes: cmocka's runner in this
 *                           process (for a debugger); the limit is not kept
 */
#ifndef TH_HARNESS_RUNNER_H
#define TH_HARNESS_RUNNER_H

#include <stddef.h>
#include <stdarg.h>
#include <setjmp.h>
#include <cmocka.h>

#define TH_TEST_LIMIT_S 120

/* In place of cmocka_run_group_tests(). */
int th_run_group(const char *group, const struct CMUnitTest *tests, size_t n,
                 CMFixtureFunction setup, CMFixtureFunction teardown);
#define th_run_tests(tests, setup, teardown) \
    th_run_group(#tests, tests, sizeof(tests) / sizeof((tests)[0]), setup, teardown)

/* From inside a test: its time limit becomes `seconds` from now (a test
 * that needs longer than the default says so first).  Without a runner
 * (TH_FORK=0, or a process the test forked) it does nothing. */
void th_time_limit(unsigned seconds);

#endif
