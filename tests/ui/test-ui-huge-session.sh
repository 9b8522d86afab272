#!/bin/sh
# test-ui-huge-session.sh: a session of a million messages (the most a
# session file holds: 900,000 on the path, 100,000 on other branches) opens
# in the TUI within a time and an address-space limit; a turn that would
# take it past the limit is refused with the text kept in the input; /quit
# saves it loadable; one message more is refused at load, naming the limit.
# (Numbering exchanges and siblings, and checking the tree, once scanned
# every message per message: the screen never came.)
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
sessions="$UI_DIR/data/elmchat/sessions"
mkdir -p "$sessions"

# Under AddressSanitizer the shadow memory needs terabytes of address space
# and everything runs a few times slower.  The deadlines here are the time
# limits the test checks: not scaled (ui-tmux.sh).
UI_WAIT_SCALE=1
limit_s=60
if ldd "$ELMCHAT" 2>/dev/null | grep -q libasan; then
    limit_s=240
else
    UI_ULIMIT_V=4000000 # 4 GB: the load takes about 1.6 GB
fi

# PATH_N path messages (ids 1..), then ALT_N other replies: the k-th is a
# second version of exchange k's reply.
huge_session() {  # NAME PATH_N ALT_N
    awk -v name="$1" -v np="$2" -v na="$3" 'BEGIN {
        print "elmchat_session: 2\nname: " name "\nmessages:"
        for (i = 0; i < np; i++)
            printf "- {role: %s, id: %d, content: \"m %d\"}\n", (i % 2 ? "assistant" : "user"), i + 1, i
        print "branches:"
        for (k = 0; k < na; k++)
            printf "- {role: assistant, id: %d, parent: %d, content: \"alt %d\"}\n", np + 1 + k, 2 * k + 1, k
        print "end: true"
    }' > "$sessions/$1.yaml"
}
huge_session huge 900000 100000

t0=$(date +%s)
ui_start 100 30 -s huge
ok "ui_wait 'm 899999' $limit_s" "a million messages open within $limit_s s"
t1=$(date +%s)
diag "the screen came after $((t1 - t0)) s"
ok 'ui_wait "you #450000" 5' "the last exchange is numbered 450000"
ui_keys 'one more' Enter
ok 'ui_wait "conversation full: /new starts another" 10' \
   "a turn past the limit is refused, saying why"
ok 'ui_screen | grep -q "^> one more"' "the text stays in the input"
ui_keys C-u '/tree' Enter
ok 'ui_wait "tree: 1000000 messages" 30' "/tree lists every message"
ok 'ui_wait "… elm  m 899999" 5' \
   "100,000 branch points deep, its rows stay on the screen (indentation capped, marked …)"
ui_keys Escape
# each key of /tree lists the million rows again (a fraction of a second)
ok 'ui_until "! ui_screen | grep -q \"^tree: \"" 30' "Esc closes the tree"
ui_keys '/quit' Enter
ok "ui_exited $limit_s && [ \"\$UI_EXIT\" = 0 ]" "/quit saves and exits"
ok 'ui_tty_sane' "terminal sane"
ok 'tail -1 "$sessions/huge.yaml" | grep -q "end: true"' "the file is complete"
ui_tmux kill-server

# The saved file loads again: path, branches and all.
out=$(XDG_DATA_HOME="$UI_DIR/data" "$ELMCHAT" sessions 2>&1)
ok 'echo "$out" | grep -q "^huge .* 900000 messages"' "the saved session loads again ($out)"

# One message past the limit: refused at load, naming the file and the limit.
huge_session over 900000 100001
out=$(XDG_DATA_HOME="$UI_DIR/data" "$ELMCHAT" sessions 2>&1)
ok 'echo "$out" | grep -q "over.yaml:[0-9]*:[0-9]*: more than 1000000 messages: refused"' \
   "1,000,001 messages: refused ($(echo "$out" | grep over.yaml))"
rm -f "$sessions"/*.yaml
ui_done
