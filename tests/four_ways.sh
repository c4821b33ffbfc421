#!/usr/bin/env bash
# tests/four_ways.sh NAME: makes a self-checking test program four ways,
# C99, C++17, ASan+UBSan and TSan, as $B/NAME_<way> (mk/tests.mk's rules:
# its source there, each way's flags), and runs each (its "ok"/"not ok"
# lines are the suite's). Exit status 1 if a build or a run failed. Used by tests/core/test_core.sh and tests/core/test_storage.sh.
cd "$(dirname "$0")/.." || exit 2
name=$1
B=${BUILD:-build/tests}
mkdir -p "$B"
CC=${CC:-cc}
CXX=${CXX:-c++}
rc=0
build_run() { # way: the program as mk/tests.mk makes it (its flavour's flags, TEST_SUITE NAME-LABEL)
    local way=$1
    if ! MAKEFLAGS= MFLAGS= make --no-print-directory -s -f mk/tests.mk TESTS_B="$B" CC="$CC" CXX="$CXX" "$B/${name}_$way" \
        >"$B/${name}_$way.log" 2>&1; then
        echo "not ok - $name-$way: build failed"
        sed 's/^/    # /' "$B/${name}_$way.log" | head -n 30
        rc=1
        return
    fi
    # halt_on_error so a sanitizer report fails the run rather than scrolling by
    ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 "$B/${name}_$way" || rc=1
}
build_run c99
build_run cxx17
build_run asan
build_run tsan
exit $rc
