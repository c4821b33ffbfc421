#!/usr/bin/env bash
# tests/docs/test_demo.sh - builds examples/offload_engine.c, runs it, and checks
# memobs' JSON summary against the engine's own tallies of what it copied and
# of the memory it tracked (--tallies FILE), and the tracker's reports on
# stderr (the peak report, the allocations-by-trace report, the leak report
# with --leak); that the summary comes first (stderr's first line, and
# make demo's), the reports after it or in --reports FILE. Attribution to
# requests (2 workers, then 5): each request's MEMOBS_REQUESTS line against
# the engine's own ledger of it (--ledger FILE), the requests' lines plus
# the unattributed figures against the total per direction and phase (the
# attributed figures from --attributed FILE), the batch gathers' split
# recomputed, the tenants, the top 3 requests the demo prints.
#
# Run from anywhere (it changes to the repository root): bash tests/docs/test_demo.sh
# Prints one line per check, "ok - demo: <what>" or
# "not ok - demo: <what>: expected X, got Y", with "    # " lines of detail
# after a failure. Exits 1 if any check failed.

set -u

cd "$(dirname "$0")/../.." || exit 1

# Recording must be on, the summary and the reports must go only where the
# demo puts them.
unset MEMOBS MEMOBS_SUMMARY MEMOBS_FORMAT MEMOBS_PEAK_REPORT MEMOBS_PEAK_GROWTH MEMOBS_PEAK_MIN MEMOBS_LEAKS \
    MEMOBS_CALLSTACK MEMOBS_REPORT_ROWS MEMOBS_TRACK_CAPACITY MEMOBS_REQUESTS MEMOBS_REQUESTS_MAX_BYTES \
    MEMOBS_REQUEST_TIMEOUT_S

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
# -rdynamic as in the Makefile: the C stacks in the reports name the demo's functions.
if "$cc" -std=c99 -O2 -Wall -Wextra -Werror -pthread -I. examples/offload_engine.c -o "$bin" -lm -rdynamic \
    >"$tmp/build.log" 2>&1; then
    pass "builds as C99 with -Wall -Wextra -Werror"
else
    fail "builds as C99 with -Wall -Wextra -Werror" "expected success, got compiler errors" "$tmp/build.log"
    exit 1
fi

# The run under test.
MEMOBS_REQUESTS="$tmp/lines" "$bin" --json --tallies "$tmp/tallies" --ledger "$tmp/ledger" \
    --attributed "$tmp/attributed" >"$tmp/out" 2>"$tmp/err"
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

# The figures, from the tallies line (--tallies FILE) and the JSON line
# (stdout); the reports, from stderr. check.py MODE STDOUT STDERR TALLIES:
# MODE "main" for a plain --json run, "leak" for a --leak --json run.
cat >"$tmp/check.py" <<'PY'
import json, re, sys, traceback

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


RULE = "-" * 120
KINDS = ("device", "host", "pinned")
PROBLEMS = ("frees_unknown", "frees_double", "frees_null", "allocs_null", "allocs_zero", "allocs_duplicate",
            "allocs_bad_kind", "untracked", "untracked_bytes", "untracked_live", "untracked_frees", "traces_dropped")
GROUP_ROW = re.compile(r"^\|\s*(\d*)\s*\|\s*(\d+) \(\s*[\d.]+\) \|\s*(\d+) \| (\S+)\s*\|[^|]*\| (.*?)\s*\|$")
BOX_TOP = re.compile(r"^\|   \u250c\u2500 (.*?) \u2500")
BOX_LINE = re.compile(r"^\|   \u2502    (.*?)\s*\|$")


def report(err, header):
    """Every report on stderr whose first line starts with header: a list of
    (first line, groups); a group is a dict with trace, bytes, count, kinds,
    tag and boxes ({title: [frame lines]}). The groups table is the last
    table of a report: it ends at the third rule after its header line."""
    out = []
    for i, l in enumerate(err):
        if not l.startswith(header):
            continue
        groups, rules = [], 0
        box = None
        for m in err[i + 1:]:
            if m == RULE:
                rules += 1
                if rules == 3:
                    break
                continue
            g = GROUP_ROW.match(m)
            if g:
                groups.append({"trace": g.group(1), "bytes": int(g.group(2)), "count": int(g.group(3)),
                               "kinds": g.group(4), "tag": g.group(5), "boxes": {}})
                continue
            b = BOX_TOP.match(m)
            if b and groups:
                box = groups[-1]["boxes"].setdefault(b.group(1), [])
                continue
            b = BOX_LINE.match(m)
            if b and box is not None:
                box.append(b.group(1))
        out.append((l, groups))
    return out


