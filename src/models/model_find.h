/* model_find.h: where a model named on the command line or in /model is:
 * a path; a name in the user's models folder ($XDG_DATA_HOME/elmchat/models,
 * a folder or NAME.gguf); an alias; one of the models elmchat ships
 * (models/ of the source tree when run from the build tree, else
 * $(pkgdatadir)/models); or a model in the Hugging Face cache ($HF_HUB_CACHE,
 * $HF_HOME/hub, ~/.cache/huggingface/hub): an owner/repo id, or the short
 * names 270M, 450M, 1.1B, 3B (-instruct) for Apple's repos.  Main thread
 * only. */
#ifndef ELMCHAT_SRC_MODEL_FIND_H
#define ELMCHAT_SRC_MODEL_FIND_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/elm_tokenizer.h"

/* The bundled model used when none is named (also the name "default"). */
#define MODEL_DEFAULT_NAME "guide-small-instruct"
/* The environment variable naming the model used when none is given. */
#define MODEL_ENV "ELMCHAT_MODEL"

/* A model on a llama-server: "server:URL" (the worker's LOAD_MODEL takes
 * it as it is; model_resolve returns it unchanged). */
#define MODEL_SERVER_PREFIX "server:"
bool model_is_server(const char *name);

/* Resolve MODEL to a path; NULL or "" is the default model: $ELMCHAT_MODEL
 * when set, else the bundled default.  false when nothing is found (err
 * says what was tried).  arg may be path itself. */
bool model_resolve(const char *arg, char *path, size_t path_size, char *err, size_t err_size);
/* model_resolve for the commands that open the model themselves (info,
 * tokenize, quantize...): a server is refused with a message that says
 * where it works (the chat, run). */
bool model_resolve_file(const char *arg, char *path, size_t path_size, char *err,
                        size_t err_size);
/* Is path one of the bundled models (as model_resolve returns them)? */
bool model_is_bundled(const char *path);
/* The tokenizer a model is used with, the one place that says which:
 * given (--tokenizer FILE, an alias's tokenizer:) when not NULL; else for
 * a server ("server:URL", no file here) and for a model folder without a
 * tokenizer of its own (Apple's OpenELM repos ship none) elmchat's LLaMA-2
 * one; else NULL: the model's own (a file beside the weights, a GGUF's
 * vocabulary), which the engine loads with the weights
 * (elm_tokenizer_load_for_model alone).  Owned. */
char *model_tokenizer_path(const char *model_path, const char *given);
/* That tokenizer loaded (owned: elm_tokenizer_free) and *from its path
 * (owned).  NULL with *from NULL: with err when the one given or a
 * server's cannot be loaded; with err empty when the model's own applies
 * (also when the folder's stand-in would not load: the model's load then
 * says what is missing). */
elm_tokenizer *model_tokenizer(const char *model_path, const char *given, char **from,
                               char *err, size_t err_size);

/* The folders names are looked up in, in order, NULL-terminated (owned:
 * free each and the vector): the user's, then the bundled one. */
char **model_search_dirs(void);

#endif
