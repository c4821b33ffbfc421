#!/usr/bin/env bash
# The driver's virtual memory management in the LD_PRELOAD library:
# tests/preload/vmm.c (PyTorch's expandable-segments pattern: reserve a
# range, create + map + set access as the segment grows, unmap + release as
# it shrinks) linked against the runtime double built as libcudart.so.13
# (which also defines the driver's cu* functions and models VMM as cuda.h
# documents it), run with and without LD_PRELOAD: the same return codes,
# memobs' device current and peak exact after every step, the JSON summary
# exact (allocations, H2D/D2H/D2D bytes of cudaMemcpyDefault copies into
# and out of mapped ranges, failed calls); 4 threads; the tables full (the
# library built with MEMOBS_CUDA_MAX_VMM=4); the library under ASan+UBSan.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/preload_vmm
rm -rf "$B" && mkdir -p "$B"
CC=${CC:-cc}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror"

. tests/lib.sh # a clean environment, expect_check, line
unset LD_PRELOAD MEMOBS_PRELOAD_ROOT
ok() { echo "ok - preload-vmm: $1"; }
bad() { echo "not ok - preload-vmm: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

if [ ! -f "$CUDA_INC/cuda.h" ]; then
    echo "not ok - preload-vmm: $CUDA_INC/cuda.h is missing (set CUDA_INC; tests/deps.sh installs the toolkit)"
    exit 1
fi

rc=0
LIB=$PWD/$B/libmemobs_preload.so
SMALL=$PWD/$B/libmemobs_preload_small.so
P=$B/vmm
D=$PWD/$B
VMM_FNS="cuMemCreate cuMemRelease cuMemMap cuMemUnmap cuMemAddressReserve cuMemAddressFree"

# 1. the library (make preload), its VMM interposers unversioned; the double, the program, a small-table library
if make -s BUILD="$B" preload >"$B/make.log" 2>&1 && [ ! -s "$B/make.log" ] && [ -f "$LIB" ] &&
    { $CC -std=c11 -O2 -g -fPIC -shared $W -I. -I"$CUDA_INC" tests/cuda/cudart_double.c -o "$B/libcudart.so.13" \
        -Wl,-soname,libcudart.so.13 -Wl,--version-script=mk/cudart_double.map -pthread &&
        $CC -std=c11 -O2 -g $W -I"$CUDA_INC" tests/preload/vmm.c -o "$P" -L"$B" -l:libcudart.so.13 -pthread -ldl &&
        $CC -std=gnu11 -O2 -fPIC -shared -ftls-model=initial-exec -DMEMOBS_TLS_INITIAL_EXEC -DMEMOBS_CUDA_MAX_VMM=4 $W \
            -I. -I"$CUDA_INC" preload/memobs_preload.c -o "$SMALL" -Wl,--version-script=preload/memobs_preload.map \
            -Wl,-z,defs -Wl,-Bsymbolic -pthread -ldl -lm; } >"$B/build.log" 2>&1 && [ ! -s "$B/build.log" ]; then
    syms=$(nm -D --defined-only --with-symbol-versions "$LIB")
    miss=""
    for f in $VMM_FNS; do echo "$syms" | grep -q " T $f\$" || miss="$miss $f"; done
    if [ -z "$miss" ]; then
        ok "build: the preload exports the 6 VMM interposers unversioned; the double, the program, the library with MEMOBS_CUDA_MAX_VMM=4"
    else
        bad "build: the preload exports the 6 VMM interposers unversioned" "missing or versioned:$miss"
    fi
else
    bad "build: the preload, the double, the program" "$(head -c 3000 "$B/make.log" "$B/build.log")"
    exit 1
fi

# run NAME MODE [VAR=VALUE...]: $B/NAME.{out,err,st}
run() {
    local name=$1 mode=$2
    shift 2
    timeout 120 env LD_LIBRARY_PATH="$D" "$@" "$P" "$mode" >"$B/$name.out" 2>"$B/$name.err"
    echo $? >"$B/$name.st"
}
PRE=(LD_PRELOAD="$LIB" MEMOBS_FORMAT=json MEMOBS_OOM_REPORT=0)

# 2. main without and with the preload
run plain main MEMOBS_SUMMARY="$D/plain.json"
n=$(line rcs "$B/plain.out" | wc -w)
if [ "$(cat "$B/plain.st")" = 0 ] && [ ! -s "$B/plain.err" ] && [ ! -e "$B/plain.json" ] &&
    [ "$(line steps "$B/plain.out")" = "21 exact" ] && [ "$n" -gt 100 ]; then
    ok "main without LD_PRELOAD: $n return codes as the double documents them (11 bad calls), the double's free memory exact at 21 steps"
else
    bad "main without LD_PRELOAD: return codes as documented" "status $(cat "$B/plain.st")" \
        "steps: $(line steps "$B/plain.out")" "$(head -c 1500 "$B/plain.err")"
fi
run pre main "${PRE[@]}" MEMOBS_SUMMARY="$D/pre.json" MEMOBS_TORCH_SNAPSHOT="$D/pre.pickle"
if [ "$(cat "$B/pre.st")" = 0 ] && [ ! -s "$B/pre.err" ] && [ "$(line rcs "$B/pre.out")" = "$(line rcs "$B/plain.out")" ]; then
    ok "main with LD_PRELOAD: exit 0, the same $n return codes, nothing on stderr"
else
    bad "main with LD_PRELOAD: exit 0, the same return codes, nothing on stderr" "status $(cat "$B/pre.st")" \
        "with:    $(line rcs "$B/pre.out")" "without: $(line rcs "$B/plain.out")" "$(head -c 1500 "$B/pre.err")"
fi
if [ "$(line steps "$B/pre.out")" = "21 exact" ]; then
    ok "main: memobs' device current and peak exact after each of 21 steps (grow, shrink, released while mapped, one handle mapped twice, host-located, device 1, bad calls)"
else
    bad "main: device current and peak exact after each step" "steps: $(line steps "$B/pre.out")" "$(head -c 1500 "$B/pre.err")"
fi
if out=$(expect_check "$B/pre.json" "$(line expect "$B/pre.out")"); then
    ok "main: 18 device handles and 1 pinned (host-located) allocated and freed, device peak 12 MiB; cudaMemcpyDefault into and out of mapped ranges as H2D/D2H/D2D, bytes exact; 11 failed calls counted, not recorded"
else
    bad "main: the summary exact" "$out"
fi

# PyTorch's snapshot: each device handle a segment of its device, its size as created
if out=$(python3 - "$B/pre.pickle" <<'PY'
import pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
allocs = [sorted(e["size"] for e in t if e["action"] == "alloc") for t in s["device_traces"]]
frees = [sum(1 for e in t if e["action"] == "free_completed") for t in s["device_traces"]]
G = 2 << 20
want = [sorted([G] * 16 + [2 * G]), [4 * G]]
if s["segments"] or allocs != want or frees != [17, 1]:
    print("live segments %s (none expected); allocations by device %s, expected %s; frees %s, expected [17, 1]"
          % (s["segments"], allocs, want, frees))
    sys.exit(1)
PY
); then
    ok "main: the torch snapshot's device traces hold every handle on its device (device 0: 16 of 2 MiB and one of 4 MiB; device 1: one of 8 MiB), each freed once"
else
    bad "main: the torch snapshot's device traces hold every handle" "$out"
fi

# 3. threads
run thr threads "${PRE[@]}" MEMOBS_SUMMARY="$D/thr.json"
if [ "$(cat "$B/thr.st")" = 0 ] && [ ! -s "$B/thr.err" ] && [ "$(line steps "$B/thr.out")" = "1 exact" ] &&
    out=$(expect_check "$B/thr.json" "$(line expect "$B/thr.out")"); then
    ok "threads: 4 threads x 40 grow/shrink cycles in one reservation: 400 handles allocated and freed, 160 + 160 copies exact, nothing left"
else
    bad "threads: exact totals" "status $(cat "$B/thr.st")" "steps: $(line steps "$B/thr.out")" "$out" "$(head -c 1000 "$B/thr.err")"
fi

# 4. the tables full: 6 handles each mapped twice against tables of 4
run full full LD_PRELOAD="$SMALL" MEMOBS_FORMAT=json MEMOBS_OOM_REPORT=0 MEMOBS_SUMMARY="$D/full.json"
warns=$(grep -c 'MEMOBS_CUDA_MAX_VMM=4' "$B/full.err")
if [ "$(cat "$B/full.st")" = 0 ] && [ "$(line full "$B/full.out" | head -n 1)" = "handles 4 mappings 4 dropped 6" ] &&
    [ "$(line end "$B/full.out" | head -n 1)" = "handles 0 mappings 0 dropped 6" ] &&
    [ "$(line end "$B/full.out" | tail -n 1)" = "device 0" ] && [ "$warns" = 1 ] &&
    [ "$(grep -vc 'MEMOBS_CUDA_MAX_VMM=4' "$B/full.err")" = 0 ] &&
    out=$(expect_check "$B/full.json" "$(line expect "$B/full.out")"); then
    ok "tables full (MEMOBS_CUDA_MAX_VMM=4): 4 handles and 4 mappings remembered, 6 dropped and counted, one warning, all freed at the end"
else
    bad "tables full: counted, warned once, nothing breaks" "status $(cat "$B/full.st")" "$(cat "$B/full.out" | head -n 4)" \
        "warnings: $warns" "$out" "$(head -c 1000 "$B/full.err")"
fi

# 5. the library built with ASan+UBSan (gcc; libasan.so preloaded first): main, threads
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
    run asan_main main "${PRE[@]}" LD_PRELOAD="$A" MEMOBS_SUMMARY="$D/asan_main.json"
    run asan_threads threads "${PRE[@]}" LD_PRELOAD="$A" MEMOBS_SUMMARY="$D/asan_threads.json"
    for m in main threads; do
        if [ "$(cat "$B/asan_$m.st")" != 0 ] || [ -s "$B/asan_$m.err" ]; then
            fails="$fails $m(status $(cat "$B/asan_$m.st"): $(head -c 600 "$B/asan_$m.err"))"
        elif ! o=$(expect_check "$B/asan_$m.json" "$(line expect "$B/asan_$m.out")"); then
            fails="$fails $m($o)"
        fi
    done
    if [ -z "$fails" ]; then
        ok "ASan+UBSan (leaks on): main, threads clean, figures exact"
    else
        bad "ASan+UBSan (leaks on): main, threads clean, figures exact" "$fails"
    fi
fi

exit $rc
