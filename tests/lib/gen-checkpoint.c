/*
 * gen-checkpoint: write a deterministic random-weight OpenELM checkpoint in
 * the exact Hugging Face Hub layout (config.json, generation_config.json,
 * model.safetensors or N shards + model.safetensors.index.json, optionally
 * tokenizer.model).
 *
 * Tensor names and shapes follow docs/OPENELM.md section 3.  Every tensor gets its
 * own splitmix64 stream seeded from (--seed, tensor name), so the values do
 * not depend on the dtype, on the shard layout or on the order in which the
 * tensors are written: a bf16 checkpoint holds exactly the round-to-nearest-
 * even bf16 values of the f32 checkpoint with the same seed, and a 3-shard
 * checkpoint holds the same values as a 1-shard one.  Floats are produced by
 * exact integer arithmetic followed by a single correctly rounded IEEE
 * multiplication, so the output is bit-identical on every IEEE-754 machine.
 *
 * Only libc and libm.  Output is streamed tensor by tensor; the 270m preset
 * (1.09 GB in f32) never needs more than a few hundred kilobytes of memory.
 *
 * See tests/reference/README.md for the weight distributions and for the
 * synthetic SentencePiece tokenizer.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#define GEN_VERSION "1"
#define MAX_LAYERS 64
#define NAME_LEN 96
#define CHUNK 16384

/* ------------------------------------------------------------------------ */
/* Presets                                                                  */
/* ------------------------------------------------------------------------ */

struct preset {
	const char *name;
	const char *summary;
	int n_layers;
	int model_dim;
	int head_dim;
	int vocab;
	int ffn_div;
	double qkv_mult[2];
	int nq[MAX_LAYERS];
	int nkv[MAX_LAYERS];
	double ffn_mult[MAX_LAYERS];
	int synthetic_tokenizer; /* write tokenizer.model by default */
};

static const struct preset presets[] = {
	{
		"micro",
		"like the shared micro fixture: 4 layers, d=128, hd=16, vocab 1024",
		4, 128, 16, 1024, 32,
		{0.5, 1.0},
		{4, 8, 8, 8},
		{1, 2, 2, 2},
		{0.5, 1.67, 2.83, 4.0},
		0,
	},
	{
		"varied",
		"heads and FFN width change every layer (FFN hits make_divisible's "
		"10% rule and a tie): 5 layers, d=320, hd=16, vocab 1000",
		5, 320, 16, 1000, 64,
		{0.2, 1.0},
		{4, 8, 12, 16, 20},
		{1, 2, 3, 4, 5},
		{0.45, 1.38, 0.3, 3.12, 2.25},
		0,
	},
	{
		"default",
		"the tests' random-weight model: 6 layers, d=256, hd=32, vocab 32000, "
		"synthetic tokenizer.model",
		6, 256, 32, 32000, 256,
		{0.5, 1.0},
		{4, 8, 8, 8, 8, 8},
		{1, 2, 2, 2, 2, 2},
		{0.5, 1.2, 1.9, 2.6, 3.3, 4.0},
		1,
	},
	{
		"270m",
		"exact OpenELM-270M shape: 16 layers, d=1280, hd=64, vocab 32000",
		16, 1280, 64, 32000, 256,
		{0.5, 1.0},
		{12, 12, 12, 12, 12, 16, 16, 16, 16, 16, 16, 16, 20, 20, 20, 20},
		{3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5},
		{0.5, 0.73, 0.97, 1.2, 1.43, 1.67, 1.9, 2.13, 2.37, 2.6, 2.83,
		 3.07, 3.3, 3.53, 3.77, 4.0},
		0,
	},
	{
		"450m",
		"exact OpenELM-450M shape: 20 layers, d=1536, hd=64, vocab 32000",
		20, 1536, 64, 32000, 256,
		{0.5, 1.0},
		{12, 12, 12, 16, 16, 16, 16, 16, 16, 16, 20, 20, 20, 20, 20, 20, 24, 24, 24,
		 24},
		{3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6},
		{0.5, 0.68, 0.87, 1.05, 1.24, 1.42, 1.61, 1.79, 1.97, 2.16, 2.34, 2.53, 2.71,
		 2.89, 3.08, 3.26, 3.45, 3.63, 3.82, 4.0},
		0,
	},
	{
		"1.1b",
		"exact OpenELM-1_1B shape: 28 layers, d=2048, hd=64, vocab 32000",
		28, 2048, 64, 32000, 256,
		{0.5, 1.0},
		{16, 16, 16, 20, 20, 20, 20, 20, 20, 20, 24, 24, 24, 24, 24, 24, 24, 24, 28,
		 28, 28, 28, 28, 28, 32, 32, 32, 32},
		{4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 8, 8,
		 8, 8},
		{0.5, 0.63, 0.76, 0.89, 1.02, 1.15, 1.28, 1.41, 1.54, 1.67, 1.8, 1.93, 2.06,
		 2.19, 2.31, 2.44, 2.57, 2.7, 2.83, 2.96, 3.09, 3.22, 3.35, 3.48, 3.61, 3.74,
		 3.87, 4.0},
		0,
	},
	{
		"3b",
		"exact OpenELM-3B shape: 36 layers, d=3072, hd=128, vocab 32000",
		36, 3072, 128, 32000, 256,
		{0.5, 1.0},
		{12, 12, 12, 12, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 20,
		 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 24, 24, 24, 24, 24, 24},
		{3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5,
		 5, 5, 5, 5, 6, 6, 6, 6, 6, 6},
		{0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9,
		 2.0, 2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 2.7, 2.8, 2.9, 3.0, 3.1, 3.2, 3.3, 3.4,
		 3.5, 3.6, 3.7, 3.8, 3.9, 4.0},
		0,
	},
};

