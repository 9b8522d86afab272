/* test-session-tree.c: a session as a tree of messages (src/conversation/session_tree.h):
 * stash (edit, retry, fork), switching, selecting, deleting, the rows of
 * /tree, and the file format 2 (round trip, format 1 lists, damaged trees
 * with each error message). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "src/conversation/session.h"
#include "src/conversation/session_json.h"
#include "src/conversation/session_tree.h"
#include "src/base/xalloc.h"
#include "tests/lib/tap.h"

static char err[1024];

/* The path as "u:A a:B ..." (role initial, content). */
static char *path_str(const struct session *s)
{
    char *out = x_strdup("");
    for (size_t i = 0; i < s->n_msgs; i++) {
        char *n = x_asprintf("%s%s%c:%s", out, i ? " " : "", s->msgs[i].role == ROLE_USER ? 'u' : 'a',
                             s->msgs[i].content);
        free(out);
        out = n;
    }
    return out;
}

static void is_path(const struct session *s, const char *want, const char *what)
{
    char *p = path_str(s);
    is_str(p, want, "%s", what);
    free(p);
}

/* Every path message's parent is the one before it. */
static bool parents_consistent(const struct session *s)
{
    for (size_t i = 0; i < s->n_msgs; i++)
        if (s->msgs[i].parent != (i ? s->msgs[i - 1].id : 0))
            return false;
    return true;
}

/* u:A a:B u:C a:D, then edits and retries through the session API as the
 * conversation does them. */
static struct session *three_versions(void)
{
    struct session *s = session_new("tree");
    session_append(s, ROLE_USER, "A");
    session_append(s, ROLE_ASSISTANT, "B");
    session_append(s, ROLE_USER, "C");
    session_append(s, ROLE_ASSISTANT, "D");
    /* edit C -> C2 (sibling of C), reply D2 */
    session_stash(s, 2);
    session_append(s, ROLE_USER, "C2");
    session_append(s, ROLE_ASSISTANT, "D2");
    /* retry D2 -> D3 */
    session_stash(s, 3);
    session_append(s, ROLE_ASSISTANT, "D3");
    /* edit C2 -> C3 */
    session_stash(s, 2);
    session_append(s, ROLE_USER, "C3");
    session_append(s, ROLE_ASSISTANT, "E");
    return s;
}

