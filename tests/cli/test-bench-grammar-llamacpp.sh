#!/bin/sh
# test-bench-grammar-llamacpp.sh: tools/bench-grammar-llamacpp.sh's plumbing
# (TAP), not its speed: elmchat bench --json-schema on a small generated
# model, and a stand-in llama-cli that checks what it is given (the model,
# threads, tokens, greedy, --ignore-eos without a schema, the schema's text
# with --json-schema) and prints llama_perf lines with made-up times; the
# table must hold llama.cpp's t/s as runs / (eval + sampling time), elmchat's
# row and the goals line.
. "${top_srcdir:-.}/tests/lib/cli-test.sh"
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 0; }
cli_tmpdir benchgram
"$GEN" --preset default -o "$tmp/hf" >/dev/null 2>&1 &&
    "$ELMCHAT" quantize "$tmp/hf" "$tmp/m.gguf" --type q8_0 --quiet
ok $? "a generated checkpoint as a Q8_0 GGUF"
schema="$top_srcdir/tests/data/schemas/12-five-fields-enum.json"
cat >"$tmp/llama-cli" <<EOS
#!/bin/sh
# what a run was given, one line each
echo "\$*" | tr "\\n" " " >>"$tmp/calls"; echo >>"$tmp/calls"
schema=no eos=no
while [ \$# -gt 0 ]; do
    case \$1 in
    --json-schema) schema=yes; [ "\$2" = "\$(cat "$schema")" ] || echo "schema text differs" >>"$tmp/bad"; shift ;;
    --ignore-eos) eos=ignored ;;
    esac
    shift
done
echo "llama_perf_sampler_print:    sampling time =  \$([ \$schema = yes ] && echo 300.00 || echo 12.00) ms /    65 runs   (    0.18 ms per token,  5416.67 tokens per second)" >&2
echo "llama_perf_context_print: prompt eval time =      50.00 ms /    30 tokens (    1.67 ms per token,   600.00 tokens per second)" >&2
echo "llama_perf_context_print:        eval time =     500.00 ms /    \$([ \$schema = yes ] && echo 40 || echo 64) runs   (    7.81 ms per token,   128.00 tokens per second)" >&2
[ \$schema = no ] && [ \$eos = no ] && echo "plain run without --ignore-eos" >>"$tmp/bad"
exit 0
EOS
chmod +x "$tmp/llama-cli"
ELMCHAT="$ELMCHAT" "$top_srcdir/tools/bench-grammar-llamacpp.sh" -l "$tmp/llama-cli" -m "$tmp/m.gguf" \
    -n 16 -r 2 -w "$tmp/w" >"$tmp/table" 2>"$tmp/err"
rc=$?
sed 's/^/#   /' "$tmp/table" "$tmp/err"
[ $rc -eq 0 ]
ok $? "the tool runs to the end"
[ "$(wc -l <"$tmp/calls")" -eq 4 ] && [ ! -s "$tmp/bad" 2>/dev/null ] &&
    [ "$(grep -c -- "-m $tmp/m.gguf -t 2 -tb 2 -n 16 --temp 0 " "$tmp/calls")" -eq 4 ]
ok $? "llama-cli: 2 runs each way, the model, 2 threads, 16 tokens, greedy; --ignore-eos unconstrained, the schema's text"
grep -Eq '^\| llama\.cpp \| +125\.0 \| +50\.0 \| 60\.0% \| +64/40 \|' "$tmp/table"
ok $? "llama.cpp's row: 64 runs / 512 ms = 125 t/s, 40 / 800 ms = 50 t/s, cost 60%"
grep -Eq '^\| elmchat +\| +[0-9]+\.[0-9] \| +[0-9]+\.[0-9] \| +-?[0-9]+\.[0-9]% \| +16/[0-9]+ \| +[0-9]+\.[0-9] \| +[0-9]+ \| +[0-9]+ \|' "$tmp/table"
ok $? "elmchat's row: t/s with and without, cost, tokens, grammar us mean/p50/p99"
grep -q "^goals (issue 47): cost under 5%: " "$tmp/table" && grep -q "load average before" "$tmp/err"
ok $? "the goals line, and the load average said"
echo "1..$n"
[ "$failed" -eq 0 ]
