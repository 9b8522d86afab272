/* config_file.c: config.yaml (see config_file.h for the format). */
#include "config.h"

#include "src/config/config_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/base/options.h"
#include "src/models/model_find.h"
#include "src/models/pull_on_demand.h"
#include "src/store/paths.h"
#include "src/base/xalloc.h"
#include "src/store/yamldoc.h"

/* In template.c: the `sampling:` mapping shared by all our files. */
bool sampling_load(struct ydoc *d, yaml_node_t *n, struct sampling *s);

const char *context_policy_name(enum context_policy p)
{
    return p == CONTEXT_STOP ? "stop" : "drop-oldest";
}

void config_init(struct config *c)
{
    memset(c, 0, sizeof *c);
    c->sampling.p = elm_sampler_default_params();
    c->policy = CONTEXT_DROP_OLDEST;
    c->shell_timeout = 30;
}

void config_fini(struct config *c)
{
    free(c->path);
    free(c->default_model);
    free(c->pull_quantize);
    free(c->template_name);
    for (size_t i = 0; i < c->n_aliases; i++) {
        free(c->aliases[i].name);
        free(c->aliases[i].path);
        free(c->aliases[i].draft);
        free(c->aliases[i].tokenizer);
    }
    free(c->aliases);
    config_init(c);
}

const char *config_alias_draft(const struct config *c, const char *name)
{
    for (size_t i = 0; name && i < c->n_aliases; i++)
        if (strcmp(c->aliases[i].name, name) == 0)
            return c->aliases[i].draft;
    return NULL;
}

const char *config_alias_tokenizer(const struct config *c, const char *name)
{
    for (size_t i = 0; name && i < c->n_aliases; i++)
        if (strcmp(c->aliases[i].name, name) == 0)
            return c->aliases[i].tokenizer;
    return NULL;
}

const char *config_alias(const struct config *c, const char *name)
{
    for (size_t i = 0; i < c->n_aliases; i++)
        if (strcmp(c->aliases[i].name, name) == 0)
            return c->aliases[i].path;
    return NULL;
}

bool config_find_model(const struct config *c, const char *arg, bool pull, bool no_pull,
                       const struct pull_ui *ui, char *path, size_t size, char *err,
                       size_t err_size)
{
    const char *alias = arg ? config_alias(c, arg) : NULL;
    const char *name = alias ? alias : arg;
    if (!pull && !no_pull)
        return model_resolve(name, path, size, err, err_size);
    return model_resolve_or_pull(name, !no_pull, c->pull_quantize, ui, path, size, err, err_size);
}

static bool load_models(struct ydoc *d, yaml_node_t *n, struct config *c)
{
    if (!ydoc_expect(d, n, YAML_MAPPING_NODE, "models") || !ydoc_check_keys(d, n))
        return false;
    size_t count = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    c->aliases = x_calloc(count ? count : 1, sizeof *c->aliases);
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        const char *key = ydoc_key(d, p);
        if (!*key || strchr(key, '/'))
            return ydoc_fail(d, ydoc_node(d, p->key),
                             "models: an alias must be a non-empty name without '/'");
        char what[300];
        snprintf(what, sizeof what, "models.%s", key);
        yaml_node_t *v = ydoc_node(d, p->value);
        char *path = NULL, *draft = NULL, *tokenizer = NULL;
        if (v->type == YAML_MAPPING_NODE) {
            /* {path: ..., draft: NAME} */
            if (!ydoc_check_keys(d, v))
                return false;
            for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top;
                 q++) {
                const char *k2 = ydoc_key(d, q);
                char w2[340];
                snprintf(w2, sizeof w2, "%s.%s", what, k2);
                char **dst = strcmp(k2, "path") == 0        ? &path
                             : strcmp(k2, "draft") == 0     ? &draft
                             : strcmp(k2, "tokenizer") == 0 ? &tokenizer
                                                            : NULL;
                if (!dst) {
                    free(path), free(draft), free(tokenizer);
                    return ydoc_fail(d, ydoc_node(d, q->key),
                                 "%s: unknown key (path, draft, tokenizer)", w2);
                }
                free(*dst);
                if (!(*dst = ydoc_strdup(d, ydoc_node(d, q->value), w2))) {
                    free(path), free(draft), free(tokenizer);
                    return false;
                }
            }
            if (!path) {
                free(draft), free(tokenizer);
                return ydoc_fail(d, v, "%s: missing key 'path'", what);
            }
        } else {
            path = ydoc_strdup(d, v, what);
        }
        if (!path)
            return false;
        if (!*path) {
            free(path), free(draft), free(tokenizer);
            return ydoc_fail(d, ydoc_node(d, p->value), "%s: empty path", what);
        }
        c->aliases[c->n_aliases].draft = draft;
        c->aliases[c->n_aliases].tokenizer = tokenizer;
        c->aliases[c->n_aliases].name = x_strdup(key);
        c->aliases[c->n_aliases++].path = path;
    }
    return true;
}

