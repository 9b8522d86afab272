/* template_render.c: conversations to token ids: the incremental renderer
 * (a turn's ids never change once rendered) and the whole-conversation
 * path it is checked against, and the text form. */
#include "config.h"

#include "src/template/template.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/strbuf.h"
#include "src/template/template_impl.h"
#include "src/base/xalloc.h"

/* -------------------------------------------------------------- encoding */

/* One run: one elm_tokenize call, so it gets the dummy prefix. */
static int encode_run(const elm_tokenizer *tok, const char *s, size_t n, struct idvec *out)
{
    if (!n)
        return 0;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    elm_status rc = elm_tokenize(tok, s, n, false, &ids, &n_ids);
    if (rc != ELM_OK)
        return rc;
    idvec_append(out, ids, n_ids);
    free(ids);
    return 0;
}

static int encode_cont(const elm_tokenizer *tok, const char *s, size_t n, struct idvec *out);

/* A piece of a run: its start (dummy prefix) or a continuation (none). */
static int encode_piece(const elm_tokenizer *tok, const char *s, size_t n, bool cont,
                        struct idvec *out)
{
    return cont ? encode_cont(tok, s, n, out) : encode_run(tok, s, n, out);
}

/* The ids s[n_head..n) adds to s[0..n_head), both encoded as a piece
 * (cont as encode_piece), appended to out when the head's ids start the
 * whole's (*clean); else out is left alone. */
static int encode_past(const elm_tokenizer *tok, const char *s, size_t n_head, size_t n, bool cont,
                       struct idvec *out, bool *clean)
{
    struct idvec a = {0}, b = {0};
    int rc = encode_piece(tok, s, n_head, cont, &a);
    if (!rc)
        rc = encode_piece(tok, s, n, cont, &b);
    *clean = !rc && b.n >= a.n && memcmp(a.v, b.v, a.n * sizeof *a.v) == 0;
    if (*clean)
        idvec_append(out, b.v + a.n, b.n - a.n);
    idvec_fini(&a);
    idvec_fini(&b);
    return rc;
}

/* Text that continues a run after the model's ids: its mid-text encoding
 * (template.h), without the dummy prefix.  elm_tokenize always adds the
 * prefix, so encode "\n" + text and drop enc("\n"): when enc("\n") is a
 * prefix of the result, a piece boundary lies between the two (merged
 * pieces never split again, so no piece crossed it), and the ids after it are
 * exactly the text's own segmentation with nothing before it.  With the
 * LLaMA vocabulary "\n" is a byte piece that merges with nothing, so this
 * always holds; a vocabulary where it does not falls back to a run. */
static int encode_cont(const elm_tokenizer *tok, const char *s, size_t n, struct idvec *out)
{
    if (!n)
        return 0;
    char *joined = x_malloc(n + 1);
    joined[0] = '\n';
    memcpy(joined + 1, s, n);
    bool clean;
    int rc = encode_past(tok, joined, 1, n + 1, false, out, &clean);
    if (!rc && !clean)
        rc = encode_run(tok, s, n, out);
    free(joined);
    return rc;
}

/* A stored reply's tokens as the continuation of the piece `run` (encoded
 * with `cont`, see template.h).  When the join is not clean the reply is
 * still in the middle of a run: never a dummy prefix (it would decode as a
 * space the reply does not have). */
static int encode_reply(const elm_tokenizer *tok, const char *run, size_t n_run, bool cont,
                        const char *text, size_t n_text, struct idvec *out)
{
    if (!n_run)
        return encode_piece(tok, text, n_text, cont, out);
    char *joined = x_malloc(n_run + n_text + 1);
    memcpy(joined, run, n_run);
    memcpy(joined + n_run, text, n_text);
    bool clean;
    int rc = encode_past(tok, joined, n_run, n_run + n_text, cont, out, &clean);
    if (!rc && !clean)
        rc = encode_cont(tok, text, n_text, out);
    free(joined);
    return rc;
}

/* The parts of the assistant turn: [gp][lead]{content}[close]. */
static const char *reply_lead(const struct template *tpl, size_t *len)
{
    const char *at = tpl->turn[ROLE_ASSISTANT] + strlen(tpl->generation_prompt);
    *len = (size_t)(strstr(at, "{content}") - at);
    return at;
}

static const char *reply_close(const struct template *tpl)
{
    return strstr(tpl->turn[ROLE_ASSISTANT], "{content}") + strlen("{content}");
}

/* CLOSE = HEAD REST: HEAD is text, REST starts at the first {bos}/{eos}
 * (or is empty).  Returns REST; *head_len is HEAD's raw length. */
