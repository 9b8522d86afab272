/* conversation.c: the token sequence of a session and the worker requests
 * (conversation.h, docs/DESIGN.md §5). */
#include "config.h"

#include "src/conversation/conversation.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/conversation/session_tree.h"
#include "src/base/xalloc.h"

#define NO_POS ((size_t)-1)

struct conv_snap {
    size_t n_tokens; /* NO_POS: no snapshot (message out of context) */
    struct template_render r;
};

/* Snapshot slots: [0] after the system span, [1 + i] before message i,
 * [1 + n_msgs] the reply in progress (after its generation prompt). */
#define SNAP_SYS 0
#define SNAP_MSG(i) (1 + (i))

/* ------------------------------------------------------------- helpers */

struct conv_policy conv_policy_default(void)
{
    struct conv_policy p = {CONTEXT_DROP_OLDEST, 0.85f};
    return p;
}

struct conv_policy conv_policy_from_config(const struct config *cfg)
{
    struct conv_policy p = conv_policy_default();
    if (cfg)
        p.policy = cfg->policy;
    return p;
}

size_t conversation_snapshot_bytes(const struct conversation *cv)
{
    size_t n = 0;
    for (size_t i = 0; cv->snaps && i < cv->cap + 2; i++)
        n += cv->snaps[i].r.pending_cap + cv->snaps[i].r.run_cap;
    return n;
}

size_t conv_common_prefix(const int32_t *a, size_t na, const int32_t *b, size_t nb)
{
    size_t n = na < nb ? na : nb, i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

static uint64_t msg_hash(enum role role, const char *content)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)role;
    for (const unsigned char *p = (const unsigned char *)content; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return h;
}

static void render_copy(struct template_render *dst, const struct template_render *src)
{
    *dst = *src;
    dst->pending = NULL;
    dst->run = NULL;
    dst->pending_cap = dst->run_cap = 0;
    if (src->pending) {
        dst->pending_cap = src->n_pending + 1;
        dst->pending = x_malloc(dst->pending_cap);
        memcpy(dst->pending, src->pending, src->n_pending);
        dst->pending[src->n_pending] = '\0';
    }
    if (src->run) {
        dst->run_cap = src->n_run + 1;
        dst->run = x_malloc(dst->run_cap);
        memcpy(dst->run, src->run, src->n_run);
        dst->run[src->n_run] = '\0';
    }
}

static void snap_clear(struct conv_snap *sn)
{
    template_render_fini(&sn->r);
    sn->n_tokens = NO_POS;
}

/* A snapshot copies the renderer's pending text, which a template without
 * a special id between turns (plain) grows by every message: copied at
 * each of them, 50,000 messages took gigabytes.  Past this size none is
 * taken; a rewind there renders again instead (linear in the text). */
#define SNAP_MAX_PENDING 4096

static void snap_take(struct conversation *cv, size_t slot)
{
    struct conv_snap *sn = &cv->snaps[slot];
    template_render_fini(&sn->r);
    if (cv->r.n_pending + cv->r.n_run > SNAP_MAX_PENDING) {
        memset(&sn->r, 0, sizeof sn->r);
        sn->n_tokens = NO_POS;
        return;
    }
    render_copy(&sn->r, &cv->r);
    sn->n_tokens = cv->tokens.n;
}

/* Room for n messages (spans) and their snapshots. */
static void reserve_msgs(struct conversation *cv, size_t n)
{
    if (n <= cv->cap && cv->snaps)
        return;
    size_t cap = cv->cap ? cv->cap : 16;
    while (cap < n)
        cap *= 2;
    cv->spans = x_reallocarray(cv->spans, cap, sizeof *cv->spans);
    cv->snaps = x_reallocarray(cv->snaps, cap + 2, sizeof *cv->snaps);
    size_t old = cv->snaps && cv->cap ? cv->cap + 2 : 0;
    for (size_t i = old; i < cap + 2; i++) {
        memset(&cv->snaps[i], 0, sizeof cv->snaps[i]);
        cv->snaps[i].n_tokens = NO_POS;
    }
    for (size_t i = cv->cap; i < cap; i++)
        cv->spans[i] = (struct conv_span){NO_POS, NO_POS, NO_POS, NO_POS, TEMPLATE_END_CUT,
                                          false, 0};
    cv->cap = cap;
}

static size_t reply_slot(const struct conversation *cv)
{
    return SNAP_MSG(cv->s->n_msgs);
}

static void set_err(char *err, size_t err_size, const char *what, int rc)
{
    if (err && err_size)
        snprintf(err, err_size, "%s: %s", what, elm_status_str((elm_status)rc));
}

/* ------------------------------------------------------------ life cycle */

void conversation_init(struct conversation *cv, struct session *s, const struct template *tpl,
                       const elm_tokenizer *tok, int n_ctx, const struct conv_policy *policy)
{
    memset(cv, 0, sizeof *cv);
    cv->s = s;
    cv->tpl = tpl;
    cv->tok = tok;
    cv->policy = policy ? *policy : conv_policy_default();
    cv->n_ctx = n_ctx > 0 ? n_ctx : 2048;
    template_render_init(&cv->r, tpl, tok);
    reserve_msgs(cv, s->n_msgs + 1);
}

