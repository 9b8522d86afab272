/* input.c: readline in callback mode inside a curses window (see input.h
 * and docs/STYLE.md B.10 for the design and its pitfalls). */
#include "config.h"

#include "ui/input.h"

#include <curses.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "src/store/store.h"
#include "src/base/xalloc.h"
#include "ui/sanitize.h"
#include "ui/screen.h"

#define PROMPT "> "
#define HISTORY_MAX 1000
#define HISTORY_ENTRY_MAX (64 * 1024) /* longer lines (big pastes) are not kept */

static WINDOW *win;
static struct input_hooks hooks;
static char *history_path;
static FILE *devnull;
static int tty_fd = -1;
static bool dirty = true;
static bool in_handler;
static char *deferred_text; /* input_set_text from inside the line handler */

/* The byte FIFO between the tty and rl_getc_function. */
static struct {
    char *buf;
    size_t head, len, cap;
} fifo;

static void fifo_push(const char *b, size_t n)
{
    if (fifo.head > 0 && fifo.head == fifo.len) {
        fifo.head = fifo.len = 0;
    }
    if (fifo.len + n > fifo.cap) {
        if (fifo.head > 0) {
            memmove(fifo.buf, fifo.buf + fifo.head, fifo.len - fifo.head);
            fifo.len -= fifo.head;
            fifo.head = 0;
        }
        if (fifo.len + n > fifo.cap) {
            size_t cap = fifo.cap ? fifo.cap : 256;
            while (cap < fifo.len + n)
                cap *= 2;
            fifo.buf = x_realloc(fifo.buf, cap);
            fifo.cap = cap;
        }
    }
    memcpy(fifo.buf + fifo.len, b, n);
    fifo.len += n;
}

static bool fifo_empty(void)
{
    return fifo.head >= fifo.len;
}

/* Wait (up to timeout_ms, -1 forever) for the tty and move what it has
 * into the FIFO.  false on timeout or hangup. */
static bool fill_from_tty(int timeout_ms)
{
    if (tty_fd < 0)
        return false;
    struct pollfd p = {.fd = tty_fd, .events = POLLIN};
    int r;
    do
        r = poll(&p, 1, timeout_ms);
    while (r < 0 && errno == EINTR);
    if (r <= 0 || !(p.revents & POLLIN))
        return false;
    char buf[4096];
    ssize_t n;
    do
        n = read(tty_fd, buf, sizeof buf);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return false;
    fifo_push(buf, (size_t)n);
    return true;
}

static int input_getc(FILE *f)
{
    (void)f;
    /* Empty only when readline reads ahead by itself inside one callback
     * (bracketed paste): then the rest of the sequence is on its way. */
    if (fifo_empty() && !fill_from_tty(2000)) {
        /* Never block forever: end the paste that is waiting for its end
         * marker (the only synchronous read readline does here). */
        fifo_push("\033[201~", 6);
    }
    return (unsigned char)fifo.buf[fifo.head++];
}

static int input_avail(void)
{
    if (!fifo_empty())
        return 1;
    /* readline asks with its keyseq timeout (microseconds) set */
    int us = rl_set_keyboard_input_timeout(0);
    rl_set_keyboard_input_timeout(us);
    int ms = us / 1000;
    if (ms > 100)
        ms = 100;
    if (tty_fd < 0)
        return 0;
    struct pollfd p = {.fd = tty_fd, .events = POLLIN};
    return poll(&p, 1, ms) > 0 && (p.revents & POLLIN);
}

static void input_redisplay(void)
{
    dirty = true;
}

static void line_handler(char *line)
{
    in_handler = true;
    if (hooks.on_line)
        hooks.on_line(line, hooks.user);
    else
        free(line);
    in_handler = false;
    dirty = true;
}

/* ------------------------------------------------------------ completion */

static char **arg_names;
static size_t arg_names_n;

static char *gen_command(const char *text, int state)
{
    static size_t st;
    if (!state)
        st = 0;
    const char *s = cmd_complete_command(text, &st);
    return s ? x_strdup(s) : NULL;
}

static char *gen_names(const char *text, int state)
{
    static size_t st;
    if (!state)
        st = 0;
    const char *s = cmd_complete_from((const char *const *)arg_names, arg_names_n, text, &st);
    return s ? x_strdup(s) : NULL;
}

static void free_names(void)
{
    if (arg_names) {
        for (size_t i = 0; i < arg_names_n; i++)
            free(arg_names[i]);
        free(arg_names);
    }
    arg_names = NULL;
    arg_names_n = 0;
}

