#!/bin/sh
# test-guide-models.sh: the models elmchat ships (models/, issue 15) answer
# as trained: for each tests/data/guide/SIZE.tsv, `elmchat run -m
# guide-SIZE-instruct` gives the golden greedy reply of every prompt (made
# by tools/demo-model/goldens.py, where torch and the engine agreed), with
# the sampling defaults the model brings (no options given: the template's
# repeat_penalty 1.2 would change the replies).  And the default model is
# the small one: no -m and no $ELMCHAT_MODEL opens it, also when the program
# was started by its bare name from $PATH.
set -u

ELMCHAT=${ELMCHAT:-./elmchat}
top_srcdir=${top_srcdir:-.}
. "$top_srcdir/tests/lib/tap.sh"
if [ ! -f "$top_srcdir/tests/data/guide/small.tsv" ]; then
    echo "1..0 # SKIP no tests/data/guide/small.tsv"
    exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/elmchat-guide.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
export HOME="$tmp" XDG_CONFIG_HOME="$tmp/config" XDG_DATA_HOME="$tmp/data"
export XDG_CACHE_HOME="$tmp/cache" XDG_STATE_HOME="$tmp/state"
unset ELMCHAT_MODEL

# Each golden reply: run's stdout without its final newline.
check_goldens() {
    size=$1 file=$2
    cnt=0 bad=0
    while IFS="$(printf '\t')" read -r prompt want; do
        case $prompt in '#'*|'') continue ;; esac
        cnt=$((cnt + 1))
        "$ELMCHAT" run -m "guide-$size-instruct" -p "$prompt" --threads 1 -n 200 \
            >"$tmp/got" 2>"$tmp/err"
        printf '%b\n' "$want" >"$tmp/want"
        if ! cmp -s "$tmp/got" "$tmp/want" || [ -s "$tmp/err" ]; then
            bad=$((bad + 1))
            echo "# guide-$size-instruct: '$prompt'"
            echo "#   want: $(cat "$tmp/want")"
            echo "#   got:  $(cat "$tmp/got") $(cat "$tmp/err")"
        fi
    done <"$file"
    [ "$cnt" -ge 20 ] && [ "$bad" -eq 0 ]
    ok $? "guide-$size-instruct: $((cnt - bad)) of $cnt golden replies (20 at least)"
}

for f in "$top_srcdir"/tests/data/guide/*.tsv; do
    [ -f "$f" ] || continue
    size=$(basename "$f" .tsv)
    check_goldens "$size" "$f"
done

"$ELMCHAT" info >"$tmp/info" 2>&1
grep -q '^name: *guide-small-instruct$' "$tmp/info"
ok $? "no -m, no \$ELMCHAT_MODEL: the default model is guide-small-instruct"
grep -q '^sampling defaults: *temperature 0 repeat-penalty 1$' "$tmp/info"
ok $? "it brings its sampling defaults (greedy, repetition penalty 1)"
grep '^kernels: *cpu: [a-z0-9-]* ([a-z ]*):' "$tmp/info" | grep -q 'matvec/small batches: [a-z0-9]* '
ok $? "info names what the CPU probe found and the kernels that run"
# Uninstalled, started by its bare name from $PATH in another folder: it
# finds its own path (/proc/self/exe; macOS's fallback and the BSDs':
# argv[0] through $PATH, .ci/stage-portable) and so the shipped model.
(cd "$tmp" && PATH="$(cd "$(dirname "$ELMCHAT")" && pwd):$PATH" && export PATH &&
    "$(basename "$ELMCHAT")" info) >"$tmp/info2" 2>&1
grep -q '^name: *guide-small-instruct$' "$tmp/info2"
ok $? "started by its bare name from \$PATH elsewhere, the uninstalled program finds its shipped model"

first=$(sed -n '2p' "$top_srcdir/tests/data/guide/small.tsv" | cut -f1)
"$ELMCHAT" run -p "$first" -n 200 --threads 1 >"$tmp/a" 2>&1 &&
    "$ELMCHAT" run -m default -p "$first" -n 200 --threads 1 >"$tmp/b" 2>&1 &&
    "$ELMCHAT" run -m guide-small-instruct -p "$first" -n 200 --threads 1 >"$tmp/c" 2>&1
ok $? "run without -m, with -m default and with the name all work"
cmp -s "$tmp/a" "$tmp/c" && cmp -s "$tmp/b" "$tmp/c"
ok $? "and give the same reply"

ELMCHAT_MODEL=/nonexistent/model "$ELMCHAT" run -p hi >"$tmp/out" 2>"$tmp/err"
[ $? -ne 0 ] && grep -q '/nonexistent/model.*ELMCHAT_MODEL' "$tmp/err"
ok $? "a bad \$ELMCHAT_MODEL is named in the error"

echo "1..$n"
[ "$failed" -eq 0 ]