#define N_PRESETS (sizeof presets / sizeof presets[0])

/* ------------------------------------------------------------------------ */
/* Dtypes                                                                   */
/* ------------------------------------------------------------------------ */

enum dtype { DT_F32, DT_BF16, DT_F16 };

static const char *dtype_st_name(enum dtype dt)
{
	return dt == DT_F32 ? "F32" : dt == DT_BF16 ? "BF16" : "F16";
}

static const char *dtype_torch_name(enum dtype dt)
{
	return dt == DT_F32 ? "float32" : dt == DT_BF16 ? "bfloat16" : "float16";
}

static unsigned dtype_size(enum dtype dt)
{
	return dt == DT_F32 ? 4u : 2u;
}

static uint32_t f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

/* float32 -> bfloat16, round to nearest even (NaN stays NaN). */
static uint16_t f32_to_bf16(float f)
{
	uint32_t u = f32_bits(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

/* float32 -> IEEE binary16, round to nearest even, with subnormals. */
static uint16_t f32_to_f16(float f)
{
	uint32_t x = f32_bits(f);
	uint32_t sign = (x >> 16) & 0x8000u;
	uint32_t ax = x & 0x7fffffffu;

	if (ax >= 0x7f800000u) /* inf or NaN */
		return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
	if (ax >= 0x477ff000u) /* >= 65520: rounds to infinity */
		return (uint16_t)(sign | 0x7c00u);
	if (ax < 0x38800000u) { /* below 2^-14: subnormal half or zero */
		uint32_t e = ax >> 23, m, shift, r, rem, half;
		if (ax < 0x33000000u) /* below 2^-25: rounds to zero */
			return (uint16_t)sign;
		m = (ax & 0x7fffffu) | 0x800000u;
		shift = 126u - e; /* 14 .. 24 */
		r = m >> shift;
		rem = m & ((1u << shift) - 1u);
		half = 1u << (shift - 1u);
		if (rem > half || (rem == half && (r & 1u)))
			r++;
		return (uint16_t)(sign | r);
	} else {
		uint32_t e = (ax >> 23) - 112u; /* rebias 127 -> 15 */
		uint32_t mant = ax & 0x7fffffu;
		uint32_t r = (e << 10) | (mant >> 13);
		uint32_t rem = mant & 0x1fffu;
		if (rem > 0x1000u || (rem == 0x1000u && (r & 1u)))
			r++; /* a carry into the exponent is correct */
		return (uint16_t)(sign | r);
	}
}

/* ------------------------------------------------------------------------ */
/* Deterministic PRNG and weight distributions                              */
/* ------------------------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t fnv1a64(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

enum kind { K_EMBED, K_NORM, K_FINAL_NORM, K_LINEAR };

struct tensor {
	char name[NAME_LEN];
	uint64_t rows, cols; /* cols == 0: 1-D tensor of `rows` elements */
	enum kind kind;
	int shard;
	uint64_t nbytes;
	uint64_t offset; /* within its shard's data section */
};

struct gen {
	const struct preset *p;
	enum dtype dtype;
	int shards;
	uint64_t seed;
	int ffn[MAX_LAYERS];
	double emb_std;
	double head_gain;
	struct tensor *t;
	size_t nt;
};

/*
 * Sampler for one tensor.  Gaussian-like values are an Irwin-Hall sum of
 * four 16-bit uniforms (range +-3.46 sigma), centred in integers and scaled
 * by one multiplication: z * scale, z an exact integer.  Norm weights are
 * uniform in [0.5, 1.5) on a 2^-23 grid (exact in float32), times a power
 * of two for the final norm.
 */
struct sampler {
	uint64_t state;
	enum kind kind;
	double scale;
};

/* standard deviation of the sum of four independent U{0..65535} */
static double irwin_hall4_sigma(void)
{
	return sqrt((65536.0 * 65536.0 - 1.0) / 3.0);
}

static void sampler_init(struct sampler *s, const struct gen *g, const struct tensor *t)
{
	uint64_t st = g->seed ^ fnv1a64(t->name);
	s->state = splitmix64(&st);
	s->kind = t->kind;
	s->scale = 0.0;
	switch (t->kind) {
	case K_EMBED:
		s->scale = g->emb_std / irwin_hall4_sigma();
		break;
	case K_LINEAR: /* std 1/sqrt(fan_in) */
		s->scale = 1.0 / (sqrt((double)t->cols) * irwin_hall4_sigma());
		break;
	case K_NORM:
		s->scale = 1.0 / 8388608.0; /* 2^-23 */
		break;
	case K_FINAL_NORM:
		s->scale = g->head_gain / 8388608.0;
		break;
	}
}

static float sampler_next(struct sampler *s)
{
	uint64_t r = splitmix64(&s->state);
	if (s->kind == K_NORM || s->kind == K_FINAL_NORM) {
		/* 23 random bits + 2^22: [2^22, 2^23 + 2^22) -> [0.5, 1.5) */
		int64_t u = (int64_t)(r >> 41) + 4194304;
		/* the assignment rounds to double even where FLT_EVAL_METHOD
		 * is 2 (x87), so there is exactly one double rounding */
		double v = (double)u * s->scale;
		return (float)v;
	} else {
		int64_t a = (int64_t)(r & 0xffffu) + (int64_t)((r >> 16) & 0xffffu) +
			    (int64_t)((r >> 32) & 0xffffu) + (int64_t)(r >> 48);
		double v = (double)(a - 131070) * s->scale;
		return (float)v;
	}
}

/* ------------------------------------------------------------------------ */
/* Small helpers                                                            */
/* ------------------------------------------------------------------------ */

static const char *progname = "gen-checkpoint";

#if defined(__GNUC__)
#define ATTR_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define ATTR_PRINTF(a, b)
#endif

static _Noreturn void die(const char *fmt, ...) ATTR_PRINTF(1, 2);

static _Noreturn void die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static _Noreturn void die_errno(const char *what, const char *path)
{
	fprintf(stderr, "%s: %s %s: %s\n", progname, what, path, strerror(errno));
	exit(1);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		die("out of memory");
	return p;
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory");
	return p;
}

/* growable byte buffer */
struct buf {
	unsigned char *data;
	size_t len, cap;
};

static void buf_put(struct buf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		b->data = xrealloc(b->data, cap);
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void buf_puts(struct buf *b, const char *s)
{
	buf_put(b, s, strlen(s));
}

static void buf_printf_u64(struct buf *b, uint64_t v)
{
	char tmp[32];
	snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
	buf_puts(b, tmp);
}

static void buf_byte(struct buf *b, unsigned v)
{
	unsigned char c = (unsigned char)v;
	buf_put(b, &c, 1);
}

/* Python json / repr formatting of a double: shortest round-trip, ".0" for
 * integral values (only used for small multipliers). */
static void format_double(char *out, size_t n, double v)
{
	int prec;
	for (prec = 1; prec <= 17; prec++) {
		snprintf(out, n, "%.*g", prec, v);
		if (strtod(out, NULL) == v)
			break;
	}
	if (!strpbrk(out, ".eEn"))
		strncat(out, ".0", n - strlen(out) - 1);
}

static char *path_join(const char *dir, const char *file)
{
	size_t n = strlen(dir) + strlen(file) + 2;
	char *p = xmalloc(n);
	snprintf(p, n, "%s/%s", dir, file);
	return p;
}

static void write_file(const char *dir, const char *file, const void *data, size_t len)
{
	char *path = path_join(dir, file);
	FILE *f = fopen(path, "wb");
	if (!f)
		die_errno("cannot create", path);
	if (len && fwrite(data, 1, len, f) != len)
		die_errno("cannot write", path);
	if (fclose(f) != 0)
		die_errno("cannot write", path);
	free(path);
}

/* ------------------------------------------------------------------------ */
/* Model layout                                                             */
/* ------------------------------------------------------------------------ */

/* corenet make_divisible (docs/OPENELM.md 1.1) in double precision. */
static int make_divisible(double v, int divisor)
{
	double t = v + (double)divisor / 2.0;
	long nv = (long)t / divisor * divisor;
	if (nv < divisor)
		nv = divisor;
	if ((double)nv < 0.9 * v)
		nv += divisor;
	return (int)nv;
}

static void add_tensor(struct gen *g, size_t *cap, const char *name,
		       uint64_t rows, uint64_t cols, enum kind kind)
{
	struct tensor *t;
	if (g->nt == *cap) {
		*cap = *cap ? *cap * 2 : 64;
		g->t = xrealloc(g->t, *cap * sizeof *g->t);
	}
	t = &g->t[g->nt++];
	memset(t, 0, sizeof *t);
	snprintf(t->name, sizeof t->name, "%s", name);
	t->rows = rows;
	t->cols = cols;
	t->kind = kind;
	t->nbytes = rows * (cols ? cols : 1) * dtype_size(g->dtype);
}

/* Tensors in module (state-dict) order: embeddings, layers, final norm. */
static void build_layout(struct gen *g)
{
	const struct preset *p = g->p;
	const uint64_t d = (uint64_t)p->model_dim, hd = (uint64_t)p->head_dim;
	size_t cap = 0;
	char name[NAME_LEN];
	int i;

	add_tensor(g, &cap, "transformer.token_embeddings.weight",
		   (uint64_t)p->vocab, d, K_EMBED);
	for (i = 0; i < p->n_layers; i++) {
		const uint64_t nq = (uint64_t)p->nq[i], nkv = (uint64_t)p->nkv[i];
		const uint64_t ff = (uint64_t)g->ffn[i];
#define LNAME(suffix) (snprintf(name, sizeof name, "transformer.layers.%d." suffix, i), name)
		add_tensor(g, &cap, LNAME("attn_norm.weight"), d, 0, K_NORM);
		add_tensor(g, &cap, LNAME("attn.qkv_proj.weight"), (nq + 2 * nkv) * hd, d, K_LINEAR);
		add_tensor(g, &cap, LNAME("attn.q_norm.weight"), hd, 0, K_NORM);
		add_tensor(g, &cap, LNAME("attn.k_norm.weight"), hd, 0, K_NORM);
		add_tensor(g, &cap, LNAME("attn.out_proj.weight"), d, nq * hd, K_LINEAR);
		add_tensor(g, &cap, LNAME("ffn_norm.weight"), d, 0, K_NORM);
		add_tensor(g, &cap, LNAME("ffn.proj_1.weight"), 2 * ff, d, K_LINEAR);
		add_tensor(g, &cap, LNAME("ffn.proj_2.weight"), d, ff, K_LINEAR);
#undef LNAME
	}
	add_tensor(g, &cap, "transformer.norm.weight", d, 0, K_FINAL_NORM);
}

/* Balanced split in module order: a tensor goes to the shard that holds the
 * midpoint of its bytes.  Every shard must end up non-empty. */
static void assign_shards(struct gen *g)
{
	uint64_t total = 0, start = 0;
	int *count = xmalloc((size_t)g->shards * sizeof *count);
	size_t i;
	int s;

	for (i = 0; i < g->nt; i++)
		total += g->t[i].nbytes;
	memset(count, 0, (size_t)g->shards * sizeof *count);
	for (i = 0; i < g->nt; i++) {
		uint64_t mid2 = 2 * start + g->t[i].nbytes;
		uint64_t k = mid2 * (uint64_t)g->shards / (2 * total);
		if (k >= (uint64_t)g->shards)
			k = (uint64_t)g->shards - 1;
		g->t[i].shard = (int)k;
		count[k]++;
		start += g->t[i].nbytes;
	}
	for (s = 0; s < g->shards; s++)
		if (!count[s])
			die("too many shards for this model (a shard would be empty)");
	free(count);
}

static char *shard_name(const struct gen *g, int s)
{
	char *n = xmalloc(64);
	if (g->shards == 1)
		snprintf(n, 64, "model.safetensors");
	else
		snprintf(n, 64, "model-%05d-of-%05d.safetensors", s + 1, g->shards);
	return n;
}

static int cmp_tensor_ptr(const void *a, const void *b)
{
	const struct tensor *const *x = a, *const *y = b;
	return strcmp((*x)->name, (*y)->name);
}

static void write_le16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)(v & 0xffu);
	p[1] = (unsigned char)(v >> 8);
}

