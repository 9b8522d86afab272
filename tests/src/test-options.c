/* test-options.c: the strict option-value parsing every front end shares
 * (src/base/options.c): id lists and bounded integers. */
#include "config.h"

#include <stdlib.h>

#include "src/base/options.h"
#include "tests/lib/tap.h"

int main(void)
{
    plan_lazy();

    int32_t *ids = NULL;
    size_t n = 0;
    ok(cli_parse_ids("1,2, 30000", &ids, &n) && n == 3 && ids[2] == 30000, "cli_parse_ids");
    free(ids);
    ok(!cli_parse_ids("1,x,3", &ids, &n), "cli_parse_ids rejects junk");
    ok(!cli_parse_ids("-4", &ids, &n), "cli_parse_ids rejects negative ids");
    long l;
    ok(!cli_parse_int("12abc", 0, 100, &l), "cli_parse_int rejects trailing junk");
    ok(!cli_parse_int("101", 0, 100, &l), "cli_parse_int enforces the range");

    return done_testing();
}
