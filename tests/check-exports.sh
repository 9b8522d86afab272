#!/bin/sh
# check-exports.sh: no file-local function is exported, as a TAP test.
# A function that an object of the libraries of engine/ src/ ui/ cli/
# defines (nm: T) and that no object compiled from another source file
# uses (nm: U; the test programs' objects count) must be static, or go if
# its own file does not use it either.  A name another .c of the tree
# names (a branch this build did not compile, another platform's) is not
# reported.  Reads the build's objects: run after make (make check does).
top_srcdir=${top_srcdir:-$(dirname "$0")/..}
top_srcdir=$(cd "$top_srcdir" && pwd)
. "$top_srcdir/tests/lib/tap.sh"
cd "${builddir:-.}" || exit 1
if ! command -v nm >/dev/null 2>&1 || [ ! -f engine/libelm.a ]; then
    echo "1..0 # SKIP no nm, or the libraries are not built"
    exit 0
fi
# An object's source: DIR/BASE, less a per-target prefix (libelm_a-, tests_x-).
key='function key(o,    d, b, p) { sub(/:.*$/, "", o); d = o; sub(/\/[^\/]*$/, "", d); b = o; sub(/^.*\//, "", b)
                                   sub(/\.o:?$/, "", b); p = b; sub(/-.*$/, "", p)
                                   if (p ~ /_/) sub(/^[^-]*-/, "", b); return d "/" b }'
file_local() {
    libs=$(find engine src ui cli -name 'lib*_a-*.o' | sort)
    objs=$(find engine src ui cli tests -name '*.o' | sort)
    # shellcheck disable=SC2086
    { nm -A --defined-only $libs | awk "$key"' $(NF - 1) == "T" { print "D", $NF, key($1) }'
      nm -A -u $objs | awk "$key"' { print "U", $NF, key($1) }'; } |
        awk '$1 == "U" { used[$2] = used[$2] " " $3 " "; next }
             { def[$2] = $3 }
             END { for (s in def) { u = used[s]; gsub(" " def[s] " ", " ", u)
                                    if (u ~ /^ *$/) print def[s], s } }' |
        sort | while read -r k s; do
            others=$(cd "$top_srcdir" && grep -rlw --include='*.c' "$s" engine src ui cli tests |
                grep -vx "$k.c")
            [ -n "$others" ] && continue
            echo "$k.c: $s is used in no other file: static, or gone if unused"
        done
}
check "every exported function of engine/ src/ ui/ cli/ is used by another file" file_local
echo "1..$n"
[ "$failed" -eq 0 ]
