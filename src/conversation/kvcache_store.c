/* kvcache_store.c: KV snapshots of conversations (kvcache_store.h).
 *
 * NAME.kv.meta, little-endian (this host's order: a cache, never moved):
 *   "ELMCONVM" u32 version  u64 model fingerprint
 *   u32 len, template name   u64 hash of the system prompt
 *   u64 system_end  u64 n_msgs
 *   per message: u8 role, u8 out_of_context, u8 sampled, u8 how,
 *                u64 content hash, u64 start, gen, sampled_end, end
 *   u64 n_tokens, i32 tokens[n_tokens]
 *   u64 checksum (FNV-1a of everything before)
 */
#include "config.h"

#include "src/conversation/kvcache_store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/store/paths.h"
#include "src/store/store.h"
#include "src/base/xalloc.h"

#define META_MAGIC "ELMCONVM"
#define META_VERSION 1u
#define META_MAX_SIZE (64u * 1024 * 1024)
#define NO_POS ((size_t)-1)

char *kvcache_path_for(const char *session_name)
{
    if (!session_name_valid(session_name))
        return NULL;
    char *dir = paths_dir(PATHS_CACHE, "kv");
    if (!dir || paths_mkdir_p(dir) != 0) {
        free(dir);
        return NULL;
    }
    size_t n = strlen(dir) + strlen(session_name) + 8;
    char *p = x_malloc(n);
    snprintf(p, n, "%s/%s.kv", dir, session_name);
    free(dir);
    return p;
}

static char *meta_path(const char *kv_path)
{
    size_t n = strlen(kv_path) + 6;
    char *p = x_malloc(n);
    snprintf(p, n, "%s.meta", kv_path);
    return p;
}

void kvcache_save_request(const char *kv_path, int slot, struct elm_request *req)
{
    *req = elm_request_default(ELM_REQ_SAVE_STATE);
    req->slot = slot;
    req->path = (char *)(uintptr_t)kv_path; /* copied by elm_worker_post */
}

void kvcache_load_request(const char *kv_path, int slot, const struct conversation *cv,
                          struct elm_request *req)
{
    *req = elm_request_default(ELM_REQ_LOAD_STATE);
    req->slot = slot;
    req->path = (char *)(uintptr_t)kv_path;
    req->tokens = cv->tokens.v; /* the worker keeps the common prefix: DONE's n_past */
    req->n_tokens = (int)cv->tokens.n;
}

void kvcache_remove(const char *kv_path)
{
    char *m = meta_path(kv_path);
    unlink(kv_path);
    unlink(m);
    free(m);
}

static uint64_t str_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    if (!s)
        return h ^ 0x5a5a; /* "the template's default" differs from "" */
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return h;
}

