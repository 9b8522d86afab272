/* llama_server.c: llama-server's native endpoints (llama_server.h): the
 * connect checks, the /completion body, the stream's events, the slot
 * actions.  Written from its examples/server/README.md and server.cpp at
 * llama.cpp c392e509 (build 4748). */
#include "config.h"

#include "engine/remote/llama_server.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/error.h"
#include "engine/formats/jsonfile.h"

/* Text whose tokens show a vocabulary apart: words with and without the
 * leading space, digits, punctuation, accents (byte pieces or merges), CJK
 * (byte fallback), a newline and indentation. */
static const char PROBE[] = "Hello world, this is elmchat: naïve café, 1234 ünïcödé 日本語\n"
                            "    def f(x): return x**2  # ok?";

static elm_status get_json(struct http_client *h, const char *method, const char *path,
                           const char *body, http_abort_fn should_abort, void *user,
                           json_object **out, char *err, size_t err_size)
{
    struct http_call call = {method, path, body, NULL, NULL, should_abort, user};
    long status;
    char *reply = NULL;
    elm_status st = http_request(h, &call, &status, &reply, err, err_size);
    if (st != ELM_OK)
        return st;
    if (status < 200 || status > 299) {
        lsrv_status_error(h, path, status, reply, err, err_size);
        free(reply);
        return ELM_E_IO;
    }
    char name[160];
    snprintf(name, sizeof name, "%s%s", http_client_url(h), path);
    st = elm_json_parse(reply, strlen(reply), name, out, err, err_size);
    free(reply);
    if (st == ELM_OK && !json_object_is_type(*out, json_type_object)) {
        json_object_put(*out);
        *out = NULL;
        st = elm_set_error(err, err_size, ELM_E_FORMAT, "%s: not a JSON object", name);
    }
    return st;
}

/* obj.a.b... as an int; false when absent or not a number. */
static bool get_int(json_object *obj, const char *const *keys, int n, int *out)
{
    for (int i = 0; i < n; i++) {
        if (!obj || !json_object_is_type(obj, json_type_object) ||
            !json_object_object_get_ex(obj, keys[i], &obj))
            return false;
    }
    if (!json_object_is_type(obj, json_type_int) && !json_object_is_type(obj, json_type_double))
        return false;
    *out = json_object_get_int(obj);
    return true;
}