static void write_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v & 0xffu);
	p[1] = (unsigned char)((v >> 8) & 0xffu);
	p[2] = (unsigned char)((v >> 16) & 0xffu);
	p[3] = (unsigned char)(v >> 24);
}

static void stream_tensor(const struct gen *g, const struct tensor *t, FILE *f,
			  const char *path, unsigned char *out)
{
	uint64_t n = t->rows * (t->cols ? t->cols : 1), done = 0;
	unsigned sz = dtype_size(g->dtype);
	struct sampler s;

	sampler_init(&s, g, t);
	while (done < n) {
		size_t m = (size_t)(n - done < CHUNK ? n - done : CHUNK), j;
		for (j = 0; j < m; j++) {
			float v = sampler_next(&s);
			if (g->dtype == DT_F32)
				write_le32(out + 4 * j, f32_bits(v));
			else if (g->dtype == DT_BF16)
				write_le16(out + 2 * j, f32_to_bf16(v));
			else
				write_le16(out + 2 * j, f32_to_f16(v));
		}
		if (fwrite(out, sz, m, f) != m)
			die_errno("cannot write", path);
		done += m;
	}
}

/* One safetensors file: tensors sorted by name like the official writer,
 * "__metadata__" first, header padded with spaces to a multiple of 8. */
