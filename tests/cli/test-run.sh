#!/bin/sh
# test-run.sh: elmchat run's message and system prompt (issue 50): -p ''
# (or only blanks) is a usage error (exit 2), an empty standard input or
# file is refused (exit 1), never an empty question to the model; --role
# NAME takes a role preset's system prompt as the chat's --role does (the
# prompt's ids are --system's with the role's text), with --system is a
# usage error, an unknown one is named; --verbose says which.
. "${top_srcdir:-.}/tests/lib/cli-test.sh"
cli_tmpdir run
export HOME="$tmp" XDG_CONFIG_HOME="$tmp/cfg" XDG_DATA_HOME="$tmp/data" XDG_CACHE_HOME="$tmp/cache"
"$GEN" --preset micro --synthetic-tokenizer -o "$tmp/m" >/dev/null 2>&1
ok $? "a generated checkpoint"
run() { "$ELMCHAT" run -m "$tmp/m" -t openelm-instruct --dry-run "$@"; }

run -p '' >"$tmp/out" 2>"$tmp/err"
rc=$?
sed 's/^/#   /' "$tmp/err"
[ $rc -eq 2 ] && grep -q "^elmchat run: -p: the message is empty" "$tmp/err" && [ ! -s "$tmp/out" ]
ok $? "run -p '': a usage error (exit 2), nothing asked"
run -p '  
' >/dev/null 2>&1
ok $(($? != 2)) "run -p with only blanks: the same"
printf '\n\n' | run >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] && grep -q "standard input: the message is empty" "$tmp/err"
ok $? "an empty standard input: refused, exit 1"
: >"$tmp/empty.txt"
run -f "$tmp/empty.txt" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] && grep -q "$tmp/empty.txt: the message is empty" "$tmp/err"
ok $? "an empty -f FILE: refused, naming the file"

roles="$top_srcdir/prompts/roles"
system=$(sed -n '/^system: |-$/,$p' "$roles/coder.yaml" | sed '1d; s/^  //')
[ -n "$system" ] && run -p 'sort a list' --role coder >"$tmp/role" 2>"$tmp/err" &&
    run -p 'sort a list' --system "$system" >"$tmp/system" 2>&1 &&
    run -p 'sort a list' >"$tmp/none" 2>&1
ok $? "run --role coder (the shipped role) works"
cmp -s "$tmp/role" "$tmp/system" && ! cmp -s "$tmp/role" "$tmp/none"
ok $? "... its prompt is --system's with the role's text"
run -p hi --role coder -v 2>&1 >/dev/null | grep -q "^system prompt: role coder (.*prompts/roles/coder.yaml)$"
ok $? "--verbose names the role and its file"
run -p hi --role coder --system x >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "give one" "$tmp/err"
ok $? "--role with --system: a usage error"
run -p hi --role nosuch >/dev/null 2>"$tmp/err"
rc=$?
sed 's/^/#   /' "$tmp/err"
[ $rc -eq 1 ] && grep -q "nosuch" "$tmp/err"
ok $? "an unknown role: named, exit 1"
echo "1..$n"
[ "$failed" -eq 0 ]
