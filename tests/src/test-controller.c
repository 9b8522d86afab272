/* test-controller.c: the chat controller (src/chat/chat_controller.h) without a
 * terminal: lines in, the worker's events in, notifications and state out.
 *
 * The real worker and engine on two small generated checkpoints (micro
 * preset, synthetic tokenizer; "a" and "b" differ by seed), in a private
 * XDG tree.  A recording view keeps every notification.  Checked: the
 * first load, /set alone (each value and where it comes from: default,
 * template, model, config.yaml, command line, /set, the session), a turn
 * (the user message, the reply streaming as text
 * notifications, the same text in the session file), prefix reuse on the
 * next turn, /retry (greedy: the same reply, almost nothing computed), a
 * refused line while a reply streams (back to the input), cancel (the
 * partial reply kept, marked interrupted), /model and back (re-prefilled,
 * then the kept cache), /new and /switch (the transcript rebuilt with its
 * exchange numbers), /undo (the message back in the input), /undo,
 * /remove, /clear and /fork while a branch switch computes (their notes
 * outlive its end), /undo, /remove and /clear keeping what they take off
 * (the tree, the file) and /undo right after /remove or /clear putting it
 * back, an /edit ended by its message's removal, /save (the
 * session and its KV snapshot written) and a restart that restores both;
 * a resume from a snapshot posts no prefill (one far behind or damaged does).
 * Replies are paced (ELM_WORKER_TEST_TOKEN_INTERVAL_MS) so that a cancel
 * lands while one streams. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "src/chat/chat_controller.h"
#include "src/store/paths.h"
#include "src/conversation/session.h"
#include "src/conversation/session_tree.h"
#include "src/store/store.h"
#include "src/base/strbuf.h"
#include "src/template/template.h"
#include "src/base/xalloc.h"
#include "src/base/platform.h"
#include "tests/lib/tap.h"

/* ------------------------------------------------------ the recording view */

struct rec_msg {
    enum chat_role role;
    char *text;
    int ref, exchange;
    bool interrupted;
};

struct rec {
    struct rec_msg *msgs; /* the transcript as the notifications built it */
    size_t n_msgs;
    int n_cleared, n_started, n_finished, n_text_chunks, n_changed;
    int n_list_changed, n_list_toggled;
    struct sbuf reply;      /* the streamed text of the last reply */
    bool last_interrupted;
    char *input;            /* the last text given to the input line */
    char *remembered;       /* the last line for the history */
};

static struct rec rec;

static void rec_clear(void)
{
    for (size_t i = 0; i < rec.n_msgs; i++)
        free(rec.msgs[i].text);
    rec.n_msgs = 0;
}

static void rec_push(enum chat_role role, const char *text, int ref, int exchange)
{
    rec.msgs = x_reallocarray(rec.msgs, rec.n_msgs + 1, sizeof *rec.msgs);
    rec.msgs[rec.n_msgs++] =
        (struct rec_msg){.role = role, .text = x_strdup(text), .ref = ref, .exchange = exchange};
}

static void on_cleared(void *u)
{
    (void)u;
    rec_clear();
    rec.n_cleared++;
}

static void on_message(void *u, const struct chat_message *m)
{
    (void)u;
    rec_push(m->role, m->text, m->ref, m->exchange);
    rec.msgs[rec.n_msgs - 1].interrupted = m->interrupted;
}

static void on_reply_started(void *u, const struct chat_message *m)
{
    (void)u;
    rec.n_started++;
    sbuf_fini(&rec.reply);
    sbuf_add(&rec.reply, "", 0);
    rec_push(CHAT_ASSISTANT, "", m->ref, 0);
}

static void on_reply_text(void *u, const char *text, size_t n)
{
    (void)u;
    rec.n_text_chunks++;
    sbuf_add(&rec.reply, text, n);
}

static void on_reply_finished(void *u, bool interrupted, const char *final_text, int ref)
{
    (void)u, (void)ref;
    rec.n_finished++;
    rec.last_interrupted = interrupted;
    struct rec_msg *m = &rec.msgs[rec.n_msgs - 1];
    free(m->text);
    m->text = x_strdup(final_text ? final_text : rec.reply.data);
    m->interrupted = interrupted;
}

static void on_changed(void *u)
{
    (void)u;
    rec.n_changed++;
}

static void on_list_changed(void *u)
{
    (void)u;
    rec.n_list_changed++;
}

static void on_list_toggled(void *u)
{
    (void)u;
    rec.n_list_toggled++;
}

static void on_input(void *u, const char *text)
{
    (void)u;
    free(rec.input);
    rec.input = x_strdup(text);
}

static void on_remember(void *u, const char *line)
{
    (void)u;
    free(rec.remembered);
    rec.remembered = x_strdup(line);
}

static const struct chat_view view = {
    .cleared = on_cleared,
    .message_added = on_message,
    .reply_started = on_reply_started,
    .reply_text = on_reply_text,
    .reply_finished = on_reply_finished,
    .changed = on_changed,
    .session_list_changed = on_list_changed,
    .session_list_toggled = on_list_toggled,
    .input_replaced = on_input,
    .line_remembered = on_remember,
};

static size_t count_role(enum chat_role role)
{
    size_t n = 0;
    for (size_t i = 0; i < rec.n_msgs; i++)
        n += rec.msgs[i].role == role;
    return n;
}

static const struct rec_msg *last_of(enum chat_role role)
{
    for (size_t i = rec.n_msgs; i-- > 0;)
        if (rec.msgs[i].role == role)
            return &rec.msgs[i];
    return NULL;
}

/* ---------------------------------------------------------------- helpers */

static struct chat *chat;
static char model_a[4096], model_b[4096];

static bool settled(const struct chat_activity *a)
{
    return !a->model_loading && !a->generating && !a->prefilling && !a->saving;
}

static bool model_settled(const struct chat_activity *a)
{
    return !a->model_loading;
}

static bool streaming(const struct chat_activity *a)
{
    return a->reply_ids > 0 || !a->generating;
}

static bool streamed_a_few(const struct chat_activity *a)
{
    return a->reply_ids >= 3 || !a->generating;
}

/* Run the controller until until() holds (60 s at most). */
static bool run_until(bool (*until)(const struct chat_activity *))
{
    double end = chat_now() + 60;
    for (;;) {
        struct chat_activity a;
        chat_get_activity(chat, &a);
        if (until(&a))
            return true;
        if (chat_now() > end)
            return false;
        chat_wait_events(chat, 50);
    }
}

static void submit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void submit(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *line = NULL;
    if (vasprintf(&line, fmt, ap) < 0)
        bail_out("out of memory");
    va_end(ap);
    chat_submit(chat, line);
}

static struct chat_activity activity(void)
{
    struct chat_activity a;
    chat_get_activity(chat, &a);
    return a;
}

static const char *notice(void)
{
    struct chat_status st;
    chat_get_status(chat, &st, chat_now());
    return st.notice ? st.notice : "";
}

static struct chat_status status(void)
{
    struct chat_status st;
    chat_get_status(chat, &st, chat_now());
    return st;
}

static struct chat_options options(const char *session)
{
    struct chat_options o = {.template_name = "openelm-instruct", .session_name = session};
    cli_common_init(&o.common);
    o.common.model = model_a;
    o.common.n_threads = 1;
    o.common.max_tokens = 8;
    return o;
}