static void write_shard(struct gen *g, const char *dir, int s)
{
	struct tensor **list = xmalloc(g->nt * sizeof *list);
	size_t n = 0, i;
	uint64_t off = 0;
	struct buf h = {0};
	unsigned char len8[8];
	char *fname = shard_name(g, s), *path = path_join(dir, fname);
	unsigned char *out = xmalloc(CHUNK * 4);
	FILE *f;

	for (i = 0; i < g->nt; i++)
		if (g->t[i].shard == s)
			list[n++] = &g->t[i];
	qsort(list, n, sizeof *list, cmp_tensor_ptr);

	buf_puts(&h, "{\"__metadata__\":{\"format\":\"pt\"}");
	for (i = 0; i < n; i++) {
		struct tensor *t = list[i];
		t->offset = off;
		buf_puts(&h, ",\"");
		buf_puts(&h, t->name);
		buf_puts(&h, "\":{\"dtype\":\"");
		buf_puts(&h, dtype_st_name(g->dtype));
		buf_puts(&h, "\",\"shape\":[");
		buf_printf_u64(&h, t->rows);
		if (t->cols) {
			buf_puts(&h, ",");
			buf_printf_u64(&h, t->cols);
		}
		buf_puts(&h, "],\"data_offsets\":[");
		buf_printf_u64(&h, off);
		buf_puts(&h, ",");
		buf_printf_u64(&h, off + t->nbytes);
		buf_puts(&h, "]}");
		off += t->nbytes;
	}
	buf_puts(&h, "}");
	while (h.len % 8)
		buf_puts(&h, " ");
	for (i = 0; i < 8; i++)
		len8[i] = (unsigned char)(((uint64_t)h.len >> (8 * i)) & 0xffu);

	f = fopen(path, "wb");
	if (!f)
		die_errno("cannot create", path);
	if (fwrite(len8, 1, 8, f) != 8 || fwrite(h.data, 1, h.len, f) != h.len)
		die_errno("cannot write", path);
	for (i = 0; i < n; i++)
		stream_tensor(g, list[i], f, path, out);
	if (fclose(f) != 0)
		die_errno("cannot write", path);

	free(out);
	free(h.data);
	free(path);
	free(fname);
	free(list);
}

/* model.safetensors.index.json as transformers writes it:
 * json.dumps(index, indent=2, sort_keys=True) + "\n". */
static void write_index(const struct gen *g, const char *dir)
{
	const struct tensor **list = xmalloc(g->nt * sizeof *list);
	struct buf b = {0};
	uint64_t total = 0;
	size_t i;

	for (i = 0; i < g->nt; i++) {
		list[i] = &g->t[i];
		total += g->t[i].nbytes;
	}
	qsort(list, g->nt, sizeof *list, cmp_tensor_ptr);
	buf_puts(&b, "{\n  \"metadata\": {\n    \"total_size\": ");
	buf_printf_u64(&b, total);
	buf_puts(&b, "\n  },\n  \"weight_map\": {\n");
	for (i = 0; i < g->nt; i++) {
		char *fn = shard_name(g, list[i]->shard);
		buf_puts(&b, "    \"");
		buf_puts(&b, list[i]->name);
		buf_puts(&b, "\": \"");
		buf_puts(&b, fn);
		buf_puts(&b, i + 1 < g->nt ? "\",\n" : "\"\n");
		free(fn);
	}
	buf_puts(&b, "  }\n}\n");
	write_file(dir, "model.safetensors.index.json", b.data, b.len);
	free(b.data);
	free(list);
}

