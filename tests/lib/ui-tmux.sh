# ui-tmux.sh: helpers for the TUI integration tests (sourced, not run).
# Each test drives the real binary ($ELMCHAT, $ELMCHAT_MODEL: random weights) inside a
# private tmux server, with private XDG folders, and prints TAP.
#
#   ui_init                 skip_all unless tmux is there; temp dir, XDG env
#   ui_start [SIZE] [ARGS]  start elmchat in a pane of SIZE: "W H" (two
#                           words) or "WxH" (one); none: $UI_SIZE, default
#                           100x30 (not 80x24: terminfo's default size hides
#                           what a test at another size shows).  $UI_ENV:
#                           more NAME=VALUE settings for it; $UI_ULIMIT_V:
#                           its address-space limit in KiB, ulimit -v
#   UI_SIZES                the sizes a layout test runs at ("100x30 132x43
#                           80x24" unless set); ui_w, ui_h: the pane's size
#   ui_start_shell [SIZE]   an interactive shell in the pane instead, with
#                           the same settings; ui_shell_run ARGS starts
#                           elmchat in it (job control: Ctrl-Z, fg)
#   ui_long_reply           a reply text of thousands of tokens; with
#                           UI_ENV="ELM_WORKER_TEST_REPLY_FILE=$UI_LONG_REPLY"
#                           every reply streams it (no EOS: the random
#                           model's own replies end after a few hundred
#                           tokens, under load before a test presses Esc)
#   ui_stop                 end the pane (kill-server) and wait until its
#                           processes (elmchat saving after SIGHUP) are gone
#   ui_wait TEXT [SECS]     until the pane shows TEXT (fixed string)
#   ui_until COND [SECS]    until the shell condition COND holds
#   ui_wait_generated N [SECS]  until the status bar says "generating K", K >= N
#
# Deadlines: every SECS above is multiplied by $UI_WAIT_SCALE (default 3), so
# that a loaded machine (make -j, other jobs on two cores) passes too; a
# wait ends as soon as its condition holds, so a pass costs no more time.
# Timing: replies are paced with ELM_WORKER_TEST_TOKEN_INTERVAL_MS (default 20 ms a
# token, UI_TOKEN_DELAY_MS overrides), so that a reply is still streaming when
# a test presses Esc or resizes, on a fast machine as on a loaded one; and
# every check waits for a condition instead of sleeping.
#   ui_screen               the pane's text; ui_row N: its row N (1: top)
#   ui_keys KEYS...         tmux send-keys
#   ui_exited [SECS]        until elmchat has exited; $UI_EXIT holds its status
#   ok COND DESC / ui_done  TAP

n=0
failed=0
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/portable.sh"

ok() {  # ok "shell condition" "description"
    n=$((n + 1))
    if eval "$1"; then
        echo "ok $n - $2"
    else
        echo "not ok $n - $2"
        failed=1
        if [ -n "$UI_SOCK" ]; then
            ui_screen | sed 's/^/#   | /'
        fi
    fi
}
diag() { echo "# $*"; }

ui_init() {
    TMUX_CMD=${TMUX_BIN:-tmux}
    [ "$TMUX_CMD" = no ] && TMUX_CMD=tmux
    if ! command -v "$TMUX_CMD" >/dev/null 2>&1; then
        echo "1..0 # SKIP tmux is not installed"
        exit 0
    fi
    ELMCHAT=${ELMCHAT:-./elmchat-testing}
    if [ ! -x "$ELMCHAT" ]; then
        echo "1..0 # SKIP no elmchat binary at $ELMCHAT"
        exit 0
    fi
    UI_DIR=$(mktemp -d "${TMPDIR:-/tmp}/elmchat-ui-XXXXXX")
    UI_SOCK="$UI_DIR/tmux.sock"
    trap 'ui_cleanup' EXIT
    unset TMUX
    mkdir -p "$UI_DIR/config" "$UI_DIR/data" "$UI_DIR/state" "$UI_DIR/cache"
}

ui_cleanup() {
    "$TMUX_CMD" -S "$UI_SOCK" kill-server 2>/dev/null
    # elmchat may still be saving after the SIGHUP of kill-server
    if [ "$failed" = 0 ]; then
        rm -rf "$UI_DIR" 2>/dev/null || { sleep 1; rm -rf "$UI_DIR"; }
    else
        echo "# kept $UI_DIR"
    fi
}

