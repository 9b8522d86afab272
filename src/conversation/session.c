/* session.c: conversations in memory and in their YAML files. */
#include "config.h"

#include "src/conversation/session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <yaml.h>

#include "src/store/paths.h"
#include "src/store/store.h"
#include "src/base/utf8.h"
#include "src/base/xalloc.h"
#include "src/store/yamldoc.h"

/* In template.c: the `sampling:` mapping shared by all our files. */
bool sampling_load(struct ydoc *d, yaml_node_t *n, struct sampling *s);

#define EXTRA_MAX_DEPTH 32
#define EXTRA_MAX_NODES 100000

/* ------------------------------------------------ unknown keys, kept as is */

struct xnode {
    yaml_node_type_t type;
    char *value; /* scalar */
    size_t len;
    yaml_scalar_style_t style;
    struct xnode **kids; /* sequence items; mapping: key, value, key, value... */
    size_t n_kids;
};

struct session_extra {
    char **keys;
    struct xnode **vals;
    size_t n;
};

static void xnode_free(struct xnode *x)
{
    if (!x)
        return;
    for (size_t i = 0; i < x->n_kids; i++)
        xnode_free(x->kids[i]);
    free(x->kids);
    free(x->value);
    free(x);
}

static void extra_free(struct session_extra *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->n; i++) {
        free(e->keys[i]);
        xnode_free(e->vals[i]);
    }
    free(e->keys);
    free(e->vals);
    free(e);
}

/* Copy a node (aliases become copies; depth and size are bounded so that
 * a hostile file cannot blow up). */
static struct xnode *xnode_copy(struct ydoc *d, yaml_node_t *n, int depth, size_t *budget)
{
    if (depth > EXTRA_MAX_DEPTH || *budget == 0) {
        ydoc_fail(d, n, "unknown field nested too deeply or too large to keep");
        return NULL;
    }
    (*budget)--;
    struct xnode *x = x_calloc(1, sizeof *x);
    x->type = n->type;
    if (n->type == YAML_SCALAR_NODE) {
        x->value = x_malloc(n->data.scalar.length + 1);
        memcpy(x->value, n->data.scalar.value, n->data.scalar.length);
        x->value[n->data.scalar.length] = '\0';
        x->len = n->data.scalar.length;
        x->style = n->data.scalar.style;
        return x;
    }
    size_t count;
    if (n->type == YAML_SEQUENCE_NODE)
        count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    else
        count = 2 * (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    x->kids = x_calloc(count ? count : 1, sizeof *x->kids);
    for (size_t i = 0; i < count; i++) {
        int index;
        if (n->type == YAML_SEQUENCE_NODE)
            index = n->data.sequence.items.start[i];
        else if (i % 2 == 0)
            index = n->data.mapping.pairs.start[i / 2].key;
        else
            index = n->data.mapping.pairs.start[i / 2].value;
        struct xnode *k = xnode_copy(d, ydoc_node(d, index), depth + 1, budget);
        if (!k) {
            xnode_free(x);
            return NULL;
        }
        x->kids[x->n_kids++] = k;
    }
    return x;
}

static bool extra_add(struct ydoc *d, struct session_extra **pe, const char *key, yaml_node_t *v,
                      size_t *budget)
{
    struct xnode *x = xnode_copy(d, v, 0, budget);
    if (!x)
        return false;
    struct session_extra *e = *pe;
    if (!e)
        e = *pe = x_calloc(1, sizeof *e);
    e->keys = x_reallocarray(e->keys, e->n + 1, sizeof *e->keys);
    e->vals = x_reallocarray(e->vals, e->n + 1, sizeof *e->vals);
    e->keys[e->n] = x_strdup(key);
    e->vals[e->n++] = x;
    return true;
}

/* -------------------------------------------------- the tree's storage */

/* A new id (s->next_id + 1). */
static uint32_t session_new_id(struct session *s)
{
    return ++s->next_id;
}

/* One more zeroed message at the end of *v (n of cap). */
static struct message *grow(struct message **v, size_t *n, size_t *cap)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        *v = x_reallocarray(*v, *cap, sizeof **v);
    }
    struct message *m = &(*v)[(*n)++];
    memset(m, 0, sizeof *m);
    return m;
}

struct message *session_alt_append(struct session *s)
{
    return grow(&s->alts, &s->n_alts, &s->cap_alts);
}

struct message *session_path_slot(struct session *s)
{
    return grow(&s->msgs, &s->n_msgs, &s->cap_msgs);
}

/* Free what a message owns (its content, its unknown keys). */
static void session_message_fini(struct message *m)
{
    free(m->content);
    free(m->model);
    extra_free(m->extra);
    memset(m, 0, sizeof *m);
}

/* Drop the other branches' messages that descend from any of ids[0, n)
 * (the path messages being deleted). */
