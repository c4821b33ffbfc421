#!/usr/bin/env bash
# memobs' regions and markers as NVTX ranges and marks (memobs_cuda.h),
# without a GPU, through NVTX's real consumer path: tests/cuda/nvtx/nvtx_inject.c
# is built as an NVTX injection library (what Nsight Systems loads) and
# named by NVTX_INJECTION64_PATH; the NVTX v3 headers compiled into the
# program dlopen it at the first NVTX call, and it writes every call to the
# file NVTXDBL_LOG names. First the double's own selftest
# (tests/cuda/nvtx/selftest.c, raw NVTX calls), then tests/cuda/test_nvtx.c linked
# with the CUDA runtime double (no libcudart, no -ldl: dlopen is in glibc's
# libc since 2.34) as C99, C11, C++17, under nvcc (-x cu) and TSan: the
# in-process tests (stderr must stay empty) and one fresh process per
# MEMOBS_NVTX value; then MEMOBS_NO_NVTX and MEMOBS_DISABLE builds (no NVTX
# code linked in, no NVTX call).
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/nvtx
mkdir -p "$B"
CC=${CC:-cc}
CXX=${CXX:-c++}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror -I. -I$CUDA_INC"

. tests/lib.sh # a clean environment (MEMOBS_NVTX unset), sanitizer options

for f in cuda_runtime_api.h nvtx3/nvToolsExt.h; do
    if [ ! -f "$CUDA_INC/$f" ]; then
        echo "not ok - nvtx: no $CUDA_INC/$f (set CUDA_INC=...)"
        exit 1
    fi
done

