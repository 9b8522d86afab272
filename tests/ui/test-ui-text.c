/* test-ui-text.c: what reaches the terminal from untrusted text, and how it
 * wraps: escape sequences and controls filtered, invalid UTF-8 shown as
 * U+FFFD, CJK and emoji wrapped at exact column edges, scrollback. */
#include "config.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/tap.h"
#include "ui/sanitize.h"
#include "ui/transcript.h"

#define FFFD "\xEF\xBF\xBD"

static char *san(const char *s)
{
    return sanitize_dup(s, strlen(s), NULL);
}

static void is_san(const char *in, const char *want, const char *name)
{
    char *got = san(in);
    is_str(got, want, "sanitize: %s", name);
    free(got);
}

static bool has_control(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\n') || c == 0x7F)
            return true;
        if (c == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
            (unsigned char)s[i + 1] < 0xA0)
            return true;
    }
    return false;
}

/* Wrap s at width and join the lines with '|'. */
static char *wrapped(const char *s, int width)
{
    struct sbuf b = {0};
    struct wrap_iter it;
    wrap_init(&it, s, strlen(s), width);
    size_t off, len;
    int cols, n = 0;
    while (wrap_next(&it, &off, &len, &cols)) {
        if (n++)
            sbuf_add(&b, "|", 1);
        sbuf_add(&b, s + off, len);
        if (cols > width && len > 0 && u8_width(s + off, len) > 1)
            sbuf_add(&b, "<OVERFLOW>", 10);
    }
    sbuf_add(&b, "", 0);
    return b.data;
}

static void is_wrap(const char *s, int width, const char *want, const char *name)
{
    char *got = wrapped(s, width);
    is_str(got, want, "wrap %d: %s", width, name);
    free(got);
}

static void test_sanitize(void)
{
    is_san("hello, world", "hello, world", "plain ASCII unchanged");
    is_san("caf\xC3\xA9 \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80", "caf\xC3\xA9 \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80",
           "valid UTF-8 unchanged");
    is_san("a\x1B[31mred\x1B[0m b", "ared b", "CSI colour sequences removed whole");
    is_san("x\x1B[2J\x1B[H\x1B[?1049hy", "xy", "clear screen, home, alt screen removed");
    is_san("t\x1B]0;pwned title\x07u", "tu", "OSC title (BEL) removed");
    is_san("t\x1B]8;;http://x\x1B\\link\x1B]8;;\x1B\\u", "tlinku", "OSC 8 hyperlink (ST) removed");
    is_san("a\x1BPq#0;2;0;0;0\x1B\\b", "ab", "DCS (sixel) removed");
    is_san("a\x1B" "7b\x1B" "8c", "abc", "two-byte ESC sequences removed");
    is_san("a\x1B(Bb", "ab", "charset designation removed");
    is_san("a\xC2\x9B" "31mb", "ab", "C1 CSI (U+009B) removed whole");
    is_san("a\xC2\x85" "b", "a" FFFD "b", "C1 NEL becomes U+FFFD");
    is_san("bell\x07 bs\x08 nul", "bell" FFFD " bs" FFFD " nul", "C0 controls become U+FFFD");
    is_san("del\x7F", "del" FFFD, "DEL becomes U+FFFD");
    is_san("line1\r\nline2", "line1\nline2", "CR dropped, LF kept");
    is_san("a\tb", "a   b", "tab expands to the next multiple of 4");
    is_san("\xFF\xFE ok", FFFD FFFD " ok", "invalid bytes become U+FFFD each");
    is_san("\xC0\xAF", FFFD FFFD, "overlong '/' rejected");
    is_san("\xED\xA0\x80", FFFD FFFD FFFD, "UTF-16 surrogate rejected");
    is_san("\xF4\x90\x80\x80", FFFD FFFD FFFD FFFD, "above U+10FFFF rejected");
    is_san("cut \xE4\xBD", "cut " FFFD FFFD, "truncated sequence at the end (final)");
    is_san("end\x1B", "end", "lone ESC at the end dropped");
    is_san("end\x1B[31", "end", "unfinished CSI at the end dropped");

    /* Streaming: sequences split across chunks. */
    struct sbuf out = {0};
    const char *chunks[] = {"ok \xE4", "\xBD\xA0 \x1B[", "1;31", "mred\x1B", "]0;x", "\x07!"};
    struct sbuf pend = {0};
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
        sbuf_add(&pend, chunks[i], strlen(chunks[i]));
        size_t used = sanitize_append(&out, pend.data, pend.len, false);
        memmove(pend.data, pend.data + used, pend.len - used);
        pend.len -= used;
    }
    sanitize_append(&out, pend.data, pend.len, true);
    is_str(out.data, "ok \xE4\xBD\xA0 red!", "streamed chunks: split UTF-8 and split escapes");
    sbuf_fini(&out);
    sbuf_fini(&pend);

    /* Every byte value, alone and after ESC: nothing control-like survives. */
    bool clean = true;
    for (int a = 0; a < 256 && clean; a++) {
        for (int b = 0; b < 256 && clean; b++) {
            char in[4] = {(char)a, (char)b, 'z', 0};
            char in2[4] = {0x1B, (char)a, (char)b, 0};
            size_t n1, n2;
            char *o1 = sanitize_dup(in, 3, &n1);
            char *o2 = sanitize_dup(in2, 3, &n2);
            if (has_control(o1, n1) || has_control(o2, n2) || memchr(o1, 0x1B, n1) ||
                memchr(o2, 0x1B, n2)) {
                clean = false;
                diag("bytes %02x %02x leak a control", a, b);
            }
            free(o1);
            free(o2);
        }
    }
    ok(clean, "no byte pair (alone or after ESC) leaks a control or ESC");
}

