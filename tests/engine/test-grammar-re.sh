#!/bin/sh
# test-grammar-re.sh: the GBNF matcher against Python's re on random
# regular grammars (tests/engine/grammar_re.py; TAP).
top=${top_srcdir:-$(dirname "$0")/../..}
build=${top_builddir:-.}
command -v python3 >/dev/null 2>&1 || { echo "1..0 # SKIP no python3"; exit 0; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
python3 "$top/tests/engine/grammar_re.py" "$build/tests/engine/grammar-fit" "$tmp" 250
