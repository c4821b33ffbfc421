"""What survives what: runs the programs tests/serving/test_stops.sh built, stops
each one way, and checks what memobs left behind.

    python3 stops_check.py BIN [--tmpfs] [--only REGEX] [--list]

BIN holds the builds (tests/serving/test_stops.sh): stops and stops_ref
(tests/serving/stops/stops.c with memobs, and with -DMEMOBS_DISABLE: the
reference), stops_setsig (-DSTOPS_SET_SIGNALS), stops_asan and stops_tsan,
inst_main with libinst_a.so and libinst_b.so, cuda_stops with the runtime
double libcudart.so.13, libmemobs_preload.so, and py/ (the package memobs
laid out). --tmpfs: this process may mount a small tmpfs (root, in a mount
namespace of its own: test_stops.sh runs it under `unshare -m`).

Every case runs a program with every output variable set (MEMOBS_SUMMARY
with MEMOBS_FORMAT=json, MEMOBS_PROM_FILE, MEMOBS_TIMELINE, MEMOBS_STORMLOG,
MEMOBS_HTML, MEMOBS_LEAKS, MEMOBS_TORCH_SNAPSHOT; MEMOBS_SAMPLE_MS=5,
MEMOBS_PROM_INTERVAL_MS=0 so that the Prometheus file is written at the
end only) into a folder of its own, stops it one way, and finds for each
output: absent ("-"), the previous run's file byte for byte ("prev"), a
file that parses and holds the exact figures the program recorded ("ok"),
or anything else ("BAD: why"). Parsing: json.load for the summary, the
Chrome trace and Stormlog; `promtool check metrics` for Prometheus; the
closing </html> tag; pickle.load for the PyTorch snapshot; the leak
report's first line. Exact figures: bytes and ops of every direction and
phase, live bytes and allocations of every memory kind, the user counter
(summary, Prometheus); copy events and their bytes (trace); live host and
pinned bytes (Stormlog); live allocations and bytes (leaks); live device
blocks and bytes (snapshot). Each case also runs the same program without
memobs (the -DMEMOBS_DISABLE build, Python with a stub module, the
program without LD_PRELOAD), stopped the same way: the exit status or
signal must be the same. And the folder must hold nothing but the
outputs (no temporary left).

Programs signal readiness through a pipe ("ready PID"); the script waits
on it (with generous time limits), never on a sleep. Prints one TAP line
per case, then the table of cases by output.
"""
import json
import os
import pickle
import re
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import time

SUITE = "stops"
LIMIT = 120  # seconds: a bound on every wait, never a synchronisation
OUTPUTS = (  # (column, variable, file name)
    ("summary", "MEMOBS_SUMMARY", "summary.json"),
    ("prom", "MEMOBS_PROM_FILE", "metrics.prom"),
    ("trace", "MEMOBS_TIMELINE", "trace.json"),
    ("stormlog", "MEMOBS_STORMLOG", "stormlog.json"),
    ("html", "MEMOBS_HTML", "report.html"),
    ("leaks", "MEMOBS_LEAKS", "leaks.txt"),
    ("torch", "MEMOBS_TORCH_SNAPSHOT", "snapshot.pickle"),
)
COLS = [o[0] for o in OUTPUTS]
FILE = {o[0]: o[2] for o in OUTPUTS}
SIGNAME = {s: s.name for s in signal.Signals}

# ---------------------------------------------------------------------------
# Figures: what a program recorded
# ---------------------------------------------------------------------------


def figures(threads, iters, counter=True, extra=None, live=None):
    """The six records per iteration of tests/serving/stops/stops.c (and
    stops_py.py), the tracked allocations left live; extra: more
    {(dir, phase): (bytes, ops)}."""
    x = {(d, p): [0, 0] for d in ("h2d", "d2h", "d2d") for p in ("prefill", "decode", "unphased")}

    def add(key, b, n):
        x[key][0] += b
        x[key][1] += n
    for t in range(threads):
        add(("h2d", "prefill"), (4096 + t) * iters, iters)
        add(("h2d", "decode"), 1024 * iters, iters)
        add(("d2h", "prefill"), 512 * iters, iters)
        add(("d2h", "decode"), (2048 + t) * iters, iters)
        add(("d2d", "decode"), 256 * iters, iters)
        add(("d2d", "unphased"), (64 + t) * iters, iters)
    for k, (b, n) in (extra or {}).items():
        add(k, b, n)
    if live is None:
        dev = [(1 << 20) + 4096 * i for i in range(0, 48, 2)]
        host = [4096 * (i + 1) for i in range(32) if i % 4]
        live = {"device": (sum(dev), len(dev)), "host": (sum(host), len(host)), "pinned": (65536 * 8, 8)}
    return {"xfer": {k: tuple(v) for k, v in x.items()}, "live": live,
            "counter": ("stops_steps", threads * iters) if counter is True else counter}


C_FIG = figures(4, 1000)
BIG_FIG = figures(4, 1000, extra={("h2d", "unphased"): (4200 * 1024, 4200 * 1024)})
CHILD_FIG = figures(4, 1000, extra={("h2d", "prefill"): (1000, 1000)})
PY_FIG = figures(2, 500, counter=None)
CUDA_FIG = {"xfer": {("h2d", "unphased"): (4096 * 200 + 4097 * 200, 400), ("d2h", "unphased"): (2048 * 200 + 2049 * 200, 400),
                     ("d2d", "unphased"): (256 * 400, 400)},
            "live": {"device": (sum((1 << 20) + 4096 * i for i in range(24)) + 4 * 8192, 28), "pinned": (8 * 65536, 8)},
            "counter": None}


def inst_fig(w):
    return {"xfer": {("h2d", "prefill"): (100 * 1000 * w, 100)}, "live": {"device": (w << 20, 1)},
            "counter": ("stops_steps", 10 * w)}