static void session_forget_branches_of(struct session *s, const uint32_t *ids, size_t n)
{
    size_t n_doomed = n, cap = n + 16;
    uint32_t *doomed = x_malloc(cap * sizeof *doomed);
    memcpy(doomed, ids, n * sizeof *ids);
    /* Each pass removes the alternatives whose parent is doomed, which
     * dooms their own children: a subtree goes in depth passes. */
    for (bool again = true; again;) {
        again = false;
        for (size_t j = 0; j < s->n_alts;) {
            bool gone = false;
            for (size_t d = 0; d < n_doomed && !gone; d++)
                gone = s->alts[j].parent == doomed[d];
            if (!gone) {
                j++;
                continue;
            }
            if (n_doomed == cap)
                doomed = x_reallocarray(doomed, cap *= 2, sizeof *doomed);
            doomed[n_doomed++] = s->alts[j].id;
            session_message_fini(&s->alts[j]);
            s->alts[j] = s->alts[--s->n_alts];
            again = true;
        }
    }
    free(doomed);
}

const struct message *session_find_id(const struct session *s, uint32_t id)
{
    for (size_t i = 0; i < s->n_msgs; i++)
        if (s->msgs[i].id == id)
            return &s->msgs[i];
    for (size_t i = 0; i < s->n_alts; i++)
        if (s->alts[i].id == id)
            return &s->alts[i];
    return NULL;
}

static bool fault(struct session_tree_fault *f, bool in_branches, size_t index)
{
    f->in_branches = in_branches;
    f->index = index;
    return false;
}

/* Every message by id: duplicates side by side, parents found by bisection. */
struct by_id {
    uint32_t id;
    size_t index; /* into msgs, then alts */
};

static int by_id_then_index(const void *a, const void *b)
{
    const struct by_id *x = a, *y = b;
    if (x->id != y->id)
        return (x->id > y->id) - (x->id < y->id);
    return (x->index > y->index) - (x->index < y->index);
}

static size_t find_by_id(const struct by_id *ids, size_t n, uint32_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ids[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && ids[lo].id == id ? ids[lo].index : SIZE_MAX;
}

/* Sorting and remembering which ancestors already reached the root keep a
 * session of a million messages to a fraction of a second (pairwise id
 * comparisons and a walk to the root per message were quadratic). */
bool session_tree_valid(const struct session *s, struct session_tree_fault *f)
{
    size_t total = s->n_msgs + s->n_alts;
    if (total == 0)
        return true;
#define AT(a) ((a) < s->n_msgs ? &s->msgs[a] : &s->alts[(a) - s->n_msgs])
    struct by_id *ids = x_malloc(total * sizeof *ids);
    for (size_t a = 0; a < total; a++)
        ids[a] = (struct by_id){AT(a)->id, a};
    qsort(ids, total, sizeof *ids, by_id_then_index);
    /* the first message (in file order) whose id an earlier one has */
    size_t dup = SIZE_MAX;
    for (size_t r = 1; r < total; r++)
        if (ids[r].id == ids[r - 1].id && (r < 2 || ids[r - 2].id != ids[r].id) &&
            ids[r].index < dup)
            dup = ids[r].index;
    bool okay = true;
    if (dup != SIZE_MAX) {
        snprintf(f->what, sizeof f->what, "id %u is already the id of another message",
                 AT(dup)->id);
        okay = fault(f, dup >= s->n_msgs, dup < s->n_msgs ? dup : dup - s->n_msgs);
    }
    /* 0: not seen, 1: on the walk now, 2: leads to the root */
    unsigned char *state = x_calloc(total, 1);
    size_t *walk = x_malloc(total * sizeof *walk);
    for (size_t j = 0; okay && j < s->n_alts; j++) {
        size_t n_walk = 0, a = s->n_msgs + j;
        uint32_t at = s->alts[j].parent;
        while (okay && state[a] == 0) {
            state[a] = 1;
            walk[n_walk++] = a;
            if (at == 0) {
                break;
            }
            size_t p = find_by_id(ids, total, at);
            if (p == SIZE_MAX) {
                snprintf(f->what, sizeof f->what, "%s %u is not the id of any message",
                         at == s->alts[j].parent ? "its parent" : "an ancestor's parent", at);
                okay = fault(f, true, j);
            } else if (state[p] == 1) {
                snprintf(f->what, sizeof f->what,
                         "its parents form a cycle (id %u never leads back to the first message)",
                         s->alts[j].id);
                okay = fault(f, true, j);
            } else {
                a = p;
                at = AT(p)->parent;
            }
        }
        for (size_t w = 0; w < n_walk; w++)
            state[walk[w]] = 2;
    }
#undef AT
    free(walk);
    free(state);
    free(ids);
    return okay;
}

/* ------------------------------------------------------------ in memory */

struct session *session_new(const char *name)
{
    struct session *s = x_calloc(1, sizeof *s);
    s->version = SESSION_FORMAT_VERSION;
    s->name = x_strdup(name ? name : "");
    s->created = s->updated = time(NULL);
    s->sampling.p = elm_sampler_default_params();
    return s;
}

void session_free(struct session *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_msgs; i++)
        session_message_fini(&s->msgs[i]);
    free(s->msgs);
    for (size_t i = 0; i < s->n_alts; i++)
        session_message_fini(&s->alts[i]);
    free(s->alts);
    free(s->name);
    free(s->model);
    free(s->template_name);
    free(s->system);
    free(s->role);
    free(s->format);
    extra_free(s->extra);
    free(s);
}