void conversation_fini(struct conversation *cv)
{
    if (!cv)
        return;
    if (cv->snaps)
        for (size_t i = 0; i < cv->cap + 2; i++)
            template_render_fini(&cv->snaps[i].r);
    free(cv->snaps);
    free(cv->spans);
    template_render_fini(&cv->r);
    idvec_fini(&cv->tokens);
    idvec_fini(&cv->cache);
    idvec_fini(&cv->lookup);
    session_restore_fini(&cv->undo.r);
    memset(cv, 0, sizeof *cv);
}

void conversation_set_template(struct conversation *cv, const struct template *tpl,
                               const elm_tokenizer *tok)
{
    cv->tpl = tpl;
    cv->tok = tok;
    cv->rendered = false;
}

void conversation_set_policy(struct conversation *cv, const struct conv_policy *policy)
{
    cv->policy = policy ? *policy : conv_policy_default();
}

/* -------------------------------------------------------------- rebuild */

/* Render the in-context messages from scratch into cv (tokens, spans,
 * snapshots, renderer).  A reply whose span in the old sequence holds the
 * model's own ids (and whose text has not changed since) keeps them: the
 * generation prompt, those ids, then the template's closing, exactly as
 * when it was sampled; only replies known by their text alone are encoded
 * again.  gen_prompt: end with the generation prompt (a reply is wanted
 * after the last message).  On failure cv is unchanged. */
static int rebuild(struct conversation *cv, bool gen_prompt, char *err, size_t err_size)
{
    struct session *s = cv->s;
    struct conversation nv;
    memset(&nv, 0, sizeof nv);
    nv.s = s;
    nv.tpl = cv->tpl;
    nv.tok = cv->tok;
    template_render_init(&nv.r, cv->tpl, cv->tok);
    reserve_msgs(&nv, s->n_msgs + 1);

    int rc = template_render_system(&nv.r, s->system, &nv.tokens);
    if (rc) {
        set_err(err, err_size, "cannot render the system prompt", rc);
        goto fail;
    }
    nv.system_end = nv.tokens.n;
    snap_take(&nv, SNAP_SYS);
    for (size_t i = 0; i < s->n_msgs; i++) {
        const struct message *m = &s->msgs[i];
        struct conv_span *sp = &nv.spans[i];
        *sp = (struct conv_span){NO_POS, NO_POS, NO_POS, NO_POS, TEMPLATE_END_CUT, false,
                                 msg_hash(m->role, m->content)};
        if (m->out_of_context)
            continue;
        if (m->role == ROLE_SYSTEM) { /* kept in the file, not rendered */
            sp->start = sp->gen = sp->sampled_end = sp->end = nv.tokens.n;
            snap_take(&nv, SNAP_MSG(i));
            continue;
        }
        if (m->role == ROLE_USER) {
            sp->start = nv.tokens.n;
            snap_take(&nv, SNAP_MSG(i));
            rc = template_render_user(&nv.r, m->content, &nv.tokens);
            /* The generation prompt belongs to the user turn it answers. */
            bool reply_next = false;
            for (size_t j = i + 1; j < s->n_msgs; j++) {
                if (s->msgs[j].out_of_context || s->msgs[j].role == ROLE_SYSTEM)
                    continue;
                reply_next = s->msgs[j].role == ROLE_ASSISTANT;
                break;
            }
            if (!rc && reply_next)
                rc = template_render_generation_prompt(&nv.r, &nv.tokens);
            sp->gen = sp->sampled_end = sp->end = nv.tokens.n;
            if (rc) {
                set_err(err, err_size, "cannot render a user message", rc);
                goto fail;
            }
            continue;
        }
        /* assistant */
        sp->start = nv.tokens.n;
        if (nv.r.state != TEMPLATE_IN_REPLY) {
            rc = template_render_generation_prompt(&nv.r, &nv.tokens);
            if (rc) {
                set_err(err, err_size, "cannot render the generation prompt", rc);
                goto fail;
            }
        }
        sp->gen = nv.tokens.n;
        snap_take(&nv, SNAP_MSG(i));
        const struct conv_span *old = cv->spans && i < cv->cap ? &cv->spans[i] : NULL;
        if (old && old->sampled && old->hash == sp->hash && old->end != NO_POS &&
            old->sampled_end <= cv->tokens.n && old->gen <= old->sampled_end) {
            idvec_append(&nv.tokens, cv->tokens.v + old->gen, old->sampled_end - old->gen);
            sp->sampled_end = nv.tokens.n;
            sp->sampled = true;
            sp->how = old->how;
            rc = template_render_reply_end(&nv.r, old->how, &nv.tokens);
        } else {
            rc = template_render_reply(&nv.r, m->content, &nv.tokens);
            /* its ids are the text's encoding followed by the closing: no
             * separate sampled end is known, use the whole span */
            sp->sampled_end = nv.tokens.n;
            sp->how = TEMPLATE_END_CUT;
        }
        sp->end = nv.tokens.n;
        if (rc) {
            set_err(err, err_size, "cannot render a reply", rc);
            goto fail;
        }
    }
    if (gen_prompt && nv.r.state != TEMPLATE_IN_REPLY) {
        rc = template_render_generation_prompt(&nv.r, &nv.tokens);
        if (rc) {
            set_err(err, err_size, "cannot render the generation prompt", rc);
            goto fail;
        }
        /* part of the last user message's span */
        for (size_t i = s->n_msgs; i-- > 0;) {
            if (nv.spans[i].end != NO_POS) {
                nv.spans[i].end = nv.tokens.n;
                if (s->msgs[i].role == ROLE_USER)
                    nv.spans[i].gen = nv.spans[i].sampled_end = nv.tokens.n;
                break;
            }
        }
    }
    nv.in_reply = nv.r.state == TEMPLATE_IN_REPLY;
    nv.reply_gen = nv.tokens.n;
    if (nv.in_reply)
        snap_take(&nv, SNAP_MSG(s->n_msgs));

    /* success: swap in */
    nv.cache = cv->cache;
    memset(&cv->cache, 0, sizeof cv->cache);
    nv.lookup = cv->lookup;
    memset(&cv->lookup, 0, sizeof cv->lookup);
    nv.undo = cv->undo;
    memset(&cv->undo, 0, sizeof cv->undo);
    nv.policy = cv->policy;
    nv.n_ctx = cv->n_ctx;
    nv.n_dropped_last = cv->n_dropped_last;
    nv.rendered = true;
    conversation_fini(cv);
    *cv = nv;
    return 0;
fail:
    conversation_fini(&nv);
    return rc;
}

