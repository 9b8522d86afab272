/* http_fetch.c: one HTTP request over libcurl (http_fetch.h). */
#include "config.h"

#include "src/models/http_fetch.h"

#include <ctype.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "src/base/strbuf.h"

#define DEFAULT_MAX_BODY (8u << 20)
/* How often the cancel flag is looked at while libcurl waits. */
#define POLL_MS 50

int fetch_global_init(char *err, size_t err_size)
{
    CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
        snprintf(err, err_size, "libcurl does not start: %s", curl_easy_strerror(rc));
        return -1;
    }
    return 0;
}

void fetch_global_cleanup(void)
{
    curl_global_cleanup();
}

void fetch_response_fini(struct fetch_response *rs)
{
    free(rs->body);
    rs->body = NULL;
    rs->body_len = 0;
}

void fetch_etag_value(const char *etag, char *out, size_t out_size)
{
    const char *s = etag;
    if (strncmp(s, "W/", 2) == 0)
        s += 2;
    size_t n = strlen(s);
    if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
        s++;
        n -= 2;
    }
    snprintf(out, out_size, "%.*s", (int)n, s);
}

struct transfer {
    const struct fetch_request *rq;
    struct fetch_response *rs;
    struct sbuf mem;
    bool too_big;
};

static void copy_value(char *dst, size_t size, const char *v, size_t n)
{
    while (n && isspace((unsigned char)v[n - 1]))
        n--;
    if (n >= size)
        n = size - 1;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

/* Link: <URL>; rel="next", possibly among others separated by commas. */
static void parse_link(char *dst, size_t size, const char *v, size_t n)
{
    const char *end = v + n;
    while (v < end) {
        const char *lt = memchr(v, '<', (size_t)(end - v));
        if (!lt)
            return;
        const char *gt = memchr(lt, '>', (size_t)(end - lt));
        if (!gt)
            return;
        const char *comma = memchr(gt, ',', (size_t)(end - gt));
        const char *stop = comma ? comma : end;
        for (const char *p = gt; p + 10 <= stop; p++) {
            if (strncasecmp(p, "rel=\"next\"", 10) == 0) {
                copy_value(dst, size, lt + 1, (size_t)(gt - lt - 1));
                return;
            }
        }
        v = stop + (comma ? 1 : 0);
    }
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ctx)
{
    struct transfer *t = ctx;
    struct fetch_response *rs = t->rs;
    size_t n = size * nmemb;
    if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) {
        /* a new response (after a redirect): its own plain headers */
        rs->etag[0] = rs->location[0] = rs->link_next[0] = '\0';
        rs->content_length = -1;
        rs->range_start = 0;
        const char *sp = memchr(data, ' ', n);
        rs->status = sp ? strtol(sp + 1, NULL, 10) : 0; /* the sink may look */
        return n;
    }
    const char *colon = memchr(data, ':', n);
    if (!colon)
        return n;
    size_t klen = (size_t)(colon - data);
    const char *v = colon + 1;
    while (v < data + n && (*v == ' ' || *v == '\t'))
        v++;
    size_t vlen = (size_t)(data + n - v);
    char num[32];
#define IS(name) (klen == sizeof(name) - 1 && strncasecmp(data, name, klen) == 0)
    if (IS("ETag")) {
        copy_value(rs->etag, sizeof rs->etag, v, vlen);
    } else if (IS("Location")) {
        copy_value(rs->location, sizeof rs->location, v, vlen);
    } else if (IS("Link")) {
        parse_link(rs->link_next, sizeof rs->link_next, v, vlen);
    } else if (IS("X-Repo-Commit")) {
        copy_value(rs->repo_commit, sizeof rs->repo_commit, v, vlen);
    } else if (IS("X-Linked-Etag")) {
        copy_value(rs->linked_etag, sizeof rs->linked_etag, v, vlen);
    } else if (IS("X-Linked-Size")) {
        copy_value(num, sizeof num, v, vlen);
        rs->linked_size = strtoll(num, NULL, 10);
    } else if (IS("Content-Length")) {
        copy_value(num, sizeof num, v, vlen);
        rs->content_length = strtoll(num, NULL, 10);
    } else if (IS("Content-Range")) {
        /* bytes START-END/TOTAL */
        char cr[96];
        copy_value(cr, sizeof cr, v, vlen);
        const char *p = cr;
        if (strncasecmp(p, "bytes ", 6) == 0)
            rs->range_start = strtoll(p + 6, NULL, 10);
    } else if (IS("X-Error-Code")) {
        copy_value(rs->error_code, sizeof rs->error_code, v, vlen);
    } else if (IS("X-Error-Message")) {
        copy_value(rs->error_message, sizeof rs->error_message, v, vlen);
    }
#undef IS
    return n;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx)
{
    struct transfer *t = ctx;
    size_t n = size * nmemb;
    if (t->rq->sink)
        return t->rq->sink(data, n, t->rq->sink_ctx);
    size_t max = t->rq->max_body ? t->rq->max_body : DEFAULT_MAX_BODY;
    if (t->mem.len + n > max) {
        t->too_big = true;
        return 0;
    }
    sbuf_add(&t->mem, data, n);
    return n;
}

