#!/bin/sh
# test-ui-crash.sh: a fatal signal mid-reply (SIGSEGV, SIGABRT) leaves the
# terminal as it was (echo and canonical mode on, the main screen), says in
# one line what happened and where the sessions are, keeps the signal's
# exit status, and the session file holds the last completed turn.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
sessions="$UI_DIR/data/elmchat/sessions"
UI_TOKEN_DELAY_MS=200 # a reply streams long enough to be hit

for sig in SEGV ABRT; do
    case $sig in SEGV) num=11 ;; ABRT) num=6 ;; esac
    ui_start 100 24 -s crash$sig -n 40
    ok 'ui_wait "idle" 20' "$sig: starts"
    ui_keys 'first question' Enter
    ui_until '[ -f "$sessions/crash'$sig'.yaml" ]' 20
    ui_wait idle 20 >/dev/null
    ui_keys 'second question' Enter
    ok 'ui_wait_generated 2 10' "$sig: a second reply is streaming"
    pid=$(pgrep -P "$(cat "$UI_DIR/shell.pid")" | head -1)
    kill -$sig "$pid"
    ok 'ui_exited 10' "$sig: elmchat ended"
    want=$((128 + num))
    ok '[ "$UI_EXIT" = "$want" ]' "$sig: the exit status is the signal's ($UI_EXIT)"
    ok 'ui_tty_sane' "$sig: the terminal is restored (echo, icanon, the main screen)"
    ok 'grep -q "elmchat: crashed (SIG'$sig')" "$UI_DIR/stderr" && grep -q "saved after every reply" "$UI_DIR/stderr"' \
       "$sig: one line says what happened and where the sessions are"
    ok 'grep -q "first question" "$sessions/crash'$sig'.yaml"' "$sig: the last completed turn is in the file"
    ui_tmux kill-server
done
# What the killed runs left half-written goes at the next start; a fresh
# temporary file (a live writer's) stays.
kvdir="$UI_DIR/cache/elmchat/kv"
mkdir -p "$kvdir"
: > "$sessions/.crashSEGV.yaml.tmp.AbC123"
: > "$kvdir/crashSEGV.kv.tmp.XyZ789"
touch -d '2 hours ago' "$sessions/.crashSEGV.yaml.tmp.AbC123" "$kvdir/crashSEGV.kv.tmp.XyZ789"
: > "$kvdir/other.kv.tmp.FrEsH1"
# a fresh one of a writer that is gone (a dead pid), and one of a live one
dead=999999
while kill -0 $dead 2>/dev/null; do dead=$((dead - 1)); done
: > "$sessions/.crashABRT.yaml.tmp.$dead.Qw3rty"
: > "$kvdir/crashABRT.kv.tmp.$$.Li4ve0"
ui_start 100 24 -s crashSEGV -n 4
ok 'ui_wait "idle" 20' "starts again"
ok '[ ! -e "$sessions/.crashSEGV.yaml.tmp.AbC123" ] && [ ! -e "$kvdir/crashSEGV.kv.tmp.XyZ789" ]' \
   "stale temporary files are removed"
ok '[ -e "$kvdir/other.kv.tmp.FrEsH1" ]' "a fresh one of unknown writer stays (a minute old goes)"
ok '[ ! -e "$sessions/.crashABRT.yaml.tmp.$dead.Qw3rty" ]' "a fresh one whose writer is gone goes"
ok '[ -e "$kvdir/crashABRT.kv.tmp.$$.Li4ve0" ]' "one whose writer runs stays"
ok 'ui_screen | grep -q "first question"' "the crashed session opens with its last completed turn"
ui_keys '/quit' Enter
ok 'ui_exited 10' "quits"
ui_done
