/* yamldoc.c: libyaml documents with positioned errors. */
#include "config.h"

#include "src/store/yamldoc.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/store/store.h"
#include "src/base/utf8.h"
#include "src/base/xalloc.h"

static void fail_at(struct ydoc *d, size_t line, size_t col, const char *fmt, va_list ap)
    ATTR_FORMAT(4, 0);
static void fail_at(struct ydoc *d, size_t line, size_t col, const char *fmt, va_list ap)
{
    if (!d->err || !d->err_size)
        return;
    int n = snprintf(d->err, d->err_size, "%s:%zu:%zu: ", d->file, line, col);
    if (n >= 0 && (size_t)n < d->err_size)
        vsnprintf(d->err + n, d->err_size - (size_t)n, fmt, ap);
}

static bool fail_mark(struct ydoc *d, yaml_mark_t mark, const char *fmt, ...) ATTR_FORMAT(3, 4);
static bool fail_mark(struct ydoc *d, yaml_mark_t mark, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_at(d, mark.line + 1, mark.column + 1, fmt, ap);
    va_end(ap);
    return false;
}

bool ydoc_fail(struct ydoc *d, const yaml_node_t *node, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (node) {
        fail_at(d, node->start_mark.line + 1, node->start_mark.column + 1, fmt, ap);
    } else if (d->err && d->err_size) {
        int n = snprintf(d->err, d->err_size, "%s: ", d->file);
        if (n >= 0 && (size_t)n < d->err_size)
            vsnprintf(d->err + n, d->err_size - (size_t)n, fmt, ap);
    }
    va_end(ap);
    return false;
}

bool ydoc_fail_in(struct ydoc *d, const yaml_node_t *n, size_t char_offset, const char *fmt, ...)
{
    size_t line = n->start_mark.line + 1, col = n->start_mark.column + 1;
    if (n->type == YAML_SCALAR_NODE && n->start_mark.line == n->end_mark.line) {
        yaml_scalar_style_t style = n->data.scalar.style;
        /* The value's first character: after the quote for quoted styles. */
        size_t skip = style == YAML_PLAIN_SCALAR_STYLE ? 0 : 1;
        if (style == YAML_PLAIN_SCALAR_STYLE || style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
            style == YAML_DOUBLE_QUOTED_SCALAR_STYLE) {
            const unsigned char *v = n->data.scalar.value;
            size_t chars = 0;
            bool exact = true;
            for (size_t i = 0; i < n->data.scalar.length && chars < char_offset; i++) {
                if ((v[i] & 0xC0) != 0x80)
                    chars++;
                if ((style == YAML_DOUBLE_QUOTED_SCALAR_STYLE && v[i] == '\\') ||
                    (style == YAML_SINGLE_QUOTED_SCALAR_STYLE && v[i] == '\''))
                    exact = false;
            }
            /* The value itself cannot show an escape: compare lengths instead. */
            size_t span = n->end_mark.column - n->start_mark.column - 2 * skip;
            size_t total = 0;
            for (size_t i = 0; i < n->data.scalar.length; i++)
                total += (v[i] & 0xC0) != 0x80;
            if (exact && span == total)
                col += skip + char_offset;
        }
    }
    va_list ap;
    va_start(ap, fmt);
    fail_at(d, line, col, fmt, ap);
    va_end(ap);
    return false;
}

/* Line and column (1-based, in characters) of a byte offset. */
static void locate(const char *text, size_t off, size_t *line, size_t *col)
{
    size_t l = 1, c = 1;
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') {
            l++;
            c = 1;
        } else if (((unsigned char)text[i] & 0xC0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c;
}

/* libyaml's scanner does work proportional to the nesting at every token
 * (its stack of possible simple keys), so `[[[[...` 100,000 deep took 23 s
 * before any check of ours saw a node.  Its events come as the text is
 * scanned: counting the depth over them stops such a file after
 * YDOC_MAX_DEPTH levels, at a cost that does not grow with the file.
 * true when the nesting is within the limit (or the text is not YAML: the
 * load says why). */
static bool depth_ok(struct ydoc *d, const char *text, size_t len)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        x_fatal("out of memory");
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    yaml_parser_set_encoding(&p, YAML_UTF8_ENCODING);
    int depth = 0;
    bool okay = true, more = true;
    while (more) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev))
            break; /* the load reports it */
        switch (ev.type) {
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (++depth > YDOC_MAX_DEPTH) {
                fail_mark(d, ev.start_mark, "nested more than %d levels deep", YDOC_MAX_DEPTH);
                okay = more = false;
            }
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            depth--;
            break;
        case YAML_STREAM_END_EVENT:
            more = false;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    return okay;
}

