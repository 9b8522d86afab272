/* jsonfile.h: strict JSON parsing of whole files and buffers with json-c
 * (engine-internal). */
#ifndef ELMCHAT_ENGINE_JSONFILE_H
#define ELMCHAT_ENGINE_JSONFILE_H

#include <json-c/json.h>
#include <stddef.h>

#include "engine/elm.h"

/* Parse len bytes as exactly one JSON value (trailing whitespace allowed).
 * name is used in messages.  *out is owned (json_object_put). */
elm_status elm_json_parse(const char *buf, size_t len, const char *name, json_object **out,
                          char *err, size_t err_size);
/* Read a whole file of at most max_size bytes and parse it. */
elm_status elm_json_load(const char *path, size_t max_size, json_object **out, char *err,
                         size_t err_size);

#endif
