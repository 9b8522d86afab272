# cli-test.sh: what the command-line tests that generate checkpoints share
# (sourced first: . "${top_srcdir:-.}/tests/lib/cli-test.sh"): set -u, TAP
# (tap.sh), $ELMCHAT, $GEN (tests/lib/gen-checkpoint; the whole test skips
# when it was not built) and cli_tmpdir NAME: $tmp, a fresh folder removed
# at exit (after $cli_cleanup, a command the test may set).
set -u
ELMCHAT=${ELMCHAT:-./elmchat-testing}
top_srcdir=${top_srcdir:-.}
. "$top_srcdir/tests/lib/tap.sh"
GEN=${GEN_CHECKPOINT:-$(dirname "$ELMCHAT")/tests/lib/gen-checkpoint}
[ -x "$GEN" ] || { echo "1..0 # SKIP no $GEN"; exit 0; }
cli_cleanup=:

cli_tmpdir() {
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/elmchat-$1.XXXXXX") || exit 1
    trap 'eval "$cli_cleanup"; rm -rf "$tmp"' EXIT
}
