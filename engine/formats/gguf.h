/* gguf.h: GGUF files (llama.cpp/ggml), read memory-mapped and validated,
 * and written (engine-internal).
 *
 * Layout (little-endian, versions 2 and 3):
 *   "GGUF" u32 version, u64 n_tensors, u64 n_kv,
 *   n_kv x (string key, u32 value type, value),
 *   n_tensors x (string name, u32 n_dims, u64 ne[n_dims], u32 ggml type,
 *                u64 offset into the data section),
 *   padding to general.alignment (default 32), the data section.
 * A string is a u64 length and that many bytes (no NUL); an array is a u32
 * element type, a u64 count and the elements (arrays may nest).  ne[0] is
 * the length of a row: a PyTorch [out, in] matrix is ne = {in, out}.
 */
#ifndef ELMCHAT_ENGINE_GGUF_H
#define ELMCHAT_ENGINE_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm.h"

enum elm_gguf_vtype {
    ELM_GGUF_U8 = 0,
    ELM_GGUF_I8 = 1,
    ELM_GGUF_U16 = 2,
    ELM_GGUF_I16 = 3,
    ELM_GGUF_U32 = 4,
    ELM_GGUF_I32 = 5,
    ELM_GGUF_F32 = 6,
    ELM_GGUF_BOOL = 7,
    ELM_GGUF_STRING = 8,
    ELM_GGUF_ARRAY = 9,
    ELM_GGUF_U64 = 10,
    ELM_GGUF_I64 = 11,
    ELM_GGUF_F64 = 12,
};

/* ggml tensor type numbers of the types we run. */
enum {
    ELM_GGML_F32 = 0,
    ELM_GGML_F16 = 1,
    ELM_GGML_Q4_0 = 2,
    ELM_GGML_Q8_0 = 8,
    ELM_GGML_Q4_K = 12,
    ELM_GGML_Q5_K = 13,
    ELM_GGML_Q6_K = 14,
    ELM_GGML_BF16 = 30,
};

#define ELM_GGUF_DEFAULT_ALIGNMENT 32
#define ELM_GGUF_MAX_DIMS 4
#define ELM_GGUF_MAX_NAME 64 /* ggml's GGML_MAX_NAME, NUL included */

struct elm_gguf_kv {
    char *key;             /* owned, NUL-terminated */
    uint32_t type;         /* enum elm_gguf_vtype */
    uint32_t elem_type;    /* arrays: the element type */
    uint64_t n;            /* arrays: element count; 1 otherwise */
    const uint8_t *data;   /* in the mapping: the value (arrays: element 0) */
    const uint8_t **strs;  /* owned; string arrays: each element's u64 length */
};

struct elm_gguf_tensor {
    char *name;          /* owned */
    uint32_t ggml_type;
    bool supported;      /* one of F32 F16 BF16 Q8_0 Q4_0 Q4_K Q5_K Q6_K */
    enum elm_dtype dtype; /* when supported */
    int n_dims;
    int64_t ne[ELM_GGUF_MAX_DIMS]; /* unused dims are 1 */
    uint64_t offset;     /* from the start of the data section */
    uint64_t size;       /* bytes */
    const void *data;    /* in the mapping */
};

struct elm_gguf {
    char *path; /* owned */
    void *addr;
    size_t size;
    uint32_t version;
    uint64_t alignment;
    uint64_t data_offset;          /* file offset of the data section */
    struct elm_gguf_kv *kv;        /* owned, sorted by key */
    size_t n_kv;
    struct elm_gguf_tensor *tensors; /* owned, in file order */
    size_t n_tensors;
    struct elm_gguf_tensor **by_name; /* owned, sorted by name */
};

/* Map and validate a GGUF file: every count, length, type, dimension and
 * offset is checked against the file before use.  *out owned. */
elm_status elm_gguf_open(const char *path, struct elm_gguf **out, char *err, size_t err_size);
void elm_gguf_close(struct elm_gguf *g);

/* Borrowed; NULL when absent. */
const struct elm_gguf_kv *elm_gguf_find(const struct elm_gguf *g, const char *key);
const struct elm_gguf_tensor *elm_gguf_find_tensor(const struct elm_gguf *g, const char *name);

