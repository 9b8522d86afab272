/* fuzz-hub-list.c: a page of the Hub's file list (GET
 * /api/models/ID/tree/COMMIT, src/models/hub_api.c's hub_parse_file_list): what a
 * server answers elmchat pull.  Every entry kept must be a path that stays
 * inside the snapshot folder, with a git id or an LFS sha256 in hex and a
 * size that is not negative; the bytes a pull needs (hub_pull_select, what
 * the free-space check compares) are never negative and never less than
 * any one file's (the sizes are summed saturating: two 2^62-byte files
 * once wrapped to a negative need that any disk "had room" for). */
#include "config.h"

#include "tests/fuzz/fuzz.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/models/hub_api.h"
#include "src/models/hub_pull.h"

static bool hex(const char *s, size_t n)
{
    if (strlen(s) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hub_listing l = {0};
    char err[512];
    (void)hub_parse_file_list((const char *)data, size, "fuzz/repo", &l, err, sizeof err);
    for (size_t i = 0; i < l.n; i++) {
        const struct hub_file *f = &l.files[i];
        const char *p = f->path;
        bool bad = !*p || p[0] == '/' || strstr(p, "//") || f->size < 0 ||
                   !(f->sha256[0] ? hex(f->sha256, 64) : hex(f->oid, 40));
        for (const char *s = p; !bad && *s; s++)
            bad = (unsigned char)*s < 0x20;
        for (const char *s = p; !bad && s; s = strchr(s, '/')) {
            s += *s == '/';
            bad = strncmp(s, "..", 2) == 0 && (s[2] == '/' || s[2] == '\0');
            bad |= s[0] == '.' && (s[1] == '/' || s[1] == '\0');
        }
        if (bad) {
            fprintf(stderr, "fuzz: entry %zu kept: '%s' size %lld\n", i, p, f->size);
            abort();
        }
    }
    bool *want = calloc(l.n ? l.n : 1, sizeof *want);
    long long total = want ? hub_pull_select(&l, NULL, want) : 0;
    for (size_t i = 0; want && i < l.n; i++) {
        if (total < 0 || (want[i] && total < l.files[i].size)) {
            fprintf(stderr, "fuzz: the listing's total %lld is less than %s's %lld bytes\n", total,
                    l.files[i].path, l.files[i].size);
            abort();
        }
    }
    free(want);
    hub_listing_fini(&l);
    return 0;
}