static void test_tree_ops(void)
{
    struct session *s = three_versions();
    is_path(s, "u:A a:B u:C3 a:E", "the path after two edits and a retry");
    is_int((long long)s->n_alts, 5, "five messages on other branches (C D C2 D2 D3)");
    ok(parents_consistent(s), "the path's parents are consistent");
    size_t k, n;
    session_siblings(s, 2, &k, &n);
    ok(k == 3 && n == 3, "message 3 is version 3 of 3 (%zu/%zu)", k, n);
    session_siblings(s, 3, &k, &n);
    ok(k == 1 && n == 1, "its reply has no other version");
    session_siblings(s, 0, &k, &n);
    ok(k == 1 && n == 1, "the first message has none");
    session_siblings(s, 9, &k, &n);
    ok(k == 0 && n == 0, "out of range: 0 of 0");

    /* To version 2: the reply the user was last on there is D3. */
    size_t first = session_branch(s, 2, 2);
    is_int((long long)first, 2, "switching message 3 changes the path from index 2");
    is_path(s, "u:A a:B u:C2 a:D3", "version 2 comes back with its last reply");
    session_siblings(s, 3, &k, &n);
    ok(k == 2 && n == 2, "its reply is version 2 of 2");
    ok(parents_consistent(s), "parents consistent after a switch");
    first = session_branch(s, 3, 1);
    is_path(s, "u:A a:B u:C2 a:D2", "the first reply of version 2");
    is_int((long long)first, 3, "from index 3");
    first = session_branch(s, 2, 1);
    is_path(s, "u:A a:B u:C a:D", "back to the original");
    first = session_branch(s, 2, 3);
    is_path(s, "u:A a:B u:C3 a:E", "and to version 3");
    is_int((long long)session_branch(s, 2, 3), (long long)s->n_msgs, "the same version: nothing");
    is_int((long long)session_branch(s, 2, 4), (long long)SIZE_MAX, "no version 4");
    is_int((long long)session_branch(s, 2, 0), (long long)SIZE_MAX, "no version 0");
    is_int((long long)(s->n_msgs + s->n_alts), 9, "no message lost or doubled by switching");

    /* Select by id (what /tree does): D2's id. */
    uint32_t d2 = 0;
    for (size_t j = 0; j < s->n_alts; j++)
        if (strcmp(s->alts[j].content, "D2") == 0)
            d2 = s->alts[j].id;
    first = session_select(s, d2);
    is_path(s, "u:A a:B u:C2 a:D2", "select D2 by id");
    is_int((long long)session_select(s, 99999), (long long)SIZE_MAX, "an unknown id");
    is_int((long long)session_select(s, s->msgs[1].id), (long long)s->n_msgs,
           "selecting a path message changes nothing");

    /* Fork after B: the path ends there, the next message is a sibling of C. */
    session_stash(s, 2);
    is_path(s, "u:A a:B", "fork after message 2");
    is_int((long long)session_children_after_path(s), 3, "three versions wait after it");
    session_append(s, ROLE_USER, "F");
    session_siblings(s, 2, &k, &n);
    ok(k == 4 && n == 4, "the new message is version 4 of 4");

    /* The rows of /tree. */
    size_t nr;
    struct session_tree_row *rows = session_tree_rows(s, &nr);
    is_int((long long)nr, (long long)(s->n_msgs + s->n_alts), "one row per message");
    char line[512] = "";
    for (size_t i = 0; i < nr; i++) {
        char one[32];
        snprintf(one, sizeof one, "%s%d%s%s", i ? " " : "", rows[i].depth, rows[i].on_path ? "*" : "",
                 rows[i].m->content);
        strncat(line, one, sizeof line - strlen(line) - 1);
    }
    is_str(line, "0*A 0*B 1C 1D 1C2 2D2 2D3 1C3 1E 1*F",
           "rows depth first, indented at branch points, the path marked");
    ok(rows[2].k == 1 && rows[2].n == 4 && rows[9].k == 4, "rows carry their version k/n");
    free(rows);

    /* Deleting: /undo of F keeps the other versions; /clear's truncate(0)
     * leaves none of the path's branches. */
    session_truncate(s, 2);
    is_int((long long)s->n_alts, 7, "truncating F keeps the seven other messages");
    session_truncate(s, 1);
    is_int((long long)s->n_alts, 0, "truncating B removes every branch that grows from it");
    session_free(s);

    /* Remove an exchange mid-path: what followed it follows the message before. */
    s = session_new("rm");
    session_append(s, ROLE_USER, "A");
    session_append(s, ROLE_ASSISTANT, "B");
    session_append(s, ROLE_USER, "C");
    session_append(s, ROLE_ASSISTANT, "D");
    session_stash(s, 3); /* retry D: D is another version */
    session_append(s, ROLE_ASSISTANT, "D2");
    session_append(s, ROLE_USER, "E");
    session_append(s, ROLE_ASSISTANT, "G");
    session_stash(s, 4); /* edit E */
    session_append(s, ROLE_USER, "E2");
    session_remove(s, 2, 2); /* C and D2 */
    is_path(s, "u:A a:B u:E2", "remove exchange 2");
    ok(parents_consistent(s), "parents consistent after a removal");
    session_siblings(s, 2, &k, &n);
    ok(n == 2 && k == 2, "E2's other version E now follows B too");
    ok(session_find_id(s, 4) == NULL, "D (another reply inside the removed exchange) is gone");
    session_free(s);

    /* /remove keeps: the exchange is taken out as a branch of its own, and
     * session_restore puts it back (issue 50, item 7). */
    s = session_new("take");
    session_append(s, ROLE_USER, "A");
    session_append(s, ROLE_ASSISTANT, "B");
    session_append(s, ROLE_USER, "C");
    session_append(s, ROLE_ASSISTANT, "D");
    session_stash(s, 3);
    session_append(s, ROLE_ASSISTANT, "D2");
    session_append(s, ROLE_USER, "E");
    session_append(s, ROLE_ASSISTANT, "G");
    session_stash(s, 4);
    session_append(s, ROLE_USER, "E2");
    session_append(s, ROLE_ASSISTANT, "G2");
    size_t total = s->n_msgs + s->n_alts;
    struct session_restore r = {0};
    session_take_out(s, 2, 2, &r); /* C and D2 */
    is_path(s, "u:A a:B u:E2 a:G2", "take out exchange 2");
    ok(parents_consistent(s), "parents consistent after taking it out");
    is_int((long long)(s->n_msgs + s->n_alts), (long long)total, "no message is gone");
    session_siblings(s, 2, &k, &n);
    ok(n == 3 && k == 3, "E2 follows B, beside E and the exchange taken out (%zu of %zu)", k, n);
    const struct message *c = NULL;
    for (size_t j = 0; j < s->n_alts; j++)
        if (strcmp(s->alts[j].content, "C") == 0)
            c = &s->alts[j];
    ok(c && session_find_id(s, 4) != NULL, "C is a branch after B, and D (its other reply) stays");
    is_int((long long)session_restore(s, &r), 2, "restored from index 2");
    is_path(s, "u:A a:B u:C a:D2 u:E2 a:G2", "session_restore: the path as it was");
    ok(parents_consistent(s), "parents consistent after the restore");
    is_int((long long)(s->n_msgs + s->n_alts), (long long)total, "still every message");
    session_siblings(s, 4, &k, &n);
    ok(n == 2 && k == 2, "E is E2's other version again (%zu of %zu)", k, n);
    session_siblings(s, 3, &k, &n);
    ok(n == 2 && k == 2, "D is D2's other version again (%zu of %zu)", k, n);
    session_restore_fini(&r);

    /* a stash (/clear, /undo) is put back by its last message alone */
    r = (struct session_restore){.last = s->msgs[s->n_msgs - 1].id};
    session_stash(s, 0);
    is_int((long long)s->n_msgs, 0, "a cleared path");
    is_int((long long)session_restore(s, &r), 0, "restored from the start");
    is_path(s, "u:A a:B u:C a:D2 u:E2 a:G2", "the cleared path is back, to its last message");
    ok(parents_consistent(s), "parents consistent");
    r.last = 999;
    ok(session_restore(s, &r) == SIZE_MAX, "an id not in the session: nothing to restore");
    session_free(s);
}

