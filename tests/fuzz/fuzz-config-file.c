/* fuzz-config-file.c: config.yaml (src/config/config_file.c on src/store/yamldoc.c). */
#include "config.h"

#include "tests/fuzz/fuzz.h"

#include "src/config/config_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file("config.yaml", data, size);
    struct config c;
    config_init(&c);
    char err[512];
    if (config_load(&c, path, err, sizeof err) == 0) {
        for (size_t i = 0; i < c.n_aliases; i++)
            if (config_alias(&c, c.aliases[i].name) == NULL)
                __builtin_trap();
        (void)config_alias(&c, "nope");
        (void)context_policy_name(c.policy);
    }
    config_fini(&c);
    return 0;
}