/* "u32", "string", "array"...; "?" for unknown numbers. */
const char *elm_gguf_vtype_name(uint32_t type);
/* ggml type name ("q4_1", "iq2_xs"...) or NULL when the number is unknown. */
const char *elm_ggml_type_name(uint32_t type);
/* The ggml type number of an elm dtype. */
uint32_t elm_ggml_type_of(enum elm_dtype dtype);

/* Typed getters.  Missing (when required), wrong type or out of range is
 * ELM_E_FORMAT with "FILE: KEY: what".  Integers accept any integer type. */
elm_status elm_gguf_get_int(const struct elm_gguf *g, const char *key, bool required,
                            int64_t min, int64_t max, int64_t *out, char *err, size_t err_size);
elm_status elm_gguf_get_float(const struct elm_gguf *g, const char *key, bool required,
                              double *out, char *err, size_t err_size);
elm_status elm_gguf_get_bool(const struct elm_gguf *g, const char *key, bool *out, char *err,
                             size_t err_size); /* absent: *out untouched */
/* String value (not NUL-terminated in the file): pointer and length. */
elm_status elm_gguf_get_string(const struct elm_gguf *g, const char *key, bool required,
                               const char **s, size_t *len, char *err, size_t err_size);
/* n integers in [min, max]: an integer array of n entries, or one integer
 * scalar repeated (llama.cpp writes either for per-layer keys). */
elm_status elm_gguf_get_ints(const struct elm_gguf *g, const char *key, int n, int64_t min,
                             int64_t max, int *out, char *err, size_t err_size);

/* Elements of a kv array (i < kv->n, type checked by the caller). */
void elm_gguf_array_string(const struct elm_gguf_kv *kv, uint64_t i, const char **s, size_t *len);
double elm_gguf_array_number(const struct elm_gguf_kv *kv, uint64_t i);
bool elm_gguf_vtype_is_int(uint32_t type);

/* ----------------------------------------------------------- writing */

struct elm_gguf_writer;

/* Fill one row (row_bytes) of tensor data; nonzero status aborts the write. */
typedef elm_status (*elm_gguf_row_fn)(void *user, int64_t row, void *dst, char *err,
                                      size_t err_size);

struct elm_gguf_writer *elm_gguf_writer_new(void); /* NULL on OOM */
void elm_gguf_writer_free(struct elm_gguf_writer *w);
/* Keys are written in the order added.  Errors (OOM, duplicate key) are
 * remembered and reported by elm_gguf_writer_write. */
void elm_gguf_add_u32(struct elm_gguf_writer *w, const char *key, uint32_t v);
void elm_gguf_add_i32(struct elm_gguf_writer *w, const char *key, int32_t v);
void elm_gguf_add_f32(struct elm_gguf_writer *w, const char *key, float v);
void elm_gguf_add_bool(struct elm_gguf_writer *w, const char *key, bool v);
void elm_gguf_add_string(struct elm_gguf_writer *w, const char *key, const char *s);
/* Array of n scalars of elem_type (not STRING/ARRAY), data in host order. */
void elm_gguf_add_array(struct elm_gguf_writer *w, const char *key, uint32_t elem_type,
                        const void *data, uint64_t n);
void elm_gguf_add_string_array(struct elm_gguf_writer *w, const char *key,
                               const char *const *strs, uint64_t n);
/* A tensor of ggml type with n_dims dims ne (ggml order); rows of
 * elm_row_size(ne[0]) bytes come from fill(user, r) for r < ne[1]*ne[2]*ne[3]. */
void elm_gguf_add_tensor(struct elm_gguf_writer *w, const char *name, enum elm_dtype dtype,
                         int n_dims, const int64_t *ne, elm_gguf_row_fn fill, void *user);
/* Write everything to path (through path.tmp + rename), alignment 32. */
elm_status elm_gguf_writer_write(struct elm_gguf_writer *w, const char *path,
                                 void (*progress)(float, void *), void *progress_user, char *err,
                                 size_t err_size);

#endif
