#!/bin/sh
# test-ui-sizes.sh: the screen's layout at several terminal sizes ($UI_SIZES:
# 100x30, 132x43 and 80x24).  An input longer than one row, a multi-line
# history entry recalled, Ctrl-A Ctrl-K of a long line: the status bar stays
# whole on the row above the input, the input fills the rows below it.  (At
# any size but terminfo's 24 rows the terminal's scroll region was left at
# rows 1-24, and the input was drawn over the status bar.)
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init

# The status bar: the model, the session, the context gauge and the state.
status_bar() {  # ROW: that row is the status bar
    ui_row "$1" | grep -q "^ random-model │ .*ctx [0-9]*/[0-9]* .*│ idle *$"
}
# The layout with the input on its last R rows: the status bar above it,
# once on the screen, the input's first row starts with the prompt.
layout_ok() {  # R
    status_bar $((ui_h - $1)) &&
        [ "$(ui_screen | grep -c "│ ctx [0-9]*/")" = 1 ] &&
        ui_row $((ui_h - $1 + 1)) | grep -q "^>" &&
        [ "$(ui_screen | wc -l)" = "$ui_h" ]
}
# k words "word" filling more than one row and less than two of a W-column line.
long_line() {
    awk -v w="$1" 'BEGIN { s = ""; while (length(s) < w * 3 / 2) s = s "word "; print s "end" }'
}

k=0
for size in $UI_SIZES; do
    k=$((k + 1))
    ui_start "$size" -s "sizes$k" -n 3
    ok 'ui_wait "idle" 30' "$size: starts"
    ok 'ui_until "layout_ok 1" 10' "$size: the status bar on row $((ui_h - 1)), the input on row $ui_h"

    # An input longer than one row: two rows of input, the status bar above.
    line=$(long_line "$ui_w")
    ui_keys "$line"
    ok 'ui_until "layout_ok 2 && ui_row $ui_h | grep -q \"end$\"" 10' \
       "$size: a line longer than a row: the input on rows $((ui_h - 1))-$ui_h, the status bar whole"
    ok 'ui_row 1 | grep -q "^elmchat"' "$size: the transcript's first row stays"

    # Ctrl-A Ctrl-K: the line empties, one input row again.
    ui_keys C-a C-k
    ok 'ui_until "layout_ok 1 && [ \"\$(ui_row $ui_h)\" = \">\" ]" 10' \
       "$size: Ctrl-A Ctrl-K: the line is empty, the status bar back on row $((ui_h - 1))"

    # A three-line message, then recalled from the history.
    ui_keys "first of three" C-j "second of three" C-j "third of three" Enter
    ok 'ui_wait "[interrupted]" 30 && ui_until "layout_ok 1" 10' "$size: a three-line message is sent and answered"
    ui_keys Up
    ok 'ui_until "layout_ok 3 && ui_row $ui_h | grep -q \"^third of three\"" 10' \
       "$size: Up recalls it: three input rows, the status bar whole above them"
    ui_keys C-u C-k
    ui_keys '/quit' Enter
    ok 'ui_exited 20 && [ "$UI_EXIT" = 0 ]' "$size: /quit"
    ui_stop
done
ui_done
