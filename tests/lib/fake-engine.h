/* fake-engine.h: see fake-engine.c (the worker tests' stand-in engine). */
#ifndef ELMCHAT_TESTS_LIB_FAKE_ENGINE_H
#define ELMCHAT_TESTS_LIB_FAKE_ENGINE_H

#include <stdint.h>

/* The fake model's greedy next id after `last` at position pos. */
int32_t fake_next(int32_t last, int pos, int n_vocab);

#endif
