/* json_print.c: JSON strings for the benchmarks' --json output, escaped by
   json-c (the library the session files already use) rather than by hand. */
#include "config.h"

#include "cli/json_print.h"

#include <stdio.h>

#include <json-c/json.h>

void json_print_string(const char *s)
{
    struct json_object *o = json_object_new_string(s);
    if (!o) { /* out of memory: still valid JSON */
        fputs("\"\"", stdout);
        return;
    }
    fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE), stdout);
    json_object_put(o);
}
