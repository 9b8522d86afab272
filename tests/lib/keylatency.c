/* keylatency.c: keystroke-to-screen latency of the chat, end to end.
 *
 * Starts elmchat in a pseudo-terminal of a fixed size (private XDG folders,
 * TERM=xterm-256color), types printable characters at random intervals,
 * first with the model idle, then while a long reply decodes flat out
 * (ELM_WORKER_TEST_TOKEN_INTERVAL_MS=0), and times each one from write() to the
 * read() whose bytes make it visible.  "Visible" is decided on a screen
 * model: the output is run through a small terminal emulator (the subset
 * of xterm that ncurses uses with that TERM; any other sequence is counted
 * as unknown), and a keystroke has arrived when the input row reads
 * exactly "> " followed by every character typed on that line so far.
 * Streamed tokens live on other rows, so they can never pass for an echo,
 * and a lost or reordered character never matches.
 *
 * The child's environment has no OMP_*, GOMP_* or BLIS_* settings: the
 * program must keep its compute threads civil by itself.
 *
 * Prints the percentiles of each phase, the decode speed seen on the
 * status bar, the chat's own read-to-refresh times (ELMCHAT_LATENCY_LOG of
 * elmchat-testing; the shipped elmchat writes none),
 * then quits with Ctrl-D and checks the exit status and the terminal modes.
 * Exit status: 0 all functional checks passed, 1 a check failed, 2 usage. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <locale.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

/* ------------------------------------------------------------- utilities */

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "keylatency: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

static uint64_t rng_state = 1;

static uint64_t rng_next(void)
{
    /* xorshift64*: reproducible keys and gaps for a given --seed */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

static double rng_uniform(double a, double b)
{
    return a + (b - a) * (double)(rng_next() >> 11) * (1.0 / 9007199254740992.0);
}

/* ------------------------------------------------------ terminal emulator */

#define WIDE_CONT 0xFFFFFFFFu /* right half of a double-width character */
#define MAX_PARAMS 16

enum { ST_GROUND, ST_ESC, ST_ESC_CHARSET, ST_ESC_SKIP, ST_CSI, ST_STRING, ST_STRING_ESC };

struct term {
    int rows, cols;
    uint32_t *cell; /* rows x cols code points */
    int y, x;
    bool wrap_pending; /* xenl: wrote the last column, the next character wraps */
    int top, bot;      /* scroll region, inclusive */
    bool insert, autowrap;
    bool alt, cursor_visible, app_keypad, app_cursor;
    bool graphics[2]; /* G0, G1 hold the DEC line-drawing set */
    int gl;           /* 0: G0 shifted in, 1: G1 (SO) */
    int sy, sx;       /* ESC 7 */
    uint32_t last;    /* for REP */
    /* parser */
    int state;
    int charset_slot;
    int params[MAX_PARAMS];
    int np;
    bool have_param;
    char priv, inter;
    uint32_t u_cp;
    int u_need;
    long unknown;
    char unknown_what[4][32];
};

static void term_init(struct term *t, int rows, int cols)
{
    memset(t, 0, sizeof *t);
    t->rows = rows;
    t->cols = cols;
    t->cell = malloc((size_t)rows * (size_t)cols * sizeof *t->cell);
    if (!t->cell)
        die("out of memory");
    for (int i = 0; i < rows * cols; i++)
        t->cell[i] = ' ';
    t->bot = rows - 1;
    t->autowrap = true;
    t->cursor_visible = true;
}

static uint32_t *row_at(struct term *t, int y)
{
    return t->cell + (size_t)y * (size_t)t->cols;
}

static void clear_cells(struct term *t, int y, int x0, int x1) /* [x0, x1) */
{
    uint32_t *r = row_at(t, y);
    for (int x = x0; x < x1; x++)
        r[x] = ' ';
}

static void scroll_up(struct term *t, int top, int bot, int n)
{
    if (n <= 0 || top > bot)
        return;
    if (n > bot - top + 1)
        n = bot - top + 1;
    size_t w = (size_t)t->cols;
    memmove(row_at(t, top), row_at(t, top + n), (size_t)(bot - top + 1 - n) * w * sizeof *t->cell);
    for (int y = bot - n + 1; y <= bot; y++)
        clear_cells(t, y, 0, t->cols);
}

static void scroll_down(struct term *t, int top, int bot, int n)
{
    if (n <= 0 || top > bot)
        return;
    if (n > bot - top + 1)
        n = bot - top + 1;
    size_t w = (size_t)t->cols;
    memmove(row_at(t, top + n), row_at(t, top), (size_t)(bot - top + 1 - n) * w * sizeof *t->cell);
    for (int y = top; y < top + n; y++)
        clear_cells(t, y, 0, t->cols);
}

__attribute__((format(printf, 2, 3))) static void unknown(struct term *t, const char *fmt, ...)
{
    if (t->unknown < 4) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(t->unknown_what[t->unknown], sizeof t->unknown_what[0], fmt, ap);
        va_end(ap);
    }
    t->unknown++;
}

static void line_feed(struct term *t)
{
    t->wrap_pending = false;
    if (t->y == t->bot)
        scroll_up(t, t->top, t->bot, 1);
    else if (t->y < t->rows - 1)
        t->y++;
}

static void reverse_index(struct term *t)
{
    t->wrap_pending = false;
    if (t->y == t->top)
        scroll_down(t, t->top, t->bot, 1);
    else if (t->y > 0)
        t->y--;
}

/* Writing over one half of a wide character blanks the other half. */
static void split_wide(struct term *t, int x)
{
    uint32_t *r = row_at(t, t->y);
    if (x < 0 || x >= t->cols)
        return;
    if (r[x] == WIDE_CONT && x > 0)
        r[x - 1] = ' ';
    if (x + 1 < t->cols && r[x + 1] == WIDE_CONT)
        r[x + 1] = ' ';
}

static uint32_t dec_graphic(uint32_t c)
{
    static const uint32_t map[] = {
        0x25C6, 0x2592, 0x2409, 0x240C, 0x240D, 0x240A, 0x00B0, 0x00B1, /* ` a b c d e f g */
        0x2424, 0x240B, 0x2518, 0x2510, 0x250C, 0x2514, 0x253C, 0x23BA, /* h i j k l m n o */
        0x23BB, 0x2500, 0x23BC, 0x23BD, 0x251C, 0x2524, 0x2534, 0x252C, /* p q r s t u v w */
        0x2502, 0x2264, 0x2265, 0x03C0, 0x2260, 0x00A3, 0x00B7,         /* x y z { | } ~ */
    };
    return c >= 0x60 && c <= 0x7E ? map[c - 0x60] : c;
}

