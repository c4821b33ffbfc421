"""hello.py - memobs from Python, in one small program.

A pretend inference engine serves one request: the prompt's KV cache goes
to the GPU (prefill), then it generates 8 tokens and reads their logits
back (decode). memobs counts each copy by direction and phase, times the
request (TTFT, TPOT, end to end) and each decode step.

    pip install --no-build-isolation .   # the package memobs (offline), then:
    python3 examples/hello.py
    # or, from a source tree without installing:
    make python-module && PYTHONPATH=build/python python3 examples/hello.py

Needs: Python 3.9+ and the package memobs (above; without it: "skipped:
needs ...", status 0). No GPU: the "copies" are bytearray copies.
"""
import sys

try:
    import memobs
except ImportError as e:
    print("hello.py: skipped: needs the package memobs (%s): see the top of this file" % e, file=sys.stderr)
    sys.exit(0)

BLOCK = 64 * 1024  # bytes per KV cache block
PROMPT_BLOCKS = 4
TOKENS = 8
LOGITS = 4096  # bytes of logits read back per token

host_kv = [bytearray(BLOCK) for _ in range(PROMPT_BLOCKS)]
request = 1
memobs.request_begin(request)  # the request's clock starts

# Prefill: the second argument of record_* says "a prefill copy" (True),
# "a decode copy" (False) or "this thread's phase" (None).
gpu_kv = []
for block in host_kv:
    gpu_kv.append(bytes(block))
    memobs.record_h2d(BLOCK, True)

# Decode: from here on this thread is in the decode phase.
memobs.set_phase("decode")
gpu_logits = bytearray(LOGITS)
for _ in range(TOKENS):
    with memobs.region("decode_step"):  # a named span: counted and timed
        host_logits = bytes(gpu_logits)
        memobs.record_d2h(LOGITS, None)
    # The first token gives a TTFT sample, the next ones a TPOT sample each.
    memobs.request_token(request)
memobs.request_end(request)  # one end-to-end sample

# The figures as a dict: bytes and copies per phase, latencies in ns ...
s = memobs.get_summary()
prefill, decode = s["phases"]["prefill"], s["phases"]["decode"]
print("prefill H2D: %d bytes in %d copies" % (prefill["h2d_bytes"], prefill["h2d_count"]))
print("decode D2H: %d bytes in %d copies" % (decode["d2h_bytes"], decode["d2h_count"]))
print("TTFT samples %d, TPOT samples %d" % (s["ttft"]["count"], s["tpot"]["count"]))
for r in s["regions"]:
    print("region %s: %d times" % (r["name"], r["count"]))
# ... and the whole summary on stderr, as memobs_print_summary() in C.
memobs.print_summary()
