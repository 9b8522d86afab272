/* template_load.c: a template file (libyaml) into struct template, with
 * FILE:LINE:COLUMN errors; sampling defaults (also read by sessions). */
#include "config.h"

#include "src/template/template.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/strbuf.h"
#include "src/template/template_impl.h"
#include "src/base/xalloc.h"
#include "src/store/yamldoc.h"


void template_free(struct template *tpl)
{
    if (!tpl)
        return;
    free(tpl->name);
    free(tpl->description);
    free(tpl->path);
    free(tpl->prefix);
    for (int i = 0; i < ROLE_COUNT; i++)
        free(tpl->turn[i]);
    free(tpl->user_after_system);
    free(tpl->generation_prompt);
    free(tpl->default_system);
    for (size_t i = 0; i < tpl->n_stop; i++)
        free(tpl->stop[i]);
    free(tpl->stop);
    free(tpl);
}

/* A template string: placeholders checked against `allowed` (bit per seg
 * kind); content_needed: exactly one {content}. */
static char *tpl_string(struct ydoc *d, yaml_node_t *n, const char *what, unsigned allowed,
                        bool content_needed)
{
    char *s = ydoc_strdup(d, n, what);
    if (!s)
        return NULL;
    struct count_sink c = {{tpl_count_fn}, {0}};
    const char *why;
    const char *bad = tpl_scan(s, &c.base, &why);
    if (bad) {
        size_t chars = 0;
        for (const char *q = s; q < bad; q++)
            chars += ((unsigned char)*q & 0xC0) != 0x80;
        int show = (int)strcspn(bad, "}") + (bad[strcspn(bad, "}")] ? 1 : 0);
        if (show > 40)
            show = 40;
        ydoc_fail_in(d, n, chars, "%s: %s: '%.*s'", what, why, show, bad);
        free(s);
        return NULL;
    }
    for (int k = SEG_BOS; k <= SEG_CONTENT; k++) {
        if (c.n[k] && !(allowed & (1u << k))) {
            static const char *const names[] = {"", "{bos}", "{eos}", "{content}"};
            ydoc_fail(d, n, "%s: %s is not allowed here", what, names[k]);
            free(s);
            return NULL;
        }
    }
    if (content_needed && c.n[SEG_CONTENT] != 1) {
        ydoc_fail(d, n, "%s: needs exactly one {content} (found %d)", what, c.n[SEG_CONTENT]);
        free(s);
        return NULL;
    }
    return s;
}

#define ALLOW_SPECIAL ((1u << SEG_BOS) | (1u << SEG_EOS))
#define ALLOW_ALL (ALLOW_SPECIAL | (1u << SEG_CONTENT))

static bool load_role(struct ydoc *d, struct template *tpl, enum role role, yaml_node_t *n)
{
    char what[64];
    snprintf(what, sizeof what, "roles.%s", role_name(role));
    if (!ydoc_expect(d, n, YAML_MAPPING_NODE, what) || !ydoc_check_keys(d, n))
        return false;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        const char *key = ydoc_key(d, p);
        yaml_node_t *v = ydoc_node(d, p->value);
        snprintf(what, sizeof what, "roles.%s.%s", role_name(role), key);
        if (strcmp(key, "turn") == 0) {
            if (!(tpl->turn[role] = tpl_string(d, v, what, ALLOW_ALL, true)))
                return false;
        } else if (strcmp(key, "always") == 0 && role == ROLE_SYSTEM) {
            if (!ydoc_bool(d, v, what, &tpl->system_always))
                return false;
        } else if (strcmp(key, "after_system") == 0 && role == ROLE_USER) {
            if (!(tpl->user_after_system = tpl_string(d, v, what, ALLOW_ALL, true)))
                return false;
        } else {
            return ydoc_fail(d, ydoc_node(d, p->key), "unknown key '%s' in roles.%s (known: turn%s)",
                             key, role_name(role),
                             role == ROLE_SYSTEM ? ", always"
                             : role == ROLE_USER ? ", after_system" : "");
        }
    }
    if (!tpl->turn[role])
        return ydoc_fail(d, n, "roles.%s: missing key 'turn'", role_name(role));
    return true;
}

