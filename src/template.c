/* template.c: chat templates: loading (libyaml) and rendering to token ids. */
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
#include "src/strbuf.h"
#include "src/xalloc.h"
#include "src/yamldoc.h"

/* ------------------------------------------------------------ token ids */

void idvec_push(struct idvec *a, int32_t id)
{
    idvec_append(a, &id, 1);
}

void idvec_append(struct idvec *a, const int32_t *ids, size_t n)
{
    if (a->n + n > a->cap) {
        size_t cap = a->cap ? a->cap : 64;
        while (cap < a->n + n)
            cap *= 2;
        a->v = x_reallocarray(a->v, cap, sizeof *a->v);
        a->cap = cap;
    }
    if (n)
        memcpy(a->v + a->n, ids, n * sizeof *ids);
    a->n += n;
}

void idvec_clear(struct idvec *a)
{
    a->n = 0;
}

void idvec_fini(struct idvec *a)
{
    free(a->v);
    a->v = NULL;
    a->n = a->cap = 0;
}

/* ---------------------------------------------------------------- roles */

static const char *const role_names[ROLE_COUNT] = {"system", "user", "assistant"};

const char *role_name(enum role role)
{
    return (unsigned)role < ROLE_COUNT ? role_names[role] : "?";
}

bool role_parse(const char *s, enum role *out)
{
    for (int i = 0; i < ROLE_COUNT; i++)
        if (strcmp(s, role_names[i]) == 0) {
            *out = (enum role)i;
            return true;
        }
    return false;
}

void sampling_apply(const struct sampling *s, struct elm_sampler_params *p, int *max_tokens)
{
    if (s->set & SAMPLING_TEMPERATURE)
        p->temperature = s->p.temperature;
    if (s->set & SAMPLING_TOP_K)
        p->top_k = s->p.top_k;
    if (s->set & SAMPLING_TOP_P)
        p->top_p = s->p.top_p;
    if (s->set & SAMPLING_MIN_P)
        p->min_p = s->p.min_p;
    if (s->set & SAMPLING_REPEAT_PENALTY)
        p->repeat_penalty = s->p.repeat_penalty;
    if (s->set & SAMPLING_REPEAT_LAST_N)
        p->repeat_last_n = s->p.repeat_last_n;
    if (s->set & SAMPLING_SEED)
        p->seed = s->p.seed;
    if ((s->set & SAMPLING_MAX_TOKENS) && max_tokens)
        *max_tokens = s->max_tokens;
}

/* ---------------------------------------------------------- placeholders */

enum seg { SEG_TEXT, SEG_BOS, SEG_EOS, SEG_CONTENT };

/* Receives the pieces of a template string in order. */
struct seg_sink {
    void (*fn)(struct seg_sink *sink, enum seg kind, const char *text, size_t len);
};

/* Split s into text and placeholders.  Returns NULL when s is well formed,
 * else a pointer to the offending brace (and *why says what is wrong). */
static const char *scan(const char *s, struct seg_sink *sink, const char **why)
{
    const char *text = s;
    const char *p = s;
    while (*p) {
        if (p[0] == '{' && p[1] == '{') {
            if (sink) {
                sink->fn(sink, SEG_TEXT, text, (size_t)(p - text) + 1);
            }
            p += 2;
            text = p;
            continue;
        }
        if (p[0] == '}' && p[1] == '}') {
            if (sink)
                sink->fn(sink, SEG_TEXT, text, (size_t)(p - text) + 1);
            p += 2;
            text = p;
            continue;
        }
        if (*p == '}') {
            *why = "'}' without '{' (write '}}' for a brace)";
            return p;
        }
        if (*p != '{') {
            p++;
            continue;
        }
        const char *close = strchr(p, '}');
        if (!close) {
            *why = "'{' without '}' (write '{{' for a brace)";
            return p;
        }
        size_t n = (size_t)(close - p - 1);
        enum seg kind;
        if (n == 7 && memcmp(p + 1, "content", 7) == 0)
            kind = SEG_CONTENT;
        else if (n == 3 && memcmp(p + 1, "bos", 3) == 0)
            kind = SEG_BOS;
        else if (n == 3 && memcmp(p + 1, "eos", 3) == 0)
            kind = SEG_EOS;
        else {
            *why = "unknown placeholder (known: {content}, {bos}, {eos})";
            return p;
        }
        if (sink) {
            if (p > text)
                sink->fn(sink, SEG_TEXT, text, (size_t)(p - text));
            sink->fn(sink, kind, NULL, 0);
        }
        p = close + 1;
        text = p;
    }
    if (sink && p > text)
        sink->fn(sink, SEG_TEXT, text, (size_t)(p - text));
    return NULL;
}