static bool start(const char *session)
{
    struct chat_options o = options(session);
    char err[2048];
    chat = chat_new(&o, &view, err, sizeof err);
    if (!chat) {
        diag("chat_new: %s", err);
        return false;
    }
    return true;
}

static char *xdg_file(const char *var, const char *rel)
{
    return x_asprintf("%s/elmchat/%s", getenv(var), rel);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ------------------------------------------------------------------ tests */

static int turn_seq; /* the sequence the first turn sent */

static void test_load(void)
{
    ok(start("t1"), "chat_new");
    is_int(rec.n_cleared, 1, "the transcript is built once");
    ok(rec.n_msgs == 1 && rec.msgs[0].role == CHAT_INFO && strstr(rec.msgs[0].text, "/help"),
       "a new session says how to start (%s)", rec.n_msgs ? rec.msgs[0].text : "nothing");
    struct chat_activity a = activity();
    ok(a.model_loading && !a.model_ready, "the model loads in the background");
    ok(strstr(status().state, "loading") != NULL, "the status says so (%s)", status().state);
    ok(run_until(settled), "the load ends");
    a = activity();
    ok(a.model_ready && !a.model_loading, "the model is ready");
    struct chat_status st = status();
    is_str(st.state, "idle", "idle");
    is_str(st.model, "a", "the model's name: its folder");
    is_str(st.session, "t1", "the session");
    is_str(st.template_name, "openelm-instruct", "the template (-t)");
    ok(st.n_ctx > 0, "the context length came with MODEL_READY (%d)", st.n_ctx);
    const struct elm_model_info *mi = chat_model_info(chat);
    ok(mi && mi->n_layers == 4, "the model's info (%d layers)", mi ? mi->n_layers : -1);
}

/* The line of /set's table for PARAM (in the last information shown):
 * its value and origin, "" when there is none. */
static const char *set_line(const char *param)
{
    static char buf[256];
    buf[0] = '\0';
    const struct rec_msg *m = last_of(CHAT_INFO);
    char key[64];
    snprintf(key, sizeof key, "\n  %s ", param);
    const char *at = m ? strstr(m->text, key) : NULL;
    if (at) {
        at += strlen(key);
        at += strspn(at, " ");
        snprintf(buf, sizeof buf, "%.*s", (int)strcspn(at, "\n"), at);
    }
    return buf;
}

static bool has(const char *text, const char *a, const char *b)
{
    return strstr(text, a) && strstr(text, b);
}

/* Issue 50: /set alone shows each value in effect and where it comes from
 * (main() gave the model a generation_config.json top_p and config.yaml a
 * min_p; the options give max-tokens; the template the rest). */
static void test_set_shows_sources(void)
{
    submit("/set");
    ok(last_of(CHAT_INFO) && strstr(last_of(CHAT_INFO)->text, "default < template < model"),
       "/set alone shows the values and the precedence");
    static const struct {
        const char *param, *value, *origin, *what;
    } want[] = {
        {"temperature", "0 (greedy)", "template openelm-instruct", "the template's"},
        {"top-k", "0 (off)", "default", "the default"},
        {"top-p", "0.95", "model a", "the model's generation_config.json"},
        {"min-p", "0.05", "config.yaml", "config.yaml's"},
        {"repeat-penalty", "1.2", "template", "the template's"},
        {"repeat-last-n", "64", "template", "the template's"},
        {"seed", "0", "default", "the default"},
        {"max-tokens", "8", "command line", "the command line's"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const char *l = set_line(want[i].param);
        ok(has(l, want[i].value, want[i].origin), "%s: %s (%s)", want[i].param, want[i].what, l);
    }
    submit("/set top-p 0.5");
    submit("/set");
    const char *l = set_line("top-p");
    ok(has(l, "0.5", "/set"), "after /set top-p 0.5: /set's, over the model's (%s)", l);
    submit("/set top-p 0.95");
}

static void test_turn(void)
{
    int changed = rec.n_changed;
    submit("hello there");
    struct chat_activity a = activity();
    ok(a.generating, "a message starts a reply");
    turn_seq = (int)a.n_tokens;
    const struct rec_msg *u = last_of(CHAT_USER);
    ok(u && strcmp(u->text, "hello there") == 0 && u->exchange == 1 && u->ref == 0,
       "the user message is shown: exchange 1, session index 0");
    is_str(rec.remembered, "hello there", "the line goes to the history");
    is_int(rec.n_started, 1, "the reply starts");
    is_int(rec.msgs[rec.n_msgs - 1].ref, 1, "... as session message 1");
    ok(run_until(streaming), "tokens arrive");
    ok(strncmp(status().state, "generating", 10) == 0 || !activity().generating,
       "the status says generating (%s)", status().state);
    ok(run_until(settled), "the reply ends");
    a = activity();
    ok(a.reply_ids >= 1 && a.reply_ids <= 8, "at most max-tokens ids (%zu)", a.reply_ids);
    ok(rec.n_text_chunks >= 1, "the text streamed in %d notifications", rec.n_text_chunks);
    is_int(rec.n_finished, 1, "the reply finishes once");
    ok(rec.n_changed > changed, "the status changed on the way (%d)", rec.n_changed - changed);
    const struct rec_msg *r = last_of(CHAT_ASSISTANT);
    ok(r && strcmp(r->text, rec.reply.data) == 0, "the finished reply is the streamed text");
    int reused, computed;
    chat_last_request(chat, &reused, &computed);
    is_int(reused + computed, turn_seq, "reused + computed = the sequence sent (%d + %d)",
           reused, computed);
    ok(reused > 0, "the system prefix came from the load's background prefill (%d)", reused);
    is_int(status().n_past, (int)activity().n_tokens, "the gauge shows the sequence");

    /* the autosave wrote the session: the reply there is what streamed */
    char *path = xdg_file("XDG_DATA_HOME", "sessions/t1.yaml");
    char err[1024];
    struct session *s = session_load(path, err, sizeof err);
    ok(s && s->n_msgs == 2, "autosaved after the turn (%s)", s ? "2 messages" : err);
    ok(s && s->n_msgs == 2 && strcmp(s->msgs[1].content, rec.reply.data) == 0,
       "the saved reply is the streamed text");
    session_free(s);
    free(path);
}

static void test_reuse_and_retry(void)
{
    submit("and a second question");
    int seq = (int)activity().n_tokens;
    ok(run_until(settled), "the second reply");
    int reused, computed;
    chat_last_request(chat, &reused, &computed);
    ok(reused >= turn_seq, "the first exchange came from the cache (%d reused of %d)", reused,
       seq);
    is_int(reused + computed, seq, "only the rest was computed (%d)", computed);
    const struct rec_msg *u = last_of(CHAT_USER);
    is_int(u ? u->exchange : 0, 2, "exchange 2");

    char *before = x_strdup(rec.reply.data);
    int cleared = rec.n_cleared;
    submit("/retry");
    ok(activity().generating, "/retry asks again");
    is_int(rec.n_cleared, cleared + 1, "the transcript is rebuilt without the old reply");
    is_int((int)count_role(CHAT_ASSISTANT), 2, "two replies shown (the new one streaming)");
    ok(run_until(settled), "the retried reply ends");
    is_str(rec.reply.data, before, "greedy: the same reply again");
    chat_last_request(chat, &reused, &computed);
    ok(computed <= 1, "/retry computes (almost) nothing: %d reused, %d computed", reused,
       computed);
    free(before);
}

static void test_refuse_and_cancel(void)
{
    submit("/set max-tokens 400");
    ok(strstr(notice(), "max-tokens") != NULL, "/set says so (%s)", notice());
    submit("tell me a long story");
    ok(run_until(streamed_a_few), "a long reply streams");
    free(rec.input);
    rec.input = NULL;
    submit("too early");
    ok(rec.input == NULL && chat_queued(chat) && strcmp(chat_queued(chat), "too early") == 0,
       "a line sent meanwhile is queued");
    ok(strstr(notice(), "queued") != NULL, "... and the status says so (%s)", notice());
    ok(activity().generating, "the reply goes on");
    submit("and another");
    is_str(rec.input, "and another", "a second one goes back to the input");
    ok(strstr(notice(), "already queued") != NULL, "... and the status says why (%s)", notice());
    ok(chat_unqueue(chat) && !chat_queued(chat), "chat_unqueue takes the queued line back");
    is_str(rec.input, "too early", "... into the input");
    ok(!chat_unqueue(chat), "with nothing queued, chat_unqueue does nothing");
    chat_cancel(chat);
    ok(run_until(settled), "cancel ends it");
    size_t n = activity().reply_ids;
    ok(n >= 3 && n < 400, "cut short (%zu ids)", n);
    ok(rec.last_interrupted, "the reply is marked interrupted");
    const struct rec_msg *r = last_of(CHAT_ASSISTANT);
    ok(r && r->interrupted && strcmp(r->text, rec.reply.data) == 0,
       "the partial text is kept in the transcript");

    submit("/set max-tokens 8");
    submit("another long one");
    ok(activity().generating, "a reply starts");
    submit("typed ahead");
    ok(chat_queued(chat) != NULL, "a message typed meanwhile is queued");
    size_t users = count_role(CHAT_USER);
    ok(run_until(settled), "the reply ends, then the queued message's reply");
    const struct rec_msg *u = last_of(CHAT_USER);
    ok(!chat_queued(chat) && count_role(CHAT_USER) == users + 1 && u &&
           strcmp(u->text, "typed ahead") == 0,
       "the queued message was sent once, after the reply");
    /* the later tests count this session's exchanges: take both back */
    submit("/undo");
    submit("/undo");
    is_int((int)count_role(CHAT_USER), (int)users - 1, "/undo twice takes them back");
}

static void test_model_switch(void)
{
    size_t n = activity().n_tokens;
    submit("/model %s", model_b);
    ok(activity().model_loading, "/model loads in the background");
    ok(run_until(model_settled) && activity().model_ready, "the new model is ready");
    ok(strstr(notice(), "b loaded in") != NULL, "the notice says so (%s)", notice());
    ok(run_until(settled), "the conversation is re-prefilled");
    is_str(status().model, "b", "the status names it");
    is_str(chat_model_label(chat), "b", "replies are labelled with it");
    int reused, computed;
    chat_last_request(chat, &reused, &computed);
    is_int(computed, (int)n, "the whole conversation was prefilled into b");
    is_int(reused, 0, "nothing of a's cache is b's");
    submit("a question for b");
    ok(run_until(settled), "b answers in the same conversation");
    ok(activity().reply_ids > 0, "with %zu ids", activity().reply_ids);
    is_int((int)count_role(CHAT_USER), 4, "four exchanges");

    n = activity().n_tokens;
    submit("/model %s", model_a);
    ok(run_until(settled), "back to a");
    is_str(status().model, "a", "a again");
    chat_last_request(chat, &reused, &computed);
    ok(reused > 0 && reused + computed == (int)n && computed < (int)n,
       "a's cache was kept: only b's turn computed (%d reused, %d computed)", reused, computed);
}

static void test_sessions(void)
{
    int cleared = rec.n_cleared, listed = rec.n_list_changed;
    submit("/new other");
    is_str(chat_session_name(chat), "other", "/new other");
    ok(rec.n_cleared == cleared + 1 && count_role(CHAT_USER) == 0, "an empty transcript");
    ok(rec.n_list_changed > listed, "the session list changed");
    ok(run_until(settled), "settled");
    submit("hi other");
    ok(run_until(settled), "a reply in the other session");
    is_int((int)count_role(CHAT_USER), 1, "one exchange there");
    char **names = chat_names(chat, ARG_SESSION);
    bool both = false;
    for (size_t i = 0; names && names[i] && names[i + 1]; i++)
        both |= strcmp(names[i], "other") == 0 && strcmp(names[i + 1], "t1") == 0;
    ok(both, "both sessions are listed, sorted");
    strv_free(names);

    submit("/switch t1");
    is_str(chat_session_name(chat), "t1", "/switch t1");
    ok(strstr(notice(), "session 't1'") != NULL, "the notice says so (%s)", notice());
    is_int((int)count_role(CHAT_USER), 4, "its four exchanges are shown again");
    bool numbered = true;
    int k = 0;
    for (size_t i = 0; i < rec.n_msgs; i++)
        if (rec.msgs[i].role == CHAT_USER)
            numbered &= rec.msgs[i].exchange == ++k && rec.msgs[i].ref == 2 * (k - 1);
    ok(numbered, "numbered 1..4, each with its session index");
    ok(run_until(settled), "settled");
    int reused, computed;
    chat_last_request(chat, &reused, &computed);
    is_int(computed, 0, "its cache was still there (%d reused)", reused);
    submit("/sessions");
    is_int(rec.n_list_toggled, 1, "/sessions asks the view to show the list");
}

static void test_undo(void)
{
    size_t users = count_role(CHAT_USER);
    submit("/undo");
    is_str(rec.input, "a question for b", "/undo gives the message back to the input");
    is_int((int)count_role(CHAT_USER), (int)users - 1, "the exchange left the transcript");
    submit("a question for b");
    ok(run_until(settled), "sent again");
}

/* A branch switch posts a prefill whose end names the path it showed; a
 * command that replaces the path before that end keeps its own note.  The
 * controller reads the worker's events only in chat_wait_events, so the
 * command always lands between the post and the end. */
static void test_path_replaced_notes(void)
{
    static const struct {
        const char *cmd, *note;
    } cases[] = {
        {"/undo", "removed the last exchange"},
        {"/remove", "removed exchange 2"},
        {"/clear", "conversation cleared"},
        {"/fork 1", "forked after exchange 1"},
    };
    submit("/new race");
    ok(run_until(settled), "a session for the race");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        submit("first");
        ok(run_until(settled), "%s: exchange 1", cases[i].cmd);
        submit("second");
        ok(run_until(settled), "%s: exchange 2", cases[i].cmd);
        submit("/edit 2");
        submit("second, edited");
        ok(run_until(settled), "%s: message 2 in a second version", cases[i].cmd);
        submit("/branch 2 1");
        ok(activity().prefilling, "%s: back to version 1, its prefill posted (%s)", cases[i].cmd,
           notice());
        submit("%s", cases[i].cmd);
        ok(run_until(settled), "%s: the switch's prefill ended", cases[i].cmd);
        ok(strstr(notice(), cases[i].note) != NULL, "%s: its note outlives the switch (%s)",
           cases[i].cmd, notice());
        submit("/clear");
        ok(run_until(settled), "%s: cleared for the next case", cases[i].cmd);
    }
    submit("/switch t1");
    ok(run_until(settled), "back to t1");
}

/* The user messages shown, in order, joined by '|'. */
static const char *shown_users(void)
{
    static char buf[512];
    buf[0] = '\0';
    for (size_t i = 0; i < rec.n_msgs; i++)
        if (rec.msgs[i].role == CHAT_USER)
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", buf[0] ? "|" : "",
                     rec.msgs[i].text);
    return buf;
}

