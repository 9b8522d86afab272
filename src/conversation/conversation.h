/* conversation.h: a session's token sequence, the truth of what is in the
 * KV cache (docs/DESIGN.md §5, issue 7), and the worker request for each action.
 *
 * A conversation wraps a session (borrowed, but its messages are changed
 * only through these functions) with:
 *   - tokens: the exact ids in (or bound for) the worker's cache.  A new
 *     turn appends only the rendered user turn and the generation prompt;
 *     the reply's sampled ids are appended as they come, then the template's
 *     closing.  Nothing already there is re-rendered or re-tokenized.
 *   - spans: per message, where its turn lies in tokens; the system span
 *     [0, system_end) (the template's prefix and the system turn).
 *   - a renderer snapshot before each message, so /retry, /undo and edits
 *     rewind to the longest common prefix and render only what changed.
 *   - the context policy (config_file.h): fill gauge, a warning threshold,
 *     and, when a turn does not fit, drop the oldest whole turns (never the
 *     system prompt, never pinned turns, never the turn being asked) or
 *     refuse (policy stop).  Dropped messages stay in the session, marked
 *     out_of_context; the kept ones are rendered again.
 *
 * Requests: every GENERATE sends the whole sequence with ELM_GEN_SYNC
 * (conversation_request): the worker keeps the longest common prefix it
 * already holds and computes only the rest, so a dropped cache, a model
 * switch or a snapshot that does not match costs time, never correctness.
 * cache mirrors what the worker holds (from DONE's n_past), so the app
 * can tell the user what an action will compute (the struct conv_plan
 * that the actions fill).
 *
 * Typical use (UI thread):
 *   conversation_init(&cv, s, tpl, tok, n_ctx, &policy);
 *   conversation_render(&cv, err, n);           // after session_load / new
 *   rc = conversation_user_turn(&cv, text, reserve, &plan, err, n);
 *   if (rc == CONV_FULL) show err;              // policy stop: nothing changed
 *   conversation_request(&cv, &req);  post;     // GENERATE, ELM_GEN_SYNC
 *   on TOKEN: conversation_reply_push(&cv, ev.ids, ev.n_ids);
 *   on DONE:  conversation_reply_end(&cv, how, content, interrupted);
 *             conversation_set_cached(&cv, ev.n_past);
 *
 * Threads: UI thread only (plain data).  Errors: 0, CONV_FULL, or a negative
 * elm_status (tokenizer failure), with err filled; on any error the
 * conversation and the session are as they were before the call.
 */
#ifndef ELMCHAT_SRC_CONVERSATION_H
#define ELMCHAT_SRC_CONVERSATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm_worker.h"
#include "src/config/config_file.h"
#include "src/conversation/session.h"
#include "src/conversation/session_tree.h"
#include "src/template/template.h"

/* The context does not hold the turn and the policy is stop (or nothing
 * more can be dropped).  Same value as ELM_E_CONTEXT_FULL. */
#define CONV_FULL ELM_E_CONTEXT_FULL

struct conv_policy {
    enum context_policy policy; /* CONTEXT_DROP_OLDEST (default) or CONTEXT_STOP */
    float warn_fraction;        /* fill at which conversation_fill warns (default 0.85) */
};
/* drop-oldest, warn at 85%. */
struct conv_policy conv_policy_default(void);
/* From config.yaml's context: section. */
struct conv_policy conv_policy_from_config(const struct config *cfg);

/* Where one message's turn lies in the token sequence.  For an assistant
 * message: [start, gen) is what precedes the reply (normally nothing: the
 * generation prompt belongs to the span of the user message before it),
 * [gen, sampled_end) the reply's ids (sampled, or re-rendered from text
 * when sampled is false), [sampled_end, end) the template's closing.
 * Messages out of context have start == end == SIZE_MAX. */
struct conv_span {
    size_t start, gen, sampled_end, end;
    enum template_end how; /* assistant: how it ended */
    bool sampled;          /* assistant: the ids are the model's own */
    uint64_t hash;         /* of role and content when the span was made */
};

struct conv_snap; /* renderer state before a message (private) */

/* What the last /clear or /remove took off the path, which /undo puts
 * back while nothing else changed the tree since (conversation_restorable). */
enum conv_undone { CONV_UNDONE_NONE = 0, CONV_UNDONE_CLEAR, CONV_UNDONE_REMOVE };
struct conv_undo {
    enum conv_undone what;
    struct session_restore r;
    size_t exchange;          /* CONV_UNDONE_REMOVE: the exchange number it had */
    /* the tree right after the command: any later change ends the undo */
    size_t n_msgs, n_alts;
    uint32_t next_id;
    uint64_t stamp;
};

struct conversation {
    struct session *s;          /* borrowed; messages changed only through here */
    const struct template *tpl; /* borrowed */
    const elm_tokenizer *tok;   /* borrowed */
    struct conv_policy policy;
    int n_ctx;                  /* the model's context length (tokens) */

