/* hub_api.c: the Hub's listing endpoints (hub_api.h).  Sources: the Hub
 * API documentation (huggingface.co/docs/hub/api: GET
 * /api/models/{repo_id}/revision/{revision}, GET
 * /api/models/{repo_id}/tree/{revision}) and huggingface_hub's
 * file_download.py for the resolve URL and its headers. */
#include "config.h"

#include "src/models/hub_api.h"

#include <ctype.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "src/models/http_fetch.h"
#include "src/models/hub_cache.h"
#include "src/base/strbuf.h"
#include "src/base/xalloc.h"

char *hub_endpoint(void)
{
    const char *v = getenv("HF_ENDPOINT");
    if (!v || !*v)
        v = "https://huggingface.co";
    size_t n = strlen(v);
    while (n > 1 && v[n - 1] == '/')
        n--;
    return x_strndup(v, n);
}

static char *read_token_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char line[512] = "";
    char *tok = NULL;
    if (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (*line)
            tok = x_strdup(line);
    }
    fclose(f);
    return tok;
}

char *hub_token(void)
{
    const char *v = getenv("HF_TOKEN");
    if (v && *v)
        return x_strdup(v);
    v = getenv("HF_TOKEN_PATH");
    if (v && *v)
        return read_token_file(v);
    char *home = hub_home_dir();
    char *path = x_asprintf("%s/token", home);
    free(home);
    char *tok = read_token_file(path);
    free(path);
    return tok;
}

bool hub_offline(void)
{
    const char *v = getenv("HF_HUB_OFFLINE");
    return v && (strcmp(v, "1") == 0 || strcasecmp(v, "on") == 0 || strcasecmp(v, "yes") == 0 ||
                 strcasecmp(v, "true") == 0);
}

static void add_escaped(struct sbuf *b, const char *s, bool keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
            (keep_slash && c == '/')) {
            sbuf_add(b, (const char *)&c, 1);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            sbuf_add(b, e, 3);
        }
    }
}

/* BASE/ID/KIND/REV[/PATH], REV and PATH escaped (owned). */
static char *repo_url(const char *base, const char *id, const char *kind, const char *rev,
                      const char *path)
{
    struct sbuf b = {0};
    sbuf_add(&b, base, strlen(base));
    sbuf_add(&b, "/", 1);
    sbuf_add(&b, id, strlen(id));
    sbuf_add(&b, "/", 1);
    sbuf_add(&b, kind, strlen(kind));
    sbuf_add(&b, "/", 1);
    add_escaped(&b, rev, false);
    if (path) {
        sbuf_add(&b, "/", 1);
        add_escaped(&b, path, true);
    }
    return b.data;
}

char *hub_file_url(const char *endpoint, const char *id, const char *commit, const char *path)
{
    return repo_url(endpoint, id, "resolve", commit, path);
}

long hub_retry_delay_ms(int attempt)
{
    const char *v = getenv("ELMCHAT_PULL_RETRY_MS");
    long base = v && *v ? strtol(v, NULL, 10) : 1000;
    if (base < 0)
        base = 0;
    long d = base;
    for (int i = 1; i < attempt && d < 30000; i++)
        d *= 2;
    return d > 30000 ? 30000 : d;
}