/* Every message of the session's tree (path and other branches). */
static size_t tree_size(void)
{
    size_t n;
    free(chat_tree(chat, &n));
    return n;
}

static bool tree_has(const char *text)
{
    size_t n;
    struct session_tree_row *rows = chat_tree(chat, &n);
    bool found = false;
    for (size_t i = 0; i < n && !found; i++)
        found = strcmp(rows[i].m->content, text) == 0;
    free(rows);
    return found;
}

static void say(const char *text)
{
    submit("%s", text);
    ok(run_until(settled), "'%s' answered", text);
}

/* Issue 50, item 7: /undo, /remove and /clear keep what they take off the
 * path (a branch one /tree away), and /undo right after /remove or /clear
 * puts it back. */
static void test_destructive_commands_keep(void)
{
    submit("/new keep");
    ok(run_until(settled), "a session for the destructive commands");
    say("one");
    say("two");
    say("three");
    submit("/retry");
    ok(run_until(settled), "a second version of reply 3");
    is_int((int)tree_size(), 7, "three exchanges, reply 3 in two versions: 7 messages");

    /* /undo: the exchange leaves the path, not the tree */
    submit("/undo");
    is_str(rec.input, "three", "/undo gives the message back");
    is_str(shown_users(), "one|two", "the exchange left the transcript");
    is_int((int)tree_size(), 7, "/undo destroyed nothing: both versions of reply 3 are kept");
    ok(strstr(notice(), "another branch") != NULL, "the notice says where it is (%s)", notice());
    submit("/undo");
    is_str(shown_users(), "one", "a second /undo takes the exchange before (not a redo)");
    is_int((int)tree_size(), 7, "still all 7");
    submit("/tree");
    ok(last_of(CHAT_INFO) && strstr(last_of(CHAT_INFO)->text, "three"),
       "/tree lists the undone exchanges");
    say("two");
    say("three");

    /* /remove N, then /undo: the exchange is back where it was */
    submit("/remove 2");
    is_str(shown_users(), "one|three", "/remove 2 takes exchange 2 off");
    ok(strstr(notice(), "removed exchange 2") && strstr(notice(), "/undo"),
       "the notice says /undo puts it back (%s)", notice());
    ok(tree_has("two"), "exchange 2 is in the tree still");
    ok(run_until(settled), "settled");
    submit("/undo");
    is_str(shown_users(), "one|two|three", "/undo puts exchange 2 back in its place");
    ok(strstr(notice(), "exchange 2 is back") != NULL, "the notice says so (%s)", notice());
    ok(run_until(settled), "the path is prefilled again");
    int reused, computed;
    chat_last_request(chat, &reused, &computed);
    ok(reused > 0, "from the cache's common prefix (%d reused, %d computed)", reused, computed);
    ok(strstr(notice(), "reused") != NULL, "the note at its end says what it cost (%s)",
       notice());
    submit("/undo");
    is_str(shown_users(), "one|two", "the next /undo is an /undo again");
    say("three");
    submit("/remove");
    is_str(shown_users(), "one|two", "/remove: the last exchange");
    submit("/pin 1"); /* changes no message: the /remove can still be undone */
    submit("/undo");
    is_str(shown_users(), "one|two|three", "/undo puts the last exchange back (%s)", notice());
    ok(run_until(settled), "prefilled");

    /* /clear, then /undo: the whole conversation is back */
    size_t before = tree_size();
    submit("/clear");
    is_int((int)count_role(CHAT_USER), 0, "/clear empties the transcript");
    ok(strstr(notice(), "/undo brings it back") != NULL, "the notice says how to get it back (%s)",
       notice());
    is_int((int)tree_size(), (int)before, "nothing left the tree");
    char *path = xdg_file("XDG_DATA_HOME", "sessions/keep.yaml");
    char err[1024];
    struct session *s = session_load(path, err, sizeof err);
    ok(s && s->n_msgs == 0 && s->n_alts == before,
       "the saved file keeps the cleared conversation as a branch (%s)", s ? "loaded" : err);
    session_free(s);
    submit("/undo");
    is_str(shown_users(), "one|two|three", "/undo after /clear brings the conversation back");
    ok(strstr(notice(), "the conversation is back") != NULL, "the notice says so (%s)", notice());
    ok(run_until(settled), "prefilled");
    s = session_load(path, err, sizeof err);
    ok(s && s->n_msgs == 6 && strcmp(s->msgs[2].content, "two") == 0,
       "... and saved so (%s)", s ? "loaded" : err);
    session_free(s);

    /* a change after /clear: /undo is an /undo of that change */
    submit("/clear");
    say("fresh");
    submit("/undo");
    is_str(shown_users(), "", "after a new message, /undo takes that message back");
    is_str(rec.input, "fresh", "... into the input");
    ok(tree_has("three") && tree_has("fresh"), "both conversations are in the tree");
    submit("/clear");
    ok(strstr(notice(), "empty already") != NULL, "/clear of an empty path says so (%s)",
       notice());
    free(path);
}

