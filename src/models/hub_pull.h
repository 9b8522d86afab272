/* hub_pull.h: download a Hub repository's revision into the Hugging Face
 * cache (hub_cache.h), file by file: resumed from a partial download,
 * retried with backoff when the connection drops, each file checked
 * against the Hub's sha256 (LFS) or git blob id before it gets its final
 * name.  Nothing half-written is ever under a final name.  Main thread
 * (or one thread at a time). */
#ifndef ELMCHAT_SRC_HUB_PULL_H
#define ELMCHAT_SRC_HUB_PULL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "src/models/hub_api.h"

enum hub_pull_event_kind {
    HUB_PULL_LISTED,     /* the files are known: count, all_size */
    HUB_PULL_FILE_START, /* file, file_size, file_done (resumed from) */
    HUB_PULL_PROGRESS,   /* file_done, all_done grew */
    HUB_PULL_FILE_DONE,  /* verified and in place (cached: it already was) */
    HUB_PULL_NOTICE,     /* message: a retry, a resume */
};

struct hub_pull_event {
    enum hub_pull_event_kind kind;
    const char *file;
    size_t index, count; /* the file's number (from 1) and how many */
    long long file_done, file_size;
    long long all_done, all_size; /* bytes over every file of the pull */
    bool cached;
    bool lfs; /* checked by sha256, else by git blob id */
    const char *message;
};

struct hub_pull_opts {
    const char *id;       /* owner/name */
    const char *revision; /* NULL: "main" */
    /* fnmatch patterns of the files wanted; NULL: every file except
     * other weight formats beside safetensors */
    char *const *include;
    void (*on_event)(void *ctx, const struct hub_pull_event *ev);
    void *ctx;
    const volatile sig_atomic_t *cancel; /* non-zero stops it (resumable) */
};

struct hub_pull_result {
    char *snapshot; /* the folder to load (owned: free) */
    char commit[48];
    size_t files, files_cached;
    long long bytes_fetched, bytes_total;
};

/* err says what failed and what is left (a resumable partial file). */
enum hub_status hub_pull(const struct hub_pull_opts *o, struct hub_pull_result *r, char *err,
                         size_t err_size);

/* Which files of the listing a pull fetches (the rule of opts.include;
 * want[i] set when want is not NULL) and their bytes in all. */
long long hub_pull_select(const struct hub_listing *l, char *const *include, bool *want);

#endif
