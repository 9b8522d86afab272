/* chat.c: conversations, worker traffic, slash commands.
 *
 * Each open session is a struct conv: the session, its conversation
 * (src/conversation.h: the token sequence that is the truth of the KV
 * cache, spans, the context policy), its template and a worker slot.  A
 * new turn appends only the rendered user turn and the generation prompt;
 * the reply's sampled ids are appended as they come; every GENERATE sends
 * the whole sequence with ELM_GEN_SYNC so the worker computes only what its
 * cache lacks.  Snapshots (src/kvcache_store.h) are written with every save
 * and adopted when a session is opened, so a resumed conversation starts
 * from its cache.  A model switch loads in the background; the
 * conversations are then re-prefilled into the new model. */
#include "config.h"

#include "ui/chat.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "src/kvcache_store.h"
#include "src/paths.h"
#include "src/store.h"
#include "src/xalloc.h"
#include "ui/commands.h"
#include "ui/input.h"

/* How far the worker and its compute threads sit below the UI thread
 * (nice levels; Linux).  The scheduler groups threads (by session or
 * cgroup): against other groups decoding loses nothing, inside its group
 * the UI runs first.  A busy program in the same group (a job of the
 * same shell; every program where nothing is grouped) gets about three
 * times the CPU of one compute thread. */
#define COMPUTE_NICE 5

struct conv {
    struct session *s;          /* owned */
    struct conversation cv;     /* borrows s, tpl and the chat's tokenizer */
    struct template *tpl;       /* owned */
    int slot;                   /* the worker's cache slot */
    bool dirty;                 /* unsaved */
    bool kv_try;                /* opened from a file: adopt its snapshot when a model is ready */
    bool kv_loaded;             /* a snapshot was loaded: say what it saved */
    bool warned;                /* the context warning was shown in the transcript */
    int n_reused, n_computed;   /* the last request's cache use */
    int n_dropped_note;         /* messages evicted by the turn being answered */
    int edited_exchange;        /* the reply answers an /edit of this exchange */
};
double chat_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void chat_notice(struct chat *c, bool error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->notice, sizeof c->notice, fmt, ap);
    va_end(ap);
    /* one line */
    for (char *p = c->notice; *p; p++)
        if (*p == '\n')
            *p = ' ';
    c->notice_error = error;
    c->notice_until = chat_now() + (error ? 8.0 : 5.0);
    c->changed = true;
}

static void info_msg(struct chat *c, enum tr_role role, const char *text)
{
    transcript_add(&c->tr, role, text, strlen(text), -1);
    transcript_scroll_end(&c->tr);
    c->changed = true;
}


/* ------------------------------------------------------------ conversations */

static struct conv *conv_find(struct chat *c, const char *name)
{
    for (size_t i = 0; i < c->n_convs; i++)
        if (strcmp(c->convs[i]->s->name, name) == 0)
            return c->convs[i];
    return NULL;
}

static struct conv *conv_by_slot(struct chat *c, int slot)
{
    for (size_t i = 0; i < c->n_convs; i++)
        if (c->convs[i]->slot == slot)
            return c->convs[i];
    return NULL;
}

static void conv_free(struct conv *v)
{
    if (!v)
        return;
    conversation_fini(&v->cv);
    template_free(v->tpl);
    session_free(v->s);
    free(v);
}

/* Template: the session's, then -t, then config, then by model name. */
static const char *wanted_template(const struct chat *c, const struct conv *v)
{
    if (v && v->s->template_name)
        return v->s->template_name;
    if (c->opt.template_name)
        return c->opt.template_name;
    if (c->cfg.template_name)
        return c->cfg.template_name;
    return template_default_for_model(c->model_path);
}

/* The context length before the worker tells it. */
static int requested_ctx(const struct chat *c)
{
    if (c->n_ctx > 0)
        return c->n_ctx;
    return c->opt.common.n_ctx > 0 ? c->opt.common.n_ctx : c->cfg.n_ctx;
}

/* A new open conversation for s (taken over): its template, its token
 * sequence.  NULL with err filled (s is freed). */
static struct conv *conv_open(struct chat *c, struct session *s, char *err, size_t err_size)
{
    struct conv *v = x_calloc(1, sizeof *v);
    v->s = s;
    v->tpl = template_load(wanted_template(c, v), err, err_size);
    if (!v->tpl) {
        conv_free(v);
        return NULL;
    }
    conversation_init(&v->cv, s, v->tpl, c->tok, requested_ctx(c), &c->policy);
    int rc = conversation_render(&v->cv, err, err_size);
    if (rc && rc != CONV_FULL) {
        conv_free(v);
        return NULL;
    }
    if (rc == CONV_FULL)
        chat_notice(c, true, "%s", err);
    v->slot = c->next_slot++;
    v->kv_try = s->n_msgs > 0;
    c->convs = x_reallocarray(c->convs, c->n_convs + 1, sizeof *c->convs);
    c->convs[c->n_convs++] = v;
    return v;
}

static char *auto_session_name(void)
{
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char buf[64];
    strftime(buf, sizeof buf, "chat-%Y%m%d-%H%M%S", &tm);
    /* two new sessions in the same second */
    char *path = session_path_for(buf);
    struct stat st;
    for (int i = 2; path && stat(path, &st) == 0 && i < 100; i++) {
        free(path);
        char b2[80];
        snprintf(b2, sizeof b2, "%s-%d", buf, i);
        path = session_path_for(b2);
        if (path && stat(path, &st) != 0) {
            free(path);
            return x_strdup(b2);
        }
    }
    free(path);
    return x_strdup(buf);
}


/* ------------------------------------------------------------- transcript */

/* Exchange numbers (for /pin N): the k-th user message is exchange k. */
static size_t exchange_of(const struct session *s, size_t i)
{
    size_t k = 0;
    for (size_t j = 0; j <= i && j < s->n_msgs; j++)
        k += s->msgs[j].role == ROLE_USER;
    return k;
}

/* Rebuild the transcript from the current conversation (after anything
 * that changes more than the last message: load, eviction, undo...). */
static void show_conv(struct chat *c)
{
    transcript_clear(&c->tr);
    struct session *s = c->cur->s;
    const char *sys = s->system ? s->system : c->cur->tpl->default_system;
    if (sys && *sys)
        transcript_add(&c->tr, TR_SYSTEM, sys, strlen(sys), -1);
    for (size_t i = 0; i < s->n_msgs; i++) {
        const struct message *m = &s->msgs[i];
        enum tr_role role = m->role == ROLE_USER        ? TR_USER
                            : m->role == ROLE_ASSISTANT ? TR_ASSISTANT
                                                        : TR_SYSTEM;
        size_t k = transcript_add(&c->tr, role, m->content, strlen(m->content), (int)i);
        c->tr.msgs[k].interrupted = m->interrupted;
        c->tr.msgs[k].out_of_context = m->out_of_context;
        c->tr.msgs[k].pinned = m->pinned;
        if (m->role == ROLE_USER)
            c->tr.msgs[k].exchange = (int)exchange_of(s, i);
    }
    transcript_scroll_end(&c->tr);
    c->changed = true;
}

/* ------------------------------------------------------------------ model */

static bool is_default_model(const char *path)
{
    char def[4096];
    return cli_default_model_path(def, sizeof def) && strcmp(def, path) == 0;
}

static bool resolve_model(struct chat *c, const char *arg, char *path, size_t size, char *err,
                          size_t err_size)
{
    const char *alias = arg ? config_alias(&c->cfg, arg) : NULL;
    return cli_resolve_model(alias ? alias : arg, path, size, err, err_size);
}

