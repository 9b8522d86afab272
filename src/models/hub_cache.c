/* hub_cache.c: the Hugging Face Hub cache's layout (hub_cache.h). */
#include "config.h"

#include "src/models/hub_cache.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "src/base/macros.h"
#include "src/base/xalloc.h"

char *hub_home_dir(void)
{
    const char *v = getenv("HF_HOME");
    if (v && *v)
        return x_strdup(v);
    const char *home = getenv("HOME");
    return x_asprintf("%s/.cache/huggingface", home && *home ? home : ".");
}

char *hub_cache_dir(void)
{
    const char *v = getenv("HF_HUB_CACHE");
    if (v && *v)
        return x_strdup(v);
    char *home = hub_home_dir();
    char *dir = x_asprintf("%s/hub", home);
    free(home);
    return dir;
}

static bool part_valid(const char *s, size_t n)
{
    if (n == 0 || n > 96 || s[0] == '.' || s[0] == '-')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
        if (i > 0 && ((c == '.' && s[i - 1] == '.') || (c == '-' && s[i - 1] == '-')))
            return false; /* ".." and the cache's "--" separator */
    }
    return true;
}

bool hub_repo_id_valid(const char *id)
{
    const char *slash = strchr(id, '/');
    return slash && part_valid(id, (size_t)(slash - id)) &&
           part_valid(slash + 1, strlen(slash + 1));
}

bool hub_known_repo(const char *name, char *repo, size_t size)
{
    static const char *const sizes[][2] = {
        {"270m", "270M"}, {"450m", "450M"}, {"1.1b", "1_1B"}, {"3b", "3B"}};
    for (size_t i = 0; i < ARRAY_LEN(sizes); i++) {
        size_t n = strlen(sizes[i][0]);
        if (strncasecmp(name, sizes[i][0], n) != 0)
            continue;
        if (name[n] == '\0') {
            snprintf(repo, size, "apple/OpenELM-%s", sizes[i][1]);
            return true;
        }
        if (strcasecmp(name + n, "-instruct") == 0) {
            snprintf(repo, size, "apple/OpenELM-%s-Instruct", sizes[i][1]);
            return true;
        }
    }
    return false;
}

char *hub_repo_dir(const char *cache, const char *id)
{
    const char *slash = strchr(id, '/');
    return x_asprintf("%s/models--%.*s--%s", cache, (int)(slash - id), id, slash + 1);
}

bool hub_repo_id_of_dir(const char *dirname, char *id, size_t size)
{
    if (strncmp(dirname, "models--", 8) != 0)
        return false;
    const char *owner = dirname + 8;
    const char *sep = strstr(owner, "--");
    if (!sep || (size_t)snprintf(id, size, "%.*s/%s", (int)(sep - owner), owner, sep + 2) >= size)
        return false;
    return hub_repo_id_valid(id);
}

/* In a snapshot folder, the GGUF elmchat pull --quantize wrote beside the
 * download (elmchat-q8_0.gguf first, then the other types): path becomes
 * it.  false (path unchanged) when there is none. */
static bool hub_snapshot_model(char *path, size_t path_size)
{
    static const char *const types[] = {"q8_0", "q6_k", "q5_k", "q4_k", "q4_0", "f16", "bf16"};
    for (size_t i = 0; i < ARRAY_LEN(types); i++) {
        char *p = x_asprintf("%s/elmchat-%s.gguf", path, types[i]);
        struct stat st;
        bool there = stat(p, &st) == 0 && S_ISREG(st.st_mode) && strlen(p) < path_size;
        if (there)
            snprintf(path, path_size, "%s", p);
        free(p);
        if (there)
            return true;
    }
    return false;
}

bool hub_cache_find(const char *id, char *path, size_t path_size)
{
    if (!hub_repo_id_valid(id))
        return false;
    char *cache = hub_cache_dir();
    char *dir = hub_repo_dir(cache, id);
    free(cache);
    char ref[128] = "";
    char *refs = x_asprintf("%s/refs/main", dir);
    FILE *f = fopen(refs, "r");
    if (f) {
        if (fgets(ref, sizeof ref, f))
            ref[strcspn(ref, "\r\n")] = '\0';
        fclose(f);
    }
    free(refs);
    bool found = false;
    struct stat st;
    if (*ref && !strchr(ref, '/') && ref[0] != '.')
        found = (size_t)snprintf(path, path_size, "%s/snapshots/%s", dir, ref) < path_size &&
                stat(path, &st) == 0;
    if (!found) { /* no refs/main: the snapshot written last */
        char *snaps = x_asprintf("%s/snapshots", dir);
        DIR *d = opendir(snaps);
        time_t best = 0;
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char *p = x_asprintf("%s/%s", snaps, e->d_name);
            if (stat(p, &st) == 0 && S_ISDIR(st.st_mode) && st.st_mtime >= best &&
                strlen(p) < path_size) {
                best = st.st_mtime;
                snprintf(path, path_size, "%s", p);
                found = true;
            }
            free(p);
        }
        if (d)
            closedir(d);
        free(snaps);
    }
    free(dir);
    if (found)
        hub_snapshot_model(path, path_size);
    return found;
}

bool hub_label_of_path(const char *path, char *out, size_t size)
{
    const char *m = NULL;
    for (const char *p = strstr(path, "/models--"); p; p = strstr(p + 1, "/models--"))
        m = p;
    if (!m)
        return false;
    const char *snap = strstr(m, "/snapshots/");
    const char *sep = strstr(m + 9, "--");
    if (!snap || !sep || sep > snap)
        return false;
    const char *name = sep + 2;
    const char *q = strstr(snap, "/elmchat-");
    size_t ql = 0;
    if (q) {
        q += 9;
        ql = strlen(q);
        if (ql > 5 && strcmp(q + ql - 5, ".gguf") == 0)
            ql -= 5;
    }
    snprintf(out, size, "%.*s%s%.*s", (int)(snap - name), name, q ? "-" : "", (int)ql, q ? q : "");
    return true;
}

/* OWNER/NAME of the last "/models--OWNER--NAME/snapshots/" in path. */
static bool repo_id_in(const char *path, char *id, size_t size)
{
    const char *m = NULL;
    for (const char *p = strstr(path, "/models--"); p; p = strstr(p + 1, "/models--"))
        m = p;
    if (!m)
        return false;
    const char *snap = strstr(m, "/snapshots/");
    if (!snap)
        return false;
    char dir[256];
    if ((size_t)(snap - m - 1) >= sizeof dir)
        return false;
    snprintf(dir, sizeof dir, "%.*s", (int)(snap - m - 1), m + 1);
    return hub_repo_id_of_dir(dir, id, size);
}

bool hub_repo_id_of_path(const char *path, char *id, size_t size)
{
    if (repo_id_in(path, id, size))
        return true;
    char real[PATH_MAX];
    return realpath(path, real) && repo_id_in(real, id, size);
}