static const char *close_rest(const struct template *tpl, size_t *head_len)
{
    const char *close = reply_close(tpl);
    const char *p = close;
    while (*p) {
        if ((p[0] == '{' || p[0] == '}') && p[1] == p[0]) {
            p += 2;
            continue;
        }
        if (p[0] == '{')
            break;
        p++;
    }
    *head_len = (size_t)(p - close);
    return p;
}

/* Copy a lead (plain text, only {{ }} escapes) into b. */

/* HEAD unescaped (owned, NUL-terminated). */
static char *close_head(const struct template *tpl, size_t *len)
{
    size_t head_len;
    close_rest(tpl, &head_len);
    struct sbuf b = {0};
    sbuf_add(&b, "", 0);
    tpl_add_unescaped(&b, reply_close(tpl), head_len);
    *len = b.len;
    return b.data;
}

/* The longest stop string that begins HEAD (0: none): what a reply that
 * stopped on it has already written. */
static size_t head_stop_len(const struct template *tpl, const char *head)
{
    size_t best = 0;
    for (size_t i = 0; i < tpl->n_stop; i++) {
        size_t l = strlen(tpl->stop[i]);
        if (l > best && strncmp(head, tpl->stop[i], l) == 0)
            best = l;
    }
    return best;
}

/* The part of HEAD a stored reply counts as written by the model: a stop
 * string that begins HEAD (the model stops there and the rest is rendered,
 * as after TEMPLATE_END_STOP), else all of HEAD (written up to the EOS). */
static size_t head_model_len(const struct template *tpl, const char *head, size_t len)
{
    size_t k = head_stop_len(tpl, head);
    return k ? k : len;
}

/* -------------------------------------------------- incremental renderer */

/* Expands template strings into the renderer: text accumulates in pending,
 * a special id flushes it as one run. */
struct inc_sink {
    struct seg_sink base;
    struct template_render *r;
    struct sbuf pending; /* aliases r->pending while expanding */
    const char *content;
    struct idvec *out;
    int rc;
    int skip_until_eos; /* CLOSE after a sampled EOS: drop up to the first {eos} */
    size_t skip_text;   /* drop this many bytes of (unescaped) text first */
    bool cont;          /* as r->cont, while expanding */
    size_t n0;          /* pending's length before: a failure cuts it back there */
    char *saved;        /* pending's first n0 bytes, kept at the first flush (owned) */
};

/* tok NULL (text rendering): the LLaMA ids. */
static int32_t special_id(const elm_tokenizer *tok, enum seg kind)
{
    if (!tok)
        return kind == SEG_BOS ? 1 : 2;
    return kind == SEG_BOS ? elm_tokenizer_bos(tok) : elm_tokenizer_eos(tok);
}

static void inc_fn(struct seg_sink *sink, enum seg kind, const char *text, size_t len)
{
    struct inc_sink *s = (struct inc_sink *)sink;
    if (s->rc)
        return;
    if (s->skip_until_eos) {
        if (kind == SEG_EOS) {
            s->skip_until_eos = 0;
            s->cont = false; /* the sampled EOS ended the run */
        }
        return;
    }
    if (s->skip_text && kind == SEG_TEXT) {
        size_t k = len < s->skip_text ? len : s->skip_text;
        s->skip_text -= k;
        text += k;
        len -= k;
    }
    switch (kind) {
    case SEG_TEXT:
        sbuf_add(&s->pending, text, len);
        break;
    case SEG_CONTENT:
        sbuf_add(&s->pending, s->content, strlen(s->content));
        break;
    case SEG_BOS:
    case SEG_EOS:
        s->rc = encode_piece(s->r->tok, s->pending.data, s->pending.len, s->cont, s->out);
        if (!s->rc) {
            if (!s->saved && s->n0) { /* what a failure must give back (once) */
                s->saved = x_malloc(s->n0);
                memcpy(s->saved, s->pending.data, s->n0);
            }
            s->pending.len = 0;
            s->cont = false;
            idvec_push(s->out, special_id(s->r->tok, kind));
        }
        break;
    }
}

/* Expand `str` (with content) onto the renderer, pending text continuing a
 * run after the model's ids when cont; on error restore. */
