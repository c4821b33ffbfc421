#!/usr/bin/env bash
# tests/tracker/test_table.c (the allocation tracker's table under a sliding
# working set: no resizes after the warm-up, memory back within the bound
# after a fall, the table exact) built four ways: C99, C++17, ASan+UBSan,
# TSan.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/table
mkdir -p "$B"
rc=0

. tests/lib.sh # a clean environment, sanitizer options

for way in c99 cxx17 asan tsan; do
    if ! test_make "$B/table_$way" >"$B/table_$way.log" 2>&1; then
        echo "not ok - table-$way: build failed"
        sed 's/^/    # /' "$B/table_$way.log" | head -n 30
        rc=1
        continue
    fi
    "$B/table_$way" || rc=1
done
exit $rc
