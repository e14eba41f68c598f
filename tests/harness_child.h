/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_child.h - forked children of a test (each dies with its parent
 * and after 40 s), their exit statuses, the child-side checks (TH_CHECK*),
 * the parent-side ones (TH_ASSERT_*), and the cmocka fixtures of a suite
 * (TH_TEST: a 50 s alarm per test, children left behind killed).
 *
 * Children never use cmocka assertions (a failed assertion would longjmp
 * into the copy of the parent's test runner): they use TH_CHECK*, which
 * print the failure and _exit(TH_CHILD_FAIL).
 */
#ifndef TH_HARNESS_CHILD_H
#define TH_HARNESS_CHILD_H

#include <stdio.h>
#include <unistd.h>
#include <sys/types.h>
#include "harness_util.h"

/* ----------------------------------------------------------------- children */

#define TH_CHILD_FAIL 99

/* Forks; the child runs fn(arg) and _exit()s with its return value.  The
 * child dies with the parent (PR_SET_PDEATHSIG) and after 40 s (alarm).
 * Under AddressSanitizer it forks once every other thread sleeps (up to
 * 2 s: see harness_child.c). */
pid_t th_fork_child(int (*fn)(void *), void *arg);
/* Exit status of the child (0..255), 128+signal if it was killed, or
 * TH_WAIT_TIMEOUT after timeout_ms (the child is then SIGKILLed; with
 * TH_HUNG_GDB=1 in the environment, its stacks are printed first). */
int th_wait_child_ms(pid_t pid, long timeout_ms);
int th_wait_child(pid_t pid);               /* 30 s time-out */
void th_kill_child(pid_t pid);              /* SIGKILL and reap */
/* Whether a child forked from a process that has threads may start
 * threads of its own: 1, except under a ThreadSanitizer that cannot (GCC
 * 12's stops such a child with "dup thread with used id": glibc gives the
 * child's new thread the stack, hence the pthread_t, of a parent's thread
 * that TSan still counts as running in the child; docs/RELIABILITY.md).
 * Found out once per process, by trying it. */
int th_fork_threads_ok(void);
/* A child the test steers, the fixture of most tests of a hold's life: it
 * reports what it did on `up` (th_send) and waits on `down` for the test's
 * go, while the test does to Redis or to the network what the case needs
 * (harness_proxy, th_lock_lose). */
typedef struct th_steered {
    th_pipe_t up, down;
    pid_t pid;
} th_steered_t;
/* Opens the pipes, gives the child its ends (*up: the one it writes,
 * *down: the one it reads; fields of arg) and forks fn(arg). */
void th_steer(th_steered_t *c, int (*fn)(void *), void *arg, int *up, int *down);
/* The child's next message, within timeout_ms, of tag `tag` (the test
 * fails otherwise); stored in *m. */
void th_steered_expect(th_steered_t *c, int64_t tag, th_msg_t *m, long timeout_ms);
/* The child exits 0 (the test fails otherwise); its pipes are closed. */
void th_steered_end(th_steered_t *c);
/* In a child: SIGPIPE at its default disposition and unblocked, as in a
 * program that never touched it, so that a write on a reset connection
 * kills the process unless the library itself keeps SIGPIPE away. */
void th_sigpipe_default(void);

/* Child-side checks: print and _exit(TH_CHILD_FAIL). */
#define TH_CHECK(cond) do { if (!(cond)) { \
    fprintf(stderr, "%s:%d: [child %d] check failed: %s\n", __FILE__, __LINE__, \
            (int)getpid(), #cond); fflush(stderr); _exit(TH_CHILD_FAIL); } } while (0)
#define TH_CHECK_RC(expr, want) do { int th_rc_ = (expr); int th_want_ = (want); \
    if (th_rc_ != th_want_) { fprintf(stderr, \
        "%s:%d: [child %d] %s = %d (%s), want %d (%s); dist_lasterror: \"%s\"\n", \
        __FILE__, __LINE__, (int)getpid(), #expr, th_rc_, th_errname(th_rc_), th_want_, \
        th_errname(th_want_), dist_lasterror()); fflush(stderr); _exit(TH_CHILD_FAIL); } } while (0)

/* Runs fn(arg) in a child whose stderr goes into a pipe; returns the exit
 * status and the captured stderr (malloc'ed) in *err. */
int th_run_capture_stderr(int (*fn)(void *), void *arg, char **err, long timeout_ms);

/* ----------------------------------------------------------------- fixtures */

/* cmocka group setup/teardown starting and stopping the suite's server. */
int th_group_setup(void **state);
int th_group_teardown(void **state);
/* Per-test setup: arms a 50 s alarm, so a test hung in a lock call ends
 * (status 124, the runner reports it failed) with a message saying so,
 * before the runner's time limit.  Per-test teardown: disarms it, kills and reaps children a
 * failed test left behind. */
int th_test_setup(void **state);
int th_test_teardown(void **state);
#define TH_TEST(f) cmocka_unit_test_setup_teardown(f, th_test_setup, th_test_teardown)

/* Parent-side (cmocka) assertion of a return code, printing names. */
#define TH_ASSERT_RC(expr, want) do { int th_rc_ = (expr); int th_want_ = (want); \
    if (th_rc_ != th_want_) { fail_msg("%s = %d (%s), want %d (%s); dist_lasterror: \"%s\"; " \
        "last proc error: \"%s\"", #expr, th_rc_, th_errname(th_rc_), th_want_, \
        th_errname(th_want_), dist_lasterror(), th_proc_lasterror()); } } while (0)
/* Parent-side: a child's exit status must be 0. */
#define TH_ASSERT_CHILD_OK(pid) do { int th_st_ = th_wait_child(pid); \
    if (th_st_ != 0) fail_msg("child %d ended with status %d (%s)", (int)(pid), th_st_, \
        th_st_ == TH_WAIT_TIMEOUT ? "time-out, killed" : th_st_ == TH_CHILD_FAIL ? \
        "a check failed, see stderr" : th_st_ > 128 ? "killed by a signal" : "exit code"); } while (0)

#endif
