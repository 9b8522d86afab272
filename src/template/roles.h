/* roles.h: role presets: named system prompts in YAML files (man 5
 * elmchat-templates, ROLES).  The user's in $XDG_CONFIG_HOME/elmchat/roles/
 * come first, then the shipped ones beside the templates (prompts/roles/).
 * Main thread only. */
#ifndef ELMCHAT_SRC_ROLES_H
#define ELMCHAT_SRC_ROLES_H

#include <stddef.h>

#define ROLE_MAX_FILE_SIZE (64 * 1024)

struct role_preset {
    char *name;        /* the file's base name */
    char *description; /* may be NULL */
    char *system;      /* the system prompt, never NULL */
    char *path;        /* the file it came from */
};

/* NAME (no '/') in $XDG_CONFIG_HOME/elmchat/roles, then the shipped
 * prompts/roles, or a path to a .yaml file.
 * NULL with err ("FILE:LINE:COLUMN: message", or what was looked for). */
struct role_preset *role_load(const char *name_or_path, char *err, size_t err_size);
void role_free(struct role_preset *r);
/* Every role's name, sorted, each once (strv_free). */
char **role_list(void);

#endif