struct message *session_append(struct session *s, enum role role, const char *content)
{
    struct message *m = session_path_slot(s);
    m->role = role;
    m->content = x_strdup(content ? content : "");
    m->time = time(NULL);
    m->id = session_new_id(s);
    m->parent = s->n_msgs > 1 ? s->msgs[s->n_msgs - 2].id : 0;
    return m;
}

void session_set_content(struct session *s, size_t i, const char *content)
{
    if (i >= s->n_msgs)
        return;
    free(s->msgs[i].content);
    s->msgs[i].content = x_strdup(content ? content : "");
}

void session_truncate(struct session *s, size_t n_keep)
{
    if (n_keep >= s->n_msgs)
        return;
    size_t n = s->n_msgs - n_keep;
    uint32_t *ids = x_malloc(n * sizeof *ids);
    for (size_t k = 0; k < n; k++)
        ids[k] = s->msgs[n_keep + k].id;
    session_forget_branches_of(s, ids, n);
    free(ids);
    while (s->n_msgs > n_keep)
        session_message_fini(&s->msgs[--s->n_msgs]);
}

void session_remove(struct session *s, size_t i, size_t n)
{
    if (i >= s->n_msgs || n == 0)
        return;
    if (n > s->n_msgs - i)
        n = s->n_msgs - i;
    uint32_t before = s->msgs[i].parent, last = s->msgs[i + n - 1].id;
    /* what follows the last removed message (the path and its alternatives)
     * now follows the message before the first */
    for (size_t j = 0; j < s->n_alts; j++)
        if (s->alts[j].parent == last)
            s->alts[j].parent = before;
    if (i + n < s->n_msgs)
        s->msgs[i + n].parent = before;
    if (n > 1) {
        uint32_t *ids = x_malloc((n - 1) * sizeof *ids);
        for (size_t k = 0; k + 1 < n; k++)
            ids[k] = s->msgs[i + k].id;
        session_forget_branches_of(s, ids, n - 1);
        free(ids);
    }
    for (size_t k = i; k < i + n; k++)
        session_message_fini(&s->msgs[k]);
    memmove(&s->msgs[i], &s->msgs[i + n], (s->n_msgs - i - n) * sizeof *s->msgs);
    s->n_msgs -= n;
}

struct template_msg *session_template_msgs(const struct session *s, bool in_context_only,
                                           size_t *n)
{
    struct template_msg *v = x_calloc(s->n_msgs ? s->n_msgs : 1, sizeof *v);
    size_t k = 0;
    for (size_t i = 0; i < s->n_msgs; i++) {
        if (in_context_only && s->msgs[i].out_of_context)
            continue;
        if (s->msgs[i].role == ROLE_SYSTEM)
            continue;
        v[k].role = s->msgs[i].role;
        v[k++].content = s->msgs[i].content;
    }
    *n = k;
    return v;
}

bool session_name_valid(const char *name)
{
    if (!name || !*name || name[0] == '.' || strlen(name) > 200)
        return false;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p == '/' || *p < 0x20 || *p == 0x7F)
            return false;
    return utf8_valid(name, strlen(name), NULL);
}

char *session_path_for(const char *name)
{
    if (!session_name_valid(name))
        return NULL;
    char *dir = paths_dir(PATHS_DATA, "sessions");
    char *path = x_asprintf("%s/%s.yaml", dir, name);
    free(dir);
    return path;
}

/* --------------------------------------------------------------- writing */

struct outbuf {
    char *s;
    size_t n, cap;
};

static int write_handler(void *data, unsigned char *buffer, size_t size)
{
    struct outbuf *b = data;
    if (b->n + size + 1 > b->cap) {
        b->cap = (b->n + size + 1) * 2;
        b->s = x_realloc(b->s, b->cap);
    }
    memcpy(b->s + b->n, buffer, size);
    b->n += size;
    b->s[b->n] = '\0';
    return 1;
}

static void emit(yaml_emitter_t *e, yaml_event_t *ev)
{
    if (!yaml_emitter_emit(e, ev))
        x_fatal("YAML emitter: %s", e->problem ? e->problem : "error");
}

