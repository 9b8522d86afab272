#!/bin/sh
# test-ui-markdown.sh: a reply with a heading, a list, a table, a link and
# two code blocks (injected: ELM_WORKER_TEST_REPLY_FILE) streams and
# renders: no markdown syntax left, bullets, the numbered code blocks with
# their language, the table aligned, the URL after the link's text; the
# attributes (capture-pane -e: bold heading); /set markdown off and --raw
# show the source; NO_COLOR keeps bold and underline only.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
cat > "$UI_DIR/reply.md" <<'EOS'
# Plan

Use **bold** words and see [the docs](https://example.org/docs).

- first item
- second item

| name | size |
|------|-----:|
| tiny | 5 |
| large | 17 |

```python
print("hi")
```

```sh
echo done
```
EOS
screen_e() { ui_tmux capture-pane -p -e 2>/dev/null; }

UI_ENV="ELM_WORKER_TEST_REPLY_FILE=$UI_DIR/reply.md" UI_TOKEN_DELAY_MS=2
ui_start 80 40 -s md
ok 'ui_wait "idle" 20' "the model loads"
ui_keys 'show me' Enter
ok 'ui_wait "echo done" 20 && ui_wait "idle" 10' "the injected reply streams to its end"
ok 'ui_screen | grep -q "^Plan *$"' "the heading without its #"
ok 'ui_screen | grep -q "^Use bold words and see the docs (https://example.org/docs)\."' \
   "emphasis without stars, the link's URL after its text"
ok 'ui_screen | grep -q "^• first item" && ui_screen | grep -q "^• second item"' "list bullets"
ok 'ui_screen | grep -q "^name  │ size" && ui_screen | grep -q "^large │   17"' \
   "the table aligned (right-aligned numbers)"
ok 'ui_screen | grep -q "^\[1\] python" && ui_screen | grep -q "^\[2\] sh"' "code blocks numbered, with their language"
ok 'ui_screen | grep -q "^│ print(\"hi\")"' "code in its frame, as written"
ok '! ui_screen | grep -q -e "\*\*" -e "\`\`\`" -e "^# "' "no markdown syntax left"
ok 'screen_e | grep -q "\[1;4mPlan"' "the heading is bold and underlined (capture-pane -e)"
ok 'screen_e | grep "Use " | grep -q "\[1mbold"' "**bold** is bold"
ui_keys '/set markdown off' Enter
ok 'ui_wait "markdown off" 5 && ui_wait "# Plan" 5' "/set markdown off shows the source"
ok 'ui_screen | grep -q "^\`\`\`python"' "... with its fences"
ui_keys '/set markdown on' Enter
ok 'ui_wait "[1] python" 5' "/set markdown on renders again"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ok 'grep -q "\*\*bold\*\*" "$UI_DIR/data/elmchat/sessions/md.yaml"' "the session keeps the markdown source"
ui_stop

ui_start 80 40 -s md --raw
ok 'ui_wait "idle" 20 && ui_wait "# Plan" 5' "--raw: the saved reply shows as written"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ui_stop

UI_ENV="NO_COLOR=1"
ui_start 80 40 -s md
ok 'ui_wait "idle" 20 && ui_wait "[1] python" 5' "NO_COLOR: the reply renders"
ok '! screen_e | grep -q "\[3[0-7]m" && screen_e | grep -q "\[1mbold"' \
   "... with bold, and no colour at all"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ui_done
