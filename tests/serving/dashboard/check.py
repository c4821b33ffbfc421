#!/usr/bin/env python3
"""The dashboard test's checker (tests/serving/test_dashboard.sh); standard library only.

  check.py model DASHBOARD
      the dashboard's JSON model: unique panel ids, the grid, every panel's
      and target's datasource the variable, every query non-empty and
      filtered by the variables, every variable a query uses defined
  check.py run DASHBOARD --prom URL --bin RANK_PROGRAM --dir TEXTFILE_DIR
                         --job JOB --keep DIR
      the 4-rank run (tests/serving/dashboard/rank.c, twice written: rounds 1 and
      2), then every panel's every query against Prometheus, at the scrape
      that first saw round 2, the rate window reaching back exactly to a
      scrape of round 1, each result against the figures the run recorded
      (the model below, from the parameters rank.c uses; measured figures,
      such as region times and RSS, from the files the ranks wrote), with
      every label its legend names

Prints "ok - dashboard: ..." / "not ok - dashboard: ..." lines; exits 1 on
any failure.
"""
import json
import math
import os
import re
import select
import subprocess
import sys
import time
import urllib.parse
import urllib.request

SUITE = "dashboard"
failed = 0


def ok(name):
    print("ok - %s: %s" % (SUITE, name), flush=True)


def bad(name, *lines):
    global failed
    failed += 1
    print("not ok - %s: %s" % (SUITE, name), flush=True)
    for block in lines:
        for l in str(block).split("\n")[:40]:
            print("    # " + l, flush=True)


def check(cond, name, *lines):
    if cond:
        ok(name)
    else:
        bad(name, *lines)
    return cond


DS = {"type": "prometheus", "uid": "${datasource}"}
# Grafana's own variables a query may use
BUILTINS = {"__rate_interval", "__interval", "__interval_ms", "__range", "__range_s", "__range_ms"}
# families that carry a phase label: their selectors must filter it
PHASED = re.compile(r"^memobs_(transfer_(bytes|ops)_total|timed_transfer_\w+_total|collective_(ops|bytes|timed_ops|seconds|algo_bytes|bus_bytes)_total|peer_transfer_\w+_total)$")
VAR = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)(?::\w+)?\]\]")


def used_vars(s):
    return {a or b or c for a, b, c in VAR.findall(s)}


def selectors(expr):
    """(metric, label matchers text or None) of each vector selector."""
    out = []
    for m in re.finditer(r"\b(memobs_\w+)\s*(\{([^}]*)\})?", expr):
        out.append((m.group(1), m.group(3)))
    return out


def check_model(dash):
    errs = []
    if not isinstance(dash.get("schemaVersion"), int) or dash["schemaVersion"] < 36:
        errs.append("schemaVersion %r: want a number >= 36 (Grafana 9+)" % dash.get("schemaVersion"))
    if dash.get("id") is not None:
        errs.append("id %r: an importable dashboard has id null" % dash.get("id"))
    if not dash.get("uid") or not dash.get("title"):
        errs.append("no uid or title")
    tmpl = {v.get("name"): v for v in dash.get("templating", {}).get("list", [])}
    dsv = tmpl.get("datasource")
    if not dsv or dsv.get("type") != "datasource" or dsv.get("query") != "prometheus":
        errs.append("no variable 'datasource' of type datasource, query prometheus: %r" % dsv)
    for name, want in (("job", "query"), ("rank", "query"), ("phase", "custom")):
        v = tmpl.get(name)
        if not v or v.get("type") != want:
            errs.append("variable %s: want type %s, got %r" % (name, want, v and v.get("type")))
    if tmpl.get("rank") and not (tmpl["rank"].get("multi") and tmpl["rank"].get("includeAll")):
        errs.append("variable rank: want multi and includeAll")
    ph = tmpl.get("phase")
    if ph and (ph.get("query") != "prefill,decode,unphased" or not (ph.get("multi") and ph.get("includeAll"))):
        errs.append("variable phase: want query prefill,decode,unphased, multi and includeAll: %r" % ph)
    for name, v in tmpl.items():
        if v.get("type") == "query":
            if v.get("datasource") != DS:
                errs.append("variable %s: datasource %r, want %r" % (name, v.get("datasource"), DS))
            qtext = v["query"]["query"] if isinstance(v.get("query"), dict) else v.get("query", "")
            for u in used_vars(qtext):
                if u not in tmpl and u not in BUILTINS:
                    errs.append("variable %s's query uses $%s, which is not defined" % (name, u))
    ids, cells = set(), {}
    panels = dash.get("panels", [])
    if not panels:
        errs.append("no panels")
    for p in panels:
        t = p.get("title") or "(untitled)"
        pid = p.get("id")
        if not isinstance(pid, int) or pid in ids:
            errs.append("panel %r: id %r is not a unique number" % (t, pid))
        ids.add(pid)
        if not p.get("title") or not p.get("description"):
            errs.append("panel id %r: no title or description" % pid)
        g = p.get("gridPos", {})
        if not all(isinstance(g.get(k), int) for k in "hwxy") or g["x"] < 0 or g["w"] < 1 or g["x"] + g["w"] > 24:
            errs.append("panel %r: gridPos %r" % (t, g))
        else:
            for x in range(g["x"], g["x"] + g["w"]):
                for y in range(g["y"], g["y"] + g["h"]):
                    if (x, y) in cells:
                        errs.append("panel %r overlaps panel %r at (%d, %d)" % (t, cells[(x, y)], x, y))
                        break
                    cells[(x, y)] = t
                else:
                    continue
                break
        if p.get("datasource") != DS:
            errs.append("panel %r: datasource %r, want %r" % (t, p.get("datasource"), DS))
        tg = p.get("targets") or []
        if not tg:
            errs.append("panel %r: no targets" % t)
        refs = [x.get("refId") for x in tg]
        if len(set(refs)) != len(refs) or None in refs:
            errs.append("panel %r: refIds %r not unique" % (t, refs))
        for x in tg:
            where = "panel %r target %s" % (t, x.get("refId"))
            if x.get("datasource") != DS:
                errs.append("%s: datasource %r, want %r" % (where, x.get("datasource"), DS))
            e = x.get("expr")
            if not isinstance(e, str) or not e.strip():
                errs.append("%s: empty expr" % where)
                continue
            for u in used_vars(e) | used_vars(x.get("legendFormat", "")):
                if u not in tmpl and u not in BUILTINS:
                    errs.append("%s: uses $%s, which is not defined" % (where, u))
            if "datasource" in used_vars(e):
                errs.append("%s: the datasource variable inside a query" % where)
            sels = selectors(e)
            if not sels:
                errs.append("%s: no memobs_ selector in %r" % (where, e))
            for metric, labels in sels:
                labels = labels or ""
                for need in ('job_id=~"$job"', 'rank=~"$rank"'):
                    if need not in labels:
                        errs.append("%s: %s lacks %s" % (where, metric, need))
                if PHASED.match(metric) and 'phase=~"$phase"' not in labels:
                    errs.append('%s: %s has a phase label but lacks phase=~"$phase"' % (where, metric))
            for rng in re.findall(r"\[([^\]]*)\]", e):
                if rng != "$__rate_interval":
                    errs.append("%s: range [%s], want [$__rate_interval]" % (where, rng))
    return errs