/* ------------------------------------------------------------------------ */
/* config.json / generation_config.json                                     */
/* ------------------------------------------------------------------------ */

static void json_int_list(struct buf *b, const int *v, int n)
{
	int i;
	buf_puts(b, "[\n");
	for (i = 0; i < n; i++) {
		buf_puts(b, "    ");
		buf_printf_u64(b, (uint64_t)v[i]);
		buf_puts(b, i + 1 < n ? ",\n" : "\n");
	}
	buf_puts(b, "  ]");
}

static void json_double_list(struct buf *b, const double *v, int n)
{
	char tmp[40];
	int i;
	buf_puts(b, "[\n");
	for (i = 0; i < n; i++) {
		format_double(tmp, sizeof tmp, v[i]);
		buf_puts(b, "    ");
		buf_puts(b, tmp);
		buf_puts(b, i + 1 < n ? ",\n" : "\n");
	}
	buf_puts(b, "  ]");
}

static void kv_int(struct buf *b, const char *key, long v)
{
	char tmp[96];
	snprintf(tmp, sizeof tmp, "  \"%s\": %ld,\n", key, v);
	buf_puts(b, tmp);
}

static void kv_str(struct buf *b, const char *key, const char *v, int last)
{
	buf_puts(b, "  \"");
	buf_puts(b, key);
	buf_puts(b, "\": \"");
	buf_puts(b, v);
	buf_puts(b, last ? "\"\n" : "\",\n");
}

/* Keys sorted like json.dumps(sort_keys=True), as in the released configs. */
static void write_config(const struct gen *g, const char *dir)
{
	const struct preset *p = g->p;
	struct buf b = {0};

	buf_puts(&b, "{\n");
	kv_str(&b, "activation_fn_name", "swish", 0);
	buf_puts(&b, "  \"architectures\": [\n    \"OpenELMForCausalLM\"\n  ],\n");
	buf_puts(&b, "  \"auto_map\": {\n"
		     "    \"AutoConfig\": \"configuration_openelm.OpenELMConfig\",\n"
		     "    \"AutoModelForCausalLM\": \"modeling_openelm.OpenELMForCausalLM\"\n"
		     "  },\n");
	kv_int(&b, "bos_token_id", 1);
	kv_int(&b, "eos_token_id", 2);
	kv_int(&b, "ffn_dim_divisor", p->ffn_div);
	buf_puts(&b, "  \"ffn_multipliers\": ");
	json_double_list(&b, p->ffn_mult, p->n_layers);
	buf_puts(&b, ",\n  \"ffn_with_glu\": true,\n");
	kv_int(&b, "head_dim", p->head_dim);
	buf_puts(&b, "  \"initializer_range\": 0.02,\n");
	kv_int(&b, "max_context_length", 2048);
	kv_int(&b, "model_dim", p->model_dim);
	kv_str(&b, "model_type", "openelm", 0);
	kv_str(&b, "normalization_layer_name", "rms_norm", 0);
	buf_puts(&b, "  \"normalize_qk_projections\": true,\n");
	kv_int(&b, "num_gqa_groups", 4);
	buf_puts(&b, "  \"num_kv_heads\": ");
	json_int_list(&b, p->nkv, p->n_layers);
	buf_puts(&b, ",\n  \"num_query_heads\": ");
	json_int_list(&b, p->nq, p->n_layers);
	buf_puts(&b, ",\n");
	kv_int(&b, "num_transformer_layers", p->n_layers);
	buf_puts(&b, "  \"qkv_multipliers\": ");
	json_double_list(&b, p->qkv_mult, 2);
	buf_puts(&b, ",\n");
	kv_int(&b, "rope_freq_constant", 10000);
	kv_int(&b, "rope_max_length", 4096);
	buf_puts(&b, "  \"share_input_output_layers\": true,\n");
	kv_str(&b, "torch_dtype", dtype_torch_name(g->dtype), 0);
	kv_str(&b, "transformers_version", "4.39.3", 0);
	buf_puts(&b, "  \"use_cache\": true,\n");
	buf_puts(&b, "  \"vocab_size\": ");
	buf_printf_u64(&b, (uint64_t)p->vocab);
	buf_puts(&b, "\n}\n");
	write_file(dir, "config.json", b.data, b.len);
	free(b.data);

	{
		static const char gen_cfg[] =
			"{\n"
			"  \"_from_model_config\": true,\n"
			"  \"bos_token_id\": 1,\n"
			"  \"eos_token_id\": 2,\n"
			"  \"transformers_version\": \"4.39.3\"\n"
			"}\n";
		write_file(dir, "generation_config.json", gen_cfg, sizeof gen_cfg - 1);
	}
}

/* ------------------------------------------------------------------------ */
/* Synthetic SentencePiece tokenizer.model                                  */
/* ------------------------------------------------------------------------ */

#define SP_NORMAL 1
#define SP_UNKNOWN 2
#define SP_CONTROL 3
#define SP_BYTE 6
#define SPACE_MARK "\xe2\x96\x81" /* U+2581 LOWER ONE EIGHTH BLOCK */

struct vocab {
	char **piece;
	int *type;
	int n, cap;
	int *slot; /* open-addressing set of piece indices, -1 = empty */
	size_t nslot;
};

static int vocab_find(const struct vocab *v, const char *s, size_t *pos)
{
	size_t h = (size_t)(fnv1a64(s) & (v->nslot - 1));
	while (v->slot[h] >= 0) {
		if (strcmp(v->piece[v->slot[h]], s) == 0) {
			*pos = h;
			return 1;
		}
		h = (h + 1) & (v->nslot - 1);
	}
	*pos = h;
	return 0;
}

