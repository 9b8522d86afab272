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
#  - inside engine/, a sub-folder includes only those on a lower floor
#    (docs/DESIGN.md, "engine/ inside");
#  - no circles between files: of includes anywhere, and inside each layer
#    also of calls (a .c calls a function that another .c alone defines),
#    since files that share one internal header call each other unseen by it;
#  - no function in src/ or ui/ over 150 lines (a body runs from a "{" to
#    a "}" at the start of a line, the tree's style: docs/STYLE.md B.7).
top=${top_srcdir:-$(dirname "$0")/..}
cd "$top" || exit 1
top_srcdir=$(pwd)
. "$top_srcdir/tests/lib/tap.sh"
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
        '\b(stdin|stdout|stderr)\b|\b(printf|puts|putchar|getchar|perror|isatty|ttyname)[[:space:]]*\(|STD(IN|OUT|ERR)_FILENO|/dev/tty|\\(033|x1b|e)\[' |
        # comments, and a child's own streams set up (dup2: chat_shell.c) are not the terminal
        grep -vE '^[^:]+:[0-9]+:[[:space:]]*(\*|/\*|//)' | grep -vE 'dup2[[:space:]]*\('
}
nonui_curses() { src_files engine src cli tests | xargs -r grep -nE '#[[:space:]]*include[[:space:]]*<(n?cursesw?|ncursesw/[a-z]+|readline/[a-z]+)\.h>'; }
# engine/'s sub-folders, bottom floor first; one floor may hold several
# (none of them includes another of its floor).
ENGINE_FLOORS='base kernels formats tokenizer grammar model inference|remote worker|bench'
engine_up_floor() {
    src_files $(echo "$ENGINE_FLOORS" | tr ' |' '\n\n' | sed 's#^#engine/#') |
        xargs -r grep -HnoE '#[[:space:]]*include[[:space:]]*"engine/[a-z_]+/' |
        sed -E 's#^engine/([a-z_]+)/([^:]*):([0-9]+):.*"engine/([a-z_]+)/$#\1 \4 engine/\1/\2:\3#' |
        awk -v floors="$ENGINE_FLOORS" '
            BEGIN { n = split(floors, f, " "); for (i = 1; i <= n; i++) {
                    m = split(f[i], g, "|"); for (j = 1; j <= m; j++) floor[g[j]] = i } }
            $1 != $2 && (!($2 in floor) || !($1 in floor) || floor[$2] >= floor[$1]) {
                print $3 ": " $1 "/ includes " $2 "/ (not on a lower floor)" }'
}
# Edges "A B" where file A includes file B; with "units", a .c and its own
# .h are one node (named without the suffix).
include_edges() {
    how=$1; shift
    src_files "$@" | xargs -r grep -HoE '#[[:space:]]*include[[:space:]]*"(engine|src|ui|cli)/[^"]+\.h"' |
        sed -E 's/^([^:]*):.*"(.*)"$/\1 \2/' |
        if [ "$how" = units ]; then
            sed -E 's/\.[ch] / /; s/\.h$//' | awk '$1 != $2'
        else
            cat
        fi
}
# Edges "A.c B.c" where A names a function that B alone defines (not static); comments are left out.
call_edges() {
    src_files "$@" | grep '\.c$' | xargs -r awk '
        FNR == 1 { unit = FILENAME; inc = 0 }
        { line = $0; code = ""
          while (line != "") {  # the line without its comments
              if (inc) { e = index(line, "*/"); if (!e) break; line = substr(line, e + 2); inc = 0; continue }
              s = index(line, "/*"); d = index(line, "//")
              if (d && (!s || d < s)) { code = code substr(line, 1, d - 1); break }
              if (!s) { code = code line; break }
              code = code substr(line, 1, s - 1) " "; line = substr(line, s + 2); inc = 1 }
          # a definition: at column 0, not static, a name then "(", no ";"
          if (code ~ /^[A-Za-z_]/ && code !~ /(^|[^A-Za-z0-9_])(static|typedef|extern)([^A-Za-z0-9_]|$)/ &&
              code !~ /;[ \t]*$/ && match(code, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/)) {
              pre = substr(code, 1, RSTART - 1)
              if (pre ~ /[A-Za-z_][A-Za-z0-9_ \t\*]*[ \t\*]$/ && pre !~ /[=(]/) {
                  name = substr(code, RSTART, RLENGTH); sub(/[ \t]*\($/, "", name)
                  if (name != "main") { ndef[name]++; def[name] = unit } } }
          while (match(code, /[A-Za-z_][A-Za-z0-9_]*/)) {
              used[unit " " substr(code, RSTART, RLENGTH)] = 1
              code = substr(code, RSTART + RLENGTH) } }
        END { for (k in used) { split(k, p, " ")
                  if (ndef[p[2]] == 1 && def[p[2]] != p[1]) print p[1], def[p[2]] } }'
}
# Prints every node that reaches itself through the edges on stdin.
circles_of() {
    sort -u | awk '
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
        END { for (u in nodes) { delete s; if (reach(u, u, s)) print u " reaches itself through others" } }' | sort
}
include_circles() { include_edges units engine src ui cli | circles_of; }
# Files (a header is a node of its own here: a .c that includes it calls
# into its .c, if at all, by an edge of calls), one layer at a time (a
# layer calls the one below through its headers, and up only through
# callbacks).  A program's main is called by no file.
call_circles() { { include_edges files "$1"; call_edges "$1"; } | circles_of; }
# Functions of src/ and ui/ over 150 lines, signature to closing brace.
long_functions() {
    src_files src ui | grep '\.c$' | while read -r f; do
        awk -v F="$f" '/^[A-Za-z_].*\(/ { sig = NR; name = $0 }
            /^\{/ { open = 1 }
            /^\}/ { if (open && NR - sig + 1 > 150) {
                         sub(/\(.*/, "", name); print F ":" sig ": " name " is " NR - sig + 1 " lines" }
                     open = 0 }' "$f"
    done
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
check "engine/: a sub-folder includes only lower floors ($ENGINE_FLOORS)" engine_up_floor
check "no include circles" include_circles
check "no function in src/ or ui/ over 150 lines" long_functions
for layer in engine src ui cli; do
    check "$layer/: no circles of includes or calls" call_circles $layer
done
echo "1..$n"
[ "$failed" -eq 0 ]
