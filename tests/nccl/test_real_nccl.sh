#!/usr/bin/env bash
# The real NCCL (libnccl.so.2 of the CUDA toolkit, or $NCCL_LIB) with the
# profiler plugin (make nccl-plugin: libnccl-profiler-memobs.so). No GPU
# needed; on a machine with one it checks the load too.
#
# 1. tests/nccl/real_nccl.c `init`: ncclGetVersion, ncclGetUniqueId and
#    ncclCommInitRank(nranks 1) three times, with NCCL_PROFILER_PLUGIN
#    unset, =memobs (the plugin's folder on LD_LIBRARY_PATH) and = the
#    plugin's absolute path, under NCCL_DEBUG=INFO
#    NCCL_DEBUG_SUBSYS=INIT,ENV and LD_DEBUG=files: the same return codes,
#    error texts and NCCL warnings all three times. Without a GPU,
#    ncclCommInitRank fails in its device set-up (cudaGetDevice), before
#    it opens the profiler plugin, so the plugin is never opened (LD_DEBUG
#    shows no attempt) and cannot change the outcome; the lines marked "#"
#    say how far NCCL got. With a GPU, the last two runs must show NCCL's
#    "Successfully loaded external profiler plugin" and the plugin mapped.
# 2. real_nccl `loader VALUE`: what NCCL 2.26+ does with
#    NCCL_PROFILER_PLUGIN=VALUE (dlopen(VALUE), then
#    dlopen("libnccl-profiler-VALUE.so"), RTLD_NOW | RTLD_LOCAL) and which
#    struct 2.28.9 takes (ncclProfiler_v5 first): "memobs" with the
#    plugin's folder on LD_LIBRARY_PATH, the absolute path, the file name
#    (NCCL 2.23-2.25 take only that or a path), and "memobs" with no
#    LD_LIBRARY_PATH (not found: the plugin must be on the loader's path).
#
# A missing libnccl.so.2 or nccl.h fails (the NCCL installed with the CUDA
# toolkit in /usr/local/cuda). NCCL_LIB=/path/libnccl.so.2 tests another.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/real_nccl
rm -rf "$B" && mkdir -p "$B"
B=$(cd "$B" && pwd)
CC=${CC:-cc}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
NCCL_LIB=${NCCL_LIB:-/usr/local/cuda/lib64/libnccl.so.2}
W="-Wall -Wextra -Werror"

. tests/lib.sh # a clean environment
unset LD_PRELOAD NCCL_PROFILER_PLUGIN NCCL_DEBUG NCCL_DEBUG_SUBSYS NCCL_DEBUG_FILE LD_DEBUG MEMOBS_NCCL \
    MEMOBS_NCCL_EVENTS MEMOBS_NCCL_ATTACH
rc=0
ok() { echo "ok - real-nccl: $1"; }
bad() {
    echo "not ok - real-nccl: $1"
    shift
    for l in "$@"; do [ -n "$l" ] && printf '%s\n' "$l" | head -n 30 | sed 's/^/    # /'; done
    rc=1
}
note() { printf '%s\n' "$@" | sed 's/^/    # /'; }

if [ ! -f "$NCCL_LIB" ] || [ ! -f "$CUDA_INC/nccl.h" ]; then
    bad "NCCL missing: $NCCL_LIB or $CUDA_INC/nccl.h (the NCCL installed with the CUDA toolkit; or set NCCL_LIB, CUDA_INC)"
    exit 1
fi

# 1. the plugin (make nccl-plugin) and the probe
PLUGIN=$B/libnccl-profiler-memobs.so
if make --no-print-directory -s BUILD="$B" nccl-plugin >"$B/make.log" 2>&1 && [ -f "$PLUGIN" ] &&
    $CC -std=c11 -O2 -g $W -isystem "$CUDA_INC" tests/nccl/real_nccl.c -o "$B/real_nccl" -ldl >"$B/build.log" 2>&1; then
    ok "build: make nccl-plugin ($PLUGIN) and tests/nccl/real_nccl.c"
else
    bad "build: make nccl-plugin and tests/nccl/real_nccl.c" "$(tail -n 20 "$B/make.log" "$B/build.log" 2>/dev/null)"
    exit 1
fi

# 2. ncclCommInitRank without, by name and by path
# run NAME [VAR=VALUE...]: $B/NAME.{out,err,st}
run() {
    local name=$1
    shift
    timeout 120 env NCCL_LIB="$NCCL_LIB" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV LD_DEBUG=files "$@" \
        "$B/real_nccl" init >"$B/$name.out" 2>"$B/$name.err"
    echo $? >"$B/$name.st"
}
run none
run name NCCL_PROFILER_PLUGIN=memobs LD_LIBRARY_PATH="$B${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
run path NCCL_PROFILER_PLUGIN="$PLUGIN"
# the program's own lines, and NCCL's warnings without time, host and pid
calls() { grep -E '^(get_version|get_unique_id|comm_init_rank|comm_destroy|last_error|error):' "$B/$1.out"; }
warns() { sed -n 's/^.*NCCL WARN /NCCL WARN /p' "$B/$1.out" "$B/$1.err"; }

for r in none name path; do
    if [ "$(cat "$B/$r.st")" != 0 ] || ! grep -q '^comm_init_rank: ' "$B/$r.out"; then
        bad "ncclCommInitRank ran ($r)" "exit $(cat "$B/$r.st")" "$(tail -n 20 "$B/$r.out" "$B/$r.err")"
        exit 1
    fi
