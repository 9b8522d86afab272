#!/bin/sh
# test-damaged-weights.sh: a checkpoint with NaN weights (bytes of its
# last tensor overwritten with bf16 NaNs): `info --check` names the tensor
# and exits 1; a reply stops with an error that names the model instead of
# emitting token 0 forever (generate and run alike); an intact checkpoint checks clean.
. "${top_srcdir:-.}/tests/lib/cli-test.sh"
cli_tmpdir nan

"$GEN" --preset micro --dtype bf16 --synthetic-tokenizer -o "$tmp/good" >/dev/null 2>&1
"$ELMCHAT" info --check -m "$tmp/good" >"$tmp/out" 2>&1
ok $? "an intact checkpoint: info --check exits 0"
grep -q "every value finite" "$tmp/out"
ok $? "... and says every value is finite"

cp -r "$tmp/good" "$tmp/bad"
f="$tmp/bad/model.safetensors"
size=$(wc -c < "$f")
# 64 bf16 NaNs (0x7fc0, little-endian) 4 KiB before the end: in the last tensor
printf '\300\177%.0s' $(seq 64) | dd of="$f" bs=1 seek=$((size - 4096)) conv=notrunc 2>/dev/null
"$ELMCHAT" info --check -m "$tmp/bad" >"$tmp/out" 2>&1
rc=$?
sed 's/^/#   /' "$tmp/out" | tail -4
[ $rc -eq 1 ] && grep -q ": 64 NaN or infinite values" "$tmp/out" && grep -q "the model is damaged" "$tmp/out"
ok $? "damaged: info --check names the tensor with its 64 NaNs and exits 1"

"$ELMCHAT" generate -m "$tmp/bad" --tokens 1,5,9 -n 8 >"$tmp/out" 2>&1
rc=$?
sed 's/^/#   /' "$tmp/out"
[ $rc -ne 0 ] && grep -q "computes NaN or infinite logits" "$tmp/out" && grep -q "info --check" "$tmp/out"
ok $? "a reply on it stops with an error naming the model and info --check"
"$ELMCHAT" run -m "$tmp/bad" -t plain -p 'hello' -n 8 >"$tmp/out" 2>"$tmp/err"
rc=$?
sed 's/^/#   /' "$tmp/err"
[ $rc -eq 1 ] && grep -q "^elmchat: $tmp/bad: .*computes NaN or infinite logits" "$tmp/err" &&
    grep -q "info --check" "$tmp/err" && ! grep -q "invalid argument" "$tmp/err"
ok $? "run on it says the same, naming the model's path (not 'invalid argument')"
rm "$tmp/bad/tokenizer.model" # elmchat's LLaMA-2 one then: ids beyond the micro vocabulary
"$ELMCHAT" run -m "$tmp/bad" -t plain -p 'hello' -n 8 >"$tmp/out" 2>"$tmp/err"
rc=$?
sed 's/^/#   /' "$tmp/err"
[ $rc -eq 1 ] && grep -q "^elmchat: $tmp/bad: the prompt has token id [0-9]*, outside the model's vocabulary" "$tmp/err"
ok $? "a tokenizer that is not the model's: said so, not 'invalid argument'"
echo "1..$n"
[ "$failed" -eq 0 ]
