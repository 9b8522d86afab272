/* test-key-bindings.c: the chat's table of key bindings (ui/tui.c) and the
 * key cutting it relies on (ui/keys.c): every binding has a handler and is
 * one key as a read is cut, no key is bound twice in a mode, a mode's
 * any-key row comes last, every readline action has a handler; an Esc at
 * the end of a read is the Esc key only when nothing follows within the
 * Alt-prefix timeout. */
#include "config.h"

#include <string.h>
#include <unistd.h>

#include "tests/lib/tap.h"
#include "ui/input.h"
#include "ui/keys.h"
#include "ui/tui.h"

static void test_table(void)
{
    const struct key_binding *b = tui_key_bindings;
    size_t n = tui_n_key_bindings;
    ok(n > 0, "the table has bindings (%zu)", n);
    size_t bad_fn = 0, bad_mode = 0, bad_len = 0, twice = 0, shadowed = 0, order = 0;
    for (size_t i = 0; i < n; i++) {
        bad_fn += !b[i].fn;
        bad_mode += b[i].mode >= KEY_MODES;
        if (b[i].seq && key_length(b[i].seq, strlen(b[i].seq)) != strlen(b[i].seq)) {
            bad_len++;
            diag("row %zu: '%s' is not one key as a read is cut", i, b[i].seq + 1);
        }
        if (i > 0 && b[i].mode < b[i - 1].mode)
            order++;
        for (size_t j = 0; j < i; j++) {
            if (b[j].mode != b[i].mode)
                continue;
            /* an any-key row without a condition takes every key after it */
            if (!b[j].seq && !b[j].when) {
                shadowed++;
                diag("row %zu comes after mode %d's any-key row %zu", i, b[i].mode, j);
            }
            if (b[i].seq && b[j].seq && strcmp(b[i].seq, b[j].seq) == 0) {
                twice++;
                diag("rows %zu and %zu bind the same key", j, i);
            }
            if (!b[i].seq && !b[j].seq)
                twice++;
        }
    }
    is_int((long long)bad_fn, 0, "every binding has a handler");
    is_int((long long)bad_mode, 0, "every binding names a mode");
    is_int((long long)bad_len, 0, "every bound key is one key as a read is cut");
    is_int((long long)twice, 0, "no key is bound twice in a mode");
    is_int((long long)shadowed, 0, "no row comes after its mode's any-key row");
    is_int((long long)order, 0, "the rows are in the order of the modes");
    size_t modes_bound = 0;
    for (int m = 0; m < KEY_MODES; m++) {
        bool any = false;
        for (size_t i = 0; i < n; i++)
            any |= b[i].mode == (enum key_mode)m;
        modes_bound += any;
    }
    is_int((long long)modes_bound, KEY_MODES, "every mode has a binding");
    size_t missing = 0;
    for (int a = 1; a < IA_COUNT; a++)
        if (!tui_actions[a]) {
            missing++;
            diag("action %d has no handler", a);
        }
    is_int((long long)missing, 0, "every readline action (%d) has a handler", IA_COUNT - 1);
}

static void test_cutting(void)
{
    static const struct {
        const char *bytes, *what;
        size_t want;
    } cases[] = {
        {"\033[1;3Axyz", "a CSI key (Alt-Up)", 6},
        {"\033[5~", "PgUp", 4},
        {"\033OQx", "an SS3 key (F2)", 3},
        {"\033sx", "an Alt-key", 2},
        {"\033\033", "Alt-Esc", 2},
        {"\033", "Esc at the end", 1},
        {"\033[1;", "an unfinished CSI: the rest", 4},
        {"\xc3\xa9x", "a UTF-8 character", 2},
        {"\xe2\x82\xac", "a 3-byte character", 3},
        {"\xf0\x9f\x98", "a cut 4-byte character: the rest", 3},
        {"ab", "one byte", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        is_int((long long)key_length(cases[i].bytes, strlen(cases[i].bytes)),
               (long long)cases[i].want, "key_length: %s", cases[i].what);
}

/* An Esc at the end of a read: the Esc key when nothing follows in the
 * timeout, the Alt prefix when a byte waits on the tty. */
static void test_escape(void)
{
    int p[2];
    if (pipe(p) != 0)
        bail_out("pipe");
    struct key_read r = {.buf = "ab\033", .len = 3, .fd = p[0]};
    struct key k = key_at(&r, 2);
    is_int(key_escape(&k), KEY_ESC_ALONE, "Esc with nothing after it is the Esc key");
    is_int(key_read_tail(&r), KEY_ESC_ALONE, "... and the read's tail says so too");
    struct key a = key_at(&r, 0);
    is_int(key_escape(&a), KEY_ESC_NONE, "a key before the Esc is not an Esc");

    if (write(p[1], "b", 1) != 1)
        bail_out("write");
    struct key_read r2 = {.buf = "\033", .len = 1, .fd = p[0]};
    k = key_at(&r2, 0);
    is_int(key_escape(&k), KEY_ESC_PREFIX, "Esc with a byte waiting is an Alt prefix");

    struct key_read r3 = {.buf = "x\033\033\033", .len = 4, .fd = p[0]};
    is_int(key_read_tail(&r3), KEY_ESC_NONE, "an Esc after an Esc is not a lone Esc");
    k = key_at(&r3, 3);
    is_int(key_escape(&k), KEY_ESC_PREFIX, "... and as a key it waits as a prefix");
    r3.from = 3;
    r3.waited = 0;
    is_int(key_read_tail(&r3), KEY_ESC_PREFIX,
           "from where a mode began, it is a lone Esc (a byte waits: a prefix)");
    close(p[0]);
    close(p[1]);
}

int main(void)
{
    plan_lazy();
    test_table();
    test_cutting();
    test_escape();
    return done_testing();
}
