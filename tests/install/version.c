/* SPDX-License-Identifier: BSD-3-Clause */
/* The header's DISTLOCK_VERSION_* equal CMake's project version (passed in
 * as EXPECT_*), and dist_version() of the library says the same.  Needs no
 * Redis. */
#include <distlock.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
    int bad = 0;

    if (DISTLOCK_VERSION_MAJOR != EXPECT_MAJOR || DISTLOCK_VERSION_MINOR != EXPECT_MINOR ||
        DISTLOCK_VERSION_PATCH != EXPECT_PATCH) {
        fprintf(stderr, "distlock.h: %d.%d.%d, project(): %s\n", DISTLOCK_VERSION_MAJOR,
                DISTLOCK_VERSION_MINOR, DISTLOCK_VERSION_PATCH, EXPECT_VERSION);
        bad = 1;
    }
    if (dist_version() == NULL || strcmp(dist_version(), EXPECT_VERSION) != 0) {
        fprintf(stderr, "dist_version(): \"%s\", project(): %s\n",
                dist_version() ? dist_version() : "(null)", EXPECT_VERSION);
        bad = 1;
    }
    /* EOWNERDEAD is the system's, not the header's fallback. */
#ifdef __GLIBC__
    if (EOWNERDEAD != 130) {
        fprintf(stderr, "EOWNERDEAD is %d\n", EOWNERDEAD);
        bad = 1;
    }
#endif
    if (!bad)
        printf("version %s: header, library and project agree\n", dist_version());
    return bad;
}