static const char *get_str(json_object *obj, const char *key)
{
    json_object *v;
    if (!obj || !json_object_object_get_ex(obj, key, &v) ||
        !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

static double get_double(json_object *obj, const char *key)
{
    json_object *v;
    if (!obj || !json_object_object_get_ex(obj, key, &v))
        return 0;
    return json_object_get_double(v);
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

void lsrv_status_error(const struct http_client *h, const char *what, long status, const char *body,
                       char *err, size_t err_size)
{
    const char *why = status == 401   ? "the server wants an API key (--api-key or "
                                        "ELMCHAT_API_KEY), or not this one"
                      : status == 503 ? "the server is busy (loading its model, or no free slot)"
                      : status == 404 ? "no such endpoint (is this a llama-server?)"
                      : status == 501 ? "not supported by this server"
                      : status >= 500 ? "server error"
                                      : "refused";
    /* The server's message: {"error": {"message": ...}} */
    char msg[200] = "";
    json_object *o = body && *body ? json_tokener_parse(body) : NULL;
    json_object *e;
    if (o && json_object_object_get_ex(o, "error", &e)) {
        const char *m = get_str(e, "message");
        if (m)
            snprintf(msg, sizeof msg, ": %s", m);
    }
    json_object_put(o);
    snprintf(err, err_size, "%s%s: HTTP %ld, %s%s", http_client_url(h), what, status, why, msg);
}

elm_status lsrv_connect(struct http_client *h, const elm_tokenizer *tok, http_abort_fn should_abort,
                        void *user, struct lsrv_info *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    const char *url = http_client_url(h);
    json_object *props = NULL, *models = NULL, *toks = NULL;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    elm_status st = get_json(h, "GET", "/health", NULL, should_abort, user, &props, err, err_size);
    json_object_put(props);
    props = NULL;
    if (st != ELM_OK)
        goto done;
    st = get_json(h, "GET", "/props", NULL, should_abort, user, &props, err, err_size);
    if (st != ELM_OK)
        goto done;
    static const char *const k_slots[] = {"total_slots"};
    static const char *const k_ctx[] = {"default_generation_settings", "n_ctx"};
    if (!get_int(props, k_slots, 1, &out->n_slots) || !get_int(props, k_ctx, 2, &out->n_ctx) ||
        out->n_slots < 1 || out->n_ctx < 1) {
        st = elm_set_error(err, err_size, ELM_E_FORMAT,
                           "%s/props: no total_slots or n_ctx (is this a llama-server?)", url);
        goto done;
    }
    const char *path = get_str(props, "model_path");
    const char *base = path ? strrchr(path, '/') : NULL;
    snprintf(out->model, sizeof out->model, "%s", base ? base + 1 : path ? path : "?");

    st = get_json(h, "GET", "/v1/models", NULL, should_abort, user, &models, err, err_size);
    if (st != ELM_OK)
        goto done;
    json_object *data, *first, *meta;
    if (!json_object_object_get_ex(models, "data", &data) ||
        !json_object_is_type(data, json_type_array) || json_object_array_length(data) < 1 ||
        !(first = json_object_array_get_idx(data, 0)) ||
        !json_object_object_get_ex(first, "meta", &meta) ||
        !get_int(meta, (const char *const[]){"n_vocab"}, 1, &out->n_vocab)) {
        st = elm_set_error(err, err_size, ELM_E_FORMAT, "%s/v1/models: no meta.n_vocab", url);
        goto done;
    }
    int n_vocab = elm_tokenizer_n_vocab(tok);
    if (out->n_vocab != n_vocab) {
        st = elm_set_error(err, err_size, ELM_E_MISMATCH,
                           "%s serves %s with a vocabulary of %d tokens, elmchat's tokenizer has "
                           "%d: not the same tokenizer (refused)",
                           url, out->model, out->n_vocab, n_vocab);
        goto done;
    }
    uint64_t fp = 0xcbf29ce484222325ULL;
    fp = fnv1a(fp, url, strlen(url));
    fp = fnv1a(fp, out->model, strlen(out->model));
    fp = fnv1a(fp, &out->n_vocab, sizeof out->n_vocab);
    const char *sz = json_object_to_json_string_ext(meta, JSON_C_TO_STRING_PLAIN);
    fp = fnv1a(fp, sz, strlen(sz));
    out->fingerprint = fp;

    /* The same ids for the probe text. */
    json_object *req = json_object_new_object();
    json_object_object_add(req, "content", json_object_new_string(PROBE));
    json_object_object_add(req, "add_special", json_object_new_boolean(0));
    char *body = strdup(json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN));
    json_object_put(req);
    if (!body) {
        st = elm_set_error(err, err_size, ELM_E_NOMEM, "out of memory");
        goto done;
    }
    st = get_json(h, "POST", "/tokenize", body, should_abort, user, &toks, err, err_size);
    free(body);
    if (st != ELM_OK)
        goto done;
    st = elm_tokenize(tok, PROBE, strlen(PROBE), false, &ids, &n_ids);
    if (st != ELM_OK) {
        elm_set_error(err, err_size, st, "cannot tokenize the probe text");
        goto done;
    }
    json_object *arr;
    if (!json_object_object_get_ex(toks, "tokens", &arr) ||
        !json_object_is_type(arr, json_type_array)) {
        st = elm_set_error(err, err_size, ELM_E_FORMAT, "%s/tokenize: no tokens", url);
        goto done;
    }
    size_t n_srv = json_object_array_length(arr);
    size_t at = 0;
    while (at < n_srv && at < n_ids &&
           json_object_get_int(json_object_array_get_idx(arr, at)) == ids[at])
        at++;
    if (at != n_srv || at != n_ids) {
        st = elm_set_error(err, err_size, ELM_E_MISMATCH,
                           "%s tokenizes differently from elmchat (%zu ids against %zu, apart "
                           "from id %zu): another vocabulary, refused (--tokenizer names the "
                           "model's own)",
                           url, n_srv, n_ids, at);
        goto done;
    }

    /* --slot-save-path: without it every slot action is 501; with it an
     * unknown action is 400 (nothing is touched either way). */
    struct http_call call = {
        "POST", "/slots/0?action=elmchat-probe", "{}", NULL, NULL, should_abort, user};
    long status;
    char *reply = NULL;
    st = http_request(h, &call, &status, &reply, err, err_size);
    free(reply);
    if (st != ELM_OK)
        goto done;
    out->snapshots = status == 400;
done:
    free(ids);
    json_object_put(props);
    json_object_put(models);
    json_object_put(toks);
    return st;
}

char *lsrv_completion_body(const struct lsrv_generate *g)
{
    const struct elm_sampler_params *s = &g->sampler;
    json_object *o = json_object_new_object();
    json_object *prompt = json_object_new_array_ext(g->n_prompt);
    for (int i = 0; i < g->n_prompt; i++)
        json_object_array_add(prompt, json_object_new_int(g->prompt[i]));
    json_object_object_add(o, "prompt", prompt);
    json_object_object_add(o, "id_slot", json_object_new_int(g->id_slot));
    json_object_object_add(o, "cache_prompt", json_object_new_boolean(1));
    json_object_object_add(o, "stream", json_object_new_boolean(1));
    json_object_object_add(o, "return_tokens", json_object_new_boolean(1));
    json_object_object_add(o, "n_predict", json_object_new_int(g->n_predict));
    /* elmchat's sampler order (repetition penalty, top-k, top-p, min-p,
     * temperature) and nothing else: no DRY, typical-p, XTC or mirostat. */
    json_object *chain = json_object_new_array();
    static const char *const order[] = {"penalties", "top_k", "top_p", "min_p", "temperature"};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        json_object_array_add(chain, json_object_new_string(order[i]));
    json_object_object_add(o, "samplers", chain);
    json_object_object_add(o, "temperature", json_object_new_double(s->temperature));
    json_object_object_add(o, "top_k", json_object_new_int(s->top_k > 0 ? s->top_k : 0));
    json_object_object_add(o, "top_p", json_object_new_double(s->top_p < 1 ? s->top_p : 1.0));
    json_object_object_add(o, "min_p", json_object_new_double(s->min_p > 0 ? s->min_p : 0.0));
    json_object_object_add(o, "repeat_penalty", json_object_new_double(s->repeat_penalty));
    /* ours: < 0 the whole history; llama.cpp's -1 is the whole context */
    json_object_object_add(o, "repeat_last_n",
                           json_object_new_int(s->repeat_last_n < 0 ? -1 : s->repeat_last_n));
    json_object_object_add(o, "frequency_penalty", json_object_new_double(0));
    json_object_object_add(o, "presence_penalty", json_object_new_double(0));
    json_object_object_add(o, "typical_p", json_object_new_double(1));
    json_object_object_add(o, "dry_multiplier", json_object_new_double(0));
    json_object_object_add(o, "xtc_probability", json_object_new_double(0));
    json_object_object_add(o, "mirostat", json_object_new_int(0));
    /* llama.cpp's seed is 32 bits (0xFFFFFFFF: random) */
    json_object_object_add(o, "seed", json_object_new_int64((int64_t)(s->seed % 0xFFFFFFFFu)));
    json_object_object_add(o, "n_probs", json_object_new_int(0));
    /* our own GBNF (a schema converted here, not the server's json_schema):
     * the same subset, the same errors and the same replies' shape on both
     * engines */
    if (g->grammar)
        json_object_object_add(o, "grammar", json_object_new_string(g->grammar));
    char *body = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    return body;
}

struct lsrv_parser {
    json_tokener *tk;
    json_object *last; /* the event *out points into */
};

struct lsrv_parser *lsrv_parser_new(void)
{
    struct lsrv_parser *p = calloc(1, sizeof *p);
    if (p && !(p->tk = json_tokener_new())) {
        free(p);
        p = NULL;
    }
    return p;
}

void lsrv_parser_free(struct lsrv_parser *p)
{
    if (!p)
        return;
    json_object_put(p->last);
    json_tokener_free(p->tk);
    free(p);
}

int lsrv_parse_line(struct lsrv_parser *p, const char *line, size_t len, struct lsrv_chunk *out,
                    char *err, size_t err_size)
{
    json_object_put(p->last);
    p->last = NULL;
    if (len == 0 || line[0] == ':')
        return 0;
    bool is_error = false;
    if (len >= 6 && memcmp(line, "data: ", 6) == 0) {
        line += 6;
        len -= 6;
    } else if (len >= 7 && memcmp(line, "error: ", 7) == 0) {
        line += 7;
        len -= 7;
        is_error = true;
    } else {
        snprintf(err, err_size, "malformed stream line from the server: %.60s", line);
        return -1;
    }
    json_tokener_reset(p->tk);
    json_object *o = json_tokener_parse_ex(p->tk, line, (int)len);
    if (!o || json_tokener_get_error(p->tk) != json_tokener_success ||
        json_tokener_get_parse_end(p->tk) != len || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        snprintf(err, err_size, "malformed JSON from the server: %.60s", line);
        return -1;
    }
    p->last = o;
    json_object *e;
    if (is_error || json_object_object_get_ex(o, "error", &e)) {
        if (!json_object_object_get_ex(o, "error", &e))
            e = o;
        const char *m = get_str(e, "message");
        snprintf(err, err_size, "the server failed: %s", m ? m : "(no message)");
        return -2;
    }
    memset(out, 0, sizeof *out);
    out->id = -1;
    json_object *v;
    if (json_object_object_get_ex(o, "tokens", &v) && json_object_is_type(v, json_type_array) &&
        json_object_array_length(v) > 0)
        out->id = json_object_get_int(json_object_array_get_idx(v, 0));
    out->content = get_str(o, "content");
    if (!out->content)
        out->content = "";
    get_int(o, (const char *const[]){"tokens_predicted"}, 1, &out->n_decoded);
    out->final = json_object_object_get_ex(o, "stop", &v) && json_object_get_boolean(v);
    if (out->final) {
        out->stop_type = get_str(o, "stop_type");
        if (!out->stop_type)
            out->stop_type = "none";
        get_int(o, (const char *const[]){"tokens_evaluated"}, 1, &out->n_prompt);
        get_int(o, (const char *const[]){"tokens_cached"}, 1, &out->n_cached);
        json_object *t;
        if (json_object_object_get_ex(o, "timings", &t)) {
            get_int(t, (const char *const[]){"prompt_n"}, 1, &out->prompt_n);
            out->prompt_tps = get_double(t, "prompt_per_second");
            out->predicted_tps = get_double(t, "predicted_per_second");
        }
    }
    return 1;
}

elm_status lsrv_slot_action(struct http_client *h, int id_slot, const char *action,
                            const char *filename, http_abort_fn should_abort, void *user,
                            int *n_tokens, char *err, size_t err_size)
{
    char path[96];
    snprintf(path, sizeof path, "/slots/%d?action=%s", id_slot, action);
    json_object *req = json_object_new_object();
    json_object_object_add(req, "filename", json_object_new_string(filename));
    char *body = strdup(json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN));
    json_object_put(req);
    if (!body)
        return elm_set_error(err, err_size, ELM_E_NOMEM, "out of memory");
    json_object *o = NULL;
    elm_status st = get_json(h, "POST", path, body, should_abort, user, &o, err, err_size);
    free(body);
    *n_tokens = 0;
    if (st == ELM_OK) {
        if (!get_int(o, (const char *const[]){"n_saved"}, 1, n_tokens))
            get_int(o, (const char *const[]){"n_restored"}, 1, n_tokens);
    }
    json_object_put(o);
    return st;
}
