/* session_tree.c: the branches of a session (session_tree.h).
 *
 * Sessions are small (hundreds of messages), so the other branches are a
 * flat array searched linearly: no index to keep consistent. */
#include "config.h"

#include "src/session_tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/xalloc.h"

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

/* ----------------------------------------------------------------- rows */

static int by_id(const void *a, const void *b)
{
    uint32_t x = (*(const struct message *const *)a)->id, y = (*(const struct message *const *)b)->id;
    return (x > y) - (x < y);
}

/* The children of parent, by id, into kids (owned); their count. */
static size_t children(const struct session *s, uint32_t parent, const struct message ***kids)
{
    size_t n = 0;
    *kids = x_malloc((s->n_msgs + s->n_alts + 1) * sizeof **kids);
    for (size_t i = 0; i < s->n_msgs; i++)
        if (parent_at(s, i) == parent)
            (*kids)[n++] = &s->msgs[i];
    for (size_t j = 0; j < s->n_alts; j++)
        if (s->alts[j].parent == parent)
            (*kids)[n++] = &s->alts[j];
    qsort(*kids, n, sizeof **kids, by_id);
    return n;
}

static void add_rows(const struct session *s, uint32_t parent, int depth,
                     struct session_tree_row *rows, size_t *n, int guard)
{
    const struct message **kids;
    size_t nk = children(s, parent, &kids);
    if (guard > 0) {
        int d = nk > 1 ? depth + 1 : depth;
        for (size_t k = 0; k < nk; k++) {
            struct session_tree_row *r = &rows[(*n)++];
            r->m = kids[k];
            r->depth = d;
            r->on_path = kids[k] >= s->msgs && kids[k] < s->msgs + s->n_msgs;
            r->path_index = r->on_path ? (size_t)(kids[k] - s->msgs) : 0;
            r->k = k + 1;
            r->n = nk;
            add_rows(s, kids[k]->id, d, rows, n, guard - 1);
        }
    }
    free(kids);
}

struct session_tree_row *session_tree_rows(const struct session *s, size_t *n)
{
    size_t total = s->n_msgs + s->n_alts;
    struct session_tree_row *rows = x_calloc(total ? total : 1, sizeof *rows);
    *n = 0;
    add_rows(s, 0, 0, rows, n, (int)total + 1);
    return rows;
}