/* Issue 50, item 11: /edit 1, then exchange 1 removed: the edit ends with
 * it (it used to stay, "editing #1", and either refused the next message
 * or edited whatever message took #1's place). */
static void test_edit_of_removed_message(void)
{
    submit("/new stale-edit");
    ok(run_until(settled), "a session for the stale edit");
    say("alpha");
    say("beta");
    submit("/edit 1");
    ok(strstr(status().state, "editing #1") != NULL, "/edit 1: the status says so (%s)",
       status().state);
    submit("/remove 1");
    ok(strstr(status().state, "editing") == NULL, "removing #1 ends the edit (%s)",
       status().state);
    submit("gamma");
    ok(activity().generating, "the next message is sent (%s)", notice());
    ok(run_until(settled), "and answered");
    is_str(shown_users(), "beta|gamma", "as a new exchange; beta was not edited");
    /* the same through /undo and /clear */
    submit("/edit 2");
    submit("/undo");
    ok(strstr(status().state, "editing") == NULL, "/undo ends an edit of its message (%s)",
       status().state);
    submit("/edit 1");
    submit("/clear");
    ok(strstr(status().state, "editing") == NULL, "/clear ends an edit (%s)", status().state);
    submit("/switch t1");
    ok(run_until(settled), "back to t1");
}

