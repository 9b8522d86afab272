/* test-attachment.c: files brought into a message (src/conversation/attachment.h): text
 * read whole or cut to its first lines; binary, non-UTF-8, empty, folder
 * and missing files refused with the file named; the composed message and
 * its collapsed display. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/conversation/attachment.h"
#include "src/base/xalloc.h"
#include "tests/lib/tap.h"

static char err[1024];

static char *write_file(const char *name, const char *text, size_t len)
{
    return x_strdup(tap_write_tmp(name, text, len));
}

static void refused(const char *name, const char *text, size_t len, const char *want,
                    const char *what)
{
    char *path = write_file(name, text, len);
    struct attachment a;
    int rc = attachment_load(path, 0, &a, err, sizeof err);
    char *full = x_asprintf("%s%s", path, want);
    ok(rc == -1 && strcmp(err, full) == 0, "%s: '%s'", what, err);
    if (rc == -1 && strcmp(err, full) != 0)
        diag("want '%s'", full);
    free(full);
    free(path);
}

int main(void)
{
    plan_lazy();
    char *path = write_file("notes.txt", "one\ntwo\nthree\n", 14);
    struct attachment a;
    ok(attachment_load(path, 0, &a, err, sizeof err) == 0, "a text file loads (%s)", err);
    is_str(a.name, "notes.txt", "its name is the base name");
    is_str(a.text, "one\ntwo\nthree", "its text, without the final newline");
    ok(a.n_lines == 3 && a.n_lines_total == 3 && a.len == 13, "3 lines, 13 bytes");
    char *msg = attachment_compose("what is this?", &a);
    is_str(msg, "what is this?\n\n<file name=\"notes.txt\">\none\ntwo\nthree\n</file>",
           "the message the model sees");
    char *shown = attachment_collapse(msg);
    is_str(shown, "what is this?\n\n[file notes.txt · 13 B · 3 lines]", "shown collapsed");
    free(shown);
    free(msg);
    attachment_fini(&a);

    ok(attachment_load(path, 2, &a, err, sizeof err) == 0 && strcmp(a.text, "one\ntwo") == 0 &&
           a.n_lines == 2 && a.n_lines_total == 3,
       "cut to its first 2 lines");
    msg = attachment_compose("", &a);
    is_str(msg, "<file name=\"notes.txt\">\none\ntwo\n</file>", "no text typed: the block alone");
    shown = attachment_collapse(msg);
    is_str(shown, "[file notes.txt · 7 B · 2 lines]", "collapsed alone");
    free(shown);
    free(msg);
    attachment_fini(&a);
    ok(attachment_collapse("plain text, <file name=\"x\"> mid-line") == NULL,
       "no block (a tag inside a line is text): NULL");
    shown = attachment_collapse("a\n<file name=\"x\">\nunclosed");
    ok(shown == NULL, "an unclosed block is text");
    free(shown);

    refused("bin.dat", "ELF\x01\x00\x02", 6,
            ": a binary file (a NUL byte at offset 4): only text can be read into a message",
            "a binary file");
    refused("latin1.txt", "ok\ncaf\xe9\n", 8,
            ":2:4: not UTF-8 text (byte 0xe9): convert it first, e.g. iconv -f latin1 -t utf-8",
            "latin-1 text, with its line and column");
    refused("empty.txt", "\n\n", 2, ": the file is empty", "an empty file");
    ok(attachment_load(tap_tmpdir(), 0, &a, err, sizeof err) == -1 && strstr(err, "a folder"),
       "a folder: %s", err);
    ok(attachment_load("/nonexistent/x.txt", 0, &a, err, sizeof err) == -1 &&
           strstr(err, "/nonexistent/x.txt: No such file"),
       "a missing file: %s", err);
    ok(attachment_from_text("standard input", "piped\n", 6, 0, &a, err, sizeof err) == 0 &&
           strcmp(a.name, "standard input") == 0 && strcmp(a.text, "piped") == 0,
       "piped text (elmchat run -p) goes through the same checks");
    attachment_fini(&a);
    char size[32];
    attachment_size_text(1536, size, sizeof size);
    is_str(size, "1.5 KB", "sizes");
    free(path);
    return done_testing();
}
