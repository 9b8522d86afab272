/* test-template.c: template files (good and bad, exact FILE:LINE:COLUMN),
 * lookup order, and the token ids of rendered conversations: the independent
 * goldens of tests/data/templates/goldens.json (openelm-instruct, llama-2-chat,
 * chatml), and incremental rendering == whole rendering. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "engine/elm_tokenizer.h"
#include "src/base/macros.h"
#include "src/store/paths.h"
#include "src/template/template.h"
#include "src/base/xalloc.h"
#include "src/base/platform.h"
#include "tests/lib/tap.h"

static char err[1024];

static const char *write_file(const char *name, const char *text, size_t len)
{
    return tap_write_tmp(name, text, len);
}

/* A good template to mutate. */
static const char good[] = "name: t\n"
                           "description: test\n"
                           "prefix: \"{bos}\"\n"
                           "roles:\n"
                           "  system:\n"
                           "    turn: \"S:{content}{eos}\"\n"
                           "  user:\n"
                           "    turn: \"U:{content}{eos}\"\n"
                           "  assistant:\n"
                           "    turn: \"A:{content}{eos}\"\n"
                           "generation_prompt: \"A:\"\n";

/* Load text as a template file; expect failure with exactly want (after
 * the "PATH:" part). */
static void bad(const char *text, const char *want, const char *what)
{
    const char *path = write_file("bad.yaml", text, strlen(text));
    struct template *t = template_load_file(path, err, sizeof err);
    ok(t == NULL, "%s: rejected", what);
    template_free(t);
    size_t pl = strlen(path);
    if (strncmp(err, path, pl) != 0 || err[pl] != ':') {
        ok(0, "%s: error names the file (%s)", what, err);
        return;
    }
    const char *msg = err + pl + 1;
    ok(strncmp(msg, want, strlen(want)) == 0, "%s: '%s' starts with '%s'", what, msg, want);
}

static void test_bad_files(void)
{
    bad("name: t\nbogus: 1\n", "2:1: unknown key 'bogus'", "unknown top-level key");
    bad("name: t\nroles:\n  user:\n    turn: \"{content}\"\n    colour: red\n",
        "5:5: unknown key 'colour' in roles.user", "unknown role key");
    bad("name: t\nroles:\n  user: {turn: \"{content}\"}\n  robot: {turn: x}\n",
        "4:3: unknown role 'robot'", "unknown role");
    bad("name: t\nroles:\n  system: {turn: \"{content}\"}\n  user: {turn: \"{content}\"}\n"
        "generation_prompt: \"\"\n",
        "3:3: missing role 'assistant' in roles", "missing role");
    bad("name: t\nroles:\n  system: {turn: \"{content}\"}\n  user:\n    turn: \"[{usr}] {content}\"\n",
        "5:13: roles.user.turn: unknown placeholder (known: {content}, {bos}, {eos}): '{usr}'",
        "unknown placeholder, exact column in a quoted string");
    bad("name: t\nroles:\n  user:\n    turn: <b>{content}{EOS}\n",
        "4:23: roles.user.turn: unknown placeholder", "unknown placeholder in a plain scalar");
    bad("name: t\nroles:\n  user:\n    turn: \"\\t{content}{x}\"\n",
        "4:11: roles.user.turn: unknown placeholder",
        "unknown placeholder after an escape: the scalar's start");
    bad("name: t\nroles:\n  user:\n    turn: \"a { b {content}\"\n",
        "4:14: roles.user.turn: unknown placeholder", "'{' with a wrong name");
    bad("name: t\nroles:\n  user:\n    turn: \"a } {content}\"\n",
        "4:14: roles.user.turn: '}' without '{'", "lone '}'");
    bad("name: t\nroles:\n  user:\n    turn: \"{content} and {content}\"\n",
        "4:11: roles.user.turn: needs exactly one {content} (found 2)", "two {content}");
    bad("name: t\nroles:\n  user:\n    turn: \"hello\"\n",
        "4:11: roles.user.turn: needs exactly one {content} (found 0)", "no {content}");
    bad("name: t\nprefix: \"{content}\"\n", "2:9: prefix: {content} is not allowed here",
        "{content} in the prefix");
    bad("name: t\nroles:\n  system:\n    turn: \"{content}\"\n    always: yes\n",
        "5:13: roles.system.always: expected true or false", "wrong type: bool");
    bad("name: t\nroles: [user, system]\n", "2:8: roles: expected a mapping, found a list",
        "wrong type: list for a mapping");
    bad("name: [t]\n", "1:7: name: expected a string, found a list", "wrong type: name");
    bad("name: t\nsampling:\n  temperature: hot\n",
        "3:16: sampling.temperature: expected a number", "wrong type: number");
    bad("name: t\nsampling:\n  top_p: 1.5\n", "3:10: sampling.top_p: expected a number from 0 to 1",
        "out of range");
    bad("name: t\nsampling:\n  warmth: 1\n", "3:3: unknown key 'warmth' in sampling",
        "unknown sampling key");
    bad("name: t\nstop: {a: b}\n", "2:7: stop: expected a string or a list", "stop type");
    bad("name: t\nstop: [\"x{eos}\"]\n", "2:8: stop: a placeholder must be an entry of its own",
        "placeholder inside a stop string");
    bad("name: t\nname: u\n", "2:1: duplicate key 'name'", "duplicate key");
    bad("description: d\n", "1:1: missing key 'name'", "missing name");
    bad("name: t\ndescription: \"caf\xc3\xa9 \xff\"\n", "2:20: not UTF-8 (byte 0xFF)", "not UTF-8");
    bad("name: t\nroles: {user: [unclosed\n", "3:1: bad YAML:", "bad YAML (truncated flow)");
    bad("name: t\n  bad indent: 1\n", "2:13: bad YAML: mapping values are not allowed",
        "bad YAML (indentation)");
    bad("- a\n- b\n", "1:1: expected a mapping", "root is a list");
    bad("name: a\n---\nname: b\n", "3:1: a second YAML document", "two documents");
    bad("", " empty file", "empty file");
    bad("name: t\nroles:\n  system: {turn: \"{content}\"}\n  user: {turn: \"{content}\"}\n"
        "  assistant: {turn: \"<a>{content}\"}\ngeneration_prompt: \"<b>\"\n",
        "6:20: generation_prompt: roles.assistant.turn must start with the generation prompt",
        "assistant turn does not start with the generation prompt");
    bad("name: t\nroles:\n  system: {turn: \"{content}\"}\n  user: {turn: \"{content}\"}\n"
        "  assistant: {turn: \"{content}\"}\n",
        "1:1: missing key 'generation_prompt'", "missing generation prompt");

    /* Too large: the limit is checked before parsing. */
    size_t big = TEMPLATE_MAX_FILE_SIZE + 1;
    char *text = x_malloc(big);
    memset(text, '#', big);
    text[big - 1] = '\n';
    const char *path = write_file("big.yaml", text, big);
    free(text);
    struct template *t = template_load_file(path, err, sizeof err);
    ok(!t && strstr(err, "file too large"), "file too large: %s", err);
    template_free(t);

    t = template_load_file("/nonexistent/x.yaml", err, sizeof err);
    ok(!t && strstr(err, "/nonexistent/x.yaml: cannot open"), "missing file: %s", err);
}