static int inc_expand_cont(struct template_render *r, const char *str, const char *content,
                           bool skip_until_eos, size_t skip_text, bool cont, struct idvec *out)
{
    size_t out_n = out->n;
    /* In place: appending leaves the first n0 bytes as they were, and a
     * flush saves them first, so a failure can give r back unchanged
     * without copying pending at every turn (it grows with every message
     * of a template that has no special id between turns). */
    struct inc_sink s = {{inc_fn}, r, {r->pending, r->n_pending, r->pending_cap},
                         content ? content : "", out, 0, skip_until_eos, skip_text, cont,
                         r->n_pending, NULL};
    const char *why;
    tpl_scan(str, &s.base, &why);
    if (s.rc) {
        out->n = out_n;
        if (s.saved)
            memcpy(s.pending.data, s.saved, s.n0);
        s.pending.len = s.n0;
    } else {
        r->cont = s.cont;
    }
    free(s.saved);
    r->pending = s.pending.data;
    r->n_pending = s.pending.len;
    r->pending_cap = s.pending.cap;
    if (r->pending)
        r->pending[r->n_pending] = '\0';
    return s.rc;
}

static int inc_expand(struct template_render *r, const char *str, const char *content,
                      struct idvec *out)
{
    return inc_expand_cont(r, str, content, false, 0, r->cont, out);
}

void template_render_init(struct template_render *r, const struct template *tpl,
                          const elm_tokenizer *tok)
{
    memset(r, 0, sizeof *r);
    r->tpl = tpl;
    r->tok = tok;
}

void template_render_fini(struct template_render *r)
{
    free(r->pending);
    free(r->run);
    memset(r, 0, sizeof *r);
}

void template_render_reset(struct template_render *r)
{
    r->state = TEMPLATE_START;
    r->n_pending = 0;
    r->n_run = 0;
    r->cont = r->run_cont = false;
}

/* The pending text left after template_render_reply: the text after the
 * last special id of CLOSE, starting a new run; when CLOSE has no special
 * id, the part of HEAD the model does not write, continuing the reply's run. */
void template_render_set_after_reply(struct template_render *r)
{
    size_t head_len;
    const char *rest = close_rest(r->tpl, &head_len);
    const char *last = NULL;
    for (const char *p = rest; (p = strchr(p, '{'));) {
        if (p[1] == '{') {
            p += 2;
            continue;
        }
        p = strchr(p, '}') + 1;
        last = p;
    }
    struct sbuf b = {r->pending, 0, r->pending_cap};
    sbuf_add(&b, "", 0);
    if (last) {
        tpl_add_unescaped(&b, last, strlen(last));
    } else {
        size_t len;
        char *head = close_head(r->tpl, &len);
        size_t k = head_model_len(r->tpl, head, len);
        sbuf_add(&b, head + k, len - k);
        free(head);
    }
    r->pending = b.data;
    r->n_pending = b.len;
    r->pending_cap = b.cap;
    r->n_run = 0;
    r->cont = !last;
    r->run_cont = false;
    r->state = TEMPLATE_AFTER_REPLY;
}

static int ensure_prefix(struct template_render *r, struct idvec *out)
{
    if (r->state != TEMPLATE_START)
        return 0;
    int rc = inc_expand(r, r->tpl->prefix, NULL, out);
    if (!rc)
        r->state = TEMPLATE_AFTER_PREFIX;
    return rc;
}

int template_render_system(struct template_render *r, const char *system, struct idvec *out)
{
    if (r->state != TEMPLATE_START)
        return ELM_E_INVALID;
    if (!system)
        system = r->tpl->default_system ? r->tpl->default_system : "";
    size_t out_n = out->n;
    int rc = ensure_prefix(r, out);
    if (rc)
        return rc;
    if (*system || r->tpl->system_always) {
        rc = inc_expand(r, r->tpl->turn[ROLE_SYSTEM], system, out);
        if (rc) {
            out->n = out_n;
            template_render_reset(r);
            return rc;
        }
        r->state = TEMPLATE_AFTER_SYSTEM;
    }
    return 0;
}

int template_render_user(struct template_render *r, const char *content, struct idvec *out)
{
    if (r->state == TEMPLATE_IN_REPLY)
        return ELM_E_INVALID;
    enum template_state old = r->state;
    size_t out_n = out->n;
    int rc = ensure_prefix(r, out);
    if (rc)
        return rc;
    const char *turn = old == TEMPLATE_AFTER_SYSTEM && r->tpl->user_after_system
                           ? r->tpl->user_after_system
                           : r->tpl->turn[ROLE_USER];
    rc = inc_expand(r, turn, content, out);
    if (rc) {
        out->n = out_n;
        r->state = old;
        return rc;
    }
    r->state = TEMPLATE_AFTER_USER;
    return 0;
}

