/* test-conversation.c: the session's token sequence and KV reuse (issue 7).
 *
 * The engine is driven synchronously here, the way the worker does it with
 * ELM_GEN_SYNC: keep the longest common prefix already in the cache,
 * compute the rest.  Checked:
 *   - logits after reuse == logits of a fresh prefill of the same ids
 *     (bound: |d| <= 1e-4 * (1 + max |logit|); both paths run the same
 *     kernels, but in different chunks, so sums are grouped differently);
 *   - a new turn, /retry, /undo and edits compute only the changed suffix
 *     (computed tokens counted, and equal to the conversation's plan);
 *   - snapshot save -> restart -> adopt + restore -> continue gives the
 *     same ids as the uninterrupted run (seeded sampler, temperature 0.8);
 *   - a snapshot of another model or another prefix is rejected (only the
 *     common prefix, if any, is used) and the result is still exact;
 *   - eviction keeps the system prompt and pinned turns, marks the rest out
 *     of context, and the kept sequence is what rendering the kept
 *     messages gives; its logits match a fresh prefill; policy stop refuses
 *     and changes nothing.
 * The model: the random-weight checkpoint of make check (gen-checkpoint --preset
 * default: 6 layers, vocab 32000, synthetic tokenizer.model). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/elm.h"
#include "src/conversation/conversation.h"
#include "src/conversation/kvcache_store.h"
#include "src/base/macros.h"
#include "src/conversation/session.h"
#include "src/conversation/session_tree.h"
#include "src/template/template.h"
#include "src/base/xalloc.h"
#include "tests/lib/tap.h"

static char err[1024];
static elm_model *model, *model_b;
static const elm_tokenizer *tok;
static struct template *tpl;
static int n_vocab, eos_id;

/* ------------------------------------------------------------- helpers */

static elm_ctx *new_ctx(elm_model *m)
{
    struct elm_ctx_params cp = elm_ctx_default_params();
    cp.n_threads = 1;
    elm_ctx *ctx = NULL;
    if (elm_ctx_new(m, &cp, &ctx, err, sizeof err) != ELM_OK)
        bail_out("elm_ctx_new: %s", err);
    return ctx;
}

/* The worker's ELM_GEN_SYNC rule: keep the common prefix, compute the rest
 * (at least the last token: its logits are wanted).  Returns the number of
 * tokens computed. */
static int sync_ctx(elm_ctx *ctx, const struct idvec *seq, float *logits)
{
    size_t n_past = (size_t)elm_ctx_n_past(ctx);
    size_t keep = conv_common_prefix(elm_ctx_tokens(ctx), n_past, seq->v, seq->n);
    if (keep == seq->n && keep > 0)
        keep--;
    if (elm_ctx_truncate(ctx, (int)keep) != ELM_OK)
        bail_out("truncate");
    elm_status st = elm_decode(ctx, seq->v + keep, (int)(seq->n - keep), logits, 0);
    if (st != ELM_OK)
        bail_out("decode: %s", elm_status_str(st));
    return (int)(seq->n - keep);
}

static void fresh_logits(elm_model *m, const struct idvec *seq, float *logits)
{
    elm_ctx *ctx = new_ctx(m);
    elm_status st = elm_decode(ctx, seq->v, (int)seq->n, logits, 0);
    if (st != ELM_OK)
        bail_out("decode: %s", elm_status_str(st));
    elm_ctx_free(ctx);
}

static double max_abs(const float *a, int n)
{
    double m = 0;
    for (int i = 0; i < n; i++)
        m = fmax(m, fabs(a[i]));
    return m;
}

