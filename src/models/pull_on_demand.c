/* pull_on_demand.c: the download of a named model that is missing
 * (pull_on_demand.h). */
#include "config.h"

#include "src/models/pull_on_demand.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/models/http_fetch.h"
#include "src/models/hub_api.h"
#include "src/models/hub_cache.h"
#include "src/models/hub_pull.h"
#include "src/base/human_size.h"
#include "src/models/model_convert.h"
#include "src/models/model_find.h"
#include "src/base/options.h"
#include "src/models/pull_progress.h"
#include "src/base/xalloc.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void print_notice(void *ctx, const char *message)
{
    fprintf(ctx, "%s\n", message);
    fflush(ctx);
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

/* The terminal to ask on and show the bar: standard error, else standard
 * output (the chat's tests keep stderr in a file); NULL for a script. */
static FILE *terminal(void)
{
    if (!isatty(STDIN_FILENO))
        return NULL;
    return isatty(STDERR_FILENO) ? stderr : isatty(STDOUT_FILENO) ? stdout : NULL;
}

/* Ask on the terminal; true to go on.  Without one (a script): yes. */
static bool confirm(FILE *term, const char *id, const struct hub_listing *l)
{
    if (!term) {
        fprintf(stderr, "elmchat: %s is not here: downloading it from the Hub\n", id);
        return true;
    }
    long long total = hub_pull_select(l, NULL, NULL);
    char *cache = hub_cache_dir();
    char size[32];
    fprintf(term, "%s is not on this machine. Download it from the Hub (%s) into %s? [Y/n] ", id,
            human_size(total, size, sizeof size), cache);
    free(cache);
    fflush(term);
    char answer[16] = "";
    if (!fgets(answer, sizeof answer, stdin))
        return false;
    return answer[0] == '\n' || answer[0] == 'y' || answer[0] == 'Y';
}

static void convert_progress(float f, void *user)
{
    FILE *out = user;
    fprintf(out, "\rwriting the GGUF: %3d%%", (int)(f * 100.0f));
    fflush(out);
}

/* The GGUF of type name beside the snapshot (elmchat-TYPE.gguf). */
static bool convert(FILE *term, const char *snapshot, const char *name, char *err, size_t err_size)
{
    struct elm_quantize_params qp = elm_quantize_default_params();
    if (!cli_parse_dtype(name, &qp.type)) {
        snprintf(err, err_size, "pull_quantize: unknown type '%s'", name);
        return false;
    }
    FILE *out = term ? term : stderr;
    qp.progress_cb = convert_progress;
    qp.progress_user = out;
    char *gguf = x_asprintf("%s/elmchat-%s.gguf", snapshot, elm_dtype_name(qp.type));
    char *from = NULL;
    bool ok = model_convert(snapshot, gguf, &qp, &from, err, err_size) == ELM_OK;
    fprintf(out, "\n");
    if (ok)
        fprintf(out, "wrote %s\n", gguf);
    free(from);
    free(gguf);
    return ok;
}

bool model_resolve_or_pull(const char *arg, bool allow_pull, const char *quantize, char *path,
                           size_t path_size, char *err, size_t err_size)
{
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
    FILE *term = terminal();
    FILE *out = term ? term : stderr;
    /* the listing twice (here for the size, then in the pull): cheap next
     * to the download, and it keeps hub_pull one call */
    char *token = hub_token();
    char *ep = hub_endpoint();
    fprintf(out, "%s is not on this machine: asking the Hub (%s) for its size... (Ctrl-C stops)\n",
            id, ep);
    fflush(out);
    free(ep);
    struct hub_listing l;
    struct hub_wait w = {.cancel = &interrupted, .notice = print_notice, .ctx = out};
    enum hub_status st = hub_list(id, "main", token, &w, &l, herr, sizeof herr);
    free(token);
    bool ok = false;
    if (st != HUB_OK) {
        snprintf(err, err_size, "%s", herr);
    } else if (!confirm(term, id, &l)) {
        snprintf(err, err_size, "%s: not downloaded", id);
    } else {
        struct pull_progress pp;
        pull_progress_init(&pp, id, term ? PULL_PROGRESS_BAR : PULL_PROGRESS_LINES, out);
        struct hub_pull_opts po = {
            .id = id, .on_event = pull_progress_event, .ctx = &pp, .cancel = &interrupted};
        struct hub_pull_result r;
        st = hub_pull(&po, &r, herr, sizeof herr);
        pull_progress_end(&pp);
        if (st != HUB_OK) {
            snprintf(err, err_size, "%s", herr);
        } else {
            pull_progress_summary(&pp, &r);
            ok = (!quantize || convert(term, r.snapshot, quantize, err, err_size)) &&
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
