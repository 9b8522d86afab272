/* test-gguf.c: the GGUF reader, writer and block types on their own:
 * golden dequantization of every block type and of f16/bf16 (values from
 * tests/reference/gguf_ref.py), reference quantization of q8_0/q4_0, the dot
 * kernels, a version-2 file with every metadata type (written by the Python
 * reference), the writer's round trip, and bad files: every truncation,
 * huge counts, strings past EOF, unknown types, misaligned or overlapping
 * data, duplicate names, bad dimensions. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/formats/gguf.h"
#include "engine/kernels/blocks.h"
#include "tests/lib/tap.h"

static void *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        bail_out("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc(len > 0 ? (size_t)len : 1);
    if (!p || fread(p, 1, (size_t)len, f) != (size_t)len)
        bail_out("cannot read %s", path);
    fclose(f);
    *n = (size_t)len;
    return p;
}

static const char *tmp_path(const char *name)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", tap_tmpdir(), name);
    return path;
}

static void spit(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0)
        bail_out("cannot write %s", path);
}

/* ------------------------------------------------------------- goldens */

static void test_blocks(void)
{
    static const struct {
        const char *name;
        enum elm_dtype dtype;
    } types[] = {{"q8_0", ELM_DTYPE_Q8_0}, {"q4_0", ELM_DTYPE_Q4_0}, {"q4_k", ELM_DTYPE_Q4_K},
                 {"q5_k", ELM_DTYPE_Q5_K}, {"q6_k", ELM_DTYPE_Q6_K}};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        char path[64];
        size_t nb, nf;
        snprintf(path, sizeof path, "gguf/blocks-%s.bin", types[t].name);
        uint8_t *blocks = slurp(tap_data_path(path), &nb);
        snprintf(path, sizeof path, "gguf/blocks-%s.f32", types[t].name);
        float *want = slurp(tap_data_path(path), &nf);
        int64_t n = (int64_t)(nf / 4);
        size_t be = elm_quant_block_elems(types[t].dtype), bb = elm_quant_block_bytes(types[t].dtype);
        is_int((long long)(nb / bb * be), n, "%s: golden file sizes agree", types[t].name);
        float *got = calloc((size_t)n, sizeof *got);
        elm_dequantize(blocks, types[t].dtype, got, n);
        int bad = 0;
        for (int64_t i = 0; i < n; i++)
            if (memcmp(&got[i], &want[i], 4) != 0 && bad++ < 3)
                diag("%s[%lld]: got %.9g want %.9g", types[t].name, (long long)i, got[i], want[i]);
        ok(bad == 0, "%s: %lld dequantized values bit-exact against the NumPy reference",
           types[t].name, (long long)n);

        /* Dot products: the kernels (AVX2 where present, then portable)
         * against a double sum over the golden values. */
        float *x = malloc((size_t)n * sizeof *x);
        double ref = 0.0, mag = 0.0;
        for (int64_t i = 0; i < n; i++) {
            x[i] = (float)sin((double)i * 0.37) * 2.0f;
            ref += (double)want[i] * x[i];
            mag += fabs((double)want[i] * x[i]);
        }
        for (int gen = 0; gen < 2; gen++) {
            elm_quant_force_generic(gen == 1);
            double d = elm_quant_dot(blocks, types[t].dtype, x, n);
            ok(fabs(d - ref) <= 1e-5 * mag + 1e-12, "%s: dot (%s kernel) %.9g vs %.9g",
               types[t].name, gen ? "portable" : "best", d, ref);
            /* The same blocks as a matrix of rows of one block (or two). */
            int64_t cols = (int64_t)be * (n / (int64_t)be >= 2 ? 2 : 1), rows = n / cols;
            float y[64];
            elm_quant_matvec_rows(blocks, types[t].dtype, cols, x, y, 0, rows, false);
            int bad_rows = 0;
            for (int64_t r = 0; r < rows; r++) {
                double s = 0.0, m = 0.0;
                for (int64_t c = 0; c < cols; c++) {
                    s += (double)want[r * cols + c] * x[c];
                    m += fabs((double)want[r * cols + c] * x[c]);
                }
                bad_rows += fabs(y[r] - s) > 1e-5 * m + 1e-12;
            }
            ok(bad_rows == 0, "%s: matvec over %lld rows (%s kernel)", types[t].name,
               (long long)rows, gen ? "portable" : "best");
        }
        elm_quant_force_generic(false);
        free(x);
        free(got);
        free(blocks);
        free(want);
    }
}

