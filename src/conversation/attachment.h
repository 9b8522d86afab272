/* attachment.h: a text file brought into a message (/read FILE in the
 * chat, -p TEXT with -f FILE or -f - (standard input) in `elmchat run`).
 *
 * The file is read whole (at most ATTACHMENT_MAX_BYTES), refused when it
 * is binary (a NUL byte) or not UTF-8, and may be cut to its first lines.
 * The message the model sees is the text typed, a blank line, then the
 * file in a block the models read as a quoted file:
 *
 *     <file name="notes.txt">
 *     ...the text...
 *     </file>
 *
 * The session keeps that whole text (what the model saw, so a reload
 * renders the same tokens); the view shows the block collapsed to its name
 * and size (attachment_collapse).  Pure: no terminal, any thread. */
#ifndef ELMCHAT_SRC_ATTACHMENT_H
#define ELMCHAT_SRC_ATTACHMENT_H

#include <stdbool.h>
#include <stddef.h>

#define ATTACHMENT_MAX_BYTES (16u * 1024 * 1024)

struct attachment {
    char *name;     /* as shown and written in the block: the file's base name (owned) */
    char *text;     /* UTF-8, no NUL (owned); a final newline removed */
    size_t len;     /* bytes of text */
    size_t n_lines; /* lines of text */
    size_t n_lines_total; /* lines of the whole file (> n_lines when cut) */
};

/* Read path (max_lines 0: all of it).  0, or -1 with err naming the file
 * and the problem (missing, a folder, too large, binary, not UTF-8 with
 * the line and column, empty). */
int attachment_load(const char *path, size_t max_lines, struct attachment *a, char *err,
                    size_t err_size);
/* From text in memory (standard input): the same checks; name is shown. */
int attachment_from_text(const char *name, const char *text, size_t len, size_t max_lines,
                         struct attachment *a, char *err, size_t err_size);
void attachment_fini(struct attachment *a);

/* message + the block (owned).  message may be "" (then only the block). */
char *attachment_compose(const char *message, const struct attachment *a);
/* For display: each block of a composed message replaced by one line
 * "[file notes.txt · 1.2 KB · 45 lines]" (owned).  NULL when text has no
 * block (show it as it is). */
char *attachment_collapse(const char *text);
/* "1.2 KB", "312 B", "3.4 MB" into buf. */
void attachment_size_text(size_t bytes, char *buf, size_t size);

#endif
