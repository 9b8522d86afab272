#!/bin/sh
# check-configure-blis.sh: configure takes upstream BLIS's layout,
# include/blis/blis.h (Debian has blis.h on the default path), as a TAP
# test.  A fake install tree whose include/blis/blis.h is a copy of the
# system's blis.h; configure told that blis.h is not on the default path
# (ac_cv_header_blis_h=no, as on a system without Debian's package), once
# with CPPFLAGS=-I<tree>/include and once with --prefix=<tree>: each time
# configure must succeed and its CPPFLAGS must make <blis.h> the tree's.
# The second run reuses the first's cache (config.cache, without the
# record of CPPFLAGS, which differs on purpose), so it takes seconds.
top=${top_srcdir:-$(dirname "$0")/..}
top=$(cd "$top" && pwd) || exit 1
cc=${CC:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/elm-blis.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "1..4"
# the system's blis.h: the first header the preprocessor reads for it
real=$(printf '#include <blis.h>\n' | $cc -E -x c - 2>/dev/null |
    sed -n 's/^# [0-9]* "\([^"]*blis\.h\)".*/\1/p' | head -n 1)
if [ -z "$real" ] || [ ! -f "$real" ]; then
    echo "Bail out! no blis.h on this system to copy"
    exit 1
fi
# configure refuses a second build folder for a source folder configured in
# place (the README's build): then run a copy of what configure reads.
src=$top
if [ -f "$top/config.status" ]; then
    src=$tmp/src
    mkdir -p "$src/cli" && cp "$top/configure" "$top/Makefile.in" "$top/config.h.in" "$src/" &&
        cp "$top/cli/main.c" "$src/cli/" && cp -R "$top/build-aux" "$src/" || exit 1
fi
mkdir -p "$tmp/tree/include/blis"
cp "$real" "$tmp/tree/include/blis/blis.h"
n=0
case_() { # description, then configure's extra arguments
    desc=$1; shift
    mkdir "$tmp/b$n" && cd "$tmp/b$n" || exit 1
    [ -f "$tmp/config.cache" ] && sed '/^ac_cv_env_/d' "$tmp/config.cache" >config.cache
    if "$src/configure" -C ac_cv_header_blis_h=no "$@" >out.txt 2>&1; then
        echo "ok $((n * 2 + 1)) - $desc: configure succeeds"
    else
        echo "not ok $((n * 2 + 1)) - $desc: configure succeeds"
        tail -n 5 out.txt | sed 's/^/#   /'
    fi
    flags=$(sed -n 's/^CPPFLAGS = //p' Makefile 2>/dev/null)
    # shellcheck disable=SC2086 # the flags are words
    got=$(printf '#include <blis.h>\n' | $cc $flags -E -x c - 2>/dev/null |
        sed -n 's/^# [0-9]* "\([^"]*blis\.h\)".*/\1/p' | head -n 1)
    if [ "$got" = "$tmp/tree/include/blis/blis.h" ]; then
        echo "ok $((n * 2 + 2)) - $desc: <blis.h> is the tree's include/blis/blis.h"
    else
        echo "not ok $((n * 2 + 2)) - $desc: <blis.h> is the tree's include/blis/blis.h"
        echo "#   CPPFLAGS: $flags; <blis.h>: $got"
    fi
    [ -f "$tmp/config.cache" ] || cp config.cache "$tmp/config.cache" 2>/dev/null
    cd "$tmp" || exit 1
    n=$((n + 1))
}
case_ "CPPFLAGS=-I<tree>/include" CPPFLAGS="-I$tmp/tree/include"
case_ "--prefix=<tree>" --prefix="$tmp/tree"
