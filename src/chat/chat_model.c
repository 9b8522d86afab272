/* chat_model.c: the chat's model: names resolved through config.yaml's
 * aliases, the tokenizer beside it, loads in the background (LOAD_MODEL:
 * the current model keeps answering until MODEL_READY) and the switch,
 * after which every open conversation follows the new model. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/chat/chat_controller.h"
#include "src/chat/chat_internal.h"
#include "src/models/hub_cache.h"
#include "src/models/model_find.h"
#include "src/models/pull_on_demand.h"
#include "src/store/paths.h"
#include "src/base/xalloc.h"

void chat_model_clear(struct chat_model *m)
{
    free(m->arg);
    elm_tokenizer_free(m->tok);
    free(m->tokenizer_from);
    memset(m, 0, sizeof *m);
}

bool chat_resolve_model(struct chat *c, const char *arg, char *path, size_t size, char *err,
                        size_t err_size)
{
    return config_find_model(&c->cfg, arg, false, false, NULL, path, size, err, err_size);
}

bool chat_model_here(struct chat *c, const char *name)
{
    char path[4096], err[1024];
    return chat_resolve_model(c, name, path, sizeof path, err, sizeof err);
}

/* The tokenizer is loaded here too (it is immutable and cheap), because the
 * templates render on this thread: which one is model_tokenizer's rule;
 * the chat's --tokenizer and an alias's tokenizer: are a server's.  *from
 * says which (owned path, NULL: the model's own). */
