/* session_list.c: the keys of a focused session list, turned into the
 * chat's commands; the filter matches names, case-insensitively. */
#include "config.h"

#include "ui/session_list.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "src/conversation/session.h"
#include "src/base/xalloc.h"
#include "ui/input.h"
#include "ui/sanitize.h"

void session_list_when(const char *name, char *buf, size_t size)
{
    /* the file is written after every reply: its time is the last turn's */
    char *path = session_path_for(name);
    struct stat st;
    struct tm tm, now_tm;
    time_t now = time(NULL);
    if (!path || stat(path, &st) != 0 || !localtime_r(&st.st_mtime, &tm) ||
        !localtime_r(&now, &now_tm)) {
        snprintf(buf, size, "new");
    } else if (tm.tm_year == now_tm.tm_year && tm.tm_yday == now_tm.tm_yday) {
        strftime(buf, size, "%H:%M", &tm);
    } else {
        strftime(buf, size, "%Y-%m-%d", &tm);
    }
    free(path);
}

int session_list_width(char *const *names, size_t n)
{
    int w = 0;
    for (size_t i = 0; i < n; i++) {
        int nw = u8_width(names[i], strlen(names[i]));
        if (nw > w)
            w = nw;
    }
    /* the border and a space, the name, a space, "2026-12-01", a space */
    return w ? 2 + w + 1 + 10 + 1 : 0;
}

/* The chosen session whole, with its date, on the status bar: the list
 * may be narrower than its name. */
static void say_chosen(struct chat *c, const char *name)
{
    char when[32];
    session_list_when(name, when, sizeof when);
    chat_notice(c, false, "%s · %s%s · Enter opens it", name,
                strcmp(when, "new") == 0 ? "" : "saved ", when);
}

static bool keeps(const char *filter, const char *name)
{
    if (!*filter)
        return true;
    size_t fn = strlen(filter);
    for (const char *p = name; *p; p++) {
        size_t k = 0;
        while (k < fn && p[k] && tolower((unsigned char)p[k]) == tolower((unsigned char)filter[k]))
            k++;
        if (k == fn)
            return true;
    }
    return false;
}

size_t session_list_kept(const struct session_list *l, char *const *names, size_t n,
                         size_t *kept)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (keeps(l->filter, names[i]) || (*l->filter && chat_session_mentions(names[i], l->filter)))
            kept[m++] = i;
    return m;
}

void session_list_focus(struct session_list *l, char *const *names, size_t n,
                        const char *current)
{
    l->focused = true;
    l->filtering = false;
    l->filter[0] = '\0';
    l->sel = 0;
    for (size_t i = 0; i < n; i++)
        if (current && strcmp(names[i], current) == 0)
            l->sel = i;
}

bool session_list_key(struct session_list *l, struct chat *c, char *const *names, size_t n,
                      const char *buf, size_t len)
{
    size_t *kept = x_calloc(n + 1, sizeof *kept);
    size_t m = session_list_kept(l, names, n, kept);
    if (l->sel >= m)
        l->sel = m ? m - 1 : 0;
    const char *name = m ? names[kept[l->sel]] : NULL;
    bool took = true;
    if (l->confirm) {
        /* d asked: y deletes, anything else keeps it */
        if (len == 1 && (buf[0] == 'y' || buf[0] == 'Y'))
            chat_delete_session(c, l->confirm);
        else
            chat_notice(c, false, "kept '%s'", l->confirm);
        free(l->confirm);
        l->confirm = NULL;
    } else if (l->filtering) {
        size_t fl = strlen(l->filter);
        if (len == 1 && (buf[0] == '\r' || buf[0] == '\n' || buf[0] == '\033')) {
            l->filtering = false;
        } else if (len == 1 && (buf[0] == 0x7f || buf[0] == '\b')) {
            if (fl)
                l->filter[fl - 1] = '\0';
        } else if (len == 1 && isprint((unsigned char)buf[0]) && fl + 1 < sizeof l->filter) {
            l->filter[fl] = buf[0];
            l->filter[fl + 1] = '\0';
            l->sel = 0;
        }
        chat_notice(c, false, "filter: %s_ (Enter ends)", l->filter);
    } else if (len == 3 && (memcmp(buf, "\033[A", 3) == 0 || memcmp(buf, "\033OA", 3) == 0)) {
        if (l->sel > 0)
            l->sel--;
        if (m)
            say_chosen(c, names[kept[l->sel]]);
    } else if (len == 3 && (memcmp(buf, "\033[B", 3) == 0 || memcmp(buf, "\033OB", 3) == 0)) {
        if (l->sel + 1 < m)
            l->sel++;
        if (m)
            say_chosen(c, names[kept[l->sel]]);
    } else if (len == 1 && (buf[0] == '\r' || buf[0] == '\n')) {
        if (name)
            chat_switch_session(c, name);
        l->focused = false;
    } else if (len == 1 && buf[0] == 'r' && name) {
        /* rename works on the open conversation: open it first */
        const char *cur = chat_session_name(c);
        if (!cur || strcmp(cur, name) != 0)
            chat_switch_session(c, name);
        input_set_text("/rename ");
        l->focused = false;
    } else if (len == 1 && buf[0] == 'd' && name) {
        l->confirm = x_strdup(name);
        chat_notice(c, false, "delete session '%s' and its file? y deletes, any other key keeps it",
                    name);
    } else if (len == 1 && buf[0] == '/') {
        l->filtering = true;
        chat_notice(c, false, "filter: _ (type a part of the name, Enter ends)");
    } else if (len == 1 && buf[0] == '\033') {
        l->focused = false;
        l->filter[0] = '\0';
    } else {
        l->focused = false; /* typed as usual */
        took = false;
    }
    free(kept);
    return took;
}

void session_list_fini(struct session_list *l)
{
    free(l->confirm);
    memset(l, 0, sizeof *l);
}
