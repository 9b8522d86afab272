#!/bin/sh
# test-guide-coverage.sh: the demo models' guide facts
# (tools/demo-model/guide_data.py) keep up with elmchat: every slash command
# of src/chat/chat_commands.c (cmd_table) has a canonical answer that names it, and every
# command an answer names exists (a unique prefix, as /q, counts). The models
# learn what these answers say, so a stale answer is a wrong reply.
set -u
top_srcdir=${top_srcdir:-.}
. "$top_srcdir/tests/lib/tap.sh"
table="$top_srcdir/src/chat/chat_commands.c"
guide="$top_srcdir/tools/demo-model/guide_data.py"

commands=$(sed -n 's/^ *{"\([a-z]*\)", CMD_.*/\1/p' "$table")
[ -n "$commands" ]
ok $? "the command table lists commands ($(echo $commands | wc -w))"

# the canonical answers: the second string of each ("key", "answer", [...]) line
answers=$(sed -n 's/^    ("[a-z0-9]*", "\(.*\)",$/\1/p' "$guide")
n_answers=$(printf '%s\n' "$answers" | wc -l)
[ "$n_answers" -ge 60 ]
ok $? "guide_data.py has its facts ($n_answers answers)"

missing=
for c in $commands; do
    printf '%s\n' "$answers" | grep -q "/$c\b" || missing="$missing /$c"
done
[ -z "$missing" ]
ok $? "every slash command has a guide answer naming it${missing:+ (none for:$missing)}"

unknown=
# (a path such as /data/OpenELM-3B in a config example is not a command)
for w in $(printf '%s\n' "$answers" | grep -o '\(^\| \|(\)/[a-z]\+/\?' | grep -v '/$' |
           sed 's/^[ (]*//' | sort -u); do
    name=${w#/}
    # the command itself, or a prefix only one command has
    printf '%s\n' $commands | grep -qx "$name" ||
        [ "$(printf '%s\n' $commands | grep -c "^$name")" -eq 1 ] || unknown="$unknown $w"
done
[ -z "$unknown" ]
ok $? "every command a guide answer names exists${unknown:+ (not commands:$unknown)}"

echo "1..$n"
[ "$failed" -eq 0 ]
