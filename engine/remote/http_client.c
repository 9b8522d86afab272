/* http_client.c: libcurl behind http_client.h.  The easy handle lives in a
 * multi handle of its own so that the worker can poll its cancel flag every
 * 20 ms while the server computes (an easy handle's progress callback may
 * wait a second), and it is reused so the connection stays open between the
 * turns of a chat. */
#include "config.h"

#include "engine/remote/http_client.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/error.h"

#define POLL_MS 20
#define CONNECT_TIMEOUT_S 5
/* A body kept whole (JSON answers, error pages) is not allowed past this. */
#define MAX_BODY (16u << 20)

struct http_client {
    char *base; /* without the trailing '/' */
    char *auth; /* "Authorization: Bearer KEY", NULL: none (wiped on free) */
    int timeout_s;
    CURLM *multi;
    CURL *easy;
};

/* curl_global_init is not thread-safe in every libcurl: once per process. */
static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_OK;

static void global_init(void)
{
    global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct http_client *http_client_new(const char *base_url, const char *api_key, int timeout_s)
{
    pthread_once(&global_once, global_init);
    if (global_rc != CURLE_OK)
        return NULL;
    struct http_client *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->base = strdup(base_url);
    if (!h->base)
        goto fail;
    size_t n = strlen(h->base);
    while (n > 0 && h->base[n - 1] == '/')
        h->base[--n] = '\0';
    if (api_key && *api_key) {
        size_t len = strlen(api_key) + 32;
        h->auth = malloc(len);
        if (!h->auth)
            goto fail;
        snprintf(h->auth, len, "Authorization: Bearer %s", api_key);
    }
    h->timeout_s = timeout_s > 0 ? timeout_s : 120;
    h->multi = curl_multi_init();
    h->easy = curl_easy_init();
    if (!h->multi || !h->easy)
        goto fail;
    return h;
fail:
    http_client_free(h);
    return NULL;
}

void http_client_free(struct http_client *h)
{
    if (!h)
        return;
    if (h->easy)
        curl_easy_cleanup(h->easy);
    if (h->multi)
        curl_multi_cleanup(h->multi);
    if (h->auth) {
        /* volatile: the wipe must not be optimised away */
        for (volatile char *p = h->auth; *p; p++)
            *p = '\0';
        free(h->auth);
    }
    free(h->base);
    free(h);
}

const char *http_client_url(const struct http_client *h)
{
    return h->base;
}

/* What the write callback collects. */
struct transfer {
    struct http_client *h;
    const struct http_call *call;
    char *buf; /* the whole body, or the partial line of a stream */
    size_t len, cap;
    bool streaming; /* a 2xx answer with on_line: lines go out */
    bool checked;   /* the status was looked at */
    bool stopped;   /* on_line said stop */
    bool too_big;
};

static bool buf_add(struct transfer *t, const char *p, size_t n)
{
    if (t->len + n + 1 > MAX_BODY) {
        t->too_big = true;
        return false;
    }
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *nb = realloc(t->buf, cap);
        if (!nb)
            return false;
        t->buf = nb;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, p, n);
    t->len += n;
    t->buf[t->len] = '\0';
    return true;
}

/* Hand the complete lines of the buffer to on_line, keep the rest. */
static bool flush_lines(struct transfer *t)
{
    size_t start = 0;
    for (size_t i = 0; i < t->len; i++) {
        if (t->buf[i] != '\n')
            continue;
        size_t end = i > start && t->buf[i - 1] == '\r' ? i - 1 : i;
        t->buf[end] = '\0';
        if (!t->call->on_line(t->call->user, t->buf + start, end - start)) {
            t->stopped = true;
            return false;
        }
        start = i + 1;
    }
    memmove(t->buf, t->buf + start, t->len - start);
    t->len -= start;
    if (t->buf)
        t->buf[t->len] = '\0';
    return true;
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *user)
{
    struct transfer *t = user;
    size_t n = size * nmemb;
    if (!t->checked) {
        long status = 0;
        curl_easy_getinfo(t->h->easy, CURLINFO_RESPONSE_CODE, &status);
        t->streaming = t->call->on_line && status >= 200 && status < 300;
        t->checked = true;
    }
    if (!buf_add(t, p, n))
        return 0; /* curl fails the transfer: CURLE_WRITE_ERROR */
    if (t->streaming && !flush_lines(t))
        return 0;
    return n;
}

