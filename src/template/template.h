/* template.h: chat templates (prompts/NAME.yaml, docs/DESIGN.md §6, elmchat-templates(5))
 * and the token sequence of a conversation.
 *
 * A template turns each role's message into text and special ids:
 *   prefix                 once, before anything else (e.g. "{bos}")
 *   roles.system.turn      the system prompt (rendered when it is non-empty, or
 *                          always with roles.system.always: true)
 *   roles.user.turn        a user message; roles.user.after_system replaces it
 *                          for the user message that directly follows the system turn
 *   roles.assistant.turn   a reply: GENERATION_PROMPT LEAD {content} CLOSE, where
 *                          generation_prompt is a prefix of it
 * Placeholders: {content} (always plain text, never searched for special
 * tokens), {bos}, {eos} (token ids, never text); "{{" and "}}" are braces.
 *
 * Token rule (issue 5): the text between two special ids is one run, and
 * each run is encoded as one text: it gets SentencePiece's dummy prefix at
 * its start and nowhere else.  A run is encoded in pieces, cut where the
 * model takes over (after the generation prompt: the cache stops there) and
 * where it hands back (the end of a reply that no special id closes, e.g.
 * chatml's stop string <|im_end|>).  The reply's own ids are those the model
 * sampled.  Invariant: the piece after a reply continues the run, so it is
 * encoded as SentencePiece encodes that text in the middle of a text, with
 * no dummy prefix ("mid-text encoding"); its ids are then exactly those of
 * encoding the whole run at once whenever no piece of the vocabulary spans
 * the boundary (chatml: the boundary is before "\n", a byte piece), and as
 * close as the tokenizer allows otherwise, without re-encoding the sampled
 * ids (issue 7).  So template_render_reply_end and template_render_reply
 * (a stored reply, re-encoded) give the same continuation.
 * A stored reply's ids are enc(SEG + TEXT) minus enc(SEG), SEG being the
 * piece of the run cut at the generation point (the reply continues it, as
 * in training) and TEXT = LEAD + content + the part of HEAD the model writes
 * (HEAD: CLOSE's text before its first special id; the model writes all of
 * it, except when a stop string begins HEAD: then only that stop string),
 * or the mid-text encoding of TEXT when that is not a clean continuation.
 * The text after the last special id of a turn stays pending and starts the
 * next run (or continues the current one), so rendering turn after turn
 * gives exactly the ids of rendering the whole conversation at once
 * (template_render_conversation).
 *
 * openelm-instruct, one turn:
 *   [1] enc("<|system|>\n") [2] enc("\n<|user|>\nQ") [2] enc("\n<|assistant|>\n")
 * then the sampled reply ending in [2]; the pending "\n" joins the next turn:
 *   enc("\n<|user|>\nQ2") [2] enc("\n<|assistant|>\n") ...
 *
 * Threads: a loaded template is immutable (any thread); a renderer belongs to
 * one thread.  Errors: functions returning int give 0 or a negative
 * elm_status and fill err as "FILE:LINE:COLUMN: message" when a file is at fault.
 */
#ifndef ELMCHAT_SRC_TEMPLATE_H
#define ELMCHAT_SRC_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm.h"
#include "src/base/idvec.h"


/* ---------------------------------------------------------------- roles */

enum role { ROLE_SYSTEM = 0, ROLE_USER, ROLE_ASSISTANT, ROLE_COUNT };
const char *role_name(enum role role); /* "system", "user", "assistant" */
bool role_parse(const char *s, enum role *out);

/* ---------------------------------------------------- sampling defaults */

/* Sampling parameters a template or config may set; `set` says which:
 * the engine's ELM_SAMPLING_* bits (elm.h: the six a model can bring too)
 * and two that only a template, config.yaml or a session sets. */
