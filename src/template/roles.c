/* roles.c: role presets: a YAML mapping with `system` (required) and
 * `description`; a name is looked up in the user's folder, then the
 * shipped one. */
#include "config.h"

#include "src/template/roles.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/store/paths.h"
#include "src/template/template.h"
#include "src/base/xalloc.h"
#include "src/store/yamldoc.h"

/* The folders, in lookup order (free with strv_free). */
static char **role_search_dirs(void)
{
    char **v = x_calloc(3, sizeof *v);
    v[0] = paths_dir(PATHS_CONFIG, "roles");
    v[1] = paths_shipped_dir("prompts/roles");
    return v;
}

char **role_list(void)
{
    char **dirs = role_search_dirs();
    char **names = paths_list_names(dirs, ".yaml");
    strv_free(dirs);
    return names;
}

void role_free(struct role_preset *r)
{
    if (!r)
        return;
    free(r->name);
    free(r->description);
    free(r->system);
    free(r->path);
    free(r);
}

static bool parse(struct ydoc *d, struct role_preset *r)
{
    yaml_node_t *root = ydoc_root(d);
    if (!ydoc_check_keys(d, root))
        return false;
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        const char *key = ydoc_key(d, p);
        yaml_node_t *n = ydoc_node(d, p->value);
        if (strcmp(key, "system") == 0) {
            if (!(r->system = ydoc_strdup(d, n, "system")))
                return false;
        } else if (strcmp(key, "description") == 0) {
            if (!(r->description = ydoc_strdup(d, n, "description")))
                return false;
        } else if (strcmp(key, "name") != 0) {
            return ydoc_fail(d, ydoc_node(d, p->key),
                             "unknown key '%s' (a role has system, description, name)", key);
        }
    }
    if (!r->system || !r->system[strspn(r->system, " \t\n")])
        return ydoc_fail(d, NULL, "no system prompt (the key `system`)");
    return true;
}

static struct role_preset *load_file(const char *path, char *err, size_t err_size)
{
    struct ydoc d;
    struct role_preset *r = x_calloc(1, sizeof *r);
    bool okay = ydoc_load_file(&d, path, ROLE_MAX_FILE_SIZE, err, err_size) && parse(&d, r);
    ydoc_fini(&d);
    if (!okay) {
        role_free(r);
        return NULL;
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 5 && strcmp(base + n - 5, ".yaml") == 0)
        n -= 5;
    r->name = x_strndup(base, n);
    r->path = x_strdup(path);
    return r;
}

struct role_preset *role_load(const char *name_or_path, char *err, size_t err_size)
{
    if (strchr(name_or_path, '/'))
        return load_file(name_or_path, err, err_size);
    if (!*name_or_path || name_or_path[0] == '.') {
        snprintf(err, err_size, "'%s' is not a role name", name_or_path);
        return NULL;
    }
    char **dirs = role_search_dirs();
    struct role_preset *r = NULL;
    char *path = paths_find_in(dirs, name_or_path, ".yaml");
    if (path)
        r = load_file(path, err, err_size);
    else
        snprintf(err, err_size, "no role '%s' (looked in %s and %s; /role lists them)",
                 name_or_path, dirs[0], dirs[1]);
    free(path);
    strv_free(dirs);
    return r;
}