/* ------------------------------------------------------------- the file */

static void test_file_round_trip(void)
{
    struct session *s = three_versions();
    session_branch(s, 2, 2); /* on C2 D3: C3 E left last */
    size_t len;
    char *yaml = session_to_yaml(s, &len);
    ok(strstr(yaml, "elmchat_session: 2\n") == yaml, "written as format 2");
    ok(strstr(yaml, "\nbranches:\n") != NULL, "the other branches under branches:");
    ok(strstr(yaml, "  id: 1\n") && strstr(yaml, "  parent: 2\n"), "ids and parents");
    struct session *t = session_from_yaml(yaml, len, "t.yaml", err, sizeof err);
    ok(t != NULL, "it loads (%s)", t ? "" : err);
    if (t) {
        is_path(t, "u:A a:B u:C2 a:D3", "the current path survives");
        is_int((long long)t->n_alts, (long long)s->n_alts, "every other message survives");
        ok(parents_consistent(t), "parents consistent");
        size_t k, n;
        session_siblings(t, 2, &k, &n);
        ok(k == 2 && n == 3, "version 2 of 3 after the reload");
        session_branch(t, 2, 3);
        is_path(t, "u:A a:B u:C3 a:E", "version 3 still leads to its own reply");
        session_branch(t, 2, 1);
        is_path(t, "u:A a:B u:C a:D", "version 1 too");
        /* a new message gets an id no other has */
        struct message *m = session_append(t, ROLE_USER, "new");
        ok(session_find_id(t, m->id) == m && m->id > 9, "a new message's id is new (%u)", m->id);
        size_t len2;
        char *again = session_to_yaml(t, &len2);
        struct session *u = session_from_yaml(again, len2, "u.yaml", err, sizeof err);
        ok(u && u->n_msgs == t->n_msgs && u->n_alts == t->n_alts, "a second round trip");
        session_free(u);
        free(again);
    }
    session_free(t);
    free(yaml);
    session_free(s);

    /* Format 1: a list, loaded as one path with ids 1..n. */
    const char *v1 = "elmchat_session: 1\nname: old\nmessages:\n- role: user\n  content: hi\n"
                     "- role: assistant\n  content: hello\nend: true\n";
    s = session_from_yaml(v1, strlen(v1), "v1.yaml", err, sizeof err);
    ok(s && s->n_msgs == 2 && s->n_alts == 0 && s->msgs[0].id == 1 && s->msgs[1].id == 2 &&
           s->msgs[1].parent == 1 && s->version == 1,
       "a format 1 file loads as a single path (%s)", s ? "" : err);
    if (s) {
        char *y = session_to_yaml(s, &len);
        ok(strstr(y, "elmchat_session: 2\n") == y && strstr(y, "  id: 2\n"),
           "and is written back as format 2");
        free(y);
    }
    session_free(s);
}