def parse_tallies(pre, lines):
    tally_lines = [l for l in lines if l.startswith("engine tallies:")]
    check("%sone tallies line, in --tallies FILE (none on stdout)" % pre, 1, len(tally_lines))
    if not tally_lines:
        return None
    t = {}
    for kv in tally_lines[0][len("engine tallies:"):].split():
        k, _, v = kv.partition("=")
        t[k] = int(v)
    return t


def check_memory(pre, t, j):
    """memobs' memory figures against the engine's, exactly: the same in
    every run, --leak included."""
    m = j["memory"]
    fields = ("current_bytes", "peak_bytes", "live", "allocs", "frees", "alloc_bytes")
    for k in KINDS:
        check("%smemory.%s current, peak, live, allocs, frees, alloc_bytes match the engine tallies" % (pre, k),
              [t[k + "_" + f] for f in fields], [m[k][f] for f in fields])
        check("%smemory.%s live == allocs - frees" % (pre, k), m[k]["allocs"] - m[k]["frees"], m[k]["live"])
        check_true("%smemory.%s current <= peak <= alloc_bytes" % (pre, k),
                   m[k]["current_bytes"] <= m[k]["peak_bytes"] <= m[k]["alloc_bytes"],
                   "got current %d, peak %d, alloc_bytes %d"
                   % (m[k]["current_bytes"], m[k]["peak_bytes"], m[k]["alloc_bytes"]))
    check("%sno managed memory" % pre, [0] * 6, [m["managed"][f] for f in fields])
    tr = j["tracker"]
    check("%stracker: tracking, and every problem count zero" % pre, [True] + [0] * len(PROBLEMS),
          [tr["tracking"]] + [tr[p] for p in PROBLEMS])
    # Each block a request takes from the pool is written once, by one
    # offload of all its layers.
    check("%spinned allocs == kv_blocks_offloaded" % pre, t["kv_blocks_offloaded"], m["pinned"]["allocs"])
    check("%spinned alloc_bytes == D2H bytes" % pre, t["d2h"], m["pinned"]["alloc_bytes"])


def kv_block_groups(what, groups):
    """The kv_block rows of a groups table, and a check that one has a C
    stack naming the demo's pool allocation function."""
    kv = [g for g in groups if g["tag"] == "kv_block"]
    check_true("%s: a kv_block row" % what, kv,
               "expected a row tagged kv_block, got tags %s" % [g["tag"] for g in groups])
    frames = [f for g in kv for f in g["boxes"].get("C Stack Trace", [])]
    check_true("%s: kv_block's C Stack Trace box names pool_alloc" % what,
               any(re.match(r"#\d+ pool_alloc\+0x", f) for f in frames),
               "expected a frame 'pool_alloc+0x...', got %s" % (frames or "no C Stack Trace box"))
    check("%s: kv_block rows are pinned memory" % what, ["pinned"] * len(kv), [g["kinds"] for g in kv])
    return kv


