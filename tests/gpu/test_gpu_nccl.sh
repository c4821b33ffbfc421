#!/usr/bin/env bash
# The NCCL profiler plugin in the real NCCL on a real GPU (`make
# gpu-nccl-test`, also run by `make gpu-test`): builds `make nccl-plugin`
# and $BUILD/gpu/nccl_gpu (tests/gpu/nccl_gpu.cu: memobs built in with
# MEMOBS_EXPORT_HOST, NCCL opened with dlopen), finds libnccl.so.2 and runs:
#   solo   a 1-rank communicator, NCCL_PROFILER_PLUGIN=memobs with the
#          plugin's folder on LD_LIBRARY_PATH: NCCL says "Successfully
#          loaded external profiler plugin", the plugin attaches to the
#          program's memobs (source, instance, API version), records no
#          operation (NCCL gives a 1-rank communicator no task events)
#   proxy  2 ranks, MEMOBS_NCCL=proxy, the plugin by absolute path
#   coll   2 ranks, the default level, NCCL_PROFILER_PLUGIN=memobs
#   own    2 ranks, MEMOBS_NCCL=api, MEMOBS_NCCL_ATTACH=0: the plugin's own
#          memobs writes the JSON summary (the ".2" name: the program's
#          memobs configured the path first), unphased (the phases are set
#          in the program's memobs, which that one does not see)
# Each 2-rank run also captures one broadcast into a CUDA graph and launches
# it 5 times: 1 captured call, and from level coll up 5 operations.
# 2 ranks on 1 GPU: two processes with different NCCL_HOSTID are two nodes
# to NCCL, connected by its socket transport on lo (NCCL_NET=Socket,
# NCCL_SOCKET_IFNAME=lo); prefill all-reduces and decode send/recv pairs;
# nccl_gpu checks memobs' figures exactly, this script the JSON summaries.
# Prints the NCCL found and NCCL's log lines about the profiler.
#
#   NCCL_LIB=/path/libnccl.so.2   the NCCL to test (default: the first of
#       libnccl.so.2 in the CUDA toolkit, in the site-packages of python3,
#       /opt/*/.venv (the nvidia-nccl-cu* wheels: nvidia/nccl/lib,
#       nvidia/cu*/lib), in the loader's cache)
#   NCCL_GPU_PROG, NCCL_GPU_PLUGIN   run these instead of building (where
#       the toolkit has no nccl.h: built elsewhere with make gpu-build
#       nccl-plugin)
# Needs a CUDA device and NCCL: without either it says so ("not ok") and
# exits 1. About 20 s.
cd "$(dirname "$0")/../.." || exit 2
BUILD=${BUILD:-build}
B=$BUILD/gpu/nccl
rm -rf "$B" && mkdir -p "$B" && D=$(cd "$B" && pwd) || exit 2
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}

. tests/lib.sh # a clean environment, json_check
unset LD_PRELOAD MEMOBS_NCCL MEMOBS_NCCL_EVENTS MEMOBS_NCCL_ATTACH NCCL_PROFILER_PLUGIN NCCL_DEBUG NCCL_DEBUG_SUBSYS \
    NCCL_DEBUG_FILE NCCL_HOSTID
npass=0
nfail=0
ok() { echo "ok - nccl-gpu: $1"; npass=$((npass + 1)); }
bad() {
    echo "not ok - nccl-gpu: $1"
    shift
    for l in "$@"; do [ -n "$l" ] && printf '%s\n' "$l" | head -n 30 | sed 's/^/    # /'; done
    nfail=$((nfail + 1))
}
note() { printf '%s\n' "$@" | sed 's/^/    # /'; }
finish() {
    echo "$npass passed, $nfail failed"
    [ "$nfail" = 0 ]
    exit
}

