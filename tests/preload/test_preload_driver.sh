#!/usr/bin/env bash
# The CUDA driver API in the LD_PRELOAD library (issue 17): programs
# linked with -lcuda against tests/preload/driver_double.c built as a
# shared libcuda.so.1 (or the toolkit's stub libcuda.so), run with and
# without LD_PRELOAD=libmemobs_preload.so: the same return codes, the JSON
# summary exactly what the program did (bytes and counts by direction and
# phase, device/pinned/managed blocks, the device of each), failed calls
# counted and not recorded. Also 4 threads, a program using the runtime
# double and the driver double (a runtime layer calling the driver inside
# the runtime interposers: recorded once), memobs' own driver lookups, and
# the library built with ASan+UBSan.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/preload_driver
rm -rf "$B" && mkdir -p "$B/stub"
CC=${CC:-cc}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
CUDA_LIB=${CUDA_LIB:-/usr/local/cuda/lib64}
W="-Wall -Wextra -Werror"

. tests/lib.sh # a clean environment
unset LD_PRELOAD MEMOBS_PRELOAD_ROOT
ok() { echo "ok - preload-driver: $1"; }
bad() { echo "not ok - preload-driver: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

for f in "$CUDA_INC/cuda.h" "$CUDA_INC/cuda_runtime_api.h" "$CUDA_LIB/stubs/libcuda.so"; do
    if [ ! -f "$f" ]; then
        echo "not ok - preload-driver: $f is missing (set CUDA_INC / CUDA_LIB; tests/deps.sh installs the toolkit)"
        exit 1
    fi
done


rc=0
LIB=$PWD/$B/libmemobs_preload.so
P=$B/driver_user
DRV_FNS="cuMemcpyHtoD_v2 cuMemcpyDtoH_v2 cuMemcpyDtoD_v2 cuMemcpyHtoDAsync_v2 cuMemcpyDtoHAsync_v2
    cuMemcpyDtoDAsync_v2 cuMemcpy cuMemcpyAsync cuMemcpyPeer cuMemcpyPeerAsync cuMemcpyHtoD_v2_ptds
    cuMemcpyDtoH_v2_ptds cuMemcpyDtoD_v2_ptds cuMemcpyHtoDAsync_v2_ptsz cuMemcpyDtoHAsync_v2_ptsz
    cuMemcpyDtoDAsync_v2_ptsz cuMemcpy_ptds cuMemcpyAsync_ptsz cuMemcpyPeer_ptds cuMemcpyPeerAsync_ptsz
    cuMemAlloc_v2 cuMemAllocPitch_v2 cuMemAllocHost_v2 cuMemHostAlloc cuMemAllocManaged cuMemAllocAsync
    cuMemAllocAsync_ptsz cuMemAllocFromPoolAsync cuMemAllocFromPoolAsync_ptsz cuMemFree_v2 cuMemFreeHost
    cuMemFreeAsync cuMemFreeAsync_ptsz"

# 1. the library: warning-free, 33 driver interposers exported unversioned, no libcuda needed
if make -s BUILD="$B" preload >"$B/make.log" 2>&1 && [ ! -s "$B/make.log" ] && [ -f "$LIB" ]; then
    syms=$(nm -D --defined-only --with-symbol-versions "$LIB")
    need=$(readelf -d "$LIB" | awk '/NEEDED/ {print $NF}' | tr '\n' ' ')
    und=$(nm -D -u "$LIB" | awk '{print $NF}' | grep '^cu' | tr '\n' ' ')
    miss="" n=0
    for f in $DRV_FNS; do
        n=$((n + 1))
        echo "$syms" | grep -q " T $f\$" || miss="$miss $f"
    done
    if [ -z "$miss" ] && [ $n = 33 ] && [ -z "$und" ] && ! echo "$need" | grep -q cuda; then
        ok "make preload: the 33 driver interposers exported unversioned, no libcuda or libcudart needed"
    else
        bad "make preload: the 33 driver interposers exported unversioned, no libcuda or libcudart needed" \
            "missing or versioned:$miss" "undefined cu*: $und" "NEEDED: $need"
    fi
else
    bad "make preload builds $LIB warning-free" "$(head -c 3000 "$B/make.log")"
    exit 1
fi

# 2. the doubles, the programs, the layer; the stub as libcuda.so.1. The
# driver double's calls to itself (its _ptds entry points) bind inside it
# (-Bsymbolic), as the driver's do: only the layer re-enters the preload.
if { $CC -std=c11 -O2 -g -fPIC -shared $W -I"$CUDA_INC" tests/preload/driver_double.c -o "$B/libcuda.so.1" \
        -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -pthread &&
    $CC -std=c11 -O2 -g -fPIC -shared $W -I. -I"$CUDA_INC" tests/cuda/cudart_double.c -o "$B/libcudart.so.13" \
        -Wl,-soname,libcudart.so.13 -Wl,--version-script=mk/cudart_double.map -pthread &&
    $CC -std=c11 -O2 -g $W -I"$CUDA_INC" -DCUDA_API_PER_THREAD_DEFAULT_STREAM -c tests/preload/driver_ptds.c \
        -o "$B/driver_ptds.o" &&
    $CC -std=c11 -O2 -g $W -I"$CUDA_INC" tests/preload/driver_user.c "$B/driver_ptds.o" -o "$P" \
        -L"$B" -l:libcuda.so.1 -pthread -ldl &&
    $CC -std=c11 -O2 -g -fPIC -shared $W -I"$CUDA_INC" tests/preload/driver_layer.c -o "$B/libdriver_layer.so" \
        -L"$B" -l:libcuda.so.1 &&
    $CC -std=c11 -O2 -g $W -I"$CUDA_INC" tests/preload/driver_mixed.c -o "$B/driver_mixed" \
        -L"$B" -l:libcuda.so.1 -l:libcudart.so.13 &&
    ln -s "$CUDA_LIB/stubs/libcuda.so" "$B/stub/libcuda.so.1"; } >"$B/build.log" 2>&1 && [ ! -s "$B/build.log" ]; then
    refs=$(nm -u "$P" | awk '{print $NF}' | grep '^cuMem' | sort | tr '\n' ' ')
    want=$(echo $DRV_FNS | tr ' ' '\n' | sort | tr '\n' ' ')
    if [ "$refs" = "$want" ]; then
        ok "build: the driver double as libcuda.so.1; driver_user (with driver_ptds.c built for the per-thread stream) calls exactly the 33 intercepted names"
    else
        bad "build: driver_user calls exactly the 33 intercepted names" "calls: $refs" "want:  $want"
    fi
else
    bad "build: the driver double as libcuda.so.1, the programs" "$(head -c 3000 "$B/build.log")"
    exit 1
fi

# run NAME LIBDIR PROGRAM MODE [VAR=VALUE...]: $B/NAME.{out,err,st}
run() {
    local name=$1 dir=$2 prog=$3 mode=$4
    shift 4
    timeout 60 env LD_LIBRARY_PATH="$dir" "$@" "$prog" $mode >"$B/$name.out" 2>"$B/$name.err"
    echo $? >"$B/$name.st"
}
PRE=(LD_PRELOAD="$LIB" MEMOBS_FORMAT=json MEMOBS_OOM_REPORT=0)
D=$PWD/$B

# 3. main: without and with the preload
run plain "$D" "$P" main MEMOBS_SUMMARY="$D/plain.json"
if [ "$(cat "$B/plain.st")" = 0 ] && [ ! -s "$B/plain.err" ] && [ ! -e "$B/plain.json" ] &&
    [ "$(line rcs "$B/plain.out" | wc -w)" = 49 ]; then
    ok "main without LD_PRELOAD: 49 return codes as the double documents them (9 injected errors), no memobs output"
else
    bad "main without LD_PRELOAD: 49 return codes as documented, no memobs output" "status $(cat "$B/plain.st")" \
        "rcs: $(line rcs "$B/plain.out")" "$(head -c 1500 "$B/plain.err")"
fi
run pre "$D" "$P" main "${PRE[@]}" MEMOBS_SUMMARY="$D/pre.json" MEMOBS_TORCH_SNAPSHOT="$D/pre.pickle"
if [ "$(cat "$B/pre.st")" = 0 ] && [ ! -s "$B/pre.err" ] && [ "$(line rcs "$B/pre.out")" = "$(line rcs "$B/plain.out")" ]; then
    ok "main with LD_PRELOAD: exit 0, the same 49 return codes, nothing on stderr"
else
    bad "main with LD_PRELOAD: exit 0, the same 49 return codes, nothing on stderr" "status $(cat "$B/pre.st")" \
        "with:    $(line rcs "$B/pre.out")" "without: $(line rcs "$B/plain.out")" "$(head -c 1500 "$B/pre.err")"
fi
if out=$(expect_check "$B/pre.json" "$(line expect "$B/pre.out")"); then
    ok "main: H2D/D2H/D2D bytes and counts exact by phase (cuMemcpy's direction inferred, the _ptds/_ptsz entry points), device/pinned/managed allocs, frees, current, peak exact; 9 failed calls counted, not recorded"
else
    bad "main: figures exact by phase and kind, 9 failed calls counted" "$out"
fi
# the device of each block: PyTorch's snapshot lists device blocks by device
if out=$(python3 - "$B/pre.pickle" <<'PY'
import pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
seg = sorted((g["device"], g["total_size"]) for g in s["segments"])
allocs = [sorted(e["size"] for e in t if e["action"] == "alloc") for t in s["device_traces"]]
want_seg = [(0, 1048576), (1, 65536)]
want_allocs = [[256, 512, 2048, 4096, 10240, 1048576, 1048576], [65536]]
if seg != want_seg or allocs != want_allocs:
    print("live: %s, expected %s; allocations by device: %s, expected %s" % (seg, want_seg, allocs, want_allocs))
    sys.exit(1)
PY
); then
    ok "main: each device block on its context's device (device 0: 7 allocations incl. the pitched 1024 x 10 and the pool's; device 1: 64 KiB), as the torch snapshot shows"
else
    bad "main: each device block on its context's device" "$out"
fi

# the out-of-memory error of cuMemAlloc(1 TiB) through the preload: the
# report's breakdown by component (the top frame is the program's, past
# the preload library's own) and, with the history on, the snapshot next
# to the report, once
run oom "$D" "$P" main LD_PRELOAD="$LIB" MEMOBS_OOM_REPORT="$D/oom.txt" MEMOBS_CALLSTACK=8 \
    MEMOBS_TORCH_SNAPSHOT="$D/oom_exit.pickle"
sec=$(sed -n '/^== memobs components == device 0: /,/largest free block/p' "$B/oom.txt" 2>/dev/null)
rows=$(echo "$sec" | grep -c '  frame   driver_user+0x')
if [ "$(cat "$B/oom.st")" = 0 ] && [ "$rows" -ge 1 ] && ! echo "$sec" | grep -q 'libmemobs_preload' &&
    echo "$sec" | grep -q '^  device 0: driver .* outside memobs ' &&
    [ "$(grep -c '^  PyTorch memory snapshot (with its history) written to '"$D"'/oom.txt.pickle$' "$B/oom.txt")" = 1 ] &&
    python3 -c 'import pickle, sys; s = pickle.load(open(sys.argv[1], "rb")); sys.exit(0 if s["segments"] else 1)' \
        "$B/oom.txt.pickle"; then
    ok "cuMemAlloc out of memory through the preload: the breakdown by component ($rows top frames in driver_user, none in the preload library), the outside-memobs line, the snapshot once"
else
    bad "cuMemAlloc out of memory through the preload: the breakdown by component, the snapshot once" \
        "status $(cat "$B/oom.st")" "$sec" "$(grep PyTorch "$B/oom.txt")"
fi

# 4. threads: 4 threads, each 50 H2D + 50 inferred D2H
run thr "$D" "$P" threads "${PRE[@]}" MEMOBS_SUMMARY="$D/thr.json"
if [ "$(cat "$B/thr.st")" = 0 ] && [ ! -s "$B/thr.err" ] && out=$(expect_check "$B/thr.json" "$(line expect "$B/thr.out")"); then
    ok "threads: 4 threads x (50 cuMemcpyHtoD of 1000 bytes + 50 cuMemcpy of 100 bytes inferred D2H) in decode: 200000 + 20000 bytes, 200 + 200 copies exact"
else
    bad "threads: 4 threads x 50 + 50 copies exact" "status $(cat "$B/thr.st")" "$out" "$(head -c 1000 "$B/thr.err")"
fi

# 5. the toolkit's stub libcuda.so (soname libcuda.so.1): every call fails
run stub0 "$D/stub" "$P" stub
run stub1 "$D/stub" "$P" stub "${PRE[@]}" MEMOBS_SUMMARY="$D/stub.json"
r0=$(line rcs "$B/stub0.out")
r1=$(line rcs "$B/stub1.out")
if [ "$(cat "$B/stub0.st")" = 0 ] && [ "$(cat "$B/stub1.st")" = 0 ] && [ "$(echo $r0 | wc -w)" = 13 ] && [ "$r0" = "$r1" ] &&
    [ ! -s "$B/stub1.err" ] &&
    out=$(expect_check "$B/stub.json" '{"total": {"h2d_count": 0, "d2h_count": 0, "d2d_count": 0}, "memory": {"device": {"allocs": 0, "frees": 0}, "pinned": {"allocs": 0}, "managed": {"allocs": 0}}, "counters": {"preload_failed_calls": 12}}'); then
    ok "the toolkit's stub libcuda.so: 13 calls fail with the same codes as without the preload (rcs:$r0), nothing recorded, the 12 intercepted ones counted"
else
    bad "the toolkit's stub libcuda.so: the same codes, nothing recorded, 12 failures counted" \
        "status $(cat "$B/stub0.st") / $(cat "$B/stub1.st")" "without: $r0" "with:    $r1" "$out" "$(head -c 1000 "$B/stub1.err")"
fi

# 6. the runtime double and the driver double in one program, under a runtime layer that calls the driver
run mix0 "$D" "$B/driver_mixed" "" LD_PRELOAD="$D/libdriver_layer.so"
run mix1 "$D" "$B/driver_mixed" "" "${PRE[@]}" LD_PRELOAD="$LIB $D/libdriver_layer.so" MEMOBS_SUMMARY="$D/mix.json"
if [ "$(cat "$B/mix0.st")" = 0 ] && [ "$(cat "$B/mix1.st")" = 0 ] && [ ! -s "$B/mix1.err" ] &&
    [ -n "$(line rcs "$B/mix0.out")" ] && [ "$(line rcs "$B/mix0.out")" = "$(line rcs "$B/mix1.out")" ] &&
    out=$(expect_check "$B/mix.json" "$(line expect "$B/mix1.out")"); then
    ok "runtime and driver in one program: each call counted once (H2D 1428 bytes in 3 copies: a cudaMemcpy2D made of 4 cuMemcpy is one; 1 pinned block from a cudaMallocHost made by cuMemAllocHost; a failed layered free counted once), the same rcs"
else
    bad "runtime and driver in one program: each call counted once, the same rcs" \
        "status $(cat "$B/mix0.st") / $(cat "$B/mix1.st")" "without: $(line rcs "$B/mix0.out")" \
        "with:    $(line rcs "$B/mix1.out")" "$out" "$(head -c 1000 "$B/mix0.err")" "$(head -c 1000 "$B/mix1.err")"
fi

# 7. memobs' own driver lookups never give an interposer
run look "$D" "$P" lookup "${PRE[@]}" MEMOBS_SUMMARY="$D/look.json"
if [ "$(cat "$B/look.st")" = 0 ] && [ "$(line cuMemAlloc_v2 "$B/look.out")" = interposed ] &&
    [ "$(line cuCtxGetCurrent "$B/look.out")" = "the driver's" ]; then
    ok "memobs_cuda_driver_symbol gives libcuda.so.1's cuMemAlloc_v2, cuMemcpy, cuMemFreeAsync_ptsz where dlsym(RTLD_DEFAULT) gives the interposers"
else
    bad "memobs_cuda_driver_symbol gives libcuda.so.1's functions, not the interposers" "status $(cat "$B/look.st")" \
        "$(cat "$B/look.out")" "$(head -c 1000 "$B/look.err")"
fi

# 8. the library built with ASan+UBSan (gcc; libasan.so preloaded first): main, threads, mixed
GCC=${GCC:-gcc}
ASAN_SO=$($GCC -print-file-name=libasan.so)
if ! $GCC -std=gnu11 -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fPIC -shared $W -I. -I"$CUDA_INC" \
    preload/memobs_preload.c -o "$B/libmemobs_preload_asan.so" -Wl,--version-script=preload/memobs_preload.map \
    -pthread -ldl -lm >"$B/asan.log" 2>&1 || [ ! -s "$B/libmemobs_preload_asan.so" ] || [ "${ASAN_SO#/}" = "$ASAN_SO" ]; then
    bad "ASan+UBSan: the library builds with $GCC -fsanitize=address,undefined and libasan.so is found" \
        "libasan.so: $ASAN_SO" "$(head -c 2000 "$B/asan.log")"
else
    fails=""
    A="$ASAN_SO $D/libmemobs_preload_asan.so"
    run asan_main "$D" "$P" main "${PRE[@]}" LD_PRELOAD="$A" MEMOBS_SUMMARY="$D/asan_main.json"
    run asan_threads "$D" "$P" threads "${PRE[@]}" LD_PRELOAD="$A" MEMOBS_SUMMARY="$D/asan_threads.json"
    run asan_mixed "$D" "$B/driver_mixed" "" "${PRE[@]}" LD_PRELOAD="$A $D/libdriver_layer.so" MEMOBS_SUMMARY="$D/asan_mixed.json"
    for m in main threads mixed; do
        if [ "$(cat "$B/asan_$m.st")" != 0 ] || [ -s "$B/asan_$m.err" ]; then
            fails="$fails $m(status $(cat "$B/asan_$m.st"): $(head -c 600 "$B/asan_$m.err"))"
        elif ! o=$(expect_check "$B/asan_$m.json" "$(line expect "$B/asan_$m.out")"); then
            fails="$fails $m($o)"
        fi
    done
    if [ -z "$fails" ]; then
        ok "ASan+UBSan (leaks on): main, threads, mixed clean, figures exact"
    else
        bad "ASan+UBSan (leaks on): main, threads, mixed clean, figures exact" "$fails"
    fi
fi

exit $rc