/* A scalar; text that is not UTF-8 is written with U+FFFD. */
static void emit_scalar(yaml_emitter_t *e, const char *s, size_t len, yaml_scalar_style_t style)
{
    char *clean = NULL;
    if (!utf8_valid(s, len, NULL)) {
        clean = utf8_sanitize(s, len);
        s = clean;
        len = strlen(clean);
    }
    yaml_event_t ev;
    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)len, 1, 1, style))
        x_fatal("out of memory");
    emit(e, &ev);
    free(clean);
}

static void emit_str(yaml_emitter_t *e, const char *s)
{
    emit_scalar(e, s, strlen(s), YAML_ANY_SCALAR_STYLE);
}

/* A string value that must read back as a string (never a number or bool). */
static void emit_text(yaml_emitter_t *e, const char *s)
{
    emit_scalar(e, s, strlen(s), YAML_LITERAL_SCALAR_STYLE);
}

static void emit_quoted(yaml_emitter_t *e, const char *s)
{
    emit_scalar(e, s, strlen(s), YAML_DOUBLE_QUOTED_SCALAR_STYLE);
}

static void emit_plain(yaml_emitter_t *e, const char *s)
{
    emit_scalar(e, s, strlen(s), YAML_PLAIN_SCALAR_STYLE);
}

static void emit_map_start(yaml_emitter_t *e, bool flow)
{
    yaml_event_t ev;
    yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
                                        flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE);
    emit(e, &ev);
}

static void emit_map_end(yaml_emitter_t *e)
{
    yaml_event_t ev;
    yaml_mapping_end_event_initialize(&ev);
    emit(e, &ev);
}

static void emit_time(yaml_emitter_t *e, const char *key, time_t t)
{
    char buf[64];
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, sizeof buf, "1970-01-01T00:00:00Z");
    emit_str(e, key);
    emit_plain(e, buf);
}

static void emit_xnode(yaml_emitter_t *e, const struct xnode *x)
{
    yaml_event_t ev;
    if (x->type == YAML_SCALAR_NODE) {
        emit_scalar(e, x->value, x->len, x->style);
    } else if (x->type == YAML_SEQUENCE_NODE) {
        yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_ANY_SEQUENCE_STYLE);
        emit(e, &ev);
        for (size_t i = 0; i < x->n_kids; i++)
            emit_xnode(e, x->kids[i]);
        yaml_sequence_end_event_initialize(&ev);
        emit(e, &ev);
    } else {
        emit_map_start(e, false);
        for (size_t i = 0; i < x->n_kids; i++)
            emit_xnode(e, x->kids[i]);
        emit_map_end(e);
    }
}

static void emit_extra(yaml_emitter_t *e, const struct session_extra *x)
{
    for (size_t i = 0; x && i < x->n; i++) {
        emit_str(e, x->keys[i]);
        emit_xnode(e, x->vals[i]);
    }
}

static void emit_float(yaml_emitter_t *e, const char *key, double v)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.9g", v);
    emit_str(e, key);
    emit_plain(e, buf);
}

static void emit_long(yaml_emitter_t *e, const char *key, long long v)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%lld", v);
    emit_str(e, key);
    emit_plain(e, buf);
}

static void emit_bool(yaml_emitter_t *e, const char *key, bool v)
{
    emit_str(e, key);
    emit_plain(e, v ? "true" : "false");
}

static void emit_sampling(yaml_emitter_t *e, const struct sampling *s)
{
    if (!s->set)
        return;
    emit_str(e, "sampling");
    emit_map_start(e, false);
    if (s->set & ELM_SAMPLING_TEMPERATURE)
        emit_float(e, "temperature", s->p.temperature);
    if (s->set & ELM_SAMPLING_TOP_K)
        emit_long(e, "top_k", s->p.top_k);
    if (s->set & ELM_SAMPLING_TOP_P)
        emit_float(e, "top_p", s->p.top_p);
    if (s->set & ELM_SAMPLING_MIN_P)
        emit_float(e, "min_p", s->p.min_p);
    if (s->set & ELM_SAMPLING_REPEAT_PENALTY)
        emit_float(e, "repeat_penalty", s->p.repeat_penalty);
    if (s->set & ELM_SAMPLING_REPEAT_LAST_N)
        emit_long(e, "repeat_last_n", s->p.repeat_last_n);
    if (s->set & SAMPLING_SEED)
        emit_long(e, "seed", (long long)s->p.seed);
    if (s->set & SAMPLING_MAX_TOKENS)
        emit_long(e, "max_tokens", s->max_tokens);
    emit_map_end(e);
}

