/* template_find.c: templates by name (the user's folder first, then the
 * installed or the build tree's prompts/), the list of names, and the
 * template that goes with a model name. */
#include "config.h"

#include "src/template/template.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "src/models/hub_cache.h"
#include "src/models/model_find.h"
#include "src/store/paths.h"
#include "src/base/xalloc.h"

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

/* "instruct" anywhere in s[0..len), any case. */
static bool says_instruct(const char *s, size_t len)
{
    for (size_t i = 0; i + 8 <= len; i++)
        if (strncasecmp(s + i, "instruct", 8) == 0)
            return true;
    return false;
}

/* A commit id (what pull --quantize once wrote as a snapshot's name) says
 * nothing about the model. */
static bool is_commit_id(const char *s)
{
    size_t n = strspn(s, "0123456789abcdef");
    return n >= 7 && s[n] == '\0';
}

/* Which of our templates a Jinja chat template's markers are. */
static const char *template_of_jinja(const char *jinja)
{
    if (strstr(jinja, "<|user|>") && strstr(jinja, "<|assistant|>"))
        return "openelm-instruct";
    if (strstr(jinja, "<|im_start|>"))
        return "chatml";
    if (strstr(jinja, "[INST]"))
        return "llama-2-chat";
    return NULL;
}

#define WHY(...) (why_size ? (void)snprintf(why, why_size, __VA_ARGS__) : (void)0)

const char *template_for_model(const char *model, char *why, size_t why_size)
{
    return template_for_model_named(model, NULL, why, why_size);
}

const char *template_for_model_named(const char *model, const char *server_name, char *why,
                                     size_t why_size)
{
    if (!model || !*model) {
        WHY("default (no model)");
        return "plain";
    }
    if (model_is_server(model) && server_name && *server_name) {
        /* what the server says its model is: the name, as step 3 below */
        bool instruct = says_instruct(server_name, strlen(server_name));
        WHY("the server's model %s%s", server_name, instruct ? "" : ", not an Instruct model");
        return instruct ? "openelm-instruct" : "plain";
    }
    if (model_is_server(model)) {
        WHY("default for a llama-server (its model is not known here: -t openelm-instruct for an "
            "Instruct one)");
        return "plain";
    }
    const char *tpl = NULL;
    struct elm_model_about about;
    char err[256];
    bool have_about = elm_model_about(model, &about, err, sizeof err) == ELM_OK;
    /* 1. the model's own chat template, when it is one of ours */
    if (have_about && about.chat_template && (tpl = template_of_jinja(about.chat_template))) {
        WHY("the model's %s", about.chat_template_from);
        goto out;
    }
    /* 2. the repo it came from, in the Hugging Face cache's layout (the
     *    folder itself is named for a commit) */
    char id[256];
    if (hub_repo_id_of_path(model, id, sizeof id)) {
        bool instruct = says_instruct(id, strlen(id));
        tpl = instruct ? "openelm-instruct" : "plain";
        WHY("repo id %s%s", id, instruct ? "" : ", not an Instruct model");
        goto out;
    }
    /* 3. the name the model gives itself */
    if (have_about && (about.finetune[0] || (about.name[0] && !is_commit_id(about.name)))) {
        if (says_instruct(about.finetune, strlen(about.finetune))) {
            tpl = "openelm-instruct";
            WHY("general.finetune %s", about.finetune);
        } else if (about.name[0] && !is_commit_id(about.name)) {
            bool instruct = says_instruct(about.name, strlen(about.name));
            tpl = instruct ? "openelm-instruct" : "plain";
            WHY("%s %s%s", about.name_from, about.name,
                instruct ? "" : ", not an Instruct model");
        } else {
            tpl = "plain";
            WHY("general.finetune %s, not an Instruct model", about.finetune);
        }
        goto out;
    }
    /* 4. only then its file or folder name, ignoring trailing slashes */
    size_t len = strlen(model);
    while (len > 1 && model[len - 1] == '/')
        len--;
    size_t start = len;
    while (start > 0 && model[start - 1] != '/')
        start--;
    bool instruct = says_instruct(model + start, len - start);
    tpl = instruct ? "openelm-instruct" : "plain";
    WHY("the name %.*s; %s", (int)(len - start), model + start,
        instruct ? "the model says nothing of itself" : "nothing says it is an Instruct model");
out:
    if (have_about)
        elm_model_about_fini(&about);
    return tpl;
}

const char *template_default_for_model(const char *model)
{
    return template_for_model(model, NULL, 0);
}