static void put_char(struct term *t, uint32_t cp)
{
    if (t->graphics[t->gl])
        cp = dec_graphic(cp);
    int w = wcwidth((wchar_t)cp);
    if (w == 0)
        return; /* combining: stays with the previous cell */
    if (w < 0)
        w = 1;
    if (t->wrap_pending && t->autowrap) {
        t->x = 0;
        line_feed(t);
    }
    t->wrap_pending = false;
    if (w == 2 && t->x == t->cols - 1) {
        if (!t->autowrap)
            return;
        row_at(t, t->y)[t->x] = ' ';
        t->x = 0;
        line_feed(t);
    }
    uint32_t *r = row_at(t, t->y);
    if (t->insert) {
        int keep = t->cols - t->x - w;
        if (keep > 0)
            memmove(r + t->x + w, r + t->x, (size_t)keep * sizeof *r);
    }
    split_wide(t, t->x);
    if (w == 2)
        split_wide(t, t->x + 1);
    r[t->x] = cp;
    if (w == 2)
        r[t->x + 1] = WIDE_CONT;
    t->last = cp;
    t->x += w;
    if (t->x >= t->cols) {
        t->x = t->cols - 1;
        t->wrap_pending = t->autowrap;
    }
}

static int param(const struct term *t, int i, int def)
{
    return i < t->np && t->params[i] > 0 ? t->params[i] : def;
}

static int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static void set_mode(struct term *t, bool on)
{
    for (int i = 0; i < (t->np ? t->np : 1); i++) {
        int p = t->np ? t->params[i] : 0;
        if (t->priv == '?') {
            switch (p) {
            case 1049:
                if (on) {
                    t->sy = t->y, t->sx = t->x;
                    for (int y = 0; y < t->rows; y++)
                        clear_cells(t, y, 0, t->cols);
                } else {
                    t->y = t->sy, t->x = t->sx;
                }
                t->alt = on;
                break;
            case 47:
            case 1047:
                t->alt = on;
                break;
            case 25:
                t->cursor_visible = on;
                break;
            case 1:
                t->app_cursor = on;
                break;
            case 7:
                t->autowrap = on;
                break;
            case 1048:
                if (on)
                    t->sy = t->y, t->sx = t->x;
                else
                    t->y = t->sy, t->x = t->sx;
                break;
            case 3:  /* 132 columns: clears the screen */
            case 6:  /* origin mode: moves are relative to the margins */
            case 69: /* left and right margins */
                unknown(t, "CSI ?%d%c", p, on ? 'h' : 'l');
                break;
            default: /* cursor blink, meta key, mouse, paste, focus...: no
                        effect on what the cells show */
                break;
            }
        } else if (t->priv == 0 && p == 4) {
            t->insert = on;
        } else if (t->priv == 0 && p == 20) {
            /* LNM: ncurses never sets it */
        } else {
            unknown(t, "CSI %c%d%c", t->priv ? t->priv : ' ', p, on ? 'h' : 'l');
        }
    }
}

static void soft_reset(struct term *t)
{
    t->insert = false;
    t->autowrap = true;
    t->top = 0;
    t->bot = t->rows - 1;
    t->cursor_visible = true;
    t->app_cursor = false;
    t->graphics[0] = t->graphics[1] = false;
    t->gl = 0;
    t->sy = t->sx = 0;
}

static void csi_dispatch(struct term *t, unsigned char f)
{
    int n = param(t, 0, 1);
    bool plain = t->priv == 0 && t->inter == 0;
    if (f != 'b')
        t->wrap_pending = false;
    if (!plain && !(f == 'h' || f == 'l') && !(f == 'p' && t->inter == '!') &&
        !(f == 'q' && t->inter == ' ') && !(f == 'm' && t->priv == '>') && f != 'c' && f != 'n') {
        unknown(t, "CSI %c..%c%c", t->priv ? t->priv : ' ', t->inter ? t->inter : ' ', f);
        return;
    }
    int *y = &t->y, *x = &t->x;
    switch (f) {
    case 'A':
        *y = clampi(*y - n, *y >= t->top ? t->top : 0, t->rows - 1);
        break;
    case 'B':
        *y = clampi(*y + n, 0, *y <= t->bot ? t->bot : t->rows - 1);
        break;
    case 'C':
        *x = clampi(*x + n, 0, t->cols - 1);
        break;
    case 'D':
        *x = clampi(*x - n, 0, t->cols - 1);
        break;
    case 'E':
        *y = clampi(*y + n, 0, t->rows - 1), *x = 0;
        break;
    case 'F':
        *y = clampi(*y - n, 0, t->rows - 1), *x = 0;
        break;
    case 'G':
    case '`':
        *x = clampi(n - 1, 0, t->cols - 1);
        break;
    case 'd':
        *y = clampi(n - 1, 0, t->rows - 1);
        break;
    case 'H':
    case 'f':
        *y = clampi(param(t, 0, 1) - 1, 0, t->rows - 1);
        *x = clampi(param(t, 1, 1) - 1, 0, t->cols - 1);
        break;
    case 'J': {
        int m = t->np ? t->params[0] : 0;
        if (m == 0) {
            clear_cells(t, *y, *x, t->cols);
            for (int r = *y + 1; r < t->rows; r++)
                clear_cells(t, r, 0, t->cols);
        } else if (m == 1) {
            for (int r = 0; r < *y; r++)
                clear_cells(t, r, 0, t->cols);
            clear_cells(t, *y, 0, *x + 1);
        } else {
            for (int r = 0; r < t->rows; r++)
                clear_cells(t, r, 0, t->cols);
        }
        break;
    }
    case 'K': {
        int m = t->np ? t->params[0] : 0;
        split_wide(t, *x);
        if (m == 0)
            clear_cells(t, *y, *x, t->cols);
        else if (m == 1)
            clear_cells(t, *y, 0, *x + 1);
        else
            clear_cells(t, *y, 0, t->cols);
        break;
    }
    case 'X':
        split_wide(t, *x);
        split_wide(t, clampi(*x + n - 1, 0, t->cols - 1));
        clear_cells(t, *y, *x, clampi(*x + n, 0, t->cols));
        break;
    case '@': {
        uint32_t *r = row_at(t, *y);
        int k = clampi(n, 0, t->cols - *x);
        memmove(r + *x + k, r + *x, (size_t)(t->cols - *x - k) * sizeof *r);
        clear_cells(t, *y, *x, *x + k);
        break;
    }
    case 'P': {
        uint32_t *r = row_at(t, *y);
        int k = clampi(n, 0, t->cols - *x);
        memmove(r + *x, r + *x + k, (size_t)(t->cols - *x - k) * sizeof *r);
        clear_cells(t, *y, t->cols - k, t->cols);
        break;
    }
    case 'L':
        if (*y >= t->top && *y <= t->bot)
            scroll_down(t, *y, t->bot, n), *x = 0;
        break;
    case 'M':
        if (*y >= t->top && *y <= t->bot)
            scroll_up(t, *y, t->bot, n), *x = 0;
        break;
    case 'S':
        scroll_up(t, t->top, t->bot, n);
        break;
    case 'T':
        if (t->np <= 1)
            scroll_down(t, t->top, t->bot, n);
        break;
    case 'r': {
        int top = param(t, 0, 1) - 1, bot = param(t, 1, t->rows) - 1;
        if (top < bot && bot < t->rows) {
            t->top = top;
            t->bot = bot;
        }
        *y = 0, *x = 0;
        break;
    }
    case 'b':
        for (int i = 0; i < n && t->last; i++)
            put_char(t, t->last);
        break;
    case 'h':
    case 'l':
        set_mode(t, f == 'h');
        break;
    case 's':
        t->sy = *y, t->sx = *x;
        break;
    case 'u':
        *y = t->sy, *x = t->sx;
        break;
    case 'p': /* CSI ! p: soft reset */
        soft_reset(t);
        break;
    case 'm': /* attributes do not change what a cell shows */
    case 't': /* window manipulation (title stack) */
    case 'g': /* tab stops */
    case 'q': /* cursor style */
    case 'c': /* device attributes */
    case 'n': /* status report */
        break;
    default:
        unknown(t, "CSI %c", f);
    }
}

