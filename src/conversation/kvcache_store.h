/* kvcache_store.h: KV snapshots of conversations ($XDG_CACHE_HOME/elmchat/kv/,
 * docs/DESIGN.md §7; a cache: safe to delete).
 *
 * NAME.kv is the engine's snapshot (elm_state_save: model fingerprint, token
 * ids, K/V rows), written by the worker (SAVE_STATE).  NAME.kv.meta is ours,
 * written atomically beside it: the model fingerprint, the template name,
 * a hash of the system prompt and of every in-context message, the whole
 * token sequence and the message spans.  It lets a loaded session take back
 * its exact ids (the replies' sampled ids, which rendering the text again
 * might not reproduce), so the snapshot's prefix matches and the first reply
 * after a restart starts as fast as if the program had never stopped.
 *
 * Loading: kvcache_adopt() after conversation_render(); when it returns
 * true, post kvcache_load_request(): its DONE's n_past is the snapshot's
 * common prefix with the sequence (a local model; a server's: what it
 * restored), and the next GENERATE (ELM_GEN_SYNC) computes the rest.  The
 * worker's LOAD_STATE fails with ELM_E_MISMATCH for another model (then
 * prefill as without a snapshot).  Nothing here is ever an error the user
 * must see.
 *
 * UI thread (kvcache_restore_sync: the thread owning the ctx).
 */
#ifndef ELMCHAT_SRC_KVCACHE_STORE_H
#define ELMCHAT_SRC_KVCACHE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm.h"
#include "engine/elm_worker.h"
#include "src/conversation/conversation.h"

/* $XDG_CACHE_HOME/elmchat/kv/NAME.kv (owned; the folder is created, 0700);
 * NULL for an invalid session name or when the folder cannot be made. */
char *kvcache_path_for(const char *session_name);

/* A SAVE_STATE / LOAD_STATE request for slot (path and cv's tokens
 * borrowed: post copies). */
void kvcache_save_request(const char *kv_path, int slot, struct elm_request *req);
void kvcache_load_request(const char *kv_path, int slot, const struct conversation *cv,
                          struct elm_request *req);

/* Write kv_path + ".meta" for the conversation as it is now (call when
 * posting SAVE_STATE: requests run in order, so the snapshot holds a prefix
 * of these tokens).  0 or -errno. */
int kvcache_meta_save(const struct conversation *cv, const char *kv_path, uint64_t fingerprint,
                      char *err, size_t err_size);
/* Read kv_path + ".meta"; when its fingerprint is fingerprint (0: any), its
 * template is cv's and its system prompt and first K in-context messages
 * are cv's, replace the sequence's first K turns by the recorded ids (the
 * sampled ones) and render the rest again.  Returns true when a LOAD_STATE
 * is worth posting (the meta matched at least the system span).  Never
 * fails loudly: a missing, foreign or damaged meta returns false and leaves
 * cv as it was. */
bool kvcache_adopt(struct conversation *cv, const char *kv_path, uint64_t fingerprint);

/* The .kv.meta trailer: FNV-1a of the n bytes before it (the fuzz harness
 * writes it into its inputs). */
uint64_t kvcache_meta_checksum(const unsigned char *p, size_t n);

/* Remove NAME.kv and NAME.kv.meta (session deleted or renamed). */
void kvcache_remove(const char *kv_path);

/* Synchronous restore for code that owns an elm_ctx (bench, tests): load
 * the snapshot into ctx and keep only its common prefix with tokens[0, n).
 * *n_reused = tokens usable from the snapshot (0 when it was rejected:
 * another model, damaged, or no common prefix; the ctx is then empty).
 * Returns ELM_OK, or the load's status (ELM_E_MISMATCH, ELM_E_IO, ...)
 * when it fell back; never leaves the ctx holding tokens that are not a
 * prefix of tokens. */
elm_status kvcache_restore_sync(elm_ctx *ctx, const char *kv_path, const int32_t *tokens,
                                size_t n, size_t *n_reused, char *err, size_t err_size);

#endif