/* Adds a piece unless present or the vocabulary is full. */
static void vocab_add(struct vocab *v, const char *s, int type)
{
	size_t pos;
	if (v->n >= v->cap || vocab_find(v, s, &pos))
		return;
	v->piece[v->n] = xmalloc(strlen(s) + 1);
	strcpy(v->piece[v->n], s);
	v->type[v->n] = type;
	v->slot[pos] = v->n;
	v->n++;
}

/* s and, before it, every prefix of s of two or more characters
 * (UTF-8 aware), so each word piece is reachable by BPE merges. */
static void vocab_add_with_prefixes(struct vocab *v, const char *s)
{
	char tmp[64];
	size_t i, n = strlen(s), chars = 0;
	for (i = 1; i <= n && i < sizeof tmp; i++) {
		if (i < n && ((unsigned char)s[i] & 0xc0u) == 0x80u)
			continue; /* inside a UTF-8 sequence */
		chars++;
		if (chars < 2)
			continue;
		memcpy(tmp, s, i);
		tmp[i] = '\0';
		vocab_add(v, tmp, SP_NORMAL);
	}
}

static const char *const common_bigrams[] = {
	"th", "he", "in", "er", "an", "re", "on", "at", "en", "nd", "ti", "es",
	"or", "te", "of", "ed", "is", "it", "al", "ar", "st", "to", "nt", "ng",
	"se", "ha", "as", "ou", "io", "le", "ve", "co", "me", "de", "hi", "ri",
	"ro", "ic", "ne", "ea", "ra", "ce", "li", "ch", "ll", "be", "ma", "si",
	"om", "ur",
};

static const char *const common_words[] = {
	"the", "of", "and", "to", "in", "is", "you", "that", "it", "he", "was",
	"for", "on", "are", "as", "with", "his", "they", "at", "be", "this",
	"have", "from", "or", "one", "had", "by", "word", "but", "not", "what",
	"all", "were", "we", "when", "your", "can", "said", "there", "use", "an",
	"each", "which", "she", "do", "how", "their", "if", "will", "up",
	"other", "about", "out", "many", "then", "them", "these", "so", "some",
	"her", "would", "make", "like", "him", "into", "time", "has", "look",
	"two", "more", "write", "go", "see", "number", "no", "way", "could",
	"people", "my", "than", "first", "water", "been", "call", "who", "its",
	"now", "find", "long", "down", "day", "did", "get", "come", "made",
	"may", "part", "hello", "world", "model", "chat", "help", "answer",
	"question", "thank", "thanks", "please", "yes", "good", "new", "know",
	"ing", "tion", "ed", "ly", "er", "est", "ment", "ness", "able",
};

static void build_vocab(struct vocab *v, int size)
{
	char tmp[32];
	int i, a, b, c;
	size_t w;

	v->cap = size;
	v->n = 0;
	v->piece = xmalloc((size_t)size * sizeof *v->piece);
	v->type = xmalloc((size_t)size * sizeof *v->type);
	for (v->nslot = 1; v->nslot < 2 * (size_t)size; v->nslot *= 2)
		;
	v->slot = xmalloc(v->nslot * sizeof *v->slot);
	for (w = 0; w < v->nslot; w++)
		v->slot[w] = -1;

	vocab_add(v, "<unk>", SP_UNKNOWN);
	vocab_add(v, "<s>", SP_CONTROL);
	vocab_add(v, "</s>", SP_CONTROL);
	for (i = 0; i < 256; i++) {
		snprintf(tmp, sizeof tmp, "<0x%02X>", i);
		vocab_add(v, tmp, SP_BYTE);
	}
	/* 259.. NORMAL pieces */
	vocab_add(v, SPACE_MARK, SP_NORMAL);
	for (i = 0x21; i < 0x7f; i++) {
		tmp[0] = (char)i;
		tmp[1] = '\0';
		vocab_add(v, tmp, SP_NORMAL);
	}
	for (i = 0; i < 52; i++) {
		snprintf(tmp, sizeof tmp, SPACE_MARK "%c", i < 26 ? 'a' + i : 'A' + i - 26);
		vocab_add(v, tmp, SP_NORMAL);
	}
	for (w = 0; w < sizeof common_bigrams / sizeof common_bigrams[0]; w++) {
		vocab_add(v, common_bigrams[w], SP_NORMAL);
		snprintf(tmp, sizeof tmp, SPACE_MARK "%s", common_bigrams[w]);
		vocab_add(v, tmp, SP_NORMAL);
	}
	for (w = 0; w < sizeof common_words / sizeof common_words[0]; w++) {
		const char *word = common_words[w];
		snprintf(tmp, sizeof tmp, SPACE_MARK "%s", word);
		vocab_add_with_prefixes(v, tmp);
		vocab_add_with_prefixes(v, word);
		snprintf(tmp, sizeof tmp, SPACE_MARK "%c%s", word[0] - 'a' + 'A', word + 1);
		vocab_add_with_prefixes(v, tmp);
	}
	/* filler: every lowercase bigram, then ▁+bigram, trigrams, ▁+trigram */
	for (a = 0; a < 26; a++)
		for (b = 0; b < 26; b++) {
			snprintf(tmp, sizeof tmp, "%c%c", 'a' + a, 'a' + b);
			vocab_add(v, tmp, SP_NORMAL);
		}
	for (a = 0; a < 26; a++)
		for (b = 0; b < 26; b++) {
			snprintf(tmp, sizeof tmp, SPACE_MARK "%c%c", 'a' + a, 'a' + b);
			vocab_add(v, tmp, SP_NORMAL);
		}
	for (a = 0; a < 26; a++)
		for (b = 0; b < 26; b++)
			for (c = 0; c < 26; c++) {
				snprintf(tmp, sizeof tmp, "%c%c%c", 'a' + a, 'a' + b, 'a' + c);
				vocab_add(v, tmp, SP_NORMAL);
			}
	for (a = 0; a < 26; a++)
		for (b = 0; b < 26; b++)
			for (c = 0; c < 26; c++) {
				snprintf(tmp, sizeof tmp, SPACE_MARK "%c%c%c", 'a' + a, 'a' + b, 'a' + c);
				vocab_add(v, tmp, SP_NORMAL);
			}
	/* anything still missing (only for vocabularies > ~37000) */
	for (i = 0; v->n < size; i++) {
		snprintf(tmp, sizeof tmp, SPACE_MARK "fill%d", i);
		vocab_add(v, tmp, SP_NORMAL);
	}
}

