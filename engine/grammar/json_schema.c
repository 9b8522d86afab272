/* json_schema.c: JSON Schema -> GBNF (elm_grammar_json_schema).
 *
 * Every keyword is either turned into grammar, known to be an annotation
 * (title, description, ...), or refused with its JSON pointer: a schema is
 * never half obeyed.  Objects list their properties in the schema's order
 * (optional ones may be left out); no property outside `properties` is
 * generated (valid whatever additionalProperties says); whitespace between
 * tokens is bounded so a reply cannot spin in blanks. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/error.h"
#include "engine/elm_grammar.h"
#include "engine/formats/jsonfile.h"

struct buf {
    char *s;
    size_t n, cap;
    bool nomem;
};

__attribute__((format(printf, 2, 3))) static void put(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        size_t room = b->cap - b->n;
        va_start(ap, fmt);
        int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? room : 0, fmt, ap);
        va_end(ap);
        if (k < 0)
            return;
        if (b->s && (size_t)k < room) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 1024;
        while (cap < b->n + (size_t)k + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->nomem = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

struct conv {
    json_object *root;
    struct buf out;
    int n_rules;
    /* $defs already given a rule: pointer -> rule name */
    char **ref_ptr, **ref_rule;
    int n_refs;
    bool used_value; /* the any-value rules are needed */
    int in_type_list; /* "type": [...]: each type's keywords may sit beside the others' */
    char *err;
    size_t err_size;
    elm_status status;
};

__attribute__((format(printf, 3, 4))) static bool fail(struct conv *c, const char *ptr,
                                                       const char *fmt, ...)
{
    if (c->status != ELM_OK)
        return false;
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->status =
        elm_set_error(c->err, c->err_size, ELM_E_FORMAT, "%s: %s", *ptr ? ptr : "(the root)", msg);
    return false;
}

/* The JSON pointer of a child (RFC 6901 escapes). */
static void child_ptr(char *dst, size_t n, const char *ptr, const char *key)
{
    size_t k = (size_t)snprintf(dst, n, "%s/", ptr);
    for (const char *p = key; *p && k + 3 < n; p++) {
        if (*p == '~' || *p == '/') {
            dst[k++] = '~';
            dst[k++] = *p == '~' ? '0' : '1';
        } else {
            dst[k++] = *p;
        }
    }
    dst[k < n ? k : n - 1] = '\0';
}

static void new_rule(struct conv *c, char *name, size_t n)
{
    snprintf(name, n, "r%d", c->n_rules++);
}

/* A GBNF literal of the bytes of s. */
static void put_literal(struct buf *b, const char *s)
{
    put(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            put(b, "\\%c", *p);
        else if (*p < 0x20)
            put(b, "\\x%02X", *p);
        else
            put(b, "%c", *p);
    }
    put(b, "\"");
}

/* A JSON value written as the reply must write it (compact). */
static void put_json_literal(struct buf *b, json_object *v)
{
    put_literal(b, json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
                                                         JSON_C_TO_STRING_NOSLASHESCAPE));
}

static const char *const PRIMITIVES =
    "space ::= (\" \" | \"\\n\" [ \\t]{0,20})?\n"
    "char ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n"
    "string ::= \"\\\"\" char* \"\\\"\" space\n"
    "integer ::= \"-\"? (\"0\" | [1-9] [0-9]{0,15}) space\n"
    "number ::= \"-\"? (\"0\" | [1-9] [0-9]{0,15}) (\".\" [0-9]{1,16})? "
    "([eE] [-+]? [0-9]{1,3})? space\n"
    "boolean ::= (\"true\" | \"false\") space\n"
    "null ::= \"null\" space\n";

static const char *const VALUE =
    "value ::= object | array | string | number | boolean | null\n"
    "object ::= \"{\" space (string \":\" space value (\",\" space string \":\" space value)*)? "
    "\"}\" space\n"
    "array ::= \"[\" space (value (\",\" space value)*)? \"]\" space\n";

static bool visit(struct conv *c, json_object *s, const char *ptr, char *name, size_t n);

static bool is_annotation(const char *k)
{
    static const char *const keys[] = {"title", "description", "$schema", "$id", "$comment",
                                       "examples", "default", "$defs", "definitions",
                                       "readOnly", "writeOnly", "deprecated"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (!strcmp(k, keys[i]))
            return true;
    return false;
}

static bool get_count(struct conv *c, json_object *s, const char *key, const char *ptr,
                      long *out)
{
    json_object *v;
    if (!json_object_object_get_ex(s, key, &v))
        return true;
    char p[512];
    child_ptr(p, sizeof p, ptr, key);
    if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0 ||
        json_object_get_int64(v) > 1000)
        return fail(c, p, "'%s' must be a whole number from 0 to 1000", key);
    *out = (long)json_object_get_int64(v);
    return true;
}

