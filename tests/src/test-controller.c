/* test-controller.c: the chat controller (src/chat_controller.h) without a
 * terminal: lines in, the worker's events in, notifications and state out.
 *
 * The real worker and engine on two small generated checkpoints (micro
 * preset, synthetic tokenizer; "a" and "b" differ by seed), in a private
 * XDG tree.  A recording view keeps every notification.  Checked: the
 * first load, a turn (the user message, the reply streaming as text
 * notifications, the same text in the session file), prefix reuse on the
 * next turn, /retry (greedy: the same reply, almost nothing computed), a
 * refused line while a reply streams (back to the input), cancel (the
 * partial reply kept, marked interrupted), /model and back (re-prefilled,
 * then the kept cache), /new and /switch (the transcript rebuilt with its
 * exchange numbers), /undo (the message back in the input), /undo,
 * /remove, /clear and /fork while a branch switch computes (their notes
 * outlive its end), /save (the
 * session and its KV snapshot written) and a restart that restores both.
 * Replies are paced (ELM_WORKER_TEST_TOKEN_INTERVAL_MS) so that a cancel
 * lands while one streams. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/chat_controller.h"
#include "src/session.h"
#include "src/strbuf.h"
#include "src/template.h"
#include "src/xalloc.h"
#include "src/platform.h"
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

static struct chat chat;
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
        chat_get_activity(&chat, &a);
        if (until(&a))
            return true;
        if (chat_now() > end)
            return false;
        chat_wait_events(&chat, 50);
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
    chat_submit(&chat, line);
}

static struct chat_activity activity(void)
{
    struct chat_activity a;
    chat_get_activity(&chat, &a);
    return a;
}

static const char *notice(void)
{
    struct chat_status st;
    chat_get_status(&chat, &st, chat_now());
    return st.notice ? st.notice : "";
}

static struct chat_status status(void)
{
    struct chat_status st;
    chat_get_status(&chat, &st, chat_now());
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
    if (!chat_init(&chat, &o, &view, err, sizeof err)) {
        diag("chat_init: %s", err);
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
    ok(start("t1"), "chat_init");
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
    const struct elm_model_info *mi = chat_model_info(&chat);
    ok(mi && mi->n_layers == 4, "the model's info (%d layers)", mi ? mi->n_layers : -1);
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
    chat_last_request(&chat, &reused, &computed);
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
    chat_last_request(&chat, &reused, &computed);
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
    chat_last_request(&chat, &reused, &computed);
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
    ok(rec.input == NULL && chat_queued(&chat) && strcmp(chat_queued(&chat), "too early") == 0,
       "a line sent meanwhile is queued");
    ok(strstr(notice(), "queued") != NULL, "... and the status says so (%s)", notice());
    ok(activity().generating, "the reply goes on");
    submit("and another");
    is_str(rec.input, "and another", "a second one goes back to the input");
    ok(strstr(notice(), "already queued") != NULL, "... and the status says why (%s)", notice());
    ok(chat_unqueue(&chat) && !chat_queued(&chat), "chat_unqueue takes the queued line back");
    is_str(rec.input, "too early", "... into the input");
    ok(!chat_unqueue(&chat), "with nothing queued, chat_unqueue does nothing");
    chat_cancel(&chat);
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
    ok(chat_queued(&chat) != NULL, "a message typed meanwhile is queued");
    size_t users = count_role(CHAT_USER);
    ok(run_until(settled), "the reply ends, then the queued message's reply");
    const struct rec_msg *u = last_of(CHAT_USER);
    ok(!chat_queued(&chat) && count_role(CHAT_USER) == users + 1 && u &&
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
    is_str(chat_model_label(&chat), "b", "replies are labelled with it");
    int reused, computed;
    chat_last_request(&chat, &reused, &computed);
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
    chat_last_request(&chat, &reused, &computed);
    ok(reused > 0 && reused + computed == (int)n && computed < (int)n,
       "a's cache was kept: only b's turn computed (%d reused, %d computed)", reused, computed);
}

static void test_sessions(void)
{
    int cleared = rec.n_cleared, listed = rec.n_list_changed;
    submit("/new other");
    is_str(chat_session_name(&chat), "other", "/new other");
    ok(rec.n_cleared == cleared + 1 && count_role(CHAT_USER) == 0, "an empty transcript");
    ok(rec.n_list_changed > listed, "the session list changed");
    ok(run_until(settled), "settled");
    submit("hi other");
    ok(run_until(settled), "a reply in the other session");
    is_int((int)count_role(CHAT_USER), 1, "one exchange there");
    char **names = chat_names(&chat, ARG_SESSION);
    bool both = false;
    for (size_t i = 0; names && names[i] && names[i + 1]; i++)
        both |= strcmp(names[i], "other") == 0 && strcmp(names[i + 1], "t1") == 0;
    ok(both, "both sessions are listed, sorted");
    strv_free(names);

    submit("/switch t1");
    is_str(chat_session_name(&chat), "t1", "/switch t1");
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
    chat_last_request(&chat, &reused, &computed);
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
        {"/remove", "removed exchange (the last)"},
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

static void test_save_and_restore(void)
{
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
    chat_fini(&chat);
    rec_clear();

    ok(start("t1"), "a restart on the session");
    bool same = rec.n_msgs == n;
    for (size_t i = 0; same && i < n; i++)
        same = strcmp(rec.msgs[i].text, texts[i]) == 0;
    ok(same, "the transcript is back as it was (%zu lines)", rec.n_msgs);
    ok(run_until(settled), "loaded, snapshot restored");
    int reused, computed;
    chat_last_request(&chat, &reused, &computed);
    is_int((int)activity().n_tokens, (int)n_tokens, "the same token sequence");
    /* not in a snapshot taken after a reply: its last id and the template's
     * closing (a reply's DONE has not fed them) */
    ok(reused + computed == (int)n_tokens && computed <= 3,
       "the cache came from the snapshot: %d reused, %d computed", reused, computed);
    ok(strstr(notice(), "resumed from the KV snapshot") != NULL, "the notice says so (%s)",
       notice());
    submit("after the restart");
    ok(run_until(settled), "the conversation goes on");
    chat_last_request(&chat, &reused, &computed);
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
    ok(!chat_quit_requested(&chat), "running");
    submit("/quit");
    ok(chat_quit_requested(&chat), "/quit asks to leave");
    chat_fini(&chat);
    char *yaml = xdg_file("XDG_DATA_HOME", "sessions/t1.yaml");
    char err[1024];
    struct session *s = session_load(yaml, err, sizeof err);
    ok(s && s->n_msgs == 10, "chat_fini saved all five exchanges (%zu messages)",
       s ? s->n_msgs : 0);
    session_free(s);
    free(yaml);
}

int main(int argc, char **argv)
{
    (void)argc;
    /* The uninstalled program finds the shipped prompts from its own path
     * (src/platform.c: argv[0] with --enable-portable-fallbacks). */
    platform_set_argv0(argv[0]);
    if (!tap_gen_checkpoint("--preset micro --synthetic-tokenizer --seed 1", model_a,
                            sizeof model_a, "a") ||
        !tap_gen_checkpoint("--preset micro --synthetic-tokenizer --seed 2", model_b,
                            sizeof model_b, "b"))
        skip_all("tests/lib/gen-checkpoint is not built");
    tap_private_xdg();
    setenv("ELM_WORKER_TEST_TOKEN_INTERVAL_MS", "5", 1);
    unsetenv("ELMCHAT_MEM_BUDGET");
    plan_lazy();
    test_load();
    test_turn();
    test_reuse_and_retry();
    test_refuse_and_cancel();
    test_model_switch();
    test_sessions();
    test_undo();
    test_path_replaced_notes();
    test_save_and_restore();
    test_quit();
    rec_clear();
    free(rec.msgs);
    free(rec.input);
    free(rec.remembered);
    sbuf_fini(&rec.reply);
    return done_testing();
}