/* One message of messages: or branches: (those say their parent). */
static void emit_message(yaml_emitter_t *e, const struct message *m, bool with_parent)
{
    emit_map_start(e, false);
    emit_str(e, "role");
    emit_plain(e, role_name(m->role));
    emit_long(e, "id", m->id);
    if (with_parent)
        emit_long(e, "parent", m->parent);
    if (m->time)
        emit_time(e, "time", m->time);
    if (m->interrupted)
        emit_bool(e, "interrupted", true);
    if (m->out_of_context)
        emit_bool(e, "out_of_context", true);
    if (m->pinned)
        emit_bool(e, "pinned", true);
    if (m->model) {
        emit_str(e, "model");
        emit_quoted(e, m->model);
    }
    emit_extra(e, m->extra);
    emit_str(e, "content");
    emit_text(e, m->content);
    emit_map_end(e);
}

static void emit_messages(yaml_emitter_t *e, const struct message *msgs, size_t n,
                          bool with_parent)
{
    yaml_event_t ev;
    yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE);
    emit(e, &ev);
    for (size_t i = 0; i < n; i++)
        emit_message(e, &msgs[i], with_parent);
    yaml_sequence_end_event_initialize(&ev);
    emit(e, &ev);
}

static int by_stamp(const void *a, const void *b)
{
    uint64_t x = (*(const struct message *const *)a)->stamp;
    uint64_t y = (*(const struct message *const *)b)->stamp;
    return (x > y) - (x < y);
}

char *session_to_yaml(const struct session *s, size_t *len)
{
    yaml_emitter_t e;
    if (!yaml_emitter_initialize(&e))
        x_fatal("out of memory");
    struct outbuf b = {0};
    yaml_emitter_set_output(&e, write_handler, &b);
    yaml_emitter_set_unicode(&e, 1);
    yaml_emitter_set_width(&e, -1);
    yaml_emitter_set_indent(&e, 2);
    yaml_emitter_set_break(&e, YAML_LN_BREAK);
    yaml_event_t ev;
    yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
    emit(&e, &ev);
    yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
    emit(&e, &ev);
    emit_map_start(&e, false);

    emit_long(&e, "elmchat_session", SESSION_FORMAT_VERSION);
    emit_str(&e, "name");
    emit_quoted(&e, s->name);
    emit_time(&e, "created", s->created);
    emit_time(&e, "updated", s->updated);
    if (s->model) {
        emit_str(&e, "model");
        emit_quoted(&e, s->model);
    }
    if (s->template_name) {
        emit_str(&e, "template");
        emit_quoted(&e, s->template_name);
    }
    if (s->system) {
        emit_str(&e, "system");
        emit_text(&e, s->system);
    }
    if (s->role) {
        emit_str(&e, "role");
        emit_quoted(&e, s->role);
    }
    if (s->format) {
        emit_str(&e, "format");
        emit_quoted(&e, s->format);
    }
    emit_sampling(&e, &s->sampling);
    emit_extra(&e, s->extra);

    emit_str(&e, "messages");
    emit_messages(&e, s->msgs, s->n_msgs, false);
    if (s->n_alts) {
        /* by stamp, so that a reload knows which branch was left last */
        const struct message **alts = x_malloc(s->n_alts * sizeof *alts);
        for (size_t j = 0; j < s->n_alts; j++)
            alts[j] = &s->alts[j];
        qsort(alts, s->n_alts, sizeof *alts, by_stamp);
        struct message *sorted = x_malloc(s->n_alts * sizeof *sorted);
        for (size_t j = 0; j < s->n_alts; j++)
            sorted[j] = *alts[j];
        emit_str(&e, "branches");
        emit_messages(&e, sorted, s->n_alts, true);
        free(sorted);
        free(alts);
    }
    /* Last: a file cut short anywhere lacks it (see session.h). */
    emit_bool(&e, "end", true);

    emit_map_end(&e);
    yaml_document_end_event_initialize(&ev, 1);
    emit(&e, &ev);
    yaml_stream_end_event_initialize(&ev);
    emit(&e, &ev);
    yaml_emitter_delete(&e);
    *len = b.n;
    return b.s;
}

/* Room for one more turn: the text a load accepts less a margin for the
 * YAML around it and the reply to come (a reply is far smaller). */
#define SESSION_ROOM_TEXT (SESSION_MAX_FILE_SIZE / 4 * 3)

bool session_has_room(const struct session *s, size_t text_len, char *err, size_t err_size)
{
    if (s->n_msgs + s->n_alts + 2 > SESSION_MAX_MESSAGES) {
        snprintf(err, err_size, "conversation full: /new starts another (%zu messages, the most a "
                                "session keeps)",
                 s->n_msgs + s->n_alts);
        return false;
    }
    size_t bytes = text_len;
    for (size_t i = 0; i < s->n_msgs; i++)
        bytes += strlen(s->msgs[i].content);
    for (size_t j = 0; j < s->n_alts; j++)
        bytes += strlen(s->alts[j].content);
    if (bytes > SESSION_ROOM_TEXT) {
        snprintf(err, err_size, "conversation full: /new starts another (%d MiB of text, the most a "
                                "session keeps)",
                 SESSION_ROOM_TEXT >> 20);
        return false;
    }
    return true;
}

