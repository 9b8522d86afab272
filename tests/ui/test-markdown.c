/* test-markdown.c: the markdown layout (ui/markdown.c): each construct,
 * constructs still open mid-stream, lines at most the width (CJK and
 * emoji), spans on the right bytes, code blocks kept for /copy, and the
 * transcript drawing sanitized text only. */
#include "config.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/conversation/code_blocks.h"
#include "tests/lib/tap.h"
#include "ui/markdown.h"
#include "ui/sanitize.h"
#include "ui/transcript.h"

static struct md_out o;

static const char *render(const char *src, int width)
{
    md_render(src, strlen(src), width, &o);
    return o.text.data;
}

/* The attribute of the first occurrence of what in the output. */
static unsigned attr_of(const char *what)
{
    const char *p = strstr(o.text.data, what);
    if (!p)
        return 0xFFFF;
    size_t off = (size_t)(p - o.text.data);
    for (size_t i = 0; i < o.n_spans; i++)
        if (o.spans[i].off <= off && off < o.spans[i].off + o.spans[i].len)
            return o.spans[i].attr;
    return 0;
}

/* What /copy takes from src (src/conversation/code_blocks.c): block k (from 1), its
 * language and text against want; the count must be n_want too. */
static bool copy_block(const char *src, size_t n_want, size_t k, const char *lang,
                       const char *text)
{
    struct code_block *v;
    size_t n = code_blocks_find(src, strlen(src), &v);
    bool good = n == n_want && k <= n && (!lang || strcmp(v[k - 1].lang, lang) == 0) &&
                strcmp(v[k - 1].text, text) == 0;
    code_blocks_free(v, n);
    return good;
}

static int max_line_width(const char *s)
{
    int best = 0;
    const char *line = s;
    for (;;) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        int w = u8_width(line, n);
        if (w > best)
            best = w;
        if (!nl)
            return best;
        line = nl + 1;
    }
}

static void test_constructs(void)
{
    is_str(render("# Title\n\ntext", 40), "Title\n\ntext", "a heading without its #");
    ok(attr_of("Title") & MD_A_HEADING && attr_of("Title") & MD_A_BOLD, "... bold heading");
    is_str(render("a **b** *c* `d` ~~e~~", 40), "a b c d e", "inline markup removed");
    ok(attr_of("b") & MD_A_BOLD, "**b** bold");
    ok(strstr(o.text.data, "c") && (attr_of("c ") & MD_A_ITALIC), "*c* italic");
    ok(attr_of("d") & MD_A_CODE, "`d` code");
    ok(attr_of("e") & MD_A_STRIKE, "~~e~~ struck");
    is_str(render("see [docs](http://x.y/z)", 40), "see docs (http://x.y/z)",
           "a link: its text, then the URL");
    ok(attr_of("docs") & MD_A_LINK && attr_of("(http") & MD_A_DIM, "... underlined, the URL dimmed");
    is_str(render("<http://x.y>", 40), "http://x.y", "an autolink is not repeated");
    is_str(render("- a\n- b\n  - c\n", 40), "• a\n• b\n  ◦ c", "nested bullets");
    is_str(render("3. a\n4. b\n", 40), "3. a\n4. b", "numbered from the list's start");
    is_str(render("1. one\n\n2. two\n", 40), "1. one\n\n2. two", "a loose list keeps its gaps");
    is_str(render("> q\n>\n> r", 40), "│ q\n│\n│ r", "a quote with its bar, on the gap too");
    is_str(render("a\n\n---\n\nb", 8), "a\n\n────────\n\nb", "a rule as wide as the view");
    is_str(render("```c\nint x;\n```", 40), "[1] c\n│ int x;", "a code block: numbered, framed");
    ok(attr_of("int x;") & MD_A_CODEBLOCK, "... its text in the code attribute");
    ok(o.n_code == 1 && copy_block("```c\nint x;\n```", 1, 1, "c", "int x;\n"),
       "... kept for /copy with its language");
    render("```\na\n```\n\n```py\nb\n```", 40);
    ok(o.n_code == 2 && strstr(o.text.data, "[2] py"), "a second block is [2]");
}