/* The tokenizer is loaded here too (it is immutable and cheap), because the
 * templates render on this thread.  A model file (GGUF) brings its own
 * vocabulary (elm_tokenizer_load reads it, or the files beside it); a
 * folder has tokenizer.model or tokenizer.json. */
static elm_tokenizer *load_tokenizer(const char *model_path, char *err, size_t err_size)
{
    static const char *const names[] = {"tokenizer.model", "tokenizer.json"};
    struct stat st;
    elm_tokenizer *tok = NULL;
    if (stat(model_path, &st) == 0 && !S_ISDIR(st.st_mode))
        return elm_tokenizer_load(model_path, &tok, err, err_size) == 0 ? tok : NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", model_path, names[i]);
        if (stat(p, &st) != 0)
            continue;
        return elm_tokenizer_load(p, &tok, err, err_size) == 0 ? tok : NULL;
    }
    snprintf(err, err_size, "%s: no tokenizer.model or tokenizer.json in the model folder",
             model_path);
    return NULL;
}

static const char *base_name(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    const char *s = path + n;
    while (s > path && s[-1] != '/')
        s--;
    return s;
}

static void model_label(const char *path, bool demo, char *out, size_t size)
{
    if (demo) {
        snprintf(out, size, "demo model");
        return;
    }
    const char *b = base_name(path);
    size_t n = strcspn(b, "/");
    snprintf(out, size, "%.*s", (int)(n > 100 ? 100 : n), b);
}

static void post_load_model(struct chat *c)
{
    struct elm_request req = elm_request_default(ELM_REQ_LOAD_MODEL);
    req.path = c->load_path;
    req.n_ctx = c->opt.common.n_ctx > 0 ? c->opt.common.n_ctx : c->cfg.n_ctx;
    req.n_threads = c->opt.common.n_threads;
    c->load_req = elm_worker_post(c->worker, &req);
    c->model_loading = true;
    c->load_progress = 0;
    c->load_started = chat_now();
}

/* Start loading path (resolved) in the background; the current model stays
 * until it is ready.  false with err filled (tokenizer missing...). */
static bool begin_model_load(struct chat *c, const char *arg, const char *path, char *err,
                             size_t err_size)
{
    elm_tokenizer *tok = load_tokenizer(path, err, err_size);
    if (!tok)
        return false;
    elm_tokenizer_free(c->load_tok);
    c->load_tok = tok;
    free(c->load_arg);
    c->load_arg = arg ? x_strdup(arg) : NULL;
    snprintf(c->load_path, sizeof c->load_path, "%s", path);
    model_label(path, is_default_model(path), c->load_name, sizeof c->load_name);
    post_load_model(c);
    return true;
}

/* --------------------------------------------------------------- sampling */

static void effective_sampling(const struct chat *c, struct elm_sampler_params *p, int *max_tokens)
{
    *p = elm_sampler_default_params();
    *max_tokens = 256;
    if (c->cur)
        sampling_apply(&c->cur->tpl->sampling, p, max_tokens);
    sampling_apply(&c->cfg.sampling, p, max_tokens);
    if (c->cur)
        sampling_apply(&c->cur->s->sampling, p, max_tokens);
}

/* Command-line sampling options become the session's (and are saved). */
static void apply_cli_sampling(struct chat *c, struct session *s)
{
    const struct elm_sampler_params d = elm_sampler_default_params();
    const struct elm_sampler_params *o = &c->opt.common.sampler;
    struct sampling *sp = &s->sampling;
    if (o->temperature != d.temperature)
        sp->set |= SAMPLING_TEMPERATURE, sp->p.temperature = o->temperature;
    if (o->top_k != d.top_k)
        sp->set |= SAMPLING_TOP_K, sp->p.top_k = o->top_k;
    if (o->top_p != d.top_p)
        sp->set |= SAMPLING_TOP_P, sp->p.top_p = o->top_p;
    if (o->min_p != d.min_p)
        sp->set |= SAMPLING_MIN_P, sp->p.min_p = o->min_p;
    if (o->repeat_penalty != d.repeat_penalty)
        sp->set |= SAMPLING_REPEAT_PENALTY, sp->p.repeat_penalty = o->repeat_penalty;
    if (o->seed != d.seed)
        sp->set |= SAMPLING_SEED, sp->p.seed = o->seed;
    if (c->opt.common.max_tokens >= 0)
        sp->set |= SAMPLING_MAX_TOKENS, sp->max_tokens = c->opt.common.max_tokens;
}


/* Tokens kept free for the reply: max-tokens (conversation.c caps it at a
 * quarter of the context). */
static int reply_reserve(const struct chat *c)
{
    struct elm_sampler_params p;
    int max_tokens;
    effective_sampling(c, &p, &max_tokens);
    return max_tokens;
}

/* ------------------------------------------------------- saving, snapshots */

/* The KV snapshot beside the session: SAVE_STATE for its slot (the worker
 * runs it after the requests before it) and the .meta sidecar with the
 * exact token ids, written now.  Only when the worker holds a cache for it
 * on the current model. */
static void save_snapshot(struct chat *c, struct conv *v)
{
    if (!c->model_ready || c->model_loading || !c->info || v->cv.cache.n == 0 ||
        v->cv.in_reply || (c->generating && c->gen_conv == v))
        return;
    char *path = kvcache_path_for(v->s->name);
    if (!path)
        return;
    struct elm_request req;
    kvcache_save_request(path, v->slot, &req);
    char err[512];
    if (elm_worker_post(c->worker, &req) != 0) {
        c->n_kv_saves++;
        if (kvcache_meta_save(&v->cv, path, c->info->fingerprint, err, sizeof err) != 0)
            chat_notice(c, true, "KV snapshot: %s", err);
    }
    free(path);
}

static bool save_conv(struct chat *c, struct conv *v, bool quiet)
{
    if (!v->s->n_msgs && !v->dirty)
        return true;
    char *path = session_path_for(v->s->name);
    if (!path) {
        chat_notice(c, true, "invalid session name '%s'", v->s->name);
        return false;
    }
    char *dir = paths_dir(PATHS_DATA, "sessions");
    paths_mkdir_p(dir);
    free(dir);
    free(v->s->model);
    v->s->model = c->model_arg ? x_strdup(c->model_arg) : NULL;
    if (!v->s->template_name && c->opt.template_name)
        v->s->template_name = x_strdup(v->tpl->name);
    char err[1024];
    int rc = session_save(v->s, path, err, sizeof err);
    free(path);
    if (rc != 0) {
        chat_notice(c, true, "not saved: %s", err);
        return false;
    }
    v->dirty = false;
    save_snapshot(c, v);
    if (!quiet)
        chat_notice(c, false, "saved '%s'", v->s->name);
    return true;
}

/* A background prefill of v's whole sequence (after a model switch, a
 * session load or switch): the next reply then computes only its turn. */
static void post_prefill(struct chat *c, struct conv *v)
{
    if (!c->model_ready || v->cv.tokens.n == 0)
        return;
    struct elm_request req = elm_request_default(ELM_REQ_GENERATE);
    req.slot = v->slot;
    conversation_prefill_request(&v->cv, &req);
    c->prefill_req = elm_worker_post(c->worker, &req);
    c->prefill_conv = v;
}

/* Opened from a file: take back the exact ids of the snapshot's sidecar and
 * load the snapshot (silently nothing when it does not match). */
