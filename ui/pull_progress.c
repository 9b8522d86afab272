/* pull_progress.c: a pull on standard error or the terminal (pull_progress.h). */
#include "config.h"

#include "ui/pull_progress.h"

#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "src/base/human_size.h"
#include "src/base/platform.h"

void pull_progress_init(struct pull_progress *pp, const char *id, enum pull_progress_mode mode,
                        FILE *out)
{
    memset(pp, 0, sizeof *pp);
    pp->out = out;
    pp->mode = mode;
    pp->id = id;
    pp->start = platform_now();
}

/* Bytes per second over the last few seconds of samples. */
static double speed(struct pull_progress *pp, double t)
{
    if (pp->n_samples == 8) {
        memmove(pp->sample_t, pp->sample_t + 1, 7 * sizeof *pp->sample_t);
        memmove(pp->sample_b, pp->sample_b + 1, 7 * sizeof *pp->sample_b);
        pp->n_samples = 7;
    }
    pp->sample_t[pp->n_samples] = t;
    pp->sample_b[pp->n_samples++] = pp->fetched;
    double dt = t - pp->sample_t[0];
    return dt > 0.05 ? (double)(pp->fetched - pp->sample_b[0]) / dt : 0.0;
}

static int term_width(const struct pull_progress *pp)
{
    struct winsize ws;
    if (ioctl(fileno(pp->out), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
        return ws.ws_col;
    return 80;
}

static void clear_bar(struct pull_progress *pp)
{
    if (pp->bar_drawn) {
        fputs("\r\033[K", pp->out);
        pp->bar_drawn = false;
    }
}

static void draw_bar(struct pull_progress *pp, const struct hub_pull_event *ev)
{
    double t = platform_now();
    double bps = speed(pp, t);
    char done[24], total[24], rate[24], eta[24] = "--:--";
    human_size(ev->all_done, done, sizeof done);
    human_size(ev->all_size, total, sizeof total);
    human_size((long long)bps, rate, sizeof rate);
    if (bps > 0) {
        long s = (long)((double)(ev->all_size - ev->all_done) / bps);
        if (s >= 3600)
            snprintf(eta, sizeof eta, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
        else
            snprintf(eta, sizeof eta, "%ld:%02ld", s / 60, s % 60);
    }
    int pct = ev->all_size > 0 ? (int)(100.0 * (double)ev->all_done / (double)ev->all_size) : 100;
    char tail[128];
    snprintf(tail, sizeof tail, " %3d%% %s/%s %s/s ETA %s", pct, done, total, rate, eta);
    char head[64];
    snprintf(head, sizeof head, "[%zu/%zu] %.24s ", ev->index, ev->count, ev->file);
    int width = term_width(pp) - 1 - (int)strlen(head) - (int)strlen(tail) - 2;
    if (width < 10)
        width = 10;
    if (width > 40)
        width = 40;
    int fill = ev->all_size > 0 ? (int)((double)width * (double)ev->all_done / (double)ev->all_size)
                                : width;
    char bar[48];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    fprintf(pp->out, "\r%s[%s]%s\033[K", head, bar, tail);
    fflush(pp->out);
    pp->bar_drawn = true;
}

void pull_progress_event(void *ctx, const struct hub_pull_event *ev)
{
    struct pull_progress *pp = ctx;
    char a[24], b[24];
    switch (ev->kind) {
    case HUB_PULL_LISTED:
        if (pp->mode != PULL_PROGRESS_NONE)
            fprintf(pp->out, "%s: %zu files, %s\n", pp->id, ev->count,
                    human_size(ev->all_size, a, sizeof a));
        break;
    case HUB_PULL_FILE_START:
        pp->last_file_done = ev->file_done; /* a resumed part came before */
        pp->file_start = platform_now();
        if (pp->mode == PULL_PROGRESS_BAR)
            draw_bar(pp, ev);
        break;
    case HUB_PULL_PROGRESS:
        pp->fetched += ev->file_done - pp->last_file_done;
        pp->last_file_done = ev->file_done;
        break;
    case HUB_PULL_FILE_DONE:
        if (pp->mode == PULL_PROGRESS_BAR)
            clear_bar(pp);
        if (pp->mode != PULL_PROGRESS_NONE) {
            if (ev->cached) {
                fprintf(pp->out, "[%zu/%zu] %s %s: already here\n", ev->index, ev->count, ev->file,
                        human_size(ev->file_size, a, sizeof a));
            } else {
                double dt = platform_now() - pp->file_start;
                fprintf(
                    pp->out, "[%zu/%zu] %s %s in %.1f s (%s/s), %s ok\n", ev->index, ev->count,
                    ev->file, human_size(ev->file_size, a, sizeof a), dt,
                    human_size(dt > 0 ? (long long)((double)ev->file_size / dt) : 0, b, sizeof b),
                    ev->lfs ? "sha256" : "git blob id");
            }
        }
        break;
    case HUB_PULL_NOTICE:
        if (pp->mode == PULL_PROGRESS_BAR)
            clear_bar(pp);
        if (pp->mode != PULL_PROGRESS_NONE)
            fprintf(pp->out, "%s\n", ev->message);
        break;
    }
    if (ev->kind == HUB_PULL_PROGRESS && pp->mode == PULL_PROGRESS_BAR)
        draw_bar(pp, ev);
}

void pull_progress_end(struct pull_progress *pp)
{
    if (pp->mode == PULL_PROGRESS_BAR)
        clear_bar(pp);
}

void pull_progress_summary(const struct pull_progress *pp, const struct hub_pull_result *r)
{
    double dt = platform_now() - pp->start;
    char a[24], b[24], c[24];
    fprintf(pp->out,
            "%s: %zu files, %s (%s fetched in %.1f s, %s/s; %zu already here), commit %s\n", pp->id,
            r->files, human_size(r->bytes_total, a, sizeof a),
            human_size(r->bytes_fetched, b, sizeof b), dt,
            human_size(dt > 0 ? (long long)((double)r->bytes_fetched / dt) : 0, c, sizeof c),
            r->files_cached, r->commit);
}

/* -------------------------------------------------------- a pull on demand */

static struct {
    FILE *term; /* where to ask and draw the bar; NULL: a script */
    FILE *out;  /* the lines: the terminal, else standard error */
    struct pull_progress pp;
} on_demand;

static void od_notice(void *user, const char *line)
{
    (void)user;
    fprintf(on_demand.out, "%s\n", line);
    fflush(on_demand.out);
}

/* Without a terminal (a script): yes, said on standard error. */
static bool od_confirm(void *user, const char *id, long long bytes, const char *cache)
{
    (void)user;
    FILE *term = on_demand.term;
    if (!term) {
        fprintf(stderr, "elmchat: %s is not here: downloading it from the Hub\n", id);
        return true;
    }
    char size[32];
    fprintf(term, "%s is not on this machine. Download it from the Hub (%s) into %s? [Y/n] ", id,
            human_size(bytes, size, sizeof size), cache);
    fflush(term);
    char answer[16] = "";
    if (!fgets(answer, sizeof answer, stdin))
        return false;
    return answer[0] == '\n' || answer[0] == 'y' || answer[0] == 'Y';
}

static void od_begin(void *user, const char *id)
{
    (void)user;
    pull_progress_init(&on_demand.pp, id, on_demand.term ? PULL_PROGRESS_BAR : PULL_PROGRESS_LINES,
                       on_demand.out);
}

static void od_event(void *user, const struct hub_pull_event *ev)
{
    (void)user;
    pull_progress_event(&on_demand.pp, ev);
}

static void od_end(void *user, const struct hub_pull_result *r)
{
    (void)user;
    pull_progress_end(&on_demand.pp);
    if (r)
        pull_progress_summary(&on_demand.pp, r);
}

static void od_converting(void *user, float f)
{
    (void)user;
    fprintf(on_demand.out, "\rwriting the GGUF: %3d%%", (int)(f * 100.0f));
    fflush(on_demand.out);
}

static void od_converted(void *user, const char *gguf)
{
    (void)user;
    fprintf(on_demand.out, "\n");
    if (gguf)
        fprintf(on_demand.out, "wrote %s\n", gguf);
}

const struct pull_ui *pull_progress_terminal(void)
{
    static const struct pull_ui ui = {od_notice, od_confirm,    od_begin,    od_event,
                                      od_end,    od_converting, od_converted, NULL};
    on_demand.term = !isatty(STDIN_FILENO)    ? NULL
                     : isatty(STDERR_FILENO) ? stderr
                     : isatty(STDOUT_FILENO) ? stdout
                                             : NULL;
    on_demand.out = on_demand.term ? on_demand.term : stderr;
    return &ui;
}
