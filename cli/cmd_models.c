/* cmd_models.c: `elmchat models [--rm NAME]`: the models this machine has
 * (the user's models folder, the bundled ones, the Hugging Face cache)
 * with their size, type, parameter count and the sessions that use them;
 * --rm removes one from the Hub cache, after asking. */
#define _XOPEN_SOURCE 700
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/option_loop.h"
#include "engine/elm.h"
#include "src/base/human_size.h"
#include "src/models/hub_cache.h"
#include "src/models/model_find.h"
#include "src/store/paths.h"
#include "src/conversation/session.h"
#include "src/base/xalloc.h"

static void help(void)
{
    printf("Usage: elmchat models [--rm NAME [--yes]]\n"
           "List the models this machine has: the user's models folder, the models\n"
           "elmchat ships, and the Hugging Face cache (what elmchat pull,\n"
           "huggingface-cli, transformers and mlx downloaded).  For each: the name for\n"
           "-m, where it is, its size on disk, weight type, parameters, and the saved\n"
           "sessions that use it (kv: with a KV snapshot).\n"
           "\n"
           "      --rm NAME   remove NAME (owner/name or 270M-instruct ...) from the\n"
           "                  Hugging Face cache: every snapshot and file of it\n"
           "  -y, --yes       do not ask first\n"
           "  -h, --help      display this help and exit\n"
           "Exit status: 0 ok, 1 runtime error, 2 usage error.\n");
}

struct row {
    char *name;  /* what -m takes */
    char *where; /* models folder, bundled, hub cache */
    char *path;
};

static long long tree_bytes;

static int add_size(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)ftw;
    struct stat st;
    /* the Hub cache's snapshot files are links to its blobs */
    if ((flag == FTW_F || flag == FTW_SL) && stat(p, &st) == 0 && S_ISREG(st.st_mode))
        tree_bytes += st.st_size;
    (void)sb;
    return 0;
}

static long long disk_size(const char *path)
{
    tree_bytes = 0;
    nftw(path, add_size, 16, FTW_PHYS);
    return tree_bytes;
}

static const char *params_str(unsigned long long p, char *buf, size_t n)
{
    if (p >= 1000000000ULL)
        snprintf(buf, n, "%.2fB", (double)p / 1e9);
    else
        snprintf(buf, n, "%.1fM", (double)p / 1e6);
    return buf;
}

/* The saved sessions whose model is this one, "name, other (kv)". */
static char *users_of(const char *path)
{
    char real[PATH_MAX];
    if (!realpath(path, real))
        return x_strdup("-");
    char *dir = paths_dir(PATHS_DATA, "sessions");
    char *dirs[] = {dir, NULL};
    char **names = paths_list_names(dirs, ".yaml");
    char *out = NULL;
    for (size_t i = 0; names[i]; i++) {
        char *sp = session_path_for(names[i]);
        char err[512];
        struct session *s = sp ? session_load(sp, err, sizeof err) : NULL;
        char mpath[PATH_MAX], merr[512], mreal[PATH_MAX];
        if (s && model_resolve(s->model, mpath, sizeof mpath, merr, sizeof merr) &&
            realpath(mpath, mreal) && strcmp(mreal, real) == 0) {
            char *kv = x_asprintf("%s/%s.kv", dir, names[i]);
            bool has_kv = access(kv, F_OK) == 0;
            free(kv);
            char *next = x_asprintf("%s%s%s%s", out ? out : "", out ? ", " : "", names[i],
                                    has_kv ? " (kv)" : "");
            free(out);
            out = next;
        }
        if (s)
            session_free(s);
        free(sp);
        free(names[i]);
    }
    free(names);
    free(dir);
    return out ? out : x_strdup("-");
}

static void add_row(struct row **v, size_t *n, const char *name, const char *where,
                    const char *path)
{
    *v = x_reallocarray(*v, *n + 1, sizeof **v);
    (*v)[(*n)++] = (struct row){x_strdup(name), x_strdup(where), x_strdup(path)};
}

static void list_folder(struct row **v, size_t *n, const char *dir, const char *where)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char *p = x_asprintf("%s/%s", dir, e->d_name);
        struct stat st;
        size_t len = strlen(e->d_name);
        if (stat(p, &st) == 0 &&
            ((S_ISDIR(st.st_mode)) ||
             (S_ISREG(st.st_mode) && len > 5 && strcmp(e->d_name + len - 5, ".gguf") == 0))) {
            char *name = x_strndup(e->d_name, S_ISDIR(st.st_mode) ? len : len - 5);
            add_row(v, n, name, where, p);
            free(name);
        }
        free(p);
    }
    if (d)
        closedir(d);
}

static void list_hub_cache(struct row **v, size_t *n)
{
    char *cache = hub_cache_dir();
    DIR *d = opendir(cache);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char id[256], path[PATH_MAX];
        if (hub_repo_id_of_dir(e->d_name, id, sizeof id) && hub_cache_find(id, path, sizeof path)) {
            add_row(v, n, id, "hub cache", path);
        }
    }
    if (d)
        closedir(d);
    free(cache);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct row *)a)->name, ((const struct row *)b)->name);
}

