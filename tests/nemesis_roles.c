/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nemesis_roles.c - the roles: besides its lock threads, every client
 * process runs the threads of each role of the run, each the client of one
 * more primitive, in the same run as the locks and under the same faults;
 * after the run each role judges its part of the history.
 *
 * A role is one line of nm_roles and a file of its own (its objects, its
 * threads, its checks).  Its names come after the locks', in the table's
 * order; its threads' records after the lock threads' (nemesis.h,
 * nm_role_t).  NEMESIS_ROLES picks the roles of a run (all by default).
 */
#include "nemesis_int.h"

#include <stdlib.h>
#include <string.h>

/* nemesis_client.c and nemesis_check.c: the condition */
static const char *const cond_names[] = { "cv", "cvm", NULL };
int nm_cond_open(const nm_client_cfg_t *cc, int base);
void nm_cond_check(nm_hist_t *hs);

/* nemesis_sem.c */
extern const char *const nm_sem_names[];
int nm_sem_open(const nm_client_cfg_t *cc, int base);
void *nm_sem_main(void *arg);
int nm_sem_usable(const nm_cfg_t *cfg, const char **why);
void nm_sem_check(nm_hist_t *hs);
void nm_sem_after(nm_hist_t *hs);

/* nemesis_lockall.c */
int nm_lockall_open(const nm_client_cfg_t *cc, int base);
void *nm_lockall_main(void *arg);
void nm_lockall_check(nm_hist_t *hs);

/* nemesis_barrier.c and nemesis_check.c: the barrier and onces */
extern const char *const nm_barrier_names[];
int nm_barrier_open(const nm_client_cfg_t *cc, int base);
void *nm_barrier_main(void *arg);
void nm_barrier_check(nm_hist_t *hs);

/* In the order of NM_ROLE_*; the condition must stay first: its names are
 * NM_CV_NAME, NM_CVM_NAME. */
const nm_role_t nm_roles[] = {
    [NM_ROLE_COND] = { "cond", cond_names, 1, nm_cond_open, nm_cond_main, NULL, nm_cond_check, NULL },
    [NM_ROLE_SEM] = { "sem", nm_sem_names, 2, nm_sem_open, nm_sem_main, nm_sem_usable, nm_sem_check,
                      nm_sem_after },
    [NM_ROLE_LOCKALL] = { "lockall", NULL, 1, nm_lockall_open, nm_lockall_main, NULL,
                          nm_lockall_check, NULL },
    [NM_ROLE_BARRIER] = { "barrier", nm_barrier_names, 1, nm_barrier_open, nm_barrier_main, NULL,
                          nm_barrier_check, NULL },
};
const int nm_nroles = (int)(sizeof nm_roles / sizeof nm_roles[0]);

int nm_role_base[sizeof nm_roles / sizeof nm_roles[0]];
int nm_nnames;

void nm_roles_setup(void)
{
    int n = nm_nlocks;
    for (int r = 0; r < nm_nroles; r++) {
        nm_role_base[r] = n;
        for (const char *const *p = nm_roles[r].names; p && *p; p++)
            n++;
    }
    nm_nnames = n;
}

const char *nm_name_tag(int i)
{
    if (i >= 0 && i < nm_nlocks)
        return nm_locks[i].tag;
    for (int r = nm_nroles - 1; r >= 0; r--)
        if (i >= nm_role_base[r] && nm_roles[r].names)
            return nm_roles[r].names[i - nm_role_base[r]];
    return "?";
}

unsigned nm_roles_parse(const char *list)
{
    if (!list || !*list || strcmp(list, "all") == 0)
        return (1u << nm_nroles) - 1;
    if (strcmp(list, "none") == 0)
        return 0;
    unsigned bits = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int r = 0; r < nm_nroles; r++)
            if (strcmp(tok, nm_roles[r].tag) == 0) {
                bits |= 1u << r;
                found = 1;
            }
        if (!found)
            return ~0u;
    }
    return bits;
}
