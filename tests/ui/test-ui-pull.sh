#!/bin/sh
# test-ui-pull.sh: `elmchat -m NAME` for a model that is not here, in the
# real binary on a terminal: the question with the download size before the
# screen starts, the pull with its progress (from a stand-in Hub on
# 127.0.0.1), then the chat on the pulled model; "n" declines; --no-pull
# refuses; /model completion marks the known models not downloaded; /model
# NAME inside the chat asks, shows the progress in the status bar, Esc stops
# it, a second /model resumes and loads it; a folder in Apple's layout (no
# tokenizer) pulled at the start chats on the bundled LLaMA-2 tokenizer; a
# Hub that never answers: said before the screen, Ctrl-C, Esc and /quit end
# the wait at once.
. "${srcdir:-$(dirname "$0")/../..}/tests/lib/ui-tmux.sh"
ui_init
top_srcdir=${top_srcdir:-${srcdir:-.}}
GEN=${GEN_CHECKPOINT:-$(dirname "$ELMCHAT")/tests/lib/gen-checkpoint}
[ -x "$GEN" ] || { echo "1..0 # SKIP no $GEN"; exit 0; }
command -v python3 >/dev/null 2>&1 || { echo "1..0 # SKIP no python3 for the fake Hub"; exit 0; }
HUB_ROOT="$UI_DIR/root" HUB_DIR="$UI_DIR"
. "$top_srcdir/tests/lib/fake-hub.sh"
trap 'stop_hub; ui_cleanup' EXIT
"$GEN" --preset micro --synthetic-tokenizer -o "$HUB_ROOT/tester/tiny" >/dev/null 2>&1
start_hub
cache="$UI_DIR/hub"
UI_ENV="HF_ENDPOINT=$HF_ENDPOINT HF_HUB_CACHE=$cache ELMCHAT_PULL_RETRY_MS=20"

ui_start 120 30 -m tester/tiny -n 3
ok 'ui_until "ui_screen | grep -q \"tester/tiny is not on this machine. Download it from the Hub ([0-9.]* MB) into $cache? \[Y/n\]\"" 10' \
   "-m REPO not here: asked first, with the size and the place"
ui_keys n Enter
ok 'ui_until "[ -f \"$UI_DIR/exit\" ]" 10 && [ "$(cat "$UI_DIR/exit")" = 1 ] && grep -q "tester/tiny: not downloaded" "$UI_DIR/stderr"' \
   "n: nothing downloaded, said so"
ok '[ ! -d "$cache/models--tester--tiny/blobs" ] || [ -z "$(ls "$cache/models--tester--tiny/blobs")" ]' "... and nothing fetched"

ui_start 120 30 -m tester/tiny -n 3
ui_wait "Download it from the Hub" 10 >/dev/null
ui_keys Enter
ok 'ui_wait "idle" 30' "Enter (yes): pulled, and the chat starts"
ok 'grep -q "^GET /cdn/" "$HUB_DIR/log" && [ -d "$cache/models--tester--tiny/snapshots" ]' \
   "the weights came from the Hub into its cache"
ok 'ui_screen | grep -q "tiny"' "the model is named for the repository, not its commit"
ui_keys "hello there" Enter
ok 'ui_until "ui_screen | grep -q \"\[interrupted\]\"" 20' "a reply from the pulled model"
ui_keys "/model 3B" Tab Tab
ok 'ui_wait "3B(+)  3B-instruct(+)" 5 && ui_screen | grep -q "(+): not downloaded, elmchat pull NAME"' \
   "/model completion marks the known models not downloaded"
ui_keys C-u "/quit" Enter
ui_until "[ -f \"$UI_DIR/exit\" ]" 10 >/dev/null

: > "$HUB_DIR/log"
ui_start 120 30 -m tester/tiny -n 3
ok 'ui_wait "idle" 20 && ! grep -q "^GET" "$HUB_DIR/log"' "the next start finds it in the cache: no question, no request"
ui_keys "/quit" Enter
ui_until "[ -f \"$UI_DIR/exit\" ]" 10 >/dev/null

# /model NAME inside the chat: the question, the progress in the status bar,
# Esc stops it (resumable), a second /model resumes and loads it
rm -rf "$cache/models--tester--tiny"
start_hub --rate 300000
UI_ENV="HF_ENDPOINT=$HF_ENDPOINT HF_HUB_CACHE=$cache ELMCHAT_PULL_RETRY_MS=20"
ui_start 140 30 -n 3
ok 'ui_wait "idle" 20' "the chat starts on the default model"
ui_keys "/model tester/tiny" Enter
ok 'ui_until "ui_screen | grep -q \"Download tester/tiny ([0-9.]* MB) into $cache? y/n\"" 10' \
   "/model REPO not here: a confirm line with the size"
ui_keys y Enter
ok 'ui_until "ui_screen | grep -q \"downloading tester/tiny [0-9]*% .* · Esc stops\"" 60' \
   "y: the download's progress in the status bar"
# Esc once the weights have begun (so that there is a part to resume)
ok 'ui_until "[ -n \"\$(find '"'$cache'"'/models--tester--tiny/blobs -name \"*.incomplete\" -size +4k 2>/dev/null)\" ]" 60' \
   "the weights have begun to come"
