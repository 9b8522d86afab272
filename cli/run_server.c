/* run_server.c: `elmchat run -m server:URL` (run_server.h). */
#include "config.h"

#include "cli/run_server.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/grammar_option.h"
#include "engine/elm_worker.h"
#include "src/base/diag.h"
#include "src/base/strbuf.h"
#include "src/base/xalloc.h"

/* A failure in the worker's words, with the server's URL unless they name it. */
static void say_failed(const char *url, const char *text)
{
    if (strstr(text, url + strlen("server:")))
        cli_error("%s", text);
    else
        cli_error("%s: %s", url, text);
}

/* The final event of request id; the TOKEN text before it goes to stdout
 * (and into text when not NULL). */
static void wait_final(elm_worker *w, uint64_t id, struct elm_event *done, struct sbuf *text)
{
    if (id == 0) /* not posted: out of memory */
        x_fatal("out of memory");
    for (;;) {
        struct elm_event ev;
        while (!elm_worker_next_event(w, &ev)) {
            /* the worker's own timeouts bound the wait (timeout_s) */
            struct pollfd p = {elm_worker_wake_fd(w), POLLIN, 0};
            poll(&p, 1, -1);
            elm_worker_drain_wake(w);
        }
        if (ev.request_id == id && ev.type == ELM_EV_TOKEN && ev.text && *ev.text) {
            fputs(ev.text, stdout);
            fflush(stdout);
            if (text)
                sbuf_add(text, ev.text, strlen(ev.text));
        }
        if (ev.request_id == id && (ev.type == ELM_EV_DONE || ev.type == ELM_EV_MODEL_READY)) {
            *done = ev;
            return;
        }
        elm_event_fini(&ev);
    }
}

int run_on_server(const char *url, const elm_tokenizer *tok, const struct template *tpl,
                  const struct idvec *prompt, const struct elm_sampler_params *sp, int max_tokens,
                  int n_ctx, const char *api_key, const struct run_grammar *g)
{
    char err[ELM_ERR_MAX];
    elm_worker *w = elm_worker_new(NULL, err, sizeof err);
    if (!w) {
        cli_error("%s", err);
        return EXIT_RUNTIME;
    }
    int rc = EXIT_RUNTIME;
    struct elm_request load = elm_request_default(ELM_REQ_LOAD_MODEL);
    load.path = (char *)url;
    load.tokenizer = (elm_tokenizer *)tok; /* post takes a reference */
    load.api_key = (char *)api_key;
    load.n_ctx = n_ctx;
    struct elm_event done;
    wait_final(w, elm_worker_post(w, &load), &done, NULL);
    if (done.type != ELM_EV_MODEL_READY) {
        say_failed(url, done.text ? done.text : "the connection failed");
        elm_event_fini(&done);
        goto out;
    }
    elm_event_fini(&done);

    struct elm_request gen = elm_request_default(ELM_REQ_GENERATE);
    gen.slot = 0;
    gen.tokens = (int32_t *)prompt->v;
    gen.n_tokens = (int)prompt->n;
    gen.flags = ELM_GEN_SYNC;
    gen.max_tokens = max_tokens;
    gen.sampler = *sp;
    gen.stop_strings = tpl->stop;
    gen.n_stop_strings = (int)tpl->n_stop;
    gen.grammar = g && g->grammar ? (elm_grammar *)g->grammar : NULL; /* post shares it */
    struct sbuf text = {0};
    sbuf_add(&text, "", 0);
    wait_final(w, elm_worker_post(w, &gen), &done, &text);
    fputc('\n', stdout);
    fflush(stdout);
    if (done.reason == ELM_DONE_ERROR)
        say_failed(url, done.text ? done.text : elm_status_str(done.status));
    else if (done.reason == ELM_DONE_CONTEXT_FULL)
        cli_error("%s: the reply filled the server's context", url);
    else if (gen.grammar &&
             elm_grammar_fit(gen.grammar, text.data, text.len) != ELM_GRAMMAR_MATCH)
        grammar_option_say_cut(g->what, done.reason == ELM_DONE_LENGTH, max_tokens);
    else
        rc = EXIT_OK;
    elm_event_fini(&done);
    sbuf_fini(&text);
out:
    elm_worker_free(w);
    return rc;
}
