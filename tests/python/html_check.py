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
        if k in NOT_IN_JSON:
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
    if cmd == "errors":
        label = argv[3] + ": " if len(argv) > 3 else ""
        return cmd_errors(Tap("html", label), argv[2])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