static void try_snapshot(struct chat *c, struct conv *v)
{
    if (!v->kv_try || !c->model_ready || c->model_loading || !c->info)
        return;
    v->kv_try = false;
    char *path = kvcache_path_for(v->s->name);
    if (!path)
        return;
    if (kvcache_adopt(&v->cv, path, c->info->fingerprint)) {
        struct elm_request req;
        kvcache_load_request(path, v->slot, &req);
        if (elm_worker_post(c->worker, &req) != 0)
            v->kv_loaded = true;
    }
    free(path);
}

/* ---------------------------------------------------------------- replies */

static void post_generate(struct chat *c, struct conv *v)
{
    struct elm_request req = elm_request_default(ELM_REQ_GENERATE);
    req.slot = v->slot;
    int max_tokens;
    effective_sampling(c, &req.sampler, &max_tokens);
    req.max_tokens = max_tokens;
    /* the engine holds back what may begin a stop string, and ends there */
    req.stop_strings = v->tpl->stop;
    req.n_stop_strings = (int)v->tpl->n_stop;
    conversation_request(&v->cv, &req);
    c->gen_req = elm_worker_post(c->worker, &req);
}

/* The conversation stands after a generation prompt: ask for the reply. */
static void start_reply(struct chat *c)
{
    struct conv *v = c->cur;
    c->reply_n_ids = 0;
    sbuf_fini(&c->reply_text);
    sbuf_add(&c->reply_text, "", 0);
    c->got_token = false;
    c->prefill_progress = 0;
    c->generating = true;
    c->gen_conv = v;
    c->gen_tr = transcript_begin(&c->tr, TR_ASSISTANT, (int)v->s->n_msgs);
    transcript_scroll_end(&c->tr);
    post_generate(c, v);
    c->changed = true;
}

/* The context fill note, once per conversation when it gets near full. */
static bool near_full(const struct chat *c, const struct conv *v, int *pct)
{
    int n_ctx = v->cv.n_ctx;
    if (n_ctx <= 0)
        return false;
    int reserve = reply_reserve(c);
    if (reserve > n_ctx / 4)
        reserve = n_ctx / 4;
    int used = (int)v->cv.tokens.n;
    if (pct)
        *pct = (int)((long long)used * 100 / n_ctx);
    /* less than a sixth of the window left after the reply's reserve:
     * the next exchanges will make room by dropping the oldest ones */
    return n_ctx - used - reserve < n_ctx / 6;
}

static void warn_if_near_full(struct chat *c, struct conv *v)
{
    int pct;
    bool near = near_full(c, v, &pct);
    if (!near) {
        v->warned = false;
        return;
    }
    if (v->warned || v != c->cur)
        return;
    v->warned = true;
    char buf[600];
    if (c->policy.policy == CONTEXT_STOP)
        snprintf(buf, sizeof buf,
                 "The context is %d%% full (%zu of %d tokens). When a message no longer fits it "
                 "will be refused (context policy: stop): /clear, /undo or /new make room.",
                 pct, v->cv.tokens.n, v->cv.n_ctx);
    else
        snprintf(buf, sizeof buf,
                 "The context is %d%% full (%zu of %d tokens). To make room, the oldest "
                 "exchanges will be dropped from the model's context (they stay here, marked "
                 "out of context). /pin keeps an exchange; the system prompt always stays.",
                 pct, v->cv.tokens.n, v->cv.n_ctx);
    info_msg(c, TR_INFO, buf);
}

static void finish_reply(struct chat *c, const struct elm_event *ev)
{
    struct conv *v = c->gen_conv;
    c->generating = false;
    c->gen_conv = NULL;
    if (!v)
        return;
    bool interrupted = ev->reason == ELM_DONE_CANCELLED || ev->reason == ELM_DONE_LENGTH ||
                       ev->reason == ELM_DONE_ERROR || ev->reason == ELM_DONE_CONTEXT_FULL;
    /* a stop string: its ids stay in the sequence (TEMPLATE_END_STOP), its
     * text never came */
    bool stopped = ev->reason == ELM_DONE_STOP_STRING;
    char *content = x_strdup(c->reply_text.data ? c->reply_text.data : "");
    enum template_end how = conversation_end_from_done(ev->reason);
    char err[512];
    size_t kept_end = v->cv.tokens.n;
    if (conversation_reply_end(&v->cv, how, content, interrupted, err, sizeof err) != 0)
        chat_notice(c, true, "%s", err);
    free(content);
    v->dirty = true;
    /* what the worker holds: the prompt and the ids it fed (never more
     * than the ids kept) */
    int n_past = ev->n_past;
    if (stopped && (size_t)n_past > kept_end)
        n_past = (int)kept_end;
    conversation_set_cached(&v->cv, n_past);
    if (v == c->cur) {
        const struct message *m = &v->s->msgs[v->s->n_msgs - 1];
        if (stopped && c->gen_tr < c->tr.n_msgs) {
            /* show exactly what was kept */
            transcript_truncate(&c->tr, c->gen_tr);
            transcript_add(&c->tr, TR_ASSISTANT, m->content, strlen(m->content),
                           (int)(v->s->n_msgs - 1));
        } else {
            transcript_finish(&c->tr, c->gen_tr, interrupted);
        }
    }
    if (ev->reason == ELM_DONE_ERROR)
        chat_notice(c, true, "generation failed: %s", ev->text ? ev->text : "error");
    else if (ev->reason == ELM_DONE_CONTEXT_FULL)
        chat_notice(c, true, "the context is full (%d tokens): the next message drops old turns",
                    ev->n_ctx);
    else if (v->edited_exchange > 0 && v == c->cur)
        chat_notice(c, false, "message #%d edited: reused %d tokens from the cache, computed %d",
                    v->edited_exchange, ev->n_reused, ev->n_prefilled);
    else if (ev->reason == ELM_DONE_LENGTH && v->n_dropped_note == 0)
        chat_notice(c, false, "reply cut at max-tokens (/set max-tokens N)");
    v->edited_exchange = 0;
    save_conv(c, v, true); /* autosave after every turn, with its snapshot */
    if (v->n_dropped_note > 0 && v == c->cur) {
        char buf[300];
        snprintf(buf, sizeof buf,
                 "%d earlier message%s left the context to make room for this exchange (marked "
                 "out of context above; they stay in the session). /pin keeps an exchange.",
                 v->n_dropped_note, v->n_dropped_note == 1 ? "" : "s");
        info_msg(c, TR_INFO, buf);
    }
    v->n_dropped_note = 0;
    warn_if_near_full(c, v);
    c->changed = true;
}

/* --------------------------------------------------------- model switches */

/* MODEL_READY for our load: it is the current model now.  Every open
 * conversation follows (tokenizer, template by model, context length and
 * policy); the current one is re-prefilled in the background. */
