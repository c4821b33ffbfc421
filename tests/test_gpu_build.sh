#!/usr/bin/env bash
# Compile-only check of the GPU tests and bench (no GPU needed): `make
# gpu-build` (mk/gpu.mk) with nvcc, -Werror all-warnings. Running them is
# `make gpu-test` / `make gpu-bench`, on a machine with a CUDA device.
cd "$(dirname "$0")/.." || exit 2
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
name="gpu-build: tests/gpu, bench/gpu_bench.cu and examples/cuda_offload.cu compile with nvcc"
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
if [ "$rc" -eq 0 ]; then
    echo "ok - $name"
else
    echo "not ok - $name"
    printf '%s\n' "$out" | tail -n 40 | sed 's/^/    # /'
    exit 1
fi
