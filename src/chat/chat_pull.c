/* chat_pull.c: /model NAME for a model that is not downloaded, inside the
 * chat: the Hub is asked for its size in a thread, a confirm line asks
 * "y/n", the pull runs in that thread with its progress in the status bar
 * (Esc stops it, Ctrl-C in vi mode; resumable), and when it is done the model loads as /model
 * loads any.  The thread only fills struct chat_pull under its mutex; the
 * main thread reads it at each tick and draw. */
#include "config.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "src/chat/chat_controller.h"
#include "src/chat/chat_internal.h"
#include "src/models/http_fetch.h"
#include "src/models/hub_api.h"
#include "src/models/hub_cache.h"
#include "src/models/hub_pull.h"
#include "src/base/human_size.h"
#include "src/models/pull_on_demand.h"
#include "src/base/xalloc.h"

enum pull_phase { PHASE_LISTING, PHASE_ASKING, PHASE_PULLING };

struct chat_pull {
    enum pull_phase phase;
    char name[256]; /* as the user gave it (what /model loads after) */
    char id[256];
    pthread_t thread;
    bool thread_running; /* started and not joined */
    volatile sig_atomic_t cancel;
    double started;
    pthread_mutex_t mu; /* guards what follows */
    bool finished;      /* the thread's work is done: join it */
    enum hub_status st;
    char err[1024];
    long long total, done;
    char file[96];
    char *snapshot;
};

