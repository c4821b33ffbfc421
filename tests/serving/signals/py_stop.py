"""tests/serving/signals/py_stop.py MODE: a Python engine's stand-in for
tests/serving/signals/py_drive.py. Records known figures through the package
memobs (on PYTHONPATH), prints "ready PID INSTANCE", then by MODE:
  wait    sleeps until stopped (Ctrl-C: an uncaught KeyboardInterrupt)
  caught  sleeps until Ctrl-C, catches the KeyboardInterrupt, prints
          "caught" and returns (a normal exit)
  exit    returns at once (a normal exit)
STOP_NO_MEMOBS=1: the same without memobs (the reference exit status)."""
import os
import sys
import time

if os.environ.get("STOP_NO_MEMOBS"):
    class _NoMemobs:
        def __getattr__(self, name):
            return lambda *a, **k: None

    memobs = _NoMemobs()
else:
    import memobs

for _ in range(3):
    memobs.record_h2d(1000, True)
memobs.record_d2h(205, False)
memobs.record_d2d(30, True)
mode = sys.argv[1]
try:  # "ready" inside: Ctrl-C may come while print() still runs
    print("ready", os.getpid(), memobs.instance(), flush=True)
    while mode != "exit":
        time.sleep(0.01)
except KeyboardInterrupt:
    if mode != "caught":
        raise
    print("caught", flush=True)
