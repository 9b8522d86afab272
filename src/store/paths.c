/* paths.c: XDG base directories (spec 0.8) and mkdir -p. */
#include "config.h"

#include "src/store/paths.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/base/platform.h"
#include "src/base/xalloc.h"

static const struct {
    const char *var, *fallback;
} xdg[] = {
    [PATHS_CONFIG] = {"XDG_CONFIG_HOME", ".config"},
    [PATHS_DATA] = {"XDG_DATA_HOME", ".local/share"},
    [PATHS_STATE] = {"XDG_STATE_HOME", ".local/state"},
    [PATHS_CACHE] = {"XDG_CACHE_HOME", ".cache"},
};

static const char *home_dir(void)
{
    const char *home = getenv("HOME");
    if (home && *home)
        return home;
    struct passwd *pw = getpwuid(getuid());
    if (pw && pw->pw_dir && *pw->pw_dir)
        return pw->pw_dir;
    return ".";
}

char *paths_dir(enum paths_kind kind, const char *sub)
{
    const char *v = getenv(xdg[kind].var);
    char *base;
    /* The spec: a relative path in these variables is invalid, ignore it. */
    if (v && v[0] == '/')
        base = x_asprintf("%s/elmchat", v);
    else
        base = x_asprintf("%s/%s/elmchat", home_dir(), xdg[kind].fallback);
    if (!sub || !*sub)
        return base;
    char *full = x_asprintf("%s/%s", base, sub);
    free(base);
    return full;
}

int paths_mkdir_p(const char *path)
{
    if (!*path)
        return -EINVAL;
    char *p = x_strdup(path);
    int rc = 0;
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s)
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0700) < 0 && errno != EEXIST) {
            rc = -errno;
            break;
        }
        *s = c;
        if (!c)
            break;
    }
    if (!rc) {
        struct stat st;
        if (stat(p, &st) < 0)
            rc = -errno;
        else if (!S_ISDIR(st.st_mode))
            rc = -ENOTDIR;
    }
    free(p);
    return rc;
}

/* The folder holding the running program (owned), NULL when unknown. */
static char *paths_exe_dir(void)
{
    char *exe = platform_exe_path();
    char *slash = exe ? strrchr(exe, '/') : NULL;
    if (!slash) {
        free(exe);
        return NULL;
    }
    *slash = '\0';
    return exe;
}

/* The program runs from the build tree (not installed). */
static bool in_build_tree(void)
{
#if defined(ELMCHAT_BUILDDIR)
    char *exe = paths_exe_dir();
    if (!exe)
        return false;
    size_t bl = strlen(ELMCHAT_BUILDDIR);
    bool in = strncmp(exe, ELMCHAT_BUILDDIR, bl) == 0 && (exe[bl] == '\0' || exe[bl] == '/');
    free(exe);
    return in;
#else
    return false;
#endif
}

char *paths_shipped_dir(const char *sub)
{
#if defined(ELMCHAT_SRCDIR)
    if (in_build_tree())
        return x_asprintf("%s/%s", ELMCHAT_SRCDIR, sub);
#endif
    return x_asprintf("%s/%s", PKGDATADIR, sub);
}

char *paths_shipped_tokenizer(void)
{
    char *path = NULL;
#if defined(ELMCHAT_BUILDDIR)
    if (in_build_tree()) /* fetched into the build tree (models/local.mk) */
        path = x_asprintf("%s/models/llama2-tokenizer.model", ELMCHAT_BUILDDIR);
#endif
    if (!path)
        path = x_asprintf("%s/tokenizer.model", PKGDATADIR);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        free(path);
        return NULL;
    }
    return path;
}

char *paths_find_in(char *const *dirs, const char *name, const char *suffix)
{
    for (size_t d = 0; dirs[d]; d++) {
        char *path = x_asprintf("%s/%s%s", dirs[d], name, suffix);
        struct stat st;
        if (stat(path, &st) == 0)
            return path;
        free(path);
    }
    return NULL;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **paths_list_names(char *const *dirs, const char *suffix)
{
    size_t n = 0, cap = 16, sl = strlen(suffix);
    char **names = x_calloc(cap, sizeof *names);
    for (size_t d = 0; dirs[d]; d++) {
        DIR *dir = opendir(dirs[d]);
        if (!dir)
            continue;
        struct dirent *e;
        while ((e = readdir(dir))) {
            size_t len = strlen(e->d_name);
            if (len <= sl || strcmp(e->d_name + len - sl, suffix) != 0 || e->d_name[0] == '.')
                continue;
            bool dup = false;
            for (size_t i = 0; i < n && !dup; i++)
                dup = strlen(names[i]) == len - sl && strncmp(names[i], e->d_name, len - sl) == 0;
            if (dup)
                continue;
            if (n + 1 >= cap) {
                cap *= 2;
                names = x_reallocarray(names, cap, sizeof *names);
            }
            names[n++] = x_strndup(e->d_name, len - sl);
        }
        closedir(dir);
    }
    names[n] = NULL;
    qsort(names, n, sizeof *names, cmp_name);
    return names;
}
