#!/bin/sh
# bench-grammar-llamacpp.sh: issue 47's speed goal side by side: decode
# tokens/s with and without a JSON schema, in elmchat (`elmchat bench
# --json-schema`) and in llama.cpp (its own CLI, its own schema converter and
# timing), on the same GGUF, the same threads, the same prompt and the same
# number of tokens asked for; then elmchat's grammar time per token.
#
#   tools/bench-grammar-llamacpp.sh -l LLAMA_CLI [-m GGUF] [-s SCHEMA]
#                                   [-n TOKENS] [-t THREADS] [-r REPS] [-w DIR]
#
#   -l LLAMA_CLI  llama.cpp's llama-cli (examples/main in the vendored
#                 c392e509: it takes --json-schema and --grammar and prints
#                 llama_perf's timings).  Build it CPU-only, e.g.:
#                   tar xJf llama.cpp-c392e509.tar.xz -C /work/llama-native/src
#                   cmake -S src -B build -DCMAKE_BUILD_TYPE=Release \
#                     -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF
#                   cmake --build build -j2 --target llama-cli
#   -m GGUF       default: a random-weight model of OpenELM-270M's shape at
#                 Q8_0, made once in DIR (tests/lib/gen-checkpoint --preset
#                 270m, then elmchat quantize --type q8_0)
#   -s SCHEMA     default tests/data/schemas/12-five-fields-enum.json (an
#                 object of 5 typed fields and an enum)
#   -n TOKENS     tokens asked for per reply (default 128)
#   -t THREADS    default 2;  -r REPS: runs per engine and mode (default 3)
#   -w DIR        where the model and the logs go (default
#                 ${TMPDIR:-/tmp}/elmchat-bench-grammar)
#   ELMCHAT, GEN_CHECKPOINT: the binaries (default ./elmchat,
#                 ./tests/lib/gen-checkpoint: run it from a built tree)
#
# Both engines decode greedily (llama.cpp: --temp 0, its default chain;
# elmchat: bench's "greedy" row).  Unconstrained replies ignore EOS, so they
# are TOKENS long; constrained ones end where the value is complete (EOS is
# allowed only there), so the table gives each engine's token count.
# llama.cpp's t/s counts the sampling (where its grammar works) with the
# decode: runs / (eval time + sampling time), as elmchat's bench does.
# Numbers mean something only on a quiet machine: the load average is printed.
# (llama.cpp built with OpenMP spins its threads at each step: on a loaded
# 2-core machine its decode collapsed to 737 ms a token at load 11 to 15,
# against ~50 ms for elmchat's; such a run says only that the script works.)
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
ELMCHAT=${ELMCHAT:-./elmchat}
GEN=${GEN_CHECKPOINT:-./tests/lib/gen-checkpoint}
llama_cli= gguf= schema=$here/tests/data/schemas/12-five-fields-enum.json
n=128 threads=2 reps=3 work=${TMPDIR:-/tmp}/elmchat-bench-grammar
usage() {
    sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}
while getopts l:m:s:n:t:r:w:h opt; do
    case $opt in
    l) llama_cli=$OPTARG ;;
    m) gguf=$OPTARG ;;
    s) schema=$OPTARG ;;
    n) n=$OPTARG ;;
    t) threads=$OPTARG ;;
    r) reps=$OPTARG ;;
    w) work=$OPTARG ;;
    *) usage ;;
    esac
done
die() {
    echo "bench-grammar-llamacpp: $*" >&2
    exit 1
}
[ -n "$llama_cli" ] || usage
[ -x "$llama_cli" ] || die "$llama_cli: not an executable (llama-cli)"
[ -x "$ELMCHAT" ] || die "$ELMCHAT: not built (set ELMCHAT=)"
[ -f "$schema" ] || die "$schema: no such schema file"
command -v python3 >/dev/null 2>&1 || die "python3 is needed for the table"
mkdir -p "$work" || exit 1

if [ -z "$gguf" ]; then
    gguf=$work/openelm-270m-shape-q8_0.gguf
    if [ ! -s "$gguf" ]; then
        [ -x "$GEN" ] || die "$GEN: not built (set GEN_CHECKPOINT=, or give -m GGUF)"
        echo "making $gguf (random weights, OpenELM-270M's shape, Q8_0; once)" >&2
        "$GEN" --preset 270m --synthetic-tokenizer -o "$work/270m-hf" >/dev/null &&
            "$ELMCHAT" quantize "$work/270m-hf" "$work/making.gguf" --type q8_0 --quiet &&
            mv "$work/making.gguf" "$gguf" || die "could not make $gguf"
        rm -rf "$work/270m-hf"
    fi
fi
[ -s "$gguf" ] || die "$gguf: no such model file"

