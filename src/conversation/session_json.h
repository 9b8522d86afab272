/* session_json.h: a session's whole tree as JSON (/export FILE.json), for
 * other tools.  The schema is in elmchat-session(5):
 *
 *   {"format": "elmchat-tree", "version": 1, "name": ..., "created": ...,
 *    "updated": ..., "model": ..., "template": ..., "system": ...,
 *    "path": [ids of the current path, first to last],
 *    "messages": [{"id", "parent" (null: the first), "role", "content",
 *                  "time", "on_path", "interrupted", "pinned",
 *                  "out_of_context"}, ... by id]}
 *
 * Times are UTC ISO 8601 strings ("" when unknown); absent strings are
 * null.  Pure: no I/O. */
#ifndef ELMCHAT_SRC_SESSION_JSON_H
#define ELMCHAT_SRC_SESSION_JSON_H

#include "src/conversation/session.h"

#define SESSION_JSON_VERSION 1

/* Owned, NUL-terminated, pretty-printed. */
char *session_to_json(const struct session *s);

#endif
