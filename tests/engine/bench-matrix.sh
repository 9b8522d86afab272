#!/bin/sh
# bench-matrix.sh: `elmchat bench` for every model in one or more folders at
# 1 and 2 threads (issue 9's table), as one Markdown table.  Not part of
# `make check`: it takes minutes; run it on a quiet machine.
#
#   tests/engine/bench-matrix.sh [-e ELMCHAT] [-t "1 2"] [-p 512] [-n 128] [-r 3]
#                         [-j FILE] DIR...
#
# A model is a folder holding config.json, or a .gguf file, directly in DIR.
# -j FILE keeps the raw JSON lines of every run.  The load column is the
# 1-minute load average before the run (a shared machine skews the numbers).
set -u

elmchat=${ELMCHAT:-}
threads="1 2"
pp=512
tg=128
reps=3
json=
usage() {
    echo "usage: $0 [-e ELMCHAT] [-t \"1 2\"] [-p N] [-n N] [-r N] [-j FILE] DIR..." >&2
    exit 2
}
while getopts e:t:p:n:r:j:h opt; do
    case $opt in
    e) elmchat=$OPTARG ;;
    t) threads=$OPTARG ;;
    p) pp=$OPTARG ;;
    n) tg=$OPTARG ;;
    r) reps=$OPTARG ;;
    j) json=$OPTARG ;;
    *) usage ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || usage
if [ -z "$elmchat" ]; then
    if [ -x ./elmchat ]; then elmchat=./elmchat; else elmchat=elmchat; fi
fi
[ -z "$json" ] || : >"$json" || exit 1

tmp=$(mktemp "${TMPDIR:-/tmp}/bench-matrix.XXXXXX") || exit 1
trap 'rm -f "$tmp"' EXIT

# field KEY: the value of "KEY" in the JSON line on stdin (numbers, strings
# without quotes or commas), empty when absent.
field() {
    sed -n "s/.*\"$1\": \"\{0,1\}\([^,\"}]*\).*/\1/p"
}

echo "| model | type | threads | load | pp$pp t/s | tg$tg t/s | GB/s | of bw (range) | bw GB/s (probes) | matrix GFLOPS | BLIS GFLOPS | of BLIS | CPU pp / BLIS |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for dir in "$@"; do
    for m in "$dir"/*; do
        [ -f "$m/config.json" ] || case $m in *.gguf) [ -f "$m" ] ;; *) false ;; esac || continue
        name=$(basename "$m")
        for t in $threads; do
            load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')
            if ! "$elmchat" bench -m "$m" -t "$t" -p "$pp" -n "$tg" -r "$reps" --json >"$tmp" 2>&1; then
                echo "| $name | | $t | $load | error: $(tr '\n|' '  ' <"$tmp" | cut -c1-80) | | | | | | | | |"
                continue
            fi
            [ -z "$json" ] || cat "$tmp" >>"$json"
            p=$(grep "\"test\": \"pp$pp\"" "$tmp")
            g=$(grep "\"test\": \"tg$tg\"" "$tmp")
            f() { # f LINE KEY [SCALE] [DECIMALS]: a field, scaled and rounded
                v=$(printf '%s\n' "$1" | field "$2")
                [ -n "$v" ] || return 0
                awk -v v="$v" -v s="${3:-1}" -v d="${4:-1}" 'BEGIN { printf "%.*f", d, v * s }'
            }
            type=$(printf '%s\n' "$p$g" | field type | head -1)
            share=$(f "$g" roofline_share 100)
            [ -z "$share" ] || share="$share % ($(f "$g" roofline_share_min 100)-$(f "$g" roofline_share_max 100))"
            bw=$(f "$g" machine_gb_per_second)
            [ -z "$bw" ] || bw="$bw ($(f "$g" machine_gb_per_second_min)-$(f "$g" machine_gb_per_second_max))"
            bshare=$(f "$p" blis_share 100)
            [ -z "$bshare" ] || bshare="$bshare %"
            cpu=$(f "$p" cpu_share 100 0)
            [ -z "$cpu" ] || cpu="$cpu / $(f "$p" blis_cpu_share 100 0) %"
            echo "| $name | $type | $t | $load | $(f "$p" tokens_per_second) | $(f "$g" tokens_per_second) | $(f "$g" weight_gb_per_second) | $share | $bw | $(f "$p" matrix_gflops) | $(f "$p" blis_gflops) | $bshare | $cpu |"
        done
    done
done
