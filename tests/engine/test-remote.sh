#!/bin/sh
# test-remote.sh: the remote engine (engine/worker/model_remote.c,
# remote_server.c, engine/remote/) against a real llama-server built from
# $ELMCHAT_LLAMACPP_TARBALL (tests/lib/llama-server.sh: built once into the
# build tree's cache; skipped when the variable is unset).  The same request scripts (tests/engine/remote-drive)
# run on the worker with a local GGUF and with the server on that file:
#   - greedy ids equal token for token (f32; q8_0's agreement is reported),
#     and every turn's reused/computed counts are the local engine's: the
#     server computes the new tokens only;
#   - two sessions on two slots keep their caches; a third takes the least
#     recently used slot, whose session re-prefills when it comes back;
#   - a KV snapshot saved on the server (--slot-save-path) and restored;
#   - Esc (cancel) mid-reply; the server killed mid-reply (the partial reply
#     is kept, the error says so), down (reconnect with backoff fails
#     clearly), restarted (the next turn reconnects);
#   - another vocabulary refused; 401 without the key (and the key in no
#     message); a server that hangs (timeout), answers 500/503, or sends
#     something that is not JSON.
set -u
top_srcdir=${top_srcdir:-.}
builddir=${builddir:-.}
ELMCHAT=${ELMCHAT:-./elmchat-testing}
GEN=${GEN_CHECKPOINT:-$builddir/tests/lib/gen-checkpoint}
DRIVE=$builddir/tests/engine/remote-drive
. "$top_srcdir/tests/lib/tap.sh"
. "$top_srcdir/tests/lib/llama-server.sh"

ls_build
[ -x "$DRIVE" ] || ls_skip_all "no $DRIVE"
command -v python3 >/dev/null 2>&1 || ls_skip_all "python3 is not installed"
command -v curl >/dev/null 2>&1 || ls_skip_all "curl is not installed"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/elmchat-remote.XXXXXX") || exit 1
pids=""
cleanup() {
    for p in $pids; do kill -9 "$p" 2>/dev/null; done
    ls_stop
    rm -rf "$tmp"
}
trap cleanup EXIT

# The default preset: 6 layers, the synthetic SentencePiece tokenizer (vocab 32000).
"$GEN" --preset default --dtype f32 -o "$tmp/hf" >/dev/null &&
    "$ELMCHAT" quantize "$tmp/hf" "$tmp/f32.gguf" --type f32 --quiet &&
    "$ELMCHAT" quantize "$tmp/hf" "$tmp/q8.gguf" --type q8_0 --quiet
ok $? "a generated checkpoint quantized to f32 and q8_0 GGUF files"
tok=$tmp/hf/tokenizer.model

drive() { # drive OUT [ARGS]: the script on stdin through remote-drive
    out=$1
    shift
    "$DRIVE" --tokenizer "$tok" "$@" >"$tmp/$out" 2>"$tmp/$out.err"
    [ -s "$tmp/$out.err" ] && sed 's/^/# stderr: /' "$tmp/$out.err" | head -n 5
    return 0
}
done_lines() { # the "done" lines of FILE without the timings
    grep '^done' "$1" | sed 's/ ms=[0-9]*//; s/ cancel_ms=[0-9]*//'
}

mkdir -p "$tmp/slots"
ls_start f32 -m "$tmp/f32.gguf" -np 2 -c 2048 --slot-save-path "$tmp/slots/" --slots
ok $? "llama-server serves the f32 file (2 slots, a slot save path)"
URL=$LS_URL