int session_save(struct session *s, const char *path, char *err, size_t err_size)
{
    time_t old = s->updated;
    s->updated = time(NULL);
    size_t len;
    char *text = session_to_yaml(s, &len);
    int rc = 0;
    /* a file a load refuses is not written: the one there stays */
    if (len > SESSION_MAX_FILE_SIZE) {
        snprintf(err, err_size, "%s: the session is %zu MiB as YAML, more than the %d MiB a load "
                                "accepts: not written",
                 path, len >> 20, SESSION_MAX_FILE_SIZE >> 20);
        rc = -EFBIG;
    } else {
        rc = store_write_atomic(path, text, len, err, err_size);
    }
    free(text);
    if (rc < 0)
        s->updated = old;
    return rc;
}

/* --------------------------------------------------------------- reading */

static bool get_time(struct ydoc *d, yaml_node_t *n, const char *what, time_t *out)
{
    const char *v;
    if (!ydoc_str(d, n, what, &v, NULL))
        return false;
    struct tm tm = {0};
    char z = 0;
    int used = 0;
    if (sscanf(v, "%4d-%2d-%2dT%2d:%2d:%2d%c%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
               &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &z, &used) != 7 ||
        z != 'Z' || v[used] || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
        tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        return ydoc_fail(d, n, "%s: expected a UTC time like 2026-01-31T12:00:00Z", what);
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    *out = timegm(&tm);
    return true;
}

#define ID_MAX 2147483647L

/* messages[index] (list "messages", the path) or branches[index] into m. */
static bool load_message(struct ydoc *d, yaml_node_t *n, struct message *m, const char *list,
                         size_t index, size_t *budget, bool *have_id, bool *have_parent)
{
    char what[64];
    snprintf(what, sizeof what, "%s[%zu]", list, index);
    if (!ydoc_expect(d, n, YAML_MAPPING_NODE, what) || !ydoc_check_keys(d, n))
        return false;
    m->role = ROLE_USER;
    m->content = x_strdup("");
    bool have_role = false, have_content = false;
    *have_id = *have_parent = false;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        const char *key = ydoc_key(d, p);
        yaml_node_t *v = ydoc_node(d, p->value);
        snprintf(what, sizeof what, "%s[%zu].%s", list, index, key);
        bool okay = true;
        long x;
        if (strcmp(key, "role") == 0) {
            const char *r;
            okay = ydoc_str(d, v, what, &r, NULL);
            if (okay && !role_parse(r, &m->role))
                return ydoc_fail(d, v, "%s: expected user, assistant or system", what);
            have_role = true;
        } else if (strcmp(key, "content") == 0) {
            char *c = ydoc_strdup(d, v, what);
            okay = c != NULL;
            if (okay) {
                free(m->content);
                m->content = c;
                have_content = true;
            }
        } else if (strcmp(key, "id") == 0) {
            okay = *have_id = ydoc_int(d, v, what, 1, ID_MAX, &x);
            m->id = (uint32_t)x;
        } else if (strcmp(key, "parent") == 0) {
            okay = *have_parent = ydoc_int(d, v, what, 0, ID_MAX, &x);
            m->parent = (uint32_t)x;
        } else if (strcmp(key, "time") == 0) {
            okay = get_time(d, v, what, &m->time);
        } else if (strcmp(key, "interrupted") == 0) {
            okay = ydoc_bool(d, v, what, &m->interrupted);
        } else if (strcmp(key, "out_of_context") == 0) {
            okay = ydoc_bool(d, v, what, &m->out_of_context);
        } else if (strcmp(key, "pinned") == 0) {
            okay = ydoc_bool(d, v, what, &m->pinned);
        } else if (strcmp(key, "model") == 0) {
            okay = (m->model = ydoc_strdup(d, v, what)) != NULL;
        } else {
            okay = extra_add(d, &m->extra, key, v, budget);
        }
        if (!okay)
            return false;
    }
    if (!have_role)
        return ydoc_fail(d, n, "%s[%zu]: missing key 'role'", list, index);
    if (!have_content)
        return ydoc_fail(d, n, "%s[%zu]: missing key 'content'", list, index);
    return true;
}


/* YAML aliases let a small file name one message many times: the text
 * they expand to is bounded like a file's size, and so is the count. */

