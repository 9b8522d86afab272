/* chat_view.c: the controller's notifications onto the transcript, the
 * session list and the input line (chat_view.h). */
#include "config.h"

#include "ui/chat_view.h"

#include <stdlib.h>
#include <string.h>

#include "src/conversation/attachment.h"
#include "src/template/template.h"
#include "src/base/xalloc.h"
#include "ui/input.h"
#include "ui/screen.h"

static enum tr_role tr_role_of(enum chat_role r)
{
    switch (r) {
    case CHAT_USER: return TR_USER;
    case CHAT_ASSISTANT: return TR_ASSISTANT;
    case CHAT_SYSTEM: return TR_SYSTEM;
    case CHAT_INFO: return TR_INFO;
    case CHAT_ERROR: return TR_ERROR;
    }
    return TR_INFO;
}

/* A queued message is drawn last, dimmed: taken off before anything is
 * added and put back after. */
static void queued_detach(struct tui_view *v)
{
    if (v->queued_msg != SIZE_MAX && v->queued_msg < v->tr.n_msgs)
        transcript_truncate(&v->tr, v->queued_msg);
    v->queued_msg = SIZE_MAX;
}

static void queued_attach(struct tui_view *v)
{
    if (!v->queued_text || v->queued_msg != SIZE_MAX)
        return;
    v->queued_msg = transcript_add(&v->tr, TR_USER, v->queued_text, strlen(v->queued_text), -1);
    v->tr.msgs[v->queued_msg].queued = true;
}

static void on_queued_changed(void *user, const char *text)
{
    struct tui_view *v = user;
    queued_detach(v);
    free(v->queued_text);
    v->queued_text = text ? x_strdup(text) : NULL;
    queued_attach(v);
    transcript_scroll_end(&v->tr);
    v->changed = true;
}

static void on_cleared(void *user)
{
    struct tui_view *v = user;
    transcript_clear(&v->tr);
    v->queued_msg = SIZE_MAX;
    queued_attach(v);
    v->changed = true;
}

static void on_message_added(void *user, const struct chat_message *m)
{
    struct tui_view *v = user;
    queued_detach(v);
    /* a file /read attached shows as one line: its name and size */
    char *collapsed = m->role == CHAT_USER ? attachment_collapse(m->text) : NULL;
    const char *text = collapsed ? collapsed : m->text;
    size_t k = transcript_add(&v->tr, tr_role_of(m->role), text, strlen(text), m->ref);
    free(collapsed);
    struct tr_msg *t = &v->tr.msgs[k];
    t->interrupted = m->interrupted;
    t->out_of_context = m->out_of_context;
    t->pinned = m->pinned;
    t->exchange = m->exchange;
    t->version = m->version;
    t->n_versions = m->n_versions;
    t->author = m->model ? x_strdup(m->model) : NULL;
    queued_attach(v);
    transcript_scroll_end(&v->tr);
    v->changed = true;
}

static void on_reply_started(void *user, const struct chat_message *m)
{
    struct tui_view *v = user;
    queued_detach(v);
    v->reply_msg = transcript_begin(&v->tr, TR_ASSISTANT, m->ref);
    v->tr.msgs[v->reply_msg].version = m->version;
    v->tr.msgs[v->reply_msg].n_versions = m->n_versions;
    v->tr.msgs[v->reply_msg].author = m->model ? x_strdup(m->model) : NULL;
    queued_attach(v);
    transcript_scroll_end(&v->tr);
    v->changed = true;
}

static void on_reply_text(void *user, const char *text, size_t n)
{
    struct tui_view *v = user;
    transcript_append(&v->tr, v->reply_msg, text, n);
    v->changed = true;
}

