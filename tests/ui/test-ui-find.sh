#!/bin/sh
# test-ui-find.sh: searching the transcript.  /find TEXT highlights the
# matches (reverse video, capture-pane -e) and scrolls the newest into
# view; Ctrl-F goes to older ones, Ctrl-B and Enter too; case-insensitive
# unless the query has capitals; messages dropped from the context are
# searched too; Esc leaves; Ctrl-F on an empty line opens the prompt.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
screen_e() { ui_tmux capture-pane -p -e 2>/dev/null; }

# A small context so that the first exchange is dropped.
ui_start 140 16 -s find -n 2 --ctx 96
ok 'ui_wait "idle" 20' "the model loads"
ui_keys 'the zebra question one' Enter
ok 'ui_wait "[interrupted]" 10 && ui_wait "idle" 5' "exchange 1"
for i in 2 3 4 5 6 7; do
    ui_keys "filler message number $i with some words" Enter
    ui_until "[ \$(ui_screen | grep -c 'filler message number $i') -ge 1 ]" 10
    ui_wait idle 10 >/dev/null
done
ui_keys 'a Zebra again' Enter
ok 'ui_wait "a Zebra again" 10 && ui_wait "idle" 10' "more exchanges (the first dropped)"
ui_keys C-Home
ok 'ui_wait "out of context" 5' "(the first exchange is out of context)"
ui_keys C-End
ui_keys '/find zebra' Enter
ok 'ui_wait "find '"'"'zebra'"'"': 2 matching lines" 5' "/find counts the matching lines, any case"
ok 'screen_e | grep -q "7mZebra"' "the newest match is highlighted"
ui_keys C-f
ok 'ui_wait "line 2 of 2" 5 && ui_wait "the zebra question one" 5' \
   "Ctrl-F: the older match, in the dropped message, scrolled into view"
ui_keys C-b
ok 'ui_wait "line 1 of 2" 5' "Ctrl-B: the newer one again"
ui_keys Enter
ok 'ui_wait "line 2 of 2" 5' "Enter: the next one"
ui_keys '/find Zebra' Enter
ok 'ui_wait "find '"'"'Zebra'"'"': 1 matching line" 5' "a capital makes the case count"
ui_keys Escape
ok 'ui_wait "search off" 5' "Esc leaves the search"
ok '! screen_e | grep -q "7mZebra"' "... and the highlight is gone"
ui_keys C-f
ok 'ui_wait "> /find" 5' "Ctrl-F on an empty line opens the search prompt"
ui_keys C-u '/find nowhere-to-be-found' Enter
ok 'ui_wait "not in this conversation" 5' "no match is said"
ui_keys Escape
ok 'ui_wait "search off" 5' "Esc leaves an empty search too"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ui_done
