#!/bin/sh
# test-ui-session.sh: conversations survive: /save NAME, quit, start again
# with -s NAME and the conversation is there; kill -TERM mid-reply saves
# the partial reply (marked interrupted) and restores the terminal.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
sessions="$UI_DIR/data/elmchat/sessions"

ui_start 80 24 -n 8
ok 'ui_wait "idle" 20' "starts with a new session"
ui_keys 'remember the word pineapple' Enter
ok 'ui_wait "[interrupted]" 15' "a reply (cut at 8 tokens)"
ui_keys '/save fruit' Enter
ok 'ui_wait "saved '"'"'fruit'"'"'" 5' "/save NAME says so"
ok '[ -f "$sessions/fruit.yaml" ]' "fruit.yaml written"
ok '[ "$(file_mode "$sessions/fruit.yaml")" = 600 ]' "mode 0600"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "/quit exits 0"
ok 'ui_tty_sane' "terminal sane after /quit"

ui_stop
ui_start 80 24 -s fruit -n 8
ok 'ui_wait "remember the word pineapple" 10' "-s fruit shows the conversation again"
ok 'ui_screen | grep -q "\[interrupted\]"' "the interrupted mark survived"
ok 'ui_wait "idle" 30' "the model is ready"
ui_keys '/info' Enter
ok 'ui_wait "session: fruit" 5' "/info names the session"

# SIGTERM while a reply streams: saved first, terminal restored.
ui_keys '/set max-tokens 2000' Enter
ui_keys 'a long answer please' Enter
ok 'ui_wait_generated 5 15' "a long reply is streaming"
pid=$(pgrep -P "$(cat "$UI_DIR/shell.pid")" -x elmchat || pgrep -P "$(cat "$UI_DIR/shell.pid")")
ok '[ -n "$pid" ]' "found the elmchat process ($pid)"
kill -TERM "$pid"
ok 'ui_exited 10' "SIGTERM ends it"
ok 'ui_tty_sane' "terminal sane after SIGTERM"
ok 'grep -q "a long answer please" "$sessions/fruit.yaml"' "the last message was saved"
ok '[ "$(grep -c "interrupted: true" "$sessions/fruit.yaml")" = 2 ]' "the partial reply was saved, marked interrupted"
ok 'tail -1 "$sessions/fruit.yaml" | grep -q "end: true"' "the file is complete"

# SIGHUP (terminal closed) saves too.
ui_stop
ui_start 80 24 -s fruit -n 2000
ok 'ui_wait "a long answer please" 10 && ui_wait "idle" 30' "restarted"
ui_keys 'one more' Enter
ok 'ui_wait_generated 2 15' "streaming again"
pid=$(pgrep -P "$(cat "$UI_DIR/shell.pid")")
kill -HUP "$pid"
ok 'ui_exited 10' "SIGHUP ends it"
ok 'grep -q "one more" "$sessions/fruit.yaml"' "saved on SIGHUP"
ui_done
