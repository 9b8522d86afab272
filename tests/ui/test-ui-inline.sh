#!/bin/sh
# test-ui-inline.sh: the inline front end (issue 48) through the real binary
# in tmux, its bytes recorded by script(1): no alternate screen, no cursor
# addressing, erase or scroll region, ever; a reply and its status line;
# the session file holds the turns; /undo and /model; !echo hi attached,
# a failing command's exit status, output over the budget cut; Esc and
# Ctrl-C stop a reply and keep what came; a /format json reply max-tokens
# cuts is said to be incomplete; --screen-reader's speaker and
# end-of-turn lines and no colour.  100x30 and 80x24.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
top_srcdir=${top_srcdir:-.}
if [ ! -f "$top_srcdir/models/guide-small-instruct.gguf" ]; then
    echo "1..0 # SKIP no models/guide-small-instruct.gguf"
    exit 0
fi
command -v script >/dev/null 2>&1 || { echo "1..0 # SKIP no script(1)"; exit 0; }
sessions="$UI_DIR/data/elmchat/sessions"
REAL=$(cd "$(dirname "$ELMCHAT")" && pwd)/$(basename "$ELMCHAT")
# elmchat under script(1): every byte it writes to the terminal is kept
cat > "$UI_DIR/rec.sh" <<EOS
#!/bin/sh
exec script -qfec "'$REAL' \$*" "\$TYPESCRIPT"
EOS
chmod +x "$UI_DIR/rec.sh"
rec_start() {  # FILE SIZE ARGS...
    ts=$1
    shift
    ELMCHAT="$UI_DIR/rec.sh" UI_ENV="TYPESCRIPT=$ts ${UI_ENV:-}" ui_start "$@"
}
# What the inline mode must never write: cursor positioning (CSI H, f),
# erase (J, K), a scroll region (r), the alternate screen (?1049h, ?47h,
# ?1047h), save/restore cursor (ESC 7, ESC 8), cursor up (CSI A).
addressing() {
    LC_ALL=C grep -a -c -E "$(printf '\033')\[[0-9;?]*[HfJKrA]|$(printf '\033')\[\?(1049|47|1047)h|$(printf '\033')[78]" "$1"
}
# the prompt, alone on the last line that has text (tmux drops its space)
prompt() { ui_until '[ "$(ui_screen | grep . | tail -1)" = ">" ]' "${1:-10}"; }
ELMCHAT_MODEL=

rec_start "$UI_DIR/ts1" 100 30 --inline -s inl
ok 'prompt 30' "a readline prompt on the normal terminal"
ok '[ "$(ui_tmux display -p "#{alternate_on}")" = 0 ]' "no alternate screen"
ui_keys 'What does the word good mean?' Enter
ok 'ui_wait "good (adjective):" 30' "the reply appears below the prompt"
ok 'ui_wait "[guide-small-instruct · reused " 10 && ui_screen | grep -q "tokens · [0-9.]* t/s · context [0-9]*/[0-9]* ([0-9]*%)]"' \
   "then one status line: model, reused/computed, t/s, context"
ok 'ui_until "grep -q \"good (adjective):\" \"$sessions/inl.yaml\" 2>/dev/null" 10 && grep -q "What does the word good mean" "$sessions/inl.yaml"' \
   "the session file holds the turn"

ui_keys '!echo hi' Enter
ok 'ui_wait "y/n" 10' "!COMMAND asks first"
ui_keys y Enter
ok 'ui_wait "attached \$ echo hi (" 10 && ui_screen | grep -q "^hi$"' \
   "!echo hi: its output shown and attached, with its tokens"
ui_keys 'And this?' Enter
has_attach() { grep -qF 'file name="$ echo hi"' "$sessions/inl.yaml" 2>/dev/null; }
ok 'ui_until has_attach 30' \
   "the next message carries the output (session file)"
ok 'ui_wait "context" 30 && ui_until "[ \"\$(ui_screen | grep -c \"^\[guide-small\")\" -ge 2 ]" 30' "and is answered"

ui_keys '!!echo oops; exit 3' Enter
ok 'ui_wait "[exit status 3]" 10 && ui_screen | grep -q "^oops$"' "a failing command shows its exit status (no question twice)"
ui_keys '!seq 1 20000' Enter
ok 'ui_wait "cut to fit" 20' "output over the context budget is cut visibly"
ui_keys '/read off' Enter
ok 'ui_wait "no longer attached" 10' "/read off drops it"

