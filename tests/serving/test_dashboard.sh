#!/usr/bin/env bash
# The Grafana dashboard (grafana/memobs.json) against a real Prometheus:
# its JSON model (tests/serving/dashboard/check.py model), then a 4-rank run
# (tests/serving/dashboard/rank.c, built with memobs_cuda.h against the CUDA runtime
# double, each rank writing its Prometheus text twice into a textfile
# directory) scraped every second by Debian's prometheus through
# prometheus-node-exporter's textfile collector, both started here on free
# loopback ports and stopped at exit; every panel's every query, with the
# variables substituted, must return the series and values the run recorded
# (tests/serving/dashboard/check.py run). promtool checks each rank's files.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/dashboard
rm -rf "$B" && mkdir -p "$B/textfile" "$B/keep" || exit 2
B=$(cd "$B" && pwd)
CC=${CC:-cc}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror -I."
JOB=memobs-dash-test
suite=dashboard

. tests/lib.sh
ok() { echo "ok - $suite: $1"; }
bad() { echo "not ok - $suite: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

python3 tests/serving/dashboard/check.py model grafana/memobs.json --doc docs/dashboard.md || rc=1

# The tools, from Debian's prometheus and prometheus-node-exporter
# (tests/deps.sh installs them): missing is a failure, never a skip.
missing=
for t in prometheus promtool prometheus-node-exporter; do command -v $t >/dev/null || missing="$missing $t"; done
if [ ! -f "$CUDA_INC/cuda_runtime_api.h" ]; then missing="$missing $CUDA_INC/cuda_runtime_api.h(set CUDA_INC)"; fi
if [ -n "$missing" ]; then
    bad "tools for the run" "missing:$missing (tests/deps.sh installs Debian's prometheus and prometheus-node-exporter)"
    exit 1
fi

bin=$B/rank
if { $CC -std=c11 -O1 -g $W -I"$CUDA_INC" -c -o "$bin.double.o" tests/cuda/cudart_double.c &&
    $CC -std=c99 -O1 -g $W -I"$CUDA_INC" -c -o "$bin.o" tests/serving/dashboard/rank.c &&
    $CC -o "$bin" "$bin.o" "$bin.double.o" -pthread -lm; } >"$B/build.log" 2>&1; then
    ok "tests/serving/dashboard/rank.c builds (memobs_cuda.h against the CUDA runtime double)"
else
    bad "tests/serving/dashboard/rank.c builds" "$(head -n 30 "$B/build.log")"
    exit 1
fi

# Servers, stopped at exit (by their pids)
pids=()
stop() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
}
trap stop EXIT
trap 'exit 1' INT TERM HUP # (the EXIT trap then runs: a timeout stops the servers too)
# two free loopback ports (the kernel's choice; a server that loses one to
# another process in between fails to start, which shows below)
read -r NE_PORT PROM_PORT < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
prometheus-node-exporter --collector.disable-defaults --collector.textfile \
    --collector.textfile.directory="$B/textfile" --web.disable-exporter-metrics \
    --web.listen-address=127.0.0.1:$NE_PORT >"$B/node_exporter.log" 2>&1 &
pids+=($!)
cat >"$B/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: memobs-textfile
    static_configs:
      - targets: ['127.0.0.1:$NE_PORT']
EOF
prometheus --config.file="$B/prometheus.yml" --storage.tsdb.path="$B/tsdb" \
    --web.listen-address=127.0.0.1:$PROM_PORT >"$B/prometheus.log" 2>&1 &
pids+=($!)

# wait_http NAME URL: polls until URL answers 200 (at most 60 s)
wait_http() {
    local i
    for ((i = 0; i < 600; i++)); do
        curl -sf -o /dev/null --max-time 2 "$2" && { ok "$1 is up"; return 0; }
        sleep 0.1
    done
    bad "$1 is up" "no answer from $2 in 60 s" "$(tail -n 20 "$B"/*.log)"
    return 1
}
wait_http "prometheus-node-exporter (textfile collector only)" "http://127.0.0.1:$NE_PORT/metrics" || exit 1
wait_http "prometheus" "http://127.0.0.1:$PROM_PORT/-/ready" || exit 1

python3 tests/serving/dashboard/check.py run grafana/memobs.json --prom "http://127.0.0.1:$PROM_PORT" --bin "$bin" \
    --dir "$B/textfile" --job "$JOB" --keep "$B/keep" || rc=1

# promtool on every file Prometheus scraped
for f in "$B"/keep/round*_rank*.prom; do
    [ -f "$f" ] || { bad "promtool check metrics" "no files in $B/keep"; break; }
    if promtool check metrics <"$f" >"$f.promtool" 2>&1 && [ ! -s "$f.promtool" ]; then
        ok "promtool check metrics: ${f##*/}"
    else
        bad "promtool check metrics: ${f##*/}" "$(head -n 10 "$f.promtool")"
    fi
done
exit $rc
