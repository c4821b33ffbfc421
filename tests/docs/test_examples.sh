#!/usr/bin/env bash
# The small programs of examples/: `make examples` builds them, and each one
# runs and prints the figures its comments promise, exactly.
#   hello.c          text and JSON summary: H2D 262144 bytes / 4 ops in
#                    prefill, D2H 32768 / 8 in decode, TTFT 1, TPOT 7, E2E 1,
#                    region decode_step 8 times
#   hello.py         the same through the Python package (build/python)
#   hello_cuda.cu    nvcc's object linked with the CUDA runtime double
#                    (tests/cuda/cudart_double.c) instead of libcudart:
#                    H2D 1 MiB in prefill, D2H 4 x 4 KiB in decode, device
#                    and pinned peaks 1 MiB; with the real runtime and no
#                    GPU, "skipped: needs a GPU (...)", status 0, no summary
#   hello_preload.sh its plain CUDA program under memobs-run, against the
#                    double as libcudart.so.13: the same figures, unphased;
#                    with no GPU or no toolkit, "skipped: needs ...", status 0
# Each example's header says what it needs ("Needs:"); make examples with no
# CUDA Toolkit (CUDA_INC, NVCC pointed at a missing folder) leaves the CUDA
# parts out with one line each, status 0.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/examples
rm -rf "$B" && mkdir -p "$B"
B=$(cd "$B" && pwd)
CC=${CC:-cc}
CXX=${CXX:-c++}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror"

