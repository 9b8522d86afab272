# fake-hub.sh: start and stop tests/lib/fake-hub.py (sourced).  Needs
# $top_srcdir (or $srcdir) and HUB_ROOT (the repositories), HUB_DIR (its
# port file and request log: $HUB_DIR/log).
HUB_PY="${top_srcdir:-${srcdir:-.}}/tests/lib/fake-hub.py"
hub_pid=""

stop_hub() {
    [ -n "$hub_pid" ] && kill "$hub_pid" 2>/dev/null && wait "$hub_pid" 2>/dev/null
    hub_pid=""
}

# start_hub [fake-hub.py options]: a fresh server; HF_ENDPOINT points to it
start_hub() {
    stop_hub
    rm -f "$HUB_DIR/port" "$HUB_DIR/log"
    python3 "$HUB_PY" --root "$HUB_ROOT" --port-file "$HUB_DIR/port" --log "$HUB_DIR/log" "$@" &
    hub_pid=$!
    i=0
    while [ ! -s "$HUB_DIR/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    export HF_ENDPOINT="http://127.0.0.1:$(cat "$HUB_DIR/port")"
}
