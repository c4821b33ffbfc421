#!/usr/bin/env bash
# The output table (MEMOBS__OUTPUT_TABLE in memobs.h) drives every output:
# tests/outputs/table_prog.c adds two test-only rows (MEMOBS__TEST_OUTPUT_ROWS)
# and their writers and nothing else, and each row's variable (and older
# alias) is read by the one rule, a too-long or unwritable one warns by
# the row's variable and name, the rows are written at exit in the table's
# order (after the real ones) with their pre hooks, memobs_flush writes
# them, memobs_set_exit_outputs(0) holds them, and the row's *_file call
# reports by its api name. Then the real rows against docs/outputs.md: the
# same variables, names and order.
cd "$(dirname "$0")/../.." || exit 2
S=output-table CC=${CC:-cc} CXX=${CXX:-c++}
B=${BUILD:-build/tests}/output_table
mkdir -p "$B" && B=$(cd "$B" && pwd)
. tests/lib.sh # a clean environment, sanitizer options
unset MEMOBS_TEST_A MEMOBS_TEST_B MEMOBS_TEST_B_OLD TABLE_LOG TABLE_SEEN

ok() { echo "ok - $S: $1"; }
# bad WHAT LINE...: a failure, each line shown as a comment
bad() {
    printf 'not ok - %s: %s\n' "$S" "$1"
    shift
    printf '%s\n' "$@" | sed 's/^/    # /'
    rc=1
}
# same WHAT EXPECTED ACTUAL
same() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1" "expected: $2" "actual:   $3"; fi; }

P=$B/table_prog
if ! $CC -std=c99 -Wall -Wextra -Werror -I. -o "$P" tests/outputs/table_prog.c -pthread >"$B/build.log" 2>&1 ||
    ! $CXX -x c++ -std=c++17 -Wall -Wextra -Werror -I. -o "$P.cxx" tests/outputs/table_prog.c -pthread \
        >>"$B/build.log" 2>&1; then
    bad "two test rows and their writers build (C99, C++17)" "$(head -n 30 "$B/build.log")"
    exit 1
fi
ok "two test rows and their writers build (C99, C++17)"

# a build that defines no test rows has the real ones only
cat >"$B/plain.c" <<'C'
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"
int main(void) { printf("%d %d\n", (int)MEMOBS__OUTS, (int)MEMOBS__OUT_TIMELINE); return 0; }
C
if $CC -std=c99 -Wall -Wextra -Werror -I. -o "$B/plain" "$B/plain.c" -pthread >"$B/plain.log" 2>&1; then
    same "without MEMOBS__TEST_OUTPUT_ROWS the table has its 9 rows, the timeline last" "9 8" "$("$B/plain")"
else
    bad "a build with no test rows" "$(head -n 20 "$B/plain.log")"
fi

"$P" rows >"$B/rows" 2>"$B/rows.err"
same "the test rows follow the real ones, as memobs__out_info gives them" \
    "9 MEMOBS_TEST_A - test output A 0 table_a_file 0 0|10 MEMOBS_TEST_B MEMOBS_TEST_B_OLD test output B 1 - 0 0" \
    "$(sed -n '10,$p' "$B/rows" | tr '\t' ' ' | paste -sd '|')"

# run NAME VAR=VALUE... [-- MODE ARGS]: in a fresh folder $B/NAME, stdout
# to $B/NAME.out, stderr to $B/NAME.err, the writers' log at $B/NAME/log
run() {
    local name=$1 d
    shift
    d=$B/$name
    rm -rf "$d" && mkdir -p "$d"
    local envs=() mode=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    [ "${1:-}" = -- ] && shift && mode=("$@")
    (cd "$d" && env TABLE_LOG="$d/log" TABLE_SEEN="$d/s.txt $d/t.json $d/a.txt $d/b.txt" "${envs[@]}" \
        "$P" "${mode[@]}" >"$B/$name.out" 2>"$B/$name.err")
}
log() { [ -f "$B/$1/log" ] && paste -sd '|' "$B/$1/log"; }

# -- the variable, by the one rule
run path MEMOBS_TEST_A="$B/path/a.txt"
same "MEMOBS_TEST_A=PATH: the row's writer fills the file at exit" "table output A (format 0)" \
    "$(cat "$B/path/a.txt" 2>&1)"
run err MEMOBS_TEST_A=stderr
same "MEMOBS_TEST_A=stderr: the row's writer writes to stderr" "table output A (format 0)" "$(cat "$B/err.err")"
run out MEMOBS_TEST_A=1 MEMOBS_TEST_B=stdout
same "MEMOBS_TEST_A=1 and MEMOBS_TEST_B=stdout: stderr and stdout" \
    "table output A (format 0)|table output B" "$(cat "$B/out.err" "$B/out.out" | paste -sd '|')"
fails=""
for v in "" 0 off No false; do
    run offw MEMOBS_TEST_A="$v"
    if [ -n "$(ls -A "$B/offw")" ] || [ -s "$B/offw.out" ] || [ -s "$B/offw.err" ]; then
        fails="$fails '$v': $(ls -A "$B/offw" | tr '\n' ' ') $(head -c 200 "$B/offw.err");"
    fi
done
same "MEMOBS_TEST_A unset, empty, 0, off, No, false: nothing" "" "$fails"
run alias MEMOBS_TEST_B_OLD="$B/alias/b.txt"
same "MEMOBS_TEST_B_OLD (the row's alias) is read while MEMOBS_TEST_B is unset" "table output B" \
    "$(cat "$B/alias/b.txt" 2>&1)"
