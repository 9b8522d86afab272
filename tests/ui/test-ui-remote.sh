#!/bin/sh
# test-ui-remote.sh: the TUI on a llama-server (-m server:URL; built once
# from $ELMCHAT_LLAMACPP_TARBALL by tests/lib/llama-server.sh, else
# skipped): a reply streams, labelled with the server; /info says what the
# server is; /format schema FILE sends our grammar to the server (valid
# JSON back, a max-tokens cut said); /model switches to a local model and back mid-session, the
# conversation going on; Esc stops the server's reply; the server killed
# mid-reply leaves the partial reply marked and a clear status line, and
# the chat answers again once it is back; with --slot-save-path the
# session's cache is saved on the server and restored when the session
# reopens; a server that is down is named; a server's model named Instruct
# chooses the openelm-instruct template (unless -t).  The bearer token comes from $ELMCHAT_API_KEY and is written
# nowhere.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
top_srcdir=${top_srcdir:-.}
builddir=${builddir:-.}
tmp=$UI_DIR
. "$top_srcdir/tests/lib/llama-server.sh"
ls_build
GEN=${GEN_CHECKPOINT:-$(dirname "$ELMCHAT")/tests/lib/gen-checkpoint}
[ -x "$GEN" ] || ls_skip_all "no $GEN"
command -v curl >/dev/null 2>&1 || ls_skip_all "curl is not installed"