static void test_save_and_restore(void)
{
    submit("/set top-k 7"); /* saved with t1: after the restart, the session's */
    submit("/save");
    ok(strstr(notice(), "saved 't1'") != NULL, "/save says so (%s)", notice());
    ok(run_until(settled), "the snapshot is written");
    char *yaml = xdg_file("XDG_DATA_HOME", "sessions/t1.yaml");
    char *kv = xdg_file("XDG_CACHE_HOME", "kv/t1.kv");
    char *meta = xdg_file("XDG_CACHE_HOME", "kv/t1.kv.meta");
    ok(exists(yaml) && exists(kv) && exists(meta), "the session, its snapshot and sidecar");

    /* what was shown, to compare after the restart */
    size_t n = rec.n_msgs;
    char **texts = x_reallocarray(NULL, n, sizeof *texts);
    for (size_t i = 0; i < n; i++)
        texts[i] = x_strdup(rec.msgs[i].text);
    size_t n_tokens = activity().n_tokens;
    chat_free(chat);
    chat = NULL;
    rec_clear();

    ok(start("t1"), "a restart on the session");
    bool same = rec.n_msgs == n;
    for (size_t i = 0; same && i < n; i++)
        same = strcmp(rec.msgs[i].text, texts[i]) == 0;
    ok(same, "the transcript is back as it was (%zu lines)", rec.n_msgs);
    ok(run_until(settled), "loaded, snapshot restored");
    int reused, computed;
    chat_last_request(chat, &reused, &computed);
    is_int((int)activity().n_tokens, (int)n_tokens, "the same token sequence");
    /* a snapshot taken after a reply lacks its last id and the template's
     * closing (a reply's DONE has not fed them): the next reply computes
     * them, nothing before it */
    ok(reused <= (int)n_tokens && reused + 3 >= (int)n_tokens && computed == 0,
       "the cache came from the snapshot: %d reused, %d computed", reused, computed);
    ok(strstr(notice(), "resumed from the KV snapshot") != NULL, "the notice says so (%s)",
       notice());
    submit("/set");
    const char *l = set_line("top-k");
    ok(has(l, "7", "session t1 (saved with it)"), "/set: top-k is the session's own (%s)", l);
    submit("after the restart");
    ok(run_until(settled), "the conversation goes on");
    chat_last_request(chat, &reused, &computed);
    ok(reused >= (int)n_tokens - 1, "on the restored cache (%d reused)", reused);
    for (size_t i = 0; i < n; i++)
        free(texts[i]);
    free(texts);
    free(yaml);
    free(kv);
    free(meta);
}

static void test_quit(void)
{
    ok(!chat_quit_requested(chat), "running");
    submit("/quit");
    ok(chat_quit_requested(chat), "/quit asks to leave");
    chat_free(chat);
    chat = NULL;
    char *yaml = xdg_file("XDG_DATA_HOME", "sessions/t1.yaml");
    char err[1024];
    struct session *s = session_load(yaml, err, sizeof err);
    ok(s && s->n_msgs == 10, "chat_free saved all five exchanges (%zu messages)",
       s ? s->n_msgs : 0);
    session_free(s);
    free(yaml);
}

/* ------------------------------------------------ session files (issue 50) */

static bool start_with(const struct chat_options *o)
{
    char err[2048];
    chat = chat_new(o, &view, err, sizeof err);
    if (!chat) {
        diag("chat_new: %s", err);
        return false;
    }
    return true;
}

/* A chat on session with nothing given on the command line but the
 * model (NULL: none) and the threads: it changes nothing in the session. */
static struct chat_options plain_options(const char *session, const char *model)
{
    struct chat_options o = {.session_name = session};
    cli_common_init(&o.common);
    o.common.model = model;
    o.common.n_threads = 1;
    return o;
}

static bool file_has(const char *path, const char *text)
{
    char *data = NULL, err[512];
    size_t len;
    bool hit = store_read_file(path, 1 << 24, &data, &len, err, sizeof err) == 0 &&
               strstr(data, text) != NULL;
    free(data);
    return hit;
}

static bool one_turn(const char *text)
{
    submit("%s", text);
    return run_until(settled);
}

static bool transcript_has(enum chat_role role, const char *text)
{
    for (size_t i = 0; i < rec.n_msgs; i++)
        if (rec.msgs[i].role == role && strstr(rec.msgs[i].text, text))
            return true;
    return false;
}

/* /save NAME over another saved conversation is refused; --force replaces
 * it on purpose; /new NAME does not start an empty NAME over a saved one. */
static void test_save_refuses(void)
{
    char *sa = xdg_file("XDG_DATA_HOME", "sessions/sa.yaml");
    ok(start("sa") && run_until(settled) && one_turn("alpha's own words"), "sa: one exchange");
    chat_free(chat);
    chat = NULL;
    rec_clear();
    ok(file_has(sa, "alpha's own words"), "sa is saved");
    ok(start("sb") && run_until(settled) && one_turn("beta's words"), "sb: one exchange");
    submit("/save sa");
    ok(strstr(notice(), "exists already") && strstr(notice(), "/save sa --force"),
       "/save sa is refused, with the way to replace it (%s)", notice());
    is_str(status().session, "sb", "still sb");
    ok(file_has(sa, "alpha's own words") && !file_has(sa, "beta's words"), "sa is as it was");
    submit("/new sa");
    ok(strstr(notice(), "exists") != NULL, "/new sa is refused too (%s)", notice());
    ok(file_has(sa, "alpha's own words"), "sa is still as it was");
    submit("/save sa --force");
    ok(strstr(notice(), "saved 'sa'") != NULL, "/save sa --force replaces it (%s)", notice());
    ok(file_has(sa, "beta's words") && !file_has(sa, "alpha's own words"), "sa holds sb's now");
    chat_free(chat);
    chat = NULL;
    rec_clear();
    free(sa);
}

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
           a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_size == b->st_size;
}

/* A session opened and left without a change is not written. */
static void test_unchanged_not_written(void)
{
    char *path = xdg_file("XDG_DATA_HOME", "sessions/sa.yaml");
    struct stat before, after;
    ok(stat(path, &before) == 0, "sa is there");
    struct chat_options o = plain_options("sa", model_a);
    ok(start_with(&o) && run_until(settled), "sa opened, its model ready");
    submit("/quit");
    chat_free(chat);
    chat = NULL;
    rec_clear();
    ok(stat(path, &after) == 0 && same_file(&before, &after),
       "/quit of an unchanged session writes nothing (same inode, mtime and size)");
    free(path);
}

static bool copy_file(const char *from, const char *to)
{
    char *data = NULL, err[512];
    size_t len;
    bool done = store_read_file(from, 1 << 26, &data, &len, err, sizeof err) == 0 &&
                store_write_atomic(to, data, len, err, sizeof err) == 0;
    free(data);
    return done;
}

/* A resume from the snapshot posts no prefill (issue 50: resume + first
 * token costs a live turn, not a pass more): the ids after the snapshot
 * (a reply's last id and the template's closing) go into the next reply's
 * pass.  A snapshot that does not load, or lacks more than a few ids (the
 * session went on without it), is prefilled in the background as before. */
