#!/usr/bin/env bash
# Test runner (make test): runs the suites below side by side, as many at a
# time as there are cores, the longest first, and ends with one line
# "N passed, N failed" (a suite that dies without reporting counts as one
# failure).
#
#   bash tests/run.sh                 every suite
#   bash tests/run.sh core track      only those suites (names as in `step`)
#   MEMOBS_TEST_JOBS=1 make test      one suite at a time (default: nproc)
#   make test BUILD=/tmp/b            build and log under /tmp/b/tests
#
# Each suite's whole output (stdout and stderr) goes to
# $BUILD/tests/logs/NAME.log; its ok/not ok lines are shown as it ends.
# Then a table of each suite's wall and CPU time (slowest first; kept in
# $BUILD/tests/logs/times.txt, which orders the next run), the full log of
# every failing suite, and the closing line.
cd "$(dirname "$0")/.." || exit 2
export BUILD=${BUILD:-build}/tests
# Several suites name their files "$PWD/$B/...": a BUILD given as an
# absolute path reaches them relative to the repository root instead
case $BUILD in /*) BUILD=$(realpath -sm --relative-to=. "$BUILD") || exit 2 ;; esac
LOGS=$BUILD/logs
mkdir -p "$LOGS"
JOBS=${MEMOBS_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
case $JOBS in '' | *[!0-9]* | 0) echo "tests/run.sh: MEMOBS_TEST_JOBS='$JOBS' is not a positive number" >&2; exit 2 ;; esac

names=()
declare -A cmd
step() { # step NAME CMD...: a suite
    names+=("$1")
    cmd[$1]=$(printf '%q ' "${@:2}")
}

step compile bash tests/core/test_compile.sh
step core bash tests/core/test_core.sh
step cutout bash tests/core/test_cutout.sh
step storage bash tests/core/test_storage.sh
step attribution bash tests/core/test_attribution.sh
step inflight bash tests/core/test_inflight.sh
step track bash tests/tracker/test_track.sh
step table bash tests/tracker/test_table.sh
step snapshot bash tests/tracker/test_snapshot.sh
step unwind bash tests/tracker/test_unwind.sh
step timeline bash tests/outputs/test_timeline.sh
step request-outputs bash tests/outputs/test_request_outputs.sh
step regions bash tests/core/test_regions.sh
step prom bash tests/serving/test_prom.sh
step dashboard bash tests/serving/test_dashboard.sh
step prom-multiproc bash tests/serving/test_prom_multiproc.sh
step cuda bash tests/cuda/test_cuda.sh
step cuda-stops bash tests/cuda/test_cuda_stops.sh
step capture bash tests/cuda/test_capture.sh
step nvtx bash tests/cuda/test_nvtx.sh
step python bash tests/python/test_python.sh
step pymodule bash tests/python/test_pymodule.sh
step prom-collector bash tests/python/test_prom_collector.sh
step pip bash tests/python/test_pip.sh
step torch-alloc bash tests/python/test_torch_alloc.sh
step torch bash tests/python/test_torch.sh
step preload bash tests/preload/test_preload.sh
step preload-driver bash tests/preload/test_preload_driver.sh
step preload-python bash tests/preload/test_preload_python.sh
step preload-majors bash tests/preload/test_preload_majors.sh
step preload-entry bash tests/preload/test_preload_entry.sh
step preload-vmm bash tests/preload/test_preload_vmm.sh
step preload-engine bash tests/preload/test_preload_engine.sh
step vmm bash tests/cuda/test_vmm.sh
step cuda-review bash tests/cuda/test_cuda_review.sh
step cuda-oom bash tests/cuda/test_oom.sh
step pinned bash tests/cuda/test_pinned.sh
step inflight-cuda bash tests/cuda/test_inflight_cuda.sh
step coll bash tests/nccl/test_coll.sh
step nccl-plugin bash tests/nccl/test_nccl_plugin.sh
step nccl bash tests/nccl/test_nccl.sh
step real-nccl bash tests/nccl/test_real_nccl.sh
step sampler bash tests/tracker/test_sampler.sh
step cgroup bash tests/tracker/test_cgroup.sh
step distributed bash tests/nccl/test_distributed.sh
step env bash tests/core/test_env.sh
step outputs bash tests/outputs/test_outputs.sh
step output-table bash tests/outputs/test_output_table.sh
step crash bash tests/serving/test_crash.sh
step handlers bash tests/serving/test_handlers.sh
step signals bash tests/serving/test_signals.sh
step stops bash tests/serving/test_stops.sh
step requests bash tests/serving/test_requests.sh
step requests-py bash tests/python/test_requests_py.sh
step churn bash tests/core/test_churn.sh
step trace-write bash tests/outputs/test_trace_write.sh
step shared bash tests/core/test_shared.sh
step demo bash tests/docs/test_demo.sh
step html bash tests/outputs/test_html.sh
step install bash tests/docs/test_install.sh
step gpu-build bash tests/cuda/test_gpu_build.sh
step names bash tests/docs/test_names.sh
step docs bash tests/docs/test_docs.sh
step map bash tests/docs/test_map.sh
step launcher bash tests/preload/test_launcher.sh
step examples bash tests/docs/test_examples.sh
step hostile-files bash tests/outputs/test_hostile_files.sh
step hostile-signals bash tests/serving/test_hostile_signals.sh
step hostile-host bash tests/serving/test_hostile_host.sh
step hostile-numbers bash tests/core/test_hostile_numbers.sh
step hostile-nccl bash tests/nccl/test_hostile_nccl.sh

# The suites asked for (all by default), in the order given
if [ $# -gt 0 ]; then
    for n in "$@"; do
        if [ -z "${cmd[$n]+x}" ]; then
            echo "tests/run.sh: no suite '$n'; the suites: ${names[*]}" >&2
            exit 2
        fi
    done
    names=("$@")
fi

bash tests/deps.sh

# Longest first: the wall times of the last run here (times.txt), else these
# estimates (seconds alone on an idle 2-core machine; a suite not listed
# counts as 30).
declare -A est=(
    [compile]=91 [signals]=64 [outputs]=61 [timeline]=60 [cuda-stops]=52 [cuda]=51 [names]=50 [nvtx]=45
    [stops]=43 [pymodule]=41 [crash]=41 [sampler]=39 [python]=37 [churn]=36 [examples]=34 [prom]=31
    [capture]=31 [dashboard]=20 [prom-multiproc]=75 [prom-collector]=12 [snapshot]=30 [unwind]=30 [regions]=30 [trace-write]=29 [track]=28 [table]=45 [handlers]=27
    [html]=26 [core]=25 [gpu-build]=21 [requests]=20 [pip]=19 [launcher]=15 [torch]=15 [preload]=12
    [shared]=10 [env]=9 [preload-python]=7 [torch-alloc]=7 [docs]=5 [distributed]=4 [demo]=4 [install]=4
    [preload-driver]=2 [preload-entry]=35 [preload-majors]=20 [preload-vmm]=45
    [preload-engine]=20 [vmm]=55 [hostile-files]=210 [hostile-signals]=240 [hostile-host]=60
    [hostile-numbers]=70 [hostile-nccl]=60 [cuda-review]=45 [coll]=60 [nccl]=60 [nccl-plugin]=15 [real-nccl]=15
    [attribution]=40 [requests-py]=78 [request-outputs]=40
)
if [ -f "$LOGS/times.txt" ]; then
    while read -r n w _; do [ -n "${cmd[$n]+x}" ] && est[$n]=${w%.*}; done <"$LOGS/times.txt"
fi
order=($(for n in "${names[@]}"; do echo "${est[$n]:-30} $n"; done | sort -s -k1,1nr | awk '{ print $2 }'))

# A compile that several suites (or one suite twice) make alike is made once
# per run: the compilers on PATH are tests/build_once.sh, which keeps each
# compile's output in $BUILD/build-once, emptied here.
if [ "${MEMOBS_TEST_BUILD_ONCE:-1}" != 0 ]; then
    bin=$(cd "$BUILD" && pwd)/bin
    rm -rf "$BUILD/build-once" "$bin" && mkdir -p "$bin" || exit 2
    for c in cc gcc g++ c++ clang clang++; do ln -s "$PWD/tests/build_once.sh" "$bin/$c" || exit 2; done
    export PATH=$bin:$PATH
fi

# run_suite NAME: runs it, its output to $LOGS/NAME.log; then writes
# $LOGS/NAME.time ("NAME wall-seconds cpu-seconds status") and says NAME
# on the queue of ended suites (fd 3)
run_suite() {
    local n=$1 t0=$EPOCHREALTIME st
    eval "${cmd[$n]}" >"$LOGS/$n.log" 2>&1 </dev/null
    st=$?
    # the CPU time (user + sys) of this subshell's children: the suite's processes
    times >"$LOGS/$n.cpu" # (a builtin in this shell: a pipe would run it in another)
    awk -v n="$n" -v t0="$t0" -v t1="$EPOCHREALTIME" -v st=$st 'NR == 2 {
        split($1, u, /[ms]/); split($2, s, /[ms]/)
        printf "%s %.1f %.1f %d\n", n, t1 - t0, u[1] * 60 + u[2] + s[1] * 60 + s[2], st }' "$LOGS/$n.cpu" >"$LOGS/$n.time"
    rm -f "$LOGS/$n.cpu"
    echo "$n" >&3
}

pass=0
fail=0
failed=()
# report NAME: its ok/not ok lines, counted
report() {
    local n=$1 log=$LOGS/$1.log st p f
    read -r _ _ _ st <"$LOGS/$n.time"
    grep -aE '^(not )?ok - ' "$log"
    p=$(grep -ac '^ok - ' "$log")
    f=$(grep -ac '^not ok - ' "$log")
    if [ "${st:-1}" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "not ok - $n: exited with status $st"
        f=1
    fi
    [ "$f" -eq 0 ] || failed+=("$n")
    pass=$((pass + p))
    fail=$((fail + f))
}

T0=$EPOCHREALTIME
fifo=$LOGS/.ended
rm -f "$fifo" && mkfifo "$fifo" && exec 3<>"$fifo" && rm -f "$fifo" || exit 2
next=0
running=0
while [ $next -lt ${#order[@]} ] || [ $running -gt 0 ]; do
    while [ $next -lt ${#order[@]} ] && [ $running -lt "$JOBS" ]; do
        rm -f "$LOGS/${order[$next]}.time"
        run_suite "${order[$next]}" &
        next=$((next + 1))
        running=$((running + 1))
    done
    read -r n <&3
    running=$((running - 1))
    report "$n"
done
wait
exec 3<&-
T1=$EPOCHREALTIME

# The times, slowest first; times.txt keeps every suite's last figures
declare -A row=()
if [ -f "$LOGS/times.txt" ]; then
    while read -r n rest; do [ -n "${cmd[$n]+x}" ] && row[$n]=$rest; done <"$LOGS/times.txt"
fi
for n in "${order[@]}"; do read -r _ w c _ <"$LOGS/$n.time" && row[$n]="$w $c"; done
for n in "${!row[@]}"; do echo "$n ${row[$n]}"; done | sort -k2,2nr >"$LOGS/times.txt"
echo
echo "# suite             wall s    cpu s   (logs: $LOGS/NAME.log)"
for n in "${order[@]}"; do cat "$LOGS/$n.time"; done | sort -k2,2nr |
    awk -v el="$T1" -v t0="$T0" -v j="$JOBS" '{ printf "# %-16s %7.1f  %7.1f%s\n", $1, $2, $3, $4 ? "   (exit " $4 ")" : ""; w += $2; c += $3 }
        END { printf "# %-16s %7.1f  %7.1f\n# %-16s %7.1f            (%d at a time)\n", "sum", w, c, "elapsed", el - t0, j }'

for n in "${failed[@]}"; do
    echo
    echo "=== $n: the full log ($LOGS/$n.log) ==="
    sed 's/^/  | /' "$LOGS/$n.log"
done
[ ${#failed[@]} -eq 0 ] || echo

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
