#!/bin/sh
# test-ui-queue.sh: typing ahead.  Enter while a reply streams queues the
# message (said, and shown in the status bar); a second one is refused and
# kept in the input; Esc on an empty line takes the queued message back
# into the input (the reply goes on); a queued message is sent as soon as
# the reply ends (here: Ctrl-C ends it); one typed while the model loads
# is sent when it is ready.  Replies are long (-n 2000) and paced.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
sessions="$UI_DIR/data/elmchat/sessions"
ui_long_reply
UI_ENV="ELM_WORKER_TEST_REPLY_FILE=$UI_LONG_REPLY"

ui_start 100 20 -s queue -n 2000
ok 'ui_wait "idle" 20' "the model loads"
ui_keys 'first question' Enter
ok 'ui_wait_generated 2 10' "a reply streams"
ui_keys 'second question' Enter
ok 'ui_wait "queued: sent when the reply ends" 5' "Enter during the reply queues the message"
ok 'ui_wait "1 queued" 5' "the status bar shows it"
ok 'ui_screen | grep -q "^you (queued: sent when the reply ends)"' \
   "the transcript shows it last, marked queued"
ok 'ui_screen | grep -q "generating"' "the reply goes on"
ui_keys 'third one' Enter
ok 'ui_wait "already queued" 5' "a second message is refused"
ok 'ui_screen | grep -q "^> third one"' "... and kept in the input line"
ui_keys C-u
ok 'ui_until "! ui_screen | grep -q \"^> third one\"" 5' "(the input cleared by hand)"
ui_keys Escape
ok 'ui_wait "unqueued" 5' "Esc on an empty line takes the queued message back"
ok 'ui_screen | grep -q "^> second question"' "... into the input line"
ok '! ui_screen | grep -q "(queued"' "... and out of the transcript"
ok 'ui_screen | grep -q "generating"' "and does not stop the reply"
ui_keys Enter
ok 'ui_wait "1 queued" 5' "queued again"
ui_keys C-c
ok 'ui_until "grep -q \"interrupted: true\" \"$sessions/queue.yaml\"" 30' "Ctrl-C ends the reply (saved, marked interrupted)"
ok 'ui_until "[ \$(ui_screen | grep -c \"second question\") -ge 1 ] && ! ui_screen | grep -q \"1 queued\"" 10' \
   "the queued message is sent once the reply ends"
ok 'ui_wait_generated 2 10' "and answered"
ui_keys Escape
ok 'ui_until "[ \$(grep -c \"interrupted: true\" \"$sessions/queue.yaml\") -ge 2 ]" 30 && ui_wait "idle" 10' \
   "with nothing queued, Esc stops the reply"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ok '[ "$(grep -c "second question" "$sessions/queue.yaml")" = 1 ] && ! grep -q "third one" "$sessions/queue.yaml"' \
   "the session holds the queued message once, the refused one not at all"
ui_stop

# A message typed while the model loads waits for it.
UI_ENV="ELM_WORKER_TEST_LOAD_DELAY_MS=3000"
ui_start 100 20 -s early -n 3
ok 'ui_wait "loading" 10' "a slow load"
ui_keys 'early bird' Enter
ok 'ui_wait "queued: sent when the model is ready" 5' "Enter during the load queues the message"
ok 'ui_wait "[interrupted]" 20' "it is sent and answered once the model is ready"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ui_done
