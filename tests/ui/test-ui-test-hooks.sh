#!/bin/sh
# test-ui-test-hooks.sh: the worker's and the UI's test hooks are in the
# tests' elmchat-testing and not in the shipped elmchat (issue 46): with
# ELM_WORKER_TEST_REPLY_FILE the one's reply is the file's text, the
# other's is sampled; ELMCHAT_LATENCY_LOG (ui-tmux.sh sets it) gets a line
# per read of the keyboard from the one, no file from the other.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
printf 'zqx the scripted reply zqx\n' > "$UI_DIR/reply.txt"
UI_ENV="ELM_WORKER_TEST_REPLY_FILE=$UI_DIR/reply.txt" UI_TOKEN_DELAY_MS=2
ui_start 80 30 -s hooks
ok 'ui_wait "idle" 20' "elmchat-testing: the model loads"
ui_keys 'hello' Enter
ok 'ui_wait "zqx the scripted reply zqx" 20 && ui_wait "idle" 10' \
   "elmchat-testing: the reply is the file's text"
ok '[ -s "$UI_DIR/latency" ]' \
   "elmchat-testing: the latency log has the keystrokes read"
ui_keys '/quit' Enter
ok 'ui_exited 10' "quits"
ui_stop

ELMCHAT=$(dirname "$ELMCHAT")/elmchat
rm -f "$UI_DIR/latency"
ui_start 80 30 -s shipped
ok 'ui_wait "idle" 20' "the shipped elmchat: the model loads"
ui_keys 'hello' Enter
ok 'ui_wait_generated 3 20' "the shipped elmchat: a reply streams"
ui_keys Escape
ok 'ui_wait "idle" 10' "... stopped by Esc"
ok '! ui_screen | grep -q "zqx"' "... sampled: the variable is not read"
ok '[ ! -e "$UI_DIR/latency" ]' "the shipped elmchat: no latency log"
ui_keys '/quit' Enter
ok 'ui_exited 10' "quits"
ui_stop
ui_done
