/* test-prompts: every file elmchat ships under prompts/ loads: each
 * template (prompts/NAME.yaml) as a template, each role
 * (prompts/roles/NAME.yaml) as a role, found by its name, and the files in
 * the folders are exactly those prompts/local.mk installs (a file added
 * but not shipped, or shipped but missing, fails too).  Issue 50: the
 * shipped coder role was invalid YAML and only --role coder found out. */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/platform.h"
#include "src/template/roles.h"
#include "src/template/template.h"
#include "src/base/xalloc.h"
#include "tests/lib/tap.h"

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The NAME.yaml files of dir, sorted (strv_free). */
static char **yaml_files(const char *dir)
{
    char **v = x_calloc(1, sizeof *v);
    size_t n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".yaml") == 0) {
            v = x_reallocarray(v, n + 2, sizeof *v);
            v[n++] = x_strdup(e->d_name);
            v[n] = NULL;
        }
    }
    if (d)
        closedir(d);
    qsort(v, n, sizeof *v, cmp_str);
    return v;
}

/* The prompts/...yaml names prompts/local.mk lists under the variable
 * whose line starts with var (sorted base names, strv_free). */
static char **listed(const char *mk, const char *var, const char *folder)
{
    char **v = x_calloc(1, sizeof *v);
    size_t n = 0;
    FILE *f = fopen(mk, "r");
    char line[512];
    bool in = false;
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, var, strlen(var)) == 0)
            in = true;
        else if (in && line[0] != '\t')
            in = false;
        const char *p = in ? strstr(line, folder) : NULL;
        if (!p)
            continue;
        p += strlen(folder);
        size_t len = strcspn(p, " \t\\\n");
        if (memchr(p, '/', len))
            continue;
        v = x_reallocarray(v, n + 2, sizeof *v);
        v[n++] = x_strndup(p, len);
        v[n] = NULL;
    }
    if (f)
        fclose(f);
    qsort(v, n, sizeof *v, cmp_str);
    return v;
}

static char *joined(char **v)
{
    size_t n = 1;
    for (char **p = v; *p; p++)
        n += strlen(*p) + 1;
    char *s = x_calloc(n, 1);
    for (char **p = v; *p; p++) {
        strcat(s, *p);
        strcat(s, p[1] ? " " : "");
    }
    return s;
}

int main(int argc, char **argv)
{
    (void)argc;
    /* the shipped prompts are found from the program's own path (argv[0]
     * with --enable-portable-fallbacks) */
    platform_set_argv0(argv[0]);
    plan_lazy();
    tap_private_xdg(); /* no user's folder in the way */
    const char *top = getenv("top_srcdir") ? getenv("top_srcdir") : "..";
    char *prompts = x_asprintf("%s/prompts", top);
    char *roles_dir = x_asprintf("%s/prompts/roles", top);
    char *mk = x_asprintf("%s/prompts/local.mk", top);
    setenv("ELMCHAT_PROMPTS_DIR", prompts, 1);
    char err[1024];

    char **tpls = yaml_files(prompts);
    ok(tpls[0] != NULL, "%s holds templates", prompts);
    for (char **p = tpls; *p; p++) {
        char *path = x_asprintf("%s/%s", prompts, *p);
        struct template *t = template_load_file(path, err, sizeof err);
        ok(t != NULL, "template %s loads%s%s", *p, t ? "" : ": ", t ? "" : err);
        if (t) {
            size_t len = strlen(*p) - 5;
            ok(strlen(t->name) == len && strncmp(t->name, *p, len) == 0,
               "template %s: its name: is the file's (%s)", *p, t->name);
        }
        template_free(t);
        free(path);
    }

    char **roles = yaml_files(roles_dir);
    ok(roles[0] != NULL, "%s holds roles", roles_dir);
    for (char **p = roles; *p; p++) {
        char *name = x_strndup(*p, strlen(*p) - 5);
        struct role_preset *r = role_load(name, err, sizeof err);
        ok(r != NULL, "role %s loads%s%s", name, r ? "" : ": ", r ? "" : err);
        if (r)
            ok(r->system[0] && r->description && r->description[0] &&
                   strstr(r->path, "prompts/roles/"),
               "role %s: a system prompt and a description, from %s", name, r->path);
        role_free(r);
        free(name);
    }

    /* the files are the shipped ones */
    char **ship_t = listed(mk, "dist_prompts_DATA", "prompts/");
    char **ship_r = listed(mk, "dist_roles_DATA", "prompts/roles/");
    char *a = joined(tpls), *b = joined(ship_t);
    is_str(a, b, "the templates in prompts/ are those prompts/local.mk installs");
    free(a);
    free(b);
    a = joined(roles);
    b = joined(ship_r);
    is_str(a, b, "the roles in prompts/roles/ are those prompts/local.mk installs");
    free(a);
    free(b);
    char **all = role_list();
    a = joined(all);
    b = joined(ship_r);
    char *c = b;
    for (char *q = c; (q = strstr(q, ".yaml")) != NULL;)
        memmove(q, q + 5, strlen(q + 5) + 1);
    is_str(a, c, "role_list names every shipped role");
    free(a);
    free(b);
    strv_free(all);

    strv_free(ship_t);
    strv_free(ship_r);
    strv_free(tpls);
    strv_free(roles);
    free(mk);
    free(roles_dir);
    free(prompts);
    return done_testing();
}
