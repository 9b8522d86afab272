#!/bin/sh
# test-ui-hub-template.sh: issue 50: `elmchat -m 270M-instruct` on a model
# in the Hugging Face cache, whose snapshot folder is named for a commit
# (40 hex digits, refs/main), chats under openelm-instruct (the status bar
# says so at 100x30, not plain) and /info says why (the repo id); the base
# model's snapshot stays on plain.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
GEN=${GEN_CHECKPOINT:-$(dirname "$ELMCHAT")/tests/lib/gen-checkpoint}
[ -x "$GEN" ] || { echo "1..0 # SKIP no $GEN"; exit 0; }
commit=89abcdef0123456789abcdef0123456789abcdef
hub="$UI_DIR/hf/hub"
for repo in OpenELM-270M-Instruct OpenELM-270M; do
    d="$hub/models--apple--$repo"
    "$GEN" --preset micro --synthetic-tokenizer -o "$d/snapshots/$commit" >/dev/null 2>&1
    mkdir -p "$d/refs" && printf '%s' "$commit" > "$d/refs/main"
done

UI_ENV="HF_HOME='$UI_DIR/hf' HF_HUB_OFFLINE=1" ui_start 100 30 -m 270M-instruct -s hub -n 4
ok 'ui_wait "idle" 30' "the model in the Hub cache loads (HF_HOME, refs/main's commit-named snapshot)"
ok 'ui_screen | grep "OpenELM-270M-Instruct" | grep -q "openelm-instruct"' \
   "the status bar shows the Instruct template, not plain"
ok '! ui_screen | grep -q " plain"' "... and plain nowhere"
ui_keys '/info' Enter
ok 'ui_wait "chosen by" 5 && ui_screen | tr -d "\n" | grep -q "chosen by repo id *apple/OpenELM-270M-Instruct"' \
   "/info says why: the repo id"
ui_keys 'hello' Enter
ok 'ui_wait "[interrupted]" 15 && ui_wait "idle" 5' "a reply under it"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ok '! grep -q "^template:" "$UI_DIR/data/elmchat/sessions/hub.yaml"' \
   "the session does not pin the template (the model chose it)"
ui_tmux kill-server

UI_ENV="HF_HOME='$UI_DIR/hf' HF_HUB_OFFLINE=1" ui_start 100 30 -m 270M -s base -n 4
ok 'ui_wait "idle" 30 && ui_screen | grep "OpenELM-270M" | grep -q "plain"' \
   "the base model's snapshot: plain"
ui_keys '/info' Enter
ok 'ui_wait "chosen by" 5 && ui_screen | tr -d "\n" | grep -q "apple/OpenELM-270M, *not *an *Instruct"' \
   "/info: the repo id of a base model"
ui_done
