#!/usr/bin/env bash
# tests/test_demo.sh - builds examples/offload_engine.c, runs it, and checks
# memobs' JSON summary against the engine's own tallies of what it copied.
#
# Run from anywhere (it changes to the repository root): bash tests/test_demo.sh
# Prints one line per check, "ok - demo: <what>" or
# "not ok - demo: <what>: expected X, got Y", with "    # " lines of detail
# after a failure. Exits 1 if any check failed.

set -u

cd "$(dirname "$0")/.." || exit 1

# Recording must be on and the summary must go only where the demo puts it.
unset MEMOBS MEMOBS_SUMMARY MEMOBS_FORMAT

failed=0
pass() { echo "ok - demo: $1"; }
fail() { # fail WHAT DETAIL [LOG]
    echo "not ok - demo: $1: $2"
    failed=1
    if [ $# -ge 3 ] && [ -s "$3" ]; then tail -n 40 "$3" | sed -e 's/^/    # /'; fi
}

cc=${CC:-cc}
for tool in "$cc" python3; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "not ok - demo: setup: expected $tool, got none on PATH"
        exit 1
    fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memobs-demo-test.XXXXXX") || {
    echo "not ok - demo: setup: mktemp -d failed"
    exit 1
}
trap 'rm -rf "$tmp"' EXIT

bin=$tmp/offload_engine
if "$cc" -std=c99 -O2 -Wall -Wextra -Werror -pthread -I. examples/offload_engine.c -o "$bin" -lm \
    >"$tmp/build.log" 2>&1; then
    pass "builds as C99 with -Wall -Wextra -Werror"
else
    fail "builds as C99 with -Wall -Wextra -Werror" "expected success, got compiler errors" "$tmp/build.log"
    exit 1
fi

# The run under test.
"$bin" --json >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 0 ]; then
    pass "--json run exits 0 (its own cross-check found memobs agreeing)"
else
    fail "--json run exits 0 (its own cross-check found memobs agreeing)" "expected 0, got $rc" "$tmp/err"
fi
if grep -q '^== memobs summary ==' "$tmp/err"; then
    pass "text summary on stderr"
else
    fail "text summary on stderr" "expected a '== memobs summary ==' line, got none" "$tmp/err"
fi

# The figures, from the tallies line and the JSON line.
python3 - "$tmp/out" <<'PY' || failed=1
import json, sys, traceback

failed = False


def check(what, expected, got):
    global failed
    if expected == got:
        print("ok - demo: %s" % what)
    else:
        failed = True
        print("not ok - demo: %s: expected %s, got %s" % (what, expected, got))


def check_true(what, cond, detail):
    global failed
    if cond:
        print("ok - demo: %s" % what)
    else:
        failed = True
        print("not ok - demo: %s: %s" % (what, detail))


