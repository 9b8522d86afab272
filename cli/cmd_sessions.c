/* cmd_sessions.c: `elmchat sessions [--grep TEXT]`: the saved conversations
 * (name, last update, messages, model), newest first; with --grep, each
 * message that holds TEXT (case-insensitive) as SESSION #N ROLE: LINE. */
#include "config.h"

#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/commands.h"
#include "cli/option_loop.h"
#include "src/store/paths.h"
#include "src/conversation/session.h"
#include "src/template/template.h"
#include "src/base/xalloc.h"

static void help(void)
{
    char *dir = paths_dir(PATHS_DATA, "sessions");
    printf("Usage: elmchat sessions [--grep TEXT]\n"
           "List the saved conversations of %s, newest first:\n"
           "name, last update, number of messages, model.\n"
           "\n"
           "  -g, --grep TEXT   instead, every message holding TEXT (case-insensitive):\n"
           "                    SESSION #N ROLE: the matching line\n"
           "  -h, --help        display this help and exit\n"
           "\n"
           "A file that does not load is named with the reason, on standard error.\n"
           "Exit status: 0 ok, 1 nothing matches --grep (as grep) or a runtime error,\n"
           "2 usage error.\n",
           dir);
    free(dir);
}

static const char *find_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++) {
        size_t k = 0;
        while (k < n && p[k] && tolower((unsigned char)p[k]) == tolower((unsigned char)needle[k]))
            k++;
        if (k == n)
            return p;
    }
    return NULL;
}

struct entry {
    char *name;
    struct session *s;
};

static int newest_first(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    if (x->s->updated != y->s->updated)
        return x->s->updated < y->s->updated ? 1 : -1;
    return strcmp(x->name, y->name);
}

/* Each line of the message that holds text, prefixed with the session and
 * the message's number on the path shown (number 0: on another branch). */
static size_t grep_message(const char *session, size_t number, const struct message *m,
                           const char *text)
{
    size_t found = 0;
    const char *line = m->content;
    while (*line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char *copy = x_strndup(line, len);
        bool match = find_ci(copy, text) != NULL;
        if (match && number)
            printf("%s #%zu %s: %s\n", session, number, role_name(m->role), copy);
        else if (match)
            printf("%s (another branch) %s: %s\n", session, role_name(m->role), copy);
        found += match;
        free(copy);
        if (!end)
            break;
        line = end + 1;
    }
    return found;
}

int cmd_sessions(int argc, char **argv)
{
    static const struct option opts[] = {
        {"grep", 1, NULL, 'g'}, {"help", 0, NULL, 'h'}, {NULL, 0, NULL, 0}};
    const char *text = NULL;
    int opt;
    option_loop_begin();
    while ((opt = getopt_long(argc, argv, ":g:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'g': text = optarg; break;
        case 'h': help(); return EXIT_OK;
        default: return option_loop_error(argv[0], opt, argv);
        }
    }
    if (optind < argc)
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);
    if (text && !*text)
        return cli_usage_error(argv[0], "--grep needs a non-empty TEXT");

    char *dir = paths_dir(PATHS_DATA, "sessions");
    char *dirs[] = {dir, NULL};
    char **names = paths_list_names(dirs, ".yaml");
    size_t n = 0;
    while (names[n])
        n++;
    struct entry *v = x_calloc(n ? n : 1, sizeof *v);
    size_t ok = 0;
    int rc = EXIT_OK;
    for (size_t i = 0; i < n; i++) {
        char *path = session_path_for(names[i]);
        char err[1024];
        struct session *s = path ? session_load(path, err, sizeof err) : NULL;
        if (!s) {
            cli_error("%s", path ? err : names[i]);
            rc = EXIT_RUNTIME;
        } else {
            v[ok++] = (struct entry){names[i], s};
        }
        free(path);
    }
    qsort(v, ok, sizeof *v, newest_first);
    size_t found = 0;
    for (size_t i = 0; i < ok; i++) {
        const struct session *s = v[i].s;
        if (text) {
            size_t number = 0;
            for (size_t k = 0; k < s->n_msgs; k++) {
                if (s->msgs[k].role == ROLE_USER || s->msgs[k].role == ROLE_ASSISTANT)
                    number++;
                found += grep_message(v[i].name, number, &s->msgs[k], text);
            }
            for (size_t k = 0; k < s->n_alts; k++)
                found += grep_message(v[i].name, 0, &s->alts[k], text);
        } else {
            char when[32] = "-";
            struct tm tm;
            if (s->updated && localtime_r(&s->updated, &tm))
                strftime(when, sizeof when, "%Y-%m-%d %H:%M", &tm);
            printf("%-24s %s  %4zu message%s  %s\n", v[i].name, when, s->n_msgs,
                   s->n_msgs == 1 ? " " : "s", s->model ? s->model : "-");
        }
    }
    if (!ok && !text && rc == EXIT_OK)
        fprintf(stderr, "elmchat: no saved conversations in %s\n", dir);
    if (text && !found) {
        /* as grep: silence would look like a search that did not run */
        fprintf(stderr, "elmchat: no saved conversation mentions '%s' (%zu searched in %s)\n",
                text, ok, dir);
        rc = EXIT_RUNTIME;
    }
    for (size_t i = 0; i < ok; i++)
        session_free(v[i].s);
    free(v);
    for (size_t i = 0; names[i]; i++)
        free(names[i]);
    free(names);
    free(dir);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error("write error: %s", strerror(errno));
        return EXIT_RUNTIME;
    }
    return rc;
}