def check_doc(dash, path):
    """The doc's panel table has a row per panel, in order, with its queries
    (the job and rank matchers written as an ellipsis)."""
    with open(path) as f:
        rows = [l for l in f.read().splitlines() if l.startswith("| ")]
    byname = {}
    for l in rows:
        byname.setdefault(l.split(" | ")[0][2:], l)
    errs = []
    for p in dash.get("panels", []):
        row = byname.get(p.get("title"))
        if row is None:
            errs.append("no row for panel %r" % p.get("title"))
            continue
        for x in p.get("targets", []):
            e = x.get("expr", "").replace('job_id=~"$job", rank=~"$rank"', "\u2026").replace("|", "\\|")
            if "`%s`" % e not in row:
                errs.append("panel %r: the row lacks query %s: `%s`" % (p.get("title"), x.get("refId"), e))
    check(not errs, "%s: a row per panel with its queries" % path, *errs)


# ---------------------------------------------------------------------------
# The model: what rank.c records (keep in step with its header comment)
# ---------------------------------------------------------------------------
ALL_DIRS = ["h2d", "d2h", "d2d", "h2s", "s2h", "d2s", "s2d"]
PHASES = ["prefill", "decode", "unphased"]
PHASE_OF = ["unphased", "prefill", "decode"]  # memobs_phase_t's values 0, 1, 2
RANKS = [0, 1, 2, 3]
MIB = 1 << 20
TTFT2 = [0.9, 2.0, 4.0, 7.0]
TPOT2 = [0.09, 0.18, 0.35, 0.6]


def transfer_records(r, d):
    """One round's records of rank r in direction d: (size, phase, ns or None)."""
    out = []
    for i in range(100):
        shift = 12 if i < 50 else 13 if i < 90 else 14 if i < 99 else 15
        size = (1 << (shift + d)) - 64 * r
        ns = size * (d + 1) // (r + 1) if i % 4 == 0 else None
        out.append((size, PHASE_OF[i % 3], ns))
    return out


TTFT_FILL = [0.3, 0.6, 0.9, 2.0, 4.0, 6.0, 9.0, 15.0, 30.0, 60.0, 100.0]
TPOT_FILL = [0.03, 0.06, 0.09, 0.12, 0.18, 0.25, 0.35, 0.45, 0.6, 0.9, 1.5, 4.0, 6.0, 9.0, 15.0, 30.0]


def ttft_samples(r):
    """One round's TTFT samples of rank r (value, count); the 2 completed
    requests' own TTFTs are under 0.25 s (checked on the files): put at 0."""
    return [(v, 1) for v in TTFT_FILL] + [(0.3, 40), (TTFT2[r], 45), (15.0, 2), (0.0, 2)]


def tpot_samples(r):
    return [(v, 1) for v in TPOT_FILL] + [(0.03, 40), (TPOT2[r], 40), (1.5, 4)]


