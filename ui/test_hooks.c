/* test_hooks.c: the shipped program's UI test hooks: none (test_hooks.h
 * says how elmchat-testing has its own).  Alone in its file, so that a test
 * program's definition replaces it. */
#include "config.h"

#include "ui/test_hooks.h"

bool ui_test_hooks(struct ui_test_hooks *out)
{
    *out = (struct ui_test_hooks){0};
    return false;
}
