#!/usr/bin/env bash
# Driver entry points in the LD_PRELOAD library: driver functions fetched
# through cuGetProcAddress (the 11.3 export and cuGetProcAddress_v2; legacy
# and per-thread flags; versions below and above 3.2) and through the
# runtime's cudaGetDriverEntryPoint(ByVersion)(_ptsz) are counted exactly as
# linked calls (the same JSON figures, the same return codes with and
# without the preload); the functions memobs does not intercept stay the
# driver's own pointers; errors (NULL or unknown symbol, bad flags, a
# version above the driver's) come back unchanged; a runtime loaded with
# RTLD_LOCAL (its driver functions in no global scope) is seen too; the
# runtime's own lookups are not counted a second time. Against the driver
# double (tests/preload/driver_double.c as libcuda.so.1) and the runtime
# double (tests/cuda/cudart_double.c as libcudart.so.13), both of which
# learn cuGetProcAddress's rules from tests/preload/procaddr.h; then the
# library built with ASan+UBSan.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/preload_entry
rm -rf "$B" && mkdir -p "$B"
CC=${CC:-cc}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror"

. tests/lib.sh # a clean environment
unset LD_PRELOAD MEMOBS_PRELOAD_ROOT CUDADBL_DRIVER_LOOKUP
ok() { echo "ok - preload-entry: $1"; }
bad() { echo "not ok - preload-entry: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

for f in "$CUDA_INC/cuda.h" "$CUDA_INC/cuda_runtime_api.h"; do
    if [ ! -f "$f" ]; then
        echo "not ok - preload-entry: $f is missing (set CUDA_INC; tests/deps.sh installs the toolkit)"
        exit 1
    fi
done

rc=0
LIB=$PWD/$B/libmemobs_preload.so
D=$PWD/$B
mkdir -p "$B/drv" "$B/rt"

# 1. the library: the two cuGetProcAddress unversioned, the runtime's four under its version
if make -s BUILD="$B" preload >"$B/make.log" 2>&1 && [ ! -s "$B/make.log" ] && [ -f "$LIB" ]; then
    syms=$(nm -D --defined-only --with-symbol-versions "$LIB")
    miss=""
    for f in cuGetProcAddress cuGetProcAddress_v2; do
        echo "$syms" | grep -q " T $f\$" || miss="$miss $f"
    done
    for f in cudaGetDriverEntryPoint cudaGetDriverEntryPoint_ptsz cudaGetDriverEntryPointByVersion \
        cudaGetDriverEntryPointByVersion_ptsz; do
        for v in @libcudart.so.12 @libcudart.so.13 @@memobs_cudart_default; do
            echo "$syms" | grep -q " T $f$v\$" || miss="$miss $f$v"
        done
    done
    if [ -z "$miss" ]; then
        ok "make preload: cuGetProcAddress, cuGetProcAddress_v2 exported unversioned, cudaGetDriverEntryPoint(ByVersion)(_ptsz) under libcudart.so.12, .13 and the default node (tests/preload/test_preload_majors.sh checks every node)"
    else
        bad "make preload: the entry point interposers exported" "missing or misversioned:$miss"
    fi
else
    bad "make preload builds $LIB warning-free" "$(head -c 3000 "$B/make.log")"
    exit 1
fi

# 2. the doubles and the programs
if { $CC -std=c11 -O2 -g -fPIC -shared $W -I"$CUDA_INC" tests/preload/driver_double.c -o "$B/drv/libcuda.so.1" \
        -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -pthread &&
    $CC -std=c11 -O2 -g -fPIC -shared $W -I. -I"$CUDA_INC" tests/cuda/cudart_double.c -o "$B/rt/libcudart.so.13" \
        -Wl,-soname,libcudart.so.13 -Wl,--version-script=mk/cudart_double.map -pthread &&
    $CC -std=c11 -O2 -g $W -I"$CUDA_INC" tests/preload/entry_driver.c -o "$B/entry_driver" \
        -L"$B/drv" -l:libcuda.so.1 -ldl &&
    $CC -std=c11 -O2 -g $W -I"$CUDA_INC" tests/preload/entry_runtime.c -o "$B/entry_runtime" \
        -L"$B/rt" -l:libcudart.so.13 -ldl &&
    $CC -std=c11 -O2 -g -fPIC -shared $W -I"$CUDA_INC" tests/preload/entry_layer.c -o "$B/rt/libentry_layer.so" \
        -L"$B/rt" -l:libcudart.so.13 &&
    $CC -std=c11 -O2 -g $W -I"$CUDA_INC" -DENTRY_LOCAL tests/preload/entry_runtime.c -o "$B/entry_local" -ldl; } \
    >"$B/build.log" 2>&1 && [ ! -s "$B/build.log" ] && [ -z "$(readelf -d "$B/entry_local" | grep -i 'NEEDED.*cuda')" ]; then
    ok "build: the driver double as libcuda.so.1, the runtime double as libcudart.so.13, entry_driver, entry_runtime, entry_local (no CUDA library linked) and its layer"
else
    bad "build: the doubles and the programs" "$(head -c 3000 "$B/build.log")"
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
QUIET="memobs preload: no CUDA call was intercepted"

# pair NAME LIBDIR PROGRAM MODE WHAT [VAR=VALUE...]: runs without and with
# the preload; exit 0 both, the same return codes, nothing on stderr but
# (with the preload, where the mode made no intercepted call) the line
# that says so, every fetched pointer the driver's without the preload and,
# with it, ours for the names in $OURS, the driver's for those in $THEIRS;
# the summary what the program expects (when it prints an expectation).
pair() {
    local name=$1 dir=$2 prog=$3 mode=$4 what=$5 err=""
    shift 5
    run "$name.0" "$dir" "$prog" "$mode" "$@"
    run "$name.1" "$dir" "$prog" "$mode" "$@" "${PRE[@]}" MEMOBS_SUMMARY="$D/$name.json"
    local r0 r1 exp
    r0=$(line rcs "$B/$name.0.out")
    r1=$(line rcs "$B/$name.1.out")
    exp=$(line expect "$B/$name.1.out")
    [ "$(cat "$B/$name.0.st")" = 0 ] && [ "$(cat "$B/$name.1.st")" = 0 ] || err="$err; status $(cat "$B/$name.0.st") / $(cat "$B/$name.1.st")"
    [ -n "$r0" ] && [ "$r0" = "$r1" ] || err="$err; rcs differ: without:$r0 with:$r1"
    [ ! -s "$B/$name.0.err" ] || err="$err; stderr without: $(head -c 600 "$B/$name.0.err")"
    [ -z "$(grep -v "^$QUIET" "$B/$name.1.err")" ] || err="$err; stderr with: $(head -c 600 "$B/$name.1.err")"
    grep '^fetched ' "$B/$name.0.out" | grep -qv ": the driver's\$" &&
        err="$err; without the preload, not the driver's: $(grep '^fetched ' "$B/$name.0.out" | grep -v ": the driver's\$" | tr '\n' ' ')"
    local f
    for f in $OURS; do
        grep -q "^fetched $f: ours\$" "$B/$name.1.out" || err="$err; $f: $(grep "^fetched $f:" "$B/$name.1.out" | head -1) (expected ours)"
    done
    for f in $THEIRS; do
        grep -q "^fetched $f: the driver's\$" "$B/$name.1.out" ||
            err="$err; $f: $(grep "^fetched $f:" "$B/$name.1.out" | head -1) (expected the driver's)"
    done
    grep -q '^fetched .*: other$' "$B/$name.1.out" && err="$err; $(grep ': other$' "$B/$name.1.out" | tr '\n' ' ')"
    if [ -n "$exp" ] && ! o=$(expect_check "$B/$name.json" "$exp"); then err="$err; $o"; fi
    if [ -z "$err" ]; then ok "$what"; else bad "$what" "${err#; }" "$(head -c 600 "$B/$name.1.err")"; fi
}

LEG="cuMemAlloc_v2 cuMemAllocHost_v2 cuMemAllocAsync cuMemFree_v2 cuMemFreeHost cuMemFreeAsync cuMemcpyHtoD_v2
    cuMemcpyHtoDAsync_v2 cuMemcpyDtoH_v2 cuMemcpyDtoD_v2 cuMemcpy"
PT="cuMemAlloc_v2 cuMemAllocHost_v2 cuMemAllocAsync_ptsz cuMemFree_v2 cuMemFreeHost cuMemFreeAsync_ptsz
    cuMemcpyHtoD_v2_ptds cuMemcpyHtoDAsync_v2_ptsz cuMemcpyDtoH_v2_ptds cuMemcpyDtoD_v2_ptds cuMemcpy_ptds"
SEQ="H2D 3000 bytes in 2 copies, D2H 400 in 2 (one inferred), D2D 400; device allocs 3 / frees 2 / current 1 MiB / peak exact; pinned 8192; 1 failed call counted"

# 3. the driver: cuGetProcAddress's pointers counted like the linked calls
OURS="" THEIRS=""
pair drv_linked "$D/drv" "$B/entry_driver" linked "driver, linked calls (the reference): $SEQ"
OURS=$LEG
pair drv_v2 "$D/drv" "$B/entry_driver" v2 "cuGetProcAddress_v2 (12.0, legacy flag): the 11 functions are memobs' interposers; the figures exactly the linked calls'"
pair drv_v1 "$D/drv" "$B/entry_driver" v1 "cuGetProcAddress, the 4-argument 11.3 export (flags 0): the same interposers, the same figures"
OURS=$PT
pair drv_ptds "$D/drv" "$B/entry_driver" ptds "cuGetProcAddress_v2, per-thread flag: the _ptds/_ptsz interposers (the legacy ones where the driver has no per-thread function), the same figures"
OURS="cuGetProcAddress_v2 cuGetProcAddress $LEG"
pair drv_nested2 "$D/drv" "$B/entry_driver" nested2 "cuGetProcAddress_v2 fetched through cuGetProcAddress_v2 is memobs', and what it fetches is counted: the same figures"
pair drv_nested1 "$D/drv" "$B/entry_driver" nested1 "cuGetProcAddress (11.3) fetched at 11030 is memobs' 4-argument one, and what it fetches is counted: the same figures"
OURS="cuMemAlloc_v2 cuMemcpyHtoD_v2 cuMemcpyHtoD_v2_ptds cuMemFreeAsync_ptsz" THEIRS="cuMemAlloc cuCtxGetCurrent cuMemGetInfo_v2"
pair drv_rules "$D/drv" "$B/entry_driver" rules "cuGetProcAddress(_v2) rules, unchanged by the preload: cuMemAlloc at 3000 is the driver's 32-bit cuMemAlloc, at 3020 memobs' cuMemAlloc_v2; per-thread at 6050 the legacy copy; a version too low or an unknown name: NULL with the status (CUDA_SUCCESS from _v2, CUDA_ERROR_NOT_FOUND from the 11.3 export); NULL symbol or pfn, flags 3 or 4, 13010: CUDA_ERROR_INVALID_VALUE, pfn untouched; cuCtxGetCurrent, cuMemGetInfo_v2: the driver's"

# 4. the runtime: cudaGetDriverEntryPoint(ByVersion)(_ptsz)
RLEG="cuMemAlloc_v2 cuMemAllocPitch_v2 cuMemFree_v2 cuMemcpyHtoD_v2 cuMemcpyDtoH_v2"
RPT="cuMemAlloc_v2 cuMemAllocPitch_v2 cuMemFree_v2 cuMemcpyHtoD_v2_ptds cuMemcpyDtoH_v2_ptds"
RSEQ="H2D 1000, D2H 300; device allocs 3 (one pitched 1024 x 10) / frees 2 / current / peak exact; 1 failed call"
OURS="" THEIRS=""
pair rt_linked "$D/rt" "$B/entry_runtime" linked "runtime double, the driver functions linked (the reference): $RSEQ"
for m in entry version; do
    OURS=$RLEG
    pair "rt_$m" "$D/rt" "$B/entry_runtime" $m "cudaGetDriverEntryPoint$([ $m = version ] && echo ByVersion) (legacy): memobs' interposers, the figures exactly the linked calls'"
    OURS=$RPT
    pair "rt_${m}_ptsz" "$D/rt" "$B/entry_runtime" ${m}_ptsz "cudaGetDriverEntryPoint$([ $m = version ] && echo ByVersion)_ptsz (per-thread): the _ptds copies' interposers, the same figures"
done
OURS="cuMemcpyHtoD_v2_ptds cuMemcpyHtoD_v2 cuMemcpyDtoH_v2 cuGetProcAddress cuGetProcAddress_v2 cuMemAlloc_v2"
THEIRS="cuCtxGetCurrent cuMemGetInfo_v2"
pair rt_rules "$D/rt" "$B/entry_runtime" rules "cudaGetDriverEntryPoint(ByVersion)(_ptsz) rules, unchanged by the preload: NULL symbol, flags 4, 13010: cudaErrorInvalidValue; unknown name and a version too low: NULL with the status; _ptsz with cudaEnableDefault is per-thread; cuGetProcAddress fetched through the runtime is memobs' and hands out memobs' cuMemAlloc_v2; cuCtxGetCurrent, cuMemGetInfo_v2: the driver's"

# 5. a runtime loaded with RTLD_LOCAL through a library (Python loading libtorch_cuda.so)
for m in entry entry_ptsz version version_ptsz; do
    case $m in *ptsz) OURS=$RPT ;; *) OURS=$RLEG ;; esac
    THEIRS=""
    pair "local_$m" "$D/rt" "$B/entry_local" $m "RTLD_LOCAL runtime, $m: the driver functions found in no global scope are seeded from the lookup, memobs' interposers handed out, the same figures as linked"