def requests_delta(r):
    """Round 2's increase of each request counter (round 1's in-flight
    requests are abandoned in round 2)."""
    return {"begun": (1 + r) + 2 + (4 - r) + (2 + r), "completed": 2, "aborted": 4 - r,
            "abandoned": (1 + r) + (2 + r)}


def memory_after(r):
    """Gauges after round 2."""
    dev = 2 * (r + 1) * 2 * MIB
    return {"device_tracked": dev, "device_used": dev + 2 * (r + 1) * MIB, "device_total": 1 << 30,
            "tracked": {"device": dev, "host": 2 * (r + 1) * 100000, "pinned": 65536, "managed": 0},
            "in_flight": 2 + r}


def collectives_round(r):
    """One round's (kind, phase) -> [ops, bytes, ns, algo_bytes] of rank r."""
    return {("all_reduce", "prefill"): [3, 3 * (r + 1) * MIB, 3 * 200000, 3 * (r + 1) * MIB],
            ("all_gather", "decode"): [2, 2 * 256 * 1024, 2 * (r + 1) * 50000, 2 * 256 * 1024 * 4]}


def bus_bytes(kind, algo, n=4):
    num, den = {"all_reduce": (2 * (n - 1), n), "all_gather": (n - 1, n)}[kind]
    return algo * num // den


# ---------------------------------------------------------------------------
# Prometheus text and API
# ---------------------------------------------------------------------------
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_prom(text):
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            continue
        labels = dict(LABEL.findall(m.group(2) or ""))
        out.setdefault(m.group(1), []).append((labels, float(m.group(3))))
    return out


def series(files, rank, name, **match):
    """Values of a family in rank's file whose labels match."""
    return [(l, v) for l, v in files[rank].get(name, []) if all(l.get(k) == w for k, w in match.items())]


def one(files, rank, name, **match):
    s = series(files, rank, name, **match)
    if len(s) != 1:
        raise KeyError("%s%r in rank %d's file: %d series" % (name, match, rank, len(s)))
    return s[0][1]


class Prom:
    def __init__(self, url):
        self.url = url.rstrip("/")

    def get(self, path, params):
        u = self.url + path + "?" + urllib.parse.urlencode(params, doseq=True)
        with urllib.request.urlopen(u, timeout=20) as f:
            body = json.load(f)
        if body.get("status") != "success":
            raise RuntimeError("%s: %s" % (path, body))
        return body["data"]

    def query(self, expr, t=None):
        p = {"query": expr}
        if t is not None:
            p["time"] = "%.3f" % t
        d = self.get("/api/v1/query", p)
        return d["resultType"], d["result"]

    def vector(self, expr, t=None):
        kind, res = self.query(expr, t)
        if kind != "vector":
            raise RuntimeError("%s: a %s, not a vector" % (expr, kind))
        return {frozenset(x["metric"].items()): float(x["value"][1]) for x in res}


def bucket_quantile(q, buckets):
    """Prometheus' bucketQuantile (promql/quantile.go): buckets are
    (upper bound, cumulative count)."""
    buckets = sorted(buckets)
    if not buckets or buckets[-1][0] != math.inf:
        return math.nan
    merged = []
    for ub, c in buckets:
        if merged and merged[-1][0] == ub:
            merged[-1][1] += c
        else:
            merged.append([ub, c])
    for i in range(1, len(merged)):
        if merged[i][1] < merged[i - 1][1]:
            merged[i][1] = merged[i - 1][1]
    if len(merged) < 2:
        return math.nan
    obs = merged[-1][1]
    if obs == 0:
        return math.nan
    rank = q * obs
    b = next((i for i in range(len(merged) - 1) if merged[i][1] >= rank), len(merged) - 1)
    if b == len(merged) - 1:
        return merged[-2][0]
    if b == 0 and merged[0][0] <= 0:
        return merged[0][0]
    start, end, count = 0.0, merged[b][0], merged[b][1]
    if b > 0:
        start = merged[b - 1][0]
        count -= merged[b - 1][1]
        rank -= merged[b - 1][1]
    return start + (end - start) * (rank / count)


def le_value(s):
    return math.inf if s == "+Inf" else float(s)


# ---------------------------------------------------------------------------
# Expectations: (panel title, refId) -> f(ctx) giving {labels: value}
# ---------------------------------------------------------------------------
class Ctx:
    """One setting of the variables, and what the run recorded."""

    def __init__(self, ranks, phases, dirs, window_s, files1, files2, les):
        self.ranks, self.phases, self.dirs, self.w = ranks, phases, dirs, window_s
        self.f1, self.f2, self.les = files1, files2, les

    def delta(self, rank, name, **match):
        return one(self.f2, rank, name, **match) - one(self.f1, rank, name, **match)


def key(**labels):
    return frozenset(labels.items())


def transfers(ctx, what):
    out = {}
    for r in ctx.ranks:
        for di, d in enumerate(ctx.dirs):
            for size, ph, ns in transfer_records(r, di):
                if ph not in ctx.phases:
                    continue
                k = (r, d, ph)
                v = out.setdefault(k, {"bytes": 0, "ops": 0, "tbytes": 0, "tns": 0})
                v["bytes"] += size
                v["ops"] += 1
                if ns is not None:
                    v["tbytes"] += size
                    v["tns"] += ns
    return {k: v[what] for k, v in out.items()}