bool ydoc_load(struct ydoc *d, const char *file, const char *text, size_t len, char *err,
               size_t err_size)
{
    memset(d, 0, sizeof *d);
    d->file = file;
    d->err = err;
    d->err_size = err_size;
    size_t bad;
    if (!utf8_valid(text, len, &bad)) {
        size_t line, col;
        locate(text, bad, &line, &col);
        snprintf(err, err_size, "%s:%zu:%zu: not UTF-8 (byte 0x%02X)", file, line, col,
                 (unsigned char)text[bad]);
        return false;
    }
    if (!depth_ok(d, text, len))
        return false;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        x_fatal("out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
    bool okay = false;
    if (!yaml_parser_load(&parser, &d->doc)) {
        if (parser.error == YAML_MEMORY_ERROR)
            x_fatal("out of memory");
        yaml_mark_t m = parser.problem_mark;
        if (parser.error == YAML_READER_ERROR) {
            size_t line, col;
            locate(text, parser.problem_offset < len ? parser.problem_offset : len, &line, &col);
            snprintf(err, err_size, "%s:%zu:%zu: bad YAML: %s", file, line, col,
                     parser.problem ? parser.problem : "read error");
        } else if (parser.context) {
            fail_mark(d, m, "bad YAML: %s %s (line %zu column %zu)",
                      parser.problem ? parser.problem : "error", parser.context,
                      (size_t)parser.context_mark.line + 1, (size_t)parser.context_mark.column + 1);
        } else {
            fail_mark(d, m, "bad YAML: %s", parser.problem ? parser.problem : "error");
        }
        goto out;
    }
    d->loaded = true;
    yaml_node_t *root = yaml_document_get_root_node(&d->doc);
    if (!root) {
        snprintf(err, err_size, "%s: empty file", file);
        goto out;
    }
    if (root->type != YAML_MAPPING_NODE) {
        ydoc_fail(d, root, "expected a mapping (key: value lines) at the top level");
        goto out;
    }
    /* Exactly one document: a second one would be silently ignored. */
    yaml_document_t extra;
    if (!yaml_parser_load(&parser, &extra)) {
        fail_mark(d, parser.problem_mark, "bad YAML: %s",
                  parser.problem ? parser.problem : "error");
        goto out;
    }
    yaml_node_t *extra_root = yaml_document_get_root_node(&extra);
    if (extra_root) {
        ydoc_fail(d, extra_root, "a second YAML document is not allowed");
        yaml_document_delete(&extra);
        goto out;
    }
    yaml_document_delete(&extra);
    okay = true;
out:
    yaml_parser_delete(&parser);
    return okay;
}

bool ydoc_load_file(struct ydoc *d, const char *file, size_t max_size, char *err,
                    size_t err_size)
{
    memset(d, 0, sizeof *d);
    d->file = file;
    char *text;
    size_t len;
    int rc = store_read_file(file, max_size, &text, &len, err, err_size);
    if (rc < 0)
        return false;
    bool okay = ydoc_load(d, file, text, len, err, err_size);
    free(text);
    return okay;
}

void ydoc_fini(struct ydoc *d)
{
    if (d->loaded)
        yaml_document_delete(&d->doc);
    d->loaded = false;
}

yaml_node_t *ydoc_root(struct ydoc *d)
{
    return d->loaded ? yaml_document_get_root_node(&d->doc) : NULL;
}

yaml_node_t *ydoc_node(struct ydoc *d, int index)
{
    return yaml_document_get_node(&d->doc, index);
}

static const char *type_name(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return "a scalar";
    case YAML_SEQUENCE_NODE:
        return "a list";
    case YAML_MAPPING_NODE:
        return "a mapping";
    default:
        return "nothing";
    }
}