static void test_halves(void)
{
    size_t nb, nf;
    uint16_t *h = slurp(tap_data_path("gguf/half.bin"), &nb);
    float *want = slurp(tap_data_path("gguf/half.f32"), &nf);
    int bad = 0;
    for (size_t i = 0; i < nb / 2; i++) {
        float f = elm_f16_to_f32(h[i]);
        bad += memcmp(&f, &want[i], 4) != 0;
    }
    ok(bad == 0 && nb / 2 == nf / 4, "f16 -> f32: %zu values exact", nb / 2);
    free(h);
    free(want);

    h = slurp(tap_data_path("gguf/bhalf.bin"), &nb);
    want = slurp(tap_data_path("gguf/bhalf.f32"), &nf);
    bad = 0;
    for (size_t i = 0; i < nb / 2; i++) {
        float f = elm_bf16_to_f32(h[i]);
        bad += memcmp(&f, &want[i], 4) != 0;
    }
    ok(bad == 0 && nb / 2 == nf / 4, "bf16 -> f32: %zu values exact", nb / 2);
    free(h);
    free(want);

    float *x = slurp(tap_data_path("gguf/round.f32"), &nf);
    uint16_t *w16 = slurp(tap_data_path("gguf/round-f16.bin"), &nb);
    uint16_t *wb16 = slurp(tap_data_path("gguf/round-bf16.bin"), &nb);
    int bad16 = 0, badb = 0;
    for (size_t i = 0; i < nf / 4; i++) {
        if (elm_f32_to_f16(x[i]) != w16[i] && bad16++ < 3)
            diag("f16(%.9g): got %04x want %04x", x[i], elm_f32_to_f16(x[i]), w16[i]);
        if (elm_f32_to_bf16(x[i]) != wb16[i] && badb++ < 3)
            diag("bf16(%.9g): got %04x want %04x", x[i], elm_f32_to_bf16(x[i]), wb16[i]);
    }
    ok(bad16 == 0, "f32 -> f16 rounds to nearest even (%zu values incl. subnormals, overflow)",
       nf / 4);
    ok(badb == 0, "f32 -> bf16 rounds to nearest even (%zu values)", nf / 4);
    uint16_t nan16 = elm_f32_to_f16(NAN), nanb = elm_f32_to_bf16(NAN);
    ok(isnan(elm_f16_to_f32(nan16)) && isnan(elm_bf16_to_f32(nanb)), "NaN stays NaN");
    free(x);
    free(w16);
    free(wb16);
}

static void test_quantize(void)
{
    size_t nf, n8, n4;
    float *x = slurp(tap_data_path("gguf/quant.f32"), &nf);
    uint8_t *w8 = slurp(tap_data_path("gguf/quant-q8_0.bin"), &n8);
    uint8_t *w4 = slurp(tap_data_path("gguf/quant-q4_0.bin"), &n4);
    int64_t n = (int64_t)(nf / 4);
    uint8_t *got = calloc(n8 + n4, 1);
    ok(elm_quantize_row(x, ELM_DTYPE_Q8_0, got, n) && n8 == elm_row_size(ELM_DTYPE_Q8_0, n) &&
           memcmp(got, w8, n8) == 0,
       "q8_0 quantization matches ggml's reference rounding (%lld values)", (long long)n);
    ok(elm_quantize_row(x, ELM_DTYPE_Q4_0, got, n) && n4 == elm_row_size(ELM_DTYPE_Q4_0, n) &&
           memcmp(got, w4, n4) == 0,
       "q4_0 quantization matches ggml's reference rounding");
    ok(elm_quantize_row(x, ELM_DTYPE_Q4_K, got, 256) &&
           elm_quantize_row(x, ELM_DTYPE_Q5_K, got, 256) &&
           elm_quantize_row(x, ELM_DTYPE_Q6_K, got, 256),
       "K-quants are written (their round trips: test-kquant)");
    is_int((long long)elm_row_size(ELM_DTYPE_Q4_0, 33), 0, "a row the block does not divide");
    is_int((long long)elm_row_size(ELM_DTYPE_Q6_K, 512), 420, "q6_k row size");
    free(got);
    free(x);
    free(w8);
    free(w4);
}

