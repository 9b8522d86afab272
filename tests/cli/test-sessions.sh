#!/bin/sh
# test-sessions.sh: `elmchat sessions` lists the saved conversations of
# $XDG_DATA_HOME/elmchat/sessions (name, update, messages, model), newest
# first; --grep TEXT prints SESSION #N ROLE: LINE for each matching line,
# case-insensitive; a damaged file is named on stderr and the others are
# still listed.
set -u
ELMCHAT=${ELMCHAT:-./elmchat}
top_srcdir=${top_srcdir:-.}
. "$top_srcdir/tests/lib/tap.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/elmchat-sessions.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
export XDG_DATA_HOME="$tmp/data" HOME="$tmp"
dir="$tmp/data/elmchat/sessions"

"$ELMCHAT" sessions >"$tmp/out" 2>"$tmp/err"
ok $? "no sessions folder: exit 0"
grep -q "no saved conversations" "$tmp/err"
ok $? "... and it says so"

mkdir -p "$dir"
session() { # NAME UPDATED MODEL then role/content pairs
    name=$1 updated=$2 model=$3
    shift 3
    {
        printf 'elmchat_session: 1\nname: "%s"\ncreated: %s\nupdated: %s\nmodel: "%s"\nmessages:\n' \
            "$name" "$updated" "$updated" "$model"
        while [ $# -ge 2 ]; do
            printf -- '- role: %s\n  content: |-\n' "$1"
            printf '%s\n' "$2" | sed 's/^/    /'
            shift 2
        done
        printf 'end: true\n'
    } >"$dir/$name.yaml"
}
session old "2026-01-02T03:04:05Z" 270M-instruct user "What is a zebra?" assistant "A striped animal."
session new "2026-11-30T10:00:00Z" guide-small-instruct user "hello" assistant "Hi!" \
    user "Tell me about Zebras
and horses" assistant "no idea"

"$ELMCHAT" sessions >"$tmp/out" 2>"$tmp/err"
ok $? "sessions: exit 0"
sed 's/^/#   /' "$tmp/out"
[ "$(head -1 "$tmp/out" | cut -d' ' -f1)" = new ] && [ "$(sed -n 2p "$tmp/out" | cut -d' ' -f1)" = old ]
ok $? "newest first"
grep -q "^new .* 4 messages  guide-small-instruct$" "$tmp/out"
ok $? "the message count and the model"

"$ELMCHAT" sessions --grep ZEBRA >"$tmp/out" 2>"$tmp/err"
ok $? "--grep: exit 0"
sed 's/^/#   /' "$tmp/out"
grep -qx "new #3 user: Tell me about Zebras" "$tmp/out" && grep -qx "old #1 user: What is a zebra?" "$tmp/out"
ok $? "each matching line: session, message number, role, the line (case-insensitive)"
[ "$(wc -l <"$tmp/out")" -eq 2 ]
ok $? "only the matching lines (not 'and horses')"

# a tree: the other branch's lines are found too, marked so
printf 'elmchat_session: 2\nname: "tree"\nupdated: 2025-01-01T00:00:00Z\nmessages:\n- role: user\n  id: 1\n  content: about zebras\nbranches:\n- role: user\n  id: 2\n  parent: 0\n  content: zebra, again\nend: true\n' >"$dir/tree.yaml"
"$ELMCHAT" sessions --grep zebra >"$tmp/out" 2>"$tmp/err"
sed 's/^/#   /' "$tmp/out"
grep -qx "tree #1 user: about zebras" "$tmp/out" && grep -qx "tree (another branch) user: zebra, again" "$tmp/out"
ok $? "--grep searches every branch of a tree, naming the ones not shown"
rm "$dir/tree.yaml"

# no match: said on stderr, exit 1 (as grep), nothing on stdout
"$ELMCHAT" sessions --grep giraffe >"$tmp/out" 2>"$tmp/err"
st=$?
sed 's/^/#   /' "$tmp/err"
[ $st -eq 1 ] && [ ! -s "$tmp/out" ] && grep -q "no saved conversation mentions 'giraffe'" "$tmp/err"
ok $? "--grep with no match says so on stderr, exit 1"

printf 'elmchat_session: 1\nname: x\nmessages:\n- role: user\n  content: [\n' >"$dir/broken.yaml"
"$ELMCHAT" sessions >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "broken.yaml" "$tmp/err" && [ "$(wc -l <"$tmp/out")" -eq 2 ]
ok $? "a damaged file is named on stderr (exit 1), the others are listed"

"$ELMCHAT" sessions --grep "" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ]
ok $? "an empty --grep is a usage error"

echo "1..$n"
[ "$failed" -eq 0 ]
