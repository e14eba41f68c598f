/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_launch.c - tools/launch/launch.h, where every private redis-server
 * of the suites and of the bench comes from: a server is known as started
 * only when its port answers as the process started (a port another
 * server holds is refused, and that server left alone), has no
 * persistence and listens on 127.0.0.1 only, is stopped and reaped by its
 * pid, can be started again on its port, and dies with its starter.
 */
#include "harness.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "launch.h"

/* INFO's process_id of the server on port, -1 if none answers. */
static long info_pid(int port)
{
    redisReply *r = th_cmd_at(port, "INFO server");
    long pid = -1;
    if (r && r->type == REDIS_REPLY_STRING) {
        const char *p = strstr(r->str, "process_id:");
        if (p)
            pid = atol(p + 11);
    }
    if (r)
        freeReplyObject(r);
    return pid;
}

/* CONFIG GET name's value on port into buf. */
static const char *config_get(int port, const char *name, char *buf, size_t size)
{
    redisReply *r = th_cmd_at(port, "CONFIG GET %s", name);
    buf[0] = 0;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_STRING)
        snprintf(buf, size, "%s", r->element[1]->str);
    if (r)
        freeReplyObject(r);
    return buf;
}

/* pid is gone and reaped: no process, not even a zombie of ours. */
static int reaped(pid_t pid)
{
    return kill(pid, 0) == -1 && errno == ESRCH;
}

static void test_start_and_stop(void **state)
{
    (void)state;
    dl_launch_t how;
    memset(&how, 0, sizeof how);
    dl_launched_t s;
    assert_int_equal(dl_launch_start(&how, 0, &s), 0);
    assert_true(s.pid > 0 && s.port > 0);
    assert_int_equal(s.tls_port, 0);
    assert_int_equal(info_pid(s.port), (long)s.pid);
    char v[64];
    assert_string_equal(config_get(s.port, "save", v, sizeof v), "");
    assert_string_equal(config_get(s.port, "appendonly", v, sizeof v), "no");
    assert_string_equal(config_get(s.port, "bind", v, sizeof v), "127.0.0.1");
    dl_launch_stop(s.pid, 5000);
    assert_true(reaped(s.pid));
    assert_false(dl_launch_ping(s.port, 500));
}

/* Another server holds the port: the start fails (the new process dies on
 * its bind, and the answer on the port is not its), the other server runs
 * on untouched.  A check by PING alone would take it for the new one. */
static void test_taken_port_refused(void **state)
{
    (void)state;
    dl_launch_t how;
    memset(&how, 0, sizeof how);
    dl_launched_t a, b;
    assert_int_equal(dl_launch_start(&how, 0, &a), 0);
    memset(&b, 0, sizeof b);
    assert_int_equal(dl_launch_start(&how, a.port, &b), -1);
    assert_int_equal(b.pid, 0);
    assert_int_equal(info_pid(a.port), (long)a.pid);
    dl_launch_stop(a.pid, 5000);
}

/* A restart on the port a stopped server had, as th_server_restart does. */
static void test_restart_on_same_port(void **state)
{
    (void)state;
    dl_launch_t how;
    memset(&how, 0, sizeof how);
    dl_launched_t a, b;
    assert_int_equal(dl_launch_start(&how, 0, &a), 0);
    dl_launch_kill(a.pid, 5000);
    assert_true(reaped(a.pid));
    assert_int_equal(dl_launch_start(&how, a.port, &b), 0);
    assert_int_equal(b.port, a.port);
    assert_int_equal(info_pid(b.port), (long)b.pid);
    dl_launch_stop(b.pid, 5000);
}

/* The starter SIGKILLed: its server goes too (PR_SET_PDEATHSIG), so no
 * server outlives a crashed suite or bench. */
static void test_dies_with_starter(void **state)
{
    (void)state;
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t starter = fork();
    assert_true(starter >= 0);
    if (starter == 0) {
        close(fd[0]);
        dl_launch_t how;
        memset(&how, 0, sizeof how);
        dl_launched_t s;
        if (dl_launch_start(&how, 0, &s) != 0)
            _exit(1);
        if (write(fd[1], &s, sizeof s) != (ssize_t)sizeof s)
            _exit(1);
        for (;;)
            pause();
    }
    close(fd[1]);
    dl_launched_t s;
    memset(&s, 0, sizeof s);
    int got = th_read_full(fd[0], &s, sizeof s, 20000);
    close(fd[0]);
    kill(starter, SIGKILL);
    int st;
    waitpid(starter, &st, 0);
    assert_int_equal(got, 0);
    /* Generous: the server is only killed; 10 s covers a loaded machine. */
    int64_t deadline = th_now_ms() + 10000;
    while (dl_launch_ping(s.port, 200) && th_now_ms() < deadline)
        th_sleep_ms(20);
    assert_false(dl_launch_ping(s.port, 200));
}

static void test_free_ports_distinct(void **state)
{
    (void)state;
    int p[32];
    assert_int_equal(dl_launch_free_ports(32, p), 0);
    for (int i = 0; i < 32; i++) {
        assert_true(p[i] > 0 && p[i] < 65536);
        for (int j = 0; j < i; j++)
            assert_int_not_equal(p[i], p[j]);
    }
    int q[33];
    assert_int_equal(dl_launch_free_ports(33, q), -1);
    assert_true(dl_launch_free_port() > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_start_and_stop),
        TH_TEST(test_taken_port_refused),
        TH_TEST(test_restart_on_same_port),
        TH_TEST(test_dies_with_starter),
        TH_TEST(test_free_ports_distinct),
    };
    return th_run_tests(tests, NULL, NULL);
}