def main_run(lines, err):
    t = parse_tallies("", lines)
    if t is None:
        return
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
    dirs = ("h2d", "d2h", "d2d", "h2s", "s2h", "d2s", "s2d")
    for ph, pre in prefix.items():
        for d in dirs:
            check("%s %s bytes and ops match the engine tallies" % (ph, d),
                  (t[pre + d], t[pre + d + "_ops"]), (j[ph][d + "_bytes"], j[ph][d + "_count"]))
    for d in dirs:
        for f in ("bytes", "count"):
            k = d + "_" + f
            check("prefill + decode + unphased == total for %s %s" % (d, f),
                  j["total"][k], j["prefill"][k] + j["decode"][k] + j["unphased"][k])

    # Both recording styles (explicit is_prefill and the per-thread phase)
    # land in the phase the engine was in; the weight upload, made before
    # any phase is set, is unphased.
    want = [("prefill", "h2d"), ("prefill", "d2h"), ("prefill", "d2d"),
            ("decode", "h2d"), ("decode", "d2h"), ("decode", "d2d"), ("unphased", "h2d"),
            ("prefill", "h2s"), ("decode", "s2h")]
    zero = [p + " " + d for p, d in want if j[p][d + "_bytes"] == 0]
    check_true("traffic recorded in every phase the engine copies in", not zero,
               "expected nonzero bytes, got 0 for " + ", ".join(zero))
    check("no unphased D2H or D2D", (0, 0), (j["unphased"]["d2h_bytes"], j["unphased"]["d2d_bytes"]))

    # The disk tier: stores at the end of prefill, one load at the end of
    # decode per request that stored, each one host block (192 KiB), timed
    # by the engine (every one of them, none elsewhere).
    blk = t["h2s"] // t["h2s_ops"] if t["h2s_ops"] else 0
    check("disk tier: every store and load is one host block of 192 KiB", (196608, t["s2h_ops"] * 196608),
          (blk, t["s2h"]))
    check("disk tier: only prefill stores and decode loads; no GPUDirect Storage",
          (t["h2s"], t["s2h"], 0, 0), (j["prefill"]["h2s_bytes"], j["decode"]["s2h_bytes"],
                                       j["total"]["d2s_bytes"], j["total"]["s2d_bytes"]))
    tm = j["timed"]
    check("disk tier: every transfer timed (timed bytes and count equal the records)",
          (t["h2s"], t["h2s_ops"], t["s2h"], t["s2h_ops"]),
          (tm["prefill"]["h2s"]["bytes"], tm["prefill"]["h2s"]["count"], tm["decode"]["s2h"]["bytes"],
           tm["decode"]["s2h"]["count"]))
    check_true("disk tier: its time is positive", tm["prefill"]["h2s"]["ns"] > 0 and tm["decode"]["s2h"]["ns"] > 0,
               "timed ns %s" % ((tm["prefill"]["h2s"]["ns"], tm["decode"]["s2h"]["ns"]),))
    check("sizes: the disk tier's records all in the 256 KiB bucket; H2D p50 64 KiB (a 48 KiB layer block)",
          ([[262144, t["h2s_ops"]]], [[262144, t["s2h_ops"]]], 65536),
          (j["sizes"]["h2s"]["buckets"], j["sizes"]["s2h"]["buckets"], j["sizes"]["h2d"]["p50"]))
    check("sizes: each direction's count is its total count",
          [j["total"][d + "_count"] for d in dirs], [j["sizes"][d]["count"] for d in dirs])

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
    check("no misuse reported", {"ttft_unmatched": 0, "tpot_unarmed": 0, "bad_records": 0, "untracked_threads": 0,
                                 "region_unmatched_ends": 0, "region_too_deep": 0, "region_names_dropped": 0,
                                 "signal_dropped": 0},
          j["problems"])

    # User counters.
    c = j["counters"]
    for name, key in (("kv_blocks_offloaded", "kv_blocks_offloaded"), ("tokens_generated", "tokens"),
                      ("attention_flops", "attention_flops")):
        check("counter %s == engine tally" % name, t[key], c.get(name))
    # The demo has 4 layers; an offload is one D2H per layer.
    check("D2H ops == 4 x kv_blocks_offloaded", 4 * t["kv_blocks_offloaded"], t["d2h_ops"])
    # Regions: an offload each, a decode step per token after each request's first, none left open.
    rg = {x["name"]: x for x in j.get("regions", [])}
    check("regions: kv_offload == kv_blocks_offloaded, decode_step == tokens - requests, all timed",
          [t["kv_blocks_offloaded"], t["tokens"] - t["requests"], True],
          [rg.get("kv_offload", {}).get("count"), rg.get("decode_step", {}).get("count"),
           all(x["timed"] == x["count"] and x["max_ns"] <= x["total_ns"] for x in rg.values())])
    check("regions: no region problem", [0, 0, 0], [j["problems"][k] for k in
          ("region_unmatched_ends", "region_too_deep", "region_names_dropped")])

    # Tracked memory.
    check_memory("", t, j)
    m = j["memory"]
    check("pinned: every host block back in the pool (current, live)", [0, 0],
          [m["pinned"]["current_bytes"], m["pinned"]["live"]])
    # Peaks depend on how the two workers' requests overlap: bound them.
    # Pinned: at least the largest request's blocks, at most the two largest.
    blocks = sorted(int(x) for x in re.findall(r"^request \d+: .* host blocks +(\d+),", "\n".join(err), re.M))
    check("one request line per request on stderr", n, len(blocks))
    if blocks and m["pinned"]["allocs"]:
        bb = m["pinned"]["alloc_bytes"] // m["pinned"]["allocs"]
        lo, hi = blocks[-1] * bb, sum(blocks[-2:]) * bb
        check_true("pinned peak between the largest request's blocks and the two largest's",
                   lo <= m["pinned"]["peak_bytes"] <= hi,
                   "expected %d <= peak <= %d, got %d" % (lo, hi, m["pinned"]["peak_bytes"]))
    # Device: the carved buffers stay until shut-down; one logits buffer per
    # sampled token comes and goes, at most one per worker at a time.
    d = m["device"]
    check("device frees == tokens (one logits buffer per sampled token)", t["tokens"], d["frees"])
    check_true("device buffers still held at the summary", d["live"] > 0 and d["current_bytes"] > 0,
               "expected live and current_bytes > 0, got %d, %d" % (d["live"], d["current_bytes"]))
    scratch = d["alloc_bytes"] - d["current_bytes"]
    if t["tokens"] and scratch % t["tokens"] == 0:
        lb = scratch // t["tokens"]
        check_true("device peak: the buffers plus one to two workers' logits",
                   d["current_bytes"] + lb <= d["peak_bytes"] <= d["current_bytes"] + 2 * lb,
                   "expected %d <= peak <= %d, got %d"
                   % (d["current_bytes"] + lb, d["current_bytes"] + 2 * lb, d["peak_bytes"]))
    else:
        check_true("device allocated beyond the buffers is whole logits buffers", False,
                   "expected (alloc_bytes - current) %d to be a multiple of tokens %d" % (scratch, t["tokens"]))
    h = m["host"]
    check("host: the weight staging buffer, allocated and freed once",
          [1, 1, 0, h["alloc_bytes"]], [h["allocs"], h["frees"], h["current_bytes"], h["peak_bytes"]])

    # stderr: the summary first, then the requests and the reports the run
    # wrote (held back until after the summary), then the leak report.
    check_true("stderr's first line opens the summary", err[:1] and err[0].startswith("== memobs summary =="),
               "got %r" % err[:1])
    try:
        start = err.index([l for l in err if l.startswith("== memobs summary ==")][0])
        end = start + err[start:].index([l for l in err if l.startswith("== memobs leak report ==")][0])
    except (IndexError, ValueError):
        start, end = len(err), len(err)
    err_rep = err
    err = err[start:end]
    end = len(err)
    peaks = [l for l in err[:end] if "tracked memory reached new maximum" in l]
    check_true("one or two peak reports after the summary", 1 <= len(peaks) <= 2,
               "expected 1 or 2 lines 'tracked memory reached new maximum', got %d" % len(peaks))
    if peaks:
        check_true("the peak report is about device 0", peaks[0].startswith("memobs: [rank 0] device 0 "),
                   "got %r" % peaks[0])
    reps = report(err[:end], "== memobs allocations by trace ==")
    check("one allocations-by-trace report after the summary, before the leak report", 1, len(reps))
    if reps:
        head, groups = reps[0]
        kv = kv_block_groups("allocations by trace", groups)
        # It is printed before the last request (107) gives its blocks back.
        last = re.search(r"^request 107: .* host blocks +(\d+),", "\n".join(err), re.M)
        if last:
            check_true("allocations by trace: kv_block rows hold request 107's blocks at least",
                       sum(g["count"] for g in kv) >= int(last.group(1)),
                       "expected >= %s blocks, got %d" % (last.group(1), sum(g["count"] for g in kv)))
        check_true("allocations by trace: device rows for the carved buffers",
                   {"weights", "kv_slots", "prefill_buffer", "decode_buffer", "activations"}
                   <= {g["tag"] for g in groups if g["kinds"] == "device"},
                   "got device tags %s" % sorted(g["tag"] for g in groups if g["kinds"] == "device"))
    leaks = [l for l in err_rep[start + end:] if l.startswith("== memobs leak report ==")]
    check_true("leak report after the reports, at shut-down: nothing live",
               len(leaks) == 1 and leaks[0].endswith(": no tracked allocation is live"),
               "expected one '== memobs leak report == ...: no tracked allocation is live' line, got %s" % leaks)