static void test_good_files(void)
{
    const char *path = write_file("good.yaml", good, strlen(good));
    struct template *t = template_load_file(path, err, sizeof err);
    ok(t != NULL, "the minimal template loads (%s)", t ? "" : err);
    if (!t)
        return;
    is_str(t->name, "t", "name");
    ok(t->stop_eos && t->n_stop == 0, "stop defaults to {eos}");
    ok(!t->default_system && !t->system_always, "no default system, not always");
    is_int(t->sampling.set, 0, "no sampling defaults");
    template_free(t);

    const char *braces = "name: b\nroles:\n  system: {turn: \"{content}\"}\n"
                         "  user: {turn: \"{{x}} {content}\", after_system: \"{content}\"}\n"
                         "  assistant: {turn: \"> {content}{eos}\"}\n"
                         "generation_prompt: \">\"\nstop: [\"}}end\", \"{eos}\", \"</a>\"]\n"
                         "default_system: Be brief.\n"
                         "sampling: {temperature: 0.5, top_k: 40, top_p: 0.9, min_p: 0.05,\n"
                         "           repeat_penalty: 1.1, repeat_last_n: 64, seed: 7,"
                         " max_tokens: 99}\n";
    path = write_file("braces.yaml", braces, strlen(braces));
    t = template_load_file(path, err, sizeof err);
    ok(t != NULL, "a template with every key loads (%s)", t ? "" : err);
    if (!t)
        return;
    ok(t->n_stop == 2 && strcmp(t->stop[0], "}end") == 0 && strcmp(t->stop[1], "</a>") == 0 &&
           t->stop_eos,
       "stop strings unescaped, {eos} recognised");
    is_str(t->default_system, "Be brief.", "default_system");
    is_str(t->user_after_system, "{content}", "after_system");
    struct elm_sampler_params p = elm_sampler_default_params();
    int max_tokens = 5;
    sampling_apply(&t->sampling, &p, &max_tokens);
    ok(p.temperature == 0.5f && p.top_k == 40 && p.top_p == 0.9f && p.min_p == 0.05f &&
           p.repeat_penalty == 1.1f && p.repeat_last_n == 64 && p.seed == 7 && max_tokens == 99,
       "sampling defaults apply");
    const struct template_msg m[] = {{ROLE_USER, "hi"}, {ROLE_ASSISTANT, "yo"}, {ROLE_USER, "q"}};
    char *txt = template_render_text(t, NULL, m, 3, true);
    is_str(txt, "Be brief.hi> yo</s>{x} q>", "text rendering with braces and after_system");
    free(txt);
    template_free(t);
}

