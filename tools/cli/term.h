/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * term.h - the terminal `distlock top` draws on (term.c): the termios
 * settings and ANSI escapes (ECMA-48 and xterm's alternate screen) every
 * terminal emulator in use understands, without a library.
 */
#ifndef CLI_TERM_H
#define CLI_TERM_H

#include <stddef.h>

/* Keys one at a time without echo (ISIG stays: ^C and ^Z still signal),
 * the alternate screen, the cursor hidden.  keys: stdin is a terminal, to
 * read keys from.  0, or -1 when stdout is not a terminal. */
int cli_term_enter(int keys);
/* Back as it was: the screen, the cursor, the termios settings.  Safe to
 * call twice, and from a signal handler (write and tcsetattr only). */
void cli_term_leave(void);
/* The size of the terminal, at least 10 x 40 (80 x 24 if unknown). */
void cli_term_size(int *rows, int *cols);

/* The escapes top draws with. */
#define CLI_T_HOME "\033[H"
#define CLI_T_EOL "\033[K"        /* clear to the end of the line */
#define CLI_T_EOS "\033[J"        /* clear to the end of the screen */
#define CLI_T_REV "\033[7m"       /* reverse video */
#define CLI_T_BOLD "\033[1m"
#define CLI_T_OFF "\033[m"

/* Columns that s[0..n) takes: one per UTF-8 character (a lead byte or an
 * ASCII one), none for continuation bytes and escapes. */
size_t cli_term_width(const char *s, size_t n);
/* The length in bytes of the longest start of s[0..n) that fits in cols
 * columns (escape sequences kept whole, taking none). */
size_t cli_term_fit(const char *s, size_t n, size_t cols);

#endif
