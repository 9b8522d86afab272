/* remote-drive: the worker driven by a small script on stdin, one request
 * per line, one result line per request on stdout, for
 * tests/engine/test-remote.sh, which runs the same script on a local model
 * and on a llama-server and compares the lines.
 *
 *   remote-drive --tokenizer FILE [--api-key KEY] [--timeout S] < SCRIPT
 *
 *   load MODEL              LOAD_MODEL (a path or server:URL):
 *                           "ready n_ctx=N slots=S snapshots=0|1" or "error: ..."
 *   turn SLOT N TEXT        TEXT's ids (after BOS when the slot is empty) go
 *                           onto the slot's sequence; GENERATE (ELM_GEN_SYNC,
 *                           greedy, at most N); the ids it gives go on too:
 *                           "done REASON reused=R computed=C generated=G
 *                           past=P ids=..." and a line "text TEXT"
 *   stop-string TEXT, stop-id ID
 *                           the next turn ends at TEXT (held back) or at ID
 *   cancel-after K          the next turn is cancelled after K ids
 *                           ("cancel_ms=..." added: cancel to DONE)
 *   sh-after K CMD          the next turn runs CMD (sh -c) after K ids
 *   sh CMD                  runs CMD now
 *   save SLOT PATH, restore SLOT PATH
 *                           SAVE_STATE / LOAD_STATE: "done REASON past=P" or
 *                           "error: ..."
 *   forget SLOT             FREE_CTX and an empty sequence
 */
#include "config.h"

#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/elm_tokenizer.h"
#include "engine/elm_worker.h"

#define MAX_SLOTS 8

struct seq {
    int32_t *v;
    int n, cap;
};

static void seq_add(struct seq *s, const int32_t *ids, int n)
{
    if (n <= 0)
        return;
    if (s->n + n > s->cap) {
        s->cap = (s->n + n) * 2 + 16;
        s->v = realloc(s->v, (size_t)s->cap * sizeof *s->v);
        if (!s->v)
            exit(2);
    }
    memcpy(s->v + s->n, ids, (size_t)n * sizeof *ids);
    s->n += n;
}

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *reason_name(enum elm_done_reason r)
{
    switch (r) {
    case ELM_DONE_EOS:
        return "EOS";
    case ELM_DONE_LENGTH:
        return "LENGTH";
    case ELM_DONE_STOP:
        return "STOP";
    case ELM_DONE_CANCELLED:
        return "CANCELLED";
    case ELM_DONE_ERROR:
        return "ERROR";
    case ELM_DONE_CONTEXT_FULL:
        return "CONTEXT_FULL";
    case ELM_DONE_OK:
        return "OK";
    case ELM_DONE_STOP_STRING:
        return "STOP_STRING";
    }
    return "?";
}

static elm_worker *w;

/* Wait for the next event (60 s at most). */
static bool next(struct elm_event *ev)
{
    double until = now_sec() + 60;
    while (now_sec() < until) {
        if (elm_worker_next_event(w, ev))
            return true;
        struct pollfd p = {elm_worker_wake_fd(w), POLLIN, 0};
        poll(&p, 1, 100);
        elm_worker_drain_wake(w);
    }
    return false;
}

/* Events until the final one of id; TOKEN ids and text collected. */
static bool wait_done(uint64_t id, struct elm_event *done, struct seq *ids, char **text,
                      int cancel_after, int sh_k, const char *sh_after, double *cancel_t)
{
    size_t tl = 0;
    bool acted = false;
    for (;;) {
        struct elm_event ev;
        if (!next(&ev))
            return false;
        if (ev.request_id != id) {
            elm_event_fini(&ev);
            continue;
        }
        if (ev.type == ELM_EV_TOKEN) {
            if (ids && ev.n_ids > 0)
                seq_add(ids, ev.ids, ev.n_ids);
            if (text && ev.text) {
                size_t n = strlen(ev.text);
                *text = realloc(*text, tl + n + 1);
                memcpy(*text + tl, ev.text, n + 1);
                tl += n;
            }
            if (!acted && ids && ids->n >= (cancel_after >= 0 ? cancel_after : 1 << 30)) {
                acted = true;
                *cancel_t = now_sec();
                elm_worker_cancel(w, id);
            }
            if (!acted && sh_after && sh_k >= 0 && ids && ids->n >= sh_k) {
                acted = true;
                if (system(sh_after) != 0)
                    printf("# sh-after failed: %s\n", sh_after);
            }
        }
        if (ev.type == ELM_EV_DONE || ev.type == ELM_EV_MODEL_READY) {
            *done = ev;
            return true;
        }
        elm_event_fini(&ev);
    }
}

