#!/bin/sh
# test-hf-cache.sh: models already in the Hugging Face cache are found
# without a copy: -m owner/repo and the short names (270M-instruct ...) look
# in $HF_HUB_CACHE (else $HF_HOME/hub, else ~/.cache/huggingface/hub), at
# the snapshot refs/main names (else the newest); a missing one says how to
# download it.  Their template comes from the repo id, not the snapshot
# folder's name (a commit id).
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

# Issue 50: an Instruct model from the cache gets its template although its
# folder is named for a commit (40 hex digits, as huggingface_hub writes it).
export HF_HUB_CACHE="$tmp/hub2"
commit=0123456789abcdef0123456789abcdef01234567
inst="$HF_HUB_CACHE/models--apple--OpenELM-270M-Instruct"
base="$HF_HUB_CACHE/models--apple--OpenELM-270M"
"$GEN" --preset micro --synthetic-tokenizer -o "$inst/snapshots/$commit" >/dev/null 2>&1
mkdir -p "$inst/refs" && printf '%s' "$commit" > "$inst/refs/main"
"$GEN" --preset micro --synthetic-tokenizer -o "$base/snapshots/$commit" >/dev/null 2>&1
mkdir -p "$base/refs" && printf '%s' "$commit" > "$base/refs/main"
ids() { "$ELMCHAT" run --dry-run -p 'Hello there' "$@" 2>"$tmp/err"; }
auto=$(ids -m 270M-instruct) && want=$(ids -m 270M-instruct -t openelm-instruct) &&
    plain=$(ids -m 270M-instruct -t plain)
ok $? "run --dry-run -m 270M-instruct (and with -t) gives token ids"
echo "#   auto:  $auto"; echo "#   plain: $plain"
[ -n "$auto" ] && [ "$auto" = "$want" ] && [ "$auto" != "$plain" ]
ok $? "270M-instruct from a commit-named snapshot is prompted with openelm-instruct, not plain"
"$ELMCHAT" run --dry-run --verbose -p hi -m 270M-instruct >/dev/null 2>"$tmp/err"
sed 's/^/#   /' "$tmp/err"
grep -q "^template: openelm-instruct (.*), chosen by repo id apple/OpenELM-270M-Instruct$" "$tmp/err"
ok $? "run --verbose says the template and why (the repo id)"
[ "$(ids -m 270M)" = "$(ids -m 270M -t plain)" ] && [ "$(ids -m 270M)" != "$auto" ]
ok $? "the base model 270M from the same kind of snapshot stays on plain"
"$ELMCHAT" run --dry-run -v -p hi -m 270M 2>&1 >/dev/null |
    grep -q "chosen by repo id apple/OpenELM-270M, not an Instruct model"
ok $? "... and says why"
"$ELMCHAT" info -m apple/OpenELM-270M-Instruct >"$tmp/out" 2>&1 &&
    grep -q "^template: *openelm-instruct (repo id apple/OpenELM-270M-Instruct)$" "$tmp/out"
ok $? "info shows the template and why"
(cd "$inst/snapshots" && "$ELMCHAT" run --dry-run -v -p hi -m "./$commit" 2>&1 >/dev/null) |
    grep -q "chosen by repo id apple/OpenELM-270M-Instruct"
ok $? "a relative path to the snapshot too"
echo "1..$n"
[ "$failed" -eq 0 ]
