#!/bin/sh
# test-engine-generic.sh (TAP): the forward-pass tests again on the portable
# kernels (ELM_KERNELS=generic, what a CPU without AVX2 runs) and with BLIS
# for large batches (ELM_GEMM=blis), then `elmchat bench` end to end on a
# tiny generated model (output formats).
set -u

top_builddir=${top_builddir:-.}
ELMCHAT=${ELMCHAT:-$top_builddir/elmchat}
. "${top_srcdir:-.}/tests/tap.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/elmchat-generic.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

for t in test-engine-invariants test-engine-golden; do
    ELM_KERNELS=generic "$top_builddir/tests/$t" >"$tmp/$t.out" 2>&1
    st=$?
    grep -q '^# kernels on this CPU: generic' "$tmp/$t.out" || [ "$t" != test-engine-invariants ] || st=1
    grep -q '^not ok' "$tmp/$t.out" && st=1
    [ "$st" -eq 0 ] || sed 's/^/# /' "$tmp/$t.out" | grep '^# not ok' | head -5
    ok "$st" "$t passes on the generic kernels"
done

# And on BLIS for the large batches (our GEMM is the default with AVX-512).
ELM_GEMM=blis "$top_builddir/tests/test-engine-invariants" >"$tmp/blis.out" 2>&1
st=$?
grep -q '^not ok' "$tmp/blis.out" && st=1
ok "$st" "test-engine-invariants passes with ELM_GEMM=blis"

"$ELMCHAT" bench --kernels >"$tmp/k" 2>&1
st=$?
grep -q "BLIS '" "$tmp/k" || st=1
ok "$st" "bench --kernels names the kernels: $(cat "$tmp/k")"

"$top_builddir/tests/gen-checkpoint" --preset micro --dtype f32 -o "$tmp/m" >/dev/null 2>&1
"$ELMCHAT" bench -m "$tmp/m" -p 8 -n 4 -r 1 -t 2 --json >"$tmp/j" 2>"$tmp/e"
st=$?
[ "$(grep -c '"tokens_per_second"' "$tmp/j")" -eq 2 ] || st=1
grep '"test": "pp8"' "$tmp/j" | grep -q '"threads": 2, "type": "f32"' || st=1
grep '"test": "tg4"' "$tmp/j" | grep -q '"roofline_share"' || st=1
ok "$st" "bench --json: pp8 and tg4 lines with the roofline"

"$ELMCHAT" bench -m "$tmp/m" -p 8 -n 4 -r 1 --no-bandwidth >"$tmp/t" 2>&1
st=$?
[ "$(grep -c -e '|  *pp8 |' -e '|  *tg4 |' "$tmp/t")" -eq 2 ] || st=1
grep -q 'roofline' "$tmp/t" && st=1
ok "$st" "bench table; --no-bandwidth skips the roofline"

echo "1..$n"
[ "$failed" -eq 0 ]
