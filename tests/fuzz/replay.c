/* replay.c: tests/fuzz/replay, the fuzz targets in `make check`.
 *
 * Feeds every seed of tests/fuzz/corpus/NAME/ to target NAME, then
 * deterministic mutations of each seed: every truncation of small seeds
 * (evenly spaced ones of larger seeds) and bit flips, byte overwrites,
 * deletions and duplications drawn from a fixed PRNG.  Under
 * --enable-sanitizers this finds what the fuzzers would find first.
 *
 *   tests/fuzz/replay                  every target, TAP
 *   tests/fuzz/replay NAME...          some targets
 *   tests/fuzz/replay NAME FILE...     one target on given files only
 * FUZZ_REPLAY_INPUTS (default 3000): mutated inputs per target.
 */
#include "config.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "tests/lib/tap.h"

#define TARGET(n) int fuzz_##n(const uint8_t *data, size_t size);
TARGET(safetensors)
TARGET(config)
TARGET(json)
TARGET(gguf)
TARGET(sp_model)
TARGET(tokenizer_json)
TARGET(state)
TARGET(template)
TARGET(session)
TARGET(config_file)
TARGET(kvmeta)
TARGET(render)
TARGET(hub_list)
#undef TARGET

static const struct target {
    const char *name; /* tests/fuzz/corpus/NAME, fuzz-NAME.c */
    int (*fn)(const uint8_t *, size_t);
} targets[] = {
    {"safetensors", fuzz_safetensors},
    {"config", fuzz_config},
    {"json", fuzz_json},
    {"gguf", fuzz_gguf},
    {"sp-model", fuzz_sp_model},
    {"tokenizer-json", fuzz_tokenizer_json},
    {"state", fuzz_state},
    {"template", fuzz_template},
    {"session", fuzz_session},
    {"config-file", fuzz_config_file},
    {"kvmeta", fuzz_kvmeta},
    {"render", fuzz_render},
    {"hub-list", fuzz_hub_list},
};
#define N_TARGETS (sizeof targets / sizeof targets[0])

#define SMALL_SEED 1024 /* every truncation below this size */
#define MAX_SEED (1u << 20)

static uint64_t rng_state;

static uint64_t rng(void)
{
    /* xorshift64*: fixed seeds, the same inputs on every run */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static uint8_t *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *buf = malloc(MAX_SEED);
    size_t n = buf ? fread(buf, 1, MAX_SEED, f) : 0;
    fclose(f);
    *size = n;
    return buf;
}

/* Feed an exact-size copy, so that ASan sees reads past the end. */
static void feed(const struct target *t, const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    if (size)
        memcpy(copy, data, size);
    t->fn(copy, size);
    free(copy);
}

static const uint8_t interesting[] = {0x00, 0x01, 0x02, 0x7f, 0x80, 0xff, '"', '{', '}', '[',
                                      ']', ':', ',', '\n', '-', ' ', '\\', 0xc3, 0xe2};

static size_t mutate(uint8_t *buf, size_t size, size_t cap)
{
    int n_ops = 1 + (int)(rng() % 4);
    for (int k = 0; k < n_ops && size; k++) {
        size_t at = (size_t)(rng() % size);
        switch (rng() % 6) {
        case 0:
        case 1:
            buf[at] ^= (uint8_t)(1u << (rng() % 8));
            break;
        case 2:
            buf[at] = interesting[rng() % sizeof interesting];
            break;
        case 3: { /* a little-endian integer field set to an edge value */
            static const uint64_t edges[] = {0, 1, 0xff, 0xffff, 0x7fffffff, 0xffffffff,
                                             0x80000000, UINT64_MAX, 1ull << 40};
            uint64_t v = edges[rng() % (sizeof edges / sizeof edges[0])];
            size_t w = (size_t)1 << (rng() % 4);
            for (size_t i = 0; i < w && at + i < size; i++)
                buf[at + i] = (uint8_t)(v >> (8 * i));
            break;
        }
        case 4: { /* delete a run */
            size_t len = 1 + (size_t)(rng() % 16);
            if (len > size - at)
                len = size - at;
            memmove(buf + at, buf + at + len, size - at - len);
            size -= len;
            break;
        }
        default: { /* duplicate a run */
            size_t len = 1 + (size_t)(rng() % 16);
            if (len > size - at)
                len = size - at;
            if (size + len > cap)
                break;
            memmove(buf + at + len, buf + at, size - at);
            size += len;
            break;
        }
        }
    }
    return size;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The regular files of dir, sorted (owned; *n set). */
static char **list_dir(const char *dir, size_t *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    char **v = NULL;
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096 + 256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            v = realloc(v, cap * sizeof *v);
        }
        v[(*n)++] = strdup(path);
    }
    closedir(d);
    if (*n)
        qsort(v, *n, sizeof *v, cmp_str);
    return v;
}

