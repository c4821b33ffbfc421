"""Checks of memobs' HTML report as Chromium rendered it (the DOM that
`chromium --dump-dom` printed), for tests/outputs/test_html.sh.

    html_check.py summary DOM JSON [LABEL]   every data-memobs figure (and
        user counter) in the DOM equals the JSON summary's; the keys that
        must be there are there
    html_check.py sections DOM MODE [LABEL]  the sections, and what each
        says: MODE "empty" (every one says what to turn on), "demo" (charts
        with their marks), "many" (the caps: 20 traces shown, the rest
        summed), "storage" (tests/outputs/test_html.c storage: the storage tier's
        rows, bars and lines, the transfer sizes' table and bars exact)
    html_check.py odd DOM RAW [LABEL]        odd strings arrive as text:
        quotes, <script>alert(1)</script>, bytes that are not UTF-8 (as
        U+FFFD); the raw file is UTF-8 and holds one <script> element only
    html_check.py errors DOM [LABEL]         the injected window.onerror
        recorded no error
    html_check.py requests DOM RAW API MODE [LABEL]  the "Requests" block
        (attribution) against API, the JSON that
        tests/outputs/test_html_requests.c MODE printed (memobs_get_summary's
        transfer and attributed figures, the memobs_request_top lists, read
        right after the report): attributed + unattributed = total per
        direction, the top tables and bars row by row, the tenants' rows,
        the misuse counts; MODE "requests" (the figures also against the
        program's scenario, counted by hand; a hostile tenant name as text)
        or "full" (10 rows per top list, 32 tenants + "other", the block's
        size)

One "ok - html: ..." or "not ok - html: ..." line per check."""

import json
import os
import sys
from html.parser import HTMLParser

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import Tap  # noqa: E402

SECTIONS = ["identity", "transfers", "transfers-time", "bandwidth", "transfer-sizes", "latency", "memory", "traces",
            "counters"]
DIRS = ("h2d", "d2h", "d2d", "h2s", "s2h", "d2s", "s2d")


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.kids, self.text = tag, dict(attrs), parent, [], []

    def all_text(self):
        out = list(self.text)
        for k in self.kids:
            out.append(k.all_text())
        return "".join(out)

    def walk(self):
        yield self
        for k in self.kids:
            yield from k.walk()


VOID = {"meta", "br", "hr", "img", "input", "link", "area", "base", "col", "embed", "source", "track", "wbr"}