static void model_ready(struct chat *c, struct elm_event *ev)
{
    bool first = !c->model_ready;
    c->model_loading = false;
    c->model_ready = true;
    free(c->info);
    c->info = ev->info;
    ev->info = NULL;
    c->n_ctx = ev->n_ctx;
    bool new_tok = c->load_tok != NULL;
    bool redraw = new_tok;
    elm_tokenizer *old_tok = NULL; /* freed once every conversation is rebuilt */
    if (new_tok) {
        old_tok = c->tok;
        c->tok = c->load_tok;
        c->load_tok = NULL;
        free(c->model_arg);
        c->model_arg = c->load_arg;
        c->load_arg = NULL;
        snprintf(c->model_path, sizeof c->model_path, "%s", c->load_path);
        c->demo = is_default_model(c->model_path);
        model_label(c->model_path, c->demo, c->model_name, sizeof c->model_name);
        for (size_t i = 0; i < c->n_convs; i++) {
            struct conv *v = c->convs[i];
            char err[1024];
            struct template *t = v->tpl;
            const char *want = wanted_template(c, v);
            if (strcmp(want, v->tpl->name) != 0) {
                struct template *nt = template_load(want, err, sizeof err);
                if (nt)
                    t = nt;
                else
                    chat_notice(c, true, "%s", err);
            }
            conversation_set_template(&v->cv, t, c->tok);
            if (t != v->tpl) {
                /* rebuilt against the new template right away, then the old
                 * one can go */
                int rc = conversation_model_changed(&v->cv, c->n_ctx, err, sizeof err);
                if (rc && rc != CONV_FULL) {
                    /* keep the template it has (still rendered with it) */
                    conversation_set_template(&v->cv, v->tpl, c->tok);
                    template_free(t);
                } else {
                    template_free(v->tpl);
                    v->tpl = t;
                }
                if (rc)
                    chat_notice(c, true, "%s", err);
            }
        }
    }
    for (size_t i = 0; i < c->n_convs; i++) {
        struct conv *v = c->convs[i];
        char err[1024];
        size_t before = 0;
        for (size_t k = 0; k < v->s->n_msgs; k++)
            before += v->s->msgs[k].out_of_context;
        int rc = conversation_model_changed(&v->cv, c->n_ctx, err, sizeof err);
        if (rc && v == c->cur)
            chat_notice(c, true, "%s", err);
        size_t after = 0;
        for (size_t k = 0; k < v->s->n_msgs; k++)
            after += v->s->msgs[k].out_of_context;
        if (after != before) {
            v->dirty = true;
            if (v == c->cur)
                redraw = true;
        }
    }
    elm_tokenizer_free(old_tok);
    if (c->cur) {
        if (redraw)
            show_conv(c); /* out-of-context marks, another template's system prompt */
        try_snapshot(c, c->cur);
        post_prefill(c, c->cur);
    }
    if (!first) {
        double dt = chat_now() - c->load_started;
        chat_notice(c, false, "%s loaded in %.2f s; the conversation continues (%zu tokens)",
                    c->model_name, dt, c->cur ? c->cur->cv.tokens.n : 0);
    }
}

/* ----------------------------------------------------------------- events */

static void on_done(struct chat *c, struct elm_event *ev)
{
    if (ev->request_type == ELM_REQ_SAVE_STATE) {
        if (c->n_kv_saves > 0)
            c->n_kv_saves--;
        return;
    }
    if (ev->request_type != ELM_REQ_GENERATE)
        return; /* LOAD_STATE: the prefill that follows says what it gave */
    c->n_past = ev->n_past;
    if (ev->n_ctx > 0)
        c->n_ctx = ev->n_ctx;
    /* a handful of tokens gives no meaningful speed */
    if (ev->prefill_tps > 0 && ev->n_prefilled >= 8)
        c->prefill_tps = ev->prefill_tps;
    if (ev->decode_tps > 0 && ev->n_generated >= 4)
        c->decode_tps = ev->decode_tps;
    struct conv *v = conv_by_slot(c, ev->slot);
    if (v) {
        v->n_reused = ev->n_reused;
        v->n_computed = ev->n_prefilled;
    }
    if (c->generating && ev->request_id == c->gen_req) {
        finish_reply(c, ev);
        if (c->has_pending_ready) {
            c->has_pending_ready = false;
            model_ready(c, &c->pending_ready);
            elm_event_fini(&c->pending_ready);
        }
        return;
    }
    if (ev->request_id == c->prefill_req) {
        c->prefill_req = 0;
        c->prefill_conv = NULL;
        if (v)
            conversation_set_cached(&v->cv, ev->n_past);
        if (v && v->kv_loaded) {
            v->kv_loaded = false;
            if (ev->n_reused > 0)
                chat_notice(c, false, "resumed from the KV snapshot: %d tokens reused, %d computed",
                            ev->n_reused, ev->n_prefilled);
        }
    }
}

/* The worker dropped a conversation's cache to stay within the memory
 * budget: its next reply recomputes the whole sequence, which for a long
 * conversation is slow enough to deserve a word beforehand. */
static void cache_dropped(struct chat *c, const struct elm_event *ev)
{
    struct conv *v = conv_by_slot(c, ev->slot);
    if (!v)
        return;
    conversation_set_cached(&v->cv, 0); /* nothing to snapshot now */
    size_t n = v->cv.tokens.n > (size_t)ev->n_dropped ? v->cv.tokens.n : (size_t)ev->n_dropped;
    char msg[300];
    if (v == c->cur)
        snprintf(msg, sizeof msg, "cache dropped (memory budget); the next reply recomputes %zu tokens",
                 n);
    else
        snprintf(msg, sizeof msg,
                 "session %s: cache dropped (memory budget); its next reply recomputes %zu tokens",
                 v->s->name, n);
    /* Usually a side effect of what the user just did (/new, /switch):
     * added after that notice rather than hiding it. */
    if (c->notice[0] && chat_now() < c->notice_until && !strstr(c->notice, msg)) {
        char both[sizeof c->notice + sizeof msg + 8];
        snprintf(both, sizeof both, "%s · %s", c->notice, msg);
        chat_notice(c, c->notice_error, "%s", both);
    } else {
        chat_notice(c, false, "%s", msg);
    }
}

/* A request other than GENERATE failed (a reply's failure ends the reply:
 * on_done). */
static void on_failure(struct chat *c, const struct elm_event *ev)
{
    if (ev->request_id == c->load_req) {
        /* the previous model (if any) stays current */
        c->model_loading = false;
        elm_tokenizer_free(c->load_tok);
        c->load_tok = NULL;
        char buf[1200];
        snprintf(buf, sizeof buf, "model not loaded: %s", ev->text ? ev->text : "error");
        chat_notice(c, true, "%s", buf);
        info_msg(c, TR_ERROR, buf);
    } else if (ev->request_type == ELM_REQ_SAVE_STATE) {
        if (c->n_kv_saves > 0)
            c->n_kv_saves--;
        chat_notice(c, true, "KV snapshot not saved: %s", ev->text ? ev->text : "error");
    } else if (ev->request_type == ELM_REQ_LOAD_STATE) {
        /* another model or a damaged file: the prefill recomputes */
        struct conv *v = conv_by_slot(c, ev->slot);
        if (v)
            v->kv_loaded = false;
    } else {
        chat_notice(c, true, "%s", ev->text ? ev->text : "worker error");
    }
}

