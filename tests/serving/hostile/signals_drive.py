#!/usr/bin/env python3
"""tests/serving/hostile/signals_drive.py B SUITE [PART...]

Signals that are not memobs' own (issue 38, items 6 to 11), driven against
the builds tests/serving/test_hostile_signals.sh made in B: signals_host (C99, and
signals_host_asan), libinst_a.so, libinst_b.so and inst_main (two memobs
instances in one process), the Python package in B/py, the LD_PRELOAD
library B/libmemobs_preload.so. Prints "ok - SUITE: ..." / "not ok - SUITE:
..." lines with "    # " details; exits 1 on a failure. Every wait is on a
condition with a generous deadline; the only sleeps are the gaps between
two signals, which are what a case is about.

PART (default all): sigwait dup impatient recover mce overflow instances
python."""
import json
import os
import select
import signal
import subprocess
import sys
import time

B = os.path.abspath(sys.argv[1])
SUITE = sys.argv[2]
PARTS = sys.argv[3:] or ["sigwait", "dup", "impatient", "recover", "mce", "overflow", "instances", "python"]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from tap import Tap  # noqa: E402

TAP = Tap(SUITE)
DEADLINE_S = 60.0  # a failure bound on a busy machine, never an expected time
HOST = os.path.join(B, "signals_host")
RUN = os.path.join(B, "run")


def clean_env(**kw):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMOBS") and k != "LD_PRELOAD"}
    env.update({k: str(v) for k, v in kw.items()})
    return env


def fresh(name):
    d = os.path.join(RUN, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        p = os.path.join(d, f)
        if os.path.isfile(p) or os.path.islink(p) or os.path.exists(p):
            try:
                os.unlink(p)
            except IsADirectoryError:
                pass
    return d


class Proc:
    """A process whose stdout is read line by line against a deadline."""

    def __init__(self, argv, env, cwd, pass_fds=()):
        self.err = open(os.path.join(cwd, "stderr.txt"), "w+")
        self.p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=self.err, pass_fds=pass_fds)
        self.pid = self.p.pid
        self.buf = b""
        self.lines = []
        self.rc = None

    def line(self, prefix, timeout=DEADLINE_S):
        end = time.monotonic() + timeout
        fd = self.p.stdout.fileno()
        while True:
            while b"\n" in self.buf:
                ln, self.buf = self.buf.split(b"\n", 1)
                ln = ln.decode("utf-8", "replace")
                self.lines.append(ln)
                if ln.startswith(prefix):
                    return ln
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            self.buf += chunk

    def alive_after(self, seconds):
        """True when the process is still running seconds from now (the
        measurement itself: it must not end meanwhile)."""
        try:
            self.p.wait(seconds)
            return False
        except subprocess.TimeoutExpired:
            return True

    def wait(self, timeout=DEADLINE_S):
        try:
            self.rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            self.rc = "no exit within %g s (killed)" % timeout
        rest = self.p.stdout.read()
        self.buf += rest or b""
        self.lines += [ln.decode("utf-8", "replace") for ln in self.buf.split(b"\n") if ln]
        self.buf = b""
        self.err.seek(0)
        self.stderr = self.err.read()
        self.err.close()
        return self.rc

    def kill(self, sig):
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            pass

    def tail(self):
        return ["stdout: %s" % self.lines[-6:]] + ["stderr: " + ln for ln in self.stderr.strip().splitlines()[-6:]]


def rc_name(rc):
    if isinstance(rc, int) and rc < 0:
        return "killed by %s" % signal.Signals(-rc).name
    return "exit %s" % rc


# ---- the outputs ------------------------------------------------------------

def check_summary(path, problems, h2d=3000):
    try:
        s = json.load(open(path))
    except Exception as e:  # noqa: BLE001 (any failure to read is the finding)
        problems.append("summary %s: %s" % (os.path.basename(path), e))
        return None
    if s.get("total", {}).get("h2d_bytes") != h2d:
        problems.append("summary %s: total.h2d_bytes expected %s, got %s"
                        % (os.path.basename(path), h2d, s.get("total", {}).get("h2d_bytes")))
    return s