# --- greedy replies and the counts, turn by turn --------------------------
cat >"$tmp/chat.txt" <<'EOF'
turn 0 24 Hello there, how are you today?
turn 0 24 Tell me more about the weather in the mountains.
turn 1 16 A second conversation starts here.
turn 0 16 And a third turn: naïve café, 1234.
turn 1 16 Back to the second one.
EOF
{ echo "load $tmp/f32.gguf"; cat "$tmp/chat.txt"; } | drive local
# then more sessions than slots: session 2 takes the least recently used
# slot (session 0's), so session 0 re-prefills when it comes back
{ echo "load server:$URL"; cat "$tmp/chat.txt"; echo "turn 2 8 A third session."
    echo "turn 0 8 Session zero comes back."; } | drive remote
head -n 1 "$tmp/remote" | grep -q '^ready n_ctx=1024 slots=2 snapshots=1$'
ok $? "connect: the vocabulary checked, 2 slots of 1024 tokens, snapshots ($(head -n 1 "$tmp/remote"))"
done_lines "$tmp/local" | cut -d' ' -f 7 >"$tmp/local.ids"
done_lines "$tmp/remote" | head -n 5 | cut -d' ' -f 7 >"$tmp/remote.ids"
n_turns=$(wc -l <"$tmp/local.ids")
n_ids=$(tr ',' '\n' <"$tmp/local.ids" | grep -c .)
[ "$n_turns" -eq 5 ] && cmp -s "$tmp/local.ids" "$tmp/remote.ids"
r=$?
[ $r -eq 0 ] || diff "$tmp/local.ids" "$tmp/remote.ids" | sed 's/^/# /'
ok $r "f32: greedy replies through the server equal the local engine's ($n_ids ids in $n_turns turns)"
done_lines "$tmp/local" | cut -d' ' -f 2-5 >"$tmp/local.counts"
done_lines "$tmp/remote" | head -n 5 | cut -d' ' -f 2-5 >"$tmp/remote.counts"
cmp -s "$tmp/local.counts" "$tmp/remote.counts"
r=$?
sed 's/^/# local:  /' "$tmp/local.counts"
sed 's/^/# server: /' "$tmp/remote.counts"
ok $r "every turn's reused/computed counts are the server's and equal the local engine's"
# turn 2 of session 0: the server computed only the new turn's tokens
set -- $(sed -n 2p "$tmp/remote.counts" | tr '=' ' ')
reused2=$3 computed2=$5
set -- $(sed -n 1p "$tmp/remote.counts" | tr '=' ' ')
past1=$(done_lines "$tmp/remote" | sed -n 1p | sed 's/.*past=\([0-9]*\).*/\1/')
[ "$reused2" = "$past1" ] && [ "$computed2" -gt 0 ] && [ "$computed2" -lt 20 ]
ok $? "multi-turn: the second turn reuses the $past1 cached tokens and computes $computed2 (the new ones)"

# --- stop strings and stop ids: the same end, the same text held back ------
first_text=$(grep '^text ' "$tmp/local" | head -n 1 | cut -c 6-)
stop_s=$(echo "$first_text" | awk '{ for (i = 2; i <= NF; i++) if (length($i) >= 3) {
    print substr($i, 1, 3); exit } }')
stop_i=$(done_lines "$tmp/local" | head -n 1 | sed 's/.*ids=//' | cut -d, -f 6)
cat >"$tmp/stop.txt" <<EOF
stop-string $stop_s
turn 0 24 Hello there, how are you today?
stop-id $stop_i
turn 1 24 Hello there, how are you today?
EOF
{ echo "load $tmp/f32.gguf"; cat "$tmp/stop.txt"; } | drive stoplocal
{ echo "load server:$URL"; cat "$tmp/stop.txt"; } | drive stopremote
grep -e '^done' -e '^text' "$tmp/stoplocal" | cut -d' ' -f 1,2,7 >"$tmp/stoplocal.cut"
grep -e '^done' -e '^text' "$tmp/stopremote" | cut -d' ' -f 1,2,7 >"$tmp/stopremote.cut"
grep -q '^done STOP_STRING' "$tmp/stoplocal.cut" && grep -q '^done STOP ' "$tmp/stoplocal.cut" &&
    cmp -s "$tmp/stoplocal.cut" "$tmp/stopremote.cut"
