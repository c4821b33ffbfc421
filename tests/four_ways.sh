#!/usr/bin/env bash
# tests/four_ways.sh NAME SOURCE: builds a self-checking test program four
# ways, C99, C++17, ASan+UBSan and TSan, as $B/NAME_<way>, and runs each
# (its "ok"/"not ok" lines are the suite's). Exit status 1 if a build or a
# run failed. Used by tests/core/test_core.sh and tests/core/test_storage.sh.
cd "$(dirname "$0")/.." || exit 2
name=$1 src=$2
B=${BUILD:-build/tests}
mkdir -p "$B"
CC=${CC:-cc}
CXX=${CXX:-c++}
W="-Wall -Wextra -Werror -I."
rc=0
build_run() { # way suite-label compiler flags...
    local way=$1 label=$2 comp=$3
    shift 3
    if ! $comp "$@" $W -DTEST_SUITE="\"$name-$label\"" -o "$B/${name}_$way" "$src" -pthread -lm \
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
build_run c99 c99 "$CC" -std=c99 -O2 -g
build_run cxx17 c++17 "$CXX" -x c++ -std=c++17 -O2 -g
build_run asan asan+ubsan "$CC" -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
    -fno-sanitize-recover=undefined
build_run tsan tsan "$CC" -std=c11 -O1 -g -fsanitize=thread
exit $rc
