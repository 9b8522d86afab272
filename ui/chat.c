/* chat.c: conversations, token sequences, worker traffic, slash commands.
 *
 * The session's token sequence is the truth (DESIGN.md §5): a new turn
 * appends the rendered user turn and the generation prompt, the reply's
 * sampled ids are appended as they come, and every GENERATE sends the whole
 * sequence with ELM_GEN_SYNC so the worker computes only what its cache
 * lacks.  /retry and /undo restore the sequence and the renderer as they
 * were before the message (a snapshot per message), so nothing already in
 * the cache is re-rendered and the worker's common prefix is everything
 * before the change. */
#include "config.h"

#include "ui/chat.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "src/paths.h"
#include "src/store.h"
#include "src/xalloc.h"
#include "ui/commands.h"
#include "ui/input.h"

/* The state before one message: token count and renderer. */
struct snap {
    size_t n_tokens;
    struct template_render r;
};

struct conv {
    struct session *s;
    int slot;
    struct idvec tokens;       /* the truth */
    struct template_render r;
    struct snap *snaps;        /* one per session message */
    size_t n_snaps, cap_snaps;
    struct snap pending;       /* after the generation prompt of the reply in progress */
    bool rendered;
    bool dirty;                /* unsaved */
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

/* ------------------------------------------------------- renderer snapshots */

static void render_copy(struct template_render *dst, const struct template_render *src)
{
    *dst = *src;
    dst->pending = NULL;
    dst->run = NULL;
    if (src->pending) {
        dst->pending = x_malloc(src->pending_cap ? src->pending_cap : src->n_pending + 1);
        memcpy(dst->pending, src->pending, src->n_pending);
        dst->pending_cap = src->pending_cap ? src->pending_cap : src->n_pending + 1;
    }
    if (src->run) {
        dst->run = x_malloc(src->run_cap ? src->run_cap : src->n_run + 1);
        memcpy(dst->run, src->run, src->n_run);
        dst->run_cap = src->run_cap ? src->run_cap : src->n_run + 1;
    }
}

static void snap_take(struct snap *sn, const struct conv *v)
{
    sn->n_tokens = v->tokens.n;
    render_copy(&sn->r, &v->r);
}

static void snap_fini(struct snap *sn)
{
    template_render_fini(&sn->r);
    memset(sn, 0, sizeof *sn);
}

static void conv_push_snap(struct conv *v, struct snap *sn)
{
    if (v->n_snaps == v->cap_snaps) {
        v->cap_snaps = v->cap_snaps ? v->cap_snaps * 2 : 16;
        v->snaps = x_reallocarray(v->snaps, v->cap_snaps, sizeof *v->snaps);
    }
    v->snaps[v->n_snaps++] = *sn;
    memset(sn, 0, sizeof *sn);
}

/* Back to the state before message k (snapshot k), dropping later snaps. */
static void conv_rewind(struct conv *v, size_t k)
{
    if (k >= v->n_snaps)
        return;
    template_render_fini(&v->r);
    render_copy(&v->r, &v->snaps[k].r);
    v->tokens.n = v->snaps[k].n_tokens;
    for (size_t i = k; i < v->n_snaps; i++)
        snap_fini(&v->snaps[i]);
    v->n_snaps = k;
    session_truncate(v->s, k);
    v->dirty = true;
}

static void conv_free(struct conv *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n_snaps; i++)
        snap_fini(&v->snaps[i]);
    free(v->snaps);
    snap_fini(&v->pending);
    template_render_fini(&v->r);
    idvec_fini(&v->tokens);
    session_free(v->s);
    free(v);
}

/* Render the whole stored conversation (load, template or system change).
 * Replies are re-rendered from their text: only at load time, when their
 * sampled ids are gone. */