. tests/lib.sh # a clean environment, expect_check, line
unset LD_PRELOAD MEMOBS_PRELOAD_LIB MEMOBS_TIMELINE MAKEFLAGS MFLAGS MAKELEVEL
ok() { echo "ok - examples: $1"; }
bad() { echo "not ok - examples: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

for f in "$CUDA_INC/cuda_runtime_api.h" "$NVCC"; do
    if [ ! -e "$f" ]; then
        echo "not ok - examples: $f is missing (set CUDA_INC / NVCC; tests/deps.sh installs the toolkit)"
        exit 1
    fi
done

# 1. make examples
E=$B/examples
if make -s examples BUILD="$B" NVCC="$NVCC" >"$B/make.log" 2>&1 && [ ! -s "$B/make.log" ] &&
    [ -x "$E/hello" ] && [ -x "$E/hello_cuda" ] && [ -f "$E/hello_cuda.o" ] && [ -d "$B/python/memobs" ] &&
    [ -f "$B/libmemobs_preload.so" ]; then
    ok "make examples: hello, hello_cuda (nvcc, warnings as errors), the Python package, the preload library"
else
    bad "make examples: hello, hello_cuda, the Python package, the preload library" "$(head -c 2000 "$B/make.log")"
    exit 1
fi
long=
for f in examples/hello.c examples/hello.py examples/hello_cuda.cu examples/hello_preload.sh; do
    n=$(wc -l <"$f")
    [ "$n" -le 60 ] || long="$long $f: $n lines;"
done
if [ -z "$long" ]; then ok "hello.c, hello.py, hello_cuda.cu, hello_preload.sh: 60 lines at most each"; else bad "examples of 60 lines at most" "$long"; fi
miss=
for f in examples/hello.c examples/hello.py examples/hello_cuda.cu examples/hello_preload.sh; do
    grep -q 'Needs: ' "$f" || miss="$miss $f"
done
if [ -z "$miss" ]; then ok "each example's header says what it needs (Needs: ...)"; else bad "each example's header says what it needs" "no 'Needs: ' in:$miss"; fi

# make examples without the CUDA Toolkit: the CUDA parts left out, one line
# each, status 0 (as make install leaves the preload library out)
NO=$B/no-cuda
if make -s examples BUILD="$B" NVCC="$NO/bin/nvcc" CUDA_INC="$NO/include" >"$B/make-nocuda.log" 2>&1 &&
    [ "$(cat "$B/make-nocuda.log")" = "make examples: no $NO/include/cuda_runtime_api.h (set CUDA_INC): the preload library (hello_preload.sh) left out
make examples: no nvcc at $NO/bin/nvcc (set NVCC): hello_cuda left out" ]; then
    ok "make examples without the CUDA Toolkit: status 0, hello_cuda and the preload library left out, one line each"
else
    bad "make examples without the CUDA Toolkit: status 0, one line per part left out" "$(head -c 1500 "$B/make-nocuda.log")"
fi

# rows KIND FILE: the text summary's rows, checked against the regexes that follow
rows() {
    local f=$1 r miss=
    shift
    grep -q '^== memobs summary ==' "$f" || miss=" (no summary)"
    for r in "$@"; do grep -Eq "$r" "$f" || miss="$miss [$r]"; done
    [ -z "$miss" ] || { echo "missing:$miss"; return 1; }
}
HELLO_ROWS=('^  H2D +\| +262\.14 KB +4 \| +262\.14 KB +4 \| +0 B +0 \| +0 B +0$'
    '^  D2H +\| +32\.77 KB +8 \| +0 B +0 \| +32\.77 KB +8 \| +0 B +0$'
    '^  TTFT +1 ' '^  TPOT +7 ' '^  E2E +1 ' '^  requests: 1 begun, 1 completed, 0 aborted'
    '^  decode_step +8 ')
HELLO_JSON='{"prefill": {"h2d_bytes": 262144, "h2d_count": 4, "d2h_bytes": 0}, "decode": {"d2h_bytes": 32768, "d2h_count": 8, "h2d_bytes": 0}, "unphased": {"h2d_bytes": 0, "d2h_bytes": 0}, "ttft": {"count": 1}, "tpot": {"count": 7}, "e2e": {"count": 1}}'

# 2. hello.c
"$E/hello" >"$B/hello.out" 2>"$B/hello.err"
st=$?
if [ $st = 0 ] && [ ! -s "$B/hello.out" ] && out=$(rows "$B/hello.err" "${HELLO_ROWS[@]}"); then
    ok "hello: the summary on stderr: H2D 262.14 KB / 4 all prefill, D2H 32.77 KB / 8 all decode, TTFT 1, TPOT 7, E2E 1, decode_step 8"
else
    bad "hello: the summary's figures" "status $st" "$out" "$(head -c 1500 "$B/hello.err")"
fi
MEMOBS_FORMAT=json "$E/hello" >/dev/null 2>"$B/hello.json"
if out=$(expect_check "$B/hello.json" "$HELLO_JSON") &&
    json_check "$B/hello.json" '[(r["name"], r["count"]) for r in s["regions"]] == [("decode_step", 8)]' regions >"$B/r.log"; then
    ok "hello with MEMOBS_FORMAT=json: 262144 bytes in 4 H2D (prefill), 32768 in 8 D2H (decode); 1 TTFT, 7 TPOT, 1 E2E; decode_step 8"
else
    bad "hello with MEMOBS_FORMAT=json: the exact figures" "$out" "$(cat "$B/r.log")"
fi

# 3. hello.py
PYTHONPATH="$B/python" python3 examples/hello.py >"$B/py.out" 2>"$B/py.err"
st=$?
want='prefill H2D: 262144 bytes in 4 copies
decode D2H: 32768 bytes in 8 copies
TTFT samples 1, TPOT samples 7
region decode_step: 8 times'
if [ $st = 0 ] && [ "$(cat "$B/py.out")" = "$want" ] && out=$(rows "$B/py.err" "${HELLO_ROWS[@]}"); then
    ok "hello.py: get_summary() gives 262144 bytes / 4 H2D in prefill, 32768 / 8 D2H in decode, TTFT 1, TPOT 7, decode_step 8; print_summary() the same rows as hello.c"
else
    bad "hello.py: the figures printed and the summary" "status $st" "$(cat "$B/py.out")" "$out" "$(head -c 1500 "$B/py.err")"
fi

# hello.py without the package (python3 -S: no site-packages): a skip, not a failure
python3 -S examples/hello.py >"$B/py-skip.out" 2>"$B/py-skip.err"
st=$?
if [ $st = 0 ] && [ ! -s "$B/py-skip.out" ] && grep -q '^hello.py: skipped: needs the package memobs (' "$B/py-skip.err" &&
    [ "$(wc -l <"$B/py-skip.err")" = 1 ]; then
    ok "hello.py without the package memobs: 'hello.py: skipped: needs the package memobs (...)', status 0"
else
    bad "hello.py without the package memobs: one skipped line, status 0" "status $st" "$(head -c 800 "$B/py-skip.err")"
fi

# 4. hello_cuda.cu: nvcc's object with the runtime double (and nvcc's fat binary stubs)
CUDA_JSON='{"prefill": {"h2d_bytes": 1048576, "h2d_count": 1, "d2h_bytes": 0}, "decode": {"d2h_bytes": 16384, "d2h_count": 4, "h2d_bytes": 0}, "memory": {"device": {"current_bytes": 0, "peak_bytes": 1048576, "allocs": 1, "frees": 1}, "pinned": {"current_bytes": 0, "peak_bytes": 1048576, "allocs": 1, "frees": 1}}}'
if { $CC -std=c11 -O2 $W -I. -I"$CUDA_INC" -c tests/cuda/cudart_double.c -o "$B/double.o" &&
    $CC -std=c11 $W -c tests/cuda/nvtx/fatbin_stubs.c -o "$B/fatbin_stubs.o" &&
    $CXX -o "$B/hello_cuda_double" "$E/hello_cuda.o" "$B/double.o" "$B/fatbin_stubs.o" -pthread -rdynamic -lm -ldl; } \
    >"$B/cuda.log" 2>&1 && ! nm "$B/hello_cuda_double" | grep -q ' U cuda'; then
    "$B/hello_cuda_double" >"$B/cuda.out" 2>"$B/cuda.err"
    st=$?
    MEMOBS_FORMAT=json "$B/hello_cuda_double" >/dev/null 2>"$B/cuda.json"
    if [ $st = 0 ] && out=$(rows "$B/cuda.err" '^  H2D +\| +1\.05 MB +1 \| +1\.05 MB +1 \| +0 B +0 \| +0 B +0$' \
        '^  D2H +\| +16\.38 KB +4 \| +0 B +0 \| +16\.38 KB +4 \| +0 B +0$' \
        '^  device +\| +0 B +1\.05 MB \| +0 +1 +1 ' '^  pinned +\| +0 B +1\.05 MB \| +0 +1 +1 ') &&
        out=$(expect_check "$B/cuda.json" "$CUDA_JSON"); then
        ok "hello_cuda (nvcc) against the runtime double: H2D 1048576 bytes / 1 in prefill, D2H 16384 / 4 in decode, device and pinned peak 1048576, all freed"
    else
        bad "hello_cuda (nvcc) against the runtime double: the figures" "status $st" "$out" "$(head -c 1500 "$B/cuda.err")"
    fi
else
    bad "hello_cuda's nvcc object links with the runtime double (no libcudart)" "$(head -c 1500 "$B/cuda.log")"
fi
"$E/hello_cuda" >"$B/real.out" 2>"$B/real.err"
st=$?
if [ $st = 0 ] && { grep -q '^== memobs summary ==' "$B/real.err" ||
    { [ "$(wc -l <"$B/real.err")" = 1 ] && grep -q '^hello_cuda: skipped: needs a GPU (.*)$' "$B/real.err"; }; }; then
    ok "hello_cuda with the real runtime: a summary on a GPU, else status 0 and one line: $(head -n 1 "$B/real.err")"
else
    bad "hello_cuda with the real runtime: a summary, else status 0 and 'hello_cuda: skipped: needs a GPU (...)' alone" \
        "status $st" "$(head -c 800 "$B/real.err")"
fi

# 5. hello_preload.sh: its program, linked with -lcudart, finds the double first
if $CC -std=c11 -O2 -g -fPIC -shared $W -I. -I"$CUDA_INC" tests/cuda/cudart_double.c -o "$B/libcudart.so.13" \
    -Wl,-soname,libcudart.so.13 -Wl,--version-script=mk/cudart_double.map -pthread >"$B/dbl.log" 2>&1; then
    PRE=(LD_LIBRARY_PATH="$B" BUILD="$B" MEMOBS_PRELOAD_LIB="$B/libmemobs_preload.so")
    env "${PRE[@]}" examples/hello_preload.sh >"$B/pre.out" 2>"$B/pre.err"
    st=$?
    env "${PRE[@]}" examples/hello_preload.sh --json "$B/pre.json" "$B/examples/plain_cuda" >"$B/pre2.out" 2>"$B/pre2.err"
    st2=$?
    if [ $st = 0 ] && [ $st2 = 0 ] && [ ! -s "$B/pre2.err" ] &&
        out=$(rows "$B/pre.err" '^  H2D +\| +1\.05 MB +1 \| +0 B +0 \| +0 B +0 \| +1\.05 MB +1$' \
            '^  D2H +\| +16\.38 KB +4 \| +0 B +0 \| +0 B +0 \| +16\.38 KB +4$' '^  device +\| +0 B +1\.05 MB \| +0 +1 +1 ') &&
        out=$(expect_check "$B/pre.json" '{"unphased": {"h2d_bytes": 1048576, "h2d_count": 1, "d2h_bytes": 16384, "d2h_count": 4}, "memory": {"device": {"peak_bytes": 1048576, "allocs": 1, "frees": 1}}}'); then
        ok "hello_preload.sh: its plain CUDA program under memobs-run: H2D 1.05 MB / 1, D2H 16.38 KB / 4 (unphased), device peak 1.05 MB; with --json FILE CMD the same, exact"
    else
        bad "hello_preload.sh: the figures" "status $st / $st2" "$out" "$(head -c 1500 "$B/pre.err")" "$(head -c 500 "$B/pre2.err")"
    fi
else
    bad "the runtime double as libcudart.so.13" "$(head -c 1500 "$B/dbl.log")"
fi
# with the real runtime: a GPU's figures, or a skip (never a zero summary)
BUILD="$B" MEMOBS_PRELOAD_LIB="$B/libmemobs_preload.so" examples/hello_preload.sh >"$B/pre-real.out" 2>"$B/pre-real.err"
st=$?
if [ $st = 0 ] && { grep -Eq '^  H2D +\| +1\.05 MB +1 ' "$B/pre-real.err" ||
    { [ "$(wc -l <"$B/pre-real.err")" = 1 ] && grep -q '^hello_preload.sh: skipped: needs a GPU (.*)$' "$B/pre-real.err"; }; }; then
    ok "hello_preload.sh with the real runtime: the figures on a GPU, else status 0 and one line: $(head -n 1 "$B/pre-real.err")"
else
    bad "hello_preload.sh with the real runtime: figures, else 'hello_preload.sh: skipped: needs a GPU (...)' alone" \
        "status $st" "$(head -c 800 "$B/pre-real.err")"
fi
CUDA_HOME="$NO" BUILD="$B" MEMOBS_PRELOAD_LIB="$B/libmemobs_preload.so" examples/hello_preload.sh >"$B/pre-nk.out" 2>"$B/pre-nk.err"
st=$?
if [ $st = 0 ] && [ "$(cat "$B/pre-nk.err")" = "hello_preload.sh: skipped: needs the CUDA Toolkit (no $NO/include/cuda_runtime_api.h; set CUDA_HOME)" ]; then
    ok "hello_preload.sh with no CUDA Toolkit (CUDA_HOME at a missing folder): one skipped line, status 0"
else
    bad "hello_preload.sh with no CUDA Toolkit: one skipped line, status 0" "status $st" "$(head -c 800 "$B/pre-nk.err")"
fi

exit $rc
