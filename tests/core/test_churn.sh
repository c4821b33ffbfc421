#!/usr/bin/env bash
# tests/core/test_churn.c (the timeline under thread churn: 100k short-lived
# threads, 3 events each, leave the timeline at least 90% full) built four
# ways: C99 and C++17 (100k threads), ASan+UBSan (30k) and TSan (5k), whose
# threads cost more to make; then the C99 build's trace of 20k short-lived
# threads beside a long-lived one, read by tests/python/churn_check.py.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/churn
mkdir -p "$B"

. tests/lib.sh # a clean environment, sanitizer options
unset THREADS

build_run() { # name threads: churn_NAME as mk/tests.mk makes it, run with THREADS=threads
    local name=$1 n=$2
    if ! test_make "$B/churn_$name" >"$B/churn_$name.log" 2>&1; then
        echo "not ok - churn-$name: build failed"
        sed 's/^/    # /' "$B/churn_$name.log" | head -n 30
        rc=1
        return
    fi
    THREADS=$n "$B/churn_$name" || rc=1
}
build_run c99 100000
build_run cxx17 100000
build_run asan+ubsan 30000
build_run tsan 5000

if [ -x "$B/churn_c99" ]; then
    if "$B/churn_c99" trace "$B/churn.json" >"$B/trace.out" 2>"$B/trace.err" && [ ! -s "$B/trace.err" ]; then
        python3 tests/python/churn_check.py "$B/churn.json" "$(cat "$B/trace.out")" churn-c99 || rc=1
    else
        echo "not ok - churn-c99: trace: the program failed"
        cat "$B/trace.out" "$B/trace.err" | head -n 10 | sed 's/^/    # /'
        rc=1
    fi
fi
exit $rc