/* Only these keywords (and annotations) may appear beside the others. */
static bool only_keys(struct conv *c, json_object *s, const char *ptr, const char *const *allowed)
{
    json_object_object_foreach(s, k, v)
    {
        (void)v;
        if (is_annotation(k))
            continue;
        bool fine = false;
        for (const char *const *a = allowed; *a; a++)
            fine |= !strcmp(*a, k);
        static const char *const typed_keys[] = {
            "type", "minLength", "maxLength", "format", "items", "minItems", "maxItems",
            "properties", "required", "additionalProperties", NULL};
        for (const char *const *a = typed_keys; c->in_type_list && *a; a++)
            fine |= !strcmp(*a, k);
        if (!fine) {
            char p[512];
            child_ptr(p, sizeof p, ptr, k);
            return fail(c, p, "unsupported keyword '%s'", k);
        }
    }
    return true;
}

static bool string_rule(struct conv *c, json_object *s, const char *ptr, char *name, size_t n)
{
    static const char *const keys[] = {"type", "minLength", "maxLength", "format", NULL};
    if (!only_keys(c, s, ptr, keys))
        return false;
    json_object *f;
    if (json_object_object_get_ex(s, "format", &f)) {
        char p[512];
        child_ptr(p, sizeof p, ptr, "format");
        const char *fmt = json_object_get_string(f);
        /* calendar dates only: the days of each month, Feb 29 in leap
         * years (those of a century year left out), years 1000-9999 */
        static const char *const date =
            "([1-9] [0-9]{3} \"-\" ((\"0\" [13578] | \"1\" [02]) \"-\" (\"0\" [1-9] | "
            "[12] [0-9] | \"3\" [01]) | (\"0\" [469] | \"11\") \"-\" (\"0\" [1-9] | [12] "
            "[0-9] | \"30\") | \"02-\" (\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8])) | [1-9] "
            "[0-9] ([02468] [48] | [13579] [26] | [2468] \"0\") \"-02-29\")";
        static const char *const time =
            "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{1,6})? "
            "(\"Z\" | [+-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])";
        const char *body = NULL;
        char both[512];
        if (!json_object_is_type(f, json_type_string))
            return fail(c, p, "'format' must be a string");
        if (!strcmp(fmt, "date"))
            body = date;
        else if (!strcmp(fmt, "time"))
            body = time;
        else if (!strcmp(fmt, "date-time"))
            body = (snprintf(both, sizeof both, "%s \"T\" %s", date, time), both);
        else if (!strcmp(fmt, "uuid"))
            body = "[0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} "
                   "\"-\" [0-9a-fA-F]{12}";
        else
            return fail(c, p, "unsupported format '%s' (date, time, date-time, uuid are)", fmt);
        if (json_object_object_get_ex(s, "minLength", NULL) ||
            json_object_object_get_ex(s, "maxLength", NULL))
            return fail(c, p, "'format' with minLength or maxLength is not supported");
        new_rule(c, name, n);
        put(&c->out, "%s ::= \"\\\"\" %s \"\\\"\" space\n", name, body);
        return true;
    }
    long min = 0, max = -1;
    if (!get_count(c, s, "minLength", ptr, &min) || !get_count(c, s, "maxLength", ptr, &max))
        return false;
    if (max >= 0 && max < min)
        return fail(c, ptr, "maxLength %ld is below minLength %ld", max, min);
    if (min == 0 && max < 0) {
        snprintf(name, n, "string");
        return true;
    }
    new_rule(c, name, n);
    if (max < 0)
        put(&c->out, "%s ::= \"\\\"\" char{%ld,} \"\\\"\" space\n", name, min);
    else
        put(&c->out, "%s ::= \"\\\"\" char{%ld,%ld} \"\\\"\" space\n", name, min, max);
    return true;
}

