/* session_tree.c: the branches of a session (session_tree.h).
 *
 * The other branches are a flat array searched linearly by the commands
 * that act on one message (no index to keep consistent); what goes over
 * every message (the tree's rows, a transcript drawn whole) sorts every
 * message by parent once (session_sibling_index). */
#include "config.h"

#include "src/conversation/session_tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/xalloc.h"

/* Path message i's parent (also in msgs[i].parent, which session.c keeps
 * true); i == n_msgs: the parent a message sent next gets. */
static uint32_t parent_at(const struct session *s, size_t i)
{
    return i > 0 ? s->msgs[i - 1].id : 0;
}

void session_siblings(const struct session *s, size_t i, size_t *k, size_t *n)
{
    *k = *n = 0;
    if (i >= s->n_msgs)
        return;
    uint32_t id = s->msgs[i].id, parent = parent_at(s, i);
    *k = *n = 1;
    for (size_t j = 0; j < s->n_alts; j++) {
        if (s->alts[j].parent != parent)
            continue;
        ++*n;
        *k += s->alts[j].id < id;
    }
}

size_t session_children_after_path(const struct session *s)
{
    uint32_t last = parent_at(s, s->n_msgs);
    size_t n = 0;
    for (size_t j = 0; j < s->n_alts; j++)
        n += s->alts[j].parent == last;
    return n;
}

void session_stash(struct session *s, size_t n_keep)
{
    for (size_t i = n_keep; i < s->n_msgs; i++) {
        struct message *m = session_alt_append(s);
        *m = s->msgs[i];
        m->stamp = ++s->stamp;
    }
    if (n_keep < s->n_msgs)
        s->n_msgs = n_keep;
}

/* alts[j] onto the end of the path. */
static void take_alt(struct session *s, size_t j)
{
    struct message m = s->alts[j];
    s->alts[j] = s->alts[--s->n_alts];
    m.stamp = 0;
    *session_path_slot(s) = m;
}

static size_t alt_index(const struct session *s, uint32_t id)
{
    for (size_t j = 0; j < s->n_alts; j++)
        if (s->alts[j].id == id)
            return j;
    return SIZE_MAX;
}

size_t session_select(struct session *s, uint32_t id)
{
    /* The chain from the root to id, the root last. */
    size_t n_chain = 0, cap = 16;
    uint32_t *chain = x_malloc(cap * sizeof *chain);
    for (uint32_t at = id; at != 0;) {
        const struct message *m = session_find_id(s, at);
        if (!m || n_chain > s->n_msgs + s->n_alts) { /* none, or a cycle (never after load) */
            free(chain);
            return SIZE_MAX;
        }
        if (n_chain == cap)
            chain = x_reallocarray(chain, cap *= 2, sizeof *chain);
        chain[n_chain++] = at;
        at = m->parent;
    }
    if (n_chain == 0) {
        free(chain);
        return SIZE_MAX;
    }
    /* Where the path leaves the chain. */
    size_t first = 0;
    while (first < n_chain && first < s->n_msgs && s->msgs[first].id == chain[n_chain - 1 - first])
        first++;
    if (first == n_chain) { /* id is on the path already */
        free(chain);
        return s->n_msgs;
    }
    session_stash(s, first);
    for (size_t i = first; i < n_chain; i++)
        take_alt(s, alt_index(s, chain[n_chain - 1 - i]));
    free(chain);
    /* Then down the branch the user was last on. */
    for (;;) {
        uint32_t last = s->msgs[s->n_msgs - 1].id;
        size_t best = SIZE_MAX;
        for (size_t j = 0; j < s->n_alts; j++)
            if (s->alts[j].parent == last && (best == SIZE_MAX || s->alts[j].stamp > s->alts[best].stamp))
                best = j;
        if (best == SIZE_MAX)
            break;
        take_alt(s, best);
    }
    return first;
}