int template_render_generation_prompt(struct template_render *r, struct idvec *out)
{
    if (r->state == TEMPLATE_IN_REPLY)
        return ELM_E_INVALID;
    enum template_state old = r->state;
    size_t out_n = out->n;
    int rc = ensure_prefix(r, out);
    if (!rc)
        rc = inc_expand(r, r->tpl->generation_prompt, NULL, out);
    /* The generation point: the pending piece of the run is encoded now. */
    if (!rc)
        rc = encode_piece(r->tok, r->pending, r->n_pending, r->cont, out);
    if (rc) {
        out->n = out_n;
        r->state = old;
        return rc;
    }
    struct sbuf run = {r->run, 0, r->run_cap};
    sbuf_add(&run, r->pending ? r->pending : "", r->n_pending);
    r->run = run.data;
    r->n_run = run.len;
    r->run_cap = run.cap;
    r->run_cont = r->cont;
    r->n_pending = 0;
    r->state = TEMPLATE_IN_REPLY;
    return 0;
}

int template_render_reply_end(struct template_render *r, enum template_end how,
                              struct idvec *out)
{
    if (r->state != TEMPLATE_IN_REPLY)
        return ELM_E_INVALID;
    const char *close = reply_close(r->tpl);
    bool skip_eos = how == TEMPLATE_END_EOS && strstr(close, "{eos}") != NULL;
    size_t skip_text = 0;
    if (how == TEMPLATE_END_STOP) {
        size_t len;
        char *head = close_head(r->tpl, &len);
        skip_text = head_stop_len(r->tpl, head);
        free(head);
    }
    /* After a sampled EOS (a special id) the closing starts a new run;
     * otherwise it continues the reply's run after the model's ids. */
    int rc = inc_expand_cont(r, close, NULL, skip_eos, skip_text, how != TEMPLATE_END_EOS, out);
    if (rc)
        return rc;
    r->state = TEMPLATE_AFTER_REPLY;
    return 0;
}

/* LEAD content HEAD[:k]: the text a re-rendered reply's model wrote (k =
 * head_model_len); *skip = k, the bytes of CLOSE's text it covers. */
static char *reply_text(const struct template *tpl, const char *content, size_t *len,
                        size_t *skip)
{
    size_t lead_len, head_n;
    const char *lead = reply_lead(tpl, &lead_len);
    char *head = close_head(tpl, &head_n);
    *skip = head_model_len(tpl, head, head_n);
    struct sbuf t = {0};
    sbuf_add(&t, "", 0);
    tpl_add_unescaped(&t, lead, lead_len);
    sbuf_add(&t, content, strlen(content));
    sbuf_add(&t, head, *skip);
    free(head);
    *len = t.len;
    return t.data;
}

int template_render_reply(struct template_render *r, const char *content, struct idvec *out)
{
    if (r->state != TEMPLATE_IN_REPLY)
        return ELM_E_INVALID;
    size_t out_n = out->n;
    size_t len, skip;
    char *text = reply_text(r->tpl, content, &len, &skip);
    int rc = encode_reply(r->tok, r->run, r->n_run, r->run_cont, text, len, out);
    free(text);
    /* The rest of CLOSE continues the reply's run, as after a sampled
     * reply that ended on the stop string (or ended at HEAD's end). */
    if (!rc) {
        rc = inc_expand_cont(r, reply_close(r->tpl), NULL, false, skip, true, out);
        if (!rc)
            r->state = TEMPLATE_AFTER_REPLY;
    }
    if (rc)
        out->n = out_n;
    return rc;
}

/* ------------------------------------------------- whole-conversation path */

/* Items of a flattened conversation, encoded in one pass afterwards. */
enum item_kind { IT_TEXT, IT_SPECIAL, IT_CUT, IT_REPLY };
struct item {
    enum item_kind kind;
    int32_t id;
    char *text;
    size_t len;
};
struct item_sink {
    struct seg_sink base;
    struct item *v;
    size_t n, cap;
    const char *content;
    const elm_tokenizer *tok;
};

static void item_add(struct item_sink *s, enum item_kind kind, int32_t id, const char *text,
                     size_t len)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 32;
        s->v = x_reallocarray(s->v, s->cap, sizeof *s->v);
    }
    s->v[s->n++] = (struct item){kind, id, text ? x_strndup(text, len) : NULL, len};
}

static void item_fn(struct seg_sink *sink, enum seg kind, const char *text, size_t len)
{
    struct item_sink *s = (struct item_sink *)sink;
    if (kind == SEG_TEXT)
        item_add(s, IT_TEXT, 0, text, len);
    else if (kind == SEG_CONTENT)
        item_add(s, IT_TEXT, 0, s->content, strlen(s->content));
    else
        item_add(s, IT_SPECIAL, special_id(s->tok, kind), NULL, 0);
}

