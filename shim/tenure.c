/* tenure.c - how long a process may use its Redis hold without asking
 * Redis (lock.c decides when; this file keeps the facts it decides on).
 *
 * Validity.  A hold passed between the process's own threads, joined by
 * another reader, or taken back after a lingering unlock, costs no round
 * trip: the process believes Redis still has it.  That belief holds until
 * the hold's TTL, counted from when the call that set it was sent, runs
 * out; a process that stalled longer (a pause, swapping, a stopped
 * debugger) or whose watchdog could not reach Redis must ask again.  So
 * each acquisition and each confirmed renewal sets l->valid_until, each
 * TTL cut by a linger lowers it, and past it no hold is reused locally.
 */
#include "dl.h"
#include "lock.h"

uint64_t dl_hold_valid_until(uint64_t sent_ms, unsigned long ttl_ms)
{
    /* The allowance for clocks running at different rates, as redlock's. */
    unsigned long drift = ttl_ms / 100 + 2;
    return ttl_ms > drift ? sent_ms + ttl_ms - drift : 0;
}

int dl_hold_valid(const dl_lock_t *l)
{
    return dl_now_ms() < l->valid_until;
}

void dl_hold_cut(dl_lock_t *l, unsigned long ttl_ms)
{
    uint64_t v = dl_hold_valid_until(dl_now_ms(), ttl_ms);
    if (v < l->valid_until)
        l->valid_until = v;
    l->cut_until = v;
    l->cuts++;
}