def xfer_all(fig):
    """Every (dir, phase) with zeros where the figures have none."""
    return {(d, p): fig["xfer"].get((d, p), (0, 0)) for d in ("h2d", "d2h", "d2d")
            for p in ("prefill", "decode", "unphased")}


def live_all(fig):
    return {k: fig["live"].get(k, (0, 0)) for k in ("device", "host", "pinned", "managed")}


# ---------------------------------------------------------------------------
# Output checkers: (path, fig, pid) -> None if it holds fig (and, where
# the format carries one, the pid), else why not. Each raises on a file
# that does not parse.
# ---------------------------------------------------------------------------


def diff(what, want, got):
    return None if want == got else "%s: expected %s, got %s" % (what, want, got)


def first(*whys):
    return next((w for w in whys if w), None)


def check_summary(path, fig, pid):
    with open(path, "rb") as f:
        s = json.loads(f.read().decode("utf-8"))
    whys = [diff("identity.pid", pid, s["identity"]["pid"]) if pid else None]
    for (d, p), (b, n) in xfer_all(fig).items():
        whys.append(diff("%s %s bytes" % (p, d), b, s[p]["%s_bytes" % d]))
        whys.append(diff("%s %s ops" % (p, d), n, s[p]["%s_count" % d]))
    for k, (b, n) in live_all(fig).items():
        whys.append(diff("%s live bytes" % k, b, s["memory"][k]["current_bytes"]))
        whys.append(diff("%s live allocations" % k, n, s["memory"][k]["live"]))
    if fig["counter"]:
        whys.append(diff("counter " + fig["counter"][0], fig["counter"][1], s["counters"].get(fig["counter"][0])))
    return first(*whys)


PROM_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
PROM_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def check_prom(path, fig, pid):
    with open(path, "rb") as f:
        text = f.read()
    p = subprocess.run(["promtool", "check", "metrics"], input=text, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=LIMIT)
    if p.returncode != 0:
        raise ValueError("promtool check metrics: " + p.stdout.decode(errors="replace").strip()[:300])
    text = text.decode("utf-8")
    if not text.endswith("\n"):
        raise ValueError("no final newline")
    got = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = PROM_LINE.match(line)
        if not m:
            raise ValueError("not a sample: %r" % line[:120])
        labels = dict(PROM_LABEL.findall(m.group(2) or ""))
        got[(m.group(1), labels.get("direction"), labels.get("phase"), labels.get("kind"))] = float(m.group(3))
    whys = []
    for (d, ph), (b, n) in xfer_all(fig).items():
        whys.append(diff("memobs_transfer_bytes_total %s %s" % (d, ph), b,
                         got.get(("memobs_transfer_bytes_total", d, ph, None))))
        whys.append(diff("memobs_transfer_ops_total %s %s" % (d, ph), n,
                         got.get(("memobs_transfer_ops_total", d, ph, None))))
    for k, (b, n) in live_all(fig).items():
        whys.append(diff("memobs_tracked_bytes %s" % k, b, got.get(("memobs_tracked_bytes", None, None, k))))
        whys.append(diff("memobs_tracked_live_allocations %s" % k, n,
                         got.get(("memobs_tracked_live_allocations", None, None, k))))
    if fig["counter"]:
        name = "memobs_user_%s_total" % fig["counter"][0]
        whys.append(diff(name, fig["counter"][1], got.get((name, None, None, None))))
    return first(*whys)


def check_trace(path, fig, pid):
    with open(path, "rb") as f:
        doc = json.loads(f.read().decode("utf-8"))
    ev, other = doc["traceEvents"], doc["otherData"]
    pids = sorted({e.get("pid") for e in ev})
    if pid and pids != [pid]:
        return "pids of the events: expected [%d], got %s" % (pid, pids[:5])
    if other.get("dropped"):
        return None  # a full timeline (the 4M-event run): parsing is the check
    got = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") == "copy":
            d, p = e["name"].lower().split()
            b, n = got.get((d, p), (0, 0))
            got[(d, p)] = (b + e["args"]["bytes"], n + 1)
    want = {k: v for k, v in xfer_all(fig).items() if v != (0, 0)}
    if want == got:
        return None
    lost = sum(n for _, n in want.values()) - sum(n for _, n in got.values())
    return "%d copy events missing (otherData: recorded %s, dropped %s); (bytes, events) by direction and phase: " \
        "expected %s, got %s" % (lost, other.get("recorded"), other.get("dropped"), want, got)


def check_stormlog(path, fig, pid):
    """The last sample's tracked bytes: a host series (source host) or a
    GPU process's (source cuda: device, and the host's pinned)."""
    with open(path, "rb") as f:
        doc = json.loads(f.read().decode("utf-8"))
    if not doc or any(e.get("schema_version") != 2 for e in doc):
        return "no sample, or not schema v2: %d events" % len(doc)
    pids = sorted({e.get("pid") for e in doc})
    if pid and pids != [pid]:
        return "pids of the samples: expected [%d], got %s" % (pid, pids[:5])
    # the newest sample (the one at the write); samples of two threads may
    # be pushed out of order; the "transfers" event after them is no sample
    samples = [e for e in doc if e.get("event_type") == "sample"]
    if not samples:
        return "no sample event among %d events" % len(doc)
    m, lv = max(samples, key=lambda e: e.get("timestamp_ns", 0))["metadata"], live_all(fig)
    if m.get("source") == "cuda":
        return first(diff("last sample's tracked_bytes (device)", lv["device"][0], m.get("tracked_bytes")),
                     diff("last sample's host_tracked_pinned_bytes", lv["pinned"][0],
                          m.get("host_tracked_pinned_bytes")))
    return first(diff("last sample's tracked_host_bytes", lv["host"][0], m.get("tracked_host_bytes")),
                 diff("last sample's tracked_pinned_bytes", lv["pinned"][0], m.get("tracked_pinned_bytes")))