static void bad(const char *text, const char *want, const char *what)
{
    struct session *s = session_from_yaml(text, strlen(text), "s.yaml", err, sizeof err);
    ok(!s, "%s: refused", what);
    ok(strncmp(err, want, strlen(want)) == 0, "%s: '%s' starts with '%s'", what, err, want);
    session_free(s);
}

#define HEAD "elmchat_session: 2\nname: x\nmessages:\n- role: user\n  id: 1\n  content: a\n"

static void test_damaged(void)
{
    bad(HEAD "branches:\n- role: user\n  id: 2\n  parent: 7\n  content: b\nend: true\n",
        "s.yaml:8:3: branches[0]: its parent 7 is not the id of any message; the file was not "
        "changed",
        "a parent that does not exist");
    bad(HEAD "branches:\n- role: user\n  id: 2\n  parent: 3\n  content: b\n"
             "- role: user\n  id: 3\n  parent: 2\n  content: c\nend: true\n",
        "s.yaml:8:3: branches[0]: its parents form a cycle (id 2 never leads back to the first "
        "message)",
        "a cycle");
    bad(HEAD "branches:\n- role: user\n  id: 3\n  parent: 4\n  content: b\n"
             "- role: user\n  id: 4\n  parent: 9\n  content: c\nend: true\n",
        "s.yaml:8:3: branches[0]: an ancestor's parent 9 is not the id of any message",
        "an ancestor that does not exist");
    bad(HEAD "branches:\n- role: user\n  id: 1\n  parent: 0\n  content: b\nend: true\n",
        "s.yaml:8:3: branches[0]: id 1 is already the id of another message", "a duplicate id");
    bad(HEAD "- role: user\n  id: 1\n  content: b\nend: true\n",
        "s.yaml:7:3: messages[1]: id 1 is already the id of another message",
        "a duplicate id on the path");
    bad(HEAD "branches:\n- role: user\n  parent: 1\n  content: b\nend: true\n",
        "s.yaml:8:3: branches[0]: missing key 'id'", "a branch message without id");
    bad(HEAD "branches:\n- role: user\n  id: 2\n  content: b\nend: true\n",
        "s.yaml:8:3: branches[0]: missing key 'parent'", "a branch message without parent");
    bad(HEAD "- role: user\n  id: 2\n  parent: 5\n  content: b\nend: true\n",
        "s.yaml:7:3: messages[1]: parent 5, but the current path's message before it is 1",
        "a path message whose parent is not the one before");
    bad(HEAD "branches:\n- role: user\n  id: 0\n  parent: 1\n  content: b\nend: true\n",
        "s.yaml:9:7: branches[0].id: expected an integer from 1", "id 0");
    bad(HEAD "branches: {}\nend: true\n", "s.yaml:7:11: branches: expected a list",
        "branches not a list");
}

