#!/usr/bin/env bash
# tests/core/test_storage.c built four ways (mk/tests.mk): C99, C++17, ASan+UBSan, TSan.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}
rc=0
bash tests/four_ways.sh storage || rc=1

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
