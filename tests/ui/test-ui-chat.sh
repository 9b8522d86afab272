#!/bin/sh
# test-ui-chat.sh: the chat in a real pty (tmux): send a message and see the
# reply stream in, stop a reply with Esc and with Ctrl-C, resize mid-reply,
# an unknown command sends nothing, Ctrl-C clears a line, Ctrl-D quits and
# leaves the terminal sane.  Replies are paced (ui-tmux.sh) and long
# (-n 2000): they are always still streaming when the test stops them.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
ui_long_reply
UI_ENV="ELM_WORKER_TEST_REPLY_FILE=$UI_LONG_REPLY"

ui_start 80 12 -s chat -n 2000
ok 'ui_wait "Type a message" 10' "starts, and the transcript says how to begin"
ok 'ui_wait "idle" 20' "the model loads (status idle)"

ui_keys 'Hello there' Enter
ok 'ui_wait "Hello there" 5' "the message shows in the transcript"
ok 'ui_wait_generated 1 10' "the status bar says generating"
g1=$(ui_generated)
ok 'ui_wait_generated $((g1 + 10)) 10' "the reply grows while it is generated (from $g1 tokens)"

# Typing and scrolling while the model works.
# (enough lines that the transcript overflows the 12-row pane)
ok 'ui_wait_generated 150 20' "150 tokens streamed"
ui_keys 'typed meanwhile'
ok 'ui_wait "> typed meanwhile" 3' "typing works during generation"
ui_keys PPage
ok 'ui_wait "more (End)" 3' "PgUp scrolls back during generation"
ui_keys NPage NPage
ok 'ui_wait_gone "more (End)" 3' "PgDn returns to the end"
ok 'ui_screen | grep -q "generating"' "still generating"

# Esc stops the reply and keeps it, marked.
# (The mark is on the reply's header, scrolled off a 12-row screen by a
# long reply: Ctrl-Home shows it.)
ui_keys Escape
ok 'ui_wait "idle" 60' "Esc stops the reply"
ui_keys C-Home
ok 'ui_wait "[interrupted]" 30' "... kept, marked interrupted"
ui_keys C-End
ok 'ui_wait_gone "more (End)" 30' "idle again, at the end"
ok 'ui_screen | grep -q "> typed meanwhile"' "the typed line survived the reply"

# Ctrl-C on an idle non-empty line clears it.
ui_keys C-c
ok 'ui_wait_gone "typed meanwhile" 3' "Ctrl-C clears an idle line"

# Resize mid-reply: transcript re-wrapped, layout follows.
ui_keys 'Another question' Enter
ok 'ui_wait_generated 5 10' "second reply starts"
ui_tmux resize-window -x 50 -y 15
narrow() {
    [ "$(ui_screen | LC_ALL=C grep -v "[^ -~]" | awk "{ if (length(\$0) > 50) bad=1 } END { print bad+0 }")" = 0 ]
}
ok 'ui_until "narrow && ui_screen | sed -n 14p | grep -q \"│\"" 5' \
   "after shrinking to 50x15 no line is wider than 50 and the status bar is on row 14"
ui_tmux resize-window -x 100 -y 30
ok 'ui_until "ui_screen | sed -n 29p | grep -q \"│\"" 5' "after growing to 100x30 the status bar is on row 29"
ok 'ui_screen | grep -q "Another question"' "the conversation is still there after resizes"
ok 'ui_screen | grep -q "generating"' "still generating after the resizes"

# Ctrl-C stops a reply too.
ui_keys C-c
ok 'ui_wait "idle" 60' "Ctrl-C stops the reply"
ok 'ui_until "[ \$(grep -c \"interrupted: true\" \"$UI_DIR/data/elmchat/sessions/chat.yaml\") -ge 2 ]" 30' \
   "both replies are saved marked interrupted"

# An unknown command: a hint, nothing sent.
n_you=$(ui_screen | grep -c '^you')
ui_keys '/frobnicate' Enter
ok 'ui_wait "unknown command" 3' "unknown command gives a one-line hint"
ok '[ "$(ui_screen | grep -c "^you")" = "$n_you" ]' "nothing was sent"

# /help lists the commands.
ui_keys '/help' Enter
ok 'ui_wait "/retry" 3 && ui_screen | grep -q "/read FILE"' "/help lists the commands"
ok 'ui_screen | grep -q "/pin \[N\]"' "/help lists /pin"

# Ctrl-D on an empty line quits; the terminal is restored.
ui_keys C-d
ok 'ui_exited 10' "Ctrl-D on an empty line quits"
ok '[ "$UI_EXIT" = 0 ]' "exit status 0 (got '$UI_EXIT')"
ok 'ui_tty_sane' "terminal sane after exit (icanon, echo, main screen)"
ok '[ ! -s "$UI_DIR/stderr" ] || ! grep -q . "$UI_DIR/stderr"' "nothing on stderr"
ok '[ -f "$UI_DIR/data/elmchat/sessions/chat.yaml" ]' "the session was autosaved"
ok '[ -f "$UI_DIR/cache/elmchat/kv/chat.kv" ] && [ -f "$UI_DIR/cache/elmchat/kv/chat.kv.meta" ]' \
   "its KV snapshot and sidecar were written"
ui_done
