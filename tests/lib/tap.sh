# tap.sh: TAP for the shell tests, sourced (. "$top_srcdir/tests/lib/tap.sh").
# ok STATUS DESCRIPTION counts one test; end with: echo "1..$n"; [ "$failed" -eq 0 ]
n=0
failed=0
. "${top_srcdir:-${srcdir:-$(dirname "$0")/../..}}/tests/lib/portable.sh"

check() { # check DESCRIPTION COMMAND...: passes when COMMAND lists no violations
    desc=$1; shift
    out=$("$@" 2>/dev/null)
    ok "$([ -z "$out" ]; echo $?)" "$desc"
    [ -z "$out" ] || echo "$out" | sed 's/^/#   /'
}

ok() { # ok STATUS DESCRIPTION: STATUS 0 passes
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $n - $2"
    else
        echo "not ok $n - $2"
        failed=$((failed + 1))
    fi
}

skip() { # skip DESCRIPTION REASON: counts one test, passed as skipped
    n=$((n + 1))
    echo "ok $n - $1 # SKIP $2"
}
