#!/bin/sh
# test-spec-project.sh: tools/spec-project.py's arithmetic on made-up
# measurements (TAP): an acceptance of 1/2 at each depth and a verify curve
# give E(k) = 2 - 2^-k tokens a pass at k r + v(k) steps.
set -u
top_srcdir=${top_srcdir:-.}
. "$top_srcdir/tests/lib/tap.sh"
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 0; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/elmchat-specproj.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
tool="python3 $top_srcdir/tools/spec-project.py"
cat >"$tmp/spec" <<'J'
{"prompt": 1, "text": "x", "tokens": 10}
{"total": true, "prompts": 3, "reached": [400, 200, 100, 0], "kept": [200, 100, 50, 0]}
J
cat >"$tmp/verify" <<'J'
{"test": "verify", "k": 0, "ms": 10.0, "of_one_step": 1.0}
{"test": "verify", "k": 1, "ms": 11.0, "of_one_step": 1.1}
{"test": "verify", "k": 2, "ms": 13.0, "of_one_step": 1.3}
{"test": "verify", "k": 3, "ms": 15.0, "of_one_step": 1.5}
J
$tool --spec "$tmp/spec" --verify "$tmp/verify" --draft-ms 1 --json >"$tmp/out" 2>&1
ok $? "spec-project.py exits 0"
sed 's/^/#   /' "$tmp/out"
# k 1: 1.5 / (0.1 + 1.1) = 1.25; k 2: 1.75 / 1.5 = 1.1667; k 3: 1.875 / 1.8 = 1.0417;
# depth 4 has no passes: no k 4
python3 - "$tmp/out" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
want = [(1, 1.5, 1.2, 1.25), (2, 1.75, 1.5, 1.75 / 1.5), (3, 1.875, 1.8, 1.875 / 1.8)]
got = [(x["k"], x["tokens_per_pass"], x["cost_steps"], x["speedup"]) for x in d["rows"]]
ok = len(got) == 3 and all(g[0] == w[0] and all(abs(a - b) < 1e-9 for a, b in zip(g[1:], w[1:]))
                           for g, w in zip(got, want))
sys.exit(0 if ok and d["best"]["k"] == 1 and abs(d["r"] - 0.1) < 1e-12 else 1)
P
ok $? "E(k), C(k) and S(k) for k = 1..3, the best k = 1, r = 0.1; no k past the measured depths"
printf '{"prompt": 1}\n' >"$tmp/bad"
$tool --spec "$tmp/bad" --verify "$tmp/verify" --draft-ms 1 >"$tmp/out" 2>&1
[ $? -ne 0 ] && grep -q "bad: no total line" "$tmp/out"
ok $? "a spec file without its total line: an error naming it ($(cat "$tmp/out"))"
echo "1..$n"
[ "$failed" -eq 0 ]
