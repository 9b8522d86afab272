/* layout.c: screen rectangles from the terminal size (see layout.h). */
#include "config.h"

#include "ui/layout.h"

#include <string.h>

static struct ui_rect rect(int y, int x, int h, int w)
{
    struct ui_rect r = {y, x, h, w};
    if (r.h <= 0 || r.w <= 0)
        r.h = r.w = 0;
    return r;
}

void layout_compute(int rows, int cols, int want_input_rows, bool show_sessions,
                    struct ui_layout *out)
{
    layout_compute_list(rows, cols, want_input_rows, show_sessions ? LAYOUT_SESSIONS_W : 0, out);
}

void layout_compute_list(int rows, int cols, int want_input_rows, int sessions_w,
                         struct ui_layout *out)
{
    memset(out, 0, sizeof *out);
    if (rows <= 0 || cols <= 0)
        return;

    int input = want_input_rows < 1 ? 1 : want_input_rows;
    if (input > LAYOUT_INPUT_MAX)
        input = LAYOUT_INPUT_MAX;
    int status = rows >= 2 ? 1 : 0;
    /* Keep at least one transcript row when the screen has three or more. */
    int room = rows - status - (rows >= 3 ? 1 : 0);
    if (input > room)
        input = room < 1 ? 1 : room;
    if (input > rows)
        input = rows;
    int top = rows - status - input;
    if (top < 0)
        top = 0;

    out->input = rect(rows - input, 0, input, cols);
    out->status = rect(top, 0, status, cols);

    int list_w = 0;
    if (sessions_w > 0 && cols >= LAYOUT_SESSIONS_MIN_COLS && top > 0) {
        /* as wide as its names and dates want, within a third of the screen */
        list_w = sessions_w > LAYOUT_SESSIONS_W ? sessions_w : LAYOUT_SESSIONS_W;
        if (list_w > cols / 3)
            list_w = cols / 3;
    }
    out->transcript = rect(0, 0, top, cols - list_w);
    out->sessions = rect(0, cols - list_w, top, list_w);
}
