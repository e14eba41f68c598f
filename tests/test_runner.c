/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_runner.c - the harness's test runner keeps tests apart: it runs a
 * small suite of its own (this program again, with TH_RUNNER_INNER=1) in
 * which one test aborts (reads freed memory, under AddressSanitizer) and
 * one hangs, and checks that the other tests of that suite still ran and
 * passed, that the summary counts the two failures, that the suite's exit
 * status says so, and that no test could stop the server its group setup
 * started.  Were the tests run in one
 * process, the abort would end the inner suite at its second test.
 */
#include "harness.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

/* ---------------------------------------------------- the inner suite */

static void inner_first(void **state)
{
    (void)state;
    assert_int_equal(th_cmd_ll("INCR runner:ran"), 1);
}

static void inner_aborts(void **state)
{
    (void)state;
    th_cmd_do("INCR runner:ran");
#if defined(__SANITIZE_ADDRESS__)
    /* AddressSanitizer's report ends the process (exit status 1) */
    char *volatile p = malloc(16);
    free(p);
    printf("%d\n", p[3]);
#endif
    abort();                    /* not a signal cmocka catches */
}

static void inner_stops_server(void **state)
{
    (void)state;
    /* The group's server belongs to the runner: a test cannot stop it. */
    th_redis_stop();
    th_cmd_do("INCR runner:ran");
}

static void inner_hangs(void **state)
{
    (void)state;
    th_time_limit(2);
    th_cmd_do("INCR runner:ran");
    alarm(0);                   /* not even the fixture's alarm ends it */
    for (;;)
        pause();
}

static void inner_last(void **state)
{
    (void)state;
    /* every test before ran (and counted), and the server still answers */
    assert_int_equal(th_cmd_ll("INCR runner:ran"), 5);
    printf("inner: the last test ran\n");
}

static int inner_main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(inner_first),
        TH_TEST(inner_aborts),
        TH_TEST(inner_stops_server),
        TH_TEST(inner_hangs),
        TH_TEST(inner_last),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}

/* ---------------------------------------------------- the outer suite */

struct inner_run { const char *select; };

static int exec_inner(void *p)
{
    const struct inner_run *r = p;
    dup2(STDERR_FILENO, STDOUT_FILENO);     /* both into the capture */
    setenv("TH_RUNNER_INNER", "1", 1);
    unsetenv("DISTLOCK_URL");               /* its own server */
    unsetenv("TH_FILTER");
    unsetenv("TH_TEST_TIMEOUT");
    if (r->select)
        setenv("TH_FILTER", r->select, 1);
    alarm(0);
    execl("/proc/self/exe", "test_runner", (char *)NULL);
    return 127;
}

static int run_inner(const char *select, char **out)
{
    struct inner_run r = { select };
    return th_run_capture_stderr(exec_inner, &r, out, 60000);
}

static void test_one_crash_fails_one_test(void **state)
{
    (void)state;
    char *out = NULL;
    int st = run_inner(NULL, &out);
    printf("---- inner suite (status %d)\n%s---- end of the inner suite\n", st, out);
    fflush(stdout);
    assert_int_not_equal(st, 0);
    assert_non_null(strstr(out, "inner: the last test ran"));
    assert_non_null(strstr(out, "[       OK ] inner_first"));
    assert_non_null(strstr(out, "[       OK ] inner_stops_server"));
    assert_non_null(strstr(out, "[       OK ] inner_last"));
    assert_non_null(strstr(out, "[  PASSED  ] 3 test(s)."));
    assert_non_null(strstr(out, "[  FAILED  ] 2 test(s), listed below:"));
    assert_non_null(strstr(out, "[  FAILED  ] inner_aborts ("));
    assert_non_null(strstr(out, "[  FAILED  ] inner_hangs (still running after its time limit of 2 s"));
    /* the summary comes last */
    assert_non_null(strstr(strstr(out, "[  PASSED  ] 3 test(s)."), " 2 FAILED TEST(S)"));
    free(out);
}

static void test_one_test_by_name(void **state)
{
    (void)state;
    char *out = NULL;
    int st = run_inner("inner_first", &out);
    printf("---- inner suite, one test (status %d)\n%s---- end\n", st, out);
    fflush(stdout);
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "Running 1 test(s)"));
    assert_non_null(strstr(out, "[  PASSED  ] 1 test(s)."));
    assert_null(strstr(out, "inner_last"));
    free(out);
}

int main(void)
{
    if (getenv("TH_RUNNER_INNER"))
        return inner_main();
    const struct CMUnitTest tests[] = {
        TH_TEST(test_one_crash_fails_one_test),
        TH_TEST(test_one_test_by_name),
    };
    return th_run_tests(tests, NULL, NULL);
}