/* ----------------------------------------------------- a v2 reference file */

static void test_meta_file(void)
{
    char err[ELM_ERR_MAX];
    struct elm_gguf *g = NULL;
    const char *path = tap_data_path("gguf/meta-v2.gguf");
    elm_status st = elm_gguf_open(path, &g, err, sizeof err);
    if (!ok(st == ELM_OK, "meta-v2.gguf opens: %s", st ? err : "ok")) {
        skip(20, "file did not open");
        return;
    }
    is_int(g->version, 2, "version 2");
    is_int((long long)g->alignment, 64, "general.alignment 64");
    is_int((long long)(g->data_offset % 64), 0, "data section aligned to 64");
    int64_t v;
    struct {
        const char *key;
        int64_t want;
    } ints[] = {{"t.u8", 200},          {"t.i8", -100},     {"t.u16", 60000},
                {"t.i16", -30000},      {"t.u32", 4000000000LL}, {"t.i32", -2000000000LL},
                {"t.i64", -(1LL << 62)}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        v = 0;
        st = elm_gguf_get_int(g, ints[i].key, true, INT64_MIN, INT64_MAX, &v, err, sizeof err);
        ok(st == ELM_OK && v == ints[i].want, "%s = %lld", ints[i].key, (long long)v);
    }
    st = elm_gguf_get_int(g, "t.u64", true, INT64_MIN, INT64_MAX, &v, err, sizeof err);
    ok(st == ELM_E_FORMAT && strstr(err, "t.u64"), "u64 beyond int64 is a range error: %s", err);
    double d = 0;
    ok(elm_gguf_get_float(g, "t.f32", true, &d, err, sizeof err) == ELM_OK && d == 0.15625,
       "f32 value");
    ok(elm_gguf_get_float(g, "t.f64", true, &d, err, sizeof err) == ELM_OK && d == -1.5e300,
       "f64 value");
    bool b = false;
    ok(elm_gguf_get_bool(g, "t.bool", &b, err, sizeof err) == ELM_OK && b, "bool value");
    const char *s = NULL;
    size_t len = 0;
    ok(elm_gguf_get_string(g, "t.string", true, &s, &len, err, sizeof err) == ELM_OK &&
           len == strlen("héllo, wörld") && memcmp(s, "héllo, wörld", len) == 0,
       "UTF-8 string value");
    ok(elm_gguf_get_string(g, "t.empty", true, &s, &len, err, sizeof err) == ELM_OK && len == 0,
       "empty string");
    st = elm_gguf_get_string(g, "t.u8", true, &s, &len, err, sizeof err);
    ok(st == ELM_E_FORMAT && strstr(err, "t.u8") && strstr(err, path), "wrong type: %s", err);
    st = elm_gguf_get_int(g, "no.such.key", true, 0, 1, &v, err, sizeof err);
    ok(st == ELM_E_FORMAT && strstr(err, "no.such.key") && strstr(err, "missing"),
       "missing key: %s", err);

    int arr[5];
    ok(elm_gguf_get_ints(g, "t.arr_i32", 5, -10, 10, arr, err, sizeof err) == ELM_OK &&
           arr[0] == 3 && arr[1] == -1 && arr[4] == -5,
       "i32 array");
    st = elm_gguf_get_ints(g, "t.arr_i32", 4, -10, 10, arr, err, sizeof err);
    ok(st == ELM_E_FORMAT && strstr(err, "5 entries"), "array of the wrong length: %s", err);
    st = elm_gguf_get_ints(g, "t.arr_i32", 5, 0, 10, arr, err, sizeof err);
    ok(st == ELM_E_FORMAT && strstr(err, "entry 1"), "array entry out of range: %s", err);
    ok(elm_gguf_get_ints(g, "t.u16", 3, 0, 70000, arr, err, sizeof err) == ELM_OK &&
           arr[0] == 60000 && arr[2] == 60000,
       "a scalar stands for every layer");
    const struct elm_gguf_kv *kv = elm_gguf_find(g, "t.arr_str");
    bool strs_ok = kv && kv->type == ELM_GGUF_ARRAY && kv->elem_type == ELM_GGUF_STRING &&
                   kv->n == 4;
    if (strs_ok) {
        elm_gguf_array_string(kv, 2, &s, &len);
        strs_ok = len == 3 && memcmp(s, "ccc", 3) == 0;
        elm_gguf_array_string(kv, 1, &s, &len);
        strs_ok = strs_ok && len == 0;
        elm_gguf_array_string(kv, 3, &s, &len);
        strs_ok = strs_ok && len == 4 && memcmp(s, "\xe2\x96\x81x", 4) == 0;
    }
    ok(strs_ok, "string array elements");
    kv = elm_gguf_find(g, "t.arr_f64");
    ok(kv && kv->n == 2 && elm_gguf_array_number(kv, 1) == -0.25, "f64 array");
    kv = elm_gguf_find(g, "t.nested");
    ok(kv && kv->type == ELM_GGUF_ARRAY && kv->elem_type == ELM_GGUF_ARRAY && kv->n == 3,
       "nested arrays are parsed");
    kv = elm_gguf_find(g, "t.arr_empty");
    ok(kv && kv->n == 0, "empty array");

    /* Tensors: the block goldens, stored at 64-byte alignment. */
    const char *names[] = {"q8_0", "q4_0", "q4_k", "q5_k", "q6_k"};
    for (size_t i = 0; i < 5; i++) {
        char tn[64], bp[64];
        snprintf(tn, sizeof tn, "blocks.%s", names[i]);
        snprintf(bp, sizeof bp, "gguf/blocks-%s.bin", names[i]);
        size_t n;
        void *want = slurp(tap_data_path(bp), &n);
        const struct elm_gguf_tensor *t = elm_gguf_find_tensor(g, tn);
        ok(t && t->supported && t->size == n && memcmp(t->data, want, n) == 0 &&
               (uintptr_t)((const char *)t->data - (const char *)g->addr) % 64 == 0,
           "tensor %s: type, size, data, alignment", tn);
        free(want);
    }
    const struct elm_gguf_tensor *t = elm_gguf_find_tensor(g, "dense.f16");
    float f[7];
    if (t)
        elm_dequantize(t->data, t->dtype, f, 7);
    ok(t && t->n_dims == 2 && t->ne[0] == 7 && t->ne[1] == 1 && f[0] == -0.75f && f[6] == 0.75f,
       "f16 tensor [7, 1]");
    t = elm_gguf_find_tensor(g, "dense.bf16");
    if (t)
        elm_dequantize(t->data, t->dtype, f, 7);
    ok(t && t->dtype == ELM_DTYPE_BF16 && f[1] == -0.5f, "bf16 tensor");
    t = elm_gguf_find_tensor(g, "other.q5_0");
    ok(t && !t->supported && t->ggml_type == 6 && t->size == 22,
       "a type we do not run is parsed, flagged unsupported");
    ok(!elm_gguf_find_tensor(g, "nope"), "absent tensor");
    elm_gguf_close(g);
}