r=$?
[ $r -eq 0 ] || diff "$tmp/stoplocal.cut" "$tmp/stopremote.cut" | sed 's/^/# /'
ok $r "a stop string ('$stop_s', held back) and a stop id ($stop_i) end the server's reply as the local one"

# --- the chat controller (the TUI's code): bench --chat on both ------------
# Four turns of the openelm-instruct template: per turn the tokens computed
# and reused with the cache kept, the whole sequence without it (FREE_CTX
# erases the server's slot), and the resume from a snapshot (/slots save,
# restore): the server's counts are the local engine's, column for column.
bench() { # bench OUT MODEL [ARGS]
    out=$1
    shift
    "$ELMCHAT" bench --chat -m "$@" --turns 4 --words 20 --reply 16 -t 1 >"$tmp/$out" 2>&1
}
counts() { # the computed, reused and fresh computed columns, the resume's computed
    awk -F'|' '/^\| *[0-9]/ { gsub(/ /, ""); print $4, $5, $8 }' "$1"
    sed -n 's/.*next turn computes \([0-9]*\).*/resume \1/p' "$1"
}
bench blocal "$tmp/f32.gguf"
bench bremote "server:$URL" --tokenizer "$tok"
counts "$tmp/blocal" >"$tmp/blocal.counts"
counts "$tmp/bremote" >"$tmp/bremote.counts"
echo "# bench --chat, computed reused fresh per turn, then the resume: local: $(tr '\n' ',' <"$tmp/blocal.counts")"
echo "# ... and on the server: $(tr '\n' ',' <"$tmp/bremote.counts")"
[ "$(wc -l <"$tmp/blocal.counts")" -eq 5 ] && cmp -s "$tmp/blocal.counts" "$tmp/bremote.counts"
r=$?
[ $r -eq 0 ] || sed 's/^/# /' "$tmp/bremote" | head -n 12
ok $r "bench --chat through the chat controller: computed, reused, fresh and resumed counts equal local"

# --- more sessions than slots: the least recently used slot is taken ------
set -- $(done_lines "$tmp/remote" | sed -n 7p | tr '=' ' ')
[ "${2:-}" = LENGTH ] && [ "${4:-9}" -le 1 ] && [ "${6:-0}" -gt 60 ]
ok $? "3 sessions on 2 slots: the one whose slot was taken re-prefills (reused ${4:-?}, computed ${6:-?})"

# --- KV snapshots on the server --------------------------------------------
cat >"$tmp/snap.txt" <<EOF
load server:$URL
turn 0 8 Something to remember.
save 0 $tmp/a.kv
turn 1 8 Another session.
turn 2 8 And one more, which takes slot zero's place.
restore 0 $tmp/a.kv
turn 0 8 Do you remember?
EOF
drive snap <"$tmp/snap.txt"
grep -q '^done OK past=' "$tmp/snap" && [ "$(grep -c '^done OK past=' "$tmp/snap")" -eq 2 ]
ok $? "SAVE_STATE and LOAD_STATE as /slots save and restore ($(grep '^done OK' "$tmp/snap" | tr '\n' ' '))"
set -- $(done_lines "$tmp/snap" | grep '^done LENGTH' | tail -n 1 | tr '=' ' ')
[ "${4:-0}" -gt 10 ] && [ "${6:-99}" -lt 20 ]
ok $? "after the restore the next turn reuses the snapshot (reused ${4:-?}, computed ${6:-?})"
ls "$tmp/slots" | grep -q '^elmchat-[0-9a-f]*\.bin$'
ok $? "the snapshot is a file in the server's slot save path"

