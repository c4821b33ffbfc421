#!/usr/bin/env bash
# Test runner: runs every step, shows its ok/not ok lines, and ends with
# "N passed, N failed" (a step that dies without reporting counts as failed).
cd "$(dirname "$0")/.." || exit 2
export BUILD=${BUILD:-build}/tests
mkdir -p "$BUILD"

bash tests/deps.sh
pass=0
fail=0
step() { # step NAME CMD...
    local name=$1 out rc p f
    shift
    out=$("$@" 2>&1)
    rc=$?
    printf '%s\n' "$out" | grep -E '^(not )?ok - '
    p=$(printf '%s\n' "$out" | grep -c '^ok - ')
    f=$(printf '%s\n' "$out" | grep -c '^not ok - ')
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "not ok - $name: exited with status $rc"
        printf '%s\n' "$out" | tail -n 30 | sed 's/^/    # /'
        f=1
    elif [ "$f" -ne 0 ]; then
        printf '%s\n' "$out" | grep -E '^    # ' | head -n 60
    fi
    pass=$((pass + p))
    fail=$((fail + f))
}

step compile bash tests/test_compile.sh
step core bash tests/test_core.sh
step track bash tests/test_track.sh
step snapshot bash tests/test_snapshot.sh
step unwind bash tests/test_unwind.sh
step timeline bash tests/test_timeline.sh
step regions bash tests/test_regions.sh
step prom bash tests/test_prom.sh
step cuda bash tests/test_cuda.sh
step cuda-stops bash tests/test_cuda_stops.sh
step capture bash tests/test_capture.sh
step nvtx bash tests/test_nvtx.sh
step python bash tests/test_python.sh
step pymodule bash tests/test_pymodule.sh
step pip bash tests/test_pip.sh
step torch-alloc bash tests/test_torch_alloc.sh
step torch bash tests/test_torch.sh
step preload bash tests/test_preload.sh
step preload-driver bash tests/test_preload_driver.sh
step preload-python bash tests/test_preload_python.sh
step sampler bash tests/test_sampler.sh
step distributed bash tests/test_distributed.sh
step env bash tests/test_env.sh
step outputs bash tests/test_outputs.sh
step crash bash tests/test_crash.sh
step handlers bash tests/test_handlers.sh
step signals bash tests/test_signals.sh
step requests bash tests/test_requests.sh
step churn bash tests/test_churn.sh
step trace-write bash tests/test_trace_write.sh
step shared bash tests/test_shared.sh
step demo bash tests/test_demo.sh
step html bash tests/test_html.sh
step install bash tests/test_install.sh
step gpu-build bash tests/test_gpu_build.sh

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