static int conv_render(struct chat *c, struct conv *v, char *err, size_t err_size)
{
    for (size_t i = 0; i < v->n_snaps; i++)
        snap_fini(&v->snaps[i]);
    v->n_snaps = 0;
    idvec_clear(&v->tokens);
    template_render_fini(&v->r);
    template_render_init(&v->r, c->tpl, c->tok);
    v->rendered = false;
    int rc = template_render_system(&v->r, v->s->system, &v->tokens);
    for (size_t i = 0; rc == 0 && i < v->s->n_msgs; i++) {
        const struct message *m = &v->s->msgs[i];
        struct snap sn;
        if (m->role == ROLE_ASSISTANT) {
            if (v->r.state != TEMPLATE_IN_REPLY)
                rc = template_render_generation_prompt(&v->r, &v->tokens);
            if (rc)
                break;
            snap_take(&sn, v);
            conv_push_snap(v, &sn);
            rc = template_render_reply(&v->r, m->content, &v->tokens);
        } else {
            snap_take(&sn, v);
            conv_push_snap(v, &sn);
            if (m->role == ROLE_USER)
                rc = template_render_user(&v->r, m->content, &v->tokens);
        }
    }
    if (rc) {
        snprintf(err, err_size, "cannot render the conversation with template '%s': %s",
                 c->tpl->name, elm_status_str((elm_status)rc));
        return rc;
    }
    v->rendered = true;
    return 0;
}

static struct conv *conv_new(struct chat *c, struct session *s)
{
    struct conv *v = x_calloc(1, sizeof *v);
    v->s = s;
    v->slot = c->next_slot++;
    template_render_init(&v->r, c->tpl, c->tok);
    c->convs = x_reallocarray(c->convs, c->n_convs + 1, sizeof *c->convs);
    c->convs[c->n_convs++] = v;
    return v;
}

