/* jsonfile.c: strict JSON parsing of whole files and buffers with json-c. */
#include "config.h"

#include "engine/formats/jsonfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/error.h"

elm_status elm_json_parse(const char *buf, size_t len, const char *name, json_object **out,
                          char *err, size_t err_size)
{
    if (len > (size_t)INT32_MAX)
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: JSON text too large", name);
    json_tokener *tok = json_tokener_new_ex(64);
    if (!tok)
        return elm_set_error(err, err_size, ELM_E_NOMEM, "%s: out of memory", name);
    json_object *obj = json_tokener_parse_ex(tok, buf, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (jerr == json_tokener_continue || (!obj && jerr == json_tokener_success)) {
        json_object_put(obj);
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: malformed JSON: unexpected end",
                             name);
    }
    if (jerr != json_tokener_success) {
        json_object_put(obj);
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: malformed JSON at byte %zu: %s",
                             name, end, json_tokener_error_desc(jerr));
    }
    /* Only whitespace (safetensors pads its header with spaces) may follow. */
    for (size_t i = end; i < len; i++) {
        char ch = buf[i];
        if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r') {
            json_object_put(obj);
            return elm_set_error(err, err_size, ELM_E_FORMAT,
                                 "%s: malformed JSON: trailing data at byte %zu", name, i);
        }
    }
    *out = obj;
    return ELM_OK;
}

elm_status elm_json_load(const char *path, size_t max_size, json_object **out, char *err,
                         size_t err_size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return elm_set_error(err, err_size, ELM_E_IO, "%s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t len = 0, cap = 0;
    elm_status st = ELM_OK;
    for (;;) {
        if (len == cap) {
            if (cap >= max_size) {
                st = elm_set_error(err, err_size, ELM_E_FORMAT, "%s: larger than %zu bytes", path,
                                   max_size);
                break;
            }
            cap = cap ? cap * 2 : 4096;
            if (cap > max_size)
                cap = max_size;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                st = elm_set_error(err, err_size, ELM_E_NOMEM, "%s: out of memory", path);
                break;
            }
            buf = nb;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f))
                st = elm_set_error(err, err_size, ELM_E_IO, "%s: read error", path);
            break;
        }
    }
    fclose(f);
    if (!st)
        st = elm_json_parse(buf ? buf : "", len, path, out, err, err_size);
    free(buf);
    return st;
}