static bool load_roles(struct ydoc *d, struct template *tpl, yaml_node_t *n)
{
    if (!ydoc_expect(d, n, YAML_MAPPING_NODE, "roles") || !ydoc_check_keys(d, n))
        return false;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        const char *key = ydoc_key(d, p);
        enum role role;
        if (!role_parse(key, &role))
            return ydoc_fail(d, ydoc_node(d, p->key),
                             "unknown role '%s' (known: system, user, assistant)", key);
        if (!load_role(d, tpl, role, ydoc_node(d, p->value)))
            return false;
    }
    for (int r = 0; r < ROLE_COUNT; r++)
        if (!tpl->turn[r])
            return ydoc_fail(d, n, "missing role '%s' in roles", role_name((enum role)r));
    return true;
}

/* `stop`: a string or a list; "{eos}" means the EOS id, other entries are
 * text (with {{ and }} for braces). */
static bool load_stop(struct ydoc *d, struct template *tpl, yaml_node_t *n)
{
    size_t count;
    if (n->type == YAML_SEQUENCE_NODE)
        count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    else if (n->type == YAML_SCALAR_NODE)
        count = 1;
    else
        return ydoc_fail(d, n, "stop: expected a string or a list of strings");
    tpl->stop_eos = false;
    tpl->stop = x_calloc(count + 1, sizeof *tpl->stop);
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *item =
            n->type == YAML_SCALAR_NODE ? n : ydoc_node(d, n->data.sequence.items.start[i]);
        const char *s;
        size_t len;
        if (!ydoc_str(d, item, "stop", &s, &len))
            return false;
        if (strcmp(s, "{eos}") == 0) {
            tpl->stop_eos = true;
            continue;
        }
        if (len == 0)
            return ydoc_fail(d, item, "stop: an empty stop string would stop at once");
        struct count_sink c = {{tpl_count_fn}, {0}};
        const char *why;
        if (tpl_scan(s, &c.base, &why))
            return ydoc_fail(d, item, "stop: %s", why);
        if (c.n[SEG_BOS] || c.n[SEG_EOS] || c.n[SEG_CONTENT])
            return ydoc_fail(d, item, "stop: a placeholder must be an entry of its own "
                             "(\"{eos}\")");
        struct sbuf b = {0};
        tpl_add_unescaped(&b, s, len);
        tpl->stop[tpl->n_stop++] = b.data;
    }
    return true;
}

/* The sampling keys shared by templates, sessions and the config file. */
bool sampling_load(struct ydoc *d, yaml_node_t *n, struct sampling *s);
bool sampling_load(struct ydoc *d, yaml_node_t *n, struct sampling *s)
{
    if (!ydoc_expect(d, n, YAML_MAPPING_NODE, "sampling") || !ydoc_check_keys(d, n))
        return false;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        const char *key = ydoc_key(d, p);
        yaml_node_t *v = ydoc_node(d, p->value);
        char what[64];
        snprintf(what, sizeof what, "sampling.%s", key);
        double f;
        long l;
        if (strcmp(key, "temperature") == 0) {
            if (!ydoc_float(d, v, what, 0, 100, &f))
                return false;
            s->p.temperature = (float)f;
            s->set |= ELM_SAMPLING_TEMPERATURE;
        } else if (strcmp(key, "top_k") == 0) {
            if (!ydoc_int(d, v, what, 0, 1 << 30, &l))
                return false;
            s->p.top_k = (int)l;
            s->set |= ELM_SAMPLING_TOP_K;
        } else if (strcmp(key, "top_p") == 0) {
            if (!ydoc_float(d, v, what, 0, 1, &f))
                return false;
            s->p.top_p = (float)f;
            s->set |= ELM_SAMPLING_TOP_P;
        } else if (strcmp(key, "min_p") == 0) {
            if (!ydoc_float(d, v, what, 0, 1, &f))
                return false;
            s->p.min_p = (float)f;
            s->set |= ELM_SAMPLING_MIN_P;
        } else if (strcmp(key, "repeat_penalty") == 0) {
            if (!ydoc_float(d, v, what, 0.01, 100, &f))
                return false;
            s->p.repeat_penalty = (float)f;
            s->set |= ELM_SAMPLING_REPEAT_PENALTY;
        } else if (strcmp(key, "repeat_last_n") == 0) {
            if (!ydoc_int(d, v, what, -1, 1 << 30, &l))
                return false;
            s->p.repeat_last_n = (int)l;
            s->set |= ELM_SAMPLING_REPEAT_LAST_N;
        } else if (strcmp(key, "seed") == 0) {
            if (!ydoc_int(d, v, what, 0, 0x7fffffffffffffffL, &l))
                return false;
            s->p.seed = (uint64_t)l;
            s->set |= SAMPLING_SEED;
        } else if (strcmp(key, "max_tokens") == 0) {
            if (!ydoc_int(d, v, what, 0, 1 << 20, &l))
                return false;
            s->max_tokens = (int)l;
            s->set |= SAMPLING_MAX_TOKENS;
        } else {
            return ydoc_fail(d, ydoc_node(d, p->key),
                             "unknown key '%s' in sampling (known: temperature, top_k, top_p, "
                             "min_p, repeat_penalty, repeat_last_n, seed, max_tokens)",
                             key);
        }
    }
    return true;
}