static const char *top_srcdir(void)
{
    const char *top = getenv("top_srcdir");
    return top && *top ? top : FUZZ_TOP_SRCDIR;
}

static void run_target(const struct target *t, size_t budget)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/%s", top_srcdir(), t->name);
    size_t n_seeds;
    char **seeds = list_dir(dir, &n_seeds);
    if (!n_seeds) {
        ok(0, "%s: seeds in %s", t->name, dir);
        return;
    }
    clock_t t0 = clock();
    rng_state = 0x9e3779b97f4a7c15ull;
    for (const char *p = t->name; *p; p++)
        rng_state = (rng_state ^ (unsigned char)*p) * 0x100000001b3ull;
    size_t inputs = 0, per_seed = budget / n_seeds + 1;
    for (size_t s = 0; s < n_seeds; s++) {
        size_t size;
        uint8_t *seed = read_all(seeds[s], &size);
        if (!seed) {
            ok(0, "%s: read %s", t->name, seeds[s]);
            continue;
        }
        feed(t, seed, size);
        inputs++;
        /* truncations: every length of small seeds, else 64 spread out */
        size_t step = size <= SMALL_SEED ? 1 : size / 64;
        for (size_t len = 0; len < size; len += step, inputs++)
            feed(t, seed, len);
        size_t cap = size + 256;
        uint8_t *buf = malloc(cap);
        for (size_t i = 0; i < per_seed; i++, inputs++) {
            memcpy(buf, seed, size);
            size_t n = mutate(buf, size, cap);
            feed(t, buf, n);
        }
        free(buf);
        free(seed);
        free(seeds[s]);
    }
    free(seeds);
    ok(1, "%s: %zu seeds, %zu inputs, %.2f s", t->name, n_seeds, inputs,
       (double)(clock() - t0) / CLOCKS_PER_SEC);
}

static const struct target *find(const char *name)
{
    for (size_t i = 0; i < N_TARGETS; i++)
        if (strcmp(targets[i].name, name) == 0)
            return &targets[i];
    return NULL;
}

int main(int argc, char **argv)
{
    const char *env = getenv("FUZZ_REPLAY_INPUTS");
    size_t budget = env && *env ? (size_t)strtoul(env, NULL, 10) : 3000;
    /* NAME FILE...: replay given files (a crash found by `make fuzz`) */
    if (argc >= 3 && find(argv[1]) && !find(argv[2])) {
        const struct target *t = find(argv[1]);
        for (int i = 2; i < argc; i++) {
            size_t size;
            uint8_t *data = read_all(argv[i], &size);
            if (!data) {
                perror(argv[i]);
                return 1;
            }
            feed(t, data, size);
            free(data);
            printf("%s: %s: ok\n", t->name, argv[i]);
        }
        return 0;
    }
    for (int i = 1; i < argc; i++)
        if (!find(argv[i])) {
            fprintf(stderr, "fuzz-replay: no target %s\n", argv[i]);
            return 2;
        }
    if (argc > 1) {
        plan(argc - 1);
        for (int i = 1; i < argc; i++)
            run_target(find(argv[i]), budget);
    } else {
        plan((int)N_TARGETS);
        for (size_t i = 0; i < N_TARGETS; i++)
            run_target(&targets[i], budget);
    }
    return done_testing();
}
