/* template_find.c: templates by name (the user's folder first, then the
 * installed or the build tree's prompts/), the list of names, and the
 * template that goes with a model name. */
#include "config.h"

#include "src/template.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

char **template_search_dirs(void)
{
    char **v = x_calloc(5, sizeof *v);
    size_t n = 0;
    const char *env = getenv("ELMCHAT_PROMPTS_DIR");
    if (env && *env)
        v[n++] = x_strdup(env);
    v[n++] = paths_dir(PATHS_CONFIG, "prompts");
    v[n++] = paths_shipped_dir("prompts");
    if (strcmp(v[n - 1], PKGDATADIR "/prompts") != 0)
        v[n++] = x_strdup(PKGDATADIR "/prompts"); /* run from the build tree: the installed too */
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
    char *path = paths_find_in(dirs, name_or_path, ".yaml");
    if (path) {
        tpl = template_load_file(path, err, err_size);
        free(path);
    } else {
        int n = snprintf(err, err_size, "template '%s' not found (looked in", name_or_path);
        for (char **d = dirs; *d && n >= 0 && (size_t)n < err_size; d++)
            n += snprintf(err + n, err_size - (size_t)n, " %s", *d);
        if (n >= 0 && (size_t)n < err_size)
            snprintf(err + n, err_size - (size_t)n, ")");
    }
    strv_free(dirs);
    return tpl;
}

char **template_list(void)
{
    char **dirs = template_search_dirs();
    char **names = paths_list_names(dirs, ".yaml");
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