ok() { echo "ok - $1"; }
bad() { echo "not ok - $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

# The injection double.
INJ="$B/libnvtx_inject.so"
if ! $CC -std=c11 $W -fPIC -shared -o "$INJ" tests/cuda/nvtx/nvtx_inject.c -pthread >"$B/inject.log" 2>&1; then
    bad "nvtx-double: build failed" "$(head -n 20 "$B/inject.log")"
    exit 1
fi
if nm -D --defined-only "$INJ" | grep -q ' T InitializeInjectionNvtx2$'; then
    ok "nvtx-double: exports InitializeInjectionNvtx2"
else
    bad "nvtx-double: exports InitializeInjectionNvtx2" "$(nm -D --defined-only "$INJ" | head -n 5)"
fi
NVTX_INJECTION64_PATH=$(realpath "$INJ") || exit 1 # BUILD may be relative or absolute
export NVTX_INJECTION64_PATH

# run LOG LABEL CMD...: CMD with the double writing to a fresh LOG; stdout's
# ok lines shown, " (LABEL)" after each name when LABEL is not empty (a
# non-zero exit fails), stderr kept in $B/err
run() {
    local log=$1 label=${2:+ ($2)}
    shift 2
    rm -f "$log"
    NVTXDBL_LOG=$log "$@" 2>"$B/err" | grep -v ' passed, .* failed$' | sed -E "s/^((not )?ok - .*)\$/\1$label/"
    if [ "${PIPESTATUS[0]}" -ne 0 ]; then
        rc=1
        sed 's/^/    # stderr: /' "$B/err" | head -n 10
    fi
}

# The double's selftest, as C11 and under TSan (it takes calls from threads).
for v in c11 tsan; do
    flags="-O2 -g"
    [ $v = tsan ] && flags="-O1 -g -fsanitize=thread"
    if $CC -std=c11 $flags $W -DTEST_SUITE="\"nvtx-double-$v\"" -o "$B/selftest_$v" tests/cuda/nvtx/selftest.c \
        -pthread >"$B/selftest_$v.log" 2>&1; then
        run "$B/selftest_$v.nvtx" "" "$B/selftest_$v"
        [ -s "$B/err" ] && bad "nvtx-double-$v: nothing on stderr" "$(head -n 10 "$B/err")"
    else
        bad "nvtx-double-$v: build failed" "$(head -n 20 "$B/selftest_$v.log")"
    fi
done

# variant NAME TESTCOMP LINKER EXTRA-OBJECTS FLAGS...: tests/cuda/test_nvtx.c built
# with TESTCOMP and FLAGS, the CUDA runtime double as C11 with FLAGS, linked
# by LINKER with EXTRA-OBJECTS (no libcudart, no -ldl).
variant() {
    local name=$1 tcomp=$2 link=$3 extra=$4 suite="nvtx-$1" bin="$B/test_$1"
    shift 4
    if ! { $CC -std=c11 "$@" $W -c -o "$bin.double.o" tests/cuda/cudart_double.c &&
        $tcomp "$@" -DTEST_SUITE="\"$suite\"" -c -o "$bin.o" tests/cuda/test_nvtx.c &&
        $link "$@" -o "$bin" "$bin.o" "$bin.double.o" $extra -pthread -rdynamic -lm; } >"$bin.log" 2>&1; then
        bad "$suite: build failed" "$(head -n 30 "$bin.log")"
        return
    fi
    if nm "$bin" | grep -q ' U cuda'; then
        bad "$suite: every CUDA symbol comes from the double" "$(nm "$bin" | grep ' U cuda')"
    fi
    local nvtx_code
    nvtx_code=$(nm "$bin" | grep -c 'nvtxGlobals')
    case $name in
    nonvtx | disable)
        if [ "$nvtx_code" -eq 0 ]; then ok "$suite: no NVTX code linked in"; else
            bad "$suite: no NVTX code linked in" "$(nm "$bin" | grep nvtx | head -n 5)"; fi
        run "$B/$name.nvtx" "" "$bin"
        if [ -s "$B/err" ]; then bad "$suite: nothing on stderr" "$(head -n 10 "$B/err")"; fi
        run "$B/$name.nvtx" "MEMOBS_NVTX=1" env MEMOBS_NVTX=1 "$bin"
        local want=""
        [ $name = nonvtx ] && want="memobs: warning: MEMOBS_NVTX='1': NVTX is not compiled in \
(MEMOBS_NO_NVTX, or no <nvtx3/nvToolsExt.h>); ignored"
        if [ "$(cat "$B/err")" = "$want" ]; then
            ok "$suite: MEMOBS_NVTX=1: ${want:+one warning, }no NVTX call"
        else
            bad "$suite: MEMOBS_NVTX=1: ${want:+one warning, }no NVTX call" "stderr: $(head -n 5 "$B/err")"
        fi
        return
        ;;
    esac
    if [ "$nvtx_code" -eq 0 ]; then bad "$suite: NVTX compiled in (nvtxGlobals)"; fi
    if ldd "$bin" | grep -q 'libdl\.'; then bad "$suite: linked without libdl" "$(ldd "$bin" | grep libdl)"; fi

    run "$B/$name.nvtx" "" "$bin"
    if [ -s "$B/err" ]; then bad "$suite: in-process tests: nothing on stderr" "$(head -n 10 "$B/err")"; else
        ok "$suite: in-process tests: nothing on stderr"; fi

    local v
    for v in 0 off false no OFF; do
        run "$B/$name.off.nvtx" "MEMOBS_NVTX=$v" env MEMOBS_NVTX=$v "$bin" env_off
        if [ -s "$B/err" ]; then bad "$suite: MEMOBS_NVTX=$v: nothing on stderr" "$(head -n 5 "$B/err")"; fi
    done
    for v in 1 on true yes; do
        run "$B/$name.on.nvtx" "MEMOBS_NVTX=$v" env MEMOBS_NVTX=$v "$bin" env_on
        if [ -s "$B/err" ]; then bad "$suite: MEMOBS_NVTX=$v: nothing on stderr" "$(head -n 5 "$B/err")"; fi
    done
    run "$B/$name.bogus.nvtx" "MEMOBS_NVTX=bogus" env MEMOBS_NVTX=bogus "$bin" env_bogus
    local want="memobs: warning: MEMOBS_NVTX='bogus' is not 0/1/on/off/true/false/yes/no; NVTX ranges stay on"
    if [ "$(cat "$B/err")" = "$want" ]; then
        ok "$suite: MEMOBS_NVTX=bogus: one warning, NVTX stays on"
    else
        bad "$suite: MEMOBS_NVTX=bogus: one warning, NVTX stays on" "stderr: $(head -n 5 "$B/err")"
    fi
}

rc=${rc:-0}
variant c99 "$CC -std=c99 $W" "$CC" "" -O2 -g
variant c11 "$CC -std=c11 $W" "$CC" "" -O2 -g
variant cxx17 "$CXX -x c++ -std=c++17 $W" "$CXX" "" -O2 -g
if [ -x "$NVCC" ]; then
    $CC -std=c11 $W -c -o "$B/fatbin_stubs.o" tests/cuda/nvtx/fatbin_stubs.c || rc=1
    variant nvcc "$NVCC -x cu -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror -I. -I$CUDA_INC" "$CXX" \
        "$B/fatbin_stubs.o" -O2 -g
else
    bad "nvtx-nvcc: nvcc not found at $NVCC (set NVCC=...)"
fi
variant tsan "$CC -std=c11 $W" "$CC" "" -O1 -g -fsanitize=thread
variant nonvtx "$CC -std=c11 $W" "$CC" "" -O2 -g -DMEMOBS_NO_NVTX
variant disable "$CC -std=c11 $W" "$CC" "" -O2 -g -DMEMOBS_DISABLE
exit $rc