static bool array_rule(struct conv *c, json_object *s, const char *ptr, char *name, size_t n)
{
    static const char *const keys[] = {"type", "items", "minItems", "maxItems", NULL};
    if (!only_keys(c, s, ptr, keys))
        return false;
    long min = 0, max = -1;
    if (!get_count(c, s, "minItems", ptr, &min) || !get_count(c, s, "maxItems", ptr, &max))
        return false;
    if (max >= 0 && max < min)
        return fail(c, ptr, "maxItems %ld is below minItems %ld", max, min);
    char item[64] = "value";
    json_object *it;
    if (json_object_object_get_ex(s, "items", &it)) {
        char p[512];
        child_ptr(p, sizeof p, ptr, "items");
        if (!visit(c, it, p, item, sizeof item))
            return false;
    } else {
        c->used_value = true;
    }
    new_rule(c, name, n);
    if (max == 0) {
        put(&c->out, "%s ::= \"[\" space \"]\" space\n", name);
        return true;
    }
    char more[64];
    long lo = min > 0 ? min - 1 : 0;
    if (max < 0)
        snprintf(more, sizeof more, "{%ld,}", lo);
    else
        snprintf(more, sizeof more, "{%ld,%ld}", lo, max - 1);
    put(&c->out, "%s ::= \"[\" space %s%s (\",\" space %s)%s %s\"]\" space\n", name,
        min > 0 ? "" : "(", item, item, more, min > 0 ? "" : ")?");
    return true;
}

static bool object_rule(struct conv *c, json_object *s, const char *ptr, char *name, size_t n)
{
    static const char *const keys[] = {"type", "properties", "required", "additionalProperties",
                                       "propertyNames", NULL};
    if (!only_keys(c, s, ptr, keys))
        return false;
    json_object *props = NULL, *req = NULL, *addl = NULL;
    json_object_object_get_ex(s, "properties", &props);
    json_object_object_get_ex(s, "required", &req);
    json_object_object_get_ex(s, "additionalProperties", &addl);
    char p[512];
    if (props && !json_object_is_type(props, json_type_object)) {
        child_ptr(p, sizeof p, ptr, "properties");
        return fail(c, p, "'properties' must be an object");
    }
    if (req && !json_object_is_type(req, json_type_array)) {
        child_ptr(p, sizeof p, ptr, "required");
        return fail(c, p, "'required' must be an array of names");
    }
    if (addl && !json_object_is_type(addl, json_type_boolean)) {
        child_ptr(p, sizeof p, ptr, "additionalProperties");
        if (props && json_object_object_length(props) > 0)
            return fail(c, p, "a schema for additionalProperties beside properties is not "
                              "supported (true or false are)");
        /* a map: any keys (or those propertyNames allows), values of that schema */
        char val[64], key[64] = "string";
        if (!visit(c, addl, p, val, sizeof val))
            return false;
        json_object *names;
        if (json_object_object_get_ex(s, "propertyNames", &names)) {
            child_ptr(p, sizeof p, ptr, "propertyNames");
            json_object *t;
            if (!json_object_is_type(names, json_type_object) ||
                !json_object_object_get_ex(names, "type", &t) ||
                strcmp(json_object_get_string(t), "string") != 0)
                return fail(c, p, "propertyNames must be a schema of type string");
            if (!visit(c, names, p, key, sizeof key))
                return false;
        }
        new_rule(c, name, n);
        put(&c->out,
            "%s ::= \"{\" space (%s \":\" space %s (\",\" space %s \":\" space %s)*)? "
            "\"}\" space\n",
            name, key, val, key, val);
        return true;
    }
    if (json_object_object_get_ex(s, "propertyNames", NULL)) {
        child_ptr(p, sizeof p, ptr, "propertyNames");
        return fail(c, p, "propertyNames is supported with additionalProperties as a schema only");
    }
    int np = props ? json_object_object_length(props) : 0;
    if (np == 0 && !(addl && !json_object_get_boolean(addl))) {
        /* no properties named: any object */
        c->used_value = true;
        snprintf(name, n, "object");
        return true;
    }
    /* every required name must be a property */
    for (size_t i = 0; req && i < json_object_array_length(req); i++) {
        json_object *r = json_object_array_get_idx(req, i);
        child_ptr(p, sizeof p, ptr, "required");
        if (!json_object_is_type(r, json_type_string))
            return fail(c, p, "'required' must be an array of names");
        if (!props || !json_object_object_get_ex(props, json_object_get_string(r), NULL))
            return fail(c, p, "required property '%s' is not in properties",
                        json_object_get_string(r));
    }
    char (*kv)[64] = calloc((size_t)np + 1, sizeof *kv);
    bool *required = calloc((size_t)np + 1, sizeof *required);
    if (!kv || !required) {
        free(kv);
        free(required);
        return fail(c, ptr, "out of memory");
    }
    int i = 0;
    bool good = true;
    char pp[512];
    child_ptr(pp, sizeof pp, ptr, "properties");
    json_object_object_foreach(props, key, sub)
    {
        if (!good)
            break;
        for (size_t k = 0; req && k < json_object_array_length(req); k++)
            required[i] |= !strcmp(json_object_get_string(json_object_array_get_idx(req, k)), key);
        child_ptr(p, sizeof p, pp, key);
        char val[64];
        good = visit(c, sub, p, val, sizeof val);
        if (good) {
            new_rule(c, kv[i], sizeof kv[i]);
            json_object *k = json_object_new_string(key);
            put(&c->out, "%s ::= ", kv[i]);
            put_json_literal(&c->out, k);
            json_object_put(k);
            put(&c->out, " space \":\" space %s\n", val);
        }
        i++;
    }
    if (good) {
        /* after_i: properties i.. once one was written (each after a comma);
         * first_i: properties i.. before any */
        char base[32];
        new_rule(c, base, sizeof base);
        for (int k = np - 1; k >= 0; k--) {
            if (required[k])
                put(&c->out, "%s-a%d ::= \",\" space %s", base, k, kv[k]);
            else
                put(&c->out, "%s-a%d ::= (\",\" space %s)?", base, k, kv[k]);
            if (k + 1 < np)
                put(&c->out, " %s-a%d", base, k + 1);
            put(&c->out, "\n%s-f%d ::= %s", base, k, kv[k]);
            if (k + 1 < np)
                put(&c->out, " %s-a%d", base, k + 1);
            if (!required[k])
                put(&c->out, " | %s", k + 1 < np ? "" : "\"\"");
            if (!required[k] && k + 1 < np)
                put(&c->out, "%s-f%d", base, k + 1);
            put(&c->out, "\n");
        }
        new_rule(c, name, n);
        put(&c->out, "%s ::= \"{\" space %s-f0 \"}\" space\n", name, base);
    }
    free(kv);
    free(required);
    return good;
}

