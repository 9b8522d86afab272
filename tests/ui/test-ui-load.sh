#!/bin/sh
# test-ui-load.sh: quitting while the model loads from a slow disk
# (ELM_WORKER_TEST_LOAD_DELAY_MS: a 10 s load) leaves at once, saves the
# session as a normal quit does and restores the terminal; a conversation
# whose KV cache the worker drops under the memory budget is announced.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
sessions="$UI_DIR/data/elmchat/sessions"

# ------------------------------------------------ quit during a slow load
ui_start 80 24 -s keep -n 4
ok 'ui_wait "idle" 20' "a first run loads the model"
ui_keys 'hello there' Enter
ok 'ui_wait "[interrupted]" 15' "one exchange (cut at 4 tokens)"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ui_stop

UI_ENV="ELM_WORKER_TEST_LOAD_DELAY_MS=10000"
ui_start 80 24 -s keep -n 4
ok 'ui_wait "loading" 10 && ui_wait "hello there" 5' "restarted: the session shows while the model loads"
ui_keys '/system be brief' Enter
ok 'ui_wait "system prompt set" 5' "the session changes while loading"
t0=$(now_ms)
ui_keys '/quit' Enter
ui_exited 5
t1=$(now_ms)
diag "quit during a 10 s load took $((t1 - t0)) ms (including tmux and polling)"
ok '[ "$UI_EXIT" = 0 ] && [ $((t1 - t0)) -lt 2000 ]' \
   "/quit during the load exits within 2 s, not after the load ($((t1 - t0)) ms)"
ok 'ui_tty_sane' "terminal sane after quitting during the load"
ok 'grep -q "be brief" "$sessions/keep.yaml" && grep -q "hello there" "$sessions/keep.yaml"' \
   "the session was saved (the new system prompt, the old exchange)"
ok 'tail -1 "$sessions/keep.yaml" | grep -q "end: true"' "the file is complete"
ok '! grep -qi -e "error" -e "sanitizer" "$UI_DIR/stderr"' "nothing on stderr"
ui_stop

# SIGTERM during the load: the same, through the signal path.
ui_start 80 24 -s keep -n 4
ok 'ui_wait "loading" 10' "loading again"
pid=$(pgrep -P "$(cat "$UI_DIR/shell.pid")")
t0=$(now_ms)
kill -TERM "$pid"
ui_exited 5
t1=$(now_ms)
ok '[ -n "$UI_EXIT" ] && [ $((t1 - t0)) -lt 2000 ] && ui_tty_sane' \
   "SIGTERM during the load: out within 2 s ($((t1 - t0)) ms), terminal sane"
ok 'grep -q "be brief" "$sessions/keep.yaml" && tail -1 "$sessions/keep.yaml" | grep -q "end: true"' \
   "... session intact"
ui_stop
UI_ENV=

# ------------------------------------------- a cache dropped under the budget
# One byte: only the current model and the slot in use stay.  Replies of 40
# tokens (20 ms each) leave the notice on screen long enough to be seen.
UI_ENV="ELMCHAT_MEM_BUDGET=1"
ui_start 100 24 -s e1 -n 40 --temp 0
ok 'ui_wait "idle" 20' "started under a one-byte budget"
ui_keys 'first session' Enter
ok 'ui_wait "[interrupted]" 15 && ui_wait "idle" 10' "e1 answered"
# /new prefills e2's first tokens (BOS), which takes e1's room.
ui_keys '/new e2' Enter
ok 'ui_wait "session e1: cache dropped (memory budget)" 10' \
   "a second session drops e1's cache: the status line says so"
ok 'ui_screen | grep -q "its next reply recomputes [0-9][0-9]* tokens"' "... and what it will cost"
ui_keys 'second session' Enter
ok 'ui_wait "[interrupted]" 15 && ui_wait "idle" 15' "e2 answered"
ui_keys '/switch e1' Enter
ok 'ui_wait "session e2: cache dropped (memory budget)" 10' \
   "switching back re-prefills e1 and drops e2's cache, said too"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
UI_ENV=
ui_done
