#!/bin/sh
# test-ui-latency.sh: keystrokes while the random-weight test model decodes flat
# out on two compute threads (tests/lib/keylatency drives elmchat in a pty).
# Asserts what does not depend on the machine's speed: every character
# arrives, in order, in the input line; generation goes on meanwhile; no
# keystroke hangs (2 s); elmchat quits cleanly.  The latency percentiles
# are printed as diagnostics only (speed is not asserted in timed tests).
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/tap.sh"
KL=${builddir:-.}/tests/lib/keylatency
ELMCHAT=${ELMCHAT:-./elmchat}
if [ ! -x "$KL" ] || [ ! -x "$ELMCHAT" ]; then
    echo "1..0 # SKIP tests/lib/keylatency or elmchat not built"
    exit 0
fi

out=$("$KL" --elmchat "$ELMCHAT" --threads 2 --idle-keys 20 --keys 60 --gap 5:30 \
      --line 30 --hang-ms 2000 --timeout 60 --seed 9 2>&1)
status=$?
echo "$out" | sed 's/^/# /'
summary=$(echo "$out" | sed -n 's/^summary //p')
get() { echo "$summary" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
num() { v=$(get "$1"); echo "${v:--1}"; }

[ -n "$summary" ]; ok $? "keylatency ran to the end (status $status)"
[ "$(num idle_n)" -eq 20 ]
ok $? "20 keystrokes with the model idle each showed up, in order"
[ "$(num lost)" -eq 0 ] && [ $(( $(num decode_n) + $(num other) )) -eq 60 ]
ok $? "60 keystrokes during the reply: none lost ($(get decode_n) while tokens streamed)"
[ "$(num decode_n)" -ge 30 ]
ok $? "most of them were typed while the reply was generating"
[ "$(num final_line)" -eq 1 ]
ok $? "the input line reads exactly what was typed"
[ "$(num tokens)" -gt 0 ]
ok $? "generation went on while typing ($(get tokens) tokens, $(get tok_s) tok/s)"
[ "$(num hung)" -eq 0 ]
ok $? "no keystroke took longer than 2 s (slowest $(get max_ms) ms)"
[ "$(num unknown)" -eq 0 ]
ok $? "the screen model understood every escape sequence"
if [ "$(uname -s)" = Linux ]; then  # /proc and per-thread nice
    [ "$(num threads)" -ge 1 ] && [ "$(num threads)" -le 3 ]
    ok $? "3 threads at most while decoding (UI, worker, one pool worker: no OpenMP team)"
    [ "$(num compute_nice)" -gt "$(num ui_nice)" ]
    ok $? "the compute threads run below the UI thread (nice $(get compute_nice) vs $(get ui_nice))"
fi
[ "$(num exit)" -eq 0 ] && [ "$(num tty)" -eq 1 ]
ok $? "Ctrl-D quits with status 0 and the terminal restored"
[ "$(num stderr_bytes)" -eq 0 ]
ok $? "nothing on stderr (no sanitizer report)"
[ "$status" -eq 0 ]
ok $? "keylatency found no failure"
echo "1..$n"
[ "$failed" -eq 0 ]
