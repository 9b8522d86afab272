/* about.c: what a model says it is, read without its weights (elm.h,
 * elm_model_about): the application chooses a chat template from it. */
#include "config.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/base/error.h"
#include "engine/formats/gguf.h"
#include "engine/formats/jsonfile.h"

static void copy_text(char *dst, size_t size, const char *s, size_t len)
{
    if (len >= size)
        len = size - 1;
    memcpy(dst, s, len);
    dst[len] = '\0';
}

/* KEY's string (s NULL when the key is absent; an error when it is no string). */
static elm_status gguf_text(const struct elm_gguf *g, const char *key, const char **s, size_t *len,
                            char *err, size_t err_size)
{
    *s = NULL;
    *len = 0;
    return elm_gguf_get_string(g, key, false, s, len, err, err_size);
}

static elm_status about_gguf(const char *path, struct elm_model_about *a, char *err,
                             size_t err_size)
{
    struct elm_gguf *g;
    elm_status st = elm_gguf_open(path, &g, err, err_size);
    if (st)
        return st;
    const char *s;
    size_t len;
    if (!(st = gguf_text(g, "general.name", &s, &len, err, err_size)) && s) {
        copy_text(a->name, sizeof a->name, s, len);
        a->name_from = "general.name";
    }
    if (!st && !(st = gguf_text(g, "general.finetune", &s, &len, err, err_size)) && s)
        copy_text(a->finetune, sizeof a->finetune, s, len);
    if (!st && !(st = gguf_text(g, "tokenizer.chat_template", &s, &len, err, err_size)) && s) {
        if (!(a->chat_template = malloc(len + 1))) {
            st = elm_set_error(err, err_size, ELM_E_NOMEM, "out of memory");
        } else {
            copy_text(a->chat_template, len + 1, s, len);
            a->chat_template_from = "tokenizer.chat_template";
        }
    }
    elm_gguf_close(g);
    return st;
}

/* KEY's string in DIR/FILE when the file is there and KEY is a string. */
static elm_status json_string(const char *dir, const char *file, const char *key, char **out,
                              char *err, size_t err_size)
{
    char path[PATH_MAX];
    struct stat sb;
    *out = NULL;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, file) >= sizeof path ||
        stat(path, &sb) != 0)
        return ELM_OK;
    json_object *root, *v;
    elm_status st = elm_json_load(path, 1 << 24, &root, err, err_size);
    if (st)
        return st;
    if (json_object_is_type(root, json_type_object) && json_object_object_get_ex(root, key, &v) &&
        json_object_is_type(v, json_type_string)) {
        *out = strdup(json_object_get_string(v));
        if (!*out)
            st = elm_set_error(err, err_size, ELM_E_NOMEM, "out of memory");
    }
    json_object_put(root);
    return st;
}

elm_status elm_model_about(const char *path, struct elm_model_about *a, char *err, size_t err_size)
{
    memset(a, 0, sizeof *a);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return elm_set_error(err, err_size, ELM_E_IO, "%s: cannot stat", path);
    if (!S_ISDIR(sb.st_mode))
        return about_gguf(path, a, err, err_size);
    /* A Hugging Face folder: transformers' save_pretrained writes the repo
     * id it came from as _name_or_path; a tokenizer_config.json may carry
     * the chat template. */
    char *name;
    elm_status st = json_string(path, "config.json", "_name_or_path", &name, err, err_size);
    if (!st && name) {
        copy_text(a->name, sizeof a->name, name, strlen(name));
        a->name_from = "config.json _name_or_path";
    }
    free(name);
    if (!st &&
        !(st = json_string(path, "tokenizer_config.json", "chat_template", &a->chat_template, err,
                           err_size)) &&
        a->chat_template)
        a->chat_template_from = "tokenizer_config.json chat_template";
    if (st)
        elm_model_about_fini(a);
    return st;
}

void elm_model_about_fini(struct elm_model_about *a)
{
    free(a->chat_template);
    memset(a, 0, sizeof *a);
}
