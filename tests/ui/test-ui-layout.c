/* test-ui-layout.c: screen rectangles for many terminal sizes, including
 * degenerate ones: never overlapping, always inside, rows add up. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tests/lib/tap.h"
#include "ui/layout.h"

static bool inside(struct ui_rect r, int rows, int cols)
{
    if (r.h == 0 || r.w == 0)
        return r.h == 0 && r.w == 0;
    return r.y >= 0 && r.x >= 0 && r.h > 0 && r.w > 0 && r.y + r.h <= rows && r.x + r.w <= cols;
}

static bool overlap(struct ui_rect a, struct ui_rect b)
{
    if (!a.h || !b.h)
        return false;
    return a.y < b.y + b.h && b.y < a.y + a.h && a.x < b.x + b.w && b.x < a.x + a.w;
}

static int area(struct ui_rect r)
{
    return r.h * r.w;
}

/* Every invariant for one size; returns a description of the first failure. */
static const char *check(int rows, int cols, int want, bool list)
{
    struct ui_layout l;
    layout_compute(rows, cols, want, list, &l);
    struct ui_rect all[4] = {l.transcript, l.sessions, l.status, l.input};
    for (int i = 0; i < 4; i++)
        if (!inside(all[i], rows, cols))
            return "a rectangle leaves the screen";
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            if (overlap(all[i], all[j]))
                return "rectangles overlap";
    if (rows <= 0 || cols <= 0)
        return area(l.input) == 0 ? NULL : "empty screen has an input";
    if (area(l.transcript) + area(l.sessions) + area(l.status) + area(l.input) != rows * cols)
        return "the screen is not covered exactly";
    if (l.input.h < 1 || l.input.h > LAYOUT_INPUT_MAX)
        return "input rows out of 1..6";
    if (l.input.y + l.input.h != rows)
        return "input is not at the bottom";
    if (rows >= 2 && l.status.h != 1)
        return "no status bar with 2+ rows";
    if (rows >= 3 && l.transcript.h < 1)
        return "no transcript row with 3+ rows";
    int w = want < 1 ? 1 : want > LAYOUT_INPUT_MAX ? LAYOUT_INPUT_MAX : want;
    if (rows >= w + 2 && l.input.h != w)
        return "input does not get the rows it wants although they fit";
    if (l.sessions.h && !list)
        return "session list shown while toggled off";
    if (l.sessions.h && l.sessions.h != l.transcript.h)
        return "session list not beside the transcript";
    return NULL;
}

int main(void)
{
    plan_lazy();

    struct ui_layout l;
    layout_compute(24, 80, 1, false, &l);
    ok(l.transcript.y == 0 && l.transcript.h == 22 && l.transcript.w == 80, "80x24: transcript 22 rows");
    ok(l.status.y == 22 && l.status.h == 1, "80x24: status bar on row 22");
    ok(l.input.y == 23 && l.input.h == 1 && l.input.w == 80, "80x24: one input row at the bottom");
    ok(l.sessions.h == 0 && l.sessions.w == 0, "80x24: session list hidden");

    layout_compute(24, 80, 3, true, &l);
    ok(l.input.h == 3 && l.input.y == 21, "input grows to 3 rows");
    ok(l.sessions.w == LAYOUT_SESSIONS_W && l.sessions.x == 80 - LAYOUT_SESSIONS_W,
       "session list on the right, %d columns", LAYOUT_SESSIONS_W);
    ok(l.transcript.w == 80 - LAYOUT_SESSIONS_W, "transcript narrows beside the list");

    layout_compute_list(50, 200, 1, 60, &l);
    ok(l.sessions.w == 60 && l.transcript.w == 140, "a list that wants 60 columns gets them at 200");
    layout_compute_list(24, 80, 1, 60, &l);
    ok(l.sessions.w == 26, "at 80 columns a third of the screen (26), got %d", l.sessions.w);
    layout_compute_list(24, 80, 1, 5, &l);
    ok(l.sessions.w == LAYOUT_SESSIONS_W, "never narrower than %d", LAYOUT_SESSIONS_W);
    layout_compute(24, 80, 40, false, &l);
    is_int(l.input.h, LAYOUT_INPUT_MAX, "input stops growing at %d rows", LAYOUT_INPUT_MAX);

    layout_compute(1, 80, 3, true, &l);
    ok(l.input.h == 1 && l.status.h == 0 && l.transcript.h == 0, "1 row: only the input");
    layout_compute(2, 80, 3, false, &l);
    ok(l.input.h == 1 && l.status.h == 1 && l.transcript.h == 0, "2 rows: input + status");
    layout_compute(3, 80, 6, false, &l);
    ok(l.input.h == 1 && l.transcript.h == 1, "3 rows: the transcript keeps a row");
    layout_compute(5, 80, 6, false, &l);
    ok(l.input.h == 3 && l.transcript.h == 1, "5 rows: input takes what is left after 1 transcript row");
    layout_compute(24, 30, 1, true, &l);
    ok(l.sessions.w == 0, "narrow screen: no session list even when toggled on");
    layout_compute(0, 0, 1, true, &l);
    ok(l.input.h == 0 && l.transcript.h == 0, "0x0: nothing");
    layout_compute(10, 1, 2, true, &l);
    ok(l.input.w == 1 && l.transcript.w == 1, "1 column wide works");

    /* Exhaustive invariants over a grid of sizes. */
    int bad = 0;
    const char *why = NULL;
    int br = 0, bc = 0, bw = 0, bl = 0;
    for (int rows = -1; rows <= 60; rows++)
        for (int cols = -1; cols <= 200; cols += (cols < 50 ? 1 : 7))
            for (int want = -1; want <= 8; want++)
                for (int list = 0; list <= 1; list++) {
                    const char *e = check(rows, cols, want, list);
                    if (e && !bad++)
                        why = e, br = rows, bc = cols, bw = want, bl = list;
                }
    ok(bad == 0, "invariants hold for every size from -1x-1 to 60x200 (%d failures)", bad);
    if (bad)
        diag("first failure: %s at %dx%d want %d list %d", why, br, bc, bw, bl);
    return done_testing();
}
