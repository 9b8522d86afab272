#!/bin/sh
# test-hub-interop.sh: one Hugging Face cache for every tool.  Hugging Face's
# own JavaScript client (@huggingface/hub, from npm into tests/.cache)
# reads what `elmchat pull` wrote (scanCacheDir: the repo, its commit, the
# ref, each file and its blob's size), and elmchat runs what that client
# downloaded (snapshotDownload) without pulling it again.  Both against the
# stand-in Hub (tests/lib/fake-hub.py).  Skipped without node, npm or the
# registry.
. "${top_srcdir:-.}/tests/lib/cli-test.sh"
builddir=${builddir:-.}
version=2.17.5
skip_all() { echo "1..0 # SKIP $1"; exit 0; }
command -v python3 >/dev/null 2>&1 || skip_all "no python3 for the fake Hub"
command -v node >/dev/null 2>&1 || skip_all "no node for @huggingface/hub"
npm=${NPM:-npm}

cache=$builddir/tests/.cache/hfhub-$version
if [ ! -f "$cache/node_modules/@huggingface/hub/package.json" ]; then
    { [ "$npm" != no ] && command -v "$npm" >/dev/null 2>&1; } || skip_all "npm is not installed"
    mkdir -p "$builddir/tests/.cache" || exit 1
    work=$(mktemp -d "$builddir/tests/.cache/hfhub.XXXXXX") || exit 1
    if ! (cd "$work" && "$npm" install --no-audit --no-fund "@huggingface/hub@$version" \
            >npm.log 2>&1); then
        reason=$(grep -m 1 -i 'err' "$work/npm.log")
        rm -rf "$work"
        skip_all "npm install @huggingface/hub@$version failed (no registry?): $reason"
    fi
    rm -rf "$cache"
    mv "$work" "$cache" || exit 1
fi
cp "$top_srcdir/tests/cli/hub-interop.mjs" "$cache/hub-interop.mjs" || exit 1
interop() { node "$cache/hub-interop.mjs" "$@"; }

cli_tmpdir interop
cli_cleanup=stop_hub
export HOME="$tmp" XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config" \
    XDG_STATE_HOME="$tmp/state" XDG_CACHE_HOME="$tmp/cache" ELMCHAT_PULL_RETRY_MS=20
unset HF_TOKEN HF_HOME HF_HUB_OFFLINE HF_TOKEN_PATH
HUB_ROOT="$tmp/root" HUB_DIR="$tmp"
. "$top_srcdir/tests/lib/fake-hub.sh"
"$GEN" --preset micro --synthetic-tokenizer -o "$HUB_ROOT/tester/tiny" >/dev/null 2>&1
mkdir -p "$HUB_ROOT/tester/tiny/extra" && printf 'nested\n' > "$HUB_ROOT/tester/tiny/extra/notes.txt"
start_hub

# elmchat writes, huggingface.js reads
HF_HUB_CACHE="$tmp/ours" "$ELMCHAT" pull tester/tiny >/dev/null 2>"$tmp/err"
ok $? "elmchat pull tester/tiny"
commit=$(cat "$tmp/ours/models--tester--tiny/refs/main")
interop scan "$tmp/ours" >"$tmp/scan" 2>&1
ok $? "scanCacheDir reads elmchat's cache"
size=$(file_size "$HUB_ROOT/tester/tiny/model.safetensors")
grep -q "^tester/tiny $commit refs=main .*model.safetensors:$size" "$tmp/scan" &&
    grep -q " config.json:" "$tmp/scan" &&
    grep -q " tokenizer.model:" "$tmp/scan"
ok $? "it finds the repo, its commit and ref, each file with its blob's size"
# (its scan lists a snapshot's top folder only: extra/notes.txt is not seen)
! grep -q "^warning" "$tmp/scan"
ok $? "with no warning"

# huggingface.js writes, elmchat reads
interop download "$tmp/theirs" tester/tiny "$HF_ENDPOINT" >"$tmp/dl" 2>&1
ok $? "snapshotDownload tester/tiny into a cache of its own"
: > "$HUB_DIR/log"
HF_HUB_CACHE="$tmp/theirs" "$ELMCHAT" info -m tester/tiny >"$tmp/info" 2>&1
grep -q "^path: *$tmp/theirs/models--tester--tiny/snapshots/" "$tmp/info"
ok $? "elmchat -m tester/tiny finds what huggingface.js downloaded"
HF_HUB_CACHE="$tmp/theirs" "$ELMCHAT" run --no-pull -m tester/tiny -n 3 --temp 0 -p hi >"$tmp/out" 2>&1 &&
    [ ! -s "$HUB_DIR/log" ]
ok $? "and runs it without asking the Hub"
HF_HUB_CACHE="$tmp/theirs" "$ELMCHAT" pull tester/tiny >/dev/null 2>"$tmp/err" &&
    grep -q "fetched in .*; [0-9]* already here" "$tmp/err" && ! grep -q "^GET /cdn/" "$HUB_DIR/log"
ok $? "elmchat pull over huggingface.js's download fetches no file again"

echo "1..$n"
[ "$failed" -eq 0 ]