/* Counts placeholders, for validation. */
struct count_sink {
    struct seg_sink base;
    int n[4];
};

static void count_fn(struct seg_sink *sink, enum seg kind, const char *text, size_t len)
{
    (void)text;
    (void)len;
    ((struct count_sink *)sink)->n[kind]++;
}

/* ---------------------------------------------------------------- loading */

static void add_unescaped(struct sbuf *b, const char *s, size_t n);

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
    struct count_sink c = {{count_fn}, {0}};
    const char *why;
    const char *bad = scan(s, &c.base, &why);
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
            return ydoc_fail(d, n, "missing role '%s' in roles", role_names[r]);
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
        struct count_sink c = {{count_fn}, {0}};
        const char *why;
        if (scan(s, &c.base, &why))
            return ydoc_fail(d, item, "stop: %s", why);
        if (c.n[SEG_BOS] || c.n[SEG_EOS] || c.n[SEG_CONTENT])
            return ydoc_fail(d, item, "stop: a placeholder must be an entry of its own "
                             "(\"{eos}\")");
        struct sbuf b = {0};
        add_unescaped(&b, s, len);
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
            s->set |= SAMPLING_TEMPERATURE;
        } else if (strcmp(key, "top_k") == 0) {
            if (!ydoc_int(d, v, what, 0, 1 << 30, &l))
                return false;
            s->p.top_k = (int)l;
            s->set |= SAMPLING_TOP_K;
        } else if (strcmp(key, "top_p") == 0) {
            if (!ydoc_float(d, v, what, 0, 1, &f))
                return false;
            s->p.top_p = (float)f;
            s->set |= SAMPLING_TOP_P;
        } else if (strcmp(key, "min_p") == 0) {
            if (!ydoc_float(d, v, what, 0, 1, &f))
                return false;
            s->p.min_p = (float)f;
            s->set |= SAMPLING_MIN_P;
        } else if (strcmp(key, "repeat_penalty") == 0) {
            if (!ydoc_float(d, v, what, 0.01, 100, &f))
                return false;
            s->p.repeat_penalty = (float)f;
            s->set |= SAMPLING_REPEAT_PENALTY;
        } else if (strcmp(key, "repeat_last_n") == 0) {
            if (!ydoc_int(d, v, what, -1, 1 << 30, &l))
                return false;
            s->p.repeat_last_n = (int)l;
            s->set |= SAMPLING_REPEAT_LAST_N;
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

/* ----------------------------------------------------------------- lookup */

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

/* -------------------------------------------------------------- encoding */

/* One run: one elm_tokenize call, so it gets the dummy prefix. */
static int encode_run(const elm_tokenizer *tok, const char *s, size_t n, struct idvec *out)
{
    if (!n)
        return 0;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    elm_status rc = elm_tokenize(tok, s, n, false, &ids, &n_ids);
    if (rc != ELM_OK)
        return rc;
    idvec_append(out, ids, n_ids);
    free(ids);
    return 0;
}

/* Text that continues a run after the model's ids: its mid-text encoding
 * (template.h), without the dummy prefix.  elm_tokenize always adds the
 * prefix, so encode "\n" + text and drop enc("\n"): when enc("\n") is a
 * prefix of the result, a piece boundary lies between the two (merged
 * pieces never split again, so no piece crossed it), and the ids after it are
 * exactly the text's own segmentation with nothing before it.  With the
 * LLaMA vocabulary "\n" is a byte piece that merges with nothing, so this
 * always holds; a vocabulary where it does not falls back to a run. */
static int encode_cont(const elm_tokenizer *tok, const char *s, size_t n, struct idvec *out)
{
    if (!n)
        return 0;
    struct idvec a = {0}, b = {0};
    char *joined = x_malloc(n + 1);
    joined[0] = '\n';
    memcpy(joined + 1, s, n);
    int rc = encode_run(tok, joined, 1, &a);
    if (!rc)
        rc = encode_run(tok, joined, n + 1, &b);
    if (!rc) {
        if (b.n >= a.n && memcmp(a.v, b.v, a.n * sizeof *a.v) == 0)
            idvec_append(out, b.v + a.n, b.n - a.n);
        else
            rc = encode_run(tok, s, n, out);
    }
    free(joined);
    idvec_fini(&a);
    idvec_fini(&b);
    return rc;
}

/* A piece of a run: its start (dummy prefix) or a continuation (none). */
static int encode_piece(const elm_tokenizer *tok, const char *s, size_t n, bool cont,
                        struct idvec *out)
{
    return cont ? encode_cont(tok, s, n, out) : encode_run(tok, s, n, out);
}

/* A stored reply's tokens as the continuation of the piece `run` (encoded
 * with `cont`, see template.h).  When the join is not clean the reply is
 * still in the middle of a run: never a dummy prefix (it would decode as a
 * space the reply does not have). */
static int encode_reply(const elm_tokenizer *tok, const char *run, size_t n_run, bool cont,
                        const char *text, size_t n_text, struct idvec *out)
{
    if (!n_run)
        return encode_piece(tok, text, n_text, cont, out);
    struct idvec a = {0}, b = {0};
    char *joined = x_malloc(n_run + n_text + 1);
    memcpy(joined, run, n_run);
    memcpy(joined + n_run, text, n_text);
    int rc = encode_piece(tok, run, n_run, cont, &a);
    if (!rc)
        rc = encode_piece(tok, joined, n_run + n_text, cont, &b);
    if (!rc) {
        if (b.n >= a.n && memcmp(a.v, b.v, a.n * sizeof *a.v) == 0)
            idvec_append(out, b.v + a.n, b.n - a.n);
        else
            rc = encode_cont(tok, text, n_text, out);
    }
    free(joined);
    idvec_fini(&a);
    idvec_fini(&b);
    return rc;
}

/* The parts of the assistant turn: [gp][lead]{content}[close]. */
static const char *reply_lead(const struct template *tpl, size_t *len)
{
    const char *at = tpl->turn[ROLE_ASSISTANT] + strlen(tpl->generation_prompt);
    *len = (size_t)(strstr(at, "{content}") - at);
    return at;
}

static const char *reply_close(const struct template *tpl)
{
    return strstr(tpl->turn[ROLE_ASSISTANT], "{content}") + strlen("{content}");
}

/* CLOSE = HEAD REST: HEAD is text, REST starts at the first {bos}/{eos}
 * (or is empty).  Returns REST; *head_len is HEAD's raw length. */
static const char *close_rest(const struct template *tpl, size_t *head_len)
{
    const char *close = reply_close(tpl);
    const char *p = close;
    while (*p) {
        if ((p[0] == '{' || p[0] == '}') && p[1] == p[0]) {
            p += 2;
            continue;
        }
        if (p[0] == '{')
            break;
        p++;
    }
    *head_len = (size_t)(p - close);
    return p;
}

/* Copy a lead (plain text, only {{ }} escapes) into b. */
static void add_unescaped(struct sbuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sbuf_add(b, s + i, 1);
        if ((s[i] == '{' || s[i] == '}') && i + 1 < n && s[i + 1] == s[i])
            i++;
    }
}

