/* hub_api.h: the Hugging Face Hub's HTTP API as elmchat pull uses it
 * (docs/DESIGN.md §7, "The Hub"): the endpoint and token from the
 * environment, a revision's commit and its files with sizes and hashes.
 * Main thread (or one thread at a time). */
#ifndef ELMCHAT_SRC_HUB_API_H
#define ELMCHAT_SRC_HUB_API_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

struct hub_file {
    char *path;      /* in the repository, '/'-separated */
    long long size;  /* bytes */
    char oid[48];    /* the git blob id (sha1 hex) */
    char sha256[72]; /* an LFS file's sha256 (hex), "" for a plain one */
};

struct hub_listing {
    char commit[48]; /* the revision's commit id */
    struct hub_file *files;
    size_t n;
};

enum hub_status {
    HUB_OK = 0,
    HUB_NOT_FOUND,    /* 404: no such repository, revision or file */
    HUB_UNAUTHORIZED, /* 401: private or gated without a (good) token */
    HUB_FORBIDDEN,    /* 403: gated, the licence not accepted */
    HUB_UNAVAILABLE,  /* network errors and 5xx/429 after the retries */
    HUB_BAD_ANSWER,   /* an answer elmchat cannot read */
    HUB_OFFLINE,      /* HF_HUB_OFFLINE is set */
    HUB_CANCELLED,
};

/* $HF_ENDPOINT (a mirror) without a trailing '/', else https://huggingface.co
 * (owned). */
char *hub_endpoint(void);
/* $HF_TOKEN, else the token huggingface-cli login stores ($HF_TOKEN_PATH,
 * else $HF_HOME/token, else ~/.cache/huggingface/token); owned, NULL for
 * none. */
char *hub_token(void);
/* HF_HUB_OFFLINE set to 1/ON/YES/TRUE. */
bool hub_offline(void);
/* The resolve URL of a file at a commit (owned); the path is escaped. */
char *hub_file_url(const char *endpoint, const char *id, const char *commit, const char *path);
/* How a caller follows and stops the Hub's answers: cancel non-zero ends
 * any wait within 50 ms (HUB_CANCELLED); notice (may be NULL) hears each
 * retry in words, as it starts its wait. */
struct hub_wait {
    const volatile sig_atomic_t *cancel;
    void (*notice)(void *ctx, const char *message);
    void *ctx;
};

/* The commit of revision and its files (recursive).  err says what went
 * wrong in words for the user, naming the repository.  w may be NULL. */
enum hub_status hub_list(const char *id, const char *revision, const char *token,
                         const struct hub_wait *w, struct hub_listing *out, char *err,
                         size_t err_size);
void hub_listing_fini(struct hub_listing *l);
/* One page of the /tree answer (JSON text) appended to l: what hub_list
 * does with each page, for the fuzz target.  Paths are checked to stay
 * inside the snapshot (no "..", no absolute path, no control character). */
enum hub_status hub_parse_file_list(const char *body, size_t len, const char *id,
                                    struct hub_listing *l, char *err, size_t err_size);
/* A listing longer than this is refused (the Hub's largest model repos
 * hold a few thousand files). */
#define HUB_MAX_FILES 100000
/* Fill err for a response that is not a success (status, the Hub's
 * X-Error-Message), saying what to do about it. */
enum hub_status hub_status_of(long http_status, const char *id, const char *what, bool have_token,
                              const char *hub_code, const char *hub_message, char *err,
                              size_t err_size);
/* The wait before retry number attempt (1, 2, ...), in milliseconds:
 * doubling from $ELMCHAT_PULL_RETRY_MS (default 1000), at most 30 s. */
long hub_retry_delay_ms(int attempt);
/* Wait ms milliseconds, or less when *cancel becomes non-zero (cancel may
 * be NULL): false when cancelled. */
bool hub_wait_ms(long ms, const volatile sig_atomic_t *cancel);
/* Retries of a transient failure before giving up. */
#define HUB_RETRIES 5
/* Retries when the Hub's name does not resolve or its host refuses the
 * connection: one, soon; offline, more only keeps the user waiting. */
#define HUB_UNREACHABLE_RETRIES 1
#define HUB_UNREACHABLE_DELAY_MS 300
/* What to say when the Hub cannot be reached at all (the name does not
 * resolve, the connection is refused): the endpoint, libcurl's words and
 * what to do (offline: HF_HUB_OFFLINE=1, or pull later).  Into err. */
void hub_unreachable_text(const char *id, const char *why, char *err, size_t err_size);
/* a + b, or LLONG_MAX when that would overflow (sizes from a listing are
 * not trusted: two 2^62-byte files must not sum to a negative need). */
long long hub_size_add(long long a, long long b);

#endif