def by(d, f):
    out = {}
    for k, v in d.items():
        kk = f(k)
        out[kk] = out.get(kk, 0) + v
    return out


def hist_quantile(ctx, q, samples_of, les, group):
    """histogram_quantile(q, sum by (le, group) (rate(...))) of per-rank samples."""
    groups = {}
    for r in ctx.ranks:
        for gkey, samples in samples_of(r):
            cum = groups.setdefault(group(r, gkey), {le: 0 for le in les})
            for value, count in samples:
                for le in les:
                    if value <= le_value(le):
                        cum[le] += count
    return {k: bucket_quantile(q, [(le_value(le), c / ctx.w) for le, c in cum.items()]) for k, cum in groups.items()}


def size_samples(ctx):
    def of(r):
        return [(d, [(size, 1) for size, _, _ in transfer_records(r, di)]) for di, d in enumerate(ctx.dirs)]
    return of


def e_size_quantile(q):
    return lambda ctx: hist_quantile(ctx, q, size_samples(ctx), ctx.les["size"], lambda r, d: key(direction=d))


def e_size_buckets(ctx):
    cum = {le: 0 for le in ctx.les["size"]}
    for r in ctx.ranks:
        for _, samples in size_samples(ctx)(r):
            for value, count in samples:
                for le in cum:
                    if value <= le_value(le):
                        cum[le] += count
    return {key(le=le): c / ctx.w for le, c in cum.items()}


def e_bandwidth(dirs):
    def f(ctx):
        b = by(transfers(ctx, "tbytes"), lambda k: k[1])
        ns = by(transfers(ctx, "tns"), lambda k: k[1])
        return {key(direction=d): (b[d] / ctx.w) / (ns[d] / 1e9 / ctx.w) for d in dirs if d in b}
    return f


def e_latency(hist, samples, q, per_rank=False):
    def f(ctx):
        return hist_quantile(ctx, q, lambda r: [(None, samples(r))], ctx.les[hist],
                             (lambda r, _: key(rank=str(r))) if per_rank else (lambda r, _: key()))
    return f


def e_requests(what):
    return lambda ctx: {key(): sum(requests_delta(r)[what] for r in ctx.ranks) / ctx.w}


def e_memory(what, labels):
    return lambda ctx: {key(**{k: (str(r) if v == "rank" else v) for k, v in labels.items()}): memory_after(r)[what] for r in ctx.ranks}


def e_gap(ctx):
    return {key(rank=str(r), device="0"): memory_after(r)["device_used"] - memory_after(r)["device_tracked"] for r in ctx.ranks}


def e_tracked_kind(ctx, kind=None):
    out = {}
    for r in ctx.ranks:
        for k, v in memory_after(r)["tracked"].items():
            if kind is None:
                out[key(rank=str(r), kind=k)] = v
            elif k == kind:
                out[key(rank=str(r))] = v
    return out


def e_file_gauge(name, label=None):
    def f(ctx):
        out = {}
        for r in ctx.ranks:
            for labels, v in series(ctx.f2, r, name):
                k = {"rank": str(r)}
                if label:
                    k[label] = labels[label]
                kk = frozenset(k.items())
                out[kk] = out.get(kk, 0) + v
        return out
    return f


def inflight_after(r):
    """Transfers left in flight after round 2, by direction (rank.c's inflight)."""
    return {"h2s": (2 * (r + 1), 2 * (r + 1) * MIB), "d2s": (2, 2 * 4096 * (r + 1))}


def e_inflight(ctx):
    """Every direction the files carry: the model's count there, else 0."""
    out = {}
    for r in ctx.ranks:
        for labels, _ in series(ctx.f2, r, "memobs_transfers_in_flight"):
            k = key(direction=labels["direction"])
            out[k] = out.get(k, 0) + inflight_after(r).get(labels["direction"], (0, 0))[0]
    return out


def e_cgroup(name, model):
    """The fixture ranks' figures from the model; the others' (this machine's
    cgroup, measured) from their files."""
    def f(ctx):
        out = {}
        for r in ctx.ranks:
            if r in CG_FIXTURE:
                out[key(rank=str(r))] = float(model(*CG_FIXTURE[r]))
            else:
                out.update(e_file_gauge(name)(Ctx([r], ctx.phases, ctx.dirs, ctx.w, ctx.f1, ctx.f2, ctx.les)))
        return out
    return f


def e_file_max(name, label):
    def f(ctx):
        out = {}
        for r in ctx.ranks:
            for labels, v in series(ctx.f2, r, name):
                k = key(**{label: labels[label]})
                out[k] = max(out.get(k, v), v)
        return out
    return f


def e_region_share(ctx):
    per = {}
    for r in ctx.ranks:
        for labels, _ in series(ctx.f2, r, "memobs_region_seconds_total"):
            reg = labels["region"]
            per[reg] = per.get(reg, 0) + ctx.delta(r, "memobs_region_seconds_total", region=reg) / ctx.w
    total = sum(per.values())
    return {key(region=k): v / total for k, v in per.items()}