# --- cancel mid-reply --------------------------------------------------------
cat >"$tmp/cancel.txt" <<EOF
load server:$URL
cancel-after 3
turn 0 900 Write a very long story please.
sh sleep 0.3; curl -s $URL/slots >$tmp/slots-after-cancel.json
turn 0 4 Short now.
EOF
ELM_WORKER_TEST_TOKEN_INTERVAL_MS=20 drive cancel <"$tmp/cancel.txt"
line=$(grep '^done' "$tmp/cancel" | head -n 1)
ms=$(echo "$line" | sed -n 's/.*cancel_ms=\([0-9]*\).*/\1/p')
ng=$(echo "$line" | sed -n 's/.*generated=\([0-9]*\).*/\1/p')
echo "$line" | grep -q '^done CANCELLED' && [ "${ms:-9999}" -lt 500 ] && [ "${ng:-999}" -lt 10 ]
ok $? "Esc mid-reply: DONE CANCELLED ${ms:-?} ms after the cancel, ${ng:-?} ids kept"
grep -q '"is_processing":false' "$tmp/slots-after-cancel.json" &&
    ! grep -q '"is_processing":true' "$tmp/slots-after-cancel.json"
ok $? "the closed stream stopped the server: no slot is generating 0.3 s later"
grep '^done' "$tmp/cancel" | sed -n 2p | grep -q '^done LENGTH'
ok $? "the next turn after a cancel answers"

# --- streams with a gap, broken off, or an error event ---------------------
fake() { # fake MODE [ARGS]: a fake server in the background; sets FAKE_URL
    fakes=$((${fakes:-0} + 1))
    python3 "$top_srcdir/tests/engine/fake-llama-server.py" "$@" >"$tmp/fake$fakes.port" &
    pids="$pids $!"
    i=0
    while [ ! -s "$tmp/fake$fakes.port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
    FAKE_URL=http://127.0.0.1:$(cat "$tmp/fake$fakes.port")
}
# "Aé" with é sampled as two byte pieces: llama-server sends no event for
# the first (the text would end inside a character), so tokens_predicted
# jumps from 1 to 3 and the next event's text holds both bytes.
set -- $(printf 'A\303\251' | "$ELMCHAT" tokenize --tokenizer "$tok")
id_a=$1 id_c3=$2 id_a9=$3
ev='data: {"index":0,"stop":false,"id_slot":0,"tokens_evaluated":2'
cat >"$tmp/gap.sse" <<EOF
$ev,"content":"A","tokens":[$id_a],"tokens_predicted":1}
$ev,"content":"\u00e9","tokens":[$id_a9],"tokens_predicted":3}
$ev,"content":"","tokens":[],"stop":true,"tokens_predicted":3,"stop_type":"limit","tokens_cached":4,"timings":{"prompt_n":2,"prompt_ms":1.0,"prompt_per_second":2000.0,"predicted_n":3,"predicted_ms":3.0,"predicted_per_second":1000.0}}
EOF
fake proxy "$URL" "$tmp/gap.sse"
printf 'load server:%s\nturn 0 3 hi\n' "$FAKE_URL" | drive gap
grep -q "^done LENGTH .* ids=$id_a,$id_c3,$id_a9 " "$tmp/gap" && grep -q "^text A$(printf '\303\251')\$" "$tmp/gap"
ok $? "a gap in the stream (a character's first byte unsent): its id recovered ($(grep '^done' "$tmp/gap" | cut -d' ' -f 7))"
cat >"$tmp/broken.sse" <<EOF
$ev,"content":"A","tokens":[$id_a],"tokens_predicted":1}
data: {"index":0,"content":"B","tok
EOF
fake proxy "$URL" "$tmp/broken.sse"
printf 'load server:%s\nturn 0 8 hi\n' "$FAKE_URL" | drive broken
grep -q "^done ERROR .*generated=1 .*ids=$id_a " "$tmp/broken" && grep -q '^error: malformed JSON from the server' "$tmp/broken"
ok $? "a stream that breaks off into what is not JSON: the reply so far kept, the error says so"
cat >"$tmp/errev.sse" <<EOF
$ev,"content":"A","tokens":[$id_a],"tokens_predicted":1}
error: {"code":500,"message":"boom inside","type":"server_error"}
EOF
fake proxy "$URL" "$tmp/errev.sse"
printf 'load server:%s\nturn 0 8 hi\n' "$FAKE_URL" | drive errev
grep -q '^error: the server failed: boom inside' "$tmp/errev"
ok $? "an error event mid-stream: $(grep '^error' "$tmp/errev")"