static struct conv *conv_find(struct chat *c, const char *name)
{
    for (size_t i = 0; i < c->n_convs; i++)
        if (strcmp(c->convs[i]->s->name, name) == 0)
            return c->convs[i];
    return NULL;
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

/* Rebuild the transcript from the current conversation. */
static void show_conv(struct chat *c)
{
    transcript_clear(&c->tr);
    struct session *s = c->cur->s;
    const char *sys = s->system ? s->system : (c->tpl ? c->tpl->default_system : NULL);
    if (sys && *sys)
        transcript_add(&c->tr, TR_SYSTEM, sys, strlen(sys), -1);
    for (size_t i = 0; i < s->n_msgs; i++) {
        const struct message *m = &s->msgs[i];
        enum tr_role role = m->role == ROLE_USER ? TR_USER
                            : m->role == ROLE_ASSISTANT ? TR_ASSISTANT
                                                        : TR_SYSTEM;
        size_t k = transcript_add(&c->tr, role, m->content, strlen(m->content), (int)i);
        c->tr.msgs[k].interrupted = m->interrupted;
        c->tr.msgs[k].out_of_context = m->out_of_context;
    }
    transcript_scroll_end(&c->tr);
    c->changed = true;
}

/* Drop the transcript from the first message showing session message k. */
static void transcript_cut(struct chat *c, size_t k)
{
    for (size_t i = 0; i < c->tr.n_msgs; i++) {
        if (c->tr.msgs[i].ref >= (int)k) {
            transcript_truncate(&c->tr, i);
            break;
        }
    }
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
 * templates render on this thread. */
static elm_tokenizer *load_tokenizer(const char *model_path, char *err, size_t err_size)
{
    static const char *const names[] = {"tokenizer.model", "tokenizer.json"};
    struct stat st;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", model_path);
    if (stat(model_path, &st) == 0 && !S_ISDIR(st.st_mode)) {
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        else
            snprintf(dir, sizeof dir, ".");
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        if (stat(p, &st) != 0)
            continue;
        elm_tokenizer *tok = NULL;
        int rc = elm_tokenizer_load(p, &tok, err, err_size);
        if (rc == 0)
            return tok;
        return NULL;
    }
    snprintf(err, err_size, "%s: no tokenizer.model or tokenizer.json beside the model", dir);
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

static void set_model_name(struct chat *c)
{
    if (c->demo) {
        snprintf(c->model_name, sizeof c->model_name, "demo model");
        return;
    }
    const char *b = base_name(c->model_path);
    size_t n = strcspn(b, "/");
    snprintf(c->model_name, sizeof c->model_name, "%.*s", (int)(n > 100 ? 100 : n), b);
}

static void post_load_model(struct chat *c)
{
    struct elm_request req = elm_request_default(ELM_REQ_LOAD_MODEL);
    req.path = c->model_path;
    req.n_ctx = c->opt.common.n_ctx > 0 ? c->opt.common.n_ctx : c->cfg.n_ctx;
    req.n_threads = c->opt.common.n_threads;
    c->load_req = elm_worker_post(c->worker, &req);
    c->model_loading = true;
    c->load_progress = 0;
}

/* Template: -t, then the session's, then config, then by model name. */
static const char *wanted_template(const struct chat *c)
{
    if (c->cur && c->cur->s->template_name)
        return c->cur->s->template_name;
    if (c->opt.template_name)
        return c->opt.template_name;
    if (c->cfg.template_name)
        return c->cfg.template_name;
    return template_default_for_model(c->model_path);
}

static bool use_template(struct chat *c, const char *name, char *err, size_t err_size)
{
    if (c->tpl && strcmp(c->tpl->name, name) == 0)
        return true;
    struct template *t = template_load(name, err, err_size);
    if (!t)
        return false;
    template_free(c->tpl);
    c->tpl = t;
    for (size_t i = 0; i < c->n_convs; i++)
        c->convs[i]->rendered = false;
    return true;
}

static bool ensure_rendered(struct chat *c, struct conv *v)
{
    if (v->rendered)
        return true;
    char err[1024];
    if (conv_render(c, v, err, sizeof err) != 0) {
        chat_notice(c, true, "%s", err);
        return false;
    }
    return true;
}

/* --------------------------------------------------------------- sampling */

static void effective_sampling(const struct chat *c, struct elm_sampler_params *p, int *max_tokens)
{
    *p = elm_sampler_default_params();
    *max_tokens = 256;
    if (c->tpl)
        sampling_apply(&c->tpl->sampling, p, max_tokens);
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

/* ------------------------------------------------------------------ saving */

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
    if (!v->s->template_name && c->tpl && c->opt.template_name)
        v->s->template_name = x_strdup(c->tpl->name);
    char err[1024];
    int rc = session_save(v->s, path, err, sizeof err);
    free(path);
    if (rc != 0) {
        chat_notice(c, true, "not saved: %s", err);
        return false;
    }
    v->dirty = false;
    if (!quiet)
        chat_notice(c, false, "saved '%s'", v->s->name);
    return true;
}

/* ---------------------------------------------------------------- replies */

static void post_generate(struct chat *c, struct conv *v, int max_tokens_override)
{
    struct elm_request req = elm_request_default(ELM_REQ_GENERATE);
    req.slot = v->slot;
    req.tokens = v->tokens.v;
    req.n_tokens = (int)v->tokens.n;
    req.flags = ELM_GEN_SYNC;
    int max_tokens;
    effective_sampling(c, &req.sampler, &max_tokens);
    req.max_tokens = max_tokens_override >= 0 ? max_tokens_override : max_tokens;
    uint64_t id = elm_worker_post(c->worker, &req);
    if (max_tokens_override == 0) {
        c->prefill_req = id;
        return;
    }
    c->gen_req = id;
}

/* Start a reply: the generation prompt (unless already rendered) and the
 * GENERATE request. */
static void start_reply(struct chat *c)
{
    struct conv *v = c->cur;
    if (v->r.state != TEMPLATE_IN_REPLY) {
        int rc = template_render_generation_prompt(&v->r, &v->tokens);
        if (rc) {
            chat_notice(c, true, "cannot render the generation prompt: %s",
                        elm_status_str((elm_status)rc));
            return;
        }
    }
    snap_fini(&v->pending);
    snap_take(&v->pending, v);
    idvec_clear(&c->reply_ids);
    sbuf_fini(&c->reply_text);
    sbuf_add(&c->reply_text, "", 0);
    c->got_token = false;
    c->stopped_by = NULL;
    c->prefill_progress = 0;
    c->generating = true;
    c->gen_conv = v;
    c->gen_tr = transcript_begin(&c->tr, TR_ASSISTANT, (int)v->s->n_msgs);
    transcript_scroll_end(&c->tr);
    post_generate(c, v, -1);
    c->changed = true;
}

/* How many of the reply's ids to keep when a stop string ended it: the
 * shortest prefix whose text reaches the stop string is cut before it. */
static size_t ids_before_stop(struct chat *c, const char *stop)
{
    size_t n = c->reply_ids.n;
    while (n > 0) {
        char *text = NULL;
        size_t len = 0;
        if (elm_detokenize(c->tok, c->reply_ids.v, n - 1, &text, &len) != 0) {
            free(text);
            break;
        }
        bool has = strstr(text, stop) != NULL;
        free(text);
        if (!has) {
            /* ids [0, n-1) do not reach it: id n-1 starts the stop string */
            return n - 1;
        }
        n--;
    }
    return n;
}

static void finish_reply(struct chat *c, const struct elm_event *ev)
{
    struct conv *v = c->gen_conv;
    c->generating = false;
    c->gen_conv = NULL;
    if (!v)
        return;
    bool eos = ev->reason == ELM_DONE_EOS;
    bool interrupted = ev->reason == ELM_DONE_CANCELLED || ev->reason == ELM_DONE_LENGTH ||
                       ev->reason == ELM_DONE_ERROR || ev->reason == ELM_DONE_CONTEXT_FULL;
    char *content = x_strdup(c->reply_text.data ? c->reply_text.data : "");
    size_t n_ids = c->reply_ids.n;
    if (c->stopped_by) {
        char *cut = strstr(content, c->stopped_by);
        if (cut)
            *cut = '\0';
        n_ids = ids_before_stop(c, c->stopped_by);
        interrupted = false;
        eos = false;
    }
    if (ev->reason == ELM_DONE_STOP)
        eos = false;
    /* The truth: the sampled ids, then the template's closing. */
    idvec_append(&v->tokens, c->reply_ids.v, n_ids);
    int rc = template_render_reply_end(&v->r, eos && n_ids > 0, &v->tokens);
    if (rc)
        chat_notice(c, true, "cannot close the reply: %s", elm_status_str((elm_status)rc));
    /* EOS text is never part of the content. */
    struct message *m = session_append(v->s, ROLE_ASSISTANT, content);
    m->interrupted = interrupted;
    conv_push_snap(v, &v->pending);
    free(content);
    v->dirty = true;
    if (v == c->cur) {
        /* show exactly what was kept */
        if (c->stopped_by && c->gen_tr < c->tr.n_msgs) {
            transcript_truncate(&c->tr, c->gen_tr);
            size_t k = transcript_add(&c->tr, TR_ASSISTANT, m->content, strlen(m->content),
                                      (int)(v->s->n_msgs - 1));
            c->tr.msgs[k].interrupted = false;
        } else {
            transcript_finish(&c->tr, c->gen_tr, interrupted);
        }
    }
    if (ev->reason == ELM_DONE_ERROR)
        chat_notice(c, true, "generation failed: %s", ev->text ? ev->text : "error");
    else if (ev->reason == ELM_DONE_CONTEXT_FULL)
        chat_notice(c, true, "the context is full (%d tokens): /clear, /undo or /new", ev->n_ctx);
    else if (ev->reason == ELM_DONE_LENGTH)
        chat_notice(c, false, "reply cut at max-tokens (/set max-tokens N)");
    save_conv(c, v, true); /* autosave after every turn */
    c->changed = true;
}

static void check_stop_strings(struct chat *c)
{
    if (!c->tpl || c->stopped_by)
        return;
    for (size_t i = 0; i < c->tpl->n_stop; i++) {
        const char *s = c->tpl->stop[i];
        if (*s && c->reply_text.data && strstr(c->reply_text.data, s)) {
            c->stopped_by = s;
            elm_worker_cancel(c->worker);
            return;
        }
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
            if (ev.request_id == c->load_req) {
                c->model_loading = false;
                c->model_ready = true;
                free(c->info);
                c->info = ev.info;
                ev.info = NULL;
                c->n_ctx = ev.n_ctx;
                /* Re-prefill the open conversation in the background. */
                if (c->cur && c->cur->rendered && c->cur->tokens.n > 0 && !c->generating)
                    post_generate(c, c->cur, 0);
            }
            break;
        case ELM_EV_PREFILL_PROGRESS:
            if (ev.request_id == c->gen_req)
                c->prefill_progress = ev.progress;
            break;
        case ELM_EV_TOKEN:
            if (c->generating && ev.request_id == c->gen_req) {
                idvec_append(&c->reply_ids, ev.ids, (size_t)ev.n_ids);
                if (ev.text) {
                    size_t n = strlen(ev.text);
                    sbuf_add(&c->reply_text, ev.text, n);
                    if (c->gen_conv == c->cur && !c->stopped_by)
                        transcript_append(&c->tr, c->gen_tr, ev.text, n);
                }
                c->got_token = true;
                check_stop_strings(c);
            }
            break;
        case ELM_EV_DONE:
            if (ev.request_type == ELM_REQ_GENERATE) {
                c->n_past = ev.n_past;
                if (ev.n_ctx > 0)
                    c->n_ctx = ev.n_ctx;
                /* a handful of tokens gives no meaningful speed */
                if (ev.prefill_tps > 0 && ev.n_prefilled >= 8)
                    c->prefill_tps = ev.prefill_tps;
                if (ev.decode_tps > 0 && ev.n_generated >= 4)
                    c->decode_tps = ev.decode_tps;
            }
            if (c->generating && ev.request_id == c->gen_req)
                finish_reply(c, &ev);
            break;
        case ELM_EV_ERROR:
            if (ev.request_id == c->load_req) {
                c->model_loading = false;
                chat_notice(c, true, "model not loaded: %s", ev.text ? ev.text : "error");
                char buf[1200];
                snprintf(buf, sizeof buf, "model not loaded: %s", ev.text ? ev.text : "error");
                info_msg(c, TR_ERROR, buf);
            } else {
                chat_notice(c, true, "%s", ev.text ? ev.text : "worker error");
            }
            break;
        }
        elm_event_fini(&ev);
    }
}

void chat_cancel(struct chat *c)
{
    if (c->generating)
        elm_worker_cancel(c->worker);
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
    n += (size_t)snprintf(buf + n, sizeof buf - n, "model: %s%s\npath: %s\n", c->model_name,
                          c->demo ? " (bundled demo: random weights, its output is noise)" : "",
                          c->model_path);
    if (mi && n < sizeof buf)
        n += (size_t)snprintf(buf + n, sizeof buf - n,
                              "layers %d, dim %d, vocab %d, %.1fM parameters, %s\n", mi->n_layers,
                              mi->model_dim, mi->n_vocab, (double)mi->n_params / 1e6,
                              elm_dtype_name(mi->dtype));
    else if (n < sizeof buf)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s\n",
                              c->model_loading ? "loading..." : "not loaded");
    struct elm_sampler_params p;
    int max_tokens;
    effective_sampling(c, &p, &max_tokens);
    char *spath = session_path_for(c->cur->s->name);
    if (n < sizeof buf)
        n += (size_t)snprintf(
            buf + n, sizeof buf - n,
            "template: %s (%s)\nsession: %s (%s)\ncontext: %zu tokens in the conversation, "
            "%d cached, window %d\nspeed: prefill %.1f t/s, decode %.1f t/s\n"
            "sampling: temperature %g, top-k %d, top-p %g, min-p %g, repeat-penalty %g, "
            "seed %llu, max-tokens %d",
            c->tpl ? c->tpl->name : "?", c->tpl && c->tpl->path ? c->tpl->path : "",
            c->cur->s->name, spath ? spath : "", c->cur->tokens.n, c->n_past, c->n_ctx,
            c->prefill_tps, c->decode_tps, (double)p.temperature, p.top_k, (double)p.top_p,
            (double)p.min_p, (double)p.repeat_penalty, (unsigned long long)p.seed, max_tokens);
    free(spath);
    info_msg(c, TR_INFO, buf);
}

static void switch_to(struct chat *c, struct conv *v)
{
    c->cur = v;
    char err[1024];
    if (!use_template(c, wanted_template(c), err, sizeof err))
        chat_notice(c, true, "%s", err);
    ensure_rendered(c, v);
    show_conv(c);
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
    return conv_new(c, s);
}

static bool busy_refuse(struct chat *c)
{
    if (c->generating) {
        chat_notice(c, true, "a reply is being generated: Esc or Ctrl-C stops it");
        return true;
    }
    return false;
}

static void run_command(struct chat *c, struct cmd *cmd)
{
    char err[1024];
    struct conv *v = c->cur;
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
        struct conv *nv = conv_new(c, s);
        switch_to(c, nv);
        chat_notice(c, false, "new session '%s'", s->name);
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
        if (c->generating)
            elm_worker_cancel(c->worker);
        elm_tokenizer *tok = load_tokenizer(path, err, sizeof err);
        if (!tok) {
            chat_notice(c, true, "%s", err);
            break;
        }
        elm_tokenizer_free(c->tok);
        c->tok = tok;
        free(c->model_arg);
        c->model_arg = x_strdup(cmd->arg);
        snprintf(c->model_path, sizeof c->model_path, "%s", path);
        c->demo = is_default_model(path);
        set_model_name(c);
        c->model_ready = false;
        for (size_t i = 0; i < c->n_convs; i++)
            c->convs[i]->rendered = false;
        if (!use_template(c, wanted_template(c), err, sizeof err))
            chat_notice(c, true, "%s", err);
        ensure_rendered(c, v);
        post_load_model(c);
        chat_notice(c, false, "loading %s ...", c->model_name);
        break;
    }
    case CMD_TEMPLATE:
        if (busy_refuse(c))
            break;
        if (!use_template(c, cmd->arg, err, sizeof err)) {
            chat_notice(c, true, "%s", err);
            break;
        }
        free(v->s->template_name);
        v->s->template_name = x_strdup(c->tpl->name);
        v->dirty = true;
        ensure_rendered(c, v);
        show_conv(c);
        chat_notice(c, false, "template '%s' (%zu tokens re-rendered)", c->tpl->name,
                    v->tokens.n);
        break;
    case CMD_SYSTEM:
        if (busy_refuse(c))
            break;
        free(v->s->system);
        v->s->system = x_strdup(cmd->arg);
        v->rendered = false;
        v->dirty = true;
        ensure_rendered(c, v);
        show_conv(c);
        chat_notice(c, false, "system prompt set");
        break;
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
        if (busy_refuse(c))
            break;
        if (!c->model_ready) {
            chat_notice(c, true, "the model is not loaded yet");
            break;
        }
        size_t n = v->s->n_msgs;
        if (n == 0) {
            chat_notice(c, true, "nothing to retry");
            break;
        }
        if (!ensure_rendered(c, v))
            break;
        if (v->s->msgs[n - 1].role == ROLE_ASSISTANT) {
            conv_rewind(v, n - 1); /* back to just after the generation prompt */
            transcript_cut(c, n - 1);
        }
        start_reply(c);
        break;
    }
    case CMD_UNDO: {
        if (busy_refuse(c))
            break;
        if (!ensure_rendered(c, v))
            break;
        size_t n = v->s->n_msgs;
        size_t u = n;
        while (u > 0 && v->s->msgs[u - 1].role != ROLE_USER)
            u--;
        if (u == 0) {
            chat_notice(c, true, "nothing to undo");
            break;
        }
        u--;
        char *text = x_strdup(v->s->msgs[u].content);
        conv_rewind(v, u);
        transcript_cut(c, u);
        input_set_text(text); /* give the message back for editing */
        free(text);
        save_conv(c, v, true);
        chat_notice(c, false, "removed the last exchange (its message is back in the input)");
        break;
    }
    case CMD_CLEAR:
        if (busy_refuse(c))
            break;
        if (!ensure_rendered(c, v))
            break;
        if (v->n_snaps > 0)
            conv_rewind(v, 0);
        session_truncate(v->s, 0);
        show_conv(c);
        save_conv(c, v, true);
        chat_notice(c, false, "conversation cleared");
        break;
    }
}

