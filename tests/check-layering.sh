#!/bin/sh
# check-layering.sh: the include rules of docs/DESIGN.md (§1 "Layers"), as a TAP test.
# Layers, top to bottom:  cli/ -> ui/ -> src/ -> engine/.
#  - nothing includes a layer above its own;
#  - above the engine, only its public headers (engine/elm*.h) are included;
#  - only ui/ includes curses or readline; the engine no YAML either, and it
#    never prints or exits;
#  - only ui/ and cli/ touch the terminal: nothing in src/ uses the standard
#    streams (but src/base/diag.c, the one error format), asks isatty or
#    writes an escape sequence;
#  - inside src/, the folders are layers too, bottom to top:
#    base store models template config conversation chat;
#    a folder includes only its own and lower ones, and every file is in one;
#  - no include circles between files.
top=${top_srcdir:-$(dirname "$0")/..}
cd "$top" || exit 1
n=0
fail=0
check() {  # description, then a command whose output lists violations
    desc=$1; shift
    n=$((n + 1))
    out=$("$@" 2>/dev/null)
    if [ -z "$out" ]; then
        echo "ok $n - $desc"
    else
        echo "not ok $n - $desc"
        echo "$out" | sed 's/^/#   /'
        fail=1
    fi
}
src_files() { find "$@" -name '*.[ch]' 2>/dev/null | sort; }
includes() { # files, then an extended regex of included paths
    dirs=$1; pat=$2
    src_files $dirs | xargs -r grep -nE "#[[:space:]]*include[[:space:]]*\"($pat)"
}
engine_up() { includes engine '(src|ui|cli)/'; }
src_up() { includes src '(ui|cli)/'; }
ui_up() { includes ui 'cli/'; }
private_engine() {
    src_files src ui cli | xargs -r grep -nE '#[[:space:]]*include[[:space:]]*"engine/' |
        grep -vE '"engine/elm[a-z_]*\.h"'
}
src_levels="base store models template config conversation chat"
src_level() { i=0; for l in $src_levels; do [ "$l" = "$1" ] && { echo $i; return; }; i=$((i + 1)); done; echo 99; }
src_folder_up() {
    src_files src | while read -r f; do
        from=$(echo "$f" | cut -d/ -f2)
        lf=$(src_level "$from")
        grep -noE '#[[:space:]]*include[[:space:]]*"src/[a-z_]+/' "$f" | while IFS=: read -r line inc; do
            to=$(echo "$inc" | sed -E 's|.*"src/([a-z_]+)/|\1|')
            [ "$(src_level "$to")" -gt "$lf" ] && echo "$f:$line: $from/ includes $to/"
        done
    done
}
src_unfiled() {
    src_files src | while read -r f; do
        [ "$(src_level "$(echo "$f" | cut -d/ -f2)")" = 99 ] && echo "$f: not in a folder of src/ ($src_levels)"
    done
}
engine_term() { src_files engine | xargs -r grep -nE '#[[:space:]]*include[[:space:]]*<(n?cursesw?|ncursesw/[a-z]+|readline/[a-z]+|yaml)\.h>'; }
engine_print() { src_files engine | xargs -r grep -nE '\b(printf|puts|exit|abort)[[:space:]]*\(|\b(stdout|stderr)\b' | grep -v 'snprintf\|vsnprintf'; }
src_term_io() {
    src_files src | grep -vE '^src/base/diag\.[ch]$' | xargs -r grep -nE \
        '\b(stdin|stdout|stderr)\b|\b(printf|puts|putchar|getchar|perror|isatty|ttyname)[[:space:]]*\(|STD(IN|OUT|ERR)_FILENO|/dev/tty|\\(033|x1b|e)\['
}
nonui_curses() { src_files engine src cli tests | xargs -r grep -nE '#[[:space:]]*include[[:space:]]*<(n?cursesw?|ncursesw/[a-z]+|readline/[a-z]+)\.h>'; }
# Include circles: a unit is a .c with its own .h; an edge A -> B when A's
# .c or .h includes B's header.  Prints every unit that reaches itself.
circles() {
    src_files engine src ui cli | while read -r f; do
        unit=${f%.[ch]}
        grep -hoE '#[[:space:]]*include[[:space:]]*"(engine|src|ui|cli)/[^"]+\.h"' "$f" |
            sed -E 's/.*"(.*)\.h"/\1/' | while read -r dep; do
                [ "$dep" != "$unit" ] && echo "$unit $dep"
            done
    done | sort -u | awk '
        { edge[$1] = edge[$1] " " $2; nodes[$1] = 1; nodes[$2] = 1 }
        function reach(from, to, seen,    k, i, list, n) {
            n = split(edge[from], list, " ")
            for (i = 1; i <= n; i++) {
                k = list[i]
                if (k == to) return 1
                if (!(k in seen)) { seen[k] = 1; if (reach(k, to, seen)) return 1 }
            }
            return 0
        }
        END { for (u in nodes) { delete s; if (reach(u, u, s)) print u " includes itself through others" } }' | sort
}
check "engine/ includes nothing from src/, ui/ or cli/" engine_up
check "src/ includes nothing from ui/ or cli/" src_up
check "ui/ includes nothing from cli/" ui_up
check "src/'s folders include only their own and lower ones" src_folder_up
check "every file of src/ is in one of its folders" src_unfiled
check "above the engine, only its public headers (engine/elm*.h)" private_engine
check "engine/ includes no terminal or YAML headers" engine_term
check "engine/ never prints or exits" engine_print
check "only ui/ includes curses or readline" nonui_curses
check "src/ neither reads nor writes the terminal (but diag.c's error format)" src_term_io
check "no include circles" circles
echo "1..$n"
exit $fail
