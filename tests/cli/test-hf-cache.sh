#!/bin/sh
# test-hf-cache.sh: models already in the Hugging Face cache are found
# without a copy: -m owner/repo and the short names (270M-instruct ...) look
# in $HF_HUB_CACHE (else $HF_HOME/hub, else ~/.cache/huggingface/hub), at
# the snapshot refs/main names (else the newest); a missing one says how to
# download it.
. "${top_srcdir:-.}/tests/lib/cli-test.sh"
cli_tmpdir hf
export HF_HUB_CACHE="$tmp/hub" HOME="$tmp" XDG_DATA_HOME="$tmp/data"
repo="$HF_HUB_CACHE/models--apple--OpenELM-270M-Instruct"
"$GEN" --preset micro --synthetic-tokenizer -o "$repo/snapshots/0123abcd" >/dev/null 2>&1
mkdir -p "$repo/refs" && printf '0123abcd' > "$repo/refs/main"

"$ELMCHAT" info -m apple/OpenELM-270M-Instruct >"$tmp/out" 2>&1
ok $? "-m apple/OpenELM-270M-Instruct loads from the cache"
grep -q "^path: *$repo/snapshots/0123abcd" "$tmp/out"
ok $? "at the snapshot refs/main names"
"$ELMCHAT" info -m 270M-instruct >"$tmp/out" 2>&1 && grep -q "snapshots/0123abcd" "$tmp/out"
ok $? "the short name 270M-instruct finds it too"
rm "$repo/refs/main"
"$ELMCHAT" info -m apple/OpenELM-270M-Instruct >"$tmp/out" 2>&1 && grep -q "snapshots/0123abcd" "$tmp/out"
ok $? "without refs/main: the newest snapshot"
"$ELMCHAT" info -m 3B-instruct >"$tmp/out" 2>&1
[ $? -ne 0 ] && grep -q "apple/OpenELM-3B-Instruct is not in the Hugging Face cache $HF_HUB_CACHE: elmchat pull 3B-instruct" "$tmp/out"
ok $? "a known model not downloaded: says how to get it"
"$ELMCHAT" info -m apple/OpenELM-450M >"$tmp/out" 2>&1
[ $? -ne 0 ] && grep -q "not a path, and not in the Hugging Face cache" "$tmp/out"
ok $? "a repo id not in the cache: said so"
unset HF_HUB_CACHE
mkdir -p "$tmp/hfhome" && mv "$tmp/hub" "$tmp/hfhome/hub"
HF_HOME="$tmp/hfhome" "$ELMCHAT" info -m apple/OpenELM-270M-Instruct >"$tmp/out" 2>&1
ok $? "\$HF_HOME/hub when \$HF_HUB_CACHE is not set"
echo "1..$n"
[ "$failed" -eq 0 ]