static void test_widths(void)
{
    is_int(u8_width("abc", 3), 3, "ASCII width");
    is_int(u8_width("\xE4\xBD\xA0\xE5\xA5\xBD", 6), 4, "CJK is 2 columns each");
    is_int(u8_width("\xF0\x9F\x98\x80", 4), 2, "emoji U+1F600 is 2 columns");
    is_int(u8_width("e\xCC\x81", 3), 1, "combining accent adds nothing");
    is_int(u8_cp_width(0x1B), -1, "ESC has no width");
    is_int(u8_cp_width(0x9B), -1, "C1 has no width");
}

static void test_wrap(void)
{
    is_wrap("", 10, "", "empty text is one empty line");
    is_wrap("a\n", 10, "a|", "trailing newline gives an empty line");
    is_wrap("hello world", 11, "hello world", "exactly the width fits");
    is_wrap("hello world", 10, "hello|world", "soft break at the space");
    is_wrap("hello world", 5, "hello|world", "break at a space exactly at the edge");
    is_wrap("abcdefghij", 4, "abcd|efgh|ij", "hard break of a long word");
    is_wrap("a\nb\n\nc", 10, "a|b||c", "explicit newlines and an empty line");
    is_wrap("  indented", 20, "  indented", "leading spaces kept");
    /* CJK: 5 characters, 10 columns. */
    const char *cjk = "\xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C\xE5\x95\x8A";
    is_wrap(cjk, 10, cjk, "5 CJK in 10 columns: one line");
    is_wrap(cjk, 4, "\xE4\xBD\xA0\xE5\xA5\xBD|\xE4\xB8\x96\xE7\x95\x8C|\xE5\x95\x8A",
            "CJK at an even width: 2 per line");
    is_wrap(cjk, 5, "\xE4\xBD\xA0\xE5\xA5\xBD|\xE4\xB8\x96\xE7\x95\x8C|\xE5\x95\x8A",
            "CJK at an odd width: never straddles the edge");
    is_wrap("a\xE4\xBD\xA0", 2, "a|\xE4\xBD\xA0", "wide char after 1 column moves down");
    is_wrap("ab\xF0\x9F\x98\x80" "cd", 3, "ab|\xF0\x9F\x98\x80" "c|d", "emoji at the edge");
    is_wrap("ab\xF0\x9F\x98\x80" "cd", 4, "ab\xF0\x9F\x98\x80|cd", "emoji ends exactly at the edge");
    is_wrap("e\xCC\x81" "e\xCC\x81" "e\xCC\x81", 2, "e\xCC\x81" "e\xCC\x81|e\xCC\x81",
            "combining marks stay with their base");
    is_wrap("\xE4\xBD\xA0\xE5\xA5\xBD", 1, "\xE4\xBD\xA0<OVERFLOW>|\xE5\xA5\xBD<OVERFLOW>", "width 1: one wide char per line, terminates");

    /* Column counts never exceed the width except for a lone wide char. */
    const char *mix = "The \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E text, \xF0\x9F\x98\x80 emoji and long-words-without-spaces here.";
    bool fits = true;
    for (int w = 2; w <= 40; w++) {
        struct wrap_iter it;
        wrap_init(&it, mix, strlen(mix), w);
        size_t off, len, total = 0;
        int cols;
        while (wrap_next(&it, &off, &len, &cols)) {
            if (cols > w || cols != u8_width(mix + off, len))
                fits = false;
            total += len;
        }
        if (total + 20 < strlen(mix))
            fits = false;
    }
    ok(fits, "mixed text: every line fits its width 2..40 and widths are exact");
}