static void test_shipped(void)
{
    static const char *const names[] = {"openelm-instruct", "plain", "llama-2-chat", "chatml"};
    for (size_t i = 0; i < 4; i++) {
        struct template *t = template_load(names[i], err, sizeof err);
        ok(t != NULL, "shipped template %s loads (%s)", names[i], t ? t->path : err);
        if (t)
            is_str(t->name, names[i], "%s: name matches the file", names[i]);
        template_free(t);
    }
    struct template *t = template_load("openelm-instruct", err, sizeof err);
    if (t) {
        const struct template_msg m[] = {{ROLE_USER, "Q"}};
        char *txt = template_render_text(t, NULL, m, 1, true);
        is_str(txt, "<s><|system|>\n</s>\n<|user|>\nQ</s>\n<|assistant|>\n",
               "openelm-instruct text is docs/OPENELM.md §5's recommended inference string");
        free(txt);
        ok(t->stop_eos && t->n_stop == 0, "openelm-instruct stops on EOS only");
        ok((t->sampling.set & ELM_SAMPLING_REPEAT_PENALTY) && t->sampling.p.repeat_penalty == 1.2f,
           "openelm-instruct: repetition penalty 1.2 (model card)");
    }
    template_free(t);
    t = template_load("llama-2-chat", err, sizeof err);
    if (t) {
        const struct template_msg m[] = {{ROLE_USER, "Q1"}, {ROLE_ASSISTANT, "A1"},
                                         {ROLE_USER, "Q2"}};
        char *txt = template_render_text(t, "S", m, 3, true);
        is_str(txt, "<s>[INST] <<SYS>>\nS\n<</SYS>>\n\nQ1 [/INST] A1 </s><s>[INST] Q2 [/INST]",
               "llama-2-chat text (Meta's chat_completion format)");
        free(txt);
        txt = template_render_text(t, NULL, m, 1, true);
        is_str(txt, "<s>[INST] Q1 [/INST]", "llama-2-chat without a system prompt");
        free(txt);
    }
    template_free(t);
    t = template_load("chatml", err, sizeof err);
    if (t) {
        ok(t->n_stop == 1 && strcmp(t->stop[0], "<|im_end|>") == 0 && t->stop_eos,
           "chatml stops on <|im_end|> and EOS");
    }
    template_free(t);
}

/* A GGUF of n string keys and no tensors: enough for elm_model_about. */
static const char *write_gguf(const char *name, const char *const *kv, size_t n)
{
    char buf[4096];
    size_t len = 0;
#define PUT(p, k) (memcpy(buf + len, (p), (k)), len += (k))
    uint32_t u32 = 3;
    uint64_t u64 = 0;
    PUT("GGUF", 4);
    PUT(&u32, 4); /* version (the tests run little-endian) */
    PUT(&u64, 8); /* tensors */
    u64 = n;
    PUT(&u64, 8);
    for (size_t i = 0; i < n; i++) {
        u64 = strlen(kv[2 * i]);
        PUT(&u64, 8);
        PUT(kv[2 * i], u64);
        u32 = 8; /* string */
        PUT(&u32, 4);
        u64 = strlen(kv[2 * i + 1]);
        PUT(&u64, 8);
        PUT(kv[2 * i + 1], u64);
    }
    while (len % 32)
        buf[len++] = 0;
#undef PUT
    return tap_write_tmp(name, buf, len);
}

/* What a model is decides its template, never a folder's spelling alone
 * (issue 50): a Hub snapshot is named for a commit. */
static void test_template_for_model(void)
{
    char why[320];
    const char *hub = "/c/hub/models--apple--OpenELM-270M-Instruct/snapshots/"
                      "0123456789abcdef0123456789abcdef01234567";
    is_str(template_for_model(hub, why, sizeof why), "openelm-instruct",
           "a Hub snapshot (commit-named) of an Instruct repo -> openelm-instruct");
    is_str(why, "repo id apple/OpenELM-270M-Instruct", "... and says why: %s", why);
    char *gguf = x_asprintf("%s/elmchat-q8_0.gguf/", hub);
    is_str(template_for_model(gguf, why, sizeof why), "openelm-instruct",
           "the GGUF pull --quantize left in the snapshot too (%s)", why);
    free(gguf);
    is_str(template_for_model("/c/hub/models--apple--OpenELM-3B/snapshots/abc123", why,
                              sizeof why),
           "plain", "a base repo's snapshot -> plain (%s)", why);
    ok(strstr(why, "apple/OpenELM-3B") != NULL, "... naming the repo id");
    is_str(template_for_model("server:http://127.0.0.1:1", why, sizeof why), "plain",
           "a llama-server: plain (%s)", why);
    ok(strstr(why, "-t openelm-instruct") != NULL, "... saying how to choose another");
    is_str(template_for_model(NULL, NULL, 0), "plain", "no model: plain, why may be NULL");

    /* metadata beats the folder's name */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/some-instruct-tune", tap_tmpdir());
    mkdir(dir, 0700);
    char *cfg = x_asprintf("%s/config.json", dir);
    FILE *f = fopen(cfg, "w");
    fputs("{\"_name_or_path\": \"apple/OpenELM-450M\", \"model_type\": \"openelm\"}", f);
    fclose(f);
    is_str(template_for_model(dir, why, sizeof why), "plain",
           "config.json's _name_or_path of a base model beats an *instruct* folder name");
    is_str(why, "config.json _name_or_path apple/OpenELM-450M, not an Instruct model",
           "... and says so: %s", why);
    f = fopen(cfg, "w");
    fputs("{\"_name_or_path\": \"apple/OpenELM-450M-Instruct\"}", f);
    fclose(f);
    snprintf(dir, sizeof dir, "%s/a-tune", tap_tmpdir()); /* nothing in its name */
    mkdir(dir, 0700);
    char *cfg2 = x_asprintf("%s/config.json", dir);
    rename(cfg, cfg2);
    is_str(template_for_model(dir, why, sizeof why), "openelm-instruct",
           "config.json's _name_or_path of an Instruct model (folder a-tune: %s)", why);
    char *tc = x_asprintf("%s/tokenizer_config.json", dir);
    f = fopen(tc, "w");
    fputs("{\"chat_template\": \"{% for m in messages %}<|im_start|>{{ m.role }}\\n"
          "{{ m.content }}<|im_end|>{% endfor %}\"}", f);
    fclose(f);
    is_str(template_for_model(dir, why, sizeof why), "chatml",
           "a chat_template key with ChatML's markers beats every name");
    is_str(why, "the model's tokenizer_config.json chat_template", "... and says so: %s", why);
    remove(tc);
    remove(cfg2);
    free(tc);
    free(cfg2);
    free(cfg);

    /* a GGUF's own keys beat its file name */
    static const char *const base[] = {"general.name", "OpenELM-270M"};
    is_str(template_for_model(write_gguf("m-instruct.gguf", base, 1), why, sizeof why), "plain",
           "a GGUF whose general.name is a base model's: plain, whatever its file name (%s)",
           why);
    static const char *const ft[] = {"general.name", "OpenELM-270M", "general.finetune",
                                     "Instruct"};
    is_str(template_for_model(write_gguf("m.gguf", ft, 2), why, sizeof why), "openelm-instruct",
           "general.finetune Instruct: openelm-instruct (%s)", why);
    static const char *const hash[] = {"general.name", "0123456789abcdef0123456789abcdef01234567"};
    is_str(template_for_model(write_gguf("x-instruct.gguf", hash, 1), why, sizeof why),
           "openelm-instruct", "a commit id as general.name says nothing: the file name (%s)", why);
    static const char *const jinja[] = {
        "general.name", "OpenELM-270M", "tokenizer.chat_template",
        "{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}{% endfor %}<|user|><|assistant|>"};
    is_str(template_for_model(write_gguf("chat.gguf", jinja, 2), why, sizeof why),
           "openelm-instruct", "tokenizer.chat_template with <|user|>/<|assistant|> wins");
    is_str(why, "the model's tokenizer.chat_template", "... and says so: %s", why);

    /* the bundled GGUF names itself (general.name) */
    char *small = x_asprintf("%s/models/guide-small-instruct.gguf",
                             getenv("top_srcdir") ? getenv("top_srcdir") : "..");
    is_str(template_for_model(small, why, sizeof why), "openelm-instruct",
           "the bundled GGUF: openelm-instruct (%s)", why);
    ok(strncmp(why, "general.name ", 13) == 0, "... from its general.name");
    free(small);
}

