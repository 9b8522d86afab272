/* template_find.c: templates by name (the user's folder first, then the
 * installed or the build tree's prompts/), the list of names, and the
 * template that goes with a model name. */
#include "config.h"

#include "src/template.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "src/paths.h"
#include "src/xalloc.h"

void strv_free(char **v)
{
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

char **template_search_dirs(void)
{
    char **v = x_calloc(5, sizeof *v);
    size_t n = 0;
    const char *env = getenv("ELMCHAT_PROMPTS_DIR");
    if (env && *env)
        v[n++] = x_strdup(env);
    v[n++] = paths_dir(PATHS_CONFIG, "prompts");
#if defined(ELMCHAT_SRCDIR) && defined(ELMCHAT_BUILDDIR)
    /* Running from the build tree (a VPATH build dir has no prompts/). */
    char *exe = paths_exe_dir();
    if (exe) {
        size_t bl = strlen(ELMCHAT_BUILDDIR);
        if (strncmp(exe, ELMCHAT_BUILDDIR, bl) == 0 && (exe[bl] == '\0' || exe[bl] == '/'))
            v[n++] = x_strdup(ELMCHAT_SRCDIR "/prompts");
        free(exe);
    }
#endif
    v[n++] = x_strdup(PKGDATADIR "/prompts");
    v[n] = NULL;
    return v;
}

static bool valid_name(const char *name)
{
    return *name && name[0] != '.' && !strchr(name, '/');
}

struct template *template_load(const char *name_or_path, char *err, size_t err_size)
{
    size_t len = strlen(name_or_path);
    if (strchr(name_or_path, '/') || (len > 5 && strcmp(name_or_path + len - 5, ".yaml") == 0))
        return template_load_file(name_or_path, err, err_size);
    if (!valid_name(name_or_path)) {
        snprintf(err, err_size, "'%s' is not a template name", name_or_path);
        return NULL;
    }
    char **dirs = template_search_dirs();
    struct template *tpl = NULL;
    bool found = false;
    for (char **d = dirs; *d && !found; d++) {
        char *path = x_asprintf("%s/%s.yaml", *d, name_or_path);
        struct stat st;
        if (stat(path, &st) == 0) {
            found = true;
            tpl = template_load_file(path, err, err_size);
        }
        free(path);
    }
    if (!found) {
        int n = snprintf(err, err_size, "template '%s' not found (looked in", name_or_path);
        for (char **d = dirs; *d && n >= 0 && (size_t)n < err_size; d++)
            n += snprintf(err + n, err_size - (size_t)n, " %s", *d);
        if (n >= 0 && (size_t)n < err_size)
            snprintf(err + n, err_size - (size_t)n, ")");
    }
    strv_free(dirs);
    return tpl;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **template_list(void)
{
    char **dirs = template_search_dirs();
    size_t n = 0, cap = 16;
    char **names = x_calloc(cap, sizeof *names);
    for (char **d = dirs; *d; d++) {
        if (!is_dir(*d))
            continue;
        DIR *dir = opendir(*d);
        if (!dir)
            continue;
        struct dirent *e;
        while ((e = readdir(dir))) {
            size_t len = strlen(e->d_name);
            if (len <= 5 || strcmp(e->d_name + len - 5, ".yaml") != 0 || e->d_name[0] == '.')
                continue;
            char *name = x_strndup(e->d_name, len - 5);
            bool dup = false;
            for (size_t i = 0; i < n; i++)
                dup = dup || strcmp(names[i], name) == 0;
            if (dup) {
                free(name);
                continue;
            }
            if (n + 1 >= cap) {
                cap *= 2;
                names = x_reallocarray(names, cap, sizeof *names);
            }
            names[n++] = name;
        }
        closedir(dir);
    }
    names[n] = NULL;
    qsort(names, n, sizeof *names, cmp_str);
    strv_free(dirs);
    return names;
}

const char *template_default_for_model(const char *model)
{
    if (!model)
        return "plain";
    /* The folder or file name, ignoring trailing slashes. */
    size_t len = strlen(model);
    while (len > 1 && model[len - 1] == '/')
        len--;
    size_t start = len;
    while (start > 0 && model[start - 1] != '/')
        start--;
    for (size_t i = start; i + 8 <= len; i++)
        if (strncasecmp(model + i, "instruct", 8) == 0)
            return "openelm-instruct";
    return "plain";
}