/* HEAD unescaped (owned, NUL-terminated). */
static char *close_head(const struct template *tpl, size_t *len)
{
    size_t head_len;
    close_rest(tpl, &head_len);
    struct sbuf b = {0};
    sbuf_add(&b, "", 0);
    add_unescaped(&b, reply_close(tpl), head_len);
    *len = b.len;
    return b.data;
}

/* The longest stop string that begins HEAD (0: none): what a reply that
 * stopped on it has already written. */
static size_t head_stop_len(const struct template *tpl, const char *head)
{
    size_t best = 0;
    for (size_t i = 0; i < tpl->n_stop; i++) {
        size_t l = strlen(tpl->stop[i]);
        if (l > best && strncmp(head, tpl->stop[i], l) == 0)
            best = l;
    }
    return best;
}

/* The part of HEAD a stored reply counts as written by the model: a stop
 * string that begins HEAD (the model stops there and the rest is rendered,
 * as after TEMPLATE_END_STOP), else all of HEAD (written up to the EOS). */
static size_t head_model_len(const struct template *tpl, const char *head, size_t len)
{
    size_t k = head_stop_len(tpl, head);
    return k ? k : len;
}

/* -------------------------------------------------- incremental renderer */

/* Expands template strings into the renderer: text accumulates in pending,
 * a special id flushes it as one run. */
