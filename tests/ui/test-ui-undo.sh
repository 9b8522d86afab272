#!/bin/sh
# test-ui-undo.sh: the destructive commands in the real binary (tmux, 100x30,
# issue 50 item 7): /remove N takes an exchange out and /undo puts it back in
# its place; /clear starts over, the session file keeps the old conversation
# as a branch, and /undo brings it back (computed from the cache's common
# prefix), also after a restart; /undo keeps the exchange it takes back in
# the tree; /edit of a message that /remove then takes out ends the edit
# (it used to stay, "editing #1", and edit whatever took #1's place).
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
sessions="$UI_DIR/data/elmchat/sessions"
replies() { ui_screen | grep -c '\[interrupted\]'; }
ask() {  # TEXT N: send TEXT, wait for the N-th reply on screen and idle
    ui_keys "$1" Enter
    ui_until "ui_screen | grep -q '$1'" 10 && ui_until "[ \$(replies) -ge $2 ]" 20 &&
        ui_wait idle 20
}

ui_start 100 30 -s undo -n 3
ok 'ui_wait "idle" 20' "the model loads"
ok 'ask "first question" 1 && ask "second question" 2 && ask "third question" 3' \
   "three exchanges"

# /remove 2, then /undo: exchange 2 is back between 1 and 3.
ui_keys '/remove 2' Enter
ok 'ui_wait "removed exchange 2" 5' "/remove 2 says so"
ok 'ui_wait_gone "second question" 5 && ui_screen | grep -q "third question"' \
   "exchange 2 left the transcript, 3 stays"
ui_keys '/undo' Enter
ok 'ui_wait "exchange 2 is back" 5' "/undo right after /remove puts it back"
ok 'ui_until "[ \"\$(ui_screen | grep -n -e \"first question\" -e \"second question\" -e \"third question\" | cut -d: -f2 | tr \"\\n\" /)\" = \"first question/second question/third question/\" ]" 5' \
   "in its place: 1, 2, 3"
ok 'ui_wait "is back: reused" 20 && ui_wait idle 10' "the prefill says what it reused"

# /clear: the file keeps the conversation as a branch; /undo brings it back.
ui_keys '/clear' Enter
ok 'ui_wait "conversation cleared" 5 && ui_wait_gone "first question" 5' "/clear empties the screen"
ok 'grep -q "third question" "$sessions/undo.yaml" && grep -q "^branches:" "$sessions/undo.yaml"' \
   "the saved file keeps the cleared conversation under branches:"
ui_keys '/undo' Enter
ok 'ui_wait "the conversation is back" 5' "/undo right after /clear brings it back"
ok 'ui_screen | grep -q "first question" && ui_screen | grep -q "third question"' \
   "the whole conversation is on screen"
ok 'ui_wait "is back (6 messages): reused" 20 && ui_wait idle 10' "prefilled from the cache"

# /undo keeps what it takes back: its exchange is in /tree.
ui_keys '/undo' Enter
ok 'ui_wait "> third question" 5' "/undo gives the last message back"
ui_keys C-u '/tree' Enter
ok 'ui_wait "third question" 5' "/tree still lists the exchange /undo took back"
ui_keys Escape
ok 'ui_wait_gone "third question" 5' "Esc leaves the tree"
# (the tree closed: elmchat read the Esc as a key of its own, so the next
# key is not Alt-/)

# /edit 1, then /remove 1: the edit ends, the next line is a new message.
ui_keys '/edit 1' Enter
ok 'ui_wait "editing #1" 5' "/edit 1: the status says editing #1"
ui_keys C-u '/remove 1' Enter
ok 'ui_wait "removed exchange 1" 5 && ! ui_screen | grep -q "editing #1"' \
   "/remove 1 ends the edit of #1"
ui_keys 'fourth question' Enter
ok 'ui_until "ui_screen | grep -q \"^fourth question\"" 10 && ui_wait idle 20' \
   "the next line is sent as a new message"
ok 'ui_screen | grep -q "second question"' "... and the message that took #1's place is not edited"

ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "/quit"
ui_stop
ui_start 100 30 -s undo -n 3
ok 'ui_wait "fourth question" 20 && ui_screen | grep -q "second question"' \
   "after a restart: the conversation as it was left"
ui_keys '/tree' Enter
ok 'ui_wait "first question" 5 && ui_screen | grep -q "third question"' \
   "... with what /remove and /undo took out, one /tree away"
ui_keys Escape
ok 'ui_wait_gone "tree:" 5' "Esc closes the tree"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ui_done