/* ------------------------------------------------------- context policy */

static int cap_reserve(const struct conversation *cv, int reserve)
{
    if (reserve < 0)
        reserve = 0;
    if (reserve > cv->n_ctx / 4)
        reserve = cv->n_ctx / 4;
    return reserve;
}

static bool fits(const struct conversation *cv, int reserve)
{
    return cv->tokens.n + (size_t)reserve <= (size_t)cv->n_ctx;
}

/* The turn (user message and the replies after it) holding message i:
 * [*first, *last]. */
static void turn_bounds(const struct session *s, size_t i, size_t *first, size_t *last)
{
    size_t a = i;
    while (a > 0 && s->msgs[a].role != ROLE_USER)
        a--;
    if (s->msgs[a].role != ROLE_USER)
        a = i; /* replies before any user message: a turn of their own */
    size_t b = a + 1;
    while (b < s->n_msgs && s->msgs[b].role != ROLE_USER)
        b++;
    *first = a;
    *last = b - 1;
}

static bool turn_pinned(const struct session *s, size_t a, size_t b)
{
    for (size_t i = a; i <= b; i++)
        if (s->msgs[i].pinned)
            return true;
    return false;
}

static size_t turn_tokens(const struct conversation *cv, size_t a, size_t b)
{
    size_t n = 0;
    for (size_t i = a; i <= b; i++)
        if (cv->spans[i].end != NO_POS && cv->spans[i].start != NO_POS)
            n += cv->spans[i].end - cv->spans[i].start;
    return n;
}

/* Make the sequence fit n_ctx with reserve tokens free (the sequence is
 * rendered, possibly ending in a generation prompt).  Drop-oldest marks
 * the oldest whole unpinned turns out of context, never the last turn (the
 * one being answered), then renders again.
 *
 * Why render again rather than cut the dropped spans out of the sequence:
 * the K rows are cached after RoPE at their absolute positions, so every
 * kept token after the first dropped one must be computed anew anyway; and
 * a turn's ids depend on its neighbours (the text a turn leaves pending
 * starts the next turn's run, and the first user turn after the system
 * prompt may have its own form, roles.user.after_system), so splicing old
 * spans would give a sequence that no rendering of the kept messages
 * produces, one a reload of the session file could never reproduce.  The
 * replies keep their sampled ids (rebuild), so nothing drifts; the kept
 * prefix before the first dropped turn is found in the cache by the
 * worker's common-prefix rule and not computed again. */
static int apply_policy(struct conversation *cv, int reserve, char *err, size_t err_size)
{
    struct session *s = cv->s;
    cv->n_dropped_last = 0;
    if (fits(cv, reserve))
        return 0;
    if (cv->policy.policy == CONTEXT_STOP) {
        snprintf(err, err_size,
                 "the context is full: %zu tokens + %d for the reply > %d "
                 "(context policy 'stop'): /undo, /clear or /new, or set "
                 "context.policy: drop-oldest",
                 cv->tokens.n, reserve, cv->n_ctx);
        return CONV_FULL;
    }
    if (s->n_msgs == 0) {
        snprintf(err, err_size, "the system prompt alone (%zu tokens) does not fit in %d",
                 cv->tokens.n, cv->n_ctx);
        return CONV_FULL;
    }
    size_t last_first, last_last;
    turn_bounds(s, s->n_msgs - 1, &last_first, &last_last);
    /* Is it possible at all?  (An estimate by the current spans; rendering
     * again may shift a few ids at the seams, hence the rounds below.) */
    size_t droppable = 0;
    for (size_t i = 0; i < last_first;) {
        size_t a, b;
        turn_bounds(s, i, &a, &b);
        if (b >= last_first)
            break;
        if (!turn_pinned(s, a, b))
            droppable += turn_tokens(cv, a, b);
        i = b + 1;
    }
    if (droppable == 0 || cv->tokens.n - droppable + (size_t)reserve > (size_t)cv->n_ctx) {
        snprintf(err, err_size,
                 "the context is full: %zu tokens + %d for the reply > %d even with every "
                 "unpinned earlier turn dropped: /pin less, shorten the message, /clear or /new",
                 cv->tokens.n, reserve, cv->n_ctx);
        return CONV_FULL;
    }
    bool *drop = x_calloc(s->n_msgs, sizeof *drop);
    size_t n_drop = 0;
    int rc = 0;
    for (int round = 0; round < 4 && !fits(cv, reserve); round++) {
        size_t need = cv->tokens.n + (size_t)reserve - (size_t)cv->n_ctx;
        size_t freed = 0, marked = 0;
        for (size_t i = 0; i < last_first && freed < need;) {
            size_t a, b;
            turn_bounds(s, i, &a, &b);
            if (b >= last_first)
                break;
            bool in_ctx = false;
            for (size_t k = a; k <= b; k++)
                in_ctx |= !s->msgs[k].out_of_context;
            if (in_ctx && !turn_pinned(s, a, b)) {
                freed += turn_tokens(cv, a, b);
                for (size_t k = a; k <= b; k++) {
                    if (!s->msgs[k].out_of_context) {
                        s->msgs[k].out_of_context = true;
                        drop[k] = true;
                        marked++;
                    }
                }
            }
            i = b + 1;
        }
        if (marked == 0)
            break;
        n_drop += marked;
        rc = rebuild(cv, cv->in_reply, err, err_size);
        if (rc)
            break;
    }
    if (!rc && !fits(cv, reserve)) {
        snprintf(err, err_size,
                 "the context is full: %zu tokens + %d for the reply > %d even with every "
                 "unpinned earlier turn dropped: /pin less, shorten the message, /clear or /new",
                 cv->tokens.n, reserve, cv->n_ctx);
        rc = CONV_FULL;
    }
    if (rc) {
        /* as it was: the turns come back */
        for (size_t k = 0; k < s->n_msgs; k++)
            if (drop[k])
                s->msgs[k].out_of_context = false;
        if (n_drop)
            rebuild(cv, cv->in_reply, NULL, 0);
        n_drop = 0;
    }
    free(drop);
    cv->n_dropped_last = n_drop;
    return rc;
}