void chat_submit(struct chat *c, char *line)
{
    if (!line) {
        c->quit = true;
        return;
    }
    struct cmd cmd;
    size_t start;
    char err[512];
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
        free(line);
        return;
    }
    if (c->generating || !c->model_ready) {
        chat_notice(c, true, c->generating ? "a reply is being generated: Esc or Ctrl-C stops it"
                                           : "the model is still loading: your text is kept");
        input_set_text(line);
        free(line);
        return;
    }
    input_history_add(line);
    struct conv *v = c->cur;
    if (!ensure_rendered(c, v)) {
        input_set_text(line);
        free(line);
        return;
    }
    struct snap sn;
    snap_take(&sn, v);
    if (v->r.state == TEMPLATE_IN_REPLY) {
        /* the previous reply never came (error): this turn follows the user
         * turn directly, which the template does not allow; re-render */
        snap_fini(&sn);
        v->rendered = false;
        ensure_rendered(c, v);
        snap_take(&sn, v);
    }
    int rc = template_render_user(&v->r, text, &v->tokens);
    if (rc) {
        snap_fini(&sn);
        chat_notice(c, true, "cannot render the message: %s", elm_status_str((elm_status)rc));
        input_set_text(line);
        free(line);
        return;
    }
    conv_push_snap(v, &sn);
    session_append(v->s, ROLE_USER, text);
    v->dirty = true;
    transcript_add(&c->tr, TR_USER, text, strlen(text), (int)(v->s->n_msgs - 1));
    free(line);
    start_reply(c);
}

