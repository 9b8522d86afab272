#!/bin/sh
# test-pull.sh: `elmchat pull` against a stand-in for the Hugging Face Hub
# on 127.0.0.1 (tests/lib/fake-hub.py: the same endpoints, headers and
# redirects): a full pull into the Hub cache layout and a chat with it on the
# bundled tokenizer, a pull with nothing left to fetch, a connection cut in
# the middle of a file (resumed with Range), a wrong sha256 (rejected, not
# installed), 503 answers (retried), a 404 repo, a 401 private repo without
# and with HF_TOKEN, HF_ENDPOINT elsewhere, a full disk, Ctrl-C and resume (no
# snapshot until every file is in), an unreachable Hub (closed port,
# unresolvable name: fast, with the offline hint), a stalled Hub (Ctrl-C and
# SIGTERM end the wait at once), a listing whose sizes overflow a sum,
# HF_HUB_OFFLINE, a paged file list, --include, --quantize, and `elmchat
# models` listing and --rm.
. "${top_srcdir:-.}/tests/lib/cli-test.sh"
command -v python3 >/dev/null 2>&1 || { echo "1..0 # SKIP no python3 for the fake Hub"; exit 0; }
cli_tmpdir pull
cli_cleanup=stop_hub
export HOME="$tmp" XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config" \
    XDG_STATE_HOME="$tmp/state" XDG_CACHE_HOME="$tmp/cache" HF_HUB_CACHE="$tmp/hub" \
    ELMCHAT_PULL_RETRY_MS=20
unset HF_TOKEN HF_HOME HF_HUB_OFFLINE HF_TOKEN_PATH

now_ms() { date +%s%3N; }
# wait_for_file_line FILE REGEX TENTHS: until a line of FILE matches (a deadline)
wait_for_file_line() {
    i=0
    while ! grep -q "$2" "$1" 2>/dev/null && [ $i -lt "$3" ]; do sleep 0.1; i=$((i + 1)); done
}
# gone_within PID MS: 0 when the process has ended within MS milliseconds
gone_within() {
    end=$(($(now_ms) + $2))
    # a child that ended stays a zombie until waited for: it counts as gone
    while kill -0 "$1" 2>/dev/null && ! ps -o stat= -p "$1" | grep -q '^Z'; do
        [ "$(now_ms)" -ge "$end" ] && return 1
        sleep 0.05
    done
    return 0
}

HUB_ROOT="$tmp/root" HUB_DIR="$tmp"
. "$top_srcdir/tests/lib/fake-hub.sh"

# Apple's layout: config.json, generation_config.json and the safetensors,
# no tokenizer; and a small one with its own tokenizer for the faults.
# (Without the LLaMA-2 tokenizer the build fetches, the repo has its own.)
shipped=$(dirname "$ELMCHAT")/models/llama2-tokenizer.model
big="$tmp/root/apple/OpenELM-270M-Instruct"
if [ -f "$shipped" ]; then
    "$GEN" --preset default --no-tokenizer -o "$big" >/dev/null 2>&1
else
    "$GEN" --preset default --synthetic-tokenizer -o "$big" >/dev/null 2>&1
fi
printf '{"bos_token_id": 1, "eos_token_id": 2}\n' > "$big/generation_config.json"
small="$tmp/root/tester/tiny"
"$GEN" --preset micro --synthetic-tokenizer -o "$small" >/dev/null 2>&1
mkdir -p "$small/extra" && printf 'nested\n' > "$small/extra/notes.txt"
printf 'not for elmchat\n' > "$small/pytorch_model.bin"
repo="$HF_HUB_CACHE/models--apple--OpenELM-270M-Instruct"
sha=$(sha256_of "$big/model.safetensors")

