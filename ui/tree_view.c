/* tree_view.c: the keys of /tree (tree_view.h). */
#include "config.h"

#include "ui/tree_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/conversation/session_tree.h"

size_t tree_view_chosen(const struct tree_view *tv, const struct session_tree_row *rows,
                        size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (rows[i].m->id == tv->chosen)
            return i;
    return 0;
}

void tree_view_open(struct tree_view *tv, struct chat *c)
{
    size_t n;
    struct session_tree_row *rows = chat_tree(c, &n);
    tv->open = true;
    tv->top = 0;
    tv->chosen = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].on_path)
            tv->chosen = rows[i].m->id; /* the path's last message */
    if (!tv->chosen && n)
        tv->chosen = rows[0].m->id;
    free(rows);
}

static bool is_key(const char *key, size_t len, const char *a, const char *b)
{
    return (len == strlen(a) && memcmp(key, a, len) == 0) ||
           (b && len == strlen(b) && memcmp(key, b, len) == 0);
}

bool tree_view_key(struct tree_view *tv, struct chat *c, const char *key, size_t len, int rows)
{
    size_t n;
    struct session_tree_row *r = chat_tree(c, &n);
    size_t at = tree_view_chosen(tv, r, n), page = rows > 2 ? (size_t)rows - 2 : 1;
    bool took = true;
    if (is_key(key, len, "\033[A", "\033OA") || is_key(key, len, "k", NULL)) {
        at = at > 0 ? at - 1 : 0;
    } else if (is_key(key, len, "\033[B", "\033OB") || is_key(key, len, "j", NULL)) {
        at = at + 1 < n ? at + 1 : at;
    } else if (is_key(key, len, "\033[5~", NULL)) {
        at = at > page ? at - page : 0;
    } else if (is_key(key, len, "\033[6~", NULL)) {
        at = at + page < n ? at + page : (n ? n - 1 : 0);
    } else if (is_key(key, len, "\033[H", "\033OH") || is_key(key, len, "\033[1~", NULL)) {
        at = 0;
    } else if (is_key(key, len, "\033[F", "\033OF") || is_key(key, len, "\033[4~", NULL)) {
        at = n ? n - 1 : 0;
    } else if (is_key(key, len, "\r", "\n")) {
        tv->open = false;
        if (n)
            chat_select_message(c, r[at].m->id);
    } else if (is_key(key, len, "\033", "q")) {
        tv->open = false;
    } else {
        chat_notice(c, false, "tree: Up/Down choose · Enter shows that path · Esc closes");
    }
    if (tv->open && n)
        tv->chosen = r[at].m->id;
    free(r);
    return took;
}

void tree_view_row_head(struct chat *c, const struct session_tree_row *r, char *buf, size_t size)
{
    int x = chat_tree_exchange(c, r);
    char num[16] = "", ver[32] = "";
    if (x)
        snprintf(num, sizeof num, " #%d", x);
    if (r->n > 1)
        snprintf(ver, sizeof ver, " [%zu/%zu]", r->k, r->n);
    /* a tree branched at every turn would indent off the screen: past a
     * fixed depth rows stay there, marked */
    enum { MAX_INDENT = 16 };
    int indent = r->depth < MAX_INDENT ? r->depth : MAX_INDENT;
    snprintf(buf, size, "%*s%s%s%s%s  ", 2 * indent, "", r->depth > MAX_INDENT ? "… " : "",
             r->m->role == ROLE_USER ? "you" : "elm", num, ver);
}
