/* stop_strings.h: stop strings matched on a reply's text, shared by the
 * generation loop (generate.c) and the remote engine's stream
 * (worker/model_remote.c), so that both hold back the same text.
 * Engine-internal. */
#ifndef ELMCHAT_ENGINE_INFERENCE_STOP_STRINGS_H
#define ELMCHAT_ENGINE_INFERENCE_STOP_STRINGS_H

#include <stdbool.h>
#include <stddef.h>

/* Text not reported yet because it may be the start of a stop string
 * (caller-embedded, zeroed to start; free(buf) at the end). */
struct holdback {
    char *buf;
    size_t n, cap;
};

/* Append len bytes; false on OOM. */
bool holdback_add(struct holdback *h, const char *s, size_t len);
/* Drop the first n bytes (the ones reported). */
void holdback_drop(struct holdback *h, size_t n);
/* How much of the held text is final: up to the first full stop string
 * (*hit set), else up to the first suffix that begins a stop string. */
size_t holdback_final(const struct holdback *h, const char *const *stops, int n_stops,
                      const char **hit);

#endif