static double max_diff(const float *a, const float *b, int n)
{
    double m = 0;
    for (int i = 0; i < n; i++)
        m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

static bool logits_match(elm_ctx *ctx, const struct idvec *seq, const float *reused,
                         const char *what)
{
    (void)ctx;
    float *fresh = x_malloc((size_t)n_vocab * sizeof *fresh);
    fresh_logits(model, seq, fresh);
    double d = max_diff(reused, fresh, n_vocab);
    double bound = 1e-4 * (1.0 + max_abs(fresh, n_vocab));
    free(fresh);
    return ok(d <= bound, "%s: logits after reuse == fresh prefill (max |d| %.3g <= %.3g)", what,
              d, bound);
}

/* Sample up to max ids the way the worker does (the last one is not fed:
 * the cache lacks it) and push them into the conversation.  Returns how it
 * ended.  EOS is masked unless allow_eos (random weights would end soon). */
static enum template_end generate(struct conversation *cv, elm_ctx *ctx, float *logits, int max,
                                  const struct elm_sampler_params *sp, bool allow_eos,
                                  struct idvec *out)
{
    elm_sampler *smp = elm_sampler_new(sp);
    enum template_end how = TEMPLATE_END_CUT;
    for (int k = 0; k < max; k++) {
        if (!allow_eos)
            logits[eos_id] = -INFINITY;
        int32_t id = elm_sampler_sample(smp, logits, n_vocab, elm_ctx_tokens(ctx),
                                        elm_ctx_n_past(ctx));
        conversation_reply_push(cv, &id, 1);
        if (out)
            idvec_push(out, id);
        if (id == eos_id) {
            how = TEMPLATE_END_EOS;
            break;
        }
        if (k + 1 == max)
            break;
        if (elm_decode(ctx, &id, 1, logits, 0) != ELM_OK)
            bail_out("decode");
    }
    elm_sampler_free(smp);
    return how;
}

/* One whole turn: user message, sync, reply of n ids, closing. */
static int turn(struct conversation *cv, elm_ctx *ctx, float *logits, const char *text, int n)
{
    struct conv_plan plan;
    if (conversation_user_turn(cv, text, n, &plan, err, sizeof err) != 0)
        bail_out("user turn: %s", err);
    int computed = sync_ctx(ctx, &cv->tokens, logits);
    struct elm_sampler_params sp = elm_sampler_default_params();
    enum template_end how = generate(cv, ctx, logits, n, &sp, false, NULL);
    if (conversation_reply_end(cv, how, "(reply)", how != TEMPLATE_END_EOS, err, sizeof err))
        bail_out("reply end: %s", err);
    conversation_set_cached(cv, elm_ctx_n_past(ctx));
    return computed;
}

static bool same_ids(const struct idvec *a, const struct idvec *b)
{
    return a->n == b->n && (a->n == 0 || memcmp(a->v, b->v, a->n * sizeof *a->v) == 0);
}

/* ---------------------------------------------------------------- tests */

static void test_reuse_and_edits(void)
{
    struct session *s = session_new("reuse");
    s->system = x_strdup("You are a terse assistant.");
    struct conversation cv;
    conversation_init(&cv, s, tpl, tok, 2048, NULL);
    int rc = conversation_render(&cv, err, sizeof err);
    ok(rc == 0 && cv.system_end == cv.tokens.n && cv.tokens.n > 3,
       "empty session renders the system span (%zu ids)", cv.tokens.n);
    elm_ctx *ctx = new_ctx(model);
    float *logits = x_malloc((size_t)n_vocab * sizeof *logits);

    int c1 = turn(&cv, ctx, logits, "What is the capital of France?", 12);
    ok(c1 > 0 && cv.cache.n == cv.spans[1].sampled_end - 1,
       "turn 1: %d computed; the cache lacks the last sampled id and the closing", c1);

    struct conv_plan plan;
    size_t before = cv.tokens.n;
    rc = conversation_user_turn(&cv, "And of Italy?", 12, &plan, err, sizeof err);
    ok(rc == 0 && plan.n_reuse == (int)cv.cache.n &&
           plan.n_compute == (int)(cv.tokens.n - before) + (int)(before - cv.cache.n),
       "turn 2 plan: reuse %d, compute %d (the new turn + what the cache lacked)", plan.n_reuse,
       plan.n_compute);
    int c2 = sync_ctx(ctx, &cv.tokens, logits);
    is_int(c2, plan.n_compute, "turn 2 computes exactly the plan");
    ok(memcmp(cv.tokens.v, cv.tokens.v, 1) == 0 &&
           cv.spans[2].start == before && cv.spans[2].end == cv.tokens.n,
       "turn 2's span is the appended ids [%zu, %zu)", cv.spans[2].start, cv.spans[2].end);
    logits_match(ctx, &cv.tokens, logits, "turn 2");
    struct elm_sampler_params sp = elm_sampler_default_params();
    enum template_end how = generate(&cv, ctx, logits, 10, &sp, false, NULL);
    conversation_reply_end(&cv, how, "Rome.", false, err, sizeof err);
    conversation_set_cached(&cv, elm_ctx_n_past(ctx));
    ok(s->n_msgs == 4 && cv.spans[3].sampled && cv.spans[3].sampled_end - cv.spans[3].gen == 10,
       "the reply's span holds its 10 sampled ids");

    /* /retry: back to after the generation prompt: nothing to compute but
     * the last prompt id (its logits were overwritten by the reply). */
    struct idvec whole = {0};
    idvec_append(&whole, cv.tokens.v, cv.tokens.n);
    rc = conversation_retry(&cv, 12, &plan, err, sizeof err);
    ok(rc == 0 && s->n_msgs == 3 && cv.tokens.n == cv.spans[2].end && plan.n_compute == 0,
       "retry: the last reply is gone, plan computes %d", plan.n_compute);
    int cr = sync_ctx(ctx, &cv.tokens, logits);
    is_int(cr, 1, "retry computes 1 token (the prompt's last, for its logits)");
    logits_match(ctx, &cv.tokens, logits, "retry");
    how = generate(&cv, ctx, logits, 6, &sp, false, NULL);
    conversation_reply_end(&cv, how, "Rome!", false, err, sizeof err);
    conversation_set_cached(&cv, elm_ctx_n_past(ctx));

    /* /undo then a different message: only the new turn is computed. */
    char *text = NULL;
    size_t u_start = cv.spans[2].start;
    rc = conversation_undo(&cv, &text, err, sizeof err);
    ok(rc == 0 && text && strcmp(text, "And of Italy?") == 0 && s->n_msgs == 2 &&
           cv.tokens.n == u_start,
       "undo gives the message back and rewinds to its start (%zu)", u_start);
    free(text);
    rc = conversation_user_turn(&cv, "And of Spain?", 12, &plan, err, sizeof err);
    int cu = sync_ctx(ctx, &cv.tokens, logits);
    ok(rc == 0 && cu == plan.n_compute && (size_t)cu <= cv.tokens.n - u_start,
       "undo + new turn: computed %d == plan <= the new turn's %zu ids", cu,
       cv.tokens.n - u_start);
    logits_match(ctx, &cv.tokens, logits, "undo + new turn");
    how = generate(&cv, ctx, logits, 8, &sp, false, NULL);
    conversation_reply_end(&cv, how, "Madrid.", false, err, sizeof err);
    conversation_set_cached(&cv, elm_ctx_n_past(ctx));

    /* Edit the first message: everything after the system span changes. */
    idvec_clear(&whole);
    idvec_append(&whole, cv.tokens.v, cv.tokens.n);
    rc = conversation_edit(&cv, 0, "What is the capital of Peru?", 12, &plan, err, sizeof err);
    int ce = sync_ctx(ctx, &cv.tokens, logits);
    size_t lcp = conv_common_prefix(whole.v, whole.n, cv.tokens.v, cv.tokens.n);
    ok(rc == 0 && s->n_msgs == 1 && ce == plan.n_compute && (size_t)ce == cv.tokens.n - lcp &&
           lcp >= cv.system_end,
       "edit of message 1: computed %d == plan == ids after the common prefix (%zu >= system %zu)",
       ce, lcp, cv.system_end);
    logits_match(ctx, &cv.tokens, logits, "edit");

    /* Edit a reply: rendered from text, later messages dropped. */
    how = generate(&cv, ctx, logits, 5, &sp, false, NULL);
    conversation_reply_end(&cv, how, "Lima.", false, err, sizeof err);
    conversation_set_cached(&cv, elm_ctx_n_past(ctx));
    turn(&cv, ctx, logits, "Thanks.", 4);
    size_t a_start = cv.spans[1].gen;
    rc = conversation_edit(&cv, 1, "Lima, of course.", 0, &plan, err, sizeof err);
    ok(rc == 0 && s->n_msgs == 2 && !cv.spans[1].sampled && cv.spans[1].gen == a_start &&
           plan.n_reuse >= (int)a_start,
       "edit of a reply: re-rendered from its text after the kept prompt");
    struct template_msg *tm;
    size_t n_tm;
    tm = session_template_msgs(s, true, &n_tm);
    struct idvec whole_text = {0};
    template_render_conversation(tpl, tok, s->system, tm, n_tm, false, &whole_text);
    free(tm);
    struct idvec tail = {0};
    idvec_append(&tail, cv.tokens.v + a_start, cv.tokens.n - a_start);
    ok(whole_text.n >= tail.n &&
           memcmp(whole_text.v + whole_text.n - tail.n, tail.v, tail.n * sizeof *tail.v) == 0,
       "the edited reply's ids are those of rendering the conversation whole");
    idvec_fini(&tail);
    idvec_fini(&whole_text);

    /* /clear keeps the system span. */
    conversation_clear(&cv);
    ok(s->n_msgs == 0 && cv.tokens.n == cv.system_end, "clear keeps the system span");

    idvec_fini(&whole);
    free(logits);
    elm_ctx_free(ctx);
    conversation_fini(&cv);
    session_free(s);
}

/* Send the sequence (as the controller's prefill does) and say what it cost. */
static int prefill(struct conversation *cv, elm_ctx *ctx, float *logits)
{
    int c = sync_ctx(ctx, &cv->tokens, logits);
    conversation_set_cached(cv, elm_ctx_n_past(ctx));
    return c;
}

/* A reply of n ids after a user turn, an edit or a retry. */
static void reply(struct conversation *cv, elm_ctx *ctx, float *logits, const char *text, int n)
{
    sync_ctx(ctx, &cv->tokens, logits);
    struct elm_sampler_params sp = elm_sampler_default_params();
    enum template_end how = generate(cv, ctx, logits, n, &sp, false, NULL);
    if (conversation_reply_end(cv, how, text, false, err, sizeof err))
        bail_out("reply end: %s", err);
    conversation_set_cached(cv, elm_ctx_n_past(ctx));
}

/* Three versions of the second user message (two edits), a second reply
 * to one of them (retry), a fork: each switch computes exactly the tokens
 * after the common prefix of the two paths, and gives the logits a fresh
 * prefill of the new path gives. */
static void test_branches(void)
{
    struct session *s = session_new("branches");
    struct conversation cv;
    conversation_init(&cv, s, tpl, tok, 2048, NULL);
    conversation_render(&cv, err, sizeof err);
    elm_ctx *ctx = new_ctx(model);
    float *logits = x_malloc((size_t)n_vocab * sizeof *logits);
    turn(&cv, ctx, logits, "What does cat mean?", 8);
    turn(&cv, ctx, logits, "And dog?", 8);
    struct conv_plan plan;
    const char *versions[] = {"And dog?", "And bird?", "And a much longer word, like elephant?"};
    for (int v = 1; v < 3; v++) {
        if (conversation_edit(&cv, 2, versions[v], 8, &plan, err, sizeof err) != 0)
            bail_out("edit: %s", err);
        reply(&cv, ctx, logits, "(edited)", 8);
    }
    size_t k, n;
    session_siblings(s, 2, &k, &n);
    ok(s->n_msgs == 4 && k == 3 && n == 3 && s->n_alts == 4,
       "two edits keep the old versions: message 3 is %zu/%zu, %zu on other branches", k, n,
       s->n_alts);
    size_t fork_at = cv.spans[2].start;

    struct idvec before = {0};
    const size_t order[] = {1, 2, 3, 1, 3};
    for (size_t t = 0; t < ARRAY_LEN(order); t++) {
        idvec_clear(&before);
        idvec_append(&before, cv.tokens.v, cv.tokens.n);
        int rc = conversation_branch(&cv, 2, order[t], &plan, err, sizeof err);
        int c = prefill(&cv, ctx, logits);
        size_t lcp = conv_common_prefix(before.v, before.n, cv.tokens.v, cv.tokens.n);
        ok(rc == 0 && strcmp(s->msgs[2].content, versions[order[t] - 1]) == 0 &&
               c == plan.n_compute && (size_t)c == cv.tokens.n - lcp && lcp >= fork_at,
           "switch to version %zu: computed %d == plan %d == the %zu ids after the common "
           "prefix %zu (>= the fork point %zu)",
           order[t], c, plan.n_compute, cv.tokens.n - lcp, lcp, fork_at);
        logits_match(ctx, &cv.tokens, logits, "after the switch");
    }
    /* The path renders as the whole-conversation renderer renders it. */
    size_t n_tm;
    struct template_msg *tm = session_template_msgs(s, true, &n_tm);
    struct idvec whole = {0};
    template_render_conversation(tpl, tok, s->system, tm, n_tm, false, &whole);
    free(tm);
    size_t tail = cv.tokens.n - fork_at;
    ok(whole.n >= tail && memcmp(whole.v + whole.n - tail, cv.tokens.v + fork_at,
                                 tail * sizeof *whole.v) == 0,
       "a switched-to branch's ids are its text rendered whole");
    idvec_fini(&whole);

    /* /retry keeps the reply it replaces; switching back costs the reply. */
    if (conversation_retry(&cv, 8, &plan, err, sizeof err) != 0)
        bail_out("retry: %s", err);
    reply(&cv, ctx, logits, "(retried)", 6);
    session_siblings(s, 3, &k, &n);
    ok(k == 2 && n == 2, "retry: the reply is version 2 of 2");
    idvec_clear(&before);
    idvec_append(&before, cv.tokens.v, cv.tokens.n);
    size_t reply_gen = cv.spans[3].gen;
    int rc = conversation_branch(&cv, 3, 1, &plan, err, sizeof err);
    int c = prefill(&cv, ctx, logits);
    size_t lcp = conv_common_prefix(before.v, before.n, cv.tokens.v, cv.tokens.n);
    ok(rc == 0 && c == plan.n_compute && (size_t)c == cv.tokens.n - lcp && lcp >= reply_gen,
       "back to reply 1: computed %d, only the reply (common prefix %zu >= its start %zu)", c,
       lcp, reply_gen);
    logits_match(ctx, &cv.tokens, logits, "back to reply 1");

    /* /fork after the first reply: nothing to compute, the next message is
     * a fourth version of message 3. */
    rc = conversation_fork(&cv, 1, err, sizeof err);
    ok(rc == 0 && s->n_msgs == 2 && cv.tokens.n == fork_at,
       "fork after message 2: the path ends there (%zu ids)", cv.tokens.n);
    rc = conversation_user_turn(&cv, "And owl?", 8, &plan, err, sizeof err);
    c = prefill(&cv, ctx, logits);
    session_siblings(s, 2, &k, &n);
    ok(rc == 0 && k == 4 && n == 4 && c == plan.n_compute && (size_t)c <= cv.tokens.n - fork_at,
       "the message after the fork is version 4 of 4 and computes only its turn (%d <= %zu)", c,
       cv.tokens.n - fork_at);
    logits_match(ctx, &cv.tokens, logits, "after the fork");
    rc = conversation_branch(&cv, 2, 9, &plan, err, sizeof err);
    ok(rc == ELM_E_INVALID && strstr(err, "versions 1 to 4"), "no version 9: %s", err);

    idvec_fini(&before);
    free(logits);
    elm_ctx_free(ctx);
    conversation_fini(&cv);
    session_free(s);
}

/* 50,000 consecutive user messages with a template that has no special id
 * between turns (plain): the renderer's pending text grows with every one,
 * and the snapshots used to copy it at each (4 GB at 50k messages).  The
 * bytes the snapshots hold stay bounded, and the conversation still
 * rewinds (by rendering again where no snapshot was kept). */
static void test_many_messages(void)
{
    char path[4096];
    const char *srcdir = getenv("top_srcdir");
    snprintf(path, sizeof path, "%s/prompts/plain.yaml", srcdir ? srcdir : ".");
    struct template *plain = template_load_file(path, err, sizeof err);
    if (!plain)
        bail_out("%s", err);
    enum { N = 50000 };
    struct session *s = session_new("many");
    for (int i = 0; i < N; i++)
        session_append(s, ROLE_USER, "hello there, how are you");
    struct conversation cv;
    conversation_init(&cv, s, plain, tok, 1 << 20, NULL);
    int rc = conversation_render(&cv, err, sizeof err);
    size_t held = conversation_snapshot_bytes(&cv);
    ok(rc == 0, "50,000 user messages render (%s)", rc ? err : "ok");
    ok(held < 64u << 20, "the snapshots hold %zu KiB of renderer text (bounded, not 50,000 copies)",
       held >> 10);
    char *text = NULL;
    rc = conversation_undo(&cv, &text, err, sizeof err);
    ok(rc == 0 && text && s->n_msgs == N - 1, "/undo there still works (rendered again)");
    free(text);
    conversation_fini(&cv);
    session_free(s);
    template_free(plain);
}

/* A conversation loaded from its file renders from text exactly as the
 * whole-conversation renderer does. */
static void test_load_render(void)
{
    struct session *s = session_new("load");
    static const char *const texts[] = {"Hi there.", "Hello! How can I help?",
                                        "Tell me a joke.", "Why did the chicken cross the road?",
                                        "Why?", "To get to the other side."};
    for (size_t i = 0; i < 6; i++)
        session_append(s, i % 2 ? ROLE_ASSISTANT : ROLE_USER, texts[i]);
    struct conversation cv;
    conversation_init(&cv, s, tpl, tok, 0, NULL);
    int rc = conversation_render(&cv, err, sizeof err);
    size_t n_tm;
    struct template_msg *tm = session_template_msgs(s, true, &n_tm);
    struct idvec ref = {0};
    template_render_conversation(tpl, tok, NULL, tm, n_tm, false, &ref);
    free(tm);
    ok(rc == 0 && same_ids(&ref, &cv.tokens), "loaded session == template_render_conversation (%zu ids)",
       ref.n);
    bool spans_ok = cv.spans[0].start == cv.system_end;
    for (size_t i = 1; i < 6; i++)
        spans_ok &= cv.spans[i].start == cv.spans[i - 1].end;
    ok(spans_ok && cv.spans[5].end == cv.tokens.n, "spans tile the sequence");
    /* The next turn continues incrementally and equals the whole render. */
    struct conv_plan plan;
    conversation_user_turn(&cv, "Another one.", 0, &plan, err, sizeof err);
    session_append(s, ROLE_ASSISTANT, "x"); /* only for the reference */
    tm = session_template_msgs(s, true, &n_tm);
    idvec_clear(&ref);
    template_render_conversation(tpl, tok, NULL, tm, n_tm - 1, true, &ref);
    free(tm);
    session_truncate(s, 6 + 1);
    ok(same_ids(&ref, &cv.tokens), "a new turn appends what the whole render has");
    struct conv_fill f;
    conversation_fill(&cv, &f);
    ok(f.n_tokens == (int)cv.tokens.n && f.n_ctx == 2048 && !f.warn, "fill %d/%d, no warning",
       f.n_tokens, f.n_ctx);
    idvec_fini(&ref);
    conversation_fini(&cv);
    session_free(s);
}

static void test_snapshots(void)
{
    const char *dir = tap_tmpdir();
    char path[4096];
    snprintf(path, sizeof path, "%s/snap.kv", dir);
    uint64_t fp = elm_model_get_info(model)->fingerprint;

    struct session *s = session_new("snap");
    struct conversation cv;
    conversation_init(&cv, s, tpl, tok, 0, NULL);
    conversation_render(&cv, err, sizeof err);
    elm_ctx *ctx = new_ctx(model);
    float *logits = x_malloc((size_t)n_vocab * sizeof *logits);
    turn(&cv, ctx, logits, "Write a haiku about rain.", 16);
    turn(&cv, ctx, logits, "Now one about snow.", 16);

    /* save: the engine's snapshot and our meta */
    ok(elm_state_save(ctx, path, err, sizeof err) == ELM_OK &&
           kvcache_meta_save(&cv, path, fp, err, sizeof err) == 0,
       "snapshot saved (%d ids in the cache)", elm_ctx_n_past(ctx));
    int saved_past = elm_ctx_n_past(ctx);
    struct idvec saved = {0};
    idvec_append(&saved, cv.tokens.v, cv.tokens.n);
    size_t yaml_len;
    char *yaml = session_to_yaml(s, &yaml_len);

    /* uninterrupted: one more turn, sampled with a seed */
    struct elm_sampler_params sp = elm_sampler_default_params();
    sp.temperature = 0.8f;
    sp.seed = 42;
    struct idvec a = {0}, b = {0};
    conversation_user_turn(&cv, "And one about sun.", 16, NULL, err, sizeof err);
    sync_ctx(ctx, &cv.tokens, logits);
    generate(&cv, ctx, logits, 16, &sp, true, &a);

    /* restart: the file, a new conversation, the snapshot */
    struct session *s2 = session_from_yaml(yaml, yaml_len, "snap", err, sizeof err);
    struct conversation cv2;
    conversation_init(&cv2, s2, tpl, tok, 0, NULL);
    conversation_render(&cv2, err, sizeof err);
    bool adopted = kvcache_adopt(&cv2, path, fp);
    ok(adopted && same_ids(&cv2.tokens, &saved),
       "adopt: the loaded session takes back its exact ids (%zu)", cv2.tokens.n);
    ok(cv2.spans[1].sampled && cv2.spans[3].sampled, "its replies are the sampled ids again");
    elm_ctx *ctx2 = new_ctx(model);
    size_t reused = 0;
    elm_status st = kvcache_restore_sync(ctx2, path, cv2.tokens.v, cv2.tokens.n, &reused, err,
                                         sizeof err);
    ok(st == ELM_OK && reused == (size_t)saved_past, "restore: %zu ids reused", reused);
    conversation_set_cached(&cv2, (int)reused);
    struct conv_plan plan;
    conversation_user_turn(&cv2, "And one about sun.", 16, &plan, err, sizeof err);
    int c = sync_ctx(ctx2, &cv2.tokens, logits);
    ok(c == plan.n_compute && c == (int)cv2.tokens.n - saved_past,
       "resumed turn computes only what the snapshot lacks (%d)", c);
    generate(&cv2, ctx2, logits, 16, &sp, true, &b);
    ok(same_ids(&a, &b), "save -> load -> continue == uninterrupted (%zu ids, seed 42, T 0.8)",
       a.n);

    /* a snapshot of another model: rejected, the ctx stays empty */
    if (model_b) {
        elm_ctx *cb = new_ctx(model_b);
        st = kvcache_restore_sync(cb, path, saved.v, saved.n, &reused, err, sizeof err);
        ok(st == ELM_E_MISMATCH && reused == 0 && elm_ctx_n_past(cb) == 0,
           "another model's snapshot: ELM_E_MISMATCH, empty cache (%s)", err);
        elm_ctx_free(cb);
        struct conversation cv3;
        struct session *s3 = session_from_yaml(yaml, yaml_len, "snap", err, sizeof err);
        conversation_init(&cv3, s3, tpl, tok, 0, NULL);
        conversation_render(&cv3, err, sizeof err);
        ok(!kvcache_adopt(&cv3, path, elm_model_get_info(model_b)->fingerprint),
           "its meta is not adopted for another fingerprint");
        conversation_fini(&cv3);
        session_free(s3);
    } else {
        skip(2, "no second model");
    }

    /* another prefix: only the common part is used, the rest recomputed */
    struct session *s4 = session_new("other");
    struct conversation cv4;
    conversation_init(&cv4, s4, tpl, tok, 0, NULL);
    conversation_render(&cv4, err, sizeof err);
    conversation_user_turn(&cv4, "Write a limerick.", 8, NULL, err, sizeof err);
    ok(!kvcache_adopt(&cv4, path, fp) || cv4.s->n_msgs == 1,
       "a meta of another conversation adopts nothing of its messages");
    elm_ctx *c4 = new_ctx(model);
    st = kvcache_restore_sync(c4, path, cv4.tokens.v, cv4.tokens.n, &reused, err, sizeof err);
    size_t lcp = conv_common_prefix(saved.v, saved.n, cv4.tokens.v, cv4.tokens.n);
    ok(reused == lcp && lcp < (size_t)saved_past && elm_ctx_n_past(c4) == (int)lcp,
       "another prefix: only the common %zu ids are kept (status %s)", lcp,
       elm_status_str(st));
    sync_ctx(c4, &cv4.tokens, logits);
    logits_match(c4, &cv4.tokens, logits, "after a partial snapshot");
    elm_ctx_free(c4);
    conversation_fini(&cv4);
    session_free(s4);

    /* a damaged snapshot: rejected */
    FILE *f = fopen(path, "r+b");
    if (f) {
        fseek(f, 100, SEEK_SET);
        fputc(0x55, f);
        fputc(0xaa, f);
        fclose(f);
    }
    elm_ctx *c5 = new_ctx(model);
    st = kvcache_restore_sync(c5, path, saved.v, saved.n, &reused, err, sizeof err);
    ok(st != ELM_OK && reused == 0 && elm_ctx_n_past(c5) == 0, "a damaged snapshot is rejected (%s)",
       elm_status_str(st));
    elm_ctx_free(c5);

    free(yaml);
    idvec_fini(&a);
    idvec_fini(&b);
    idvec_fini(&saved);
    free(logits);
    elm_ctx_free(ctx);
    elm_ctx_free(ctx2);
    conversation_fini(&cv);
    conversation_fini(&cv2);
    session_free(s);
    session_free(s2);
}

static void test_eviction(void)
{
    struct session *s = session_new("evict");
    s->system = x_strdup("Keep this system prompt.");
    struct conversation cv;
    int n_ctx = 200;
    conversation_init(&cv, s, tpl, tok, n_ctx, NULL);
    conversation_render(&cv, err, sizeof err);
    struct idvec sys = {0};
    idvec_append(&sys, cv.tokens.v, cv.system_end);
    elm_ctx *ctx = new_ctx(model);
    float *logits = x_malloc((size_t)n_vocab * sizeof *logits);

    turn(&cv, ctx, logits, "First question, to be dropped.", 10);
    turn(&cv, ctx, logits, "Second question, pinned.", 10);
    conversation_pin(&cv, 2, true);
    ok(s->msgs[2].pinned && s->msgs[3].pinned, "pin marks the whole turn");
    int evicted_at = -1;
    for (int t = 3; t <= 12 && evicted_at < 0; t++) {
        char q[64];
        snprintf(q, sizeof q, "Question number %d, a bit longer than the others.", t);
        struct conv_plan plan;
        int rc = conversation_user_turn(&cv, q, 16, &plan, err, sizeof err);
        if (rc != 0)
            bail_out("turn %d: %s", t, err);
        if (plan.n_dropped > 0)
            evicted_at = t;
        int c = sync_ctx(ctx, &cv.tokens, logits);
        if (plan.n_dropped > 0) {
            ok(c == plan.n_compute, "eviction at turn %d: computed %d == plan (reused %d)", t, c,
               plan.n_reuse);
            logits_match(ctx, &cv.tokens, logits, "after eviction");
        }
        struct elm_sampler_params sp = elm_sampler_default_params();
        enum template_end how = generate(&cv, ctx, logits, 10, &sp, false, NULL);
        conversation_reply_end(&cv, how, "ok", false, err, sizeof err);
        conversation_set_cached(&cv, elm_ctx_n_past(ctx));
    }
    ok(evicted_at > 0, "the context filled up and turns were dropped (turn %d)", evicted_at);
    ok(cv.tokens.n <= (size_t)n_ctx, "the sequence fits (%zu <= %d)", cv.tokens.n, n_ctx);
    ok(cv.tokens.n >= sys.n && memcmp(cv.tokens.v, sys.v, sys.n * sizeof *sys.v) == 0,
       "the system span is kept");
    ok(s->msgs[0].out_of_context && s->msgs[1].out_of_context, "the oldest turn is out of context");
    ok(!s->msgs[2].out_of_context && !s->msgs[3].out_of_context, "the pinned turn is kept");
    ok(!s->msgs[s->n_msgs - 1].out_of_context && !s->msgs[s->n_msgs - 2].out_of_context,
       "the last turn is kept");
    ok(s->n_msgs >= 2 * (size_t)evicted_at, "dropped messages stay in the session");
    struct conv_fill f;
    conversation_fill(&cv, &f);
    ok(f.n_out_of_context >= 2 && f.n_pinned == 2, "gauge: %d out of context, %d pinned",
       f.n_out_of_context, f.n_pinned);

    /* The same session from its file (replies known by text only): the
     * render applies the policy and equals rendering the kept messages. */
    size_t yl;
    char *yaml = session_to_yaml(s, &yl);
    struct session *s2 = session_from_yaml(yaml, yl, "evict", err, sizeof err);
    free(yaml);
    for (size_t i = 0; i < s2->n_msgs; i++)
        s2->msgs[i].out_of_context = false; /* as if never evicted */
    struct conversation cv2;
    conversation_init(&cv2, s2, tpl, tok, 4096, NULL);
    conversation_render(&cv2, err, sizeof err);
    size_t all = cv2.tokens.n;
    /* a model with a shorter context is made current */
    int rc = conversation_model_changed(&cv2, (int)all - 10, err, sizeof err);
    size_t n_tm;
    struct template_msg *tm = session_template_msgs(s2, true, &n_tm);
    struct idvec ref = {0};
    template_render_conversation(tpl, tok, s2->system, tm, n_tm, false, &ref);
    free(tm);
    if (!same_ids(&ref, &cv2.tokens)) {
        diag("rc %d n %zu ref %zu lcp %zu", rc, cv2.tokens.n, ref.n,
             conv_common_prefix(ref.v, ref.n, cv2.tokens.v, cv2.tokens.n));
        for (size_t i = 0; i < s2->n_msgs; i++)
            diag("msg %zu role %d ooc %d pin %d span %zu..%zu", i, s2->msgs[i].role,
                 s2->msgs[i].out_of_context, s2->msgs[i].pinned, cv2.spans[i].start, cv2.spans[i].end);
    }
    ok(rc == 0 && cv2.tokens.n <= all - 10 && same_ids(&ref, &cv2.tokens) &&
           s2->msgs[2].pinned && !s2->msgs[2].out_of_context && s2->msgs[0].out_of_context,
       "a shorter context (%zu -> %zu) drops the oldest unpinned turn; the sequence == the kept "
       "messages rendered whole (%zu ids)",
       all, all - 10, ref.n);
    idvec_fini(&ref);
    conversation_fini(&cv2);

    /* policy stop: refused with a reason, nothing changed */
    struct conv_policy stop = conv_policy_default();
    stop.policy = CONTEXT_STOP;
    conversation_set_policy(&cv, &stop);
    size_t n_msgs = s->n_msgs, n_tok = cv.tokens.n;
    char big[1200];
    memset(big, 0, sizeof big);
    for (size_t i = 0; i + 6 < sizeof big; i += 5)
        memcpy(big + i, "word ", 5);
    struct conv_plan plan;
    rc = conversation_user_turn(&cv, big, 16, &plan, err, sizeof err);
    ok(rc == CONV_FULL && s->n_msgs == n_msgs && cv.tokens.n == n_tok && strstr(err, "stop"),
       "policy stop refuses and changes nothing: %s", err);
    char wbuf[160] = "";
    stop.warn_fraction = 0.5f;
    conversation_set_policy(&cv, &stop);
    ok(*conversation_fill_warning(&cv, wbuf, sizeof wbuf) != '\0',
       "the gauge warns near the limit: %s", wbuf);
    /* drop-oldest cannot make room for a message larger than the context */
    conversation_set_policy(&cv, NULL);
    char *huge = x_malloc(20000);
    memset(huge, 0, 20000);
    for (size_t i = 0; i + 6 < 20000; i += 5)
        memcpy(huge + i, "word ", 5);
    rc = conversation_user_turn(&cv, huge, 16, &plan, err, sizeof err);
    ok(rc == CONV_FULL && s->n_msgs == n_msgs && cv.tokens.n == n_tok,
       "a message larger than the context is refused, nothing dropped: %s", err);
    free(huge);
    /* and the conversation still works */
    rc = conversation_user_turn(&cv, "Short one.", 16, &plan, err, sizeof err);
    int c = sync_ctx(ctx, &cv.tokens, logits);
    ok(rc == 0 && c == plan.n_compute, "next turn fine (computed %d)", c);

    idvec_fini(&sys);
    free(logits);
    elm_ctx_free(ctx);
    conversation_fini(&cv);
    session_free(s);
    session_free(s2);
}

int main(void)
{
    char dir[4096], dir_b[4096];
    const char *b = getenv("top_builddir");
    snprintf(dir, sizeof dir, "%s/tests/random-model", b ? b : ".");
    struct stat st;
    if (stat(dir, &st) != 0 &&
        !tap_gen_checkpoint("--preset default --dtype bf16", dir, sizeof dir, "default"))
        skip_all("tests/lib/gen-checkpoint is not built");
    if (!tap_gen_checkpoint("--preset default --dtype bf16 --seed 7", dir_b, sizeof dir_b, "other"))
        dir_b[0] = '\0';
    plan_lazy();
    struct elm_model_params mp = elm_model_default_params();
    mp.n_threads = 1;
    if (elm_model_load(dir, &mp, &model, err, sizeof err) != ELM_OK)
        bail_out("%s", err);
    if (*dir_b && elm_model_load(dir_b, &mp, &model_b, err, sizeof err) != ELM_OK)
        bail_out("%s", err);
    tok = elm_model_tokenizer(model);
    if (!tok)
        bail_out("%s: no tokenizer", dir);
    n_vocab = elm_model_get_info(model)->n_vocab;
    eos_id = elm_model_get_info(model)->eos_id;
    char tpath[4096];
    const char *srcdir = getenv("top_srcdir");
    snprintf(tpath, sizeof tpath, "%s/prompts/openelm-instruct.yaml", srcdir ? srcdir : ".");
    tpl = template_load_file(tpath, err, sizeof err);
    if (!tpl)
        bail_out("%s", err);

    test_load_render();
    test_many_messages();
    test_reuse_and_edits();
    test_branches();
    test_snapshots();
    test_eviction();

    template_free(tpl);
    elm_model_free(model);
    elm_model_free(model_b);
    return done_testing();
}
