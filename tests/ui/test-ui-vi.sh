#!/bin/sh
# test-ui-vi.sh: readline's vi mode from the inputrc (under $if elmchat):
# the status bar shows the mode, Esc goes to command mode and edits the
# line as vi does; while a reply streams Esc is vi's too (Ctrl-C stops the
# reply, Ctrl-G takes a queued message back).
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
printf '$if elmchat\nset editing-mode vi\n$endif\n' > "$UI_DIR/inputrc"

ui_start 100 20 -s vi -n 2000
ok 'ui_wait "idle" 20' "the model loads"
ok 'ui_screen | grep -q "idle · vi insert"' "the status bar shows vi insert mode"
ui_keys 'hello wrold'
ui_keys Escape
ok 'ui_wait "vi command" 5' "Esc: vi command mode"
ui_keys b c w world Escape
ok 'ui_wait "> hello world" 5' "vi editing works in the input (b cw)"
ui_keys i
ok 'ui_wait "vi insert" 5' "i: insert mode again"
ui_keys Enter
ok 'ui_wait_generated 2 10' "the message is sent, a reply streams"
ok 'ui_wait "Ctrl-C stops · vi insert" 10 && ! ui_screen | grep -q "Esc stops"' \
   "the status bar names the key that stops it here: Ctrl-C, not Esc"
ui_keys Escape
ok 'ui_wait "vi command" 10 && ui_screen | grep -q "generating" && ui_screen | grep -q "vi command"' \
   "in vi mode Esc does not stop the reply"
ui_keys i 'next one' Enter
ok 'ui_wait "1 queued (Ctrl-G takes it back)" 10' "a message typed meanwhile is queued; Ctrl-G takes it back, it says"
ui_keys C-g
ok 'ui_wait "unqueued" 5 && ui_screen | grep -q "> next one"' "Ctrl-G takes it back"
ui_keys C-c
ok 'ui_wait "[interrupted]" 10' "Ctrl-C stops the reply"
ui_keys C-c
ok 'ui_until "! ui_screen | grep -q \"> next one\"" 5' "Ctrl-C on an idle line clears it"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ui_done