struct inc_sink {
    struct seg_sink base;
    struct template_render *r;
    struct sbuf pending; /* aliases r->pending while expanding */
    const char *content;
    struct idvec *out;
    int rc;
    int skip_until_eos; /* CLOSE after a sampled EOS: drop up to the first {eos} */
    size_t skip_text;   /* drop this many bytes of (unescaped) text first */
    bool cont;          /* as r->cont, while expanding */
};

/* tok NULL (text rendering): the LLaMA ids. */
static int32_t special_id(const elm_tokenizer *tok, enum seg kind)
{
    if (!tok)
        return kind == SEG_BOS ? 1 : 2;
    return kind == SEG_BOS ? elm_tokenizer_bos(tok) : elm_tokenizer_eos(tok);
}

static void inc_fn(struct seg_sink *sink, enum seg kind, const char *text, size_t len)
{
    struct inc_sink *s = (struct inc_sink *)sink;
    if (s->rc)
        return;
    if (s->skip_until_eos) {
        if (kind == SEG_EOS) {
            s->skip_until_eos = 0;
            s->cont = false; /* the sampled EOS ended the run */
        }
        return;
    }
    if (s->skip_text && kind == SEG_TEXT) {
        size_t k = len < s->skip_text ? len : s->skip_text;
        s->skip_text -= k;
        text += k;
        len -= k;
    }
    switch (kind) {
    case SEG_TEXT:
        sbuf_add(&s->pending, text, len);
        break;
    case SEG_CONTENT:
        sbuf_add(&s->pending, s->content, strlen(s->content));
        break;
    case SEG_BOS:
    case SEG_EOS:
        s->rc = encode_piece(s->r->tok, s->pending.data, s->pending.len, s->cont, s->out);
        if (!s->rc) {
            s->pending.len = 0;
            s->cont = false;
            idvec_push(s->out, special_id(s->r->tok, kind));
        }
        break;
    }
}

/* Expand `str` (with content) onto the renderer, pending text continuing a
 * run after the model's ids when cont; on error restore. */
static int inc_expand_cont(struct template_render *r, const char *str, const char *content,
                           bool skip_until_eos, size_t skip_text, bool cont, struct idvec *out)
{
    size_t out_n = out->n;
    struct inc_sink s = {{inc_fn}, r, {r->pending, r->n_pending, r->pending_cap},
                         content ? content : "", out, 0, skip_until_eos, skip_text, cont};
    /* Work on a copy of pending so that a failure leaves r unchanged. */
    struct sbuf copy = {0};
    sbuf_add(&copy, s.pending.data ? s.pending.data : "", s.pending.len);
    s.pending = copy;
    const char *why;
    scan(str, &s.base, &why);
    if (s.rc) {
        out->n = out_n;
        free(s.pending.data);
        return s.rc;
    }
    free(r->pending);
    r->pending = s.pending.data;
    r->n_pending = s.pending.len;
    r->pending_cap = s.pending.cap;
    r->cont = s.cont;
    return 0;
}

static int inc_expand(struct template_render *r, const char *str, const char *content,
                      struct idvec *out)
{
    return inc_expand_cont(r, str, content, false, 0, r->cont, out);
}

void template_render_init(struct template_render *r, const struct template *tpl,
                          const elm_tokenizer *tok)
{
    memset(r, 0, sizeof *r);
    r->tpl = tpl;
    r->tok = tok;
}