static bool within_limits(struct ydoc *d, yaml_node_t *at, const struct session *s,
                          size_t *text_bytes, const struct message *m)
{
    *text_bytes += strlen(m->content);
    if (*text_bytes > SESSION_MAX_FILE_SIZE)
        return ydoc_fail(d, at, "the messages hold more than %d MiB of text (YAML aliases?): "
                                "refused",
                         SESSION_MAX_FILE_SIZE >> 20);
    if (s->n_msgs + s->n_alts > SESSION_MAX_MESSAGES)
        return ydoc_fail(d, at, "more than %d messages: refused", SESSION_MAX_MESSAGES);
    return true;
}

/* messages: (the current path; ids given or not, parents implied) then
 * branches: (each with its id and parent), then the tree's checks. */
static bool load_tree(struct ydoc *d, struct session *s, yaml_node_t *msgs, yaml_node_t *branches,
                      size_t *budget)
{
    if (!ydoc_expect(d, msgs, YAML_SEQUENCE_NODE, "messages"))
        return false;
    bool *given = x_calloc((size_t)(msgs->data.sequence.items.top - msgs->data.sequence.items.start) + 1,
                           sizeof *given);
    bool okay = true;
    size_t text_bytes = 0;
    for (yaml_node_item_t *it = msgs->data.sequence.items.start;
         okay && it < msgs->data.sequence.items.top; it++) {
        size_t i = (size_t)(it - msgs->data.sequence.items.start);
        bool have_parent;
        yaml_node_t *n = ydoc_node(d, *it);
        okay = load_message(d, n, session_path_slot(s), "messages", i, budget, &given[i], &have_parent) &&
               within_limits(d, n, s, &text_bytes, &s->msgs[i]);
        uint32_t want = i ? s->msgs[i - 1].id : 0;
        if (okay && have_parent && given[i] && i > 0 && !given[i - 1])
            okay = ydoc_fail(d, n, "messages[%zu]: a parent, but the message before has no id", i);
        else if (okay && have_parent && (i == 0 || given[i - 1]) && s->msgs[i].parent != want)
            okay = ydoc_fail(d, n,
                             "messages[%zu]: parent %u, but the current path's message before it "
                             "is %u (messages lists one path, in order; other branches go under "
                             "'branches')",
                             i, s->msgs[i].parent, want);
        if (okay && given[i] && s->msgs[i].id > s->next_id)
            s->next_id = s->msgs[i].id;
    }
    if (okay && branches) {
        okay = ydoc_expect(d, branches, YAML_SEQUENCE_NODE, "branches");
        for (yaml_node_item_t *it = branches->data.sequence.items.start;
             okay && it < branches->data.sequence.items.top; it++) {
            size_t j = (size_t)(it - branches->data.sequence.items.start);
            yaml_node_t *n = ydoc_node(d, *it);
            bool have_id, have_parent;
            struct message *m = session_alt_append(s);
            okay = load_message(d, n, m, "branches", j, budget, &have_id, &have_parent) &&
                   within_limits(d, n, s, &text_bytes, m);
            if (okay && !have_id)
                okay = ydoc_fail(d, n, "branches[%zu]: missing key 'id'", j);
            if (okay && !have_parent)
                okay = ydoc_fail(d, n, "branches[%zu]: missing key 'parent'", j);
            m->stamp = ++s->stamp; /* the file lists them as they left the path */
            if (okay && m->id > s->next_id)
                s->next_id = m->id;
        }
    }
    /* Ids for path messages written without one (format 1), then the
     * implied parents. */
    for (size_t i = 0; okay && i < s->n_msgs; i++) {
        if (!given[i])
            s->msgs[i].id = session_new_id(s);
        s->msgs[i].parent = i ? s->msgs[i - 1].id : 0;
    }
    free(given);
    struct session_tree_fault f;
    if (okay && !session_tree_valid(s, &f)) {
        yaml_node_t *list = f.in_branches ? branches : msgs;
        okay = ydoc_fail(d, ydoc_node(d, list->data.sequence.items.start[f.index]),
                         "%s[%zu]: %s; the file was not changed", f.in_branches ? "branches" : "messages",
                         f.index, f.what);
    }
    return okay;
}