enum hub_status hub_status_of(long http_status, const char *id, const char *what, bool have_token,
                              const char *hub_code, const char *hub_message, char *err,
                              size_t err_size)
{
    char said[300] = "";
    if (hub_message && *hub_message)
        snprintf(said, sizeof said, " (the Hub says: %s)", hub_message);
    if (http_status == 401) {
        if (have_token)
            snprintf(err, err_size,
                     "%s: the Hub refuses the token in HF_TOKEN (401)%s: it may have expired, "
                     "or the repository is private to someone else",
                     id, said);
        else
            snprintf(err, err_size,
                     "%s: the Hub answers 401 (not found, or private)%s: check the name; for a "
                     "private or gated repository set HF_TOKEN to an access token "
                     "(huggingface.co/settings/tokens)",
                     id, said);
        return HUB_UNAUTHORIZED;
    }
    if (http_status == 403) {
        snprintf(err, err_size,
                 "%s: access refused (403)%s: a gated model needs its licence accepted on its "
                 "page on the Hub, with the account of HF_TOKEN",
                 id, said);
        return HUB_FORBIDDEN;
    }
    if (http_status == 404) {
        /* X-Error-Code says which part is missing */
        if (hub_code && strcmp(hub_code, "RepoNotFound") == 0)
            snprintf(err, err_size, "%s: no such repository on the Hub (404)", id);
        else if (hub_code && strcmp(hub_code, "RevisionNotFound") == 0)
            snprintf(err, err_size, "%s: no such revision on the Hub (404)%s", id, said);
        else
            snprintf(err, err_size, "%s: %s not found on the Hub (404)%s", id, what, said);
        return HUB_NOT_FOUND;
    }
    snprintf(err, err_size, "%s: the Hub answers HTTP %ld for %s%s", id, http_status, what, said);
    return http_status >= 500 || http_status == 429 ? HUB_UNAVAILABLE : HUB_BAD_ANSWER;
}

bool hub_wait_ms(long ms, const volatile sig_atomic_t *cancel)
{
    /* in slices, so that a Ctrl-C during a retry's pause ends it soon */
    while (ms > 0) {
        if (cancel && *cancel)
            return false;
        long slice = ms < 50 ? ms : 50;
        struct timespec ts = {0, slice * 1000000L};
        while (nanosleep(&ts, &ts) != 0) {
        }
        ms -= slice;
    }
    return !(cancel && *cancel);
}

void hub_unreachable_text(const char *id, const char *why, char *err, size_t err_size)
{
    char *ep = hub_endpoint();
    snprintf(err, err_size,
             "%s: cannot reach the Hub at %s (%s): offline? Set HF_HUB_OFFLINE=1 to use only "
             "the models already downloaded, or run elmchat pull %s once online",
             id, ep, why, id);
    free(ep);
}

long long hub_size_add(long long a, long long b)
{
    long long s;
    return __builtin_add_overflow(a, b, &s) ? LLONG_MAX : s;
}

