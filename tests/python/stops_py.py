"""A Python engine that records through `import memobs`, then stops the way
its argument says (tests/python/stops_check.py runs it; tests/serving/test_stops.sh).

    python3 stops_py.py END

Records in STOPS_PY_THREADS threads, STOPS_PY_ITERS iterations each, the
same six records per iteration as tests/serving/stops/stops.c (H2D prefill 4096+t,
H2D decode 1024, D2H prefill 512, D2H decode 2048+t, D2D decode 256, D2D
unphased 64+t bytes) and the same tracked allocations (48 device, 32 host,
8 pinned; the same ones freed). Then END:
  return        falls off the end (status 0)
  wait          says "ready", then sleeps in a loop: Ctrl-C (SIGINT) ends it
                with an uncaught KeyboardInterrupt, SIGTERM by default
  caught        as wait, but catches KeyboardInterrupt and ends normally
  sigterm-exit  as wait, with a SIGTERM handler that raises SystemExit(0)
  flush-wait    memobs.flush(), then as wait (the script sends SIGKILL)
  _exit         os._exit(6)
STOPS_READY_FD: a pipe's write end for "ready PID". STOPS_PY_REF=1: the
reference run, with no memobs at all (a stub that records nothing), for
the exit status and signal without memobs.
"""
import os
import signal
import sys
import threading
import time

THREADS, ITERS = 2, 500

if os.environ.get("STOPS_PY_REF") == "1":
    class _Stub:
        def __getattr__(self, name):
            return lambda *a, **k: None
    memobs = _Stub()
else:
    import memobs


def say(word):
    fd = os.environ.get("STOPS_READY_FD")
    if fd:
        os.write(int(fd), ("%s %d\n" % (word, os.getpid())).encode())


def work(t):
    for _ in range(ITERS):
        memobs.record_h2d(4096 + t, True)
        memobs.record_h2d(1024, False)
        memobs.record_d2h(512, True)
        memobs.record_d2h(2048 + t, False)
        memobs.record_d2d(256, False)
        memobs.record_d2d(64 + t, None)  # no phase set on this thread: unphased


def record():
    ths = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    base = 0x7f0000000000
    for i in range(48):
        memobs.track_alloc(base + i, (1 << 20) + 4096 * i, "device", tag="kv_cache")
    for i in range(1, 48, 2):
        memobs.track_free(base + i)
    for i in range(32):
        memobs.track_alloc(base + 48 + i, 4096 * (i + 1), "host", tag="staging")
    for i in range(0, 32, 4):
        memobs.track_free(base + 48 + i)
    for i in range(8):
        memobs.track_alloc(base + 80 + i, 65536, "pinned", tag="pinned")


def sleep_forever():
    while True:
        time.sleep(0.005)


def main(end):
    record()
    if end == "return":
        return
    if end == "_exit":
        os._exit(6)
    if end == "flush-wait":
        memobs.flush()
    if end == "sigterm-exit":
        def on_term(sig, frame):
            raise SystemExit(0)
        signal.signal(signal.SIGTERM, on_term)
    if end == "caught":
        try:
            say("ready")
            sleep_forever()
        except KeyboardInterrupt:
            return
    say("ready")
    sleep_forever()


if __name__ == "__main__":
    main(sys.argv[1])
