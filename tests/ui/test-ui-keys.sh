#!/bin/sh
# test-ui-keys.sh: Esc on an idle line is a key of its own (Esc, then
# "/retry" Enter retries; it was Alt-/ and sent "retry"), while Esc with a
# key within the Alt-prefix timeout is still Alt+key; Home and End in every
# encoding terminals send scroll the transcript from an empty line, also
# after an Esc; the status bar says after each reply how many tokens the KV
# cache gave and how many were computed, as /info does.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init

# Keystrokes elmchat has read and drawn (ELMCHAT_LATENCY_LOG: a line each).
keys_read() { cat "$UI_DIR/latency" 2>/dev/null | wc -l; }
# Esc alone, and wait until elmchat has read it (and its Alt-prefix
# timeout has passed): the next key is written after that.
lone_esc() {
    before=$(keys_read)
    ui_keys Escape
    ui_until '[ "$(keys_read)" -gt "$before" ]' 30
}
reuse() { ui_screen | sed -n 's/.*│ reused \([0-9]*\), computed \([0-9]*\) │.*/\1 \2/p' | head -1; }

ui_start -s keys -n 3
ok 'ui_wait "idle" 30' "starts"
ui_keys 'first question' Enter
ok 'ui_wait "[interrupted]" 30 && ui_wait "idle" 10' "a first reply"
ui_keys 'second question' Enter
ok 'ui_until "[ \$(ui_screen | grep -c \"\[interrupted\]\") = 2 ]" 30 && ui_wait "idle" 10' "a second reply"
ok 'ui_until "[ -n \"\$(reuse)\" ]" 10' "the status bar says what the cache gave: $(reuse)"
r=$(reuse); reused=${r% *}; computed=${r#* }
ok '[ "${reused:-0}" -gt 0 ] && [ "${computed:-0}" -gt 0 ]' \
   "the second turn reused the first ($reused) and computed its new tokens ($computed)"
ui_keys '/info' Enter
ok 'ui_wait "last request: $reused tokens reused from the cache, $computed computed" 10' \
   "/info says the same numbers"

# Esc on an idle, empty line, then /retry: the command, not a message "retry".
ok 'lone_esc' "Esc on an idle line is read"
ui_keys '/retry' Enter
ok 'ui_wait "< 2/2 >" 30' "then /retry retries the reply (version 2 of 2)"
ok '! ui_screen | grep -qx "retry"' "... and no message 'retry' was sent"
ok 'ui_wait "idle" 30 && [ "$(ui_screen | grep -c "^you")" = 2 ]' "two messages of yours, as before"

# Esc with a key within the Alt-prefix timeout is Alt+key (one write:
# Alt-B, a word back); after the timeout they are two keys.
ui_keys 'one two'
ui_keys -l "$(printf '\033bX')"
ok 'ui_wait "> one Xtwo" 10' "Esc b at once: Alt-B (a word back)"
ok 'lone_esc' "Esc alone on a line with text is read"
ui_keys b
ok 'ui_wait "> one Xbtwo" 10' "Esc, then b after the timeout: Esc, then b typed"
ok 'ui_screen | grep -q "idle"' "Esc on an idle line stops nothing and keeps the line"
ui_keys C-e C-u '/quit' Enter
ok 'ui_exited 20 && [ "$UI_EXIT" = 0 ]' "/quit"
ui_stop

# Home and End on an empty line scroll the transcript, in each encoding
# (screen/tmux: ESC[1~ ESC[4~; xterm: ESC[H ESC[F, ESC O H, ESC O F; rxvt:
# ESC[7~ ESC[8~), also right after an Esc.
ui_start 80 12 -s keys2 -n 200
ok 'ui_wait "idle" 30' "a second start, 80x12"
ui_keys 'a long answer please' Enter
ok 'ui_wait_generated 20 30 && ui_wait_gone "generating" 60 && ui_wait "idle" 10 && ! ui_screen | grep -q "a long answer please"' \
   "a reply longer than the screen"
for end in '[4~' '[F' 'OF' '[8~'; do
    for esc in no yes; do
        ui_keys PPage
        ui_wait "more (End)" 10 >/dev/null
        [ $esc = yes ] && lone_esc
        ui_keys -l "$(printf '\033%s' "$end")"
        ok 'ui_wait_gone "more (End)" 10' "End as ESC$end scrolls to the end$([ $esc = yes ] && echo ", after an Esc")"
    done
done
for home in '[1~' '[H' 'OH' '[7~'; do
    for esc in no yes; do
        [ $esc = yes ] && lone_esc
        ui_keys -l "$(printf '\033%s' "$home")"
        ok 'ui_wait "a long answer please" 10 && ui_wait "more (End)" 10' \
           "Home as ESC$home scrolls to the top$([ $esc = yes ] && echo ", after an Esc")"
        ui_keys End
        ui_wait_gone "more (End)" 10 >/dev/null
    done
done
ok '[ "$(ui_row 12)" = ">" ]' "the line stayed empty"
ui_keys '/quit' Enter
ok 'ui_exited 20 && [ "$UI_EXIT" = 0 ]' "/quit"
ui_done