class Tree(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", [], None)
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.kids.append(n)
        if tag not in VOID:
            self.cur = n

    def handle_startendtag(self, tag, attrs):
        self.cur.kids.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not self.root and n.tag != tag:
            n = n.parent
        if n is not self.root:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.text.append(data)


def parse(path):
    with open(path, encoding="utf-8") as f:
        t = Tree()
        t.feed(f.read())
        t.close()
    return t.root


def figures(root):
    """data-memobs KEY -> (data-v or None, text, node)"""
    out = {}
    for n in root.walk():
        k = n.attrs.get("data-memobs")
        if k is not None:
            out[k] = (n.attrs.get("data-v"), n.all_text(), n)
    return out


def expected(js, key):
    """The JSON summary's value for a data-memobs key; KeyError if none."""
    p = key.split(".")
    if len(p) == 3 and p[0] in DIRS and p[2] in ("bytes", "count"):
        return js[p[1]]["%s_%s" % (p[0], p[2])]
    if p[0] == "sizes" and len(p) == 3 and p[2] in ("count", "bytes", "p50", "p90", "p99", "max"):
        return js["sizes"][p[1]][p[2]]
    if p[0] == "sizes" and len(p) == 4 and p[2] == "buckets":
        # the JSON lists the non-empty buckets as [bound, count]
        got = [c for b, c in js["sizes"][p[1]]["buckets"] if str(b) == p[3]]
        if len(got) != 1:
            raise KeyError(key)
        return got[0]
    if p[0] == "manual" and len(p) == 4:
        return js["manual"][p[2]]["%s_%s" % (p[1], p[3])]
    if p[0] == "timed":
        return js["timed"][p[1]][p[2]][p[3]]
    if p[0] in ("ttft", "tpot", "e2e", "requests", "problems", "tracker", "identity"):
        return js[p[0]][p[1]]
    if p[0] == "memory":
        return js["memory"][p[1]][p[2]]
    raise KeyError(key)


NOT_IN_JSON = {"window_ns", "samples.rss_peak", "enabled", "leak.kind", "identity.job_id", "identity.host"}
# the Requests block's figures: checked by `requests` against the API's
# values, which the program printed (the JSON summary does not hold them yet)
NOT_IN_JSON_PREFIX = ("attributed.", "unattributed.", "request.", "tenant.")


def cmd_summary(t, dom, jpath):
    root = parse(dom)
    with open(jpath, encoding="utf-8") as f:
        js = json.load(f)
    fig = figures(root)
    must = ["%s.%s.%s" % (d, p, w) for d in ("h2d", "d2h", "d2d") for p in ("prefill", "decode", "unphased", "total")
            for w in ("bytes", "count")]
    must += ["requests.begun", "requests.completed", "problems.bad_records", "tracker.frees_unknown",
             "identity.rank", "identity.pid", "identity.world_size"]
    missing = [k for k in must if k not in fig]
    t("the DOM holds the %d figures every report has (transfers by direction and phase, requests, problems, "
      "identity)" % len(must), not missing, "missing: %s" % missing)
    bad, unknown, n = [], [], 0
    for k, (v, text, node) in sorted(fig.items()):
        if k in NOT_IN_JSON or k.startswith(NOT_IN_JSON_PREFIX):
            continue
        try:
            want = expected(js, k)
        except KeyError:
            unknown.append(k)
            continue
        n += 1
        if v is None or int(v) != int(want):
            bad.append("%s: expected %s (JSON), got data-v=%s (%r)" % (k, want, v, text))
    t("every data-memobs key maps to the JSON summary", not unknown, "no JSON counterpart: %s" % unknown)
    t("%d figures in the DOM equal the JSON summary's" % n, not bad and n > 0, *bad[:20])
    want_host = js["identity"]["host"]
    got_host = fig.get("identity.host", (None, None, None))[1]
    t("host equals the summary's", got_host == want_host, "expected %r, got %r" % (want_host, got_host))
    want_job = js["identity"]["job_id"] or "-"
    got_job = fig.get("identity.job_id", (None, None, None))[1]
    t("job id equals the summary's", got_job == want_job, "expected %r, got %r" % (want_job, got_job))
    want_on = "on" if js["enabled"] else "off"
    got_on = fig.get("enabled", (None, None, None))[1]
    t("recording on/off equals the summary's", got_on == want_on, "expected %r, got %r" % (want_on, got_on))
    counters = {n.attrs["data-counter"]: n.attrs.get("data-v") for n in root.walk() if "data-counter" in n.attrs}
    want_c = {k: str(v) for k, v in js["counters"].items()}
    t("user counters equal the summary's (%d)" % len(want_c), counters == want_c,
      "expected %s" % want_c, "got %s" % counters)
    if "host_memory" in js:
        lk = fig.get("leak.kind")
        got = lk[2].attrs.get("data-kind") if lk else None
        want = js["host_memory"]["leak"]["kind"]
        t("leak verdict equals the summary's", got == want, "expected %r, got %r" % (want, got))
    return t.failed


def section(root, sid):
    for n in root.walk():
        if n.attrs.get("id") == sid:
            return n
    return None


def absent(node):
    return [n for n in node.walk() if n.attrs.get("data-absent") == "1"] if node else []


def by_id(root, i):
    return section(root, i)


def cmd_sections(t, dom, mode):
    root = parse(dom)
    miss = [s for s in SECTIONS if section(root, s) is None]
    t("all %d sections present" % len(SECTIONS), not miss, "missing: %s" % miss)
    if mode == "empty":
        want = {"transfers": 1, "transfers-time": 1, "bandwidth": 1, "transfer-sizes": 1, "latency": 3, "memory": 3,
                "traces": 1, "counters": 1}
        for s, k in want.items():
            a = absent(section(root, s))
            texts = [x.all_text() for x in a]
            t("empty run: section %s says 'not recorded ... turn on' %d time%s" % (s, k, "" if k == 1 else "s"),
              len(a) == k and all("not recorded" in x and "turn on" in x for x in texts), texts)
        svgs = [n for n in root.walk() if n.tag == "svg"]
        t("empty run: no chart drawn from no data", not svgs, "%d svg elements" % len(svgs))
        t("empty run: no Requests section (nothing attributed)", section(root, "requests") is None)
    elif mode == "storage":
        storage(t, root)
    elif mode in ("demo", "many"):
        for s in ("transfers", "transfers-time", "transfer-sizes", "latency", "memory", "traces"):
            a = absent(section(root, s))
            if mode == "demo" or s != "latency":
                t("%s run: section %s has its data (no 'not recorded')" % (mode, s), not a,
                  [x.all_text() for x in a])
        if mode == "many":  # no storage transfer: the transfers as before the storage tier
            bars = by_id(root, "transfers-bars")
            rects = [n for n in bars.walk() if n.tag == "rect"] if bars else []
            t("many: no storage transfer: transfer bars, a bar per direction and phase (9)", len(rects) == 9,
              "%d rect" % len(rects))
            names = row_names(section(root, "transfers"))
            t("many: no storage transfer, the transfers table as before: H2D, D2H, D2D",
              names == ["H2D", "D2H", "D2D"], names)
            t("many: 3000 requests timed, none attributed: no Requests section", section(root, "requests") is None)
        if mode == "demo":  # the demo engine has a disk tier: 7 directions
            bars = by_id(root, "transfers-bars")
            rects = [n for n in bars.walk() if n.tag == "rect"] if bars else []
            t("demo: transfer bars, a bar per direction and phase (21: the disk tier's too)", len(rects) == 21,
              "%d rect" % len(rects))
            tt = by_id(root, "transfers-time-chart")
            paths = [n for n in tt.walk() if n.tag == "path"] if tt else []
            t("demo: transfers over time, a line per direction (7)", len(paths) == 7, "%d paths" % len(paths))
            names = row_names(section(root, "transfers"))
            t("demo: the transfers table has the disk tier's rows: H2D ... S2D",
              names == ["H2D", "D2H", "D2D", "H2S", "S2H", "D2S", "S2D"], names)
            sz = by_id(root, "sizes-chart")
            bars = [n for n in sz.walk() if n.tag == "rect"] if sz else []
            t("demo: transfer sizes drawn, a bar per non-empty bucket and direction",
              len(bars) > 0 and all(int(n.attrs.get("data-v", "0")) > 0 for n in bars), "%d bars" % len(bars))
            for h in ("ttft", "tpot", "e2e"):
                c = by_id(root, "hist-" + h)
                qs = sorted(n.attrs.get("data-q") for n in c.walk() if n.tag == "line" and "data-q" in n.attrs) \
                    if c else []
                bars = [n for n in c.walk() if n.tag == "rect"] if c else []
                t("demo: %s histogram with bars and p50/p90/p99 marked" % h.upper(),
                  qs == ["p50", "p90", "p99"] and len(bars) > 0, "marks %s, %d bars" % (qs, len(bars)))
            m = by_id(root, "memory-chart")
            paths = [n for n in m.walk() if n.tag == "path"] if m else []
            peaks = [n for n in m.walk() if n.tag == "circle" and "peak" in n.attrs.get("class", "")] if m else []
            names = [p.all_text() for p in paths]
            t("demo: memory over time with RSS, anonymous, heap and tracked pinned/device, each peak marked",
              all(x in names for x in ("RSS", "anonymous", "malloc heap", "tracked pinned", "tracked device"))
              and len(peaks) == len(paths), "series %s, %d peak marks" % (names, len(peaks)))
            v = [n for n in root.walk() if n.attrs.get("data-memobs") == "leak.kind"]
            t("demo: the leak detector's verdict shown", len(v) == 1, "%d verdicts" % len(v))
            tr = section(root, "traces")
            rows = [n for n in tr.walk() if n.tag == "tr" and "data-trace" in n.attrs] if tr else []
            pres = [n.all_text() for n in tr.walk() if n.tag == "pre"] if tr else []
            t("demo: the leaked kv_block's trace with its C stack (pool_alloc)",
              any("kv_block" in r.all_text() for r in rows) and any("pool_alloc" in p for p in pres),
              [r.all_text()[:200] for r in rows])
        if mode == "many":
            tr = section(root, "traces")
            rows = [n for n in tr.walk() if n.tag == "tr" and "data-trace" in n.attrs] if tr else []
            more = [n for n in tr.walk() if n.tag == "td" and "more traces" in n.all_text()] if tr else []
            t("many: 20 traces shown, the rest summed in one row", len(rows) == 20 and len(more) == 1,
              "%d rows, %d summary rows" % (len(rows), len(more)))
            vals = [int(r.kids[1].attrs.get("data-v", "0")) for r in rows if len(r.kids) > 1]
            t("many: traces largest first", vals == sorted(vals, reverse=True) and len(vals) == 20, vals)
            m = by_id(root, "memory-chart")
            paths = [n for n in m.walk() if n.tag == "path"] if m else []
            pts = max((n.attrs.get("d", "").count("L") + 1 for n in paths), default=0)
            t("many: memory series cut to at most 400 points", 0 < pts <= 400, "%d points" % pts)
    return t.failed


def row_names(node):
    """The row heads of the rows of figures (data-memobs cells) under node."""
    out = []
    for n in node.walk() if node else []:
        if n.tag == "tr" and any("data-memobs" in k.attrs for k in n.kids):
            out.append(n.kids[0].all_text() if n.kids and n.kids[0].tag == "th" else None)
    return out


# tests/outputs/test_html.c storage: what it recorded, by direction
STORAGE_SIZES = {  # direction: (count, bytes, p50, p90, p99, max, their texts, {bucket bound: count})
    "h2d": (1, 1000, 1024, 1024, 1024, 1024, "1 KiB", {1024: 1}),
    "d2h": (2, 6291456, 4194304, 4194304, 4194304, 4194304, "4 MiB", {4194304: 2}),
    "h2s": (4, 12358, 4096, 4096, 4096, 4096, "4 KiB", {128: 1, 4096: 3}),
    "s2h": (2, 2097152, 1048576, 1048576, 1048576, 1048576, "1 MiB", {1048576: 2}),
    "d2s": (1, 1, 1, 1, 1, 1, "1 B", {1: 1}),
    "s2d": (1, 0, 1, 1, 1, 1, "1 B", {1: 1}),
}


def storage(t, root):
    """tests/outputs/test_html.c storage: the storage tier beside the GPU directions."""
    names = row_names(section(root, "transfers"))
    want = ["H2D", "D2H", "D2D", "H2S", "S2H", "D2S", "S2D"]
    t("storage: the transfers table has a row per direction (7)", names == want, names)
    bars = by_id(root, "transfers-bars")
    rects = [n for n in bars.walk() if n.tag == "rect"] if bars else []
    t("storage: transfer bars, a bar per direction and phase (21)", len(rects) == 21, "%d rect" % len(rects))
    heads = [n.all_text() for n in bars.walk() if n.tag == "text" and n.all_text() in want] if bars else []
    t("storage: the bar groups named by direction, in order", heads == want, heads)
    tt = by_id(root, "transfers-time-chart")
    paths = [n.all_text() for n in tt.walk() if n.tag == "path"] if tt else []
    t("storage: transfers over time, a line per direction (7)", paths == want, paths)
    bw = section(root, "bandwidth")
    rows = [n for n in bw.walk() if n.tag == "tr" and any("data-memobs" in k.attrs for k in n.kids)] if bw else []
    got = [(r.kids[0].all_text(), r.kids[1].all_text(), r.kids[2].all_text(), r.kids[5].attrs.get("data-v"),
            r.kids[6].all_text()) for r in rows]
    t("storage: Timed bandwidth: one row, S2H prefill, engine-timed, 2 ms, 1.05 GB/s",
      got == [("S2H", "prefill", "engine", "2000000", "1.05")], got)
    h2 = [n.all_text() for n in bw.walk() if n.tag == "h2"] if bw else []
    t("storage: the bandwidth section is 'Timed bandwidth'", h2 == ["Timed bandwidth"], h2)
    sz = section(root, "transfer-sizes")
    names = row_names(sz)
    want_rows = [d.upper() for d in DIRS if d in STORAGE_SIZES]
    t("storage: the sizes table has a row per direction with records (no D2D)", names == want_rows, names)
    fig = figures(root)
    bad = []
    for d, (count, nbytes, p50, p90, p99, mx, text, buckets) in STORAGE_SIZES.items():
        for w, v in (("count", count), ("bytes", nbytes), ("p50", p50), ("p90", p90), ("p99", p99), ("max", mx)):
            k = "sizes.%s.%s" % (d, w)
            got = fig.get(k)
            if got is None or got[0] != str(v):
                bad.append("%s: expected data-v %s, got %s" % (k, v, got and got[0]))
            elif w in ("p50", "p90", "p99", "max") and got[1] != text:
                bad.append("%s: expected text %r, got %r" % (k, text, got[1]))
    t("storage: the sizes table's figures exact (H2S: 3 of 4096 B and 1 of 70 B -> 4 ops, p50..max 4 KiB)",
      not bad, *bad)
    chart = by_id(root, "sizes-chart")
    got = {n.attrs.get("data-memobs"): n.attrs.get("data-v") for n in chart.walk() if n.tag == "rect"} \
        if chart else {}
    want_b = {"sizes.%s.buckets.%d" % (d, b): str(c) for d, v in STORAGE_SIZES.items() for b, c in v[7].items()}
    t("storage: the size bars, one per non-empty bucket and direction, counts exact (%d)" % len(want_b),
      got == want_b, "expected %s" % want_b, "got %s" % got)
    titles = [n.all_text() for n in chart.walk() if n.tag == "title"] if chart else []
    t("storage: a size bar's tooltip says its count and range",
      "H2S: 3 records in (2 KiB, 4 KiB]" in titles and "D2S: 1 record in [0 B, 1 B]" in titles, titles)
    ax = [n.all_text() for n in chart.walk() if n.tag == "text" and "B" in n.all_text()] if chart else []
    t("storage: the size axis runs from the smallest bucket (1 B) to the largest (4 MiB)",
      ax[:1] == ["1 B"] and ax[-1:] == ["4 MiB"], ax)


def cmd_odd(t, dom, raw):
    root = parse(dom)
    with open(raw, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
        t("odd: the raw report is valid UTF-8", True)
    except UnicodeDecodeError as e:
        t("odd: the raw report is valid UTF-8", False, e)
        text = data.decode("utf-8", "replace")
    t("odd: raw report: no '<script>alert' anywhere", "<script>alert" not in text)
    t("odd: raw report: one <script> element (memobs' own)", text.count("<script") == 1,
      "%d" % text.count("<script"))
    scripts = [n for n in root.walk() if n.tag == "script"]
    t("odd: rendered DOM: one script element", len(scripts) == 1, "%d" % len(scripts))
    tags = [n.all_text() for n in root.walk() if n.tag == "b" and "tag" in n.attrs.get("class", "")]
    want = "q\"uo'te <script>alert(1)</script>"
    t("odd: the tag with quotes and a script shows as text", want in tags, tags)
    want = "/opt/m\ufffd\ufffdodel/<i>x</i>.py:12 caf\u00e9"
    t("odd: the path tag with invalid UTF-8 shows U+FFFD for each bad byte, markup as text", want in tags, tags)
    fig = figures(root)
    job = fig.get("identity.job_id", (None, "", None))[1]
    t("odd: the job id with markup and quotes shows as text", job == "job \"<b>x</b>\" & 'y'", repr(job))
    italics = [n for n in root.walk() if n.tag == "i" and n.all_text() == "x"]
    t("odd: no element made from the strings (<i>, <b> inside the tags)", not italics, len(italics))
    helps = [n.all_text() for n in root.walk() if n.tag == "td" and "alert(2)" in n.all_text()]
    t("odd: a counter's help with markup shows as text",
      helps == ["help with <script>alert(2)</script> & \"quotes\""], helps)
    return t.failed


# tests/outputs/test_html_requests.c requests, counted by hand from its
# scenario: what the API must say (and so the report)
HOSTILE = "</script><b>&\"'"
REQ_TOTAL = {"h2d": [9003715, 9], "d2h": [1005819, 4], "d2d": [13345, 2]}
REQ_ATTR = {"h2d": [8003715, 8], "d2h": [1005777, 3], "d2d": [1000, 1]}
REQ_MISUSE = {"orphan_bytes": 555, "bind_misuse": 1, "tenant_misuse": 2}
REQ_TOP = {"bytes": [(1, 9000000), (2, 8000), (3, 1027), (4, 750), (5, 100), (6, 40)],
           "wait": [(5, 9000000), (2, 2000000)]}
# tenant: requests finished, {direction: (bytes, ops)}; largest first
REQ_TENANTS = [("alpha", 3, {"h2d": (8000040, 4), "d2h": (1000777, 2), "d2d": (250, 1)}),
               (HOSTILE, 1, {"h2d": (3000, 1), "d2h": (5000, 1), "d2d": (0, 0)}),
               ("caf\u00e9-\u03b2", 1, {"h2d": (0, 0), "d2h": (0, 0), "d2d": (750, 1)}),
               ("beta", 0, {"h2d": (20, 1), "d2h": (0, 0), "d2d": (0, 0)})]
BLOCK_MAX = 128 * 1024  # memobs.h: "about 120 KB at worst"


def full_tenants():
    """tests/outputs/test_html_requests.c full: requests k = 1..45 under
    tenant k % 40; the first 32 names met (1..32) have rows of their own,
    the rest are "other" (last)."""
    rows, other = {}, [0, {d: [0, 0] for d in DIRS}]
    for k in range(1, 46):
        t = k % 40
        row = other if not 1 <= t <= 32 else rows.setdefault(t, [0, {d: [0, 0] for d in DIRS}])
        row[0] += 1
        for i, d in enumerate(DIRS):
            row[1][d][0] += k * 1000003 + i
            row[1][d][1] += 1
    named = [('"' * 61 + chr(65 + t // 26) + chr(65 + t % 26), r[0], {d: tuple(v) for d, v in r[1].items()})
             for t, r in rows.items()]
    named.sort(key=lambda r: -sum(b for b, _ in r[2].values()))
    return named + [("other", other[0], {d: tuple(v) for d, v in other[1].items()})]


def info_dir(r, d, by):
    """A memobs_request_info_t (the program's JSON) in direction d: bytes
    (by "bytes") or time waited (by "wait")."""
    i = DIRS.index(d)
    if by == "wait":
        return r["engine_ns"][i] + r["device_ns"][i]
    return sum(r["xfer"][p][d][0] for p in ("unphased", "prefill", "decode"))


def dv(n):
    v = n.attrs.get("data-v") if n is not None else None
    return int(v) if v is not None else None


def cells(row):
    """data-memobs KEY -> cell, of one table row."""
    return {k.attrs["data-memobs"]: k for k in row.kids if "data-memobs" in k.attrs}


def cmd_requests(t, dom, raw, api_path, mode):
    root = parse(dom)
    with open(api_path, encoding="utf-8") as f:
        api = json.load(f)
    with open(raw, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    sec = section(root, "requests")
    t("the Requests section is there (attributed transfers recorded)", sec is not None)
    if sec is None:
        return t.failed
    dirs = list(DIRS[:3]) if mode == "requests" else list(DIRS)
    if mode == "requests":  # the scenario did what it says: the API counted by hand
        got = ({d: api["total"][d] for d in dirs}, {d: api["attributed"]["total"][d] for d in dirs},
               {k: api["attributed"][k] for k in REQ_MISUSE},
               {by: [(r["id"], sum(info_dir(r, d, by) for d in DIRS)) for r in api["top"][by]] for by in REQ_TOP})
        want = (REQ_TOTAL, REQ_ATTR, REQ_MISUSE, REQ_TOP)
        t("the API's figures are the scenario's, counted by hand (totals, attributed, orphans, misuse, "
          "top lists)", got == want, "expected %s" % (want,), "got %s" % (got,))
    fig = figures(root)
    # (a) attributed vs unattributed, a row per direction
    split = section(root, "requests-split")
    rows = [n for n in split.walk() if n.tag == "tr" and cells(n)] if split else []
    t("the split table has a row per direction shown (%d)" % len(dirs),
      [r.kids[0].all_text() for r in rows] == [d.upper() for d in dirs], [r.kids[0].all_text() for r in rows])
    bad, sums = [], []
    for r, d in zip(rows, dirs):
        c = cells(r)
        tot, att = api["total"][d], api["attributed"]["total"][d]
        want = {"%s.total.bytes" % d: tot[0], "%s.total.count" % d: tot[1],
                "attributed.%s.total.bytes" % d: att[0], "attributed.%s.total.count" % d: att[1],
                "unattributed.%s.bytes" % d: tot[0] - att[0], "unattributed.%s.count" % d: tot[1] - att[1]}
        for p in ("prefill", "decode", "unphased"):
            want["attributed.%s.%s.bytes" % (d, p)] = api["attributed"][p][d][0]
        for k, v in want.items():
            if dv(c.get(k)) != v:
                bad.append("%s: expected %s, got %s" % (k, v, dv(c.get(k))))
        for p in ("prefill", "decode", "unphased"):
            k = "attributed.%s.%s.bytes" % (d, p)
            if k in c and int(c[k].attrs.get("data-ops", -1)) != api["attributed"][p][d][1]:
                bad.append("%s ops: expected %s, got %s" % (k, api["attributed"][p][d][1], c[k].attrs.get("data-ops")))
        for w in ("bytes", "count"):
            a = dv(c.get("attributed.%s.total.%s" % (d, "bytes" if w == "bytes" else "count")))
            u = dv(c.get("unattributed.%s.%s" % (d, w)))
            tt = dv(c.get("%s.total.%s" % (d, w)))
            if a is None or u is None or a + u != tt:
                sums.append("%s %s: attributed %s + unattributed %s != total %s" % (d, w, a, u, tt))
    t("the split table's figures equal the API's (total, attributed by phase with ops, unattributed)", not bad, *bad)
    t("attributed + unattributed = total, bytes and ops, in every direction", not sums and rows, *sums)
    t("orphan bytes (ids not in flight) equal the API's",
      dv(fig.get("attributed.orphan_bytes", (None, None, None))[2]) == api["attributed"]["orphan_bytes"],
      fig.get("attributed.orphan_bytes"))
    for k in ("bind_misuse", "tenant_misuse"):
        got = dv(fig.get("attributed." + k, (None, None, None))[2])
        t("Problems: attributed.%s equals the API's (%d)" % (k, api["attributed"][k]), got == api["attributed"][k],
          "got %s" % got)
    chart = by_id(root, "requests-split-chart")
    bars = [n for n in chart.walk() if n.tag == "rect"] if chart else []
    bad = []
    for d in dirs:
        tot, att = api["total"][d][0], api["attributed"]["total"][d][0]
        parts = [(n.attrs.get("data-part"), dv(n), float(n.attrs["width"])) for n in bars if n.attrs.get("data-dir") == d]
        want = [(p, v) for p, v in (("attributed", att), ("unattributed", tot - att)) if v]
        if [(p, v) for p, v, _ in parts] != want:
            bad.append("%s: expected parts %s, got %s" % (d, want, parts))
            continue
        for p, v, w in parts:  # the direction's total as 100% of 570 px; a part under 1 px drawn as 1
            if abs(w - max(1.0, 570.0 * v / tot)) > 0.11:
                bad.append("%s %s: width %s, expected %.1f" % (d, p, w, 570.0 * v / tot))
    t("the split bars: attributed then unattributed per direction, exact values, widths their share of 100%",
      not bad and bars, *bad)
    # (b) the top lists, row by row, and their bars
    for by in ("bytes", "wait"):
        tab = by_id(root, "requests-top-" + by)
        rows = [n for n in tab.walk() if n.tag == "tr" and "data-request" in n.attrs] if tab else []
        want = api["top"][by]
        heads = [n.all_text() for n in tab.walk() if n.tag == "th"] if tab else []
        t("top by %s: the direction columns are the directions shown (%s)" % (by, ",".join(dirs)),
          [h for h in heads if h.lower() in DIRS] == [d.upper() for d in dirs], heads)
        t("top by %s: %d rows, in the API's order (ids %s...)" % (by, len(want), [r["id"] for r in want][:3]),
          [int(r.attrs["data-request"]) for r in rows] == [r["id"] for r in want] and len(want) > 0,
          [r.attrs.get("data-request") for r in rows])
        bad = []
        for r, w in zip(rows, want):
            c = cells(r)
            exp = {"request.id": w["id"], "request.state": w["state"], "request.wait_ns": w["wait_ns"],
                   "request.ttft_ns": w["ttft_ns"], "request.e2e_ns": w["e2e_ns"], "request.tokens": w["tokens"],
                   "request.peak_bytes": w["peak_bytes"],
                   "request.bytes": sum(info_dir(w, d, "bytes") for d in DIRS),
                   "request.ops": sum(w["xfer"][p][d][1] for p in w["xfer"] for d in DIRS)}
            for d in dirs:
                exp["request.%s.bytes" % d] = info_dir(w, d, "bytes")
            for k, v in exp.items():
                if dv(c.get(k)) != v:
                    bad.append("#%s %s: expected %s, got %s" % (w["id"], k, v, dv(c.get(k))))
            tc = c.get("request.tenant")
            got = "" if tc is not None and tc.attrs.get("data-none") == "1" else (tc.all_text() if tc else None)
            if got != w["tenant"]:
                bad.append("#%s tenant: expected %r, got %r" % (w["id"], w["tenant"], got))
        t("top by %s: every cell equals the API's (id, tenant as text, state, bytes, ops, per direction, wait, "
          "TTFT, E2E, tokens, peak)" % by, not bad and rows, *bad[:20])
        chart = by_id(root, "requests-top-%s-chart" % by)
        rects = [n for n in chart.walk() if n.tag == "rect"] if chart else []
        got = [(int(n.attrs["data-request"]), n.attrs["data-dir"], dv(n)) for n in rects]
        exp = [(w["id"], d, info_dir(w, d, by)) for w in want for d in dirs if info_dir(w, d, by)]
        t("top by %s: the bar chart, a bar per request split by direction, in order, values exact (%d parts)"
          % (by, len(exp)), got == exp, "expected %s" % exp[:12], "got %s" % got[:12])
        labels = [n.all_text() for n in chart.walk() if n.tag == "text" and n.all_text().startswith("#")] \
            if chart else []
        t("top by %s: each bar labelled with its request's id" % by, labels == ["#%d" % w["id"] for w in want],
          labels)
    # (c) the tenants
    tab = by_id(root, "requests-tenants")
    rows = [n for n in tab.walk() if n.tag == "tr" and cells(n)] if tab else []
    got = []
    for r in rows:
        c = cells(r)
        got.append((r.kids[0].all_text(), dv(c.get("tenant.requests")),
                    {d: (dv(c.get("tenant.%s.bytes" % d)), dv(c.get("tenant.%s.count" % d))) for d in dirs}))
    want = REQ_TENANTS if mode == "requests" else [(n, q, {d: v[d] for d in dirs}) for n, q, v in full_tenants()]
    t("tenants: a row per tenant with anything in the window, largest first%s; requests, bytes and ops per "
      "direction as counted by hand" % (", \"other\" last" if mode == "full" else ""), got == want,
      "expected %s" % want[:6], "got %s" % got[:6])
    bad = []
    for r in rows:
        c = cells(r)
        tb = sum(dv(c.get("tenant.%s.bytes" % d)) or 0 for d in dirs)
        to = sum(dv(c.get("tenant.%s.count" % d)) or 0 for d in dirs)
        if dv(c.get("tenant.bytes")) != tb or dv(c.get("tenant.count")) != to:
            bad.append("%s: moved %s ops %s, directions add up to %s, %s" % (r.kids[0].all_text(),
                       dv(c.get("tenant.bytes")), dv(c.get("tenant.count")), tb, to))
    t("tenants: moved and ops are the sums of the directions", not bad and rows, *bad)
    if mode == "requests":
        # every attributed byte is a tenant's, a request's without one (r5, finished) or an orphan's
        sums = []
        for d in dirs:
            ten = sum(v[d][0] for _, _, v in got)
            none = sum(info_dir(w, d, "bytes") for w in api["top"]["bytes"] if not w["tenant"])
            orphan = api["attributed"]["orphan_bytes"] if d == "h2d" else 0
            if ten + none + orphan != api["attributed"]["total"][d][0]:
                sums.append("%s: tenants %d + no tenant %d + orphans %d != attributed %d"
                            % (d, ten, none, orphan, api["attributed"]["total"][d][0]))
        t("tenants + requests without one + orphans = attributed, per direction", not sums, *sums)
        t("a tenant name taken by a refused call (an id not in flight), with nothing in the window, has no row",
          "nobody" not in [g[0] for g in got], [g[0] for g in got])
        bolds = [n for n in sec.walk() if n.tag in ("b", "script")]
        t("the hostile tenant name </script><b>&\"' makes no element in the block", not bolds,
          ["<%s>" % n.tag for n in bolds])
        shown = [n.all_text() for n in sec.walk() if n.tag in ("td", "th") and "script" in n.all_text()]
        t("the hostile tenant name shows as text, exactly, in the two top tables and the tenants table (3)",
          shown == [HOSTILE] * 3, shown)
        t("raw report: the hostile name only escaped (&lt;/script&gt;&lt;b&gt;&amp;&quot;&#39;), one <script>",
          text.count("<script") == 1 and "</script><b>" not in text and
          text.count("&lt;/script&gt;&lt;b&gt;&amp;&quot;&#39;") == 3,
          "%d <script, %d escaped" % (text.count("<script"), text.count("&lt;/script&gt;&lt;b&gt;&amp;&quot;&#39;")))
    else:
        t("the top lists keep %d each" % 10, [len(api["top"][b]) for b in ("bytes", "wait")] == [10, 10],
          [len(api["top"][b]) for b in ("bytes", "wait")])
        i = text.index('<section id="requests">')
        n = text.index("</section>", i) + len("</section>") - i
        t("the Requests block is %d bytes <= %d (32 tenants and \"other\", names of 61 quotes, 20-digit "
          "ids, 7 directions)" % (n, BLOCK_MAX), n <= BLOCK_MAX)
    return t.failed


def cmd_errors(t, dom):
    root = parse(dom)
    html = [n for n in root.walk() if n.tag == "html"]
    errs = html[0].attrs.get("data-js-errors") if html else None
    t("no script error in the page (window.onerror saw none)", errs == "0", "data-js-errors=%r" % errs)
    return t.failed


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    cmd = argv[1]
    label = ""
    if cmd == "summary":
        label = argv[4] + ": " if len(argv) > 4 else ""
        return cmd_summary(Tap("html", label), argv[2], argv[3])
    if cmd == "sections":
        label = argv[4] + ": " if len(argv) > 4 else ""
        return cmd_sections(Tap("html", label), argv[2], argv[3])
    if cmd == "odd":
        return cmd_odd(Tap("html"), argv[2], argv[3])
    if cmd == "requests" and len(argv) >= 6:
        label = argv[6] + ": " if len(argv) > 6 else ""
        return cmd_requests(Tap("html", label), argv[2], argv[3], argv[4], argv[5])
    if cmd == "errors":
        label = argv[3] + ": " if len(argv) > 3 else ""
        return cmd_errors(Tap("html", label), argv[2])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