uint64_t kvcache_meta_checksum(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* ----------------------------------------------------------- the writer */

struct buf {
    unsigned char *p;
    size_t n, cap;
};

static void put(struct buf *b, const void *data, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n)
            cap *= 2;
        b->p = x_realloc(b->p, cap);
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void put_u8(struct buf *b, unsigned v)
{
    unsigned char c = (unsigned char)v;
    put(b, &c, 1);
}

static void put_u32(struct buf *b, uint32_t v)
{
    put(b, &v, sizeof v);
}

static void put_u64(struct buf *b, uint64_t v)
{
    put(b, &v, sizeof v);
}

int kvcache_meta_save(const struct conversation *cv, const char *kv_path, uint64_t fingerprint,
                      char *err, size_t err_size)
{
    struct buf b = {0};
    put(&b, META_MAGIC, 8);
    put_u32(&b, META_VERSION);
    put_u64(&b, fingerprint);
    const char *tname = cv->tpl && cv->tpl->name ? cv->tpl->name : "";
    put_u32(&b, (uint32_t)strlen(tname));
    put(&b, tname, strlen(tname));
    put_u64(&b, str_hash(cv->s->system));
    put_u64(&b, cv->system_end);
    put_u64(&b, cv->s->n_msgs);
    for (size_t i = 0; i < cv->s->n_msgs; i++) {
        const struct message *m = &cv->s->msgs[i];
        const struct conv_span *sp = &cv->spans[i];
        put_u8(&b, (unsigned)m->role);
        put_u8(&b, m->out_of_context);
        put_u8(&b, sp->sampled);
        put_u8(&b, (unsigned)sp->how);
        put_u64(&b, sp->hash);
        put_u64(&b, sp->start);
        put_u64(&b, sp->gen);
        put_u64(&b, sp->sampled_end);
        put_u64(&b, sp->end);
    }
    put_u64(&b, cv->tokens.n);
    put(&b, cv->tokens.v ? (const void *)cv->tokens.v : (const void *)"",
        cv->tokens.n * sizeof(int32_t));
    put_u64(&b, kvcache_meta_checksum(b.p, b.n));
    char *path = meta_path(kv_path);
    int rc = store_write_atomic(path, b.p, b.n, err, err_size);
    free(path);
    free(b.p);
    return rc;
}

/* ----------------------------------------------------------- the reader */

struct rd {
    const unsigned char *p;
    size_t n, off;
    bool bad;
};

static void get(struct rd *r, void *out, size_t n)
{
    if (r->bad || r->n - r->off < n) {
        r->bad = true;
        memset(out, 0, n);
        return;
    }
    memcpy(out, r->p + r->off, n);
    r->off += n;
}

static unsigned get_u8(struct rd *r)
{
    unsigned char c;
    get(r, &c, 1);
    return c;
}

static uint32_t get_u32(struct rd *r)
{
    uint32_t v;
    get(r, &v, sizeof v);
    return v;
}

static uint64_t get_u64(struct rd *r)
{
    uint64_t v;
    get(r, &v, sizeof v);
    return v;
}

struct meta_msg {
    unsigned role, ooc, sampled, how;
    uint64_t hash, start, gen, sampled_end, end;
};

bool kvcache_adopt(struct conversation *cv, const char *kv_path, uint64_t fingerprint)
{
    char *path = meta_path(kv_path);
    char *data = NULL;
    size_t len = 0;
    char err[256];
    int rc = store_read_file(path, META_MAX_SIZE, &data, &len, err, sizeof err);
    free(path);
    if (rc != 0)
        return false;
    bool ok = false;
    struct meta_msg *mm = NULL;
    int32_t *ids = NULL;
    struct rd r = {(const unsigned char *)data, len, 0, false};
    char magic[8];
    uint64_t sum = 0;
    if (len >= 16)
        memcpy(&sum, r.p + len - 8, sizeof sum);
    if (len < 16 || kvcache_meta_checksum(r.p, len - 8) != sum)
        goto out;
    r.n = len - 8;
    get(&r, magic, 8);
    if (memcmp(magic, META_MAGIC, 8) != 0 || get_u32(&r) != META_VERSION)
        goto out;
    uint64_t fp = get_u64(&r);
    if (fingerprint && fp != fingerprint)
        goto out;
    uint32_t tlen = get_u32(&r);
    if (tlen > r.n - r.off)
        goto out;
    const char *tname = cv->tpl && cv->tpl->name ? cv->tpl->name : "";
    if (tlen != strlen(tname) || memcmp(r.p + r.off, tname, tlen) != 0)
        goto out;
    r.off += tlen;
    if (get_u64(&r) != str_hash(cv->s->system))
        goto out;
    uint64_t system_end = get_u64(&r);
    uint64_t n_msgs = get_u64(&r);
    if (r.bad || n_msgs > (r.n - r.off) / 44)
        goto out;
    mm = x_calloc(n_msgs ? n_msgs : 1, sizeof *mm);
    for (uint64_t i = 0; i < n_msgs; i++) {
        mm[i].role = get_u8(&r);
        mm[i].ooc = get_u8(&r);
        mm[i].sampled = get_u8(&r);
        mm[i].how = get_u8(&r);
        mm[i].hash = get_u64(&r);
        mm[i].start = get_u64(&r);
        mm[i].gen = get_u64(&r);
        mm[i].sampled_end = get_u64(&r);
        mm[i].end = get_u64(&r);
    }
    uint64_t n_tokens = get_u64(&r);
    if (r.bad || n_tokens != (r.n - r.off) / sizeof(int32_t) || (r.n - r.off) % 4 ||
        system_end > n_tokens)
        goto out;
    ids = x_malloc((size_t)(n_tokens ? n_tokens : 1) * sizeof *ids);
    memcpy(ids, r.p + r.off, (size_t)n_tokens * sizeof *ids);
    /* Recorded ids go into the sequence as they are: refuse any the
     * tokenizer (hence the model) cannot have produced (found by fuzzing). */
    int n_vocab = cv->tok ? elm_tokenizer_n_vocab(cv->tok) : INT32_MAX;
    for (uint64_t i = 0; i < n_tokens; i++)
        if (ids[i] < 0 || ids[i] >= n_vocab)
            goto out;

    /* The messages that are the same (role, content, in context or not). */
    size_t k = 0;
    while (k < n_msgs && k < cv->s->n_msgs) {
        const struct message *m = &cv->s->msgs[k];
        if (mm[k].role != (unsigned)m->role || mm[k].ooc != (unsigned)m->out_of_context ||
            mm[k].hash != cv->spans[k].hash || mm[k].how > TEMPLATE_END_CUT)
            break;
        if (mm[k].sampled && !(mm[k].gen <= mm[k].sampled_end && mm[k].sampled_end <= n_tokens))
            break;
        k++;
    }
    /* Take the recorded ids of the replies in that prefix: conversation's
     * rebuild (via conversation_render) keeps the sampled ids of spans
     * whose text is unchanged, so hand it the recorded sequence and spans
     * as "the old ones" and render again. */
    struct idvec saved_tokens = cv->tokens;
    struct conv_span *saved_spans = x_malloc((cv->cap ? cv->cap : 1) * sizeof *saved_spans);
    memcpy(saved_spans, cv->spans, cv->cap * sizeof *saved_spans);
    struct idvec rec = {0};
    idvec_append(&rec, ids, (size_t)n_tokens);
    cv->tokens = rec;
    for (size_t i = 0; i < cv->s->n_msgs; i++) {
        struct conv_span *sp = &cv->spans[i];
        if (i < k && mm[i].sampled) {
            sp->start = mm[i].start;
            sp->gen = mm[i].gen;
            sp->sampled_end = mm[i].sampled_end;
            sp->end = mm[i].end;
            sp->how = (enum template_end)mm[i].how;
            sp->sampled = true;
        } else {
            sp->sampled = false;
        }
    }
    rc = conversation_render(cv, err, sizeof err);
    if (rc != 0 && rc != CONV_FULL) {
        /* could not render (the conversation is as the rebuild left it):
         * put the previous sequence back */
        idvec_fini(&cv->tokens);
        cv->tokens = saved_tokens;
        memcpy(cv->spans, saved_spans, cv->cap * sizeof *saved_spans);
        free(saved_spans);
        goto out;
    }
    idvec_fini(&saved_tokens);
    free(saved_spans);
    /* worth loading when the snapshot shares more than nothing with us */
    ok = conv_common_prefix(ids, (size_t)n_tokens, cv->tokens.v, cv->tokens.n) > 0;
out:
    free(ids);
    free(mm);
    free(data);
    return ok;
}

/* ------------------------------------------------------------- sync use */

elm_status kvcache_restore_sync(elm_ctx *ctx, const char *kv_path, const int32_t *tokens,
                                size_t n, size_t *n_reused, char *err, size_t err_size)
{
    *n_reused = 0;
    elm_status st = elm_state_load(ctx, kv_path, err, err_size);
    if (st != ELM_OK) {
        elm_ctx_truncate(ctx, 0);
        return st;
    }
    size_t n_past = (size_t)elm_ctx_n_past(ctx);
    size_t lcp = conv_common_prefix(elm_ctx_tokens(ctx), n_past, tokens, n);
    st = elm_ctx_truncate(ctx, (int)lcp);
    if (st != ELM_OK) {
        elm_ctx_truncate(ctx, 0);
        snprintf(err, err_size, "%s: cannot truncate the restored cache", kv_path);
        return st;
    }
    if (lcp == 0) {
        snprintf(err, err_size, "%s: the snapshot holds another conversation", kv_path);
        return ELM_E_MISMATCH;
    }
    *n_reused = lcp;
    return ELM_OK;
}
