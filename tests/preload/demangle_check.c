/* SPDX-License-Identifier: BSD-3-Clause */
/* demangle_check.c - the interposer's reader of C++ globals' names
 * (shim/preload/demangle.c) on its own: reads symbols, one a line, and
 * prints for each the name it demangles to, or "-" when it is not of the
 * forms the reader takes.  tests/preload/test_cxx.sh compares its answers
 * with c++filt's. */
#include <stdio.h>
#include <string.h>

#include "preload.h"

int main(void)
{
    char line[8192], out[1024];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        if (dlp_demangle_var(line, out, sizeof out) == 0)
            printf("%s\n", out);
        else
            printf("-\n");
    }
    return 0;
}