static void test_resume_no_prefill(void)
{
    static const char *const words =
        "the river carried small boats past old stone houses where people sold bread "
        "and fish every morning before the market opened its gates to traders from "
        "distant towns bringing cloth salt and spices";
    struct chat_options o = plain_options("rs", model_a);
    o.common.max_tokens = 8;
    ok(start_with(&o) && run_until(settled) && one_turn("one") && one_turn("two"),
       "rs: two turns, each snapshotted after its reply");
    char *kv = xdg_file("XDG_CACHE_HOME", "kv/rs.kv");
    char *meta = xdg_file("XDG_CACHE_HOME", "kv/rs.kv.meta");
    char *kv_old = xdg_file("XDG_CACHE_HOME", "rs-old.kv");
    char *meta_old = xdg_file("XDG_CACHE_HOME", "rs-old.kv.meta");
    ok(copy_file(kv, kv_old) && copy_file(meta, meta_old), "its snapshot kept aside");
    size_t n_tokens = activity().n_tokens;
    chat_free(chat);
    chat = NULL;
    rec_clear();

    ok(start_with(&o) && run_until(settled), "rs: restarted");
    int reused, computed;
    chat_last_request(chat, &reused, &computed);
    unsigned n_prefills = activity().n_prefills;
    is_int((int)n_prefills, 0, "no prefill posted: the snapshot stands for it");
    ok(reused > 0 && reused < (int)n_tokens && computed == 0,
       "the snapshot holds all but the reply's last ids (%d of %zu)", reused, n_tokens);
    char want[160];
    snprintf(want, sizeof want,
             "resumed from the KV snapshot: %d tokens reused, %zu computed with the next reply",
             reused, n_tokens - (size_t)reused);
    ok(strstr(notice(), want) != NULL, "the notice says what is left (%s)", notice());
    int from_snapshot = reused;
    ok(one_turn("three"), "the next reply");
    chat_last_request(chat, &reused, &computed);
    is_int(reused, from_snapshot, "it starts where the snapshot ends: nothing computed between");
    ok(computed > (int)n_tokens - from_snapshot,
       "it computes the ids after the snapshot with its own turn (%d)", computed);
    is_int((int)activity().n_prefills, 0, "still no prefill");
    ok(one_turn(words) && one_turn(words), "two long turns more");
    chat_free(chat);
    chat = NULL;
    rec_clear();

    /* the snapshot of two turns ago: far behind the session */
    ok(copy_file(kv_old, kv) && copy_file(meta_old, meta), "an old snapshot put back");
    ok(start_with(&o) && run_until(settled), "rs: restarted on it");
    is_int((int)activity().n_prefills, 1, "the turns after it are prefilled in the background");
    chat_last_request(chat, &reused, &computed);
    ok(reused == from_snapshot && computed > 32, "from the snapshot's ids on (%d reused, %d computed)",
       reused, computed);
    ok(strstr(notice(), "resumed from the KV snapshot: ") != NULL &&
           strstr(notice(), "with the next reply") == NULL,
       "the prefill's notice (%s)", notice());
    chat_free(chat);
    chat = NULL;
    rec_clear();

    /* a damaged snapshot: a prefill, no word of a resume */
    ok(store_write_atomic(kv, "ELMKV", 5, want, sizeof want) == 0, "the snapshot damaged");
    ok(start_with(&o) && run_until(settled), "rs: restarted on it");
    is_int((int)activity().n_prefills, 1, "the conversation is prefilled instead");
    chat_last_request(chat, &reused, &computed);
    ok(reused == 0 && computed == (int)activity().n_tokens, "all of it (%d computed)", computed);
    ok(strstr(notice(), "resumed") == NULL, "no resume said (%s)", notice());
    chat_free(chat);
    chat = NULL;
    rec_clear();
    free(kv);
    free(meta);
    free(kv_old);
    free(meta_old);
}

/* -s NAME reopens on the session's own model, and the file keeps it; a
 * model that cannot be opened gives way to the default, said so. */
static void test_own_model(void)
{
    char *path = xdg_file("XDG_DATA_HOME", "sessions/mb.yaml");
    struct chat_options o = plain_options("mb", model_b);
    ok(start_with(&o) && run_until(settled) && one_turn("on model b"), "mb: a turn on b");
    chat_free(chat);
    chat = NULL;
    rec_clear();
    char *line = x_strdup(model_b); /* as model: names it (quoted or not) */
    ok(file_has(path, line), "the file names b");
    setenv("ELMCHAT_MODEL", model_a, 1); /* the default */
    o = plain_options("mb", NULL);
    ok(start_with(&o) && run_until(settled), "-s mb without -m");
    is_str(status().model, "b", "it reopens on its own model, b, not the default");
    int reused, computed;
    ok(one_turn("still on b"), "a turn");
    chat_last_request(chat, &reused, &computed);
    ok(reused > 0, "on its KV snapshot: %d reused, %d computed", reused, computed);
    chat_free(chat);
    chat = NULL;
    rec_clear();
    ok(file_has(path, line), "the file still names b");

    /* its model gone: the default, said so; the file keeps the name */
    char *data = NULL, err[512];
    size_t len;
    if (store_read_file(path, 1 << 24, &data, &len, err, sizeof err) != 0)
        bail_out("%s", err);
    char *at = strstr(data, line);
    if (!at)
        bail_out("no model: %s in %s", line, path);
    struct sbuf b = {0};
    sbuf_add(&b, data, (size_t)(at - data));
    sbuf_add(&b, "/no/such/model", strlen("/no/such/model"));
    sbuf_add(&b, at + strlen(line), len - (size_t)(at - data) - strlen(line));
    if (store_write_atomic(path, b.data, b.len, err, sizeof err) != 0)
        bail_out("%s", err);
    sbuf_fini(&b);
    free(data);
    ok(start_with(&o) && run_until(settled), "-s mb, its model gone");
    is_str(status().model, "a", "the default instead");
    ok(transcript_has(CHAT_ERROR, "/no/such/model") && transcript_has(CHAT_ERROR, "goes on with a"),
       "the transcript says why and which model is used");
    ok(one_turn("on the default"), "a turn on the default");
    chat_free(chat);
    chat = NULL;
    rec_clear();
    ok(file_has(path, "/no/such/model") && file_has(path, "on the default"),
       "the file keeps its model's name");
    unsetenv("ELMCHAT_MODEL");
    free(line);
    free(path);
}

/* -c: the most recently saved conversation; the exit note says how to
 * come back. */
