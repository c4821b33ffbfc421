#!/usr/bin/env python3
"""tests/serving/signals/drive.py BIN REF DIR SUITE STRESS_RUNS [core]

Stops tests/serving/signals/stop.c each way and checks what memobs' stop and crash
handlers leave: BIN is the program with memobs, REF the same program built
with MEMOBS_DISABLE (the reference exit status and signal, from the same
compiler flags). Prints TAP lines "ok - SUITE: name" / "not ok - SUITE:
name" with "    # " detail lines; exits 1 on a failure. Every wait has a
generous deadline as its failure bound (no sleeps as synchronization).

  for SIGTERM, SIGINT, SIGHUP, SIGQUIT: the default disposition; the
    program's own handler installed before memobs_init (MEMOBS_NO_AUTOINIT)
    and after it, after it with memobs_set_signals(0), and restoring
    SIG_DFL and raising; SIG_IGN inherited; MEMOBS_SIGNALS=0;
    memobs_set_signals(0): the exit status or signal (and core flag) is
    REF's, the outputs (summary JSON, Prometheus file, leak report, Chrome
    trace) exist or not as they must, and hold the exact figures (SIGQUIT
    with the default disposition: none, memobs leaves it alone)
  the program's one-shot handler (SA_RESETHAND) before memobs: it runs
    for the first signal, the second one ends the process
  a third SIGINT while the writer is stuck (MEMOBS_SUMMARY a FIFO
    nobody reads; a second one within a second is absorbed): the process
    ends by it
  fork(): the child stopped by SIGTERM writes its own figures to its %p
    path and ends by the signal; the parent's file is written only at its
    own exit, with its own figures
  crashes (SIGSEGV, SIGBUS, SIGFPE, SIGILL, abort, stack overflow), with
    and without a handler of the program's own installed before memobs,
    and SIGSEGV sent by kill: REF's status; the program's handler sees
    memobs' crash writer done (memobs__sig.crashing == 2), and runs after it
  STRESS_RUNS runs of SIGTERM at a random moment (half 0-5 ms after
    "ready", half 0-20 ms after the start) under two threads recording
    nonstop: each ends by SIGTERM within the deadline; every run stopped
    after "ready" wrote a summary; a summary, when one was written, parses
    and is consistent (the known figures exact; bytes a multiple of 64;
    copies at least bytes / 64 less one per thread: a read racing records)
core: SIGQUIT's core flag is compared with REF's (RLIMIT_CORE raised for
those runs; sanitizer builds leave it out). Under ThreadSanitizer a case
whose process hung runs again, twice at most (see TSAN below)."""
import json
import os
import random
import re
import resource
import select
import signal
import subprocess
import sys
import time

BIN, REF, DIR = (os.path.abspath(a) for a in sys.argv[1:4])
SUITE, STRESS = sys.argv[4], int(sys.argv[5])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from tap import Tap  # noqa: E402

TAP = Tap(SUITE)
CORE = len(sys.argv) > 6 and sys.argv[6] == "core"
DEADLINE_S = 60.0  # a failure bound on a busy machine, never an expected time
# ThreadSanitizer runs signal handlers at its own points, and loses about 1
# signal in 100 even without memobs (the MEMOBS_DISABLE build too, checked
# by hand: a process then waits forever). Under it a case whose process
# outlived its deadline runs again, twice at most, and the line says so.
TSAN = "tsan" in SUITE
HANG = "no exit within"


def run_case(fn, *args, **kw):
    """fn(*args, **kw) -> (name, problems), reported; again under TSan after a hang."""
    for attempt in range(3 if TSAN else 1):
        name, problems = fn(*args, **kw)
        if not any(HANG in p for p in problems):
            break
    if attempt:
        name += " (run %d times: ThreadSanitizer lost a signal)" % (attempt + 1)
    report(name, problems)


def report(name, problems):
    """One check's line through tests/python/tap.py, with its first 12 problems."""
    TAP(name, not problems, *problems[:12])
    sys.stdout.flush()


def clean_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMOBS")}
    env.pop("STOP_MARKER", None)
    return env


def outputs_env(d):
    env = clean_env()
    env.update(MEMOBS_FORMAT="json", MEMOBS_SUMMARY=os.path.join(d, "summary.json"),
               MEMOBS_PROM_FILE=os.path.join(d, "m.prom"), MEMOBS_PROM_INTERVAL_MS="0",
               MEMOBS_TIMELINE=os.path.join(d, "trace.json"), MEMOBS_LEAKS=os.path.join(d, "leaks.txt"))
    return env