void template_render_fini(struct template_render *r)
{
    free(r->pending);
    free(r->run);
    memset(r, 0, sizeof *r);
}

void template_render_reset(struct template_render *r)
{
    r->state = TEMPLATE_START;
    r->n_pending = 0;
    r->n_run = 0;
    r->cont = r->run_cont = false;
}

/* The pending text left after template_render_reply: the text after the
 * last special id of CLOSE, starting a new run; when CLOSE has no special
 * id, the part of HEAD the model does not write, continuing the reply's run. */
void template_render_set_after_reply(struct template_render *r)
{
    size_t head_len;
    const char *rest = close_rest(r->tpl, &head_len);
    const char *last = NULL;
    for (const char *p = rest; (p = strchr(p, '{'));) {
        if (p[1] == '{') {
            p += 2;
            continue;
        }
        p = strchr(p, '}') + 1;
        last = p;
    }
    struct sbuf b = {r->pending, 0, r->pending_cap};
    sbuf_add(&b, "", 0);
    if (last) {
        add_unescaped(&b, last, strlen(last));
    } else {
        size_t len;
        char *head = close_head(r->tpl, &len);
        size_t k = head_model_len(r->tpl, head, len);
        sbuf_add(&b, head + k, len - k);
        free(head);
    }
    r->pending = b.data;
    r->n_pending = b.len;
    r->pending_cap = b.cap;
    r->n_run = 0;
    r->cont = !last;
    r->run_cont = false;
    r->state = TEMPLATE_AFTER_REPLY;
}

static int ensure_prefix(struct template_render *r, struct idvec *out)
{
    if (r->state != TEMPLATE_START)
        return 0;
    int rc = inc_expand(r, r->tpl->prefix, NULL, out);
    if (!rc)
        r->state = TEMPLATE_AFTER_PREFIX;
    return rc;
}

int template_render_system(struct template_render *r, const char *system, struct idvec *out)
{
    if (r->state != TEMPLATE_START)
        return ELM_E_INVALID;
    if (!system)
        system = r->tpl->default_system ? r->tpl->default_system : "";
    size_t out_n = out->n;
    int rc = ensure_prefix(r, out);
    if (rc)
        return rc;
    if (*system || r->tpl->system_always) {
        rc = inc_expand(r, r->tpl->turn[ROLE_SYSTEM], system, out);
        if (rc) {
            out->n = out_n;
            template_render_reset(r);
            return rc;
        }
        r->state = TEMPLATE_AFTER_SYSTEM;
    }
    return 0;
}

int template_render_user(struct template_render *r, const char *content, struct idvec *out)
{
    if (r->state == TEMPLATE_IN_REPLY)
        return ELM_E_INVALID;
    enum template_state old = r->state;
    size_t out_n = out->n;
    int rc = ensure_prefix(r, out);
    if (rc)
        return rc;
    const char *turn = old == TEMPLATE_AFTER_SYSTEM && r->tpl->user_after_system
                           ? r->tpl->user_after_system
                           : r->tpl->turn[ROLE_USER];
    rc = inc_expand(r, turn, content, out);
    if (rc) {
        out->n = out_n;
        r->state = old;
        return rc;
    }
    r->state = TEMPLATE_AFTER_USER;
    return 0;
}

int template_render_generation_prompt(struct template_render *r, struct idvec *out)
{
    if (r->state == TEMPLATE_IN_REPLY)
        return ELM_E_INVALID;
    enum template_state old = r->state;
    size_t out_n = out->n;
    int rc = ensure_prefix(r, out);
    if (!rc)
        rc = inc_expand(r, r->tpl->generation_prompt, NULL, out);
    /* The generation point: the pending piece of the run is encoded now. */
    if (!rc)
        rc = encode_piece(r->tok, r->pending, r->n_pending, r->cont, out);
    if (rc) {
        out->n = out_n;
        r->state = old;
        return rc;
    }
    struct sbuf run = {r->run, 0, r->run_cap};
    sbuf_add(&run, r->pending ? r->pending : "", r->n_pending);
    r->run = run.data;
    r->n_run = run.len;
    r->run_cap = run.cap;
    r->run_cont = r->cont;
    r->n_pending = 0;
    r->state = TEMPLATE_IN_REPLY;
    return 0;
}

