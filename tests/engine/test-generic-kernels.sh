#!/bin/sh
# test-generic-kernels.sh (TAP): the forward-pass tests again on the portable
# kernels (ELM_KERNELS=generic, what a CPU without AVX2 runs) and with BLIS
# for large batches (ELM_GEMM=blis), then `elmchat bench` end to end on a
# tiny generated model (output formats and fields, not the speed), and
# tests/engine/bench-matrix.sh on it.
set -u

top_builddir=${top_builddir:-.}
ELMCHAT=${ELMCHAT:-$top_builddir/elmchat-testing}
. "${top_srcdir:-.}/tests/lib/tap.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/elmchat-generic.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

for t in test-invariants test-golden; do
    ELM_KERNELS=generic "$top_builddir/tests/engine/$t" >"$tmp/$t.out" 2>&1
    st=$?
    grep -q '^# kernels on this CPU: generic' "$tmp/$t.out" || [ "$t" != test-invariants ] || st=1
    grep -q '^not ok' "$tmp/$t.out" && st=1
    [ "$st" -eq 0 ] || sed 's/^/# /' "$tmp/$t.out" | grep '^# not ok' | head -5
    ok "$st" "$t passes on the generic kernels"
done

# And on BLIS for the large batches (our GEMM is the default with AVX-512).
ELM_GEMM=blis "$top_builddir/tests/engine/test-invariants" >"$tmp/blis.out" 2>&1
st=$?
grep -q '^not ok' "$tmp/blis.out" && st=1
ok "$st" "test-invariants passes with ELM_GEMM=blis"

"$ELMCHAT" bench --kernels >"$tmp/k" 2>&1
st=$?
grep -q "BLIS '" "$tmp/k" || st=1
grep -q '^cpu: [a-z0-9-]* ([a-z ]*):' "$tmp/k" || st=1
grep -q 'WRONG' "$tmp/k" && st=1
ok "$st" "bench --kernels names the CPU's features and the kernels, BLIS passed its start check: $(cat "$tmp/k")"

# BLIS's one-shot check failing (as reported on Apple M1): said once, and
# the large batches BLIS would take (ELM_GEMM=blis) run on our kernels, right.
ELM_BLIS_CHECK=fail "$ELMCHAT" bench --kernels >"$tmp/kf" 2>&1
st=$?
grep -q "WRONG in the start check" "$tmp/kf" || st=1
[ "$(grep -o WRONG "$tmp/kf" | wc -l)" -eq 1 ] || st=1
ELM_BLIS_CHECK=fail ELM_GEMM=blis "$top_builddir/tests/engine/test-invariants" >"$tmp/bf.out" 2>&1 || st=1
grep -q '^not ok' "$tmp/bf.out" && st=1
[ "$st" -eq 0 ] || sed 's/^/# /' "$tmp/kf" "$tmp/bf.out" | grep -v '^# ok' | head -8
ok "$st" "BLIS failing its start check: bench --kernels says so once, test-invariants passes without it"

"$top_builddir/tests/lib/gen-checkpoint" --preset micro --dtype f32 -o "$tmp/m" >/dev/null 2>&1
"$ELMCHAT" bench -m "$tmp/m" -p 8 -n 4 -r 2 -t 2 --json >"$tmp/j" 2>"$tmp/e"
st=$?
[ "$(grep -c '"tokens_per_second"' "$tmp/j")" -eq 2 ] || st=1
grep '"test": "pp8"' "$tmp/j" | grep -q '"threads": 2, "type": "f32"' || st=1
grep '"test": "tg4"' "$tmp/j" | grep -q '"roofline_share"' || st=1
ok "$st" "bench --json: pp8 and tg4 lines with the roofline"

# has FILE TEST KEY...: the line of TEST has every "KEY": (a number, array or string)
has() {
    f=$1 t=$2
    shift 2
    for k in "$@"; do
        grep "\"test\": \"$t\"" "$f" | grep -q "\"$k\": [-0-9.\"[]" || {
            echo "# $t: no $k"
            return 1
        }
    done
}
# num FILE TEST KEY: its numeric value
num() {
    grep "\"test\": \"$2\"" "$1" | sed -n "s/.*\"$3\": \([-0-9.e+]*\).*/\1/p"
}
# le A B...: A <= B <= ... numerically
le() {
    awk 'BEGIN { for (i = 2; i < ARGC; i++) if (ARGV[i - 1] + 0 > ARGV[i] + 0) exit 1 }' "$@"
}

st=0
has "$tmp/j" tg4 machine_gb_per_second machine_gb_per_second_min machine_gb_per_second_max \
    bw_pass_gb_per_second_min bw_pass_gb_per_second_max bw_probes bw_passes bw_buffer_mib \
    roofline_share_min roofline_share_max cpu_share || st=1
# -r 2: a probe before, between and after the runs, 7 passes each
[ "$(num "$tmp/j" tg4 bw_probes)" = 3 ] && [ "$(num "$tmp/j" tg4 bw_passes)" = 21 ] || st=1
le "$(num "$tmp/j" tg4 bw_pass_gb_per_second_min)" "$(num "$tmp/j" tg4 machine_gb_per_second_min)" \
    "$(num "$tmp/j" tg4 machine_gb_per_second)" "$(num "$tmp/j" tg4 machine_gb_per_second_max)" \
    "$(num "$tmp/j" tg4 bw_pass_gb_per_second_max)" || st=1
le "$(num "$tmp/j" tg4 roofline_share_min)" "$(num "$tmp/j" tg4 roofline_share)" \
    "$(num "$tmp/j" tg4 roofline_share_max)" || st=1