static elm_tokenizer *load_tokenizer(const struct chat *c, const char *arg,
                                     const char *model_path, char **from, char *err,
                                     size_t err_size)
{
    const char *given = !model_is_server(model_path) ? NULL
                        : c->opt.tokenizer          ? c->opt.tokenizer
                        : arg                       ? config_alias_tokenizer(&c->cfg, arg)
                                                    : NULL;
    elm_tokenizer *tok = model_tokenizer(model_path, given, from, err, err_size);
    if (!tok && !*err && elm_tokenizer_load_for_model(model_path, &tok, err, err_size) != ELM_OK)
        return NULL;
    return tok;
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

/* The folder or file name, without ".gguf": what the replies are labelled
 * with; a server's host and port. */
static void model_label(const char *path, char *out, size_t size)
{
    if (model_is_server(path)) {
        const char *u = path + strlen(MODEL_SERVER_PREFIX);
        const char *h = strstr(u, "://");
        h = h ? h + 3 : u;
        snprintf(out, size, "%.*s", (int)strcspn(h, "/"), h);
        return;
    }
    if (hub_label_of_path(path, out, size))
        return;
    const char *b = base_name(path);
    size_t n = strcspn(b, "/");
    if (n > 5 && strncmp(b + n - 5, ".gguf", 5) == 0)
        n -= 5;
    snprintf(out, size, "%.*s", (int)(n > 100 ? 100 : n), b);
}

/* The model named on the command line (or config, or the bundled one):
 * resolved, named, its tokenizer loaded; the worker loads it later. */
bool chat_model_init(struct chat *c, const char *arg, char *err, size_t err_size)
{
    bool found = config_find_model(&c->cfg, arg, c->opt.pull_missing, c->opt.common.no_pull,
                                   c->opt.pull_ui, c->model.path, sizeof c->model.path, err,
                                   err_size);
    if (!found)
        return false;
    c->model.arg = arg ? x_strdup(arg) : NULL;
    c->model.bundled = model_is_bundled(c->model.path);
    model_label(c->model.path, c->model.name, sizeof c->model.name);
    c->model.tok = load_tokenizer(c, arg, c->model.path, &c->model.tokenizer_from, err, err_size);
    if (!c->model.tok)
        return false;
    snprintf(c->load.next.path, sizeof c->load.next.path, "%s", c->model.path);
    snprintf(c->load.next.name, sizeof c->load.next.name, "%s", c->model.name);
    return true;
}

void chat_post_load_model(struct chat *c)
{
    struct elm_request req = elm_request_default(ELM_REQ_LOAD_MODEL);
    req.path = c->load.next.path;
    req.n_ctx = c->opt.common.n_ctx > 0 ? c->opt.common.n_ctx : c->cfg.n_ctx;
    req.n_threads = c->opt.common.n_threads;
    if (c->opt.common.exact)
        req.flags |= ELM_LOAD_EXACT;
    /* the tokenizer loaded here for this path: the model shares it */
    req.tokenizer = c->load.next.tok ? c->load.next.tok : c->model.tok;
    /* a server's bearer token (--api-key, else $ELMCHAT_API_KEY) */
    const char *key = c->opt.api_key ? c->opt.api_key : getenv("ELMCHAT_API_KEY");
    req.api_key = key && *key ? (char *)key : NULL;
    c->load.req = chat_post(c, &req);
    c->load.active = true;
    c->load.progress = 0;
    c->load.started = chat_now();
}

/* Start loading path (resolved) in the background; the current model stays
 * until it is ready.  false with err filled (tokenizer missing...). */
bool chat_begin_model_load(struct chat *c, const char *arg, const char *path, char *err,
                           size_t err_size)
{
    char *from = NULL;
    elm_tokenizer *tok = load_tokenizer(c, arg, path, &from, err, err_size);
    if (!tok)
        return false;
    struct chat_model *m = &c->load.next;
    chat_model_clear(m);
    m->arg = arg ? x_strdup(arg) : NULL;
    m->tok = tok;
    m->tokenizer_from = from;
    snprintf(m->path, sizeof m->path, "%s", path);
    m->bundled = model_is_bundled(m->path);
    model_label(path, m->name, sizeof m->name);
    chat_post_load_model(c);
    /* an alias of config.yaml may name the draft that speeds it up */
    const char *draft = arg ? config_alias_draft(&c->cfg, arg) : NULL;
    if (draft && !c->opt.common.draft && strcmp(draft, c->draft_name) != 0) {
        char derr[512];
        if (!chat_set_draft(c, draft, derr, sizeof derr))
            chat_notice(c, true, "models.%s.draft: %s", arg, derr);
    }
    return true;
}

/* The new model's tokenizer and template (by model name) for every open
 * conversation. */
static void adopt_tokenizer(struct chat *c)
{
    for (size_t i = 0; i < c->n_convs; i++) {
        struct conv *v = c->convs[i];
        char err[1024];
        struct template *t = v->tpl;
        const char *want = chat_wanted_template(c, v);
        if (strcmp(want, v->tpl->name) != 0) {
            struct template *nt = template_load(want, err, sizeof err);
            if (nt)
                t = nt;
            else
                chat_notice(c, true, "%s", err);
        }
        conversation_set_template(&v->cv, t, c->model.tok);
        if (t != v->tpl) {
            /* rebuilt against the new template right away, then the old
             * one can go */
            int rc = conversation_model_changed(&v->cv, c->n_ctx, err, sizeof err);
            if (rc && rc != CONV_FULL) {
                /* keep the template it has (still rendered with it) */
                conversation_set_template(&v->cv, v->tpl, c->model.tok);
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

static size_t n_out_of_context(const struct session *s)
{
    size_t n = 0;
    for (size_t k = 0; k < s->n_msgs; k++)
        n += s->msgs[k].out_of_context;
    return n;
}

/* MODEL_READY for our load: it is the current model now.  Every open
 * conversation follows (tokenizer, template by model, context length and
 * policy); the current one is re-prefilled in the background. */
void chat_model_ready(struct chat *c, struct elm_event *ev)
{
    bool first = !c->model_ready;
    c->load.active = false;
    c->model_ready = true;
    free(c->info);
    c->info = ev->info;
    ev->info = NULL;
    c->n_ctx = ev->n_ctx;
    /* the first load brings the model chat_model_init made current */
    bool new_model = c->load.next.tok != NULL;
    bool redraw = new_model;
    struct chat_model old = {0}; /* freed once every conversation is rebuilt */
    if (new_model) {
        old = c->model;
        c->model = c->load.next;
        memset(&c->load.next, 0, sizeof c->load.next);
        adopt_tokenizer(c);
    } else if (model_is_server(c->model.path)) {
        /* the first load of a server: its model's name is known only now
         * and may choose the template (unless -t, the session or config) */
        adopt_tokenizer(c);
        redraw = true;
    }
    for (size_t i = 0; i < c->n_convs; i++) {
        struct conv *v = c->convs[i];
        char err[1024];
        /* a conversation goes on with the new model: saved naming it, even
         * when no turn follows (/model X, then /quit) */
        if (new_model && c->model.arg && v->s->n_msgs > 0 &&
            (!v->s->model || strcmp(v->s->model, c->model.arg) != 0))
            v->dirty = true;
        size_t before = n_out_of_context(v->s);
        int rc = conversation_model_changed(&v->cv, c->n_ctx, err, sizeof err);
        if (rc && v == c->cur)
            chat_notice(c, true, "%s", err);
        if (n_out_of_context(v->s) != before) {
            v->dirty = true;
            if (v == c->cur)
                redraw = true;
        }
    }
    chat_model_clear(&old);
    if (c->cur) {
        if (redraw)
            chat_show_conv(c); /* out-of-context marks, another template's system prompt */
        chat_prepare_cache(c, c->cur);
    }
    if (!first) {
        double dt = chat_now() - c->load.started;
        chat_notice(c, false, "%s loaded in %.2f s; the conversation continues (%zu tokens)",
                    c->model.name, dt, c->cur ? c->cur->cv.tokens.n : 0);
    }
}

/* ERROR for our load: the previous model (if any) stays current. */
void chat_model_failed(struct chat *c, const struct elm_event *ev)
{
    c->load.active = false;
    chat_model_clear(&c->load.next);
    char buf[1200];
    snprintf(buf, sizeof buf, "model not loaded: %s", ev->text ? ev->text : "error");
    chat_notice(c, true, "%s", buf);
    chat_info_msg(c, true, buf);
}

bool chat_set_draft(struct chat *c, const char *name, char *err, size_t err_size)
{
    struct elm_request req = elm_request_default(ELM_REQ_SET_DRAFT);
    char path[4096] = "";
    if (name && strcmp(name, "off") != 0) {
        if (!chat_resolve_model(c, name, path, sizeof path, err, err_size))
            return false;
        req.path = path;
    }
    req.n_threads = c->opt.common.n_threads;
    snprintf(c->draft_name, sizeof c->draft_name, "%s", req.path ? name : "");
    c->draft_ready = false;
    c->draft_req = chat_post(c, &req);
    return true;
}
