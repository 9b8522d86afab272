/* hub_pull.c: a revision of a Hub repository into the cache (hub_pull.h).
 * Each file goes to blobs/ETAG.incomplete (the name huggingface_hub uses,
 * so either tool resumes the other's partial file), is hashed as it comes,
 * and is renamed to blobs/ETAG only when its size and hash are the Hub's;
 * then snapshots/COMMIT/PATH links to it and refs/REVISION names COMMIT. */
#include "config.h"

#include "src/models/hub_pull.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <nettle/sha1.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "src/models/http_fetch.h"
#include "src/base/human_size.h"
#include "src/models/hub_cache.h"
#include "src/store/paths.h"
#include "src/base/platform.h"
#include "src/store/store.h"
#include "src/base/xalloc.h"

/* ------------------------------------------------------------ selection */

static bool has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

/* Weight formats a safetensors repository also carries for other
 * frameworks: elmchat reads none of them. */
static bool other_weights(const char *path)
{
    static const char *const suf[] = {".bin",  ".pt", ".pth",    ".h5",   ".msgpack", ".ckpt",
                                      ".onnx", ".ot", ".tflite", ".gguf", ".mlmodel"};
    for (size_t i = 0; i < sizeof suf / sizeof *suf; i++)
        if (has_suffix(path, suf[i]))
            return true;
    return strstr(path, ".mlpackage/") != NULL || strncmp(path, "coreml/", 7) == 0;
}

static bool wanted(const char *path, char *const *include, bool safetensors)
{
    if (include && include[0]) {
        for (size_t k = 0; include[k]; k++)
            if (fnmatch(include[k], path, 0) == 0)
                return true;
        return false;
    }
    return !(safetensors && other_weights(path));
}

long long hub_pull_select(const struct hub_listing *l, char *const *include, bool *want)
{
    bool safetensors = false; /* once for the listing, not per file */
    for (size_t k = 0; k < l->n && !safetensors; k++)
        safetensors = has_suffix(l->files[k].path, ".safetensors");
    long long total = 0;
    for (size_t i = 0; i < l->n; i++) {
        bool w = wanted(l->files[i].path, include, safetensors);
        if (want)
            want[i] = w;
        total = hub_size_add(total, w ? l->files[i].size : 0); /* saturating */
    }
    return total;
}

/* -------------------------------------------------------------- hashing */

struct file_hash {
    bool lfs; /* sha256 of the bytes; else git's sha1 of "blob SIZE\0" + bytes */
    struct sha256_ctx s256;
    struct sha1_ctx s1;
};

static void hash_start(struct file_hash *h, bool lfs, long long size)
{
    h->lfs = lfs;
    if (lfs) {
        sha256_init(&h->s256);
    } else {
        char head[48];
        int n = snprintf(head, sizeof head, "blob %lld", size);
        sha1_init(&h->s1);
        sha1_update(&h->s1, (size_t)n + 1, (const uint8_t *)head); /* with the NUL */
    }
}

static void hash_add(struct file_hash *h, const void *data, size_t n)
{
    if (h->lfs)
        sha256_update(&h->s256, n, data);
    else
        sha1_update(&h->s1, n, data);
}

