/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_topo_proc.h - the processes of the topology suites: a private
 * temporary directory, free ports, programs run with their output in a
 * file, a registry of every pid started (stopped at tt_cleanup(), at exit
 * of the process that started them, and by the alarm of TT_TEST).
 */
#ifndef TH_HARNESS_TOPO_PROC_H
#define TH_HARNESS_TOPO_PROC_H

#include <stddef.h>
#include <sys/types.h>

/* ------------------------------------------------------------- basics */

/* The suite's private temporary directory (made on first use). */
const char *tt_dir(void);
/* A free TCP port on 127.0.0.1 (bind to port 0), -1 on failure. */
int tt_free_port(void);
/* Kills (SIGCONT + SIGKILL) and reaps every process this file started and
 * still runs, and removes the temporary directory. */
void tt_cleanup(void);
/* Per-test setup: th_test_setup(), then an alarm of `seconds` (TT_TEST: 50)
 * whose handler kills every topology process this process started before
 * ending the test; tt_alarm() also sets the runner's limit of the test to
 * 30 s beyond it (th_time_limit). */
int tt_test_setup(void **state);
void tt_alarm(unsigned seconds);
/* Group teardown of a topology suite: th_test_teardown() (children left
 * by the last test), then tt_cleanup(). */
int tt_group_teardown(void **state);
#define TT_TEST(f) cmocka_unit_test_setup_teardown(f, tt_test_setup, th_test_teardown)

/* Runs argv (argv[0] looked up in PATH) with stdout+stderr into a file of
 * the temporary directory; waits at most timeout_ms (then SIGKILL).
 * Returns the exit status (128+signal if killed, -1 on time-out), and the
 * output (malloc'ed) in *out if out is not NULL. */
int tt_run(const char *const *argv, long timeout_ms, char **out);
/* The same in the background: the pid, or -1.  Output in *logpath. */
pid_t tt_run_bg(const char *const *argv, char *logpath, size_t logsize);
/* Waits for a tt_run_bg() process: th_wait_child_ms() (exit status as
 * tt_run(), -1 on time-out, when it is killed), and forgets its pid. */
int tt_wait_bg(pid_t pid, long timeout_ms);

/* Commands to these servers: th_cmd_at() and th_cmd_at_ll() of harness.h. */
/* The value of field `field` in "INFO section" of port into buf; buf or
 * NULL if absent/unreachable. */
char *tt_info_field(int port, const char *section, const char *field, char *buf, size_t size);

/* Internal to the topology files: a process started by tt_spawn() (with
 * tools/launch/launch.h's dl_launch_spawn) is registered, and so is a
 * server once started (tt_register); each is stopped at tt_cleanup().
 * tt_kill_ours() SIGKILLs and reaps one only while it is still our
 * unreaped child (async-signal-safe). */
pid_t tt_spawn(const char *const *argv, const char *logpath);
void tt_register(pid_t pid);
void tt_kill_ours(pid_t pid);
/* n distinct free ports into out; 0 or -1. */
int tt_free_ports(int n, int *out);

#endif