def check_outputs(d, problems, names):
    for f in names:
        p = os.path.join(d, f)
        if not os.path.exists(p):
            problems.append("%s: missing" % f)
            continue
        text = open(p, "rb").read().decode("utf-8", "replace")
        if f.endswith(".json"):
            try:
                json.loads(text)
            except ValueError as e:
                problems.append("%s: not JSON (%s), %d bytes" % (f, e, len(text)))
        elif f.endswith(".prom"):
            if "memobs_transfer_bytes_total" not in text or not text.endswith("\n"):
                problems.append("%s: not a whole Prometheus file (%d bytes)" % (f, len(text)))
        elif f.endswith(".html"):
            if "</html>" not in text:
                problems.append("%s: not a whole HTML report (%d bytes)" % (f, len(text)))
        elif f.endswith(".txt"):
            if "signals_block" not in text:
                problems.append("%s: the leak report lacks signals_block (%d bytes)" % (f, len(text)))
    left = [f for f in os.listdir(d) if ".tmp" in f or ".crash." in f]
    if left:
        problems.append("temporaries left: %s" % left)


ALL = ["summary.json", "m.prom", "trace.json", "report.html", "leaks.txt"]


def all_outputs_env(d, **kw):
    return clean_env(MEMOBS_FORMAT="json", MEMOBS_SUMMARY=os.path.join(d, "summary.json"),
                     MEMOBS_PROM_FILE=os.path.join(d, "m.prom"), MEMOBS_TIMELINE=os.path.join(d, "trace.json"),
                     MEMOBS_HTML=os.path.join(d, "report.html"), MEMOBS_LEAKS=os.path.join(d, "leaks.txt"), **kw)


# ---- item 6: a sigwait server ----------------------------------------------

def sigwait_case(signals_env):
    name = "6: a sigwait server (TERM/INT/HUP/USR1 blocked in main, its thread sigwaits; MEMOBS_PROM_FILE every " \
           "100 ms, the sampler every 5 ms%s): its thread gets SIGHUP twice and SIGTERM, prints its lines, returns 0; " \
           "3 runs" % (", MEMOBS_SIGNALS=0" if signals_env else "")
    problems = []
    for run in range(3):
        d = fresh("sigwait%s" % ("-off" if signals_env else ""))
        env = clean_env(MEMOBS_FORMAT="json", MEMOBS_SUMMARY=os.path.join(d, "summary.json"),
                        MEMOBS_PROM_FILE=os.path.join(d, "m.prom"), MEMOBS_PROM_INTERVAL_MS=100, MEMOBS_SAMPLE_MS=5)
        if signals_env:
            env["MEMOBS_SIGNALS"] = "0"
        p = Proc([HOST, "sigwait"], env, d)
        got = []
        if p.line("ready") is None:
            problems.append("run %d: no 'ready' line" % run)
        else:
            # the periodic writer has run (so its thread exists) before the signals go
            end = time.monotonic() + DEADLINE_S
            while not os.path.exists(os.path.join(d, "m.prom")) and time.monotonic() < end:
                time.sleep(0.005)
            for k, (sig, want) in enumerate(((signal.SIGHUP, "reload 1"), (signal.SIGHUP, "reload 2"),
                                             (signal.SIGTERM, "term"))):
                p.kill(sig)
                ln = p.line(want.split()[0], timeout=20)
                got.append(ln)
                if ln != want:
                    break
        rc = p.wait()
        want = ["reload 1", "reload 2", "term"]
        if got != want or rc != 0:
            problems.append("run %d: expected the lines %s and exit 0, got %s and %s" % (run, want, got, rc_name(rc)))
            problems += p.tail()
        elif not signals_env:
            check_summary(os.path.join(d, "summary.json"), problems)
        if problems:
            break
    TAP(name, not problems, *problems)


# ---- item 8: a forwarded duplicate stop -------------------------------------

def dup_case(first, second, gap_ms, runs=3):
    name = "8: %s then %s %d ms later (a forwarded duplicate): every output (summary, Prometheus, timeline, HTML, " \
           "leaks) whole, the process ends by %s; %d runs" % (first.name, second.name, gap_ms, first.name, runs)
    problems = []
    for run in range(runs):
        d = fresh("dup")
        p = Proc([HOST, "wait"], all_outputs_env(d, TIMELINE_N=60000, MEMOBS_TIMELINE_EVENTS=262144), d)
        if p.line("ready") is None:
            problems.append("run %d: no 'ready' line" % run)
            p.kill(signal.SIGKILL)
        else:
            p.kill(first)
            time.sleep(gap_ms / 1000.0)  # the gap under test
            p.kill(second)
        rc = p.wait()
        if rc != -first:
            problems.append("run %d: expected death by %s, got %s" % (run, first.name, rc_name(rc)))
        check_outputs(d, problems, ALL)
        if problems:
            problems.insert(0, "run %d of %d" % (run + 1, runs))
            problems += p.tail()
            break
    TAP(name, not problems, *problems)


