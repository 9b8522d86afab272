#!/bin/sh
# check-homebrew-formula.sh: packaging/homebrew/elmchat.rb against what it
# must match, as a TAP test (the formula itself cannot run here: no Mac):
#  - its run-time depends_on are the libraries configure.ac requires: each
#    PKG_CHECK_MODULES module by its Homebrew name (the table below; a
#    module not in it fails, so a new library cannot be forgotten), plus
#    BLIS (AC_SEARCH_LIBS bli_sgemm), and the kegs configure.ac asks
#    `brew --prefix` for;
#  - all its depends_on are the README's `brew install` line;
#  - it parses (ruby -c), where Ruby is installed.
top=${top_srcdir:-$(dirname "$0")/..}
cd "$top" || exit 1
formula=packaging/homebrew/elmchat.rb
n=0
check() { # description, wanted list, got list
    n=$((n + 1))
    if [ "$2" = "$3" ]; then
        echo "ok $n - $1"
    else
        echo "not ok $n - $1"
        echo "#   wanted: $2"
        echo "#   got:    $3"
    fi
}
words() { tr ' ' '\n' | sed '/^$/d' | sort -u | tr '\n' ' '; }
echo "1..4"

# configure.ac's pkg-config modules, named as Homebrew names their formulae
brew_name() {
    case $1 in
    ncursesw) echo ncurses ;;
    readline) echo readline ;;
    yaml-0.1) echo libyaml ;;
    json-c) echo json-c ;;
    md4c) echo md4c ;;
    libcurl) echo curl ;;
    nettle) echo nettle ;;
    *) echo "UNKNOWN-MODULE:$1" ;;
    esac
}
modules=$(sed -n 's/^PKG_CHECK_MODULES(\[[A-Z0-9_]*\], \[\([^] >]*\).*/\1/p' configure.ac)
wanted=$(for m in $modules; do brew_name "$m"; done
    grep -q 'AC_SEARCH_LIBS(\[bli_sgemm\]' configure.ac && echo blis)
wanted=$(echo $wanted | words)
runtime=$(sed -n 's/^ *depends_on "\([^"]*\)" *$/\1/p' $formula | words)
build=$(sed -n 's/^ *depends_on "\([^"]*\)" => :build *$/\1/p' $formula | words)
check "the formula's dependencies are configure.ac's libraries ($(echo $modules) bli_sgemm)" \
    "$wanted" "$runtime"

kegs=$(sed -n 's/^ *for keg in \(.*\); do$/\1/p' configure.ac)
kegs=$(echo $kegs blis | words)
check "configure.ac asks brew --prefix for each of them" "$runtime" "$kegs"

readme=$(sed -n '/^brew install /,/^[^ ]/p' README.md | tr -d '\\' |
    sed 's/^brew install //' | sed -n '/^ *[a-z]/p' | tr '\n' ' ' | sed 's/autoreconf.*//')
check "the README's brew install line installs the formula's dependencies" \
    "$(echo $runtime $build | words)" "$(echo $readme | words)"

n=$((n + 1))
if command -v ruby >/dev/null 2>&1; then
    if out=$(ruby -c $formula 2>&1); then
        echo "ok $n - ruby -c $formula"
    else
        echo "not ok $n - ruby -c $formula"
        echo "$out" | sed 's/^/#   /'
    fi
else
    echo "ok $n # SKIP no ruby here to parse the formula"
fi
