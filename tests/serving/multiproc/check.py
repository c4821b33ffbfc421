#!/usr/bin/env python3
"""The checker of tests/serving/test_prom_multiproc.sh: memobs' prometheus_client
multiprocess files (PROMETHEUS_MULTIPROC_DIR) against the text expositions
the same processes wrote at the same moment, through Debian's
prometheus_client and through a reader of our own written from the layout
(docs/exports/prometheus.md, "Multiprocess files").

  check.py layout DIR N
      every memobs file in DIR (*_memobs-*.db) walks as layout N (1: a value
      per entry, prometheus_client 0.17 and before; 2: a value and a time
      stamp, 0.18 on) and as nothing else: used = the file's length, keys
      padded with spaces, each key the JSON json.dumps(sort_keys=True) writes
  check.py merge DIR TEXT... [--no-gauges]
      prometheus_client's MultiProcessCollector over DIR holds, for every
      memobs series, the TEXT files' samples merged: counters and histograms
      summed, gauges by their file's mode (livesum: summed, livemax: the
      largest); the livemax families are docs/exports/prometheus.md's;
      with --no-gauges, no memobs gauge is there (the processes exited)
  check.py values DIR N TEXT
      our reader of layout N over DIR's memobs files equals TEXT's samples
      (for the layout prometheus_client 0.16 cannot read)
  check.py fixture DIR
      the files prometheus_client's current source wrote (layout 2,
      tests/serving/multiproc/fixture/) read by our layout-2 reader: the
      values they were written with
  check.py prom URL JOB TEXT...
      every aggregation of every grafana/memobs.json query (rate() and
      increase() taken off: the counters' totals), evaluated by Prometheus
      over what it scraped from the prometheus_client server, equals the same
      aggregation of the TEXT files' samples merged as above

Prints "ok - prom-multiproc: ..." / "not ok - prom-multiproc: ..." lines;
exits 1 on any failure.
"""
import glob
import json
import math
import os
import re
import struct
import sys
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from tap import Tap  # noqa: E402

tap = Tap("prom-multiproc")


def ok(name):
    tap(name, True)


def bad(name, *lines):
    tap(name, False, *lines)


def check(cond, name, *lines):
    return tap(name, bool(cond), *lines)


def walk(data, layout):
    """The entries of one file image: [(key, value, timestamp or None)];
    raises ValueError where the image is not layout `layout`."""
    if len(data) < 8:
        raise ValueError("shorter than its header")
    used = struct.unpack_from("<i", data, 0)[0]
    if used != len(data):
        raise ValueError("used %d, file %d bytes" % (used, len(data)))
    if data[4:8] != b"\0\0\0\0":
        raise ValueError("header padding is not zero")
    pos, out = 8, []
    while pos < used:
        n = struct.unpack_from("<i", data, pos)[0]
        if n <= 0 or pos + 4 + n > used:
            raise ValueError("entry at %d: key length %d" % (pos, n))
        key = data[pos + 4:pos + 4 + n]
        pad = 8 - (n + 4) % 8
        if data[pos + 4 + n:pos + 4 + n + pad] != b" " * pad:
            raise ValueError("entry at %d: padding is not %d spaces" % (pos, pad))
        pos += 4 + n + pad
        if pos + 8 * layout > used:
            raise ValueError("entry at %d: value past the end" % pos)
        v = struct.unpack_from("<d", data, pos)[0]
        ts = struct.unpack_from("<d", data, pos + 8)[0] if layout == 2 else None
        pos += 8 * layout
        out.append((key.decode("utf-8"), v, ts))
    return out


def memobs_files(d):
    return sorted(glob.glob(os.path.join(d, "*_memobs-*.db")))


def kind_of(path):
    """counter, histogram, livesum or livemax, from the file's name."""
    parts = os.path.basename(path).split("_")
    return parts[1] if parts[0] == "gauge" else parts[0]


def key_of(name, labels):
    return (name, tuple(sorted((k, v) for k, v in labels.items())))


def le_norm(labels):
    """le as a float's text: prometheus_client rewrites it (1 -> 1.0)."""
    if "le" in labels:
        labels = dict(labels)
        labels["le"] = repr(float(labels["le"])) if labels["le"] != "+Inf" else "+Inf"
    return labels