size_t session_branch(struct session *s, size_t i, size_t k)
{
    size_t at, n;
    session_siblings(s, i, &at, &n);
    if (k < 1 || k > n)
        return SIZE_MAX;
    if (k == at)
        return s->n_msgs;
    /* the siblings by id: find the k-th */
    uint32_t parent = parent_at(s, i);
    uint32_t *ids = x_malloc(n * sizeof *ids);
    size_t m = 0;
    ids[m++] = s->msgs[i].id;
    for (size_t j = 0; j < s->n_alts; j++)
        if (s->alts[j].parent == parent)
            ids[m++] = s->alts[j].id;
    uint32_t want = 0;
    for (size_t a = 0; a < m; a++) {
        size_t rank = 1;
        for (size_t b = 0; b < m; b++)
            rank += ids[b] < ids[a];
        if (rank == k)
            want = ids[a];
    }
    free(ids);
    return session_select(s, want);
}

/* ------------------------------------------------ messages by parent */

/* Messages by parent, then id: a node's children are one run of it. */
static int by_parent_id(const void *a, const void *b)
{
    const struct message *x = *(const struct message *const *)a;
    const struct message *y = *(const struct message *const *)b;
    if (x->parent != y->parent)
        return (x->parent > y->parent) - (x->parent < y->parent);
    return (x->id > y->id) - (x->id < y->id);
}

