/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_map.c - libFuzzer target for the interposer's DISTLOCK_MAP parser,
 * dlp_map_parse() (shim/preload/map.c).  Only the parsing: resolving the
 * targets (elfsym.c) needs the program's ELF symbols and is not fuzzed.
 *
 * The whole input is the map text.  It is parsed three times: with a
 * buffer of exactly its length + 1 (fits), with one byte less (must be
 * refused, nothing written past it), and with room for only 2 entries.
 * The parser knows the kinds it is given: here stand-ins with the words,
 * targets and name spaces of the interposer's kinds (shim/preload/wrap_*.c),
 * whose hooks need the whole library.
 * Checks: 0 or -1; on success 1..max specs, each with a non-empty name of
 * at most DIST_NAME_MAX bytes and a non-empty target, both inside the
 * buffer, one of the kinds, exe+0x... targets flagged as offsets, a @PROGRAM
 * (if any) non-empty, inside the buffer and without '/', no target mapped
 * twice for one KIND and one PROGRAM; on failure a printable one-line
 * reason.
 */
#include "distlock.h"
#include "fuzz_common.h"
#include "preload.h"

static const dlp_kind_t mutex = { .word = "mutex", .target = DLP_BY_SYMBOL, .what = "lock",
                                  .space = DL_KIND_LOCK, .shape = 'm' };
static const dlp_kind_t rwlock = { .word = "rwlock", .target = DLP_BY_SYMBOL, .what = "lock",
                                   .space = DL_KIND_LOCK, .shape = 'r' };
static const dlp_kind_t flock_ = { .word = "flock", .target = DLP_BY_PATH, .what = "lock",
                                   .space = DL_KIND_LOCK, .shape = 'r' };
static const dlp_kind_t sem = { .word = "sem", .target = DLP_BY_NAME, .what = "semaphore",
                                .space = DL_KIND_SEM, .unique = 1 };
static const dlp_kind_t cond = { .word = "cond", .target = DLP_BY_SYMBOL, .what = "condition",
                                 .space = DL_KIND_COND };
static const dlp_kind_t barrier = { .word = "barrier", .target = DLP_BY_SYMBOL,
                                    .what = "barrier", .space = DL_KIND_BARRIER };
static const dlp_kind_t *const kinds[] = { &mutex, &rwlock, &flock_, &sem, &cond, &barrier, NULL };

static void check(const char *text, size_t len, size_t bufsize, int max)
{
    char *buf = malloc(bufsize ? bufsize : 1);
    dlp_spec_t specs[DLP_MAX_ENTRIES];
    char err[512];
    int n = -1;
    memset(err, 0x5a, sizeof err);
    int rc = dlp_map_parse(text, kinds, buf, bufsize, specs, max, &n, err, sizeof err);
    FUZZ_CHECK(rc == 0 || rc == -1, "rc %d", rc);
    if (bufsize < len + 1)
        FUZZ_CHECK(rc == -1, "accepted a map longer than its buffer");
    if (rc == 0) {
        FUZZ_CHECK(n >= 1 && n <= max, "n %d", n);
        for (int i = 0; i < n; i++) {
            const dlp_spec_t *s = &specs[i];
            FUZZ_CHECK(s->kind == &mutex || s->kind == &rwlock || s->kind == &flock_ ||
                       s->kind == &sem || s->kind == &cond || s->kind == &barrier, "kind");
            FUZZ_CHECK(s->namelen >= 1 && s->namelen <= DIST_NAME_MAX, "namelen %zu", s->namelen);
            FUZZ_CHECK(s->name >= buf && s->name + s->namelen < buf + bufsize, "name outside buf");
            FUZZ_CHECK(memchr(s->name, 0, s->namelen) == NULL, "NUL in name");
            FUZZ_CHECK(memchr(s->name, ';', s->namelen) == NULL, "';' in name");
            FUZZ_CHECK(s->target >= buf && s->target < buf + bufsize, "target outside buf");
            size_t tl = strnlen(s->target, (size_t)(buf + bufsize - s->target));
            FUZZ_CHECK(s->target + tl < buf + bufsize, "target not terminated in buf");
            FUZZ_CHECK(tl > 0, "empty target");
            FUZZ_CHECK(!s->is_offset || strncmp(s->target, "exe+0x", 6) == 0 ||
                       strncmp(s->target, "exe+0X", 6) == 0, "offset flag");
            FUZZ_CHECK(!s->is_offset || s->kind->target == DLP_BY_SYMBOL,
                       "offset for a flock or a semaphore");
            FUZZ_CHECK(s->kind->target != DLP_BY_NAME ||
                       (s->target[0] == '/' && !strchr(s->target + 1, '/')),
                       "a semaphore's target is /NAME");
            if (s->program) {
                FUZZ_CHECK(s->program > s->target && s->program < buf + bufsize, "program outside buf");
                size_t pl = strnlen(s->program, (size_t)(buf + bufsize - s->program));
                FUZZ_CHECK(s->program + pl < buf + bufsize, "program not terminated in buf");
                FUZZ_CHECK(pl > 0, "empty program");
                FUZZ_CHECK(memchr(s->program, '/', pl) == NULL, "'/' in program");
            }
            for (int k = 0; k < i; k++) {
                const dlp_spec_t *o = &specs[k];
                int same_prog = (!o->program && !s->program) ||
                                (o->program && s->program && strcmp(o->program, s->program) == 0);
                FUZZ_CHECK(o->kind != s->kind || strcmp(o->target, s->target) != 0 || !same_prog,
                           "target mapped twice");
            }
        }
    } else {
        fuzz_check_message("reason", err, sizeof err, 1);
    }
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    size_t len = strlen(text);          /* an embedded NUL ends the map */
    check(text, len, len + 1, DLP_MAX_ENTRIES);
    check(text, len, len, DLP_MAX_ENTRIES);
    check(text, len, len + 1, 2);
    free(text);
    return 0;
}
