#!/bin/sh
# test-ui-editor.sh: Ctrl-X Ctrl-E opens the message being typed in
# $VISUAL / $EDITOR with curses paused; the edited text comes back into the
# input line (not sent), the screen is whole again; an editor that fails
# leaves the text as it was and says so.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
cat > "$UI_DIR/ed.sh" <<'EOS'
#!/bin/sh
# rewrites the file it is given, records that it ran on a real terminal
[ -t 0 ] && [ -t 1 ] && echo tty > "${1%/*}/../editor-ran" 2>/dev/null
sed 's/draft/final text/' "$1" > "$1.new" && mv "$1.new" "$1"
printf 'second line\n' >> "$1"
EOS
cat > "$UI_DIR/fail.sh" <<'EOS'
#!/bin/sh
echo garbage > "$1"
exit 3
EOS
chmod +x "$UI_DIR/ed.sh" "$UI_DIR/fail.sh"

UI_ENV="VISUAL= EDITOR=$UI_DIR/ed.sh TMPDIR=$UI_DIR/tmp"
mkdir -p "$UI_DIR/tmp"
ui_start 80 20 -s edit -n 4
ok 'ui_wait "idle" 20' "the model loads"
ui_keys 'my draft'
ok 'ui_wait "> my draft" 5' "a message being typed"
ui_keys C-x C-e
ok 'ui_wait "> my final text" 10' "Ctrl-X Ctrl-E: the editor's text comes back into the input"
ok 'ui_screen | grep -q "second line"' "... with its second line"
ok 'ui_screen | grep -q "idle"' "the screen is whole again (status bar)"
ok '[ -f "$UI_DIR/editor-ran" ]' "the editor ran on the terminal"
ok '[ -z "$(ls "$UI_DIR/tmp")" ]' "the temporary file is gone"
ok '! grep -q "final text" "$UI_DIR/data/elmchat/sessions/edit.yaml" 2>/dev/null' "nothing was sent"
ui_keys Enter
ok 'ui_wait "[interrupted]" 10 && ui_wait "idle" 5' "Enter sends the edited message"
ui_keys '/quit' Enter
ok 'ui_exited 10 && grep -q "my final text" "$UI_DIR/data/elmchat/sessions/edit.yaml"' "sent as edited"
ui_stop

UI_ENV="VISUAL=$UI_DIR/fail.sh TMPDIR=$UI_DIR/tmp"
ui_start 80 20 -s fail -n 4
ok 'ui_wait "idle" 20' "again, VISUAL set to an editor that fails"
ui_keys 'keep me'
ui_keys C-x C-e
ok 'ui_wait "exited with status 3" 10' "the failure is said"
ok 'ui_screen | grep -q "> keep me"' "the text stays as it was"
ui_keys C-u '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ui_done
