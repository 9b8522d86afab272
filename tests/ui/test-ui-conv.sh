#!/bin/sh
# test-ui-conv.sh: conversations in the real binary (tmux): /retry and
# /undo, /export, /save + restart with -s NAME resumes from the KV snapshot
# (the first request reuses it), and /model switches to another checkpoint
# mid-session in the background while the conversation stays.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
sessions="$UI_DIR/data/elmchat/sessions"
kv="$UI_DIR/cache/elmchat/kv"
GEN=${GEN_CHECKPOINT:-$(dirname "$ELMCHAT")/tests/lib/gen-checkpoint}
[ -x "$GEN" ] || { echo "1..0 # SKIP no $GEN"; exit 0; }

# Slow pacing: each 6-token reply streams for >= 0.6 s, so a check can see
# it start before waiting for "idle" (the old "idle" would match at once).
UI_TOKEN_DELAY_MS=${UI_TOKEN_DELAY_MS:-100}
ui_start 80 24 -s conv -n 6 --seed 3
ok 'ui_wait "idle" 20' "starts"
ui_keys 'first question' Enter
ok 'ui_wait "[interrupted]" 10 && ui_wait "idle" 5' "a reply (cut at 6 tokens)"
ui_keys 'second question' Enter
ok 'ui_until "[ \"\$(ui_screen | grep -c \"\[interrupted\]\")\" = 2 ]" 10 && ui_wait "idle" 5' \
   "a second reply"
ok 'ui_screen | grep -q "^you #2"' "exchanges are numbered"

# /retry: the last reply again, nothing else changes.
ui_keys '/retry' Enter
ok 'ui_wait "generating" 10 && ui_wait "idle" 10 && [ "$(ui_screen | grep -c "\[interrupted\]")" = 2 ]' \
   "/retry replaces the last reply (still 2 replies)"
ok 'ui_screen | grep -q "second question"' "... after the same question"

# /undo: the last exchange goes, its message comes back to the input.
ui_keys '/undo' Enter
ok 'ui_wait "> second question" 5' "/undo gives the message back in the input"
ok '! ui_screen | grep -q "^you #2"' "the exchange left the transcript"
ui_keys C-u

# /export FILE
ui_keys "/export $UI_DIR/out.md" Enter
ok 'ui_wait "exported to" 5' "/export says so"
ok 'grep -q "first question" "$UI_DIR/out.md" && ! grep -q "second question" "$UI_DIR/out.md"' \
   "the exported Markdown holds the transcript"

# /save, quit, restart: the conversation and its KV snapshot.
ui_keys '/save keep' Enter
ok 'ui_wait "saved '"'"'keep'"'"'" 5' "/save keep"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "/quit"
ok '[ -s "$kv/keep.kv" ] && [ -s "$kv/keep.kv.meta" ]' "the KV snapshot and its sidecar exist"
ui_tmux kill-server
ui_start 80 24 -s keep -n 6 --seed 3
ok 'ui_wait "first question" 10' "-s keep shows the conversation again"
ok 'ui_wait "resumed from the KV snapshot" 20' "the snapshot was loaded and used"
n_cached=$(ui_screen | sed -n 's/.*snapshot: \([0-9]*\) tokens reused.*/\1/p' | head -1)
ok '[ "${n_cached:-0}" -gt 5 ]' "the whole conversation came from the snapshot ($n_cached tokens)"
ui_keys 'third question' Enter
ok 'ui_wait "[interrupted]" 10 && ui_wait "idle" 5' "the next reply"
ui_keys '/info' Enter
ok 'ui_wait "last request:" 5' "/info shows the cache use"
reused=$(ui_screen | sed -n 's/.*last request: \([0-9]*\) tokens reused.*/\1/p' | head -1)
ok '[ "${reused:-0}" -ge "$n_cached" ]' "the first reply after the restart reused them ($reused)"

# /model: another checkpoint (same tokenizer), loaded in the background.
# Its name says "instruct": the conversation follows it to the
# openelm-instruct template (rendered again, then prefilled).
other="$UI_DIR/other-instruct"
"$GEN" --preset default --seed 7 -o "$other" >/dev/null 2>&1
ok '[ -f "$other/config.json" ]' "a second checkpoint"
ui_keys "/model $other" Enter
ok 'ui_wait "loaded in" 20' "/model loads it and says so"
ok '! ui_screen | grep -q "^other-instruct"' "the earlier replies keep the name of the model that wrote them"
ok 'ui_screen | grep -q "third question" && ui_screen | grep -q "first question"' \
   "the conversation is still there"
ui_keys 'fourth question' Enter
ok 'ui_until "[ \"\$(ui_screen | grep -c \"\[interrupted\]\")\" -ge 3 ]" 10 && ui_wait "idle" 5' \
   "the new model answers in the same conversation"
ok 'ui_screen | grep -q "^other-instruct \[interrupted\]"' "its reply is labelled with the new model"
ui_keys '/info' Enter
ok 'ui_wait "path: $other" 5' "/info names the new model"
ok 'ui_screen | grep -q "template: openelm-instruct"' "... and the template that goes with it"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ok 'grep -q "fourth question" "$sessions/keep.yaml"' "saved"
ok 'grep -q "model: \"other-instruct\"" "$sessions/keep.yaml"' "with each reply's model"
ui_done
