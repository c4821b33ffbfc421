# Shared by the test scripts: try SUITE NAME CMD... runs CMD, prints one
# "ok - SUITE: NAME" or "not ok - SUITE: NAME" line (with CMD's output as
# "    # " lines) and sets rc=1 on failure. Needs $B (a scratch directory).
# Also json_check, expect_check, line, and a clean environment (below).
rc=0

# Every test starts from a known environment: no memobs or launcher
# variables from the caller's shell, and sanitizers that stop at their first
# report, so it fails the run rather than scrolling by.
unset MEMOBS MEMOBS_SUMMARY MEMOBS_FORMAT MEMOBS_JOB_ID MEMOBS_CALLSTACK MEMOBS_TRACK_CAPACITY \
    MEMOBS_PEAK_REPORT MEMOBS_PEAK_GROWTH MEMOBS_PEAK_MIN MEMOBS_LEAKS MEMOBS_REPORT_ROWS MEMOBS_OOM_REPORT \
    MEMOBS_CUDA_TIMING MEMOBS_TRACE MEMOBS_TRACE_EVENTS MEMOBS_SAMPLE_MS MEMOBS_SAMPLES MEMOBS_LEAK_WINDOW_S \
    MEMOBS_UNWIND MEMOBS_STORMLOG MEMOBS_STORMLOG_HOST MEMOBS_TORCH_SNAPSHOT MEMOBS_TORCH_EVENTS MEMOBS_REGION_TIMING MEMOBS_NVTX MEMOBS_PROM_FILE MEMOBS_PROM_INTERVAL_MS PROMETHEUS_MULTIPROC_DIR prometheus_multiproc_dir MEMOBS_PROM_MULTIPROC MEMOBS_PROM_MULTIPROC_LAYOUT MEMOBS_HTML RANK LOCAL_RANK WORLD_SIZE SLURM_PROCID SLURM_LOCALID SLURM_NTASKS OMPI_COMM_WORLD_RANK \
    OMPI_COMM_WORLD_LOCAL_RANK OMPI_COMM_WORLD_SIZE PMI_RANK PMI_LOCAL_RANK PMI_SIZE MEMOBS_PY_ATTACH \
    MEMOBS_PRELOAD_ROOT MEMOBS_REQUEST_TIMEOUT_S MEMOBS_TRACE_WRITE_S MEMOBS_SIGNALS \
    MEMOBS_LIMIT_HORIZON_S MEMOBS_STUCK_S MEMOBS_COMPONENTS MEMOBS_OOM_SNAPSHOT \
    MEMOBS_TIMELINE MEMOBS_TIMELINE_EVENTS MEMOBS_TIMELINE_WRITE_S MEMOBS_PRELOAD_LIB \
    MEMOBS_NCCL MEMOBS_NCCL_EVENTS MEMOBS_NCCL_ATTACH NCCL_PROFILER_PLUGIN
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
try() {
    local suite=$1 name=$2
    shift 2
    if "$@" >"$B/log" 2>&1; then
        echo "ok - $suite: $name"
    else
        echo "not ok - $suite: $name"
        sed 's/^/    # /' "$B/log" | head -n 20
        rc=1
    fi
}

# test_make BIN...: makes test programs by mk/tests.mk's rules (each one's
# source, libraries and build flavour are there; make redoes only what
# changed since), quiet but for the compilers' own output. BIN is
# $BUILD/PROGRAM_WAY as mk/tests.mk names it.
test_make() {
    MAKEFLAGS= MFLAGS= make --no-print-directory -s -f mk/tests.mk TESTS_B="${BUILD:-build/tests}" CC="${CC:-cc}" CXX="${CXX:-c++}" "$@"
}

# json_check FILE PYTHON-EXPR [KEY]: the expression over the parsed JSON `s`
# is true; on failure shows the expression and s (or s[KEY]), cut to 800
# characters, as "    # " lines.
json_check() {
    python3 - "$1" "$2" "${3:-}" <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
except Exception as e:
    print("    # not JSON: %s" % e); sys.exit(1)
ok = eval(sys.argv[2])
shown = s.get(sys.argv[3]) if sys.argv[3] else s
if not ok: print("    # false: %s\n    # summary: %s" % (sys.argv[2], json.dumps(shown)[:800]))
sys.exit(0 if ok else 1)
PY
}

# expect_check SUMMARY EXPECT-JSON: every key of EXPECT (nested) equals the
# summary's; prints one line per difference (with $PY, else python3).
expect_check() {
    "${PY:-python3}" - "$1" "$2" <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
except Exception as e:
    print("summary %s: %s" % (sys.argv[1], e)); sys.exit(1)
bad = []
def walk(want, got, path):
    for k, v in want.items():
        g = got.get(k) if isinstance(got, dict) else None
        if isinstance(v, dict): walk(v, g, path + k + ".")
        elif g != v: bad.append("%s%s: expected %s, got %s" % (path, k, v, g))
walk(json.loads(sys.argv[2]), s, "")
for b in bad: print(b)
sys.exit(1 if bad else 0)
PY
}

# line KEY FILE: what follows "KEY: " on FILE's line that starts so.
line() { sed -n "s/^$1: \{0,1\}//p" "$2"; }