/* ------------------------------------------------------------- the status */

void chat_status(struct chat *c, struct status_info *st, double now)
{
    memset(st, 0, sizeof *st);
    st->model = c->model_name;
    st->template_name = c->tpl ? c->tpl->name : NULL;
    st->session = c->cur ? c->cur->s->name : NULL;
    st->n_past = c->cur ? (int)c->cur->tokens.n : 0;
    if (c->generating && c->gen_conv == c->cur)
        st->n_past += (int)c->reply_ids.n;
    st->n_ctx = c->n_ctx;
    st->prefill_tps = c->prefill_tps;
    st->decode_tps = c->decode_tps;
    st->demo = c->demo;
    if (c->model_loading) {
        snprintf(c->state_text, sizeof c->state_text, "loading %d%%",
                 (int)(c->load_progress * 100));
        st->busy = true;
    } else if (c->generating && !c->got_token) {
        snprintf(c->state_text, sizeof c->state_text, "prefill %d%% · Esc stops",
                 (int)(c->prefill_progress * 100));
        st->busy = true;
    } else if (c->generating) {
        snprintf(c->state_text, sizeof c->state_text, "generating %zu · Esc stops",
                 c->reply_ids.n);
        st->busy = true;
    } else if (!c->model_ready) {
        snprintf(c->state_text, sizeof c->state_text, "no model");
    } else if (c->n_ctx > 0 && st->n_past * 10 >= c->n_ctx * 9) {
        snprintf(c->state_text, sizeof c->state_text, "context nearly full");
    } else {
        snprintf(c->state_text, sizeof c->state_text, "idle");
    }
    st->state = c->state_text;
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

    const char *marg = opt->common.model ? opt->common.model : c->cfg.default_model;
    if (!resolve_model(c, marg, c->model_path, sizeof c->model_path, err, err_size))
        return false;
    c->model_arg = marg ? x_strdup(marg) : NULL;
    c->demo = is_default_model(c->model_path);
    set_model_name(c);
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
    c->cur = conv_new(c, s);
    if (!use_template(c, wanted_template(c), err, err_size)) {
        return false;
    }
    if (conv_render(c, c->cur, err, err_size) != 0)
        return false;
    show_conv(c);

    c->worker = elm_worker_new(err, err_size);
    if (!c->worker)
        return false;
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
        /* keep the partial reply, marked interrupted */
        struct elm_event ev = {.type = ELM_EV_DONE, .reason = ELM_DONE_CANCELLED};
        elm_worker_cancel(c->worker);
        c->gen_req = 0; /* its DONE will be ignored */
        finish_reply(c, &ev);
    }
    for (size_t i = 0; i < c->n_convs; i++)
        save_conv(c, c->convs[i], true);
}

void chat_fini(struct chat *c)
{
    if (c->worker) {
        chat_save_all(c);
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
    template_free(c->tpl);
    elm_tokenizer_free(c->tok);
    free(c->info);
    free(c->model_arg);
    idvec_fini(&c->reply_ids);
    sbuf_fini(&c->reply_text);
    transcript_fini(&c->tr);
    config_fini(&c->cfg);
    memset(c, 0, sizeof *c);
}