/* ------------------------------------------------------------- queries */

void conversation_fill(const struct conversation *cv, struct conv_fill *f)
{
    memset(f, 0, sizeof *f);
    f->n_tokens = (int)cv->tokens.n;
    f->n_ctx = cv->n_ctx;
    f->fraction = cv->n_ctx > 0 ? (float)cv->tokens.n / (float)cv->n_ctx : 0.0f;
    f->warn = f->fraction >= cv->policy.warn_fraction;
    for (size_t i = 0; i < cv->s->n_msgs; i++) {
        f->n_out_of_context += cv->s->msgs[i].out_of_context;
        f->n_pinned += cv->s->msgs[i].pinned;
    }
}

const char *conversation_fill_warning(const struct conversation *cv, char *buf, size_t size)
{
    struct conv_fill f;
    conversation_fill(cv, &f);
    if (!f.warn || !size)
        return "";
    snprintf(buf, size, "context %d/%d (%d%%): %s", f.n_tokens, f.n_ctx,
             (int)(f.fraction * 100.0f + 0.5f),
             cv->policy.policy == CONTEXT_STOP ? "new turns will be refused when it is full"
                                               : "the oldest turns will be dropped when it is full");
    return buf;
}

/* The expected cost of sending the sequence now. */
static void conversation_plan(const struct conversation *cv, struct conv_plan *plan)
{
    plan->n_tokens = (int)cv->tokens.n;
    size_t reuse = conv_common_prefix(cv->cache.v, cv->cache.n, cv->tokens.v, cv->tokens.n);
    plan->n_reuse = (int)reuse;
    plan->n_compute = (int)(cv->tokens.n - reuse);
    plan->n_dropped = (int)cv->n_dropped_last;
}

void conversation_set_cached(struct conversation *cv, int n_past)
{
    size_t n = n_past > 0 ? (size_t)n_past : 0;
    if (n > cv->tokens.n)
        n = cv->tokens.n;
    idvec_clear(&cv->cache);
    idvec_append(&cv->cache, cv->tokens.v, n);
}

void conversation_request(const struct conversation *cv, struct elm_request *req)
{
    req->tokens = cv->tokens.v;
    req->n_tokens = (int)cv->tokens.n;
    req->n_keep = -1;
    req->flags |= ELM_GEN_SYNC;
    req->lookup_tokens = cv->lookup.v;
    req->n_lookup_tokens = (int)cv->lookup.n;
}

void conversation_prefill_request(const struct conversation *cv, struct elm_request *req)
{
    conversation_request(cv, req);
    req->max_tokens = 0;
}

/* -------------------------------------------------------------- actions */

int conversation_render(struct conversation *cv, char *err, size_t err_size)
{
    bool gen = cv->s->n_msgs > 0 && cv->in_reply;
    int rc = rebuild(cv, gen, err, err_size);
    if (rc)
        return rc;
    return apply_policy(cv, 0, err, err_size);
}

int conversation_model_changed(struct conversation *cv, int n_ctx, char *err, size_t err_size)
{
    idvec_clear(&cv->cache);
    if (n_ctx > 0)
        cv->n_ctx = n_ctx;
    if (!cv->rendered) {
        int rc = rebuild(cv, cv->in_reply, err, err_size);
        if (rc)
            return rc;
    }
    return apply_policy(cv, 0, err, err_size);
}

/* What becomes of the messages a rewind takes off the path. */
enum rewind_mode {
    REWIND_DELETE, /* gone, with the branches that grow from them (undo, clear) */
    REWIND_KEEP,   /* kept as another branch (edit, retry, fork) */
};

static void cut_path(struct session *s, size_t n_keep, enum rewind_mode mode)
{
    if (mode == REWIND_KEEP)
        session_stash(s, n_keep);
    else
        session_truncate(s, n_keep);
}

/* Back to snapshot slot k (SNAP_SYS or SNAP_MSG(i)): tokens, renderer;
 * the session keeps its first n_msgs messages on the path. */