static bool load_session(struct ydoc *d, struct session *s)
{
    yaml_node_t *root = ydoc_root(d);
    if (!ydoc_check_keys(d, root))
        return false;
    size_t budget = EXTRA_MAX_NODES;
    yaml_node_t *version = NULL, *end = NULL, *msgs = NULL, *branches = NULL;
    bool have_name = false;
    /* The version first: a newer file is refused before anything else. */
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++)
        if (strcmp(ydoc_key(d, p), "elmchat_session") == 0)
            version = ydoc_node(d, p->value);
    if (!version)
        return ydoc_fail(d, root, "not an elmchat session (no 'elmchat_session' version key)");
    long v;
    if (!ydoc_int(d, version, "elmchat_session", 1, 1000000, &v))
        return false;
    if (v > SESSION_FORMAT_VERSION)
        return ydoc_fail(d, version,
                         "session format version %ld is newer than this elmchat reads (%d): "
                         "upgrade elmchat; the file was not changed",
                         v, SESSION_FORMAT_VERSION);
    s->version = (int)v;
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        const char *key = ydoc_key(d, p);
        yaml_node_t *n = ydoc_node(d, p->value);
        bool okay = true;
        if (strcmp(key, "elmchat_session") == 0) {
            continue;
        } else if (strcmp(key, "name") == 0) {
            char *x = ydoc_strdup(d, n, "name");
            okay = x != NULL;
            if (okay) {
                free(s->name);
                s->name = x;
                have_name = true;
            }
        } else if (strcmp(key, "created") == 0) {
            okay = get_time(d, n, "created", &s->created);
        } else if (strcmp(key, "updated") == 0) {
            okay = get_time(d, n, "updated", &s->updated);
        } else if (strcmp(key, "model") == 0) {
            okay = (s->model = ydoc_strdup(d, n, "model")) != NULL;
        } else if (strcmp(key, "template") == 0) {
            okay = (s->template_name = ydoc_strdup(d, n, "template")) != NULL;
        } else if (strcmp(key, "system") == 0) {
            okay = (s->system = ydoc_strdup(d, n, "system")) != NULL;
        } else if (strcmp(key, "role") == 0) {
            okay = (s->role = ydoc_strdup(d, n, "role")) != NULL;
        } else if (strcmp(key, "format") == 0) {
            okay = (s->format = ydoc_strdup(d, n, "format")) != NULL;
        } else if (strcmp(key, "sampling") == 0) {
            okay = sampling_load(d, n, &s->sampling);
        } else if (strcmp(key, "messages") == 0) {
            msgs = n;
        } else if (strcmp(key, "branches") == 0) {
            /* in a format-1 file too: kept as an unknown key, it would be
             * read as the branches once saved as format 2 (a fuzz finding) */
            branches = n;
        } else if (strcmp(key, "end") == 0) {
            end = n;
            bool t;
            okay = ydoc_bool(d, n, "end", &t);
            if (okay && !t)
                okay = ydoc_fail(d, n, "end: expected true");
            if (okay && p + 1 != root->data.mapping.pairs.top)
                okay = ydoc_fail(d, ydoc_node(d, p->key), "'end' must be the last key");
        } else {
            okay = extra_add(d, &s->extra, key, n, &budget);
        }
        if (!okay)
            return false;
    }
    if (!have_name)
        return ydoc_fail(d, root, "missing key 'name'");
    if (!msgs)
        return ydoc_fail(d, root, "missing key 'messages'");
    if (!load_tree(d, s, msgs, branches, &budget))
        return false;
    if (!end)
        return ydoc_fail(d, NULL,
                         "the file is cut short (no final 'end: true'); it was not changed");
    return true;
}

struct session *session_from_yaml(const char *text, size_t len, const char *name, char *err,
                                  size_t err_size)
{
    struct ydoc d;
    struct session *s = NULL;
    if (ydoc_load(&d, name, text, len, err, err_size)) {
        s = session_new("");
        s->created = s->updated = 0;
        if (!load_session(&d, s)) {
            session_free(s);
            s = NULL;
        }
    }
    ydoc_fini(&d);
    return s;
}

struct session *session_load(const char *path, char *err, size_t err_size)
{
    char *text;
    size_t len;
    if (store_read_file(path, SESSION_MAX_FILE_SIZE, &text, &len, err, err_size) < 0)
        return NULL;
    struct session *s = session_from_yaml(text, len, path, err, err_size);
    free(text);
    return s;
}

/* -------------------------------------------------------------- markdown */

char *session_to_markdown(const struct session *s)
{
    struct outbuf b = {0};
    char *head = x_asprintf("# %s\n", s->name);
    write_handler(&b, (unsigned char *)head, strlen(head));
    free(head);
    if (s->system && *s->system) {
        const char *h = "\n**System**\n\n";
        write_handler(&b, (unsigned char *)h, strlen(h));
        write_handler(&b, (unsigned char *)s->system, strlen(s->system));
        write_handler(&b, (unsigned char *)"\n", 1);
    }
    for (size_t i = 0; i < s->n_msgs; i++) {
        const struct message *m = &s->msgs[i];
        const char *who = m->role == ROLE_USER ? "User"
                          : m->role == ROLE_ASSISTANT ? "Assistant" : "System";
        char *h = x_asprintf("\n**%s**%s\n\n", who, m->interrupted ? " (interrupted)" : "");
        write_handler(&b, (unsigned char *)h, strlen(h));
        free(h);
        write_handler(&b, (unsigned char *)m->content, strlen(m->content));
        write_handler(&b, (unsigned char *)"\n", 1);
    }
    return b.s;
}
