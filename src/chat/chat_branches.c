/* chat_branches.c: the conversation's tree at the controller (session_tree.h):
 * /fork, /branch, /tree and the picks of the UI (Alt-Left/Right on a
 * selected message, Enter in the tree).  A switch renders the new path and
 * prefills it in the background; the worker keeps the common prefix of the
 * two paths, and the prefill's DONE says what it reused and computed. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/chat/chat_controller.h"
#include "src/chat/chat_internal.h"
#include "src/conversation/session_tree.h"
#include "src/base/strbuf.h"
#include "src/base/xalloc.h"

/* The path changed: show it, prefill it, and say what it cost when the
 * worker has done it (chat_events.c, on the prefill's DONE). */
static void path_switched(struct chat *c, struct conv *v, const struct conv_plan *plan,
                          const char *what)
{
    v->dirty = true;
    c->edit_conv = NULL; /* an /edit in progress was of the old path */
    chat_show_conv(c);
    snprintf(v->branch_note, sizeof v->branch_note, "%s", what);
    chat_post_prefill(c, v);
    if (c->prefill_conv == v && c->prefill_req)
        chat_notice(c, false, "%s: computing %d tokens, %d from the cache", what, plan->n_compute,
                    plan->n_reuse);
    else {
        v->branch_note[0] = '\0';
        chat_notice(c, false, "%s (computed when a model is ready)", what);
    }
}

/* "message #3 (version 2 of 3)" or "the reply to #3 (version 2 of 3)". */
static void describe(const struct session *s, size_t i, char *buf, size_t size)
{
    size_t k, n;
    session_siblings(s, i, &k, &n);
    size_t x = chat_exchange_of(s, i);
    snprintf(buf, size, "%s #%zu: version %zu of %zu",
             s->msgs[i].role == ROLE_USER ? "message" : "the reply to", x, k, n);
}

void chat_fork_command(struct chat *c, struct conv *v, int n)
{
    struct session *s = v->s;
    size_t u = chat_exchange_index(c, s, n, "fork");
    if (u == SIZE_MAX)
        return;
    /* after the exchange: its user message and the replies to it */
    size_t last = u;
    while (last + 1 < s->n_msgs && s->msgs[last + 1].role != ROLE_USER)
        last++;
    size_t x = chat_exchange_of(s, u);
    if (last + 1 == s->n_msgs) {
        chat_notice(c, false, "nothing follows exchange %zu: what you send next continues this "
                              "branch (/fork N keeps exchanges 1 to N)",
                    x);
        return;
    }
    char err[512];
    size_t n_after = s->n_msgs - last - 1;
    if (conversation_fork(&v->cv, last, err, sizeof err) != 0) {
        chat_notice(c, true, "%s", err);
        return;
    }
    chat_path_replaced(c, v);
    chat_notice(c, false, "forked after exchange %zu: the %zu message%s after it are another "
                          "branch (/tree); what you send next starts a new one",
                x, n_after, n_after == 1 ? "" : "s");
}

/* /branch N [reply] [K]: without K, say which versions there are. */
void chat_branch_command(struct chat *c, struct conv *v, int n_exchange, bool reply, int k_version)
{
    struct session *s = v->s;
    size_t k = (size_t)k_version;
    size_t i = chat_exchange_index(c, s, n_exchange, "branch");
    if (i == SIZE_MAX)
        return;
    if (reply) {
        if (i + 1 >= s->n_msgs || s->msgs[i + 1].role != ROLE_ASSISTANT) {
            chat_notice(c, true, "exchange %d has no reply", n_exchange);
            return;
        }
        i++;
    }
    char what[96];
    describe(s, i, what, sizeof what);
    size_t at, n;
    session_siblings(s, i, &at, &n);
    if (!k) {
        if (n == 1 && !reply && i + 1 < s->n_msgs) {
            size_t rk, rn;
            session_siblings(s, i + 1, &rk, &rn);
            if (rn > 1) {
                chat_notice(c, false, "message #%d has one version; its reply has %zu "
                                      "(/branch %d reply K)",
                            n_exchange, rn, n_exchange);
                return;
            }
        }
        chat_notice(c, false, "%s%s", what,
                    n > 1 ? " (/branch N K shows another, Alt-Left/Right on a selected message)"
                          : "");
        return;
    }
    struct conv_plan plan;
    char err[512];
    int rc = conversation_branch(&v->cv, i, k, &plan, err, sizeof err);
    if (rc && rc != CONV_FULL) {
        chat_notice(c, true, "%s", err);
        return;
    }
    if (k == at) {
        chat_notice(c, false, "%s is the one shown", what);
        return;
    }
    describe(s, i, what, sizeof what);
    path_switched(c, v, &plan, what);
}

