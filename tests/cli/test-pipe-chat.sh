#!/bin/sh
# test-pipe-chat.sh: elmchat with standard input not a terminal (issue 48):
# one message a line (plain elmchat, which used to refuse), -f - as one
# message; replies on stdout, status lines on stderr, no escape sequence in
# either; the session file holds the turns; /retry, /undo and /model work;
# !COMMAND asks y/n once, attaches its output, shows a failing command's
# exit status, cuts output over the context budget; shell_confirm: false.
set -u
ELMCHAT=${ELMCHAT:-./elmchat}
top_srcdir=${top_srcdir:-.}
. "$top_srcdir/tests/lib/tap.sh"
if [ ! -f "$top_srcdir/models/guide-small-instruct.gguf" ]; then
    echo "1..0 # SKIP no models/guide-small-instruct.gguf"
    exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/elmchat-pipe.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
export HOME="$tmp" XDG_CONFIG_HOME="$tmp/cfg" XDG_DATA_HOME="$tmp/data" XDG_CACHE_HOME="$tmp/cache" \
    XDG_STATE_HOME="$tmp/state"
unset ELMCHAT_MODEL
sessions="$tmp/data/elmchat/sessions"
esc=$(printf '\033')

printf 'What does the word good mean?\n/retry\n' | "$ELMCHAT" -s demo >"$tmp/out" 2>"$tmp/err"
rc=$?
sed 's/^/#   /' "$tmp/err"
ok $rc "plain elmchat reads a pipe: exit 0"
[ "$(grep -c "^good (adjective):" "$tmp/out")" = 2 ]
ok $? "the reply and /retry's reply on stdout"
[ "$(grep -c "^\[guide-small-instruct · reused [0-9]*, computed [0-9]* tokens · [0-9.]* t/s · context [0-9]*/[0-9]* ([0-9]*%)\]" "$tmp/err")" = 2 ]
ok $? "a status line per reply on stderr"
! grep -q "$esc" "$tmp/out" "$tmp/err"
ok $? "no escape sequence on stdout or stderr"
grep -q "What does the word good mean" "$sessions/demo.yaml" && grep -q "good (adjective)" "$sessions/demo.yaml"
ok $? "the session file holds the turns"

printf 'first line\nsecond line\n' | "$ELMCHAT" -s whole -f - >"$tmp/out" 2>"$tmp/err"
ok $? "-f -: exit 0"
grep -q "first line" "$sessions/whole.yaml" && [ "$(grep -c "role: user" "$sessions/whole.yaml")" = 1 ]
ok $? "-f -: the whole input is one message"

printf '/undo\n' | "$ELMCHAT" -s demo >"$tmp/out" 2>"$tmp/err"
grep -q "removed the last exchange" "$tmp/err" && [ ! -s "$tmp/out" ]
ok $? "/undo in a pipe (stdout stays empty: no reply printed again)"

printf '!echo hi\ny\nWhat did it print?\n' | "$ELMCHAT" -s sh >"$tmp/out" 2>"$tmp/err"
grep -q "y/n" "$tmp/err" && grep -q '^attached \$ echo hi (2 B, [0-9]* tokens)' "$tmp/err"
ok $? "!echo hi: asked once, attached with its tokens"
grep -qF 'file name="$ echo hi"' "$sessions/sh.yaml" && grep -A1 -F 'file name="$ echo hi"' "$sessions/sh.yaml" | grep -q "^ *hi$"
ok $? "the next message carries 'hi' (session file)"

printf '!echo nope\nn\n' | "$ELMCHAT" -s sh2 >"$tmp/out" 2>"$tmp/err"
grep -q "not run: echo nope" "$tmp/err" && ! grep -q "^nope" "$tmp/err"
ok $? "n: not run"

# a message where the answer was expected: not run, and the message is sent
printf '!echo nope\nWhat does the word water mean?\n' | "$ELMCHAT" -s sh4 >"$tmp/out" 2>"$tmp/err"
grep -q "not run: echo nope (the answer was not y or n" "$tmp/err" && ! grep -q "^nope" "$tmp/err" &&
    [ -s "$tmp/out" ] && grep -q "What does the word water mean?" "$sessions/sh4.yaml"
ok $? "a message instead of y/n: not run, and the message is sent, not lost"

mkdir -p "$tmp/cfg/elmchat"
printf 'shell_confirm: false\n' >"$tmp/cfg/elmchat/config.yaml"
printf '!!echo oops; exit 3\n' | "$ELMCHAT" -s sh3 >"$tmp/out" 2>"$tmp/err"
! grep -q "y/n" "$tmp/err" && grep -q "^oops$" "$tmp/err" && grep -q "\[exit status 3\]" "$tmp/err"
ok $? "shell_confirm: false asks nothing; a failing command shows its exit status"
printf '!seq 1 20000\n' | "$ELMCHAT" -s sh4 >"$tmp/out" 2>"$tmp/err"
grep -q "^attached \$ seq 1 20000 (.*its first [0-9]* of 20000 lines: cut to fit" "$tmp/err"
ok $? "output over the context budget is cut, and said"

if [ -d "$top_srcdir/models/guide-large-instruct" ]; then
    printf '/model guide-large-instruct\nWhat does the word good mean?\n' | "$ELMCHAT" -s demo >"$tmp/out" 2>"$tmp/err"
    grep -q "^\[guide-large-instruct · " "$tmp/err" && grep -q . "$tmp/out"
    ok $? "/model in a pipe: the next reply is the large model's"
fi
printf 'ui: sideways\n' >"$tmp/cfg/elmchat/config.yaml"
echo hi | "$ELMCHAT" -s bad >"$tmp/out" 2>"$tmp/err"
[ $? = 1 ] && grep -q "config.yaml:1:.*ui: expected inline or full" "$tmp/err"
ok $? "a wrong ui: in config.yaml is named with its line"
echo "1..$n"
[ "$failed" -eq 0 ]
