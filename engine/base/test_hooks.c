/* test_hooks.c: the shipped program's test hooks: none (test_hooks.h says
 * how a test program has its own).  Alone in its file, so that a test
 * program's definition replaces it. */
#include "config.h"

#include "engine/base/test_hooks.h"

bool elm_test_hooks(struct elm_test_hooks *out)
{
    *out = (struct elm_test_hooks){0};
    return false;
}