def fresh(name):
    d = os.path.join(DIR, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    return d


class Proc:
    """One run: stdout read line by line against a deadline, the raw wait
    status (for the core flag) from waitpid."""

    def __init__(self, argv, env, cwd, ign=None, core=False):
        def pre():
            if ign:
                signal.signal(ign, signal.SIG_IGN)
            lim = resource.RLIM_INFINITY if core else 0
            resource.setrlimit(resource.RLIMIT_CORE, (lim, lim))
        self.err = open(os.path.join(cwd, "stderr.%d.txt" % random.randrange(1 << 30)), "w+")
        self.p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=self.err, preexec_fn=pre)
        self.pid = self.p.pid
        self.buf = b""
        self.lines = []
        self.status = None

    def line(self, prefix, timeout=DEADLINE_S):
        """The first line starting with prefix (earlier ones kept in
        self.lines), or None at EOF or the deadline."""
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
            if left <= 0:
                return None
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            self.buf += chunk

    def wait(self, timeout=DEADLINE_S):
        """The raw wait status, or None when the process outlived the
        deadline (then it is killed)."""
        end = time.monotonic() + timeout
        while True:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid == self.pid:
                self.status = st
                self.p.returncode = -1  # reaped here; keeps Popen from waiting again
                break
            if time.monotonic() >= end:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                self.p.returncode = -1
                break
            time.sleep(0.005)
        # what is there: a forked child that outlived its parent may hold the pipe
        fd = self.p.stdout.fileno()
        while select.select([fd], [], [], 0)[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            self.buf += chunk
        self.p.stdout.close()
        self.lines += [ln.decode("utf-8", "replace") for ln in self.buf.split(b"\n") if ln]
        self.buf = b""
        self.err.seek(0)
        self.stderr = self.err.read()
        self.err.close()
        return self.status

    def kill(self, sig):
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            pass


def desc(st):
    if st is None:
        return "%s %g s (killed)" % (HANG, DEADLINE_S)
    if os.WIFSIGNALED(st):
        name = signal.Signals(os.WTERMSIG(st)).name
        return "killed by %s%s" % (name, " (core)" if os.WCOREDUMP(st) else "")
    return "exit %d" % os.WEXITSTATUS(st)


def same_status(got, want, problems, what="status"):
    if got is None or want is None or desc(got) != desc(want):
        problems.append("%s: expected %s (as without memobs), got %s" % (what, desc(want), desc(got)))


def tail(p):
    return ["stderr: " + ln for ln in p.stderr.strip().splitlines()[-6:]]


# ---- the outputs -----------------------------------------------------------

def check_summary(path, problems, child=False):
    try:
        s = json.load(open(path))
    except Exception as e:  # noqa: BLE001 (any failure to read is the finding)
        problems.append("summary %s: %s" % (os.path.basename(path), e))
        return
    want = {("prefill", "h2d_bytes"): 3000, ("prefill", "h2d_count"): 3, ("prefill", "d2d_bytes"): 30,
            ("prefill", "d2d_count"): 1, ("decode", "d2h_bytes"): 205 + (7 if child else 0),
            ("decode", "d2h_count"): 1 + (1 if child else 0), ("total", "h2d_bytes"): 3000,
            ("counters", "stops_test"): 7}
    for (a, b), v in sorted(want.items()):
        got = s.get(a, {}).get(b)
        if got != v:
            problems.append("summary %s.%s: expected %s, got %s" % (a, b, v, got))
    host = s.get("memory", {}).get("host", {})
    if host.get("current_bytes") != 4096 or host.get("live") != 1:
        problems.append("summary memory.host: expected 4096 bytes in 1 live allocation, got %s" % host)


def check_prom(path, problems):
    try:
        text = open(path).read()
    except OSError as e:
        problems.append("Prometheus file: %s" % e)
        return
    want = {("h2d", "prefill"): 3000, ("d2h", "decode"): 205, ("d2d", "prefill"): 30}
    for (d, ph), v in want.items():
        m = re.search(r'^memobs_transfer_bytes_total\{[^}]*direction="%s",phase="%s"\} (\d+)$' % (d, ph), text, re.M)
        got = int(m.group(1)) if m else None
        if got != v:
            problems.append("Prometheus %s %s bytes: expected %s, got %s" % (d, ph, v, got))


def check_leaks(path, problems):
    try:
        text = open(path).read()
    except OSError as e:
        problems.append("leak report: %s" % e)
        return
    if "1 allocation still live, 4096 bytes" not in text or "stop_block" not in text:
        problems.append("leak report: expected 1 allocation of 4096 bytes (stop_block), got %r" % text[:200])


def check_trace(path, problems):
    try:
        t = json.load(open(path))
    except Exception as e:  # noqa: BLE001
        problems.append("trace: %s" % e)
        return
    n = sum(1 for e in t.get("traceEvents", []) if e.get("ph") == "X" and e.get("name") == "H2D prefill")
    if n != 3:
        problems.append("trace: expected 3 'H2D prefill' events, got %d" % n)


OUTPUTS = ["summary.json", "m.prom", "leaks.txt", "trace.json"]


def check_outputs(d, problems, present):
    there = [f for f in OUTPUTS if os.path.exists(os.path.join(d, f))]
    if not present:
        if there:
            problems.append("outputs: expected none, found %s" % there)
        return
    missing = [f for f in OUTPUTS if f not in there]
    if missing:
        problems.append("outputs missing: %s" % missing)
    if "summary.json" in there:
        check_summary(os.path.join(d, "summary.json"), problems)
    if "m.prom" in there:
        check_prom(os.path.join(d, "m.prom"), problems)
    if "leaks.txt" in there:
        check_leaks(os.path.join(d, "leaks.txt"), problems)
    if "trace.json" in there:
        check_trace(os.path.join(d, "trace.json"), problems)


def drop_cores(d):
    for f in os.listdir(d):
        if f == "core" or f.startswith("core."):
            os.unlink(os.path.join(d, f))


# ---- one stop --------------------------------------------------------------

def stop_run(binary, mode, sig, d, env, ign=None, then_usr1=False, core=False):
    """Starts mode, sends sig once it is ready (then SIGUSR1 if asked),
    returns (Proc, problems of its own)."""
    p = Proc([binary, mode, str(int(sig))], env, d, ign=ign, core=core)
    problems = []
    if p.line("ready") is None:
        problems.append("no 'ready' line; output so far: %s" % p.lines)
        p.kill(signal.SIGKILL)
        p.wait()
        return p, problems
    p.kill(sig)
    if then_usr1:
        p.kill(signal.SIGUSR1)
    p.wait()
    return p, problems


ref_cache = {}


def ref_status(mode, sig, ign=None, then_usr1=False, core=False):
    key = (mode, int(sig), ign, then_usr1, core)
    if key not in ref_cache:
        d = fresh("ref")
        p, problems = stop_run(REF, mode, sig, d, clean_env(), ign=ign, then_usr1=then_usr1, core=core)
        drop_cores(d)
        if p.status is None:
            return p.status, [], problems
        ref_cache[key] = (p.status, [ln for ln in p.lines if not ln.startswith("ready")], problems)
    return ref_cache[key]


def handled_ok(p, sig, problems):
    want = "handled sig=%d code=0 pid=%d count=1" % (int(sig), os.getpid())
    got = [ln for ln in p.lines if ln.startswith("handled")]
    if got != [want]:
        problems.append("the program's handler: expected %r (its signal, SI_USER, the sender's pid, once), got %s"
                        % (want, got))


def stop_case(sig, mode, label, present, ign=None, then_usr1=False, env_extra=None, expect_lines=None):
    name = "%s: %s" % (signal.Signals(sig).name, label)
    d = fresh("%s-%s" % (signal.Signals(sig).name, label.replace(" ", "_").replace("(", "").replace(")", "")))
    env = outputs_env(d)
    env.update(env_extra or {})
    core = CORE and sig == signal.SIGQUIT
    want, ref_lines, ref_problems = ref_status(mode, sig, ign=ign, then_usr1=then_usr1, core=core)
    p, problems = stop_run(BIN, mode, sig, d, env, ign=ign, then_usr1=then_usr1, core=core)
    drop_cores(d)
    problems += ["reference run: " + x for x in ref_problems]
    same_status(p.status, want, problems)
    if mode in ("own-before", "own-after", "own-after-off"):
        handled_ok(p, sig, problems)
    for ln in expect_lines or []:
        if ln not in p.lines:
            problems.append("expected the line %r, got %s" % (ln, p.lines))
    if present is not None:
        check_outputs(d, problems, present)
    if problems:
        problems += tail(p)
    return name, problems


STOP_CASES = [  # mode, label, outputs (None: not checked), keyword arguments of stop_case
    ("wait", "default disposition: every output written, then the signal's own end", True, {}),
    ("own-before", "own handler installed before memobs_init: it runs once, outputs at its exit", True, {}),
    ("own-after", "own handler installed after memobs: it replaces memobs'", True, {}),
    ("own-after-off", "own handler after memobs, then memobs_set_signals(0): its handler stays", True,
     {"expect_lines": ["set_signals 1"]}),
    ("own-reraise", "own handler (before memobs) restoring SIG_DFL and raising", None, {}),
    ("wait", "SIG_IGN inherited (nohup): left alone, the program goes on", True, {"ign": True, "then_usr1": True}),
    ("wait", "MEMOBS_SIGNALS=0: no handler, no output", False, {"env_extra": {"MEMOBS_SIGNALS": "0"}}),
    ("call-off", "memobs_set_signals(0): no handler, no output", False, {"expect_lines": ["set_signals 1 0"]}),
]


def stops():
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        for mode, label, present, kw in STOP_CASES:
            kw = dict(kw)
            if sig == signal.SIGQUIT and mode == "wait" and not kw:
                # issue 38: memobs leaves SIGQUIT alone (its core shows where the program was)
                label, present = "default disposition: left alone by memobs, no output, the signal's own end", False
            if kw.get("ign"):
                kw["ign"] = sig
            run_case(stop_case, sig, mode, label, present, **kw)


def oneshot_case(sig):
    """The program's handler, installed before memobs with SA_RESETHAND,
    runs for the first signal only; the second one's default action ends
    the process, as without memobs (ours mirrors the flag)."""
    name = "%s: own one-shot handler (SA_RESETHAND) before memobs: runs once, the second signal ends the " \
           "process" % signal.Signals(sig).name
    problems = []
    got = {}
    for which, binary in (("ref", REF), ("bin", BIN)):
        d = fresh("oneshot-%s-%s" % (signal.Signals(sig).name, which))
        p = Proc([binary, "own-oneshot", str(int(sig))], outputs_env(d) if which == "bin" else clean_env(), d)
        if p.line("ready") is None:
            problems.append("%s: no 'ready' line" % which)
            p.kill(signal.SIGKILL)
        else:
            p.kill(sig)
            ln = p.line("handled")
            if ln is None:
                problems.append("%s: the program's handler did not run" % which)
                p.kill(signal.SIGKILL)
            elif which == "bin":
                handled_ok(p, sig, problems)
            p.kill(sig)
        p.wait()
        got[which] = p.status
    same_status(got.get("bin"), got.get("ref"), problems)
    return name, problems


def pending(pid, sig):
    """1 while sig is pending for the process or its main thread."""
    bit = 1 << (int(sig) - 1)
    try:
        for ln in open("/proc/%d/status" % pid):
            if ln.startswith(("SigPnd:", "ShdPnd:")) and int(ln.split()[1], 16) & bit:
                return True
    except OSError:
        return False
    return False


def impatient():
    d = fresh("impatient")
    fifo = os.path.join(d, "summary.fifo")
    os.mkfifo(fifo)
    env = clean_env()
    env.update(MEMOBS_SUMMARY=fifo)
    p = Proc([BIN, "wait", str(int(signal.SIGINT))], env, d)
    problems = []
    if p.line("ready") is None:
        problems.append("no 'ready' line")
        p.kill(signal.SIGKILL)
    else:
        p.kill(signal.SIGINT)  # the writer then waits forever in open() of the FIFO
        end = time.monotonic() + DEADLINE_S
        while pending(p.pid, signal.SIGINT) and time.monotonic() < end:
            time.sleep(0.002)
        # issue 38: a second stop within a second of the first is absorbed (a
        # launcher forwarding it); a third is a person's
        p.kill(signal.SIGINT)
        while pending(p.pid, signal.SIGINT) and time.monotonic() < end:
            time.sleep(0.002)
        p.kill(signal.SIGINT)  # the impatient third Ctrl-C
    p.wait()
    if p.status is None or not os.WIFSIGNALED(p.status) or os.WTERMSIG(p.status) != signal.SIGINT:
        problems.append("expected death by the third SIGINT while the writer is stuck, got %s" % desc(p.status))
        problems += tail(p)
    return "a third SIGINT while the outputs are being written ends the process at once (a second one within a " \
           "second is absorbed)", problems


def fork_case(sig, tsan):
    name = "%s: fork(): the child writes its own figures to its %%p path and ends by the signal; the parent " \
           "writes at its own exit" % signal.Signals(sig).name
    if sig == signal.SIGQUIT:
        name = "SIGQUIT: fork(): the child ends by the signal, memobs leaving it alone (no summary); the parent " \
               "writes at its own exit"
    if tsan:
        name = "%s: fork() under ThreadSanitizer: the child (memobs' handlers put back: TSan neither lets it " \
               "start a thread nor runs its handlers) ends by the signal, writes nothing; the parent writes at its " \
               "exit" % signal.Signals(sig).name
    problems = []
    statuses = {}
    for which, binary in (("ref", REF), ("bin", BIN)):
        d = fresh("fork-%s-%s" % (signal.Signals(sig).name, which))
        env = clean_env()
        env.update(MEMOBS_FORMAT="json", MEMOBS_SUMMARY=os.path.join(d, "sum-%p.json"))
        p = Proc([binary, "fork", str(int(sig))], env, d)
        ln = p.line("child-ready")
        if ln is None:
            problems.append("%s: no 'child-ready' line" % which)
            p.kill(signal.SIGKILL)
            p.wait()
            continue
        cpid = int(ln.split()[1])
        os.kill(cpid, sig)
        ln = p.line("child-status")
        r = p.line("ready")
        if ln is None or r is None:
            problems.append("%s: no 'child-status' and 'ready' lines (the child outlived the signal?): %s"
                            % (which, p.lines))
            for pid in (cpid, p.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            p.wait()
            continue
        statuses[which] = int(ln.split()[1])
        ppid = p.pid
        parent_file = os.path.join(d, "sum-%d.json" % ppid)
        child_file = os.path.join(d, "sum-%d.json" % cpid)
        if which == "bin" and os.path.exists(parent_file):
            problems.append("the parent's summary exists before its exit: the child's stop woke the parent's writer")
        p.kill(signal.SIGUSR1)
        p.wait()
        if which == "bin":
            if p.status is None or not os.WIFEXITED(p.status) or os.WEXITSTATUS(p.status) != 4:
                problems.append("parent: expected exit 4, got %s" % desc(p.status))
            check_summary(parent_file, problems)
            if tsan or sig == signal.SIGQUIT:
                if os.path.exists(child_file):
                    problems.append("child: expected no summary (%s), found one"
                                    % ("under TSan" if tsan else "SIGQUIT is left alone"))
            else:
                check_summary(child_file, problems, child=True)
            if problems:
                problems += tail(p)
    if "ref" in statuses and "bin" in statuses:
        same_status(statuses["bin"], statuses["ref"], problems, "child's status")
    return name, problems


def crash_case(kind, own):
    name = "crash %s%s" % (kind, ": own handler installed before memobs runs after memobs' crash writer" if own
                           else ": the crash goes on with its own signal")
    problems = []
    got = {}
    for which, binary in (("ref", REF), ("bin", BIN)):
        d = fresh("crash-%s-%s-%s" % (kind, "own" if own else "plain", which))
        marker = os.path.join(d, "marker")
        env = outputs_env(d) if which == "bin" else clean_env()
        env["STOP_MARKER"] = marker
        args = [binary, kind] + (["own"] if own else [])
        p = Proc(args, env, d)
        if p.line("ready") is None:
            problems.append("%s: no 'ready' line" % which)
        p.wait()
        got[which] = p.status
        if which == "bin" and own:
            text = open(marker).read() if os.path.exists(marker) else ""
            sig = {"segv": 11, "overflow": 11, "bus": 7, "fpe": 8, "ill": 4, "abort": 6}[kind]
            want = "crash sig=%d crashing=2\n" % sig
            if text != want:
                problems.append("the program's handler wrote %r, expected %r (memobs' crash writer done first, "
                                "then the program's handler, once)" % (text, want))
        if which == "bin" and problems:
            problems += tail(p)
    same_status(got.get("bin"), got.get("ref"), problems)
    return name, problems


def kill_segv():
    d = fresh("kill-segv")
    want, _, rp = ref_status("wait", signal.SIGSEGV)
    p, problems = stop_run(BIN, "wait", signal.SIGSEGV, d, outputs_env(d))
    same_status(p.status, want, problems)
    problems += rp
    return "SIGSEGV sent by kill (si_code SI_USER): sent again, the process ends by it", problems


def stress(n):
    d = fresh("stress")
    env = outputs_env(d)
    for k in ("MEMOBS_PROM_FILE", "MEMOBS_TIMELINE", "MEMOBS_LEAKS", "MEMOBS_PROM_INTERVAL_MS"):
        env.pop(k)
    rng = random.Random(25)
    problems = []
    written = 0
    worst = 0.0
    retried = 0
    i = 0
    while i < n:
        path = os.path.join(d, "summary.json")
        if os.path.exists(path):
            os.unlink(path)
        t0 = time.monotonic()
        p = Proc([BIN, "threads", str(int(signal.SIGTERM))], env, d)
        # even runs: a moment while the threads record (after "ready"); odd
        # runs: any moment from the start, start-up included
        after_ready = i % 2 == 0
        if after_ready and p.line("ready") is None:
            problems.append("run %d: no 'ready' line" % i)
        delay = rng.uniform(0.0, 0.005 if after_ready else 0.020)
        time.sleep(delay)  # the random moment itself, not a synchronization
        p.kill(signal.SIGTERM)
        p.wait()
        worst = max(worst, time.monotonic() - t0)
        when = "%.1f ms after %s" % (delay * 1e3, "'ready'" if after_ready else "the start")
        if p.status is None and TSAN and retried < 5:
            retried += 1
            continue
        i += 1
        if p.status is None or not os.WIFSIGNALED(p.status) or os.WTERMSIG(p.status) != signal.SIGTERM:
            problems.append("run %d (SIGTERM %s): expected death by SIGTERM, got %s" % (i, when, desc(p.status)))
            problems += tail(p)
            continue
        if after_ready and not os.path.exists(path):
            problems.append("run %d (SIGTERM %s): no summary" % (i, when))
        if os.path.exists(path):
            written += 1
            try:
                s = json.load(open(path))
                h2d = s["total"]["h2d_bytes"]
                cnt = s["total"]["h2d_count"]
                pre = s["prefill"]["h2d_bytes"]
                # a copy adds bytes, then its count (its size slot); the
                # summary reads a thread's slots, then its bytes (which it
                # unwraps from the slots: memobs__xfer_unwrap), racing the
                # threads: the count lags by the copies made meanwhile (as
                # many as a preempted reader lets through), never leads by
                # more than one copy per thread
                if pre == 3000:
                    bad = (h2d - 3000) % 64 or cnt < 3 or (cnt - 3) > (h2d - 3000) // 64 + 2
                else:
                    # stopped after memobs_init() put its handlers in place and
                    # before the three prefill copies were all recorded: the
                    # threads are not started yet, so those copies are all
                    bad = after_ready or pre not in (0, 1000, 2000) or h2d != pre or cnt != pre // 1000
                if bad:
                    problems.append("run %d (SIGTERM %s): inconsistent summary: prefill h2d %d bytes, total h2d %d "
                                    "bytes in %d copies" % (i, when, pre, h2d, cnt))
            except Exception as e:  # noqa: BLE001
                problems.append("run %d: summary unreadable: %s" % (i, e))
        if len(problems) > 10:
            break
    report("%d runs, SIGTERM at a random moment under two recording threads: every run ends by SIGTERM, none "
           "hangs; %d wrote a summary (every run stopped after 'ready'; the others were stopped before memobs' "
           "handlers were in place), each consistent; slowest run %.2f s%s"
           % (n, written, worst, " (%d runs again: ThreadSanitizer lost a signal)" % retried if retried else ""),
           problems)


def main():
    tsan = "tsan" in SUITE
    stops()
    for sig in (signal.SIGTERM, signal.SIGINT):
        run_case(oneshot_case, sig)
    run_case(impatient)
    run_case(fork_case, signal.SIGTERM, tsan)
    run_case(fork_case, signal.SIGQUIT, tsan)
    kinds = ["segv", "abort"] if "san" in SUITE else ["segv", "bus", "fpe", "ill", "abort", "overflow"]
    for kind in kinds:
        run_case(crash_case, kind, True)
        run_case(crash_case, kind, False)
    run_case(kill_segv)
    if STRESS:
        stress(STRESS)
    sys.exit(TAP.failed)


main()