void chat_poll_events(struct chat *c)
{
    elm_worker_drain_wake(c->worker);
    struct elm_event ev;
    while (elm_worker_next_event(c->worker, &ev)) {
        c->changed = true;
        switch (ev.type) {
        case ELM_EV_LOAD_PROGRESS:
            if (ev.request_id == c->load_req)
                c->load_progress = ev.progress;
            break;
        case ELM_EV_MODEL_READY:
            if (ev.request_id != c->load_req)
                break;
            if (c->generating) {
                /* switch after the reply's DONE (on_done) */
                elm_event_fini(&c->pending_ready);
                c->pending_ready = ev;
                c->has_pending_ready = true;
                continue; /* ev is kept: not finished here */
            }
            model_ready(c, &ev);
            break;
        case ELM_EV_PREFILL_PROGRESS:
            if (ev.request_id == c->gen_req)
                c->prefill_progress = ev.progress;
            break;
        case ELM_EV_TOKEN:
            if (c->generating && ev.request_id == c->gen_req) {
                conversation_reply_push(&c->gen_conv->cv, ev.ids, (size_t)ev.n_ids);
                c->reply_n_ids += (size_t)ev.n_ids;
                if (ev.text) {
                    size_t n = strlen(ev.text);
                    sbuf_add(&c->reply_text, ev.text, n);
                    if (c->gen_conv == c->cur)
                        transcript_append(&c->tr, c->gen_tr, ev.text, n);
                }
                c->got_token = true;
            }
            break;
        case ELM_EV_DONE:
            if (ev.reason == ELM_DONE_ERROR && ev.request_type != ELM_REQ_GENERATE)
                on_failure(c, &ev);
            else
                on_done(c, &ev);
            break;
        case ELM_EV_CACHE_DROPPED:
            cache_dropped(c, &ev);
            break;
        }
        elm_event_fini(&ev);
    }
}

void chat_cancel(struct chat *c)
{
    if (c->generating)
        elm_worker_cancel(c->worker, ELM_CANCEL_ALL); /* the reply and any prefill queued */
}

/* --------------------------------------------------------------- commands */

static void show_help(struct chat *c)
{
    struct sbuf b = {0};
    sbuf_add(&b, "", 0);
    for (size_t i = 0; i < cmd_table_len; i++) {
        char line[256];
        snprintf(line, sizeof line, "%-18s %s\n", cmd_table[i].usage, cmd_table[i].help);
        sbuf_add(&b, line, strlen(line));
    }
    static const char keys[] =
        "\n"
        "Enter send · Alt-Enter or Ctrl-J new line · Tab complete · Ctrl-R search history\n"
        "Ctrl-C or Esc stop the reply · Ctrl-C clear the line · Ctrl-D (empty line) quit\n"
        "PgUp/PgDn scroll · Ctrl-Home/Ctrl-End (or Home/End on an empty line) top/bottom\n"
        "Alt-S or F2 session list · Ctrl-L redraw · Ctrl-Z suspend · '//' sends a '/'";
    sbuf_add(&b, keys, strlen(keys));
    info_msg(c, TR_INFO, b.data);
    sbuf_fini(&b);
}

static void show_info(struct chat *c)
{
    char buf[8192];
    size_t n = 0;
    const struct elm_model_info *mi = c->info;
    struct conv *v = c->cur;
#define ADD(...)                                                                                   \
    do {                                                                                           \
        if (n < sizeof buf)                                                                        \
            n += (size_t)snprintf(buf + n, sizeof buf - n, __VA_ARGS__);                           \
    } while (0)
    ADD("model: %s%s\npath: %s\n", c->model_name,
        c->demo ? " (bundled demo: random weights, its output is noise)" : "", c->model_path);
    if (mi)
        ADD("layers %d, dim %d, vocab %d, %.1fM parameters, %s\n", mi->n_layers, mi->model_dim,
            mi->n_vocab, (double)mi->n_params / 1e6, elm_dtype_name(mi->dtype));
    else
        ADD("%s\n", c->model_loading ? "loading..." : "not loaded");
    if (c->model_loading && c->model_ready)
        ADD("loading %s: %d%%\n", c->load_name, (int)(c->load_progress * 100));
    struct elm_sampler_params p;
    int max_tokens;
    effective_sampling(c, &p, &max_tokens);
    char *spath = session_path_for(v->s->name);
    struct conv_fill f;
    conversation_fill(&v->cv, &f);
    ADD("template: %s (%s)\nsession: %s (%s), %zu open\n", v->tpl->name,
        v->tpl->path ? v->tpl->path : "", v->s->name, spath ? spath : "", c->n_convs);
    ADD("context: %d tokens of %d (%d%%), %zu cached; policy %s; %d messages out of context, "
        "%d pinned\n",
        f.n_tokens, f.n_ctx, (int)(f.fraction * 100.0f), v->cv.cache.n,
        context_policy_name(c->policy.policy), f.n_out_of_context, f.n_pinned);
    ADD("last request: %d tokens reused from the cache, %d computed\n", v->n_reused,
        v->n_computed);
    ADD("speed: prefill %.1f t/s, decode %.1f t/s\n", c->prefill_tps, c->decode_tps);
    ADD("sampling: temperature %g, top-k %d, top-p %g, min-p %g, repeat-penalty %g, seed %llu, "
        "max-tokens %d",
        (double)p.temperature, p.top_k, (double)p.top_p, (double)p.min_p,
        (double)p.repeat_penalty, (unsigned long long)p.seed, max_tokens);
#undef ADD
    free(spath);
    info_msg(c, TR_INFO, buf);
}

static void switch_to(struct chat *c, struct conv *v)
{
    c->cur = v;
    show_conv(c);
    try_snapshot(c, v);
    post_prefill(c, v);
    chat_refresh_session_list(c);
}

static struct conv *open_session(struct chat *c, const char *name, bool create, char *err,
                                 size_t err_size)
{
    struct conv *v = conv_find(c, name);
    if (v)
        return v;
    char *path = session_path_for(name);
    if (!path) {
        snprintf(err, err_size, "invalid session name '%s'", name);
        return NULL;
    }
    struct stat st;
    struct session *s = NULL;
    if (stat(path, &st) == 0) {
        s = session_load(path, err, err_size);
        if (!s) {
            free(path);
            return NULL;
        }
    } else if (create) {
        s = session_new(name);
    } else {
        snprintf(err, err_size, "no saved session '%s' (%s)", name, path);
        free(path);
        return NULL;
    }
    free(path);
    return conv_open(c, s, err, err_size);
}

static bool busy_refuse(struct chat *c)
{
    if (c->generating) {
        chat_notice(c, true, "a reply is being generated: Esc or Ctrl-C stops it");
        return true;
    }
    return false;
}

static bool ready_refuse(struct chat *c)
{
    if (busy_refuse(c))
        return true;
    if (!c->model_ready) {
        chat_notice(c, true, c->model_loading ? "wait for the model to load" : "no model loaded");
        return true;
    }
    return false;
}

/* The user message of exchange arg (N counts the exchanges, i.e. the user
 * messages, from 1; NULL: the last one): its session index, or SIZE_MAX
 * after saying why (verb names the command). */
static size_t find_exchange(struct chat *c, const struct session *s, const char *arg,
                            const char *verb)
{
    size_t want = 0;
    if (arg) {
        char *end;
        errno = 0;
        long k = strtol(arg, &end, 10);
        if (errno || *end || k < 1) {
            chat_notice(c, true, "/%s N: N is an exchange number (1 = the first)", verb);
            return SIZE_MAX;
        }
        want = (size_t)k;
    }
    size_t last = 0, idx = SIZE_MAX;
    for (size_t i = 0; i < s->n_msgs; i++) {
        if (s->msgs[i].role != ROLE_USER)
            continue;
        last++;
        if (last == want || want == 0)
            idx = i;
    }
    if (idx == SIZE_MAX) {
        if (last)
            chat_notice(c, true, "there is no exchange %zu (1 to %zu)", want, last);
        else
            chat_notice(c, true, "nothing to %s yet", verb);
    }
    return idx;
}