static void esc_dispatch(struct term *t, unsigned char c)
{
    t->state = ST_GROUND;
    switch (c) {
    case '[':
        t->state = ST_CSI;
        t->np = 0;
        t->have_param = false;
        t->priv = t->inter = 0;
        memset(t->params, 0, sizeof t->params);
        break;
    case ']':
    case 'P':
    case '_':
    case '^':
    case 'X':
        t->state = ST_STRING;
        break;
    case '(':
    case ')':
        t->charset_slot = c == '(' ? 0 : 1;
        t->state = ST_ESC_CHARSET;
        break;
    case '*':
    case '+':
    case '#':
    case ' ':
    case '%':
        t->state = ST_ESC_SKIP;
        break;
    case '7':
        t->sy = t->y, t->sx = t->x;
        break;
    case '8':
        t->y = t->sy, t->x = t->sx, t->wrap_pending = false;
        break;
    case 'D':
        line_feed(t);
        break;
    case 'E':
        t->x = 0;
        line_feed(t);
        break;
    case 'M':
        reverse_index(t);
        break;
    case 'c':
        soft_reset(t);
        t->alt = false;
        t->app_keypad = false;
        for (int y = 0; y < t->rows; y++)
            clear_cells(t, y, 0, t->cols);
        t->y = t->x = 0;
        break;
    case '=':
        t->app_keypad = true;
        break;
    case '>':
        t->app_keypad = false;
        break;
    case 'H':  /* tab set */
    case '\\': /* string terminator */
        break;
    default:
        unknown(t, "ESC %c", c);
    }
}

static void control(struct term *t, unsigned char c)
{
    switch (c) {
    case '\a':
        break;
    case '\b':
        t->wrap_pending = false;
        if (t->x > 0)
            t->x--;
        break;
    case '\t':
        t->wrap_pending = false;
        t->x = clampi((t->x / 8 + 1) * 8, 0, t->cols - 1);
        break;
    case '\n':
    case '\v':
    case '\f':
        line_feed(t);
        break;
    case '\r':
        t->wrap_pending = false;
        t->x = 0;
        break;
    case 0x0E:
        t->gl = 1;
        break;
    case 0x0F:
        t->gl = 0;
        break;
    default:
        break;
    }
}

static void term_feed(struct term *t, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = b[i];
        switch (t->state) {
        case ST_GROUND:
            if (t->u_need > 0) {
                if ((c & 0xC0) == 0x80) {
                    t->u_cp = (t->u_cp << 6) | (c & 0x3F);
                    if (--t->u_need == 0)
                        put_char(t, t->u_cp);
                    continue;
                }
                t->u_need = 0;
                put_char(t, 0xFFFD);
            }
            if (c == 0x1B)
                t->state = ST_ESC;
            else if (c < 0x20 || c == 0x7F)
                control(t, c);
            else if (c < 0x80)
                put_char(t, c);
            else if ((c & 0xE0) == 0xC0)
                t->u_cp = c & 0x1F, t->u_need = 1;
            else if ((c & 0xF0) == 0xE0)
                t->u_cp = c & 0x0F, t->u_need = 2;
            else if ((c & 0xF8) == 0xF0)
                t->u_cp = c & 0x07, t->u_need = 3;
            else
                put_char(t, 0xFFFD);
            break;
        case ST_ESC:
            esc_dispatch(t, c);
            break;
        case ST_ESC_CHARSET:
            t->graphics[t->charset_slot] = c == '0';
            t->state = ST_GROUND;
            break;
        case ST_ESC_SKIP:
            t->state = ST_GROUND;
            break;
        case ST_CSI:
            if (c >= '0' && c <= '9') {
                if (t->np == 0)
                    t->np = 1;
                int *p = &t->params[t->np - 1];
                if (*p < 100000)
                    *p = *p * 10 + (c - '0');
            } else if (c == ';' || c == ':') {
                if (t->np == 0)
                    t->np = 1;
                if (t->np < MAX_PARAMS)
                    t->params[t->np++] = 0;
            } else if (c >= '<' && c <= '?') {
                t->priv = (char)c;
            } else if (c >= 0x20 && c <= 0x2F) {
                t->inter = (char)c;
            } else if (c >= 0x40 && c <= 0x7E) {
                t->state = ST_GROUND;
                csi_dispatch(t, c);
            } else if (c == 0x1B) {
                t->state = ST_ESC;
            } else if (c < 0x20) {
                control(t, c);
            } else {
                t->state = ST_GROUND;
                unknown(t, "CSI byte 0x%02x", c);
            }
            break;
        case ST_STRING:
            if (c == 0x07)
                t->state = ST_GROUND;
            else if (c == 0x1B)
                t->state = ST_STRING_ESC;
            break;
        case ST_STRING_ESC:
            t->state = c == '\\' ? ST_GROUND : ST_STRING;
            break;
        }
    }
}