start_hub
"$ELMCHAT" pull 270M-instruct >"$tmp/out" 2>"$tmp/err"
ok $? "pull 270M-instruct: exit 0"
commit=$(cat "$repo/refs/main" 2>/dev/null)
snap="$repo/snapshots/$commit"
[ -n "$commit" ] && [ "$(cat "$tmp/out")" = "$snap" ]
ok $? "refs/main names the commit; the snapshot folder is printed"
[ "$(readlink "$snap/model.safetensors")" = "../../blobs/$sha" ] && [ -f "$repo/blobs/$sha" ] &&
    cmp -s "$repo/blobs/$sha" "$big/model.safetensors"
ok $? "the weights are blobs/SHA256, linked from the snapshot, byte-identical"
[ -L "$snap/config.json" ] && cmp -s "$snap/config.json" "$big/config.json" &&
    cmp -s "$snap/generation_config.json" "$big/generation_config.json"
ok $? "the plain files are linked too"
grep -q "\] model.safetensors 48.2 MB in .*sha256 ok" "$tmp/err" &&
    grep -q "git blob id ok" "$tmp/err"
ok $? "each file reported with its check"
"$ELMCHAT" run -m 270M-instruct -n 3 --temp 0 -p "hello" >"$tmp/run" 2>&1
ok $? "run -m 270M-instruct chats with the pulled model"
if [ -f "$shipped" ]; then
    "$ELMCHAT" info -m apple/OpenELM-270M-Instruct >"$tmp/info" 2>&1 &&
        grep -q "elmchat's LLaMA-2 tokenizer.model (the folder has none)" "$tmp/info"
    ok $? "on the bundled tokenizer (the folder has none)"
else
    skip "on the bundled tokenizer (the folder has none)" "the build fetched no LLaMA-2 tokenizer.model"
fi
ls "$repo/blobs" | grep -q incomplete
[ $? -ne 0 ]
ok $? "no partial file left"

: > "$tmp/log"
"$ELMCHAT" pull 270M-instruct >/dev/null 2>"$tmp/err"
[ $? -eq 0 ] && ! grep -q "^GET /cdn/" "$tmp/log" && grep -q "[34] already here" "$tmp/err"
ok $? "a second pull fetches nothing"

# a cut connection: resumed from where it stopped
rm -rf "$HF_HUB_CACHE"
start_hub --drop-once
"$ELMCHAT" pull 270M-instruct >/dev/null 2>"$tmp/err"
ok $? "a connection cut in the middle of the weights: the pull still succeeds"
grep -q "^GET /cdn/.* bytes=[1-9][0-9]*- " "$tmp/log" && grep -q "model.safetensors: the connection broke at 2[0-9.]* MB (.*): resuming" "$tmp/err"
ok $? "it resumed with a Range request, and said so"
cmp -s "$repo/blobs/$sha" "$big/model.safetensors"
ok $? "the resumed file is byte-identical"

# a wrong sha256: nothing under the final name
rm -rf "$HF_HUB_CACHE"
start_hub --corrupt model.safetensors
"$ELMCHAT" pull 270M-instruct >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "model.safetensors: the download's sha256 is [0-9a-f]*, the Hub's is $sha: it is damaged and was removed" "$tmp/err"
ok $? "a wrong sha256 is rejected with both hashes"
[ ! -e "$repo/blobs/$sha" ] && [ ! -e "$repo/blobs/$sha.incomplete" ] && [ ! -e "$snap/model.safetensors" ]
ok $? "and the file is not installed"

start_hub --fail 3
"$ELMCHAT" pull 270M-instruct >/dev/null 2>"$tmp/err"
ok $? "503 answers are retried with backoff"
[ "$(grep -c "^GET /api/models/apple/OpenELM-270M-Instruct/revision/main" "$tmp/log")" -eq 4 ]
ok $? "... three times before the answer"

"$ELMCHAT" pull apple/OpenELM-9B >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "apple/OpenELM-9B: no such repository on the Hub (404)" "$tmp/err"
ok $? "a repository that does not exist: 404, said so"
"$ELMCHAT" pull nonsense >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "neither a known model" "$tmp/err"
ok $? "a name that is neither: usage error"

