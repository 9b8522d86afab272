/* model_find.c: model names to paths: the user's models folder first (a
 * model there may shadow a bundled one), then the models elmchat ships. */
#include "config.h"

#include "src/models/model_find.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <strings.h>
#include <dirent.h>

#include "src/models/hub_cache.h"
#include "src/base/macros.h"
#include "src/store/paths.h"
#include "src/base/xalloc.h"

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static char *bundled_dir(void)
{
    return paths_shipped_dir("models");
}

char **model_search_dirs(void)
{
    char **v = x_calloc(3, sizeof *v);
    v[0] = paths_dir(PATHS_DATA, "models");
    v[1] = bundled_dir();
    return v;
}

static void free_dirs(char **v)
{
    for (size_t i = 0; v[i]; i++)
        free(v[i]);
    free(v);
}

/* NAME or NAME.gguf in dir. */
static bool find_in(const char *dir, const char *name, char *path, size_t path_size)
{
    static const char *const suffixes[] = {"", ".gguf"};
    for (size_t i = 0; i < ARRAY_LEN(suffixes); i++)
        if ((size_t)snprintf(path, path_size, "%s/%s%s", dir, name, suffixes[i]) < path_size &&
            exists(path))
            return true;
    return false;
}

/* The bundled default model's path (ignores $ELMCHAT_MODEL). */
static bool model_bundled_default(char *path, size_t path_size)
{
    char *dir = bundled_dir();
    bool ok = find_in(dir, MODEL_DEFAULT_NAME, path, path_size);
    free(dir);
    return ok;
}

bool model_is_bundled(const char *path)
{
    char *dir = bundled_dir();
    size_t n = strlen(dir);
    bool in = strncmp(path, dir, n) == 0 && path[n] == '/' && path[n + 1] && !strchr(path + n + 1, '/');
    free(dir);
    return in;
}

static bool resolve_name(const char *arg, char *path, size_t path_size, char *err, size_t err_size)
{
    char repo[128];
    if (model_is_server(arg)) {
        /* a llama-server: the worker connects to it (elm_worker.h) */
        if ((size_t)snprintf(path, path_size, "%s", arg) >= path_size) {
            snprintf(err, err_size, "%.60s...: too long", arg);
            return false;
        }
        return true;
    }
    /* a repo id, when no such path exists: the Hugging Face cache */
    if (!exists(arg) && hub_cache_find(arg, path, path_size))
        return true;
    if (strchr(arg, '/') || exists(arg)) {
        if (!exists(arg)) {
            const char *sl = strchr(arg, '/');
            if (arg[0] != '/' && arg[0] != '.' && sl && !strchr(sl + 1, '/')) {
                char *cache = hub_cache_dir();
                snprintf(err, err_size,
                         "%s: not a path, and not in the Hugging Face cache %s "
                         "(elmchat pull %s downloads it)",
                         arg, cache, arg);
                free(cache);
            } else {
                snprintf(err, err_size, "%s: %s", arg, strerror(errno));
            }
            return false;
        }
        snprintf(path, path_size, "%s", arg);
        return true;
    }
    char **dirs = model_search_dirs();
    bool found = false;
    for (size_t i = 0; dirs[i] && !found; i++)
        found = find_in(dirs[i], arg, path, path_size);
    if (!found && strcmp(arg, "default") == 0)
        found = model_bundled_default(path, path_size);
    /* 270M-instruct and the like: Apple's repo in the Hugging Face cache */
    if (!found && hub_known_repo(arg, repo, sizeof repo))
        found = hub_cache_find(repo, path, path_size);
    if (!found && hub_known_repo(arg, repo, sizeof repo)) {
        char *cache = hub_cache_dir();
        snprintf(err, err_size,
                 "model '%s' not found (not in %s or %s, and %s is not in the Hugging Face "
                 "cache %s: elmchat pull %s)",
                 arg, dirs[0], dirs[1], repo, cache, arg);
        free(cache);
    } else if (!found) {
        snprintf(err, err_size, "model '%s' not found (not a path, and not in %s or %s)", arg,
                 dirs[0], dirs[1]);
    }
    free_dirs(dirs);
    return found;
}

bool model_resolve(const char *arg, char *path, size_t path_size, char *err, size_t err_size)
{
    /* arg may be path itself (resolve what a resolve returned): every
     * snprintf into path would then read what it writes, so work on a copy */
    if (arg && (uintptr_t)arg >= (uintptr_t)path && (uintptr_t)arg < (uintptr_t)path + path_size) {
        char *copy = x_strdup(arg);
        bool ok = model_resolve(copy, path, path_size, err, err_size);
        free(copy);
        return ok;
    }
    if (arg && *arg && strcmp(arg, "default") != 0)
        return resolve_name(arg, path, path_size, err, err_size);
    const char *env = getenv(MODEL_ENV);
    if (env && *env && strcmp(env, "default") != 0) {
        if (resolve_name(env, path, path_size, err, err_size))
            return true;
        size_t n = strlen(err);
        snprintf(err + n, err_size > n ? err_size - n : 0, " (from $%s)", MODEL_ENV);
        return false;
    }
    if (model_bundled_default(path, path_size))
        return true;
    char *dir = bundled_dir();
    snprintf(err, err_size,
             "no model given and the bundled default model is missing (looked for %s/%s[.gguf]); "
             "give one with -m PATH",
             dir, MODEL_DEFAULT_NAME);
    free(dir);
    return false;
}

bool model_resolve_file(const char *arg, char *path, size_t path_size, char *err,
                        size_t err_size)
{
    if (!model_resolve(arg, path, path_size, err, err_size))
        return false;
    if (model_is_server(path)) {
        snprintf(err, err_size,
                 "%.200s: a llama-server runs the chat and run (elmchat [run] -m %.200s); this "
                 "command needs a model file",
                 path, path);
        return false;
    }
    return true;
}

bool model_is_server(const char *name)
{
    return name && strncmp(name, MODEL_SERVER_PREFIX, strlen(MODEL_SERVER_PREFIX)) == 0;
}

char *model_tokenizer_path(const char *model_path, const char *given)
{
    if (given)
        return x_strdup(given);
    if (model_is_server(model_path))
        return paths_shipped_tokenizer(); /* no file here; every OpenELM's */
    struct stat st;
    if (!model_path || stat(model_path, &st) != 0 || !S_ISDIR(st.st_mode))
        return NULL; /* a GGUF: its vocabulary */
    const char *names[] = {"tokenizer.model", "tokenizer.json"};
    for (size_t i = 0; i < 2; i++) {
        char *p = x_asprintf("%s/%s", model_path, names[i]);
        bool there = stat(p, &st) == 0;
        free(p);
        if (there)
            return NULL;
    }
    return paths_shipped_tokenizer();
}

elm_tokenizer *model_tokenizer(const char *model_path, const char *given, char **from,
                               char *err, size_t err_size)
{
    *from = NULL;
    if (err_size)
        err[0] = '\0';
    char *path = model_tokenizer_path(model_path, given);
    if (!path)
        return NULL;
    elm_tokenizer *tok = NULL;
    char why[ELM_ERR_MAX];
    if (elm_tokenizer_load(path, &tok, why, sizeof why) != ELM_OK) {
        /* the one named, or a server's, must load; a folder's stand-in
         * that does not leaves the model's own to say what is missing */
        if (given || model_is_server(model_path))
            snprintf(err, err_size, "%s", why);
        free(path);
        return NULL;
    }
    *from = path;
    return tok;
}