static void tell(const struct hub_wait *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tell(const struct hub_wait *w, const char *fmt, ...)
{
    if (!w || !w->notice)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    w->notice(w->ctx, msg);
}

/* GET a JSON answer, retrying what may pass.  The parsed body, or NULL
 * with err set. */
static json_object *get_json(const char *url, const char *id, const char *what, const char *token,
                             const struct hub_wait *w, char *next, size_t next_size,
                             enum hub_status *st, char *err, size_t err_size)
{
    const volatile sig_atomic_t *cancel = w ? w->cancel : NULL;
    for (int attempt = 1;; attempt++) {
        struct fetch_request rq = {.url = url,
                                   .follow_redirects = true,
                                   .token = token,
                                   .max_body = 64u << 20,
                                   .cancel = cancel};
        struct fetch_response rs;
        bool got = fetch_perform(&rq, &rs);
        if (!got && rs.error == FETCH_ERR_CANCELLED) {
            snprintf(err, err_size, "%s: stopped while asking the Hub for %s", id, what);
            *st = HUB_CANCELLED;
            return NULL;
        }
        bool unreachable = !got && rs.error == FETCH_ERR_UNREACHABLE;
        bool transient =
            !got ? rs.error == FETCH_ERR_NETWORK : rs.status >= 500 || rs.status == 429;
        int tries = unreachable ? HUB_UNREACHABLE_RETRIES : HUB_RETRIES;
        if ((transient || unreachable) && attempt <= tries) {
            long wait = unreachable ? HUB_UNREACHABLE_DELAY_MS : hub_retry_delay_ms(attempt);
            tell(w, "%s: %s: retrying in %.1f s (try %d of %d)", id,
                 got ? "the Hub is busy" : rs.error_text, (double)wait / 1000.0, attempt + 1,
                 tries + 1);
            fetch_response_fini(&rs);
            if (!hub_wait_ms(wait, cancel)) {
                snprintf(err, err_size, "%s: stopped while asking the Hub for %s", id, what);
                *st = HUB_CANCELLED;
                return NULL;
            }
            continue;
        }
        if (unreachable) {
            hub_unreachable_text(id, rs.error_text, err, err_size);
            *st = HUB_UNAVAILABLE;
            return NULL;
        }
        if (!got) {
            snprintf(err, err_size, "%s: cannot reach the Hub for %s (%d tries): %s", id, what,
                     attempt, rs.error_text);
            *st = rs.error == FETCH_ERR_NETWORK ? HUB_UNAVAILABLE : HUB_BAD_ANSWER;
            return NULL;
        }
        if (rs.status != 200) {
            *st = hub_status_of(rs.status, id, what, token != NULL, rs.error_code, rs.error_message,
                                err, err_size);
            fetch_response_fini(&rs);
            return NULL;
        }
        if (next)
            snprintf(next, next_size, "%s", rs.link_next);
        json_tokener *tk = json_tokener_new_ex(64);
        json_object *j = tk ? json_tokener_parse_ex(tk, rs.body, (int)rs.body_len) : NULL;
        bool complete = tk && json_tokener_get_error(tk) == json_tokener_success;
        if (tk)
            json_tokener_free(tk);
        fetch_response_fini(&rs);
        if (!j || !complete) {
            json_object_put(j);
            snprintf(err, err_size, "%s: the Hub's answer for %s is not valid JSON (%s)", id, what,
                     url);
            *st = HUB_BAD_ANSWER;
            return NULL;
        }
        return j;
    }
}

static bool is_hex(const char *s, size_t n)
{
    if (strlen(s) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

static const char *str_field(json_object *o, const char *key)
{
    json_object *v;
    return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
               ? json_object_get_string(v)
               : NULL;
}

/* A path from the listing that is safe to create under the snapshot. */
static bool path_safe(const char *p)
{
    if (!*p || p[0] == '/' || strlen(p) > 1024)
        return false;
    for (const char *s = p; *s;) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            return false;
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)s[i] < 0x20)
                return false;
        s += n + (e ? 1 : 0);
        if (!e)
            break;
    }
    return true;
}

static bool add_entry(struct hub_listing *l, json_object *e, char *err, size_t err_size,
                      const char *id)
{
    const char *type = str_field(e, "type");
    if (type && strcmp(type, "file") != 0)
        return true; /* folders: their files come too (recursive) */
    const char *path = str_field(e, "path");
    const char *oid = str_field(e, "oid");
    json_object *size, *lfs;
    if (!path || !oid || !json_object_object_get_ex(e, "size", &size) || !path_safe(path)) {
        snprintf(err, err_size,
                 "%s: the Hub's file list has an entry without a usable path, "
                 "oid or size",
                 id);
        return false;
    }
    struct hub_file f = {.size = json_object_get_int64(size)};
    snprintf(f.oid, sizeof f.oid, "%s", oid);
    if (json_object_object_get_ex(e, "lfs", &lfs) && json_object_is_type(lfs, json_type_object)) {
        const char *sha = str_field(lfs, "oid");
        json_object *lsize;
        if (!sha || !is_hex(sha, 64)) {
            snprintf(err, err_size, "%s: %s: the Hub lists no sha256 for this LFS file", id, path);
            return false;
        }
        snprintf(f.sha256, sizeof f.sha256, "%s", sha);
        if (json_object_object_get_ex(lfs, "size", &lsize))
            f.size = json_object_get_int64(lsize);
    } else if (!is_hex(oid, 40)) {
        snprintf(err, err_size, "%s: %s: the Hub lists an oid that is not a git id", id, path);
        return false;
    }
    if (f.size < 0) {
        snprintf(err, err_size, "%s: %s: negative size in the Hub's list", id, path);
        return false;
    }
    f.path = x_strdup(path);
    l->files = x_reallocarray(l->files, l->n + 1, sizeof *l->files);
    l->files[l->n++] = f;
    return true;
}

