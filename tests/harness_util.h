/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_util.h - clocks, polling waits, pipes carrying fixed-size
 * messages between processes, and the small text helpers every other
 * harness file uses.
 */
#ifndef TH_HARNESS_UTIL_H
#define TH_HARNESS_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* A harness wait that ran out of time (th_wait_child, th_actor_call, ...). */
#define TH_WAIT_TIMEOUT (-1)

/* ------------------------------------------------------------------- clocks */

int64_t th_now_ms(void);                    /* CLOCK_MONOTONIC, comparable across processes */
int64_t th_now_us(void);
struct timespec th_abstime_ms(long ms);     /* CLOCK_REALTIME now + ms (ms may be negative) */
void th_sleep_ms(long ms);
void th_sleep_us(long us);
/* Polls pred(arg) every 2 ms until it returns nonzero (then 1) or timeout_ms
 * passes (then 0). */
int th_wait_until(int (*pred)(void *), void *arg, long timeout_ms);
/* Median of n values (sorts v). */
int64_t th_median(int64_t *v, int n);


/* -------------------------------------------------------------------- pipes */

typedef struct th_pipe { int rd, wr; } th_pipe_t;
typedef struct th_msg { int64_t tag, a, b, c; } th_msg_t;

void th_pipe_open(th_pipe_t *p);            /* O_CLOEXEC */
void th_pipe_close(th_pipe_t *p);
/* One message (atomic on a pipe, so several children may share one). */
int th_send(int fd, int64_t tag, int64_t a, int64_t b, int64_t c);
/* 0, or -1 on time-out / EOF / error. */
int th_recv(int fd, th_msg_t *m, long timeout_ms);
/* Reads everything until EOF or timeout into a malloc'ed NUL-terminated
 * string. */
char *th_read_all(int fd, long timeout_ms);


/* ------------------------------------------------------------------- text */

const char *th_errname(int rc);             /* "EBUSY", "0", ... */
/* Case-insensitive substring test. */
int th_contains(const char *hay, const char *needle);

/* --------------------------------------------------- internal to the harness */

/* Prints what failed (with errno) and aborts the process. */
void th_die(const char *what);
/* write() that neither raises SIGPIPE nor loses bytes to EINTR.  0 or -1. */
int th_write_all(int fd, const void *buf, size_t len);
/* Reads exactly len bytes, waiting at most timeout_ms (<0: forever).  0 or -1. */
int th_read_full(int fd, void *buf, size_t len, long timeout_ms);

/* Closes every descriptor from lowfd up (in a child before exec). */
void th_close_from(int lowfd);

#endif