int template_render_reply_end(struct template_render *r, enum template_end how,
                              struct idvec *out)
{
    if (r->state != TEMPLATE_IN_REPLY)
        return ELM_E_INVALID;
    const char *close = reply_close(r->tpl);
    bool skip_eos = how == TEMPLATE_END_EOS && strstr(close, "{eos}") != NULL;
    size_t skip_text = 0;
    if (how == TEMPLATE_END_STOP) {
        size_t len;
        char *head = close_head(r->tpl, &len);
        skip_text = head_stop_len(r->tpl, head);
        free(head);
    }
    /* After a sampled EOS (a special id) the closing starts a new run;
     * otherwise it continues the reply's run after the model's ids. */
    int rc = inc_expand_cont(r, close, NULL, skip_eos, skip_text, how != TEMPLATE_END_EOS, out);
    if (rc)
        return rc;
    r->state = TEMPLATE_AFTER_REPLY;
    return 0;
}

/* LEAD content HEAD[:k]: the text a re-rendered reply's model wrote (k =
 * head_model_len); *skip = k, the bytes of CLOSE's text it covers. */
static char *reply_text(const struct template *tpl, const char *content, size_t *len,
                        size_t *skip)
{
    size_t lead_len, head_n;
    const char *lead = reply_lead(tpl, &lead_len);
    char *head = close_head(tpl, &head_n);
    *skip = head_model_len(tpl, head, head_n);
    struct sbuf t = {0};
    sbuf_add(&t, "", 0);
    add_unescaped(&t, lead, lead_len);
    sbuf_add(&t, content, strlen(content));
    sbuf_add(&t, head, *skip);
    free(head);
    *len = t.len;
    return t.data;
}

int template_render_reply(struct template_render *r, const char *content, struct idvec *out)
{
    if (r->state != TEMPLATE_IN_REPLY)
        return ELM_E_INVALID;
    size_t out_n = out->n;
    size_t len, skip;
    char *text = reply_text(r->tpl, content, &len, &skip);
    int rc = encode_reply(r->tok, r->run, r->n_run, r->run_cont, text, len, out);
    free(text);
    /* The rest of CLOSE continues the reply's run, as after a sampled
     * reply that ended on the stop string (or ended at HEAD's end). */
    if (!rc) {
        rc = inc_expand_cont(r, reply_close(r->tpl), NULL, false, skip, true, out);
        if (!rc)
            r->state = TEMPLATE_AFTER_REPLY;
    }
    if (rc)
        out->n = out_n;
    return rc;
}

/* ------------------------------------------------- whole-conversation path */

/* Items of a flattened conversation, encoded in one pass afterwards. */
enum item_kind { IT_TEXT, IT_SPECIAL, IT_CUT, IT_REPLY };
struct item {
    enum item_kind kind;
    int32_t id;
    char *text;
    size_t len;
};
struct item_sink {
    struct seg_sink base;
    struct item *v;
    size_t n, cap;
    const char *content;
    const elm_tokenizer *tok;
};

static void item_add(struct item_sink *s, enum item_kind kind, int32_t id, const char *text,
                     size_t len)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 32;
        s->v = x_reallocarray(s->v, s->cap, sizeof *s->v);
    }
    s->v[s->n++] = (struct item){kind, id, text ? x_strndup(text, len) : NULL, len};
}

static void item_fn(struct seg_sink *sink, enum seg kind, const char *text, size_t len)
{
    struct item_sink *s = (struct item_sink *)sink;
    if (kind == SEG_TEXT)
        item_add(s, IT_TEXT, 0, text, len);
    else if (kind == SEG_CONTENT)
        item_add(s, IT_TEXT, 0, s->content, strlen(s->content));
    else
        item_add(s, IT_SPECIAL, special_id(s->tok, kind), NULL, 0);
}

static void items_expand(struct item_sink *s, const char *str, const char *content)
{
    const char *why;
    s->content = content ? content : "";
    scan(str, &s->base, &why);
}

