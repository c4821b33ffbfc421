#!/usr/bin/env bash
# memobs.prometheus (python/memobs/prometheus.py): memobs' families in
# prometheus_client's registry, under the Python that has the client
# (PROM_PY, default /usr/bin/python3 with Debian's python3-prometheus-client;
# tests/deps.sh installs it). The package is laid out in $B/memobs/ as
# tests/python/test_pymodule.sh lays it out (the extension C99, -Werror),
# then tests/python/prom_collector_check.py runs against it (its ok/not ok
# lines): the collector's scrape and memobs.format_prometheus() hold the
# same families and samples, the figures recorded among them.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build}/prom-collector
mkdir -p "$B"
CC=${CC:-cc}
PROM_PY=${PROM_PY:-/usr/bin/python3}
W="-Wall -Wextra -Werror -I."

. tests/lib.sh # a clean environment

if ! "$PROM_PY" -c 'import prometheus_client' >"$B/import.log" 2>&1; then
    echo "not ok - prom-collector: prometheus_client under $PROM_PY (Debian's python3-prometheus-client; tests/deps.sh installs it)"
    tail -n 3 "$B/import.log" | sed 's/^/    # /'
    exit 1
fi
if ! PYINC=$("$PROM_PY-config" --includes 2>/dev/null) || ! SUFFIX=$("$PROM_PY-config" --extension-suffix 2>/dev/null); then
    echo "not ok - prom-collector: $PROM_PY-config not found (install the Python development headers)"
    exit 1
fi
# the package's Python files, the extension built into it; nothing but the package found
rm -rf "$B/memobs" && rm -f "$B"/memobs.*so && mkdir -p "$B/memobs" &&
    cp python/memobs/*.py python/memobs/__init__.pyi python/memobs/py.typed "$B/memobs/" ||
    { echo "not ok - prom-collector: lay out $B/memobs/"; exit 1; }
if ! $CC -std=c99 -O2 -g -fPIC -shared $W $PYINC python/memobs/_memobs.c -o "$B/memobs/_memobs$SUFFIX" >"$B/build.log" 2>&1; then
    echo "not ok - prom-collector: build ($CC -std=c99 -fPIC -shared $W)"
    head -n 30 "$B/build.log" | sed 's/^/    # /'
    exit 1
fi
echo "ok - prom-collector: build ($CC -std=c99 -fPIC -shared, -Werror) for $PROM_PY"

PYTHONPATH="$B" "$PROM_PY" tests/python/prom_collector_check.py >"$B/check.out" 2>"$B/check.err"
status=$?
grep -E '^(not )?ok - |^    # ' "$B/check.out"
if [ "$status" -ne 0 ]; then
    rc=1
    if ! grep -q '^not ok - ' "$B/check.out"; then
        echo "not ok - prom-collector: prom_collector_check.py exited with status $status"
        tail -n 20 "$B/check.err" | sed 's/^/    # /'
    fi
fi
exit $rc
