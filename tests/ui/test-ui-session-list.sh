#!/bin/sh
# test-ui-session-list.sh: the session list driven by keys.  F2 opens it
# with the keyboard on it; Down/Up choose, Enter switches; / filters by
# name; d asks, y deletes (file and all); r renames through /rename; Esc
# leaves.  Also /rename and /delete typed.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
sessions="$UI_DIR/data/elmchat/sessions"

ui_start 120 24 -s alpha -n 2
ok 'ui_wait "idle" 20' "the model loads"
for s in alpha beta gamma; do
    [ "$s" = alpha ] || ui_keys "/new $s" Enter
    ui_keys "hello from $s" Enter
    ui_until "ui_screen | grep -q 'hello from $s'" 10
    ui_wait "[interrupted]" 10 >/dev/null
    ui_wait idle 10 >/dev/null
done
ui_keys '/save' Enter
ok 'ui_until "[ -f $sessions/alpha.yaml ] && [ -f $sessions/beta.yaml ] && [ -f $sessions/gamma.yaml ]" 10' \
   "three saved sessions"
ui_keys F2
ok 'ui_wait "↑↓ Enter r d / Esc" 5' "F2 opens the list with the keyboard on it"
ui_keys Up Up
ui_keys Enter
ok 'ui_wait "session '"'"'alpha'"'"'" 5' "Up Up Enter switches to alpha"
ui_keys F2 F2
ok 'ui_wait "↑↓ Enter r d / Esc" 5' "opened again"
ui_keys / g a m Enter
ok 'ui_wait "sessions /gam" 5' "/ filters by name"
ok '! ui_screen | grep -q "beta"' "... beta is filtered out"
ui_keys Escape
ok 'ui_wait_gone "↑↓ Enter r d / Esc" 10' "Esc leaves the list"
ui_keys F2 F2
ui_keys / f r o m ' ' b e t Enter
ok 'ui_wait "sessions /from bet" 5 && ui_screen | grep -q "│ beta" && ! ui_screen | grep -q "│ gamma"' \
   "/ filters by content too (beta said \"hello from beta\")"
ui_keys Escape
ok 'ui_wait_gone "↑↓ Enter r d / Esc" 10' "Esc leaves the list"
ui_keys F2 F2 Down d # one write: the keys after F2 go to the list it opened
ok 'ui_wait "delete session '"'"'beta'"'"'" 5' "d asks first"
ui_keys n
ok 'ui_wait "kept '"'"'beta'"'"'" 5 && [ -f "$sessions/beta.yaml" ]' "any other key keeps it"
ui_keys d y
ok 'ui_wait "deleted session '"'"'beta'"'"'" 5' "y deletes it"
ok '[ ! -f "$sessions/beta.yaml" ]' "... its file is gone"
ok 'ui_until "! ui_screen | grep -q \"beta\"" 5' "... and it left the list"
ui_keys r
ok 'ui_wait "> /rename" 5' "r starts /rename on the chosen session"
ui_keys 'omega' Enter
ok 'ui_wait "to '"'"'omega'"'"'" 5 && [ -f "$sessions/omega.yaml" ]' "renamed, with its file"
ui_keys '/delete alpha' Enter
ok 'ui_wait "deleted session '"'"'alpha'"'"'" 5 && [ ! -f "$sessions/alpha.yaml" ]' \
   "/delete NAME typed: a session in the background"
ui_keys '/delete omega' Enter
ok 'ui_wait "is the open conversation" 5' "the open one is refused"
ui_keys '/delete nosuch' Enter
ok 'ui_wait "no session '"'"'nosuch'"'"'" 5' "/delete of nothing says so"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ui_stop

# Whole names and their dates, at any width: a long name is shown whole
# where the list has room (200x50), cut with "…" where it has not (80x24),
# and whole on the status bar when chosen.
long=a-conversation-about-the-garden-and-its-tomatoes
# today's saves show as HH:MM (another day's as a date); any hour: a run
# that crosses an hour saves the two sessions in different ones
today='[0-2][0-9]:'
for size in 200x50 80x24; do
    ui_start $size -s "$long" -n 2
    ok 'ui_wait "idle" 30' "$size: starts"
    ui_keys "hello" Enter
    ok 'ui_wait "[interrupted]" 30 && ui_until "[ -f \"$sessions/$long.yaml\" ]" 10' "$size: a turn, saved"
    ui_keys F2
    ok 'ui_wait "↑↓ Enter r d / Esc" 10' "$size: F2 opens the list"
    if [ $size = 200x50 ]; then
        ok 'ui_screen | grep -q "│ $long  *$today[0-9][0-9]$" && ui_screen | grep -q "│ omega  *$today[0-9][0-9]$"' \
           "$size: the whole name and the time it was saved (today), for each session"
    else
        ok 'ui_screen | grep -q "│ a-conversatio[a-z-]*…  *$today[0-9][0-9]$" && ! ui_screen | grep -q "│ $long"' \
           "$size: a name wider than the list is cut with … (never silently), its time kept"
        ok 'ui_screen | grep -q "│ omega  *$today[0-9][0-9]$"' "$size: a short name whole with its time"
    fi
    ui_keys / g a r d e n Enter Down
    ok 'ui_until "ui_screen | grep -q \"$long · saved $today[0-9][0-9] · Enter opens it\"" 10' \
       "$size: chosen, the status bar says its whole name and when it was saved"
    ui_keys Escape
    ui_wait_gone "↑↓ Enter r d / Esc" 10 >/dev/null
    ui_keys '/quit' Enter
    ok 'ui_exited 20 && [ "$UI_EXIT" = 0 ]' "$size: quits"
    ui_stop
done
ui_done
