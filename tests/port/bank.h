/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bank.h - a small bank written for one host with pthreads: a ledger
 * (a balance in a file) under a mutex, a journal record under a rwlock,
 * a work queue under a mutex and two conditions, an audit count under a
 * mutex initialized at run time, tellers limited by a semaphore, and a
 * barrier for the start.  Every update of a file is a read-modify-write
 * with a pause inside, so that processes that do not exclude each other
 * lose updates or see half-written records.
 *
 * tests/port/test_port.sh builds it twice: as it is, and ported to
 * distlock by one line added below the includes of this header.
 */
#ifndef BANK_H
#define BANK_H

#include <pthread.h>
#include <semaphore.h>

/* ledger.c */
void ledger_open(const char *dir);
void ledger_deposit(long amount);
long ledger_balance(void);

/* journal.c: a two-field record; writers set both, readers check them */
void journal_open(const char *dir);
void journal_write(long v);
int journal_check(void);              /* 1 if both fields agree */

/* queue.c: jobs handed from a producer to this process's workers */
void queue_put(long job);
long queue_take(void);                /* -1: closed and empty */
void queue_close(void);

/* audit.c: a count kept beside the ledger, its lock initialized at run time */
void audit_init(const char *dir);
void audit_note(void);
long audit_count(void);

/* teller.c: at most `tellers` of all the workers at a window at once */
void teller_init(const char *dir, unsigned tellers);
int teller_serve(void);               /* the most seen at the window at once */

#endif