def colls(ctx):
    out = {}
    for r in ctx.ranks:
        for (kind, ph), (ops, b, ns, algo) in collectives_round(r).items():
            if ph not in ctx.phases:
                continue
            # the bus bytes of the window: the counter's floors at the two writes
            bus = bus_bytes(kind, 2 * algo) - bus_bytes(kind, algo)
            v = out.setdefault((kind, ph), [0, 0, 0])
            v[0] += b
            v[1] += ns
            v[2] += bus
    return out


def e_coll_bytes(ctx):
    return {key(comm="tp", kind=k, phase=p): v[0] / ctx.w for (k, p), v in colls(ctx).items()}


def e_coll_busbw(ctx):
    per = {}
    for (k, p), v in colls(ctx).items():
        a = per.setdefault(k, [0, 0])
        a[0] += v[2]
        a[1] += v[1]
    return {key(comm="tp", kind=k): (b / ctx.w) / (ns / 1e9 / ctx.w) for k, (b, ns) in per.items()}


def e_problems(ctx):
    return {key(problem="requests_unknown"): float(sum(r + 1 for r in ctx.ranks)),
            key(problem="region_unmatched_ends"): float(len(ctx.ranks))}


def rate_of(what, group):
    return lambda ctx: {k: v / ctx.w for k, v in by(transfers(ctx, what), group).items()}


EXPECT = {
    ("Transfer rate by direction and phase", "A"): rate_of("bytes", lambda k: key(direction=k[1], phase=k[2])),
    ("Transfer operations", "A"): rate_of("ops", lambda k: key(direction=k[1], phase=k[2])),
    ("Transfer size percentiles", "A"): e_size_quantile(0.5),
    ("Transfer size percentiles", "B"): e_size_quantile(0.9),
    ("Transfer size percentiles", "C"): e_size_quantile(0.99),
    ("Transfer size distribution", "A"): e_size_buckets,
    ("Device-timed bandwidth (h2d, d2h, d2d)", "A"): e_bandwidth(["h2d", "d2h", "d2d"]),
    ("Storage bandwidth (h2s, s2h, d2s, s2d)", "A"): e_bandwidth(["h2s", "s2h", "d2s", "s2d"]),
    ("Time to first token", "A"): e_latency("ttft", ttft_samples, 0.5),
    ("Time to first token", "B"): e_latency("ttft", ttft_samples, 0.9),
    ("Time to first token", "C"): e_latency("ttft", ttft_samples, 0.99),
    ("Time per output token", "A"): e_latency("tpot", tpot_samples, 0.5),
    ("Time per output token", "B"): e_latency("tpot", tpot_samples, 0.9),
    ("Time per output token", "C"): e_latency("tpot", tpot_samples, 0.99),
    ("Requests", "A"): e_requests("begun"),
    ("Requests", "B"): e_requests("completed"),
    ("Requests", "C"): e_requests("aborted"),
    ("Requests", "D"): e_requests("abandoned"),
    ("Requests", "E"): lambda ctx: {key(): float(sum(memory_after(r)["in_flight"] for r in ctx.ranks))},
    ("Device memory: tracked vs driver-reported", "A"): e_memory("device_used", {"rank": "rank", "device": "0"}),
    ("Device memory: tracked vs driver-reported", "B"): e_memory("device_tracked", {"rank": "rank", "device": "0"}),
    ("Device memory: tracked vs driver-reported", "C"): e_gap,
    ("Device memory: tracked vs driver-reported", "D"): e_memory("device_total", {"rank": "rank", "device": "0"}),
    ("Device memory: tracked vs driver-reported", "E"): lambda ctx: e_tracked_kind(ctx, "device"),
    ("Host memory", "A"): e_file_gauge("memobs_host_rss_bytes"),
    ("Host memory", "B"): e_file_gauge("memobs_host_anon_bytes"),
    ("Host memory", "C"): e_file_gauge("memobs_host_heap_bytes"),
    ("Leak detector slope", "A"): e_file_gauge("memobs_leak_slope_bytes_per_second", "series"),
    ("Container memory", "A"): e_cgroup("memobs_cgroup_memory_usage_bytes", lambda c, i, m: c),
    ("Container memory", "B"): e_cgroup("memobs_cgroup_memory_working_set_bytes", lambda c, i, m: c - i),
    ("Container memory", "C"): e_cgroup("memobs_cgroup_memory_limit_bytes", lambda c, i, m: m),
    ("Transfers in flight", "A"): e_inflight,
    ("Transfers in flight", "B"): e_file_max("memobs_transfer_oldest_in_flight_seconds", "direction"),
    ("Region time share", "A"): e_region_share,
    ("Per rank: transfer rate", "A"): rate_of("bytes", lambda k: key(rank=str(k[0]))),
    ("Per rank: TTFT p90", "A"): e_latency("ttft", ttft_samples, 0.9, per_rank=True),
    ("Per rank: tracked memory", "A"): e_tracked_kind,
    ("Collective traffic", "A"): e_coll_bytes,
    ("Collective bus bandwidth", "A"): e_coll_busbw,
    ("Problems", "A"): e_problems,
}


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b))