/* Row y as UTF-8 without trailing blanks. */
static void row_text(struct term *t, int y, char *out, size_t size)
{
    const uint32_t *r = row_at(t, y);
    int end = t->cols;
    while (end > 0 && r[end - 1] == ' ')
        end--;
    size_t o = 0;
    for (int x = 0; x < end && o + 5 < size; x++) {
        uint32_t c = r[x];
        if (c == WIDE_CONT)
            continue;
        if (c < 0x80) {
            out[o++] = (char)c;
        } else if (c < 0x800) {
            out[o++] = (char)(0xC0 | (c >> 6));
            out[o++] = (char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            out[o++] = (char)(0xE0 | (c >> 12));
            out[o++] = (char)(0x80 | ((c >> 6) & 0x3F));
            out[o++] = (char)(0x80 | (c & 0x3F));
        } else {
            out[o++] = (char)(0xF0 | (c >> 18));
            out[o++] = (char)(0x80 | ((c >> 12) & 0x3F));
            out[o++] = (char)(0x80 | ((c >> 6) & 0x3F));
            out[o++] = (char)(0x80 | (c & 0x3F));
        }
    }
    out[o] = '\0';
}

static void term_dump(struct term *t)
{
    char buf[4096];
    for (int y = 0; y < t->rows; y++) {
        row_text(t, y, buf, sizeof buf);
        printf("%2d|%s\n", y, buf);
    }
    printf("cursor %d,%d\n", t->y, t->x);
}

/* ---------------------------------------------------------------- options */

struct options {
    const char *elmchat, *model;
    int threads, keys, idle_keys, line_len, cols, rows;
    double gap_min, gap_max, hang_ms, timeout;
    long max_tokens, ctx;
    const char *prompt;
    bool keep, verbose, dump;
    char **extra;
    int n_extra;
};

static void usage(FILE *f)
{
    fprintf(f, "Usage: keylatency [OPTION]... [-- ELMCHAT-OPTION...]\n"
               "Keystroke-to-screen latency of elmchat's chat, idle and while decoding.\n\n"
               "  --elmchat PATH     the program (default ./elmchat)\n"
               "  -m, --model MODEL  model (default: elmchat's own default, $ELMCHAT_MODEL in make check)\n"
               "  --threads N        compute threads (default 2)\n"
               "  --keys N           keystrokes while decoding (default 100)\n"
               "  --idle-keys N      keystrokes with the model idle (default: --keys)\n"
               "  --gap MIN:MAX      random pause before each keystroke, ms (default 20:120)\n"
               "  --line N           characters per input line, then Ctrl-U (default 40)\n"
               "  --size COLSxROWS   terminal size (default 100x30)\n"
               "  --max-tokens N     reply length limit (default 100000)\n"
               "  --ctx N            context length (default: the model's)\n"
               "  --prompt TEXT      the message that starts the reply\n"
               "  --hang-ms MS       slower keystrokes count as hung (default 2000)\n"
               "  --timeout SECS     give up after this long in all (default 300)\n"
               "  --seed N           keys and pauses (default 1)\n"
               "  --keep             keep the temporary folder (XDG dirs, stderr, latency log)\n"
               "  -v, --verbose      one line per keystroke\n"
               "  --dump             print the emulated screen when the typing ends\n"
               "The child gets no OMP_*, GOMP_* or BLIS_* variables and\n"
               "ELM_WORKER_TEST_TOKEN_INTERVAL_MS=0.  Exit status 0 when every keystroke\n"
               "arrived in order, generation went on, and elmchat quit cleanly.\n");
}

static double parse_num(const char *s, const char *what, double lo, double hi)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        die("bad %s '%s'", what, s);
    return v;
}

static void parse_options(int argc, char **argv, struct options *o)
{
    static const struct option longopts[] = {
        {"elmchat", 1, NULL, 'E'}, {"model", 1, NULL, 'm'},     {"threads", 1, NULL, 'T'},
        {"keys", 1, NULL, 'k'},    {"idle-keys", 1, NULL, 'i'}, {"gap", 1, NULL, 'g'},
        {"line", 1, NULL, 'l'},    {"size", 1, NULL, 's'},      {"max-tokens", 1, NULL, 'n'},
        {"ctx", 1, NULL, 'c'},     {"prompt", 1, NULL, 'p'},    {"hang-ms", 1, NULL, 'H'},
        {"timeout", 1, NULL, 't'}, {"seed", 1, NULL, 'S'},      {"keep", 0, NULL, 'K'},
        {"verbose", 0, NULL, 'v'}, {"help", 0, NULL, 'h'},      {"dump", 0, NULL, 'D'},
        {NULL, 0, NULL, 0},
    };
    *o = (struct options){.elmchat = "./elmchat",
                          .threads = 2,
                          .keys = 100,
                          .idle_keys = -1,
                          .line_len = 40,
                          .cols = 100,
                          .rows = 30,
                          .gap_min = 20,
                          .gap_max = 120,
                          .hang_ms = 2000,
                          .timeout = 300,
                          .max_tokens = 100000,
                          .prompt = "Tell me a very long story about the sea."};
    int ch;
    while ((ch = getopt_long(argc, argv, "m:vh", longopts, NULL)) != -1) {
        switch (ch) {
        case 'E':
            o->elmchat = optarg;
            break;
        case 'm':
            o->model = optarg;
            break;
        case 'T':
            o->threads = (int)parse_num(optarg, "--threads", 1, 1024);
            break;
        case 'k':
            o->keys = (int)parse_num(optarg, "--keys", 0, 100000);
            break;
        case 'i':
            o->idle_keys = (int)parse_num(optarg, "--idle-keys", 0, 100000);
            break;
        case 'g': {
            char *colon = strchr(optarg, ':');
            if (!colon)
                die("--gap wants MIN:MAX");
            *colon = '\0';
            o->gap_min = parse_num(optarg, "--gap", 0, 60000);
            o->gap_max = parse_num(colon + 1, "--gap", o->gap_min, 60000);
            break;
        }
        case 'l':
            o->line_len = (int)parse_num(optarg, "--line", 1, 10000);
            break;
        case 's':
            if (sscanf(optarg, "%dx%d", &o->cols, &o->rows) != 2 || o->cols < 20 || o->rows < 5 ||
                o->cols > 1000 || o->rows > 1000)
                die("bad --size '%s' (COLSxROWS, at least 20x5)", optarg);
            break;
        case 'n':
            o->max_tokens = (long)parse_num(optarg, "--max-tokens", 1, 1 << 20);
            break;
        case 'c':
            o->ctx = (long)parse_num(optarg, "--ctx", 1, 1 << 20);
            break;
        case 'p':
            o->prompt = optarg;
            break;
        case 'H':
            o->hang_ms = parse_num(optarg, "--hang-ms", 1, 600000);
            break;
        case 't':
            o->timeout = parse_num(optarg, "--timeout", 1, 86400);
            break;
        case 'S':
            rng_state = (uint64_t)parse_num(optarg, "--seed", 0, 1e15) * 2654435761u + 1;
            break;
        case 'K':
            o->keep = true;
            break;
        case 'v':
            o->verbose = true;
            break;
        case 'D':
            o->dump = true;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            exit(2);
        }
    }
    o->extra = argv + optind;
    o->n_extra = argc - optind;
    if (o->idle_keys < 0)
        o->idle_keys = o->keys;
    /* the line must stay on one row: "> " + text + the cursor */
    if (o->line_len > o->cols - 3)
        o->line_len = o->cols - 3;
    for (const char *p = o->prompt; *p; p++)
        if ((unsigned char)*p < 0x20)
            die("--prompt: no control characters");
}