static void pb_varint(struct buf *b, uint64_t v)
{
	while (v >= 0x80u) {
		buf_byte(b, (unsigned)(v & 0x7fu) | 0x80u);
		v >>= 7;
	}
	buf_byte(b, (unsigned)v);
}

static void pb_key(struct buf *b, unsigned field, unsigned wire)
{
	pb_varint(b, ((uint64_t)field << 3) | wire);
}

static void pb_bytes(struct buf *b, unsigned field, const void *p, size_t n)
{
	pb_key(b, field, 2);
	pb_varint(b, n);
	buf_put(b, p, n);
}

static void pb_int(struct buf *b, unsigned field, int64_t v)
{
	pb_key(b, field, 0);
	pb_varint(b, (uint64_t)v); /* negative int32: 10-byte two's complement */
}

static void pb_float(struct buf *b, unsigned field, float f)
{
	unsigned char le[4];
	pb_key(b, field, 5);
	write_le32(le, f32_bits(f));
	buf_put(b, le, 4);
}

static void write_synthetic_tokenizer(const char *dir, int size)
{
	struct vocab v;
	struct buf model = {0}, msg = {0};
	int i;

	if (size < 259 + 95)
		die("vocabulary too small for the synthetic tokenizer (need >= 354)");
	build_vocab(&v, size);
	for (i = 0; i < v.n; i++) {
		float score = i < 259 ? 0.0f : (float)-(i - 259);
		msg.len = 0;
		pb_bytes(&msg, 1, v.piece[i], strlen(v.piece[i]));
		pb_float(&msg, 2, score);
		pb_int(&msg, 3, v.type[i]);
		pb_bytes(&model, 1, msg.data, msg.len);
	}
	/* trainer_spec */
	msg.len = 0;
	pb_int(&msg, 3, 2); /* model_type = BPE */
	pb_int(&msg, 4, size); /* vocab_size */
	pb_int(&msg, 35, 1); /* byte_fallback */
	pb_int(&msg, 40, 0); /* unk_id */
	pb_int(&msg, 41, 1); /* bos_id */
	pb_int(&msg, 42, 2); /* eos_id */
	pb_int(&msg, 43, -1); /* pad_id */
	pb_bytes(&model, 2, msg.data, msg.len);
	/* normalizer_spec: like LLaMA's */
	msg.len = 0;
	pb_bytes(&msg, 1, "identity", 8);
	pb_int(&msg, 3, 1); /* add_dummy_prefix */
	pb_int(&msg, 4, 0); /* remove_extra_whitespaces */
	pb_int(&msg, 5, 1); /* escape_whitespaces */
	pb_bytes(&model, 3, msg.data, msg.len);

	write_file(dir, "tokenizer.model", model.data, model.len);
	for (i = 0; i < v.n; i++)
		free(v.piece[i]);
	free(v.piece);
	free(v.type);
	free(v.slot);
	free(model.data);
	free(msg.data);
}

static void copy_file(const char *src, const char *dir, const char *name)
{
	char *path = path_join(dir, name);
	FILE *in = fopen(src, "rb"), *out;
	unsigned char block[65536];
	size_t n;

	if (!in)
		die_errno("cannot open", src);
	out = fopen(path, "wb");
	if (!out)
		die_errno("cannot create", path);
	while ((n = fread(block, 1, sizeof block, in)) > 0)
		if (fwrite(block, 1, n, out) != n)
			die_errno("cannot write", path);
	if (ferror(in))
		die_errno("cannot read", src);
	fclose(in);
	if (fclose(out) != 0)
		die_errno("cannot write", path);
	free(path);
}

/* mkdir -p */
static void make_dirs(const char *dir)
{
	char *p = xmalloc(strlen(dir) + 1), *q;
	struct stat st;

	strcpy(p, dir);
	for (q = p + 1; *q; q++) {
		if (*q != '/')
			continue;
		*q = '\0';
		if (mkdir(p, 0777) != 0 && errno != EEXIST)
			die_errno("cannot create directory", p);
		*q = '/';
	}
	if (mkdir(p, 0777) != 0 && errno != EEXIST)
		die_errno("cannot create directory", p);
	if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
		die("%s is not a directory", p);
	free(p);
}

/* ------------------------------------------------------------------------ */
/* CLI                                                                      */
/* ------------------------------------------------------------------------ */

