/* http_fetch.h: one HTTP request over libcurl, with what a download client
 * needs: a bearer token sent only to the host it is for, a Range start,
 * the body to a sink or to memory, a progress hook that can cancel, and the
 * response headers the Hugging Face Hub answers with.  Any thread; call
 * fetch_global_init once from the main thread before the first request. */
#ifndef ELMCHAT_SRC_HTTP_FETCH_H
#define ELMCHAT_SRC_HTTP_FETCH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

/* The body goes to the sink when there is one: return n to go on, anything
 * else to stop (a write error: the request fails with FETCH_ERR_WRITE). */
typedef size_t (*fetch_sink_fn)(const void *data, size_t n, void *ctx);
/* now and total are body bytes of this response (total 0 when unknown);
 * return false to cancel (FETCH_ERR_CANCELLED). */
typedef bool (*fetch_progress_fn)(void *ctx, long long now, long long total);

struct fetch_request {
    const char *url;
    bool head;             /* HEAD instead of GET */
    bool follow_redirects; /* the token is not sent to another host */
    const char *token;     /* Authorization: Bearer, NULL for none */
    long long range_from;  /* > 0: ask for bytes from there on */
    fetch_sink_fn sink;
    void *sink_ctx;
    size_t max_body; /* without a sink: the most kept in memory (0: 8 MiB) */
    fetch_progress_fn progress;
    void *progress_ctx;
    long connect_timeout_s; /* 0: 15 s */
    long stall_timeout_s;   /* no byte for this long ends it (0: 30 s) */
    /* non-zero stops the request within 50 ms (FETCH_ERR_CANCELLED), in
     * any phase: the name lookup, the connect, a server that says nothing */
    const volatile sig_atomic_t *cancel;
};

enum fetch_error {
    FETCH_OK = 0,        /* a response came (any status) */
    FETCH_ERR_NETWORK,   /* no response, or it was cut: worth a retry */
    FETCH_ERR_UNREACHABLE, /* the name does not resolve or the host refuses
                            * the connection: offline, or a wrong
                            * endpoint; retrying soon will not help */
    FETCH_ERR_CANCELLED, /* the progress hook said stop */
    FETCH_ERR_WRITE,     /* the sink refused */
    FETCH_ERR_TOO_BIG,   /* a body over max_body */
    FETCH_ERR_OTHER,     /* a bad URL and the like: no retry */
};

struct fetch_response {
    enum fetch_error error;
    char error_text[256]; /* when error != FETCH_OK: libcurl's words */
    long status;          /* set as soon as the headers come (a sink may look) */
    char *body;           /* without a sink: NUL-terminated (owned: fetch_response_fini) */
    size_t body_len;
    long long content_length; /* -1 when not given */
    long long range_start;    /* from Content-Range on a 206, else 0 */
    /* headers (of the last response when redirects were followed, except
     * the X- ones, which only the Hub sends and are kept from any) */
    char etag[160];
    char location[2048];
    char link_next[2048];    /* Link: <URL>; rel="next" (paged listings) */
    char repo_commit[64];    /* X-Repo-Commit */
    char linked_etag[160];   /* X-Linked-Etag (an LFS file's sha256) */
    long long linked_size;   /* X-Linked-Size, -1 when not given */
    char error_code[64];     /* X-Error-Code */
    char error_message[256]; /* X-Error-Message */
};

/* 0, or -1 when libcurl cannot start (say so with the reason in err). */
int fetch_global_init(char *err, size_t err_size);
void fetch_global_cleanup(void);
/* Perform one request; false when no usable response came (rs->error and
 * rs->error_text say why).  A response with any status is true. */
bool fetch_perform(const struct fetch_request *rq, struct fetch_response *rs);
void fetch_response_fini(struct fetch_response *rs);
/* An ETag's value without W/ and the quotes. */
void fetch_etag_value(const char *etag, char *out, size_t out_size);

#endif
