/* hub_cache.h: the Hugging Face Hub cache, as huggingface_hub lays it out
 * (and huggingface-cli, transformers and mlx read it):
 *   CACHE/models--OWNER--NAME/blobs/ETAG          the files' bytes
 *   CACHE/models--OWNER--NAME/blobs/ETAG.incomplete   a download under way
 *   CACHE/models--OWNER--NAME/snapshots/COMMIT/PATH   -> ../../blobs/ETAG
 *   CACHE/models--OWNER--NAME/refs/REVISION        the commit it names
 * CACHE is $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub.
 * ETAG is an LFS file's sha256, else the git blob id.  Main thread only. */
#ifndef ELMCHAT_SRC_HUB_CACHE_H
#define ELMCHAT_SRC_HUB_CACHE_H

#include <stdbool.h>
#include <stddef.h>

/* $HF_HOME, else ~/.cache/huggingface (owned): the cache's parent, where
 * huggingface-cli login keeps the token. */
char *hub_home_dir(void);
/* The cache folder (owned). */
char *hub_cache_dir(void);
/* An owner/name id the Hub could have: two parts of [A-Za-z0-9._-], not
 * starting with '.' or '-', no "..". */
bool hub_repo_id_valid(const char *id);
/* The OpenELM names elmchat knows (270M, 450M, 1.1B, 3B, each also with
 * -instruct, any case) as Apple's repo ids; false for any other name. */
bool hub_known_repo(const char *name, char *repo, size_t size);
/* CACHE/models--OWNER--NAME (owned); id must be valid. */
char *hub_repo_dir(const char *cache, const char *id);
/* The model of id in the cache: the snapshot the commit refs/main names,
 * else the newest, or the GGUF pull --quantize wrote in it.  false when
 * the cache has none. */
bool hub_cache_find(const char *id, char *path, size_t path_size);
/* A model in the cache named for people: ".../models--apple--OpenELM-3B/
 * snapshots/COMMIT[/elmchat-q8_0.gguf]" is "OpenELM-3B[-q8_0]" (a commit
 * id says nothing).  false for a path outside the cache's layout. */
bool hub_label_of_path(const char *path, char *out, size_t size);
/* The repo id of a model in the cache's layout: ".../models--OWNER--NAME/
 * snapshots/COMMIT[/FILE]" is OWNER/NAME (a relative path or a symlink is
 * resolved first).  false for a path outside the layout. */
bool hub_repo_id_of_path(const char *path, char *id, size_t size);
/* The id of a repo folder name "models--OWNER--NAME" (false for others). */
bool hub_repo_id_of_dir(const char *dirname, char *id, size_t size);

#endif