def stalled(name):
    """A process whose timeline goes to a FIFO the driver holds open and
    never reads: its stop's write never ends."""
    d = fresh(name)
    fifo = os.path.join(d, "trace.fifo")
    os.mkfifo(fifo)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    env = clean_env(MEMOBS_FORMAT="json", MEMOBS_TIMELINE=fifo, TIMELINE_N=20000)
    p = Proc([HOST, "wait"], env, d)
    return p, rfd


def stalled_sent(p, sig):
    """Waits until sig left the pending sets (the handler took it)."""
    end = time.monotonic() + DEADLINE_S
    bit = 1 << (int(sig) - 1)
    while time.monotonic() < end:
        try:
            pend = 0
            for ln in open("/proc/%d/status" % p.pid):
                if ln.startswith(("SigPnd:", "ShdPnd:")):
                    pend |= int(ln.split()[1], 16)
            if not pend & bit:
                return
        except OSError:
            return
        time.sleep(0.001)


def impatient():
    # a second stop within a second, while the write is stuck: absorbed
    problems = []
    p, rfd = stalled("impatient-2")
    if p.line("ready") is None:
        problems.append("no 'ready' line")
        p.kill(signal.SIGKILL)
    else:
        p.kill(signal.SIGTERM)
        stalled_sent(p, signal.SIGTERM)
        p.kill(signal.SIGTERM)
        t0 = time.monotonic()
        alive = p.alive_after(0.5)
        # alive only if the second was absorbed within its second
        if not alive and time.monotonic() - t0 < 0.9:
            problems.append("the second SIGTERM (within 1 s of the first) ended the process: %s" % rc_name(p.p.poll()))
        p.kill(signal.SIGTERM)  # the third: at once
        t1 = time.monotonic()
        rc = p.wait()
        took = time.monotonic() - t1
        if rc != -signal.SIGTERM:
            problems.append("the third SIGTERM: expected death by SIGTERM, got %s" % rc_name(rc))
        elif took > 10:
            problems.append("the third SIGTERM took %.1f s to end the process" % took)
    os.close(rfd)
    TAP("8: a second SIGTERM within 1 s of the first while the write is stuck (timeline to a FIFO nobody reads) is "
        "absorbed; a third ends the process at once", not problems, *problems)

    problems = []
    p, rfd = stalled("impatient-1s")
    if p.line("ready") is None:
        problems.append("no 'ready' line")
        p.kill(signal.SIGKILL)
    else:
        p.kill(signal.SIGINT)
        stalled_sent(p, signal.SIGINT)
        t0 = time.monotonic()
        if not p.alive_after(1.2):  # the first one's second passes
            problems.append("the process ended during the stuck write: %s" % rc_name(p.p.poll()))
        p.kill(signal.SIGINT)  # a person's
        rc = p.wait()
        if rc != -signal.SIGINT:
            problems.append("the second SIGINT %.1f s after the first: expected death by SIGINT, got %s"
                            % (time.monotonic() - t0, rc_name(rc)))
    os.close(rfd)
    TAP("8: a second SIGINT more than 1 s after the first, while the write is stuck, ends the process at once",
        not problems, *problems)


# ---- item 10: a recovered crash ---------------------------------------------

def recover_case(binary, label):
    d = fresh("recover")
    p = Proc([binary, "recover"], clean_env(MEMOBS_FORMAT="json", MEMOBS_SUMMARY=os.path.join(d, "summary.json"),
                                            MEMOBS_TIMELINE=os.path.join(d, "trace.json")), d)
    rc = p.wait()
    problems = []
    if rc != 0 or "recovered 1" not in p.lines:
        problems.append("expected 'recovered 1' and exit 0, got %s and %s" % (p.lines, rc_name(rc)))
    s = check_summary(os.path.join(d, "summary.json"), problems)
    if s:
        req = s.get("requests", {})
        dropped = s.get("problems", {}).get("signal_dropped")
        host = s.get("memory", {}).get("host", {})
        if req.get("completed") != 100 or dropped != 0:
            problems.append("after the recovered crash, 100 begin/token/end: expected completed=100 "
                            "signal_dropped=0, got completed=%s signal_dropped=%s" % (req.get("completed"), dropped))
        if host.get("allocs") != 9 or host.get("frees") != 7:
            problems.append("tracking after the recovered crash: expected 9 allocs, 7 frees, got %s" % host)
    try:
        t = json.load(open(os.path.join(d, "trace.json")))
        n = sum(1 for e in t.get("traceEvents", []) if "H2S" in str(e.get("name", "")))
        if n < 5:
            problems.append("timeline after the recovered crash: expected the 5 H2S records, got %d events" % n)
    except Exception as e:  # noqa: BLE001
        problems.append("timeline: %s" % e)
    if problems:
        problems += p.tail()
    TAP("10: a crash the program's own handler recovers from (%s): then 100 request pairs complete=100, "
        "signal_dropped=0, tracking and the timeline record on that thread" % label, not problems, *problems)