static char **attempt_completion(const char *text, int start, int end)
{
    (void)start;
    rl_attempted_completion_over = 1; /* no file names unless we say so */
    size_t word;
    enum cmd_arg_kind kind;
    enum cmd_complete_what what = cmd_complete_context(rl_line_buffer, (size_t)end, &word, &kind);
    if (what == COMPLETE_COMMAND)
        return rl_completion_matches(text, gen_command);
    if (what != COMPLETE_ARG)
        return NULL;
    if (kind == ARG_FILE) {
        rl_attempted_completion_over = 0;
        return NULL;
    }
    free_names();
    if (kind == ARG_PARAM) {
        for (const char *const *p = cmd_param_names; *p; p++)
            arg_names_n++;
        arg_names = x_calloc(arg_names_n + 1, sizeof *arg_names);
        for (size_t i = 0; i < arg_names_n; i++)
            arg_names[i] = x_strdup(cmd_param_names[i]);
    } else if (hooks.names) {
        arg_names = hooks.names(kind, hooks.user);
        while (arg_names && arg_names[arg_names_n])
            arg_names_n++;
    }
    if (!arg_names_n)
        return NULL;
    return rl_completion_matches(text, gen_names);
}

static void display_matches(char **matches, int n, int max_len)
{
    (void)max_len;
    if (hooks.on_matches)
        hooks.on_matches((const char *const *)matches + 1, n, hooks.user);
    dirty = true;
}

/* -------------------------------------------------------- named functions */

static int act(enum input_action a)
{
    if (hooks.on_action)
        hooks.on_action(a, hooks.user);
    return 0;
}

static int fn_scroll_up(int count, int key)
{
    (void)count, (void)key;
    return act(IA_SCROLL_UP);
}

static int fn_scroll_down(int count, int key)
{
    (void)count, (void)key;
    return act(IA_SCROLL_DOWN);
}

static int fn_scroll_top(int count, int key)
{
    (void)count, (void)key;
    return act(IA_SCROLL_TOP);
}

static int fn_scroll_bottom(int count, int key)
{
    (void)count, (void)key;
    return act(IA_SCROLL_BOTTOM);
}

/* Home/End move in the line, or scroll the transcript when it is empty. */
static int fn_home(int count, int key)
{
    if (rl_end == 0)
        return act(IA_SCROLL_TOP);
    return rl_beg_of_line(count, key);
}

static int fn_end(int count, int key)
{
    if (rl_end == 0)
        return act(IA_SCROLL_BOTTOM);
    return rl_end_of_line(count, key);
}

static int fn_cancel(int count, int key)
{
    (void)count, (void)key;
    return act(IA_CANCEL);
}

static int fn_toggle_sessions(int count, int key)
{
    (void)count, (void)key;
    return act(IA_TOGGLE_SESSIONS);
}

static int fn_redraw(int count, int key)
{
    (void)count, (void)key;
    return act(IA_REDRAW);
}

static int fn_newline(int count, int key)
{
    (void)key;
    return rl_insert_text(count > 1 ? "\n" : "\n") >= 0 ? 0 : 1;
}

/* Ctrl-F / Ctrl-B search on an empty line, move the cursor otherwise. */
static int fn_find(int count, int key)
{
    if (rl_end == 0)
        return act(IA_FIND_NEXT);
    return rl_forward_char(count, key);
}

static int fn_find_previous(int count, int key)
{
    if (rl_end == 0)
        return act(IA_FIND_PREV);
    return rl_backward_char(count, key);
}

static int fn_find_previous_key(int count, int key)
{
    (void)count, (void)key;
    return act(IA_FIND_PREV);
}

static int fn_select_previous(int count, int key)
{
    (void)count, (void)key;
    return act(IA_SELECT_PREV);
}

static int fn_select_next(int count, int key)
{
    (void)count, (void)key;
    return act(IA_SELECT_NEXT);
}

static int fn_edit_external(int count, int key)
{
    (void)count, (void)key;
    return act(IA_EDIT_EXTERNAL);
}

static void bind(const char *seq, rl_command_func_t *fn)
{
    rl_bind_keyseq_in_map(seq, fn, emacs_standard_keymap);
}

/* --------------------------------------------------------------- history */