static bool load_doc(struct ydoc *d, struct template *tpl)
{
    yaml_node_t *root = ydoc_root(d);
    if (!ydoc_check_keys(d, root))
        return false;
    yaml_node_t *roles = NULL, *gp = NULL;
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        const char *key = ydoc_key(d, p);
        yaml_node_t *v = ydoc_node(d, p->value);
        if (strcmp(key, "name") == 0) {
            if (!(tpl->name = ydoc_strdup(d, v, "name")))
                return false;
            if (!*tpl->name || strchr(tpl->name, '/'))
                return ydoc_fail(d, v, "name: must be non-empty and without '/'");
        } else if (strcmp(key, "description") == 0) {
            if (!(tpl->description = ydoc_strdup(d, v, "description")))
                return false;
        } else if (strcmp(key, "prefix") == 0) {
            if (!(tpl->prefix = tpl_string(d, v, "prefix", ALLOW_SPECIAL, false)))
                return false;
        } else if (strcmp(key, "roles") == 0) {
            roles = v;
        } else if (strcmp(key, "generation_prompt") == 0) {
            gp = v;
            if (!(tpl->generation_prompt =
                      tpl_string(d, v, "generation_prompt", ALLOW_SPECIAL, false)))
                return false;
        } else if (strcmp(key, "stop") == 0) {
            if (!load_stop(d, tpl, v))
                return false;
        } else if (strcmp(key, "default_system") == 0) {
            if (!(tpl->default_system = ydoc_strdup(d, v, "default_system")))
                return false;
        } else if (strcmp(key, "sampling") == 0) {
            if (!sampling_load(d, v, &tpl->sampling))
                return false;
        } else {
            return ydoc_fail(d, ydoc_node(d, p->key),
                             "unknown key '%s' (known: name, description, prefix, roles, "
                             "generation_prompt, stop, default_system, sampling)",
                             key);
        }
    }
    if (!tpl->name)
        return ydoc_fail(d, root, "missing key 'name'");
    if (!roles)
        return ydoc_fail(d, root, "missing key 'roles'");
    if (!load_roles(d, tpl, roles))
        return false;
    if (!gp)
        return ydoc_fail(d, root, "missing key 'generation_prompt'");
    /* The reply must read GENERATION_PROMPT LEAD {content} CLOSE, so that a
     * generated reply and a re-rendered one line up. */
    const char *at = tpl->turn[ROLE_ASSISTANT];
    size_t gl = strlen(tpl->generation_prompt);
    const char *content = strstr(at, "{content}");
    if (strncmp(at, tpl->generation_prompt, gl) != 0 || !content || content < at + gl)
        return ydoc_fail(d, gp,
                         "generation_prompt: roles.assistant.turn must start with the "
                         "generation prompt followed by {content}");
    for (const char *c = at + gl; c < content; c++)
        if (*c == '{' || *c == '}')
            return ydoc_fail(d, gp,
                             "generation_prompt: roles.assistant.turn has placeholders between "
                             "the generation prompt and {content}");
    if (!tpl->prefix)
        tpl->prefix = x_strdup("");
    if (!tpl->description)
        tpl->description = x_strdup("");
    if (!tpl->stop) {
        tpl->stop_eos = true;
        tpl->stop = x_calloc(1, sizeof *tpl->stop);
    }
    return true;
}

struct template *template_load_file(const char *path, char *err, size_t err_size)
{
    struct ydoc d;
    struct template *tpl = NULL;
    if (ydoc_load_file(&d, path, TEMPLATE_MAX_FILE_SIZE, err, err_size)) {
        tpl = x_calloc(1, sizeof *tpl);
        tpl->sampling.p = elm_sampler_default_params();
        if (!load_doc(&d, tpl)) {
            template_free(tpl);
            tpl = NULL;
        } else {
            tpl->path = x_strdup(path);
        }
    }
    ydoc_fini(&d);
    return tpl;
}
