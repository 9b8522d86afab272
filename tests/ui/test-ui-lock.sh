#!/bin/sh
# test-ui-lock.sh: two elmchat processes on one session (issue 50, items 3,
# 4, 11 and the exit note), each in its own tmux window of one server.  The
# first holds the session's lock; the second shows it read-only, its /quit
# writes nothing, and a change in it goes to a copy under a new name, so
# neither erases the other's turns.  A session left unchanged is not
# written (inode and mtime).  kill -9 frees the lock.  /save NAME over a
# saved conversation is refused (--force replaces it).  On exit the
# terminal says where the chat is saved and how to resume it (-s, -c).
# A failed /export says the file and the reason; it removes what a killed
# export left.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
sessions="$UI_DIR/data/elmchat/sessions"

# The second elmchat: window 1 of the first's tmux server, same settings,
# its exit status in exit2.
start_second() {  # ARGS
    rm -f "$UI_DIR/exit2"
    sed -e "s|'$UI_DIR/exit.tmp'|'$UI_DIR/exit2.tmp'|g" -e "s|'$UI_DIR/exit'|'$UI_DIR/exit2'|" \
        -e "s|'$UI_DIR/stderr'|'$UI_DIR/stderr2'|" -e "s|'$UI_DIR/shell.pid'|'$UI_DIR/shell2.pid'|" \
        -e "s|'$UI_DIR/stty'|'$UI_DIR/stty2'|" -e "s|^\(.*'$ELMCHAT'\) .* 2>|\1 $* 2>|" \
        "$UI_DIR/run.sh" > "$UI_DIR/run2.sh"
    ui_tmux new-window -d -t 0:1 "sh '$UI_DIR/run2.sh'"
}
screen2() { ui_tmux capture-pane -p -t 0:1 2>/dev/null; }
keys2() { ui_tmux send-keys -t 0:1 "$@"; }
wait2() {  # TEXT [SECS]
    ui_until "screen2 | grep -qF -- \"$1\"" "${2:-10}"
}
exited2() { ui_until '[ -f "$UI_DIR/exit2" ]' "${1:-10}"; }
stamp() { stat -c '%i %Y.%y %s' "$1"; }
elmchat_pid() {  # the elmchat under a window's shell
    pgrep -P "$(cat "$UI_DIR/$1")" | head -1
}

ui_start 100 30 -s same -n 8
ok 'ui_wait "idle" 20' "A: elmchat -s same"
ui_keys 'first from A' Enter
ok 'ui_wait "[interrupted]" 15 && ui_wait "idle" 10' "A: a reply"
ok 'ui_until "grep -q \"first from A\" \"$sessions/same.yaml\"" 10' "A autosaved"

start_second -s same -n 8
ok 'wait2 "open in another elmchat" 20' "B on the same session: says it is open in another elmchat"
ok 'screen2 | grep -q "read-only"' "B: shown read-only"
ok 'screen2 | grep -q "/save NEWNAME"' "B: how to go on as a copy"
ok 'screen2 | grep -q "first from A"' "B shows A's conversation"
ok 'wait2 "idle" 20' "B: its model is ready"

ui_keys 'second from A' Enter
ok 'ui_until "grep -q \"second from A\" \"$sessions/same.yaml\"" 20' "A: a newer turn, saved"
before=$(stamp "$sessions/same.yaml")
keys2 '/quit' Enter
ok 'exited2 10' "B: /quit"
ok '[ "$(stamp "$sessions/same.yaml")" = "$before" ]' "B's /quit did not write the session"
ok 'grep -q "second from A" "$sessions/same.yaml"' "A's newer turn is still there"
ok 'screen2 | grep -q "open in another elmchat: left as it was"' "B's exit says it left the file"

# A change in the read-only view goes to a copy.
ui_tmux kill-window -t 0:1
start_second -s same -n 8
ok 'wait2 "read-only" 20 && wait2 "idle" 20' "B again, read-only"
keys2 'from B' Enter
ok 'wait2 "saved as '"'"'same-copy'"'"'" 20' "B's turn: saved as a copy, said so"
ok 'ui_until "grep -q \"from B\" \"$sessions/same-copy.yaml\"" 10' "the copy holds B's turn"
ok '! grep -q "from B" "$sessions/same.yaml"' "A's file does not"
ui_keys 'third from A' Enter
ok 'ui_until "grep -q \"third from A\" \"$sessions/same.yaml\"" 20' "A goes on, saved"
keys2 '/quit' Enter
ok 'exited2 10 && screen2 | grep -q "elmchat -s same-copy"' "B's exit: how to resume the copy"
ok 'grep -q "third from A" "$sessions/same.yaml"' "A's turns are all there"

# /save NAME over a saved conversation: refused; --force replaces it.
ui_keys '/save same-copy' Enter
ok 'ui_wait "exists already" 5 && ui_wait "--force" 5' "/save over another saved conversation is refused"
ok 'grep -q "from B" "$sessions/same-copy.yaml"' "the copy is as it was"

# A's exit: where and how to resume, after the screen is gone.
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "A: /quit"
ok 'ui_screen | grep -q "Saved as '"'"'same'"'"'"' "A's exit says where it is saved"
ok 'ui_screen | grep -q "elmchat -s same" && ui_screen | grep -q "elmchat -c"' "and how to resume"
ok '! ls -A "$sessions" | grep -q lock' "no lock file is left"

# An unchanged session is not written.
ui_tmux kill-server
before=$(stamp "$sessions/same.yaml")
ui_start 100 30 -s same -n 8
ok 'ui_wait "third from A" 10 && ui_wait "idle" 20' "same reopened"
ui_keys '/quit' Enter
ok 'ui_exited 10' "/quit"
ok '[ "$(stamp "$sessions/same.yaml")" = "$before" ]' "/quit of an unchanged session writes nothing (inode, mtime, size)"

# kill -9 frees the lock: the next opener is not read-only.
ui_tmux kill-server
ui_start 100 30 -s same -n 8
ok 'ui_wait "idle" 20' "same reopened"
pid=$(elmchat_pid shell.pid)
kill -9 "$pid"
ok 'ui_exited 10' "killed"
start_second -s same -n 8
ok 'wait2 "third from A" 10 && wait2 "idle" 20' "B after the kill"
ok '! screen2 | grep -q "read-only"' "the lock died with the process: not read-only"
keys2 '/quit' Enter
ok 'exited2 10' "B: /quit"

# -c: the most recently saved conversation.
ui_tmux kill-server
touch -d '2 hours ago' "$sessions/same-copy.yaml"
ui_start 100 30 -c -n 8
ok 'ui_wait "third from A" 10' "elmchat -c: the newest conversation (same)"

# /export: a failure names the file and the reason; a killed export's
# temporary file goes.
ui_keys "/export $UI_DIR/no/such/dir/out.md" Enter
ok 'ui_wait "cannot write $UI_DIR/no/such/dir/out.md: No such file" 20' "a failed /export: the file and the reason"
dead=$(sh -c 'echo $$')
: > "$UI_DIR/.out.md.tmp.$dead.Ab12Cd"
ui_keys "/export $UI_DIR/out.md" Enter
ok 'ui_until "[ -f \"$UI_DIR/out.md\" ]" 5' "/export wrote out.md"
ok '[ ! -e "$UI_DIR/.out.md.tmp.$dead.Ab12Cd" ]' "a killed export's temporary file is gone"
ok '! ls -A "$UI_DIR" | grep -q "out.md.tmp"' "none is left"
ui_keys '/quit' Enter
ok 'ui_exited 10' "/quit"
ui_done
