/* test-hooks.c: the engine's test hooks (engine/base/test_hooks.h) from the
 * environment, compiled into the test programs that use them (and into
 * tests/lib/elmchat-testing, the binary the shell and tmux tests run); the
 * shipped elmchat reads none of these:
 *   ELM_WORKER_TEST_LOAD_DELAY_MS=N      every disk load takes N ms longer
 *   ELM_WORKER_TEST_TOKEN_INTERVAL_MS=N  at least N ms between sampled tokens
 *   ELM_WORKER_TEST_DRAFT_K=N            drafts of N ids that never turn off
 *   ELM_WORKER_TEST_REPLY_FILE=PATH      every reply is that file's text
 *   ELM_BLIS_CHECK=fail                  the check of BLIS fails
 *   ELM_GEMM_BF16=on|off                 the bf16 GEMM pays or not, unmeasured
 * Read at every call, so a test may set them between two workers. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/base/test_hooks.h"
#include "engine/elm.h"

/* 0 when unset or out of 1..max. */
static int env_int(const char *name, long max)
{
    const char *v = getenv(name);
    long n = v && *v ? strtol(v, NULL, 10) : 0;
    return n > 0 && n <= max ? (int)n : 0;
}

static bool env_is(const char *name, const char *value)
{
    const char *v = getenv(name);
    return v && strcmp(v, value) == 0;
}

bool elm_test_hooks(struct elm_test_hooks *out)
{
    *out = (struct elm_test_hooks){0};
    out->load_delay_ms = env_int("ELM_WORKER_TEST_LOAD_DELAY_MS", 60000);
    out->token_interval_ms = env_int("ELM_WORKER_TEST_TOKEN_INTERVAL_MS", 60000);
    out->draft_k = env_int("ELM_WORKER_TEST_DRAFT_K", ELM_DRAFT_MAX);
    const char *reply = getenv("ELM_WORKER_TEST_REPLY_FILE");
    out->reply_file = reply && *reply ? reply : NULL;
    out->blis_check_fails = env_is("ELM_BLIS_CHECK", "fail");
    out->gemm_bf16 = env_is("ELM_GEMM_BF16", "on") ? 1 : env_is("ELM_GEMM_BF16", "off") ? -1 : 0;
    return true;
}