int main(int argc, char **argv)
{
    const char *tok_path = NULL, *api_key = NULL;
    int timeout_s = 0;
    static const struct option opts[] = {{"tokenizer", 1, NULL, 't'},
                                         {"api-key", 1, NULL, 'k'},
                                         {"timeout", 1, NULL, 'T'},
                                         {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 't')
            tok_path = optarg;
        else if (c == 'k')
            api_key = optarg;
        else if (c == 'T')
            timeout_s = atoi(optarg);
        else
            return 2;
    }
    char err[ELM_ERR_MAX];
    elm_tokenizer *tok = NULL;
    if (!tok_path || elm_tokenizer_load(tok_path, &tok, err, sizeof err) != ELM_OK) {
        fprintf(stderr, "remote-drive: --tokenizer: %s\n", tok_path ? err : "missing");
        return 2;
    }
    w = elm_worker_new(NULL, err, sizeof err);
    if (!w)
        return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct seq seqs[MAX_SLOTS] = {{0}};
    int cancel_after = -1, sh_k = -1;
    char *sh_after = NULL;
    char *stop_string = NULL;
    int stop_id = -1;
    char line[8192];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        char cmd[32];
        int off = 0;
        if (sscanf(line, "%31s %n", cmd, &off) != 1 || cmd[0] == '#')
            continue;
        const char *rest = line + off;
        struct elm_event done;
        if (strcmp(cmd, "load") == 0) {
            struct elm_request rq = elm_request_default(ELM_REQ_LOAD_MODEL);
            rq.path = (char *)rest;
            rq.tokenizer = tok;
            rq.api_key = (char *)api_key;
            rq.timeout_s = timeout_s;
            rq.n_threads = 1;
            uint64_t id = elm_worker_post(w, &rq);
            if (!wait_done(id, &done, NULL, NULL, -1, -1, NULL, NULL)) {
                printf("error: no answer\n");
                continue;
            }
            if (done.type == ELM_EV_MODEL_READY)
                printf("ready n_ctx=%d slots=%d snapshots=%d\n", done.n_ctx,
                       done.info && done.info->remote ? done.info->remote_slots : 0,
                       done.info && done.info->remote_snapshots);
            else
                printf("error: %s\n", done.text ? done.text : "?");
            elm_event_fini(&done);
        } else if (strcmp(cmd, "turn") == 0) {
            int slot, n;
            int o2 = 0;
            if (sscanf(rest, "%d %d %n", &slot, &n, &o2) < 2 || slot < 0 || slot >= MAX_SLOTS)
                return 2;
            const char *text = rest + o2;
            struct seq *s = &seqs[slot];
            int32_t *ids = NULL;
            size_t n_ids = 0;
            if (s->n == 0) {
                int32_t bos = elm_tokenizer_bos(tok);
                seq_add(s, &bos, 1);
            }
            if (elm_tokenize(tok, text, strlen(text), false, &ids, &n_ids) != ELM_OK)
                return 2;
            seq_add(s, ids, (int)n_ids);
            free(ids);
            struct elm_request rq = elm_request_default(ELM_REQ_GENERATE);
            rq.slot = slot;
            rq.tokens = s->v;
            rq.n_tokens = s->n;
            rq.flags = ELM_GEN_SYNC;
            rq.max_tokens = n;
            rq.sampler.temperature = 0;
            rq.sampler.repeat_penalty = 1;
            if (stop_string) {
                rq.stop_strings = &stop_string;
                rq.n_stop_strings = 1;
            }
            if (stop_id >= 0) {
                rq.stop_ids[0] = stop_id;
                rq.n_stop_ids = 1;
            }
            double t0 = now_sec(), tc = 0;
            uint64_t id = elm_worker_post(w, &rq);
            struct seq got = {0};
            char *reply = NULL;
            if (!wait_done(id, &done, &got, &reply, cancel_after, sh_k, sh_after, &tc)) {
                printf("error: no DONE\n");
                continue;
            }
            printf(
                "done %s reused=%d computed=%d generated=%d past=%d ids=", reason_name(done.reason),
                done.n_reused, done.n_prefilled, done.n_generated, done.n_past);
            for (int i = 0; i < got.n; i++)
                printf("%s%d", i ? "," : "", (int)got.v[i]);
            if (cancel_after >= 0 && tc > 0)
                printf(" cancel_ms=%.0f", (now_sec() - tc) * 1000);
            printf(" ms=%.0f\n", (now_sec() - t0) * 1000);
            if (done.reason == ELM_DONE_ERROR)
                printf("error: %s\n", done.text ? done.text : "?");
            printf("text %s\n", reply ? reply : "");
            seq_add(s, got.v, got.n);
            free(got.v);
            free(reply);
            elm_event_fini(&done);
            cancel_after = -1;
            sh_k = -1;
            free(stop_string);
            stop_string = NULL;
            stop_id = -1;
        } else if (strcmp(cmd, "stop-string") == 0) {
            free(stop_string);
            stop_string = strdup(rest);
        } else if (strcmp(cmd, "stop-id") == 0) {
            stop_id = atoi(rest);
        } else if (strcmp(cmd, "cancel-after") == 0) {
            cancel_after = atoi(rest);
        } else if (strcmp(cmd, "sh-after") == 0) {
            int o2 = 0;
            if (sscanf(rest, "%d %n", &sh_k, &o2) < 1)
                return 2;
            free(sh_after);
            sh_after = strdup(rest + o2);
            cancel_after = -1;
            /* wait_done runs it once the reply has sh_k ids */
        } else if (strcmp(cmd, "sh") == 0) {
            if (system(rest) != 0)
                printf("# sh failed: %s\n", rest);
        } else if (strcmp(cmd, "save") == 0 || strcmp(cmd, "restore") == 0) {
            int slot, o2 = 0;
            if (sscanf(rest, "%d %n", &slot, &o2) < 1)
                return 2;
            struct elm_request rq =
                elm_request_default(cmd[0] == 's' ? ELM_REQ_SAVE_STATE : ELM_REQ_LOAD_STATE);
            rq.slot = slot;
            rq.path = (char *)rest + o2;
            uint64_t id = elm_worker_post(w, &rq);
            if (!wait_done(id, &done, NULL, NULL, -1, -1, NULL, NULL)) {
                printf("error: no answer\n");
                continue;
            }
            if (done.reason == ELM_DONE_ERROR)
                printf("error: %s\n", done.text ? done.text : "?");
            else
                printf("done %s past=%d\n", reason_name(done.reason), done.n_past);
            elm_event_fini(&done);
        } else if (strcmp(cmd, "forget") == 0) {
            int slot = atoi(rest);
            struct elm_request rq = elm_request_default(ELM_REQ_FREE_CTX);
            rq.slot = slot;
            uint64_t id = elm_worker_post(w, &rq);
            if (wait_done(id, &done, NULL, NULL, -1, -1, NULL, NULL))
                elm_event_fini(&done);
            if (slot >= 0 && slot < MAX_SLOTS)
                seqs[slot].n = 0;
            printf("forgot %d\n", slot);
        } else {
            fprintf(stderr, "remote-drive: unknown command %s\n", cmd);
            return 2;
        }
    }
    elm_worker_free(w);
    elm_tokenizer_free(tok);
    for (int i = 0; i < MAX_SLOTS; i++)
        free(seqs[i].v);
    free(sh_after);
    free(stop_string);
    return 0;
}