/* /export FILE.json: read back with json-c, the tree is whole. */
static void test_json(void)
{
    struct session *s = three_versions();
    s->system = x_strdup("Be \"terse\".");
    char *text = session_to_json(s);
    json_object *root = json_tokener_parse(text);
    ok(root != NULL, "the export is JSON");
    json_object *v;
    ok(json_object_object_get_ex(root, "format", &v) &&
           strcmp(json_object_get_string(v), "elmchat-tree") == 0 &&
           json_object_object_get_ex(root, "version", &v) && json_object_get_int(v) == 1,
       "format elmchat-tree, version 1");
    ok(json_object_object_get_ex(root, "system", &v) &&
           strcmp(json_object_get_string(v), "Be \"terse\".") == 0,
       "the system prompt, escaped");
    json_object *path, *msgs;
    ok(json_object_object_get_ex(root, "path", &path) &&
           json_object_array_length(path) == s->n_msgs,
       "path: the current path's ids");
    bool same = true;
    for (size_t i = 0; i < s->n_msgs; i++)
        same &= (uint32_t)json_object_get_int64(json_object_array_get_idx(path, i)) == s->msgs[i].id;
    ok(same, "in order");
    ok(json_object_object_get_ex(root, "messages", &msgs) &&
           json_object_array_length(msgs) == s->n_msgs + s->n_alts,
       "messages: every message of every branch");
    size_t n_on_path = 0, n_roots = 0, n_parents_found = 0, n = json_object_array_length(msgs);
    int64_t last_id = 0;
    bool sorted = true;
    for (size_t i = 0; i < n; i++) {
        json_object *m = json_object_array_get_idx(msgs, i), *id, *parent, *on;
        json_object_object_get_ex(m, "id", &id);
        json_object_object_get_ex(m, "parent", &parent);
        json_object_object_get_ex(m, "on_path", &on);
        sorted &= json_object_get_int64(id) > last_id;
        last_id = json_object_get_int64(id);
        n_on_path += json_object_get_boolean(on);
        if (!parent)
            n_roots++;
        else
            n_parents_found += session_find_id(s, (uint32_t)json_object_get_int64(parent)) != NULL;
    }
    ok(sorted && n_on_path == s->n_msgs && n_roots == 1 && n_parents_found == n - 1,
       "by id; on_path marks the path; one first message (parent null), every other parent exists");
    json_object_put(root);
    free(text);
    session_free(s);
}

/* ------------------------------------------------- against simple oracles */

/* session_tree_valid as it was first written, pairwise and walking to the
 * root from every message: quadratic, and plainly right. */
static bool valid_oracle(const struct session *s, struct session_tree_fault *f)
{
    size_t total = s->n_msgs + s->n_alts;
    for (size_t a = 0; a < total; a++) {
        const struct message *m = a < s->n_msgs ? &s->msgs[a] : &s->alts[a - s->n_msgs];
        for (size_t b = 0; b < a; b++) {
            const struct message *o = b < s->n_msgs ? &s->msgs[b] : &s->alts[b - s->n_msgs];
            if (o->id == m->id) {
                snprintf(f->what, sizeof f->what, "id %u is already the id of another message",
                         m->id);
                f->in_branches = a >= s->n_msgs;
                f->index = a < s->n_msgs ? a : a - s->n_msgs;
                return false;
            }
        }
    }
    for (size_t j = 0; j < s->n_alts; j++) {
        uint32_t at = s->alts[j].parent;
        for (size_t steps = 0; at != 0; steps++) {
            const struct message *p = session_find_id(s, at);
            f->in_branches = true;
            f->index = j;
            if (!p) {
                snprintf(f->what, sizeof f->what, "%s %u is not the id of any message",
                         at == s->alts[j].parent ? "its parent" : "an ancestor's parent", at);
                return false;
            }
            if (steps > total) {
                snprintf(f->what, sizeof f->what,
                         "its parents form a cycle (id %u never leads back to the first message)",
                         s->alts[j].id);
                return false;
            }
            at = p->parent;
        }
    }
    return true;
}

static uint64_t rng_state = 88172645463325252ull;
static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

/* A path of n_path messages and n_alt others, each hung under a random
 * earlier message (or at the root); ids shuffled. */