def read_text(path):
    """{(sample name, labels): value} and {family: type} of a text exposition."""
    from prometheus_client.parser import text_string_to_metric_families
    samples, types = {}, {}
    with open(path, encoding="utf-8") as f:
        for fam in text_string_to_metric_families(f.read()):
            name = fam.name + "_total" if fam.type == "counter" else fam.name
            types[name] = fam.type
            for s in fam.samples:
                samples[key_of(s.name, le_norm(s.labels))] = (s.value, name)
    return samples, types


def livemax_doc():
    """The gauges docs/exports/prometheus.md says are merged by their maximum."""
    page = open("docs/exports/prometheus.md", encoding="utf-8").read()
    m = re.search(r"merged by their maximum \(`livemax`\): ([^\n]*(?:\n[^\n]+)*)", page)
    return set(re.findall(r"`(memobs_\w+)`", m.group(1))) if m else set()


def merged(texts, livemax):
    """The TEXT files' samples as MultiProcessCollector merges them."""
    out, types = {}, {}
    for t in texts:
        samples, ty = read_text(t)
        types.update(ty)
        for k, (v, fam) in samples.items():
            if k not in out:
                out[k] = v
            elif ty[fam] == "gauge" and fam in livemax:
                out[k] = max(out[k], v)
            else:
                out[k] = out[k] + v
    return out, types


# Gauges that are an age at the time of the write: the text and the files
# are written one after the other, so their figures differ by the time
# between; both must be 0 (nothing in flight) or both above 0.
AGES = {"memobs_transfer_oldest_in_flight_seconds"}


def same_fig(name, a, b):
    return (a > 0) == (b > 0) if name in AGES else same_value(a, b)


def same_value(a, b):
    if a == b:
        return True
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


def cmd_layout(d, layout):
    files = memobs_files(d)
    if not check(len(files) >= 2, "%s holds memobs' files" % d, "found: %s" % os.listdir(d)):
        return
    for p in files:
        data = open(p, "rb").read()
        try:
            entries = walk(data, layout)
        except ValueError as e:
            bad("%s walks as layout %d" % (os.path.basename(p), layout), str(e))
            continue
        other = 3 - layout
        try:
            walk(data, other)
            bad("%s does not walk as layout %d" % (os.path.basename(p), other))
        except ValueError:
            pass
        keys_ok = [k for k, _, _ in entries if k == json.dumps(json.loads(k), sort_keys=True)]
        check(len(keys_ok) == len(entries) and entries,
              "%s: layout %d, %d entries, every key as json.dumps(sort_keys=True) writes it"
              % (os.path.basename(p), layout, len(entries)),
              "keys that differ: %s" % [k for k, _, _ in entries if k not in keys_ok][:3])


def cmd_merge(d, texts, no_gauges):
    from prometheus_client import CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector
    livemax = livemax_doc()
    check(len(livemax) >= 5, "docs/exports/prometheus.md names the livemax gauges (%d)" % len(livemax))
    files = {kind_of(p): p for p in memobs_files(d)}
    for p in memobs_files(d):
        if kind_of(p) == "livemax":
            data = open(p, "rb").read()
            try:
                entries = walk(data, 1)
            except ValueError:  # the other layout (a reader of 0.18 on, run by hand)
                entries = walk(data, 2)
            fams = {json.loads(k)[0] for k, _, _ in entries}
            check(fams <= livemax and fams, "the livemax files hold only the families the docs name (%d)" % len(fams),
                  "not in the docs: %s" % sorted(fams - livemax))
    reg = CollectorRegistry()
    MultiProcessCollector(reg, path=d)
    got, gtypes = {}, {}
    for fam in reg.collect():
        for s in fam.samples:
            if s.name.startswith("memobs_"):
                got[key_of(s.name, le_norm(s.labels))] = s.value
                gtypes[s.name] = fam.type
    want, types = merged(texts, livemax)
    if no_gauges:
        want = {k: v for k, v in want.items() if types.get(k[0]) != "gauge"}
        check(not [k for k in got if gtypes.get(k[0]) == "gauge"],
              "after the processes exited, no memobs gauge is left (live modes: their files removed)",
              "left: %s" % sorted({k[0] for k in got if gtypes.get(k[0]) == "gauge"})[:5],
              "files: %s" % sorted(files))
    missing = [k for k in want if k not in got]
    extra = [k for k in got if k not in want]
    diff = [(k, want[k], got[k]) for k in want if k in got and not same_fig(k[0], want[k], got[k])]
    check(not missing and not extra and not diff and len(want) > 300,
          "MultiProcessCollector's memobs series (%d) equal the %d processes' texts merged (%d series)"
          % (len(got), len(texts), len(want)),
          "missing: %s" % missing[:4], "extra: %s" % extra[:4], "different (want, got): %s" % diff[:4])
    return got


