/* SPDX-License-Identifier: BSD-3-Clause */
/* term.c - the terminal top draws on (term.h). */
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "term.h"

static struct termios saved;
static volatile int entered;      /* the screen is ours */
static volatile int keys_raw;     /* and termios is changed */

/* Leaves by write(2) only: callable from a signal handler. */
static void put(const char *s)
{
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(STDOUT_FILENO, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

int cli_term_enter(int keys)
{
    if (!isatty(STDOUT_FILENO))
        return -1;
    if (keys && tcgetattr(STDIN_FILENO, &saved) == 0) {
        struct termios t = saved;
        t.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
        t.c_cc[VMIN] = 1;
        t.c_cc[VTIME] = 0;
        if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &t) == 0)
            keys_raw = 1;
    }
    /* The alternate screen (as top, less and vi use it): the shell's
     * screen comes back whole on the way out. */
    put("\033[?1049h\033[?25l" CLI_T_HOME "\033[2J");
    entered = 1;
    return 0;
}

void cli_term_leave(void)
{
    if (entered) {
        entered = 0;
        put(CLI_T_OFF "\033[?25h\033[?1049l");
    }
    if (keys_raw) {
        keys_raw = 0;
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
    }
}

void cli_term_size(int *rows, int *cols)
{
    struct winsize ws;
    *rows = 24;
    *cols = 80;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
        *rows = ws.ws_row;
        *cols = ws.ws_col;
    }
    if (*rows < 10)
        *rows = 10;
    if (*cols < 40)
        *cols = 40;
}

/* The length of the escape sequence at s (CSI ... final byte), or 0. */
static size_t escape_len(const char *s, size_t n)
{
    if (n < 2 || s[0] != '\033' || s[1] != '[')
        return 0;
    size_t i = 2;
    while (i < n && !((unsigned char)s[i] >= 0x40 && (unsigned char)s[i] <= 0x7e))
        i++;
    return i < n ? i + 1 : n;
}

size_t cli_term_width(const char *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        size_t e = escape_len(s + i, n - i);
        if (e) {
            i += e;
            continue;
        }
        w += ((unsigned char)s[i] & 0xc0) != 0x80;
        i++;
    }
    return w;
}

size_t cli_term_fit(const char *s, size_t n, size_t cols)
{
    size_t w = 0, i = 0;
    while (i < n) {
        size_t e = escape_len(s + i, n - i);
        if (e) {
            i += e;
            continue;
        }
        if (((unsigned char)s[i] & 0xc0) != 0x80) {
            if (w == cols)
                break;
            w++;
        }
        i++;
    }
    return i;
}