/* The first of all[0, n) at or after (parent, id). */
static size_t lower_bound(const struct message *const *all, size_t n, uint32_t parent,
                          uint32_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (all[mid]->parent < parent || (all[mid]->parent == parent && all[mid]->id < id))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t children_at(const struct message *const *all, size_t n, uint32_t parent)
{
    return lower_bound(all, n, parent, 0);
}

/* Every message, path and other branches, sorted by_parent_id. */
struct session_sibling_index {
    size_t n;
    const struct message **all;
};

struct session_sibling_index *session_sibling_index_new(const struct session *s)
{
    struct session_sibling_index *x = x_calloc(1, sizeof *x);
    x->n = s->n_msgs + s->n_alts;
    x->all = x_malloc((x->n ? x->n : 1) * sizeof *x->all);
    for (size_t i = 0; i < s->n_msgs; i++)
        x->all[i] = &s->msgs[i];
    for (size_t j = 0; j < s->n_alts; j++)
        x->all[s->n_msgs + j] = &s->alts[j];
    qsort(x->all, x->n, sizeof *x->all, by_parent_id);
    return x;
}

void session_siblings_indexed(const struct session_sibling_index *x, const struct session *s,
                              size_t i, size_t *k, size_t *n)
{
    *k = *n = 0;
    if (i >= s->n_msgs)
        return;
    /* ids are below 2^31 (a file's limit), so parent + 1 does not wrap */
    uint32_t parent = parent_at(s, i);
    size_t first = children_at(x->all, x->n, parent);
    *k = 1 + lower_bound(x->all, x->n, parent, s->msgs[i].id) - first;
    *n = children_at(x->all, x->n, parent + 1) - first;
}

void session_sibling_index_free(struct session_sibling_index *x)
{
    if (!x)
        return;
    free(x->all);
    free(x);
}

/* ----------------------------------------------------------------- rows */

/* A run of siblings being listed: [start, end) of all, the next at. */
struct run {
    size_t start, at, end;
    int depth;
};

static struct run run_of(const struct message *const *all, size_t n, uint32_t parent, int depth)
{
    size_t start = children_at(all, n, parent), end = start;
    while (end < n && all[end]->parent == parent)
        end++;
    /* a chain stays at its depth; a branch point indents its children */
    return (struct run){start, start, end, end - start > 1 ? depth + 1 : depth};
}

/* Depth first with a stack of its own (a chain of a million messages would
 * be as deep a recursion), the children found in one sorted index (looking
 * them up by scanning every message made the list quadratic). */
struct session_tree_row *session_tree_rows(const struct session *s, size_t *n)
{
    struct session_sibling_index *x = session_sibling_index_new(s);
    size_t total = x->n;
    const struct message *const *all = x->all;
    struct session_tree_row *rows = x_calloc(total ? total : 1, sizeof *rows);
    struct run *stack = x_malloc((total + 1) * sizeof *stack);
    size_t top = 0;
    stack[top++] = run_of(all, total, 0, 0);
    *n = 0;
    while (top > 0 && *n < total) {
        struct run *r = &stack[top - 1];
        if (r->at == r->end) {
            top--;
            continue;
        }
        const struct message *m = all[r->at++];
        struct session_tree_row *row = &rows[(*n)++];
        row->m = m;
        row->depth = r->depth;
        row->on_path = m >= s->msgs && m < s->msgs + s->n_msgs;
        row->path_index = row->on_path ? (size_t)(m - s->msgs) : 0;
        row->k = r->at - r->start;
        row->n = r->end - r->start;
        struct run kids = run_of(all, total, m->id, r->depth);
        if (kids.end > kids.start && top <= total)
            stack[top++] = kids;
    }
    free(stack);
    session_sibling_index_free(x);
    return rows;
}

/* ------------------------------------------------------- undo and restore */

void session_restore_fini(struct session_restore *r)
{
    free(r->moved);
    *r = (struct session_restore){0};
}

static void reparent(struct session_restore *r, struct message *m, uint32_t parent)
{
    r->moved = x_reallocarray(r->moved, r->n_moved + 1, sizeof *r->moved);
    r->moved[r->n_moved++] = (struct session_reparent){m->id, m->parent};
    m->parent = parent;
}

void session_take_out(struct session *s, size_t i, size_t n, struct session_restore *r)
{
    session_restore_fini(r);
    if (n == 0 || i + n >= s->n_msgs)
        return;
    r->last = parent_at(s, s->n_msgs);
    uint32_t before = parent_at(s, i), last = s->msgs[i + n - 1].id;
    /* what followed the last one (the path and its other versions) now
     * follows the message before the first */
    for (size_t j = 0; j < s->n_alts; j++)
        if (s->alts[j].parent == last)
            reparent(r, &s->alts[j], before);
    reparent(r, &s->msgs[i + n], before);
    /* the messages taken out keep their ids, parents and the branches that
     * grow from them: a branch of their own after message i - 1 */
    for (size_t k = i; k < i + n; k++) {
        struct message *m = session_alt_append(s);
        *m = s->msgs[k];
        m->stamp = ++s->stamp;
    }
    memmove(&s->msgs[i], &s->msgs[i + n], (s->n_msgs - i - n) * sizeof *s->msgs);
    s->n_msgs -= n;
}

static struct message *find_mutable(struct session *s, uint32_t id)
{
    for (size_t i = 0; i < s->n_msgs; i++)
        if (s->msgs[i].id == id)
            return &s->msgs[i];
    size_t j = alt_index(s, id);
    return j == SIZE_MAX ? NULL : &s->alts[j];
}

size_t session_restore(struct session *s, const struct session_restore *r)
{
    if (r->last == 0 || !session_find_id(s, r->last))
        return SIZE_MAX;
    /* the old parents first (in reverse: a message moved twice gets its first) */
    for (size_t k = r->n_moved; k-- > 0;) {
        struct message *m = find_mutable(s, r->moved[k].id);
        if (m)
            m->parent = r->moved[k].parent;
    }
    /* a path message whose parent changed breaks the path there: the first
     * such place is where session_select must start */
    size_t broken = s->n_msgs;
    for (size_t i = 0; i < s->n_msgs && broken == s->n_msgs; i++)
        if (s->msgs[i].parent != parent_at(s, i))
            broken = i;
    if (broken < s->n_msgs)
        session_stash(s, broken);
    size_t first = session_select(s, r->last);
    if (first == SIZE_MAX)
        return SIZE_MAX;
    if (broken < first)
        first = broken;
    /* and the path ends where it ended (session_select followed on) */
    for (size_t i = 0; i < s->n_msgs; i++)
        if (s->msgs[i].id == r->last) {
            if (i + 1 < s->n_msgs) {
                session_stash(s, i + 1);
                first = first < i + 1 ? first : i + 1;
            }
            break;
        }
    return first;
}
