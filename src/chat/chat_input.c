/* chat_input.c: a submitted line (chat_submit): the y/n of a download's
 * question, a slash command (slash_commands.c parses it, chat_commands.c
 * runs it), the message that replaces an /edit's, a new turn, or a message
 * typed ahead that waits for the reply (queued). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/chat/chat_controller.h"
#include "src/chat/chat_internal.h"
#include "src/base/xalloc.h"

static void remember_line(struct chat *c, const char *line)
{
    if (c->view.line_remembered)
        c->view.line_remembered(c->view.user, line);
}

bool chat_unqueue(struct chat *c)
{
    if (!c->queued)
        return false;
    chat_put_input(c, c->queued);
    free(c->queued);
    c->queued = NULL;
    c->queued_conv = NULL;
    if (c->view.queued_changed)
        c->view.queued_changed(c->view.user, NULL);
    chat_notice(c, false, "unqueued: the message is back in the input line");
    chat_changed(c);
    return true;
}

const char *chat_queued(const struct chat *c)
{
    return c->queued;
}

/* Send text in place of the message /edit chose: the conversation keeps
 * the longest common prefix (the worker's cache with it) and computes only
 * the changed turn.  false: nothing was sent (the text stays in the input). */
static bool submit_edit(struct chat *c, const char *text)
{
    struct conv *v = c->cur;
    size_t i = c->edit_msg;
    int k = c->edit_exchange;
    c->edit_conv = NULL;
    if (i >= v->s->n_msgs || v->s->msgs[i].role != ROLE_USER) {
        chat_notice(c, true, "message #%d is gone: send it again to add it", k);
        return false;
    }
    char err[1024];
    struct conv_plan plan;
    int rc = conversation_edit(&v->cv, i, text, chat_reply_reserve(c), &plan, err, sizeof err);
    v->dirty = true;
    chat_show_conv(c);
    if (rc) {
        /* messages i.. left the path already (kept as a branch: conversation_edit) */
        chat_notice(c, true, "%s", err);
        return false;
    }
    v->n_dropped_note = plan.n_dropped;
    v->edited_exchange = k;
    chat_start_reply(c);
    return true;
}

bool chat_resend(struct chat *c, int n)
{
    if (!chat_resend_begin(c, n))
        return false;
    char *text = x_strdup(c->cur->s->msgs[c->edit_msg].content);
    remember_line(c, text);
    bool sent = submit_edit(c, text);
    free(text);
    return sent;
}

void chat_submit(struct chat *c, char *line)
{
    if (!line) {
        c->quit = true;
        return;
    }
    if (chat_pull_answer(c, line) || chat_shell_answer(c, line)) {
        free(line);
        return;
    }
    struct cmd cmd;
    size_t start;
    char err[1024];
    enum cmd_parse_result r = cmd_parse(line, &cmd, &start, err, sizeof err);
    if (r == CMD_ERROR) {
        chat_notice(c, true, "%s", err);
        remember_line(c, line);
        free(line);
        return;
    }
    if (r == CMD_OK) {
        remember_line(c, line);
        free(line);
        chat_run_command(c, &cmd);
        cmd_fini(&cmd);
        return;
    }
    const char *text = line + start;
    /* blank lines are not messages */
    if (text[strspn(text, " \t\n")] == '\0') {
        if (c->edit_conv) {
            c->edit_conv = NULL;
            chat_notice(c, false, "edit cancelled: the message stays as it was");
        }
        free(line);
        return;
    }
    if (c->reply.active || !c->model_ready) {
        /* typing ahead: one message waits for the reply (or the load) */
        if (c->queued || c->edit_conv) {
            chat_notice(c, true, c->queued ? "a message is already queued: Esc on an empty line "
                                             "takes it back"
                                           : "the edited message is sent when the reply ends: "
                                             "Esc or Ctrl-C stops the reply");
            chat_put_input(c, line);
            free(line);
            return;
        }
        c->queued = line;
        c->queued_conv = c->cur;
        if (c->view.queued_changed)
            c->view.queued_changed(c->view.user, line + start);
        chat_notice(c, false, "queued: sent when the %s (Esc on an empty line takes it back)",
                    c->reply.active ? "reply ends" : "model is ready");
        chat_changed(c);
        return;
    }
    remember_line(c, line);
    if (c->edit_conv == c->cur && c->edit_conv) {
        if (!submit_edit(c, text))
            chat_put_input(c, line);
        free(line);
        return;
    }
    c->edit_conv = NULL;
    struct conv *v = c->cur;
    struct conv_plan plan;
    char *with_file = chat_attach_to(c, text);
    int rc = conversation_user_turn(&v->cv, with_file ? with_file : text, chat_reply_reserve(c),
                                    &plan, err, sizeof err);
    free(with_file);
    if (rc) {
        /* nothing changed: the text stays in the input (and the file attached) */
        chat_notice(c, true, "%s", err);
        chat_put_input(c, line);
        free(line);
        return;
    }
    if (with_file)
        chat_attach_sent(c);
    free(line);
    v->dirty = true;
    if (plan.n_dropped > 0) {
        chat_show_conv(c); /* the dropped messages get their mark */
        v->n_dropped_note = plan.n_dropped; /* said after the reply */
        chat_notice(c, false,
                    "%d earlier message%s dropped from the context to make room (/pin keeps an "
                    "exchange)",
                    plan.n_dropped, plan.n_dropped == 1 ? "" : "s");
    } else {
        struct chat_message m = chat_session_message(v->s, v->s->n_msgs - 1);
        chat_add_message(c, &m);
    }
    chat_start_reply(c);
}