static void test_lookup(void)
{
    char *cfg = x_asprintf("%s/cfg", tap_tmpdir());
    char *user = x_asprintf("%s/elmchat/prompts", cfg);
    ok(paths_mkdir_p(user) == 0, "mkdir -p %s", user);
    struct stat st;
    ok(stat(user, &st) == 0 && (st.st_mode & 0777) == 0700, "created folders are mode 0700");
    setenv("XDG_CONFIG_HOME", cfg, 1);
    char *dir = paths_dir(PATHS_CONFIG, "prompts");
    is_str(dir, user, "paths_dir(CONFIG) honours XDG_CONFIG_HOME");
    free(dir);
    setenv("XDG_CONFIG_HOME", "relative/path", 1);
    setenv("HOME", "/home/someone", 1);
    dir = paths_dir(PATHS_CACHE, NULL);
    unsetenv("XDG_CACHE_HOME");
    free(dir);
    dir = paths_dir(PATHS_CONFIG, NULL);
    is_str(dir, "/home/someone/.config/elmchat", "a relative XDG value is ignored");
    free(dir);
    unsetenv("XDG_DATA_HOME");
    dir = paths_dir(PATHS_DATA, "sessions");
    is_str(dir, "/home/someone/.local/share/elmchat/sessions", "XDG_DATA_HOME fallback");
    free(dir);
    unsetenv("XDG_STATE_HOME");
    dir = paths_dir(PATHS_STATE, NULL);
    is_str(dir, "/home/someone/.local/state/elmchat", "XDG_STATE_HOME fallback");
    free(dir);
    setenv("XDG_CONFIG_HOME", cfg, 1);

    /* Without the override the build tree's prompts/ is found (the test runs
     * from the build tree), and the user folder comes first. */
    char *override = x_strdup(getenv("ELMCHAT_PROMPTS_DIR"));
    unsetenv("ELMCHAT_PROMPTS_DIR");
    char **dirs = template_search_dirs();
    ok(dirs[0] && strcmp(dirs[0], user) == 0, "user prompts first (%s)", dirs[0]);
    ok(dirs[1] && strstr(dirs[1], "/prompts") && dirs[2] && strstr(dirs[2], PKGDATADIR),
       "then the source tree's prompts (%s), then the installed ones", dirs[1]);
    strv_free(dirs);

    /* A user template shadows the shipped one of the same name. */
    char *shadow = x_asprintf("%s/plain.yaml", user);
    FILE *f = fopen(shadow, "w");
    fputs("name: plain\ndescription: mine\nroles:\n  system: {turn: \"{content}\"}\n"
          "  user: {turn: \"{content}\"}\n  assistant: {turn: \"{content}\"}\n"
          "generation_prompt: \"\"\n",
          f);
    fclose(f);
    struct template *t = template_load("plain", err, sizeof err);
    ok(t && strcmp(t->description, "mine") == 0 && strcmp(t->path, shadow) == 0,
       "$XDG_CONFIG_HOME/elmchat/prompts/plain.yaml shadows the shipped plain");
    template_free(t);
    char **names = template_list();
    size_t n = 0, n_plain = 0;
    for (char **p = names; *p; p++, n++)
        n_plain += strcmp(*p, "plain") == 0;
    ok(n >= 4 && n_plain == 1, "template_list: %zu names, plain once", n);
    strv_free(names);
    remove(shadow);
    t = template_load("plain", err, sizeof err);
    ok(t && strcmp(t->description, "mine") != 0, "without it the shipped plain loads");
    template_free(t);
    t = template_load("no-such-template", err, sizeof err);
    ok(!t && strstr(err, "template 'no-such-template' not found (looked in"), "not found: %s",
       err);
    t = template_load("../etc/passwd", err, sizeof err);
    ok(!t, "a path with '/' is a file, not a name");
    template_free(t);
    free(shadow);
    free(user);
    free(cfg);
    setenv("ELMCHAT_PROMPTS_DIR", override, 1);
    free(override);

    is_str(template_default_for_model("/m/OpenELM-270M-Instruct"), "openelm-instruct",
           "Instruct folder -> openelm-instruct");
    is_str(template_default_for_model("/m/openelm-270m-instruct.gguf/"), "openelm-instruct",
           "case-insensitive, trailing slash");
    is_str(template_default_for_model("/instruct/OpenELM-270M"), "plain",
           "only the last path component counts");
    is_str(template_default_for_model("270M"), "plain", "base model -> plain");
    test_template_for_model();
}

