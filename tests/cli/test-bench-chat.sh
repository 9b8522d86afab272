#!/bin/sh
# test-bench-chat.sh: `elmchat bench --chat` end to end on the random-weight
# model and a second generated checkpoint (TAP): the output's lines and
# fields, and the figures that must hold whatever the machine's speed
# (what was computed and reused).  The chat controller runs it, in a
# private XDG tree: the user's folders are untouched.
set -u

ELMCHAT=${ELMCHAT:-./elmchat}
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
. "$top_srcdir/tests/lib/tap.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/elmchat-benchchat.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
gen="$top_builddir/tests/lib/gen-checkpoint"
if [ ! -x "$gen" ] || [ ! -d "$top_builddir/tests/random-model" ]; then
    echo "1..0 # SKIP no tests/lib/gen-checkpoint or tests/random-model"
    exit 0
fi
"$gen" --preset default --dtype bf16 --seed 7 -o "$tmp/other" >/dev/null || exit 1

# Where the chat would write without the private tree: must stay empty.
mkdir "$tmp/home"
HOME="$tmp/home" XDG_DATA_HOME="$tmp/home/data" XDG_CACHE_HOME="$tmp/home/cache" \
XDG_CONFIG_HOME="$tmp/home/config" XDG_STATE_HOME="$tmp/home/state" TMPDIR="$tmp" \
    "$ELMCHAT" bench --chat --turns 3 --words 12 --reply 4 -t 1 --switch "$tmp/other" \
    >"$tmp/out" 2>"$tmp/err"
ok $? "bench --chat --switch exits 0"
sed 's/^/#   /' "$tmp/out"
[ ! -s "$tmp/err" ]
ok $? "nothing on stderr"

grep -q '^model random-model (bf16, 6 layers), template openelm-instruct, 1 threads, 12 words per message, 4-token replies$' "$tmp/out"
ok $? "the header line"
grep -q '^| turn |    seq | computed | reused |  ttft ms |   cpu ms | fresh computed | fresh ttft ms | fresh cpu ms |$' "$tmp/out"
ok $? "the turn table's columns"

# The turn rows: | t | seq | computed | reused | ttft | cpu | fresh computed | fresh ttft | fresh cpu |
awk -F'|' '$2 ~ /^ *[0-9]+ *$/ && NF == 11 { gsub(/ /, ""); print }' "$tmp/out" >"$tmp/rows"
[ "$(wc -l <"$tmp/rows")" -eq 3 ]
ok $? "three turn rows"
awk -F'|' '$4 + $5 != $3 { bad = 1 } END { exit bad }' "$tmp/rows"
ok $? "computed + reused = seq on every turn"
awk -F'|' '$8 != $3 { bad = 1 } END { exit bad }' "$tmp/rows"
ok $? "without reuse the whole sequence is computed"
awk -F'|' 'NR > 1 && $5 < prev_seq { bad = 1 } { prev_seq = $3 } END { exit bad }' "$tmp/rows"
ok $? "with reuse a turn reuses at least what the turn before sent"

grep -Eq '^turn 3 / turn 1 time to first token: [0-9.]+x with reuse, [0-9.]+x without \(cpu time: [0-9.]+x, [0-9.]+x\)$' "$tmp/out"
ok $? "the ratio line"
line=$(grep '^resume from a snapshot' "$tmp/out")
echo "$line" | grep -Eq '^resume from a snapshot \([0-9]+ ids\): save [0-9.]+ ms, load [0-9.]+ ms; next turn computes [0-9]+, ttft [0-9.]+ ms \(load \+ ttft [0-9.]+ ms\) vs [0-9.]+ ms re-prefilling [0-9]+$'
ok $? "the resume line"
grep -Eq '^resume \+ first token / the last live turn: [0-9.]+x \(cpu: load [0-9.]+ ms \+ [0-9.]+ ms = [0-9.]+x of [0-9.]+ ms\)$' "$tmp/out"
ok $? "the resume's ratio to a live turn, in wall and cpu time"
ids=$(echo "$line" | sed -E 's/.*\(([0-9]+) ids\).*/\1/')
next=$(echo "$line" | sed -E 's/.*next turn computes ([0-9]+),.*/\1/')
whole=$(echo "$line" | sed -E 's/.*re-prefilling ([0-9]+)$/\1/')
[ "$ids" -gt 0 ] && [ "$next" -lt "$whole" ] && [ "$((ids + next))" -le "$whole" ]
ok $? "after the restart the snapshot serves the conversation ($ids ids, $next of $whole computed)"

grep -Eq '^model switch through the worker \([0-9]+ tokens in the conversation\):$' "$tmp/out"
ok $? "the switch table's title"
tokens=$(sed -nE 's/^model switch through the worker \(([0-9]+) tokens.*/\1/p' "$tmp/out")
row() { grep "^| $1 " "$tmp/out" | awk -F'|' '{ gsub(/ /, ""); print $5 "," $6 }'; }
[ "$(row 'load MODEL, prefill the conversation')" = "$tokens,0" ]
ok $? "load MODEL: the whole conversation prefilled"
[ "$(row 'switch to MODEL2 (re-prefill)')" = "$tokens,0" ]
ok $? "switch to MODEL2: re-prefilled"
[ "$(row 'switch back to MODEL (kept cache)')" = "0,$tokens" ]
ok $? "back to MODEL: its cache kept"
[ "$(row 'switch to MODEL2 again (kept)')" = "0,$tokens" ]
ok $? "MODEL2 again: kept"

[ -z "$(find "$tmp/home" -mindepth 1 2>/dev/null)" ] && [ -z "$(find "$tmp" -maxdepth 1 -name 'elmchat-bench-*')" ]
ok $? "the user's folders untouched, the private tree removed"

echo "1..$n"
[ "$failed" -eq 0 ]