# The pane runs elmchat, then records its status and the tty modes, then
# stays open so that the screen after exit can be captured.
# A new server on a socket of its own each time: one that kill-server
# stopped may still be exiting, and a session started on its socket dies
# with it ("server exited unexpectedly"), under load or ASan.
ui_new_socket() {
    UI_SOCK_N=$(( ${UI_SOCK_N:-0} + 1 ))
    UI_SOCK="$UI_DIR/tmux.$UI_SOCK_N.sock"
}

UI_SIZES=${UI_SIZES:-100x30 132x43 80x24}
UI_WAIT_SCALE=${UI_WAIT_SCALE:-3}

# SIZE at the start of "$@": sets ui_w, ui_h and ui_size_args (how many
# arguments it took: 0, 1 or 2).
ui_parse_size() {
    ui_size_args=0
    case "$1" in
    [1-9]*x[1-9]*) size=$1; ui_size_args=1 ;;
    [1-9]*) size="${1}x$2"; ui_size_args=2 ;;
    *) size=${UI_SIZE:-100x30} ;;
    esac
    ui_w=${size%x*}
    ui_h=${size#*x}
}

ui_start() {
    ui_parse_size "$@"
    shift $ui_size_args
    w=$ui_w; h=$ui_h
    rm -f "$UI_DIR/exit" "$UI_DIR/stty" "$UI_DIR/shell.pid"
    [ -f "$UI_DIR/stderr" ] && cat "$UI_DIR/stderr" >> "$UI_DIR/stderr.all"
    # The shell shares elmchat's process group: keep Ctrl-C from killing it.
    cat > "$UI_DIR/run.sh" <<EOS
trap '' INT QUIT
echo \$\$ > '$UI_DIR/shell.pid'
${UI_ULIMIT_V:+ulimit -v $UI_ULIMIT_V}
XDG_CONFIG_HOME='$UI_DIR/config' XDG_DATA_HOME='$UI_DIR/data' \
XDG_STATE_HOME='$UI_DIR/state' XDG_CACHE_HOME='$UI_DIR/cache' \
HOME='$UI_DIR' INPUTRC='$UI_DIR/inputrc' LANG=C.UTF-8 LC_ALL= TERM=screen-256color \
BLIS_NUM_THREADS=1 OMP_NUM_THREADS=1 ELMCHAT_LATENCY_LOG='$UI_DIR/latency' \
ELMCHAT_MODEL='${ELMCHAT_MODEL:-}' \
ELM_WORKER_TEST_TOKEN_INTERVAL_MS='${UI_TOKEN_DELAY_MS:-20}' ${UI_ENV:-} \
'$ELMCHAT' $* 2>'$UI_DIR/stderr'
echo \$? > '$UI_DIR/exit.tmp'
stty -a > '$UI_DIR/stty' 2>&1
mv '$UI_DIR/exit.tmp' '$UI_DIR/exit'
exec sleep 600
EOS
    [ -f "$UI_DIR/inputrc" ] || : > "$UI_DIR/inputrc"
    ui_new_socket
    "$TMUX_CMD" -S "$UI_SOCK" -f /dev/null new-session -d -x "$w" -y "$h" "sh '$UI_DIR/run.sh'"
    "$TMUX_CMD" -S "$UI_SOCK" set-option -g status off >/dev/null
}

# An interactive shell (job control) with elmchat's settings exported.
ui_start_shell() {
    ui_parse_size "$@"
    w=$ui_w; h=$ui_h
    cat > "$UI_DIR/env.sh" <<EOS
export XDG_CONFIG_HOME='$UI_DIR/config' XDG_DATA_HOME='$UI_DIR/data'
export XDG_STATE_HOME='$UI_DIR/state' XDG_CACHE_HOME='$UI_DIR/cache'
export HOME='$UI_DIR' INPUTRC='$UI_DIR/inputrc' LANG=C.UTF-8 LC_ALL= TERM=screen-256color
export BLIS_NUM_THREADS=1 OMP_NUM_THREADS=1 ELM_WORKER_TEST_TOKEN_INTERVAL_MS='${UI_TOKEN_DELAY_MS:-20}'
export ELMCHAT_MODEL='${ELMCHAT_MODEL:-}'
export PS1='$ '
EOS
    [ -f "$UI_DIR/inputrc" ] || : > "$UI_DIR/inputrc"
    ui_new_socket
    "$TMUX_CMD" -S "$UI_SOCK" -f /dev/null new-session -d -x "$w" -y "$h" \
        "ENV='$UI_DIR/env.sh' exec ${UI_SHELL:-sh} -i"
    "$TMUX_CMD" -S "$UI_SOCK" set-option -g status off >/dev/null
}