enum {
    SAMPLING_SEED = ELM_SAMPLING_REPEAT_LAST_N << 1,
    SAMPLING_MAX_TOKENS = ELM_SAMPLING_REPEAT_LAST_N << 2,
};
struct sampling {
    unsigned set;
    struct elm_sampler_params p;
    int max_tokens;
};
/* Overwrite the fields of *p / *max_tokens that s sets (max_tokens may be NULL). */
void sampling_apply(const struct sampling *s, struct elm_sampler_params *p, int *max_tokens);
/* The defaults a model ships with (generation_config.json, GGUF) as a
 * struct sampling: they rank above the template's (a model knows what it
 * was trained for), below config.yaml's, the session's and the options. */
struct sampling sampling_from_model(const struct elm_model_sampling *m);

/* ------------------------------------------------------------- template */

#define TEMPLATE_MAX_FILE_SIZE (64 * 1024)

struct template {
    char *name;             /* the `name` key */
    char *description;
    char *path;             /* file it came from */
    char *prefix;           /* raw strings, placeholders not expanded; never NULL */
    char *turn[ROLE_COUNT]; /* never NULL */
    char *user_after_system; /* NULL: turn[ROLE_USER] */
    bool system_always;     /* render the system turn even when empty */
    char *generation_prompt; /* never NULL */
    char *default_system;   /* NULL when the template has none */
    bool stop_eos;          /* `{eos}` is in `stop` (or `stop` is absent) */
    char **stop;            /* stop strings (owned), n_stop of them */
    size_t n_stop;
    struct sampling sampling; /* `sampling:` defaults */
};

/* Load one file.  NULL on error: err = "FILE:LINE:COLUMN: message" (1-based)
 * or "FILE: message".  Owned: template_free. */
struct template *template_load_file(const char *path, char *err, size_t err_size);
/* NAME (no '/', no ".yaml") is looked up in template_search_dirs() order; a
 * path (with '/' or ending in ".yaml") is loaded as is. */
struct template *template_load(const char *name_or_path, char *err, size_t err_size);
void template_free(struct template *tpl);

/* The folders searched for NAME.yaml, first match wins (owned, NULL-ended;
 * free with strv_free):
 *   $ELMCHAT_PROMPTS_DIR (tests, build tree), $XDG_CONFIG_HOME/elmchat/prompts,
 *   the source tree's prompts/ when the program runs from its build tree,
 *   $(pkgdatadir)/prompts. */
char **template_search_dirs(void);
/* Sorted unique names of every template found (owned, NULL-ended). */
char **template_list(void);
void strv_free(char **v);

/* The template that goes with a model (a resolved path), from what the
 * model is, first match wins:
 *   1. its own chat template (a GGUF's tokenizer.chat_template, a folder's
 *      tokenizer_config.json) when its markers are one of ours;
 *   2. the repo id of a model in the Hugging Face cache's layout (the
 *      snapshot folder is named for a commit, never for the model);
 *   3. the name it gives itself (GGUF general.finetune and general.name,
 *      config.json's _name_or_path);
 *   4. only then its file or folder name.
 * "openelm-instruct" when that says Instruct (any case), else "plain".
 * why (may be NULL with why_size 0) gets the reason, e.g.
 * "repo id apple/OpenELM-270M-Instruct".  Static string. */
const char *template_for_model(const char *model_path, char *why, size_t why_size);
/* The same; a llama-server's ("server:URL") by the name it gives its
 * model (MODEL_READY's info.name; NULL: not known yet). */
const char *template_for_model_named(const char *model_path, const char *server_name, char *why,
                                     size_t why_size);
/* template_for_model without the reason. */
const char *template_default_for_model(const char *model_path);

/* ------------------------------------------------------------ rendering */