# ---- item 11 -----------------------------------------------------------------

def mce_case():
    d = fresh("mce")
    p = Proc([HOST, "mce"], clean_env(MEMOBS_FORMAT="json", MEMOBS_SUMMARY=os.path.join(d, "summary.json")), d)
    rc = p.wait()
    problems = []
    want = "mce handled=1 code=5 summary=0"
    if want not in p.lines or rc != 0:
        problems.append("expected %r and exit 0, got %s and %s" % (want, p.lines, rc_name(rc)))
        problems += p.tail()
    check_summary(os.path.join(d, "summary.json"), problems)
    TAP("11: SIGBUS with si_code BUS_MCEERR_AO (the kernel's early memory-failure notice) goes to the program's "
        "handler untouched, once; no crash write; the program goes on", not problems, *problems)


def overflow_case():
    problems = []
    for run in range(3):
        d = fresh("overflow")
        p = Proc([HOST, "overflow-thread"], clean_env(MEMOBS_FORMAT="json",
                                                      MEMOBS_SUMMARY=os.path.join(d, "summary.json")), d)
        rc = p.wait()
        if rc != -signal.SIGSEGV:
            problems.append("run %d: expected death by SIGSEGV, got %s" % (run, rc_name(rc)))
        check_summary(os.path.join(d, "summary.json"), problems, h2d=3000 + 4096)
        if problems:
            problems += p.tail()
            break
    TAP("11: a stack overflow on a thread other than main (its own alternate stack, given at its first record): "
        "the summary is written, the process ends by SIGSEGV; 3 runs", not problems, *problems)


# ---- item 9: two instances ----------------------------------------------------

def instances_case(runs=20):
    problems = []
    lost = 0
    for run in range(runs):
        d = fresh("instances")
        r, w = os.pipe()
        env = clean_env(MEMOBS_FORMAT="json", MEMOBS_SUMMARY=os.path.join(d, "s.json"),
                        MEMOBS_PROM_FILE=os.path.join(d, "m.prom"), MEMOBS_TIMELINE=os.path.join(d, "t.json"),
                        MEMOBS_HTML=os.path.join(d, "r.html"), STOPS_READY_FD=w)
        p = Proc([os.path.join(B, "inst_main"), os.path.join(B, "libinst_a.so"), os.path.join(B, "libinst_b.so"),
                  "wait"], env, d, pass_fds=(w,))
        os.close(w)
        ok = select.select([r], [], [], DEADLINE_S)[0] and os.read(r, 64).startswith(b"ready")
        os.close(r)
        if not ok:
            problems.append("run %d: no 'ready'" % run)
            p.kill(signal.SIGKILL)
        else:
            p.kill(signal.SIGTERM)
        rc = p.wait()
        mine = []
        if rc != -signal.SIGTERM:
            mine.append("run %d: expected death by SIGTERM, got %s" % (run, rc_name(rc)))
        files = sorted(f for f in os.listdir(d) if not f.startswith("stderr"))
        for base, ext in (("s", ".json"), ("m", ".prom"), ("t", ".json"), ("r", ".html")):
            got = [f for f in files if f.startswith(base + ".") and f.endswith(ext)]
            if len(got) != 2:
                mine.append("run %d: expected 2 %s%s files (one per instance), got %s" % (run, base, ext, got))
            check_outputs(d, mine, [f for f in got])
        if mine:
            lost += 1
            if len(problems) < 8:
                problems += mine + p.tail()
    TAP("9: two memobs instances in one process (MEMOBS_HIDDEN objects), SIGTERM: both instances' outputs "
        "(summary, Prometheus, timeline, HTML) whole every time, the last writer ends the process by SIGTERM; "
        "%d runs, %d lost an output" % (runs, lost), not problems, *problems)


# ---- item 7: Python -------------------------------------------------------------

PY = sys.executable

UVICORN = r"""
import os, signal, sys
sys.path.insert(0, os.environ["PKG"])
import memobs
memobs.record_h2d(3000, True)
# uvicorn 0.29+: save, install its own, restore what it saved, raise again
saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)}
print("saved", ["None" if h is None else "set" for h in saved.values()], flush=True)
got = []
for s in saved:
    signal.signal(s, lambda n, f: got.append(n))
os.kill(os.getpid(), signal.SIGTERM)
while not got:
    signal.pause()
print("server shutdown", flush=True)
for s, h in saved.items():
    signal.signal(s, h)  # None: TypeError
signal.raise_signal(signal.SIGTERM)
print("survived", flush=True)
"""