static bool rewind_to(struct conversation *cv, size_t slot, size_t n_msgs, enum rewind_mode mode)
{
    struct conv_snap *sn = &cv->snaps[slot];
    if (sn->n_tokens == NO_POS || sn->n_tokens > cv->tokens.n)
        return false;
    cv->tokens.n = sn->n_tokens;
    template_render_fini(&cv->r);
    render_copy(&cv->r, &sn->r);
    /* the slots past the kept messages are stale (the reply slot is
     * rewritten when a reply starts) */
    for (size_t i = n_msgs; i < cv->s->n_msgs; i++) {
        if (SNAP_MSG(i) != slot)
            snap_clear(&cv->snaps[SNAP_MSG(i)]);
        cv->spans[i].start = cv->spans[i].end = NO_POS;
    }
    snap_clear(&cv->snaps[reply_slot(cv)]);
    cut_path(cv->s, n_msgs, mode);
    cv->in_reply = cv->r.state == TEMPLATE_IN_REPLY;
    cv->reply_gen = cv->tokens.n;
    return true;
}

/* Render the generation prompt if needed and note where the reply begins. */
static int begin_reply(struct conversation *cv)
{
    if (cv->r.state != TEMPLATE_IN_REPLY) {
        int rc = template_render_generation_prompt(&cv->r, &cv->tokens);
        if (rc)
            return rc;
        /* the last message's span grows by the prompt */
        if (cv->s->n_msgs > 0) {
            struct conv_span *sp = &cv->spans[cv->s->n_msgs - 1];
            if (sp->end != NO_POS) {
                sp->end = cv->tokens.n;
                if (cv->s->msgs[cv->s->n_msgs - 1].role == ROLE_USER)
                    sp->gen = sp->sampled_end = cv->tokens.n;
            }
        }
    }
    cv->in_reply = true;
    cv->reply_gen = cv->tokens.n;
    snap_take(cv, reply_slot(cv));
    return 0;
}

/* The ids of reply i, for the worker's prompt lookup (its text is what a
 * retry says much of again). */
static void remember_reply(struct conversation *cv, size_t i)
{
    idvec_clear(&cv->lookup);
    const struct conv_span *sp = &cv->spans[i];
    if (sp->gen == NO_POS || sp->sampled_end == NO_POS || sp->sampled_end > cv->tokens.n ||
        sp->gen > sp->sampled_end)
        return;
    /* with the few ids before it, so that the first ids of the new reply
     * (which follow the same prompt) find their match too */
    size_t from = sp->gen > 8 ? sp->gen - 8 : 0;
    idvec_append(&cv->lookup, cv->tokens.v + from, sp->sampled_end - from);
}

static int ensure_rendered(struct conversation *cv, char *err, size_t err_size)
{
    if (cv->rendered)
        return 0;
    return rebuild(cv, false, err, err_size);
}

int conversation_user_turn(struct conversation *cv, const char *text, int reserve,
                           struct conv_plan *plan, char *err, size_t err_size)
{
    if (!session_has_room(cv->s, strlen(text), err, err_size))
        return ELM_E_INVALID;
    int rc = ensure_rendered(cv, err, err_size);
    if (rc)
        return rc;
    if (cv->in_reply && cv->s->n_msgs > 0 &&
        cv->s->msgs[cv->s->n_msgs - 1].role == ROLE_USER) {
        /* a user message whose reply never came: answer the new one instead
         * of leaving a dangling generation prompt in the middle */
        rewind_to(cv, SNAP_MSG(cv->s->n_msgs - 1), cv->s->n_msgs, REWIND_DELETE);
        cv->spans[cv->s->n_msgs - 1].end = cv->tokens.n;
        /* rewind_to restored the state before that message: render it again */
        size_t i = cv->s->n_msgs - 1;
        rc = template_render_user(&cv->r, cv->s->msgs[i].content, &cv->tokens);
        cv->spans[i].start = cv->snaps[SNAP_MSG(i)].n_tokens;
        cv->spans[i].gen = cv->spans[i].sampled_end = cv->spans[i].end = cv->tokens.n;
        cv->in_reply = false;
        if (rc) {
            set_err(err, err_size, "cannot render a user message", rc);
            return rc;
        }
    }
    if (cv->in_reply) {
        snprintf(err, err_size, "a reply is in progress");
        return ELM_E_INVALID;
    }
    size_t n_msgs = cv->s->n_msgs;
    reserve_msgs(cv, n_msgs + 1);
    snap_take(cv, SNAP_MSG(n_msgs));
    struct message *m = session_append(cv->s, ROLE_USER, text);
    struct conv_span *sp = &cv->spans[n_msgs];
    *sp = (struct conv_span){cv->tokens.n, NO_POS, NO_POS, NO_POS, TEMPLATE_END_CUT, false,
                             msg_hash(ROLE_USER, m->content)};
    rc = template_render_user(&cv->r, m->content, &cv->tokens);
    if (!rc) {
        sp->gen = sp->sampled_end = sp->end = cv->tokens.n;
        rc = begin_reply(cv);
    }
    if (rc) {
        set_err(err, err_size, "cannot render the message", rc);
        rewind_to(cv, SNAP_MSG(n_msgs), n_msgs, REWIND_DELETE);
        return rc;
    }
    reserve = cap_reserve(cv, reserve);
    rc = apply_policy(cv, reserve, err, err_size);
    if (rc) {
        /* nothing of this turn stays (apply_policy restored what it dropped) */
        size_t i = cv->s->n_msgs - 1;
        if (!rewind_to(cv, SNAP_MSG(i), i, REWIND_DELETE)) {
            session_truncate(cv->s, i);
            rebuild(cv, false, NULL, 0);
        }
        return rc;
    }
    if (plan)
        conversation_plan(cv, plan);
    return 0;
}