/* A new rule NAME ::= alt[0] | alt[1] | ... (anyOf, oneOf, a list of types). */
static void alternation_rule(struct conv *c, char *name, size_t n, char (*alt)[64], size_t len)
{
    new_rule(c, name, n);
    put(&c->out, "%s ::=", name);
    for (size_t i = 0; i < len; i++)
        put(&c->out, "%s %s", i ? " |" : "", alt[i]);
    put(&c->out, "\n");
}

static bool alternatives(struct conv *c, json_object *list, const char *ptr, const char *key,
                         char *name, size_t n)
{
    char p[512], q[560];
    child_ptr(p, sizeof p, ptr, key);
    size_t len = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
    if (len == 0)
        return fail(c, p, "'%s' must be a non-empty array", key);
    char (*alt)[64] = calloc(len, sizeof *alt);
    if (!alt)
        return fail(c, p, "out of memory");
    bool good = true;
    for (size_t i = 0; i < len && good; i++) {
        snprintf(q, sizeof q, "%s/%zu", p, i);
        good = visit(c, json_object_array_get_idx(list, i), q, alt[i], sizeof alt[i]);
    }
    if (good)
        alternation_rule(c, name, n, alt, len);
    free(alt);
    return good;
}

static bool ref_rule(struct conv *c, json_object *s, const char *ptr, char *name, size_t n)
{
    static const char *const keys[] = {"$ref", NULL};
    if (!only_keys(c, s, ptr, keys))
        return false;
    json_object *r;
    json_object_object_get_ex(s, "$ref", &r);
    char p[512];
    child_ptr(p, sizeof p, ptr, "$ref");
    const char *ref = json_object_get_string(r);
    const char *defs = NULL;
    if (!strncmp(ref, "#/$defs/", 8))
        defs = "$defs";
    else if (!strncmp(ref, "#/definitions/", 14))
        defs = "definitions";
    if (!json_object_is_type(r, json_type_string) || !defs || strchr(ref + 3 + strlen(defs), '/'))
        return fail(c, p, "unsupported $ref '%s' (only #/$defs/NAME and #/definitions/NAME are)",
                    ref ? ref : "");
    for (int i = 0; i < c->n_refs; i++) {
        if (!strcmp(c->ref_ptr[i], ref)) {
            snprintf(name, n, "%s", c->ref_rule[i]);
            return true;
        }
    }
    json_object *table, *target;
    /* the name as written, ~1 and ~0 unescaped */
    char key[256];
    size_t k = 0;
    for (const char *q = ref + 3 + strlen(defs); *q && k + 1 < sizeof key; q++) {
        if (q[0] == '~' && (q[1] == '0' || q[1] == '1')) {
            key[k++] = q[1] == '0' ? '~' : '/';
            q++;
        } else {
            key[k++] = *q;
        }
    }
    key[k] = '\0';
    if (!json_object_object_get_ex(c->root, defs, &table) ||
        !json_object_object_get_ex(table, key, &target))
        return fail(c, p, "$ref '%s' names no definition", ref);
    /* reserve the rule's name first: a definition may refer to itself */
    char **rp = realloc(c->ref_ptr, ((size_t)c->n_refs + 1) * sizeof *rp);
    if (rp)
        c->ref_ptr = rp;
    char **rr = realloc(c->ref_rule, ((size_t)c->n_refs + 1) * sizeof *rr);
    if (rr)
        c->ref_rule = rr;
    if (!rp || !rr)
        return fail(c, p, "out of memory");
    char rule[64];
    new_rule(c, rule, sizeof rule);
    c->ref_ptr[c->n_refs] = strdup(ref);
    c->ref_rule[c->n_refs] = strdup(rule);
    c->n_refs++;
    char body[64], dp[512];
    child_ptr(dp, sizeof dp, "", defs);
    child_ptr(p, sizeof p, dp, key);
    if (!visit(c, target, p, body, sizeof body))
        return false;
    put(&c->out, "%s ::= %s\n", rule, body);
    snprintf(name, n, "%s", rule);
    return true;
}