/* ---------------------------------------------------------- writer */

static elm_status fill_seq(void *user, int64_t row, void *dst, char *err, size_t err_size)
{
    (void)err;
    (void)err_size;
    const int64_t *cols = user;
    float x[256];
    for (int64_t c = 0; c < *cols; c++)
        x[c] = (float)(row * 1000 + c) * 0.001f;
    elm_quantize_row(x, ELM_DTYPE_F32, dst, *cols);
    return ELM_OK;
}

static elm_status fill_q8(void *user, int64_t row, void *dst, char *err, size_t err_size)
{
    (void)err;
    (void)err_size;
    (void)user;
    float x[64];
    for (int c = 0; c < 64; c++)
        x[c] = (float)(row - c) * 0.25f;
    elm_quantize_row(x, ELM_DTYPE_Q8_0, dst, 64);
    return ELM_OK;
}

static void test_writer(void)
{
    char err[ELM_ERR_MAX];
    struct elm_gguf_writer *w = elm_gguf_writer_new();
    int32_t ia[3] = {7, -8, 9};
    const char *sa[] = {"x", "", "\xe2\x96\x81hello"};
    int64_t cols = 5, ne[2] = {5, 3}, ne8[2] = {64, 2};
    elm_gguf_add_string(w, "general.architecture", "test");
    elm_gguf_add_u32(w, "a.u32", 4000000000u);
    elm_gguf_add_i32(w, "a.i32", -5);
    elm_gguf_add_f32(w, "a.f32", 1.5f);
    elm_gguf_add_bool(w, "a.bool", true);
    elm_gguf_add_array(w, "a.ints", ELM_GGUF_I32, ia, 3);
    elm_gguf_add_string_array(w, "a.strs", sa, 3);
    elm_gguf_add_tensor(w, "t.f32", ELM_DTYPE_F32, 2, ne, fill_seq, &cols);
    elm_gguf_add_tensor(w, "t.q8", ELM_DTYPE_Q8_0, 2, ne8, fill_q8, NULL);
    const char *path = tmp_path("w.gguf");
    elm_status st = elm_gguf_writer_write(w, path, NULL, NULL, err, sizeof err);
    ok(st == ELM_OK, "writer: %s", st ? err : "written");
    elm_gguf_add_u32(w, "a.u32", 1);
    st = elm_gguf_writer_write(w, path, NULL, NULL, err, sizeof err);
    ok(st == ELM_E_INVALID && strstr(err, "duplicate metadata key"), "writer: %s", err);
    elm_gguf_writer_free(w);

    struct elm_gguf *g = NULL;
    st = elm_gguf_open(path, &g, err, sizeof err);
    if (!ok(st == ELM_OK, "written file reads back: %s", st ? err : "ok")) {
        skip(5, "no file");
        return;
    }
    int64_t v = 0;
    double d = 0;
    int arr[3];
    const char *s;
    size_t len;
    ok(g->version == 3 && g->alignment == 32 && g->n_kv == 7 && g->n_tensors == 2, "header");
    ok(elm_gguf_get_int(g, "a.u32", true, 0, INT64_MAX, &v, err, sizeof err) == ELM_OK &&
           v == 4000000000LL && elm_gguf_get_float(g, "a.f32", true, &d, err, sizeof err) == 0 &&
           d == 1.5 && elm_gguf_get_ints(g, "a.ints", 3, -10, 10, arr, err, sizeof err) == 0 &&
           arr[1] == -8,
       "scalars and arrays round trip");
    const struct elm_gguf_kv *kv = elm_gguf_find(g, "a.strs");
    elm_gguf_array_string(kv, 2, &s, &len);
    ok(kv->n == 3 && len == 8 && memcmp(s, sa[2], 8) == 0, "string array round trip");
    const struct elm_gguf_tensor *t = elm_gguf_find_tensor(g, "t.f32");
    ok(t && t->ne[0] == 5 && t->ne[1] == 3 &&
           ((const float *)t->data)[1 * 5 + 4] == (float)(1 * 1000 + 4) * 0.001f,
       "f32 tensor round trip");
    t = elm_gguf_find_tensor(g, "t.q8");
    ok(t && t->offset == 64 && t->size == 2 * 2 * 34, "q8_0 tensor at the next 32-byte offset");
    elm_gguf_close(g);
}