int conversation_retry(struct conversation *cv, int reserve, struct conv_plan *plan, char *err,
                       size_t err_size)
{
    if (!session_has_room(cv->s, 0, err, err_size))
        return ELM_E_INVALID;
    int rc = ensure_rendered(cv, err, err_size);
    if (rc)
        return rc;
    struct session *s = cv->s;
    size_t n = s->n_msgs;
    if (cv->in_reply && n > 0 && s->msgs[n - 1].role == ROLE_USER) {
        /* the prompt is there already, no reply yet */
    } else if (n > 0 && s->msgs[n - 1].role == ROLE_ASSISTANT && !s->msgs[n - 1].out_of_context) {
        remember_reply(cv, n - 1);
        size_t u = n - 1;
        while (u > 0 && s->msgs[u - 1].role == ROLE_ASSISTANT)
            u--;
        if (!rewind_to(cv, SNAP_MSG(u), u, REWIND_KEEP)) {
            session_stash(s, u);
            rc = rebuild(cv, true, err, err_size);
            if (rc)
                return rc;
        }
    } else if (n > 0 && s->msgs[n - 1].role == ROLE_USER) {
        /* a user message with no reply */
    } else {
        snprintf(err, err_size, "nothing to retry");
        return ELM_E_INVALID;
    }
    rc = begin_reply(cv);
    if (rc) {
        set_err(err, err_size, "cannot render the generation prompt", rc);
        return rc;
    }
    rc = apply_policy(cv, cap_reserve(cv, reserve), err, err_size);
    if (rc)
        return rc;
    if (plan)
        conversation_plan(cv, plan);
    return 0;
}

/* ------------------------------------------- what /undo puts back */

static void undo_forget(struct conversation *cv)
{
    session_restore_fini(&cv->undo.r);
    cv->undo = (struct conv_undo){0};
}

/* Before a command /undo can take back: the path's end. */
static void undo_begin(struct conversation *cv)
{
    undo_forget(cv);
    const struct session *s = cv->s;
    cv->undo.r.last = s->n_msgs ? s->msgs[s->n_msgs - 1].id : 0;
}

/* After it: what it was, and the tree as it left it. */
static void undo_done(struct conversation *cv, enum conv_undone what, size_t exchange)
{
    const struct session *s = cv->s;
    cv->undo.what = what;
    cv->undo.exchange = exchange;
    cv->undo.n_msgs = s->n_msgs;
    cv->undo.n_alts = s->n_alts;
    cv->undo.next_id = s->next_id;
    cv->undo.stamp = s->stamp;
}

enum conv_undone conversation_restorable(const struct conversation *cv)
{
    const struct conv_undo *u = &cv->undo;
    const struct session *s = cv->s;
    /* every change of the tree gives a new id (a message) or a new stamp
     * (a stash: edit, retry, fork, a switch) or changes the counts */
    if (u->what == CONV_UNDONE_NONE || u->r.last == 0 || s->n_msgs != u->n_msgs ||
        s->n_alts != u->n_alts || s->next_id != u->next_id || s->stamp != u->stamp)
        return CONV_UNDONE_NONE;
    return u->what;
}

int conversation_undo(struct conversation *cv, char **text, char *err, size_t err_size)
{
    int rc = ensure_rendered(cv, err, err_size);
    if (rc)
        return rc;
    struct session *s = cv->s;
    size_t u = s->n_msgs;
    while (u > 0 && s->msgs[u - 1].role != ROLE_USER)
        u--;
    if (u == 0) {
        snprintf(err, err_size, "nothing to undo");
        return ELM_E_INVALID;
    }
    u--;
    if (text)
        *text = x_strdup(s->msgs[u].content);
    undo_forget(cv);
    if (!rewind_to(cv, SNAP_MSG(u), u, REWIND_KEEP)) {
        session_stash(s, u);
        rc = rebuild(cv, false, err, err_size);
        if (rc)
            return rc;
    }
    return 0;
}

int conversation_remove_exchange(struct conversation *cv, size_t i, char *err, size_t err_size)
{
    int rc = ensure_rendered(cv, err, err_size);
    if (rc)
        return rc;
    struct session *s = cv->s;
    if (cv->in_reply || i >= s->n_msgs || s->msgs[i].role != ROLE_USER) {
        snprintf(err, err_size, cv->in_reply ? "a reply is in progress" : "not a user message");
        return ELM_E_INVALID;
    }
    size_t end = i + 1;
    while (end < s->n_msgs && s->msgs[end].role != ROLE_USER)
        end++;
    size_t exchange = 0;
    for (size_t k = 0; k <= i; k++)
        exchange += s->msgs[k].role == ROLE_USER;
    undo_begin(cv);
    if (end == s->n_msgs) { /* the last exchange: as /undo */
        if (!rewind_to(cv, SNAP_MSG(i), i, REWIND_KEEP)) {
            session_stash(s, i);
            rc = rebuild(cv, false, err, err_size);
        }
    } else {
        session_take_out(s, i, end - i, &cv->undo.r);
        rc = rebuild(cv, false, err, err_size);
    }
    undo_done(cv, CONV_UNDONE_REMOVE, exchange);
    return rc;
}

