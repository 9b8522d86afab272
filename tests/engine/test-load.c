/* test-load.c: loading a good checkpoint, and refusing bad ones with
 * the right status and a message naming the file and the tensor.  The bad
 * files are made here, in the test's tmpdir, by corrupting a generated
 * checkpoint: truncation, header length past EOF, malformed header,
 * overlapping and out-of-range offsets, size != shape x dtype, wrong and
 * unknown dtypes, missing tensor, wrong shape, overflowing numbers, bad
 * config values, bad shard indexes.  And that the load reads every weight
 * page (its mapping's Rss after elm_model_load). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/tap.h"
#include "tests/lib/engine-fixtures.h"

static char good[4096], good_sharded[4096];
static int case_no;

static bool copy_file(const char *from, const char *to)
{
    size_t n;
    void *d = te_read(from, &n);
    bool r = d && te_write(to, d, n);
    free(d);
    return r;
}

/* A fresh folder holding a copy of the good single-file checkpoint. */
static const char *bad_dir(char *buf, size_t size)
{
    char name[32], a[8192], b[8192];
    snprintf(name, sizeof name, "bad-%d", ++case_no);
    te_dir(name, buf, size);
    static const char *const files[] = {"config.json", "model.safetensors"};
    for (int i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "%s/%s", good, files[i]);
        snprintf(b, sizeof b, "%s/%s", buf, files[i]);
        copy_file(a, b);
    }
    return buf;
}

/* Load must fail with status and a message containing every needle. */
static void expect_fail(const char *dir, elm_status want, const char *what, const char *needle1,
                        const char *needle2)
{
    char err[ELM_ERR_MAX] = "";
    elm_model *m = (elm_model *)&err; /* sentinel: must stay untouched */
    elm_status st = elm_model_load(dir, NULL, &m, err, sizeof err);
    bool msg = (!needle1 || strstr(err, needle1)) && (!needle2 || strstr(err, needle2));
    if (!ok(st == want && msg && m == (elm_model *)&err, "%s: %s", what, elm_status_str(want)))
        diag("got %d (%s): %s", st, elm_status_str(st), err);
    else
        diag("  %s", err);
    if (st == ELM_OK && m != (elm_model *)&err)
        elm_model_free(m);
}

/* ---------------------------------------------------- safetensors header */

typedef void (*mutate_fn)(json_object *header, uint64_t data_size);

/* Rewrite model.safetensors in dir with a mutated header, same data. */
static bool rewrite(const char *dir, mutate_fn fn)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    size_t n;
    unsigned char *d = te_read(path, &n);
    if (!d || n < 8)
        return false;
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--)
        hl = hl << 8 | d[i];
    char *text = strndup((char *)d + 8, (size_t)hl);
    json_object *h = json_tokener_parse(text);
    free(text);
    if (!h) {
        free(d);
        return false;
    }
    fn(h, n - 8 - hl);
    const char *s = json_object_to_json_string_ext(h, JSON_C_TO_STRING_PLAIN);
    size_t len = strlen(s), padded = (len + 7) / 8 * 8;
    size_t total = 8 + padded + (n - 8 - hl);
    unsigned char *out = malloc(total);
    for (int i = 0; i < 8; i++)
        out[i] = (unsigned char)(padded >> (8 * i));
    memcpy(out + 8, s, len);
    memset(out + 8 + len, ' ', padded - len);
    memcpy(out + 8 + padded, d + 8 + hl, n - 8 - hl);
    bool r = te_write(path, out, total);
    json_object_put(h);
    free(out);
    free(d);
    return r;
}

static json_object *entry(json_object *h, const char *name)
{
    json_object *v = NULL;
    json_object_object_get_ex(h, name, &v);
    return v;
}

static void set_pair(json_object *e, const char *key, int64_t a, int64_t b)
{
    json_object *arr = json_object_new_array();
    json_object_array_add(arr, json_object_new_int64(a));
    json_object_array_add(arr, json_object_new_int64(b));
    json_object_object_add(e, key, arr);
}

static int64_t offset_of(json_object *e, int i)
{
    json_object *o = NULL;
    json_object_object_get_ex(e, "data_offsets", &o);
    return json_object_get_int64(json_object_array_get_idx(o, (size_t)i));
}

