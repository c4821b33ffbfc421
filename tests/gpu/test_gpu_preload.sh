#!/usr/bin/env bash
# The LD_PRELOAD library on a real GPU (`make gpu-preload-test`): builds
# `make preload` and tests/gpu/preload_gpu.cu (a CUDA program that knows
# nothing of memobs, linked with NVIDIA's libcudart.so and libcuda.so.1),
# runs each of its modes without and with LD_PRELOAD=libmemobs_preload.so
# (MEMOBS_FORMAT=json, MEMOBS_SUMMARY=file) and checks: the same return
# codes both ways, nothing on stderr, memobs' device figures exact after
# every step, and the JSON summary exactly what the program says it did.
#   runtime    linked cudaMalloc, cudaMallocHost, cudaMemcpy(Async), cudaFree
#   entry      cuMemAlloc / cuMemcpyHtoD / cuMemcpyDtoH / cuMemFree through
#              pointers from cudaGetDriverEntryPoint(ByVersion) and
#              cuGetProcAddress (legacy and per-thread): memobs' interposers
#              handed out, also for the six VMM calls; the driver's own
#              cuGetProcAddress asked past the preload ("# driver:" lines)
#   vmm        PyTorch's expandable segments on the driver's VMM, linked
#   vmm_entry  the same through cudaGetDriverEntryPointByVersion pointers
# Needs a CUDA device: without one it says so ("not ok") and exits 1.
# PRELOAD_GPU_PROG=path runs that program instead of building it (with the
# caller's LD_LIBRARY_PATH), e.g. one linked against the runtime double.
cd "$(dirname "$0")/../.." || exit 2
BUILD=${BUILD:-build}
B=$BUILD/gpu/preload
rm -rf "$B" && mkdir -p "$B" && D=$(cd "$B" && pwd) || exit 2
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}

. tests/lib.sh # a clean environment, expect_check, line
unset LD_PRELOAD MEMOBS_PRELOAD_ROOT
npass=0
nfail=0
ok() { echo "ok - gpu-preload: $1"; npass=$((npass + 1)); }
bad() {
    echo "not ok - gpu-preload: $1"
    shift
    for l in "$@"; do [ -n "$l" ] && printf '%s\n' "$l" | head -n 20 | sed 's/^/    # /'; done
    nfail=$((nfail + 1))
}
finish() {
    echo "$npass passed, $nfail failed"
    [ "$nfail" = 0 ]
    exit
}

P=${PRELOAD_GPU_PROG:-$BUILD/gpu/preload_gpu}
targets=("$BUILD/libmemobs_preload.so")
[ -n "${PRELOAD_GPU_PROG:-}" ] || targets+=("$P")
if make --no-print-directory -s BUILD="$BUILD" NVCC="$NVCC" "${targets[@]}" >"$B/make.log" 2>&1 &&
    LIB=$(cd "$BUILD" && pwd)/libmemobs_preload.so && [ -f "$LIB" ] && [ -x "$P" ]; then
    ok "build: make preload and $P"
else
    bad "build: make preload and $P" "$(tail -n 20 "$B/make.log")"
    finish
fi

# a device, or say why not
if ! probe=$(timeout 60 "$P" probe 2>&1); then
    bad "no CUDA device: these checks need one (${probe:-the program did not start})"
    finish
fi
ok "$probe"

# run NAME MODE [VAR=VALUE...]: $B/NAME.{out,err,st}
run() {
    local name=$1 mode=$2
    shift 2
    timeout 300 env "$@" "$P" "$mode" >"$B/$name.out" 2>"$B/$name.err"
    echo $? >"$B/$name.st"
}
PRE=(LD_PRELOAD="$LIB" MEMOBS_FORMAT=json MEMOBS_OOM_REPORT=0)