    struct idvec tokens;        /* the truth */
    size_t system_end;          /* [0, system_end): prefix + system turn */
    struct conv_span *spans;    /* one per session message (s->n_msgs) */
    struct conv_snap *snaps;    /* private: the renderer after the system span
                                   ([0]), before each message ([1 + i]; for a reply: after
                                   its generation prompt), and of the reply in progress */
    size_t cap;                 /* of spans; snaps has cap + 2 */
    struct template_render r;   /* the renderer after the last token */
    bool rendered;              /* tokens match the session (conversation_render done) */

    bool in_reply;              /* a reply is being sampled: tokens end with its ids */
    size_t reply_gen;           /* where its ids begin */

    struct idvec cache;         /* what the worker's cache holds for this conversation,
                                   as far as we know (set at each DONE): the expected reuse
                                   is its common prefix with tokens */
    size_t n_dropped_last;      /* messages evicted by the last user turn / retry */
    struct idvec lookup;        /* the ids of the reply a retry or an edit replaces: the
                                   worker's prompt lookup drafts from them (a retry says
                                   much of it again); empty otherwise */
    struct conv_undo undo;      /* the last /clear or /remove, for /undo */
};

/* s may have messages (a loaded session): call conversation_render next.
 * policy NULL: conv_policy_default().  n_ctx <= 0: 2048. */
void conversation_init(struct conversation *cv, struct session *s, const struct template *tpl,
                       const elm_tokenizer *tok, int n_ctx, const struct conv_policy *policy);
/* Frees the conversation's own memory, not the session. */
void conversation_fini(struct conversation *cv);

/* Render the session's in-context messages from scratch: loading a saved
 * session, or after conversation_set_template.  Stored replies are rendered
 * from their text (their sampled ids are gone; kvcache_store.h can bring
 * them back from a snapshot's sidecar).  When the whole conversation does not
 * fit, the policy applies (drop-oldest marks turns out of context; stop
 * leaves the sequence over-long and returns CONV_FULL). */
int conversation_render(struct conversation *cv, char *err, size_t err_size);
/* Another template or tokenizer (a model switch may bring another
 * tokenizer file): marks the conversation for conversation_render. */
void conversation_set_template(struct conversation *cv, const struct template *tpl,
                               const elm_tokenizer *tok);
void conversation_set_policy(struct conversation *cv, const struct conv_policy *policy);
/* A model was made current (MODEL_READY): its context length; the cache is
 * assumed empty (the worker tells the truth with n_reused/n_past when it
 * still holds one, e.g. switching back).  Returns CONV_FULL when the
 * sequence no longer fits and the policy is stop; with drop-oldest turns
 * are dropped as needed.  Then post conversation_prefill_request. */
int conversation_model_changed(struct conversation *cv, int n_ctx, char *err, size_t err_size);

/* ------------------------------------------------------------ the gauge */

struct conv_fill {
    int n_tokens;      /* in the sequence */
    int n_ctx;
    float fraction;    /* n_tokens / n_ctx */
    bool warn;         /* fraction >= warn_fraction: show it */
    int n_out_of_context; /* messages already dropped */
    int n_pinned;
};
void conversation_fill(const struct conversation *cv, struct conv_fill *f);
/* "context 1734/2048 (85%): the oldest turns will be dropped" or similar,
 * "" when there is nothing to warn about.  Static or buf. */
const char *conversation_fill_warning(const struct conversation *cv, char *buf, size_t size);

/* ------------------------------------------------------------- actions */

/* What an action costs. */
struct conv_plan {
    int n_tokens;   /* the sequence to send */
    int n_reuse;    /* expected to be found in the cache (common prefix with cache) */
    int n_compute;  /* n_tokens - n_reuse */
    int n_dropped;  /* messages marked out_of_context by this action */
};

/* A new user message: appends it to the session, renders the user turn and
 * the generation prompt.  reserve: tokens kept free for the reply (e.g.
 * max_tokens; capped at n_ctx / 4).  CONV_FULL: policy stop (err says why
 * and what to do), nothing changed. */
int conversation_user_turn(struct conversation *cv, const char *text, int reserve,
                           struct conv_plan *plan, char *err, size_t err_size);
/* /retry: drop the last reply (if the last message is one) and stand just
 * after its generation prompt; or, when the last message is a user message
 * (its reply failed), render the generation prompt after it.  -1 (ELM_E_INVALID)
 * when there is no user message to answer. */
int conversation_retry(struct conversation *cv, int reserve, struct conv_plan *plan, char *err,
                       size_t err_size);
/* /undo: take the last user message and everything after it off the
 * path; they stay as another branch (session_stash), with their other
 * versions.  *text (may be NULL) receives that message's content (owned),
 * to give it back to the input line.  ELM_E_INVALID when there is no user
 * message. */
int conversation_undo(struct conversation *cv, char **text, char *err, size_t err_size);
/* What /undo would put back instead: the last /clear or /remove, while
 * nothing changed the tree since (CONV_UNDONE_NONE otherwise). */