def norm(vec):
    """le by its value: node_exporter's textfile collector parses a histogram
    and writes its bounds again in Go's notation ("1.0" becomes "1",
    "1048576" "1.048576e+06")."""
    return {frozenset((n, repr(le_value(v)) if n == "le" else v) for n, v in k): x for k, x in vec.items()}


def compare(got, want):
    """Lines saying how got differs from want (both {labels: value})."""
    def show(k):
        return "{%s}" % ", ".join('%s="%s"' % kv for kv in sorted(k))
    got, want = norm(got), norm(want)
    out = []
    for k in sorted(set(got) | set(want), key=show):
        if k not in got:
            out.append("missing %s: want %r" % (show(k), want[k]))
        elif k not in want:
            out.append("unexpected %s = %r" % (show(k), got[k]))
        elif not close(got[k], want[k]):
            out.append("%s: got %r, want %r" % (show(k), got[k], want[k]))
    return out


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------
def read_line(p, deadline, what):
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RuntimeError("%s: no line within the time limit" % what)
        rd, _, _ = select.select([p.stdout], [], [], left)
        if rd:
            line = p.stdout.readline()
            if not line:
                raise RuntimeError("%s: exited (status %r) before its line" % (what, p.poll()))
            return line.decode().strip()


def wait_round(prom, job, rnd, deadline):
    """The timestamp (ms) of the newest scrape in which all 4 ranks show round rnd."""
    while True:
        kind, res = prom.query('memobs_user_dash_round_total{job_id="%s"}[10s]' % job)
        seen = {}  # timestamp -> ranks showing rnd then
        for s in res if kind == "matrix" else []:
            for ts, v in s["values"]:
                if float(v) == rnd:
                    seen.setdefault(round(float(ts) * 1000), set()).add(s["metric"].get("rank"))
        full = [ts for ts, ranks in seen.items() if len(ranks) == 4]
        if full:
            return max(full)
        if time.monotonic() > deadline:
            raise RuntimeError("Prometheus has not scraped round %d of all 4 ranks in time (samples: %r)" % (rnd, res))
        time.sleep(0.1)


# Ranks 2 and 3 read the container's memory from a cgroup v2 fixture (with a
# limit: this machine's cgroup may have none), ranks 0 and 1 from the real one.
CG_FIXTURE = {2: (700 * MIB, 200 * MIB, 4 << 30), 3: (900 * MIB, 50 * MIB, 6 << 30)}  # current, inactive_file, max


def cgroup_fixture(root, r):
    cur, inactive, mx = CG_FIXTURE[r]
    d = os.path.join(root, "rank%d" % r)
    cg = os.path.join(d, "sys/fs/cgroup/kubepods/pod%d/engine" % r)
    os.makedirs(os.path.join(d, "proc/self"), exist_ok=True)
    os.makedirs(cg, exist_ok=True)
    files = {os.path.join(d, "proc/self/cgroup"): "0::/kubepods/pod%d/engine\n" % r,
             os.path.join(d, "proc/self/mountinfo"): "30 22 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n",
             os.path.join(cg, "memory.current"): "%d\n" % cur, os.path.join(cg, "memory.max"): "%d\n" % mx,
             os.path.join(cg, "memory.stat"): "anon %d\nfile %d\nshmem 0\ninactive_file %d\n" % (cur - 300 * MIB, 300 * MIB, inactive)}
    for p, text in files.items():
        with open(p, "w") as f:
            f.write(text)
    return d


