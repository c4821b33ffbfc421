#!/usr/bin/env bash
# tests/test_storage.c built four ways: C99, C++17, ASan+UBSan, TSan.
cd "$(dirname "$0")/.." || exit 2
B=${BUILD:-build/tests}
mkdir -p "$B"
CC=${CC:-cc}
CXX=${CXX:-c++}
W="-Wall -Wextra -Werror -I."
rc=0
build_run() { # name compiler flags...
    local name=$1 comp=$2
    shift 2
    if ! $comp "$@" $W -o "$B/storage_$name" tests/test_storage.c -pthread -lm >"$B/storage_$name.log" 2>&1; then
        echo "not ok - storage-$name: build failed"
        sed 's/^/    # /' "$B/storage_$name.log" | head -n 30
        rc=1
        return
    fi
    # halt_on_error so a sanitizer report fails the run rather than scrolling by
    ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 "$B/storage_$name" || rc=1
}
build_run c99 "$CC" -std=c99 -O2 -g -DTEST_SUITE='"storage-c99"'
build_run cxx17 "$CXX" -x c++ -std=c++17 -O2 -g -DTEST_SUITE='"storage-c++17"'
build_run asan "$CC" -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
    -fno-sanitize-recover=undefined -DTEST_SUITE='"storage-asan+ubsan"'
build_run tsan "$CC" -std=c11 -O1 -g -fsanitize=thread -DTEST_SUITE='"storage-tsan"'
# The Stormlog file with the "transfers" event passes the schema v2 validator.
if [ -x "$B/storage_c99" ]; then
    if "$B/storage_c99" --stormlog "$B/storage_stormlog.json" &&
        out=$(python3 tests/python/stormlog_check.py "$B/storage_stormlog.json" --expect transfers 2>&1); then
        echo "ok - storage: stormlog: the file with the transfers event passes the schema v2 validator"
    else
        echo "not ok - storage: stormlog: schema v2"
        printf '%s\n' "${out:-}" | sed 's/^/    # /'
        rc=1
    fi
fi
exit $rc