/* ------------------------------------------------ token ids (real vocab) */

static const elm_tokenizer *tok;

static struct idvec enc(const char *s)
{
    struct idvec v = {0};
    int32_t *ids;
    size_t n;
    if (elm_tokenize(tok, s, strlen(s), false, &ids, &n) < 0)
        bail_out("elm_tokenize failed");
    idvec_append(&v, ids, n);
    free(ids);
    return v;
}

/* got == want; if not, the first difference in a diagnostic. */
static bool same_ids(const struct idvec *got, const int32_t *want, size_t n_want, const char *what)
{
    bool same = got->n == n_want && memcmp(got->v, want, n_want * sizeof *want) == 0;
    if (!same) {
        diag("%s: got %zu ids, want %zu", what, got->n, n_want);
        for (size_t i = 0; i < got->n || i < n_want; i++) {
            long long g = i < got->n ? got->v[i] : -1;
            long long w = i < n_want ? want[i] : -1;
            if (g != w) {
                diag("  first difference at %zu: got %lld want %lld", i, g, w);
                break;
            }
        }
    }
    return same;
}

/* ------------------------------------------------ goldens (independent) */

/* tests/data/templates/goldens.json: conversations and their ids computed by
 * tests/reference/template_goldens.mjs with the real SentencePiece library
 * from the formats themselves (docs/OPENELM.md §5 for openelm-instruct), never
 * from this code.  Each case is checked three ways: the whole conversation
 * at once, turn by turn with stored replies, and turn by turn the way the
 * app does it (the reply's ids sampled, then reply_end). */
static json_object *goldens;

static json_object *jget(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v))
        bail_out("goldens.json: missing key '%s'", key);
    return v;
}

static void json_ids(json_object *arr, struct idvec *out)
{
    idvec_clear(out);
    for (size_t i = 0; i < json_object_array_length(arr); i++)
        idvec_push(out, (int32_t)json_object_get_int(json_object_array_get_idx(arr, i)));
}

static bool prefix_is(const struct idvec *got, const struct idvec *want, size_t n)
{
    return got->n == n && n <= want->n && memcmp(got->v, want->v, n * sizeof *got->v) == 0;
}

/* Turn by turn.  sampled: each reply is the golden's sampled ids followed by
 * reply_end (as the app does); else template_render_reply (a stored reply). */
static void golden_incremental(const struct template *t, const char *system,
                               const struct template_msg *m, size_t n, bool gen,
                               json_object *replies, const struct idvec *want,
                               const char *pending, bool sampled, const char *name)
{
    struct template_render r;
    template_render_init(&r, t, tok);
    struct idvec inc = {0};
    bool okay = template_render_system(&r, system, &inc) == 0;
    size_t k = 0;
    for (size_t i = 0; i < n && okay; i++) {
        if (m[i].role == ROLE_USER) {
            okay = template_render_user(&r, m[i].content, &inc) == 0;
            continue;
        }
        if (k >= json_object_array_length(replies)) {
            ok(0, "%s: fewer reply spans than replies", name);
            okay = false;
            break;
        }
        json_object *sp = json_object_array_get_idx(replies, k++);
        size_t start = (size_t)json_object_get_int(jget(sp, "start"));
        size_t end = (size_t)json_object_get_int(jget(sp, "end"));
        bool eos = strcmp(json_object_get_string(jget(sp, "how")), "eos") == 0;
        okay = template_render_generation_prompt(&r, &inc) == 0;
        /* What the model is given before this reply. */
        if (okay && !prefix_is(&inc, want, start)) {
            diag("%s: prompt before reply %zu: %zu ids, want the golden's first %zu", name, k,
                 inc.n, start);
            break;
        }
        if (!okay)
            break;
        if (sampled) {
            idvec_append(&inc, want->v + start, end - start);
            okay = template_render_reply_end(&r, eos ? TEMPLATE_END_EOS : TEMPLATE_END_STOP,
                                             &inc) == 0;
        } else {
            okay = template_render_reply(&r, m[i].content, &inc) == 0;
        }
    }
    if (okay && gen)
        okay = template_render_generation_prompt(&r, &inc) == 0;
    char what[512];
    snprintf(what, sizeof what, "%s: turn by turn, %s replies", name,
             sampled ? "sampled" : "stored");
    ok(okay && same_ids(&inc, want->v, want->n, what), "%s", what);
    if (!gen) {
        snprintf(what, sizeof what, "%s: turn by turn, %s replies: pending text", name,
                 sampled ? "sampled" : "stored");
        ok(r.n_pending == strlen(pending) && memcmp(r.pending, pending, r.n_pending) == 0, "%s",
           what);
    }
    template_render_fini(&r);
    idvec_fini(&inc);
}

