#!/usr/bin/env bash
# memobs with no code change: `make preload` builds libmemobs_preload.so
# (preload/memobs_preload.c); tests/preload/test_preload.c, a CUDA program
# that knows nothing of memobs, is linked with -lcudart against the runtime
# double (tests/cuda/cudart_double.c) built as a shared libcudart.so.13 with
# the toolkit runtime's symbol version (mk/cudart_double.map), and run with
# and without LD_PRELOAD: the JSON summary must hold exactly what the
# program says it did, every return code must be what it is without the
# preload. Also 3D, symbol, array and batch copies, cudaHostRegister, graphs
# captured once and launched N times (the program also built for the
# per-thread default stream), threads, fork, the toolkit's real
# libcudart.so.13 (no GPU: every call fails), and programs with no dynamic
# CUDA runtime.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/preload
rm -rf "$B" && mkdir -p "$B"
CC=${CC:-cc}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
CUDA_LIB=${CUDA_LIB:-/usr/local/cuda/lib64}
W="-Wall -Wextra -Werror"

. tests/lib.sh # a clean environment, try
unset LD_PRELOAD MEMOBS_PRELOAD_ROOT
ok() { echo "ok - preload: $1"; }
bad() { echo "not ok - preload: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

for f in "$CUDA_INC/cuda_runtime_api.h" "$CUDA_LIB/libcudart.so.13"; do
    if [ ! -f "$f" ]; then
        echo "not ok - preload: $f is missing (set CUDA_INC / CUDA_LIB; tests/deps.sh installs the toolkit)"
        exit 1
    fi
done


rc=0
LIB=$PWD/$B/libmemobs_preload.so
P=$B/test_preload

# 1. the library: make preload, versioned interposers, memobs' API, no libcudart
if make -s BUILD="$B" preload >"$B/make.log" 2>&1 && [ ! -s "$B/make.log" ] && [ -f "$LIB" ]; then
    syms=$(nm -D --defined-only --with-symbol-versions "$LIB")
    need=$(readelf -d "$LIB" | awk '/NEEDED/ {print $NF}' | tr '\n' ' ')
    und=$(nm -D -u "$LIB" | awk '{print $NF}' | grep '^cu' | tr '\n' ' ')
    miss=""
    want="cudaMemcpy cudaMemcpyAsync cudaMemcpy2D cudaMemcpy2DAsync cudaMemcpyPeer cudaMemcpyPeerAsync cudaMalloc
        cudaFree cudaMallocHost cudaFreeHost cudaHostAlloc cudaMallocManaged cudaMallocAsync cudaFreeAsync
        cudaMemcpy_ptds cudaMemcpyAsync_ptsz cudaMemcpy2D_ptds cudaMemcpy2DAsync_ptsz cudaMallocAsync_ptsz
        cudaFreeAsync_ptsz cudaHostRegister cudaHostUnregister cudaMemcpy3D cudaMemcpy3D_ptds cudaMemcpy3DAsync
        cudaMemcpy3DAsync_ptsz cudaMemcpy3DPeer cudaMemcpy3DPeer_ptds cudaMemcpy3DPeerAsync cudaMemcpy3DPeerAsync_ptsz
        cudaMemcpyToSymbol cudaMemcpyToSymbol_ptds cudaMemcpyToSymbolAsync cudaMemcpyToSymbolAsync_ptsz
        cudaMemcpyFromSymbol cudaMemcpyFromSymbol_ptds cudaMemcpyFromSymbolAsync cudaMemcpyFromSymbolAsync_ptsz
        cudaMemcpy2DToArray cudaMemcpy2DToArray_ptds cudaMemcpy2DToArrayAsync cudaMemcpy2DToArrayAsync_ptsz
        cudaMemcpy2DFromArray cudaMemcpy2DFromArray_ptds cudaMemcpy2DFromArrayAsync cudaMemcpy2DFromArrayAsync_ptsz
        cudaMemcpy2DArrayToArray cudaMemcpy2DArrayToArray_ptds cudaMemcpyBatchAsync cudaMemcpyBatchAsync_ptsz
        cudaMemcpy3DBatchAsync cudaMemcpy3DBatchAsync_ptsz cudaStreamBeginCapture cudaStreamBeginCapture_ptsz
        cudaStreamEndCapture cudaStreamEndCapture_ptsz cudaGraphInstantiate cudaGraphInstantiateWithFlags
        cudaGraphInstantiateWithParams cudaGraphInstantiateWithParams_ptsz cudaGraphLaunch cudaGraphLaunch_ptsz
        cudaGraphExecDestroy cudaGraphDestroy cudaDeviceReset cudaMallocFromPoolAsync cudaMallocFromPoolAsync_ptsz
        cudaGetDriverEntryPoint cudaGetDriverEntryPoint_ptsz cudaGetDriverEntryPointByVersion cudaGetDriverEntryPointByVersion_ptsz"
    for f in $want; do
        echo "$syms" | grep -q " T $f@libcudart.so.13\$" || miss="$miss $f"
    done
    # each versioned cuda* symbol is one of those (none forgotten in the list)
    extra=$(echo "$syms" | awk '/ T cuda.*@libcudart.so.13$/ {sub(/@.*/, "", $3); print $3}' | sort |
        comm -23 - <(echo $want | tr ' ' '\n' | sort) | tr '\n' ' ')
    nwant=$(echo $want | wc -w)
    [ -n "$extra" ] && miss="$miss (not in the list: $extra)"
    for f in memobs_set_phase memobs_region_begin memobs_counter_register memobs_write_summary; do
        echo "$syms" | grep -q " T $f\$" || miss="$miss $f"
    done
    if [ -z "$miss" ] && [ -z "$und" ] && ! echo "$need" | grep -q cuda; then
        ok "make preload: $nwant interposers as name@libcudart.so.13, memobs' C API exported, no libcudart needed"
    else
        bad "make preload: $nwant interposers as name@libcudart.so.13, memobs' C API exported, no libcudart needed" \
            "missing:$miss" "undefined cu*: $und" "NEEDED: $need"
    fi
else
    bad "make preload builds $LIB warning-free" "$(head -c 3000 "$B/make.log")"
    exit 1
fi

# 2. the double as a versioned libcudart.so.13 and the program linked to it
if { $CC -std=c11 -O2 -g -fPIC -shared $W -I. -I"$CUDA_INC" tests/cuda/cudart_double.c -o "$B/libcudart.so.13" \
        -Wl,-soname,libcudart.so.13 -Wl,--version-script=mk/cudart_double.map -pthread &&
    $CC -std=c11 -O2 -g $W -I"$CUDA_INC" tests/preload/test_preload.c -o "$P" -L"$B" -l:libcudart.so.13 -pthread -ldl &&
    $CC -std=c11 -O2 -g $W -DCUDA_API_PER_THREAD_DEFAULT_STREAM -I"$CUDA_INC" tests/preload/test_preload.c -o "${P}_pt" \
        -L"$B" -l:libcudart.so.13 -pthread -ldl &&
    $CC -std=c11 -O2 -g -fPIC -shared $W -I"$CUDA_INC" tests/preload/user.c -o "$B/libuser.so" \
        -L"$B" -l:libcudart.so.13 &&
    $CC -std=c11 -O2 -g -fPIC -shared $W -I"$CUDA_INC" tests/preload/reenter.c -o "$B/libreenter.so" \
        -Wl,--version-script=preload/memobs_preload.map &&
    printf 'int main(void) { return 3; }\n' >"$B/nocuda.c" &&
    $CC -O2 $W "$B/nocuda.c" -o "$B/nocuda" &&
    $CC -O2 $W -static "$B/nocuda.c" -o "$B/nocuda_static" &&
    $CC -std=c11 -O2 $W -I"$CUDA_INC" tests/preload/static_runtime.c -o "$B/static_runtime" \
        "$CUDA_LIB/libcudart_static.a" -ldl -pthread -lrt; } >"$B/build.log" 2>&1 && [ ! -s "$B/build.log" ] &&
    nm -D --with-symbol-versions "$P" | grep -q ' U cudaMemcpy@libcudart.so.13$' &&
    [ "$(nm -D "${P}_pt" | grep -c ' U cuda.*_pt[sd][sz]@libcudart.so.13$')" = 25 ]; then
    ok "build: the double as libcudart.so.13 (symbols @@libcudart.so.13), test_preload linked to it, and built for the per-thread default stream (25 _ptds/_ptsz calls); a static program; one with libcudart_static.a"
else
    bad "build: the double as libcudart.so.13 (symbols @@libcudart.so.13), test_preload linked to it" \
        "$(head -c 3000 "$B/build.log")"
    exit 1
fi

# run NAME MODE [VAR=VALUE...]: test_preload MODE against the double; $B/NAME.{out,err,st}
run() {
    local name=$1 mode=$2
    shift 2
    timeout 60 env LD_LIBRARY_PATH="$PWD/$B" "$@" "${PROG:-$P}" "$mode" >"$B/$name.out" 2>"$B/$name.err"
    echo $? >"$B/$name.st"
}
PRE=(LD_PRELOAD="$LIB" MEMOBS_FORMAT=json MEMOBS_OOM_REPORT=0)

# 3. without the preload: the program passes, memobs says nothing
run plain main MEMOBS_SUMMARY="$PWD/$B/plain.json"
if [ "$(cat "$B/plain.st")" = 0 ] && [ ! -s "$B/plain.err" ] && [ ! -e "$B/plain.json" ] && [ -n "$(line rcs "$B/plain.out")" ]; then
    ok "main without LD_PRELOAD: every rc as documented, no memobs output"
else
    bad "main without LD_PRELOAD: every rc as documented, no memobs output" "status $(cat "$B/plain.st")" \
        "$(head -c 1500 "$B/plain.err")"
fi

# 4. with it: figures exact, rcs unchanged, errors counted, phases from the program
run pre main "${PRE[@]}" MEMOBS_SUMMARY="$PWD/$B/pre.json"
if [ "$(cat "$B/pre.st")" = 0 ] && [ ! -s "$B/pre.err" ] && [ "$(line rcs "$B/pre.out")" = "$(line rcs "$B/plain.out")" ]; then
    ok "main with LD_PRELOAD: exit 0, the same 38 return codes as without (3 injected errors), nothing on stderr"
else
    bad "main with LD_PRELOAD: exit 0, the same 38 return codes as without (3 injected errors), nothing on stderr" \
        "status $(cat "$B/pre.st")" "with:    $(line rcs "$B/pre.out")" "without: $(line rcs "$B/plain.out")" \
        "$(head -c 1500 "$B/pre.err")"
fi
if out=$(expect_check "$B/pre.json" "$(line expect "$B/pre.out")"); then
    ok "main: H2D/D2H/D2D bytes and counts, prefill/decode split (memobs_set_phase by dlsym), device/pinned/managed current, peak, allocs, frees exact; 3 failed calls counted, not recorded"
else
    bad "main: H2D/D2H/D2D bytes and counts, prefill/decode split (memobs_set_phase by dlsym), device/pinned/managed current, peak, allocs, frees exact; 3 failed calls counted, not recorded" "${out//    # /}"
fi

# 4b. the rest of the runtime API: 3D, peer 3D, symbol, array and batch copies, cudaHostRegister;
# capture and graph launches. Each built plainly and for the per-thread default stream (_ptds/_ptsz).
for prog in "$P" "${P}_pt"; do
    v=${prog##*_preload}
    v=${v:+ (per-thread default stream: the _ptds/_ptsz entry points)}
    for m in copies graphs; do
        PROG=$prog run "${m}0" $m
        PROG=$prog run "${m}1" $m "${PRE[@]}" MEMOBS_SUMMARY="$PWD/$B/$m.json"
        r0=$(line rcs "$B/${m}0.out")
        r1=$(line rcs "$B/${m}1.out")
        case $m in
        copies) what="3D H2D/D2H (cudaMemcpyDefault), 3D peer, symbols to/from, batches of one and three directions, a 3D batch, cudaHostRegister/Unregister: bytes, counts, phases, pinned block exact; 15 errors (invalid kind, zero extent, array, device, symbol, legacy stream, access order...) passed through, counted, not recorded" ;;
        graphs) what="3 copies captured once, 2 executables launched 5 + 2 times: counted 7 times each (H2D 700 + 10 uncaptured, D2D 56, D2H 280); a capture invalidated by cudaMalloc and a launch of a destroyed executable count nothing (3 failures)" ;;
        esac
        if [ "$(cat "$B/${m}0.st")" = 0 ] && [ "$(cat "$B/${m}1.st")" = 0 ] && [ ! -s "$B/${m}0.err" ] &&
            [ ! -s "$B/${m}1.err" ] && [ -n "$r0" ] && [ "$r0" = "$r1" ] &&
            out=$(expect_check "$B/$m.json" "$(line expect "$B/${m}1.out")"); then
            ok "$m$v: the same $(echo $r0 | wc -w) return codes with and without LD_PRELOAD; $what"
        else
            bad "$m$v: the same return codes with and without LD_PRELOAD; $what" \
                "status $(cat "$B/${m}0.st") / $(cat "$B/${m}1.st")" "without: $r0" "with:    $r1" "${out//    # /}" \
                "$(head -c 1500 "$B/${m}0.err")" "$(head -c 1500 "$B/${m}1.err")"
        fi
    done
