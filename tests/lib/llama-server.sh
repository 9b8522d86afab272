#!/bin/sh
# llama-server.sh: a real llama.cpp llama-server for the remote-engine tests,
# sourced after tap.sh.  The source is the tarball $ELMCHAT_LLAMACPP_TARBALL
# names (.ci/run sets it; unset, as on a fresh clone, the test skips).  It is
# built once into $builddir/tests/.cache/llama-server-NAME/ (distclean
# removes it; $ELMCHAT_LLAMACPP_CACHE, when set, is the folder instead, so
# that CI's three builds share one) and reused by every later run; a lock
# folder keeps two tests that start together from building it twice.
#
#   ls_build           sets LLAMA_SERVER (the binary) or skips the whole test
#   ls_start NAME ARGS starts it on 127.0.0.1 on a free port with ARGS
#                      (e.g. -m F.gguf -np 2); sets LS_URL and LS_PID, waits
#                      until /health says ok; its log is $tmp/NAME.log
#   ls_stop            kills the server ls_start started (SIGKILL, waited for)

ls_skip_all() {
    echo "1..0 # SKIP $*"
    exit 0
}

ls_build() {
    tarball=${ELMCHAT_LLAMACPP_TARBALL:-}
    [ -n "$tarball" ] ||
        ls_skip_all "ELMCHAT_LLAMACPP_TARBALL is unset (the llama.cpp source tarball to build llama-server from)"
    [ -f "$tarball" ] || ls_skip_all "ELMCHAT_LLAMACPP_TARBALL=$tarball: no such file"
    command -v cmake >/dev/null 2>&1 || ls_skip_all "cmake is not installed"
    command -v c++ >/dev/null 2>&1 || ls_skip_all "no C++ compiler"
    name=$(basename "$tarball" | sed 's/\.tar\.[a-z0-9]*$//')
    ls_root=${ELMCHAT_LLAMACPP_CACHE:-$builddir/tests/.cache}
    ls_cache=$ls_root/llama-server-$name
    LLAMA_SERVER=$ls_cache/build/bin/llama-server
    [ -x "$LLAMA_SERVER" ] && return 0
    mkdir -p "$ls_root" || exit 1
    # One builder; the others wait for its binary (at most 20 minutes).
    waited=0
    while ! mkdir "$ls_cache.lock" 2>/dev/null; do
        [ -x "$LLAMA_SERVER" ] && return 0
        sleep 2
        waited=$((waited + 2))
        [ $waited -lt 1200 ] || ls_skip_all "another test's llama-server build did not finish"
    done
    if [ ! -x "$LLAMA_SERVER" ]; then
        echo "# building llama-server from $tarball (once, into $ls_cache)"
        t0=$(date +%s)
        rm -rf "$ls_cache"
        mkdir -p "$ls_cache/src" &&
            tar xJf "$tarball" -C "$ls_cache/src" &&
            (cd "$ls_cache" &&
                nice cmake -S src -B build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
                    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DBUILD_SHARED_LIBS=OFF \
                    >build.log 2>&1 &&
                nice cmake --build build -j2 --target llama-server >>build.log 2>&1)
        r=$?
        echo "# llama-server build: exit $r in $(($(date +%s) - t0)) s"
        if [ $r -ne 0 ]; then
            tail -n 15 "$ls_cache/build.log" 2>/dev/null | sed 's/^/# /'
            rmdir "$ls_cache.lock"
            echo "Bail out! llama-server does not build from $tarball"
            exit 1
        fi
        rm -rf "$ls_cache/src/.git" 2>/dev/null
    fi
    rmdir "$ls_cache.lock"
}

# A free TCP port on 127.0.0.1 (python3 is in .ci/deps; asked of the kernel).
ls_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

ls_start() {
    ls_name=$1
    shift
    port=$(ls_free_port) || return 1
    LS_URL=http://127.0.0.1:$port
    "$LLAMA_SERVER" --host 127.0.0.1 --port "$port" -t 1 --no-webui "$@" \
        >"$tmp/$ls_name.log" 2>&1 &
    LS_PID=$!
    i=0
    while [ $i -lt 600 ]; do
        if ! kill -0 "$LS_PID" 2>/dev/null; then
            tail -n 5 "$tmp/$ls_name.log" | sed 's/^/# /'
            return 1
        fi
        if curl -s "$LS_URL/health" 2>/dev/null | grep -q '"ok"'; then
            return 0
        fi
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

ls_stop() {
    [ -n "${LS_PID:-}" ] || return 0
    kill -9 "$LS_PID" 2>/dev/null
    wait "$LS_PID" 2>/dev/null
    LS_PID=
}
