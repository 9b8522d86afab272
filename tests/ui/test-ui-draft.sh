#!/bin/sh
# test-ui-draft.sh: speculative decoding and prompt lookup in the chat:
# --draft MODEL loads a draft (here the model itself: everything accepted),
# /info says what it did for the last reply, /set draft with a model of
# another vocabulary is refused with both named, /set draft off; /set
# lookup off and on; a failed save names its reason first.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
GEN=${GEN_CHECKPOINT:-$(dirname "$ELMCHAT")/tests/lib/gen-checkpoint}
model=${ELMCHAT_MODEL:-tests/random-model}

# (a draft as large as the model is never used unless the test hook says so)
UI_ENV="ELM_WORKER_TEST_DRAFT_K=4"
ui_start 200 30 -s draft -n 12 --temp 0 --draft "$model"
ok 'ui_wait "idle" 20 && ui_wait "ready: it proposes tokens" 10' "--draft: the draft is ready"
ui_keys 'first question' Enter
ok 'ui_wait "[interrupted]" 10 && ui_wait idle 10' "a reply with the draft"
ui_keys '/info' Enter
ok 'ui_wait "drafted tokens accepted" 5' "/info: what the draft did for the last reply"
if [ -x "$GEN" ] && "$GEN" --preset micro -o "$UI_DIR/micro" >/dev/null 2>&1; then
    ui_keys "/set draft $UI_DIR/micro" Enter
    ok 'ui_wait "cannot draft for" 10 && ui_wait "a vocabulary of 1024 tokens" 5' \
       "a draft of another vocabulary is refused, both named"
else
    ok true "# SKIP no gen-checkpoint"
fi
ui_keys '/set draft off' Enter
ok 'ui_wait "no draft model" 5' "/set draft off"
ui_keys '/set lookup off' Enter
ok 'ui_wait "prompt lookup off" 5' "/set lookup off"
ui_keys '/info' Enter
ok 'ui_wait "prompt lookup: off (/set lookup on)" 5' "/info says so"
ui_keys '/set lookup on' Enter
ok 'ui_wait "prompt lookup on" 5' "/set lookup on"
# A save that fails says why first (a folder where the file would go).
mkdir -p "$UI_DIR/data/elmchat/sessions/blocked.yaml"
# (--force: a saved 'blocked' is there, and /save alone refuses to replace it)
ui_keys '/save blocked --force' Enter
ok 'ui_wait "not saved (Is a directory): '"'"'blocked'"'"'" 5' "a failed save: the reason first, then the name"
ui_keys '/info' Enter
ok 'ui_wait "the last save failed: " 5 && ui_wait "blocked.yaml" 5' "/info has the whole error, path included"
ui_keys '/quit' Enter
ok 'ui_exited 10' "quits"
ok 'ui_wait "could not be saved: cannot write" 5' "the exit says the conversation was not saved, and why"
ui_done