# 1. the plugin and the program
P=${NCCL_GPU_PROG:-$BUILD/gpu/nccl_gpu}
PLUGIN=${NCCL_GPU_PLUGIN:-$BUILD/libnccl-profiler-memobs.so}
targets=()
[ -n "${NCCL_GPU_PLUGIN:-}" ] || targets+=(nccl-plugin)
[ -n "${NCCL_GPU_PROG:-}" ] || targets+=("$P")
if { [ ${#targets[@]} = 0 ] || make --no-print-directory -s BUILD="$BUILD" NVCC="$NVCC" "${targets[@]}" >"$B/make.log" 2>&1; } &&
    [ -x "$P" ] && [ -f "$PLUGIN" ]; then
    ok "build: $PLUGIN and $P"
else
    bad "build: make nccl-plugin $P" "$(tail -n 20 "$B/make.log" 2>/dev/null)"
    finish
fi
PLUGIN=$(cd "$(dirname "$PLUGIN")" && pwd)/$(basename "$PLUGIN")
PDIR=$(dirname "$PLUGIN")
[ "$(basename "$PLUGIN")" = libnccl-profiler-memobs.so ] || note "the plugin file is not named libnccl-profiler-memobs.so: loading by name will fail"

# 2. NCCL: $NCCL_LIB, else the first libnccl.so.2 found
cands=()
[ -n "${NCCL_LIB:-}" ] && cands+=("$NCCL_LIB")
cands+=(/usr/local/cuda/lib64/libnccl.so.2)
for py in python3 /opt/*/.venv/bin/python3 /opt/*/venv/bin/python3; do
    command -v "$py" >/dev/null 2>&1 || continue
    while IFS= read -r sp; do
        [ -d "$sp/nvidia" ] || continue
        while IFS= read -r f; do cands+=("$f"); done < <(find "$sp/nvidia" -maxdepth 3 -name libnccl.so.2 2>/dev/null | sort)
    done < <("$py" -c 'import site, sys; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null)
done
while IFS= read -r f; do cands+=("$f"); done < <(ldconfig -p 2>/dev/null | sed -n 's/.*libnccl\.so\.2 .*=> //p')
NCCL_LIB=
for f in "${cands[@]}"; do [ -f "$f" ] && { NCCL_LIB=$f; break; }; done
note "libnccl.so.2 candidates: ${cands[*]}"
if [ -z "$NCCL_LIB" ]; then
    bad "no libnccl.so.2 found (set NCCL_LIB)"
    finish
fi
export NCCL_LIB

# a device and NCCL, or say why not
if ! probe=$(timeout 30 "$P" probe 2>&1); then
    bad "no CUDA device or NCCL: these checks need both" "${probe:-the program did not start}"
    finish
fi
ok "$(echo "$probe" | head -n 1); $(echo "$probe" | sed -n 's/^nccl: /NCCL /p'); plugin $PLUGIN"

# 3. the runs
# start NAME RANK [VAR=VALUE...]: $B/NAME.RANK.{out,nccl,st}, in the background
COMMON=(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,NET NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-lo}"
    MEMOBS_FORMAT=json MEMOBS_OOM_REPORT=0)
start() {
    local name=$1 rank=$2
    shift 2
    local mode=(rank "$rank" "$D/$name.id")
    [ "$rank" = solo ] && mode=(solo)
    (
        timeout 40 env "${COMMON[@]}" NCCL_DEBUG_FILE="$D/$name.$rank.nccl" MEMOBS_SUMMARY="$D/$name.$rank.json" \
            "$@" "$P" "${mode[@]}" >"$D/$name.$rank.out" 2>&1
        echo $? >"$D/$name.$rank.st"
    ) &
}
# the environment of rank R of a 2-rank run: a node of its own, reached
# by NCCL's socket transport (no NVLink domain, NVLS, P2P or SHM between
# the two "nodes", which are one GPU)
pair() {
    echo "NCCL_HOSTID=memobs-gpu-node$1 NCCL_NET=${NCCL_NET:-Socket} NCCL_IB_DISABLE=1 NCCL_MNNVL_ENABLE=0" \
        "NCCL_NVLS_ENABLE=0 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1"
}
BYNAME=(NCCL_PROFILER_PLUGIN=memobs LD_LIBRARY_PATH="$PDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
BYPATH=(NCCL_PROFILER_PLUGIN="$PLUGIN")

# show NAME RANK: the program's lines, and NCCL's about the profiler
show() {
    grep -E '^(ok|not ok) - |^    # ' "$D/$1.$2.out"
    grep -vE '^(ok|not ok) - |^    # ' "$D/$1.$2.out" | head -n 20 | sed 's/^/    # out: /'
    grep -hiE 'profiler|NCCL_NET|NCCL_HOSTID|via NET|Using network|WARN' "$D/$1.$2.nccl"* 2>/dev/null |
        sed 's/^.*NCCL \(INFO\|WARN\) /NCCL \1 /' | sort | uniq -c | sort -rn | head -n 12 | sed 's/^/    # nccl: /'
}
# judge NAME RANK: its "ok" and "not ok" lines count; an exit status
# without a "not ok" line is one; fails (later runs skipped) when it ran
# out of time or died
judge() {
    local st
    st=$(cat "$D/$1.$2.st" 2>/dev/null || echo none)
    npass=$((npass + $(grep -c '^ok - ' "$D/$1.$2.out")))
    nfail=$((nfail + $(grep -c '^not ok - ' "$D/$1.$2.out")))
    if [ "$st" != 0 ] && ! grep -q '^not ok - ' "$D/$1.$2.out"; then
        bad "$1 $2: exit status $st (124: over 40 s)" "$(tail -n 15 "$D/$1.$2.nccl"* 2>/dev/null)"
    fi
    [ "$st" = 0 ] || [ "$st" = 1 ]
}
loaded() { # loaded NAME RANK: NCCL's line naming the plugin
    if grep -q 'Successfully loaded external profiler plugin' "$D/$1.$2.nccl"* 2>/dev/null; then
        ok "$1 $2: $(grep -ho 'Successfully loaded external profiler plugin.*' "$D/$1.$2.nccl"* | head -n 1)"
    else
        bad "$1 $2: NCCL loaded the plugin" "$(grep -hi 'profiler' "$D/$1.$2.nccl"* 2>/dev/null | head -n 10)"
    fi
}

start solo solo "${BYNAME[@]}"
wait
show solo solo
judge solo solo
loaded solo solo

# the kinds of the communicator memobs-gpu in a summary (json_check's s)
K='[c for c in s["collectives"]["comms"] if c["name"] == "memobs-gpu"][0]["kinds"]'
go_on=1
for run in proxy coll own; do
    [ "$go_on" = 1 ] || break
    case $run in
    proxy) env_run=(MEMOBS_NCCL=proxy "${BYPATH[@]}") ;;
    coll) env_run=("${BYNAME[@]}") ;;
    own) env_run=(MEMOBS_NCCL=api MEMOBS_NCCL_ATTACH=0 "${BYPATH[@]}") ;;
    esac
    rm -f "$D/$run.id"
    # shellcheck disable=SC2046 # pair's words are VAR=VALUE
    start "$run" 0 $(pair 0) "${env_run[@]}"
    # shellcheck disable=SC2046
    start "$run" 1 $(pair 1) "${env_run[@]}"
    wait
    for r in 0 1; do
        echo "# $run, rank $r: ${env_run[*]} $(pair $r)"
        show "$run" $r
        judge "$run" $r || go_on=0
        loaded "$run" $r
        case $run in
        proxy | coll)
            # the program's memobs wrote the figures at exit
            if json_check "$D/$run.$r.json" "($K[\"all_reduce\"][\"prefill\"][\"ops\"] == 20 and
                $K[\"send\"][\"decode\"][\"bytes\"] == 2621440 and s[\"collectives\"][\"instance\"] == \"program\" and
                $K[\"broadcast\"][\"decode\"][\"ops\"] == 5 and s[\"collectives\"][\"captured_calls\"] == 1 and
                s[\"collectives\"][\"captured_replays\"] == 5)" \
                collectives >"$D/json.log" 2>&1; then
                ok "$run $r: the JSON summary at exit: instance program, all_reduce prefill 20 ops, send decode 2621440 bytes, broadcast decode 5 ops from 1 captured call replayed 5 times"
            else
                bad "$run $r: the JSON summary at exit" "$(cat "$D/json.log")"
            fi
            ;;
        own)
            # the plugin's own memobs wrote a second summary; the phases
            # were set in the program's memobs, not in that one: unphased
            f=$(ls "$D/$run.$r".*.json 2>/dev/null | head -n 1)
            if [ -n "$f" ] && json_check "$f" "(s[\"collectives\"][\"instance\"] == \"own\" and
                s[\"collectives\"][\"level\"] == \"api\" and $K[\"all_reduce\"][\"unphased\"][\"ops\"] == 20 and
                $K[\"recv\"][\"unphased\"][\"ops\"] == 10)" collectives >"$D/json.log" 2>&1 &&
                json_check "$D/$run.$r.json" '"collectives" not in s' >>"$D/json.log" 2>&1; then
                ok "$run $r: MEMOBS_NCCL_ATTACH=0: the plugin's own summary ($(basename "$f")): instance own, level api, all_reduce 20 ops, recv 10 ops (unphased: the phases are the program's memobs'); none in the program's"
            else
                bad "$run $r: MEMOBS_NCCL_ATTACH=0: the plugin's own summary" "files: $(ls "$D" | grep "^$run\.$r" | tr '\n' ' ')" "$(cat "$D/json.log")"
            fi
            ;;
        esac
    done
done
[ "$go_on" = 1 ] || note "a 2-rank run failed: later runs skipped"
finish