done
init=$(line comm_init_rank "$B/none.out")
version=$(line get_version "$B/none.out")
note "libnccl: $(line libnccl "$B/none.out") (ncclGetVersion: $version, nccl.h $(sed -n 's/^#define NCCL_VERSION_CODE //p' "$CUDA_INC/nccl.h"))" \
    "ncclGetUniqueId: $(line get_unique_id "$B/none.out")" "ncclCommInitRank(nranks 1): $init" \
    "ncclGetLastError: $(line last_error "$B/none.out")" "$(warns none)"
if [ "${version%% *}" = 0 ] && [ "$(line get_unique_id "$B/none.out")" = "0 no error" ]; then
    ok "ncclGetVersion and ncclGetUniqueId succeed (NCCL ${version#* })"
else
    bad "ncclGetVersion and ncclGetUniqueId succeed" "get_version: $version" "$(calls none)"
fi

for r in name path; do
    case $r in name) what="NCCL_PROFILER_PLUGIN=memobs (LD_LIBRARY_PATH=$B)" ;; *) what="NCCL_PROFILER_PLUGIN=$PLUGIN" ;; esac
    if [ "$(calls none)" = "$(calls $r)" ] && [ "$(warns none)" = "$(warns $r)" ]; then
        ok "$what: the same return codes, error texts and NCCL warnings as without ($init)"
    else
        bad "$what: the same return codes, error texts and NCCL warnings as without" \
            "without:" "$(calls none; warns none)" "with:" "$(calls $r; warns $r)"
    fi
    tried=$(grep -c 'file=.*libnccl-profiler' "$B/$r.err")
    if [ "${init%% *}" = 0 ]; then
        # a GPU: NCCL got to its profiler and must have loaded ours
        if grep -q 'Successfully loaded external profiler plugin' "$B/$r.out" &&
            grep -q '^plugin_after_init: mapped' "$B/$r.out"; then
            ok "$what: NCCL loaded the plugin: $(grep -o 'Successfully loaded external profiler plugin.*' "$B/$r.out" | head -n 1)"
        else
            bad "$what: NCCL loaded the plugin" "$(grep -i 'profiler' "$B/$r.out" | head -n 10)" \
                "$(line plugin_after_init "$B/$r.out")"
        fi
    elif [ "$tried" = 0 ] && grep -q '^plugin_after_init: not mapped' "$B/$r.out" &&
        ! grep -q 'NCCL_PROFILER_PLUGIN set by environment' "$B/$r.out"; then
        ok "$what: without a GPU NCCL stops before its profiler: the plugin is never opened (LD_DEBUG=files: no attempt; NCCL_PROFILER_PLUGIN never read)"
    else
        bad "$what: without a GPU NCCL stops before its profiler" "LD_DEBUG lines naming it: $tried" \
            "$(grep 'libnccl-profiler\|NCCL_PROFILER_PLUGIN' "$B/$r.out" "$B/$r.err" | head -n 10)" \
            "$(line plugin_after_init "$B/$r.out")"
    fi
done
[ "${init%% *}" = 0 ] ||
    note "ncclCommInitRank opens the profiler plugin (src/init.cc, ncclProfilerPluginInit) only after" \
        "its device set-up, which fails here first: loading by name and path is proven below by NCCL's" \
        "own dlopen rule, and on a GPU by make gpu-nccl-test."

# 3. NCCL's loader: dlopen and dlsym as 2.28.9 does them
# loader NAME VALUE [VAR=VALUE...]: $B/loader-NAME.{out,st}
loader() {
    local name=$1 value=$2
    shift 2
    env "$@" "$B/real_nccl" loader "$value" >"$B/loader-$name.out" 2>&1
    echo $? >"$B/loader-$name.st"
}
loader name memobs LD_LIBRARY_PATH="$B"
loader path "$PLUGIN"
loader file libnccl-profiler-memobs.so LD_LIBRARY_PATH="$B"
loader nopath memobs
want_found=$(printf 'ncclProfiler_v%d: found\n' 6 5 4 3 2 1)
for r in name path file; do
    f=$B/loader-$r.out
    case $r in
    name) what="NCCL_PROFILER_PLUGIN=memobs: \"memobs\" not found, libnccl-profiler-memobs.so found on LD_LIBRARY_PATH" ;;
    path) what="NCCL_PROFILER_PLUGIN=<absolute path>: opened as given" ;;
    file) what="NCCL_PROFILER_PLUGIN=libnccl-profiler-memobs.so (NCCL 2.23-2.25's form): opened as given" ;;
    esac
    if [ "$(cat "$B/loader-$r.st")" = 0 ] && [ "$(line path "$f")" = "$PLUGIN" ] &&
        [ "$(grep '^ncclProfiler_v' "$f")" = "$want_found" ] &&
        [ "$(line chosen "$f")" = "ncclProfiler_v5 name memobs functions 5" ]; then
        ok "$what; exports ncclProfiler_v1..v6, 2.28.9 takes ncclProfiler_v5, named \"memobs\", 5 functions set"
    else
        bad "$what; exports ncclProfiler_v1..v6, 2.28.9 takes ncclProfiler_v5 named \"memobs\"" \
            "expected path $PLUGIN, v6..v1 found, chosen: ncclProfiler_v5 name memobs functions 5; got:" "$(cat "$f")"
    fi
done
if [ "$(cat "$B/loader-nopath.st")" = 1 ] && grep -q '^result: no profiler library' "$B/loader-nopath.out"; then
    ok "NCCL_PROFILER_PLUGIN=memobs with the plugin on no loader path: not found (NCCL goes on without a profiler)"
else
    bad "NCCL_PROFILER_PLUGIN=memobs with the plugin on no loader path: not found" "$(cat "$B/loader-nopath.out")"
fi
exit $rc
