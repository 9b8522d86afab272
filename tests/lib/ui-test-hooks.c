/* ui-test-hooks.c: the UI's test hooks (ui/test_hooks.h) from the
 * environment, compiled into elmchat-testing only; the shipped elmchat
 * reads none of these:
 *   ELMCHAT_LATENCY_LOG=PATH  a line per keystroke read appended to PATH:
 *                             ms from the read to the refresh written, then
 *                             both CLOCK_MONOTONIC instants (tests/lib/keylatency) */
#include "config.h"

#include <stdlib.h>

#include "ui/test_hooks.h"

bool ui_test_hooks(struct ui_test_hooks *out)
{
    *out = (struct ui_test_hooks){0};
    const char *log = getenv("ELMCHAT_LATENCY_LOG");
    out->latency_log = log && *log ? log : NULL;
    return true;
}
