/* paths.h: the XDG folders of elmchat (docs/DESIGN.md §7) and mkdir -p.
 * Any thread (reads the environment only). */
#ifndef ELMCHAT_SRC_PATHS_H
#define ELMCHAT_SRC_PATHS_H

#include <stdbool.h>

enum paths_kind {
    PATHS_CONFIG = 0, /* $XDG_CONFIG_HOME or ~/.config */
    PATHS_DATA,       /* $XDG_DATA_HOME or ~/.local/share */
    PATHS_STATE,      /* $XDG_STATE_HOME or ~/.local/state */
    PATHS_CACHE,      /* $XDG_CACHE_HOME or ~/.cache */
};

/* BASE/elmchat[/sub] (owned).  A relative XDG value is ignored, as the spec
 * says; without HOME the fallback is the passwd entry, then ".". */
char *paths_dir(enum paths_kind kind, const char *sub);
/* mkdir -p with mode 0700 for the folders it creates.  0 or -errno. */
int paths_mkdir_p(const char *path);
/* The shipped data folder SUB ("prompts", "roles", "models"): the source
 * tree's when this program is the build tree's (a VPATH build has them
 * there only), else $(pkgdatadir)/SUB.  Owned. */
char *paths_shipped_dir(const char *sub);
/* The LLaMA-2 tokenizer.model elmchat ships (models/local.mk fetches it at
 * build time): the build tree's when run from it, else the installed one.
 * Owned, NULL when there is none. */
char *paths_shipped_tokenizer(void);
/* The first dirs[i]/NAME+suffix that exists (owned), NULL when none. */
char *paths_find_in(char *const *dirs, const char *name, const char *suffix);
/* The names of the files NAME+suffix (NAME not starting with '.') in the
 * folders dirs[] (NULL-terminated; missing ones are skipped): each once,
 * sorted, NULL-terminated; free each and the vector. */
char **paths_list_names(char *const *dirs, const char *suffix);

#endif