static void golden_case(json_object *c)
{
    const char *name = json_object_get_string(jget(c, "name"));
    struct template *t = template_load(json_object_get_string(jget(c, "template")), err,
                                       sizeof err);
    if (!t)
        bail_out("%s", err);
    json_object *js = jget(c, "system");
    const char *system = json_object_is_type(js, json_type_null) ? NULL : json_object_get_string(js);
    json_object *jm = jget(c, "messages");
    size_t n = json_object_array_length(jm);
    struct template_msg *m = x_calloc(n ? n : 1, sizeof *m);
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(jm, i);
        if (!role_parse(json_object_get_string(jget(e, "role")), &m[i].role))
            bail_out("%s: bad role", name);
        m[i].content = json_object_get_string(jget(e, "content"));
    }
    bool gen = json_object_get_boolean(jget(c, "add_generation_prompt"));
    json_object *replies = jget(c, "replies");
    struct idvec want = {0}, got = {0};
    json_ids(jget(c, "ids"), &want);

    const char *pending = json_object_get_string(jget(c, "pending"));

    char what[512];
    snprintf(what, sizeof what, "%s: template_render_conversation", name);
    ok(template_render_conversation(t, tok, system, m, n, gen, &got) == 0 &&
           same_ids(&got, want.v, want.n, what),
       "%s", what);
    golden_incremental(t, system, m, n, gen, replies, &want, pending, false, name);
    golden_incremental(t, system, m, n, gen, replies, &want, pending, true, name);
    idvec_fini(&got);
    idvec_fini(&want);
    free(m);
    template_free(t);
}

static void test_golden(void)
{
    goldens = json_object_from_file(tap_data_path("templates/goldens.json"));
    if (!goldens)
        bail_out("cannot read %s", tap_data_path("templates/goldens.json"));
    is_str(json_object_get_string(jget(goldens, "format")), "elmchat-template-goldens-1",
           "goldens.json format");
    json_object *cases = jget(goldens, "cases");
    size_t n = json_object_array_length(cases), n_oe = 0, n_multi = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *c = json_object_array_get_idx(cases, i);
        n_oe += strcmp(json_object_get_string(jget(c, "template")), "openelm-instruct") == 0;
        n_multi += json_object_array_length(jget(c, "replies")) > 0;
        golden_case(c);
    }
    ok(n >= 26 && n_oe >= 9 && n_multi >= 14, "%zu golden cases (%zu openelm-instruct, %zu multi-turn)",
       n, n_oe, n_multi);
}

/* The golden ids of the case called name, space-separated, newline-ended. */
static char *golden_ids_line(const char *name)
{
    json_object *cases = jget(goldens, "cases");
    for (size_t i = 0; i < json_object_array_length(cases); i++) {
        json_object *c = json_object_array_get_idx(cases, i);
        if (strcmp(json_object_get_string(jget(c, "name")), name) != 0)
            continue;
        json_object *ids = jget(c, "ids");
        size_t len = 0, cap = 16 * json_object_array_length(ids) + 2;
        char *s = x_malloc(cap);
        for (size_t j = 0; j < json_object_array_length(ids); j++)
            len += (size_t)snprintf(s + len, cap - len, "%s%d", j ? " " : "",
                                    json_object_get_int(json_object_array_get_idx(ids, j)));
        snprintf(s + len, cap - len, "\n");
        return s;
    }
    bail_out("no golden case '%s'", name);
}

/* How a model's reply to template t ends (the shipped templates): on a stop
 * string that begins the closing, else on EOS when the closing has one. */
static enum template_end sampled_end(const struct template *t)
{
    const char *close = strstr(t->turn[ROLE_ASSISTANT], "{content}") + strlen("{content}");
    for (size_t i = 0; i < t->n_stop; i++)
        if (strncmp(close, t->stop[i], strlen(t->stop[i])) == 0)
            return TEMPLATE_END_STOP;
    return strstr(close, "{eos}") ? TEMPLATE_END_EOS : TEMPLATE_END_CUT;
}

/* Incremental (turn by turn, as the app does) == whole conversation; and
 * the app's path, each reply's ids "sampled" (copied from the stored
 * rendering) then reply_end, gives the same ids: what follows a reply does
 * not depend on whether its ids were sampled or re-encoded. */
