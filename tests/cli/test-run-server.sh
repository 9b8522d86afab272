#!/bin/sh
# test-run-server.sh: elmchat run -m server:URL (issue 50: the name
# resolution copied the name onto itself and emptied it: "elmchat: : No
# such file or directory").  --dry-run makes the prompt without the server
# (the ids the same model gives locally); a server that is down, answers
# 503 or garbage (tests/engine/fake-llama-server.py) is named with its URL,
# exit 1; on a real llama-server (tests/lib/llama-server.sh, when
# $ELMCHAT_LLAMACPP_TARBALL builds) the reply streams, and greedy it is the
# local engine's on the same f32 GGUF; --json-schema and --grammar send our
# GBNF (33 schemas' replies validate, greedy the local reply, -n 3 cut: exit 1).
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

    # Structured output on the server (issue 47): our own GBNF is sent as
    # llama-server's "grammar"; llama.cpp's parser takes every schema's
    # grammar and each reply (temperature 1) parses and validates.
    srun() { "$ELMCHAT" run -m "server:$LS_URL" --tokenizer "$tok" "$@"; }
    : >"$tmp/schemas.bad"
    nsch=0
    for f in "$top_srcdir"/tests/data/schemas/*.json; do
        b=$(basename "$f" .json)
        nsch=$((nsch + 1))
        srun --json-schema "$f" --temp 1 --seed 5 -n 600 -p 'a value' >"$tmp/s.$b" 2>"$tmp/e.$b" ||
            echo "$b: exit $? $(head -c 300 "$tmp/e.$b")" >>"$tmp/schemas.bad"
    done
    python3 - "$tmp" "$top_srcdir"/tests/data/schemas/*.json >>"$tmp/schemas.bad" 2>&1 <<'EOP'
import json, os, sys
try:
    import jsonschema
except ImportError:
    jsonschema = None
tmp = sys.argv[1]
for path in sys.argv[2:]:
    name = os.path.basename(path)[:-5]
    try:
        value = json.load(open(os.path.join(tmp, 's.' + name), encoding='utf-8'))
        if jsonschema:
            schema = json.load(open(path, encoding='utf-8'))
            jsonschema.Draft202012Validator(
                schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER).validate(value)
    except Exception as e:
        print('%s: %s' % (name, str(e)[:300]))
EOP
    sed 's/^/#   /' "$tmp/schemas.bad"
    [ "$nsch" -ge 30 ] && [ ! -s "$tmp/schemas.bad" ]
    ok $? "run --json-schema on the server: $nsch schemas' grammars taken, each reply parses and validates"
    five="$top_srcdir/tests/data/schemas/12-five-fields-enum.json"
    srun -t openelm-instruct --json-schema "$five" --temp 0 -n 300 -p 'a record' >"$tmp/g.server" 2>"$tmp/err"
    rc=$?
    sed 's/^/#   /' "$tmp/err"
    "$ELMCHAT" run -m "$tmp/f32.gguf" -t openelm-instruct --json-schema "$five" --temp 0 -n 300 \
        --no-lookup -p 'a record' >"$tmp/g.local" 2>&1
    [ $rc -eq 0 ] && cmp -s "$tmp/g.server" "$tmp/g.local"
    ok $? "greedy under a schema, the server's reply is the local engine's"
    printf 'root ::= ("yes" | "no") " because " [a-z ]{3,40} "."\n' >"$tmp/g.gbnf"
    srun --grammar "$tmp/g.gbnf" --temp 1 --seed 4 -p 'is it?' >"$tmp/g" 2>"$tmp/err"
    rc=$?
    sed 's/^/#   /' "$tmp/g" "$tmp/err"
    [ $rc -eq 0 ] && grep -Eqx '(yes|no) because [a-z ]{3,40}\.' "$tmp/g"
    ok $? "run --grammar FILE on the server: the reply matches the grammar"
    srun --json-schema "$five" -n 3 -p 'a record' >"$tmp/cut" 2>"$tmp/err"
    rc=$?
    sed 's/^/#   /' "$tmp/err"
    [ $rc -eq 1 ] && grep -q "cut before the JSON value was complete (max tokens 3: raise -n)" "$tmp/err"
    ok $? "-n 3 cuts the server's value: exit 1 and a message saying so"
    ls_stop
else
    for t in "llama-server serves" "run -m server:URL answers" "the server's reply is the local one" \
        "schemas on the server" "greedy under a schema" "--grammar on the server" "-n 3 on the server"; do
        skip "$t" "no llama-server (ELMCHAT_LLAMACPP_TARBALL unset, or it does not build)"
    done
fi
echo "1..$n"
[ "$failed" -eq 0 ]