static void *list_main(void *arg)
{
    struct chat_pull *p = arg;
    char *token = hub_token();
    struct hub_listing l;
    char err[1024];
    struct hub_wait w = {.cancel = &p->cancel};
    enum hub_status st = hub_list(p->id, "main", token, &w, &l, err, sizeof err);
    free(token);
    long long total = st == HUB_OK ? hub_pull_select(&l, NULL, NULL) : 0;
    hub_listing_fini(&l);
    pthread_mutex_lock(&p->mu);
    p->st = st;
    snprintf(p->err, sizeof p->err, "%s", st == HUB_OK ? "" : err);
    p->total = total;
    p->finished = true;
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void on_event(void *ctx, const struct hub_pull_event *ev)
{
    struct chat_pull *p = ctx;
    pthread_mutex_lock(&p->mu);
    p->total = ev->all_size;
    p->done = ev->all_done;
    if (ev->file)
        snprintf(p->file, sizeof p->file, "%s", ev->file);
    pthread_mutex_unlock(&p->mu);
}

static void *pull_main(void *arg)
{
    struct chat_pull *p = arg;
    struct hub_pull_opts o = {.id = p->id, .on_event = on_event, .ctx = p, .cancel = &p->cancel};
    struct hub_pull_result r;
    char err[1024];
    enum hub_status st = hub_pull(&o, &r, err, sizeof err);
    pthread_mutex_lock(&p->mu);
    p->st = st;
    snprintf(p->err, sizeof p->err, "%s", st == HUB_OK ? "" : err);
    p->snapshot = st == HUB_OK ? r.snapshot : NULL;
    p->finished = true;
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static bool start(struct chat *c, void *(*fn)(void *))
{
    struct chat_pull *p = c->pull;
    p->finished = false;
    p->cancel = 0;
    p->started = chat_now();
    if (pthread_create(&p->thread, NULL, fn, p) != 0) {
        chat_notice(c, true, "%s: cannot start the download thread", p->id);
        return false;
    }
    p->thread_running = true;
    return true;
}

static void join(struct chat_pull *p)
{
    if (p->thread_running)
        pthread_join(p->thread, NULL);
    p->thread_running = false;
}

static void drop(struct chat *c)
{
    struct chat_pull *p = c->pull;
    if (!p)
        return;
    join(p);
    free(p->snapshot);
    pthread_mutex_destroy(&p->mu);
    free(p);
    c->pull = NULL;
}

bool chat_pull_offer(struct chat *c, const char *name)
{
    char id[256], err[512];
    if (c->pull || !model_hub_id(name, id, sizeof id))
        return false;
    if (c->opt.common.no_pull || hub_offline()) {
        chat_notice(c, true, "%s is not downloaded (%s): elmchat pull %s", id,
                    c->opt.common.no_pull ? "--no-pull" : "HF_HUB_OFFLINE is set", name);
        return true;
    }
    if (!c->http_ready) {
        if (fetch_global_init(err, sizeof err) != 0) {
            chat_notice(c, true, "%s", err);
            return true;
        }
        c->http_ready = true;
    }
    struct chat_pull *p = x_calloc(1, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->id, sizeof p->id, "%s", id);
    p->phase = PHASE_LISTING;
    c->pull = p;
    if (!start(c, list_main)) {
        drop(c);
        return true;
    }
    chat_notice(c, false, "%s is not downloaded: asking the Hub for its size... (%s stops)", id,
                chat_key_name(c, CHAT_HINT_STOP));
    chat_changed(c);
    return true;
}

bool chat_pull_answer(struct chat *c, const char *line)
{
    struct chat_pull *p = c->pull;
    if (!p || p->phase != PHASE_ASKING)
        return false;
    const char *s = line + strspn(line, " \t");
    bool yes = *s == '\0' || *s == '\n' || strncasecmp(s, "y", 1) == 0;
    if (!yes) {
        chat_notice(c, false, "%s: not downloaded", p->id);
        drop(c);
        return true;
    }
    p->phase = PHASE_PULLING;
    if (!start(c, pull_main))
        drop(c);
    else
        chat_notice(c, false, "downloading %s (%s stops it; a later /model resumes it)", p->id,
                    chat_key_name(c, CHAT_HINT_STOP));
    chat_changed(c);
    return true;
}

bool chat_pull_cancel(struct chat *c)
{
    struct chat_pull *p = c->pull;
    if (!p)
        return false;
    if (p->phase == PHASE_ASKING) {
        chat_notice(c, false, "%s: not downloaded", p->id);
        drop(c);
    } else {
        p->cancel = 1; /* the tick reports what was kept */
    }
    return true;
}

void chat_pull_tick(struct chat *c)
{
    struct chat_pull *p = c->pull;
    if (!p || p->phase == PHASE_ASKING)
        return;
    pthread_mutex_lock(&p->mu);
    bool finished = p->finished;
    pthread_mutex_unlock(&p->mu);
    if (!finished)
        return;
    join(p);
    if (p->st == HUB_CANCELLED && p->phase == PHASE_LISTING) {
        chat_notice(c, false, "%s: not downloaded (stopped while asking the Hub)", p->id);
        drop(c);
        chat_changed(c);
        return;
    }
    if (p->st == HUB_CANCELLED) {
        char a[32], b[32];
        chat_notice(c, false, "download stopped: %s of %s kept; /model %s resumes it",
                    human_size(p->done, a, sizeof a), human_size(p->total, b, sizeof b), p->name);
        drop(c);
        chat_changed(c);
        return;
    }
    if (p->st != HUB_OK) {
        chat_notice(c, true, "%s", p->err);
        drop(c);
        chat_changed(c);
        return;
    }
    if (p->phase == PHASE_LISTING) {
        char size[32], *cache = hub_cache_dir();
        p->phase = PHASE_ASKING;
        chat_notice(c, false, "Download %s (%s) into %s? y/n (Enter: yes)", p->id,
                    human_size(p->total, size, sizeof size), cache);
        free(cache);
        chat_changed(c);
        return;
    }
    /* pulled: load it as /model would */
    char name[256], path[4096], err[1024];
    snprintf(name, sizeof name, "%s", p->name);
    drop(c);
    if (!chat_resolve_model(c, name, path, sizeof path, err, sizeof err) ||
        !chat_begin_model_load(c, name, path, err, sizeof err))
        chat_notice(c, true, "%s", err);
    chat_changed(c);
}

bool chat_pull_status(struct chat *c, char *buf, size_t size)
{
    struct chat_pull *p = c->pull;
    if (!p || p->phase == PHASE_ASKING)
        return false;
    if (p->phase == PHASE_LISTING) {
        snprintf(buf, size, "asking the Hub about %s", p->id);
        return true;
    }
    pthread_mutex_lock(&p->mu);
    long long done = p->done, total = p->total;
    pthread_mutex_unlock(&p->mu);
    double dt = chat_now() - p->started;
    double rate = dt > 0.5 ? (double)done / dt : 0;
    char a[32], b[32], r[32], eta[48] = "";
    if (rate > 0 && total > done) {
        long s = (long)((double)(total - done) / rate);
        snprintf(eta, sizeof eta, " ETA %ld:%02ld", s / 60 % 10000, s % 60);
    }
    snprintf(buf, size, "downloading %.40s %d%% %s/%s %s/s%s", p->id,
             total > 0 ? (int)(100.0 * (double)done / (double)total) : 0,
             human_size(done, a, sizeof a), human_size(total, b, sizeof b),
             human_size((long long)rate, r, sizeof r), eta);
    return true;
}

bool chat_pull_active(const struct chat *c)
{
    return c->pull != NULL;
}

void chat_pull_fini(struct chat *c)
{
    if (c->pull)
        c->pull->cancel = 1;
    drop(c);
    if (c->http_ready)
        fetch_global_cleanup();
    c->http_ready = false;
}
