#!/bin/sh
# test-run-server.sh: elmchat run -m server:URL (issue 50: the name
# resolution copied the name onto itself and emptied it: "elmchat: : No
# such file or directory").  --dry-run makes the prompt without the server
# (the ids the same model gives locally); a server that is down, answers
# 503 or garbage (tests/engine/fake-llama-server.py) is named with its URL,
# exit 1; on a real llama-server (tests/lib/llama-server.sh, when
# $ELMCHAT_LLAMACPP_TARBALL builds) the reply streams, and greedy it is the
# local engine's on the same f32 GGUF.
. "${top_srcdir:-.}/tests/lib/cli-test.sh"
builddir=${builddir:-.}
cli_tmpdir runsrv
pids=""
cli_cleanup='for p in $pids; do kill -9 "$p" 2>/dev/null; done; [ -n "${LS_PID:-}" ] && kill -9 "$LS_PID" 2>/dev/null'
export HOME="$tmp" XDG_CONFIG_HOME="$tmp/cfg" XDG_DATA_HOME="$tmp/data" XDG_CACHE_HOME="$tmp/cache"
unset ELMCHAT_API_KEY

"$GEN" --preset default --dtype f32 -o "$tmp/hf" >/dev/null 2>&1 &&
    "$ELMCHAT" quantize "$tmp/hf" "$tmp/f32.gguf" --type f32 --quiet
ok $? "a generated checkpoint as an f32 GGUF"
tok="$tmp/hf/tokenizer.model"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
down=http://127.0.0.1:$port # nothing listens there (the port was free a moment ago)

"$ELMCHAT" run -m "server:$down" --tokenizer "$tok" -t openelm-instruct --dry-run -p 'Hello there' \
    >"$tmp/ids.server" 2>"$tmp/err"
rc=$?
"$ELMCHAT" run -m "$tmp/f32.gguf" -t openelm-instruct --dry-run -p 'Hello there' >"$tmp/ids.local" 2>&1
[ $rc -eq 0 ] && [ -s "$tmp/ids.server" ] && cmp -s "$tmp/ids.server" "$tmp/ids.local"
ok $? "run --dry-run -m server:URL: the prompt's ids, made here, as for the local model"
"$ELMCHAT" run -m "server:$down" --tokenizer "$tok" -v --dry-run -p hi 2>&1 >/dev/null |
    grep -q "^template: plain (.*), chosen by default for a llama-server"
ok $? "--verbose: a server's template is plain unless -t says, and says so"

"$ELMCHAT" run -m "server:$down" --tokenizer "$tok" -p 'Hello' -n 4 >"$tmp/out" 2>"$tmp/err"
rc=$?
sed 's/^/#   /' "$tmp/err"
[ $rc -eq 1 ] && grep -q "^elmchat: .*$down" "$tmp/err" && ! grep -q "elmchat: : " "$tmp/err"
ok $? "a server that is down: named with its URL, exit 1 (not an empty name)"

"$ELMCHAT" info -m "server:$down" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "^elmchat: server:$down: a llama-server runs the chat and run" "$tmp/err"
ok $? "info -m server:URL: the name kept, and where a server works said"

fake() { # fake MODE [ARGS]: tests/engine/fake-llama-server.py; sets FAKE_URL
    fakes=$((${fakes:-0} + 1))
    python3 "$top_srcdir/tests/engine/fake-llama-server.py" "$@" >"$tmp/fake$fakes.port" &
    pids="$pids $!"
    i=0
    while [ ! -s "$tmp/fake$fakes.port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
    FAKE_URL=http://127.0.0.1:$(cat "$tmp/fake$fakes.port")
}
if command -v python3 >/dev/null 2>&1; then
    fake status 503
    "$ELMCHAT" run -m "server:$FAKE_URL" --tokenizer "$tok" -p 'Hello' -n 4 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    sed 's/^/#   /' "$tmp/err"
    [ $rc -eq 1 ] && grep -q "^elmchat: .*$FAKE_URL.*503" "$tmp/err"
    ok $? "a server answering 503: its URL and the status, exit 1"
    fake garbage
    "$ELMCHAT" run -m "server:$FAKE_URL" --tokenizer "$tok" -p 'Hello' -n 4 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    sed 's/^/#   /' "$tmp/err"
    [ $rc -eq 1 ] && grep -q "^elmchat: .*$FAKE_URL.*JSON" "$tmp/err"
    ok $? "a server answering garbage: named, exit 1"
else
    skip "a server answering 503" "python3 is not installed"
    skip "a server answering garbage" "python3 is not installed"
fi

# A real llama-server, when one builds (else these are skipped).
LLAMA_SERVER=$(. "$top_srcdir/tests/lib/llama-server.sh"; ls_build >/dev/null 2>&1 && echo "$LLAMA_SERVER")
if [ -n "$LLAMA_SERVER" ] && [ -x "$LLAMA_SERVER" ] && command -v curl >/dev/null 2>&1; then
    . "$top_srcdir/tests/lib/llama-server.sh"
    ls_start srv -m "$tmp/f32.gguf" -np 1 -c 1024
    ok $? "llama-server serves the f32 GGUF"
    "$ELMCHAT" run -m "server:$LS_URL" --tokenizer "$tok" -t openelm-instruct --temp 0 -n 12 \
        -p 'Hello there' >"$tmp/reply.server" 2>"$tmp/err"
    rc=$?
    sed 's/^/#   /' "$tmp/err"
    "$ELMCHAT" run -m "$tmp/f32.gguf" -t openelm-instruct --temp 0 -n 12 --no-lookup \
        -p 'Hello there' >"$tmp/reply.local" 2>&1
    echo "#   server: $(cat "$tmp/reply.server")"
    echo "#   local:  $(cat "$tmp/reply.local")"
    [ $rc -eq 0 ] && [ -n "$(tr -d '\n' <"$tmp/reply.server")" ]
    ok $? "run -m server:URL answers on stdout, exit 0"
    cmp -s "$tmp/reply.server" "$tmp/reply.local"
    ok $? "greedy, the server's reply is the local engine's on the same f32 GGUF"
    ls_stop
else
    for t in "llama-server serves" "run -m server:URL answers" "the server's reply is the local one"; do
        skip "$t" "no llama-server (ELMCHAT_LLAMACPP_TARBALL unset, or it does not build)"
    done
fi
echo "1..$n"
[ "$failed" -eq 0 ]