done
OURS="cuMemcpyHtoD_v2_ptds cuGetProcAddress cuGetProcAddress_v2 cuMemAlloc_v2" THEIRS="cuCtxGetCurrent cuMemGetInfo_v2"
pair local_rules "$D/rt" "$B/entry_local" rules "RTLD_LOCAL runtime, rules: the same codes and statuses; cuGetProcAddress seeded too"

# 6. the runtime's own lookups: the double's runtime takes cuGetProcAddress_v2 from the global scope (the preload's)
OURS="cuMemAllocPitch_v2" THEIRS=""
pair pitch "$D/rt" "$B/entry_runtime" pitch "the runtime's own lookups through the preload's cuGetProcAddress_v2 get the driver's pointers: cudaMallocPitch (not intercepted) allocates through them unrecorded; the program's fetched cuMemAllocPitch counted once (device allocs 2: cudaMalloc 4096 + 10240)" CUDADBL_DRIVER_LOOKUP=global
if [ "$(line "runtime's lookups" "$B/pitch.1.out")" != ours ]; then
    bad "the runtime double's lookups went through the preload's cuGetProcAddress_v2" "$(cat "$B/pitch.1.out")"
fi

# 7. the library built with ASan+UBSan (gcc; libasan.so preloaded first)
GCC=${GCC:-gcc}
ASAN_SO=$($GCC -print-file-name=libasan.so)
if ! $GCC -std=gnu11 -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fPIC -shared $W -I. -I"$CUDA_INC" \
    preload/memobs_preload.c -o "$B/libmemobs_preload_asan.so" -Wl,--version-script=preload/memobs_preload.map \
    -pthread -ldl -lm >"$B/asan.log" 2>&1 || [ ! -s "$B/libmemobs_preload_asan.so" ] || [ "${ASAN_SO#/}" = "$ASAN_SO" ]; then
    bad "ASan+UBSan: the library builds with $GCC -fsanitize=address,undefined and libasan.so is found" \
        "libasan.so: $ASAN_SO" "$(head -c 2000 "$B/asan.log")"
else
    fails=""
    for t in "drv/entry_driver/ptds" "drv/entry_driver/nested1" "rt/entry_local/entry_ptsz" "rt/entry_runtime/pitch"; do
        dir=${t%%/*} rest=${t#*/} prog=${rest%%/*} m=${rest#*/}
        run "asan_$m" "$D/$dir" "$B/$prog" "$m" "${PRE[@]}" LD_PRELOAD="$ASAN_SO $D/libmemobs_preload_asan.so" \
            MEMOBS_SUMMARY="$D/asan_$m.json" CUDADBL_DRIVER_LOOKUP=global
        if [ "$(cat "$B/asan_$m.st")" != 0 ] || [ -s "$B/asan_$m.err" ]; then
            fails="$fails $prog $m (status $(cat "$B/asan_$m.st"): $(head -c 600 "$B/asan_$m.err"))"
        elif ! o=$(expect_check "$B/asan_$m.json" "$(line expect "$B/asan_$m.out")"); then
            fails="$fails $prog $m ($o)"
        fi
    done
    if [ -z "$fails" ]; then
        ok "ASan+UBSan (leaks on): driver per-thread and nested lookups, the RTLD_LOCAL runtime, the runtime's own lookups: clean, figures exact"
    else
        bad "ASan+UBSan (leaks on): clean, figures exact" "$fails"
    fi
fi

exit $rc