static void on_reply_finished(void *user, bool interrupted, const char *final_text, int ref)
{
    struct tui_view *v = user;
    queued_detach(v);
    if (final_text && v->reply_msg < v->tr.n_msgs) {
        int k = v->tr.msgs[v->reply_msg].version, n = v->tr.msgs[v->reply_msg].n_versions;
        char *author = v->tr.msgs[v->reply_msg].author;
        v->tr.msgs[v->reply_msg].author = NULL;
        transcript_truncate(&v->tr, v->reply_msg);
        size_t i = transcript_add(&v->tr, TR_ASSISTANT, final_text, strlen(final_text), ref);
        v->tr.msgs[i].version = k;
        v->tr.msgs[i].n_versions = n;
        v->tr.msgs[i].author = author;
    } else {
        transcript_finish(&v->tr, v->reply_msg, interrupted);
    }
    queued_attach(v);
    v->changed = true;
}

static void on_changed(void *user)
{
    struct tui_view *v = user;
    v->changed = true;
}

/* The session list's names read again. */
static void tui_view_refresh_sessions(struct tui_view *v)
{
    if (!v->chat)
        return; /* chat_new is still starting it: the list is read when shown */
    strv_free(v->session_list);
    v->session_list = chat_names(v->chat, ARG_SESSION);
    v->n_session_list = 0;
    while (v->session_list && v->session_list[v->n_session_list])
        v->n_session_list++;
    v->changed = true;
}

static void on_session_list_changed(void *user)
{
    tui_view_refresh_sessions(user);
}

static void on_session_list_toggled(void *user)
{
    tui_view_toggle_sessions(user);
}

static void on_input_replaced(void *user, const char *text)
{
    (void)user;
    input_set_text(text);
}

static size_t on_find(void *user, const char *query)
{
    struct tui_view *v = user;
    size_t n = transcript_search(&v->tr, query, v->height);
    v->changed = true;
    return n;
}

static bool on_copy(void *user, const char *text, size_t len, const char *what)
{
    (void)user, (void)what;
    return screen_clipboard(text, len);
}

static void on_markdown_changed(void *user, bool on)
{
    struct tui_view *v = user;
    transcript_set_markdown(&v->tr, on);
    v->changed = true;
}

static void on_tree_shown(void *user)
{
    struct tui_view *v = user;
    tree_view_open(&v->tree, v->chat);
    v->changed = true;
}

const char *tui_key_name(enum chat_hint hint)
{
    bool vi = input_vi_mode() != NULL;
    if (hint == CHAT_HINT_UNQUEUE)
        return vi ? "Ctrl-G" : "Esc";
    return vi ? "Ctrl-C" : "Esc";
}

static const char *on_key_name(void *user, enum chat_hint hint)
{
    (void)user;
    return tui_key_name(hint);
}

static void on_line_remembered(void *user, const char *line)
{
    (void)user;
    input_history_add(line);
}

void tui_view_init(struct tui_view *v, struct chat_view *ops)
{
    memset(v, 0, sizeof *v);
    transcript_init(&v->tr);
    *ops = (struct chat_view){
        .user = v,
        .cleared = on_cleared,
        .message_added = on_message_added,
        .reply_started = on_reply_started,
        .reply_text = on_reply_text,
        .reply_finished = on_reply_finished,
        .changed = on_changed,
        .session_list_changed = on_session_list_changed,
        .session_list_toggled = on_session_list_toggled,
        .input_replaced = on_input_replaced,
        .line_remembered = on_line_remembered,
        .markdown_changed = on_markdown_changed,
        .copy = on_copy,
        .find = on_find,
        .queued_changed = on_queued_changed,
        .tree_shown = on_tree_shown,
        .key_name = on_key_name,
    };
    v->tr.markdown = true; /* until --raw or /set markdown off says otherwise */
    v->queued_msg = SIZE_MAX;
}

void tui_view_toggle_sessions(struct tui_view *v)
{
    v->show_sessions = !v->show_sessions;
    tui_view_refresh_sessions(v);
    if (v->show_sessions)
        session_list_focus(&v->list, v->session_list, v->n_session_list,
                           chat_session_name(v->chat));
    else
        v->list.focused = false;
}

void tui_view_fini(struct tui_view *v)
{
    strv_free(v->session_list);
    session_list_fini(&v->list);
    free(v->queued_text);
    transcript_fini(&v->tr);
    memset(v, 0, sizeof *v);
}