/* One page of /tree's answer into l. */
static enum hub_status add_page(struct hub_listing *l, json_object *j, const char *id, char *err,
                                size_t err_size)
{
    if (!json_object_is_type(j, json_type_array)) {
        snprintf(err, err_size, "%s: the Hub's file list is not a list", id);
        return HUB_BAD_ANSWER;
    }
    size_t n = json_object_array_length(j);
    if (l->n + n > HUB_MAX_FILES) {
        snprintf(err, err_size, "%s: the repository lists more than %d files", id, HUB_MAX_FILES);
        return HUB_BAD_ANSWER;
    }
    for (size_t i = 0; i < n; i++)
        if (!add_entry(l, json_object_array_get_idx(j, i), err, err_size, id))
            return HUB_BAD_ANSWER;
    return HUB_OK;
}

enum hub_status hub_parse_file_list(const char *body, size_t len, const char *id,
                                    struct hub_listing *l, char *err, size_t err_size)
{
    json_tokener *tk = json_tokener_new_ex(64);
    json_object *j = tk ? json_tokener_parse_ex(tk, body, (int)len) : NULL;
    bool complete = tk && json_tokener_get_error(tk) == json_tokener_success;
    if (tk)
        json_tokener_free(tk);
    if (!j || !complete) {
        json_object_put(j);
        snprintf(err, err_size, "%s: the Hub's file list is not valid JSON", id);
        return HUB_BAD_ANSWER;
    }
    enum hub_status st = add_page(l, j, id, err, err_size);
    json_object_put(j);
    return st;
}

enum hub_status hub_list(const char *id, const char *revision, const char *token,
                         const struct hub_wait *w, struct hub_listing *out, char *err,
                         size_t err_size)
{
    memset(out, 0, sizeof *out);
    if (hub_offline()) {
        snprintf(err, err_size, "%s: HF_HUB_OFFLINE is set: not asking the Hub", id);
        return HUB_OFFLINE;
    }
    char *ep = hub_endpoint();
    char *api = x_asprintf("%s/api/models", ep);
    free(ep);
    char *rev_url = repo_url(api, id, "revision", revision, NULL);
    enum hub_status st = HUB_OK;
    json_object *j = get_json(rev_url, id, "the revision", token, w, NULL, 0, &st, err, err_size);
    free(rev_url);
    if (!j) {
        free(api);
        return st;
    }
    const char *sha = str_field(j, "sha");
    if (!sha || !is_hex(sha, 40)) {
        snprintf(err, err_size, "%s: the Hub's answer for revision %s has no commit id", id,
                 revision);
        json_object_put(j);
        free(api);
        return HUB_BAD_ANSWER;
    }
    snprintf(out->commit, sizeof out->commit, "%s", sha);
    json_object_put(j);

    char *tree = repo_url(api, id, "tree", out->commit, NULL);
    free(api);
    char *url = x_asprintf("%s?recursive=true", tree);
    free(tree);
    char next[2048];
    while (url) {
        j = get_json(url, id, "the file list", token, w, next, sizeof next, &st, err, err_size);
        free(url);
        url = NULL;
        if (!j)
            break;
        st = add_page(out, j, id, err, err_size);
        json_object_put(j);
        if (st == HUB_OK && *next)
            url = x_strdup(next);
    }
    if (st == HUB_OK && out->n == 0) {
        snprintf(err, err_size, "%s: the repository has no files at %s", id, revision);
        st = HUB_NOT_FOUND;
    }
    if (st != HUB_OK)
        hub_listing_fini(out);
    return st;
}

void hub_listing_fini(struct hub_listing *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->files[i].path);
    free(l->files);
    l->files = NULL;
    l->n = 0;
}
