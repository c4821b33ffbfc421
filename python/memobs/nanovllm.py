"""memobs.nanovllm - nano-vllm's observers, backed by memobs.

Change one import line of a nano-vllm engine::

    -from nanovllm.utils.observer import Observer, InferenceObserver, MemoryObserver
    +from memobs.nanovllm import Observer, InferenceObserver, MemoryObserver

and every name the engine touches behaves as before: the class attributes
read and written on the classes (``Observer.ttft_start = perf_counter_ns()``,
``MemoryObserver._enabled = True``, ``MemoryObserver.h2d_bytes``),
``record_h2d(num_bytes, is_prefill=True)``, ``record_d2h``, ``record_d2d``,
``complete_reset()``, ``reset_ttft()``, ``get_summary()`` (the same dict,
the same key order), ``_fmt_bytes()`` and ``print_summary()`` (the same text,
line for line), and subclasses that add class variables of their own.

Behind them is memobs:

- The byte and op counters are memobs' transfer counters, exact under
  threads (nano-vllm's ``cls.h2d_bytes += n`` loses increments when threads
  record at once). ``record_h2d(n, True)`` is ``memobs.record_h2d(n, True)``:
  it also shows in ``memobs.print_summary()``, the Prometheus exporter and
  the timeline.
- Every positive value an engine assigns to ``ttft`` or ``tpot`` (on any of
  the classes) is also a sample of memobs' TTFT/TPOT histograms, so
  ``memobs.print_summary()`` shows percentiles where nano-vllm kept the last
  value only.

Where it knowingly differs from nano-vllm:

- The counters are one set for the process, read from memobs: a record made
  through a subclass (``MySub.record_h2d``) adds to the same totals
  ``MemoryObserver`` shows (nano-vllm's ``cls.x += n`` would start a separate
  copy on the subclass), and transfers recorded through memobs by other code
  of the process (``memobs.record_h2d``) count too.
- ``complete_reset()`` and assignments to a counter move a per-counter base
  kept here; memobs' own totals are never reset by them (its exporters stay
  monotonic). ``memobs.reset()`` zeroes memobs' totals: a counter read after
  it shows what was recorded since, at most, never a negative value.
- Bad input raises as ``memobs.record_h2d`` does (a negative, non-integer or
  too large ``num_bytes``: ValueError or TypeError); nano-vllm would add it.
  While ``_enabled`` is False nothing is checked, as in nano-vllm.
- ``record_d2d`` has no phase, as in nano-vllm; memobs files it under the
  calling thread's phase (``memobs.set_phase``), unphased by default.
"""

import memobs as _m

__all__ = ["Observer", "InferenceObserver", "MemoryObserver"]

_rec_h2d = _m.record_h2d
_rec_d2h = _m.record_d2h
_rec_d2d = _m.record_d2d
_rec_ttft = _m.record_ttft
_rec_tpot = _m.record_tpot

# The ten counters, and where memobs keeps each: (section, key) of get_summary.
_COUNTERS = {
    "h2d_bytes": ("total", "h2d_bytes"),
    "h2d_count": ("total", "h2d_count"),
    "d2h_bytes": ("total", "d2h_bytes"),
    "d2h_count": ("total", "d2h_count"),
    "d2d_bytes": ("total", "d2d_bytes"),
    "d2d_count": ("total", "d2d_count"),
    "prefill_h2d_bytes": ("prefill", "h2d_bytes"),
    "prefill_d2h_bytes": ("prefill", "d2h_bytes"),
    "decode_h2d_bytes": ("decode", "h2d_bytes"),
    "decode_d2h_bytes": ("decode", "d2h_bytes"),
}
_base = dict.fromkeys(_COUNTERS, 0)  # memobs' value that reads as 0
_on = False  # MemoryObserver._enabled


def _live():
    s = _m.get_summary()
    return {name: s[sec][key] for name, (sec, key) in _COUNTERS.items()}


def _read(name, live=None):
    v = (live if live is not None else _live())[name] - _base[name]
    return v if v > 0 else 0


def _write(name, value):
    _base[name] = _live()[name] - int(value)


class _Timing:
    """A class attribute of the timing four, stored per class as a class
    variable is (a subclass sees its base's value until it assigns its
    own); ttft and tpot assignments > 0 are memobs samples."""

    def __init__(self, name, sample=None):
        self.slot = "_memobs_" + name
        self.sample = sample

    def __get__(self, obj, cls):
        return getattr(cls if obj is None else obj, self.slot)

    def __set__(self, cls, value):
        type.__setattr__(cls, self.slot, value)
        if self.sample is not None and isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            self.sample(int(value))


