#!/bin/sh
# test-ui-context.sh: a small context (--ctx 256) fills up: the status bar
# warns before anything is dropped, then the oldest exchange that is not
# pinned leaves the context (marked "out of context", kept in the
# transcript and the file), /pin keeps one, and the chat goes on.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
sessions="$UI_DIR/data/elmchat/sessions"
UI_TOKEN_DELAY_MS=5

ui_start 80 24 -s small -n 8 --ctx 256
ok 'ui_wait "idle" 20' "starts"
ok 'ui_wait "ctx 1/256" 5' "the gauge shows the small context"

# One exchange: send, wait for its reply to end.
exchange() {
    ui_keys "message number $1 with a few words" Enter
    ui_wait "you #$1" 5 && ui_until '! ui_screen | grep -q "Esc stops"' 10 && ui_wait "idle" 5
}
exchange 1
ui_keys '/pin' Enter
ok 'ui_wait "exchange 1 pinned" 5' "/pin pins the last exchange"
ok 'ui_screen | grep -q "^you #1 \[pinned\]"' "the transcript marks it pinned"

warned_at=0
dropped_at=0
# (ui-tmux.sh's helpers use $i and $n: this loop counts with $x)
x=2
while [ $x -le 30 ]; do
    exchange $x || break
    if [ $warned_at = 0 ] && ui_screen | grep -q "ctx [0-9]*%: oldest turns drop next" &&
        ui_screen | grep -q "The context is [0-9]*% full"; then
        warned_at=$x
    fi
    if grep -q "out_of_context: true" "$sessions/small.yaml" 2>/dev/null; then
        dropped_at=$x
        break
    fi
    x=$((x + 1))
done
diag "warning after exchange $warned_at, first eviction at exchange $dropped_at"
ok '[ "$warned_at" -gt 0 ] && [ "$dropped_at" -gt "$warned_at" ]' \
   "the status bar and the transcript warned (exchange $warned_at) before anything was dropped ($dropped_at)"
ok 'ui_screen | grep -q "left the context to make room"' "the eviction is explained in the transcript"
ok 'ui_screen | grep -q "ctx [0-9]*/256" && [ "$(ui_screen | sed -n "s/.*ctx \([0-9]*\)\/256.*/\1/p")" -lt 256 ]' \
   "the gauge stays inside the context"

ui_keys C-Home
ok 'ui_wait "you #2 [out of context]" 5' "the oldest unpinned exchange is marked out of context"
ok 'ui_screen | grep -q "^you #1 \[pinned\]$"' "the pinned one stayed in context"
ui_keys C-End

# The chat goes on.
x=$((dropped_at + 1))
exchange $x
ok '[ $? = 0 ] && ui_screen | grep -q "message number $x "' "the next exchange works"
ui_keys "/unpin 1" Enter
ok 'ui_wait "exchange 1 unpinned" 5' "/unpin"
ui_keys '/info' Enter
ok 'ui_until "ui_screen | grep -q \"policy drop-oldest; [1-9][0-9]* messages out\"" 5' \
   "/info counts the messages out of context"

ui_keys '/quit' Enter
ok 'ui_exited 10' "quits"
ok 'grep -q "out_of_context: true" "$sessions/small.yaml" && grep -q "message number 2 " "$sessions/small.yaml"' \
   "the dropped messages stay in the file, marked"
ui_done