bool chat_select_message(struct chat *c, uint32_t id)
{
    struct conv *v = c->cur;
    if (!v || chat_busy_refuse(c))
        return false;
    struct conv_plan plan;
    char err[512];
    size_t before = v->s->n_msgs;
    const struct message *m = session_find_id(v->s, id);
    bool on_path = m && m >= v->s->msgs && m < v->s->msgs + before;
    int rc = conversation_select(&v->cv, id, &plan, err, sizeof err);
    if (rc && rc != CONV_FULL) {
        chat_notice(c, true, "%s", err);
        return false;
    }
    if (on_path) {
        chat_notice(c, false, "that message is on the path shown");
        return true;
    }
    char what[96];
    snprintf(what, sizeof what, "branch shown (%zu messages)", v->s->n_msgs);
    path_switched(c, v, &plan, what);
    return true;
}

void chat_undo_restore(struct chat *c, struct conv *v)
{
    enum conv_undone what = conversation_restorable(&v->cv);
    size_t exchange = v->cv.undo.exchange;
    struct conv_plan plan;
    char err[512];
    int rc = conversation_restore(&v->cv, &plan, err, sizeof err);
    if (rc && rc != CONV_FULL) {
        chat_notice(c, true, "%s", err);
        return;
    }
    char note[96];
    if (what == CONV_UNDONE_CLEAR)
        snprintf(note, sizeof note, "the conversation is back (%zu messages)", v->s->n_msgs);
    else
        snprintf(note, sizeof note, "exchange %zu is back", exchange);
    path_switched(c, v, &plan, note);
    chat_save_conv(c, v, true);
}

/* ------------------------------------------------------------- /tree */

struct session_tree_row *chat_tree(struct chat *c, size_t *n)
{
    *n = 0;
    return c->cur ? session_tree_rows(c->cur->s, n) : NULL;
}

int chat_tree_exchange(const struct chat *c, const struct session_tree_row *r)
{
    if (!c->cur || !r->on_path || r->m->role != ROLE_USER)
        return 0;
    return (int)chat_exchange_of(c->cur->s, r->path_index);
}

/* Without a view that shows it: the tree as an information line. */
void chat_tree_command(struct chat *c)
{
    if (c->view.tree_shown) {
        c->view.tree_shown(c->view.user);
        return;
    }
    size_t n;
    struct session_tree_row *rows = chat_tree(c, &n);
    struct sbuf b = {0};
    sbuf_add(&b, "", 0);
    for (size_t i = 0; i < n; i++) {
        const struct session_tree_row *r = &rows[i];
        char head[96];
        int x = chat_tree_exchange(c, r);
        snprintf(head, sizeof head, "%s%*s%s", r->on_path ? "* " : "  ", 2 * r->depth, "",
                 r->m->role == ROLE_USER ? "you" : "elm");
        sbuf_add(&b, head, strlen(head));
        if (x) {
            snprintf(head, sizeof head, " #%d", x);
            sbuf_add(&b, head, strlen(head));
        }
        if (r->n > 1) {
            snprintf(head, sizeof head, " [%zu/%zu]", r->k, r->n);
            sbuf_add(&b, head, strlen(head));
        }
        sbuf_add(&b, ": ", 2);
        const char *t = r->m->content;
        size_t len = strcspn(t, "\n"), cut = len > 60 ? 60 : len;
        while (cut > 0 && cut < len && ((unsigned char)t[cut] & 0xC0) == 0x80)
            cut--; /* not inside a character */
        sbuf_add(&b, t, cut);
        if (cut < len || t[len])
            sbuf_add(&b, "…", strlen("…"));
        if (i + 1 < n)
            sbuf_add(&b, "\n", 1);
    }
    if (n == 0)
        sbuf_add(&b, "the conversation is empty", strlen("the conversation is empty"));
    chat_info_msg(c, false, b.data);
    sbuf_fini(&b);
    free(rows);
}
