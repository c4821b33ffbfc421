"""tests/python/test_prom_collector.sh: memobs.prometheus.Collector in
prometheus_client's registry (Debian's python3-prometheus-client, 0.16).

prom_collector_check.py: records transfers in every direction and phase,
latencies (record_ttft/record_tpot and a request), tracked allocations, a
region with a name that needs escaping, a marker, a peer and a collective
through the package; registers Collector() in a fresh CollectorRegistry;
then generate_latest(registry) and memobs.format_prometheus() taken right
after, both parsed with prometheus_client.parser, must hold the same
families (names, types, HELP) and samples (names, labels, values), the
figures recorded among them. Then: a second Collector is refused, a later
scrape shows later records and takes one snapshot, the OpenMetrics
exposition parses to the same, the default REGISTRY serves memobs beside
the client's own collectors, and the module without prometheus_client
(python -S) raises ImportError naming the package to install. Prints one
"ok - prom-collector: NAME" / "not ok - ..." line per check."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import Tap  # noqa: E402

tap = Tap("prom-collector")
try:
    import prometheus_client
    from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
    from prometheus_client.parser import text_string_to_metric_families
except ImportError as e:
    tap("prometheus_client importable under %s (Debian's python3-prometheus-client; tests/deps.sh installs it)"
        % sys.executable, False, e)
    sys.exit(1)

import memobs  # noqa: E402
import memobs.prometheus  # noqa: E402

REGION = 'step "q" \\ {a,b}\nnext \u00e9'  # a quote, a backslash, braces, a comma, a newline, not ASCII
ID = {"job_id": "", "rank": "0", "local_rank": "0"}


def parse(text):
    """{family name: (type, help, {(sample name, sorted labels): value})}, and
    the family names in order."""
    fams, order = {}, []
    for m in text_string_to_metric_families(text):
        samples = {}
        for s in m.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            if key in samples:
                raise ValueError("sample %r twice in family %s" % (key, m.name))
            samples[key] = s.value
        if m.name in fams:
            raise ValueError("family %s twice" % m.name)
        fams[m.name] = (m.type, m.documentation, samples)
        order.append(m.name)
    return fams, order


def value(fams, family, sample, **labels):
    """The value of one sample: labels are those given beside job_id, rank,
    local_rank and host (whatever it is); None if absent."""
    want = dict(ID, **labels)
    for (name, lab), v in fams.get(family, (None, None, {}))[2].items():
        d = dict(lab)
        d.pop("host", None)
        if name == sample and d == want:
            return v
    return None


def differences(a, b):
    """Lines naming what differs between two parse() results."""
    out = []
    for n in sorted(set(a) | set(b)):
        if n not in a or n not in b:
            out.append("family %s only in %s" % (n, "the collector's" if n in a else "format_prometheus()'s"))
            continue
        if a[n][:2] != b[n][:2]:
            out.append("family %s: %r vs %r" % (n, a[n][:2], b[n][:2]))
        sa, sb = a[n][2], b[n][2]
        for k in sorted(set(sa) | set(sb)):
            if sa.get(k) != sb.get(k):
                out.append("%s %s: %r vs %r" % (k[0], dict(k[1]), sa.get(k), sb.get(k)))
    return out[:20]


# ---- what is recorded: every direction and phase, latencies, the tracker ---
memobs.set_phase("prefill")
memobs.record_h2d(1 << 20, True)
memobs.record_h2d(3000, True)
memobs.record_h2d(4096, False)
memobs.record_d2h(512, False)
memobs.record_d2d(64, None)  # the thread's phase: prefill
memobs.record_xfer("h2s", 8192, "decode")
memobs.record_xfer_ns("s2h", 8192, "prefill", 2000000)  # timed: 2 ms
memobs.record_s2d(100, None)
memobs.set_phase(None)
memobs.record_d2s(7, None)  # unphased
memobs.record_ttft(300000000)  # 0.3 s: between the bounds 0.25 and 0.5
memobs.record_tpot(30000000)  # 0.03 s: between 0.025 and 0.05
memobs.request_begin(7)
for _ in range(3):
    memobs.request_token(7)  # a TTFT sample, then two TPOT samples
memobs.request_end(7)  # an E2E sample
memobs.track_alloc(0x10000, 1 << 20, "device")
memobs.track_alloc(0x20000, 4096, "host")
memobs.track_alloc(0x30000, 256, "pinned")
memobs.track_free(0x20000)
with memobs.region(REGION):
    memobs.mark("kv_evict")
memobs.record_peer_xfer(memobs.peer_intern("decode-3"), memobs.PEER_SEND, 65536, "prefill")
memobs.record_coll(memobs.coll_register_comm("tp", 1, 0, 2), memobs.COLL_ALL_REDUCE, 1 << 16, "decode", 1000)

# ---- one scrape and the text right after it --------------------------------
registry = CollectorRegistry()
registry.register(memobs.prometheus.Collector())
scraped = generate_latest(registry).decode("utf-8")
text = memobs.format_prometheus()
got, got_order = parse(scraped)
want, want_order = parse(text)
nsamples = sum(len(f[2]) for f in want.values())
tap("format_prometheus() is a str, whole: %d bytes, %d families, %d samples (the transfer-size histogram "
    "alone: 7 directions x (58 buckets, le 1 .. 2^56 and +Inf; _sum; _count))" % (len(text), len(want), nsamples),
    isinstance(text, str) and text.endswith("\n") and len(want) >= 40 and nsamples >= 600
    and len(want["memobs_transfer_size_bytes"][2]) == 7 * 60,
    "%d families, %d samples, %d in the size histogram" % (len(want), nsamples,
                                                           len(want.get("memobs_transfer_size_bytes", [0, 0, []])[2])))
tap("the collector's scrape (generate_latest) has format_prometheus()'s families, in its order: names, types, HELP",
    got_order == want_order and all(got[n][:2] == want[n][:2] for n in want),
    "collector: %s" % got_order, "text:      %s" % want_order, *differences(got, want))
tap("... and its samples: names, label sets, values (%d, as sets)" % nsamples,
    got == want, *differences(got, want))
kinds = {f[0] for f in want.values()}
shape = []
for n, (typ, _, samples) in sorted(got.items()):
    names = {k[0] for k in samples}
    if typ == "counter" and (n.endswith("_total") or names - {n + "_total"}):
        shape.append("counter %s: samples %s" % (n, sorted(names)))
    if typ == "gauge" and names - {n}:
        shape.append("gauge %s: samples %s" % (n, sorted(names)))
    if typ == "histogram":
        if names != {n + "_bucket", n + "_sum", n + "_count"}:
            shape.append("histogram %s: samples %s" % (n, sorted(names)))
        for (sn, lab), v in samples.items():  # each series: its +Inf bucket is its _count
            if sn == n + "_count":
                inf = samples.get((n + "_bucket", tuple(sorted(dict(lab, le="+Inf").items()))))
                if inf != v:
                    shape.append("histogram %s%s: _count %r, +Inf bucket %r" % (n, dict(lab), v, inf))
tap("counters (the family named without _total, its samples with it), gauges, histograms (_bucket, _sum, _count; "
    "each +Inf bucket its _count) in the scrape",
    kinds == {"counter", "gauge", "histogram"} and not shape, sorted(kinds), *shape[:20])

# the figures recorded, read from the collector's scrape
expect = [
    ("memobs_transfer_bytes", "memobs_transfer_bytes_total", {"direction": "h2d", "phase": "prefill"}, 1051576),
    ("memobs_transfer_ops", "memobs_transfer_ops_total", {"direction": "h2d", "phase": "prefill"}, 2),
    ("memobs_transfer_bytes", "memobs_transfer_bytes_total", {"direction": "h2d", "phase": "decode"}, 4096),
    ("memobs_transfer_bytes", "memobs_transfer_bytes_total", {"direction": "d2h", "phase": "decode"}, 512),
    ("memobs_transfer_bytes", "memobs_transfer_bytes_total", {"direction": "d2d", "phase": "prefill"}, 64),
    ("memobs_transfer_bytes", "memobs_transfer_bytes_total", {"direction": "h2s", "phase": "decode"}, 8192),
    ("memobs_transfer_bytes", "memobs_transfer_bytes_total", {"direction": "s2d", "phase": "prefill"}, 100),
    ("memobs_transfer_bytes", "memobs_transfer_bytes_total", {"direction": "d2s", "phase": "unphased"}, 7),
    ("memobs_timed_transfer_seconds", "memobs_timed_transfer_seconds_total",
     {"direction": "s2h", "phase": "prefill"}, 0.002),
    ("memobs_transfer_size_bytes", "memobs_transfer_size_bytes_sum", {"direction": "h2d"}, 1055672),
    ("memobs_transfer_size_bytes", "memobs_transfer_size_bytes_count", {"direction": "h2d"}, 3),
    ("memobs_transfer_size_bytes", "memobs_transfer_size_bytes_bucket", {"direction": "h2d", "le": "2048"}, 0),
    ("memobs_transfer_size_bytes", "memobs_transfer_size_bytes_bucket", {"direction": "h2d", "le": "4096"}, 2),
    ("memobs_transfer_size_bytes", "memobs_transfer_size_bytes_bucket", {"direction": "h2d", "le": "+Inf"}, 3),
    ("memobs_ttft_seconds", "memobs_ttft_seconds_count", {}, 2),
    ("memobs_ttft_seconds", "memobs_ttft_seconds_bucket", {"le": "0.25"}, 1),
    ("memobs_ttft_seconds", "memobs_ttft_seconds_bucket", {"le": "0.5"}, 2),
    ("memobs_tpot_seconds", "memobs_tpot_seconds_count", {}, 3),
    ("memobs_tpot_seconds", "memobs_tpot_seconds_bucket", {"le": "0.025"}, 2),
    ("memobs_tpot_seconds", "memobs_tpot_seconds_bucket", {"le": "0.05"}, 3),
    ("memobs_e2e_seconds", "memobs_e2e_seconds_count", {}, 1),
    ("memobs_requests_completed", "memobs_requests_completed_total", {}, 1),
    ("memobs_tracked_bytes", "memobs_tracked_bytes", {"kind": "device"}, 1 << 20),
    ("memobs_tracked_bytes", "memobs_tracked_bytes", {"kind": "pinned"}, 256),
    ("memobs_tracked_bytes", "memobs_tracked_bytes", {"kind": "host"}, 0),
    ("memobs_tracked_peak_bytes", "memobs_tracked_peak_bytes", {"kind": "host"}, 4096),
    ("memobs_tracked_frees", "memobs_tracked_frees_total", {"kind": "host"}, 1),
    ("memobs_region_ends", "memobs_region_ends_total", {"region": REGION}, 1),
    ("memobs_markers", "memobs_markers_total", {"region": "kv_evict"}, 1),
    ("memobs_peer_transfer_bytes", "memobs_peer_transfer_bytes_total",
     {"peer": "decode-3", "dir": "send", "phase": "prefill"}, 65536),
    ("memobs_collective_bytes", "memobs_collective_bytes_total",
     {"comm": "tp", "comm_rank": "0", "nranks": "2", "kind": "all_reduce", "phase": "decode"}, 65536),
]
bad = ["%s%s: expected %r, got %r" % (s, lab, v, value(got, f, s, **lab)) for f, s, lab, v in expect
       if value(got, f, s, **lab) != v]
tap("the figures recorded, in the collector's scrape: h2d prefill 1051576 B in 2, every other direction, the "
    "timed 2 ms, the size histogram, TTFT/TPOT/E2E buckets and counts, the tracker by kind, the region named "
    "with a quote, backslash, newline and é, the marker, the peer, the collective (%d samples)" % len(expect),
    not bad, *bad)

# ---- registration, later scrapes ------------------------------------------
try:
    registry.register(memobs.prometheus.Collector())
    err = None
except ValueError as e:
    err = str(e)
tap("a second Collector in the same registry: ValueError (describe() names the families: duplicated timeseries)",
    err is not None and "Duplicated timeseries" in err and "memobs_transfer_bytes_total" in err, err)

calls = []
real = memobs.prometheus.format_prometheus


def counted():
    calls.append(1)
    return real()


memobs.prometheus.format_prometheus = counted
try:
    memobs.record_h2d(5000, True)
    memobs.request_begin(8)
    memobs.request_token(8)
    later, _ = parse(generate_latest(registry).decode("utf-8"))
finally:
    memobs.prometheus.format_prometheus = real
now = (value(later, "memobs_transfer_bytes", "memobs_transfer_bytes_total", direction="h2d", phase="prefill"),
       value(later, "memobs_transfer_ops", "memobs_transfer_ops_total", direction="h2d", phase="prefill"),
       value(later, "memobs_requests_in_flight", "memobs_requests_in_flight"),
       value(later, "memobs_ttft_seconds", "memobs_ttft_seconds_count"))
tap("a scrape after more records shows them (h2d prefill 1056576 B in 3, 1 request in flight, 3 TTFT samples), "
    "from one format_prometheus() call", now == (1056576, 3, 1, 3) and len(calls) == 1,
    "got %r, %d calls" % (now, len(calls)))

# OpenMetrics: what prometheus_client serves a Prometheus server that asks for it
try:
    from prometheus_client.openmetrics.exposition import generate_latest as om_latest
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
    om_text = om_latest(registry).decode("utf-8")
    text = memobs.format_prometheus()
    om = {}
    for m in om_parse(om_text):
        om[m.name] = (m.type, m.documentation,
                      {(s.name, tuple(sorted(s.labels.items()))): s.value for s in m.samples})
    om_diff = differences(om, parse(text)[0])
except Exception as e:  # the strict parser's ValueError, for one
    om_diff = ["%s: %s" % (type(e).__name__, e)]
tap("the OpenMetrics exposition of the registry parses (the client's strict OpenMetrics parser) to "
    "format_prometheus()'s families and samples", not om_diff, *om_diff)

# the default registry, as an engine registers it, beside the client's own collectors
REGISTRY.register(memobs.prometheus.Collector())
default, _ = parse(generate_latest().decode("utf-8"))
tap("REGISTRY.register(Collector()): generate_latest() serves memobs' families beside the client's "
    "(python_info, process_*)",
    value(default, "memobs_transfer_bytes", "memobs_transfer_bytes_total", direction="h2d", phase="prefill")
    == 1056576 and "python_info" in default and "memobs_info" in default, sorted(default)[:12])

# a text that outgrows the buffer the previous call sized (its size and a quarter): grown, called again, whole
before = len(memobs.format_prometheus())
names = ["grow_%03d_%s" % (i, "x" * 54) for i in range(200)]  # 63 bytes: memobs' longest name
for n in names:
    with memobs.region(n):
        pass
grown, _ = parse(generate_latest(registry).decode("utf-8"))
text = memobs.format_prometheus()
missing = [n for n in names if value(grown, "memobs_region_ends", "memobs_region_ends_total", region=n) != 1]
tap("a text grown past the last call's buffer (%d -> %d bytes: 200 regions more) comes back whole; the "
    "collector's scrape is it" % (before, len(text)),
    len(text) > 2 * before and not missing and grown == parse(text)[0],
    "missing: %s" % missing[:3], *differences(grown, parse(text)[0]))

# ---- without prometheus_client --------------------------------------------
# -S: no site-packages (where prometheus_client is); the package itself is on PYTHONPATH
r = subprocess.run([sys.executable, "-S", "-c", "import memobs\n"
                    "try:\n    import prometheus_client\nexcept ImportError:\n    pass\n"
                    "else:\n    raise SystemExit('prometheus_client under -S: ' + prometheus_client.__file__)\n"
                    "memobs.record_h2d(1, True)\n"
                    "import memobs.prometheus\n"],
                   capture_output=True, text=True, timeout=60)
last = (r.stderr.strip().splitlines() or [""])[-1]
tap("without prometheus_client (python -S): memobs imports and records; `import memobs.prometheus` raises "
    "ImportError naming prometheus_client and python3-prometheus-client",
    r.returncode == 1 and last.startswith("ImportError: memobs.prometheus needs prometheus_client")
    and "python3-prometheus-client" in last and "pip install prometheus-client" in last, r.stderr[-1500:])
sys.exit(tap.failed)