done

# 5. threads
run thr threads "${PRE[@]}" MEMOBS_SUMMARY="$PWD/$B/thr.json"
if [ "$(cat "$B/thr.st")" = 0 ] && out=$(expect_check "$B/thr.json" "$(line expect "$B/thr.out")"); then
    ok "threads: 4 threads x 50 H2D copies of 1000 bytes, each in decode: 200000 bytes, 200 copies exact"
else
    bad "threads: 4 threads x 50 H2D copies of 1000 bytes, each in decode: 200000 bytes, 200 copies exact" \
        "status $(cat "$B/thr.st")" "${out//    # /}" "$(head -c 1000 "$B/thr.err")"
fi

# 5b. MEMOBS_SUMMARY=stderr: the text summary, as for any memobs program
run txt threads LD_PRELOAD="$LIB" MEMOBS_OOM_REPORT=0 MEMOBS_SUMMARY=stderr
if [ "$(cat "$B/txt.st")" = 0 ] && grep -q '^== memobs summary ==' "$B/txt.err" &&
    grep -Eq '^  H2D +\| +200\.00 KB +200 \| +0 B +0 \| +200\.00 KB +200 \| +0 B +0$' "$B/txt.err" &&
    grep -Eq '^  device +\| +4\.00 KB +4\.00 KB \| +4 +4 +0 ' "$B/txt.err"; then
    ok "MEMOBS_SUMMARY=stderr: the text summary's H2D row (200.00 KB, 200 ops, all decode) and device row (4 live blocks)"