ui_shell_run() {  # ARGS: elmchat ARGS in the shell of ui_start_shell
    ui_wait '$' 5
    ui_keys ". '$UI_DIR/env.sh'; '$ELMCHAT' $* 2>>'$UI_DIR/stderr'" Enter
}

ui_screen() { "$TMUX_CMD" -S "$UI_SOCK" capture-pane -p 2>/dev/null; }
ui_row() { ui_screen | sed -n "${1}p"; }
ui_keys() { "$TMUX_CMD" -S "$UI_SOCK" send-keys "$@"; }
ui_tmux() { "$TMUX_CMD" -S "$UI_SOCK" "$@"; }

ui_long_reply() {
    UI_LONG_REPLY="$UI_DIR/long-reply.txt"
    awk 'BEGIN { for (i = 1; i <= 1500; i++) printf "word%d%s", i, (i % 12 ? " " : "\n") }' \
        > "$UI_LONG_REPLY"
}

# The pane's server ends (SIGHUP), and every process of the pane with it:
# the next ui_start may open the same session only once this one has saved.
ui_stop() {
    ui_pids=
    if [ -f "$UI_DIR/shell.pid" ]; then
        ui_pids=$(cat "$UI_DIR/shell.pid")
        ui_pids="$ui_pids $(pgrep -P "$ui_pids" 2>/dev/null)"
    fi
    "$TMUX_CMD" -S "$UI_SOCK" kill-server 2>/dev/null
    ui_until 'ui_alive=; for p in $ui_pids; do kill -0 "$p" 2>/dev/null && ui_alive=1; done; [ -z "$ui_alive" ]' 30
}

ui_wait() {  # TEXT [SECS]: true once the screen shows TEXT
    limit=$(( ${2:-10} * 20 * UI_WAIT_SCALE ))
    i=0
    while [ $i -lt $limit ]; do
        ui_screen | grep -qF -- "$1" && return 0
        sleep 0.05
        i=$((i + 1))
    done
    return 1
}

ui_until() {  # COND [SECS]: true once the shell condition COND holds
    limit=$(( ${2:-10} * 20 * UI_WAIT_SCALE ))
    i=0
    while [ $i -lt $limit ]; do
        eval "$1" && return 0
        sleep 0.05
        i=$((i + 1))
    done
    return 1
}

# The number of tokens the status bar says were generated (0: not generating).
ui_generated() {
    ui_screen | sed -n 's/.*generating \([0-9][0-9]*\).*/\1/p' | head -1 | grep . || echo 0
}

ui_wait_generated() {  # N [SECS]: the reply has at least N tokens
    UI_WANT=$1
    ui_until '[ "$(ui_generated)" -ge "$UI_WANT" ]' "${2:-10}"
}

ui_wait_gone() {  # TEXT [SECS]: true once the screen no longer shows TEXT
    limit=$(( ${2:-10} * 20 * UI_WAIT_SCALE ))
    i=0
    while [ $i -lt $limit ]; do
        ui_screen | grep -qF -- "$1" || return 0
        sleep 0.05
        i=$((i + 1))
    done
    return 1
}

ui_exited() {  # [SECS]: true once elmchat has exited; sets UI_EXIT
    limit=$(( ${1:-10} * 20 * UI_WAIT_SCALE ))
    i=0
    while [ $i -lt $limit ]; do
        if [ -f "$UI_DIR/exit" ]; then
            UI_EXIT=$(cat "$UI_DIR/exit")
            return 0
        fi
        sleep 0.05
        i=$((i + 1))
    done
    UI_EXIT=
    return 1
}

# The tty after exit: canonical mode and echo back on, no alternate screen.
ui_tty_sane() {
    grep -q ' icanon' "$UI_DIR/stty" && grep -q ' echo ' "$UI_DIR/stty" &&
        [ "$("$TMUX_CMD" -S "$UI_SOCK" display -p '#{alternate_on}')" = 0 ]
}

ui_done() {
    # every run's stderr: no sanitizer report (--enable-sanitizers builds)
    ok '! cat "$UI_DIR/stderr.all" "$UI_DIR/stderr" 2>/dev/null | grep -q -e Sanitizer -e "runtime error"' \
       "no sanitizer report on stderr"
    echo "1..$n"
    exit $failed
}