static void test_wrapping(void)
{
    const char *p = "one two three four five six seven eight nine ten eleven twelve";
    render(p, 20);
    ok(max_line_width(o.text.data) <= 20, "prose wraps within 20 columns:\n%s", o.text.data);
    ok(strstr(o.text.data, "one two three four\n"), "at spaces");
    render("- one two three four five six seven eight", 16);
    ok(max_line_width(o.text.data) <= 16 && strstr(o.text.data, "\n  "),
       "a list item wraps under its text:\n%s", o.text.data);
    render("```\nabcdefghijklmnopqrstuvwxyz\n```", 12);
    ok(max_line_width(o.text.data) <= 12 && strstr(o.text.data, "┆ "),
       "a long code line is broken at the edge, marked:\n%s", o.text.data);
    ok(o.n_code == 1 &&
           copy_block("```\nabcdefghijklmnopqrstuvwxyz\n```", 1, 1, NULL, "abcdefghijklmnopqrstuvwxyz\n"),
       "... its copy is the line as written");
    render("日本語のテキストを折り返すテストです 😀😀😀😀😀😀", 10);
    ok(max_line_width(o.text.data) <= 10, "CJK and emoji within 10 columns:\n%s", o.text.data);
    render("a `very long inline code span that must wrap` b", 14);
    ok(max_line_width(o.text.data) <= 14, "an inline code span wraps too");
}

static void test_tables(void)
{
    render("| a | bb |\n|---|---:|\n| 1 | 2 |\n| 333 | 4 |\n", 40);
    is_str(o.text.data, "a   │ bb\n────┼───\n1   │  2\n333 │  4", "a table, aligned");
    ok(attr_of("bb") & MD_A_BOLD, "... the header bold");
    render("| name | description |\n|---|---|\n| x | a very long description of it |\n", 20);
    ok(max_line_width(o.text.data) <= 20 && strstr(o.text.data, "name: x") &&
           strstr(o.text.data, "description: a very"),
       "too wide: one line a cell, header first:\n%s", o.text.data);
}

static void test_streaming(void)
{
    is_str(render("some **bold", 40), "some **bold", "an unclosed ** is literal (so far)");
    is_str(render("some **bold**", 40), "some bold", "... and bold once closed");
    render("```py\nprint(1)\n", 40);
    ok(strstr(o.text.data, "[1] py") && strstr(o.text.data, "│ print(1)"),
       "an open fence already shows as code");
    /* the earlier lines of a reply do not change as it grows */
    const char *full = "First paragraph here.\n\nSecond one, growing word by word until done.";
    render("First paragraph here.\n\nSecond", 30);
    char *before = strdup(o.text.data);
    render(full, 30);
    ok(strncmp(o.text.data, before, strlen("First paragraph here.")) == 0,
       "a finished paragraph stays put while the next one grows");
    free(before);
}

static void test_transcript(void)
{
    /* the transcript sanitizes before laying out: no escape survives, in
     * code blocks and links too */
    struct transcript t;
    transcript_init(&t);
    t.markdown = true;
    transcript_set_width(&t, 40, 10);
    const char *evil = "```\n\x1b[31mred\x1b]0;title\a\n```\n[x\x1b[2Jy](http://a\x1b[0m.b)";
    size_t i = transcript_add(&t, TR_ASSISTANT, evil, strlen(evil), 0);
    const struct tr_msg *m = &t.msgs[i];
    ok(m->markdown && !strchr(m->md.text.data, '\x1b') && strstr(m->md.text.data, "red"),
       "escape sequences are gone before the layout:\n%s", m->md.text.data);
    size_t u = transcript_add(&t, TR_USER, "**plain**", 9, 1);
    ok(!t.msgs[u].markdown && strstr(t.msgs[u].text.data, "**plain**"), "user messages stay plain");
    transcript_set_markdown(&t, false);
    ok(!t.msgs[i].markdown && strstr(transcript_line_text(&t, &t.lines[t.msgs[i].first_line + 1]),
                                     "```"),
       "markdown off: the source again");
    transcript_fini(&t);
}

int main(void)
{
    setlocale(LC_ALL, "C.UTF-8");
    md_out_init(&o);
    test_constructs();
    test_wrapping();
    test_tables();
    test_streaming();
    test_transcript();
    md_out_fini(&o);
    return done_testing();
}