static void test_transcript(void)
{
    struct transcript t;
    transcript_init(&t);
    transcript_set_width(&t, 20, 10);
    transcript_add(&t, TR_USER, "hi there", 8, 0);
    is_int((long long)t.n_lines, 3, "a one-line message is header + body + gap");
    size_t m = transcript_begin(&t, TR_ASSISTANT, 1);
    transcript_append(&t, m, "Hello \xE4", 7);
    const char *rest = "\xBD\xA0 \x1B[31mworld, this is long";
    transcript_append(&t, m, rest, strlen(rest));
    ok(strstr(t.msgs[m].text.data, "\x1B") == NULL, "streamed escape never stored for display");
    ok(strncmp(t.msgs[m].text.data, "Hello \xE4\xBD\xA0 world,", 16) == 0, "streamed UTF-8 joined");
    size_t before = t.n_lines;
    transcript_set_width(&t, 8, 10);
    ok(t.n_lines > before, "narrower: re-wrapped into more lines (%zu > %zu)", t.n_lines, before);
    transcript_set_width(&t, 20, 10);
    is_int((long long)t.n_lines, (long long)before, "back to 20 columns: same line count");
    transcript_finish(&t, m, true);
    ok(t.msgs[m].interrupted && !t.msgs[m].streaming, "finish marks interrupted");

    for (int i = 0; i < 50; i++) {
        char buf[32];
        int n = snprintf(buf, sizeof buf, "message %d", i);
        transcript_add(&t, TR_USER, buf, (size_t)n, i);
    }
    int h = 10;
    is_int((long long)transcript_first_visible(&t, h), (long long)t.n_lines - h, "follows the end");
    transcript_scroll(&t, 5, h);
    is_int((long long)transcript_first_visible(&t, h), (long long)t.n_lines - h - 5, "scroll back 5");
    size_t first = transcript_first_visible(&t, h);
    transcript_add(&t, TR_ASSISTANT, "new", 3, 99);
    is_int((long long)transcript_first_visible(&t, h), (long long)first, "a scrolled view stays put when lines arrive");
    transcript_scroll_home(&t, h);
    is_int((long long)transcript_first_visible(&t, h), 0, "Home shows the first line");
    transcript_scroll(&t, 1000, h);
    is_int((long long)transcript_first_visible(&t, h), 0, "scrolling past the top clamps");
    transcript_scroll(&t, -3, h);
    is_int((long long)transcript_first_visible(&t, h), 3, "scroll forward 3");
    transcript_scroll_end(&t);
    is_int((long long)transcript_first_visible(&t, h), (long long)t.n_lines - h, "End follows again");
    transcript_truncate(&t, 2);
    is_int((long long)t.n_msgs, 2, "truncate keeps 2 messages");
    ok(t.n_lines == t.msgs[1].first_line + t.msgs[1].n_lines, "line cache ends with the last message");
    transcript_set_width(&t, 1, 3);
    ok(t.n_lines > 0, "width 1 works");
    transcript_fini(&t);
}

int main(void)
{
    if (!setlocale(LC_CTYPE, "C.UTF-8") && !setlocale(LC_CTYPE, "en_US.UTF-8"))
        skip_all("no UTF-8 locale");
    plan_lazy();
    test_sanitize();
    test_widths();
    test_wrap();
    test_transcript();
    return done_testing();
}