grep '"test": "tg4"' "$tmp/j" | grep -q '"matrix_ms"' && st=1 # tg phases: --profile only
ok "$st" "bench --json: the bandwidth probes around tg (value used within their spread)"

st=0
has "$tmp/j" pp8 matrix_gflops blis_gflops blis_share matrix_gflops_blis_layers blis_m \
    blis_threads blis_cpu_share blis_reshots blis_arch blis_layers blis_flops_share blis_seconds \
    blis_settle_ms eval_ms matrix_ms attention_ms other_ms norm_ms rope_ms swiglu_ms head_ms || st=1
[ "$(num "$tmp/j" pp8 blis_m)" = 8 ] && [ "$(num "$tmp/j" pp8 blis_threads)" = 2 ] || st=1
# layers spread over the depth (micro: 4), as many as ~1 s allows (fewer on a busy machine)
grep '"test": "pp8"' "$tmp/j" | grep -q -e '"blis_layers": \[0, 3, 1, 2\]' \
    -e '"blis_layers": \[0\]' -e '"blis_layers": \[0, 3\]' -e '"blis_layers": \[0, 3, 1\]' || st=1
le 0.01 "$(num "$tmp/j" pp8 blis_flops_share)" 1.001 || st=1
# matrix + attention + other = the eval time
awk -v t="$(num "$tmp/j" pp8 eval_ms)" -v a="$(num "$tmp/j" pp8 matrix_ms)" \
    -v b="$(num "$tmp/j" pp8 attention_ms)" -v c="$(num "$tmp/j" pp8 other_ms)" \
    'BEGIN { d = t - a - b - c; exit !(t > 0 && d < 0.01 && d > -0.01) }' || st=1
[ "$st" -eq 0 ] || grep '"test": "pp8"' "$tmp/j" | sed 's/^/# /'
ok "$st" "bench --json: pp8 matrix GFLOPS, the BLIS sgemm reference and the phases"

"$ELMCHAT" bench -m "$tmp/m" -p 8 -n 4 -r 1 -t 1 --json --profile --no-blis --no-bandwidth \
    >"$tmp/jp" 2>&1
st=$?
has "$tmp/jp" tg4 eval_ms matrix_ms attention_ms other_ms matrix_weight_gb_per_second || st=1
grep -q -e '"blis_' -e '"roofline' -e '"machine_' "$tmp/jp" && st=1
ok "$st" "bench --json --profile: tg phases; --no-blis, --no-bandwidth: no reference fields"

"$ELMCHAT" bench -m "$tmp/m" -p 8 -n 4 -r 1 --no-bandwidth >"$tmp/t" 2>&1
st=$?
[ "$(grep -c -e '|  *pp8 |' -e '|  *tg4 |' "$tmp/t")" -eq 2 ] || st=1
grep -q 'roofline' "$tmp/t" && st=1
grep -q '| matrix GFLOPS | BLIS GFLOPS | of BLIS |$' "$tmp/t" || st=1
grep '|  *pp8 |' "$tmp/t" | grep -q '| *[0-9.]* | *[0-9.]* | *[0-9.]* % |$' || st=1
grep -q '^prefill matrix part (pp8): .* GFLOPS .* BLIS sgemm .* M = 8, ' "$tmp/t" || st=1
ok "$st" "bench table: pp8 with matrix and BLIS GFLOPS; --no-bandwidth skips the roofline"

"$ELMCHAT" bench -m "$tmp/m" -p 8 -n 4 -r 1 -t 2 --profile --no-blis >"$tmp/tp" 2>&1
st=$?
grep -q '^read bandwidth, 2 threads, 256 MiB: .* GB/s used (median of 14 passes in 2 probes' \
    "$tmp/tp" || st=1
grep -q '^decode roofline .* t/s (.* over the probe medians); tg4: .* % of it' "$tmp/tp" || st=1
grep -q '^| test    |  matrix ms |      % | attention ms |' "$tmp/tp" || st=1
[ "$(grep -c -e '^|     pp8 |' -e '^|     tg4 |' "$tmp/tp")" -eq 2 ] || st=1
grep -q '^tg4 per run: matrix .* ms (LM head .*); other .* ms = norms' "$tmp/tp" || st=1
# --no-blis: matrix GFLOPS, no BLIS figures
grep '^| m  .*|  *pp8 |' "$tmp/tp" | grep -q '| *[0-9.][0-9.]* | *| *|$' || st=1
ok "$st" "bench --profile table: bandwidth footer with its spread, phases of pp and tg"

# tests/engine/bench-matrix.sh (run by hand on real models): one Markdown row per model and thread count
mkdir "$tmp/models" && ln -s "$tmp/m" "$tmp/models/micro"
sh "${top_srcdir:-.}/tests/engine/bench-matrix.sh" -e "$ELMCHAT" -p 8 -n 4 -r 1 "$tmp/models" >"$tmp/bm" 2>&1
st=$?
[ "$(grep -c '^| micro | f32 | [12] | ' "$tmp/bm")" -eq 2 ] || st=1
grep -q '^| model | type | threads | load | pp8 t/s | tg4 t/s |' "$tmp/bm" || st=1
grep '^| micro | f32 | 2 |' "$tmp/bm" | grep -q ' % ([0-9.]*-[0-9.]*) | ' || st=1
[ "$st" -eq 0 ] || sed 's/^/# /' "$tmp/bm"
ok "$st" "tests/engine/bench-matrix.sh: a Markdown table of the models at 1 and 2 threads"

echo "1..$n"
[ "$failed" -eq 0 ]