run both MEMOBS_TEST_B="$B/both/b.txt" MEMOBS_TEST_B_OLD="$B/both/old.txt"
same "MEMOBS_TEST_B wins over its alias" "b.txt log" "$(cd "$B/both" && ls | paste -sd ' ')"
run fmt MEMOBS_TEST_A="$B/fmt/a.txt" MEMOBS_FORMAT=json
same "the exit writer gets MEMOBS_FORMAT" "table output A (format 1)" "$(cat "$B/fmt/a.txt" 2>&1)"

# -- the usual messages, by the row's variable and name
long=$(printf 'x%.0s' $(seq 600))
run long MEMOBS_TEST_A="$long"
same "a too-long MEMOBS_TEST_A warns by its variable and is off" \
    "memobs: warning: MEMOBS_TEST_A is longer than 511 bytes; off|" "$(cat "$B/long.err")|$(ls -A "$B/long")"
run unwritable MEMOBS_TEST_A="$B/unwritable/no/such/folder/a.txt"
if grep -q "^memobs: warning: cannot write the test output A to '$B/unwritable/no/such/folder/a.txt': " \
    "$B/unwritable.err" && [ "$(wc -l <"$B/unwritable.err")" = 1 ]; then
    ok "an unwritable MEMOBS_TEST_A: one warning naming the row's name (test output A)"
else
    bad "an unwritable MEMOBS_TEST_A: one warning naming the row's name" "stderr: $(cat "$B/unwritable.err")"
fi

# -- the exit order: the table's, the test rows after the real ones
run order MEMOBS_SUMMARY="$B/order/s.txt" MEMOBS_TIMELINE="$B/order/t.json" MEMOBS_TEST_A="$B/order/a.txt" \
    MEMOBS_TEST_B="$B/order/b.txt"
same "at exit: the summary and the timeline (real rows), then A, then B's pre and B, each seeing the files before" \
    "A: s.txt t.json|pre B: s.txt t.json a.txt|B: s.txt t.json a.txt" "$(log order)"
run order_b MEMOBS_TEST_B="$B/order_b/b.txt"
same "a row alone: its pre, then its writer (into a temporary: no b.txt yet), then b.txt" "pre B:|B:|table output B" \
    "$(log order_b)|$(cat "$B/order_b/b.txt" 2>&1)"

# -- memobs_flush writes the rows; memobs_set_exit_outputs(0) holds them
run flush MEMOBS_TEST_A="$B/flush/a.txt" MEMOBS_TEST_B="$B/flush/b.txt" -- flush
same "memobs_flush writes each row once, in order, and returns MEMOBS_OK" \
    "flush 0|A:|pre B: a.txt|B: a.txt|table output A (format 0)" \
    "$(cat "$B/flush.out")|$(log flush)|$(cat "$B/flush/a.txt" 2>&1)"
run off MEMOBS_TEST_A="$B/off/a.txt" -- off
same "memobs_set_exit_outputs(0): the row is not written at exit" "" "$(log off)$(ls "$B/off")"

# -- the row's *_file call
run file -- file "$B/file/fa.txt"
same "the row's *_file call writes with the row's writer" "file 0|table output A (format 0)" \
    "$(cat "$B/file.out")|$(cat "$B/file/fa.txt" 2>&1)"
run file_empty -- file ""
same "the row's *_file call reports by its api name" "file -1|memobs: warning: table_a_file: empty path" \
    "$(cat "$B/file_empty.out")|$(cat "$B/file_empty.err")"

# -- the real rows against docs/outputs.md: variable, alias, name and order
docs_check() {
    python3 - "$B/rows" <<'PY'
import re, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
real = [r for r in rows if not r[1].startswith("MEMOBS_TEST_")]
page = open("docs/outputs.md", encoding="utf-8").read()
m = re.search(r"^## The output variables\n(.*?)(?=^## |\Z)", page, re.S | re.M)
if not m:
    print("docs/outputs.md has no '## The output variables' section"); sys.exit(1)
doc = []
for line in m.group(1).splitlines():
    c = [x.strip() for x in line.strip().strip("|").split("|")]
    if len(c) > 2 and (c[0].startswith("`MEMOBS_") or c[0].startswith("`PROMETHEUS_")):
        doc.append((re.findall(r"`((?:MEMOBS|PROMETHEUS)_[A-Z_]+)`", c[0]), c[1]))
bad = 0
if len(doc) < len(real):
    print("docs/outputs.md lists %d outputs, the table has %d rows" % (len(doc), len(real))); sys.exit(1)
for i, r in enumerate(real):
    names, named = doc[i]
    want = [r[1]] + ([r[2]] if r[2] != "-" else [])
    if names != want or named != r[3]:
        print("row %d: the table has %s named '%s'; docs/outputs.md's row %d has %s named '%s'"
              % (i, want, r[3], i + 1, names, named)); bad = 1
for names, named in doc[len(real):]:  # written at an event, never at exit: appended, or once at the event
    row = page.split(names[0])[1].split("\n")[0]
    if "appended" not in row and "once, at the first" not in row:
        print("docs/outputs.md's %s comes after the table's rows but is neither an appended report nor written"
              " once at an event" % names[0]); bad = 1
if not bad:
    print("%d rows: %s" % (len(real), ", ".join("%s (%s)" % (r[1], r[3]) for r in real)))
sys.exit(bad)
PY
}
what="docs/outputs.md lists the rows' variables, aliases and names in the table's (exit) order"
if docs_check >"$B/docs.log" 2>&1; then
    ok "$what"
    sed 's/^/    # /' "$B/docs.log"
else
    bad "$what" "$(cat "$B/docs.log")"
fi

exit $rc