def check_html(path, fig, pid):
    """A whole page; its machine-readable cells (data-memobs, data-v)."""
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")
    if not text.startswith("<!DOCTYPE html>") or not text.rstrip().endswith("</html>"):
        raise ValueError("not a whole HTML page (%d bytes, ends %r)" % (len(text), text[-40:]))
    v = dict(re.findall(r'data-memobs="([a-z_.0-9]+)" data-v="(\d+)"', text))
    whys = [diff("identity.pid", pid, int(v.get("identity.pid", -1))) if pid else None]
    for (d, p), (b, n) in xfer_all(fig).items():
        whys.append(diff("%s.%s.bytes" % (d, p), b, int(v.get("%s.%s.bytes" % (d, p), -1))))
        whys.append(diff("%s.%s.count" % (d, p), n, int(v.get("%s.%s.count" % (d, p), -1))))
    for k, (b, n) in live_all(fig).items():
        whys.append(diff("memory.%s.current_bytes" % k, b, int(v.get("memory.%s.current_bytes" % k, -1))))
        whys.append(diff("memory.%s.live" % k, n, int(v.get("memory.%s.live" % k, -1))))
    return first(*whys)


def check_leaks(path, fig, pid):
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")
    m = re.search(r"pid (\d+): (\d+) allocations? still live, (\d+) bytes", text)
    if not m or not text.endswith("\n"):
        raise ValueError("no leak report line: %r" % text[:120])
    lv = live_all(fig).values()
    return first(diff("pid", pid, int(m.group(1))) if pid else None,
                 diff("live allocations, bytes", (sum(n for _, n in lv), sum(b for b, _ in lv)),
                      (int(m.group(2)), int(m.group(3)))))


def check_torch(path, fig, pid):
    with open(path, "rb") as f:
        snap = pickle.load(f)
    segs = snap["segments"]
    return diff("live device blocks, bytes", live_all(fig)["device"][::-1],
                (len(segs), sum(s["total_size"] for s in segs)))


CHECK = {"summary": check_summary, "prom": check_prom, "trace": check_trace, "stormlog": check_stormlog,
         "html": check_html, "leaks": check_leaks, "torch": check_torch}


def state(col, path, figs, prev=None, pids=None):
    """'-', 'prev', the label of the first (label, fig[, role]) of figs the
    file holds, or 'BAD: why'. fig None: parsing is the check. role: the
    key in pids of the process that should have written it ("main" when
    not given); the pid is checked where the format carries one."""
    if not os.path.lexists(path):
        return "-"
    if not os.path.isfile(path) or os.path.islink(path):
        return "BAD: not a regular file"
    with open(path, "rb") as f:
        data = f.read()
    if prev is not None and data == prev:
        return "prev"
    whys = []
    for entry in figs:
        label, fig, role = (tuple(entry) + ("main",))[:3]
        pid = (pids or {}).get(role)
        try:
            why = CHECK[col](path, fig or C_FIG, pid)
        except Exception as e:  # noqa: BLE001 - a file that does not parse is the finding
            return "BAD: %d bytes, does not parse: %s" % (len(data), str(e)[:200])
        if why is None or fig is None:
            return label
        whys.append(why)
    return "BAD: " + "; ".join(whys)


# ---------------------------------------------------------------------------
# Running a program
# ---------------------------------------------------------------------------


class Failure(Exception):
    pass


