#!/usr/bin/env python3
"""tests/serving/signals/py_drive.py PKGDIR DIR SUITE [PRELOAD]

The Python package's stops with the real interpreter: tests/serving/signals/
py_stop.py run by this interpreter with the package in PKGDIR, stopped each
way; the exit status is the one Python gives without memobs (the same
script with STOP_NO_MEMOBS=1); the outputs exist, parse and hold the exact
figures (summary JSON, Prometheus file), and a summary on stderr is
written exactly once:
  Ctrl-C (SIGINT) uncaught: KeyboardInterrupt, Python ends by SIGINT past
    C's exit handlers; the package's exit hook writes
  Ctrl-C caught, then a normal exit: written once, at exit
  SIGTERM: memobs' C handler writes, Python ends by SIGTERM
  a normal exit; MEMOBS_SIGNALS=0 with SIGTERM: nothing written
PRELOAD (libmemobs_preload.so, with memobs._memobs_attached in PKGDIR):
the same Ctrl-C and SIGTERM with the package attached to the preload's
memobs (its records counted apart as the program's own: "manual"), and a
caught Ctrl-C: memobs, loaded before the interpreter started, leaves SIGINT
to it (CPython installs its KeyboardInterrupt handler only over SIG_DFL)."""
import json
import os
import re
import select
import signal
import subprocess
import sys
import time

PKG, DIR, SUITE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from tap import Tap  # noqa: E402

TAP = Tap(SUITE)
PRELOAD = sys.argv[4] if len(sys.argv) > 4 else ""
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "py_stop.py")
DEADLINE_S = 60.0


def report(name, problems):
    """One check's line through tests/python/tap.py, with its first 12 problems."""
    TAP(name, not problems, *problems[:12])
    sys.stdout.flush()


def base_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMOBS") and k != "LD_PRELOAD"}
    env["PYTHONPATH"] = PKG
    env.pop("STOP_NO_MEMOBS", None)
    return env