static void check_incremental(const struct template *t, const char *system,
                              const struct template_msg *m, size_t n, const char *what)
{
    struct template_render r, rs;
    template_render_init(&r, t, tok);
    template_render_init(&rs, t, tok);
    struct idvec inc = {0}, whole = {0}, samp = {0};
    bool okay = template_render_system(&r, system, &inc) == 0 &&
                template_render_system(&rs, system, &samp) == 0;
    for (size_t i = 0; i < n && okay; i++) {
        if (m[i].role == ROLE_USER) {
            okay = template_render_user(&r, m[i].content, &inc) == 0 &&
                   template_render_user(&rs, m[i].content, &samp) == 0;
        } else {
            okay = template_render_generation_prompt(&r, &inc) == 0 &&
                   template_render_generation_prompt(&rs, &samp) == 0;
            size_t gen = inc.n;
            okay = okay && template_render_reply(&r, m[i].content, &inc) == 0;
            if (okay) {
                idvec_append(&samp, inc.v + gen, inc.n - gen);
                okay = template_render_reply_end(&rs, sampled_end(t), &samp) == 0;
            }
        }
        /* After each complete exchange the prefix must agree too. */
        if (okay && m[i].role == ROLE_ASSISTANT) {
            idvec_clear(&whole);
            okay = template_render_conversation(t, tok, system, m, i + 1, false, &whole) == 0 &&
                   whole.n == inc.n && memcmp(whole.v, inc.v, inc.n * sizeof *inc.v) == 0;
            if (!okay)
                diag("%s: differs after message %zu (%zu vs %zu ids)", what, i, inc.n, whole.n);
        }
    }
    if (okay)
        okay = template_render_generation_prompt(&r, &inc) == 0 &&
               template_render_generation_prompt(&rs, &samp) == 0;
    idvec_clear(&whole);
    bool same_whole = okay &&
                      template_render_conversation(t, tok, system, m, n, true, &whole) == 0 &&
                      whole.n == inc.n && memcmp(whole.v, inc.v, inc.n * sizeof *inc.v) == 0;
    ok(same_whole, "%s: incremental == whole (%zu ids)", what, inc.n);
    ok(okay && samp.n == inc.n && memcmp(samp.v, inc.v, inc.n * sizeof *inc.v) == 0,
       "%s: sampled replies + reply_end == stored replies (%zu ids)", what, samp.n);
    template_render_fini(&r);
    template_render_fini(&rs);
    idvec_fini(&inc);
    idvec_fini(&whole);
    idvec_fini(&samp);
}

static void test_incremental(void)
{
    static const char *const names[] = {"openelm-instruct", "plain", "llama-2-chat", "chatml"};
    static const char *const texts[] = {
        "Hello", "", " leading space", "trailing space ", "two\nlines\n", "\n",
        "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80", "</s> <s> <unk> {content}",
        "tab\there", "  ", "1234", "a: b --- 'q' \"dq\"\r\n",
    };
    unsigned seed = 12345;
    for (size_t ti = 0; ti < ARRAY_LEN(names); ti++) {
        struct template *t = template_load(names[ti], err, sizeof err);
        if (!t)
            bail_out("%s", err);
        for (int trial = 0; trial < 12; trial++) {
            struct template_msg m[7];
            size_t n = (size_t)(trial % 4) * 2 + 1;
            for (size_t i = 0; i < n; i++) {
                seed = seed * 1103515245u + 12345u;
                m[i].role = i % 2 ? ROLE_ASSISTANT : ROLE_USER;
                m[i].content = texts[(seed >> 16) % ARRAY_LEN(texts)];
            }
            const char *system = trial % 3 == 0 ? NULL : trial % 3 == 1 ? "" : "Be kind.";
            char what[128];
            snprintf(what, sizeof what, "%s trial %d (%zu messages)", names[ti], trial, n);
            check_incremental(t, system, m, n, what);
        }
        template_free(t);
    }
}

