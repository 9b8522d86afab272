/* test-kill.c: 100 kill -9 at random moments while a chat runs (the real
 * controller and worker, a micro checkpoint, paced replies, autosave and
 * KV snapshots after every reply, five sessions in turn): afterwards every
 * session file loads, and the next start leaves no temporary file. */
#include "config.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "src/chat/chat_controller.h"
#include "src/base/options.h"
#include "src/store/paths.h"
#include "src/conversation/session.h"
#include "src/store/store.h"
#include "src/base/xalloc.h"
#include "src/base/platform.h"
#include "tests/lib/tap.h"

enum { KILLS = 100 };

static char model[4096];

/* The child: chat until killed. */
static void chat_forever(int round)
{
    char name[16];
    snprintf(name, sizeof name, "k%d", round % 5);
    struct chat_options o = {.template_name = "openelm-instruct", .session_name = name};
    cli_common_init(&o.common);
    o.common.model = model;
    o.common.n_threads = 1;
    o.common.max_tokens = 6;
    char err[2048];
    struct chat *c = chat_new(&o, NULL, err, sizeof err);
    if (!c)
        _exit(3);
    for (int turn = 0;; turn++) {
        char *line = x_asprintf("message %d of round %d", turn, round);
        chat_submit(c, line);
        for (;;) {
            struct chat_activity a;
            chat_get_activity(c, &a);
            if (a.model_ready && !a.generating)
                break;
            chat_wait_events(c, 10);
        }
    }
}

static int count_temps(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += strstr(e->d_name, ".tmp.") != NULL;
    if (d)
        closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    (void)argc;
    /* The uninstalled program finds the shipped prompts from its own path
     * (src/base/platform.c: argv[0] with --enable-portable-fallbacks). */
    platform_set_argv0(argv[0]);
    if (!tap_gen_checkpoint("--preset micro --synthetic-tokenizer --seed 1", model, sizeof model,
                            "m"))
        skip_all("tests/lib/gen-checkpoint is not built");
    tap_private_xdg();
    setenv("ELM_WORKER_TEST_TOKEN_INTERVAL_MS", "3", 1);
    plan_lazy();
    srand(12345);
    int killed = 0, early = 0;
    for (int r = 0; r < KILLS; r++) {
        pid_t pid = fork();
        if (pid < 0)
            bail_out("fork");
        if (pid == 0)
            chat_forever(r);
        /* the first run saves once for sure (a slow machine, a sanitizer
         * build: the start-up alone may outlast the random delay), then
         * from the start-up to a few replies in */
        if (r == 0) {
            char *first = session_path_for("k0");
            for (int i = 0; i < 3000 && access(first, F_OK) != 0; i++)
                nanosleep(&(struct timespec){0, 10000000L}, NULL);
            free(first);
        }
        struct timespec ts = {0, (long)(5 + rand() % 200) * 1000000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
            killed++;
        else
            early++;
    }
    ok(killed == KILLS, "%d runs killed with SIGKILL (%d ended otherwise)", killed, early);
    char *sessions = paths_dir(PATHS_DATA, "sessions"), *kv = paths_dir(PATHS_CACHE, "kv");
    int loaded = 0, files = 0;
    char err[1024];
    for (int k = 0; k < 5; k++) {
        char name[16];
        snprintf(name, sizeof name, "k%d", k);
        char *path = session_path_for(name);
        if (access(path, F_OK) == 0) {
            files++;
            struct session *s = session_load(path, err, sizeof err);
            if (s)
                loaded++;
            else
                diag("%s", err);
            session_free(s);
        }
        free(path);
    }
    ok(files > 0 && loaded == files, "every session file loads (%d of %d)", loaded, files);
    diag("temporary files left by the kills: %d (sessions), %d (kv)", count_temps(sessions),
         count_temps(kv));
    /* the next start clears them (chat_new does this) */
    store_remove_stale_temps(sessions, time(NULL) - 60);
    store_remove_stale_temps(kv, time(NULL) - 60);
    ok(count_temps(sessions) == 0 && count_temps(kv) == 0,
       "after the next start no temporary file is left");
    free(sessions);
    free(kv);
    return done_testing();
}