ui_keys Escape
ok 'ui_wait "download stopped: " 60 && ui_screen | grep -q "kept; /model tester/tiny resumes it"' "Esc stops it and says what is kept"
ui_keys "/model tester/tiny" Enter
ui_until "ui_screen | grep -q \"Download tester/tiny\"" 10 >/dev/null
ui_keys Enter
ok 'ui_until "grep -q \"bytes=[1-9][0-9]*-\" \"$HUB_DIR/log\"" 20' "the next /model resumes the download"
ok 'ui_until "ui_screen | grep -q \"idle\" && ui_screen | grep -q tiny" 30' "then the model loads and is current"
ui_keys "/model tester/none" Enter
ok 'ui_wait "tester/none: no such repository on the Hub (404)" 10' "a repository the Hub does not have: said so"
ui_keys "/quit" Enter
ui_until "[ -f \"$UI_DIR/exit\" ]" 10 >/dev/null

# Apple's layout, no tokenizer: pulled at the start, it chats on the LLaMA-2
# tokenizer the build fetched
shipped=$(dirname "$ELMCHAT")/models/llama2-tokenizer.model
if [ -f "$shipped" ]; then
    "$GEN" --preset default --no-tokenizer -o "$HUB_ROOT/apple/OpenELM-270M-Instruct" >/dev/null 2>&1
    start_hub
    UI_ENV="HF_ENDPOINT=$HF_ENDPOINT HF_HUB_CACHE=$cache ELMCHAT_PULL_RETRY_MS=20"
    ui_start 140 40 -m 270M-instruct -n 3
    ui_wait "Download it from the Hub" 10 >/dev/null
    ui_keys y Enter
    ok 'ui_wait "idle" 60' "-m 270M-instruct: Apple's layout pulled, the chat starts"
    ui_keys "/info" Enter
    ok 'ui_wait "tokenizer: elmchat'"'"'s LLaMA-2 tokenizer.model (the model folder has none)" 10' \
       "/info: on the bundled tokenizer"
    ui_keys "hello" Enter
    ok 'ui_until "ui_screen | grep -q \"\[interrupted\]\"" 20' "and it replies"
    ui_keys "/quit" Enter
    ui_until "[ -f \"$UI_DIR/exit\" ]" 10 >/dev/null
else
    skip "-m 270M-instruct: Apple's layout chats on the bundled tokenizer" "the build fetched no LLaMA-2 tokenizer.model"
fi

# a Hub that accepts and then says nothing: -m NAME says what it waits for
# before the screen starts and Ctrl-C ends it at once; in the chat, Esc
# stops /model NAME's question and /quit does not wait for it
start_hub --stall
UI_ENV="HF_ENDPOINT=$HF_ENDPOINT HF_HUB_CACHE=$cache ELMCHAT_PULL_RETRY_MS=20"
ui_start 120 30 -m tester/elsewhere -n 3
ok 'ui_wait "tester/elsewhere is not on this machine: asking the Hub ($HF_ENDPOINT) for its size... (Ctrl-C stops)" 10' \
   "-m NAME, the Hub silent: the terminal says what it waits for"
ui_until "grep -q \"^GET /api/models/tester/elsewhere/revision/main\" \"$HUB_DIR/log\"" 10 >/dev/null
ui_keys C-c
ok 'ui_until "[ -f \"$UI_DIR/exit\" ]" 3 && grep -q "tester/elsewhere: stopped while asking the Hub" "$UI_DIR/stderr"' \
   "... and Ctrl-C ends it within 3 s"
: > "$HUB_DIR/log"
ui_start 140 30 -n 3
ui_wait "idle" 20 >/dev/null
ui_keys "/model tester/elsewhere" Enter
ui_until "grep -q \"^GET /api/models/tester/elsewhere/revision/main\" \"$HUB_DIR/log\"" 10 >/dev/null
ok 'ui_wait "asking the Hub about tester/elsewhere" 5' "/model NAME, the Hub silent: the status bar says what it waits for"
ui_keys Escape
ok 'ui_wait "tester/elsewhere: not downloaded (stopped while asking the Hub)" 3' "... Esc stops it within 3 s"
: > "$HUB_DIR/log"
ui_keys "/model tester/elsewhere" Enter
ui_until "grep -q \"^GET /api/models/tester/elsewhere/revision/main\" \"$HUB_DIR/log\"" 10 >/dev/null
ui_keys "/quit" Enter
ok 'ui_until "[ -f \"$UI_DIR/exit\" ]" 3' "... and /quit while it waits ends within 3 s"
start_hub

ui_start 120 30 -m apple/OpenELM-450M --no-pull
ok 'ui_until "[ -f \"$UI_DIR/exit\" ]" 10 && grep -q "apple/OpenELM-450M is not downloaded (--no-pull): elmchat pull apple/OpenELM-450M" "$UI_DIR/stderr"' \
   "--no-pull: refused with the command that gets it"
echo "1..$n"
[ "$failed" -eq 0 ]