def child_setup():
    """In the child before exec: default dispositions and an empty mask
    whatever the caller's shell did (a background job ignores SIGINT), and
    no core files (SIGQUIT, SIGSEGV, SIGABRT would write them here)."""
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE):
        signal.signal(s, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


class Run:
    """A program with a ready pipe (STOPS_READY_FD) and a go pipe
    (STOPS_GO_FD: the program reads it to its end)."""

    def __init__(self, argv, env, cwd, err, stdout=subprocess.DEVNULL):
        self.rfd, w = os.pipe()
        gr, self.gw = os.pipe()
        env = dict(env, STOPS_READY_FD=str(w), STOPS_GO_FD=str(gr))
        try:
            with open(err, "wb") as ef:
                self.p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=stdout,
                                          stderr=ef, pass_fds=(w, gr), preexec_fn=child_setup)
        except OSError as e:
            for fd in (self.rfd, w, gr, self.gw):
                os.close(fd)
            raise Failure("cannot start %s: %s" % (argv[0], e))
        finally:
            if hasattr(self, "p"):
                os.close(w)
                os.close(gr)
        self.buf = b""
        self.lines = []

    def _read(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([self.rfd], [], [], left)[0]:
            return None
        data = os.read(self.rfd, 4096)
        if not data:
            return b""
        self.buf += data
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            self.lines.append(line.decode())
        return data

    def expect(self, word, limit=LIMIT):
        """The pid of the first line "WORD PID" (waits for it)."""
        deadline = time.monotonic() + limit
        while True:
            for line in self.lines:
                if line.split()[0] == word:
                    return int(line.split()[1])
            got = self._read(deadline)
            if got is None:
                raise Failure("no '%s' from the program in %d s" % (word, limit))
            if got == b"":
                raise Failure("the program ended (status %s) before saying '%s'" % (self.p.poll(), word))

    def eof(self, limit=LIMIT):
        """Waits until every process holding the ready pipe has ended."""
        deadline = time.monotonic() + limit
        while True:
            got = self._read(deadline)
            if got is None:
                raise Failure("a process of the run still holds the ready pipe after %d s" % limit)
            if got == b"":
                return

    def pids(self):
        """main: the process started; child: the one that said "child PID"."""
        out = {"main": self.p.pid}
        for line in self.lines:
            if line.split()[0] == "child":
                out["child"] = int(line.split()[1])
        return out

    def go(self):
        if self.gw >= 0:
            os.close(self.gw)
            self.gw = -1

    def kill(self, sig):
        os.kill(self.p.pid, sig)

    def wait(self, limit=LIMIT):
        try:
            return self.p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise Failure("still running after %d s (killed): a hang" % limit)

    def close(self):
        self.go()
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        os.close(self.rfd)


def status_text(rc):
    if rc is None:
        return "?"
    if isinstance(rc, str):
        return rc
    return "killed by %s" % SIGNAME.get(-rc, -rc) if rc < 0 else "exit %d" % rc


# Drives: what the script does to a Run; each returns the exit status
# (Popen's: negative for a signal).
def ends_itself(r):
    return r.wait()


def signal_after_ready(sig):
    def drive(r):
        r.expect("ready")
        r.kill(sig)
        return r.wait()
    drive.__name__ = "signal"
    return drive


def fork_drive(r):
    r.expect("ready")
    r.expect("child")
    r.go()
    rc = r.wait()
    r.eof()  # the child has ended too
    return rc


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------


class Case:
    def __init__(self, label, argv, ref, drive=ends_itself, want=None, figs=None, env=None, ref_env=None):
        self.label, self.argv, self.ref, self.drive = label, argv, ref, drive
        self.want = want or {c: {"ok"} for c in COLS}
        self.figs = figs or [("ok", C_FIG)]
        self.env, self.ref_env = env or {}, ref_env or {}


ALL = {"ok"}
NONE = {"-"}


def want_all(**over):
    w = {c: set(ALL) for c in COLS}
    w.update({k: v for k, v in over.items()})
    return w


def want_none():
    return {c: set(NONE) for c in COLS}


def want_whole():
    """Records under way: every output whole (figures not fixed)."""
    return {c: {"whole"} for c in COLS}


def want_each():
    """A handler of the program's that ends the process at once (_exit)
    runs without waiting for memobs' write: each output is there with its
    figures, or absent; never torn."""
    return {c: {"ok", "-"} for c in COLS}


def want_crash():
    """A crash: at least the summary and Prometheus; any other output
    written must be whole."""
    return want_all(**{c: {"ok", "-"} for c in COLS if c not in ("summary", "prom")})


class Suite:
    def __init__(self, binp, tmpfs, only):
        self.bin, self.tmpfs, self.only = binp, tmpfs, only
        self.work = os.path.join(binp, "cases")
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        self.rows = []
        self.failed = 0
        self.notes = []
        base = {k: v for k, v in os.environ.items() if not k.startswith(("MEMOBS", "STOPS_", "LD_PRELOAD"))}
        self.base = dict(base, MEMOBS_FORMAT="json", MEMOBS_SAMPLE_MS="5", MEMOBS_PROM_INTERVAL_MS="0")

    def b(self, name):
        return os.path.join(self.bin, name)

    def out_env(self, d, names=None):
        names = names or FILE
        return {var: os.path.join(d, names[col]) for col, var, _ in OUTPUTS}

    def report(self, label, ok, details):
        print("%sok - %s: %s" % ("" if ok else "not ", SUITE, label))
        if not ok:
            self.failed += 1
            for line in details:
                for part in str(line).splitlines()[:12]:
                    print("    # " + part)
        sys.stdout.flush()

    def slug(self, label):
        return re.sub(r"[^A-Za-z0-9]+", "_", label).strip("_")[:60]

    def run_once(self, argv, env, d, err, drive):
        """The exit status (or "FAILED: why"); self.pids: the run's pids."""
        self.pids = {}
        try:
            r = Run(argv, env, d, err)
        except Failure as e:
            return "FAILED: %s" % e
        try:
            return drive(r)
        except Failure as e:
            return "FAILED: %s" % e
        finally:
            self.pids = r.pids()
            r.close()

    def ref_status(self, case, slug):
        """The exit status of the program without memobs, stopped the same way."""
        d = os.path.join(self.work, slug + ".ref")
        os.makedirs(d)
        env = dict(self.base, **case.ref_env)
        env.update(self.out_env(d))
        return self.run_once(case.ref, env, d, d + ".err", case.drive)

    def case(self, case):
        if self.only and not re.search(self.only, case.label):
            return
        slug = self.slug(case.label)
        d = os.path.join(self.work, slug)
        os.makedirs(d)
        err = d + ".err"
        missing = [a for a in case.argv[:1] if not os.path.exists(a)]
        if missing:
            self.report(case.label, False, ["not built: %s (see the build log)" % missing[0]])
            self.rows.append((case.label, {c: "?" for c in COLS}, "not built", "", ""))
            return
        env = dict(self.base, **self.out_env(d))
        env.update(case.env)
        rc = self.run_once(case.argv, env, d, err, case.drive)
        pids = self.pids
        ref = self.ref_status(case, slug)
        details = []
        got = {}
        for col in COLS:
            path = os.path.join(d, FILE[col])
            got[col] = state(col, path, case.figs, None, pids)
            if got[col] not in case.want[col]:
                details.append("%s: expected %s, got %s" % (col, " or ".join(sorted(case.want[col])), got[col]))
        if rc != ref:
            details.append("status: %s, without memobs %s" % (status_text(rc), status_text(ref)))
        extra = sorted(set(os.listdir(d)) - set(FILE.values()))
        if extra:
            details.append("left in the folder: %s" % ", ".join(extra))
        if details:
            with open(err, "rb") as f:
                e = f.read().decode(errors="replace").strip()
            if e:
                details.append("stderr: " + e[-600:])
        self.report(case.label, not details, details)
        self.rows.append((case.label, got, status_text(rc), status_text(ref),
                          ", ".join(extra) if extra else "none"))

    # A row of its own (fork with %p, instances): cells given
    def row(self, label, cells, rc, ref, left, details):
        self.report(label, not details, details)
        self.rows.append((label, cells, status_text(rc), status_text(ref), left))

    def table(self):
        w = max(len(r[0]) for r in self.rows) if self.rows else 10
        cw = 8
        print("\nWhat survives what (cells: ok = parses, exact figures and pid; whole = parses; prev = the previous file "
              "byte for byte; - = absent)")
        print("%-*s %s  %-22s %-22s %s" % (w, "case", " ".join("%-*s" % (cw, c) for c in COLS), "status",
                                           "without memobs", "left behind"))
        for r in self.rows:
            cells = " ".join("%-*s" % (cw, (r[1].get(c, "") if not r[1].get(c, "").startswith("BAD") else "BAD"))
                             for c in COLS)
            print("%-*s %s  %-22s %-22s %s" % (w, r[0], cells, r[2][:22], r[3][:22], r[4]))
        for n in self.notes:
            print("note: " + n)


# ---------------------------------------------------------------------------
# The special cases
# ---------------------------------------------------------------------------


def previous_from_run(suite, d, argv, figs_env=None):
    """Fills d with a whole run's outputs (stops return) and returns their
    bytes: the previous files a later run must not destroy."""
    env = dict(suite.base, **suite.out_env(d))
    rc = suite.run_once(argv, env, d, d + ".prev.err", ends_itself)
    prev = {}
    for col in COLS:
        p = os.path.join(d, FILE[col])
        if os.path.isfile(p):
            with open(p, "rb") as f:
                prev[col] = f.read()
    if rc != 0 or len(prev) != len(COLS):
        raise Failure("the run making the previous files: %s, %d of %d outputs" % (status_text(rc), len(prev),
                                                                                   len(COLS)))
    return prev


BIG_WRITE = 4 << 20  # bytes: only the 4M-event trace grows past this (the other outputs stay under 3 MB)


def writing_big(pid, d):
    """How the process is writing a file of folder d past BIG_WRITE bytes
    (its path, a named temporary, or an O_TMPFILE file: /proc/PID/fd
    shows each, the last as "d/#INODE (deleted)"), or None."""
    fds = "/proc/%d/fd" % pid
    try:
        names = os.listdir(fds)
    except OSError:
        return None
    for n in names:
        try:
            target = os.readlink(os.path.join(fds, n))
            size = os.stat(os.path.join(fds, n)).st_size
        except OSError:
            continue
        if target.startswith(d + "/") and size >= BIG_WRITE:
            return "fd %s open on %s, %d bytes written" % (n, target[len(d) + 1:], size)
    return None


def midwrite_case(suite):
    """SIGKILL while memobs writes a 4M-event trace at exit: the previous
    files survive whole, no output is half-written, nothing is left."""
    label = "C, SIGKILL while the 4M-event trace is written at exit"
    if suite.only and not re.search(suite.only, label):
        return
    d = os.path.join(suite.work, suite.slug(label))
    os.makedirs(d)
    details, got, how = [], {c: "?" for c in COLS}, "?"
    rc = "?"
    try:
        prev = previous_from_run(suite, d, [suite.b("stops"), "return"])
        env = dict(suite.base, **suite.out_env(d))
        env["MEMOBS_TIMELINE_EVENTS"] = "4M"
        r = Run([suite.b("stops"), "big"], env, d, d + ".err")
        try:
            r.expect("exiting")
            deadline = time.monotonic() + LIMIT
            while True:
                if r.p.poll() is not None:
                    raise Failure("the program ended (%s) before its trace was seen being written"
                                  % status_text(r.p.returncode))
                how = writing_big(r.p.pid, d)
                if how:
                    break
                if time.monotonic() > deadline:
                    raise Failure("the trace write was not seen under way in %d s" % LIMIT)
                time.sleep(0.0005)  # polling the process' open files: the condition is their state
            r.kill(signal.SIGKILL)
            rc = r.wait()
        finally:
            pids = r.pids()
            r.close()
        if rc != -signal.SIGKILL:
            details.append("status: %s, expected killed by SIGKILL" % status_text(rc))
        for col in COLS:
            got[col] = state(col, os.path.join(d, FILE[col]), [("ok", BIG_FIG)], prev.get(col), pids)
        if got["trace"] != "prev":
            details.append("trace: expected prev (the previous file byte for byte), got %s" % got["trace"])
        for col in COLS:
            if col != "trace" and got[col] not in ("prev", "ok"):
                details.append("%s: expected prev or ok (a whole new file), got %s" % (col, got[col]))
        left = sorted(set(os.listdir(d)) - set(FILE.values()))
        if left:
            details.append("left in the folder: %s" % ", ".join(left))
        if details:
            details.append("killed when: " + how)
        else:
            suite.notes.append("SIGKILL mid-write: killed when " + how)
    except Failure as e:
        details.append(str(e))
        left = []
    suite.report(label, not details, details)
    suite.rows.append((label, got, status_text(rc), "killed by SIGKILL", ", ".join(left) if left else "none"))


def full_device_case(suite):
    """Every output path is a character device like /dev/full (major 1,
    minor 7; made here with mknod, so that a writer that replaced its
    path by rename would replace our node, not the system's): every write
    fails with ENOSPC; the program's status is unchanged, the nodes stay
    devices, nothing is left."""
    label = "C, every output on a full device (/dev/full: mknod c 1 7)"
    if suite.only and not re.search(suite.only, label):
        return
    d = os.path.join(suite.work, suite.slug(label))
    os.makedirs(d)
    names = {c: "full_" + c for c in COLS}
    try:
        for n in names.values():
            os.mknod(os.path.join(d, n), 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    except OSError as e:
        suite.notes.append("full device case not run: mknod: %s (needs CAP_MKNOD)" % e)
        print("ok - %s: %s # SKIP mknod: %s" % (SUITE, label, e))
        return
    env = dict(suite.base, **suite.out_env(d, names))
    rc = suite.run_once([suite.b("stops"), "return"], env, d, d + ".err", ends_itself)
    ref = suite.run_once([suite.b("stops_ref"), "return"], env, d, d + ".ref.err", ends_itself)
    details = []
    cells = {}
    for c, n in names.items():
        s = os.lstat(os.path.join(d, n))
        dev = stat.S_ISCHR(s.st_mode) and s.st_rdev == os.makedev(1, 7)
        cells[c] = "-" if dev else "BAD"
        if not dev:
            details.append("%s: %s is no longer the device (replaced by a file?)" % (c, n))
    if rc != ref:
        details.append("status: %s, without memobs %s" % (status_text(rc), status_text(ref)))
    left = sorted(set(os.listdir(d)) - set(names.values()))
    if left:
        details.append("left in the folder: %s" % ", ".join(left))
    with open(d + ".err", "rb") as f:
        e = f.read().decode(errors="replace")
    warned = sum(1 for c, v, _ in OUTPUTS if names[c] in e)
    suite.notes.append("full device: %d of 7 outputs named in a warning on stderr" % warned)
    if details:
        details.append("stderr: " + e[-600:])
    suite.row(label, cells, rc, ref, ", ".join(left) if left else "none", details)


def full_tmpfs_case(suite):
    """A 64 KiB tmpfs holding the previous outputs and a filler up to its
    last byte: every write fails; the previous files survive byte for
    byte, nothing is left, the status is unchanged."""
    label = "C, a full disk (64 KiB tmpfs, filled)"
    if suite.only and not re.search(suite.only, label):
        return
    if not suite.tmpfs:
        suite.notes.append("full tmpfs case not run: not root (or no mount namespace); the full device case stands "
                           "for it")
        return
    d = os.path.join(suite.work, suite.slug(label))
    os.makedirs(d)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "stops_full", d], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    if p.returncode != 0:
        suite.notes.append("full tmpfs case not run: mount: %s" % p.stdout.decode(errors="replace").strip())
        return
    try:
        prev = {}
        for c in COLS:
            prev[c] = ("previous %s file\n" % c).encode()
            with open(os.path.join(d, FILE[c]), "wb") as f:
                f.write(prev[c])
        fd = os.open(os.path.join(d, "filler"), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            for n in (4096, 1):  # pages, then the last bytes
                try:
                    while os.write(fd, b"\0" * n) == n:
                        pass
                except OSError:
                    pass
        finally:
            os.close(fd)
        prev["keep"] = ["filler"]
        case = Case(label, [suite.b("stops"), "return"], [suite.b("stops_ref"), "return"],
                    want={c: {"prev", "ok"} for c in COLS})
        run_in(suite, case, d, prev)
    finally:
        subprocess.run(["umount", d])


def run_in(suite, case, d, prev):
    """Suite.case for a folder made already (the tmpfs mount point)."""
    err = d + ".err"
    env = dict(suite.base, **suite.out_env(d))
    rc = suite.run_once(case.argv, env, d, err, case.drive)
    pids = suite.pids
    ref = suite.ref_status(case, suite.slug(case.label))
    details, got = [], {}
    for col in COLS:
        got[col] = state(col, os.path.join(d, FILE[col]), case.figs, prev.get(col), pids)
        if got[col] not in case.want[col]:
            details.append("%s: expected %s, got %s" % (col, " or ".join(sorted(case.want[col])), got[col]))
    if rc != ref:
        details.append("status: %s, without memobs %s" % (status_text(rc), status_text(ref)))
    extra = sorted(set(os.listdir(d)) - set(FILE.values()) - set(prev.get("keep", ())))
    if extra:
        details.append("left in the folder: %s" % ", ".join(extra))
    suite.row(case.label, got, rc, ref, ", ".join(extra) if extra else "none", details)


def stdout_case(suite):
    """MEMOBS_SUMMARY=stdout into a pipe whose reader has gone (`| head
    -1`): status 0, the other outputs written."""
    label = "C, MEMOBS_SUMMARY=stdout into a closed pipe (| head -1)"
    if suite.only and not re.search(suite.only, label):
        return
    d = os.path.join(suite.work, suite.slug(label))
    os.makedirs(d)

    def drive(r):
        line = r.p.stdout.readline()
        r.p.stdout.close()  # as head -1 does after its line
        if line != b"hello\n":
            raise Failure("first line %r" % line)
        r.expect("ready")
        r.go()
        return r.wait()

    def one(argv, dd, err):
        env = dict(suite.base, **suite.out_env(dd))
        env["MEMOBS_SUMMARY"] = "stdout"
        try:
            r = Run(argv, env, dd, err, stdout=subprocess.PIPE)
        except Failure as e:
            suite.pids = {}
            return "FAILED: %s" % e
        try:
            return drive(r)
        except Failure as e:
            return "FAILED: %s" % e
        finally:
            suite.pids = r.pids()
            r.close()
    rc = one([suite.b("stops"), "stdout"], d, d + ".err")
    pids = suite.pids
    os.makedirs(d + ".ref")
    ref = one([suite.b("stops_ref"), "stdout"], d + ".ref", d + ".ref.err")
    details, got = [], {"summary": "n/a"}
    for col in COLS[1:]:
        got[col] = state(col, os.path.join(d, FILE[col]), [("ok", C_FIG)], None, pids)
        if got[col] != "ok":
            details.append("%s: expected ok, got %s" % (col, got[col]))
    if rc != ref or rc != 0:
        details.append("status: %s, without memobs %s" % (status_text(rc), status_text(ref)))
    left = sorted(set(os.listdir(d)) - set(FILE.values()))
    if left:
        details.append("left in the folder: %s" % ", ".join(left))
    suite.row(label, got, rc, ref, ", ".join(left) if left else "none", details)


def fork_pid_case(suite):
    """Fork, the child ends after the parent, every path with %p: each
    process writes its own files, each with its own figures."""
    label = "C, fork, child ends after the parent, paths with %p"
    if suite.only and not re.search(suite.only, label):
        return
    d = os.path.join(suite.work, suite.slug(label))
    os.makedirs(d)
    names = {c: FILE[c].replace(".", ".%p.", 1) for c in COLS}
    env = dict(suite.base, **suite.out_env(d, names))
    details, cells = [], {}
    rc, r = "?", None
    try:
        r = Run([suite.b("stops"), "fork-after"], env, d, d + ".err")
        parent = r.expect("ready")
        child = r.expect("child")
        r.go()
        rc = r.wait()
        r.eof()
        for c in COLS:
            pf = os.path.join(d, names[c].replace("%p", str(parent)))
            cf = os.path.join(d, names[c].replace("%p", str(child)))
            pids = {"main": parent, "child": child}
            ps = state(c, pf, [("ok", C_FIG, "main"), ("child's", CHILD_FIG, "child")], None, pids)
            cs = state(c, cf, [("ok", CHILD_FIG, "child"), ("parent's", C_FIG, "main")], None, pids)
            cells[c] = "%s/%s" % (ps, cs) if not (ps.startswith("BAD") or cs.startswith("BAD")) else "BAD"
            if ps != "ok":
                details.append("%s of the parent (%s): expected ok, got %s" % (c, os.path.basename(pf), ps))
            if cs != "ok":
                details.append("%s of the child (%s): expected ok, got %s" % (c, os.path.basename(cf), cs))
        want = {names[c].replace("%p", str(x)) for c in COLS for x in (parent, child)}
        left = sorted(set(os.listdir(d)) - want)
        if left:
            details.append("left in the folder: %s" % ", ".join(left))
    except Failure as e:
        details.append(str(e))
        left = []
    finally:
        if r:
            r.close()
    if rc != 0:
        details.append("status %s, expected exit 0" % status_text(rc))
    suite.row(label, cells, rc, 0, ", ".join(left) if left else "none", details)


EXACT_INST = ("summary", "prom", "html", "leaks", "torch")  # the trace and Stormlog: parsing


def instances_case(suite, end):
    """Two memobs instances in one process (libinst_a.so, libinst_b.so,
    each -DMEMOBS_HIDDEN), the same output variables: no file written by
    both; for each output one file per instance, each whole, the summary
    and Prometheus ones with that instance's figures."""
    label = "C, two instances in one process, %s" % ("return" if end == "return" else "SIGTERM")
    if suite.only and not re.search(suite.only, label):
        return
    d = os.path.join(suite.work, suite.slug(label))
    os.makedirs(d)
    argv = [suite.b("inst_main"), suite.b("libinst_a.so"), suite.b("libinst_b.so"), end]
    drive = ends_itself if end == "return" else signal_after_ready(signal.SIGTERM)
    env = dict(suite.base, **suite.out_env(d))
    env.pop("MEMOBS_SAMPLE_MS")
    rc = suite.run_once(argv, env, d, d + ".err", drive)
    pids = suite.pids
    ref = -signal.SIGTERM if end != "return" else 0
    details, cells = [], {}
    files = sorted(os.listdir(d))
    stems = {c: FILE[c].split(".")[0] for c in COLS}
    for c in COLS:
        mine = [f for f in files if stems[c] in f]
        figs = [("A", inst_fig(1)), ("B", inst_fig(2))] if c in EXACT_INST else [("ok", None)]
        states = [state(c, os.path.join(d, f), figs, None, pids) for f in mine]
        cells[c] = "+".join(states) if states else "-"
        if end == "return":
            ok = sorted(states) == ["A", "B"] if c in EXACT_INST else states == ["ok", "ok"]
        elif c in EXACT_INST:
            # SIGTERM: the first instance's handler, called by the second's,
            # ends the process once its own write is done: the first
            # instance's files are all there; the second's each whole or absent
            ok = sorted(states) in (["A"], ["A", "B"])
        else:
            ok = states in (["ok"], ["ok", "ok"]) and FILE[c] in mine
        if not ok:
            details.append("%s: expected two files, one per instance, got %s" % (
                c, ", ".join("%s: %s" % (f, s) for f, s in zip(mine, states)) or "none"))
    used = {f for f in files for c in COLS if stems[c] in f}
    left = sorted(set(files) - used)
    if left:
        details.append("left in the folder: %s" % ", ".join(left))
    if rc != ref:
        details.append("status: %s, expected %s" % (status_text(rc), status_text(ref)))
    with open(d + ".err", "rb") as f:
        e = f.read().decode(errors="replace").strip()
    # "says so once": each second name is named on exactly one line
    for c in COLS:
        for f in [f for f in files if stems[c] in f and f != FILE[c]]:
            n = sum(1 for line in e.splitlines() if f in line)
            if n != 1:
                details.append("%s: the second instance's %s is named on %d lines of stderr, expected 1" % (c, f, n))
    if details and e:
        details.append("stderr: " + e[-600:])
    elif e:
        suite.notes.append("two instances (%s), stderr: %s" % (end, e.splitlines()[0][:200]))
    suite.row(label, cells, rc, ref, ", ".join(left) if left else "none", details)


# ---------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------


def c_cases(s):
    st, ref = s.b("stops"), s.b("stops_ref")
    S = signal
    cases = [
        Case("C, return from main", [st, "return"], [ref, "return"]),
        Case("C, exit(5)", [st, "exit"], [ref, "exit"]),
    ]
    for sig in (S.SIGTERM, S.SIGINT, S.SIGHUP):
        cases.append(Case("C, %s, no handler" % sig.name, [st, "wait"], [ref, "wait"], signal_after_ready(sig)))
    # issue 38: SIGQUIT is left alone (its core shows where the program was)
    cases.append(Case("C, SIGQUIT, no handler (left alone by memobs)", [st, "wait"], [ref, "wait"],
                      signal_after_ready(S.SIGQUIT), want=want_none()))
    for sig in (S.SIGTERM, S.SIGINT):
        for h, what, want in (("flag-before", "own handler (flag, then return 0) installed before memobs'",
                               want_all()),
                              ("exit-before", "own handler (_exit(3)) installed before memobs'", want_each()),
                              ("flag-after", "own handler (flag, then return 0) installed after memobs'",
                               want_all()),
                              ("exit-after", "own handler (_exit(3)) installed after memobs' (it replaces memobs')",
                               want_none())):
            cases.append(Case("C, %s, %s" % (sig.name, what), [st, "wait"], [ref, "wait"], signal_after_ready(sig),
                              want=want, env={"STOPS_HANDLER": h}, ref_env={"STOPS_HANDLER": h}))
    cases += [
        Case("C, SIGTERM while 4 threads record", [st, "busy"], [ref, "busy"], signal_after_ready(S.SIGTERM),
             figs=[("whole", None)], want=want_whole()),
        Case("C, SIGINT while 4 threads record, own handler (flag, then return 0) installed before memobs'",
             [st, "busy"], [ref, "busy"], signal_after_ready(S.SIGINT), figs=[("whole", None)], want=want_whole(),
             env={"STOPS_HANDLER": "flag-before"}, ref_env={"STOPS_HANDLER": "flag-before"}),
        Case("C, SIGSEGV (a store through NULL)", [st, "segv"], [ref, "segv"], want=want_crash()),
        Case("C, abort()", [st, "abort"], [ref, "abort"], want=want_crash()),
        Case("C, _exit(6): nothing runs at exit", [st, "_exit"], [ref, "_exit"], want=want_none()),
        Case("C, SIGKILL: nothing can run", [st, "wait"], [ref, "wait"], signal_after_ready(S.SIGKILL),
             want=want_none()),
        Case("C, memobs_flush() then SIGKILL", [st, "flush-wait"], [ref, "flush-wait"],
             signal_after_ready(S.SIGKILL)),
        Case("C, SIGTERM with MEMOBS_SIGNALS=0", [st, "wait"], [ref, "wait"], signal_after_ready(S.SIGTERM),
             want=want_none(), env={"MEMOBS_SIGNALS": "0"}),
        Case("C, SIGTERM after memobs_set_signals(0)", [s.b("stops_setsig"), "wait"], [ref, "wait"],
             signal_after_ready(S.SIGTERM), want=want_none()),
        Case("C, fork, the child ends after the parent", [st, "fork-after"], [ref, "fork-after"], fork_drive,
             figs=[("ok", C_FIG, "main"), ("child's", CHILD_FIG, "child")]),
        Case("C, fork, parent and child end together", [st, "fork-together"], [ref, "fork-together"], fork_drive,
             figs=[("ok", C_FIG, "main"), ("child's", CHILD_FIG, "child")]),
    ]
    return cases


def sanitizer_cases(s, kind):
    st, ref = s.b("stops_" + kind), s.b("stops_ref")
    S = signal
    return [
        Case("C %s, return from main" % kind, [st, "return"], [ref, "return"]),
        Case("C %s, SIGTERM, no handler" % kind, [st, "wait"], [ref, "wait"], signal_after_ready(S.SIGTERM)),
        Case("C %s, SIGINT, own handler (flag) installed before memobs'" % kind, [st, "wait"], [ref, "wait"],
             signal_after_ready(S.SIGINT), env={"STOPS_HANDLER": "flag-before"},
             ref_env={"STOPS_HANDLER": "flag-before"}),
        Case("C %s, SIGHUP, own handler (_exit(3)) installed before memobs'" % kind, [st, "wait"], [ref, "wait"],
             signal_after_ready(S.SIGHUP), want=want_each(), env={"STOPS_HANDLER": "exit-before"},
             ref_env={"STOPS_HANDLER": "exit-before"}),
    ]


def py_cases(s):
    py = sys.executable
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stops_py.py")
    env = {"PYTHONPATH": s.b("py"), "PYTHONDONTWRITEBYTECODE": "1"}
    ref_env = {"STOPS_PY_REF": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    S = signal
    fig = [("ok", PY_FIG)]

    def c(label, end, drive=ends_itself, want=None):
        return Case("Python, " + label, [py, script, end], [py, script, end], drive, want=want, figs=fig, env=env,
                    ref_env=ref_env)
    return [
        c("the script ends", "return"),
        c("Ctrl-C (SIGINT), uncaught KeyboardInterrupt", "wait", signal_after_ready(S.SIGINT)),
        c("SIGTERM, no handler", "wait", signal_after_ready(S.SIGTERM)),
        c("Ctrl-C, KeyboardInterrupt caught, normal end", "caught", signal_after_ready(S.SIGINT)),
        c("SIGTERM, a handler raising SystemExit(0)", "sigterm-exit", signal_after_ready(S.SIGTERM)),
        c("memobs.flush() then SIGKILL", "flush-wait", signal_after_ready(S.SIGKILL)),
        c("os._exit(6): nothing runs at exit", "_exit", want=want_none()),
    ]


def preload_cases(s):
    prog = s.b("cuda_stops")
    env = {"LD_PRELOAD": s.b("libmemobs_preload.so"), "LD_LIBRARY_PATH": s.bin}
    ref_env = {"LD_LIBRARY_PATH": s.bin}
    S = signal
    fig = [("ok", CUDA_FIG)]

    def c(label, end, drive=ends_itself, want=None):
        return Case("preload, " + label, [prog, end], [prog, end], drive, want=want, figs=fig, env=env,
                    ref_env=ref_env)
    return [
        c("return from main", "return"),
        c("SIGTERM", "wait", signal_after_ready(S.SIGTERM)),
        c("SIGINT", "wait", signal_after_ready(S.SIGINT)),
        c("SIGSEGV", "segv", want=want_crash()),
        c("abort()", "abort", want=want_crash()),
    ]


def main(argv):
    binp = os.path.abspath(argv[1])
    tmpfs = "--tmpfs" in argv
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    s = Suite(binp, tmpfs, only)
    t0 = time.monotonic()
    for case in c_cases(s):
        s.case(case)
    midwrite_case(s)
    full_device_case(s)
    full_tmpfs_case(s)
    stdout_case(s)
    fork_pid_case(s)
    instances_case(s, "return")
    instances_case(s, "wait")
    for case in py_cases(s) + preload_cases(s):
        s.case(case)
    for kind in ("asan", "tsan"):
        if os.path.exists(s.b("stops_" + kind)):
            for case in sanitizer_cases(s, kind):
                s.case(case)
        else:
            s.notes.append("no %s build (see the build log)" % kind)
    s.table()
    print("%d cases in %.1f s, %d failed" % (len(s.rows), time.monotonic() - t0, s.failed))
    return 1 if s.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