# --- the server killed mid-reply, down, restarted ---------------------------
port=${URL##*:}
cat >"$tmp/restart.sh" <<EOF
#!/bin/sh
"$LLAMA_SERVER" --host 127.0.0.1 --port $port -t 1 --no-webui -m "$tmp/f32.gguf" -np 2 -c 2048 \
    >"$tmp/restarted.log" 2>&1 &
echo \$! >"$tmp/restarted.pid"
i=0
while [ \$i -lt 300 ]; do
    curl -s "$URL/health" | grep -q '"ok"' && exit 0
    sleep 0.1
    i=\$((i + 1))
done
exit 1
EOF
chmod +x "$tmp/restart.sh"
cat >"$tmp/kill.txt" <<EOF
load server:$URL
turn 0 8 Before the crash.
sh-after 3 kill -9 $LS_PID
turn 0 1000 A long reply that the crash cuts short.
turn 0 8 The server is down now.
sh $tmp/restart.sh
turn 0 8 The server is back.
EOF
drive kill <"$tmp/kill.txt"
wait "$LS_PID" 2>/dev/null
LS_PID=
[ -f "$tmp/restarted.pid" ] && pids="$pids $(cat "$tmp/restarted.pid")"
sed 's/^/# /' "$tmp/kill" | grep -v '^# text' | cut -c 1-200
set -- $(done_lines "$tmp/kill" | sed -n 2p | tr '=' ' ')
[ "${2:-}" = ERROR ] && [ "${8:-0}" -ge 3 ] &&
    grep -q 'broke mid-answer\|stream ended before' "$tmp/kill"
ok $? "killed mid-reply: DONE ERROR says the connection broke, ${8:-?} ids of the reply kept"
grep -q 'cannot reach.*(reconnect: 4 tries)' "$tmp/kill"
ok $? "down: the next turn retries with backoff and says it cannot reach the server"
set -- $(done_lines "$tmp/kill" | sed -n 4p | tr '=' ' ')
[ "${2:-}" = LENGTH ] && [ "${4:-1}" -eq 0 ] && [ "${6:-0}" -gt 20 ]
ok $? "restarted: the next turn reconnects and re-prefills the whole sequence (computed ${6:-?})"
for p in $pids; do kill -9 "$p" 2>/dev/null; done
pids=

# --- q8_0, behind an API key --------------------------------------------------
key=sekrit-$$-key
ls_start q8 -m "$tmp/q8.gguf" -np 1 -c 1024 --api-key "$key"
ok $? "llama-server serves the q8_0 file with --api-key"
printf 'load server:%s\n' "$LS_URL" | drive nokey
grep -q '^error: .*HTTP 401.*API key' "$tmp/nokey"
ok $? "401 without the key: $(cut -c 1-110 "$tmp/nokey")"
printf 'load server:%s\n' "$LS_URL" | drive badkey --api-key wrong-$key
grep -q '^error: .*HTTP 401' "$tmp/badkey" && ! grep -q "$key" "$tmp/badkey" "$tmp/badkey.err"
ok $? "401 with a wrong key, and the key is in no message"
{ echo "load $tmp/q8.gguf"; head -n 2 "$tmp/chat.txt"; } | drive q8local
{ echo "load server:$LS_URL"; head -n 2 "$tmp/chat.txt"; } | drive q8remote --api-key "$key"
head -n 1 "$tmp/q8remote" | grep -q '^ready' && [ "$(grep -c '^done LENGTH' "$tmp/q8remote")" -eq 2 ]
ok $? "q8_0 with the key: connected, two turns answered"
agree=$(paste -d'|' "$tmp/q8local" "$tmp/q8remote" | grep '^done' |
    awk -F'|' '{ split($1, a, "ids="); split($2, b, "ids="); split(a[2], x, "[ ,]");
        split(b[2], y, "[ ,]"); n = 0; for (i = 1; i in x && x[i] == y[i] && x[i] != ""; i++) n++;
        t += n; m += 24 } END { print t "/" m }')
echo "# q8_0: greedy ids equal to local for the first $agree (llama.cpp rounds activations to q8_0 its own way)"
ls_stop

# --- another vocabulary ------------------------------------------------------
"$GEN" --preset micro --synthetic-tokenizer --seed 4 -o "$tmp/micro" >/dev/null &&
    "$ELMCHAT" quantize "$tmp/micro" "$tmp/micro.gguf" --type q8_0 --quiet
ls_start micro -m "$tmp/micro.gguf" -np 1 -c 512
printf 'load server:%s\n' "$LS_URL" | drive vocab
grep -q '^error: .*vocabulary of 1024 tokens.*32000.*refused' "$tmp/vocab"
ok $? "another vocabulary is refused: $(cut -c 1-120 "$tmp/vocab")"
ls_stop
llama2=$top_srcdir/models/llama2-tokenizer.model
[ -f "$llama2" ] || llama2=$builddir/models/llama2-tokenizer.model
if [ -f "$llama2" ]; then
    ls_start f32b -m "$tmp/f32.gguf" -np 1 -c 512
    printf 'load server:%s\n' "$LS_URL" | "$DRIVE" --tokenizer "$llama2" >"$tmp/vocab2" 2>&1
    grep -q '^error: .*tokenizes differently' "$tmp/vocab2"
    ok $? "the same vocabulary size with other pieces is refused: $(cut -c 1-100 "$tmp/vocab2")"
    ls_stop
else
    echo "ok $((n = n + 1)) # SKIP no LLaMA-2 tokenizer.model in the tree"
fi

# --- servers that fail -----------------------------------------------------
fake hang
t0=$(date +%s)
printf 'load server:%s\n' "$FAKE_URL" | drive hang --timeout 2
t1=$(date +%s)
grep -q '^error: .*no answer for 2 s (timeout)' "$tmp/hang" && [ $((t1 - t0)) -lt 10 ]
ok $? "a server that never answers: a timeout ($(cut -c 1-80 "$tmp/hang"))"
fake status 500
printf 'load server:%s\n' "$FAKE_URL" | drive s500
grep -q '^error: .*HTTP 500, server error: fake failure 500' "$tmp/s500"
ok $? "HTTP 500: $(cut -c 1-100 "$tmp/s500")"
fake status 503
printf 'load server:%s\n' "$FAKE_URL" | drive s503
grep -q '^error: .*HTTP 503, the server is busy' "$tmp/s503"
ok $? "HTTP 503: $(cut -c 1-100 "$tmp/s503")"
fake garbage
printf 'load server:%s\n' "$FAKE_URL" | drive garbage
grep -q '^error: .*/health' "$tmp/garbage" && grep -qi 'json\|parse\|token' "$tmp/garbage"
ok $? "an answer that is not JSON: $(cut -c 1-100 "$tmp/garbage")"
printf 'load server:http://127.0.0.1:1\n' | drive down
grep -q '^error: cannot reach http://127.0.0.1:1' "$tmp/down"
ok $? "a server that is down: $(cut -c 1-100 "$tmp/down")"

! cat "$tmp"/*.err 2>/dev/null | grep -q -e Sanitizer -e 'runtime error'
ok $? "no sanitizer report from any run"

echo "1..$n"
[ "$failed" -eq 0 ]
