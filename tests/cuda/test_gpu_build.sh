#!/usr/bin/env bash
# Compile-only check of the GPU tests and bench (no GPU needed): `make
# gpu-build` (mk/gpu.mk) with nvcc, -Werror all-warnings. Running them is
# `make gpu-test` / `make gpu-preload-test` / `make gpu-bench`, on a machine
# with a CUDA device.
cd "$(dirname "$0")/../.." || exit 2
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
name="gpu-build: tests/gpu (test_gpu.cu, per-thread test_gpu_ptds.cu, preload_gpu.cu, nccl_gpu.cu), bench/gpu_bench.cu and examples/cuda_offload.cu compile with nvcc; bench/bench_preload.c against the real runtime and driver"
if ! command -v "$NVCC" >/dev/null 2>&1; then
    echo "ok - gpu-build: # SKIP no nvcc at $NVCC (set NVCC)"
    exit 0
fi
# BUILD: the runner exports build/tests; keep the GPU binaries beside the
# others. -B: always compile (the check is that it compiles now).
# Until the Makefile includes mk/gpu.mk, name both files.
mf=()
grep -q '^ *-\?include  *mk/gpu\.mk' Makefile || mf=(-f Makefile -f mk/gpu.mk)
out=$(make --no-print-directory "${mf[@]}" -B NVCC="$NVCC" BUILD="${BUILD:-build}" gpu-build 2>&1)
rc=$?
# tests/gpu/test_gpu_ptds.o must really be a per-thread default stream
# unit: its stream-0 calls bind to the runtime's _ptsz entry points.
if [ "$rc" -eq 0 ] && command -v nm >/dev/null 2>&1; then
    syms=$(nm -u "${BUILD:-build}/gpu/test_gpu_ptds.o" 2>&1)
    for s in cudaMemcpyAsync_ptsz cudaStreamBeginCapture_ptsz cudaStreamEndCapture_ptsz; do
        if ! printf '%s\n' "$syms" | grep -qw "$s"; then
            rc=1
            out="$out
test_gpu_ptds.o does not reference $s: not built with --default-stream per-thread"
        fi
    done
fi
# tests/gpu/preload_gpu (run under LD_PRELOAD by make gpu-preload-test)
# must bind its runtime calls to the shared libcudart, where the preload
# can see them, and its driver calls to the names it intercepts.
if [ "$rc" -eq 0 ] && command -v nm >/dev/null 2>&1; then
    syms=$(nm -D --with-symbol-versions "${BUILD:-build}/gpu/preload_gpu" 2>&1)
    for s in 'cudaMalloc@libcudart.so.1[0-9.]*' 'cudaGetDriverEntryPointByVersion@libcudart.so.1[0-9.]*' \
        cuGetProcAddress_v2 cuMemCreate cuMemMap; do
        if ! printf '%s\n' "$syms" | grep -q " U $s\$"; then
            rc=1
            out="$out
preload_gpu does not import $s from the shared runtime or driver"
        fi
    done
fi
# make gpu-bench-preload's programs must bind their copies to the shared
# runtime and to the driver, where the preload sees them.
if [ "$rc" -eq 0 ] && command -v nm >/dev/null 2>&1; then
    d=${BUILD:-build}/gpu/preload
    for fs in "bench_preload cudaMemcpyAsync@libcudart.so.1[0-9.]*" "bench_preload_driver cuMemcpyHtoDAsync_v2"; do
        set -- $fs
        if ! nm -D --with-symbol-versions "$d/$1" 2>&1 | grep -q " U $2\$"; then
            rc=1
            out="$out
$1 does not import $2 from the shared runtime or driver"
        fi
    done
fi
# tests/gpu/nccl_gpu must export memobs_host_api (the NCCL plugin attaches
# to its memobs) and open NCCL with dlopen, never link it.
if [ "$rc" -eq 0 ] && command -v nm >/dev/null 2>&1; then
    f=${BUILD:-build}/gpu/nccl_gpu
    if ! nm -D --defined-only "$f" 2>&1 | grep -q ' T memobs_host_api$'; then
        rc=1
        out="$out
nccl_gpu does not export memobs_host_api"
    fi
    if readelf -d "$f" 2>&1 | grep -q 'NEEDED.*libnccl'; then
        rc=1
        out="$out
nccl_gpu is linked with libnccl (it must dlopen it)"
    fi
fi
if [ "$rc" -eq 0 ]; then
    echo "ok - $name"
else
    echo "not ok - $name"
    printf '%s\n' "$out" | tail -n 40 | sed 's/^/    # /'
    exit 1
fi