def leak_run(lines, err):
    t = parse_tallies("--leak: ", lines)
    if t is None:
        return
    j = json.loads(lines[-1])
    check_memory("--leak: ", t, j)
    p = j["memory"]["pinned"]
    check("--leak: one pinned block live at the end (memobs and the engine)", [1, 1], [p["live"], t["pinned_live"]])
    reps = report(err, "== memobs leak report ==")
    check("--leak: one leak report", 1, len(reps))
    if not reps:
        return
    head, groups = reps[0]
    want = r": 1 allocation still live, %d bytes \([^)]*\): pinned %d bytes \([^)]*\) in 1$" % (
        p["current_bytes"], p["current_bytes"])
    check_true("--leak: the leak report counts 1 live pinned allocation", re.search(want, head),
               "expected a first line ending like %r, got %r" % (want, head))
    kv = kv_block_groups("--leak: leak report", groups)
    check("--leak: the leak report's rows: one kv_block, 1 allocation",
          [("kv_block", 1, "pinned")], [(g["tag"], g["count"], g["kinds"]) for g in groups])


DIRS = ("h2d", "d2h", "d2d", "h2s", "s2h", "d2s", "s2d")
PHASES = ("unphased", "prefill", "decode")
TENANTS = ["acme", "globex", "initech"]


