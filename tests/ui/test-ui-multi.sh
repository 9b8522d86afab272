#!/bin/sh
# test-ui-multi.sh: editing an earlier message (/edit N: only the changed
# suffix is computed), three open sessions under a tiny memory budget (each
# keeps its own slot; the least recently used caches are dropped and
# re-prefilled on return, and every conversation continues exactly as it
# does without eviction), and Ctrl-Z / fg from an interactive shell.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
sessions="$UI_DIR/data/elmchat/sessions"
UI_TOKEN_DELAY_MS=5

# The reply after "you #N" is on screen and has ended (its header no longer
# ends in the streaming mark).  Not "Esc stops" gone from the status bar:
# under load the check can run before the bar shows the reply at all.
reply_done() {  # NUMBER
    ui_screen | awk -v n="you #$1" 'index($0, n) == 1 { seen = 1; h = "" }
        seen && /^random-model/ { h = $0 }
        END { exit !(seen && h != "" && h !~ /…$/) }'
}
# One exchange: send, wait until its reply has ended.
exchange() {  # TEXT NUMBER
    ui_keys "$1" Enter
    ui_wait "you #$2" 5 && ui_until "reply_done $2" 10 && ui_wait "idle" 5
}
# The numbers of /info's "last request: R tokens reused ..., C computed".
last_request() {
    ui_keys '/info' Enter
    ui_wait "last request:" 5
    ui_screen | sed -n 's/.*last request: \([0-9]*\) tokens reused from the cache, \([0-9]*\) computed.*/\1 \2/p' | tail -1
}

# ------------------------------------------------------------------ /edit
ui_start 80 30 -s ed -n 6 --temp 0
ok 'ui_wait "idle" 20' "starts"
ok 'exchange "first question" 1 && exchange "second question" 2 && exchange "third question" 3' \
   "three exchanges"
ui_keys '/edit 2' Enter
ok 'ui_wait "> second question" 5' "/edit 2 puts message #2 into the input"
ok 'ui_wait "editing #2" 5' "the status bar says a message is being edited"
ui_keys ' (edited)' Enter
ok 'ui_wait "second question (edited)" 5 && ui_until "! ui_screen | grep -q \"Esc stops\"" 10' \
   "the edited message is sent and answered"