/* Incremental renderer: the state between turns of one conversation. */
enum template_state {
    TEMPLATE_START = 0,   /* nothing rendered yet */
    TEMPLATE_AFTER_PREFIX, /* the prefix, no system turn */
    TEMPLATE_AFTER_SYSTEM,
    TEMPLATE_AFTER_USER,
    TEMPLATE_IN_REPLY,    /* generation prompt rendered, reply being sampled */
    TEMPLATE_AFTER_REPLY,
};
struct template_render {
    const struct template *tpl; /* borrowed */
    const elm_tokenizer *tok;   /* borrowed */
    enum template_state state;
    char *pending; /* text after the last special id, not yet encoded (owned) */
    size_t n_pending, pending_cap;
    char *run;     /* the run encoded at the generation point (owned) */
    size_t n_run, run_cap;
    bool cont;     /* pending continues a run after the model's ids: no dummy prefix */
    bool run_cont; /* run was encoded that way */
};
void template_render_init(struct template_render *r, const struct template *tpl,
                          const elm_tokenizer *tok);
void template_render_fini(struct template_render *r);

/* Each call appends the new ids to *out (never re-renders earlier turns) and
 * returns 0 or a negative elm_status (tokenizer failure; state unchanged).
 *
 * template_render_system: the prefix and the system turn; system NULL means
 * the template's default_system (or none).  Optional; must come first.
 * template_render_user: a user turn (renders the prefix first if needed).
 * template_render_generation_prompt: the generation prompt, flushed: after
 * it, append the sampled reply ids.
 * template_render_reply_end: after the sampled ids, says how the reply ended
 * and appends the closing ids.  CLOSE's text before its first special id
 * ("HEAD") belongs to the reply's run.
 *   TEMPLATE_END_EOS: the last sampled id is EOS: CLOSE through its first
 *     {eos} counts as generated (EOS is not added twice).
 *     The text after that EOS starts a new run.
 *   TEMPLATE_END_STOP: the model wrote a stop string (its tokens stay in the
 *     sequence): the longest stop string that begins HEAD counts as generated,
 *     the rest of CLOSE is rendered, continuing the reply's run.
 *   TEMPLATE_END_CUT: cancelled or max tokens: all of CLOSE is rendered (e.g.
 *     openelm-instruct adds [2]), continuing the reply's run.
 * Trailing text stays pending for the next turn.
 * template_render_reply: a stored reply whose sampled ids are not at hand:
 * its tokens and its closing (after template_render_generation_prompt).
 */
int template_render_system(struct template_render *r, const char *system, struct idvec *out);
int template_render_user(struct template_render *r, const char *content, struct idvec *out);
int template_render_generation_prompt(struct template_render *r, struct idvec *out);
int template_render_reply(struct template_render *r, const char *content, struct idvec *out);
enum template_end { TEMPLATE_END_EOS, TEMPLATE_END_STOP, TEMPLATE_END_CUT };
int template_render_reply_end(struct template_render *r, enum template_end how,
                              struct idvec *out);
/* Restore the state of a conversation whose last reply is complete (e.g.
 * after loading a KV snapshot): state AFTER_REPLY with the template's
 * trailing text pending; with no messages at all use reset. */
void template_render_set_after_reply(struct template_render *r);
void template_render_reset(struct template_render *r);

/* The whole conversation at once (an independent implementation of the same
 * rule; tests check both agree).  msgs are user/assistant turns in order;
 * system as for template_render_system.  add_generation_prompt: end with the
 * generation prompt (the prompt for the next reply). */
struct template_msg {
    enum role role;
    const char *content;
};
int template_render_conversation(const struct template *tpl, const elm_tokenizer *tok,
                                 const char *system, const struct template_msg *msgs,
                                 size_t n_msgs, bool add_generation_prompt,
                                 struct idvec *out);

/* The conversation as text, specials written as "<s>"/"</s>" (for
 * --dry-run --text and the UI's /template view).  Owned. */
char *template_render_text(const struct template *tpl, const char *system,
                           const struct template_msg *msgs, size_t n_msgs,
                           bool add_generation_prompt);

#endif