static int on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)ultotal;
    (void)ulnow;
    struct transfer *t = ctx;
    if (t->rq->cancel && *t->rq->cancel)
        return 1;
    if (!t->rq->progress)
        return 0;
    return t->rq->progress(t->rq->progress_ctx, (long long)dlnow, (long long)dltotal) ? 0 : 1;
}

static enum fetch_error classify(CURLcode rc, const struct transfer *t)
{
    switch (rc) {
    case CURLE_ABORTED_BY_CALLBACK:
        return FETCH_ERR_CANCELLED;
    case CURLE_WRITE_ERROR:
        return t->too_big ? FETCH_ERR_TOO_BIG : FETCH_ERR_WRITE;
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
        return FETCH_ERR_UNREACHABLE;
    case CURLE_PARTIAL_FILE:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return FETCH_ERR_NETWORK;
    default:
        return FETCH_ERR_OTHER;
    }
}

/* curl_easy_perform, but in a multi handle of its own so that the cancel
 * flag is seen every POLL_MS whatever libcurl waits for (its progress
 * callback may be called only once a second while nothing comes, and not
 * at all during a name lookup). */
static CURLcode perform(CURL *c, const volatile sig_atomic_t *cancel)
{
    if (!cancel)
        return curl_easy_perform(c);
    CURLM *m = curl_multi_init();
    if (!m)
        return CURLE_OUT_OF_MEMORY;
    CURLcode rc = CURLE_OK;
    if (curl_multi_add_handle(m, c) != CURLM_OK) {
        curl_multi_cleanup(m);
        return CURLE_OUT_OF_MEMORY;
    }
    int running = 1;
    bool stopped = false;
    while (running) {
        if (*cancel) {
            stopped = true;
            break;
        }
        if (curl_multi_perform(m, &running) != CURLM_OK) {
            rc = CURLE_RECV_ERROR;
            break;
        }
        if (running && curl_multi_poll(m, NULL, 0, POLL_MS, NULL) != CURLM_OK) {
            rc = CURLE_RECV_ERROR;
            break;
        }
    }
    int left;
    CURLMsg *msg;
    while ((msg = curl_multi_info_read(m, &left)))
        if (msg->msg == CURLMSG_DONE && msg->easy_handle == c)
            rc = msg->data.result;
    curl_multi_remove_handle(m, c);
    curl_multi_cleanup(m);
    return stopped ? CURLE_ABORTED_BY_CALLBACK : rc;
}

bool fetch_perform(const struct fetch_request *rq, struct fetch_response *rs)
{
    memset(rs, 0, sizeof *rs);
    rs->content_length = rs->linked_size = -1;
    CURL *c = curl_easy_init();
    if (!c) {
        rs->error = FETCH_ERR_OTHER;
        snprintf(rs->error_text, sizeof rs->error_text, "libcurl: out of memory");
        return false;
    }
    struct transfer t = {.rq = rq, .rs = rs};
    char curl_err[CURL_ERROR_SIZE] = "";
    char range[48];
    curl_easy_setopt(c, CURLOPT_URL, rq->url);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_err);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "elmchat/" PACKAGE_VERSION);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, rq->follow_redirects ? 1L : 0L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT,
                     rq->connect_timeout_s ? rq->connect_timeout_s : 15L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, rq->stall_timeout_s ? rq->stall_timeout_s : 30L);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    /* the sha256 is of the bytes as stored: no transfer encoding */
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, NULL);
    if (rq->head)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    if (rq->token && *rq->token) {
        /* libcurl sends credentials to the first host only, never to
         * the CDN a redirect leads to */
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
        curl_easy_setopt(c, CURLOPT_XOAUTH2_BEARER, rq->token);
    }
    if (rq->range_from > 0) {
        snprintf(range, sizeof range, "%lld-", rq->range_from);
        curl_easy_setopt(c, CURLOPT_RANGE, range);
    }
    CURLcode rc = perform(c, rq->cancel);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &rs->status);
    curl_easy_cleanup(c);
    if (rc != CURLE_OK) {
        rs->error = classify(rc, &t);
        if (rs->error == FETCH_ERR_TOO_BIG)
            snprintf(rs->error_text, sizeof rs->error_text, "the answer is larger than %zu bytes",
                     rq->max_body ? rq->max_body : (size_t)DEFAULT_MAX_BODY);
        else
            snprintf(rs->error_text, sizeof rs->error_text, "%s",
                     *curl_err ? curl_err : curl_easy_strerror(rc));
        sbuf_fini(&t.mem);
        return false;
    }
    if (!rq->sink) {
        sbuf_add(&t.mem, "", 0);
        rs->body = t.mem.data;
        rs->body_len = t.mem.len;
    }
    return true;
}