/* ------------------------------------------------------------ the session */

struct sample {
    double t_write, t_echo;
    bool gen_before, gen_after; /* the status bar said "generating" */
};

struct run {
    const struct options *o;
    struct term term;
    int master;
    pid_t pid;
    bool eof;
    char dir[256];
    double t_start;
    /* status bar: the last seen state */
    bool generating, idle;
    long gen_count; /* K of "generating K" */
    double gen_seen_at;
    bool counting; /* add token increments to the totals below */
    long tok_total;
    double tok_time;
    double engine_tg;
    /* the keystroke in flight */
    bool pending;
    char expect[1100];
    double t_write, t_echo;
    /* results */
    struct sample *samples;
    int n_samples, cap_samples;
    int lost, hung, restarts;
    int max_threads;           /* seen in /proc while decoding */
    int ui_nice, compute_nice; /* the main thread's; the lowest of the others */
    bool failed;
};

__attribute__((format(printf, 2, 3))) static void fail(struct run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL: ");
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
    r->failed = true;
}

static void write_all(struct run *r, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t k = write(r->master, s, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && errno == EAGAIN) {
            struct pollfd p = {.fd = r->master, .events = POLLOUT};
            poll(&p, 1, 100);
            continue;
        }
        if (k <= 0)
            return;
        s += k;
        n -= (size_t)k;
    }
}

static int status_row(const struct run *r)
{
    return r->term.rows - 2;
}

static int input_row(const struct run *r)
{
    return r->term.rows - 1;
}

/* What the screen says now: state, token count, and the keystroke.  The
 * status bar is read only between frames (the cursor is back on the input
 * row, which ncurses updates after the status bar): a frame split across
 * two reads can show a half-updated number. */
static void observe(struct run *r, double t)
{
    char buf[4096];
    if (r->term.state == ST_GROUND && r->term.y == input_row(r)) {
        row_text(&r->term, status_row(r), buf, sizeof buf);
        const char *g = strstr(buf, "generating ");
        bool gen = g && g[11] >= '0' && g[11] <= '9';
        r->idle = strstr(buf, " idle") != NULL;
        const char *tg = strstr(buf, "tg ");
        if (tg && strstr(tg, " t/s"))
            r->engine_tg = strtod(tg + 3, NULL);
        if (gen) {
            long k = strtol(g + 11, NULL, 10);
            if (r->generating && k >= r->gen_count && r->counting) {
                r->tok_total += k - r->gen_count;
                r->tok_time += t - r->gen_seen_at;
            }
            r->gen_count = k;
            r->gen_seen_at = t;
        }
        r->generating = gen;
    }
    if (r->pending) {
        row_text(&r->term, input_row(r), buf, sizeof buf);
        if (strcmp(buf, r->expect) == 0) {
            r->pending = false;
            r->t_echo = t;
        }
    }
}

/* Read what is there (waiting up to timeout_ms); false at EOF. */
static bool pump(struct run *r, double timeout_ms)
{
    if (r->eof)
        return false;
    struct pollfd p = {.fd = r->master, .events = POLLIN};
    if (timeout_ms < 0)
        timeout_ms = 0;
    /* poll, not ppoll (Linux and the BSDs only): whole milliseconds, up. */
    int k = poll(&p, 1, (int)ceil(timeout_ms));
    if (k <= 0)
        return true;
    unsigned char buf[65536];
    ssize_t n = read(r->master, buf, sizeof buf);
    double t = now_sec();
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return true;
    if (n <= 0) {
        r->eof = true; /* EIO: the child closed the terminal */
        return false;
    }
    term_feed(&r->term, buf, (size_t)n);
    observe(r, t);
    return true;
}

static void check_deadline(struct run *r)
{
    if (now_sec() - r->t_start > r->o->timeout) {
        fail(r, "gave up after %.0f s (--timeout)", r->o->timeout);
        if (r->pid > 0)
            kill(r->pid, SIGKILL);
        r->pid = -r->pid;
        r->eof = true;
    }
}

typedef bool pred_fn(struct run *r, const void *arg);

/* Pump until pred holds; false on timeout or EOF. */
static bool wait_for(struct run *r, pred_fn *pred, const void *arg, double secs)
{
    double until = now_sec() + secs;
    while (!pred(r, arg)) {
        double left = until - now_sec();
        if (left <= 0 || r->eof)
            return false;
        pump(r, left * 1e3 < 50 ? left * 1e3 : 50);
        check_deadline(r);
    }
    return true;
}

static bool p_idle_and_empty(struct run *r, const void *arg)
{
    (void)arg;
    char buf[4096];
    row_text(&r->term, input_row(r), buf, sizeof buf);
    return r->idle && strcmp(buf, ">") == 0;
}

static bool p_input_is(struct run *r, const void *arg)
{
    char buf[4096];
    row_text(&r->term, input_row(r), buf, sizeof buf);
    return strcmp(buf, arg) == 0;
}

static bool p_generating(struct run *r, const void *arg)
{
    return r->generating && r->gen_count >= *(const long *)arg;
}

static bool p_idle(struct run *r, const void *arg)
{
    (void)arg;
    return r->idle;
}

static bool p_not_pending(struct run *r, const void *arg)
{
    (void)arg;
    return !r->pending;
}

/* Ctrl-U, then the row must read "> " again ("> " trims to ">"). */
static bool clear_line(struct run *r)
{
    write_all(r, "\025", 1);
    if (!wait_for(r, p_input_is, ">", 10)) {
        fail(r, "Ctrl-U did not empty the input line");
        return false;
    }
    return true;
}

static bool start_reply(struct run *r)
{
    write_all(r, r->o->prompt, strlen(r->o->prompt));
    write_all(r, "\r", 1);
    long want = 2; /* past the prefill */
    if (!wait_for(r, p_generating, &want, 120)) {
        fail(r, "no reply seen streaming (one that ends within a frame is missed: EOS at "
                "once, or --max-tokens too small?)");
        return false;
    }
    if (!wait_for(r, p_input_is, ">", 10)) {
        fail(r, "the input line was not emptied by sending");
        return false;
    }
    return true;
}

static void add_sample(struct run *r, bool before, bool after)
{
    if (r->n_samples == r->cap_samples) {
        r->cap_samples = r->cap_samples ? r->cap_samples * 2 : 256;
        r->samples = realloc(r->samples, (size_t)r->cap_samples * sizeof *r->samples);
        if (!r->samples)
            die("out of memory");
    }
    r->samples[r->n_samples++] = (struct sample){r->t_write, r->t_echo, before, after};
}

/* The nice of task tid of pid (field 19 of its stat), or -100. */
static int task_nice(pid_t pid, const char *tid)
{
    char path[320], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/task/%s/stat", (int)pid, tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -100;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the name may hold spaces */
    int field = 2, nice = -100;
    for (; p && *p; p++) {
        if (*p == ' ' && ++field == 19) {
            nice = atoi(p + 1);
            break;
        }
    }
    return nice;
}