static void items_expand(struct item_sink *s, const char *str, const char *content)
{
    const char *why;
    s->content = content ? content : "";
    tpl_scan(str, &s->base, &why);
}

static void items_flatten(struct item_sink *s, const struct template *tpl, const char *system,
                          const struct template_msg *msgs, size_t n_msgs, bool add_gen)
{
    if (!system)
        system = tpl->default_system ? tpl->default_system : "";
    items_expand(s, tpl->prefix, NULL);
    bool after_system = false;
    if (*system || tpl->system_always) {
        items_expand(s, tpl->turn[ROLE_SYSTEM], system);
        after_system = true;
    }
    for (size_t i = 0; i < n_msgs; i++) {
        if (msgs[i].role == ROLE_ASSISTANT) {
            items_expand(s, tpl->generation_prompt, NULL);
            item_add(s, IT_CUT, 0, NULL, 0);
            size_t len, skip, head_n, head_len;
            char *text = reply_text(tpl, msgs[i].content, &len, &skip);
            item_add(s, IT_REPLY, 0, text, len);
            free(text);
            char *head = close_head(tpl, &head_n);
            if (head_n > skip)
                item_add(s, IT_TEXT, 0, head + skip, head_n - skip);
            free(head);
            items_expand(s, close_rest(tpl, &head_len), NULL);
        } else {
            const char *turn = after_system && tpl->user_after_system ? tpl->user_after_system
                                                                      : tpl->turn[ROLE_USER];
            items_expand(s, turn, msgs[i].content);
        }
        after_system = false;
    }
    if (add_gen) {
        items_expand(s, tpl->generation_prompt, NULL);
        item_add(s, IT_CUT, 0, NULL, 0);
    }
}

int template_render_conversation(const struct template *tpl, const elm_tokenizer *tok,
                                 const char *system, const struct template_msg *msgs,
                                 size_t n_msgs, bool add_generation_prompt, struct idvec *out)
{
    struct item_sink s = {{item_fn}, NULL, 0, 0, NULL, tok};
    items_flatten(&s, tpl, system, msgs, n_msgs, add_generation_prompt);
    size_t out_n = out->n;
    struct sbuf run = {0}, last_run = {0};
    sbuf_add(&run, "", 0);
    sbuf_add(&last_run, "", 0);
    /* cont: the piece in `run` continues a run after a reply (template.h). */
    bool cont = false, last_cont = false;
    int rc = 0;
    for (size_t i = 0; i < s.n && !rc; i++) {
        struct item *it = &s.v[i];
        switch (it->kind) {
        case IT_TEXT:
            sbuf_add(&run, it->text, it->len);
            break;
        case IT_SPECIAL:
            rc = encode_piece(tok, run.data, run.len, cont, out);
            run.len = 0;
            cont = false;
            idvec_push(out, it->id);
            break;
        case IT_CUT:
            rc = encode_piece(tok, run.data, run.len, cont, out);
            last_run.len = 0;
            sbuf_add(&last_run, run.data, run.len);
            last_cont = cont;
            run.len = 0;
            break;
        case IT_REPLY:
            rc = encode_reply(tok, last_run.data, last_run.len, last_cont, it->text, it->len,
                              out);
            cont = true;
            break;
        }
    }
    /* Text after the last special id stays unencoded: it starts the next run. */
    for (size_t i = 0; i < s.n; i++)
        free(s.v[i].text);
    free(s.v);
    free(run.data);
    free(last_run.data);
    if (rc)
        out->n = out_n;
    return rc;
}

char *template_render_text(const struct template *tpl, const char *system,
                           const struct template_msg *msgs, size_t n_msgs,
                           bool add_generation_prompt)
{
    struct item_sink s = {{item_fn}, NULL, 0, 0, NULL, NULL};
    items_flatten(&s, tpl, system, msgs, n_msgs, add_generation_prompt);
    struct sbuf t = {0};
    sbuf_add(&t, "", 0);
    for (size_t i = 0; i < s.n; i++) {
        struct item *it = &s.v[i];
        if (it->kind == IT_TEXT || it->kind == IT_REPLY)
            sbuf_add(&t, it->text, it->len);
        else if (it->kind == IT_SPECIAL)
            sbuf_add(&t, it->id == 1 ? "<s>" : "</s>", it->id == 1 ? 3 : 4);
        free(it->text);
    }
    free(s.v);
    return t.data;
}
