/* pull_on_demand.c: the download of a named model that is missing
 * (pull_on_demand.h). */
#include "config.h"

#include "src/models/pull_on_demand.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/models/http_fetch.h"
#include "src/models/hub_api.h"
#include "src/models/hub_cache.h"
#include "src/models/hub_pull.h"
#include "src/base/human_size.h"
#include "src/models/model_convert.h"
#include "src/models/model_find.h"
#include "src/base/options.h"
#include "src/base/xalloc.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

bool model_hub_id(const char *arg, char *id, size_t size)
{
    if (!arg || !*arg)
        return false;
    if (hub_known_repo(arg, id, size))
        return true;
    if (arg[0] == '/' || arg[0] == '.' || !hub_repo_id_valid(arg))
        return false;
    snprintf(id, size, "%s", arg);
    return true;
}

static void tell(const struct pull_ui *ui, const char *line)
{
    if (ui->notice)
        ui->notice(ui->user, line);
}

static void on_notice(void *ctx, const char *message)
{
    tell(ctx, message);
}

static void on_event(void *ctx, const struct hub_pull_event *ev)
{
    struct pull_ui *ui = ctx;
    if (ui->event)
        ui->event(ui->user, ev);
}

static void on_convert(float f, void *ctx)
{
    struct pull_ui *ui = ctx;
    if (ui->converting)
        ui->converting(ui->user, f);
}

/* The GGUF of type name beside the snapshot (elmchat-TYPE.gguf). */
static bool convert(struct pull_ui *ui, const char *snapshot, const char *name, char *err,
                    size_t err_size)
{
    struct elm_quantize_params qp = elm_quantize_default_params();
    if (!cli_parse_dtype(name, &qp.type)) {
        snprintf(err, err_size, "pull_quantize: unknown type '%s'", name);
        return false;
    }
    qp.progress_cb = on_convert;
    qp.progress_user = ui;
    char *gguf = x_asprintf("%s/elmchat-%s.gguf", snapshot, elm_dtype_name(qp.type));
    char *from = NULL;
    bool ok = model_convert(snapshot, gguf, &qp, &from, err, err_size) == ELM_OK;
    if (ui->converted)
        ui->converted(ui->user, ok ? gguf : NULL);
    free(from);
    free(gguf);
    return ok;
}

/* Asked with the size, where it goes. */
static bool confirm(const struct pull_ui *ui, const char *id, const struct hub_listing *l)
{
    if (!ui->confirm)
        return true;
    char *cache = hub_cache_dir();
    bool yes = ui->confirm(ui->user, id, hub_pull_select(l, NULL, NULL), cache);
    free(cache);
    return yes;
}

bool model_resolve_or_pull(const char *arg, bool allow_pull, const char *quantize,
                           const struct pull_ui *ui_given, char *path, size_t path_size,
                           char *err, size_t err_size)
{
    struct pull_ui shown = {0}; /* none: nothing shown, yes */
    if (ui_given)
        shown = *ui_given;
    struct pull_ui *ui = &shown;
    if (model_resolve(arg, path, path_size, err, err_size))
        return true;
    char id[256];
    if (!model_hub_id(arg, id, sizeof id))
        return false;
    if (!allow_pull || hub_offline()) {
        snprintf(err, err_size, "%s is not downloaded (%s): elmchat pull %s", id,
                 allow_pull ? "HF_HUB_OFFLINE is set" : "--no-pull", arg);
        return false;
    }
    char herr[2048];
    if (fetch_global_init(herr, sizeof herr) != 0) {
        snprintf(err, err_size, "%s", herr);
        return false;
    }
    /* Ctrl-C (and a kill) stop the listing as well as the pull, each
     * within a fraction of a second */
    struct sigaction sa = {.sa_handler = on_sigint}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    interrupted = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    /* the listing twice (here for the size, then in the pull): cheap next
     * to the download, and it keeps hub_pull one call */
    char *token = hub_token();
    char *ep = hub_endpoint();
    char *asking =
        x_asprintf("%s is not on this machine: asking the Hub (%s) for its size... (Ctrl-C stops)",
                   id, ep);
    tell(ui, asking);
    free(asking);
    free(ep);
    struct hub_listing l;
    struct hub_wait w = {.cancel = &interrupted, .notice = on_notice, .ctx = ui};
    enum hub_status st = hub_list(id, "main", token, &w, &l, herr, sizeof herr);
    free(token);
    bool ok = false;
    if (st != HUB_OK) {
        snprintf(err, err_size, "%s", herr);
    } else if (!confirm(ui, id, &l)) {
        snprintf(err, err_size, "%s: not downloaded", id);
    } else {
        if (ui->begin)
            ui->begin(ui->user, id);
        struct hub_pull_opts po = {
            .id = id, .on_event = on_event, .ctx = ui, .cancel = &interrupted};
        struct hub_pull_result r;
        st = hub_pull(&po, &r, herr, sizeof herr);
        if (ui->end)
            ui->end(ui->user, st == HUB_OK ? &r : NULL);
        if (st != HUB_OK) {
            snprintf(err, err_size, "%s", herr);
        } else {
            ok = (!quantize || convert(ui, r.snapshot, quantize, err, err_size)) &&
                 model_resolve(arg, path, path_size, err, err_size);
            free(r.snapshot);
        }
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    hub_listing_fini(&l);
    fetch_global_cleanup();
    return ok;
}