static void items_flatten(struct item_sink *s, const struct template *tpl, const char *system,
                          const struct template_msg *msgs, size_t n_msgs, bool add_gen)
{
    if (!system)
        system = tpl->default_system ? tpl->default_system : "";
    items_expand(s, tpl->prefix, NULL);
    bool after_system = false;
    if (*system || tpl->system_always) {
        items_expand(s, tpl->turn[ROLE_SYSTEM], system);
        after_system = true;
    }
    for (size_t i = 0; i < n_msgs; i++) {
        if (msgs[i].role == ROLE_ASSISTANT) {
            items_expand(s, tpl->generation_prompt, NULL);
            item_add(s, IT_CUT, 0, NULL, 0);
            size_t len, skip, head_n, head_len;
            char *text = reply_text(tpl, msgs[i].content, &len, &skip);
            item_add(s, IT_REPLY, 0, text, len);
            free(text);
            char *head = close_head(tpl, &head_n);
            if (head_n > skip)
                item_add(s, IT_TEXT, 0, head + skip, head_n - skip);
            free(head);
            items_expand(s, close_rest(tpl, &head_len), NULL);
        } else {
            const char *turn = after_system && tpl->user_after_system ? tpl->user_after_system
                                                                      : tpl->turn[ROLE_USER];
            items_expand(s, turn, msgs[i].content);
        }
        after_system = false;
    }
    if (add_gen) {
        items_expand(s, tpl->generation_prompt, NULL);
        item_add(s, IT_CUT, 0, NULL, 0);
    }
}

int template_render_conversation(const struct template *tpl, const elm_tokenizer *tok,
                                 const char *system, const struct template_msg *msgs,
                                 size_t n_msgs, bool add_generation_prompt, struct idvec *out)
{
    struct item_sink s = {{item_fn}, NULL, 0, 0, NULL, tok};
    items_flatten(&s, tpl, system, msgs, n_msgs, add_generation_prompt);
    size_t out_n = out->n;
    struct sbuf run = {0}, last_run = {0};
    sbuf_add(&run, "", 0);
    sbuf_add(&last_run, "", 0);
    /* cont: the piece in `run` continues a run after a reply (template.h). */
    bool cont = false, last_cont = false;
    int rc = 0;
    for (size_t i = 0; i < s.n && !rc; i++) {
        struct item *it = &s.v[i];
        switch (it->kind) {
        case IT_TEXT:
            sbuf_add(&run, it->text, it->len);
            break;
        case IT_SPECIAL:
            rc = encode_piece(tok, run.data, run.len, cont, out);
            run.len = 0;
            cont = false;
            idvec_push(out, it->id);
            break;
        case IT_CUT:
            rc = encode_piece(tok, run.data, run.len, cont, out);
            last_run.len = 0;
            sbuf_add(&last_run, run.data, run.len);
            last_cont = cont;
            run.len = 0;
            break;
        case IT_REPLY:
            rc = encode_reply(tok, last_run.data, last_run.len, last_cont, it->text, it->len,
                              out);
            cont = true;
            break;
        }
    }
    /* Text after the last special id stays unencoded: it starts the next run. */
    for (size_t i = 0; i < s.n; i++)
        free(s.v[i].text);
    free(s.v);
    free(run.data);
    free(last_run.data);
    if (rc)
        out->n = out_n;
    return rc;
}

char *template_render_text(const struct template *tpl, const char *system,
                           const struct template_msg *msgs, size_t n_msgs,
                           bool add_generation_prompt)
{
    struct item_sink s = {{item_fn}, NULL, 0, 0, NULL, NULL};
    items_flatten(&s, tpl, system, msgs, n_msgs, add_generation_prompt);
    struct sbuf t = {0};
    sbuf_add(&t, "", 0);
    for (size_t i = 0; i < s.n; i++) {
        struct item *it = &s.v[i];
        if (it->kind == IT_TEXT || it->kind == IT_REPLY)
            sbuf_add(&t, it->text, it->len);
        else if (it->kind == IT_SPECIAL)
            sbuf_add(&t, it->id == 1 ? "<s>" : "</s>", it->id == 1 ? 3 : 4);
        free(it->text);
    }
    free(s.v);
    return t.data;
}
