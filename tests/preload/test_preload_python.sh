#!/usr/bin/env bash
# The Python package and the LD_PRELOAD library in one process: one memobs.
# Builds `make preload`, `make python-module` (memobs._memobs and
# memobs._memobs_attached), the runtime double as libcudart.so.13 (as
# tests/preload/test_preload.sh does) and two libraries linked to it
# (tests/preload/user.c, tests/preload/pyuser.c), then runs
# tests/python/preload_attach_check.py under the preload: the package
# attaches to the library's memobs (phase, regions, Python stacks on the
# intercepted allocations, its records apart as "manual", memobs.prometheus'
# scrape), the library's JSON summary at exit holds it all, one summary, not two;
# MEMOBS_PY_ATTACH=0, a library with another ABI key, and no preload at all
# give the private memobs, with one warning where one is due.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/preload-python
rm -rf "$B" && mkdir -p "$B"
B=$(cd "$B" && pwd)
CC=${CC:-cc}
PYTHON=${PYTHON:-python3}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror"

. tests/lib.sh # a clean environment, json_check
unset LD_PRELOAD MEMOBS_PRELOAD_ROOT MEMOBS_PY_ATTACH
ok() { echo "ok - preload-python: $1"; }
bad() { echo "not ok - preload-python: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

if [ ! -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    echo "not ok - preload-python: $CUDA_INC/cuda_runtime_api.h is missing (set CUDA_INC; tests/deps.sh installs the toolkit)"
    exit 1
fi
# the interpreter itself, not a launcher script (pyenv's shim runs helper
# processes, each of which would load the preload and write its summary)
if ! PY=$("$PYTHON" -c 'import sys; print(sys.executable)' 2>/dev/null) || [ ! -x "$PY" ]; then
    echo "not ok - preload-python: $PYTHON not found"
    exit 1
fi


rc=0
LIB=$B/libmemobs_preload.so
PKG=$B/python
SUFFIX=$("$PYTHON-config" --extension-suffix 2>/dev/null)
ATT=$PKG/memobs/_memobs_attached$SUFFIX

# 1. the builds
if { make -s BUILD="$B" preload python-module &&
    $CC -std=c11 -O2 -g -fPIC -shared $W -I. -I"$CUDA_INC" tests/cuda/cudart_double.c -o "$B/libcudart.so.13" \
        -Wl,-soname,libcudart.so.13 -Wl,--version-script=mk/cudart_double.map -pthread &&
    $CC -std=c11 -O2 -g -fPIC -shared $W -I"$CUDA_INC" tests/preload/user.c -o "$B/libuser.so" \
        -L"$B" -l:libcudart.so.13 &&
    $CC -std=c11 -O2 -g -fPIC -shared $W -I"$CUDA_INC" tests/preload/pyuser.c -o "$B/libpyuser.so" \
        -L"$B" -l:libcudart.so.13 &&
    printf '%s\n' '#include <stdint.h>' 'uint64_t memobs_preload_abi(void) { return 0x1234; }' >"$B/fakeabi.c" &&
    $CC -std=c11 -O2 -fPIC -shared $W "$B/fakeabi.c" -o "$B/libfakeabi.so"; } >"$B/build.log" 2>&1 &&
    [ ! -s "$B/build.log" ] && [ -f "$LIB" ] && [ -f "$ATT" ]; then
    ok "build: make preload python-module warning-free (both extensions), the double as libcudart.so.13, libuser.so, libpyuser.so, a library with another ABI key"
else
    bad "build: make preload python-module, the double, libuser.so, libpyuser.so" "$(head -c 3000 "$B/build.log")"
    exit 1
fi

# 2. the attached module holds no memobs: memobs' symbols undefined, only PyInit exported;
# none of memobs.torch's allocator (memobs_torch_malloc, memobs_torch__*) or CUDA
# (memobs_torch_history_start/_stop are memobs' C API, the preload's)
def=$(nm -D --defined-only "$ATT" | awk '$2 != "A" {print $3}' | tr '\n' ' ')
und=$(nm -D --undefined-only "$ATT" | awk '{print $NF}')
nund=$(echo "$und" | grep -c '^memobs')
if [ "$def" = "PyInit__memobs_attached " ] && [ "$nund" -ge 40 ] &&
    echo "$und" | grep -qx memobs_set_phase && echo "$und" | grep -qx memobs__tls && echo "$und" | grep -qx memobs_track_set_tag_provider &&
    ! nm -D "$ATT" | grep -v ' U memobs_torch_history_' | grep -q ' U memobs_torch\| U cuda'; then
    ok "_memobs_attached exports only PyInit__memobs_attached; $nund memobs symbols undefined (memobs_set_phase, memobs__tls, memobs_track_set_tag_provider...), no CUDA"
else
    bad "_memobs_attached exports only PyInit__memobs_attached; memobs' symbols undefined, no CUDA" "defined: $def" \
        "undefined memobs symbols: $nund"
fi

# prometheus_client for memobs.prometheus' check (attached): $PY's own, else
# Debian's python3-prometheus-client (pure Python) of /usr/bin/python3, the
# package alone copied to $B/promclient; neither: that check says so
PROMLIB=
if ! "$PY" -c 'import prometheus_client' 2>/dev/null &&
    d=$(/usr/bin/python3 -c 'import os, prometheus_client; print(os.path.dirname(prometheus_client.__file__))' 2>/dev/null) &&
    mkdir -p "$B/promclient" && cp -r "$d" "$B/promclient/"; then
    PROMLIB=$B/promclient
fi

# pyrun NAME MODE [VAR=VALUE...]: preload_attach_check.py MODE; $B/NAME.{out,err,st}
pyrun() {
    local name=$1 mode=$2
    shift 2
    timeout 60 env LD_LIBRARY_PATH="$B" PYTHONPATH="$PKG${PROMLIB:+:$PROMLIB}" "$@" "$PY" tests/python/preload_attach_check.py "$mode" "$B" \
        >"$B/$name.out" 2>"$B/$name.err"
    echo $? >"$B/$name.st"
}
# checks NAME: the program's own ok/not ok lines; a death without them is one not ok
checks() {
    grep -E '^(not )?ok - |^    # ' "$B/$1.out"
    grep -q '^not ok - ' "$B/$1.out" && rc=1
    if [ "$(cat "$B/$1.st")" != 0 ] && ! grep -q '^not ok - ' "$B/$1.out"; then
        bad "$1: preload_attach_check.py exited with status $(cat "$B/$1.st")" "$(tail -n 15 "$B/$1.err")"
    fi
}

# 3. attached: the program's checks, then the preload's JSON summary at exit
pyrun att attached LD_PRELOAD="$LIB" MEMOBS_FORMAT=json MEMOBS_SUMMARY="$B/att.json" MEMOBS_OOM_REPORT=0
checks att
if [ "$(cat "$B/att.st")" = 0 ] && [ ! -s "$B/att.err" ] && out=$(expect_check "$B/att.json" "$(line expect "$B/att.out")") &&
    out=$(json_check "$B/att.json" '[(r["count"], r["timed"]) for r in s["regions"] if r["name"] == "py_step"] == [(1, 1)]' regions); then
    ok "the preload's JSON summary at exit: the copies by the phase Python set (5096 B H2D: 4096 decode, 1000 prefill), the manual object (107 B H2D prefill in 2, 50 B D2H decode), device allocs 5 frees 4, 1 MiB live, the region py_step; nothing on stderr"
else
    bad "the preload's JSON summary at exit: the copies by the phase Python set, the manual object, device memory, the region py_step; nothing on stderr" \
        "status $(cat "$B/att.st")" "$out" "$(head -c 1500 "$B/att.err")"
fi

# 4. one summary, not two: MEMOBS_SUMMARY=stderr prints one attached, two with the private memobs beside the preload's
pyrun one attached LD_PRELOAD="$LIB" MEMOBS_SUMMARY=stderr MEMOBS_OOM_REPORT=0
pyrun two private LD_PRELOAD="$LIB" MEMOBS_SUMMARY=stderr MEMOBS_OOM_REPORT=0 MEMOBS_PY_ATTACH=0
n1=$(grep -c '^== memobs summary ==' "$B/one.err")
n2=$(grep -c '^== memobs summary ==' "$B/two.err")
if [ "$(cat "$B/one.st")" = 0 ] && [ "$n1" = 1 ] && [ "$(cat "$B/two.st")" = 0 ] && [ "$n2" = 2 ] &&
    grep -Eq '^  H2D +\| +5\.10 KB +2 \| +107 B +2 \| +-4\.99 KB +\+0$' "$B/one.err"; then
    ok "MEMOBS_SUMMARY=stderr: one summary attached (its check row: H2D observed 5.10 KB in 2, manual 107 B in 2), two with MEMOBS_PY_ATTACH=0"
else
    bad "MEMOBS_SUMMARY=stderr: one summary attached (its check row: H2D observed 5.10 KB in 2, manual 107 B in 2), two with MEMOBS_PY_ATTACH=0" \
        "attached: status $(cat "$B/one.st"), $n1 summaries" "private: status $(cat "$B/two.st"), $n2 summaries" \
        "$(grep -A 4 '^  check' "$B/one.err" | head -n 5)"
fi

# 5. MEMOBS_PY_ATTACH=0: the private memobs; the preload's figures without the program's
pyrun priv private LD_PRELOAD="$LIB" MEMOBS_FORMAT=json MEMOBS_SUMMARY="$B/priv.json" MEMOBS_OOM_REPORT=0 MEMOBS_PY_ATTACH=0
checks priv
# two instances in one process never write one path: the package's private
# one claims priv.json when it is imported; the preload claims at its first
# CUDA call, after that, so it writes priv.2.json and says so (docs/outputs.md)
if [ "$(cat "$B/priv.st")" = 0 ] && [ "$(wc -l <"$B/priv.err")" = 1 ] &&
    grep -qxF "memobs: info: MEMOBS_SUMMARY: another memobs instance in this process writes '$B/priv.json'; this one writes '$B/priv.2.json'" "$B/priv.err" &&
    out=$(expect_check "$B/priv.2.json" "$(line expect "$B/priv.out")"); then
    ok "MEMOBS_PY_ATTACH=0: no warning, one line naming priv.2.json (the preload's, which claims at its first CUDA call); the preload's summary has the 2 copies unphased, no manual records, no regions"
else
    bad "MEMOBS_PY_ATTACH=0: no warning; the preload's summary has the 2 copies unphased, no manual records, no regions" \
        "status $(cat "$B/priv.st")" "$out" "$(head -c 1500 "$B/priv.err")"
fi

# 6. another ABI key (a library exporting memobs_preload_abi() = 0x1234 preloaded before the real one): one warning, private
pyrun key private LD_PRELOAD="$B/libfakeabi.so $LIB" MEMOBS_FORMAT=json MEMOBS_SUMMARY="$B/key.json" MEMOBS_OOM_REPORT=0
checks key
key=$("$PY" -c 'import ctypes, sys; f = ctypes.CDLL(sys.argv[1]).memobs_preload_abi; f.restype = ctypes.c_uint64; print(hex(f()))' "$LIB" 2>/dev/null)
ver=$(sed -n 's/^#define MEMOBS_VERSION "\(.*\)"/\1/p' memobs.h)
if [ "$(cat "$B/key.st")" = 0 ] && [ "$(grep -c 'RuntimeWarning' "$B/key.err")" = 1 ] &&
    grep -q "RuntimeWarning: memobs: the LD_PRELOAD library's memobs has ABI key 0x1234, this package (memobs $ver) $key: built from another memobs.h, so not attached; using the package's private memobs" "$B/key.err" &&
    out=$(expect_check "$B/key.2.json" "$(line expect "$B/key.out")"); then
    ok "another ABI key (0x1234, the package's $key): one RuntimeWarning naming both, the private memobs, the preload's figures its own (key.2.json: it claims at its first CUDA call)"
else
    bad "another ABI key (0x1234): one RuntimeWarning naming both, the private memobs" "status $(cat "$B/key.st")" \
        "$out" "$(head -c 1500 "$B/key.err")"
fi

# 7. a library with memobs_preload_abi and no memobs: the attached module cannot load; one warning, private
pyrun fake private LD_PRELOAD="$B/libfakeabi.so"
checks fake
if [ "$(cat "$B/fake.st")" = 0 ] && [ "$(grep -c 'RuntimeWarning' "$B/fake.err")" = 1 ] &&
    grep -q "RuntimeWarning: memobs: the LD_PRELOAD library's memobs is in the process (ABI key 0x1234) but this package cannot attach to it (.*undefined symbol: memobs" "$B/fake.err"; then
    ok "memobs_preload_abi without memobs' symbols: one RuntimeWarning (the attached module's undefined symbol), the private memobs, no crash"
else
    bad "memobs_preload_abi without memobs' symbols: one RuntimeWarning, the private memobs, no crash" \
        "status $(cat "$B/fake.st")" "$(head -c 1500 "$B/fake.err")"
fi

# 8. no preload: the private memobs, silent
pyrun none private
checks none
if [ "$(cat "$B/none.st")" = 0 ] && [ ! -s "$B/none.err" ]; then
    ok "without LD_PRELOAD: the private memobs, nothing on stderr"
else
    bad "without LD_PRELOAD: the private memobs, nothing on stderr" "status $(cat "$B/none.st")" "$(head -c 1500 "$B/none.err")"
fi

# 9. MEMOBS_PY_ATTACH: off/false/no choose the private memobs too; a malformed value warns and attaches
bads=""
for v in off False no; do
    o=$(env LD_PRELOAD="$LIB" MEMOBS_PY_ATTACH=$v PYTHONPATH="$PKG" "$PY" -W error -c 'import memobs; print(memobs.instance())' 2>"$B/env.err")
    [ "$o" = private ] || bads="$bads $v:$o $(head -c 300 "$B/env.err")"
done
o=$(env LD_PRELOAD="$LIB" MEMOBS_PY_ATTACH=maybe PYTHONPATH="$PKG" "$PY" -c 'import memobs; print(memobs.instance())' 2>"$B/env.err")
if [ -z "$bads" ] && [ "$o" = preload ] && [ "$(grep -c RuntimeWarning "$B/env.err")" = 1 ] &&
    grep -q "RuntimeWarning: memobs: MEMOBS_PY_ATTACH='maybe' is not 0/1/on/off/true/false/yes/no; using 1" "$B/env.err"; then
    ok "MEMOBS_PY_ATTACH=off/False/no: private, no warning; =maybe: one warning, attached"
else
    bad "MEMOBS_PY_ATTACH=off/False/no: private, no warning; =maybe: one warning, attached" "$bads" "maybe: $o" \
        "$(head -c 600 "$B/env.err")"
fi
# 10. nano-vllm's observer under the preload: its record_h2d without is_prefill files a decode copy as
# prefill (nano-vllm's default, kept by the drop-in); the check shows the copy observed in decode
timeout 60 env LD_LIBRARY_PATH="$B" PYTHONPATH="$PKG" LD_PRELOAD="$LIB" MEMOBS_OOM_REPORT=0 MEMOBS_FORMAT=json \
    MEMOBS_SUMMARY="$B/nano.json" "$PY" -c '
import ctypes, os, sys
import memobs
from memobs.nanovllm import MemoryObserver
assert memobs.instance() == "preload", memobs.instance()
user = ctypes.CDLL(os.path.join(sys.argv[1], "libuser.so"))
user.user_h2d.argtypes = [ctypes.c_size_t]
MemoryObserver._enabled = True
memobs.set_phase("decode")
assert user.user_h2d(4096) == 0  # cudaMalloc, cudaMemcpy H2D of 4096 bytes, cudaFree
MemoryObserver.record_h2d(4096)   # the engine counts it, is_prefill left at its default
' "$B" >"$B/nano.out" 2>"$B/nano.err"
st=$?
if [ $st = 0 ] && [ ! -s "$B/nano.err" ] && out=$(expect_check "$B/nano.json" '{"decode": {"h2d_bytes": 4096, "h2d_count": 1}, "prefill": {"h2d_count": 0}, "manual": {"apart": true, "prefill": {"h2d_bytes": 4096, "h2d_count": 1}, "decode": {"h2d_count": 0}}}'); then
    ok "memobs.nanovllm's MemoryObserver.record_h2d under the preload: manual, in prefill (its default), beside the copy observed in decode"
else
    bad "memobs.nanovllm's MemoryObserver.record_h2d under the preload: manual in prefill, the copy observed in decode" \
        "status $st" "$out" "$(head -c 1500 "$B/nano.err")"
fi
exit $rc
