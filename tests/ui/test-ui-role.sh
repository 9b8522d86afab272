#!/bin/sh
# test-ui-role.sh: role presets.  /role lists the shipped and the user's
# roles, completes their names, sets the preset's system prompt and records
# the role in the session file; /system replaces it; a broken role file is
# named with its line; --role starts a session with one.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
sessions="$UI_DIR/data/elmchat/sessions"
mkdir -p "$UI_DIR/config/elmchat/roles"
cat > "$UI_DIR/config/elmchat/roles/pirate.yaml" <<'EOS'
description: Talks like a pirate.
system: You are a pirate. Answer like one, arr.
EOS
printf 'system: [unclosed\n' > "$UI_DIR/config/elmchat/roles/broken.yaml"

ui_start 100 30 -s roles -n 4
ok 'ui_wait "idle" 20' "the model loads"
ui_keys '/role' Enter
ok 'ui_wait "roles (/role NAME):" 5' "/role lists the roles"
ok 'ui_screen | grep -q "concise .*Short, direct answers"' "... the shipped ones with their description"
ok 'ui_screen | grep -q "pirate .*Talks like a pirate"' "... and the user's"
ok 'ui_screen | grep -q "broken.yaml:"' "... a broken one with its file and line"
ui_keys '/role pir' Tab
ok 'ui_wait "/role pirate" 5' "Tab completes a role name"
ui_keys Enter
ok 'ui_wait "role '"'"'pirate'"'"': its system prompt is set" 5' "/role NAME sets it"
ok 'ui_wait "You are a pirate" 5' "the system prompt shows"
ui_keys 'ahoy' Enter
ok 'ui_wait "[interrupted]" 10 && ui_wait "idle" 5' "a reply under the role"
ok 'grep -q "^role: \"pirate\"" "$sessions/roles.yaml" && grep -q "You are a pirate" "$sessions/roles.yaml"' \
   "the session file records the role and its prompt"
ui_keys '/role nosuch' Enter
ok 'ui_wait "no role '"'"'nosuch'"'"'" 5' "an unknown role is refused, naming the folders"
ui_keys '/system be brief' Enter
ok 'ui_wait "system prompt set" 5' "/system replaces it"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ok '! grep -q "^role:" "$sessions/roles.yaml" && grep -q "be brief" "$sessions/roles.yaml"' \
   "a prompt of one's own drops the role from the session"
ui_stop

ui_start 100 30 -s teach --role teacher -n 4
ok 'ui_wait "idle" 20 && ui_wait "patient teacher" 5' "--role starts with the preset's system prompt"
ui_keys 'teach me' Enter
ok 'ui_wait "[interrupted]" 10 && ui_wait "idle" 5' "a reply (an empty session is not saved)"
ui_keys '/quit' Enter
ok 'ui_exited 10 && grep -q "^role: \"teacher\"" "$sessions/teach.yaml"' "recorded in the session"
ui_done