ui_keys '/undo' Enter
ok 'ui_wait "removed the last exchange" 10' "/undo"
ok 'ui_wait "> And this?" 10' "... gives the message back at the prompt (without the output)"
ui_keys Enter
resent() { [ "$(grep -c "And this?" "$sessions/inl.yaml" 2>/dev/null)" -ge 2 ]; }
ok 'ui_until resent 30 && prompt 30' \
   "Enter sends it again"
ui_keys '/help' Enter
ok 'ui_wait "Ctrl-R search history" 10 && ui_screen | tr -d "\\n" | grep -qF "[not here"' "/help says which commands need the full screen"

if [ -d "$top_srcdir/models/guide-large-instruct" ]; then
    ui_keys '/model guide-large-instruct' Enter
    ok 'prompt 30 && ui_until "ui_screen | grep -q \"loaded in\\|switched\\|ready\"" 60' "/model loads the large model"
    ui_keys 'What does the word good mean?' Enter
    ok 'ui_wait "[guide-large-instruct · " 60' "the next reply's status line names it"
fi
# A schema with a required field and max-tokens 3: the cut value is said (as
# the TUI does).  Not /format json: there a 3-token reply can be a whole value
# ("1.1", as the large model answers), and nothing was cut.
printf '%s\n' '{"type":"object","properties":{"word":{"type":"string"}},"required":["word"]}' >"$UI_DIR/word.json"
ui_keys "/format schema $UI_DIR/word.json" Enter
ok 'ui_wait "the replies follow it" 10' "/format schema FILE"
ui_keys '/set max-tokens 3' Enter
ui_keys 'answer in JSON' Enter
ok 'ui_until "ui_screen | tr -d \"\\n\" | grep -qF \"cut before the JSON value was complete (max tokens 3)\"" 60' \
   "a JSON reply cut by max-tokens: the line says the value is incomplete, naming max tokens"
ui_keys '/quit' Enter
ok 'ui_exited 20 && [ "$UI_EXIT" = 0 ]' "/quit leaves"
ok 'ui_tty_sane' "the terminal is left as it was"
ok '[ -s "$UI_DIR/ts1" ] && [ "$(addressing "$UI_DIR/ts1")" = 0 ]' \
   "the bytes written: no cursor addressing, erase, scroll region or alternate screen"
ui_stop

# 80x24, a reply that streams as written (--raw): Esc and Ctrl-C stop it.
ui_long_reply
UI_ENV="ELM_WORKER_TEST_REPLY_FILE=$UI_LONG_REPLY" rec_start "$UI_DIR/ts2" 80 24 --inline --raw -s stop
ok 'prompt 30' "80x24: the prompt"
ui_keys 'go on' Enter
ok 'ui_wait "word30 " 30' "the reply streams"
ui_keys Escape
ok 'ui_wait "[stopped · " 15' "Esc stops it"
ok 'ui_until "grep -q \"word30 \" \"$sessions/stop.yaml\" 2>/dev/null" 10 && grep -q "interrupted: true" "$sessions/stop.yaml"' \
   "and the partial text is kept (session file)"
ui_keys 'more' Enter
ok 'ui_until "[ \"\$(ui_screen | grep -c \"word12\$\")\" -ge 1 ]" 30 && ui_wait "> more" 5' "a second reply streams"
ui_keys C-c
ok 'ui_until "[ \"\$(ui_screen | grep -c \"^\[stopped · \")\" -ge 1 ]" 15 && prompt 10' "Ctrl-C stops it too"
ui_keys C-d
ok 'ui_exited 20 && [ "$UI_EXIT" = 0 ]' "Ctrl-D leaves"
ok '[ "$(addressing "$UI_DIR/ts2")" = 0 ]' "80x24: no cursor addressing either"
ui_stop

# --screen-reader: speaker line, end-of-turn line, no colour.
rec_start "$UI_DIR/ts3" 100 30 --screen-reader -s sr
ok 'prompt 30' "--screen-reader: the prompt"
ui_keys 'What does the word good mean?' Enter
ok 'ui_wait "guide-small-instruct says:" 30' "a speaker line"
ok 'ui_wait "End of reply. guide-small-instruct, reused " 30' "an end-of-turn line with the status"
ui_keys '/quit' Enter
ok 'ui_exited 20' "leaves"
ok '! LC_ALL=C grep -a -q "$(printf "\033")\[[0-9;]*m" "$UI_DIR/ts3"' "no colour"
ok '[ "$(addressing "$UI_DIR/ts3")" = 0 ] && ! LC_ALL=C grep -a -q "$(printf "\033")\[?2004h" "$UI_DIR/ts3"' \
   "nothing redrawn, no mode switches"
ui_done