bool ydoc_expect(struct ydoc *d, yaml_node_t *n, yaml_node_type_t type, const char *what)
{
    if (n->type == type)
        return true;
    const char *want = type == YAML_SCALAR_NODE ? "a string"
                       : type == YAML_SEQUENCE_NODE ? "a list" : "a mapping";
    return ydoc_fail(d, n, "%s: expected %s, found %s", what, want, type_name(n));
}

bool ydoc_str(struct ydoc *d, yaml_node_t *n, const char *what, const char **out, size_t *len)
{
    if (n->type != YAML_SCALAR_NODE)
        return ydoc_fail(d, n, "%s: expected a string, found %s", what, type_name(n));
    if (memchr(n->data.scalar.value, '\0', n->data.scalar.length))
        return ydoc_fail(d, n, "%s: the string contains a NUL character", what);
    *out = (const char *)n->data.scalar.value;
    if (len)
        *len = n->data.scalar.length;
    return true;
}

char *ydoc_strdup(struct ydoc *d, yaml_node_t *n, const char *what)
{
    const char *s = NULL;
    size_t len = 0;
    if (!ydoc_str(d, n, what, &s, &len))
        return NULL;
    return x_strndup(s, len);
}

static bool plain_scalar(yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

bool ydoc_bool(struct ydoc *d, yaml_node_t *n, const char *what, bool *out)
{
    if (plain_scalar(n)) {
        const char *v = (const char *)n->data.scalar.value;
        if (strcmp(v, "true") == 0) {
            *out = true;
            return true;
        }
        if (strcmp(v, "false") == 0) {
            *out = false;
            return true;
        }
    }
    return ydoc_fail(d, n, "%s: expected true or false", what);
}

bool ydoc_int(struct ydoc *d, yaml_node_t *n, const char *what, long min, long max, long *out)
{
    if (plain_scalar(n)) {
        const char *v = (const char *)n->data.scalar.value;
        char *end;
        errno = 0;
        long l = strtol(v, &end, 10);
        if (*v && !errno && !*end && l >= min && l <= max) {
            *out = l;
            return true;
        }
    }
    return ydoc_fail(d, n, "%s: expected an integer from %ld to %ld", what, min, max);
}

bool ydoc_float(struct ydoc *d, yaml_node_t *n, const char *what, double min, double max,
                double *out)
{
    if (plain_scalar(n)) {
        const char *v = (const char *)n->data.scalar.value;
        char *end;
        errno = 0;
        double x = strtod(v, &end);
        if (*v && !errno && !*end && isfinite(x) && x >= min && x <= max) {
            *out = x;
            return true;
        }
    }
    return ydoc_fail(d, n, "%s: expected a number from %g to %g", what, min, max);
}

const char *ydoc_key(struct ydoc *d, const yaml_node_pair_t *pair)
{
    yaml_node_t *k = ydoc_node(d, pair->key);
    return k && k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : "";
}

bool ydoc_check_keys(struct ydoc *d, yaml_node_t *map)
{
    yaml_node_pair_t *start = map->data.mapping.pairs.start;
    yaml_node_pair_t *top = map->data.mapping.pairs.top;
    for (yaml_node_pair_t *p = start; p < top; p++) {
        yaml_node_t *k = ydoc_node(d, p->key);
        if (!k || k->type != YAML_SCALAR_NODE)
            return ydoc_fail(d, k ? k : map, "a key must be a string");
        for (yaml_node_pair_t *q = start; q < p; q++) {
            yaml_node_t *k2 = ydoc_node(d, q->key);
            if (k2->data.scalar.length == k->data.scalar.length &&
                memcmp(k2->data.scalar.value, k->data.scalar.value, k->data.scalar.length) == 0)
                return ydoc_fail(d, k, "duplicate key '%s'", (const char *)k->data.scalar.value);
        }
    }
    return true;
}