static struct session *random_tree(size_t n_path, size_t n_alt)
{
    struct session *s = session_new("r");
    size_t total = n_path + n_alt;
    uint32_t *ids = x_malloc(total * sizeof *ids);
    for (size_t i = 0; i < total; i++)
        ids[i] = (uint32_t)i + 1;
    for (size_t i = total; i > 1; i--) {
        size_t k = rnd((uint32_t)i);
        uint32_t x = ids[i - 1];
        ids[i - 1] = ids[k];
        ids[k] = x;
    }
    for (size_t i = 0; i < n_path; i++) {
        struct message *m = session_append(s, i % 2 ? ROLE_ASSISTANT : ROLE_USER, "p");
        m->id = ids[i];
        m->parent = i ? s->msgs[i - 1].id : 0;
    }
    for (size_t j = 0; j < n_alt; j++) {
        struct message *m = session_alt_append(s);
        m->role = ROLE_ASSISTANT;
        m->content = x_strdup("b");
        m->id = ids[n_path + j];
        size_t under = rnd((uint32_t)(n_path + j + 1)); /* a message before it, or the root */
        m->parent = under == 0 ? 0
                    : under <= n_path ? s->msgs[under - 1].id
                                      : s->alts[under - 1 - n_path].id;
    }
    free(ids);
    return s;
}

static void test_against_oracles(void)
{
    int same_siblings = 0, same_verdict = 0, faults = 0, rounds = 400;
    for (int round = 0; round < rounds; round++) {
        struct session *s = random_tree(1 + rnd(30), rnd(30));
        size_t total = s->n_msgs + s->n_alts;
        /* the siblings of every path message, from the index and by a scan */
        struct session_sibling_index *x = session_sibling_index_new(s);
        bool same = true;
        for (size_t i = 0; i <= s->n_msgs; i++) {
            size_t k1, n1, k2, n2;
            session_siblings(s, i, &k1, &n1);
            session_siblings_indexed(x, s, i, &k2, &n2);
            same = same && k1 == k2 && n1 == n2;
        }
        session_sibling_index_free(x);
        same_siblings += same;
        /* damage some: a duplicate id, a parent that is no message, a cycle */
        if (round % 4 == 1 && total > 1) {
            struct message *m = rnd(2) && s->n_alts ? &s->alts[rnd((uint32_t)s->n_alts)]
                                                    : &s->msgs[rnd((uint32_t)s->n_msgs)];
            m->id = s->msgs[rnd((uint32_t)s->n_msgs)].id;
        } else if (round % 4 == 2 && s->n_alts) {
            s->alts[rnd((uint32_t)s->n_alts)].parent = (uint32_t)total + 1 + rnd(5);
        } else if (round % 4 == 3 && s->n_alts) {
            struct message *a = &s->alts[rnd((uint32_t)s->n_alts)];
            a->parent = s->alts[rnd((uint32_t)s->n_alts)].id; /* itself or another: maybe a loop */
        }
        struct session_tree_fault f1 = {0}, f2 = {0};
        bool v1 = session_tree_valid(s, &f1), v2 = valid_oracle(s, &f2);
        bool agree = v1 == v2 && (v1 || (f1.in_branches == f2.in_branches &&
                                          f1.index == f2.index && strcmp(f1.what, f2.what) == 0));
        if (!agree)
            diag("round %d: %s [%s at %zu] vs the oracle's %s [%s at %zu]", round,
                 v1 ? "valid" : "invalid", f1.what, f1.index, v2 ? "valid" : "invalid", f2.what,
                 f2.index);
        same_verdict += agree;
        faults += !v2;
        session_free(s);
    }
    ok(same_siblings == rounds, "siblings from the index == siblings by a scan, %d random trees",
       rounds);
    ok(same_verdict == rounds && faults > rounds / 4,
       "the tree's checks agree with the pairwise oracle (verdict, place, reason): %d random "
       "trees, %d of them damaged",
       rounds, faults);
}

int main(void)
{
    plan_lazy();
    test_tree_ops();
    test_file_round_trip();
    test_damaged();
    test_json();
    test_against_oracles();
    return done_testing();
}
