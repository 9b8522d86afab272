#!/bin/sh
# test-ui-tree.sh: a conversation as a tree in the real binary: an edit of
# an earlier message keeps the old version ("< 2/2 >"), Alt-Left on the
# selected message brings the old one back with its reply, computed from
# the cache's common prefix; /retry makes a second reply; /tree lists every
# message and Enter on one shows its path; /fork; /read attaches a text
# file (shown collapsed) and refuses a binary one; after /quit and a new
# start the tree is there, and /export FILE.json writes all of it.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
sessions="$UI_DIR/data/elmchat/sessions"
# the line after the last header of a reply (its first line of text)
last_reply() { ui_screen | awk '/^random-model/ { getline; t = $0 } END { print t }'; }

ui_start 120 40 -s tree -n 3
ok 'ui_wait "idle" 20' "the model loads"
for q in 'first question' 'second question'; do
    ui_keys "$q" Enter
    ui_until "ui_screen | grep -q '$q'" 10
    ui_until "[ \$(ui_screen | grep -c '\[interrupted\]') -ge 1 ]" 10
    ui_wait idle 10 >/dev/null
done
ok 'ui_until "[ \$(ui_screen | grep -c \"\[interrupted\]\") -eq 2 ]" 10' "two exchanges"
old_reply=$(last_reply)

# /edit 2: the new version is 2 of 2, the old one stays.
ui_keys '/edit 2' Enter
ok 'ui_wait "> second question" 5' "/edit 2 puts the message in the input"
ui_keys C-u 'second question, edited' Enter
ok 'ui_wait "you #2 < 2/2 >" 10' "the edited message shows version 2 of 2"
ui_until "[ \$(ui_screen | grep -c '\[interrupted\]') -eq 2 ]" 10
ok 'ui_wait "idle" 10 && ! ui_screen | grep -q "^second question$"' "the old version is not on screen"

# Alt-Up to it, Alt-Left: version 1 with its own reply, no generation.
ui_keys M-Up M-Up
ok 'ui_wait "selected: your message #2 (version 2/2" 5' "selected, the status names its version"
ui_keys M-Left
ok 'ui_wait "you #2 < 1/2 >" 5 && ui_screen | grep -q "^second question$"' \
   "Alt-Left shows version 1"
ok 'ui_wait "message #2: version 1 of 2: reused" 10' "the switch says what it reused and computed"
reused=$(ui_screen | sed -n 's/.*version 1 of 2: reused \([0-9]*\) tokens from the cache, computed \([0-9]*\).*/\1 \2/p')
diag "switch back: reused/computed = $reused"
ok '[ "$(last_reply)" = "$old_reply" ]' "the old reply is back as it was (no new reply)"
ok '! ui_screen | grep -q generating' "nothing was generated"
ui_keys M-Right
ok 'ui_wait "you #2 < 2/2 >" 5' "Alt-Right: version 2 again"
ok 'ui_tmux capture-pane -p -e | grep "#2 <" | grep -q "7m"' "still selected: its header in reverse video"
ui_keys Escape
# (then the next key is a key of its own, not Alt-/).  The state, not the
# notice "selection off": under ASan the switch's own note comes after the
# Esc and replaces it.
ok 'ui_until "! ui_tmux capture-pane -p -e | grep \"#2 <\" | grep -q \"7m\"" 10' \
   "Esc ends the selection: the header is no longer in reverse video"

# /retry: a second reply to version 2; /branch N reply K switches replies.
ui_keys '/retry' Enter
ok 'ui_wait "< 2/2 >" 10 && ui_until "[ \$(ui_screen | grep -c \"< 2/2 >\") -eq 2 ]" 10' \
   "/retry: the reply is version 2 of 2"
ui_wait idle 10 >/dev/null
ui_keys '/branch 2 reply 1' Enter
ok 'ui_wait "the reply to #2: version 1 of 2" 10' "/branch 2 reply 1"
ui_keys '/branch 2' Enter
ok 'ui_wait "message #2: version 2 of 2 (/branch N K" 5' "/branch N lists the versions"

# /tree: every message, the path marked; Enter on version 1 shows its path.
ui_keys '/tree' Enter
ok 'ui_wait "tree: 7 messages" 5' "/tree: 7 messages"
ok 'ui_screen | grep -q "^\* you #1  first question" && ui_screen | grep -q "^  *you \[1/2\]  second question$"' \
   "one line per message, the path marked, versions numbered"
ui_keys Up Up Up
ui_keys Enter
ok 'ui_wait "branch shown" 10 && ui_screen | grep -q "^second question$"' \
   "Enter on version 1 shows its path"
ok 'ui_wait_gone "tree:" 5' "the tree closes"

# /fork 1: the path ends after exchange 1; the next message is a third version.
ui_keys '/fork 1' Enter
ok 'ui_wait "forked after exchange 1" 5 && ! ui_screen | grep -q "you #2"' "/fork 1"
# the switch above may still be computing: its end must not replace the fork's note
ui_wait idle 10 >/dev/null
sleep 0.3
ok 'ui_screen | grep -q "forked after exchange 1"' "the fork's note outlives the earlier switch"
ui_keys 'third version' Enter
ok 'ui_wait "you #2 < 3/3 >" 10' "the message after the fork is version 3 of 3"
ui_wait idle 10 >/dev/null

# /read: a text file attached (collapsed), a binary one refused.
printf 'alpha\nbeta\ngamma\n' > "$UI_DIR/notes.txt"
head -c 2000 "$ELMCHAT" > "$UI_DIR/prog.bin"
ui_keys "/read $UI_DIR/prog.bin" Enter
ok 'ui_wait "prog.bin: a binary file" 5' "a binary file is refused"
ui_keys "/read $UI_DIR/no" Tab
ok 'ui_wait "notes.txt" 5' "Tab completes the path"
ui_keys Enter
ok 'ui_wait "attached notes.txt (16 B" 5' "a text file is attached, its tokens counted"
ui_keys 'what is in it?' Enter
ok 'ui_wait "[file notes.txt · 16 B · 3 lines]" 10' "sent with the message, shown collapsed"
ui_wait idle 10 >/dev/null
ok 'ui_until "grep -q \"<file name=.notes.txt.>\" \"$sessions/tree.yaml\"" 20' \
   "the session keeps the file's text as the model saw it"

# Quit, start again: the tree is there.
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ok 'grep -q "^elmchat_session: 2$" "$sessions/tree.yaml" && grep -q "^branches:" "$sessions/tree.yaml"' \
   "the file is format 2 with branches"
ui_start 120 40 -s tree -n 3
ok 'ui_wait "idle" 20 && ui_wait "you #2 < 3/3 >" 5' "reopened: the path and its versions"
ui_keys '/tree' Enter
ok 'ui_wait "tree: 11 messages" 5' "the whole tree came back"
ui_keys Escape
ok 'ui_wait_gone "tree:" 5' "Esc closes the tree"
ui_keys "/export $UI_DIR/tree.json" Enter
ok 'ui_wait "exported the whole tree (11 messages) as JSON" 5' "/export FILE.json"
ok 'grep -q "\"format\": \"elmchat-tree\"" "$UI_DIR/tree.json"' "the JSON names its format"
ui_keys '/quit' Enter
ok 'ui_exited 10' "quits again"
ui_done
