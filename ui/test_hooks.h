/* test_hooks.h: what a test program changes in the UI's behaviour.  The
 * shipped elmchat has none: ui/test_hooks.c answers false.  elmchat-testing
 * (the binary the shell and tmux tests run) links tests/lib/ui-test-hooks.c
 * in, whose ui_test_hooks takes the place of libui's (an archive's member is
 * linked only for a name still missing) and reads them from the
 * environment.  The engine's own: engine/base/test_hooks.h. */
#ifndef ELMCHAT_UI_TEST_HOOKS_H
#define ELMCHAT_UI_TEST_HOOKS_H

#include <stdbool.h>

struct ui_test_hooks {
    /* tui.c: a file to which the chat appends a line per keystroke read: ms
     * from the read to the refresh written, then both CLOCK_MONOTONIC
     * instants (tests/lib/keylatency); NULL: none */
    const char *latency_log;
};

/* The hooks in force into *out; false (and *out all zero): none. */
bool ui_test_hooks(struct ui_test_hooks *out);

#endif