"$GEN" --preset default --dtype f32 -o "$UI_DIR/hf" >/dev/null 2>&1
"$ELMCHAT" quantize "$UI_DIR/hf" "$UI_DIR/f32.gguf" --type f32 --quiet
key=tmux-secret-$$
ls_start srv -m "$UI_DIR/f32.gguf" -np 2 -c 2048 --api-key "$key"
ok '[ -n "$LS_URL" ]' "llama-server serves a generated checkpoint's f32 GGUF"
trap 'ls_stop; kill -9 $(cat "$UI_DIR/restarted.pid" 2>/dev/null) 2>/dev/null; ui_cleanup' EXIT
hostport=${LS_URL#http://}

UI_ENV="ELMCHAT_API_KEY=$key" ui_start 100 30 -s remote -n 12 -m "server:$LS_URL" \
    --tokenizer "$UI_DIR/hf/tokenizer.model"
ok 'ui_wait "idle" 20' "the chat connects to the server (the tokenizers agree)"
ui_keys 'hello server' Enter
ok 'ui_wait "generating" 10' "a reply streams from the server"
ok 'ui_wait "idle" 20 && ui_screen | grep -q "^$hostport"' "it ends, labelled $hostport"
ui_keys '/info' Enter
ok 'ui_wait "llama-server: f32.gguf, vocab 32000, 2 slots" 5' "/info: the server's model, vocabulary and slots"
ok 'ui_screen | grep -q "KV snapshots: none (no --slot-save-path"' "/info: no snapshots on this server"

# /format on a server: our grammar is sent as llama-server's "grammar"; the
# reply (random weights, temperature 1) is JSON the schema allows; cut by
# max-tokens, the notice says the value is incomplete (issue 47).
python3 -c 'import yaml' 2>/dev/null && have_yaml=1 || have_yaml=
printf '%s\n' '{"type":"object","properties":{"pick":{"enum":["red","green"]},"n":{"type":"integer"}},"required":["pick","n"],"additionalProperties":false}' >"$UI_DIR/pick.json"
ui_keys "/format schema $UI_DIR/pick.json" Enter
ok 'ui_wait "the replies follow it" 5 && ui_wait "format schema pick.json" 5' \
   "/format schema FILE on a server: accepted, in the status bar"
ui_keys '/set max-tokens 200' Enter
ui_keys '/set temperature 1' Enter
ui_keys 'pick a color' Enter
last_reply_valid() {  # the session's last reply is JSON pick.json allows
    python3 - "$UI_DIR/data/elmchat/sessions/remote.yaml" <<'EOP'
import json, sys
import yaml
doc = yaml.safe_load(open(sys.argv[1], encoding='utf-8'))
msgs = doc['messages']
assert msgs[-2]['content'].endswith('pick a color'), msgs[-2]
v = json.loads(msgs[-1]['content'])
assert set(v) == {"pick", "n"} and v["pick"] in ("red", "green") and isinstance(v["n"], int), v
EOP
}
if [ -n "$have_yaml" ]; then
    ok 'ui_until "last_reply_valid 2>/dev/null" 30' "the server's reply is JSON the schema allows (session file)"
else
    skip "the server's reply is JSON the schema allows" "no python3-yaml"
fi
ok 'ui_wait "idle" 20' "the reply ends"
ui_keys '/set max-tokens 3' Enter
ui_keys 'pick again' Enter
ok 'ui_wait "cut before the JSON value was complete (max tokens 3)" 30' \
   "cut by max-tokens on a server: the notice says the JSON value is incomplete"
ui_keys '/format off' Enter
ok 'ui_wait "format off: replies are free text" 5' "/format off"
ui_keys '/set max-tokens 12' Enter

ui_keys "/model $UI_DIR/f32.gguf" Enter
ok 'ui_wait "f32 loaded in" 30' "/model switches to the same file, local, mid-session"
ui_keys 'now local' Enter
ok 'ui_wait "now local" 5 && ui_wait "idle" 20 && ui_screen | grep -q "^f32"' \
   "the local model answers in the same conversation"
ui_keys "/model server:$LS_URL" Enter
ok 'ui_wait "$hostport loaded in" 30' "/model back to the server"
ui_keys 'remote again' Enter
ok 'ui_wait "remote again" 5 && ui_wait "idle" 20' "the server answers the next turn"
ui_keys '/info' Enter
ok 'ui_wait "last request:" 5 && ui_screen | grep "last request:" | tail -n 1 |
    grep -q "last request: [1-9][0-9]* tokens reused from the cache, [0-9]* computed"' \
   "the server reused its cached prefix ($(ui_screen | grep 'last request:' | tail -n 1))"

# Esc closes the stream: the reply stops at once, marked.
ui_keys '/set max-tokens 900' Enter
ui_keys 'stop me' Enter
ok 'ui_wait_generated 3 10' "a long reply streams"
ui_keys Escape
ok 'ui_wait "[interrupted]" 5 && ui_wait "idle" 5' "Esc stops the server's reply, marked interrupted"

# Killed mid-reply: what came is kept, marked, and the status line says why.
ui_keys 'a long one please' Enter
ok 'ui_wait_generated 3 10' "a long reply streams"
kill -9 "$LS_PID"
ok 'ui_wait "generation failed" 20' "the server killed mid-reply: the status line says the reply failed"
ok 'ui_until "[ \"\$(ui_screen | grep -c \"\[interrupted\]\")\" -ge 2 ]" 5' \
   "the partial reply is kept, marked interrupted"
port=${LS_URL##*:}
# restarted with a slot save path: the sessions' caches can be kept there
mkdir -p "$UI_DIR/slots"
restart() {
    "$LLAMA_SERVER" --host 127.0.0.1 --port "$port" -t 1 --no-webui -m "$UI_DIR/f32.gguf" -np 2 \
        -c 2048 --api-key "$key" --slot-save-path "$UI_DIR/slots/" >>"$UI_DIR/restarted.log" 2>&1 &
    echo $! >"$UI_DIR/restarted.pid"
}
restart
ok 'ui_until "curl -s \"$LS_URL/health\" | grep -q ok" 30' "the server is restarted"
ui_keys '/set max-tokens 8' Enter
ui_keys 'are you back' Enter
ok 'ui_wait "are you back" 5 && ui_wait "idle" 30 && ! ui_screen | tail -n 3 | grep -q "failed"' \
   "the chat reconnects: the next message is answered"
# /info tells what the server was when it was chosen: choose it again
# (through the local model, kept: instant)
ui_keys "/model $UI_DIR/f32.gguf" Enter
ok 'ui_wait "f32 loaded in" 30' "/model to the local model again"
ui_keys "/model server:$LS_URL" Enter
ok 'ui_until "[ \"\$(ui_screen | grep -c \"$hostport loaded in\")\" -ge 1 ] && ui_screen | tail -n 2 | grep -q idle" 30' \
   "and back to the restarted server"
ui_keys '/info' Enter
ok 'ui_wait "KV snapshots: saved on the server" 5' "/info: the restarted server keeps the snapshots"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ok 'ls "$UI_DIR/slots" | grep -q "^elmchat-[0-9a-f]*\.bin$"' "the session's cache was saved on the server"

# The server restarted with empty slots, the session reopened: its cache
# comes back from the server's file, not recomputed.
kill -9 "$(cat "$UI_DIR/restarted.pid")"
wait "$(cat "$UI_DIR/restarted.pid")" 2>/dev/null
restart
ok 'ui_until "curl -s \"$LS_URL/health\" | grep -q ok" 30' "the server is restarted, its slots empty"
UI_ENV="ELMCHAT_API_KEY=$key" ui_start 100 30 -s remote -n 8 -m "server:$LS_URL" \
    --tokenizer "$UI_DIR/hf/tokenizer.model"
ok 'ui_wait "resumed from the KV snapshot: " 20 &&
    ui_screen | grep -q "resumed from the KV snapshot: [1-9][0-9]* tokens reused"' \
   "the reopened session's cache restored on the server"
ui_keys 'still there' Enter
ok 'ui_wait "still there" 5 && ui_wait "idle" 20' "and the chat goes on"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits again"
ok '! grep -rq "$key" "$UI_DIR/data" "$UI_DIR/state" "$UI_DIR/stderr" "$UI_DIR/cache" 2>/dev/null' \
   "the API key is in no session, history, cache or log file"
ok 'grep -q "^model: \"server:$LS_URL\"" "$UI_DIR"/data/elmchat/sessions/remote.yaml' \
   "the session records the server as its model"

# No server there at all: the chat opens and says why there is no model.
ui_start 100 30 -s nothing -m "server:http://127.0.0.1:1" --tokenizer "$UI_DIR/hf/tokenizer.model"
ok 'ui_wait "cannot reach http://127.0.0.1:1" 20' "a server that is down: the chat says it cannot reach it"
ui_keys '/quit' Enter
ok 'ui_exited 10' "and quits"

# A server's model that names itself Instruct: the chat's template follows
# its name, as a local model's does (template_find.c), unless -t says.
cp "$UI_DIR/f32.gguf" "$UI_DIR/tiny-Instruct.gguf"
ls_start inst -m "$UI_DIR/tiny-Instruct.gguf" -np 1 -c 2048
ok '[ -n "$LS_URL" ]' "a server whose model is tiny-Instruct.gguf"
ui_start 100 30 -s inst -m "server:$LS_URL" --tokenizer "$UI_DIR/hf/tokenizer.model"
ok 'ui_wait "idle" 20 && ui_wait "openelm-instruct" 5' \
   "the chat takes openelm-instruct from the server's model name"
ui_keys '/info' Enter
# (joined: where the line wraps depends on the template's path)
ok 'ui_until "ui_screen | tr \"\\n\" \" \" | grep -q \"chosen by the  *server\"" 5' \
   "/info says why: the server's model name"
ui_keys '/quit' Enter
ok 'ui_exited 10' "quits"
ui_start 100 30 -s inst2 -t plain -m "server:$LS_URL" --tokenizer "$UI_DIR/hf/tokenizer.model"
ok 'ui_wait "idle" 20 && ui_screen | tail -n 3 | grep -q plain &&
    ! ui_screen | grep -q openelm-instruct' "with -t plain the template stays plain"
ui_keys '/quit' Enter
ok 'ui_exited 10' "quits"
ui_done
