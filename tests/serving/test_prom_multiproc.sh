#!/usr/bin/env bash
# memobs' prometheus_client multiprocess files (PROMETHEUS_MULTIPROC_DIR;
# docs/exports/prometheus.md), read by Debian's prometheus_client
# (python3-prometheus-client, with $PROM_PY, default /usr/bin/python3;
# tests/deps.sh installs it) and by tests/serving/multiproc/check.py's own
# reader of the layout:
#   - the current release's layout (2) from a fixture that prometheus_client's
#     source wrote; memobs writes it beside such a file, and our reader reads
#     memobs' files as the text says
#   - a CUDA program with no memobs in it (tests/serving/multiproc/gpuworker.c)
#     under the LD_PRELOAD library: its copies and device memory in the files
#   - two C processes (tests/serving/multiproc/one.c): layout 1 as set, every
#     key as json.dumps writes it; MultiProcessCollector's merge equals their
#     texts merged; at exit (and at a SIGTERM, below) their gauge files go,
#     counters and histograms stay
#   - the layout rule: learned from another writer's file (Debian's), 2 in an
#     empty folder, MEMOBS_PROM_MULTIPROC_LAYOUT first; MEMOBS_PROM_MULTIPROC=0
#     and a folder that is not one write nothing, nor does a process that
#     recorded nothing; a dead process's named temporaries are swept; a
#     relative folder stays put across a chdir(); a fork() child writes
#     nothing; the periodic write comes by itself; a reader that reads while
#     a process rewrites 200 times never fails nor sees a value go back
#   - end to end, the way vLLM serves /metrics: a prometheus_client HTTP
#     server in multiprocess mode, two C workers (tests/serving/dashboard/rank.c,
#     the same rank) and one Python process (the package, with its own
#     prometheus_client counter) recording into the folder, Debian's
#     prometheus scraping the server every second; every aggregation of every
#     Grafana dashboard query equals the three processes' figures merged;
#     promtool checks the server's exposition
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/prom-multiproc
rm -rf "$B" && mkdir -p "$B" || exit 2
B=$(cd "$B" && pwd)
CC=${CC:-cc}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
PY=${PROM_PY:-/usr/bin/python3}
W="-Wall -Wextra -Werror -I."
suite=prom-multiproc
CHECK=(timeout 120 "$PY" tests/serving/multiproc/check.py)