def run(args, dash):
    prom = Prom(args.prom)
    deadline = time.monotonic() + 60
    procs = []
    files = [{}, {}]  # round -> rank -> parsed file
    texts = [{}, {}]
    os.makedirs(args.keep, exist_ok=True)
    try:
        for r in RANKS:
            path = os.path.join(args.dir, "rank%d.prom" % r)
            err = open(os.path.join(args.keep, "rank%d.err" % r), "wb")
            argv = [args.bin, args.job, str(r), path]
            if r in CG_FIXTURE:
                argv.append(cgroup_fixture(os.path.join(args.keep, "cgroup"), r))
            procs.append(subprocess.Popen(argv, stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=err))
        ndirs = None
        for rnd in (1, 2):
            for r, p in enumerate(procs):
                line = read_line(p, deadline, "rank %d round %d" % (r, rnd))
                m = re.match(r"written %d (\d+)$" % rnd, line)
                if not m:
                    raise RuntimeError("rank %d: %r, want 'written %d DIRS'" % (r, line, rnd))
                ndirs = int(m.group(1))
                # what Prometheus scrapes until the next write (written whole, renamed in)
                with open(os.path.join(args.dir, "rank%d.prom" % r)) as f:
                    texts[rnd - 1][r] = f.read()
                with open(os.path.join(args.keep, "round%d_rank%d.prom" % (rnd, r)), "w") as f:
                    f.write(texts[rnd - 1][r])
                files[rnd - 1][r] = parse_prom(texts[rnd - 1][r])
            if rnd == 1:
                t_a = wait_round(prom, args.job, 1, deadline)
                for p in procs:
                    p.stdin.write(b"go\n")
                    p.stdin.flush()
        for r, p in enumerate(procs):
            st = p.wait(timeout=max(1, deadline - time.monotonic()))
            check(st == 0, "rank %d exits 0" % r, "exit status %d" % st)
        t_b = wait_round(prom, args.job, 2, deadline)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    check(ndirs == len(ALL_DIRS), "memobs.h records the %d transfer directions (storage included)" % len(ALL_DIRS),
          "MEMOBS_DIRS is %r: the storage directions are missing" % ndirs)
    dirs = ALL_DIRS[:ndirs]
    window_ms = t_b - t_a
    w = window_ms / 1000.0
    t = t_b / 1000.0
    ok("round 1 scraped at %d ms, round 2 at %d ms: a window of %d ms" % (t_a, t_b, window_ms))

    # The window holds exactly the scrapes from t_a to t_b: no extrapolation
    raw = prom.query('memobs_user_dash_round_total{job_id="%s"}[%dms]' % (args.job, window_ms), t)[1]
    firsts = {round(float(s["values"][0][0]) * 1000) for s in raw}
    lasts = {round(float(s["values"][-1][0]) * 1000) for s in raw}
    vals = {(s["values"][0][1], s["values"][-1][1]) for s in raw}
    check(len(raw) == 4 and firsts == {t_a} and lasts == {t_b} and vals == {("1", "2")},
          "the rate window [%dms] at round 2's scrape starts at round 1's scrape (rates are exact)" % window_ms,
          "4 series from %d to %d going 1 -> 2 wanted; got %d series, first %r, last %r, values %r"
          " (Prometheus 3 selects ranges open on the left: this test needs 2.x)" % (t_a, t_b, len(raw), firsts, lasts, vals))

    # node_exporter read every file
    v = prom.vector("node_textfile_scrape_error", t)
    check(v and all(x == 0 for x in v.values()), "node_exporter's textfile collector reads the 4 files without error",
          "node_textfile_scrape_error: %r" % v)

    # the completed requests' own TTFTs fell under 0.25 s (the model puts them at 0)
    slow = []
    for r in RANKS:
        got = [one(files[i], r, "memobs_ttft_seconds_bucket", le="0.25") for i in (0, 1)]
        if got != [2.0, 4.0]:
            slow.append("rank %d: le=0.25 counts %r, want [2, 4]" % (r, got))
    check(not slow, "the completed requests' TTFTs fell under 0.25 s (as the model has it)", *slow)

    # region times are measured: at least what rank.c spun
    short = []
    for r in RANKS:
        for reg, spun in (("prefill_step", (r + 1) * 0.002), ("decode_step", 0.004), ("kv_offload", 0.001)):
            d = one(files[1], r, "memobs_region_seconds_total", region=reg) - one(files[0], r, "memobs_region_seconds_total", region=reg)
            if d < spun:
                short.append("rank %d %s: %.9f s in round 2, spun %.3f" % (r, reg, d, spun))
    check(not short, "region seconds of round 2 cover what each rank spun", *short)

    # the sampler's gauges (the host memory and leak panels compare with these)
    odd = []
    for r in RANKS:
        f = files[1][r]
        if sorted(l["series"] for l, _ in f.get("memobs_leak_slope_bytes_per_second", [])) != ["anon", "heap", "rss", "tracked"]:
            odd.append("rank %d: leak series %r" % (r, f.get("memobs_leak_slope_bytes_per_second")))
        if [v for _, v in f.get("memobs_leak_samples", [])] != [24.0]:
            odd.append("rank %d: memobs_leak_samples %r, want 24 (12 samples a round)" % (r, f.get("memobs_leak_samples")))
        for n in ("memobs_host_rss_bytes", "memobs_host_anon_bytes", "memobs_host_heap_bytes"):
            if not [v for _, v in f.get(n, []) if v > 0]:
                odd.append("rank %d: %s %r, want one value above 0" % (r, n, f.get(n)))
    check(not odd, "each rank's file has RSS, anonymous and heap bytes, 4 leak slopes over its 24 samples", *odd)

    # the container's memory: the fixture ranks' exact, this machine's sane
    odd = []
    for r in RANKS:
        f = files[1][r]
        got = [[v for _, v in f.get("memobs_cgroup_memory_%s_bytes" % n, [])] for n in ("usage", "working_set", "limit")]
        if r in CG_FIXTURE:
            cur, inactive, mx = CG_FIXTURE[r]
            if got != [[cur], [cur - inactive], [mx]]:
                odd.append("rank %d (fixture): usage, working set, limit %r, want %r" % (r, got, [[cur], [cur - inactive], [mx]]))
        elif len(got[0]) != 1 or len(got[1]) != 1 or not 0 < got[1][0] <= got[0][0] or len(got[2]) > 1:
            odd.append("rank %d (this machine): usage, working set, limit %r: want one usage above 0, a working set"
                       " in (0, usage], at most one limit" % (r, got))
    check(not odd, "each rank's file has its container's usage, working set and limit", *odd)

    # the size percentiles are bucket bounds (the model's, as Prometheus would have them)
    ctx = Ctx(RANKS, PHASES, dirs, w, files[0], files[1], {"size": [str(1 << b) for b in range(57)] + ["+Inf"]})
    off = []
    for q, g in ((0.5, 12), (0.9, 13), (0.99, 14)):
        for k, v in e_size_quantile(q)(ctx).items():
            d = ALL_DIRS.index(dict(k)["direction"])
            if not close(v, float(1 << (g + d))):
                off.append("p%g %s: %r, want the bound %d" % (q * 100, dict(k)["direction"], v, 1 << (g + d)))
    check(not off, "the model's size p50, p90, p99 are the bounds 2^(12+d), 2^(13+d), 2^(14+d)", *off)

    les = {}
    for name, fam in (("ttft", "memobs_ttft_seconds_bucket"), ("tpot", "memobs_tpot_seconds_bucket"),
                      ("size", "memobs_transfer_size_bytes_bucket")):
        les[name] = sorted({l["le"] for l, _ in files[1][0].get(fam, [])}, key=le_value)
    if not les["size"]:
        bad("the files have the size histogram memobs_transfer_size_bytes", "no memobs_transfer_size_bytes_bucket in rank 0's file")

    # The variables' own queries
    tmpl = {v["name"]: v for v in dash["templating"]["list"]}
    for name in ("job", "rank"):
        qtext = tmpl[name]["query"]["query"] if isinstance(tmpl[name]["query"], dict) else tmpl[name]["query"]
        m = re.match(r"^label_values\((.*),\s*(\w+)\)$", qtext)
        sel = m.group(1).replace("$job", args.job)
        got = prom.get("/api/v1/label/%s/values" % m.group(2), {"match[]": sel, "start": "%.3f" % (t - 60), "end": "%.3f" % t})
        want = [args.job] if name == "job" else ["0", "1", "2", "3"]
        check(sorted(got) == want, "variable %s: %s gives %r" % (name, qtext, want), "got %r" % got)

    settings = [
        ("all ranks, all phases", RANKS, PHASES, "(0|1|2|3)", "(prefill|decode|unphased)"),
        ("rank 2, all phases", [2], PHASES, "2", "(prefill|decode|unphased)"),
        ("ranks 1 and 3, phase decode", [1, 3], ["decode"], "(1|3)", "decode"),
    ]
    missing = [(p["title"], x["refId"]) for p in dash["panels"] for x in p["targets"] if (p["title"], x["refId"]) not in EXPECT]
    check(not missing, "every panel's every target has an expectation here", *["no expectation for %r target %s" % m for m in missing])
    for sname, ranks, phases, rank_re, phase_re in settings:
        ctx = Ctx(ranks, phases, dirs, w, files[0], files[1], les)
        for p in dash["panels"]:
            problems = []
            for x in p["targets"]:
                e = (x["expr"].replace("$__rate_interval", "%dms" % window_ms).replace("$__interval", "1s")
                     .replace("$job", args.job).replace("$rank", rank_re).replace("$phase", phase_re))
                f = EXPECT.get((p["title"], x["refId"]))
                if f is None:
                    continue
                try:
                    got = prom.vector(e, t)
                    want = f(ctx)
                except Exception as ex:  # a query Prometheus refused, a figure missing from a file
                    problems.append("%s: %s: %s" % (x["refId"], e, ex))
                    continue
                if not got:
                    problems.append("%s: %s: returned nothing" % (x["refId"], e))
                    continue
                named = set(re.findall(r"\{\{\s*(\w+)\s*\}\}", x.get("legendFormat", "")))
                for k in got:
                    if not named <= {n for n, _ in k}:
                        problems.append("%s: legend %r names labels the series lacks: %s"
                                        % (x["refId"], x["legendFormat"], sorted(named - {n for n, _ in k})))
                        break
                diff = compare(got, want)
                if diff:
                    problems.append("%s: %s" % (x["refId"], e))
                    problems.extend("  " + d for d in diff[:12])
            check(not problems, "%s (%s): %d queries return what the run recorded" % (p["title"], sname, len(p["targets"])),
                  *problems)


def main():
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["model", "run"])
    ap.add_argument("dashboard")
    ap.add_argument("--prom")
    ap.add_argument("--bin")
    ap.add_argument("--dir")
    ap.add_argument("--job")
    ap.add_argument("--keep")
    ap.add_argument("--doc")
    args = ap.parse_args()
    try:
        with open(args.dashboard) as f:
            dash = json.load(f)
    except Exception as e:
        bad("%s loads as JSON" % args.dashboard, e)
        return 1
    errs = check_model(dash)
    if args.what == "model":
        n = len(dash.get("panels", []))
        check(not errs, "%s: %d panels, the model's rules (ids, grid, datasource variable, queries, variables)" % (args.dashboard, n), *errs)
        if args.doc:
            check_doc(dash, args.doc)
    else:
        try:
            run(args, dash)
        except Exception as e:
            bad("the 4-rank run against Prometheus", "%s: %s" % (type(e).__name__, e))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