/* /pin [N], /unpin [N]. */
static void pin_command(struct chat *c, struct conv *v, const char *arg, bool pin)
{
    struct session *s = v->s;
    size_t idx = find_exchange(c, s, arg, pin ? "pin" : "unpin");
    if (idx == SIZE_MAX)
        return;
    size_t k = exchange_of(s, idx);
    if (pin && s->msgs[idx].out_of_context) {
        chat_notice(c, true, "exchange %zu is already out of context (/undo or edit to bring it back)",
                    k);
        return;
    }
    conversation_pin(&v->cv, idx, pin);
    v->dirty = true;
    show_conv(c);
    save_conv(c, v, true);
    chat_notice(c, false, pin ? "exchange %zu pinned: it stays in context"
                              : "exchange %zu unpinned",
                k);
}

/* /edit [N]: the message goes to the input line; chat_submit sends the
 * edited text in its place. */
static void edit_command(struct chat *c, struct conv *v, const char *arg)
{
    size_t idx = find_exchange(c, v->s, arg, "edit");
    if (idx == SIZE_MAX)
        return;
    c->edit_conv = v;
    c->edit_msg = idx;
    c->edit_exchange = (int)exchange_of(v->s, idx);
    input_set_text(v->s->msgs[idx].content);
    chat_notice(c, false,
                "editing message #%d: Enter sends it in its place (what followed is dropped); "
                "an empty line cancels",
                c->edit_exchange);
}

static void run_command(struct chat *c, struct cmd *cmd)
{
    char err[1024];
    struct conv *v = c->cur;
    /* commands that change which messages exist end an /edit */
    if (cmd->id == CMD_NEW || cmd->id == CMD_SWITCH || cmd->id == CMD_LOAD ||
        cmd->id == CMD_UNDO || cmd->id == CMD_CLEAR)
        c->edit_conv = NULL;
    switch (cmd->id) {
    case CMD_HELP:
        show_help(c);
        break;
    case CMD_QUIT:
        c->quit = true;
        break;
    case CMD_INFO:
        show_info(c);
        break;
    case CMD_SESSIONS:
        c->show_sessions = !c->show_sessions;
        chat_refresh_session_list(c);
        break;
    case CMD_NEW: {
        if (busy_refuse(c))
            break;
        if (cmd->arg && conv_find(c, cmd->arg)) {
            chat_notice(c, true, "'%s' is already open: /switch %s", cmd->arg, cmd->arg);
            break;
        }
        save_conv(c, v, true);
        char *name = cmd->arg ? x_strdup(cmd->arg) : auto_session_name();
        struct session *s = session_new(name);
        free(name);
        if (c->opt.system)
            s->system = x_strdup(c->opt.system);
        apply_cli_sampling(c, s);
        struct conv *nv = conv_open(c, s, err, sizeof err);
        if (!nv) {
            chat_notice(c, true, "%s", err);
            break;
        }
        switch_to(c, nv);
        chat_notice(c, false, "new session '%s'", nv->s->name);
        break;
    }
    case CMD_SWITCH:
    case CMD_LOAD: {
        if (busy_refuse(c))
            break;
        struct conv *nv = open_session(c, cmd->arg, false, err, sizeof err);
        if (!nv) {
            chat_notice(c, true, "%s", err);
            break;
        }
        save_conv(c, v, true);
        switch_to(c, nv);
        chat_notice(c, false, "session '%s': %zu messages", nv->s->name, nv->s->n_msgs);
        break;
    }
    case CMD_SAVE:
        if (cmd->arg && strcmp(cmd->arg, v->s->name) != 0) {
            if (conv_find(c, cmd->arg)) {
                chat_notice(c, true, "'%s' is open in another session", cmd->arg);
                break;
            }
            if (!session_name_valid(cmd->arg)) {
                chat_notice(c, true, "invalid session name '%s'", cmd->arg);
                break;
            }
            free(v->s->name);
            v->s->name = x_strdup(cmd->arg);
        }
        v->dirty = true;
        save_conv(c, v, false);
        chat_refresh_session_list(c);
        break;
    case CMD_EXPORT: {
        char *md = session_to_markdown(v->s);
        int rc = store_write_atomic(cmd->arg, md, strlen(md), err, sizeof err);
        free(md);
        if (rc != 0)
            chat_notice(c, true, "%s", err);
        else
            chat_notice(c, false, "exported to %s", cmd->arg);
        break;
    }
    case CMD_MODEL: {
        char path[4096];
        if (!resolve_model(c, cmd->arg, path, sizeof path, err, sizeof err)) {
            chat_notice(c, true, "%s", err);
            break;
        }
        if (c->model_ready && !c->model_loading && strcmp(path, c->model_path) == 0) {
            chat_notice(c, false, "%s is the current model", c->model_name);
            break;
        }
        /* the current model keeps answering until the new one is ready */
        if (!begin_model_load(c, cmd->arg, path, err, sizeof err)) {
            chat_notice(c, true, "%s", err);
            break;
        }
        c->changed = true; /* the status bar shows the progress */
        break;
    }
    case CMD_TEMPLATE: {
        if (busy_refuse(c))
            break;
        struct template *t = template_load(cmd->arg, err, sizeof err);
        if (!t) {
            chat_notice(c, true, "%s", err);
            break;
        }
        conversation_set_template(&v->cv, t, c->tok);
        int rc = conversation_render(&v->cv, err, sizeof err);
        if (rc && rc != CONV_FULL) {
            chat_notice(c, true, "%s", err);
            conversation_set_template(&v->cv, v->tpl, c->tok);
            conversation_render(&v->cv, err, sizeof err);
            template_free(t);
            break;
        }
        template_free(v->tpl);
        v->tpl = t;
        free(v->s->template_name);
        v->s->template_name = x_strdup(t->name);
        v->dirty = true;
        show_conv(c);
        post_prefill(c, v);
        chat_notice(c, false, "template '%s' (%zu tokens rendered again)", t->name,
                    v->cv.tokens.n);
        break;
    }
    case CMD_SYSTEM: {
        if (busy_refuse(c))
            break;
        int rc = conversation_set_system(&v->cv, cmd->arg, err, sizeof err);
        if (rc && rc != CONV_FULL) {
            chat_notice(c, true, "%s", err);
            break;
        }
        v->dirty = true;
        show_conv(c);
        post_prefill(c, v);
        if (rc == CONV_FULL)
            chat_notice(c, true, "%s", err);
        else
            chat_notice(c, false, "system prompt set");
        break;
    }
    case CMD_SET: {
        struct sampling *sp = &v->s->sampling;
        switch (cmd->param) {
        case PARAM_TEMPERATURE:
            sp->set |= SAMPLING_TEMPERATURE, sp->p.temperature = (float)cmd->value;
            break;
        case PARAM_TOP_K:
            sp->set |= SAMPLING_TOP_K, sp->p.top_k = (int)cmd->ivalue;
            break;
        case PARAM_TOP_P:
            sp->set |= SAMPLING_TOP_P, sp->p.top_p = (float)cmd->value;
            break;
        case PARAM_MIN_P:
            sp->set |= SAMPLING_MIN_P, sp->p.min_p = (float)cmd->value;
            break;
        case PARAM_REPEAT_PENALTY:
            sp->set |= SAMPLING_REPEAT_PENALTY, sp->p.repeat_penalty = (float)cmd->value;
            break;
        case PARAM_SEED:
            sp->set |= SAMPLING_SEED, sp->p.seed = (uint64_t)cmd->ivalue;
            break;
        case PARAM_MAX_TOKENS:
            sp->set |= SAMPLING_MAX_TOKENS, sp->max_tokens = (int)cmd->ivalue;
            break;
        }
        v->dirty = true;
        chat_notice(c, false, "%s = %g", cmd_param_names[cmd->param - 1], cmd->value);
        break;
    }
    case CMD_RETRY: {
        if (ready_refuse(c))
            break;
        struct conv_plan plan;
        int rc = conversation_retry(&v->cv, reply_reserve(c), &plan, err, sizeof err);
        if (rc) {
            chat_notice(c, true, "%s", err);
            break;
        }
        v->dirty = true;
        show_conv(c);
        start_reply(c);
        break;
    }
    case CMD_UNDO: {
        if (busy_refuse(c))
            break;
        char *text = NULL;
        int rc = conversation_undo(&v->cv, &text, err, sizeof err);
        if (rc) {
            chat_notice(c, true, "%s", err);
            break;
        }
        show_conv(c);
        input_set_text(text); /* give the message back for editing */
        free(text);
        v->dirty = true;
        save_conv(c, v, true);
        chat_notice(c, false, "removed the last exchange (its message is back in the input)");
        break;
    }
    case CMD_CLEAR:
        if (busy_refuse(c))
            break;
        conversation_clear(&v->cv);
        v->dirty = true;
        show_conv(c);
        save_conv(c, v, true);
        chat_notice(c, false, "conversation cleared");
        break;
    case CMD_PIN:
    case CMD_UNPIN:
        if (busy_refuse(c))
            break;
        pin_command(c, v, cmd->arg, cmd->id == CMD_PIN);
        break;
    case CMD_EDIT:
        if (busy_refuse(c))
            break;
        edit_command(c, v, cmd->arg);
        break;
    }
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
    int rc = conversation_edit(&v->cv, i, text, reply_reserve(c), &plan, err, sizeof err);
    v->dirty = true;
    show_conv(c);
    if (rc) {
        /* messages i.. are gone already (conversation_edit) */
        chat_notice(c, true, "%s", err);
        return false;
    }
    v->n_dropped_note = plan.n_dropped;
    v->edited_exchange = k;
    start_reply(c);
    return true;
}

