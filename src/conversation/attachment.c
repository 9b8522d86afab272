/* attachment.c: text files brought into a message (attachment.h). */
#include "config.h"

#include "src/conversation/attachment.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/store/store.h"
#include "src/base/strbuf.h"
#include "src/base/utf8.h"
#include "src/base/xalloc.h"

#define OPEN_TAG "<file name=\""
#define CLOSE_TAG "</file>"

void attachment_size_text(size_t bytes, char *buf, size_t size)
{
    if (bytes < 1024)
        snprintf(buf, size, "%zu B", bytes);
    else if (bytes < 1024 * 1024)
        snprintf(buf, size, "%.1f KB", (double)bytes / 1024.0);
    else
        snprintf(buf, size, "%.1f MB", (double)bytes / (1024.0 * 1024.0));
}

void attachment_fini(struct attachment *a)
{
    free(a->name);
    free(a->text);
    memset(a, 0, sizeof *a);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

int attachment_from_text(const char *name, const char *text, size_t len, size_t max_lines,
                         struct attachment *a, char *err, size_t err_size)
{
    memset(a, 0, sizeof *a);
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        snprintf(err, err_size, "%s: a binary file (a NUL byte at offset %zu): only text can be "
                                "read into a message",
                 name, (size_t)(nul - text));
        return -1;
    }
    if (!utf8_check_text(name, text, len, err, err_size))
        return -1;
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        len--;
    if (len == 0) {
        snprintf(err, err_size, "%s: the file is empty", name);
        return -1;
    }
    size_t lines = 1, cut = len;
    for (size_t i = 0; i < len; i++) {
        if (text[i] != '\n')
            continue;
        if (max_lines && lines == max_lines && cut == len)
            cut = i;
        lines++;
    }
    a->n_lines_total = lines;
    a->n_lines = max_lines && max_lines < lines ? max_lines : lines;
    a->name = x_strdup(name);
    a->len = cut;
    a->text = x_malloc(cut + 1);
    memcpy(a->text, text, cut);
    a->text[cut] = '\0';
    return 0;
}

int attachment_load(const char *path, size_t max_lines, struct attachment *a, char *err,
                    size_t err_size)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, err_size, "%s: a folder, not a file", path);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, err_size, "%s: not a regular file", path);
        return -1;
    }
    if ((unsigned long long)st.st_size > ATTACHMENT_MAX_BYTES) {
        char size[32];
        attachment_size_text((size_t)st.st_size, size, sizeof size);
        snprintf(err, err_size, "%s: %s, more than a message can hold (16 MB at most)", path, size);
        return -1;
    }
    char *text;
    size_t len;
    if (store_read_file(path, ATTACHMENT_MAX_BYTES, &text, &len, err, err_size) < 0)
        return -1;
    int rc = attachment_from_text(path, text, len, max_lines, a, err, err_size);
    free(text);
    if (rc == 0) {
        free(a->name);
        a->name = x_strdup(base_name(path));
    }
    return rc;
}

char *attachment_compose(const char *message, const struct attachment *a)
{
    struct sbuf b = {0};
    sbuf_add(&b, message, strlen(message));
    if (*message)
        sbuf_add(&b, "\n\n", 2);
    sbuf_add(&b, OPEN_TAG, strlen(OPEN_TAG));
    sbuf_add(&b, a->name, strlen(a->name));
    sbuf_add(&b, "\">\n", 3);
    sbuf_add(&b, a->text, a->len);
    sbuf_add(&b, "\n" CLOSE_TAG, strlen("\n" CLOSE_TAG));
    return b.data;
}

char *attachment_collapse(const char *text)
{
    if (!strstr(text, OPEN_TAG))
        return NULL;
    struct sbuf b = {0};
    sbuf_add(&b, "", 0);
    const char *p = text;
    bool any = false;
    for (;;) {
        const char *open = strstr(p, OPEN_TAG);
        /* a block starts a line */
        while (open && open != text && open[-1] != '\n')
            open = strstr(open + 1, OPEN_TAG);
        const char *name = open ? open + strlen(OPEN_TAG) : NULL;
        const char *name_end = name ? strstr(name, "\">\n") : NULL;
        const char *body = name_end ? name_end + 3 : NULL;
        const char *close = body ? strstr(body - 1, "\n" CLOSE_TAG) : NULL;
        if (name_end && memchr(name, '\n', (size_t)(name_end - name)))
            close = NULL;
        if (!close) {
            sbuf_add(&b, p, strlen(p));
            break;
        }
        const char *after = close + 1 + strlen(CLOSE_TAG);
        sbuf_add(&b, p, (size_t)(open - p));
        size_t blen = close >= body ? (size_t)(close - body) : 0, lines = 1;
        for (size_t i = 0; i < blen; i++)
            lines += body[i] == '\n';
        char size[32], line[300];
        attachment_size_text(blen, size, sizeof size);
        snprintf(line, sizeof line, "[file %.*s · %s · %zu line%s]", (int)(name_end - name), name,
                 size, lines, lines == 1 ? "" : "s");
        sbuf_add(&b, line, strlen(line));
        any = true;
        p = after;
    }
    if (!any) {
        sbuf_fini(&b);
        return NULL;
    }
    return b.data;
}
