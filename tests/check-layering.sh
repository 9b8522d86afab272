#!/bin/sh
# check-layering.sh: the include rules of DESIGN.md section 1, as a TAP test.
#  - engine/ includes nothing from src/ or ui/, and no curses/readline/yaml;
#  - src/ includes nothing from ui/ (main.c, the program entry, excepted) and
#    only the public engine headers;
#  - only ui/ includes curses or readline.
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
engine_bad() { src_files engine | xargs -r grep -nE '#[[:space:]]*include[[:space:]]*[<"](src|ui)/'; }
engine_term() { src_files engine | xargs -r grep -nE '#[[:space:]]*include[[:space:]]*<(n?cursesw?|ncursesw/[a-z]+|readline/[a-z]+|yaml)\.h>'; }
engine_print() { src_files engine | xargs -r grep -nE '\b(printf|puts|exit|abort)[[:space:]]*\(|\b(stdout|stderr)\b' | grep -v 'snprintf\|vsnprintf'; }
src_ui() { src_files src | grep -v '^src/main.c$' | xargs -r grep -nE '#[[:space:]]*include[[:space:]]*"ui/'; }
src_engine_private() { src_files src | xargs -r grep -nE '#[[:space:]]*include[[:space:]]*"engine/' | grep -vE '"engine/elm(_tokenizer|_worker)?\.h"'; }
nonui_curses() { src_files engine src tests | xargs -r grep -nE '#[[:space:]]*include[[:space:]]*<(n?cursesw?|ncursesw/[a-z]+|readline/[a-z]+)\.h>'; }
check "engine/ includes nothing from src/ or ui/" engine_bad
check "engine/ includes no terminal or YAML headers" engine_term
check "engine/ never prints or exits" engine_print
check "src/ includes nothing from ui/ (main.c excepted)" src_ui
check "src/ uses only the public engine headers" src_engine_private
check "only ui/ includes curses or readline" nonui_curses
echo "1..$n"
exit $fail