static void test_continue(void)
{
    char *sa = xdg_file("XDG_DATA_HOME", "sessions/sa.yaml");
    char *mb = xdg_file("XDG_DATA_HOME", "sessions/mb.yaml");
    struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
    utimensat(AT_FDCWD, mb, old, 0);
    struct chat_options o = plain_options(NULL, model_a);
    o.continue_last = true;
    ok(start_with(&o), "-c");
    /* every file but mb is newer; among them the newest */
    const char *name = status().session;
    ok(name && strcmp(name, "mb") != 0 && strncmp(name, "chat-", 5) != 0,
       "-c opens a saved session, the newest (%s)", name ? name : "none");
    chat_free(chat);
    chat = NULL;
    rec_clear();
    struct timespec now[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
    utimensat(AT_FDCWD, sa, now, 0);
    ok(start_with(&o), "-c again");
    is_str(status().session, "sa", "the session saved last");
    ok(transcript_has(CHAT_USER, "beta's words"), "its conversation is shown");
    chat_save_all(chat);
    char *note = chat_exit_note(chat);
    ok(note && strstr(note, "elmchat -s sa") && strstr(note, "elmchat -c") &&
           strstr(note, "sa.yaml"),
       "the exit note: where it is and how to resume (%s)", note ? note : "none");
    free(note);
    chat_free(chat);
    chat = NULL;
    rec_clear();

    char *empty = x_asprintf("%s/nothing-here", tap_tmpdir());
    char *data = x_strdup(getenv("XDG_DATA_HOME"));
    setenv("XDG_DATA_HOME", empty, 1);
    char err[2048];
    chat = chat_new(&o, &view, err, sizeof err);
    ok(!chat && strstr(err, "no saved conversation"), "-c with none saved: %s", err);
    rec_clear();
    setenv("XDG_DATA_HOME", data, 1);
    free(data);
    free(empty);
    free(sa);
    free(mb);
}

/* A second chat on a session this one has open: flock's locks are per
 * open file, so a second open in one process is refused as another
 * process's is.  Without a view (bench --chat) it is a clear error. */
static void test_second_opener(void)
{
    char *path = xdg_file("XDG_DATA_HOME", "sessions/sa.yaml");
    struct stat before, after;
    stat(path, &before);
    struct chat_options o = plain_options("sa", model_a);
    ok(start_with(&o) && run_until(settled), "sa open");
    char err[2048] = "";
    struct chat *other = chat_new(&o, NULL, err, sizeof err);
    ok(!other && strstr(err, "'sa' is open in another elmchat"),
       "a second opener without a view: %s", err);
    chat_free(other);
    chat_free(chat);
    chat = NULL;
    rec_clear();
    ok(stat(path, &after) == 0 && same_file(&before, &after), "sa was not written");
    char *lock = xdg_file("XDG_DATA_HOME", "sessions/.sa.lock");
    ok(!exists(lock), "the lock file went with the last opener");
    free(lock);
    free(path);
}

/* ------------------------------------- every row of the action table (issue 46) */

/* A line of each command that its handler runs with (followed by the
 * test's folder and file when file is set, a model's path for /model), and
 * what says it ran: a notice or the last transcript line that holds
 * expect. */
struct row_case {
    const char *name, *line, *expect, *file;
};
static const struct row_case row_cases[] = {
    {"help", "/help", "/pin [N]", NULL},
    {"new", "/new rows-new", "new session 'rows-new'", NULL},
    {"sessions", "/sessions", NULL, NULL}, /* the view's session_list_toggled */
    {"switch", "/switch rows", "session 'rows'", NULL},
    {"model", "/model ", "is the current model", ""},
    {"template", "/template openelm-instruct", "template 'openelm-instruct'", NULL},
    {"system", "/system Be brief.", "system prompt set", NULL},
    {"role", "/role", "roles (/role NAME)", NULL},
    {"set", "/set", "temperature", NULL},
    {"format", "/format off", "format off: replies are free text", NULL},
    {"save", "/save", "saved 'rows'", NULL},
    {"load", "/load rows", "session 'rows'", NULL},
    {"rename", "/rename rows-b", "renamed 'rows' to 'rows-b'", NULL},
    {"delete", "/delete rows-new", "rows-new", NULL},
    {"export", "/export ", "exported to", "rows.md"},
    {"read", "/read ", "rows.txt", "rows.txt"},
    {"find", "/find hello", "find 'hello'", NULL},
    {"copy", "/copy #1", "clipboard", NULL},
    {"retry", "/retry", NULL, NULL}, /* a reply starts */
    {"undo", "/undo", "removed the last exchange", NULL},
    {"remove", "/remove 1", "removed exchange 1", NULL},
    {"edit", "/edit 1", "editing message #1", NULL},
    {"fork", "/fork 1", "exchange 1", NULL},
    {"branch", "/branch 1", "message #1", NULL},
    {"tree", "/tree", "you #1", NULL},
    {"pin", "/pin 1", "exchange 1 pinned", NULL},
    {"unpin", "/unpin 1", "exchange 1 unpinned", NULL},
    {"clear", "/clear", "conversation cleared", NULL},
    {"info", "/info", "template:", NULL},
    {"quit", "/quit", NULL, NULL}, /* chat_quit_requested */
};

static const struct row_case *row_case(const char *name)
{
    for (size_t i = 0; i < sizeof row_cases / sizeof row_cases[0]; i++)
        if (strcmp(row_cases[i].name, name) == 0)
            return &row_cases[i];
    return NULL;
}

/* The command as the slash parser makes it of the case's line. */
static bool row_cmd(const struct row_case *rc, struct cmd *cmd)
{
    char *line = !rc->file                       ? x_strdup(rc->line)
                 : strcmp(rc->name, "model") == 0 ? x_asprintf("%s%s", rc->line, model_a)
                              : x_asprintf("%s%s/%s", rc->line, tap_tmpdir(), rc->file);
    size_t start;
    char err[512];
    bool ok_ = cmd_parse(line, cmd, &start, err, sizeof err) == CMD_OK;
    if (!ok_)
        diag("%s: %s", line, err);
    free(line);
    return ok_;
}

static bool shown(const char *expect)
{
    if (strstr(notice(), expect))
        return true;
    return rec.n_msgs > 0 && strstr(rec.msgs[rec.n_msgs - 1].text, expect);
}

/* What a row leaves behind that the next one needs: one exchange on the
 * path, no edit in progress. */
static void row_restore(const char *name)
{
    if (strcmp(name, "undo") == 0 || strcmp(name, "clear") == 0 ||
        strcmp(name, "remove") == 0) {
        submit("/undo");
        run_until(settled);
        if (activity().n_tokens == 0 || count_role(CHAT_USER) == 0)
            one_turn("the exchange again");
    } else if (strcmp(name, "edit") == 0) {
        submit("%s", ""); /* a blank line ends the edit */
    }
}

/* While a reply streams, every row flagged CMD_REFUSED_BUSY is refused
 * with the same notice, by the dispatcher (the parsed line and the typed
 * entry point alike); the others are not refused for it. */
static void test_rows_refused_busy(void)
{
    submit("/set max-tokens 400");
    submit("a long reply, please");
    ok(run_until(streaming) && chat_generating(chat), "rows: a reply streams");
    size_t n_busy = 0;
    bool all = true;
    for (size_t i = 0; i < cmd_table_len; i++) {
        const struct cmd_info *row = &cmd_table[i];
        if (!(row->flags & CMD_REFUSED_BUSY))
            continue;
        n_busy++;
        const struct row_case *rc = row_case(row->name);
        struct cmd cmd;
        if (!rc || !row_cmd(rc, &cmd)) {
            all = false;
            continue;
        }
        bool ran = chat_run_command(chat, &cmd);
        cmd_fini(&cmd);
        if (ran || !strstr(notice(), "a reply is being generated")) {
            diag("/%s was not refused while a reply streams (%s)", row->name, notice());
            all = false;
        }
    }
    ok(all && n_busy >= 12, "the %zu rows flagged refused-while-busy are refused", n_busy);
    ok(!chat_pin(chat, 1) && strstr(notice(), "a reply is being generated"),
       "chat_pin from a key is refused the same way");
    ok(!chat_resend(chat, 1) && strstr(notice(), "a reply is being generated"),
       "chat_resend (the r key) too");
    chat_cancel(chat);
    ok(run_until(settled), "rows: the reply stopped");
    submit("/set max-tokens 8");
}

static void test_rows(void)
{
    char *txt = x_asprintf("%s/rows.txt", tap_tmpdir());
    FILE *f = fopen(txt, "w");
    if (f)
        fputs("a line to attach\n", f), fclose(f);
    free(txt);
    struct chat_options o = plain_options("rows", model_a);
    o.template_name = "openelm-instruct";
    ok(start_with(&o) && run_until(settled) && one_turn("hello rows"), "rows: one exchange");
    test_rows_refused_busy();
    bool every = true;
    for (size_t i = 0; i < cmd_table_len; i++) {
        const struct cmd_info *row = &cmd_table[i];
        const struct row_case *rc = row_case(row->name);
        if (!rc) {
            diag("/%s: no case here (every row of cmd_table gets one)", row->name);
            every = false;
            continue;
        }
        struct cmd cmd;
        if (!row_cmd(rc, &cmd)) {
            every = false;
            continue;
        }
        int toggled = rec.n_list_toggled, started = rec.n_started;
        bool ran = chat_run_command(chat, &cmd);
        cmd_fini(&cmd);
        run_until(settled);
        bool seen = rc->expect ? shown(rc->expect)
                    : strcmp(row->name, "sessions") == 0 ? rec.n_list_toggled == toggled + 1
                    : strcmp(row->name, "retry") == 0    ? rec.n_started == started + 1
                                                         : chat_quit_requested(chat);
        ok(ran && seen, "/%s reaches its handler (%s)", row->name,
           rc->expect ? rc->expect : row->name);
        row_restore(row->name);
    }
    ok(every, "every row of the table has its case");
    chat_free(chat);
    chat = NULL;
    rec_clear();
}

/* The typed entry points the UI's keys call: the same handlers. */
static void test_typed_entry_points(void)
{
    struct chat_options o = plain_options("typed", model_a);
    o.template_name = "openelm-instruct";
    ok(start_with(&o) && run_until(settled) && one_turn("first") && one_turn("second"),
       "typed: two exchanges");
    ok(chat_pin(chat, 1) && strstr(notice(), "exchange 1 pinned"), "chat_pin(c, 1)");
    ok(chat_unpin(chat, 1) && strstr(notice(), "exchange 1 unpinned"), "chat_unpin(c, 1)");
    int started = rec.n_started;
    ok(chat_resend(chat, 1) && run_until(settled) && rec.n_started == started + 1,
       "chat_resend(c, 1): message 1 sent again, a reply to it");
    ok(count_role(CHAT_USER) == 1, "the path is exchange 1 with its new reply");
    ok(chat_branch(chat, 1, true, 0) && strstr(notice(), "version 2 of 2"),
       "chat_branch(c, 1, reply, 0): its reply has two versions (%s)", notice());
    ok(chat_branch(chat, 1, true, 1) && run_until(settled) && strstr(notice(), "version 1 of 2"),
       "chat_branch(c, 1, reply, 1): the first one back (%s)", notice());
    ok(chat_edit(chat, 1) && rec.input && strcmp(rec.input, "first") == 0,
       "chat_edit(c, 1): its text in the input line");
    submit("%s", "");
    ok(chat_remove(chat, 9) && strstr(notice(), "there is no exchange 9"),
       "chat_remove(c, 9): not refused; its handler says there is no such exchange (%s)",
       notice());
    ok(chat_fork(chat, 1) && strstr(notice(), "forked after exchange 1") &&
           count_role(CHAT_USER) == 1,
       "chat_fork(c, 1): what followed exchange 1 is another branch (%s)", notice());
    started = rec.n_started;
    ok(chat_retry(chat) && run_until(settled) && rec.n_started == started + 1 &&
           count_role(CHAT_USER) == 1,
       "chat_retry(c): the last reply generated again");
    ok(chat_undo(chat) && count_role(CHAT_USER) == 0 && rec.input &&
           strcmp(rec.input, "first") == 0,
       "chat_undo(c): the exchange gone, its message back in the input line");
    submit("%s", "");
    ok(chat_switch_session(chat, "rows-b") && strcmp(chat_session_name(chat), "rows-b") == 0,
       "chat_switch_session(c, name)");
    chat_free(chat);
    chat = NULL;
    rec_clear();
}

/* /model X, then /quit without a turn: the file names X (issue 50). */
static void test_model_switch_saved(void)
{
    char *path = xdg_file("XDG_DATA_HOME", "sessions/ms.yaml");
    struct chat_options o = plain_options("ms", model_a);
    ok(start_with(&o) && run_until(settled) && one_turn("on a"), "ms: a turn on a");
    ok(file_has(path, model_a) && !file_has(path, model_b), "the file names a");
    ok(chat_load_model(chat, model_b) && run_until(settled), "/model b, loaded");
    is_str(status().model, "b", "b is the current model");
    submit("/quit");
    chat_free(chat);
    chat = NULL;
    rec_clear();
    ok(file_has(path, model_b), "after /quit with no new turn the file names b");
    free(path);
}

int main(int argc, char **argv)
{
    (void)argc;
    /* The uninstalled program finds the shipped prompts from its own path
     * (src/base/platform.c: argv[0] with --enable-portable-fallbacks). */
    platform_set_argv0(argv[0]);
    if (!tap_gen_checkpoint("--preset micro --synthetic-tokenizer --seed 1", model_a,
                            sizeof model_a, "a") ||
        !tap_gen_checkpoint("--preset micro --synthetic-tokenizer --seed 2", model_b,
                            sizeof model_b, "b"))
        skip_all("tests/lib/gen-checkpoint is not built");
    tap_private_xdg();
    /* a sampling value from the model and one from config.yaml, for /set
     * (greedy replies do not look at either) */
    char *gen_cfg = x_asprintf("%s/generation_config.json", model_a);
    char *cfg_dir = x_asprintf("%s/elmchat", getenv("XDG_CONFIG_HOME"));
    char *cfg = x_asprintf("%s/config.yaml", cfg_dir);
    FILE *f = fopen(gen_cfg, "w");
    if (f)
        fputs("{\"bos_token_id\": 1, \"eos_token_id\": 2, \"top_p\": 0.95}\n", f), fclose(f);
    paths_mkdir_p(cfg_dir);
    f = fopen(cfg, "w");
    if (f)
        fputs("sampling: {min_p: 0.05}\n", f), fclose(f);
    free(gen_cfg);
    free(cfg_dir);
    free(cfg);
    setenv("ELM_WORKER_TEST_TOKEN_INTERVAL_MS", "5", 1);
    unsetenv("ELMCHAT_MEM_BUDGET");
    plan_lazy();
    test_load();
    test_set_shows_sources();
    test_turn();
    test_reuse_and_retry();
    test_refuse_and_cancel();
    test_model_switch();
    test_sessions();
    test_undo();
    test_path_replaced_notes();
    test_destructive_commands_keep();
    test_edit_of_removed_message();
    test_save_and_restore();
    test_quit();
    rec_clear();
    test_save_refuses();
    test_unchanged_not_written();
    test_own_model();
    test_resume_no_prefill();
    test_continue();
    test_second_opener();
    test_model_switch_saved();
    test_rows();
    test_typed_entry_points();
    free(rec.msgs);
    free(rec.input);
    free(rec.remembered);
    sbuf_fini(&rec.reply);
    return done_testing();
}