def cmd_values(d, layout, text):
    want, _ = merged([text], livemax_doc())
    got = {}
    for p in memobs_files(d):
        hist_cum = {}
        for k, v, ts in walk(open(p, "rb").read(), layout):
            fam, name, labels, _help = json.loads(k)
            labels = le_norm(labels)
            if name.endswith("_bucket"):  # per bucket in the file: cumulative in the text
                series = tuple(sorted((a, b) for a, b in labels.items() if a != "le"))
                hist_cum.setdefault((name, series), []).append((math.inf if labels["le"] == "+Inf"
                                                                else float(labels["le"]), labels, v))
            else:
                got[key_of(name, labels)] = v
            if layout == 2 and not (ts and ts > 1.5e9):
                bad("%s: a layout-2 entry's time stamp is the time of the write" % os.path.basename(p), ts)
                return
        for (name, series), bs in hist_cum.items():
            acc = 0.0
            for _, labels, v in sorted(bs, key=lambda b: b[0]):
                acc += v
                got[key_of(name, labels)] = acc
            got[key_of(name[:-len("_bucket")] + "_count", dict(series))] = acc
    missing = [k for k in want if k not in got]
    extra = [k for k in got if k not in want]
    diff = [(k, want[k], got[k]) for k in want if k in got and not same_fig(k[0], want[k], got[k])]
    check(not missing and not extra and not diff and len(want) > 300,
          "our layout-%d reader over the files: the text's %d samples, each value equal" % (layout, len(want)),
          "missing: %s" % missing[:4], "extra: %s" % extra[:4], "different (want, got): %s" % diff[:4])


def cmd_fixture(d):
    want = {
        ("counter", "engine_offload_bytes_total", (("transfer_type", "GPU_to_CPU"),)): 1048576.0,
        ("counter", "engine_offload_bytes_total", (("transfer_type", "CPU_to_GPU"),)): 4096.0,
        ("histogram", "engine_step_seconds_bucket", (("le", "0.01"),)): 0.0,
        ("histogram", "engine_step_seconds_bucket", (("le", "0.1"),)): 1.0,
        ("histogram", "engine_step_seconds_bucket", (("le", "1.0"),)): 1.0,
        ("histogram", "engine_step_seconds_bucket", (("le", "+Inf"),)): 0.0,
        ("histogram", "engine_step_seconds_sum", ()): 0.55,
        ("livesum", "engine_running", ()): 7.0,
    }
    got = {}
    for p in sorted(glob.glob(os.path.join(d, "*.db"))):
        data = open(p, "rb").read()
        try:
            for k, v, ts in walk(data, 2):
                fam, name, labels, _help = json.loads(k)
                got[(kind_of(p), name, tuple(sorted(labels.items())))] = v
        except ValueError as e:
            bad("%s (prometheus_client's current source) walks as layout 2" % os.path.basename(p), str(e))
        try:
            walk(data, 1)
            bad("%s does not walk as layout 1" % os.path.basename(p))
        except ValueError:
            pass
    check(got == want, "the fixture prometheus_client's current source wrote reads, with our layout-2 reader, "
          "as the values it was written with (%d entries)" % len(got), "got: %s" % got)


