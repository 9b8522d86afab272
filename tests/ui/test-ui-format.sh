#!/bin/sh
# test-ui-format.sh: /format in the chat (issue 47): a bad schema is refused
# naming its JSON pointer; /format schema FILE shows in the status bar, the
# reply (random-weight model, temperature 1) is JSON the schema allows, the
# setting is saved with the session and back when it is resumed; a reply
# max-tokens cuts says the value is incomplete; /format off.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
python3 -c 'import yaml' 2>/dev/null || { echo "1..0 # SKIP no python3-yaml"; exit 0; }
printf '%s\n' '{"type":"object","properties":{"pick":{"enum":["red","green"]},"n":{"type":"integer"}},"required":["pick","n"],"additionalProperties":false}' >"$UI_DIR/pick.json"
printf '%s\n' '{"type":"string","pattern":"a+"}' >"$UI_DIR/bad.json"
ui_start 200 30 -s fmt -n 120 --temp 1 --seed 3
ok 'ui_wait "idle" 20' "the chat is up"
ui_keys "/format schema $UI_DIR/bad.json" Enter
ok 'ui_wait "/pattern: unsupported keyword" 5' "a schema with an unsupported keyword: refused, the pointer named"
ui_keys "/format schema $UI_DIR/pick.json" Enter
ok 'ui_wait "the replies follow it" 5 && ui_wait "format schema pick.json" 5' \
   "/format schema FILE: said, and in the status bar"
ui_keys 'pick a color' Enter
ok 'ui_wait_generated 1 30 && ui_wait idle 60' "a reply"
ui_keys '/save' Enter
yaml="$UI_DIR/data/elmchat/sessions/fmt.yaml"
ok 'ui_until "grep -q \"^format: \" \"$yaml\"" 10' "the setting is saved with the session"
python3 - "$yaml" <<'EOP'
import json, sys
import yaml
doc = yaml.safe_load(open(sys.argv[1], encoding='utf-8'))
reply = [m['content'] for m in doc['messages'] if m.get('role') == 'assistant'][-1]
v = json.loads(reply)
assert set(v) == {"pick", "n"} and v["pick"] in ("red", "green") and isinstance(v["n"], int), v
EOP
rc=$?
ok "[ $rc -eq 0 ]" "the reply is JSON the schema allows"
# max-tokens cuts the value: the user is told it is incomplete, and why
ui_keys '/set max-tokens 3' Enter
ui_keys 'pick again' Enter
ok 'ui_wait "cut before the JSON value was complete (max tokens 3)" 60' \
   "a reply cut by max-tokens: the notice says the JSON value is incomplete, naming max tokens"
ui_keys '/quit' Enter
ok 'ui_exited 10' "quits"
ui_start 200 30 -s fmt -n 120
ok 'ui_wait "format schema pick.json" 20' "resumed: the format is back in the status bar"
ui_keys '/format off' Enter
ok 'ui_wait "format off: replies are free text" 5 && ui_wait_gone "format schema" 5' "/format off"
ui_keys '/quit' Enter
ok 'ui_exited 10' "quits"
ok '! grep -q "^format: " "$yaml"' "off is saved too"
ui_done
