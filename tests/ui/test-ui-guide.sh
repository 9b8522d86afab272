#!/bin/sh
# test-ui-guide.sh: what a newcomer sees: elmchat with no -m opens the model
# it ships (guide-small-instruct), says in one line what it is, and answers
# a question for real; /model completes the bundled names, switches to
# guide-large-instruct mid-conversation, and the follow-up is answered in
# the same conversation.  Replies are the models' greedy ones (their
# sampling defaults), paced as in every UI test.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
top_srcdir=${top_srcdir:-.}
if [ ! -f "$top_srcdir/models/guide-small-instruct.gguf" ]; then
    echo "1..0 # SKIP no models/guide-small-instruct.gguf"
    exit 0
fi

# No -m and no $ELMCHAT_MODEL: the bundled default.
ELMCHAT_MODEL= ui_start 100 30 -s guide
ok 'ui_wait "guide-small-instruct is elmchat" 10' "one line says what the default model is"
ok 'ui_screen | grep -q "load OpenELM"' "... and how to get a real one"
ok 'ui_wait "idle" 20' "the model loads"
ok '! ui_screen | grep -qi "noise"' "no noise banner"

ui_keys 'What does the word good mean?' Enter
ok 'ui_wait "good (adjective):" 20' "the small model defines the word"
ok 'ui_wait "idle" 20' "and ends its reply"
ui_keys '/info' Enter
ok 'ui_wait "first token after" 5 && ui_screen | grep -q "speed: prefill [0-9.]* t/s, decode [0-9.]* t/s; first token after [0-9]* ms"' \
   "/info shows the reply's prefill and decode speed and its time to first token"

if [ -d "$top_srcdir/models/guide-large-instruct" ]; then
    ui_keys '/model guide-l' Tab
    ok 'ui_wait "/model guide-large-instruct" 5' "/model completes the bundled large model"
    ui_keys Enter
    ok 'ui_wait "loaded in" 30' "/model switches to it mid-session"
    ui_keys 'And synonyms?' Enter
    # WordNet's first sense of "good" has no other lemma: the reply names
    # the word only the first turn gave.
    ok 'ui_wait "WordNet lists no synonyms for good" 30' "the large model answers the follow-up in the same conversation"
    ok 'ui_screen | grep -q "^guide-large-instruct"' "the reply is labelled with the large model"
    ok 'ui_screen | grep -q "^guide-small-instruct"' "the first reply keeps the small model's name"
    ok 'ui_screen | grep -q "good (adjective):"' "the small model's answer is still there"
    ui_keys '/model default' Enter
    ok 'ui_wait "guide-small-instruct" 30 && ui_wait "idle" 30' "/model default switches back"
else
    diag "no models/guide-large-instruct: the switch is not tested"
fi

ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ui_done
