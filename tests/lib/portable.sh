# portable.sh: what the shell tests need that GNU and BSD/macOS tools spell
# differently (sourced by tap.sh and ui-tmux.sh, not run).
#   file_mode FILE   permission bits in octal (644)
#   file_size FILE   size in bytes (fails when FILE is not there)
#   sha256_of FILE   the hex SHA-256
#   now_ms           milliseconds since the epoch
#   base64_line      stdin in base64 on one line

file_mode() { stat -c %a "$1" 2>/dev/null || stat -f %Lp "$1"; }
file_size() { [ -f "$1" ] && wc -c < "$1" | tr -d ' '; }
sha256_of() { { sha256sum "$1" 2>/dev/null || shasum -a 256 "$1"; } | cut -d' ' -f1; }
now_ms() {
    case $(date +%s%3N) in
    *N) python3 -c 'import time; print(int(time.time() * 1000))' ;;
    *) date +%s%3N ;;
    esac
}
base64_line() { base64 | tr -d '\n'; }
