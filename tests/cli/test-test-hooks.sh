#!/bin/sh
# test-test-hooks.sh: the engine's test hooks (tests/lib/test-hooks.c) are
# in the tests' elmchat-testing and not in the shipped elmchat (issue 46):
# ELM_BLIS_CHECK=fail changes bench --kernels of the one only.  The
# worker's hooks, which only the chat reaches: tests/ui/test-ui-test-hooks.sh.
. "${top_srcdir:-.}/tests/lib/cli-test.sh"
SHIPPED=$(dirname "$ELMCHAT")/elmchat
if [ ! -x "$SHIPPED" ] || [ "$SHIPPED" -ef "$ELMCHAT" ]; then
    echo "1..0 # SKIP no shipped elmchat beside $ELMCHAT"
    exit 0
fi
ELM_BLIS_CHECK=fail "$ELMCHAT" bench --kernels >"${TMPDIR:-/tmp}/hooks.$$.t" 2>&1 &&
    ELM_BLIS_CHECK=fail "$SHIPPED" bench --kernels >"${TMPDIR:-/tmp}/hooks.$$.s" 2>&1 &&
    "$SHIPPED" bench --kernels >"${TMPDIR:-/tmp}/hooks.$$.p" 2>&1
ok $? "bench --kernels runs in both"
t="${TMPDIR:-/tmp}/hooks.$$"
grep -q "WRONG in the start check" "$t.t"
ok $? "elmchat-testing: ELM_BLIS_CHECK=fail fails the check of BLIS"
# the same but for the bf16 GEMM's measured speed, which varies run to run
unmeasured() { sed 's/measured at [0-9.]*x/measured/' "$1"; }
[ "$(unmeasured "$t.s")" = "$(unmeasured "$t.p")" ]
ok $? "the shipped elmchat: the same as without the variable"
rm -f "$t.t" "$t.s" "$t.p"
echo "1..$n"
[ "$failed" -eq 0 ]
