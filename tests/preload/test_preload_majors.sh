#!/usr/bin/env bash
# The preload and the CUDA runtime's majors: the runtime double
# (tests/cuda/cudart_double.c) built as libcudart.so.11.0, .12 and .13
# (-DCUDADBL_MAJOR, mk/cudart_double*.map), a program of each major linked
# to it (tests/preload/majors/prog.c: 11's cudaGraphInstantiate, 12.8's
# batches with failIdx, 13's), run with and without LD_PRELOAD: the same
# return codes, exact figures. Also: which interposer each version node
# of the library holds; lookups without a version (dlsym) in a CUDA 12
# and a CUDA 11 process; one process with two majors (a CUDA 13 program
# that dlopen's a CUDA 12 library RTLD_LOCAL).
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/preload_majors
rm -rf "$B" && mkdir -p "$B"
CC=${CC:-cc}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror"

. tests/lib.sh # a clean environment, try
unset LD_PRELOAD MEMOBS_PRELOAD_ROOT
ok() { echo "ok - preload-majors: $1"; }
bad() { echo "not ok - preload-majors: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

if [ ! -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    echo "not ok - preload-majors: $CUDA_INC/cuda_runtime_api.h is missing (set CUDA_INC; tests/deps.sh installs the toolkit)"
    exit 1
fi
rc=0
LIB=$PWD/$B/libmemobs_preload.so

# 1. the library: each version node holds exactly its major's interposers
ALL="cudaMemcpy cudaMemcpyAsync cudaMemcpy2D cudaMemcpy2DAsync cudaMemcpyPeer cudaMemcpyPeerAsync cudaMalloc
    cudaFree cudaMallocHost cudaFreeHost cudaHostAlloc cudaMallocManaged cudaMallocAsync cudaFreeAsync
    cudaMemcpy_ptds cudaMemcpyAsync_ptsz cudaMemcpy2D_ptds cudaMemcpy2DAsync_ptsz cudaMallocAsync_ptsz
    cudaFreeAsync_ptsz cudaHostRegister cudaHostUnregister cudaMemcpy3D cudaMemcpy3D_ptds cudaMemcpy3DAsync
    cudaMemcpy3DAsync_ptsz cudaMemcpy3DPeer cudaMemcpy3DPeer_ptds cudaMemcpy3DPeerAsync cudaMemcpy3DPeerAsync_ptsz
    cudaMemcpyToSymbol cudaMemcpyToSymbol_ptds cudaMemcpyToSymbolAsync cudaMemcpyToSymbolAsync_ptsz
    cudaMemcpyFromSymbol cudaMemcpyFromSymbol_ptds cudaMemcpyFromSymbolAsync cudaMemcpyFromSymbolAsync_ptsz
    cudaMemcpy2DToArray cudaMemcpy2DToArray_ptds cudaMemcpy2DToArrayAsync cudaMemcpy2DToArrayAsync_ptsz
    cudaMemcpy2DFromArray cudaMemcpy2DFromArray_ptds cudaMemcpy2DFromArrayAsync cudaMemcpy2DFromArrayAsync_ptsz
    cudaMemcpy2DArrayToArray cudaMemcpy2DArrayToArray_ptds cudaStreamBeginCapture cudaStreamBeginCapture_ptsz
    cudaStreamEndCapture cudaStreamEndCapture_ptsz cudaGraphInstantiateWithFlags cudaGraphLaunch cudaGraphLaunch_ptsz
    cudaGraphExecDestroy cudaGraphDestroy cudaDeviceReset cudaMallocFromPoolAsync cudaMallocFromPoolAsync_ptsz"
NEW12="cudaGraphInstantiateWithParams cudaGraphInstantiateWithParams_ptsz"
GRAPH="cudaGraphInstantiate"
BATCH="cudaMemcpyBatchAsync cudaMemcpyBatchAsync_ptsz cudaMemcpy3DBatchAsync cudaMemcpy3DBatchAsync_ptsz"
EP="cudaGetDriverEntryPoint"                   # 11's three arguments, 12's four
EP12="cudaGetDriverEntryPoint_ptsz"             # 12's four, 12+
EPV="cudaGetDriverEntryPointByVersion cudaGetDriverEntryPointByVersion_ptsz" # 12.5+, one signature
sorted() { echo $* | tr ' ' '\n' | sort; }
if make -s BUILD="$B" preload >"$B/make.log" 2>&1 && [ ! -s "$B/make.log" ] && [ -f "$LIB" ]; then
    syms=$(nm -D --defined-only --with-symbol-versions "$LIB")
    # node SUFFIX: the cuda* names defined as name SUFFIX (@libcudart.so.12, @@memobs_cudart_default...)
    node() { echo "$syms" | awk -v v="$1" '$2 == "T" && $3 ~ /^cuda/ { n = index($3, "@"); if (substr($3, n) == v) print substr($3, 1, n - 1) }' | sort; }
    miss=""
    for n in "@libcudart.so.11.0|$ALL $GRAPH $EP" "@libcudart.so.12|$ALL $NEW12 $GRAPH $BATCH $EP $EP12 $EPV" \
        "@libcudart.so.13|$ALL $NEW12 $GRAPH $BATCH $EP $EP12 $EPV" "@@memobs_cudart_default|$ALL $NEW12 $EP $EP12 $EPV"; do
        v=${n%%|*}
        d=$(diff <(node "$v") <(sorted ${n#*|}) | grep '^[<>]' | tr '\n' ' ')
        [ -n "$d" ] && miss="$miss [$v: < exported, > expected: $d]"
    done
    other=$(echo "$syms" | awk '$3 ~ /^cuda/ && $3 !~ /@(libcudart\.so\.(11\.0|12|13)|@memobs_cudart_default)$/ {print $3}
        $3 ~ /^memobs_pl__/ {print $3}' | tr '\n' ' ')
    [ -n "$other" ] && miss="$miss [other versions or private names exported: $other]"
    nall=$(echo $ALL | wc -w)
    if [ -z "$miss" ]; then
        ok "nm --with-symbol-versions: $nall interposers under every node; cudaGraphInstantiate under 11.0 (11's), 12, 13; WithParams(_ptsz) under 12, 13 and the default; the 4 batches under 12 and 13 only; cudaGetDriverEntryPoint under 11.0 (11's), 12, 13 and the default, its _ptsz and ByVersion(_ptsz) under 12, 13 and the default; no other cuda* symbol, no memobs_pl__*"
    else
        bad "nm --with-symbol-versions: each node holds its major's interposers" "$miss"
    fi
else
    bad "make preload builds $LIB warning-free" "$(head -c 3000 "$B/make.log")"
    exit 1
fi

# 2. the double as each major, a program linked to each, the CUDA 12 worker library
SO11=libcudart.so.11.0 SO12=libcudart.so.12 SO13=libcudart.so.13
if (
    for m in 11 12 13; do
        so=SO$m so=${!so} map=mk/cudart_double.map
        [ $m != 13 ] && map=mk/cudart_double.${so#libcudart.so.}.map
        $CC -std=c11 -O2 -g -fPIC -shared $W -I. -I"$CUDA_INC" -DCUDADBL_MAJOR=$m tests/cuda/cudart_double.c \
            -o "$B/$so" -Wl,-soname,$so -Wl,--version-script=$map -pthread &&
            $CC -std=c11 -O2 -g $W -Itests -Itests/preload/majors -I"$CUDA_INC" -DMAJOR=$m \
                tests/preload/majors/prog.c -o "$B/prog$m" -L"$B" -l:$so -ldl &&
            $CC -std=c11 -O2 -g $W -Itests -Itests/preload/majors -I"$CUDA_INC" -DMAJOR=$m \
                -DCUDA_API_PER_THREAD_DEFAULT_STREAM tests/preload/majors/prog.c -o "$B/prog${m}_pt" -L"$B" -l:$so \
                -ldl || exit 1
    done
    $CC -std=c11 -O2 -g -fPIC -shared $W -Itests/preload/majors -I"$CUDA_INC" -DMAJOR=12 tests/preload/majors/worker.c \
        -o "$B/libworker12.so" -L"$B" -l:$SO12
) >"$B/build.log" 2>&1 && [ ! -s "$B/build.log" ]; then
    u11=$(nm -D --with-symbol-versions "$B/prog11" | grep -c ' U cuda.*@libcudart.so.11.0$')
    bind="$(nm -D --with-symbol-versions "$B/prog11" | grep -o 'cudaGraphInstantiate@.*')"
    bind="$bind $(nm -D --with-symbol-versions "$B/prog12" | grep -o 'cudaMemcpyBatchAsync@.*')"
    bind="$bind $(nm -D --with-symbol-versions "$B/$SO12" | grep -o ' cudaMemcpyBatchAsync@.*')"
    bind="$bind $(nm -D --with-symbol-versions "$B/prog12_pt" | grep -o 'cudaMemcpy3*D*BatchAsync_ptsz@.*' | tr '\n' ' ')"
    if [ "$bind" = "cudaGraphInstantiate@libcudart.so.11.0 cudaMemcpyBatchAsync@libcudart.so.12  cudaMemcpyBatchAsync@@libcudart.so.12 cudaMemcpy3DBatchAsync_ptsz@libcudart.so.12 cudaMemcpyBatchAsync_ptsz@libcudart.so.12 " ] &&
        ! nm -D "$B/$SO11" | grep -q 'BatchAsync\|WithParams\|cudadbl_v13'; then
        ok "build: the double as $SO11, $SO12, $SO13 from one source; prog11 ($u11 calls @libcudart.so.11.0), prog12, prog13 linked to them, and built for the per-thread default stream (prog12_pt: the batches' _ptsz @libcudart.so.12); the CUDA 12 worker library; 11.0 has no batch nor WithParams"
    else
        bad "build: each program binds its major's version" "$bind"
    fi
else
    bad "build: the double as $SO11, $SO12, $SO13 and the programs" "$(head -c 3000 "$B/build.log")"
    exit 1
fi

# run NAME PROG MODE [ARG] -- [VAR=VALUE...]: $B/NAME.{out,err,st}
run() {
    local name=$1 prog=$2 mode=$3 arg=$4
    shift 4
    timeout 60 env LD_LIBRARY_PATH="$PWD/$B" "$@" "$B/$prog" "$mode" $arg >"$B/$name.out" 2>"$B/$name.err"
    echo $? >"$B/$name.st"
}
PRE=(LD_PRELOAD="$LIB" MEMOBS_FORMAT=json MEMOBS_OOM_REPORT=0)

# same NAME WHAT: NAME0 (plain) and NAME1 (preloaded) exited 0 with the same rcs, NAME1's summary as expected
same() {
    local n=$1 what=$2 out
    if [ "$(cat "$B/${n}0.st")" = 0 ] && [ "$(cat "$B/${n}1.st")" = 0 ] && [ ! -s "$B/${n}1.err" ] &&
        [ "$(line rcs "$B/${n}0.out")" = "$(line rcs "$B/${n}1.out")" ] && [ ! -e "$B/${n}0.json" ] &&
        out=$(expect_check "$B/${n}1.json" "$(line expect "$B/${n}1.out")"); then
        ok "$what"
    else
        bad "$what" "status $(cat "$B/${n}0.st") / $(cat "$B/${n}1.st")" "without: $(line rcs "$B/${n}0.out")" \
            "with:    $(line rcs "$B/${n}1.out")" "${out//    # /}" "$(head -c 1500 "$B/${n}0.err")" \
            "$(head -c 1500 "$B/${n}1.err")"
    fi
}

# 3. each major's program with and without the preload, built plainly and for the per-thread default stream
for m in 11 12 13 11_pt 12_pt 13_pt; do
    run main${m}0 prog$m main "" MEMOBS_SUMMARY="$PWD/$B/main${m}0.json"
    run main${m}1 prog$m main "" "${PRE[@]}" MEMOBS_SUMMARY="$PWD/$B/main${m}1.json"
    case $m in
    11) what="CUDA 11 (libcudart.so.11.0): H2D/D2H/D2D bytes and counts, prefill/decode, device and pinned current/peak/allocs/frees exact; a capture instantiated with 11's cudaGraphInstantiate (error node, log) launched 3 times; 2 errors counted" ;;
    12) what="CUDA 12: the same, with 12's cudaGraphInstantiate, 12.8's cudaMemcpyBatchAsync (H2D 50 + D2H 70) and cudaMemcpy3DBatchAsync (D2D 128) with failIdx on a stream (read right: the double refuses any other), failIdx SIZE_MAX after a failure; 4 errors counted" ;;
    13) what="CUDA 13: the same, with 13's batches (no failIdx); 3 errors counted" ;;
    *) what="CUDA ${m%_pt} built for the per-thread default stream (the _ptds/_ptsz interposers of that major): the same figures and return codes" ;;
    esac
    same main$m "$what"
done

# 4. lookups without a version: a batch by dlsym(RTLD_DEFAULT) in a CUDA 12
# process is the runtime's own (no interposer has an unversioned batch),
# called with 12.8's nine arguments; by dlvsym(..., "libcudart.so.12") the
# 12 interposer; cudaMemcpy by dlsym the default interposer. In a CUDA 11
# process, cudaGraphInstantiate by dlsym is 11's own.
for m in 12 11; do
    run dlsym${m}0 prog$m dlsym "" MEMOBS_SUMMARY="$PWD/$B/dlsym${m}0.json"
    run dlsym${m}1 prog$m dlsym "" "${PRE[@]}" MEMOBS_SUMMARY="$PWD/$B/dlsym${m}1.json"
done
w=$(line where "$B/dlsym121.out")
if [ "$w" = "batch runtime, 3D batch runtime, batch@libcudart.so.12 preload, cudaMemcpy preload" ]; then
    same dlsym12 "CUDA 12, dlsym(RTLD_DEFAULT, \"cudaMemcpyBatchAsync\") called with 12.8's nine arguments: the runtime's own, rc 0 and the bytes copied as without the preload, failIdx SIZE_MAX on an error; by dlvsym @libcudart.so.12: the 12 interposer, recorded (H2D 60); cudaMemcpy by dlsym: the default interposer, recorded (H2D 10)"
else
    bad "CUDA 12: what each lookup found" "$w"
fi
w=$(line where "$B/dlsym111.out")
if [ "$w" = "cudaGraphInstantiate runtime" ]; then
    same dlsym11 "CUDA 11, dlsym(RTLD_DEFAULT, \"cudaGraphInstantiate\") called with 11's five arguments: the runtime's own (no interposer reads 12's three), its log written"
else
    bad "CUDA 11: what the lookup found" "$w"
fi

# 5. two majors in one process: a CUDA 13 program, a CUDA 12 library dlopen'ed RTLD_LOCAL
run two0 prog13 two "$PWD/$B/libworker12.so" MEMOBS_SUMMARY="$PWD/$B/two0.json"
run two1 prog13 two "$PWD/$B/libworker12.so" "${PRE[@]}" MEMOBS_SUMMARY="$PWD/$B/two1.json" \
    MEMOBS_TRACE="$PWD/$B/two1.trace"
# (the worker's batch: a call each runtime counts, see tests/preload/majors/worker.c)
c0=$(line calls "$B/two0.out") c1=$(line calls "$B/two1.out")
if [ "$c1" = "12: batch 1 memcpy 2; 13: batch 0 memcpy 2" ] && [ "$c0" = "$c1" ]; then
    same two "two majors in one process (a CUDA 13 program, a CUDA 12 library loaded RTLD_LOCAL): each call forwarded to the runtime its caller bound (the 12.8 batch and 2 cudaMemcpy to 12's, 2 cudaMemcpy to 13's, as without the preload), both recorded in one memobs (H2D 111 + 444, D2H 333 + 55, device peak 8192, 2 allocs, 2 frees)"
else
    bad "two majors in one process: each call to the runtime its caller bound" "with: $c1" "without: $c0"
fi

exit $rc
