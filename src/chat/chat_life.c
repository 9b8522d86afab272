/* chat_life.c: the controller's life: chat_new (config.yaml, the first
 * session with what the command line changes in it, its model, the worker
 * and the model's load), chat_save_all and chat_free. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/chat/chat_controller.h"
#include "src/chat/chat_internal.h"
#include "src/store/paths.h"
#include "src/template/roles.h"
#include "src/store/store.h"
#include "src/base/xalloc.h"

/* ELMCHAT_MEM_BUDGET: what the worker keeps (models and the caches of the
 * open sessions; the least recently used go first): bytes, or with K, M
 * or G. */
static bool parse_mem_budget(const char *budget, uint64_t *out, char *err, size_t err_size)
{
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
    *out = (uint64_t)v << shift;
    return true;
}

/* The session the chat starts with (-s NAME, else a new one), with the
 * command line's system prompt, template choice and sampling. */
static bool same_text(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static struct session *first_session(struct chat *c, bool *changed, char *err, size_t err_size)
{
    const struct chat_options *opt = &c->opt;
    struct session *s;
    if (opt->continue_last) {
        char *last = chat_last_session_name();
        if (!last) {
            snprintf(err, err_size, "no saved conversation to continue (elmchat without -c "
                                    "starts a new one)");
            return NULL;
        }
        s = chat_session_load(last, false, err, err_size);
        free(last);
        if (!s)
            return NULL;
    } else if (opt->session_name) {
        s = chat_session_load(opt->session_name, true, err, err_size);
        if (!s)
            return NULL;
    } else {
        char *name = chat_auto_session_name();
        s = session_new(name);
        free(name);
    }
    /* what the command line changes is saved with it; nothing else is */
    struct sampling was;
    memcpy(&was, &s->sampling, sizeof was); /* padding too: compared with memcmp */
    *changed = (opt->system && !same_text(s->system, opt->system)) ||
               (opt->template_name && !same_text(s->template_name, opt->template_name));
    if (opt->system) {
        free(s->system);
        s->system = x_strdup(opt->system);
        free(s->role);
        s->role = NULL;
    } else if (opt->role) {
        struct role_preset *r = role_load(opt->role, err, err_size);
        if (!r) {
            session_free(s);
            return NULL;
        }
        *changed = *changed || !same_text(s->system, r->system) || !same_text(s->role, r->name);
        free(s->system);
        s->system = x_strdup(r->system);
        free(s->role);
        s->role = x_strdup(r->name);
        role_free(r);
    }
    if (opt->template_name) {
        free(s->template_name);
        s->template_name = NULL;
    }
    chat_apply_cli_sampling(c, s);
    *changed = *changed || memcmp(&was, &s->sampling, sizeof was) != 0;
    return s;
}

/* The model: -m, else the session's own (its model:), else the default.
 * A session's model that cannot be opened gives way to the default, and
 * note says why and which one is used. */
static bool init_model(struct chat *c, const struct session *s, char **note, char *err,
                       size_t err_size)
{
    const char *arg = c->opt.common.model;
    if (arg || !s->model)
        return chat_model_init(c, arg ? arg : c->cfg.default_model, err, err_size);
    if (chat_model_init(c, s->model, err, err_size))
        return true;
    char why[1024];
    snprintf(why, sizeof why, "%s", err);
    chat_model_clear(&c->model);
    if (!chat_model_init(c, c->cfg.default_model, err, err_size))
        return false;
    *note = x_asprintf(
             "This conversation was with %s, which cannot be opened (%s): it goes on with %s. "
             "The session keeps %s as its model (-m NAME or /model NAME chooses another).",
             s->model, why, c->model.name, s->model);
    return true;
}

static bool chat_start(struct chat *c, const struct chat_options *opt,
                       const struct chat_view *view, char *err, size_t err_size)
{
    c->opt = *opt;
    if (view)
        c->view = *view;
    c->markdown_off = opt->raw;
    c->lookup_off = opt->common.no_lookup;
    if (opt->raw && c->view.markdown_changed)
        c->view.markdown_changed(c->view.user, false);
    config_init(&c->cfg);
    if (config_load(&c->cfg, NULL, err, err_size) != 0)
        return false;
    c->policy = conv_policy_from_config(&c->cfg);
    const char *budget = getenv("ELMCHAT_MEM_BUDGET");
    if (budget && *budget && !parse_mem_budget(budget, &c->mem_budget, err, err_size))
        return false;
    /* The session first: it names its model and may name its template. */
    bool cli_changed = false;
    struct session *s = first_session(c, &cli_changed, err, err_size);
    if (!s)
        return false;
    char *model_note = NULL;
    if (!init_model(c, s, &model_note, err, err_size)) {
        session_free(s);
        return false;
    }
    c->cur = chat_conv_open(c, s, err, err_size);
    if (!c->cur) {
        free(model_note);
        return false;
    }
    /* no view to show it read-only (bench --chat): a clear error instead */
    if (c->cur->read_only && !view) {
        snprintf(err, err_size, "session '%s' is open in another elmchat (pid %ld)", s->name,
                 c->cur->lock_holder);
        free(model_note);
        return false;
    }
    /* what the command line changed in a saved session is saved with it */
    if (cli_changed && s->n_msgs > 0)
        c->cur->dirty = true;
    c->cur->sampling_by_cli = chat_cli_sampling(c, NULL); /* first_session applied them */
    chat_show_conv(c);
    if (model_note)
        chat_info_msg(c, true, model_note);
    free(model_note);

    /* Decoding may run behind the caller's thread (the TUI: a keystroke
     * is drawn at once even while every core computes). */
    struct elm_worker_params wp = elm_worker_default_params();
    wp.mem_budget = c->mem_budget;
    wp.nice = opt->worker_nice;
    c->worker = elm_worker_new(&wp, err, err_size);
    if (!c->worker)
        return false;
    /* what a killed run left half-written (a minute old: no live writer's) */
    const char *kinds[] = {"sessions", "kv"};
    for (int i = 0; i < 2; i++) {
        char *dir = paths_dir(i ? PATHS_CACHE : PATHS_DATA, kinds[i]);
        store_remove_stale_temps(dir, time(NULL) - 60);
        free(dir);
    }
    chat_post_load_model(c);
    const char *draft = opt->common.draft ? opt->common.draft
                                          : config_alias_draft(&c->cfg, c->model.arg);
    if (draft && !chat_set_draft(c, draft, err, err_size))
        return false;
    if (c->model.bundled && !s->n_msgs) {
        char line[512];
        snprintf(line, sizeof line,
                 "%s is elmchat's own tiny model: it knows elmchat and what 3,000 English words "
                 "mean, nothing else. For real answers load OpenELM: /model PATH (README: "
                 "Getting models). /help lists the commands.",
                 c->model.name);
        chat_info_msg(c, false, line);
    } else if (!s->n_msgs)
        chat_info_msg(c, false, "Type a message and press Enter. /help lists the commands.");
    return true;
}

void chat_save_all(struct chat *c)
{
    if (c->reply.active && c->reply.conv) {
        /* keep the partial reply, marked interrupted; the worker stops
         * within a layer, before the snapshot is written */
        struct elm_event ev = {.type = ELM_EV_DONE, .reason = ELM_DONE_CANCELLED};
        chat_cancel_reply(c);
        c->reply.req = 0; /* its DONE will be ignored */
        chat_finish_reply(c, &ev);
    }
    for (size_t i = 0; i < c->n_convs; i++)
        chat_save_conv(c, c->convs[i], true);
}

struct chat *chat_new(const struct chat_options *opt, const struct chat_view *view, char *err,
                      size_t err_size)
{
    struct chat *c = x_calloc(1, sizeof *c);
    if (!chat_start(c, opt, view, err, err_size)) {
        chat_free(c);
        return NULL;
    }
    return c;
}

void chat_free(struct chat *c)
{
    if (!c)
        return;
    chat_pull_fini(c);
    chat_shell_fini(c);
    if (c->worker) {
        chat_save_all(c);
        chat_wait_kv_saves(c, 3.0);
        elm_worker_free(c->worker);
    }
    for (size_t i = 0; i < c->n_convs; i++)
        chat_conv_free(c->convs[i]);
    free(c->convs);
    chat_model_clear(&c->model);
    chat_model_clear(&c->load.next);
    free(c->info);
    free(c->queued);
    attachment_fini(&c->attach);
    elm_event_fini(&c->load.pending_ready);
    sbuf_fini(&c->reply.text);
    config_fini(&c->cfg);
    free(c);
}
