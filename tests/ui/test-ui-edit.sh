#!/bin/sh
# test-ui-edit.sh: the input line in a real pty (tmux): CJK typed and edited
# with the cursor where the columns say, multi-row input, Tab completion,
# a 2,000-line bracketed paste that stays one message, history on disk.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init

ui_start 40 12 -s edit -n 4
ok 'ui_wait "idle" 20' "starts"

# CJK and emoji: typed, cursor moved, a character replaced.
ui_keys '你好世界 😀 ok'
ok 'ui_wait "> 你好世界 😀 ok" 3' "CJK and emoji typed"
cx=$(ui_tmux display -p '#{cursor_x}')
ok '[ "$cx" = 16 ]' "cursor after 2 + 8 + 1 + 2 + 1 + 2 columns (got $cx)"
ui_keys Left Left Left Left Left BSpace '中'
ok 'ui_wait "> 你好世中 😀 ok" 3' "a CJK character deleted and another inserted"
cx=$(ui_tmux display -p '#{cursor_x}')
ok '[ "$cx" = 10 ]' "cursor right after the new character (column 10, got $cx)"
ui_keys C-a
ok 'ui_until "[ \"\$(ui_tmux display -p \"#{cursor_x}\")\" = 2 ]" 3' "Ctrl-A: cursor after the prompt"
ui_keys C-e
ok 'ui_until "[ \"\$(ui_tmux display -p \"#{cursor_x}\")\" = 16 ]" 3' "Ctrl-E: cursor at the end"
ui_keys Enter
ok 'ui_wait "you" 3 && ui_wait "[interrupted]" 10 && ui_wait "idle" 10' "the CJK message is sent (reply cut at 4 tokens)"
ok 'ui_screen | grep -q "^你好世中 😀 ok"' "... and shows in the transcript"

# Multi-row input: Ctrl-J and Alt-Enter insert newlines; long text wraps.
ui_keys 'one' C-j 'two' Escape Enter 'three three three three three three three'
ok 'ui_wait "> one" 3 && ui_screen | grep -q "^two$"' "Ctrl-J and Alt-Enter start new rows"
rows=$(ui_screen | sed -n '/^> one/,$p' | wc -l)
ok '[ "$rows" = 4 ]' "the input area grew to 4 rows (got $rows)"
ui_keys C-c
ok 'ui_wait_gone "> one" 3' "Ctrl-C clears the multi-row line"
ok 'ui_screen | sed -n 12p | grep -q "^>" && ! ui_screen | sed -n 11p | grep -q "^>"' "the input shrank back to one row"

# Tab completion of commands and of /set parameters.
ui_keys '/he' Tab
ok 'ui_wait "> /help" 3 && [ "$(ui_tmux display -p "#{cursor_x}")" = 8 ]' "Tab completes /he to '/help '"
ui_keys C-u '/set top' Tab
ok 'ui_wait "top-" 3' "Tab completes /set top to a parameter"
ui_keys C-u

# A 2,000-line bracketed paste stays in the input as one message.
seq -f 'pasted line %g' 1 2000 > "$UI_DIR/paste.txt"
ui_tmux load-buffer "$UI_DIR/paste.txt"
ui_tmux paste-buffer -p
ok 'ui_wait "pasted line 2000" 10' "the paste arrives"
ok 'ui_screen | sed -n 11p | grep -q "^pasted line 2000" && ! ui_screen | grep -q generating' \
   "nothing was sent by the pasted newlines"
ui_keys Enter
ok 'ui_wait "context is full" 20' "sent as one message, too long for the context: said so"
ok 'ui_screen | sed -n 11p | grep -q "^pasted line 2000" && ! ui_screen | grep -q generating' \
   "nothing was lost: the message is still in the input"
sess="$UI_DIR/data/elmchat/sessions/edit.yaml"
ok '[ "$(grep -c "pasted line" "$sess")" = 0 ] && [ "$(grep -c "role: user" "$sess")" = 1 ]' \
   "nothing of it went into the session"
ui_keys C-c
ok 'ui_wait_gone "pasted line" 5' "Ctrl-C clears the long input"
ui_keys C-Home
ok 'ui_wait "Type a message" 5' "Ctrl-Home scrolls to the top"
ui_keys C-End

ui_keys C-d
ok 'ui_exited 10' "Ctrl-D quits"
ok 'ui_tty_sane' "terminal sane after exit"
hist="$UI_DIR/state/elmchat/history"
ok '[ -f "$hist" ] && grep -q "你好世中" "$hist"' "history saved in XDG_STATE_HOME/elmchat/history"
ok '[ "$(file_mode "$hist")" = 600 ]' "history is mode 0600"
ok 'grep -q "pasted line 1\\\\npasted line 2\\\\n" "$hist"' "a multi-line entry is one history line"

# The history comes back, and $if elmchat in the inputrc applies.
printf '$if elmchat\n"\\C-xh": "/help"\n$endif\n' > "$UI_DIR/inputrc"
ui_stop
ui_start 40 12 -s edit2 -n 4
ok 'ui_wait "idle" 20' "restarts"
ui_keys Up
ok 'ui_wait "> /help" 3 || ui_wait "pasted line 2000" 3' "Up recalls the saved history"
ui_keys C-c
ok 'ui_wait_gone "pasted line" 3' "Ctrl-C clears the recalled entry"
ui_keys C-x h
ok 'ui_wait "> /help" 3' "\$if elmchat in the inputrc binds a key"
ui_keys C-u C-r '你好'
ok 'ui_wait "你好世中" 3' "Ctrl-R finds a UTF-8 entry"
ui_keys C-g
ui_keys C-c
ok 'ui_until "ui_screen | tail -1 | grep -q \"^> *\$\"" 3' "the input is empty again"
ui_keys C-d
ok 'ui_exited 10' "quits"
ui_done
