#!/usr/bin/env bash
# tests/python/test_python.c (memobs_python.h inside an embedded CPython) built
# four ways: C99, C++17, ASan+UBSan, TSan. Each runs the in-process tests,
# the interpreter's life cycle (before Py_Initialize, after Py_Finalize,
# a second interpreter) and the MEMOBS_PY_* environment, good and bad.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/python
mkdir -p "$B"
CC=${CC:-cc}
CXX=${CXX:-c++}
W="-Wall -Wextra -Werror -I. -Itests"
rc=0

. tests/lib.sh # a clean environment, sanitizer options
unset MEMOBS_PY_PRIORITY MEMOBS_PY_SKIP MEMOBS_PY_ROOT MEMOBS_PY_FRAMES MEMOBS_PY_HEAD MEMOBS_PY_TAIL \
    MEMOBS_PY_SOURCE_WIDTH MEMOBS_PY_TAKE_GIL

if ! PYINC=$(python3-config --includes 2>/dev/null) || ! PYLIB=$(python3-config --ldflags --embed 2>/dev/null); then
    echo "not ok - python: python3-config is missing (tests/deps.sh installs python3-dev)"
    exit 1
fi
# CPython itself is not built with the sanitizers: its own allocations
# at exit are not ours to report.
export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1

run_variant() { # name suite compiler flags...
    local name=$1 suite=$2 comp=$3 bin="$B/python_$1" out="$B/$1"
    shift 3
    ok() { echo "ok - $suite: $1"; }
    bad() { echo "not ok - $suite: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }
    if ! $comp "$@" $W $PYINC -DTEST_SUITE="\"$suite\"" -o "$bin" tests/python/test_python.c $PYLIB -pthread \
        >"$bin.log" 2>&1; then
        bad "build failed" "$(head -n 30 "$bin.log")"
        return
    fi
    "$bin" 2>"$out.err" | grep -v ' passed, .* failed$' || true
    [ "${PIPESTATUS[0]}" -eq 0 ] || { rc=1; sed 's/^/    # stderr: /' "$out.err" | head -n 20; }
    "$bin" lifecycle 2>"$out.err" | grep -v ' passed, .* failed$' || true
    [ "${PIPESTATUS[0]}" -eq 0 ] || { rc=1; sed 's/^/    # stderr: /' "$out.err" | head -n 20; }

    # env VAR=VALUE... -- WANT [STDERR-PATTERN...]: the rules the
    # environment gives, and exactly the warnings expected
    env_case() {
        local envs=() want
        while [ "$1" != "--" ]; do envs+=("$1"); shift; done
        shift
        want=$1
        shift
        env "${envs[@]}" "$bin" env "$want" 2>"$out.err" || rc=1
        local name="env ${envs[*]:-(none)}" p
        name="${name:0:100}: $# warning(s)"
        if [ "$(wc -l <"$out.err")" -ne $# ]; then bad "$name" "stderr has $(wc -l <"$out.err") lines:" "$(cat "$out.err")"; return; fi
        for p in "$@"; do
            if [ "$(grep -c -- "$p" "$out.err")" -ne 1 ]; then bad "$name" "no line matching '$p' in:" "$(cat "$out.err")"; return; fi
        done
        ok "$name"
    }
    env_case -- "priority=model_desc skip=torch/nn/modules/module.py root= frames=5 head=2 tail=2 width=50 gil=0"
    env_case MEMOBS_PY_PRIORITY=models/,engine MEMOBS_PY_SKIP= MEMOBS_PY_ROOT=/srv/app MEMOBS_PY_FRAMES=9 \
        MEMOBS_PY_HEAD=3 MEMOBS_PY_TAIL=4 MEMOBS_PY_SOURCE_WIDTH=0 MEMOBS_PY_TAKE_GIL=yes -- \
        "priority=models/,engine skip= root=/srv/app frames=9 head=3 tail=4 width=0 gil=1"
    env_case MEMOBS_PY_FRAMES=3 -- "priority=model_desc skip=torch/nn/modules/module.py root= frames=3 head=1 tail=1 width=50 gil=0"
    env_case MEMOBS_PY_FRAMES=x MEMOBS_PY_SOURCE_WIDTH=5 MEMOBS_PY_TAKE_GIL=maybe -- \
        "priority=model_desc skip=torch/nn/modules/module.py root= frames=5 head=2 tail=2 width=50 gil=0" \
        "^memobs: warning: MEMOBS_PY_FRAMES='x' is not an integer in 1..32; using 5$" \
        "^memobs: warning: MEMOBS_PY_SOURCE_WIDTH=5: must be 0 or at least 8; using 50$" \
        "^memobs: warning: MEMOBS_PY_TAKE_GIL='maybe' is not 0/1/on/off; using 0$"
    env_case MEMOBS_PY_FRAMES=4 MEMOBS_PY_HEAD=2 MEMOBS_PY_TAIL=2 -- \
        "priority=model_desc skip=torch/nn/modules/module.py root= frames=4 head=1 tail=2 width=50 gil=0" \
        "MEMOBS_PY_HEAD + MEMOBS_PY_TAIL (4) must be below MEMOBS_PY_FRAMES (4); using 1 and 2"
    env_case MEMOBS_PY_ROOT="$(printf 'r%.0s' $(seq 300))" -- \
        "priority=model_desc skip=torch/nn/modules/module.py root= frames=5 head=2 tail=2 width=50 gil=0" \
        "MEMOBS_PY_ROOT is 300 bytes long (at most 255); using ''"
}

# a code table of 3 entries (the rest of the suite needs more)
if $CC -std=c99 -O1 -g $W $PYINC -DMEMOBS_PY_MAX_CODES=3 -DTEST_SUITE='"python-codes3"' -o "$B/python_codes3" \
    tests/python/test_python.c $PYLIB -pthread >"$B/codes3.log" 2>&1; then
    "$B/python_codes3" codes_full | grep -v ' passed, .* failed$' || true
    [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
else
    echo "not ok - python-codes3: build failed"; sed 's/^/    # /' "$B/codes3.log" | head -n 20; rc=1
fi

run_variant c99 python-c99 "$CC" -std=c99 -O2 -g
run_variant cxx17 python-c++17 "$CXX" -x c++ -std=c++17 -O2 -g
run_variant asan python-asan+ubsan "$CC" -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
    -fno-sanitize-recover=undefined
run_variant tsan python-tsan "$CC" -std=c11 -O1 -g -fsanitize=thread
# Every CPython 3.9-3.13 this machine has (pyenv's versions, Debian's
# python3.X-dev): the frame API changed in 3.11 and names moved in 3.12 and
# 3.13. The default python3 above is one of them.
declare -A seen
for pc in /root/.pyenv/versions/3.*/bin/python3-config /usr/bin/python3.*-config; do
    [ -x "$pc" ] || continue
    ver=$("$pc" --includes 2>/dev/null | sed -n 's/.*python\(3\.[0-9]*\).*/\1/p')
    case "$ver" in 3.9|3.1[0-3]) ;; *) continue ;; esac
    [ -n "${seen[$ver]:-}" ] && continue
    seen[$ver]=1
    bin="$B/python_cpython$ver"
    if ! $CC -std=c99 -O1 -g $W $("$pc" --includes) -DTEST_SUITE="\"python-cpython$ver\"" -o "$bin" tests/python/test_python.c \
        $("$pc" --ldflags --embed) -pthread >"$bin.log" 2>&1; then
        echo "not ok - python-cpython$ver: build failed"; sed 's/^/    # /' "$bin.log" | head -n 20; rc=1; continue
    fi
    for m in "" lifecycle; do
        "$bin" $m 2>"$bin.err" | grep -v ' passed, .* failed$' || true
        [ "${PIPESTATUS[0]}" -eq 0 ] || { rc=1; sed 's/^/    # stderr: /' "$bin.err" | head -n 20; }
    done
done
for ver in 3.9 3.10 3.11 3.12 3.13; do
    [ -n "${seen[$ver]:-}" ] || echo "    # CPython $ver: no python3-config for it on this machine; not tested" >&2
done
exit $rc