# elmchat bench's prompt, so both engines decode after the same text
prompt='Answer in JSON: describe a user with a name, an age, a score, whether they are active, a note and their kind of pet.'

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)" >&2
echo "elmchat bench ($reps runs each way)..." >&2
"$ELMCHAT" bench -m "$gguf" -p 0 -n "$n" -r "$reps" -t "$threads" --no-bandwidth \
    --json-schema "$schema" --json >"$work/elmchat.jsonl" 2>"$work/elmchat.err" ||
    die "elmchat bench failed: $(tail -n 3 "$work/elmchat.err")"

# llama-cli once per run; its perf lines go to stderr
llama_run() {  # NAME ARGS...: $work/NAME.N.log for N in 1..reps
    name=$1
    shift
    i=1
    while [ "$i" -le "$reps" ]; do
        "$llama_cli" -m "$gguf" -t "$threads" -tb "$threads" -n "$n" --temp 0 -s 1 -c 1024 \
            -no-cnv --no-display-prompt -p "$prompt" "$@" \
            >"$work/$name.$i.out" 2>"$work/$name.$i.log" </dev/null ||
            die "llama-cli failed ($name): $(tail -n 3 "$work/$name.$i.log")"
        i=$((i + 1))
    done
}
echo "llama.cpp, unconstrained ($reps runs)..." >&2
llama_run plain --ignore-eos
echo "llama.cpp, --json-schema ($reps runs)..." >&2
llama_run schema --json-schema "$(cat "$schema")"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)" >&2

python3 - "$work" "$reps" "$n" "$threads" "$gguf" "$schema" <<'EOP'
import json, os, re, statistics, sys

work, reps, n, threads, gguf, schema = sys.argv[1:7]
reps = int(reps)

def llama(name):
    """Median tokens/s over the runs: runs / (eval + sampling time)."""
    tps, toks, samp = [], [], []
    for i in range(1, reps + 1):
        text = open(os.path.join(work, '%s.%d.log' % (name, i)), errors='replace').read()
        ev = re.search(r'(?<!prompt )eval time =\s*([\d.]+) ms /\s*(\d+) runs', text)
        sm = re.search(r'sampling time =\s*([\d.]+) ms /\s*(\d+) runs', text)
        if not ev or not sm:
            sys.exit('no llama_perf timings in %s.%d.log' % (name, i))
        ms = float(ev.group(1)) + float(sm.group(1))
        runs = int(ev.group(2))
        tps.append(runs / ms * 1000 if ms > 0 else 0)
        toks.append(runs)
        samp.append(float(sm.group(1)) * 1000 / max(int(sm.group(2)), 1))
    return statistics.median(tps), statistics.median(toks), statistics.median(samp)

rows = [json.loads(l) for l in open(os.path.join(work, 'elmchat.jsonl')) if l.startswith('{')]
g = [r for r in rows if r.get('test') == 'grammar' and r.get('sampling') == 'greedy']
if not g:
    sys.exit('elmchat bench gave no greedy grammar row')
g = g[0]
lp_tps, lp_tok, lp_samp = llama('plain')
ls_tps, ls_tok, ls_samp = llama('schema')

def cost(a, b):
    return (1 - b / a) * 100 if a > 0 else float('nan')

print('model %s, schema %s, %s threads, %s tokens asked, median of %d runs'
      % (os.path.basename(gguf), os.path.basename(schema), threads, n, reps))
print()
print('| engine    | plain t/s | schema t/s |  cost | tokens plain/schema | grammar us/token mean | p50 | p99 |')
print('| --------- | --------: | ---------: | ----: | ------------------: | --------------------: | --: | --: |')
print('| elmchat   | %9.1f | %10.1f | %4.1f%% | %19s | %21.1f | %3.0f | %3.0f |'
      % (g['plain_tps'], g['grammar_tps'], cost(g['plain_tps'], g['grammar_tps']),
         '%s/%.0f' % (n, g['tokens'] / reps), g['grammar_us_mean'], g['grammar_us_p50'], g['grammar_us_p99']))
print('| llama.cpp | %9.1f | %10.1f | %4.1f%% | %19s | %21s | %3s | %3s |'
      % (lp_tps, ls_tps, cost(lp_tps, ls_tps), '%d/%d' % (lp_tok, ls_tok),
         'sampling %.0f (plain %.0f)' % (ls_samp, lp_samp), '', ''))
print()
print('elmchat: %d single-id checks, %d full masks (%d trie walks), %d tokens drawn among few '
      'allowed ids (LM head of their rows only); the value complete in %d of %d replies'
      % (g['checks'], g['masks'], g['walks'], g.get('few', 0), g.get('complete', 0), reps))
print('llama.cpp: its sampling time per token (us) in the grammar column; tokens: eval runs')
ratio = g['grammar_tps'] / ls_tps if ls_tps > 0 else float('nan')
print('goals (issue 47): cost under 5%%: %.1f%%; p99 under 1 ms: %.0f us; '
      'constrained elmchat / llama.cpp at least 2x: %.2fx'
      % (cost(g['plain_tps'], g['grammar_tps']), g['grammar_us_p99'], ratio))
EOP
