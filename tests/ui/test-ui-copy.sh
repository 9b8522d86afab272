#!/bin/sh
# test-ui-copy.sh: /copy.  On an injected reply with two code blocks:
# /copy 2 emits the OSC 52 sequence of block 2 (the pty output, captured
# with pipe-pane) and tmux, with set-clipboard on, takes it as its buffer;
# /copy (the last block), /copy reply, /copy #1 (your message), /copy 1
# FILE; errors for a block that does not exist.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
cat > "$UI_DIR/reply.md" <<'EOS'
Two blocks:

```python
print("one")
```

```sh
echo two
ls -l
```
EOS
UI_ENV="ELM_WORKER_TEST_REPLY_FILE=$UI_DIR/reply.md" UI_TOKEN_DELAY_MS=2
ui_start 100 30 -s copy
ok 'ui_wait "idle" 20' "the model loads"
ui_tmux set -g set-clipboard on
ui_tmux pipe-pane -o "cat >> '$UI_DIR/pty.out'"
ui_keys 'give me code' Enter
ok 'ui_wait "[2] sh" 20 && ui_wait "idle" 10' "the reply with two code blocks"
ui_keys '/copy 2' Enter
ok 'ui_wait "copied code block 2 sh (2 lines, 15 bytes)" 5' "/copy 2 says what it copied and how long"
b64=$(printf 'echo two\nls -l\n' | base64_line)
ok 'ui_until "grep -q \"]52;c;$b64\" \"$UI_DIR/pty.out\"" 5' "the pty got the OSC 52 sequence of block 2"
ok '[ "$(ui_tmux show-buffer)" = "$(printf "echo two\nls -l")" ]' "tmux took it as its paste buffer"
ui_keys '/copy' Enter
ok 'ui_wait "copied code block 2 sh" 5' "/copy alone: the last block"
ui_keys '/copy 1' Enter
ok 'ui_wait "copied code block 1 python (1 line, 13 bytes)" 5' "/copy 1"
ok '[ "$(ui_tmux show-buffer)" = "print(\"one\")" ]' "... its text"
ui_keys '/copy reply' Enter
ok 'ui_wait "copied the last reply" 5' "/copy reply"
ok 'ui_tmux show-buffer | grep -q "^\`\`\`python"' "... as markdown"
ui_keys '/copy #1' Enter
ok 'ui_wait "copied your message #1 (1 line, 12 bytes)" 5' "/copy #1: your message"
ui_keys '/copy 3' Enter
ok 'ui_wait "has code blocks 1 to 2" 5' "/copy 3: there is no block 3"
ui_keys "/copy 1 $UI_DIR/block1.py" Enter
ok 'ui_wait "wrote code block 1 python to" 5 && [ "$(cat "$UI_DIR/block1.py")" = "print(\"one\")" ]' \
   "/copy 1 FILE writes the block to the file"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ui_done
