#!/usr/bin/env bash
# tests/core/hostile/numbers_ab.sh [REV] [ROUNDS] [ITERS]: a record's, a counter
# add's and a tracked pair's cost with memobs.h at REV (default 6067737,
# the starting commit of issue 38's numbers work) beside the working
# tree's, side by side in one program (tests/core/hostile/numbers_ab.c). Not
# part of the suite (a timing, reported, never asserted): run it on a quiet
# machine. AB_CFLAGS=-DMEMOBS_TLS_INITIAL_EXEC builds both .so's with
# initial-exec TLS (a record's cost as in an executable, no
# __tls_get_addr call).
cd "$(dirname "$0")/../../.." || exit 2
REV=${1:-6067737}
B=${BUILD:-build}/numbers_ab
CC=${CC:-cc}
mkdir -p "$B/old"
git show "$REV:memobs.h" >"$B/old/memobs.h" || exit 1
F="-std=c11 -O2 -g -Wall -Wextra -Werror -fPIC -shared -pthread ${AB_CFLAGS:-}"
$CC $F -I"$B/old" -I. tests/core/hostile/numbers_ab_so.c -o "$B/old.so" &&
    $CC $F -I. tests/core/hostile/numbers_ab_so.c -o "$B/new.so" &&
    $CC -O2 -g -Wall -Wextra -Werror tests/core/hostile/numbers_ab.c -o "$B/numbers_ab" -ldl || exit 1
"$B/numbers_ab" "$B/old.so" "$B/new.so" "${2:-15}" "${3:-5000000}"