/* ------------------------------------------------------ bad files */

/* A tiny GGUF builder for crafting broken files. */
struct bld {
    uint8_t p[8192];
    size_t n;
};

static void b_raw(struct bld *b, const void *d, size_t n)
{
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void b_u32(struct bld *b, uint32_t v)
{
    b_raw(b, &v, 4);
}
static void b_u64(struct bld *b, uint64_t v)
{
    b_raw(b, &v, 8);
}
static void b_str(struct bld *b, const char *s)
{
    b_u64(b, strlen(s));
    b_raw(b, s, strlen(s));
}
static void b_head(struct bld *b, uint32_t version, uint64_t n_t, uint64_t n_kv)
{
    b->n = 0;
    b_raw(b, "GGUF", 4);
    b_u32(b, version);
    b_u64(b, n_t);
    b_u64(b, n_kv);
}
static void b_kv_u32(struct bld *b, const char *k, uint32_t v)
{
    b_str(b, k);
    b_u32(b, ELM_GGUF_U32);
    b_u32(b, v);
}
static void b_tensor(struct bld *b, const char *name, uint32_t n_dims, const uint64_t *ne,
                     uint32_t type, uint64_t off)
{
    b_str(b, name);
    b_u32(b, n_dims);
    for (uint32_t i = 0; i < n_dims; i++)
        b_u64(b, ne[i]);
    b_u32(b, type);
    b_u64(b, off);
}
static void b_pad(struct bld *b, size_t a, size_t data_bytes)
{
    while (b->n % a)
        b->p[b->n++] = 0;
    memset(b->p + b->n, 0x11, data_bytes);
    b->n += data_bytes;
}

/* Open b as a file: expect failure with status st and every needle in err. */
static void expect_bad(const struct bld *b, elm_status want, const char *what, const char *n1,
                       const char *n2)
{
    char err[ELM_ERR_MAX] = "";
    const char *path = tmp_path("bad.gguf");
    spit(path, b->p, b->n);
    struct elm_gguf *g = NULL;
    elm_status st = elm_gguf_open(path, &g, err, sizeof err);
    ok(st == want && strstr(err, path) && (!n1 || strstr(err, n1)) && (!n2 || strstr(err, n2)),
       "%s: %s", what, err);
    if (st == ELM_OK)
        elm_gguf_close(g);
}

static void test_bad(void)
{
    struct bld *b = calloc(1, sizeof *b);
    uint64_t ne1[1] = {32}, ne2[2] = {32, 2};

    b_head(b, 3, 0, 0);
    ok(b->n == 24, "builder sanity");
    b->p[0] = 'X';
    expect_bad(b, ELM_E_FORMAT, "bad magic", "magic", NULL);
    b_head(b, 1, 0, 0);
    expect_bad(b, ELM_E_UNSUPPORTED, "version 1", "version 1", NULL);
    b_head(b, 4, 0, 0);
    expect_bad(b, ELM_E_UNSUPPORTED, "version 4", "version 4", NULL);
    b_head(b, 3u << 24, 0, 0);
    expect_bad(b, ELM_E_UNSUPPORTED, "big-endian", "big-endian", NULL);
    b_head(b, 3, 0, 0);
    b->n = 20;
    expect_bad(b, ELM_E_FORMAT, "file shorter than a header", "truncated", NULL);

    b_head(b, 3, 0, UINT64_MAX);
    b_pad(b, 1, 64);
    expect_bad(b, ELM_E_FORMAT, "huge metadata count", "metadata count", "too large");
    b_head(b, 3, 1ull << 60, 0);
    b_pad(b, 1, 64);
    expect_bad(b, ELM_E_FORMAT, "huge tensor count", "tensor count", "too large");

    b_head(b, 3, 0, 1);
    b_u64(b, 1ull << 40); /* key length past EOF */
    b_pad(b, 1, 16);
    expect_bad(b, ELM_E_FORMAT, "key length past EOF", "past the end", NULL);
    b_head(b, 3, 0, 1);
    b_str(b, "k.s");
    b_u32(b, ELM_GGUF_STRING);
    b_u64(b, 100); /* string value past EOF */
    b_raw(b, "abc", 3);
    expect_bad(b, ELM_E_FORMAT, "string value past EOF", "k.s", "past the end");
    b_head(b, 3, 0, 1);
    b_str(b, "k.t");
    b_u32(b, 13);
    b_u32(b, 0);
    expect_bad(b, ELM_E_FORMAT, "unknown value type", "k.t", "unknown value type 13");
    b_head(b, 3, 0, 1);
    b_str(b, "k.a");
    b_u32(b, ELM_GGUF_ARRAY);
    b_u32(b, 77);
    b_u64(b, 1);
    b_u32(b, 0);
    expect_bad(b, ELM_E_FORMAT, "unknown array element type", "k.a", "element type 77");
    b_head(b, 3, 0, 1);
    b_str(b, "k.a");
    b_u32(b, ELM_GGUF_ARRAY);
    b_u32(b, ELM_GGUF_U32);
    b_u64(b, 1ull << 61); /* huge array count */
    b_u32(b, 0);
    expect_bad(b, ELM_E_FORMAT, "huge array count", "k.a", "past the end");
    b_head(b, 3, 0, 1);
    b_str(b, "k.a");
    b_u32(b, ELM_GGUF_ARRAY);
    b_u32(b, ELM_GGUF_STRING);
    b_u64(b, 2);
    b_str(b, "ok");
    b_u64(b, 1000); /* second string past EOF */
    b_u64(b, 0);
    expect_bad(b, ELM_E_FORMAT, "array string past EOF", "k.a", "past the end");
    b_head(b, 3, 0, 1);
    b_str(b, "k.n");
    b_u32(b, ELM_GGUF_ARRAY);
    for (int i = 0; i < 10; i++) { /* arrays nested 10 deep */
        b_u32(b, ELM_GGUF_ARRAY);
        b_u64(b, 1);
    }
    b_u32(b, ELM_GGUF_U8);
    b_u64(b, 0);
    expect_bad(b, ELM_E_FORMAT, "nesting bomb", "k.n", "nested");
    b_head(b, 3, 0, 1);
    b_str(b, "k.b");
    b_u32(b, ELM_GGUF_BOOL);
    b_raw(b, "\x02", 1);
    b_pad(b, 1, 8);
    expect_bad(b, ELM_E_FORMAT, "bool that is not 0/1", "k.b", "bool");
    b_head(b, 3, 0, 2);
    b_kv_u32(b, "k.dup", 1);
    b_kv_u32(b, "k.dup", 2);
    expect_bad(b, ELM_E_FORMAT, "duplicate key", "k.dup", "duplicate");
    b_head(b, 3, 0, 1);
    b_u64(b, 0);
    b_u32(b, ELM_GGUF_U8);
    b_raw(b, "\x01", 1);
    b_pad(b, 1, 8);
    expect_bad(b, ELM_E_FORMAT, "empty key", "key length 0", NULL);
    b_head(b, 3, 0, 1);
    b_u64(b, 3);
    b_raw(b, "a\0b", 3);
    b_u32(b, ELM_GGUF_U8);
    b_raw(b, "\x01", 1);
    b_pad(b, 1, 8);
    expect_bad(b, ELM_E_FORMAT, "key with a NUL", "NUL", NULL);
    b_head(b, 3, 0, 1);
    b_str(b, "general.alignment");
    b_u32(b, ELM_GGUF_U64);
    b_u64(b, 32);
    expect_bad(b, ELM_E_FORMAT, "alignment of the wrong type", "general.alignment", "u32");
    b_head(b, 3, 0, 1);
    b_kv_u32(b, "general.alignment", 48);
    expect_bad(b, ELM_E_FORMAT, "alignment not a power of two", "general.alignment", "48");

    /* Tensor table. */
    b_head(b, 3, 1, 0);
    b_tensor(b, "t", 1, ne1, 99, 0);
    b_pad(b, 32, 256);
    expect_bad(b, ELM_E_FORMAT, "unknown tensor type", "tensor t", "unknown tensor type 99");
    b_head(b, 3, 1, 0);
    b_tensor(b, "t", 1, ne1, 4, 0); /* a number ggml removed */
    b_pad(b, 32, 256);
    expect_bad(b, ELM_E_FORMAT, "removed tensor type 4", "tensor t", "type 4");
    b_head(b, 3, 1, 0);
    b_tensor(b, "t", 1, ne1, 0, 16);
    b_pad(b, 32, 256);
    expect_bad(b, ELM_E_FORMAT, "misaligned offset", "tensor t", "alignment");
    b_head(b, 3, 1, 0);
    b_tensor(b, "t", 1, ne1, 0, 0);
    b_pad(b, 32, 127); /* 128 needed */
    expect_bad(b, ELM_E_FORMAT, "data past EOF", "tensor t", "past the end");
    b_head(b, 3, 1, 0);
    b_tensor(b, "t", 1, ne1, 0, 1ull << 62);
    b_pad(b, 32, 128);
    expect_bad(b, ELM_E_FORMAT, "offset far past EOF", "tensor t", "past the end");
    b_head(b, 3, 2, 0);
    b_tensor(b, "t", 1, ne1, 0, 0);
    b_tensor(b, "u", 1, ne1, 0, 96);
    b_pad(b, 32, 256);
    expect_bad(b, ELM_E_FORMAT, "overlapping tensors", "overlaps", NULL);
    b_head(b, 3, 2, 0);
    b_tensor(b, "same", 1, ne1, 0, 0);
    b_tensor(b, "same", 1, ne1, 0, 128);
    b_pad(b, 32, 256);
    expect_bad(b, ELM_E_FORMAT, "duplicate tensor name", "tensor same", "duplicate");
    b_head(b, 3, 1, 0);
    b_tensor(b, "t", 0, ne1, 0, 0);
    b_pad(b, 32, 128);
    expect_bad(b, ELM_E_FORMAT, "0 dimensions", "tensor t", "0 dimensions");
    uint64_t ne5[5] = {1, 1, 1, 1, 1};
    b_head(b, 3, 1, 0);
    b_tensor(b, "t", 5, ne5, 0, 0);
    b_pad(b, 32, 128);
    expect_bad(b, ELM_E_FORMAT, "5 dimensions", "tensor t", "5 dimensions");
    uint64_t big[2] = {1ull << 40, 1ull << 40};
    b_head(b, 3, 1, 0);
    b_tensor(b, "t", 2, big, 0, 0);
    b_pad(b, 32, 128);
    expect_bad(b, ELM_E_FORMAT, "dimensions that overflow", "tensor t", NULL);
    uint64_t ne33[1] = {33};
    b_head(b, 3, 1, 0);
    b_tensor(b, "t", 1, ne33, ELM_GGML_Q8_0, 0);
    b_pad(b, 32, 128);
    expect_bad(b, ELM_E_FORMAT, "row not a multiple of the block", "tensor t", "block size");
    char longname[80];
    memset(longname, 'n', 64);
    longname[64] = '\0';
    b_head(b, 3, 1, 0);
    b_tensor(b, longname, 1, ne1, 0, 0);
    b_pad(b, 32, 128);
    expect_bad(b, ELM_E_FORMAT, "tensor name of 64 bytes", "length 64", NULL);

    /* And a good one built the same way, so the builder is not the failure. */
    b_head(b, 3, 2, 1);
    b_kv_u32(b, "general.alignment", 32);
    b_tensor(b, "a", 2, ne2, ELM_GGML_Q8_0, 0);
    b_tensor(b, "b", 1, ne1, ELM_GGML_F16, 96);
    b_pad(b, 32, 96 + 64);
    char err[ELM_ERR_MAX];
    const char *path = tmp_path("good.gguf");
    spit(path, b->p, b->n);
    struct elm_gguf *g = NULL;
    elm_status st = elm_gguf_open(path, &g, err, sizeof err);
    ok(st == ELM_OK && g->n_tensors == 2, "the builder makes valid files too: %s",
       st ? err : "ok");
    elm_gguf_close(g);
    free(b);
}

/* Every prefix of a valid file must be refused cleanly (and, under ASan,
 * without reading a byte past the mapping). */
static void test_truncations(void)
{
    size_t n;
    uint8_t *file = slurp(tap_data_path("gguf/meta-v2.gguf"), &n);
    const char *path = tmp_path("trunc.gguf");
    char err[ELM_ERR_MAX];
    int bad = 0;
    /* The end of the last tensor's data: the padding after it may go. */
    struct elm_gguf *whole = NULL;
    size_t end = 0;
    if (elm_gguf_open(tap_data_path("gguf/meta-v2.gguf"), &whole, err, sizeof err) == ELM_OK)
        for (size_t i = 0; i < whole->n_tensors; i++) {
            size_t e = (size_t)(whole->data_offset + whole->tensors[i].offset +
                                whole->tensors[i].size);
            end = e > end ? e : end;
        }
    elm_gguf_close(whole);
    ok(end > 4000 && end <= n, "last tensor ends at %zu of %zu bytes", end, n);
    for (size_t len = 0; len < end; len += len < 700 ? 1 : 11) {
        spit(path, file, len);
        struct elm_gguf *g = NULL;
        err[0] = '\0';
        elm_status st = elm_gguf_open(path, &g, err, sizeof err);
        if (st == ELM_OK || !strstr(err, path)) {
            if (bad++ < 3)
                diag("prefix of %zu bytes: status %d, '%s'", len, st, err);
            elm_gguf_close(g);
        }
    }
    ok(bad == 0, "every truncation before byte %zu is an error naming the file", end);
    /* Any single corrupted byte: never a crash (status either way). */
    for (size_t i = 0; i < n && i < 700; i++) {
        uint8_t save = file[i];
        file[i] ^= 0xA5;
        spit(path, file, n);
        struct elm_gguf *g = NULL;
        if (elm_gguf_open(path, &g, err, sizeof err) == ELM_OK)
            elm_gguf_close(g);
        file[i] = save;
    }
    ok(1, "single-byte corruptions of the first 700 bytes are survived");
    free(file);
}

int main(void)
{
    plan_lazy();
    test_blocks();
    test_halves();
    test_quantize();
    test_meta_file();
    test_writer();
    test_bad();
    test_truncations();
    return done_testing();
}
