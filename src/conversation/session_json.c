/* session_json.c: the tree as JSON (session_json.h), with json-c. */
#include "config.h"

#include "src/conversation/session_json.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "src/base/utf8.h"
#include "src/base/xalloc.h"

static json_object *str_or_null(const char *s)
{
    if (!s)
        return NULL;
    if (utf8_valid(s, strlen(s), NULL))
        return json_object_new_string(s);
    char *clean = utf8_sanitize(s, strlen(s));
    json_object *o = json_object_new_string(clean);
    free(clean);
    return o;
}

static json_object *time_str(time_t t)
{
    char buf[64] = "";
    struct tm tm;
    if (t && gmtime_r(&t, &tm))
        strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_object_new_string(buf);
}

static json_object *message_json(const struct message *m, bool on_path)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_int64(m->id));
    json_object_object_add(o, "parent", m->parent ? json_object_new_int64(m->parent) : NULL);
    json_object_object_add(o, "role", json_object_new_string(role_name(m->role)));
    json_object_object_add(o, "content", str_or_null(m->content));
    json_object_object_add(o, "model", str_or_null(m->model));
    json_object_object_add(o, "time", time_str(m->time));
    json_object_object_add(o, "on_path", json_object_new_boolean(on_path));
    json_object_object_add(o, "interrupted", json_object_new_boolean(m->interrupted));
    json_object_object_add(o, "pinned", json_object_new_boolean(m->pinned));
    json_object_object_add(o, "out_of_context", json_object_new_boolean(m->out_of_context));
    return o;
}

static int by_id(const void *a, const void *b)
{
    uint32_t x = (*(const struct message *const *)a)->id, y = (*(const struct message *const *)b)->id;
    return (x > y) - (x < y);
}

char *session_to_json(const struct session *s)
{
    json_object *root = json_object_new_object();
    json_object_object_add(root, "format", json_object_new_string("elmchat-tree"));
    json_object_object_add(root, "version", json_object_new_int(SESSION_JSON_VERSION));
    json_object_object_add(root, "name", str_or_null(s->name));
    json_object_object_add(root, "created", time_str(s->created));
    json_object_object_add(root, "updated", time_str(s->updated));
    json_object_object_add(root, "model", str_or_null(s->model));
    json_object_object_add(root, "template", str_or_null(s->template_name));
    json_object_object_add(root, "system", str_or_null(s->system));
    json_object *path = json_object_new_array();
    for (size_t i = 0; i < s->n_msgs; i++)
        json_object_array_add(path, json_object_new_int64(s->msgs[i].id));
    json_object_object_add(root, "path", path);
    size_t n = s->n_msgs + s->n_alts;
    const struct message **all = x_malloc((n ? n : 1) * sizeof *all);
    for (size_t i = 0; i < s->n_msgs; i++)
        all[i] = &s->msgs[i];
    for (size_t j = 0; j < s->n_alts; j++)
        all[s->n_msgs + j] = &s->alts[j];
    qsort(all, n, sizeof *all, by_id);
    json_object *msgs = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        bool on_path = all[i] >= s->msgs && all[i] < s->msgs + s->n_msgs;
        json_object_array_add(msgs, message_json(all[i], on_path));
    }
    free(all);
    json_object_object_add(root, "messages", msgs);
    const char *text =
        json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
    char *out = x_asprintf("%s\n", text);
    json_object_put(root);
    return out;
}
