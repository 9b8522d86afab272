/* state.h: engine-internal view of the KV snapshot format (state.c), for
 * code that must agree with it byte for byte (the fuzz harness). */
#ifndef ELMCHAT_ENGINE_STATE_H
#define ELMCHAT_ENGINE_STATE_H

#include <stdint.h>

struct elm_ctx;

/* The checksum stored at the end of a snapshot for ctx's model, over the
 * image p (header, kv heads, n_past ids, every layer's K and V) that the
 * checks before it found complete. */
uint64_t elm_state_checksum(const struct elm_ctx *ctx, const unsigned char *p, uint32_t n_past);

#endif