elm_status http_request(struct http_client *h, const struct http_call *call, long *status,
                        char **reply, char *err, size_t err_size)
{
    *status = 0;
    if (reply)
        *reply = NULL;
    size_t ulen = strlen(h->base) + strlen(call->path) + 1;
    char *url = malloc(ulen);
    if (!url)
        return elm_set_error(err, err_size, ELM_E_NOMEM, "out of memory");
    snprintf(url, ulen, "%s%s", h->base, call->path);

    struct transfer t = {h, call, NULL, 0, 0, false, false, false, false};
    struct curl_slist *hdrs = NULL;
    struct curl_slist *more;
    hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
    if (hdrs && call->on_line && (more = curl_slist_append(hdrs, "Accept: text/event-stream")))
        hdrs = more;
    if (hdrs && h->auth && (more = curl_slist_append(hdrs, h->auth)))
        hdrs = more;
    CURL *e = h->easy;
    curl_easy_reset(e);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L); /* a worker thread: no SIGALRM */
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, (long)CONNECT_TIMEOUT_S);
    /* No byte for timeout_s: the server is gone or stuck (a long prefill
     * sends nothing, so this is generous). */
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)h->timeout_s);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L); /* tokens as they come */
    if (strcmp(call->method, "POST") == 0) {
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, call->body ? call->body : "");
    } else {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    }

    elm_status st = ELM_OK;
    bool aborted = false;
    curl_multi_add_handle(h->multi, e);
    int running = 1;
    while (running) {
        if (curl_multi_perform(h->multi, &running) != CURLM_OK)
            break;
        if (!running)
            break;
        if (call->should_abort && call->should_abort(call->abort_user)) {
            aborted = true;
            break;
        }
        curl_multi_poll(h->multi, NULL, 0, POLL_MS, NULL);
    }
    CURLcode rc = CURLE_OK;
    int left;
    CURLMsg *msg;
    while ((msg = curl_multi_info_read(h->multi, &left)))
        if (msg->msg == CURLMSG_DONE && msg->easy_handle == e)
            rc = msg->data.result;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
    double connected = 0;
    curl_easy_getinfo(e, CURLINFO_CONNECT_TIME, &connected);
    curl_multi_remove_handle(h->multi, e);
    if (aborted) {
        /* curl closes the connection of a transfer removed unfinished: the
         * server sees it at its next write and stops generating */
        st = ELM_E_ABORTED;
    } else if (t.stopped) {
        st = ELM_E_ABORTED;
    } else if (t.too_big) {
        st = elm_set_error(err, err_size, ELM_E_FORMAT, "%s%s: the answer is larger than %u MiB",
                           h->base, call->path, MAX_BODY >> 20);
    } else if (rc != CURLE_OK) {
        if (rc == CURLE_OPERATION_TIMEDOUT)
            st = elm_set_error(err, err_size, ELM_E_IO, "%s: no answer for %d s (timeout)", h->base,
                               connected > 0 ? h->timeout_s : CONNECT_TIMEOUT_S);
        else if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
            st = elm_set_error(err, err_size, ELM_E_IO, "cannot reach %s: %s", h->base,
                               curl_easy_strerror(rc));
        else if (t.checked)
            st = elm_set_error(err, err_size, ELM_E_IO,
                               "%s: the connection broke mid-answer (%s; the server stopped or "
                               "restarted?)",
                               h->base, curl_easy_strerror(rc));
        else
            st = elm_set_error(err, err_size, ELM_E_IO, "%s: %s", h->base, curl_easy_strerror(rc));
    } else if (t.streaming && t.len > 0) {
        /* a last line without its '\n' */
        if (!buf_add(&t, "\n", 1) || !flush_lines(&t))
            st = t.stopped ? ELM_E_ABORTED : ELM_E_NOMEM;
    }
    if (st == ELM_OK && reply && !t.streaming) {
        *reply = t.buf ? t.buf : strdup("");
        t.buf = NULL;
        if (!*reply)
            st = elm_set_error(err, err_size, ELM_E_NOMEM, "out of memory");
    }
    free(t.buf);
    curl_slist_free_all(hdrs);
    free(url);
    return st;
}
