/* test-tap.c: the TAP harness's own checks (tests/lib/tap.c): its
 * assertions, the private tmpdir and the data path every C test relies on. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tests/lib/tap.h"

int main(void)
{
    plan_lazy();

    ok(1, "ok() passes a true condition");
    is_int(2 + 2, 4, "is_int compares integers");
    is_str("abc", "abc", "is_str compares strings");
    near(0.1 + 0.2, 0.3, 1e-12, "near() allows a tolerance");
    const char *dir = tap_tmpdir();
    ok(dir && strstr(dir, "elmchat-test-") != NULL, "tap_tmpdir makes a private directory");
    FILE *f = fopen(tap_data_path("README.md"), "r");
    ok(f != NULL, "tap_data_path finds tests/data/README.md (%s)", tap_data_path("README.md"));
    if (f)
        fclose(f);

    return done_testing();
}