/* elmchat's threads now: how many, the UI (main) thread's nice and the
 * lowest nice of the others. */
static void look_at_threads(struct run *r)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)r->pid);
    DIR *d = opendir(path);
    if (!d)
        return;
    int n = 0, other = 100;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        n++;
        int nice = task_nice(r->pid, e->d_name);
        if (atoi(e->d_name) == (int)r->pid)
            r->ui_nice = nice;
        else if (nice < other)
            other = nice;
    }
    closedir(d);
    if (n > r->max_threads)
        r->max_threads = n;
    if (other < 100 && other < r->compute_nice)
        r->compute_nice = other;
}

static const char key_chars[] = "abcdefghijklmnopqrstuvwxyz0123456789";

/* Type n keystrokes; while decoding, restart the reply whenever it ends.
 * Returns the index of the first sample of this phase. */
static int phase(struct run *r, int n, bool decoding, char *line, size_t *len)
{
    int first = r->n_samples;
    *len = 0;
    line[0] = '\0';
    for (int i = 0; i < n && !r->failed; i++) {
        if (*len == (size_t)r->o->line_len || (decoding && !r->generating)) {
            if (*len > 0 && !clear_line(r))
                return first;
            *len = 0;
            line[0] = '\0';
        }
        if (decoding && !r->generating) {
            r->restarts++;
            r->counting = false;
            if (!wait_for(r, p_idle, NULL, 30)) {
                fail(r, "the finished reply did not return to idle");
                return first;
            }
            if (!start_reply(r))
                return first;
            r->counting = true;
        }
        double gap = rng_uniform(r->o->gap_min, r->o->gap_max) * 1e-3;
        double at = now_sec() + gap;
        while (!r->eof && now_sec() < at)
            pump(r, (at - now_sec()) * 1e3);
        check_deadline(r);
        if (r->eof)
            break;
        char c = key_chars[rng_next() % (sizeof key_chars - 1)];
        line[(*len)++] = c;
        line[*len] = '\0';
        snprintf(r->expect, sizeof r->expect, "> %s", line);
        bool before = r->generating;
        r->pending = true;
        r->t_write = now_sec();
        write_all(r, &c, 1);
        bool in_time = wait_for(r, p_not_pending, NULL, r->o->hang_ms * 1e-3);
        if (!in_time && r->pending) {
            r->hung++;
            /* keep waiting a while: late is not lost */
            if (!wait_for(r, p_not_pending, NULL, 10)) {
                char got[4096];
                row_text(&r->term, input_row(r), got, sizeof got);
                r->lost++;
                fail(r, "keystroke %d ('%c') never showed: input row '%s', expected '%s'", i + 1, c,
                     got, r->expect);
                r->pending = false;
                return first;
            }
        }
        double ms = (r->t_echo - r->t_write) * 1e3;
        if (decoding)
            look_at_threads(r);
        add_sample(r, before, r->generating);
        if (r->o->verbose)
            printf("  %s key %3d '%c' %8.3f ms%s\n", decoding ? "decode" : "idle  ", i + 1, c, ms,
                   before && r->generating ? " (generating)" : "");
    }
    return first;
}

/* ---------------------------------------------------------------- results */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *v, int n, double q)
{
    if (n == 0)
        return NAN;
    int k = (int)ceil(q * n) - 1;
    return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

struct stats {
    int n;
    double p50, p90, p99, max;
};

static struct stats stats_of(double *v, int n)
{
    if (n > 0)
        qsort(v, (size_t)n, sizeof *v, cmp_double);
    return (struct stats){n, pct(v, n, 0.5), pct(v, n, 0.9), pct(v, n, 0.99), n ? v[n - 1] : NAN};
}

static void print_stats(const char *label, struct stats s, const char *tail)
{
    printf("%-16s n %4d  p50 %7.2f  p90 %7.2f  p99 %7.2f  max %7.2f ms%s\n", label, s.n, s.p50,
           s.p90, s.p99, s.max, tail);
}

/* The chat's ELMCHAT_LATENCY_LOG: per keystroke it read, when it read it
 * and when the refresh after it was written (CLOCK_MONOTONIC, as ours). */
struct ui_times {
    double read, done;
};

static struct ui_times *load_ui_log(struct run *r, int *n_out)
{
    char path[300];
    snprintf(path, sizeof path, "%s/latency.log", r->dir);
    FILE *f = fopen(path, "r");
    struct ui_times *v = NULL;
    int n = 0, cap = 0;
    char line[200];
    while (f && fgets(line, sizeof line, f)) {
        double ms, rd, dn;
        if (sscanf(line, "%lf %lf %lf", &ms, &rd, &dn) != 3)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            v = realloc(v, (size_t)cap * sizeof *v);
            if (!v)
                die("out of memory");
        }
        v[n++] = (struct ui_times){rd, dn};
    }
    if (f)
        fclose(f);
    *n_out = n;
    return v;
}

/* Where a keystroke's time went: wake (our write -> the chat's read), ui
 * (read -> refresh written), out (refresh -> our read).  NAN when the log
 * has no read inside [t_write, t_echo]. */
static void split_sample(const struct sample *s, const struct ui_times *log, int n, double *wake,
                         double *ui, double *out)
{
    *wake = *ui = *out = NAN;
    for (int i = 0; i < n; i++) {
        /* we may read the refresh before the chat takes its clock */
        if (log[i].read >= s->t_write && log[i].read <= s->t_echo) {
            *wake = (log[i].read - s->t_write) * 1e3;
            *ui = (log[i].done - log[i].read) * 1e3;
            *out = log[i].done < s->t_echo ? (s->t_echo - log[i].done) * 1e3 : 0;
            return;
        }
    }
}

static void report_phase(const char *label, struct run *r, int first, int end, bool decoding,
                         const struct ui_times *log, int n_log, const char *tail,
                         struct stats *total, int *other)
{
    int cap = end - first + 1;
    double *v = malloc((size_t)cap * 4 * sizeof *v);
    if (!v)
        die("out of memory");
    double *vw = v + cap, *vu = v + 2 * cap, *vo = v + 3 * cap;
    int n = 0, nw = 0;
    for (int i = first; i < end; i++) {
        const struct sample *s = &r->samples[i];
        bool gen = s->gen_before && s->gen_after, quiet = !s->gen_before && !s->gen_after;
        if (decoding ? !gen : !quiet) {
            (*other)++;
            continue;
        }
        v[n++] = (s->t_echo - s->t_write) * 1e3;
        double w, u, o;
        split_sample(s, log, n_log, &w, &u, &o);
        if (!isnan(w)) {
            vw[nw] = w, vu[nw] = u, vo[nw] = o;
            nw++;
        }
    }
    *total = stats_of(v, n);
    print_stats(label, *total, tail);
    char sub[64];
    snprintf(sub, sizeof sub, "  chat wakes");
    print_stats(sub, stats_of(vw, nw), "   (our write -> the chat's read)");
    snprintf(sub, sizeof sub, "  chat draws");
    print_stats(sub, stats_of(vu, nw), "   (its read -> its refresh written)");
    snprintf(sub, sizeof sub, "  we read");
    print_stats(sub, stats_of(vo, nw), "   (its refresh -> our read)");
    free(v);
}