static void history_load(void)
{
    if (!history_path)
        return;
    char *data;
    size_t len;
    char err[256];
    if (store_read_file(history_path, 64u << 20, &data, &len, err, sizeof err) != 0)
        return;
    /* One entry per line; "\n" and "\\" escaped so multi-line entries
     * survive. */
    char *p = data, *end = data + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            nl = end;
        char *out = x_malloc((size_t)(nl - p) + 1), *o = out;
        for (char *q = p; q < nl; q++) {
            if (*q == '\\' && q + 1 < nl) {
                q++;
                *o++ = *q == 'n' ? '\n' : *q;
            } else {
                *o++ = *q;
            }
        }
        *o = '\0';
        if (*out)
            add_history(out);
        free(out);
        p = nl + 1;
    }
    free(data);
}

static void history_save(void)
{
    if (!history_path)
        return;
    struct sbuf b = {0};
    sbuf_add(&b, "", 0);
    HIST_ENTRY **list = history_list();
    int n = history_length;
    int first = n > HISTORY_MAX ? n - HISTORY_MAX : 0;
    for (int i = first; list && i < n; i++) {
        const char *s = list[i]->line;
        for (; *s; s++) {
            if (*s == '\n')
                sbuf_add(&b, "\\n", 2);
            else if (*s == '\\')
                sbuf_add(&b, "\\\\", 2);
            else
                sbuf_add(&b, s, 1);
        }
        sbuf_add(&b, "\n", 1);
    }
    char err[512];
    if (store_write_atomic(history_path, b.data, b.len, err, sizeof err) != 0)
        fprintf(stderr, "elmchat: history not saved: %s\n", err);
    sbuf_fini(&b);
}

void input_history_add(const char *line)
{
    if (!line || !*line || strlen(line) > HISTORY_ENTRY_MAX)
        return;
    HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
    if (last && strcmp(last->line, line) == 0)
        return;
    add_history(line);
}

/* ------------------------------------------------------------------ setup */

void input_init(void *w, const struct input_hooks *h, const char *hist)
{
    win = w;
    hooks = *h;
    history_path = hist ? x_strdup(hist) : NULL;
    devnull = fopen("/dev/null", "w");

    rl_readline_name = "elmchat";
    rl_catch_signals = 0;
    rl_catch_sigwinch = 0;
    rl_change_environment = 0;
    rl_prep_term_function = NULL;
    rl_deprep_term_function = NULL;
    rl_getc_function = input_getc;
    rl_input_available_hook = input_avail;
    rl_redisplay_function = input_redisplay;
    rl_instream = stdin;
    rl_outstream = devnull ? devnull : stdout;
    rl_attempted_completion_function = attempt_completion;
    rl_completion_display_matches_hook = display_matches;
    rl_completer_word_break_characters = " \t";
    rl_completion_query_items = -1;
    rl_variable_bind("bell-style", "none");
    rl_variable_bind("page-completions", "off");
    /* the candidates go to the status bar at once, not on a second Tab */
    rl_variable_bind("show-all-if-ambiguous", "on");
    rl_variable_bind("enable-bracketed-paste", "on");
    rl_variable_bind("keyseq-timeout", "100");

    rl_add_defun("elmchat-scroll-up", fn_scroll_up, -1);
    rl_add_defun("elmchat-scroll-down", fn_scroll_down, -1);
    rl_add_defun("elmchat-scroll-top", fn_scroll_top, -1);
    rl_add_defun("elmchat-scroll-bottom", fn_scroll_bottom, -1);
    rl_add_defun("elmchat-home", fn_home, -1);
    rl_add_defun("elmchat-end", fn_end, -1);
    rl_add_defun("elmchat-cancel", fn_cancel, -1);
    rl_add_defun("elmchat-toggle-sessions", fn_toggle_sessions, -1);
    rl_add_defun("elmchat-redraw", fn_redraw, -1);
    rl_add_defun("elmchat-newline", fn_newline, -1);
    rl_add_defun("elmchat-edit-external", fn_edit_external, -1);
    rl_add_defun("elmchat-find", fn_find, -1);
    rl_add_defun("elmchat-select-previous", fn_select_previous, -1);
    rl_add_defun("elmchat-select-next", fn_select_next, -1);
    rl_add_defun("elmchat-find-previous", fn_find_previous, -1);

    /* Defaults, bound before ~/.inputrc is read so that it can override. */
    bind("\\e[5~", fn_scroll_up);
    bind("\\e[6~", fn_scroll_down);
    bind("\\e[1;5H", fn_scroll_top);
    bind("\\e[1;5F", fn_scroll_bottom);
    bind("\\e[7^", fn_scroll_top);
    bind("\\e[8^", fn_scroll_bottom);
    bind("\\e[H", fn_home);
    bind("\\eOH", fn_home);
    bind("\\e[1~", fn_home);
    bind("\\e[7~", fn_home);
    bind("\\e[F", fn_end);
    bind("\\eOF", fn_end);
    bind("\\e[4~", fn_end);
    bind("\\e[8~", fn_end);
    bind("\\C-g", fn_cancel);
    bind("\\C-x\\C-e", fn_edit_external);
    bind("\\C-f", fn_find);
    bind("\\e[1;3A", fn_select_previous);
    bind("\\e[1;3B", fn_select_next);
    bind("\\C-b", fn_find_previous);
    bind("\\e[Z", fn_find_previous_key);
    /* vi mode: Esc is readline's there, so Ctrl-G is the way to cancel */
    rl_bind_keyseq_in_map("\\C-g", fn_cancel, vi_insertion_keymap);
    rl_bind_keyseq_in_map("\\C-g", fn_cancel, vi_movement_keymap);
    bind("\\es", fn_toggle_sessions);
    bind("\\eOQ", fn_toggle_sessions);
    bind("\\C-l", fn_redraw);
    bind("\\C-j", fn_newline);
    bind("\\e\\C-m", fn_newline);
    bind("\\e\\C-j", fn_newline);

    using_history();
    history_load();
    rl_callback_handler_install(PROMPT, line_handler);
    /* Completing "/sa" should give "/save ", and names never get quotes. */
    rl_completion_append_character = ' ';
}