void chat_submit(struct chat *c, char *line)
{
    if (!line) {
        c->quit = true;
        return;
    }
    struct cmd cmd;
    size_t start;
    char err[1024];
    enum cmd_parse_result r = cmd_parse(line, &cmd, &start, err, sizeof err);
    if (r == CMD_ERROR) {
        chat_notice(c, true, "%s", err);
        input_history_add(line);
        free(line);
        return;
    }
    if (r == CMD_OK) {
        input_history_add(line);
        free(line);
        run_command(c, &cmd);
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
    if (c->generating || !c->model_ready) {
        chat_notice(c, true,
                    c->generating ? "a reply is being generated: Esc or Ctrl-C stops it"
                                  : "the model is still loading: your text is kept");
        input_set_text(line);
        free(line);
        return;
    }
    input_history_add(line);
    if (c->edit_conv == c->cur && c->edit_conv) {
        if (!submit_edit(c, text))
            input_set_text(line);
        free(line);
        return;
    }
    c->edit_conv = NULL;
    struct conv *v = c->cur;
    struct conv_plan plan;
    int rc = conversation_user_turn(&v->cv, text, reply_reserve(c), &plan, err, sizeof err);
    if (rc) {
        /* nothing changed: the text stays in the input */
        chat_notice(c, true, "%s", err);
        input_set_text(line);
        free(line);
        return;
    }
    free(line);
    v->dirty = true;
    if (plan.n_dropped > 0) {
        show_conv(c); /* the dropped messages get their mark */
        v->n_dropped_note = plan.n_dropped; /* said after the reply */
        chat_notice(c, false,
                    "%d earlier message%s dropped from the context to make room (/pin keeps an "
                    "exchange)",
                    plan.n_dropped, plan.n_dropped == 1 ? "" : "s");
    } else {
        const struct message *m = &v->s->msgs[v->s->n_msgs - 1];
        size_t k = transcript_add(&c->tr, TR_USER, m->content, strlen(m->content),
                                  (int)(v->s->n_msgs - 1));
        c->tr.msgs[k].exchange = (int)exchange_of(v->s, v->s->n_msgs - 1);
    }
    start_reply(c);
}

/* ------------------------------------------------------------- the status */

void chat_status(struct chat *c, struct status_info *st, double now)
{
    memset(st, 0, sizeof *st);
    struct conv *v = c->cur;
    st->model = c->model_name;
    st->template_name = v ? v->tpl->name : NULL;
    st->session = v ? v->s->name : NULL;
    st->n_past = v ? (int)v->cv.tokens.n : 0;
    st->n_ctx = v ? v->cv.n_ctx : c->n_ctx;
    if (!c->model_ready)
        st->n_ctx = c->n_ctx;
    st->prefill_tps = c->prefill_tps;
    st->decode_tps = c->decode_tps;
    st->demo = c->demo;
    if (c->model_loading && !c->generating) {
        /* a small progress bar: 10 cells */
        char bar[64] = "";
        int cells = (int)(c->load_progress * 10.0f + 0.5f);
        for (int i = 0; i < 10; i++)
            strcat(bar, i < cells ? "█" : "░");
        snprintf(c->state_text, sizeof c->state_text, "loading %.40s %s %d%%", c->load_name, bar,
                 (int)(c->load_progress * 100));
        st->busy = true;
    } else if (c->model_loading) {
        /* the current model answers while the next one loads */
        snprintf(c->state_text, sizeof c->state_text, "generating %zu · loading %.24s %d%%",
                 c->reply_n_ids, c->load_name, (int)(c->load_progress * 100));
        st->busy = true;
    } else if (c->generating && !c->got_token) {
        snprintf(c->state_text, sizeof c->state_text, "prefill %d%% · Esc stops",
                 (int)(c->prefill_progress * 100));
        st->busy = true;
    } else if (c->generating) {
        snprintf(c->state_text, sizeof c->state_text, "generating %zu · Esc stops",
                 c->reply_n_ids);
        st->busy = true;
    } else if (!c->model_ready) {
        snprintf(c->state_text, sizeof c->state_text, "no model");
    } else if (c->edit_conv && c->edit_conv == v) {
        snprintf(c->state_text, sizeof c->state_text, "idle · editing #%d", c->edit_exchange);
    } else {
        snprintf(c->state_text, sizeof c->state_text, "idle");
    }
    st->state = c->state_text;
    int pct;
    if (v && c->model_ready && near_full(c, v, &pct)) {
        snprintf(c->warn_text, sizeof c->warn_text, "ctx %d%%: %s", pct,
                 c->policy.policy == CONTEXT_STOP ? "full soon, then refused"
                                                  : "oldest turns drop next");
        st->warning = c->warn_text;
    }
    if (c->notice[0] && now < c->notice_until) {
        st->notice = c->notice;
        st->notice_error = c->notice_error;
    } else {
        c->notice[0] = '\0';
    }
}

const char *chat_session_name(const struct chat *c)
{
    return c->cur ? c->cur->s->name : NULL;
}

/* ------------------------------------------------------------ name lists */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void strv_push(char ***v, size_t *n, const char *s)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*v)[i], s) == 0)
            return;
    *v = x_reallocarray(*v, *n + 2, sizeof **v);
    (*v)[(*n)++] = x_strdup(s);
    (*v)[*n] = NULL;
}

static void list_dir(char ***v, size_t *n, const char *dir, const char *suffix, bool dirs_too)
{
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        size_t len = strlen(e->d_name), sl = suffix ? strlen(suffix) : 0;
        if (suffix && len > sl && strcmp(e->d_name + len - sl, suffix) == 0) {
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(len - sl), e->d_name);
            strv_push(v, n, name);
        } else if (dirs_too) {
            strv_push(v, n, e->d_name);
        }
    }
    closedir(d);
}

