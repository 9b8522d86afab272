/* template.c: what every part of a template needs: role names, sampling
 * defaults, and the split of a template string into text and placeholders. */
#include "config.h"

#include "src/template/template.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "src/base/strbuf.h"
#include "src/template/template_impl.h"

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
    if (s->set & ELM_SAMPLING_TEMPERATURE)
        p->temperature = s->p.temperature;
    if (s->set & ELM_SAMPLING_TOP_K)
        p->top_k = s->p.top_k;
    if (s->set & ELM_SAMPLING_TOP_P)
        p->top_p = s->p.top_p;
    if (s->set & ELM_SAMPLING_MIN_P)
        p->min_p = s->p.min_p;
    if (s->set & ELM_SAMPLING_REPEAT_PENALTY)
        p->repeat_penalty = s->p.repeat_penalty;
    if (s->set & ELM_SAMPLING_REPEAT_LAST_N)
        p->repeat_last_n = s->p.repeat_last_n;
    if (s->set & SAMPLING_SEED)
        p->seed = s->p.seed;
    if ((s->set & SAMPLING_MAX_TOKENS) && max_tokens)
        *max_tokens = s->max_tokens;
}


struct sampling sampling_from_model(const struct elm_model_sampling *m)
{
    struct sampling s = {0};
    /* the same bits (template.h) */
    s.set = m->set & (ELM_SAMPLING_TEMPERATURE | ELM_SAMPLING_TOP_K | ELM_SAMPLING_TOP_P | ELM_SAMPLING_MIN_P |
                      ELM_SAMPLING_REPEAT_PENALTY | ELM_SAMPLING_REPEAT_LAST_N);
    s.p.temperature = m->temperature;
    s.p.top_k = m->top_k;
    s.p.top_p = m->top_p;
    s.p.min_p = m->min_p;
    s.p.repeat_penalty = m->repeat_penalty;
    s.p.repeat_last_n = m->repeat_last_n;
    return s;
}

const char *tpl_scan(const char *s, struct seg_sink *sink, const char **why)
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


void tpl_count_fn(struct seg_sink *sink, enum seg kind, const char *text, size_t len)
{
    (void)text;
    (void)len;
    ((struct count_sink *)sink)->n[kind]++;
}

void tpl_add_unescaped(struct sbuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sbuf_add(b, s + i, 1);
        if ((s[i] == '{' || s[i] == '}') && i + 1 < n && s[i + 1] == s[i])
            i++;
    }
}
