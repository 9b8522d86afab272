/* yamldoc.h: loading a YAML file into a libyaml document with limits, and
 * typed access to its nodes with "FILE:LINE:COLUMN: message" errors (lines
 * and columns 1-based; libyaml's marks are 0-based).  Shared by template,
 * session and config files.  Any thread (one document per thread). */
#ifndef ELMCHAT_SRC_YAMLDOC_H
#define ELMCHAT_SRC_YAMLDOC_H

#include <stdbool.h>
#include <stddef.h>

#include <yaml.h>

#include "src/base/macros.h"

struct ydoc {
    yaml_document_t doc;
    bool loaded;
    const char *file; /* borrowed, for messages */
    char *err;        /* borrowed caller buffer */
    size_t err_size;
};

/* Deeper nesting is refused before libyaml builds the document (its
 * scanner's cost grows with the depth at every token). */
#define YDOC_MAX_DEPTH 64

/* Parse text (len bytes) as exactly one YAML document whose root is a
 * mapping.  Checks UTF-8 first (error at the first bad byte), then the
 * nesting (at most YDOC_MAX_DEPTH), then parses.  false with err filled.
 * d must be ydoc_fini'ed either way. */
bool ydoc_load(struct ydoc *d, const char *file, const char *text, size_t len, char *err,
               size_t err_size);
/* Read the file (at most max_size bytes, else "file too large") and load it. */
bool ydoc_load_file(struct ydoc *d, const char *file, size_t max_size, char *err,
                    size_t err_size);
void ydoc_fini(struct ydoc *d);

yaml_node_t *ydoc_root(struct ydoc *d);
yaml_node_t *ydoc_node(struct ydoc *d, int index);
/* Fill err with "FILE:LINE:COL: message" at node (or "FILE: message" when
 * node is NULL); returns false for `return ydoc_fail(...)`. */
bool ydoc_fail(struct ydoc *d, const yaml_node_t *node, const char *fmt, ...) ATTR_FORMAT(3, 4);

/* Like ydoc_fail, at the character char_offset of scalar n's value when
 * that maps exactly to the file (single-line plain or quoted scalar without
 * escapes before it), else at the start of n. */
bool ydoc_fail_in(struct ydoc *d, const yaml_node_t *n, size_t char_offset, const char *fmt, ...)
    ATTR_FORMAT(4, 5);

/* Typed getters: false (err filled, naming what was expected and `what`)
 * on a wrong type. */
bool ydoc_str(struct ydoc *d, yaml_node_t *n, const char *what, const char **out, size_t *len);
char *ydoc_strdup(struct ydoc *d, yaml_node_t *n, const char *what); /* owned; NULL on error */
bool ydoc_bool(struct ydoc *d, yaml_node_t *n, const char *what, bool *out);
bool ydoc_int(struct ydoc *d, yaml_node_t *n, const char *what, long min, long max, long *out);
bool ydoc_float(struct ydoc *d, yaml_node_t *n, const char *what, double min, double max,
                double *out);
bool ydoc_expect(struct ydoc *d, yaml_node_t *n, yaml_node_type_t type, const char *what);
/* Check a mapping's keys are plain strings and not repeated. */
bool ydoc_check_keys(struct ydoc *d, yaml_node_t *map);
/* The key of a pair as a string (keys are checked scalars). */
const char *ydoc_key(struct ydoc *d, const yaml_node_pair_t *pair);

#endif