#define NORM0 "transformer.layers.0.attn_norm.weight"
#define NORM0F "transformer.layers.0.ffn_norm.weight"
#define QKV1 "transformer.layers.1.attn.qkv_proj.weight"
#define PROJ2 "transformer.layers.2.ffn.proj_2.weight"

static void m_overlap(json_object *h, uint64_t ds)
{
    (void)ds;
    json_object *f = entry(h, NORM0F);
    set_pair(entry(h, NORM0), "data_offsets", offset_of(f, 0), offset_of(f, 1));
}

static void m_out_of_range(json_object *h, uint64_t ds)
{
    set_pair(entry(h, NORM0), "data_offsets", (int64_t)ds, (int64_t)ds + 512);
}

static void m_huge_offset(json_object *h, uint64_t ds)
{
    (void)ds;
    set_pair(entry(h, NORM0), "data_offsets", INT64_MAX - 100, INT64_MAX);
}

static void m_size(json_object *h, uint64_t ds)
{
    (void)ds;
    json_object *shape = json_object_new_array();
    json_object_array_add(shape, json_object_new_int(129));
    json_object_object_add(entry(h, NORM0), "shape", shape);
}

static void m_overflow_shape(json_object *h, uint64_t ds)
{
    (void)ds;
    json_object *shape = json_object_new_array();
    for (int i = 0; i < 4; i++)
        json_object_array_add(shape, json_object_new_int64((int64_t)1 << 40));
    json_object_object_add(entry(h, NORM0), "shape", shape);
}

static void m_dtype(json_object *h, uint64_t ds)
{
    (void)ds;
    json_object_object_add(entry(h, PROJ2), "dtype", json_object_new_string("I32"));
}

static void m_unknown_dtype(json_object *h, uint64_t ds)
{
    (void)ds;
    json_object_object_add(entry(h, PROJ2), "dtype", json_object_new_string("F12"));
}

static void m_missing(json_object *h, uint64_t ds)
{
    (void)ds;
    json_object_object_del(h, PROJ2);
}

static void m_transposed(json_object *h, uint64_t ds)
{
    (void)ds;
    json_object *shape = NULL;
    json_object_object_get_ex(entry(h, QKV1), "shape", &shape);
    int64_t r = json_object_get_int64(json_object_array_get_idx(shape, 0));
    int64_t c = json_object_get_int64(json_object_array_get_idx(shape, 1));
    json_object *t = json_object_new_array();
    json_object_array_add(t, json_object_new_int64(c));
    json_object_array_add(t, json_object_new_int64(r));
    json_object_object_add(entry(h, QKV1), "shape", t);
}

static void m_not_object(json_object *h, uint64_t ds)
{
    (void)ds;
    json_object_object_add(h, NORM0, json_object_new_int(3));
}

