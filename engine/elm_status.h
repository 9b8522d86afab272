/* elm_status.h: the status codes and error-buffer size every libelm call
 * shares (the base of elm.h, elm_tokenizer.h, elm_worker.h, elm_bench.h). */
#ifndef ELMCHAT_ENGINE_ELM_STATUS_H
#define ELMCHAT_ENGINE_ELM_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum elm_status {
    ELM_OK = 0,
    ELM_E_INVALID = -1,     /* bad argument (programmer or user input) */
    ELM_E_IO = -2,          /* open/read/mmap failed */
    ELM_E_FORMAT = -3,      /* file is not what it claims to be */
    ELM_E_NOMEM = -4,
    ELM_E_UNSUPPORTED = -5, /* valid file, feature we do not implement */
    ELM_E_MISMATCH = -6,    /* state/snapshot belongs to another model/prefix */
    ELM_E_ABORTED = -7,     /* abort callback asked to stop */
    ELM_E_CONTEXT_FULL = -8,
} elm_status;

/* Static string, any thread. */
const char *elm_status_str(elm_status status);

/* Size of the error buffers that the API fills (a longer buffer is fine). */
#define ELM_ERR_MAX 512

#ifdef __cplusplus
}
#endif
#endif
