#!/bin/sh
# test-bench-spec.sh: `elmchat bench --spec FILE` on the shipped small model
# and tests/data/chat-prompts.txt (TAP).  The figures that hold whatever the
# machine's speed: every reply the same with drafts as without, the model
# drafting for itself with fixed drafts keeps nearly every id (the draft
# picks as the target's sampler does), the profile by depth adds up to the
# totals, and bad input gets a message naming the file.
set -u

ELMCHAT=${ELMCHAT:-./elmchat}
top_srcdir=${top_srcdir:-.}
. "$top_srcdir/tests/lib/tap.sh"
model="$top_srcdir/models/guide-small-instruct.gguf"
prompts="$top_srcdir/tests/data/chat-prompts.txt"
if [ ! -f "$model" ]; then
    echo "1..0 # SKIP no models/guide-small-instruct.gguf"
    exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/elmchat-benchspec.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
export HOME="$tmp" XDG_CONFIG_HOME="$tmp/config" XDG_DATA_HOME="$tmp/data"
export XDG_CACHE_HOME="$tmp/cache" XDG_STATE_HOME="$tmp/state"

# The total line of --json: the value of key $1.
total() {
    sed -n 's/.*"total": true.*"'"$1"'": \([0-9.]*\).*/\1/p' "$tmp/json"
}

# Prompt lookup alone (no draft): the table and the total line.
"$ELMCHAT" bench --spec "$prompts" -m "$model" -n 24 -t 1 >"$tmp/out" 2>"$tmp/err"
ok $? "bench --spec (prompt lookup) exits 0"
sed 's/^/#   /' "$tmp/out" | tail -12
[ ! -s "$tmp/err" ] && [ "$(grep -c '^| *[0-9][0-9]* | ' "$tmp/out")" -eq 50 ] &&
    grep -q "^50 prompts, .*replies identical: 50 of 50$" "$tmp/out"
ok $? "50 rows, one a prompt, and every reply identical"

# The model drafting for itself, drafts of 4: nearly everything kept.
"$ELMCHAT" bench --spec "$prompts" -m "$model" --draft "$model" -k 4 -n 24 -t 1 --json \
    >"$tmp/json" 2>"$tmp/err"
ok $? "bench --spec --draft (itself) -k 4 --json exits 0"
tail -1 "$tmp/json" | sed 's/^/#   /'
[ "$(grep -c '"prompt": ' "$tmp/json")" -eq 50 ] && [ "$(total identical)" = 50 ] &&
    [ "$(total turned_off)" = 0 ]
ok $? "--json: 50 prompt lines and a total; all identical, fixed drafts never turned off"
passes=$(total passes) drafted=$(total drafted) accepted=$(total accepted)
[ "$passes" -gt 50 ] && [ "$drafted" -le $((4 * passes)) ] &&
    [ "$accepted" -ge $((drafted * 95 / 100)) ]
ok $? "a self-draft keeps >= 95 % of its ids ($accepted of $drafted in $passes passes)"
reached=$(sed -n 's/.*"reached": \[\([0-9, ]*\)\].*/\1/p' "$tmp/json")
kept=$(sed -n 's/.*"kept": \[\([0-9, ]*\)\].*/\1/p' "$tmp/json")
sum() { echo "$1" | tr ',' '\n' | awk '{ s += $1 } END { print s + 0 }'; }
first=${reached%%,*}
[ "$(sum "$kept")" -eq "$accepted" ] && [ "$first" -eq "$passes" ] &&
    [ "$(echo "$reached" | tr ',' '\n' | wc -l)" -le 4 ]
ok $? "the profile: depth 1 checked by every pass, kept ids summing to the total ([$reached] [$kept])"

# Bad input: the file named, the right exit status.
"$ELMCHAT" bench --spec "$tmp/none.txt" -m "$model" >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "none.txt: No such file" "$tmp/out"
ok $? "a missing prompt file: exit 1, named ($(head -1 "$tmp/out"))"
printf '# only a comment\n\n' >"$tmp/empty.txt"
"$ELMCHAT" bench --spec "$tmp/empty.txt" -m "$model" >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "empty.txt: no prompts" "$tmp/out"
ok $? "a file without prompts: exit 1, named ($(head -1 "$tmp/out"))"
"$ELMCHAT" bench --spec "$prompts" -m "$model" -k 11 >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "invalid -k '11' (1 to 10)" "$tmp/out"
ok $? "-k 11: a usage error (exit 2)"
echo "1..$n"
[ "$failed" -eq 0 ]
