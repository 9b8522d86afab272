#!/bin/sh
# test-ui-select.sh: Alt-Up / Alt-Down select an earlier message (its
# header in reverse video, the status bar naming it and the keys); on it:
# p pins (and unpins), c copies, e edits (/edit N), r retries from there
# (what followed goes, the model answers again); Esc, or any other key,
# ends the selection.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
screen_e() { ui_tmux capture-pane -p -e 2>/dev/null; }
sessions="$UI_DIR/data/elmchat/sessions"

ui_start 120 40 -s select -n 3
ok 'ui_wait "idle" 20' "the model loads"
for q in 'first question' 'second question' 'third question'; do
    ui_keys "$q" Enter
    ui_until "ui_screen | grep -q '$q'" 10
    ui_until "[ \$(ui_screen | grep -c '\[interrupted\]') -ge 1 ]" 10
    ui_wait idle 10 >/dev/null
done
ok 'ui_until "[ \$(ui_screen | grep -c \"\[interrupted\]\") -eq 3 ]" 10' "three exchanges"
ui_keys M-Up
ok 'ui_wait "selected: the reply to #3" 5' "Alt-Up selects the newest reply"
ui_keys M-Up M-Up M-Up
ok 'ui_wait "selected: your message #2" 5' "Alt-Up again: earlier messages"
ok 'screen_e | grep "#2" | grep -q "7m"' "the selected header is in reverse video"
ui_keys p
ok 'ui_wait "[pinned]" 5' "p pins exchange 2"
ui_keys p
ok 'ui_until "! ui_screen | grep -q \"\[pinned\]\"" 5' "p again unpins it"
ui_keys c
ok 'ui_wait "copied your message #2" 5' "c copies the message"
ui_keys e
ok 'ui_wait "> second question" 5 && ui_wait "editing #2" 5' "e edits it (/edit 2)"
ui_keys C-u Enter
ok 'ui_wait "edit cancelled" 5' "(an empty line cancels the edit)"
ui_keys M-Up M-Up M-Up M-Up
ok 'ui_wait "selected: your message #2" 5' "exchange 2 again"
ui_keys d
ok 'ui_wait "remove exchange #2" 5' "d asks first"
ui_keys n
ok 'ui_wait "exchange #2 kept" 5' "any other key keeps it"
ui_keys d y
ok 'ui_wait "removed exchange 2" 5 && ! ui_screen | grep -q "second question"' \
   "d y removes exchange 2 from the middle"
ok 'ui_screen | grep -q "first question" && ui_screen | grep -q "third question"' "the others stay"
ui_keys M-Up M-Up M-Up M-Up M-Up M-Up
ok 'ui_wait "selected: your message #1" 5' "up to the first message"
ui_keys r
ok 'ui_until "[ \$(ui_screen | grep -c \"^you #\") -eq 1 ]" 10' "r retries from there: what followed leaves the path"
ok 'ui_wait "[interrupted]" 10 && ui_wait "idle" 10' "and the model answers again"
ui_keys M-Up x
ok 'ui_wait "> x" 5' "another key ends the selection and is typed"
ui_keys C-u '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ok '[ "$(sed "/^branches:/,\$d" "$sessions/select.yaml" | grep -c "role: user")" = 1 ]' \
   "the session's path is the retried conversation"
ok 'grep -q "^branches:" "$sessions/select.yaml"' "what followed is kept as another branch"
ui_done