int conversation_edit(struct conversation *cv, size_t i, const char *text, int reserve,
                      struct conv_plan *plan, char *err, size_t err_size)
{
    if (!session_has_room(cv->s, strlen(text), err, err_size))
        return ELM_E_INVALID;
    int rc = ensure_rendered(cv, err, err_size);
    if (rc)
        return rc;
    struct session *s = cv->s;
    if (i >= s->n_msgs || s->msgs[i].role == ROLE_SYSTEM) {
        snprintf(err, err_size, "no message %zu to edit", i + 1);
        return ELM_E_INVALID;
    }
    enum role role = s->msgs[i].role;
    bool pinned = s->msgs[i].pinned;
    if (role == ROLE_USER && i + 1 < s->n_msgs && s->msgs[i + 1].role == ROLE_ASSISTANT)
        remember_reply(cv, i + 1);
    if (role == ROLE_USER && i + 1 < s->n_msgs && !s->msgs[i].out_of_context &&
        strcmp(s->msgs[i].content, text) == 0) {
        /* sent again as it was: another reply to the same message */
        rc = conversation_fork(cv, i, err, err_size);
        return rc ? rc : conversation_retry(cv, reserve, plan, err, err_size);
    }
    if (role == ROLE_USER) {
        if (!rewind_to(cv, SNAP_MSG(i), i, REWIND_KEEP)) {
            /* an out-of-context message: it comes back into context */
            session_stash(s, i);
            rc = rebuild(cv, false, err, err_size);
            if (rc)
                return rc;
        }
        rc = conversation_user_turn(cv, text, reserve, plan, err, err_size);
        if (!rc)
            s->msgs[i].pinned = pinned;
        return rc;
    }
    /* a reply: rendered from the new text, nothing generated */
    if (!rewind_to(cv, SNAP_MSG(i), i, REWIND_KEEP)) {
        session_stash(s, i);
        rc = rebuild(cv, true, err, err_size);
        if (rc)
            return rc;
    } else if (cv->r.state != TEMPLATE_IN_REPLY) {
        rc = begin_reply(cv);
        if (rc) {
            set_err(err, err_size, "cannot render the generation prompt", rc);
            return rc;
        }
    }
    size_t gen = cv->tokens.n;
    reserve_msgs(cv, s->n_msgs + 1);
    snap_take(cv, SNAP_MSG(s->n_msgs));
    rc = template_render_reply(&cv->r, text, &cv->tokens);
    if (rc) {
        set_err(err, err_size, "cannot render the reply", rc);
        return rc;
    }
    struct message *m = session_append(s, ROLE_ASSISTANT, text);
    m->pinned = pinned;
    cv->spans[s->n_msgs - 1] = (struct conv_span){gen, gen, cv->tokens.n, cv->tokens.n,
                                                  TEMPLATE_END_CUT, false,
                                                  msg_hash(ROLE_ASSISTANT, m->content)};
    cv->in_reply = false;
    rc = apply_policy(cv, 0, err, err_size);
    if (rc)
        return rc;
    if (plan)
        conversation_plan(cv, plan);
    return 0;
}

int conversation_fork(struct conversation *cv, size_t i, char *err, size_t err_size)
{
    int rc = ensure_rendered(cv, err, err_size);
    if (rc)
        return rc;
    struct session *s = cv->s;
    if (i >= s->n_msgs) {
        snprintf(err, err_size, "no message %zu", i + 1);
        return ELM_E_INVALID;
    }
    if (i + 1 == s->n_msgs)
        return 0;
    if (!rewind_to(cv, SNAP_MSG(i + 1), i + 1, REWIND_KEEP)) {
        session_stash(s, i + 1);
        rc = rebuild(cv, s->msgs[i].role == ROLE_USER, err, err_size);
    }
    return rc;
}

/* The path changed from message first on (session_select): those
 * messages come back into context and the sequence is rendered again (the
 * messages before keep their ids, so the worker's common prefix finds
 * them). */
static int path_changed(struct conversation *cv, size_t first, bool always,
                        struct conv_plan *plan, char *err, size_t err_size)
{
    struct session *s = cv->s;
    int rc = 0;
    if (always || first < s->n_msgs || cv->in_reply) {
        for (size_t k = first; k < s->n_msgs; k++)
            s->msgs[k].out_of_context = false;
        bool answer = s->n_msgs > 0 && s->msgs[s->n_msgs - 1].role == ROLE_USER;
        rc = rebuild(cv, answer, err, err_size);
        if (!rc)
            rc = apply_policy(cv, 0, err, err_size);
    }
    if (plan)
        conversation_plan(cv, plan);
    return rc;
}

int conversation_select(struct conversation *cv, uint32_t id, struct conv_plan *plan, char *err,
                        size_t err_size)
{
    int rc = ensure_rendered(cv, err, err_size);
    if (rc)
        return rc;
    size_t first = session_select(cv->s, id);
    if (first == SIZE_MAX) {
        snprintf(err, err_size, "no message with id %u in this session", id);
        return ELM_E_INVALID;
    }
    if (first == cv->s->n_msgs && !cv->in_reply) {
        if (plan)
            conversation_plan(cv, plan);
        return 0;
    }
    return path_changed(cv, first, false, plan, err, err_size);
}