static void usage(FILE *f)
{
	size_t i;
	fprintf(f,
		"Usage: %s --preset NAME -o DIR [options]\n"
		"Write a deterministic random-weight OpenELM checkpoint in Hugging Face layout.\n"
		"\n"
		"  --preset NAME            model shape (see below)\n"
		"  -o, --output DIR         output folder (created with parents if missing)\n"
		"  --dtype f32|bf16|f16     stored dtype (default f32)\n"
		"  --shards N               N safetensors shards + index (default 1)\n"
		"  --seed N                 PRNG seed (default 1)\n"
		"  --tokenizer-model FILE   copy FILE to DIR/tokenizer.model\n"
		"  --synthetic-tokenizer    write the synthetic SentencePiece tokenizer.model\n"
		"  --no-tokenizer           write no tokenizer.model (even for 'default')\n"
		"  --list-presets           describe the presets and exit\n"
		"  --help, --version\n"
		"\nPresets:\n",
		progname);
	for (i = 0; i < N_PRESETS; i++)
		fprintf(f, "  %-8s %s\n", presets[i].name, presets[i].summary);
}

static int parse_int(const char *s, const char *opt, long lo, long hi)
{
	char *end;
	long v;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		die("invalid value for %s", opt);
	return (int)v;
}

static void compute_dims(struct gen *g)
{
	const struct preset *p = g->p;
	int i;
	for (i = 0; i < p->n_layers; i++) {
		double v = p->ffn_mult[i] * (double)p->model_dim;
		g->ffn[i] = make_divisible(v, p->ffn_div);
	}
	/* logits std of several units for every width (see README) */
	g->emb_std = 0.05 * sqrt(128.0 / (double)p->model_dim);
	g->head_gain = 8.0;
}

static void list_presets(void)
{
	size_t i;
	int l;
	for (i = 0; i < N_PRESETS; i++) {
		struct gen g;
		uint64_t params = 0;
		size_t k;
		memset(&g, 0, sizeof g);
		g.p = &presets[i];
		g.dtype = DT_F32;
		compute_dims(&g);
		build_layout(&g);
		for (k = 0; k < g.nt; k++)
			params += g.t[k].nbytes / 4;
		printf("%s: %s\n  layers %d, model_dim %d, head_dim %d, vocab %d, params %llu\n",
		       g.p->name, g.p->summary, g.p->n_layers, g.p->model_dim, g.p->head_dim,
		       g.p->vocab, (unsigned long long)params);
		printf("  num_query_heads");
		for (l = 0; l < g.p->n_layers; l++)
			printf(" %d", g.p->nq[l]);
		printf("\n  num_kv_heads   ");
		for (l = 0; l < g.p->n_layers; l++)
			printf(" %d", g.p->nkv[l]);
		printf("\n  ffn dims       ");
		for (l = 0; l < g.p->n_layers; l++)
			printf(" %d", g.ffn[l]);
		printf("\n");
		free(g.t);
	}
}

int main(int argc, char **argv)
{
	struct gen g;
	const char *preset = NULL, *outdir = NULL, *tokfile = NULL;
	int tok_mode = -1; /* -1 preset default, 0 none, 1 synthetic */
	int i, s;
	size_t k;

	memset(&g, 0, sizeof g);
	g.dtype = DT_F32;
	g.shards = 1;
	g.seed = 1;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		int takes = !strcmp(a, "--preset") || !strcmp(a, "-o") || !strcmp(a, "--output") ||
			    !strcmp(a, "--dtype") || !strcmp(a, "--shards") || !strcmp(a, "--seed") ||
			    !strcmp(a, "--tokenizer-model");
		if (takes && !val)
			die("option %s needs a value", a);
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--version")) {
			printf("gen-checkpoint (elmchat tests) " GEN_VERSION "\n");
			return 0;
		} else if (!strcmp(a, "--list-presets")) {
			list_presets();
			return 0;
		} else if (!strcmp(a, "--preset")) {
			preset = val;
		} else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
			outdir = val;
		} else if (!strcmp(a, "--dtype")) {
			if (!strcmp(val, "f32"))
				g.dtype = DT_F32;
			else if (!strcmp(val, "bf16"))
				g.dtype = DT_BF16;
			else if (!strcmp(val, "f16"))
				g.dtype = DT_F16;
			else
				die("unknown dtype '%s' (f32, bf16, f16)", val);
		} else if (!strcmp(a, "--shards")) {
			g.shards = parse_int(val, a, 1, 99999);
		} else if (!strcmp(a, "--seed")) {
			char *end;
			errno = 0;
			g.seed = strtoull(val, &end, 10);
			if (errno || end == val || *end)
				die("invalid value for %s", a);
		} else if (!strcmp(a, "--tokenizer-model")) {
			tokfile = val;
		} else if (!strcmp(a, "--synthetic-tokenizer")) {
			tok_mode = 1;
		} else if (!strcmp(a, "--no-tokenizer")) {
			tok_mode = 0;
		} else {
			fprintf(stderr, "%s: unknown option '%s'\n", progname, a);
			usage(stderr);
			return 2;
		}
		if (takes)
			i++;
	}
	if (!preset || !outdir) {
		usage(stderr);
		return 2;
	}
	for (k = 0; k < N_PRESETS; k++)
		if (!strcmp(presets[k].name, preset))
			g.p = &presets[k];
	if (!g.p)
		die("unknown preset '%s' (try --list-presets)", preset);

	compute_dims(&g);
	build_layout(&g);
	if ((size_t)g.shards > g.nt)
		die("more shards than tensors");
	assign_shards(&g);

	make_dirs(outdir);

	write_config(&g, outdir);
	for (s = 0; s < g.shards; s++)
		write_shard(&g, outdir, s);
	if (g.shards > 1)
		write_index(&g, outdir);

	if (tokfile)
		copy_file(tokfile, outdir, "tokenizer.model");
	else if (tok_mode == 1 || (tok_mode == -1 && g.p->synthetic_tokenizer))
		write_synthetic_tokenizer(outdir, g.p->vocab);

	free(g.t);
	return 0;
}
