"""The Python process of tests/serving/test_prom_multiproc.sh: an engine's
process that records its own prometheus_client counter in multiprocess mode
and memobs' figures through the package (its private memobs), with
PROMETHEUS_MULTIPROC_DIR set.

  pyworker.py TEXT_PATTERN     (TEXT_PATTERN % round: where the text goes)

Creates its own counter first (its file, in Debian's layout, is then in the
folder before any memobs write), prints "ready"; then, for rounds 1 and 2,
waits for a line, records, memobs.flush()es, writes memobs'
format_prometheus() text, prints "written N"; waits for a line and exits.
Per round: 2 H2D of 8192 in prefill, 1 D2H of 1 MiB in decode, one S2H of
4096 timed 2 us by the engine, a request begun, a token, ended; 512 bytes
of host memory tracked and kept."""
import sys

from prometheus_client import Counter

import memobs

engine = Counter("engine_requests", "The engine's own requests, beside memobs' figures.")
engine.inc(5)
print("ready", flush=True)
for rnd in (1, 2):
    if not sys.stdin.readline():
        sys.exit(1)
    memobs.record_h2d(8192, True)
    memobs.record_h2d(8192, True)
    memobs.record_xfer("d2h", 1 << 20, "decode")
    memobs.record_xfer_ns("s2h", 4096, None, 2000)
    memobs.request_begin(100 + rnd)
    memobs.request_token(100 + rnd)
    memobs.request_end(100 + rnd)
    memobs.track_alloc(0x10000 * rnd, 512, "host", "pyworker")
    memobs.flush()
    with open(sys.argv[1] % rnd, "w", encoding="utf-8") as f:
        f.write(memobs.format_prometheus())
    print("written %d" % rnd, flush=True)
sys.exit(0 if sys.stdin.readline() else 1)
