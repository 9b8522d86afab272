#!/bin/sh
# check-docs.sh: the maps are true to the tree, as a TAP test.
#  - every path docs/DESIGN.md and HACKING.md name in backquotes exists
#    (`src/chat/chat_base.c`, `engine/worker/`; in a table row's first cell
#    a bare name after a path is beside it: `ui/tui.c`, `tui.h`; a path
#    that starts with an engine sub-folder, `worker/loader.c`, is in engine/);
#  - a bare source name (`sp_model.c`) is some file's name;
#    A path the build makes (a library, a test program, tests/.cache) counts
#    when Makefile.am or a local.mk names it.  In an unpacked tarball (no
#    .git), tools/ and .ci/ (the developers', not shipped) are not checked;
#  - every .c and .h of engine/ src/ ui/ cli/ has a row in HACKING.md;
#  - every environment variable the program reads (getenv of a literal, or
#    of a macro defined as one, in engine/ src/ ui/ cli/) is in a man page or
#    the README, but the system's own; a test-only one is read by
#    tests/lib/test-hooks.c or ui-test-hooks.c, never by the program.
# A name with a wildcard or a placeholder (*, NAME, ID, <...>) is not a path.
top=${top_srcdir:-$(dirname "$0")/..}
cd "$top" || exit 1
top_srcdir=$(pwd)
. "$top_srcdir/tests/lib/tap.sh"
tops='engine|src|ui|cli|tests|docs|man|tools|models|prompts|\.ci|m4'
engine_subs='base|formats|tokenizer|kernels|model|inference|remote|worker|bench'
# The paths a document names, one "LINE PATH" a line.
named() {
    awk -v tops="^($tops)/" -v subs="^($engine_subs)/" '
        function keep(p) {
            sub(/:[0-9]+(-[0-9]+)?$/, "", p)      # file:line
            if (p ~ /[*?<>{}$~[:space:]]|\.\.\./) return ""
            q = p; gsub(/README|HACKING|LICENSE|DESIGN|STYLE|OPENELM/, "", q)
            if (q ~ /(^|[\/_-])[A-Z][A-Z]+([\/._-]|$)/) return ""   # FOLDER, NAME, ID

            return p
        }
        {
            line = $0; n = split(line, part, "`")
            dir = ""
            first_cell = (line ~ /^\|/) ? substr(line, 2, index(substr(line, 2), "|") - 1) : ""
            for (i = 2; i <= n; i += 2) {
                p = part[i]
                if (p ~ tops) {
                    p = keep(p)
                    if (p != "") print NR, p
                    if (first_cell != "" && index(first_cell, "`" part[i] "`")) {
                        dir = part[i]; sub(/[^\/]*$/, "", dir)
                        stem = part[i]; sub(/\.[a-z]+$/, "", stem)
                    }
                } else if (dir != "" && p ~ /^[a-z0-9_.-]+\.[a-z]+$/ && index(first_cell, "`" p "`")) {
                    print NR, dir p                # beside the path before it
                } else if (dir != "" && p ~ /^\.[a-z]+$/ && index(first_cell, "`" p "`")) {
                    print NR, stem p               # `x.c`, `.h`: x.h
                } else if (p ~ subs) {
                    p = keep(p)
                    if (p != "") print NR, "engine/" p
                } else if (p ~ /^[a-z0-9_-]+\.(c|h|sh|mk)$/) {
                    print NR, "*/" p               # a bare name: some file of the tree
                }
            }
        }' "$1"
}
makefiles=$(find . -name local.mk -not -path './autom4te.cache/*' | sort; echo Makefile.am)
built() {  # path: a file the build makes
    p=${1%/}
    # shellcheck disable=SC2086
    grep -qE "(^|[[:space:]=])$(echo "$p" | sed 's/[.]/[.]/g')(/|[[:space:]]|\$|$)" $makefiles
}
missing() {  # doc: the named paths that are not in the tree
    named "$1" | while read -r line p; do
        [ -e .git ] || case $p in tools/* | .ci/*) continue ;; esac
        case $p in
        '*/'*) [ -n "$(find engine src ui cli tests tools -name "${p#*/}" 2>/dev/null | head -n 1)" ] ||
            echo "$1:$line: ${p#*/}: no file of that name" ;;
        *) [ -e "$p" ] || built "$p" || echo "$1:$line: $p" ;;
        esac
    done
}
unlisted() {  # the sources without a row in HACKING.md
    rows=$(named HACKING.md | awk '$2 !~ /^[*]/ {print $2}' | sort -u)
    find engine src ui cli -name '*.[ch]' | sort | while read -r f; do
        echo "$rows" | grep -qx "$f" || echo "$f: no row in HACKING.md"
    done
}
# The system's own variables, not the program's to document.
system_vars=' HOME PATH TERM TMUX TMPDIR '
env_read() {  # the names passed to getenv, one "FILE NAME" a line
    grep -rnoE 'getenv\(("[A-Za-z0-9_]+"|[A-Z][A-Z0-9_]*\))' engine src ui cli --include='*.[ch]' |
        while IFS=: read -r f _ call; do
            arg=${call#getenv(}; arg=${arg%)}
            case $arg in
            \"*) name=${arg#\"}; name=${name%\"} ;;
            *) name=$(grep -rhoE "#define[[:space:]]+$arg[[:space:]]+\"[A-Za-z0-9_]+\"" engine src ui cli |
                sed 's/.*"\(.*\)"/\1/' | head -n 1)
               [ -n "$name" ] || name="$arg (a macro not defined as a literal)" ;;
            esac
            echo "$f $name"
        done
}
undocumented_env() {
    env_read | while read -r f name; do
        case "$system_vars" in *" $name "*) continue ;; esac
        grep -qw -- "$name" man/*.1 man/*.5 README.md || echo "$f: \$$name: in no man page nor the README"
    done
}
check "every path docs/DESIGN.md names exists" missing docs/DESIGN.md
check "every path HACKING.md names exists" missing HACKING.md
check "every .c and .h of engine/ src/ ui/ cli/ has a row in HACKING.md" unlisted
check "every environment variable the program reads is documented" undocumented_env
echo "1..$n"
[ "$failed" -eq 0 ]
