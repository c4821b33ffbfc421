"""The Python package's limits (tests/serving/test_handlers.sh): values memobs would
refuse (above MEMOBS_MAX_BYTES or MEMOBS_MAX_NS, 2**56) raise ValueError
and record nothing; the limits themselves pass. Run with the package on
PYTHONPATH; argv[1] is the instance expected: "private" (memobs._memobs) or
"preload" (memobs._memobs_attached, under LD_PRELOAD=libmemobs_preload.so).
Prints TAP lines; exits 1 on a failure."""
import sys

import memobs

SUITE = "handlers-python-" + sys.argv[1]
failed = 0


def check(name, want, got):
    global failed
    if want == got:
        print("ok - %s: %s" % (SUITE, name))
    else:
        failed += 1
        print("not ok - %s: %s" % (SUITE, name))
        print("    # expected %r" % (want,))
        print("    # got      %r" % (got,))


def raises(call, *args):
    try:
        call(*args)
    except ValueError as e:
        return "ValueError: " + str(e)
    except Exception as e:  # noqa: BLE001 (the wrong exception is the failure shown)
        return "%s: %s" % (type(e).__name__, e)
    return "no exception"


def xfer(s, key):
    # attached, the package's records are the program's own claims, counted apart
    return s["manual"]["total"][key] if s["manual"]["apart"] else s["total"][key]


check("instance", sys.argv[1], memobs.instance())
memobs.reset()
big = 2**56 + 1
check("record_h2d(2**56 + 1, True)", "ValueError: record_h2d(): num_bytes must be at most 2**56 (MEMOBS_MAX_BYTES), "
      "got %d" % big, raises(memobs.record_h2d, big, True))
check("record_d2h(2**64 - 1, None)", "ValueError: record_d2h(): num_bytes must be at most 2**56 (MEMOBS_MAX_BYTES), "
      "got %d" % (2**64 - 1), raises(memobs.record_d2h, 2**64 - 1, None))
check("record_d2d(num_bytes=2**57, is_prefill=False)", True,
      raises(lambda: memobs.record_d2d(num_bytes=2**57, is_prefill=False)).startswith("ValueError: record_d2d(): "))
check("record_ttft(2**64 - 1)", "ValueError: record_ttft(): ns must be at most 2**56 (MEMOBS_MAX_NS), got %d"
      % (2**64 - 1), raises(memobs.record_ttft, 2**64 - 1))
check("record_tpot(2**56 + 1)", True, raises(memobs.record_tpot, big).startswith("ValueError: record_tpot(): ns must"))
check("track_alloc(0x7000, 2**56 + 1, 'host')", "ValueError: track_alloc(): nbytes must be at most 2**56 "
      "(MEMOBS_MAX_BYTES), got %d" % big, raises(memobs.track_alloc, 0x7000, big, "host"))
check("record_s2h(2**56 + 1, True)", "ValueError: record_s2h(): num_bytes must be at most 2**56 (MEMOBS_MAX_BYTES), "
      "got %d" % big, raises(memobs.record_s2h, big, True))
check("record_xfer('d2s', 2**56 + 1)", "ValueError: record_xfer(): nbytes must be at most 2**56 (MEMOBS_MAX_BYTES), "
      "got %d" % big, raises(memobs.record_xfer, "d2s", big))
check("record_xfer_ns('s2d', 1, None, 2**56 + 1)", "ValueError: record_xfer_ns(): ns must be at most 2**56 "
      "(MEMOBS_MAX_NS), got %d" % big, raises(memobs.record_xfer_ns, "s2d", 1, None, big))
check("timed_transfer('h2s', 2**56 + 1)", True,
      raises(memobs.timed_transfer, "h2s", big).startswith("ValueError: timed_transfer(): nbytes must be at most"))
s = memobs.get_summary()
check("nothing recorded by the refused calls", {"h2d_count": 0, "d2h_count": 0, "d2d_count": 0, "ttft": 0, "tpot": 0,
                                                  "bad_records": 0, "storage": [0, 0, 0, 0], "timed": 0},
      {"h2d_count": xfer(s, "h2d_count"), "d2h_count": xfer(s, "d2h_count"), "d2d_count": xfer(s, "d2d_count"),
       "ttft": s["ttft"]["count"], "tpot": s["tpot"]["count"], "bad_records": s["problems"]["bad_records"],
       # the storage tier is never counted apart: no observer sees it
       "storage": [s["total"][d + "_count"] for d in ("h2s", "s2h", "d2s", "s2d")],
       "timed": sum(s["timed"][p][d]["count"] for p in ("prefill", "decode", "unphased") for d in s["timed"][p])})
memobs.record_ttft(5)
memobs.record_h2d(2**56, True)
memobs.record_h2d(2, True)
s = memobs.get_summary()
check("record_ttft(2**64 - 1) then record_ttft(5): mean 5 ns", (1, 5), (s["ttft"]["count"], s["ttft"]["mean_ns"]))
check("the limit itself passes: record_h2d(2**56) + record_h2d(2)", (2, 2**56 + 2),
      (xfer(s, "h2d_count"), xfer(s, "h2d_bytes")))
memobs.record_xfer_ns("d2s", 2**56, True, 2**56)
s = memobs.get_summary()
check("the limits themselves pass: record_xfer_ns('d2s', 2**56, True, 2**56)",
      ({"bytes": 2**56, "count": 1, "ns": 2**56}, 2**56, [[2**56, 1]]),
      (s["timed"]["prefill"]["d2s"], s["total"]["d2s_bytes"], s["sizes"]["d2s"]["buckets"]))
check("signal_dropped in the problems", 0, s["problems"].get("signal_dropped"))
sys.exit(1 if failed else 0)