/* The app's path: sampled ids (ending in EOS) then reply_end(true). */
static void test_sampled_reply(void)
{
    struct template *t = template_load("openelm-instruct", err, sizeof err);
    if (!t)
        bail_out("%s", err);
    struct template_render r;
    template_render_init(&r, t, tok);
    struct idvec seq = {0};
    template_render_system(&r, NULL, &seq);
    template_render_user(&r, "What is 2+2?", &seq);
    template_render_generation_prompt(&r, &seq);
    is_int(r.state, TEMPLATE_IN_REPLY, "state IN_REPLY after the generation prompt");
    size_t before = seq.n;
    idvec_push(&seq, 29946); /* "4" sampled */
    idvec_push(&seq, 2);     /* EOS sampled */
    is_int(template_render_reply_end(&r, TEMPLATE_END_EOS, &seq), 0, "reply_end after a sampled EOS");
    is_int((long long)seq.n, (long long)before + 2, "a sampled EOS is not added twice");
    is_int(r.state, TEMPLATE_AFTER_REPLY, "state AFTER_REPLY");
    ok(r.n_pending == 1 && r.pending[0] == '\n', "the turn's trailing \"\\n\" is pending");
    size_t mid = seq.n;
    template_render_user(&r, "And 3+3?", &seq);
    struct idvec e = enc("\n<|user|>\nAnd 3+3?");
    ok(seq.n == mid + e.n + 1 && memcmp(seq.v + mid, e.v, e.n * sizeof *e.v) == 0 &&
           seq.v[seq.n - 1] == 2,
       "the next user turn is enc(\"\\n<|user|>\\nAnd 3+3?\") [2]: one run across turns");
    idvec_fini(&e);

    /* Cut by max tokens: the closing EOS is added. */
    template_render_generation_prompt(&r, &seq);
    before = seq.n;
    idvec_push(&seq, 29946);
    template_render_reply_end(&r, TEMPLATE_END_CUT, &seq);
    ok(seq.n == before + 2 && seq.v[seq.n - 1] == 2, "an interrupted reply gets its EOS");

    /* Resuming after a snapshot: same pending text as rendering. */
    struct template_render r2;
    template_render_init(&r2, t, tok);
    template_render_set_after_reply(&r2);
    ok(r2.state == TEMPLATE_AFTER_REPLY && r2.n_pending == r.n_pending &&
           memcmp(r2.pending, r.pending, r.n_pending) == 0,
       "set_after_reply restores the pending text");
    ok(template_render_system(&r2, NULL, &seq) == ELM_E_INVALID,
       "the system turn cannot come after a reply");
    ok(template_render_reply_end(&r2, TEMPLATE_END_CUT, &seq) == ELM_E_INVALID,
       "reply_end outside a reply is refused");
    template_render_fini(&r2);
    template_render_fini(&r);
    idvec_fini(&seq);
    template_free(t);

    /* llama-2-chat: the space before the reply is part of the reply. */
    t = template_load("llama-2-chat", err, sizeof err);
    if (!t)
        bail_out("%s", err);
    const struct template_msg m[] = {{ROLE_USER, "Hi"}, {ROLE_ASSISTANT, "Hello"}};
    struct idvec got = {0};
    template_render_conversation(t, tok, NULL, m, 2, false, &got);
    struct idvec w = enc("[INST] Hi [/INST] Hello ");
    ok(got.n == w.n + 2 && got.v[0] == 1 && memcmp(got.v + 1, w.v, w.n * sizeof *w.v) == 0 &&
           got.v[got.n - 1] == 2,
       "llama-2-chat: [1] enc(\"[INST] Hi [/INST] Hello \") [2], as Meta's code encodes it");
    idvec_fini(&w);
    idvec_fini(&got);
    template_free(t);

    /* Why chatml's continuation after a reply is exact (template.h): no
     * piece of the LLaMA vocabulary but the byte piece <0x0A> holds "\n",
     * so no piece spans the boundary before it. */
    int n_nl = 0;
    for (int32_t id = 0; id < elm_tokenizer_n_vocab(tok); id++) {
        const char *piece = elm_tokenizer_piece(tok, id);
        n_nl += piece && elm_tokenizer_type(tok, id) != ELM_PIECE_BYTE && strchr(piece, '\n');
    }
    is_int(n_nl, 0, "no LLaMA piece but the byte <0x0A> contains a newline");

    /* chatml: a reply that stopped on "<|im_end|>" keeps those tokens; the
     * rest of the closing ("\n") continues the run: no dummy prefix. */
    t = template_load("chatml", err, sizeof err);
    if (!t)
        bail_out("%s", err);
    template_render_init(&r, t, tok);
    template_render_user(&r, "Hi", &seq);
    template_render_generation_prompt(&r, &seq);
    is_int(template_render_reply_end(&r, TEMPLATE_END_STOP, &seq), 0, "chatml reply_end(STOP)");
    ok(r.n_pending == 1 && r.pending[0] == '\n', "the stop string is not rendered again");
    size_t mid2 = seq.n;
    template_render_user(&r, "Q", &seq);
    template_render_generation_prompt(&r, &seq);
    struct idvec e2 = enc("\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n");
    ok(e2.n > 1 && e2.v[0] == 29871 && seq.n == mid2 + e2.n - 1 &&
           memcmp(seq.v + mid2, e2.v + 1, (e2.n - 1) * sizeof *e2.v) == 0,
       "chatml: the next turn is enc(\"\\n<|im_start|>user...\") without its dummy prefix");
    idvec_fini(&e2);
    template_render_fini(&r);
    idvec_fini(&seq);
    template_free(t);
}

int main(int argc, char **argv)
{
    (void)argc;
    /* The uninstalled program finds the shipped prompts from its own path
     * (src/base/platform.c: argv[0] with --enable-portable-fallbacks). */
    platform_set_argv0(argv[0]);
    plan_lazy();
    char *prompts = x_asprintf("%s/prompts", getenv("top_srcdir") ? getenv("top_srcdir") : "..");
    setenv("ELMCHAT_PROMPTS_DIR", prompts, 1);
    free(prompts);

    struct idvec v = {0};
    for (int i = 0; i < 1000; i++)
        idvec_push(&v, i);
    ok(v.n == 1000 && v.v[999] == 999, "idvec grows");
    idvec_fini(&v);

    test_bad_files();
    test_good_files();
    test_shipped();
    test_lookup();

    /* The real LLaMA-2 vocabulary, fetched at check time. */
    const char *path = getenv("ELMCHAT_TOKENIZER_MODEL");
    char buf[4096] = "";
    if (!path || !*path) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "sh '%s/tests/lib/fetch-tokenizer.sh' 2>&1",
                 getenv("top_srcdir") ? getenv("top_srcdir") : "..");
        FILE *p = popen(cmd, "r");
        if (p) {
            if (!fgets(buf, sizeof buf, p))
                buf[0] = '\0';
            int st = pclose(p);
            buf[strcspn(buf, "\n")] = '\0';
            if (st != 0) {
                diag("no tokenizer: %s", buf);
                buf[0] = '\0';
            }
        }
        path = buf;
    }
    elm_tokenizer *t = NULL;
    if (*path && elm_tokenizer_load(path, &t, err, sizeof err) == ELM_OK) {
        tok = t;
        test_golden();
        test_incremental();
        test_sampled_reply();
        elm_tokenizer_free(t);
        /* The command line: run --dry-run with only a tokenizer. */
        const char *bin = getenv("ELMCHAT");
        char cmd[8192], out[4096] = "";
        snprintf(cmd, sizeof cmd,
                 "'%s' run --dry-run --tokenizer '%s' -t openelm-instruct -p 'What is 2+2?'",
                 bin ? bin : "./elmchat", path);
        FILE *p = popen(cmd, "r");
        if (p) {
            if (!fgets(out, sizeof out, p))
                out[0] = '\0';
            pclose(p);
        }
        char *want = golden_ids_line("openelm-instruct: one turn, no system prompt");
        is_str(out, want, "elmchat run --dry-run prints the golden ids on one line");
        free(want);
    } else {
        skip(1, "the LLaMA-2 tokenizer.model is not available (tests/lib/fetch-tokenizer.sh)");
    }
    json_object_put(goldens);
    return done_testing();
}