else
    bad "MEMOBS_SUMMARY=stderr: the text summary's H2D row (200.00 KB, 200 ops, all decode) and device row (4 live blocks)" \
        "status $(cat "$B/txt.st")" "$(head -c 1500 "$B/txt.err")"
fi

# 6. fork: the child writes its own summary (%p), with the parent's figures before the fork
# and no CUDA call of memobs' own (the double reports any on stderr)
run fork fork "${PRE[@]}" MEMOBS_SUMMARY="$PWD/$B/fork.%p.json" MEMOBS_CUDA_TIMING=1
child=$(line child "$B/fork.out")
parent=$(line parent "$B/fork.out")
if [ "$(cat "$B/fork.st")" = 0 ] && [ -n "$child" ] && [ -n "$parent" ] && [ ! -s "$B/fork.err" ] &&
    o1=$(expect_check "$B/fork.$child.json" '{"total": {"h2d_bytes": 100, "h2d_count": 1, "d2h_bytes": 0, "d2h_count": 0}}') &&
    o2=$(expect_check "$B/fork.$parent.json" '{"total": {"h2d_bytes": 100, "h2d_count": 1, "d2h_bytes": 200, "d2h_count": 1}}'); then
    ok "fork: the child's summary holds the parent's H2D before the fork, the parent's its D2H after; no CUDA call in the child"