void input_fini(void)
{
    rl_callback_handler_remove();
    history_save();
    free_names();
    free(history_path);
    history_path = NULL;
    free(fifo.buf);
    memset(&fifo, 0, sizeof fifo);
    if (devnull)
        fclose(devnull);
    devnull = NULL;
    rl_outstream = stdout;
}

void input_set_window(void *w, int screen_rows)
{
    win = w;
    if (win) {
        int h, wd;
        getmaxyx(win, h, wd);
        (void)h;
        rl_set_screen_size(screen_rows > 0 ? screen_rows : 1, wd > 0 ? wd : 1);
    }
    dirty = true;
}

void input_set_tty_fd(int fd)
{
    tty_fd = fd;
}

void input_feed(const char *bytes, size_t n)
{
    fifo_push(bytes, n);
    while (!fifo_empty()) {
        rl_callback_read_char();
        if (deferred_text) {
            /* readline empties the line after the handler: set it now */
            char *t = deferred_text;
            deferred_text = NULL;
            input_set_text(t);
            free(t);
        }
    }
}

bool input_line_empty(void)
{
    return rl_end == 0;
}

void input_clear_line(void)
{
    rl_callback_sigcleanup();
    rl_free_line_state();
    rl_replace_line("", 1);
    rl_point = rl_end = 0;
    rl_mark = 0;
    rl_on_new_line();
    dirty = true;
}

const char *input_vi_mode(void)
{
    if (rl_editing_mode != 0) /* 1: emacs */
        return NULL;
    return rl_get_keymap() == vi_insertion_keymap ? "vi insert" : "vi command";
}

bool input_wants_esc(void)
{
    /* vi's mode switch; Esc ends an incremental or non-incremental search */
    return rl_editing_mode == 0 || RL_ISSTATE(RL_STATE_ISEARCH | RL_STATE_NSEARCH);
}

char *input_text(void)
{
    return x_strdup(rl_line_buffer ? rl_line_buffer : "");
}

void input_set_text(const char *text)
{
    if (in_handler) {
        free(deferred_text);
        deferred_text = x_strdup(text);
        return;
    }
    rl_replace_line(text, 1);
    rl_point = rl_end;
    dirty = true;
}

/* --------------------------------------------------------------- drawing */

/* One drawable unit of the prompt or the line. */
struct unit {
    uint32_t cp;     /* code point to draw; 0 for a newline */
    int cols;        /* columns it takes */
    bool caret;      /* draw as ^X (a control character) */
    size_t next;     /* byte offset after it */
};

/* Decode the unit at s[i]; col is the column it would start at (tabs). */
static struct unit next_unit(const char *s, size_t n, size_t i, int col)
{
    struct unit u = {0};
    unsigned char c = (unsigned char)s[i];
    if (c == '\n') {
        u.cp = 0, u.cols = 0, u.next = i + 1;
        return u;
    }
    if (c == '\t') {
        u.cp = ' ', u.cols = 4 - col % 4, u.next = i + 1;
        return u;
    }
    if (c < 0x20 || c == 0x7F) {
        u.cp = c, u.cols = 2, u.caret = true, u.next = i + 1;
        return u;
    }
    uint32_t cp;
    size_t k = utf8_decode(s + i, n - i, &cp);
    if (k == 0)
        k = n - i, cp = UTF8_REPLACEMENT;
    int w = u8_cp_width(cp);
    if (w < 0)
        cp = UTF8_REPLACEMENT, w = 1;
    u.cp = cp, u.cols = w, u.next = i + k;
    return u;
}