static bool typed(struct conv *c, json_object *s, const char *ptr, const char *type, char *name,
                  size_t n)
{
    if (!strcmp(type, "string"))
        return string_rule(c, s, ptr, name, n);
    if (!strcmp(type, "object"))
        return object_rule(c, s, ptr, name, n);
    if (!strcmp(type, "array"))
        return array_rule(c, s, ptr, name, n);
    static const char *const keys[] = {"type", NULL};
    if (!strcmp(type, "number") || !strcmp(type, "integer") || !strcmp(type, "boolean") ||
        !strcmp(type, "null")) {
        if (!only_keys(c, s, ptr, keys))
            return false;
        snprintf(name, n, "%s", type);
        return true;
    }
    char p[512];
    child_ptr(p, sizeof p, ptr, "type");
    return fail(c, p, "unknown type '%s'", type);
}

static bool visit_schema(struct conv *c, json_object *s, const char *ptr, char *name, size_t n)
{
    if (c->status != ELM_OK)
        return false;
    if (json_object_is_type(s, json_type_boolean)) {
        if (!json_object_get_boolean(s))
            return fail(c, ptr, "the schema false allows no value");
        c->used_value = true;
        snprintf(name, n, "value");
        return true;
    }
    if (!json_object_is_type(s, json_type_object))
        return fail(c, ptr, "a schema must be an object or a boolean");
    json_object *v;
    if (json_object_object_get_ex(s, "$ref", &v))
        return ref_rule(c, s, ptr, name, n);
    static const char *const just_alts[] = {"anyOf", "oneOf", NULL};
    if (json_object_object_get_ex(s, "anyOf", &v) || json_object_object_get_ex(s, "oneOf", &v)) {
        if (!only_keys(c, s, ptr, just_alts))
            return false;
        if (json_object_object_get_ex(s, "anyOf", NULL) &&
            json_object_object_get_ex(s, "oneOf", NULL))
            return fail(c, ptr, "anyOf and oneOf together are not supported");
        return alternatives(c, v, ptr,
                            json_object_object_get_ex(s, "anyOf", NULL) ? "anyOf" : "oneOf", name,
                            n);
    }
    static const char *const value_keys[] = {"const", "enum", "type", NULL};
    if (json_object_object_get_ex(s, "const", &v)) {
        if (!only_keys(c, s, ptr, value_keys))
            return false;
        new_rule(c, name, n);
        put(&c->out, "%s ::= ", name);
        put_json_literal(&c->out, v);
        put(&c->out, " space\n");
        return true;
    }
    if (json_object_object_get_ex(s, "enum", &v)) {
        if (!only_keys(c, s, ptr, value_keys))
            return false;
        char p[512];
        child_ptr(p, sizeof p, ptr, "enum");
        size_t len = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
        if (len == 0)
            return fail(c, p, "'enum' must be a non-empty array");
        new_rule(c, name, n);
        put(&c->out, "%s ::= (", name);
        for (size_t i = 0; i < len; i++) {
            put(&c->out, "%s", i ? " | " : "");
            put_json_literal(&c->out, json_object_array_get_idx(v, i));
        }
        put(&c->out, ") space\n");
        return true;
    }
    json_object *type = NULL;
    json_object_object_get_ex(s, "type", &type);
    if (type && json_object_is_type(type, json_type_array)) {
        size_t len = json_object_array_length(type);
        char p[512];
        child_ptr(p, sizeof p, ptr, "type");
        if (len == 0)
            return fail(c, p, "'type' must not be empty");
        char (*alt)[64] = calloc(len, sizeof *alt);
        if (!alt)
            return fail(c, p, "out of memory");
        bool good = true;
        c->in_type_list++;
        for (size_t i = 0; i < len && good; i++) {
            json_object *t = json_object_array_get_idx(type, i);
            good = json_object_is_type(t, json_type_string)
                       ? typed(c, s, ptr, json_object_get_string(t), alt[i], sizeof alt[i])
                       : fail(c, p, "'type' must name types");
        }
        c->in_type_list--;
        if (good)
            alternation_rule(c, name, n, alt, len);
        free(alt);
        return good;
    }
    if (type) {
        if (!json_object_is_type(type, json_type_string)) {
            char p[512];
            child_ptr(p, sizeof p, ptr, "type");
            return fail(c, p, "'type' must be a string or an array of them");
        }
        return typed(c, s, ptr, json_object_get_string(type), name, n);
    }
    if (json_object_object_get_ex(s, "properties", NULL) ||
        json_object_object_get_ex(s, "required", NULL) ||
        json_object_object_get_ex(s, "additionalProperties", NULL))
        return object_rule(c, s, ptr, name, n);
    if (json_object_object_get_ex(s, "items", NULL) ||
        json_object_object_get_ex(s, "minItems", NULL) ||
        json_object_object_get_ex(s, "maxItems", NULL))
        return array_rule(c, s, ptr, name, n);
    if (json_object_object_get_ex(s, "minLength", NULL) ||
        json_object_object_get_ex(s, "maxLength", NULL) ||
        json_object_object_get_ex(s, "format", NULL))
        return string_rule(c, s, ptr, name, n);
    static const char *const none[] = {NULL};
    if (!only_keys(c, s, ptr, none))
        return false;
    c->used_value = true;
    snprintf(name, n, "value");
    return true;
}