# a private repository
: > "$tmp/root/tester/tiny.private"
start_hub --token hf_secret_test
"$ELMCHAT" pull tester/tiny >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "tester/tiny: the Hub answers 401 .*set HF_TOKEN" "$tmp/err"
ok $? "a private repository without a token: 401, points to HF_TOKEN"
HF_TOKEN=hf_wrong "$ELMCHAT" pull tester/tiny >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "refuses the token in HF_TOKEN" "$tmp/err" && ! grep -q hf_wrong "$tmp/err"
ok $? "a wrong token: said so, the token not shown"
HF_TOKEN=hf_secret_test "$ELMCHAT" pull tester/tiny >/dev/null 2>"$tmp/err"
ok $? "with HF_TOKEN: pulled"
mkdir -p "$tmp/hfhome" && printf 'hf_secret_test\n' > "$tmp/hfhome/token"
rm -rf "$HF_HUB_CACHE/models--tester--tiny"
HF_HOME="$tmp/hfhome" "$ELMCHAT" pull tester/tiny >/dev/null 2>"$tmp/err"
ok $? "the token huggingface-cli login stores (\$HF_HOME/token) works too"
tiny="$HF_HUB_CACHE/models--tester--tiny/snapshots/$(cat "$HF_HUB_CACHE/models--tester--tiny/refs/main")"
case $(readlink "$tiny/extra/notes.txt") in ../../../blobs/*) [ "$(cat "$tiny/extra/notes.txt")" = nested ] ;; *) false ;; esac
ok $? "a file in a folder: linked one level deeper"
[ ! -e "$tiny/pytorch_model.bin" ]
ok $? "other weight formats beside safetensors are left out"
rm "$tmp/root/tester/tiny.private"

# another endpoint (a mirror); one that does not answer
mkdir -p "$tmp/root2/tester" && cp -r "$small" "$tmp/root2/tester/mirrored"
port_main=$HF_ENDPOINT
python3 "$top_srcdir/tests/lib/fake-hub.py" --root "$tmp/root2" --port-file "$tmp/port2" --log "$tmp/log2" &
mirror_pid=$!
i=0; while [ ! -s "$tmp/port2" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
HF_ENDPOINT="http://127.0.0.1:$(cat "$tmp/port2")/" "$ELMCHAT" pull tester/mirrored >/dev/null 2>"$tmp/err"
[ $? -eq 0 ] && grep -q "^GET /api/models/tester/mirrored/revision/main" "$tmp/log2"
ok $? "HF_ENDPOINT: pulled from the mirror (a trailing / is fine)"
kill "$mirror_pid"; wait "$mirror_pid" 2>/dev/null
# offline: a closed port, a name that does not resolve; fail fast (one quick
# retry), say what to do.  The real retry pause, not the tests' 20 ms.
for ep in "http://127.0.0.1:$(cat "$tmp/port2")" "http://nonexistent.invalid"; do
    t0=$(now_ms)
    HF_ENDPOINT=$ep ELMCHAT_PULL_RETRY_MS=1000 "$ELMCHAT" pull tester/mirrored >/dev/null 2>"$tmp/err"
    rc=$?
    dt=$(($(now_ms) - t0))
    [ $rc -eq 1 ] && [ "$dt" -lt 5000 ] &&
        grep -q "tester/mirrored: cannot reach the Hub at $ep (.*): offline? Set HF_HUB_OFFLINE=1 .*, or run elmchat pull tester/mirrored once online" "$tmp/err" &&
        grep -q "asking $ep for the files of tester/mirrored" "$tmp/err"
    ok $? "unreachable Hub ($ep): fails in $dt ms (< 5 s) with the offline hint"
    t0=$(now_ms)
    HF_ENDPOINT=$ep ELMCHAT_PULL_RETRY_MS=1000 "$ELMCHAT" run -m tester/elsewhere -n 2 -p hi >/dev/null 2>"$tmp/err"
    rc=$?
    dt=$(($(now_ms) - t0))
    [ $rc -ne 0 ] && [ "$dt" -lt 5000 ] && grep -q "HF_HUB_OFFLINE=1" "$tmp/err" &&
        grep -q "tester/elsewhere is not on this machine: asking the Hub ($ep) for its size" "$tmp/err"
    ok $? "run -m NAME, unreachable Hub ($ep): says what it does, fails in $dt ms with the hint"
done
export HF_ENDPOINT=$port_main

# a Hub that accepts and then says nothing: Ctrl-C and SIGTERM end the wait
# (pull, and -m NAME before the chat) within 3 s, whatever libcurl waits for
start_hub --stall
# SIG, the request line the hub logs first, then the command: started with
# its stderr in $tmp/err, sent SIG once the hub has its request; sets gone
# (0: ended within 3 s), rc and dt (ms from the signal)
stop_stalled() {
    sig=$1 request=$2
    shift 2
    "$@" >/dev/null 2>"$tmp/err" &
    pid=$!
    wait_for_file_line "$tmp/log" "$request" 100
    t0=$(now_ms)
    kill -$sig $pid
    gone_within $pid 3000
    gone=$?
    wait $pid
    rc=$?
    dt=$(($(now_ms) - t0))
    : >"$tmp/log"
}
for sig in INT TERM; do
    stop_stalled $sig "^GET /api/models/tester/tiny/revision/main" "$ELMCHAT" pull tester/tiny
    want=$([ $sig = INT ] && echo 130 || echo 143)
    [ $gone -eq 0 ] && [ $rc -eq "$want" ] &&
        grep -q "tester/tiny: stopped while asking the Hub for the revision" "$tmp/err"
    ok $? "a stalled Hub: pull ends $dt ms after SIG$sig (rc $rc, want $want)"
    stop_stalled $sig "^GET /api/models/tester/elsewhere/revision/main" \
        "$ELMCHAT" run -m tester/elsewhere -n 2 -p hi
    [ $gone -eq 0 ] && [ $rc -ne 0 ] && grep -q "asking the Hub (.*) for its size" "$tmp/err" &&
        grep -q "stopped while asking the Hub" "$tmp/err"
    ok $? "a stalled Hub: run -m NAME ends $dt ms after SIG$sig (rc $rc), said what it waited for"
done

# a hostile listing: two LFS files of 2^62 bytes each (their sum overflows
# a signed 64-bit count): refused by the free-space check, nothing fetched
mkdir -p "$tmp/root/tester/huge"
printf 'a' > "$tmp/root/tester/huge/a.safetensors"
printf 'b' > "$tmp/root/tester/huge/b.safetensors"
start_hub --huge-size 4611686018427387904
"$ELMCHAT" pull tester/huge >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] && grep -q "the download needs .* and the disk has .* free" "$tmp/err" &&
    ! grep -q "/resolve/\|/cdn/" "$tmp/log"
ok $? "two 2^62-byte files in the listing: the need does not wrap, refused before any download (rc $rc)"
start_hub

HF_HUB_OFFLINE=1 "$ELMCHAT" pull tester/tiny >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "HF_HUB_OFFLINE is set" "$tmp/err"
ok $? "HF_HUB_OFFLINE=1: refuses to download"

# a full disk: the partial file is /dev/full
rm -rf "$HF_HUB_CACHE/models--tester--tiny"
tsha=$(sha256_of "$small/model.safetensors")
mkdir -p "$HF_HUB_CACHE/models--tester--tiny/blobs"
ln -s /dev/full "$HF_HUB_CACHE/models--tester--tiny/blobs/$tsha.incomplete"
"$ELMCHAT" pull tester/tiny >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "$tsha.incomplete: No space left on device; .* free some space and run elmchat pull tester/tiny again" "$tmp/err"
ok $? "a full disk: No space left on device, what to do"
[ ! -e "$HF_HUB_CACHE/models--tester--tiny/blobs/$tsha" ]
ok $? "... and nothing under the final name"
rm -f "$HF_HUB_CACHE/models--tester--tiny/blobs/$tsha.incomplete"

# Ctrl-C in the middle, then resume
start_hub --rate 400000
"$ELMCHAT" pull tester/tiny >/dev/null 2>"$tmp/err" &
pull_pid=$!
part="$HF_HUB_CACHE/models--tester--tiny/blobs/$tsha.incomplete"
i=0
while [ "$(file_size "$part" 2>/dev/null || echo 0)" -lt 100000 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
kill -INT "$pull_pid"
wait "$pull_pid"
rc=$?
[ $rc -eq 130 ] && grep -q "interrupted: .* of model.safetensors kept in .*$tsha.incomplete; elmchat pull tester/tiny resumes it" "$tmp/err"
ok $? "Ctrl-C: exit 130, the partial file kept and named (rc $rc)"
kept=$(file_size "$part" 2>/dev/null || echo 0)
[ "$kept" -gt 0 ] && [ ! -e "$HF_HUB_CACHE/models--tester--tiny/blobs/$tsha" ] &&
    [ ! -d "$HF_HUB_CACHE/models--tester--tiny/snapshots" ]
ok $? "... $kept bytes in the partial file, none under the final name, no snapshot yet"
start_hub
"$ELMCHAT" pull tester/tiny >/dev/null 2>"$tmp/err"
[ $? -eq 0 ] && grep -q "resuming after" "$tmp/err" && grep -q "^GET /cdn/.* bytes=$kept- " "$tmp/log" &&
    cmp -s "$HF_HUB_CACHE/models--tester--tiny/blobs/$tsha" "$small/model.safetensors"
ok $? "the next pull resumes from byte $kept and the file is right"

# a paged file list; --include
rm -rf "$HF_HUB_CACHE/models--tester--tiny"
start_hub --page 2
"$ELMCHAT" pull tester/tiny --include '*.json' --include 'tokenizer.*' >/dev/null 2>"$tmp/err"
tiny="$HF_HUB_CACHE/models--tester--tiny/snapshots/$(cat "$HF_HUB_CACHE/models--tester--tiny/refs/main")"
[ $? -eq 0 ] && [ -e "$tiny/config.json" ] && [ -e "$tiny/tokenizer.model" ] &&
    [ ! -e "$tiny/model.safetensors" ] && [ "$(grep -c "/tree/" "$tmp/log")" -ge 3 ]
ok $? "a file list over several pages, and --include"

# --quantize: a GGUF beside the download, which -m then loads
"$ELMCHAT" pull 270M-instruct --quantize q8_0 >/dev/null 2>"$tmp/err"
[ $? -eq 0 ] && [ -f "$snap/elmchat-q8_0.gguf" ]
ok $? "--quantize q8_0 writes elmchat-q8_0.gguf beside it"
"$ELMCHAT" info -m 270M-instruct >"$tmp/info" 2>&1 && grep -q "elmchat-q8_0.gguf" "$tmp/info" &&
    grep -q "q8_0" "$tmp/info"
ok $? "-m 270M-instruct then loads the q8_0 file"
"$ELMCHAT" run -m 270M-instruct -n 3 --temp 0 -p "hello" >/dev/null 2>&1
ok $? "... and chats (its vocabulary written into the GGUF)"

# -m NAME pulls what is missing (run: no terminal, so no question)
rm -rf "$HF_HUB_CACHE/models--tester--tiny"
"$ELMCHAT" run -m tester/tiny --no-pull -n 2 -p hi >/dev/null 2>"$tmp/err"
[ $? -ne 0 ] && grep -q "tester/tiny is not downloaded (--no-pull): elmchat pull tester/tiny" "$tmp/err"
ok $? "run -m REPO --no-pull: refused, says how to get it"
HF_HUB_OFFLINE=1 "$ELMCHAT" run -m tester/tiny -n 2 -p hi >/dev/null 2>"$tmp/err"
[ $? -ne 0 ] && grep -q "tester/tiny is not downloaded (HF_HUB_OFFLINE is set)" "$tmp/err"
ok $? "run -m REPO with HF_HUB_OFFLINE=1: refused"
"$ELMCHAT" run -m tester/tiny -n 2 --temp 0 -p hi >"$tmp/out" 2>"$tmp/err"
[ $? -eq 0 ] && grep -q "tester/tiny is not here: downloading it from the Hub" "$tmp/err" &&
    grep -q "sha256 ok" "$tmp/err" && [ -s "$tmp/out" ] && [ -d "$HF_HUB_CACHE/models--tester--tiny/snapshots" ]
ok $? "run -m REPO: pulled on demand, then the reply"

# config.yaml's pull_quantize: the pull on demand writes the GGUF too
rm -rf "$HF_HUB_CACHE/models--tester--tiny"
mkdir -p "$XDG_CONFIG_HOME/elmchat"
printf 'pull_quantize: q8_0\n' > "$XDG_CONFIG_HOME/elmchat/config.yaml"
"$ELMCHAT" run -m tester/tiny -n 2 --temp 0 -p hi >"$tmp/out" 2>"$tmp/err"
[ $? -eq 0 ] && ls "$HF_HUB_CACHE"/models--tester--tiny/snapshots/*/elmchat-q8_0.gguf >/dev/null 2>&1 &&
    grep -q "writing the GGUF: 100%" "$tmp/err" && grep -q "^wrote .*/elmchat-q8_0.gguf$" "$tmp/err" &&
    "$ELMCHAT" info -m tester/tiny 2>&1 | grep -q "elmchat-q8_0.gguf"
