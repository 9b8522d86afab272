/* pull_progress.h: how a pull shows itself (on standard error, or the
 * terminal): a bar redrawn in place (a terminal: file, percent, size,
 * speed, ETA), one line per file (a pipe or a log), or nothing; and a pull
 * on demand's question and lines (src/models/pull_on_demand.h) before a
 * front end takes the terminal.  Main thread only. */
#ifndef ELMCHAT_UI_PULL_PROGRESS_H
#define ELMCHAT_UI_PULL_PROGRESS_H

#include <stdbool.h>
#include <stdio.h>

#include "src/models/hub_pull.h"
#include "src/models/pull_on_demand.h"

enum pull_progress_mode { PULL_PROGRESS_NONE, PULL_PROGRESS_LINES, PULL_PROGRESS_BAR };

struct pull_progress {
    enum pull_progress_mode mode;
    FILE *out;
    const char *id;
    double start;             /* seconds, monotonic */
    long long fetched;        /* bytes that came over the network */
    long long last_file_done; /* of the current file, at the last event */
    double file_start;
    double sample_t[8]; /* (time, fetched) over the last seconds: the speed */
    long long sample_b[8];
    int n_samples;
    bool bar_drawn;
};

void pull_progress_init(struct pull_progress *pp, const char *id, enum pull_progress_mode mode,
                        FILE *out);
/* hub_pull_opts.on_event (ctx: the struct pull_progress). */
void pull_progress_event(void *ctx, const struct hub_pull_event *ev);
/* Ends a bar still drawn. */
void pull_progress_end(struct pull_progress *pp);
/* The closing line: files, size, what came, time and speed. */
void pull_progress_summary(const struct pull_progress *pp, const struct hub_pull_result *r);

/* A pull on demand on this process's terminal: standard error, else
 * standard output (the chat's tests keep stderr in a file), the question
 * answered on standard input, the bar; for a script (no terminal) no
 * question and a line per file on standard error. */
const struct pull_ui *pull_progress_terminal(void);

#endif