def py_run(d, code, env, args=()):
    p = Proc([PY, "-c", code] + list(args), env, d)
    rc = p.wait()
    return p, rc


def python_cases():
    lib = os.path.join(B, "libmemobs_preload.so")
    pkg = os.path.join(B, "py")
    have_lib = os.path.exists(lib)
    # 1. the preload in python3, no package: getsignal says SIG_DFL
    problems = []
    if not have_lib:
        problems.append("no %s (the build failed)" % lib)
    else:
        d = fresh("py-getsignal")
        env = clean_env(LD_PRELOAD=lib, MEMOBS_FORMAT="json", MEMOBS_SUMMARY=os.path.join(d, "s.json"))
        code = ("import signal\n"
                "for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGINT):\n"
                "    h = signal.getsignal(s)\n"
                "    print(s.name, 'None' if h is None else 'SIG_DFL' if h == signal.SIG_DFL else getattr(h, '__name__', h))\n"
                "    signal.signal(s, h)\n"
                "print('restored')\n")
        p, rc = py_run(d, code, env)
        want = ["SIGTERM SIG_DFL", "SIGHUP SIG_DFL", "SIGQUIT SIG_DFL", "SIGINT default_int_handler", "restored"]
        if p.lines != want or rc != 0:
            problems.append("expected %s and exit 0, got %s and %s" % (want, p.lines, rc_name(rc)))
            problems += p.tail()
    TAP("7: python3 under the LD_PRELOAD library (memobs installs before CPython starts): signal.getsignal of "
        "SIGTERM, SIGHUP, SIGQUIT is SIG_DFL (never None), and setting it back raises nothing", not problems,
        *problems)

    # 2. the package, uvicorn-style save/restore and raise again, private and under the preload
    for label, extra in (("the package's private memobs", {}), ("the package attached to the LD_PRELOAD library",
                                                                 {"LD_PRELOAD": lib})):
        problems = []
        if extra and not have_lib:
            problems.append("no %s (the build failed)" % lib)
        else:
            d = fresh("py-uvicorn")
            env = clean_env(PKG=pkg, MEMOBS_FORMAT="json", MEMOBS_SUMMARY=os.path.join(d, "s.json"),
                            MEMOBS_PROM_FILE=os.path.join(d, "m.prom"), **extra)
            p, rc = py_run(d, UVICORN, env)
            want = ["saved ['set', 'set', 'set']", "server shutdown"]
            if p.lines != want or rc != -signal.SIGTERM:
                problems.append("expected the lines %s and death by SIGTERM, got %s and %s"
                                % (want, p.lines, rc_name(rc)))
                problems += p.tail()
            # attached, the package's records are the program's own: "manual", apart from what the library sees
            s = check_summary(os.path.join(d, "s.json"), problems, h2d=0 if extra else 3000)
            part = s and (s.get("manual", {}).get("prefill", s.get("manual")) if extra else s.get("prefill"))
            if s is not None and (part or {}).get("h2d_bytes") != 3000:
                problems.append("summary: %sprefill.h2d_bytes expected 3000, got %s"
                                % ("manual." if extra else "", part))
            check_outputs(d, problems, ["m.prom"])
        TAP("7: Python, %s: a uvicorn-style save, own handler, restore and raise_signal(SIGTERM) raises nothing; "
            "the package's handler (restored) writes the outputs, the process ends by SIGTERM" % label,
            not problems, *problems)


def main():
    if "sigwait" in PARTS:
        sigwait_case(False)
        sigwait_case(True)
    if "dup" in PARTS:
        for first, second, gap in ((signal.SIGTERM, signal.SIGTERM, 5), (signal.SIGTERM, signal.SIGTERM, 10),
                                   (signal.SIGTERM, signal.SIGTERM, 30), (signal.SIGINT, signal.SIGTERM, 20)):
            dup_case(first, second, gap)
    if "impatient" in PARTS:
        impatient()
    if "recover" in PARTS:
        recover_case(HOST, "C99")
        if os.path.exists(HOST + "_asan"):
            recover_case(HOST + "_asan", "ASan+UBSan")
    if "mce" in PARTS:
        mce_case()
    if "overflow" in PARTS:
        overflow_case()
    if "instances" in PARTS:
        instances_case()
    if "python" in PARTS:
        python_cases()
    sys.exit(TAP.failed)


main()