else
    bad "fork: the child's summary holds the parent's H2D before the fork, the parent's its D2H after; no CUDA call in the child" \
        "status $(cat "$B/fork.st")" "$(cat "$B/fork.out")" "$o1" "$o2" "$(head -c 1000 "$B/fork.err")" "$(ls "$B" | grep fork)"
fi

# 7. re-entry: the runtime calling itself is recorded once
run reent reentry "${PRE[@]}" LD_PRELOAD="$LIB $PWD/$B/libreenter.so" MEMOBS_SUMMARY="$PWD/$B/reent.json"
if [ "$(cat "$B/reent.st")" = 0 ] && [ ! -s "$B/reent.err" ] &&
    out=$(expect_check "$B/reent.json" "$(line expect "$B/reent.out")"); then
    ok "re-entry: a cudaMallocHost that calls cudaHostAlloc is one pinned block (allocs 1, frees 1, peak 4096)"
else
    bad "re-entry: a cudaMallocHost that calls cudaHostAlloc is one pinned block (allocs 1, frees 1, peak 4096)" \
        "status $(cat "$B/reent.st")" "$out" "$(head -c 1000 "$B/reent.err")"
fi

# 7b. before main and after the exit handlers
# (the destructor's two calls come after the runtime's teardown: they fail, and the double says so)
run edges edges "${PRE[@]}" TEST_PRELOAD_EDGES=1 MEMOBS_SUMMARY="$PWD/$B/edges.json"
if [ "$(cat "$B/edges.st")" = 0 ] &&
    [ "$(sed 's/ (pid [0-9]*)$//' "$B/edges.err")" = "cudart double: cudaMemcpy called after the runtime's teardown
cudart double: cudaFree called after the runtime's teardown" ] &&
    out=$(expect_check "$B/edges.json" "$(line expect "$B/edges.out")"); then
    ok "calls in a constructor (before main) recorded, those in a destructor (after the runtime's teardown) failed and counted: the summary, registered before main, comes after both; exit 0"
else
    bad "calls in a constructor (before main) recorded, those in a destructor (after the runtime's teardown) failed and counted: the summary, registered before main, comes after both; exit 0" \
        "status $(cat "$B/edges.st")" "$out" "$(head -c 1000 "$B/edges.err")"
fi

# 7c. Python: a library linked with -lcudart called through ctypes, the phase set through ctypes
timeout 60 env LD_LIBRARY_PATH="$PWD/$B" "${PRE[@]}" MEMOBS_SUMMARY="$PWD/$B/py.json" \
    python3 tests/python/preload_check.py "$PWD/$B" >"$B/py.out" 2>"$B/py.err"
st=$?
if [ $st = 0 ] && [ ! -s "$B/py.err" ] && out=$(expect_check "$B/py.json" '{"total": {"h2d_bytes": 5096, "h2d_count": 2}, "decode": {"h2d_bytes": 4096, "h2d_count": 1}, "prefill": {"h2d_bytes": 1000, "h2d_count": 1}, "memory": {"device": {"allocs": 2, "frees": 2, "current_bytes": 0, "peak_bytes": 4096}}}'); then
    ok "python3 under the preload: a ctypes-loaded library's copies exact by phase (set through ctypes.CDLL(None).memobs_set_phase); a call on the runtime's own handle not seen"
else
    bad "python3 under the preload: a ctypes-loaded library's copies exact by phase; a call on the runtime's own handle not seen" \
        "status $st" "$out" "$(head -c 1000 "$B/py.err")"
fi

# 7e. manual vs observed: the program's own memobs_record_xfer calls (through the
# preload's API) kept apart from what the interposers saw, side by side
if $CC -std=c11 -O2 $W -I"$CUDA_INC" tests/preload/manual.c -o "$B/manual" -L"$B" -l:libcudart.so.13 -ldl \
    >"$B/manual.log" 2>&1; then
    timeout 60 env LD_LIBRARY_PATH="$PWD/$B" "$B/manual" >"$B/manual0.out" 2>"$B/manual0.err"
    st0=$?
    timeout 60 env LD_LIBRARY_PATH="$PWD/$B" "${PRE[@]}" MEMOBS_SUMMARY="$PWD/$B/manual.json" "$B/manual" \
        >"$B/manual.out" 2>"$B/manual.err"
    st=$?
    timeout 60 env LD_LIBRARY_PATH="$PWD/$B" LD_PRELOAD="$LIB" MEMOBS_OOM_REPORT=0 MEMOBS_SUMMARY=stderr "$B/manual" \
        >/dev/null 2>"$B/manual_txt.err"
    st2=$?
    if [ $st0 = 0 ] && [ ! -s "$B/manual0.err" ] && [ $st = 0 ] && [ ! -s "$B/manual.err" ] && [ $st2 = 0 ] &&
        out=$(expect_check "$B/manual.json" "$(line expect "$B/manual.out")") &&
        grep -Eq '^  H2D +\| +45\.06 KB +11 \| +40\.96 KB +10 \| +-4\.10 KB +-1$' "$B/manual_txt.err" &&
        grep -Eq '^  D2H +\| +8\.19 KB +2 \| +8\.19 KB +2 \| +0 B +\+0$' "$B/manual_txt.err" &&
        grep -q '^  D2H   by phase, observed: prefill 0 B, decode 8.19 KB, unphased 0 B; manual: prefill 8.19 KB, decode 0 B, unphased 0 B$' "$B/manual_txt.err"; then
        ok "manual vs observed: 11 H2D copies seen, 10 counted by hand (-4.10 KB in the text summary's check table); 2 D2H copies seen in decode, counted by hand in prefill (the by-phase line); exact in JSON"
    else
        bad "manual vs observed: 11 H2D copies seen, 10 counted by hand; 2 D2H seen in decode, counted in prefill" \
            "status $st0 / $st / $st2" "${out//    # /}" "$(head -c 1500 "$B/manual_txt.err")" "$(head -c 500 "$B/manual.err")"
    fi
else
    bad "manual vs observed: tests/preload/manual.c builds" "$(head -c 2000 "$B/manual.log")"
fi

# 7d. the library built with ASan+UBSan (gcc: libasan.so is preloaded first), main, threads, re-entry, fork
GCC=${GCC:-gcc}
ASAN_SO=$($GCC -print-file-name=libasan.so)
if ! $GCC -std=gnu11 -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fPIC -shared $W -I. -I"$CUDA_INC" \
    preload/memobs_preload.c -o "$B/libmemobs_preload_asan.so" -Wl,--version-script=preload/memobs_preload.map \
    -pthread -ldl -lm >"$B/asan.log" 2>&1 || [ ! -s "$B/libmemobs_preload_asan.so" ] || [ "${ASAN_SO#/}" = "$ASAN_SO" ]; then
    bad "ASan+UBSan: the library builds with $GCC -fsanitize=address,undefined and libasan.so is found" \
        "libasan.so: $ASAN_SO" "$(head -c 2000 "$B/asan.log")"
else
    fails=""
    for m in main threads reentry fork copies graphs; do
        pre="$ASAN_SO $PWD/$B/libmemobs_preload_asan.so"
        [ $m = reentry ] && pre="$pre $PWD/$B/libreenter.so"
        run "asan_$m" $m "${PRE[@]}" LD_PRELOAD="$pre" MEMOBS_SUMMARY="$PWD/$B/asan_$m.%p.json"
        # A fork() child's LeakSanitizer lists the parent's threads (memobs'
        # stop-signal writer among them), which the child does not have, and
        # notes it could not suspend one; its leak check still runs: only
        # that note is set aside.
        [ $m = fork ] && sed -i '/^==[0-9]*==Running thread [0-9]* was not suspended\. False leaks are possible\.$/d' \
            "$B/asan_$m.err"
        if [ "$(cat "$B/asan_$m.st")" != 0 ] || [ -s "$B/asan_$m.err" ]; then
            fails="$fails $m(status $(cat "$B/asan_$m.st"): $(head -c 600 "$B/asan_$m.err"))"
        elif [ $m != fork ] && ! o=$(expect_check "$(ls "$B"/asan_$m.*.json | head -n 1)" "$(line expect "$B/asan_$m.out")"); then
            fails="$fails $m($o)"
        fi
    done
    if [ -z "$fails" ]; then
        ok "ASan+UBSan (leaks on): main, threads, re-entry, fork, copies, graphs clean, figures exact"
    else
        bad "ASan+UBSan (leaks on): main, threads, re-entry, fork, copies, graphs clean, figures exact" "$fails"
    fi
fi

# 8. the toolkit's libcudart.so.13, no GPU: every call fails, the same errors with the preload
realrun() {
    local name=$1
    shift
    timeout 60 env LD_LIBRARY_PATH="$CUDA_LIB" "$@" "$P" real >"$B/$name.out" 2>"$B/$name.err"
    echo $? >"$B/$name.st"
}
realrun real0
realrun real1 "${PRE[@]}" MEMOBS_SUMMARY="$PWD/$B/real.json"
r0=$(line rcs "$B/real0.out")
r1=$(line rcs "$B/real1.out")
if [ "$(cat "$B/real0.st")" = 0 ] && [ "$(cat "$B/real1.st")" = 0 ] && [ -n "$r0" ] && [ "$r0" = "$r1" ] &&
    out=$(expect_check "$B/real.json" '{"total": {"h2d_count": 0, "d2h_count": 0, "d2d_count": 0}, "memory": {"device": {"allocs": 0, "frees": 0}, "pinned": {"allocs": 0}}, "counters": {"preload_failed_calls": 11}}'); then
    ok "the toolkit's libcudart.so.13 without a GPU: 11 calls (cudaHostRegister, cudaMemcpy3D, cudaMemcpyToSymbol, cudaMemcpyBatchAsync, cudaStreamBeginCapture, cudaGraphLaunch among them) fail with the same codes as without the preload (rcs:$r0), nothing recorded, 11 failures counted"
else
    bad "the toolkit's libcudart.so.13 without a GPU: 11 calls fail with the same codes as without the preload, nothing recorded, 11 failures counted" \
        "status $(cat "$B/real0.st") / $(cat "$B/real1.st")" "without: $r0" "with:    $r1" "${out//    # /}" \
        "$(head -c 1000 "$B/real1.err")"
fi

# 9. no dynamic CUDA runtime: one line at exit, the exit status unchanged
env LD_PRELOAD="$LIB" MEMOBS_SUMMARY="$PWD/$B/nocuda.json" "$B/nocuda" >"$B/nocuda.out" 2>"$B/nocuda.err"
st=$?
if [ $st = 3 ] && [ ! -s "$B/nocuda.out" ] && [ "$(wc -l <"$B/nocuda.err")" = 1 ] &&
    grep -q '^memobs preload: no CUDA call was intercepted in pid [0-9]* (nocuda): no dynamic CUDA runtime (libcudart.so) or driver' "$B/nocuda.err"; then
    ok "a program without the dynamic CUDA runtime: exit status 3 unchanged, one line: $(cat "$B/nocuda.err")"
else
    bad "a program without the dynamic CUDA runtime: exit status 3 unchanged, one line at exit" "status $st" \
        "$(head -c 1000 "$B/nocuda.err")"
fi

# 9b. a launcher and a shell around the program: they made no CUDA call and
# recorded nothing, so they write no summary over the program's
rm -f "$B/launch.json"
timeout 60 env LD_LIBRARY_PATH="$PWD/$B" LD_PRELOAD="$LIB" MEMOBS_FORMAT=json MEMOBS_OOM_REPORT=0 \
    MEMOBS_SUMMARY="$PWD/$B/launch.json" timeout 50 sh -c '"$1" threads >/dev/null; ls / >/dev/null; true' sh "$P" \
    2>"$B/launch.err"
st=$?
timeout 60 env LD_LIBRARY_PATH="$PWD/$B" LD_PRELOAD="$LIB" MEMOBS_OOM_REPORT=0 MEMOBS_SUMMARY=stderr \
    timeout 50 sh -c '"$1" threads >/dev/null; ls / >/dev/null; true' sh "$P" 2>"$B/launch_txt.err"
st2=$?
if [ $st = 0 ] && [ $st2 = 0 ] && out=$(expect_check "$B/launch.json" '{"total": {"h2d_bytes": 200000, "h2d_count": 200}}') &&
    [ "$(grep -c '^== memobs summary ==' "$B/launch_txt.err")" = 1 ] && [ ! -e "$B/nocuda.json" ]; then
    ok "timeout, sh and ls around the program under the preload: one summary, the program's (200 copies); they write none over it (nor a program with no CUDA)"
else
    bad "timeout, sh and ls around the program under the preload: one summary, the program's" "status $st / $st2" \
        "${out//    # /}" "summaries on stderr: $(grep -c '^== memobs summary ==' "$B/launch_txt.err")" \
        "nocuda.json: $(ls "$B"/nocuda.json 2>&1)" "$(head -c 1000 "$B/launch.err")"
fi

# 10. a statically linked program: no dynamic loader, so nothing is preloaded; it runs as without
env LD_PRELOAD="$LIB" MEMOBS_SUMMARY="$PWD/$B/static.json" "$B/nocuda_static" >"$B/static.out" 2>"$B/static.err"
st=$?
if [ $st = 3 ] && [ ! -s "$B/static.out" ] && [ ! -s "$B/static.err" ] && [ ! -e "$B/static.json" ]; then
    ok "a statically linked program: exit status 3 unchanged, no output (the preload is never loaded)"
else
    bad "a statically linked program: exit status 3 unchanged, no output (the preload is never loaded)" "status $st" \
        "$(head -c 1000 "$B/static.err")"
fi

# 11. the static CUDA runtime (libcudart_static.a): nothing to intercept, said once; its error and status unchanged
env LD_LIBRARY_PATH="$CUDA_LIB" "$B/static_runtime" >"$B/srt0.out" 2>"$B/srt0.err"
st0=$?
env LD_PRELOAD="$LIB" LD_LIBRARY_PATH="$CUDA_LIB" "$B/static_runtime" >"$B/srt1.out" 2>"$B/srt1.err"
st1=$?
if [ $st0 = 4 ] && [ $st1 = 4 ] && [ -s "$B/srt0.out" ] && cmp -s "$B/srt0.out" "$B/srt1.out" &&
    [ "$(wc -l <"$B/srt1.err")" = 1 ] && grep -q '^memobs preload: no CUDA call was intercepted' "$B/srt1.err"; then
    ok "a program linked with libcudart_static.a: the same output ($(cat "$B/srt1.out")) and exit status 4, one line at exit"
else
    bad "a program linked with libcudart_static.a: the same output and exit status 4, one line at exit" \
        "status $st0 / $st1" "without: $(cat "$B/srt0.out")" "with: $(cat "$B/srt1.out")" "$(head -c 1000 "$B/srt1.err")"
fi

exit $rc