def run(mode, sig, env, cwd):
    """(status as subprocess gives it: -N for a signal; stdout; stderr)."""
    p = subprocess.Popen([sys.executable, SCRIPT, mode], env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = b""
    end = time.monotonic() + DEADLINE_S
    while not re.search(rb"^ready .*\n", out, re.M) and time.monotonic() < end:
        r, _, _ = select.select([p.stdout], [], [], max(0.0, end - time.monotonic()))
        if not r:
            break
        chunk = os.read(p.stdout.fileno(), 4096)
        if not chunk:
            break
        out += chunk
    if b"ready" in out and sig:
        p.send_signal(sig)
    try:
        rest, err = p.communicate(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        p.kill()
        rest, err = p.communicate()
        return None, (out + rest).decode(), err.decode()
    return p.returncode, (out + rest).decode(), err.decode()


def desc(rc):
    if rc is None:
        return "no exit within %g s" % DEADLINE_S
    return "killed by %s" % signal.Signals(-rc).name if rc < 0 else "exit %d" % rc


def check_files(d, problems, manual=False):
    try:
        s = json.load(open(os.path.join(d, "summary.json")))
    except Exception as e:  # noqa: BLE001 (any failure to read is the finding)
        problems.append("summary: %s" % e)
        s = None
    if s is not None:
        fig = s.get("manual", {}) if manual else s
        want = {("prefill", "h2d_bytes"): 3000, ("prefill", "h2d_count"): 3, ("decode", "d2h_bytes"): 205,
                ("prefill", "d2d_bytes"): 30}
        for (a, b), v in sorted(want.items()):
            got = fig.get(a, {}).get(b)
            if got != v:
                problems.append("summary %s%s.%s: expected %s, got %s" % ("manual." if manual else "", a, b, v, got))
    if manual:
        return
    try:
        text = open(os.path.join(d, "m.prom")).read()
        m = re.search(r'^memobs_transfer_bytes_total\{[^}]*direction="h2d",phase="prefill"\} (\d+)$', text, re.M)
        if not m or int(m.group(1)) != 3000:
            problems.append("Prometheus h2d prefill bytes: expected 3000, got %s" % (m and m.group(1)))
    except OSError as e:
        problems.append("Prometheus file: %s" % e)


def case(name, mode, sig, present=True, env_extra=None, preload=False):
    problems = []
    tag = re.sub(r"[^a-z0-9]+", "_", name.lower())[:40]
    d = os.path.join(DIR, tag)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    ref_env = base_env()
    ref_env["STOP_NO_MEMOBS"] = "1"
    want, _, _ = run(mode, sig, ref_env, d)
    env = base_env()
    env.update(MEMOBS_FORMAT="json", MEMOBS_SUMMARY=os.path.join(d, "summary.json"),
               MEMOBS_PROM_FILE=os.path.join(d, "m.prom"), MEMOBS_PROM_INTERVAL_MS="0")
    if preload:
        env["LD_PRELOAD"] = PRELOAD
        del env["MEMOBS_PROM_FILE"], env["MEMOBS_PROM_INTERVAL_MS"]
    env.update(env_extra or {})
    rc, out, err = run(mode, sig, env, d)
    if rc is None or rc != want:
        problems.append("status: expected %s (as without memobs), got %s" % (desc(want), desc(rc)))
    if preload and not re.search(r"^ready \d+ preload$", out, re.M):
        problems.append("the package is not attached to the preload's memobs: %r" % out[:200])
    if present:
        check_files(d, problems, manual=preload)
    elif os.path.exists(os.path.join(d, "summary.json")):
        problems.append("a summary was written, expected none")
    if mode == "caught" and "caught" not in out:
        problems.append("the script did not catch the KeyboardInterrupt: %r" % out)
    if not preload:
        # the same stop with the summary on stderr: written exactly once
        env2 = dict(env)
        env2.update(MEMOBS_SUMMARY="stderr", MEMOBS_FORMAT="text")
        env2.pop("MEMOBS_PROM_FILE", None)
        env2.pop("MEMOBS_PROM_INTERVAL_MS", None)
        rc2, _, err2 = run(mode, sig, env2, d)
        n = err2.count("== memobs summary ==")
        if rc2 != want or n != (1 if present else 0):
            problems.append("MEMOBS_SUMMARY=stderr: expected %d summary and %s, got %d and %s"
                            % (1 if present else 0, desc(want), n, desc(rc2)))
    if problems:
        problems += ["stderr: " + ln for ln in err.strip().splitlines()[-8:]]
    report(name, problems)


def main():
    case("Ctrl-C (SIGINT), KeyboardInterrupt uncaught: the exit hook writes, Python ends by SIGINT", "wait",
         signal.SIGINT)
    case("Ctrl-C caught by the script, then a normal exit: written once, at exit", "caught", signal.SIGINT)
    case("SIGTERM: memobs' handler writes, Python ends by SIGTERM", "wait", signal.SIGTERM)
    case("a normal exit: written once", "exit", None)
    case("SIGTERM with MEMOBS_SIGNALS=0: Python ends by SIGTERM, nothing written", "wait", signal.SIGTERM,
         present=False, env_extra={"MEMOBS_SIGNALS": "0"})
    case("SIGHUP: memobs' handler writes, Python ends by SIGHUP", "wait", signal.SIGHUP)
    if PRELOAD:
        case("attached to the LD_PRELOAD library: Ctrl-C uncaught writes the preload's outputs", "wait",
             signal.SIGINT, preload=True)
        case("attached to the LD_PRELOAD library: SIGTERM writes the preload's outputs", "wait", signal.SIGTERM,
             preload=True)
        case("under the LD_PRELOAD library Ctrl-C is still Python's: caught, then a normal exit writes", "caught",
             signal.SIGINT, preload=True)
    sys.exit(TAP.failed)


main()
