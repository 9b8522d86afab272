#!/bin/sh
# test-remote-hostile.sh: the remote engine (server:URL) against a hostile
# server that needs no real llama-server (tests/engine/fake-llama-server.py
# endless): it passes the connect checks, then streams tokens for ever,
# whatever n_predict asks.  The reply stops at max_tokens, and where the
# context is full, and the sequence never passes the context's size.
set -u
top_srcdir=${top_srcdir:-.}
builddir=${builddir:-.}
ELMCHAT=${ELMCHAT:-./elmchat}
GEN=${GEN_CHECKPOINT:-$builddir/tests/lib/gen-checkpoint}
DRIVE=$builddir/tests/engine/remote-drive
. "$top_srcdir/tests/lib/tap.sh"
[ -x "$DRIVE" ] || { echo "1..0 # SKIP no $DRIVE"; exit 0; }
[ -x "$GEN" ] || { echo "1..0 # SKIP no $GEN"; exit 0; }
command -v python3 >/dev/null 2>&1 || { echo "1..0 # SKIP python3 is not installed"; exit 0; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/elmchat-hostile.XXXXXX") || exit 1
fake_pid=""
trap '[ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
"$GEN" --preset micro --synthetic-tokenizer -o "$tmp/hf" >/dev/null 2>&1
tok=$tmp/hf/tokenizer.model
n_vocab=1024
n_ctx=64

python3 "$top_srcdir/tests/engine/fake-llama-server.py" endless "$tok" $n_ctx $n_vocab "$ELMCHAT" \
    >"$tmp/port" &
fake_pid=$!
i=0
while [ ! -s "$tmp/port" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
url=http://127.0.0.1:$(cat "$tmp/port")

# drive OUT SECS: the script on stdin through remote-drive, killed after SECS
drive() {
    cat >"$tmp/$1.in"
    "$DRIVE" --tokenizer "$tok" <"$tmp/$1.in" >"$tmp/$1" 2>"$tmp/$1.err" &
    dpid=$!
    end=$(($(date +%s) + $2))
    while kill -0 $dpid 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do sleep 0.1; done
    kill -9 $dpid 2>/dev/null
    wait $dpid
}
field() { sed -n "s/.* $1=\\([0-9]*\\).*/\\1/p" "$2" | head -n 1; }

printf 'load server:%s\nturn 0 8 hi\n' "$url" | drive len 60
sed 's/^/# /' "$tmp/len" | head -n 4
grep -q "^ready n_ctx=$n_ctx " "$tmp/len"
ok $? "the endless server passes the connect checks"
g=$(field generated "$tmp/len")
grep -q '^done LENGTH ' "$tmp/len" && [ "${g:-0}" -eq 8 ]
ok $? "a stream that never ends: the reply stops at max_tokens (8; generated ${g:-?})"

printf 'load server:%s\nturn 0 1000 hi\nturn 0 5 again\n' "$url" | drive ctx 60
sed 's/^/# /' "$tmp/ctx" | head -n 4
p=$(field past "$tmp/ctx")
g=$(field generated "$tmp/ctx")
grep -q '^done CONTEXT_FULL ' "$tmp/ctx" && [ -n "$p" ] && [ "$p" -le $n_ctx ] &&
    [ "${g:-0}" -gt 0 ]
ok $? "max_tokens past the context: it stops where the context is full (past ${p:-?} <= $n_ctx, generated ${g:-?})"
[ "$(grep -c '^done' "$tmp/ctx")" -eq 2 ] && ! grep '^done' "$tmp/ctx" | sed -n 2p | grep -q ' past=\(6[5-9]\|[7-9][0-9]\|[0-9][0-9][0-9]\)'
ok $? "the next turn does not take the sequence past the context either"

echo "1..$n"
[ "$failed" -eq 0 ]