. tests/lib.sh
ok() { echo "ok - $suite: $1"; }
bad() { echo "not ok - $suite: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }
same() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1" "expected: $2" "actual:   $3"; fi; }

# The tools: missing is a failure, never a skip
missing=
"$PY" -c 'import prometheus_client' 2>/dev/null || missing="$missing $PY:prometheus_client(python3-prometheus-client)"
"$PY-config" --includes >/dev/null 2>&1 || missing="$missing $PY-config(python3-dev)"
for t in prometheus promtool curl; do command -v $t >/dev/null || missing="$missing $t"; done
[ -f "$CUDA_INC/cuda_runtime_api.h" ] || missing="$missing $CUDA_INC/cuda_runtime_api.h(set CUDA_INC)"
if [ -n "$missing" ]; then
    bad "tools" "missing:$missing (tests/deps.sh installs them)"
    exit 1
fi

# The programs: one.c, rank.c (against the CUDA runtime double), the package
PKG=$B/pkg
if { $CC -std=c99 -O1 -g $W -o "$B/one" tests/serving/multiproc/one.c -pthread &&
    $CC -std=c11 -O1 -g $W -I"$CUDA_INC" -c -o "$B/double.o" tests/cuda/cudart_double.c &&
    $CC -std=c99 -O1 -g $W -I"$CUDA_INC" -c -o "$B/rank.o" tests/serving/dashboard/rank.c &&
    $CC -o "$B/rank" "$B/rank.o" "$B/double.o" -pthread -lm &&
    mkdir -p "$PKG/memobs" && cp python/memobs/*.py python/memobs/__init__.pyi "$PKG/memobs/" &&
    $CC -std=c99 -O2 -g -fPIC -shared $W $("$PY-config" --includes) python/memobs/_memobs.c \
        -o "$PKG/memobs/_memobs$("$PY-config" --extension-suffix)"; } >"$B/build.log" 2>&1; then
    ok "one.c, rank.c and the package (for $PY) build"
else
    bad "one.c, rank.c and the package build" "$(head -n 30 "$B/build.log")"
    exit 1
fi
if { make -s BUILD="$B" preload &&
    $CC -std=c11 -O2 -g -fPIC -shared $W -I"$CUDA_INC" tests/cuda/cudart_double.c -o "$B/libcudart.so.13" \
        -Wl,-soname,libcudart.so.13 -Wl,--version-script=mk/cudart_double.map -pthread &&
    $CC -std=c99 -O1 -g $W -I"$CUDA_INC" tests/serving/multiproc/gpuworker.c -o "$B/gpuworker" \
        -L"$B" -l:libcudart.so.13; } >"$B/build_preload.log" 2>&1; then
    ok "make preload, the runtime double as libcudart.so.13, gpuworker.c (no memobs in it) build"
else
    bad "make preload, the double, gpuworker.c build" "$(head -n 30 "$B/build_preload.log")"
    exit 1
fi

# ---- processes that read lines: start NAME CMD..., say NAME LINE, await NAME REGEX
declare -A fd pid
start() {
    local n=$1
    shift
    mkfifo "$B/$n.in" || return 1
    ( # without the other processes' stdin: each sees its end when its own is closed
        for f in "${fd[@]}"; do eval "exec $f>&-"; done
        exec "$@" <"$B/$n.in" >"$B/$n.out" 2>"$B/$n.err"
    ) &
    pid[$n]=$!
    exec {fd[$n]}>"$B/$n.in"
}
say() { echo "$2" >&"${fd[$1]}"; }
await() { # at most 120 s: a busy 2-core machine
    local i
    for ((i = 0; i < 1200; i++)); do
        grep -Eq "^$2\$" "$B/$1.out" && return 0
        kill -0 "${pid[$1]}" 2>/dev/null || { grep -Eq "^$2\$" "$B/$1.out" && return 0; break; }
        sleep 0.1
    done
    bad "$1 prints '$2'" "stdout: $(tail -n 5 "$B/$1.out")" "stderr: $(tail -n 10 "$B/$1.err")"
    return 1
}
finish() { # closes NAME's stdin, waits; its status
    exec {fd[$1]}>&-
    wait "${pid[$1]}"
}
quiet() { # NAME [REGEX]: nothing on its stderr but the layout's message (and lines REGEX matches)
    local extra
    extra=$(grep -Ev "^memobs: info: PROMETHEUS_MULTIPROC_DIR: writing prometheus_client's layout${2:+|$2}" "$B/$1.err")
    if [ -n "$extra" ]; then bad "$1 says nothing on stderr but the layout's message" "$(echo "$extra" | head -n 5)"; fi
}

# ---- the current release's layout: the fixture, and memobs beside it
"${CHECK[@]}" fixture tests/serving/multiproc/fixture || rc=1
D=$B/beside2 && mkdir -p "$D" && cp tests/serving/multiproc/fixture/*.db "$D/"
start b2 env PROMETHEUS_MULTIPROC_DIR="$D" "$B/one" record "$B/b2.prom"
if await b2 written; then
    "${CHECK[@]}" layout "$D" 2 || rc=1
    "${CHECK[@]}" values "$D" 2 "$B/b2.prom" || rc=1
fi
finish b2 || bad "one record beside the fixture exits 0"
grep -Eq "layout 2 \(0.18 on\), the layout of $D/[a-z_]+_4242.db" "$B/b2.err" &&
    ok "beside the fixture, memobs says it writes layout 2, learned from the fixture's file" ||
    bad "beside the fixture, memobs says it writes layout 2, learned from the fixture's file" "$(cat "$B/b2.err")"

# ---- two C processes, layout 1 as set
D=$B/two && mkdir -p "$D"
for n in c1 c2; do
    start $n env PROMETHEUS_MULTIPROC_DIR="$D" MEMOBS_PROM_MULTIPROC_LAYOUT=1 "$B/one" record "$B/$n.prom"
done
if await c1 written && await c2 written; then
    "${CHECK[@]}" layout "$D" 1 || rc=1
    "${CHECK[@]}" merge "$D" "$B/c1.prom" "$B/c2.prom" || rc=1
fi
for n in c1 c2; do finish $n || bad "$n exits 0"; quiet $n; done
"${CHECK[@]}" merge "$D" "$B/c1.prom" "$B/c2.prom" --no-gauges || rc=1
same "at exit each process leaves its counter and histogram files" \
    "counter_memobs-${pid[c1]}.db counter_memobs-${pid[c2]}.db histogram_memobs-${pid[c1]}.db histogram_memobs-${pid[c2]}.db" \
    "$(cd "$D" && ls | sort | paste -sd ' ')"

# ---- a GPU worker under the LD_PRELOAD library: its copies in the files
D=$B/preload && mkdir -p "$D"
start gpu env LD_LIBRARY_PATH="$B" LD_PRELOAD="$B/libmemobs_preload.so" PROMETHEUS_MULTIPROC_DIR="$D" \
    MEMOBS_PROM_MULTIPROC_LAYOUT=1 MEMOBS_PROM_INTERVAL_MS=100 MEMOBS_OOM_REPORT=0 "$B/gpuworker"
if await gpu copied; then
    for ((i = 0; i < 1200; i++)); do # the periodic write, within 120 s
        [ -s "$D/gauge_livesum_memobs-${pid[gpu]}.db" ] && break
        sleep 0.1
    done
    "$PY" - "$D" <<'PY' >"$B/gpu.log" 2>&1
import sys
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector
r = CollectorRegistry()
MultiProcessCollector(r, path=sys.argv[1])
got = {}
for f in r.collect():
    for s in f.samples:
        if s.name == "memobs_transfer_bytes_total" and s.labels["phase"] == "unphased":
            got[s.labels["direction"]] = s.value
        if s.name == "memobs_tracked_bytes" and s.labels["kind"] == "device":
            got["device"] = s.value
want = {"h2d": 12288.0, "d2h": 65536.0, "device": 1048576.0}
print({k: got.get(k) for k in want})
sys.exit(0 if all(got.get(k) == v for k, v in want.items()) else 1)
PY
    r=$?
    if [ $r = 0 ]; then ok "a CUDA program under the LD_PRELOAD library writes its copies and device memory there: $(cat "$B/gpu.log")"
    else bad "a CUDA program under the LD_PRELOAD library writes its copies and device memory there" "$(cat "$B/gpu.log")"; fi
fi
finish gpu || bad "gpuworker exits 0"
quiet gpu
same "after it exits: its counter and histogram files" \
    "counter_memobs-${pid[gpu]}.db histogram_memobs-${pid[gpu]}.db" "$(cd "$D" && ls | sort | paste -sd ' ')"

# ---- the layout rule
# learned from Debian's prometheus_client's own file (the engine's counter)
D=$B/learn1 && mkdir -p "$D"
PROMETHEUS_MULTIPROC_DIR="$D" "$PY" -c 'from prometheus_client import Counter; Counter("engine_x", "x").inc()' ||
    bad "Debian's prometheus_client writes a counter in $D"
start l1 env PROMETHEUS_MULTIPROC_DIR="$D" "$B/one" record "$B/l1.prom"
if await l1 written; then
    "${CHECK[@]}" layout "$D" 1 || rc=1
    "${CHECK[@]}" merge "$D" "$B/l1.prom" || rc=1
fi
finish l1 || bad "l1 exits 0"
grep -q "layout 1 (0.17 and before), the layout of $D/counter_[0-9]*.db" "$B/l1.err" &&
    ok "beside Debian's file, memobs says it writes layout 1, learned from it" ||
    bad "beside Debian's file, memobs says it writes layout 1, learned from it" "$(cat "$B/l1.err")"
# an empty folder: 2, said once
# the named temporaries a killed write left (no O_TMPFILE): a dead process's
# go at the first write, a live one's and another writer's stay
D=$B/sweep && mkdir -p "$D"
h=$("$B/one" hostid)
touch "$D/counter_memobs-99999999.db.tmp.$h.99999999.1" "$D/gauge_livesum_memobs-99999999.db.tmp.$h.99999999.2" \
    "$D/counter_memobs-1.db.tmp.$h.1.1" "$D/counter_4242.db.tmp.$h.99999999.1"
echo | PROMETHEUS_MULTIPROC_DIR="$D" MEMOBS_PROM_MULTIPROC_LAYOUT=1 "$B/one" record "$B/sweep.prom" >/dev/null 2>&1
same "a dead process's temporaries of memobs' files are swept; a live one's and another writer's kept" \
    "counter_4242.db.tmp.$h.99999999.1 counter_memobs-1.db.tmp.$h.1.1" \
    "$(cd "$D" && ls | grep '\.tmp\.' | sort | paste -sd ' ')"
D=$B/empty2 && mkdir -p "$D"
start e2 env PROMETHEUS_MULTIPROC_DIR="$D" "$B/one" record "$B/e2.prom"
await e2 written && { "${CHECK[@]}" layout "$D" 2 || rc=1; }
finish e2 || bad "e2 exits 0"
same "an empty folder: layout 2, and one message that says why" 1 "$(grep -c "no other writer's file in '$D' yet" "$B/e2.err")"
# the variable first: 2 beside Debian's layout-1 file when set so
D=$B/set2 && mkdir -p "$D" && cp "$B"/learn1/counter_[0-9]*.db "$D/"
start s2 env PROMETHEUS_MULTIPROC_DIR="$D" MEMOBS_PROM_MULTIPROC_LAYOUT=2 "$B/one" record "$B/s2.prom"
await s2 written && { "${CHECK[@]}" layout "$D" 2 || rc=1; }
finish s2 || bad "s2 exits 0"
quiet s2
# a bad value: one warning, auto
D=$B/badlayout && mkdir -p "$D"
echo | PROMETHEUS_MULTIPROC_DIR="$D" MEMOBS_PROM_MULTIPROC_LAYOUT=3 "$B/one" record "$B/bl.prom" >/dev/null 2>"$B/bl.err"
st=$?
same "MEMOBS_PROM_MULTIPROC_LAYOUT=3: one warning, then auto (exit 0)" \
    "1 0" "$(grep -c "MEMOBS_PROM_MULTIPROC_LAYOUT='3' is not auto, 1 or 2; using auto" "$B/bl.err") $st"

# ---- off, a folder that is not one, fork, periodic
D=$B/off && mkdir -p "$D"
echo | PROMETHEUS_MULTIPROC_DIR="$D" MEMOBS_PROM_MULTIPROC=0 "$B/one" record "$B/off.prom" >/dev/null 2>"$B/off.err"
st=$?
same "MEMOBS_PROM_MULTIPROC=0: no files, nothing said" "0||" "$st|$(ls "$D")|$(cat "$B/off.err")"
D=$B/idle && mkdir -p "$D"
PROMETHEUS_MULTIPROC_DIR="$D" "$B/one" idle >/dev/null 2>"$B/idle.err"
st=$?
same "a process that recorded nothing (a flush, then exit) writes no files and says nothing" "0||" \
    "$st|$(ls "$D")|$(cat "$B/idle.err")"
mkdir -p "$B/rel/mp" "$B/rel/elsewhere/mp"
(cd "$B/rel" && PROMETHEUS_MULTIPROC_DIR=mp MEMOBS_PROM_MULTIPROC_LAYOUT=1 "$B/one" chdir elsewhere 2>"$B/rel.err")
st=$?
same "a relative folder is the start-up folder's, after a chdir too (the exit write: counter and histogram)" \
    "0|counter_memobs-P.db histogram_memobs-P.db|" \
    "$st|$(ls "$B/rel/mp" | sed 's/memobs-[0-9]*/memobs-P/' | paste -sd ' ')|$(ls "$B/rel/elsewhere/mp")"
echo x >"$B/notdir"
echo | PROMETHEUS_MULTIPROC_DIR="$B/notdir" "$B/one" record "$B/nd.prom" >/dev/null 2>"$B/nd.err"
st=$?
same "PROMETHEUS_MULTIPROC_DIR a file: one warning, exit 0" \
    "0|memobs: warning: PROMETHEUS_MULTIPROC_DIR='$B/notdir' is not a folder; no prometheus_client multiprocess files written" \
    "$st|$(cat "$B/nd.err")"
D=$B/fork && mkdir -p "$D"
PROMETHEUS_MULTIPROC_DIR="$D" MEMOBS_PROM_MULTIPROC_LAYOUT=1 "$B/one" fork >"$B/fork.out" 2>"$B/fork.err"
child=$(sed -n 's/^child //p' "$B/fork.out")
same "a fork() child writes no files; its parent's exit write leaves counter and histogram" \
    "counter_memobs-P.db histogram_memobs-P.db|none" \
    "$(cd "$D" && ls | sed 's/memobs-[0-9]*/memobs-P/' | paste -sd ' ')|$(ls "$D" | grep -c "memobs-$child\." | sed 's/^0$/none/')"
D=$B/periodic && mkdir -p "$D"
start per env PROMETHEUS_MULTIPROC_DIR="$D" MEMOBS_PROM_MULTIPROC_LAYOUT=1 MEMOBS_PROM_INTERVAL_MS=100 "$B/one" wait
if await per recorded; then
    for ((i = 0; i < 1200; i++)); do # the background write, within 120 s
        [ -s "$D/gauge_livesum_memobs-${pid[per]}.db" ] && break
        sleep 0.1
    done
    "$PY" - "$D" <<'PY' >"$B/per.log" 2>&1 && ok "the periodic write (MEMOBS_PROM_INTERVAL_MS=100) comes by itself: the recorded H2D bytes (12288) in the merge" || bad "the periodic write comes by itself" "$(cat "$B/per.log")"
import sys
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector
r = CollectorRegistry()
MultiProcessCollector(r, path=sys.argv[1])
v = [s.value for f in r.collect() for s in f.samples
     if s.name == "memobs_transfer_bytes_total" and s.labels["direction"] == "h2d" and s.labels["phase"] == "prefill"]
print(v)
sys.exit(0 if v == [12288.0] else 1)
PY
fi
kill -TERM "${pid[per]}" # a stop: memobs writes, then the process ends by the signal
wait "${pid[per]}"
st=$?
exec {fd[per]}>&-
same "SIGTERM: the process ends by it (143), leaving its counter and histogram files, no gauge files" \
    "143|counter_memobs-${pid[per]}.db histogram_memobs-${pid[per]}.db" "$st|$(cd "$D" && ls | sort | paste -sd ' ')"
quiet per

# ---- a reader while a process rewrites its files 200 times
D=$B/race && mkdir -p "$D"
start race env PROMETHEUS_MULTIPROC_DIR="$D" MEMOBS_PROM_MULTIPROC_LAYOUT=1 "$B/one" loop 200
await race "flushed 1" && "$PY" - "$D" "$B/race.out" <<'PY' >"$B/race.log" 2>&1
import glob, os, sys
from prometheus_client.mmap_dict import MmapedDict
d, out = sys.argv[1], sys.argv[2]
reads, last = 0, 0.0
while True:
    done = "flushed 200" in open(out).read()
    for p in glob.glob(os.path.join(d, "counter_memobs-*.db")):
        vals = {k: v for k, v, _ in MmapedDict.read_all_values_from_file(p)}
        h2d = [v for k, v in vals.items() if '"memobs_transfer_bytes_total"' in k and '"h2d"' in k and '"prefill"' in k]
        if len(h2d) != 1 or h2d[0] < last or h2d[0] % (1 << 20):
            print("read %d: %s after %s" % (reads, h2d, last)); sys.exit(1)
        last = h2d[0]
        reads += 1
    if done:
        break
print("%d reads, the last %d MiB" % (reads, last / (1 << 20)))
sys.exit(0 if reads >= 2 and last == 200 * (1 << 20) else 1)
PY
r=$?
finish race || bad "race exits 0"
if [ $r = 0 ]; then ok "a reader during 200 rewrites: every read whole, the H2D bytes never going back ($(tail -n 1 "$B/race.log"))"
else bad "a reader during 200 rewrites: every read whole, never going back" "$(tail -n 5 "$B/race.log")"; fi

# ---- end to end: the server, Prometheus, two C workers and a Python process
D=$B/e2e && mkdir -p "$D"
JOB=memobs-mp-e2e
stop() {
    local p
    for p in "${pid[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pid[@]}"; do wait "$p" 2>/dev/null; done
}
trap stop EXIT
trap 'exit 1' INT TERM HUP
read -r SRV_PORT PROM_PORT < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
start server env PROMETHEUS_MULTIPROC_DIR="$D" "$PY" tests/serving/multiproc/server.py "$SRV_PORT"
cat >"$B/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: engine
    static_configs:
      - targets: ['127.0.0.1:$SRV_PORT']
YML
prometheus --config.file="$B/prometheus.yml" --storage.tsdb.path="$B/tsdb" \
    --web.listen-address=127.0.0.1:$PROM_PORT >"$B/prometheus.log" 2>&1 &
pid[prometheus]=$!
wait_http() { # NAME URL: 200 within 60 s
    local i
    for ((i = 0; i < 600; i++)); do
        curl -sf -o /dev/null --max-time 2 "$2" && { ok "$1 is up"; return 0; }
        sleep 0.1
    done
    bad "$1 is up" "no answer from $2 in 60 s" "$(tail -n 20 "$B"/server.err "$B"/prometheus.log)"
    return 1
}
wait_http "the prometheus_client server (MultiProcessCollector)" "http://127.0.0.1:$SRV_PORT/metrics" || exit 1
wait_http "prometheus" "http://127.0.0.1:$PROM_PORT/-/ready" || exit 1

ENV=(env PROMETHEUS_MULTIPROC_DIR="$D" MEMOBS_PROM_INTERVAL_MS=0)
start py "${ENV[@]}" PYTHONPATH="$PKG" MEMOBS_JOB_ID=$JOB RANK=0 LOCAL_RANK=0 WORLD_SIZE=4 \
    "$PY" tests/serving/multiproc/pyworker.py "$B/py.round%d.prom"
await py ready || exit 1 # its own counter's file is in the folder now
# the two workers' container: a cgroup v2 fixture with a limit (this
# machine's cgroup changes between the text and the files, and may have none)
CG=$B/cgroup && mkdir -p "$CG/proc/self" "$CG/sys/fs/cgroup/kubepods/engine"
echo "0::/kubepods/engine" >"$CG/proc/self/cgroup"
echo "30 22 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw" >"$CG/proc/self/mountinfo"
echo 734003200 >"$CG/sys/fs/cgroup/kubepods/engine/memory.current"
echo 4294967296 >"$CG/sys/fs/cgroup/kubepods/engine/memory.max"
printf 'anon 419430400\nfile 314572800\nshmem 1048576\ninactive_file 209715200\n' >"$CG/sys/fs/cgroup/kubepods/engine/memory.stat"
start wa "${ENV[@]}" "$B/rank" $JOB 0 "$B/wa.prom" "$CG"
start wb "${ENV[@]}" "$B/rank" $JOB 0 "$B/wb.prom" "$CG"
say py go
for n in py wa wb; do await $n "written 1.*" || exit 1; done
cp "$B/wa.prom" "$B/wa.round1.prom" && cp "$B/wb.prom" "$B/wb.round1.prom"
"${CHECK[@]}" layout "$D" 1 || rc=1 # learned from the Python process's own counter
"${CHECK[@]}" merge "$D" "$B/py.round1.prom" "$B/wa.round1.prom" "$B/wb.round1.prom" || rc=1

for n in wa wb py; do say $n go; done
for n in py wa wb; do await $n "written 2.*" || exit 1; done
t2=$(date +%s.%N)
# the first scrape that began after round 2
for ((i = 0; i < 600; i++)); do
    ts=$(curl -s --max-time 2 "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode 'query=timestamp(up{job="engine"})' |
        python3 -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)' 2>/dev/null)
    python3 -c "import sys; sys.exit(0 if float('${ts:-0}') > $t2 else 1)" && break
    sleep 0.1
done
"${CHECK[@]}" prom "http://127.0.0.1:$PROM_PORT" $JOB "$B/py.round2.prom" "$B/wa.prom" "$B/wb.prom" || rc=1
engine=$(curl -s --max-time 5 "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode 'query=engine_requests_total' |
    python3 -c 'import json, sys; print([r["value"][1] for r in json.load(sys.stdin)["data"]["result"]])')
same "the engine's own counter is scraped beside memobs' families" "['5']" "$engine"
curl -s --max-time 10 "http://127.0.0.1:$SRV_PORT/metrics" >"$B/server.metrics"
if promtool check metrics <"$B/server.metrics" >"$B/promtool.log" 2>&1 && [ ! -s "$B/promtool.log" ]; then
    ok "promtool check metrics: the server's exposition ($(grep -c '^memobs_' "$B/server.metrics") memobs samples)"
else
    bad "promtool check metrics: the server's exposition" "$(head -n 10 "$B/promtool.log")"
fi

for n in wa wb py; do say $n exit; done
for n in py wa wb; do
    finish $n || bad "$n exits 0"
    quiet $n "memobs: warning: (token for request 1900|memobs_region_end\(\) with no region open)" # rank.c's own
done
"${CHECK[@]}" merge "$D" "$B/py.round2.prom" "$B/wa.prom" "$B/wb.prom" --no-gauges || rc=1
exit $rc