def main():
    lines = open(sys.argv[1]).read().splitlines()
    tally_lines = [l for l in lines if l.startswith("engine tallies:")]
    check("one tallies line on stdout", 1, len(tally_lines))
    if not tally_lines:
        return
    t = {}
    for kv in tally_lines[0][len("engine tallies:"):].split():
        k, _, v = kv.partition("=")
        t[k] = int(v)
    try:
        j = json.loads(lines[-1])
    except ValueError as e:
        check_true("last stdout line is the JSON summary", False,
                   "expected JSON, got %r (%s)" % (lines[-1][:80], e))
        return
    check_true("last stdout line is the JSON summary", True, "")

    n = t["requests"]
    check("the engine served 8 requests", 8, n)
    check("recording enabled", True, j["enabled"])

    # Transfers: every phase and direction, bytes and op counts, exactly.
    prefix = {"total": "", "prefill": "prefill_", "decode": "decode_", "unphased": "unphased_"}
    for ph, pre in prefix.items():
        for d in ("h2d", "d2h", "d2d"):
            check("%s %s bytes and ops match the engine tallies" % (ph, d),
                  (t[pre + d], t[pre + d + "_ops"]), (j[ph][d + "_bytes"], j[ph][d + "_count"]))
    for d in ("h2d", "d2h", "d2d"):
        for f in ("bytes", "count"):
            k = d + "_" + f
            check("prefill + decode + unphased == total for %s %s" % (d, f),
                  j["total"][k], j["prefill"][k] + j["decode"][k] + j["unphased"][k])

    # Both recording styles (explicit is_prefill and the per-thread phase)
    # land in the phase the engine was in; the weight upload, made before
    # any phase is set, is unphased.
    want = [("prefill", "h2d"), ("prefill", "d2h"), ("prefill", "d2d"),
            ("decode", "h2d"), ("decode", "d2h"), ("decode", "d2d"), ("unphased", "h2d")]
    zero = [p + " " + d for p, d in want if j[p][d + "_bytes"] == 0]
    check_true("traffic recorded in every phase the engine copies in", not zero,
               "expected nonzero bytes, got 0 for " + ", ".join(zero))
    check("no unphased D2H or D2D", (0, 0), (j["unphased"]["d2h_bytes"], j["unphased"]["d2d_bytes"]))

    # Requests and timings.
    r = j["requests"]
    check("requests begun", n, r["begun"])
    check("requests completed", n, r["completed"])
    check("requests aborted, dropped, unknown, duplicate, in flight", [0] * 5,
          [r["aborted"], r["dropped"], r["unknown"], r["duplicate"], r["in_flight"]])
    check("ttft count == requests", n, j["ttft"]["count"])
    check("tpot count == tokens - requests", t["tokens"] - n, j["tpot"]["count"])
    check("e2e count == requests", n, j["e2e"]["count"])
    for name in ("ttft", "tpot", "e2e"):
        l = j[name]
        seq = [l["p50_ns"], l["p90_ns"], l["p99_ns"], l["max_ns"]]
        check_true("%s 0 < p50 <= p90 <= p99 <= max" % name, 0 < seq[0] <= seq[1] <= seq[2] <= seq[3],
                   "expected 0 < p50 <= p90 <= p99 <= max, got %s" % seq)
        check_true("%s mean and last in (0, max]" % name,
                   0 < l["mean_ns"] <= l["max_ns"] and 0 < l["last_ns"] <= l["max_ns"],
                   "expected 0 < mean, last <= max %d, got mean %d, last %d"
                   % (l["max_ns"], l["mean_ns"], l["last_ns"]))
    # Each request's first token comes before its end.
    check_true("ttft max <= e2e max", j["ttft"]["max_ns"] <= j["e2e"]["max_ns"],
               "expected ttft max %d <= e2e max %d" % (j["ttft"]["max_ns"], j["e2e"]["max_ns"]))
    check("no misuse reported", {"ttft_unmatched": 0, "tpot_unarmed": 0, "bad_records": 0, "untracked_threads": 0},
          j["problems"])

    # User counters.
    c = j["counters"]
    for name, key in (("kv_blocks_offloaded", "kv_blocks_offloaded"), ("tokens_generated", "tokens"),
                      ("attention_flops", "attention_flops")):
        check("counter %s == engine tally" % name, t[key], c.get(name))
    # The demo has 4 layers; an offload is one D2H per layer.
    check("D2H ops == 4 x kv_blocks_offloaded", 4 * t["kv_blocks_offloaded"], t["d2h_ops"])


try:
    main()
except Exception as e:  # a missing key or a bad number: say so, do not just die
    failed = True
    print("not ok - demo: summary checks: expected them to run, got %s: %s" % (type(e).__name__, e))
    for l in traceback.format_exc().splitlines():
        print("    # " + l)
sys.exit(1 if failed else 0)
PY

# Same workload, same figures, whichever worker got which request.
"$bin" >"$tmp/out2" 2>"$tmp/err2"
a=$(grep '^engine tallies:' "$tmp/out")
b=$(grep '^engine tallies:' "$tmp/out2")
if [ -n "$a" ] && [ "$a" = "$b" ]; then
    pass "a second run gives the same tallies"
else
    fail "a second run gives the same tallies" "expected '$a', got '$b'" "$tmp/err2"
fi
last=$(tail -n 1 "$tmp/out2")
if [ -n "$b" ] && [ "$last" = "$b" ]; then
    pass "without --json, the tallies line is the last line"
else
    fail "without --json, the tallies line is the last line" "expected '$b', got '$last'"
fi

# The cross-check must be able to fail: with recording off, memobs sees
# nothing and the demo has to say so.
MEMOBS=0 "$bin" >"$tmp/out3" 2>"$tmp/err3"
rc=$?
if [ "$rc" -ne 0 ] && grep -q '^MISMATCH total h2d bytes' "$tmp/err3"; then
    pass "with MEMOBS=0 the demo reports the mismatch and exits nonzero"
else
    fail "with MEMOBS=0 the demo reports the mismatch and exits nonzero" \
        "expected a nonzero exit and a 'MISMATCH total h2d bytes' line, got exit $rc" "$tmp/err3"
fi

exit "$failed"