static void print_rows(struct row *v, size_t n)
{
    printf("%-34s %-11s %10s %-6s %8s  %s\n", "NAME", "WHERE", "SIZE", "TYPE", "PARAMS", "USED BY");
    for (size_t i = 0; i < n; i++) {
        struct elm_model_params mp = elm_model_default_params();
        mp.n_threads = 1;
        elm_model *m = NULL;
        char err[ELM_ERR_MAX], sz[24], pr[24];
        const char *type = "?";
        const char *params = "?";
        if (elm_model_load(v[i].path, &mp, &m, err, sizeof err) == ELM_OK) {
            const struct elm_model_info *in = elm_model_get_info(m);
            type = elm_dtype_name(in->dtype);
            params = params_str(in->n_params, pr, sizeof pr);
        }
        char *users = users_of(v[i].path);
        printf("%-34s %-11s %10s %-6s %8s  %s\n", v[i].name, v[i].where,
               human_size(disk_size(v[i].path), sz, sizeof sz), type, params, users);
        if (!m)
            fprintf(stderr, "elmchat models: %s does not load: %s\n", v[i].path, err);
        free(users);
        if (m)
            elm_model_free(m);
    }
    printf("(elmchat -m NAME; %s)\n", n ? "the first of a name wins" : "no models found");
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    int rc = flag == FTW_DP ? rmdir(p) : unlink(p);
    if (rc != 0)
        fprintf(stderr, "elmchat models: %s: %s\n", p, strerror(errno));
    return 0;
}

static int remove_model(const char *name, bool yes)
{
    char id[256];
    if (!hub_known_repo(name, id, sizeof id))
        snprintf(id, sizeof id, "%s", name);
    if (!hub_repo_id_valid(id)) {
        cli_error("'%s' is not a model of the Hugging Face cache (owner/name, 270M-instruct, "
                  "...); models in other folders are files to remove by hand",
                  name);
        return EXIT_RUNTIME;
    }
    char *cache = hub_cache_dir();
    char *dir = hub_repo_dir(cache, id);
    free(cache);
    struct stat st;
    if (stat(dir, &st) != 0) {
        cli_error("%s is not in the Hugging Face cache (%s)", id, dir);
        free(dir);
        return EXIT_RUNTIME;
    }
    char sz[24], snap[PATH_MAX];
    char *users = hub_cache_find(id, snap, sizeof snap) ? users_of(snap) : x_strdup("-");
    if (!yes) {
        if (!isatty(STDIN_FILENO)) {
            cli_error("not removing %s without asking: no terminal to ask on (give --yes)", id);
            free(users);
            free(dir);
            return EXIT_RUNTIME;
        }
        fprintf(stderr, "Remove %s (%s in %s%s%s)? [y/N] ", id,
                human_size(disk_size(dir), sz, sizeof sz), dir,
                strcmp(users, "-") ? "; used by " : "", strcmp(users, "-") ? users : "");
        char answer[16] = "";
        bool ok = fgets(answer, sizeof answer, stdin) && (answer[0] == 'y' || answer[0] == 'Y');
        if (!ok) {
            printf("kept %s\n", id);
            free(users);
            free(dir);
            return EXIT_OK;
        }
    }
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    int rc = stat(dir, &st) == 0 ? EXIT_RUNTIME : EXIT_OK;
    if (rc == EXIT_OK)
        printf("removed %s (%s)\n", id, dir);
    else
        cli_error("%s: not everything could be removed", dir);
    free(users);
    free(dir);
    return rc;
}

int cmd_models(int argc, char **argv)
{
    static const struct option opts[] = {
        {"rm", 1, NULL, 'r'}, {"yes", 0, NULL, 'y'}, {"help", 0, NULL, 'h'}, {NULL, 0, NULL, 0}};
    const char *rm = NULL;
    bool yes = false;
    int opt;
    option_loop_begin();
    while ((opt = getopt_long(argc, argv, ":yh", opts, NULL)) != -1) {
        switch (opt) {
        case 'r':
            rm = optarg;
            break;
        case 'y':
            yes = true;
            break;
        case 'h':
            help();
            return EXIT_OK;
        default:
            return option_loop_error(argv[0], opt, argv);
        }
    }
    if (optind < argc)
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);
    if (rm)
        return remove_model(rm, yes);
    struct row *v = NULL;
    size_t n = 0;
    char **dirs = model_search_dirs();
    list_folder(&v, &n, dirs[0], "models dir");
    size_t user = n;
    list_folder(&v, &n, dirs[1], "bundled");
    size_t bundled = n;
    list_hub_cache(&v, &n);
    qsort(v, user, sizeof *v, by_name);
    qsort(v + user, bundled - user, sizeof *v, by_name);
    qsort(v + bundled, n - bundled, sizeof *v, by_name);
    print_rows(v, n);
    for (size_t i = 0; dirs[i]; i++)
        free(dirs[i]);
    free(dirs);
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        free(v[i].where);
        free(v[i].path);
    }
    free(v);
    return EXIT_OK;
}
