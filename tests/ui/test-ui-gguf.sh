#!/bin/sh
# test-ui-gguf.sh: a GGUF model carries its own vocabulary: a generated
# checkpoint quantized to GGUF, alone in its folder (no tokenizer.model or
# tokenizer.json), tokenizes to the same ids as the original checkpoint
# (tokenize, run --dry-run) and chats in the real binary (tmux).
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
GEN=${GEN_CHECKPOINT:-$(dirname "$ELMCHAT")/tests/lib/gen-checkpoint}
[ -x "$GEN" ] || { echo "1..0 # SKIP no $GEN"; exit 0; }

"$GEN" --preset micro --synthetic-tokenizer --seed 4 -o "$UI_DIR/hf" >/dev/null 2>&1
mkdir -p "$UI_DIR/alone"
"$ELMCHAT" quantize "$UI_DIR/hf" "$UI_DIR/alone/micro.gguf" --type q8_0 >/dev/null 2>&1
ok '[ -s "$UI_DIR/alone/micro.gguf" ] && ! ls "$UI_DIR/alone" | grep -q "^tokenizer"' \
   "a GGUF file alone in its folder"

text='Hello world, this is a GGUF test: 123 éà'
want=$(printf '%s' "$text" | "$ELMCHAT" tokenize -m "$UI_DIR/hf")
got=$(printf '%s' "$text" | "$ELMCHAT" tokenize -m "$UI_DIR/alone/micro.gguf" 2>&1)
ok '[ -n "$want" ] && [ "$got" = "$want" ]' "tokenize -m X.gguf gives the checkpoint's ids ($got)"
got=$(printf '%s' "$want" | "$ELMCHAT" detokenize -m "$UI_DIR/alone/micro.gguf" 2>&1)
ok '[ "$got" = "$text" ]' "detokenize -m X.gguf round trip"
want=$("$ELMCHAT" run -m "$UI_DIR/hf" --dry-run -t plain -p "$text" 2>&1)
got=$("$ELMCHAT" run -m "$UI_DIR/alone/micro.gguf" --dry-run -t plain -p "$text" 2>&1)
ok '[ -n "$want" ] && [ "$got" = "$want" ]' "run --dry-run on the GGUF: same prompt ids"

# A GGUF without vocabulary and without files beside it: a clear error.
ok '! printf x | "$ELMCHAT" tokenize -m "$UI_DIR/hf/model.safetensors" >/dev/null 2>&1' \
   "a file that is neither a tokenizer nor a GGUF is refused"

ui_start 80 24 -s g -n 5 -m "$UI_DIR/alone/micro.gguf"
ok 'ui_wait "idle" 20' "the chat opens the GGUF model (its tokenizer from the file)"
ui_keys 'hello gguf' Enter
ok 'ui_wait "hello gguf" 5 && ui_wait "[interrupted]" 10 && ui_wait "idle" 5' \
   "a reply streams (cut at 5 tokens)"
ok 'ui_screen | grep -q "^micro \[interrupted\]"' "labelled with the GGUF file's name (without .gguf)"
ui_keys '/info' Enter
ok 'ui_wait "path: $UI_DIR/alone/micro.gguf" 5 && ui_screen | grep -q "q8_0"' \
   "/info: the GGUF path and its q8_0 weights"
ui_keys '/quit' Enter
ok 'ui_exited 10 && [ "$UI_EXIT" = 0 ]' "quits"
ui_done