/* Walk prompt + line; for each unit call emit (when non-NULL) with its
 * row and column.  Returns the number of rows; the cursor goes to crow, ccol. */
typedef void emit_fn(const struct unit *u, int row, int col, void *ctx);

static const char *display_prompt(char *buf, size_t size)
{
    /* rl_display_prompt (isearch changes it) without the invisible-text
     * markers \001 \002. */
    const char *p = rl_display_prompt ? rl_display_prompt : PROMPT;
    size_t j = 0;
    for (; *p && j + 1 < size; p++)
        if (*p != '\001' && *p != '\002')
            buf[j++] = *p;
    buf[j] = '\0';
    return buf;
}

static int layout_text(int width, int *crow, int *ccol, emit_fn *emit, void *ctx)
{
    char pbuf[512];
    const char *prompt = display_prompt(pbuf, sizeof pbuf);
    int row = 0, col = 0;
    *crow = *ccol = 0;
    if (width < 1)
        width = 1;
    for (int part = 0; part < 2; part++) {
        const char *s = part == 0 ? prompt : rl_line_buffer;
        size_t n = part == 0 ? strlen(prompt) : (size_t)rl_end;
        size_t i = 0;
        while (i < n) {
            if (part == 1 && i == (size_t)rl_point)
                *crow = row, *ccol = col;
            struct unit u = next_unit(s, n, i, col);
            if (u.cp == 0 && u.cols == 0) {
                row++, col = 0;
                i = u.next;
                continue;
            }
            if (col + u.cols > width && col > 0)
                row++, col = 0;
            if (part == 1 && i == (size_t)rl_point)
                *crow = row, *ccol = col;
            if (emit)
                emit(&u, row, col, ctx);
            col += u.cols;
            i = u.next;
        }
        if (part == 1 && (size_t)rl_point >= n) {
            if (col >= width)
                row++, col = 0;
            *crow = row, *ccol = col;
        }
    }
    return row + 1;
}

int input_rows_wanted(int width)
{
    int r, c;
    return layout_text(width, &r, &c, NULL, NULL);
}

struct draw_ctx {
    int top, height, prompt_attr;
};

static void emit_draw(const struct unit *u, int row, int col, void *vctx)
{
    struct draw_ctx *ctx = vctx;
    if (row < ctx->top || row >= ctx->top + ctx->height)
        return;
    int y = row - ctx->top;
    if (u->caret) {
        char b[3] = {'^', (char)(u->cp == 0x7F ? '?' : u->cp + '@'), 0};
        mvwaddstr(win, y, col, b);
        return;
    }
    wchar_t wc[2] = {(wchar_t)u->cp, 0};
    if (u->cols == 0) {
        /* combining: appended to the previous cell by curses */
        waddnwstr(win, wc, 1);
        return;
    }
    for (int k = 0; u->cp == ' ' && k < u->cols; k++)
        mvwaddch(win, y, col + k, ' ');
    if (u->cp != ' ')
        mvwaddnwstr(win, y, col, wc, 1);
}

void input_draw(bool busy)
{
    dirty = false;
    if (!win)
        return;
    int h, w;
    getmaxyx(win, h, w);
    if (h <= 0 || w <= 0)
        return;
    int crow, ccol;
    int rows = layout_text(w, &crow, &ccol, NULL, NULL);
    /* Scroll so the cursor row is visible, preferring to show the end. */
    int top = rows > h ? rows - h : 0;
    if (crow < top)
        top = crow;
    werase(win);
    struct draw_ctx ctx = {top, h, 0};
    layout_text(w, &crow, &ccol, emit_draw, &ctx);
    (void)busy;
    /* The prompt's first char carries the state colour. */
    if (top == 0 && rl_display_prompt && strcmp(rl_display_prompt, PROMPT) == 0) {
        int a = screen_attr(busy ? SA_STATUS_BUSY : SA_USER);
        mvwchgat(win, 0, 0, 1, (attr_t)(a & ~A_COLOR), (short)PAIR_NUMBER(a), NULL);
    }
    if (crow - top >= 0 && crow - top < h && ccol < w) {
        wmove(win, crow - top, ccol);
        curs_set(1);
    } else {
        curs_set(0);
    }
    wnoutrefresh(win);
}