enum conv_undone conversation_restorable(const struct conversation *cv);
/* Put it back: the path as it was before that command, rendered again
 * (plan: what the worker computes; post conversation_prefill_request).
 * ELM_E_INVALID when there is nothing to put back. */
int conversation_restore(struct conversation *cv, struct conv_plan *plan, char *err,
                         size_t err_size);
/* Edit message i: user message: new content, every later message dropped,
 * the turn and the generation prompt rendered again (then generate: plan
 * as for a user turn).  Assistant message: new content rendered as a
 * stored reply, later messages dropped, no generation (plan->n_compute may
 * still be > 0: post conversation_prefill_request when wanted).  Unlike the
 * other actions, a failed edit (CONV_FULL...) leaves messages i.. removed. */
int conversation_edit(struct conversation *cv, size_t i, const char *text, int reserve,
                      struct conv_plan *plan, char *err, size_t err_size);
/* The tree (session_tree.h): /edit and /retry keep what they replace as
 * another branch.  A user message sent again with the same text is a
 * retry from it (another reply, the message itself kept).
 * /fork: keep the path up to message i, what followed becomes another
 * branch; the next message sent (or /retry after a user message) starts
 * the new one.  Nothing to compute: the cache holds the prefix. */
int conversation_fork(struct conversation *cv, size_t i, char *err, size_t err_size);
/* Switch path message i to its k-th version (1-based, session_branch), or
 * make the path run through message id (session_select, /tree): the
 * sequence is rendered again and plan says what the worker will compute
 * (the tokens after the common prefix of the two paths; post
 * conversation_prefill_request).  ELM_E_INVALID when there is no such
 * version or message.  On a tokenizer failure the session is on the new
 * path but the sequence is not rendered (conversation_render). */
int conversation_branch(struct conversation *cv, size_t i, size_t k, struct conv_plan *plan,
                        char *err, size_t err_size);
int conversation_select(struct conversation *cv, uint32_t id, struct conv_plan *plan, char *err,
                        size_t err_size);
/* /clear: an empty path (keeps the system span); the conversation that
 * was there stays as another branch, and /undo puts it back. */
void conversation_clear(struct conversation *cv);
/* Remove the exchange whose user message is session message i (it and the
 * replies up to the next user message) from the path; it stays as another
 * branch after the message before it, and /undo puts it back.  The
 * sequence is rendered again (the cache keeps the prefix before it). */
int conversation_remove_exchange(struct conversation *cv, size_t i, char *err, size_t err_size);
/* /pin: pin or unpin the turn holding message i (the user message and its
 * reply).  ELM_E_INVALID when i is out of range. */
int conversation_pin(struct conversation *cv, size_t i, bool pinned);
/* Change the system prompt (NULL: the template's default): renders the
 * whole conversation again (the system span is the first thing in it). */
int conversation_set_system(struct conversation *cv, const char *system, char *err,
                            size_t err_size);

/* The reply being generated (after user_turn / retry / edit of a user
 * message): append sampled ids as TOKEN events bring them. */
void conversation_reply_push(struct conversation *cv, const int32_t *ids, size_t n);
/* The reply is over: appends the template's closing (template_render_reply_end
 * with how) and the assistant message (content copied, interrupted flag).
 * how: TEMPLATE_END_EOS when the last pushed id is EOS, TEMPLATE_END_STOP
 * when a stop string ended it, TEMPLATE_END_CUT otherwise (cancel, length,
 * error, context full). */
int conversation_reply_end(struct conversation *cv, enum template_end how, const char *content,
                           bool interrupted, char *err, size_t err_size);
/* How a reply ended, from a worker DONE's reason, in one place: the
 * template's closing (how), whether the reply is marked interrupted, and
 * whether a stop string ended it (its ids stay in the sequence, its text
 * never came). */
struct conv_reply_end {
    enum template_end how;
    bool interrupted;
    bool stop_string;
};
struct conv_reply_end conversation_end_from_done(enum elm_done_reason reason);

/* The worker told us (DONE / ERROR n_past) how many tokens its cache holds
 * for this conversation: its first n_past tokens are ours. */
void conversation_set_cached(struct conversation *cv, int n_past);

/* ------------------------------------------------------------ requests */

/* Fill a GENERATE request (start from elm_request_default(ELM_REQ_GENERATE),
 * set sampler, max_tokens and slot yourself): tokens = the whole sequence
 * (borrowed: elm_worker_post copies it), ELM_GEN_SYNC. */
void conversation_request(const struct conversation *cv, struct elm_request *req);
/* A prefill-only GENERATE (max_tokens 0): after a model switch, a session
 * load or an eviction done ahead of time. */
void conversation_prefill_request(const struct conversation *cv, struct elm_request *req);

/* Bytes of renderer text the rewind snapshots hold (bounded: they are not
 * taken past a few KiB of pending text). */
size_t conversation_snapshot_bytes(const struct conversation *cv);

/* Longest common prefix of two id arrays. */
size_t conv_common_prefix(const int32_t *a, size_t na, const int32_t *b, size_t nb);

#endif