static void hash_hex(struct file_hash *h, char *out)
{
    uint8_t d[SHA256_DIGEST_SIZE];
    size_t n = h->lfs ? SHA256_DIGEST_SIZE : SHA1_DIGEST_SIZE;
    if (h->lfs)
        sha256_digest(&h->s256, n, d);
    else
        sha1_digest(&h->s1, n, d);
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

/* ------------------------------------------------------------- one file */

struct pull {
    const struct hub_pull_opts *o;
    const struct hub_listing *l;
    char *repo_dir;
    char *endpoint;
    char *token;
    struct hub_pull_event ev;
    double last_event; /* platform_now() of the last progress event */
};

struct file_fetch {
    struct pull *p;
    const struct hub_file *f;
    int fd;
    long long have;
    struct file_hash hash;
    const struct fetch_response *rs; /* being received */
    bool writing;                    /* this response's body goes to the file */
    bool started;                    /* the first body byte of this response came */
    int write_errno;                 /* the sink's failure */
};

static void emit(struct pull *p, enum hub_pull_event_kind kind)
{
    p->ev.kind = kind;
    if (p->o->on_event)
        p->o->on_event(p->o->ctx, &p->ev);
}

static void notice(struct pull *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void notice(struct pull *p, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->ev.message = msg;
    emit(p, HUB_PULL_NOTICE);
    p->ev.message = NULL;
}

static bool cancelled(const struct pull *p)
{
    return p->o->cancel && *p->o->cancel;
}

static size_t sink(const void *data, size_t n, void *ctx)
{
    struct file_fetch *ff = ctx; /* a cancel comes through on_progress */
    if (!ff->started) {
        ff->started = true;
        long st = ff->rs->status;
        if (st == 206 && ff->rs->range_start == ff->have) {
            ff->writing = true;
        } else if (st == 200) { /* the range was not honoured: from the start */
            ff->writing = ff->have == 0 || ftruncate(ff->fd, 0) == 0;
            if (!ff->writing) {
                ff->write_errno = errno;
                return 0;
            }
            ff->have = 0;
            hash_start(&ff->hash, ff->f->sha256[0] != '\0', ff->f->size);
        } else {
            ff->writing = false; /* an error page: not the file */
        }
    }
    if (!ff->writing)
        return n;
    if (ff->have + (long long)n > ff->f->size) {
        ff->write_errno = EOVERFLOW; /* longer than the Hub says */
        return 0;
    }
    for (size_t off = 0; off < n;) {
        ssize_t w = write(ff->fd, (const char *)data + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            ff->write_errno = w < 0 ? errno : EIO;
            return 0;
        }
        off += (size_t)w;
    }
    hash_add(&ff->hash, data, n);
    ff->have += (long long)n;
    struct pull *p = ff->p;
    p->ev.all_done += (long long)n;
    p->ev.file_done = ff->have;
    double now = platform_now();
    if (now - p->last_event >= 0.1 || ff->have == ff->f->size) {
        p->last_event = now;
        emit(p, HUB_PULL_PROGRESS);
    }
    return n;
}

static bool on_progress(void *ctx, long long now, long long total)
{
    (void)now;
    (void)total;
    const struct file_fetch *ff = ctx;
    return !cancelled(ff->p);
}

/* Feed the hash with the bytes a partial file already holds. */
static bool hash_existing(struct file_fetch *ff, const char *part)
{
    if (ff->have == 0)
        return true;
    if (lseek(ff->fd, 0, SEEK_SET) < 0)
        return false;
    char *buf = x_malloc(1u << 20);
    long long left = ff->have;
    bool ok = true;
    while (left > 0 && ok) {
        ssize_t r = read(ff->fd, buf, left < (1 << 20) ? (size_t)left : (1u << 20));
        if (r < 0 && errno == EINTR)
            continue;
        ok = r > 0;
        if (ok) {
            hash_add(&ff->hash, buf, (size_t)r);
            left -= r;
        }
    }
    free(buf);
    (void)part;
    return ok && lseek(ff->fd, 0, SEEK_END) >= 0;
}

/* Ctrl-C or Esc: what is kept and how to go on. */
static enum hub_status interrupted(const struct file_fetch *ff, const char *part, const char *id,
                                   char *err, size_t err_size)
{
    char b1[32], b2[32];
    snprintf(err, err_size, "interrupted: %s of %s of %s kept in %s; elmchat pull %s resumes it",
             human_size(ff->have, b1, sizeof b1), human_size(ff->f->size, b2, sizeof b2),
             ff->f->path, part, id);
    return HUB_CANCELLED;
}

/* blob.incomplete opened for appending, locked against a second download
 * of it, and what it holds hashed (ff->have, ff->hash).  false with err. */
static bool open_partial(struct file_fetch *ff, const char *part, char *err, size_t err_size)
{
    const struct hub_file *f = ff->f;
    ff->fd = open(part, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (ff->fd < 0) {
        snprintf(err, err_size, "%s: %s", part, strerror(errno));
        return false;
    }
    if (flock(ff->fd, LOCK_EX | LOCK_NB) != 0) {
        snprintf(err, err_size, "%s: another download of this file is under way (%s)", part,
                 strerror(errno));
        close(ff->fd);
        return false;
    }
    struct stat sb;
    ff->have = fstat(ff->fd, &sb) == 0 && S_ISREG(sb.st_mode) ? sb.st_size : 0;
    if (ff->have > f->size && ftruncate(ff->fd, 0) == 0)
        ff->have = 0;
    hash_start(&ff->hash, f->sha256[0] != '\0', f->size);
    if (!hash_existing(ff, part)) {
        snprintf(err, err_size, "%s: cannot read the partial download: %s", part, strerror(errno));
        close(ff->fd);
        return false;
    }
    return true;
}

/* The whole file arrived: its hash checked against the Hub's, then it
 * becomes blob (a damaged one is removed).  err on failure. */
static enum hub_status place_file(struct file_fetch *ff, const char *part, const char *blob,
                                  char *err, size_t err_size)
{
    const struct hub_file *f = ff->f;
    char hex[72];
    hash_hex(&ff->hash, hex);
    const char *want = f->sha256[0] ? f->sha256 : f->oid;
    if (ff->have != f->size || strcmp(hex, want) != 0) {
        snprintf(err, err_size,
                 "%s: %s: the download's %s is %s, the Hub's is %s: it is "
                 "damaged and was removed; run elmchat pull %s again",
                 ff->p->o->id, f->path, f->sha256[0] ? "sha256" : "git blob id", hex, want,
                 ff->p->o->id);
        unlink(part);
        ff->p->ev.all_done -= ff->have;
        return HUB_BAD_ANSWER;
    }
    if (platform_fsync(ff->fd) != 0 || rename(part, blob) != 0) {
        snprintf(err, err_size, "%s: %s", blob, strerror(errno));
        return HUB_BAD_ANSWER;
    }
    return HUB_OK;
}

/* Download f to blob (through blob.incomplete).  err on failure. */
static enum hub_status fetch_file(struct pull *p, const struct hub_file *f, const char *blob,
                                  char *err, size_t err_size)
{
    const char *id = p->o->id;
    char *part = x_asprintf("%s.incomplete", blob);
    struct file_fetch ff = {.p = p, .f = f, .fd = -1};
    enum hub_status st = HUB_OK;
    char b1[32], b2[32];
    if (!open_partial(&ff, part, err, err_size)) {
        free(part);
        return HUB_BAD_ANSWER;
    }
    if (ff.have > 0)
        notice(p, "%s: resuming after %s", f->path, human_size(ff.have, b1, sizeof b1));
    p->ev.file_done = ff.have;
    p->ev.all_done += ff.have;
    emit(p, HUB_PULL_FILE_START);

    char *url = hub_file_url(p->endpoint, id, p->l->commit, f->path);
    for (int attempt = 1; ff.have < f->size || attempt == 1; attempt++) {
        if (ff.have == f->size && f->size > 0)
            break; /* a complete partial file: only the check is left */
        struct fetch_request rq = {.url = url,
                                   .follow_redirects = true,
                                   .token = p->token,
                                   .range_from = ff.have,
                                   .sink = sink,
                                   .sink_ctx = &ff,
                                   .progress = on_progress,
                                   .progress_ctx = &ff,
                                   .cancel = p->o->cancel};
        struct fetch_response rs;
        ff.rs = &rs;
        ff.started = ff.writing = false;
        bool got = fetch_perform(&rq, &rs);
        ff.rs = NULL;
        if (!got && rs.error == FETCH_ERR_CANCELLED) {
            st = interrupted(&ff, part, id, err, err_size);
            break;
        }
        if (!got && rs.error == FETCH_ERR_WRITE) {
            snprintf(err, err_size,
                     "%s: %s%s; %s kept there: free some space and run elmchat "
                     "pull %s again",
                     part, strerror(ff.write_errno),
                     ff.write_errno == EOVERFLOW ? " (the server sends more than the Hub lists)"
                                                 : "",
                     human_size(ff.have, b1, sizeof b1), id);
            st = HUB_BAD_ANSWER;
            break;
        }
        if (got && rs.status != 200 && rs.status != 206) {
            if (rs.status == 416 && ff.have > 0) { /* our partial file is no use */
                if (ftruncate(ff.fd, 0) == 0) {
                    p->ev.all_done -= ff.have;
                    ff.have = 0;
                    hash_start(&ff.hash, f->sha256[0] != '\0', f->size);
                    continue;
                }
            }
            if (!(rs.status >= 500 || rs.status == 429) || attempt > HUB_RETRIES) {
                st = hub_status_of(rs.status, id, f->path, p->token != NULL, rs.error_code,
                                   rs.error_message, err, err_size);
                break;
            }
        } else if (got) {
            /* the file's identity as the Hub's resolve answer states it (a
             * CDN's own ETag after a redirect means nothing here) */
            char tag[160] = "";
            if (*rs.linked_etag)
                fetch_etag_value(rs.linked_etag, tag, sizeof tag);
            else if (!f->sha256[0] && *rs.etag)
                fetch_etag_value(rs.etag, tag, sizeof tag);
            const char *want = f->sha256[0] ? f->sha256 : f->oid;
            if (*tag && strcmp(tag, want) != 0) {
                snprintf(err, err_size,
                         "%s: %s: the Hub's ETag %s is not the %s its file list "
                         "gives (%s): did the repository change? run elmchat pull "
                         "again",
                         id, f->path, tag, f->sha256[0] ? "sha256" : "git id", want);
                if (ftruncate(ff.fd, 0) == 0)
                    unlink(part);
                st = HUB_BAD_ANSWER;
                break;
            }
            if (ff.have == f->size)
                break;
        }
        bool unreachable = !got && rs.error == FETCH_ERR_UNREACHABLE;
        if (unreachable && attempt > HUB_UNREACHABLE_RETRIES) {
            hub_unreachable_text(id, rs.error_text, err, err_size);
            char more[512];
            snprintf(more, sizeof more, "; %s of %s kept in %s",
                     human_size(ff.have, b1, sizeof b1), human_size(f->size, b2, sizeof b2), part);
            snprintf(err + strlen(err), err_size - strlen(err), "%s", more);
            st = HUB_UNAVAILABLE;
            break;
        }
        if (attempt > HUB_RETRIES) {
            snprintf(err, err_size,
                     "%s: %s: %s after %d tries; %s of %s kept in %s: run "
                     "elmchat pull %s again to resume",
                     id, f->path, got ? "the download stops short" : rs.error_text, attempt,
                     human_size(ff.have, b1, sizeof b1), human_size(f->size, b2, sizeof b2), part,
                     id);
            st = HUB_UNAVAILABLE;
            break;
        }
        long wait = unreachable ? HUB_UNREACHABLE_DELAY_MS : hub_retry_delay_ms(attempt);
        int tries = unreachable ? HUB_UNREACHABLE_RETRIES + 1 : HUB_RETRIES + 1;
        if (got)
            notice(p, "%s: %s at %s: retrying in %.1f s (try %d of %d)", f->path,
                   rs.status >= 500 || rs.status == 429 ? "the Hub is busy" : "cut short",
                   human_size(ff.have, b1, sizeof b1), (double)wait / 1000.0, attempt + 1, tries);
        else
            notice(p, "%s: the connection broke at %s (%s): resuming in %.1f s (try %d of %d)",
                   f->path, human_size(ff.have, b1, sizeof b1), rs.error_text,
                   (double)wait / 1000.0, attempt + 1, tries);
        fetch_response_fini(&rs);
        if (!hub_wait_ms(wait, p->o->cancel)) {
            st = interrupted(&ff, part, id, err, err_size);
            break;
        }
    }
    free(url);
    if (st == HUB_OK)
        st = place_file(&ff, part, blob, err, err_size);
    close(ff.fd);
    free(part);
    return st;
}

/* snapshots/COMMIT/PATH -> ../../blobs/ETAG (one more ../ per folder). */
static bool link_file(const char *snapshot, const struct hub_file *f, const char *etag, char *err,
                      size_t err_size)
{
    char *link = x_asprintf("%s/%s", snapshot, f->path);
    char *slash = strrchr(link, '/');
    *slash = '\0';
    int rc = paths_mkdir_p(link);
    *slash = '/';
    size_t depth = 0;
    for (const char *s = f->path; *s; s++)
        depth += *s == '/';
    size_t tlen = 3 * (depth + 2) + strlen("blobs/") + strlen(etag) + 1;
    char *target = x_malloc(tlen);
    target[0] = '\0';
    for (size_t i = 0; i < depth + 2; i++)
        strcat(target, "../");
    strcat(target, "blobs/");
    strcat(target, etag);
    char *tmp = x_asprintf("%s.tmp.%ld", link, (long)getpid());
    unlink(tmp);
    bool ok = rc == 0 && symlink(target, tmp) == 0 && rename(tmp, link) == 0;
    if (!ok) {
        snprintf(err, err_size, "%s: %s", link, strerror(rc ? -rc : errno));
        unlink(tmp);
    }
    free(tmp);
    free(target);
    free(link);
    return ok;
}

static void list_notice(void *ctx, const char *message)
{
    notice(ctx, "%s", message);
}

static bool room_for(const char *dir, long long bytes, char *err, size_t err_size)
{
    struct statvfs sv;
    if (statvfs(dir, &sv) != 0)
        return true; /* unknown: the writes will say */
    long long avail = (long long)sv.f_bavail * (long long)sv.f_frsize;
    if (avail >= bytes)
        return true;
    char b1[32], b2[32];
    snprintf(err, err_size, "%s: the download needs %s and the disk has %s free", dir,
             human_size(bytes, b1, sizeof b1), human_size(avail, b2, sizeof b2));
    return false;
}

enum hub_status hub_pull(const struct hub_pull_opts *o, struct hub_pull_result *r, char *err,
                         size_t err_size)
{
    memset(r, 0, sizeof *r);
    const char *rev = o->revision && *o->revision ? o->revision : "main";
    if (!hub_repo_id_valid(o->id)) {
        snprintf(err, err_size, "'%s' is not a Hub repository id (owner/name)", o->id);
        return HUB_NOT_FOUND;
    }
    struct pull p = {.o = o, .token = hub_token(), .endpoint = hub_endpoint()};
    struct hub_listing l;
    struct hub_wait w = {.cancel = o->cancel, .notice = list_notice, .ctx = &p};
    notice(&p, "asking %s for the files of %s (%s)", p.endpoint, o->id, rev);
    enum hub_status st = hub_list(o->id, rev, p.token, &w, &l, err, err_size);
    if (st != HUB_OK)
        goto out;
    p.l = &l;
    char *cache = hub_cache_dir();
    p.repo_dir = hub_repo_dir(cache, o->id);
    free(cache);
    char *blobs = x_asprintf("%s/blobs", p.repo_dir);
    r->snapshot = x_asprintf("%s/snapshots/%s", p.repo_dir, l.commit);
    snprintf(r->commit, sizeof r->commit, "%s", l.commit);
    int rc = paths_mkdir_p(blobs);
    if (rc != 0) {
        snprintf(err, err_size, "%s: %s", blobs, strerror(-rc));
        st = HUB_BAD_ANSWER;
        goto out_blobs;
    }
    /* what to fetch, and how much is missing */
    bool *want = x_calloc(l.n ? l.n : 1, sizeof *want);
    p.ev.all_size = hub_pull_select(&l, o->include, want);
    long long missing = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (!want[i])
            continue;
        p.ev.count++;
        char *blob =
            x_asprintf("%s/%s", blobs, l.files[i].sha256[0] ? l.files[i].sha256 : l.files[i].oid);
        char *part = x_asprintf("%s.incomplete", blob);
        struct stat sb;
        if (stat(blob, &sb) != 0 || sb.st_size != l.files[i].size) {
            long long have = stat(part, &sb) == 0 && sb.st_size <= l.files[i].size ? sb.st_size : 0;
            missing = hub_size_add(missing, l.files[i].size - have); /* saturating */
        }
        free(part);
        free(blob);
    }
    if (p.ev.count == 0) {
        snprintf(err, err_size, "%s: no file of the repository matches --include", o->id);
        st = HUB_NOT_FOUND;
        goto out_want;
    }
    r->bytes_total = p.ev.all_size;
    emit(&p, HUB_PULL_LISTED);
    if (!room_for(blobs, missing, err, err_size)) {
        st = HUB_BAD_ANSWER;
        goto out_want;
    }
    for (size_t i = 0; i < l.n && st == HUB_OK; i++) {
        if (!want[i])
            continue;
        const struct hub_file *f = &l.files[i];
        const char *etag = f->sha256[0] ? f->sha256 : f->oid;
        char *blob = x_asprintf("%s/%s", blobs, etag);
        p.ev.index++;
        p.ev.file = f->path;
        p.ev.file_size = f->size;
        p.ev.file_done = 0;
        p.ev.cached = false;
        p.ev.lfs = f->sha256[0] != '\0';
        struct stat sb;
        if (stat(blob, &sb) == 0 && sb.st_size == f->size) {
            p.ev.cached = true;
            p.ev.file_done = f->size;
            p.ev.all_done += f->size;
            r->files_cached++;
        } else {
            long long before = p.ev.all_done;
            st = fetch_file(&p, f, blob, err, err_size);
            r->bytes_fetched += p.ev.all_done - before;
        }
        if (st == HUB_OK)
            emit(&p, HUB_PULL_FILE_DONE);
        free(blob);
    }
    /* the snapshot only once every file is in: a folder there is a model
     * whole (elmchat -m and the other tools take any snapshot they find) */
    for (size_t i = 0; i < l.n && st == HUB_OK; i++) {
        if (!want[i])
            continue;
        const struct hub_file *f = &l.files[i];
        if (link_file(r->snapshot, f, f->sha256[0] ? f->sha256 : f->oid, err, err_size))
            r->files++;
        else
            st = HUB_BAD_ANSWER;
    }
    if (st == HUB_OK && strcmp(rev, l.commit) != 0 && !strchr(rev, '/') && rev[0] != '.') {
        char *refs = x_asprintf("%s/refs", p.repo_dir);
        char *ref = x_asprintf("%s/%s", refs, rev);
        char werr[512];
        if (paths_mkdir_p(refs) != 0 ||
            store_write_atomic(ref, l.commit, strlen(l.commit), werr, sizeof werr) != 0) {
            snprintf(err, err_size, "%s: cannot record the commit: %s", ref, werr);
            st = HUB_BAD_ANSWER;
        }
        free(ref);
        free(refs);
    }
out_want:
    free(want);
out_blobs:
    free(blobs);
    free(p.repo_dir);
    hub_listing_fini(&l);
out:
    if (st != HUB_OK) {
        free(r->snapshot);
        r->snapshot = NULL;
    }
    free(p.token);
    free(p.endpoint);
    return st;
}