/* ------------------------------------------------------------ the child */

static void mkdir_in(const char *dir, const char *name)
{
    char p[300];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (mkdir(p, 0700) != 0)
        die("mkdir %s: %s", p, strerror(errno));
}

static void start_child(struct run *r)
{
    const struct options *o = r->o;
    const char *tmp = getenv("TMPDIR");
    snprintf(r->dir, sizeof r->dir, "%s/keylatency-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(r->dir))
        die("mkdtemp: %s", strerror(errno));
    mkdir_in(r->dir, "config");
    mkdir_in(r->dir, "data");
    mkdir_in(r->dir, "state");
    mkdir_in(r->dir, "cache");
    char inputrc[300], errpath[300], logpath[300];
    snprintf(inputrc, sizeof inputrc, "%s/inputrc", r->dir);
    snprintf(errpath, sizeof errpath, "%s/stderr", r->dir);
    snprintf(logpath, sizeof logpath, "%s/latency.log", r->dir);
    FILE *f = fopen(inputrc, "w");
    if (f)
        fclose(f);

    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0)
        die("posix_openpt: %s", strerror(errno));
    char slave[128];
    if (ptsname_r(m, slave, sizeof slave) != 0)
        die("ptsname: %s", strerror(errno));
    struct winsize ws = {.ws_row = (unsigned short)o->rows, .ws_col = (unsigned short)o->cols};

    /* argv: elmchat [-m MODEL] --threads N -n MAX [--ctx N] [extra...] */
    char threads[16], maxtok[24], ctx[24];
    snprintf(threads, sizeof threads, "%d", o->threads);
    snprintf(maxtok, sizeof maxtok, "%ld", o->max_tokens);
    snprintf(ctx, sizeof ctx, "%ld", o->ctx);
    char **argv = calloc((size_t)o->n_extra + 12, sizeof *argv);
    if (!argv)
        die("out of memory");
    int a = 0;
    argv[a++] = (char *)o->elmchat;
    if (o->model) {
        argv[a++] = (char *)"-m";
        argv[a++] = (char *)o->model;
    }
    argv[a++] = (char *)"--threads";
    argv[a++] = threads;
    argv[a++] = (char *)"-n";
    argv[a++] = maxtok;
    if (o->ctx > 0) {
        argv[a++] = (char *)"--ctx";
        argv[a++] = ctx;
    }
    for (int i = 0; i < o->n_extra; i++)
        argv[a++] = o->extra[i];
    argv[a] = NULL;

    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        setsid();
        int s = open(slave, O_RDWR);
        if (s < 0)
            _exit(127);
        ioctl(s, TIOCSCTTY, 0);
        ioctl(s, TIOCSWINSZ, &ws);
        int e = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(s, 0);
        dup2(s, 1);
        if (e >= 0)
            dup2(e, 2);
        if (s > 2)
            close(s);
        if (e > 2)
            close(e);
        close(m);
        char sub[300];
        static const char *const xdg[][2] = {{"XDG_CONFIG_HOME", "config"},
                                             {"XDG_DATA_HOME", "data"},
                                             {"XDG_STATE_HOME", "state"},
                                             {"XDG_CACHE_HOME", "cache"}};
        for (size_t i = 0; i < sizeof xdg / sizeof xdg[0]; i++) {
            snprintf(sub, sizeof sub, "%s/%s", r->dir, xdg[i][1]);
            setenv(xdg[i][0], sub, 1);
        }
        setenv("HOME", r->dir, 1);
        setenv("INPUTRC", inputrc, 1);
        setenv("LANG", "C.UTF-8", 1);
        unsetenv("LC_ALL");
        unsetenv("LC_CTYPE");
        setenv("TERM", "xterm-256color", 1);
        unsetenv("COLUMNS");
        unsetenv("LINES");
        setenv("ELM_WORKER_TEST_TOKEN_INTERVAL_MS", "0", 1);
        setenv("ELMCHAT_LATENCY_LOG", logpath, 1);
        /* A user has none of these: the program must manage without. */
        static const char *const drop[] = {
            "OMP_NUM_THREADS", "OMP_WAIT_POLICY",  "GOMP_SPINCOUNT", "OMP_PROC_BIND",
            "OMP_DYNAMIC",     "BLIS_NUM_THREADS", "BLIS_ARCH_TYPE", "ELMCHAT_MEM_BUDGET"};
        for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
            unsetenv(drop[i]);
        execv(o->elmchat, argv);
        fprintf(stderr, "keylatency: exec %s: %s\n", o->elmchat, strerror(errno));
        _exit(127);
    }
    free(argv);
    r->pid = pid;
    r->master = m;
    fcntl(m, F_SETFL, fcntl(m, F_GETFL) | O_NONBLOCK);
    fcntl(m, F_SETFD, FD_CLOEXEC);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* elmchat's stderr (a sanitizer report, a warning): shown, and its size. */
static long dump_stderr(struct run *r)
{
    char path[300];
    snprintf(path, sizeof path, "%s/stderr", r->dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f) && n++ < 40)
        printf("stderr: %s%s", line, strchr(line, '\n') ? "" : "\n");
    long size = ftell(f);
    if (fseek(f, 0, SEEK_END) == 0)
        size = ftell(f);
    fclose(f);
    return size;
}

