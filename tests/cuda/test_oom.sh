#!/usr/bin/env bash
# Device memory by component at an out-of-memory error
# (tests/cuda/test_oom.c), against the CUDA runtime double, never
# libcudart: built as C11, C++17, ASan+UBSan and TSan; each mode in a fresh
# process in a scratch working directory. Checks what the modes leave
# behind: the PyTorch snapshot written once next to the report (a pickle
# with the history's events), none with the history off, the default
# memobs_oom_PID.pickle, MEMOBS_OOM_SNAPSHOT (a path; off; unwritable:
# warned), MEMOBS_TORCH_SNAPSHOT turning the history on; and the block of
# the text and JSON summaries and the HTML report with MEMOBS_COMPONENTS=1
# (none without).
cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD
B=${BUILD:-build/tests}/cuda_oom
mkdir -p "$B"
B=$(cd "$B" && pwd)
CC=${CC:-cc}
CXX=${CXX:-c++}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror -I$ROOT -I$CUDA_INC"
. tests/lib.sh # json_check; a clean environment, sanitizer options
rc=0
if [ ! -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    echo "ok - cuda-oom: # SKIP no CUDA headers in $CUDA_INC (set CUDA_INC)"
    exit 0
fi
unset MEMOBS_OOM_SNAPSHOT MEMOBS_TORCH_SNAPSHOT MEMOBS_COMPONENTS MEMOBS_OOM_REPORT

# variant NAME TESTCOMP DOUBLECOMP LINKER FLAGS...
variant() {
    local name=$1 tcomp=$2 dcomp=$3 link=$4 bin="$B/oom_$1" suite="cuda-oom-$1" d
    shift 4
    ok() { echo "ok - $suite: $1"; }
    bad() { echo "not ok - $suite: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }
    if ! { $dcomp "$@" $W -c -o "$bin.double.o" tests/cuda/cudart_double.c &&
        $tcomp "$@" $W -DTEST_SUITE="\"$suite\"" -c -o "$bin.o" tests/cuda/test_oom.c &&
        $link "$@" -o "$bin" "$bin.o" "$bin.double.o" -pthread -rdynamic -lm; } >"$bin.log" 2>&1; then
        bad "build failed" "$(head -n 30 "$bin.log")"
        return
    fi
    if nm "$bin" | grep -q ' U cuda'; then bad "every CUDA symbol comes from the double"; fi
    d="$B/run_$name"
    # mode VAR=VALUE... -- MODE [ARG]: a fresh process in a fresh $d
    mode() {
        local envs=()
        while [ "$1" != "--" ]; do envs+=("$1"); shift; done
        shift
        rm -rf "$d" && mkdir -p "$d"
        (cd "$d" && env "${envs[@]}" "$bin" "$@" 2>"$d/err" | grep -v ' passed, .* failed$'
            exit "${PIPESTATUS[0]}") || { rc=1; sed 's/^/    # stderr: /' "$d/err" | head -n 10; }
    }
    mode -- report "$d/oom.txt"
    if [ -s "$d/err" ]; then bad "report to a file: nothing on stderr" "$(head -n 5 "$d/err")"; fi
    # the snapshot at the first error, with the history's events: 7 device
    # blocks, each a segment_alloc and an alloc
    if python3 - "$d/oom.txt.first.pickle" <<'PY'
import pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
ev = [e["action"] for e in s["device_traces"][0]]
ok = len(s["segments"]) == 7 and ev.count("alloc") == 7 and ev.count("segment_alloc") == 7 and s["memobs"]["history"] == "on"
if not ok: print("    # segments %d, events %s, memobs %s" % (len(s["segments"]), ev, s.get("memobs")))
sys.exit(0 if ok else 1)
PY
    then ok "the PyTorch snapshot at the first error: 7 segments, their 14 events"; else bad "the PyTorch snapshot at the first error"; fi
    [ -z "$(ls "$d" | grep -v '^oom.txt$\|^oom.txt.first.pickle$\|^err$')" ] &&
        ok "the snapshot written once (no other file)" || bad "the snapshot written once" "$(ls "$d")"

    mode -- no_history "$d/oom.txt"
    [ -z "$(ls "$d" | grep -v '^oom.txt$\|^err$')" ] && ok "history off: no snapshot" ||
        bad "history off: no snapshot" "$(ls "$d")"

    mode -- history
    f=$(ls "$d" | grep '^memobs_oom_[0-9]*\.pickle$')
    if [ -n "$f" ] && grep -q "^  PyTorch memory snapshot (with its history) written to $f\$" "$d/err" &&
        [ "$(grep -c 'PyTorch memory snapshot' "$d/err")" = 1 ]; then
        ok "report on stderr: the snapshot in memobs_oom_PID.pickle, once"
    else
        bad "report on stderr: the snapshot in memobs_oom_PID.pickle, once" "files: $(ls "$d" | tr '\n' ' ')" \
            "$(grep 'PyTorch' "$d/err")"
    fi

    mode MEMOBS_OOM_SNAPSHOT="$d/at_oom_%p.pickle" MEMOBS_OOM_REPORT=0 -- history
    if ls "$d" | grep -q '^at_oom_[0-9]*\.pickle$' && [ ! -s "$d/err" ]; then
        ok "MEMOBS_OOM_SNAPSHOT=path (%p), MEMOBS_OOM_REPORT=0: the snapshot still"
    else
        bad "MEMOBS_OOM_SNAPSHOT=path (%p), MEMOBS_OOM_REPORT=0: the snapshot still" "$(ls "$d" | tr '\n' ' ')"
    fi

    mode MEMOBS_OOM_REPORT=0 -- history
    [ -z "$(ls "$d" | grep pickle)" ] && [ ! -s "$d/err" ] && ok "MEMOBS_OOM_REPORT=0, MEMOBS_OOM_SNAPSHOT unset: none" ||
        bad "MEMOBS_OOM_REPORT=0, MEMOBS_OOM_SNAPSHOT unset: none" "$(ls "$d")"

    mode MEMOBS_OOM_SNAPSHOT=off -- history
    [ -z "$(ls "$d" | grep pickle)" ] && ok "MEMOBS_OOM_SNAPSHOT=off: none" || bad "MEMOBS_OOM_SNAPSHOT=off: none" "$(ls "$d")"

    mode MEMOBS_OOM_SNAPSHOT=/no/such/dir/x.pickle -- history
    if grep -q "^  PyTorch memory snapshot not written to /no/such/dir/x.pickle: " "$d/err"; then
        ok "an unwritable MEMOBS_OOM_SNAPSHOT: warned once, said in the report"
    else
        bad "an unwritable MEMOBS_OOM_SNAPSHOT: warned once, said in the report" "$(grep PyTorch "$d/err")"
    fi

    mode MEMOBS_TORCH_SNAPSHOT="$d/exit.pickle" -- history
    if ls "$d" | grep -q '^memobs_oom_[0-9]*\.pickle$' && [ -s "$d/exit.pickle" ]; then
        ok "MEMOBS_TORCH_SNAPSHOT (the history from start-up): the snapshot at the error and at exit"
    else
        bad "MEMOBS_TORCH_SNAPSHOT: the snapshot at the error and at exit" "$(ls "$d" | tr '\n' ' ')"
    fi

    mode MEMOBS_COMPONENTS=1 -- summary "$d/s"
    if grep -q '^== memobs components == all devices: 7 live device allocations, 39845888 bytes' "$d/s.txt" &&
        grep -q '^        16777216   16.78 MB        2   42.1%  tag     weights$' "$d/s.txt"; then
        ok "MEMOBS_COMPONENTS=1: the text summary's block"
    else
        bad "MEMOBS_COMPONENTS=1: the text summary's block" "$(tail -n 12 "$d/s.txt")"
    fi
    if json_check "$d/s.json" 's["components"]["device"] == -1 and s["components"]["bytes"] == 39845888 and [(c["name"], c["rule"], c["bytes"], c["blocks"]) for c in s["components"]["top"]][:3] == [("weights", "tag", 16777216, 2), ("kv_cache", "tag", 12582912, 1), ("cuda_graph_pool", "region", 6291456, 2)] and s["components"]["top"][4] == {"name": "(unknown)", "rule": "unknown", "bytes": 1048576, "blocks": 1} and s["components"]["devices"][0]["outside"] == 4194304 and s["components"]["devices"][0]["largest_free_block"] is None' components; then
        ok "MEMOBS_COMPONENTS=1: the JSON summary's member"
    else
        bad "MEMOBS_COMPONENTS=1: the JSON summary's member"
    fi
    if grep -q '<section id="components"><h2>Device memory by component</h2>' "$d/s.html" &&
        grep -q '<tr><td>kv_cache</td><td>tag</td><td class="n" data-v="12582912">' "$d/s.html"; then
        ok "MEMOBS_COMPONENTS=1: the HTML report's section"
    else
        bad "MEMOBS_COMPONENTS=1: the HTML report's section"
    fi
    mode -- summary "$d/s"
    if ! grep -q 'memobs components' "$d/s.txt" && json_check "$d/s.json" '"components" not in s' &&
        ! grep -q 'id="components"' "$d/s.html"; then
        ok "without MEMOBS_COMPONENTS: no block"
    else
        bad "without MEMOBS_COMPONENTS: no block"
    fi
}

variant c11 "$CC -std=c11" "$CC -std=c11" "$CC" -O2 -g
variant cxx17 "$CXX -x c++ -std=c++17" "$CXX -x c++ -std=c++17" "$CXX" -O2 -g
variant asan "$CC -std=c11" "$CC -std=c11" "$CC" -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
    -fno-sanitize-recover=undefined
variant tsan "$CC -std=c11" "$CC -std=c11" "$CC" -O1 -g -fsanitize=thread
exit $rc