int conversation_branch(struct conversation *cv, size_t i, size_t k, struct conv_plan *plan,
                        char *err, size_t err_size)
{
    int rc = ensure_rendered(cv, err, err_size);
    if (rc)
        return rc;
    size_t at, n;
    session_siblings(cv->s, i, &at, &n);
    if (n == 0) {
        snprintf(err, err_size, "no message %zu", i + 1);
        return ELM_E_INVALID;
    }
    if (k < 1 || k > n) {
        snprintf(err, err_size, n == 1 ? "this message has no other version"
                                       : "this message has versions 1 to %zu", n);
        return ELM_E_INVALID;
    }
    size_t first = session_branch(cv->s, i, k);
    if (first == cv->s->n_msgs && k == at) {
        if (plan)
            conversation_plan(cv, plan);
        return 0;
    }
    return path_changed(cv, first, false, plan, err, err_size);
}

void conversation_clear(struct conversation *cv)
{
    if (cv->s->n_msgs == 0)
        return;
    undo_begin(cv);
    if (!cv->rendered || !rewind_to(cv, SNAP_SYS, 0, REWIND_KEEP)) {
        session_stash(cv->s, 0);
        rebuild(cv, false, NULL, 0);
    }
    undo_done(cv, CONV_UNDONE_CLEAR, 0);
}

int conversation_restore(struct conversation *cv, struct conv_plan *plan, char *err,
                         size_t err_size)
{
    if (conversation_restorable(cv) == CONV_UNDONE_NONE) {
        snprintf(err, err_size, "nothing to put back");
        return ELM_E_INVALID;
    }
    int rc = ensure_rendered(cv, err, err_size);
    if (rc)
        return rc;
    size_t first = session_restore(cv->s, &cv->undo.r);
    undo_forget(cv);
    if (first == SIZE_MAX) {
        snprintf(err, err_size, "what was removed is not in the session any more");
        return ELM_E_INVALID;
    }
    /* the path may also have lost its end: render it whole again */
    return path_changed(cv, first, true, plan, err, err_size);
}

int conversation_pin(struct conversation *cv, size_t i, bool pinned)
{
    struct session *s = cv->s;
    if (i >= s->n_msgs)
        return ELM_E_INVALID;
    size_t a, b;
    turn_bounds(s, i, &a, &b);
    for (size_t k = a; k <= b; k++)
        s->msgs[k].pinned = pinned;
    return 0;
}

int conversation_set_system(struct conversation *cv, const char *system, char *err,
                            size_t err_size)
{
    if (cv->in_reply && cv->s->n_msgs > 0 && cv->s->msgs[cv->s->n_msgs - 1].role != ROLE_USER) {
        snprintf(err, err_size, "a reply is in progress");
        return ELM_E_INVALID;
    }
    char *old = cv->s->system;
    cv->s->system = system ? x_strdup(system) : NULL;
    int rc = rebuild(cv, cv->in_reply, err, err_size);
    if (!rc)
        rc = apply_policy(cv, 0, err, err_size);
    if (rc && rc != CONV_FULL) {
        free(cv->s->system);
        cv->s->system = old;
        return rc;
    }
    free(old);
    return rc;
}

/* ----------------------------------------------------------- the reply */

void conversation_reply_push(struct conversation *cv, const int32_t *ids, size_t n)
{
    if (!cv->in_reply)
        return;
    idvec_append(&cv->tokens, ids, n);
}

struct conv_reply_end conversation_end_from_done(enum elm_done_reason reason)
{
    switch (reason) {
    case ELM_DONE_EOS:
        return (struct conv_reply_end){TEMPLATE_END_EOS, false, false};
    case ELM_DONE_STOP:
        return (struct conv_reply_end){TEMPLATE_END_STOP, false, false};
    case ELM_DONE_STOP_STRING:
        return (struct conv_reply_end){TEMPLATE_END_STOP, false, true};
    case ELM_DONE_LENGTH:
    case ELM_DONE_CANCELLED:
    case ELM_DONE_ERROR:
    case ELM_DONE_CONTEXT_FULL:
        return (struct conv_reply_end){TEMPLATE_END_CUT, true, false};
    case ELM_DONE_OK:
        break;
    }
    return (struct conv_reply_end){TEMPLATE_END_CUT, false, false};
}

int conversation_reply_end(struct conversation *cv, enum template_end how, const char *content,
                           bool interrupted, char *err, size_t err_size)
{
    if (!cv->in_reply) {
        snprintf(err, err_size, "no reply in progress");
        return ELM_E_INVALID;
    }
    size_t gen = cv->reply_gen, sampled_end = cv->tokens.n;
    if (how == TEMPLATE_END_EOS && sampled_end == gen)
        how = TEMPLATE_END_CUT; /* no EOS among the ids: close it ourselves */
    int rc = template_render_reply_end(&cv->r, how, &cv->tokens);
    if (rc) {
        cv->tokens.n = sampled_end;
        set_err(err, err_size, "cannot close the reply", rc);
        return rc;
    }
    struct session *s = cv->s;
    size_t i = s->n_msgs;
    reserve_msgs(cv, i + 2);
    /* the reply slot (SNAP_MSG(i)) becomes this message's snapshot */
    struct message *m = session_append(s, ROLE_ASSISTANT, content);
    m->interrupted = interrupted;
    snap_clear(&cv->snaps[reply_slot(cv)]);
    cv->spans[i] = (struct conv_span){gen, gen, sampled_end, cv->tokens.n, how, true,
                                      msg_hash(ROLE_ASSISTANT, m->content)};
    cv->in_reply = false;
    cv->reply_gen = cv->tokens.n;
    idvec_clear(&cv->lookup);
    return 0;
}