static void header_cases(void)
{
    char dir[4096], path[8192];
    static const struct {
        mutate_fn fn;
        elm_status st;
        const char *what, *needle;
    } cases[] = {
        {m_overlap, ELM_E_FORMAT, "overlapping data_offsets", "overlaps"},
        {m_out_of_range, ELM_E_FORMAT, "data_offsets past the data", "outside"},
        {m_huge_offset, ELM_E_FORMAT, "data_offsets near INT64_MAX", "outside"},
        {m_size, ELM_E_FORMAT, "data size != shape x dtype size", "needs"},
        {m_overflow_shape, ELM_E_FORMAT, "shape whose product overflows", "overflow"},
        {m_dtype, ELM_E_UNSUPPORTED, "wrong dtype (I32)", "dtype I32"},
        {m_unknown_dtype, ELM_E_FORMAT, "unknown dtype", "unknown dtype"},
        {m_missing, ELM_E_FORMAT, "missing tensor", "missing tensor"},
        {m_transposed, ELM_E_FORMAT, "wrong (transposed) shape", "config.json implies"},
        {m_not_object, ELM_E_FORMAT, "header entry not an object", "not an object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bad_dir(dir, sizeof dir);
        if (!ok(rewrite(dir, cases[i].fn), "make: %s", cases[i].what))
            continue;
        expect_fail(dir, cases[i].st, cases[i].what, "model.safetensors", cases[i].needle);
    }
    /* The tensor is named where it is the tensor's fault. */
    bad_dir(dir, sizeof dir);
    rewrite(dir, m_missing);
    expect_fail(dir, ELM_E_FORMAT, "missing tensor is named", PROJ2, NULL);
    bad_dir(dir, sizeof dir);
    rewrite(dir, m_transposed);
    expect_fail(dir, ELM_E_FORMAT, "wrong shape names the tensor", QKV1, NULL);

    /* Byte-level damage. */
    size_t n;
    unsigned char *d;
    bad_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    d = te_read(path, &n);
    te_write(path, d, n / 2);
    expect_fail(dir, ELM_E_FORMAT, "file truncated to half", "model.safetensors", "outside");
    te_write(path, d, 5);
    expect_fail(dir, ELM_E_FORMAT, "file of 5 bytes", "model.safetensors", "truncated");
    te_write(path, d, 0);
    expect_fail(dir, ELM_E_FORMAT, "empty file", "model.safetensors", NULL);
    unsigned char *e = malloc(n);
    memcpy(e, d, n);
    uint64_t past = n; /* header length = the whole file: past EOF */
    for (int i = 0; i < 8; i++)
        e[i] = (unsigned char)(past >> (8 * i));
    te_write(path, e, n);
    expect_fail(dir, ELM_E_FORMAT, "header length past EOF", "model.safetensors", "past the end");
    memset(e, 0xff, 8);
    te_write(path, e, n);
    expect_fail(dir, ELM_E_FORMAT, "header length 2^64-1", "model.safetensors", "past the end");
    memcpy(e, d, n);
    e[8] = 'x';
    te_write(path, e, n);
    expect_fail(dir, ELM_E_FORMAT, "malformed header JSON", "model.safetensors", "malformed");
    memcpy(e, d, n);
    e[8 + 1] = '\0'; /* a NUL inside the JSON text */
    te_write(path, e, n);
    expect_fail(dir, ELM_E_FORMAT, "NUL byte in the header", "model.safetensors", NULL);
    free(e);

    /* A tensor named twice (json-c alone would keep the second silently):
     * the header text with NORM0's entry copied to the front. */
    uint64_t hn = 0;
    for (int i = 7; i >= 0; i--)
        hn = hn << 8 | d[i];
    const char *h = (const char *)d + 8, *at = strstr(h, "\"" NORM0 "\"");
    const char *close = at ? strchr(at, '}') : NULL;
    if (ok(at && close && (size_t)(close - h) < hn, "make: a header with a duplicate name")) {
        size_t seg = (size_t)(close + 1 - at), m = 8 + hn + seg + 1 + (n - 8 - hn);
        unsigned char *dup = malloc(m), *q = dup + 8;
        uint64_t nh = hn + seg + 1;
        for (int i = 0; i < 8; i++)
            dup[i] = (unsigned char)(nh >> (8 * i));
        *q++ = '{';
        memcpy(q, at, seg);
        q += seg;
        *q++ = ',';
        memcpy(q, h + 1, n - 9); /* the rest of the header, then the data */
        te_write(path, dup, m);
        expect_fail(dir, ELM_E_FORMAT, "a tensor named twice in the header", "model.safetensors",
                    "appears twice");
        free(dup);
    }
    free(d);
}

/* ----------------------------------------------------------- config.json */

static void config_case(const char *what, const char *key, json_object *value, elm_status st,
                        const char *needle)
{
    char dir[4096], path[8192];
    bad_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_object *c = te_json(path);
    if (value)
        json_object_object_add(c, key, value);
    else
        json_object_object_del(c, key);
    json_object_to_file(path, c);
    json_object_put(c);
    expect_fail(dir, st, what, "config.json", needle);
}

static json_object *ints(int n, const int *v)
{
    json_object *a = json_object_new_array();
    for (int i = 0; i < n; i++)
        json_object_array_add(a, json_object_new_int(v[i]));
    return a;
}

static void config_cases(void)
{
    config_case("model_dim 0", "model_dim", json_object_new_int(0), ELM_E_FORMAT, "model_dim");
    config_case("model_dim absurd", "model_dim", json_object_new_int64(1LL << 40), ELM_E_FORMAT,
                "out of range");
    config_case("1e6 layers", "num_transformer_layers", json_object_new_int(1000000),
                ELM_E_FORMAT, "num_transformer_layers");
    config_case("0 layers", "num_transformer_layers", json_object_new_int(0), ELM_E_FORMAT,
                "num_transformer_layers");
    config_case("vocab 0", "vocab_size", json_object_new_int(0), ELM_E_FORMAT, "vocab_size");
    config_case("vocab 2^40", "vocab_size", json_object_new_int64(1LL << 40), ELM_E_FORMAT,
                "vocab_size");
    config_case("head_dim odd", "head_dim", json_object_new_int(15), ELM_E_FORMAT, "odd");
    config_case("head_dim 0", "head_dim", json_object_new_int(0), ELM_E_FORMAT, "head_dim");
    config_case("model_dim a string", "model_dim", json_object_new_string("128"), ELM_E_FORMAT,
                "integer");
    config_case("context 0", "max_context_length", json_object_new_int(0), ELM_E_FORMAT,
                "max_context_length");
    config_case("missing model_dim", "model_dim", NULL, ELM_E_FORMAT, "missing");
    static const int kv_bad[] = {1, 2, 3, 2}, q3[] = {4, 8, 8}, q0[] = {4, 0, 8, 8};
    config_case("kv heads do not divide q heads", "num_kv_heads", ints(4, kv_bad), ELM_E_FORMAT,
                "divide");
    config_case("num_query_heads of 3 entries for 4 layers", "num_query_heads", ints(3, q3),
                ELM_E_FORMAT, "3 entries");
    config_case("a layer with 0 query heads", "num_query_heads", ints(4, q0), ELM_E_FORMAT,
                "num_query_heads");
    json_object *fm = json_object_new_array();
    json_object_array_add(fm, json_object_new_double(0.5));
    json_object_array_add(fm, json_object_new_double(-1.0));
    json_object_array_add(fm, json_object_new_double(1.0));
    json_object_array_add(fm, json_object_new_double(4.0));
    config_case("negative ffn multiplier", "ffn_multipliers", fm, ELM_E_FORMAT, "ffn_multipliers");
    config_case("ffn_with_glu false", "ffn_with_glu", json_object_new_boolean(0), ELM_E_UNSUPPORTED,
                "ffn_with_glu");
    config_case("model_type llama", "model_type", json_object_new_string("llama"),
                ELM_E_UNSUPPORTED, "model_type");
    /* A valid config that does not match the weights. */
    config_case("model_dim 256 (weights are 128)", "model_dim", json_object_new_int(256),
                ELM_E_FORMAT, "implies");

    char dir[4096], path[8192];
    bad_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/config.json", dir);
    te_write(path, "{\"model_dim\": 128,", 18);
    expect_fail(dir, ELM_E_FORMAT, "config.json cut short", "config.json", "malformed");
    te_write(path, "[1, 2]", 6);
    expect_fail(dir, ELM_E_FORMAT, "config.json not an object", "config.json", NULL);
    remove(path);
    expect_fail(dir, ELM_E_IO, "no config.json", "config.json", NULL);
    te_dir("empty", dir, sizeof dir);
    expect_fail(dir, ELM_E_IO, "folder without weights", "model.safetensors", NULL);
}

/* ------------------------------------------------------------ shard index */

static void index_cases(void)
{
    char dir[4096], path[8192];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", good_sharded);
    json_object *idx = te_json(path);
    json_object *wm = NULL;
    json_object_object_get_ex(idx, "weight_map", &wm);
    const char *files[] = {"config.json", "model-00001-of-00002.safetensors",
                           "model-00002-of-00002.safetensors"};
    static const struct {
        const char *value, *what, *needle;
        elm_status st;
    } cases[] = {
        {"model-00009-of-00009.safetensors", "index names a missing shard", "00009", ELM_E_IO},
        {"../model.safetensors", "index escapes the folder", "bad shard", ELM_E_FORMAT},
        {"model-00002-of-00002.safetensors", "tensor not in the shard the index names",
         "missing tensor", ELM_E_FORMAT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[32], a[8192], b[8192];
        snprintf(name, sizeof name, "idx-%zu", i);
        te_dir(name, dir, sizeof dir);
        for (int k = 0; k < 3; k++) {
            snprintf(a, sizeof a, "%s/%s", good_sharded, files[k]);
            snprintf(b, sizeof b, "%s/%s", dir, files[k]);
            copy_file(a, b);
        }
        json_object *copy = NULL;
        json_object_deep_copy(idx, &copy, NULL);
        json_object *cwm = NULL;
        json_object_object_get_ex(copy, "weight_map", &cwm);
        /* the embedding sits in the first shard */
        json_object_object_add(cwm, "transformer.token_embeddings.weight",
                               json_object_new_string(cases[i].value));
        snprintf(b, sizeof b, "%s/model.safetensors.index.json", dir);
        json_object_to_file(b, copy);
        json_object_put(copy);
        expect_fail(dir, cases[i].st, cases[i].what, cases[i].needle, NULL);
    }
    json_object_put(idx);
}

/* The bytes of path's mappings present in this process (the Rss lines of
 * /proc/self/smaps); -1 where there is no smaps. */
static long long mapped_bytes(const char *path)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[8192];
    long long kb, sum = 0;
    bool ours = false;
    size_t n = strlen(path);
    while (fgets(line, sizeof line, f)) {
        size_t len = strcspn(line, "\n");
        if (line[0] != ' ' && strchr(line, '-') && strchr(line, ' ') < line + len) {
            /* a mapping's first line: "start-end perms offset dev inode path" */
            ours = len >= n && memcmp(line + len - n, path, n) == 0;
        } else if (ours && sscanf(line, "Rss: %lld kB", &kb) == 1) {
            sum += kb * 1024;
        }
    }
    fclose(f);
    return sum;
}

/* The load reads every weight page (load_steps.c, elm_load_touch_weights):
 * the model's first forward pass must not pay for them (in a VM with
 * shadow page tables a fresh mapping's first read of a page costs
 * microseconds; a resumed chat's first reply paid ~0.5 s of them on the
 * 270M shape).  The hash's samples alone leave most pages unmapped. */
static void weights_present_after_load(void)
{
    char dir[4096], file[8192];
    te_dir("touched", dir, sizeof dir);
    if (!te_gen("--preset varied --dtype f32", dir))
        bail_out("tests/lib/gen-checkpoint failed");
    snprintf(file, sizeof file, "%s/model.safetensors", dir);
    size_t size = 0;
    free(te_read(file, &size));
    elm_model *m = te_load(dir, 1);
    long long present = m ? mapped_bytes(file) : -1;
    if (!m || present < 0) {
        skip(1, m ? "no /proc/self/smaps" : "the checkpoint did not load");
    } else if (!ok(present + 65536 >= (long long)size,
                   "after the load every weight page is present in the mapping")) {
        diag("%lld of %zu bytes present", present, size);
    }
    elm_model_free(m);
}

int main(void)
{
    plan_lazy();
    te_dir("good", good, sizeof good);
    te_dir("good-sharded", good_sharded, sizeof good_sharded);
    if (!te_gen("--preset micro --dtype f32", good) ||
        !te_gen("--preset micro --dtype bf16 --shards 2", good_sharded))
        bail_out("tests/lib/gen-checkpoint failed");

    elm_model *m = te_load(good, 1);
    ok(m != NULL, "the good checkpoint loads");
    if (m) {
        const struct elm_model_info *in = elm_model_get_info(m);
        is_int(in->n_layers, 4, "4 layers");
        is_int(in->ffn_dim[1], 224, "make_divisible FFN width of layer 1");
        is_int((long long)in->n_params, 718080, "parameter count");
        is_int(in->dtype, ELM_DTYPE_F32, "dtype f32");
        ok(elm_model_tokenizer(m) == NULL, "no tokenizer next to the weights: NULL");
        elm_model_free(m);
    }
    char file[8192];
    snprintf(file, sizeof file, "%s/model.safetensors", good);
    m = te_load(file, 1);
    ok(m != NULL, "loading the .safetensors file itself works");
    elm_model_free(m);
    m = te_load(good_sharded, 1);
    ok(m && elm_model_get_info(m)->dtype == ELM_DTYPE_BF16, "the sharded bf16 checkpoint loads");
    elm_model_free(m);
    elm_model_free(NULL);

    weights_present_after_load();
    header_cases();
    config_cases();
    index_cases();
    return done_testing();
}