static bool load_pull_quantize(struct ydoc *d, yaml_node_t *n, struct config *c)
{
    char *v = ydoc_strdup(d, n, "pull_quantize");
    enum elm_dtype t;
    if (!v)
        return false;
    if (!cli_parse_dtype(v, &t) || t == ELM_DTYPE_F32) {
        free(v);
        return ydoc_fail(d, n, "pull_quantize: unknown type (q8_0, q4_k, q4_0, q5_k, q6_k, "
                               "f16, bf16)");
    }
    c->pull_quantize = v;
    return true;
}

static bool load_context(struct ydoc *d, yaml_node_t *n, struct config *c)
{
    if (!ydoc_expect(d, n, YAML_MAPPING_NODE, "context") || !ydoc_check_keys(d, n))
        return false;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        const char *key = ydoc_key(d, p);
        yaml_node_t *v = ydoc_node(d, p->value);
        if (strcmp(key, "policy") == 0) {
            const char *s;
            if (!ydoc_str(d, v, "context.policy", &s, NULL))
                return false;
            if (strcmp(s, "drop-oldest") == 0)
                c->policy = CONTEXT_DROP_OLDEST;
            else if (strcmp(s, "stop") == 0)
                c->policy = CONTEXT_STOP;
            else
                return ydoc_fail(d, v, "context.policy: expected drop-oldest or stop");
        } else if (strcmp(key, "size") == 0) {
            long l;
            if (!ydoc_int(d, v, "context.size", 0, 1 << 20, &l))
                return false;
            c->n_ctx = (int)l;
        } else {
            return ydoc_fail(d, ydoc_node(d, p->key),
                             "unknown key '%s' in context (known: policy, size)", key);
        }
    }
    return true;
}

/* ui: inline | full: the front end plain `elmchat` starts. */
static bool load_ui(struct ydoc *d, yaml_node_t *n, struct config *c)
{
    const char *s;
    if (!ydoc_str(d, n, "ui", &s, NULL))
        return false;
    if (strcmp(s, "inline") == 0)
        c->ui_inline = true;
    else if (strcmp(s, "full") == 0)
        c->ui_inline = false;
    else
        return ydoc_fail(d, n, "ui: expected inline or full");
    return true;
}

static bool load_doc(struct ydoc *d, struct config *c)
{
    yaml_node_t *root = ydoc_root(d);
    if (!ydoc_check_keys(d, root))
        return false;
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        const char *key = ydoc_key(d, p);
        yaml_node_t *v = ydoc_node(d, p->value);
        bool okay;
        if (strcmp(key, "default_model") == 0)
            okay = (c->default_model = ydoc_strdup(d, v, "default_model")) != NULL;
        else if (strcmp(key, "template") == 0)
            okay = (c->template_name = ydoc_strdup(d, v, "template")) != NULL;
        else if (strcmp(key, "models") == 0)
            okay = load_models(d, v, c);
        else if (strcmp(key, "sampling") == 0)
            okay = sampling_load(d, v, &c->sampling);
        else if (strcmp(key, "context") == 0)
            okay = load_context(d, v, c);
        else if (strcmp(key, "pull_quantize") == 0)
            okay = load_pull_quantize(d, v, c);
        else if (strcmp(key, "ui") == 0)
            okay = load_ui(d, v, c);
        else if (strcmp(key, "shell_confirm") == 0) {
            bool b = true;
            okay = ydoc_bool(d, v, "shell_confirm", &b);
            c->shell_no_confirm = !b;
        } else if (strcmp(key, "shell_timeout") == 0) {
            long l = 0;
            okay = ydoc_int(d, v, "shell_timeout", 1, 3600, &l);
            c->shell_timeout = (int)l;
        } else
            okay = ydoc_fail(d, ydoc_node(d, p->key),
                             "unknown key '%s' (known: default_model, template, models, "
                             "sampling, context, pull_quantize, ui, shell_confirm, "
                             "shell_timeout)",
                             key);
        if (!okay)
            return false;
    }
    return true;
}

int config_load(struct config *c, const char *path, char *err, size_t err_size)
{
    char *own = path ? NULL : paths_dir(PATHS_CONFIG, "config.yaml");
    const char *file = path ? path : own;
    struct stat st;
    if (stat(file, &st) < 0 && errno == ENOENT) {
        free(own);
        return 0;
    }
    struct config tmp;
    config_init(&tmp);
    struct ydoc d;
    bool okay = ydoc_load_file(&d, file, CONFIG_MAX_FILE_SIZE, err, err_size) && load_doc(&d, &tmp);
    ydoc_fini(&d);
    if (okay) {
        tmp.path = x_strdup(file);
        config_fini(c);
        *c = tmp;
    } else {
        config_fini(&tmp);
    }
    free(own);
    return okay ? 0 : ELM_E_FORMAT;
}