/* A subschema: the leniency of a type list is its parent's only. */
static bool visit(struct conv *c, json_object *s, const char *ptr, char *name, size_t n)
{
    int saved = c->in_type_list;
    c->in_type_list = 0;
    bool good = visit_schema(c, s, ptr, name, n);
    c->in_type_list = saved;
    return good;
}

elm_status elm_grammar_json_schema(const char *schema, size_t len, char **gbnf, char *err,
                                   size_t err_size)
{
    if (!gbnf)
        return elm_set_error(err, err_size, ELM_E_INVALID, "no output");
    *gbnf = NULL;
    struct conv c = {.err = err, .err_size = err_size};
    if (schema && len > 0) {
        char jerr[256];
        if (elm_json_parse(schema, len, "the schema", &c.root, jerr, sizeof jerr) != ELM_OK)
            return elm_set_error(err, err_size, ELM_E_FORMAT, "%s", jerr);
    } else {
        c.root = json_object_new_boolean(1);
    }
    char top[64];
    if (visit(&c, c.root, "", top, sizeof top)) {
        struct buf head = {0};
        put(&head, "root ::= %s\n", top);
        put(&head, "%s", PRIMITIVES);
        if (c.used_value)
            put(&head, "%s", VALUE);
        put(&head, "%s", c.out.s ? c.out.s : "");
        if (head.nomem || c.out.nomem) {
            free(head.s);
            c.status = elm_set_error(err, err_size, ELM_E_NOMEM, "out of memory");
        } else {
            *gbnf = head.s;
        }
    }
    free(c.out.s);
    for (int i = 0; i < c.n_refs; i++) {
        free(c.ref_ptr[i]);
        free(c.ref_rule[i]);
    }
    free(c.ref_ptr);
    free(c.ref_rule);
    json_object_put(c.root);
    return c.status;
}