char **chat_names(struct chat *c, enum cmd_arg_kind kind)
{
    char **v = NULL;
    size_t n = 0;
    if (kind == ARG_SESSION) {
        for (size_t i = 0; i < c->n_convs; i++)
            strv_push(&v, &n, c->convs[i]->s->name);
        char *dir = paths_dir(PATHS_DATA, "sessions");
        list_dir(&v, &n, dir, ".yaml", false);
        free(dir);
    } else if (kind == ARG_TEMPLATE) {
        char **t = template_list();
        for (size_t i = 0; t && t[i]; i++)
            strv_push(&v, &n, t[i]);
        strv_free(t);
    } else if (kind == ARG_MODEL) {
        strv_push(&v, &n, "default");
        for (size_t i = 0; i < c->cfg.n_aliases; i++)
            strv_push(&v, &n, c->cfg.aliases[i].name);
        char *dir = paths_dir(PATHS_DATA, "models");
        list_dir(&v, &n, dir, ".gguf", true);
        free(dir);
    }
    if (v)
        qsort(v, n, sizeof *v, cmp_str);
    return v;
}

void chat_refresh_session_list(struct chat *c)
{
    if (c->session_list) {
        for (size_t i = 0; i < c->n_session_list; i++)
            free(c->session_list[i]);
        free(c->session_list);
    }
    c->session_list = chat_names(c, ARG_SESSION);
    c->n_session_list = 0;
    while (c->session_list && c->session_list[c->n_session_list])
        c->n_session_list++;
    c->changed = true;
}

/* --------------------------------------------------------- life and death */

bool chat_init(struct chat *c, const struct chat_options *opt, char *err, size_t err_size)
{
    memset(c, 0, sizeof *c);
    c->opt = *opt;
    transcript_init(&c->tr);
    config_init(&c->cfg);
    if (config_load(&c->cfg, NULL, err, err_size) != 0)
        return false;
    c->policy = conv_policy_from_config(&c->cfg);
    /* What the worker keeps (models and the caches of the open sessions;
     * the least recently used go first): bytes, or with K, M or G. */
    const char *budget = getenv("ELMCHAT_MEM_BUDGET");
    if (budget && *budget) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(budget, &end, 10);
        int shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20
                    : *end == 'G' || *end == 'g' ? 30 : 0;
        if (shift)
            end++;
        if (errno || end == budget || *end || v == 0 || v > (UINT64_MAX >> shift)) {
            snprintf(err, err_size, "ELMCHAT_MEM_BUDGET: '%s' is not a size (bytes, or NK, NM, NG)",
                     budget);
            return false;
        }
        c->mem_budget = (uint64_t)v << shift;
    }

    const char *marg = opt->common.model ? opt->common.model : c->cfg.default_model;
    if (!resolve_model(c, marg, c->model_path, sizeof c->model_path, err, err_size))
        return false;
    c->model_arg = marg ? x_strdup(marg) : NULL;
    c->demo = is_default_model(c->model_path);
    model_label(c->model_path, c->demo, c->model_name, sizeof c->model_name);
    c->tok = load_tokenizer(c->model_path, err, err_size);
    if (!c->tok)
        return false;

    /* The session first: it may name its template. */
    struct session *s = NULL;
    if (opt->session_name) {
        char *path = session_path_for(opt->session_name);
        if (!path) {
            snprintf(err, err_size, "invalid session name '%s'", opt->session_name);
            return false;
        }
        struct stat st;
        if (stat(path, &st) == 0) {
            s = session_load(path, err, err_size);
            free(path);
            if (!s)
                return false;
        } else {
            free(path);
            s = session_new(opt->session_name);
        }
    } else {
        char *name = auto_session_name();
        s = session_new(name);
        free(name);
    }
    if (opt->system) {
        free(s->system);
        s->system = x_strdup(opt->system);
    }
    if (opt->template_name) {
        free(s->template_name);
        s->template_name = NULL;
    }
    apply_cli_sampling(c, s);
    c->cur = conv_open(c, s, err, err_size);
    if (!c->cur)
        return false;
    show_conv(c);

    /* Decoding runs behind this (the UI) thread: a keystroke is drawn at
     * once even while every core computes. */
    struct elm_worker_params wp = elm_worker_default_params();
    wp.mem_budget = c->mem_budget;
    wp.nice = COMPUTE_NICE;
    c->worker = elm_worker_new(&wp, err, err_size);
    if (!c->worker)
        return false;
    snprintf(c->load_path, sizeof c->load_path, "%s", c->model_path);
    snprintf(c->load_name, sizeof c->load_name, "%s", c->model_name);
    post_load_model(c);
    if (c->demo)
        info_msg(c, TR_INFO,
                 "This is the bundled demo model: random weights, so its replies are noise. "
                 "Use -m MODEL (or /model) for a real OpenELM checkpoint. /help lists the "
                 "commands.");
    else if (!s->n_msgs)
        info_msg(c, TR_INFO, "Type a message and press Enter. /help lists the commands.");
    return true;
}

void chat_save_all(struct chat *c)
{
    if (c->generating && c->gen_conv) {
        /* keep the partial reply, marked interrupted; the worker stops
         * within a layer, before the snapshot is written */
        struct elm_event ev = {.type = ELM_EV_DONE, .reason = ELM_DONE_CANCELLED};
        elm_worker_cancel(c->worker, ELM_CANCEL_ALL);
        c->gen_req = 0; /* its DONE will be ignored */
        finish_reply(c, &ev);
    }
    for (size_t i = 0; i < c->n_convs; i++)
        save_conv(c, c->convs[i], true);
}

/* The snapshots posted by the last saves are written by the worker: give
 * it a moment (elm_worker_free drops queued requests). */
static void wait_kv_saves(struct chat *c, double limit)
{
    double end = chat_now() + limit;
    while (c->n_kv_saves > 0) {
        double left = end - chat_now();
        if (left <= 0)
            break;
        struct pollfd p = {.fd = elm_worker_wake_fd(c->worker), .events = POLLIN};
        poll(&p, 1, (int)(left * 1000) + 1);
        elm_worker_drain_wake(c->worker);
        struct elm_event ev;
        while (elm_worker_next_event(c->worker, &ev)) {
            if (ev.type == ELM_EV_DONE &&
                ev.request_type == ELM_REQ_SAVE_STATE && c->n_kv_saves > 0)
                c->n_kv_saves--;
            elm_event_fini(&ev);
        }
    }
}

void chat_fini(struct chat *c)
{
    if (c->worker) {
        chat_save_all(c);
        wait_kv_saves(c, 3.0);
        elm_worker_free(c->worker);
    }
    for (size_t i = 0; i < c->n_convs; i++)
        conv_free(c->convs[i]);
    free(c->convs);
    if (c->session_list) {
        for (size_t i = 0; i < c->n_session_list; i++)
            free(c->session_list[i]);
        free(c->session_list);
    }
    elm_tokenizer_free(c->tok);
    elm_tokenizer_free(c->load_tok);
    free(c->info);
    free(c->model_arg);
    free(c->load_arg);
    elm_event_fini(&c->pending_ready);
    sbuf_fini(&c->reply_text);
    transcript_fini(&c->tr);
    config_fini(&c->cfg);
    memset(c, 0, sizeof *c);
}