def prom_query(url, q):
    with urllib.request.urlopen(url + "/api/v1/query?" + urllib.parse.urlencode({"query": q}), timeout=10) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError("query %s: %s" % (q, body))
    return {tuple(sorted(s["metric"].items())): float(s["value"][1]) for s in body["data"]["result"]}


def aggregations(expr):
    """Every sum(...) / sum by (...) (...) of expr, as (by labels or None, inner)."""
    out, i = [], 0
    pat = re.compile(r"sum(?: by \(([^)]*)\))? ?\(")
    while True:
        m = pat.search(expr, i)
        if not m:
            return out
        depth, j = 1, m.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(expr[j], 0)
            j += 1
        by = [x.strip() for x in m.group(1).split(",")] if m.group(1) is not None else []
        out.append((by, expr[m.end():j - 1]))
        i = j


SEL = re.compile(r'^(?:rate|increase)\((\w+)\{([^}]*)\}\[\$__rate_interval\]\)$|^(\w+)\{([^}]*)\}$')
MATCH = re.compile(r'(\w+)\s*(=~|=|!=|!~)\s*"([^"]*)"')


def cmd_prom(url, job, texts):
    dash = json.load(open("grafana/memobs.json", encoding="utf-8"))
    livemax = livemax_doc()
    want_all, _ = merged(texts, livemax)
    # Prometheus keeps le as the text the server wrote: compare by its float
    variables = {"$job": job, "$rank": ".*", "$phase": "prefill|decode|unphased"}
    n_aggs = n_series = 0
    seen = set()
    for panel in dash["panels"]:
        for t in panel.get("targets", []):
            expr = t["expr"]
            for v, x in variables.items():
                expr = expr.replace(v, x)
            for by, inner in aggregations(expr):
                m = SEL.match(inner.strip())
                if not m:
                    bad("a query's aggregation has the form check.py knows", inner)
                    continue
                name = m.group(1) or m.group(3)
                matchers = MATCH.findall(m.group(2) if m.group(1) else m.group(4))
                q = "sum%s (%s{%s})" % (" by (%s)" % ", ".join(by) if by else "", name,
                                        ", ".join('%s%s"%s"' % mm for mm in matchers))
                if q in seen:
                    continue
                seen.add(q)
                want = {}
                for (sname, labels), v in want_all.items():
                    if sname != name:
                        continue
                    ld = dict(labels)
                    okm = True
                    for ln, op, val in matchers:
                        have = ld.get(ln, "")
                        hit = re.fullmatch(val, have) is not None if op in ("=~", "!~") else have == val
                        okm &= hit if op in ("=", "=~") else not hit
                    if okm:
                        g = tuple(sorted((b, ld[b]) for b in by if b in ld))
                        want[g] = want.get(g, 0.0) + v
                try:
                    got = prom_query(url, q)
                except Exception as e:  # noqa: BLE001 (the message is the finding)
                    bad("Prometheus answers %s" % q, str(e))
                    continue
                got = {tuple((k, repr(float(v)) if k == "le" and v != "+Inf" else v) for k, v in g): x
                       for g, x in got.items()}
                diff = sorted(set(want) ^ set(got))[:3] + [(g, want[g], got[g]) for g in want
                                                           if g in got and not same_fig(name, want[g], got[g])][:3]
                n_aggs += 1
                n_series += len(want)
                check(not diff and want, "%s: %d series, each the processes' figures merged" % (q, len(want)),
                      "differences (series only one side has, or want vs got): %s" % diff)
    check(n_aggs >= 20, "the dashboard's queries gave %d aggregations (%d series) to compare" % (n_aggs, n_series))


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    cmd, args = argv[1], argv[2:]
    if cmd == "layout":
        cmd_layout(args[0], int(args[1]))
    elif cmd == "merge":
        no_g = "--no-gauges" in args
        args = [a for a in args if a != "--no-gauges"]
        cmd_merge(args[0], args[1:], no_g)
    elif cmd == "values":
        cmd_values(args[0], int(args[1]), args[2])
    elif cmd == "fixture":
        cmd_fixture(args[0])
    elif cmd == "prom":
        cmd_prom(args[0], args[1], args[2:])
    else:
        print(__doc__)
        return 2
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
