/* status.c: names of status codes and dtypes. */
#include "config.h"

#include "engine/elm.h"

const char *elm_status_str(elm_status status)
{
    switch (status) {
    case ELM_OK: return "success";
    case ELM_E_INVALID: return "invalid argument";
    case ELM_E_IO: return "input/output error";
    case ELM_E_FORMAT: return "bad file format";
    case ELM_E_NOMEM: return "out of memory";
    case ELM_E_UNSUPPORTED: return "not supported";
    case ELM_E_MISMATCH: return "does not match this model";
    case ELM_E_ABORTED: return "aborted";
    case ELM_E_CONTEXT_FULL: return "context is full";
    }
    return "unknown error";
}

const char *elm_dtype_name(enum elm_dtype dtype)
{
    switch (dtype) {
    case ELM_DTYPE_F32: return "f32";
    case ELM_DTYPE_F16: return "f16";
    case ELM_DTYPE_BF16: return "bf16";
    case ELM_DTYPE_Q8_0: return "q8_0";
    case ELM_DTYPE_Q4_0: return "q4_0";
    case ELM_DTYPE_Q4_K: return "q4_k";
    case ELM_DTYPE_Q5_K: return "q5_k";
    case ELM_DTYPE_Q6_K: return "q6_k";
    }
    return "unknown";
}