ok $? "pull_quantize: q8_0 in config.yaml: -m on demand writes (and says so) and then loads the Q8_0 GGUF"
printf 'pull_quantize: q9\n' > "$XDG_CONFIG_HOME/elmchat/config.yaml"
"$ELMCHAT" pull tester/tiny >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "config.yaml:1:16: pull_quantize: unknown type" "$tmp/err"
ok $? "a wrong pull_quantize: an error naming the file, line and column"
rm "$XDG_CONFIG_HOME/elmchat/config.yaml"

# elmchat models
mkdir -p "$XDG_DATA_HOME/elmchat/sessions"
"$ELMCHAT" models >"$tmp/models" 2>&1
grep -q "^apple/OpenELM-270M-Instruct  *hub cache  *[0-9.]* MB q8_0 " "$tmp/models" &&
    grep -q "^tester/tiny  *hub cache" "$tmp/models"
ok $? "models lists the pulled ones with where, size, type"
"$ELMCHAT" models --rm tester/tiny </dev/null >"$tmp/out" 2>&1
[ $? -ne 0 ] || grep -q "kept" "$tmp/out"
ok $? "models --rm without a terminal and without --yes does not remove"
[ -d "$HF_HUB_CACHE/models--tester--tiny" ]
ok $? "... it is still there"
"$ELMCHAT" models --rm tester/tiny --yes >"$tmp/out" 2>&1
[ $? -eq 0 ] && [ ! -e "$HF_HUB_CACHE/models--tester--tiny" ] && grep -q "removed tester/tiny" "$tmp/out"
ok $? "models --rm NAME --yes removes it"
"$ELMCHAT" models >"$tmp/models" 2>&1 && ! grep -q "tester/tiny" "$tmp/models"
ok $? "... and it is no longer listed"

echo "1..$n"
[ "$failed" -eq 0 ]