def split_parts(b, shares):
    """memobs_request_xfer_split's rule, in Python's exact integers: part i
    is floor(b C_i / S) - floor(b C_(i-1) / S), C the cumulative shares
    (all 0: equal shares)."""
    s = sum(shares) or len(shares)
    cum, prev, parts = 0, 0, []
    for x in shares:
        cum += x if sum(shares) else 1
        parts.append(b * cum // s - prev)
        prev = b * cum // s
    return parts


def att_run(pre, workers, out, err, lines_path, ledger_path, att_path):
    """Attribution: memobs' request lines (MEMOBS_REQUESTS) against the
    engine's ledger (--ledger), and the lines plus the unattributed part
    against the JSON summary's totals; attributed figures from --attributed."""
    j = json.loads(open(out).read().splitlines()[-1])
    lines = [json.loads(l) for l in open(lines_path).read().splitlines()]
    led = [json.loads(l) for l in open(ledger_path).read().splitlines()]
    eng = led[-1]["engine"]
    led = {x["id"]: x for x in led[:-1]}
    a = json.loads(open(att_path).read())
    ids = sorted(m["id"] for m in lines)
    check("%sMEMOBS_REQUESTS: one line per request (100 to 107), each completed, none abandoned" % pre,
          (list(range(100, 108)), ["completed"] * 8, [False] * 8),
          (ids, [m["state"] for m in lines], [m["abandoned"] for m in lines]))

    # Each request's line equals the engine's ledger of it: every direction,
    # total bytes and ops, [bytes, ops] per phase, the time of its timed
    # transfers; its tenant and tokens.
    for m in sorted(lines, key=lambda m: m["id"]):
        e = led.get(m["id"])
        if e is None:
            check("%srequest %d: in the engine's ledger" % (pre, m["id"]), True, False)
            continue
        diff = ["tenant %r != %r" % (m["tenant"], e["tenant"])] if m["tenant"] != e["tenant"] else []
        if m["tokens"] != e["tokens"]:
            diff.append("tokens %d != %d" % (m["tokens"], e["tokens"]))
        for d in DIRS:
            for k in ("bytes", "ops") + PHASES + ("engine_ns",):
                if m["xfer"][d][k] != e["xfer"][d][k]:
                    diff.append("%s %s: memobs %s, engine %s" % (d, k, m["xfer"][d][k], e["xfer"][d][k]))
            if m["xfer"][d]["device_ns"] != 0:
                diff.append("%s device_ns %d (no device-timed copy)" % (d, m["xfer"][d]["device_ns"]))
        check("%srequest %d (%s): its line equals the engine's ledger: bytes, ops, [bytes, ops] per phase and "
              "engine_ns of every direction, tenant, tokens" % (pre, m["id"], e["tenant"]), [], diff)
    check("%stenants: each request's, and the three of them" % pre,
          ([TENANTS[(i - 100) % 3] for i in range(100, 108)], TENANTS),
          ([m["tenant"] for m in sorted(lines, key=lambda m: m["id"])], sorted({m["tenant"] for m in lines})))
    # Tracked bytes: a worker bound to its request takes its host blocks
    # (pinned, 196608 bytes each) and each step's logits (2048, freed in the
    # step), and frees its blocks after the request ended.
    hb = {int(x.group(1)): int(x.group(2))
          for x in re.finditer(r"^request (\d+): .* host blocks +(\d+),", open(err).read(), re.M)}
    check("%stracked bytes: each request's peak is its host blocks and one step's logits, held at its end its "
          "blocks" % pre, [(hb.get(m["id"], -1) * 196608 + 2048, hb.get(m["id"], -1) * 196608) for m in lines],
          [(m["peak_bytes"], m["held_bytes"]) for m in lines])
    check("%swait_ns: the sum of its engine_ns (the disk tier's waits), every request" % pre,
          [sum(m["xfer"][d]["engine_ns"] for d in DIRS) for m in lines], [m["wait_ns"] for m in lines])
    tm = j["timed"]
    check("%sengine-timed: the requests' engine_ns add up to the summary's timed ns (H2S prefill, S2H decode)" % pre,
          (tm["prefill"]["h2s"]["ns"], tm["decode"]["s2h"]["ns"]),
          (sum(m["xfer"]["h2s"]["engine_ns"] for m in lines), sum(m["xfer"]["s2h"]["engine_ns"] for m in lines)))

    # The gathers: one per wave of `workers` requests, the parts recomputed.
    sp = eng["splits"]
    check("%sgathers: one per wave of %d, every request in one" % (pre, workers),
          ((8 + workers - 1) // workers, list(range(100, 108))), (len(sp), sorted(i for x in sp for i in x["ids"])))
    want = [split_parts(x["bytes"], x["shares"]) for x in sp]
    uneven = sum(1 for x in sp for c in range(1, len(x["shares"]) + 1) if x["bytes"] * sum(x["shares"][:c]) %
                 (sum(x["shares"]) or len(x["shares"])))
    check("%sgathers: the engine's parts are floor(b C_i / S) - floor(b C_(i-1) / S) and add up to b" % pre,
          (want, [x["bytes"] for x in sp]), ([x["parts"] for x in sp], [sum(x["parts"]) for x in sp]))
    check_true("%sgathers: the rounding shows (some b C_i / S not whole)" % pre, workers == 1 or uneven > 0,
               "expected some part rounded down, got every b C_i / S whole")

    # Exactness, per phase and direction: the requests' lines plus the
    # unattributed part (the summary's figure less the attributed one) are
    # the summary's figure. Bytes exactly; operations with each gather once
    # (it is one operation of the figures and one of each of its requests).
    for ph in PHASES + ("total",):
        diff = []
        for d in DIRS:
            if ph == "total":
                lb, ln = sum(m["xfer"][d]["bytes"] for m in lines), sum(m["xfer"][d]["ops"] for m in lines)
                extra = sum(len(x["ids"]) - 1 for x in sp if x["dir"] == d)
                ub = sum(eng["unattributed"][p][d][0] for p in PHASES)
                un = sum(eng["unattributed"][p][d][1] for p in PHASES)
            else:
                lb, ln = sum(m["xfer"][d][ph][0] for m in lines), sum(m["xfer"][d][ph][1] for m in lines)
                extra = sum(len(x["ids"]) - 1 for x in sp if x["dir"] == d and x["phase"] == ph)
                ub, un = eng["unattributed"][ph][d]
            tb, tn = j[ph][d + "_bytes"], j[ph][d + "_count"]
            mb, mn = tb - a[ph][d + "_bytes"], tn - a[ph][d + "_count"]
            if (lb + mb, ln - extra + mn) != (tb, tn):
                diff.append("%s: lines %d B %d ops + unattributed %d B %d ops != total %d B %d ops"
                            % (d, lb, ln - extra, mb, mn, tb, tn))
            if (mb, mn) != (ub, un):
                diff.append("%s: memobs' unattributed %d B %d ops, the engine's own %d B %d ops" % (d, mb, mn, ub, un))
        check("%s%s: the requests' lines + unattributed == the summary's figure, and unattributed == the engine's "
              "own copies, every direction (bytes, ops)" % (pre, ph), [], diff)
    un = sum(j["total"][d + "_bytes"] - a["total"][d + "_bytes"] for d in DIRS)
    check_true("%sunattributed: nonzero (the weights' upload, %d bytes)" % (pre, eng["unattributed"]["unphased"]["h2d"][0]),
               un > 0 and un == eng["unattributed"]["unphased"]["h2d"][0],
               "expected the weights' upload, got %d unattributed bytes" % un)
    check("%sattributed: no orphan bytes, no bind or tenant misuse" % pre, [0, 0, 0],
          [a["orphan_bytes"], a["bind_misuse"], a["tenant_misuse"]])

    # What the demo prints: the three requests that moved the most.
    errl = open(err, encoding="utf-8", errors="replace").read()
    shown = [int(x) for x in re.findall(r"^  request (\d+), tenant \w+: [\d.]+ [kMG]?B moved,", errl, re.M)]
    moved = sorted(lines, key=lambda m: -sum(m["xfer"][d]["bytes"] for d in DIRS))
    check("%sthe top 3 requests by bytes moved, as printed, are the 3 largest lines" % pre,
          [m["id"] for m in moved[:3]], shown)
    check_true("%sthe attributed line printed" % pre,
               re.search(r"^attributed to requests: [\d.]+ [kMG]?B of [\d.]+ [kMG]?B moved;", errl, re.M),
               "expected a line 'attributed to requests: X of Y moved; ...'")


def main():
    if sys.argv[1] == "att":
        att_run(sys.argv[2], int(sys.argv[3]), *sys.argv[4:9])
        return
    mode, out, err, tallies = sys.argv[1:5]
    lines = open(out).read().splitlines()
    check("%sstdout: the JSON summary, one line" % ("--leak: " if mode == "leak" else ""), 1, len(lines))
    lines = open(tallies).read().splitlines() + lines
    err_lines = open(err, encoding="utf-8", errors="replace").read().splitlines()
    (main_run if mode == "main" else leak_run)(lines, err_lines)


try:
    main()
except Exception as e:  # a missing key or a bad number: say so, do not just die
    failed = True
    print("not ok - demo: summary checks: expected them to run, got %s: %s" % (type(e).__name__, e))
    for l in traceback.format_exc().splitlines():
        print("    # " + l)
sys.exit(1 if failed else 0)
PY
python3 "$tmp/check.py" main "$tmp/out" "$tmp/err" "$tmp/tallies" || failed=1
python3 "$tmp/check.py" att "attribution: " 2 "$tmp/out" "$tmp/err" "$tmp/lines" "$tmp/ledger" "$tmp/attributed" ||
    failed=1

# Attribution under more threads: 5 workers (waves of 5 and 3 for the
# scheduler's gathers), the same checks.
MEMOBS_REQUESTS="$tmp/lines5" "$bin" --workers 5 --json --ledger "$tmp/ledger5" --attributed "$tmp/attributed5" \
    >"$tmp/out5" 2>"$tmp/err5"
rc=$?
if [ "$rc" -eq 0 ]; then
    pass "--workers 5 run exits 0 (its own cross-check, ledgers included, found memobs agreeing)"
else
    fail "--workers 5 run exits 0 (its own cross-check, ledgers included, found memobs agreeing)" \
        "expected 0, got $rc" "$tmp/err5"
fi
python3 "$tmp/check.py" att "attribution, 5 workers: " 5 "$tmp/out5" "$tmp/err5" "$tmp/lines5" "$tmp/ledger5" \
    "$tmp/attributed5" || failed=1

# Same workload, same figures, whichever worker got which request. The
# device and pinned peaks are the exception: they depend on how the two
# workers' requests overlap in time (check.py bounds them instead).
# This run keeps its reports in a file (--reports FILE), as make demo does.
"$bin" --tallies "$tmp/tallies2" --reports "$tmp/reports2" >"$tmp/out2" 2>"$tmp/err2"
unpeak() { grep '^engine tallies:' "$1" | sed -E 's/ (device|pinned)_peak_bytes=[0-9]+//g'; }
a1=$(unpeak "$tmp/tallies")
b1=$(unpeak "$tmp/tallies2")
if [ -n "$a1" ] && [ "$a1" = "$b1" ]; then
    pass "a second run gives the same tallies (device and pinned peaks aside)"
else
    fail "a second run gives the same tallies (device and pinned peaks aside)" "expected '$a1', got '$b1'" \
        "$tmp/err2"
fi
if [ ! -s "$tmp/out2" ]; then
    pass "without --json, stdout is empty (the tallies only in --tallies FILE)"
else
    fail "without --json, stdout is empty (the tallies only in --tallies FILE)" \
        "expected nothing, got '$(head -c 200 "$tmp/out2")'"
fi
w="offload_engine: the peak report and the allocations by trace: $tmp/reports2"
if grep -q '^memobs: \[rank 0\] device 0 tracked memory reached new maximum' "$tmp/reports2" &&
    grep -q '^== memobs allocations by trace ==' "$tmp/reports2" &&
    ! grep -q 'tracked memory reached new maximum\|^== memobs allocations by trace ==' "$tmp/err2" &&
    grep -qxF "$w" "$tmp/err2"; then
    pass "--reports FILE: the peak report and the allocations by trace in FILE, one line on stderr names it"
else
    fail "--reports FILE: the peak report and the allocations by trace in FILE, one line on stderr names it" \
        "expected both reports in FILE, none on stderr, and the line '$w'" "$tmp/err2"
fi

# make demo, as a new user runs it: the summary is the first thing on the
# terminal (the binary above is up to date for make), the reports in
# DEMO_REPORTS, and one screen of output, not three.
if ! command -v make >/dev/null 2>&1; then
    fail "make demo" "expected make on PATH, got none"
else
    (unset MAKEFLAGS MFLAGS MAKELEVEL; make -s demo BUILD="$tmp" >"$tmp/make.out" 2>&1)
    rc=$?
    first=$(head -n 1 "$tmp/make.out")
    n=$(wc -l <"$tmp/make.out")
    if [ "$rc" -eq 0 ] && case $first in "== memobs summary == "*) true ;; *) false ;; esac &&
        [ "$n" -le 60 ] && ! grep -q '^engine tallies:' "$tmp/make.out" &&
        grep -q '^== memobs allocations by trace ==' "$tmp/demo_reports.txt"; then
        pass "make demo: its first line opens the summary, $n lines in all, the reports in build/demo_reports.txt"
    else
        fail "make demo: its first line opens the summary, 60 lines at most, the reports in DEMO_REPORTS" \
            "expected status 0, '== memobs summary == ...' first, <= 60 lines, got status $rc, '$first', $n lines" \
            "$tmp/make.out"
    fi
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

# --leak: request 100 keeps one host block; the engine expects it (exit 0)
# and the leak report at the end shows it, with its stack.
"$bin" --leak --json --tallies "$tmp/tallies4" >"$tmp/out4" 2>"$tmp/err4"
rc=$?
if [ "$rc" -eq 0 ]; then
    pass "--leak --json run exits 0 (the engine's tallies count the leaked block too)"
else
    fail "--leak --json run exits 0 (the engine's tallies count the leaked block too)" "expected 0, got $rc" \
        "$tmp/err4"
fi
python3 "$tmp/check.py" leak "$tmp/out4" "$tmp/err4" "$tmp/tallies4" || failed=1

exit "$failed"
