"""tests/core/hostile/numbers_bools.py (tests/core/test_hostile_numbers.sh): one rule
for every boolean argument of the Python API (issue 38, item 21): True/False,
0/1, and the environment's words (0/1/on/off/true/false/yes/no, any case);
anything else raises TypeError or ValueError and changes nothing. Also
request_begin(2**64)'s message (item 22). Prints ok/not ok lines."""
import sys

import memobs

failed = 0


def ok(name, cond, detail=""):
    global failed
    if cond:
        print("ok - hostile-numbers: python: %s" % name)
    else:
        failed = 1
        print("not ok - hostile-numbers: python: %s" % name)
        if detail:
            print("    # %s" % detail)


# (name, setter(value) -> None, getter() -> bool, restore value)
SETTERS = [
    ("set_enabled", lambda v: memobs.set_enabled(v), memobs.get_enabled),
    ("enable", lambda v: memobs.enable(v), memobs.get_enabled),
    ("set_signals", lambda v: memobs.set_signals(v), memobs.get_signals),
    ("region_set_timing", lambda v: memobs.region_set_timing(v), memobs.region_get_timing),
    ("region_timing", lambda v: memobs.region_timing(v), memobs.region_get_timing),
]
OFF = [False, 0, "0", "off", "OFF", "false", "False", "no", "No"]
ON = [True, 1, "1", "on", "On", "true", "TRUE", "yes", "YES"]
BAD = [("maybe", ValueError), ("", ValueError), (" on", ValueError), ("onn", ValueError), (2, ValueError),
       (-1, ValueError), (2**70, ValueError), (None, TypeError), (1.0, TypeError), (0.0, TypeError),
       ([], TypeError), (b"on", TypeError)]

for name, setter, getter in SETTERS:
    start = getter()
    wrong = []
    for v in OFF:
        setter(True)
        setter(v)
        if getter() is not False:
            wrong.append("%r -> %r" % (v, getter()))
    for v in ON:
        setter(False)
        setter(v)
        if getter() is not True:
            wrong.append("%r -> %r" % (v, getter()))
    ok("%s: True/False, 0/1 and the words on/off/true/false/yes/no/0/1 (any case) set it" % name, not wrong,
       "; ".join(wrong))
    wrong = []
    for want in (False, True):
        setter(want)
        for v, exc in BAD:
            if v is None and name == "region_timing":
                continue  # on=None reads (below)
            try:
                setter(v)
                wrong.append("%r: accepted" % (v,))
            except exc as e:
                if not str(e).startswith(name + "(): on must be True/False"):
                    wrong.append("%r: message %r" % (v, str(e)))
            except Exception as e:  # noqa: BLE001
                wrong.append("%r: %s instead of %s" % (v, type(e).__name__, exc.__name__))
            if getter() is not want:
                wrong.append("%r changed the setting" % (v,))
    ok("%s: anything else raises TypeError/ValueError and changes nothing" % name, not wrong, "; ".join(wrong))
    setter(start)

ok("region_timing(None) still reads", memobs.region_timing(None) is memobs.region_get_timing())

# stack_text(boxed) and track_python_stacks(take_gil): the same rule
wrong = []
for v in ON + OFF:
    try:
        memobs.stack_text(boxed=v)
    except Exception as e:  # noqa: BLE001
        wrong.append("%r: %r" % (v, e))
for v, exc in BAD:
    try:
        memobs.stack_text(boxed=v)
        wrong.append("%r: accepted" % (v,))
    except exc:
        pass
    except Exception as e:  # noqa: BLE001
        wrong.append("%r: %s" % (v, type(e).__name__))
ok("stack_text(boxed=): the same rule", not wrong, "; ".join(wrong))
wrong = []
for v, exc in BAD:
    if v is None:
        continue  # take_gil=None: the default
    try:
        memobs.track_python_stacks(take_gil=v)
        wrong.append("%r: accepted" % (v,))
        memobs.untrack_python_stacks()
    except exc as e:
        if "take_gil must be True/False" not in str(e):
            wrong.append("%r: message %r" % (v, str(e)))
    except Exception as e:  # noqa: BLE001
        wrong.append("%r: %s" % (v, type(e).__name__))
for v in ("no", "yes", 0, 1):
    try:
        memobs.track_python_stacks(take_gil=v)
        memobs.untrack_python_stacks()
    except Exception as e:  # noqa: BLE001
        wrong.append("%r: %r" % (v, e))
ok("track_python_stacks(take_gil=): the same rule", not wrong, "; ".join(wrong))

# item 22: an id above 2**64-1 is out of range, not negative
for fn in ("request_begin", "request_token", "request_end"):
    try:
        getattr(memobs, fn)(2**64)
        ok("%s(2**64) raises ValueError" % fn, False, "accepted")
    except ValueError as e:
        ok("%s(2**64): ValueError says out of range (above 2**64-1), not '>= 0'" % fn,
           "above 2**64-1" in str(e) and ">= 0" not in str(e), str(e))
try:
    memobs.request_begin(-1)
except ValueError as e:
    ok("request_begin(-1): ValueError says >= 0", "must be >= 0" in str(e), str(e))
try:
    memobs.request_begin(-(2**70))
except ValueError as e:
    ok("request_begin(-2**70): ValueError says >= 0", "must be >= 0" in str(e), str(e))
memobs.set_enabled(True)
sys.exit(failed)