/* The child's exit: Ctrl-D on an empty line; EOF, then its status. */
static int quit_child(struct run *r, bool *tty_ok)
{
    write_all(r, "\004", 1);
    double until = now_sec() + 20;
    while (!r->eof && now_sec() < until)
        pump(r, 100);
    /* The pty's modes as elmchat left them (the master reports them). */
    struct termios tio;
    *tty_ok = false;
    if (tcgetattr(r->master, &tio) == 0)
        *tty_ok = (tio.c_lflag & ICANON) && (tio.c_lflag & ECHO) && (tio.c_lflag & ISIG);
    *tty_ok = *tty_ok && !r->term.alt && r->term.cursor_visible && !r->term.app_keypad;
    int status = 0;
    pid_t w = 0;
    while (now_sec() < until && (w = waitpid(r->pid, &status, WNOHANG)) == 0) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (w != r->pid) {
        kill(r->pid, SIGKILL);
        waitpid(r->pid, &status, 0);
        fail(r, "elmchat did not exit within 20 s of Ctrl-D");
        return -1;
    }
    if (WIFSIGNALED(status)) {
        fail(r, "elmchat was killed by signal %d", WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    return WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
    if (!setlocale(LC_CTYPE, "C.UTF-8"))
        setlocale(LC_CTYPE, "");
    signal(SIGPIPE, SIG_IGN);
    struct options o;
    parse_options(argc, argv, &o);
    if (access(o.elmchat, X_OK) != 0)
        die("no program at %s (--elmchat)", o.elmchat);

    struct run r = {.o = &o, .master = -1, .compute_nice = 100};
    term_init(&r.term, o.rows, o.cols);
    r.t_start = now_sec();
    start_child(&r);
    printf("keylatency: %s (pid %d), model %s, --threads %d, %dx%d, gaps %.0f..%.0f ms\n",
           o.elmchat, (int)r.pid, o.model ? o.model : "(bundled demo)", o.threads, o.cols, o.rows,
           o.gap_min, o.gap_max);
    fflush(stdout);

    char line[1100];
    size_t len = 0;
    int idle_first = 0, dec_first = 0, idle_end = 0;
    double t_dec0 = 0, t_dec1 = 0;
    bool final_ok = false, gen_continued = false;
    long tokens_before_stop = 0;

    if (!wait_for(&r, p_idle_and_empty, NULL, 120)) {
        fail(&r, "elmchat did not become idle with an empty input line");
    } else {
        /* Idle. */
        idle_first = phase(&r, o.idle_keys, false, line, &len);
        idle_end = r.n_samples;
        if (!r.failed && len > 0)
            clear_line(&r);
        /* Decoding. */
        if (!r.failed && o.keys > 0 && start_reply(&r)) {
            r.counting = true;
            t_dec0 = now_sec();
            dec_first = phase(&r, o.keys, true, line, &len);
            t_dec1 = now_sec();
            r.counting = false;
            /* The last line still reads exactly what was typed on it. */
            char want[1200];
            snprintf(want, sizeof want, "> %s", line);
            final_ok = !r.failed && wait_for(&r, p_input_is, want, 2);
            if (o.dump)
                term_dump(&r.term);
            tokens_before_stop = r.tok_total;
            gen_continued = r.tok_total > 0;
            if (!r.failed && len > 0)
                clear_line(&r);
            if (!r.failed && r.generating) {
                write_all(&r, "\003", 1); /* Ctrl-C stops the reply */
                if (!wait_for(&r, p_idle, NULL, 20))
                    fail(&r, "Ctrl-C did not stop the reply");
                /* the status bar gets the engine's tg once idle */
                wait_for(&r, p_idle_and_empty, NULL, 2);
            }
        } else {
            dec_first = r.n_samples;
            final_ok = o.keys == 0;
            gen_continued = o.keys == 0;
        }
    }

    bool tty_ok = false;
    int exit_status = -1;
    if (!r.eof) {
        if (!wait_for(&r, p_input_is, ">", 5))
            write_all(&r, "\025", 1);
        exit_status = quit_child(&r, &tty_ok);
    } else if (r.pid > 0) {
        int st;
        waitpid(r.pid, &st, 0);
        exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }

    /* Report. */
    int n_log, other = 0;
    struct ui_times *log = load_ui_log(&r, &n_log);
    double tps = r.tok_time > 0 ? (double)tokens_before_stop / r.tok_time : 0;
    char tail[200];
    snprintf(tail, sizeof tail, "   %.1f tok/s on the status bar (%ld tokens, %.1f s)", tps,
             tokens_before_stop, t_dec1 - t_dec0);
    struct stats s_idle, s_dec;
    report_phase("idle", &r, idle_first, idle_end, false, log, n_log, "", &s_idle, &other);
    report_phase("decoding", &r, dec_first, r.n_samples, true, log, n_log, tail, &s_dec, &other);
    free(log);
    double all_max = 0;
    for (int i = 0; i < r.n_samples; i++)
        if ((r.samples[i].t_echo - r.samples[i].t_write) * 1e3 > all_max)
            all_max = (r.samples[i].t_echo - r.samples[i].t_write) * 1e3;
    if (r.engine_tg > 0)
        printf("engine tg (last reply, status bar): %.1f t/s; replies restarted: %d\n", r.engine_tg,
               r.restarts);
    if (r.max_threads > 0)
        printf("threads of elmchat while decoding: at most %d; nice: UI %d, the others %d\n",
               r.max_threads, r.ui_nice, r.compute_nice);
    if (r.term.unknown) {
        printf("unknown escape sequences: %ld (", r.term.unknown);
        for (long i = 0; i < r.term.unknown && i < 4; i++)
            printf("%s%s", i ? ", " : "", r.term.unknown_what[i]);
        printf(")\n");
    }
    if (!final_ok && !r.failed)
        fail(&r, "the final input line does not read what was typed");
    if (o.keys > 0 && !gen_continued && !r.failed)
        fail(&r, "no token was generated while typing");
    if (o.keys > 0 && s_dec.n == 0 && !r.failed)
        fail(&r, "no keystroke was typed while the reply was generating");
    if (r.hung)
        fail(&r, "%d keystrokes took longer than %.0f ms (--hang-ms)", r.hung, o.hang_ms);
    if (exit_status != 0)
        fail(&r, "exit status %d", exit_status);
    if (!tty_ok)
        fail(&r, "the terminal was not restored (modes, alternate screen, cursor, keypad)");
    if (r.term.unknown)
        fail(&r, "the output had escape sequences this emulator does not know");
    long err_bytes = dump_stderr(&r);
    if (err_bytes > 0)
        fail(&r, "elmchat wrote %ld bytes to stderr", err_bytes);
    printf("summary idle_n=%d idle_p50=%.3f idle_p90=%.3f idle_p99=%.3f idle_max=%.3f "
           "decode_n=%d decode_p50=%.3f decode_p90=%.3f decode_p99=%.3f decode_max=%.3f "
           "max_ms=%.3f tok_s=%.1f tokens=%ld other=%d lost=%d hung=%d final_line=%d "
           "exit=%d tty=%d unknown=%ld restarts=%d threads=%d ui_nice=%d compute_nice=%d "
           "stderr_bytes=%ld\n",
           s_idle.n, s_idle.p50, s_idle.p90, s_idle.p99, s_idle.max, s_dec.n, s_dec.p50, s_dec.p90,
           s_dec.p99, s_dec.max, all_max, tps, tokens_before_stop, other, r.lost, r.hung, final_ok,
           exit_status, tty_ok, r.term.unknown, r.restarts, r.max_threads, r.ui_nice,
           r.compute_nice, err_bytes);
    if (o.keep || r.failed)
        printf("kept %s\n", r.dir);
    else
        nftw(r.dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(r.samples);
    free(r.term.cell);
    return r.failed || r.lost || r.hung ? 1 : 0;
}