for m in runtime entry vmm vmm_entry; do
    case $m in
    runtime) what="linked cudaMalloc, cudaMallocHost, cudaMemcpy, cudaMemcpyAsync, cudaMemcpyDefault, cudaFree, cudaFreeHost" ;;
    entry) what="cuMemAlloc, cuMemcpyHtoD, cuMemcpyDtoH, cuMemFree through cudaGetDriverEntryPoint(ByVersion) and cuGetProcAddress pointers" ;;
    vmm) what="expandable segments (linked cuMemCreate, cuMemMap, cuMemUnmap, cuMemRelease, cuMemAddressReserve/Free)" ;;
    vmm_entry) what="expandable segments through cudaGetDriverEntryPointByVersion pointers" ;;
    esac
    run "$m.plain" "$m" MEMOBS_SUMMARY="$D/$m.plain.json"
    run "$m.pre" "$m" "${PRE[@]}" MEMOBS_SUMMARY="$D/$m.json"
    n=$(line rcs "$B/$m.plain.out" | wc -w)
    if [ "$(cat "$B/$m.plain.st")" = 0 ] && [ ! -s "$B/$m.plain.err" ] && [ ! -e "$B/$m.plain.json" ] && [ "$n" -gt 0 ]; then
        ok "$m without LD_PRELOAD: $n return codes as documented ($what)"
    else
        bad "$m without LD_PRELOAD: return codes as documented ($what)" "status $(cat "$B/$m.plain.st")" \
            "$(head -c 1500 "$B/$m.plain.err")"
    fi
    if [ "$(cat "$B/$m.pre.st")" = 0 ] && [ ! -s "$B/$m.pre.err" ] &&
        [ "$(line rcs "$B/$m.pre.out")" = "$(line rcs "$B/$m.plain.out")" ]; then
        ok "$m with LD_PRELOAD: exit 0, the same $n return codes, nothing on stderr"
    else
        bad "$m with LD_PRELOAD: exit 0, the same return codes, nothing on stderr" "status $(cat "$B/$m.pre.st")" \
            "with:    $(line rcs "$B/$m.pre.out")" "without: $(line rcs "$B/$m.plain.out")" \
            "$(head -c 1500 "$B/$m.pre.err")"
    fi
    s=$(line steps "$B/$m.pre.out")
    if [ "${s##* }" = exact ]; then
        ok "$m: memobs' device 0 current and peak exact after each of ${s%% *} steps"
    else
        bad "$m: memobs' device 0 current and peak exact after each step" "steps: $s" "$(head -c 1500 "$B/$m.pre.err")"
    fi
    e=$(line expect "$B/$m.pre.out")
    if [ -n "$e" ] && out=$(expect_check "$B/$m.json" "$e"); then
        ok "$m: the JSON summary holds $e"
    else
        bad "$m: the JSON summary holds what the program did" "expected: $e" "$out"
    fi
done

# every driver function fetched under the preload is memobs' interposer
nf=$(grep -c '^fetched .*: ' "$B/entry.pre.out")
nours=$(grep -c '^fetched .*: ours$' "$B/entry.pre.out")
nv=$(grep -c '^fetched .*: ours$' "$B/vmm_entry.pre.out")
if [ "$nf" -gt 0 ] && [ "$nf" = "$nours" ] && [ "$nv" = 6 ]; then
    ok "entry points: all $nf functions fetched in entry, and the 6 VMM calls of vmm_entry, are memobs' interposers"
else
    bad "entry points: every function fetched is memobs' interposer" \
        "$(grep '^fetched' "$B/entry.pre.out" "$B/vmm_entry.pre.out" | grep -v ': ours$')"
fi
# for the record: the driver's own answers, and the same lookups without the preload
sed -n 's/^\(driver: .*\)/    # \1/p' "$B/entry.plain.out" "$B/vmm.plain.out"
grep '^fetched' "$B/entry.plain.out" | sed 's/^fetched \([^ ]*\) by \(.*\): \(.*\)/\3 \1/' | sort | uniq -c |
    sed 's/^ */    # without the preload, fetched: /'
sed -n 's/^granularity: /    # VMM granularity (minimum): /p' "$B/vmm.plain.out"
finish