ok 'ui_wait "message #2 edited: reused" 5' "the notice says what the cache gave"
note=$(ui_screen | sed -n 's/.*edited: reused \([0-9]*\) tokens from the cache, computed \([0-9]*\).*/\1 \2/p' | tail -1)
reused=${note% *} computed=${note#* }
ok '[ "${reused:-0}" -gt 5 ] && [ "${computed:-0}" -gt 0 ]' \
   "only the changed suffix was computed (reused ${reused:-?}, computed ${computed:-?})"
ok '! ui_screen | grep -q "third question" && ! ui_screen | grep -q "^you #3"' \
   "what followed the edited message left the path shown"
ok '[ "$(ui_screen | grep -c "^you #")" = 2 ]' "two exchanges left"
# An empty line cancels an edit.
ui_keys '/edit 1' Enter
ok 'ui_wait "> first question" 5' "/edit 1"
ui_keys C-u Enter
ok 'ui_wait "edit cancelled" 5 && ui_screen | grep -q "first question"' \
   "an empty line cancels the edit"
ui_keys '/edit 9' Enter
ok 'ui_wait "there is no exchange 9" 5' "/edit of a missing exchange says so"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ok 'sed "/^branches:/,\$d" "$sessions/ed.yaml" | grep -q "second question (edited)" &&
    ! sed "/^branches:/,\$d" "$sessions/ed.yaml" | grep -q "third question"' \
   "the session file's path has the edit"
ok 'sed -n "/^branches:/,\$p" "$sessions/ed.yaml" | grep -q "third question"' \
   "and keeps what it replaced as another branch"
ui_tmux kill-server

# --------------------------------------------------- sessions and eviction
# The same script twice: with the default budget (every cache kept) and
# with a budget of one byte (only the current model and the slot in use
# survive: every return re-prefills).  Greedy, so the replies must match.
three_sessions() {  # BUDGET
    rm -rf "$UI_DIR/data" "$UI_DIR/cache" "$UI_DIR/state"
    mkdir -p "$UI_DIR/data" "$UI_DIR/cache" "$UI_DIR/state"
    UI_ENV=${1:+ELMCHAT_MEM_BUDGET=$1}
    ui_start 80 30 -s s1 -n 5 --temp 0
    ui_wait "idle" 20 &&
        exchange "alpha one" 1 &&
        { ui_keys '/new s2' Enter; ui_wait "new session 's2'" 5; } &&
        exchange "beta one" 1 &&
        { ui_keys '/new s3' Enter; ui_wait "new session 's3'" 5; } &&
        exchange "gamma one" 1 &&
        { ui_keys '/switch s1' Enter; ui_wait "alpha one" 5 && ui_wait "idle" 10; } &&
        RETURN_S1=$(last_request) &&
        exchange "alpha two" 2 &&
        AFTER_S1=$(last_request) &&
        { ui_keys '/switch s2' Enter; ui_wait "beta one" 5 && ui_wait "idle" 10; } &&
        exchange "beta two" 2 &&
        { ui_keys '/switch s3' Enter; ui_wait "gamma one" 5 && ui_wait "idle" 10; } &&
        exchange "gamma two" 2 &&
        { ui_keys '/quit' Enter; ui_exited 10; } || return 1
    ui_tmux kill-server
    UI_ENV=
    for s in s1 s2 s3; do
        grep -v -e 'time:' -e 'created:' -e 'updated:' "$sessions/$s.yaml" > "$UI_DIR/$s.$2"
    done
}
ok 'three_sessions "" kept' "three sessions, default budget"
kept_return=$RETURN_S1
ok 'three_sessions 1 evicted' "three sessions, a one-byte budget"
diag "return to s1: reused/computed = $kept_return (kept), $RETURN_S1 (evicted)"
k_reused=${kept_return% *} k_computed=${kept_return#* }
e_reused=${RETURN_S1% *} e_computed=${RETURN_S1#* }
a_reused=${AFTER_S1% *}
ok '[ "${k_reused:-0}" -gt 0 ]' \
   "with the default budget s1's cache was still there ($k_reused reused)"
# The UI is told when s1's cache is dropped (ELM_EV_CACHE_DROPPED, shown on
# the status line: tests/ui/test-ui-load.sh) and asks for its KV snapshot on
# /switch, so the return costs at most a re-prefill and, when the snapshot
# covers the cache, exactly what a kept cache costs.
ok '[ -n "$e_computed" ] && [ "$e_computed" -ge "${k_computed:-0}" ] && [ "${e_reused:-0}" -le "${k_reused:-0}" ]' \
   "with a tiny budget s1's return cost no less than with its cache kept ($e_computed computed, $e_reused reused; restored from its snapshot when equal)"
ok '[ "${a_reused:-0}" -gt 0 ]' "... and the next turn reused the re-prefilled cache ($a_reused tokens)"
ok 'grep -q "alpha two" "$UI_DIR/s1.evicted" && grep -q "beta two" "$UI_DIR/s2.evicted" && grep -q "gamma two" "$UI_DIR/s3.evicted"' \
   "each session kept its own conversation"
ok 'cmp -s "$UI_DIR/s1.kept" "$UI_DIR/s1.evicted" && cmp -s "$UI_DIR/s2.kept" "$UI_DIR/s2.evicted" && cmp -s "$UI_DIR/s3.kept" "$UI_DIR/s3.evicted"' \
   "every conversation continued exactly as without eviction (same replies)"

# ------------------------------------------------------------------ Ctrl-Z
rm -rf "$UI_DIR/data" "$UI_DIR/cache"
mkdir -p "$UI_DIR/data" "$UI_DIR/cache"
ui_start_shell 80 24
ui_shell_run -s z -n 4 --temp 0
ok 'ui_wait "idle" 20' "elmchat started from an interactive shell"
ui_keys 'typed before' 
ui_keys C-z
ok 'ui_wait "Stopped" 5 && ui_until "[ \"\$(ui_tmux display -p \"#{alternate_on}\")\" = 0 ]" 5' \
   "Ctrl-Z: the shell is back (job stopped, main screen)"
ui_keys 'fg' Enter
ok 'ui_wait "idle" 10 && ui_wait "> typed before" 5' \
   "fg: the screen is redrawn, the input line kept"
ok '! ui_screen | grep -q "Stopped"' "... over the shell's text"
ui_keys C-u 'after resume' Enter
ok 'ui_wait "you #1" 5 && ui_wait "after resume" 5 && ui_wait "[interrupted]" 10' \
   "input works after fg (a message sent and answered)"
ui_keys '/quit' Enter
ok 'ui_wait "$ " 10 && grep -q "after resume" "$sessions/z.yaml"' "quits back to the shell, saved"
ui_done