class _Counter:
    def __init__(self, name):
        self.name = name

    def __get__(self, obj, cls):
        return _read(self.name)

    def __set__(self, cls, value):
        _write(self.name, value)


class _Enabled:
    def __get__(self, obj, cls):
        return _on

    def __set__(self, cls, value):
        global _on
        _on = bool(value)


class _ObserverMeta(type):
    """Class attributes of the observers are data descriptors on this
    metaclass, so reads and writes on the classes go through memobs."""

    ttft_start = _Timing("ttft_start")
    tpot_start = _Timing("tpot_start")
    ttft = _Timing("ttft", _rec_ttft)
    tpot = _Timing("tpot", _rec_tpot)


class Observer(metaclass=_ObserverMeta):
    """nano-vllm's timing observer: class attributes ttft_start, tpot_start,
    ttft, tpot (ns, 0 at start), assigned by the engine."""

    _memobs_ttft_start = 0
    _memobs_tpot_start = 0
    _memobs_ttft = 0
    _memobs_tpot = 0

    @classmethod
    def reset_ttft(cls):
        cls.ttft_start = 0

    @classmethod
    def complete_reset(cls):
        cls.ttft_start = 0
        cls.tpot_start = 0
        cls.ttft = 0
        cls.tpot = 0


class InferenceObserver(Observer):
    """The design document's name of the timing observer: the same class
    attributes (its own values, as a subclass of Observer has)."""


class _MemoryMeta(_ObserverMeta):
    _enabled = _Enabled()


for _name in _COUNTERS:
    setattr(_MemoryMeta, _name, _Counter(_name))
del _name


def _fmt_bytes(b):
    if b >= 1e9:
        return f"{b / 1e9:.2f} GB"
    if b >= 1e6:
        return f"{b / 1e6:.2f} MB"
    if b >= 1e3:
        return f"{b / 1e3:.2f} KB"
    return f"{b} B"


class MemoryObserver(Observer, metaclass=_MemoryMeta):
    """nano-vllm's transfer observer, counting in memobs."""

    @staticmethod
    def record_h2d(num_bytes, is_prefill=True):
        if _on:
            _rec_h2d(num_bytes, True if is_prefill else False)

    @staticmethod
    def record_d2h(num_bytes, is_prefill=True):
        if _on:
            _rec_d2h(num_bytes, True if is_prefill else False)

    @staticmethod
    def record_d2d(num_bytes):
        if _on:
            _rec_d2d(num_bytes, None)

    @classmethod
    def complete_reset(cls):
        live = _live()
        _base.update(live)

    @classmethod
    def get_summary(cls):
        live = _live()
        r = {n: _read(n, live) for n in _COUNTERS}
        return {
            "total": {k: r[k] for k in ("h2d_bytes", "h2d_count", "d2h_bytes", "d2h_count", "d2d_bytes",
                                         "d2d_count")},
            "prefill": {"h2d_bytes": r["prefill_h2d_bytes"], "d2h_bytes": r["prefill_d2h_bytes"]},
            "decode": {"h2d_bytes": r["decode_h2d_bytes"], "d2h_bytes": r["decode_d2h_bytes"]},
        }

    _fmt_bytes = staticmethod(_fmt_bytes)

    @classmethod
    def print_summary(cls):
        s = cls.get_summary()
        t, p, d = s["total"], s["prefill"], s["decode"]
        f = cls._fmt_bytes
        print(f"[MemoryObserver] Total: {f(t['h2d_bytes'] + t['d2h_bytes'] + t['d2d_bytes'])}")
        print(f"  H2D: {f(t['h2d_bytes'])} ({t['h2d_count']} ops)")
        print(f"  D2H: {f(t['d2h_bytes'])} ({t['d2h_count']} ops)")
        print(f"  D2D: {f(t['d2d_bytes'])} ({t['d2d_count']} ops)")
        print(f"  Prefill - H2D: {f(p['h2d_bytes'])}, D2H: {f(p['d2h_bytes'])}")
        print(f"  Decode  - H2D: {f(d['h2d_bytes'])}, D2H: {f(d['d2h_bytes'])}")
