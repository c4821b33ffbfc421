#!/usr/bin/env bash
# The package installed as a user installs it: a clean copy of the tree (the
# files git tracks), a fresh venv (python3 -m venv: pyenv's CPython puts pip
# and setuptools in it from its own ensurepip, no network), then
#   pip install --no-build-isolation --no-index --no-cache-dir <copy>
# (the command of README.md and docs/python.md; the wheel is written by our backend,
# python/build_backend/memobs_build.py, since the venv has no `wheel`), with
# MEMOBS_WERROR=1 so the extension compiles with -Werror. From another
# directory: import, exact records, the files installed (in site-packages,
# py.typed and __init__.pyi), then pip uninstall and the import fails.
# A missing tool is a failure, never a skip.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build}/pip
PYTHON=${PYTHON:-python3}
. tests/lib.sh # try, json_check; a clean environment

rm -rf "$B" && mkdir -p "$B/src" "$B/elsewhere" || { echo "not ok - pip: make $B"; exit 1; }
B=$(cd "$B" && pwd)
if ! command -v git >/dev/null || ! git ls-files -z | xargs -0 cp --parents -t "$B/src" 2>"$B/copy.log"; then
    echo "not ok - pip: a clean copy of the tree (git ls-files) in $B/src"
    sed 's/^/    # /' "$B/copy.log" | head -n 10
    exit 1
fi
echo "ok - pip: a clean copy of the tree ($(git ls-files | wc -l) files)"

if ! "$PYTHON" -m venv "$B/venv" >"$B/venv.log" 2>&1; then
    echo "not ok - pip: $PYTHON -m venv (Debian: apt-get install python3-venv)"
    sed 's/^/    # /' "$B/venv.log" | head -n 10
    exit 1
fi
VPY="$B/venv/bin/python"
try pip "the fresh venv has pip and setuptools (no network needed)" sh -c "'$VPY' -m pip --version && '$VPY' -c 'import setuptools'"

if ! (cd "$B/elsewhere" && MEMOBS_WERROR=1 "$VPY" -m pip install -v --no-build-isolation --no-index --no-cache-dir "$B/src") \
    >"$B/install.log" 2>&1; then
    echo "not ok - pip: pip install --no-build-isolation --no-index $B/src"
    grep -iE 'error|warning' "$B/install.log" | head -n 20 | sed 's/^/    # /'
    tail -n 15 "$B/install.log" | sed 's/^/    # /'
    exit 1
fi
echo "ok - pip: pip install --no-build-isolation --no-index (a clean copy, a fresh venv, -Werror)"
try pip "the build compiled python/memobs/_memobs.c with -std=c99 -O2 -Werror, twice (the second -DMEMOBS_PY_ATTACH)" \
    sh -c "[ \$(grep -cE -- '-c python/memobs/_memobs\.c .*-std=c99 -O2 -Wall -Wextra -Werror' '$B/install.log') = 2 ] &&
        grep -qE -- '-DMEMOBS_PY_ATTACH=1 .*-c python/memobs/_memobs\.c .*-Werror -fvisibility=hidden' '$B/install.log'"
try pip "the build found the CUDA headers (/usr/local/cuda): the extension holds memobs.torch's allocator" \
    sh -c "grep -q \"memobs: memobs.torch's allocator is built with the CUDA headers of /usr/local/cuda\" '$B/install.log' &&
        grep -qE -- '-DMEMOBS_PY_CUDA=1 .*-I/usr/local/cuda/include' '$B/install.log'"

SITE=$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
try pip "import from another directory: exact records (the storage tier's, timed and sizes included), the files in the venv's site-packages, memobs.nanovllm" \
    env -C "$B/elsewhere" SITE="$SITE" "$VPY" -c '
import os, memobs
memobs.record_h2d(4096, True)
memobs.record_h2d(100, True)
memobs.record_d2h(512, False)
memobs.record_d2d(64, None)
memobs.record_s2h(300, False)
with memobs.timed_transfer("h2s", 700, True) as t:
    pass
s = memobs.get_summary()
assert s["total"] == {"h2d_bytes": 4196, "h2d_count": 2, "d2h_bytes": 512, "d2h_count": 1, "d2d_bytes": 64, "d2d_count": 1, "h2s_bytes": 700, "h2s_count": 1, "s2h_bytes": 300, "s2h_count": 1, "d2s_bytes": 0, "d2s_count": 0, "s2d_bytes": 0, "s2d_count": 0}, s["total"]
assert s["timed"]["prefill"]["h2s"] == {"bytes": 700, "count": 1, "ns": t.ns}, (s["timed"], t.ns)
assert s["sizes"]["h2s"]["buckets"] == [[1024, 1]] and s["sizes"]["s2h"]["buckets"] == [[512, 1]], s["sizes"]
assert s["prefill"] == {"h2d_bytes": 4196, "d2h_bytes": 0} and s["decode"] == {"h2d_bytes": 0, "d2h_bytes": 512}, s
assert s["memobs_version"] == memobs.__version__, (s["memobs_version"], memobs.__version__)
site = os.environ["SITE"]
pkg = os.path.dirname(memobs.__file__)
assert pkg == os.path.join(site, "memobs"), (memobs.__file__, site)
assert os.path.dirname(memobs._memobs.__file__) == pkg, memobs._memobs.__file__
assert memobs.instance() == "private" and memobs._ext is memobs._memobs, memobs.instance()
att = [n for n in os.listdir(pkg) if n.startswith("_memobs_attached.") and n.endswith(".so")]
assert len(att) == 1, os.listdir(pkg)  # the build for the LD_PRELOAD library, installed beside
for f in ("py.typed", "__init__.pyi"):
    assert os.path.isfile(os.path.join(pkg, f)), f
assert not os.path.exists(os.path.join(pkg, "_memobs.c")), "the C source was installed"
from memobs.nanovllm import MemoryObserver
MemoryObserver._enabled = True
MemoryObserver.complete_reset()
MemoryObserver.record_h2d(1000)
assert MemoryObserver.get_summary()["prefill"] == {"h2d_bytes": 1000, "d2h_bytes": 0}, MemoryObserver.get_summary()
assert os.path.dirname(__import__("memobs.nanovllm").nanovllm.__file__) == pkg
import memobs.torch
assert os.path.dirname(memobs.torch.__file__) == pkg and memobs.torch.available(), memobs.torch.__file__
assert memobs.torch.allocator_settings()["runtime"] is None
'
# the installed package under the LD_PRELOAD library: it attaches (one memobs), its records are manual
if make -s BUILD="$B/pl" preload >"$B/pl.log" 2>&1 && [ -f "$B/pl/libmemobs_preload.so" ]; then
    try pip "under LD_PRELOAD=libmemobs_preload.so the installed package attaches: instance() preload, record_h2d manual, a peer transfer, memobs_host_api the library's, in its summary" \
        sh -c "cd '$B/elsewhere' && rm -f '$B/pl/s.json' &&
            LD_PRELOAD='$B/pl/libmemobs_preload.so' MEMOBS_FORMAT=json MEMOBS_SUMMARY='$B/pl/s.json' '$VPY' -c '
import memobs
assert memobs.instance() == \"preload\", memobs.instance()
memobs.set_phase(\"decode\")
memobs.record_h2d(300, None)
m = memobs.get_summary()[\"manual\"]
assert m[\"apart\"] and m[\"decode\"][\"h2d_bytes\"] == 300 and m[\"total\"][\"h2d_count\"] == 1, m
import ctypes
class T(ctypes.Structure):
    _fields_ = [(\"abi_key\", ctypes.c_uint64), (\"size\", ctypes.c_uint32), (\"instance\", ctypes.c_char_p)]
f = ctypes.CDLL(None).memobs_host_api
f.restype = ctypes.POINTER(T)
assert f().contents.instance == b\"preload\" and f().contents.abi_key == memobs._ext._abi_key, f().contents.instance
memobs.record_peer_xfer(memobs.peer_intern(\"decode-1\"), memobs.PEER_SEND, 4096)
' && '$VPY' -c '
import json, sys
s = json.load(open(sys.argv[1]))
assert s[\"manual\"][\"decode\"][\"h2d_bytes\"] == 300 and s[\"total\"][\"h2d_count\"] == 0, (s[\"manual\"], s[\"total\"])
assert [(p[\"name\"], p[\"send\"]) for p in s[\"peers\"]] == [(\"decode-1\", {\"decode\": {\"bytes\": 4096, \"ops\": 1, \"ns\": 0}})], s[\"peers\"]
' '$B/pl/s.json'"
else
    echo "not ok - pip: make preload for the attach check"; tail -n 10 "$B/pl.log" | sed 's/^/    # /'; rc=1
fi
try pip "pip show: the version of memobs.h" sh -c "'$VPY' -m pip show memobs | grep -qx \"Version: \$(sed -n 's/^#define MEMOBS_VERSION \"\\(.*\\)\"/\\1/p' memobs.h)\""
# what the build left in the copy: every file git does not track must be one
# .gitignore ignores (build/, *.egg-info/)
git ls-files | sort >"$B/tracked"
(cd "$B/src" && find . -type f | sed 's|^\./||' | sort) | comm -13 "$B/tracked" - >"$B/extra"
try pip "the build leaves in the tree only what .gitignore ignores ($(wc -l <"$B/extra") files)" \
    sh -c "! git check-ignore --no-index --verbose --non-matching --stdin <'$B/extra' | grep '^::'"

if ! "$VPY" -m pip uninstall -y memobs >"$B/uninstall.log" 2>&1; then
    echo "not ok - pip: pip uninstall -y memobs"; tail -n 10 "$B/uninstall.log" | sed 's/^/    # /'; exit 1
fi
try pip "after pip uninstall: import memobs fails, nothing left in site-packages" env -C "$B/elsewhere" SITE="$SITE" "$VPY" -c '
import os, sys
try:
    import memobs
except ImportError:
    pass
else:
    sys.exit("memobs still imports: %s" % memobs.__file__)
left = [n for n in os.listdir(os.environ["SITE"]) if n.startswith("memobs")]
assert not left, left'

# MEMOBS_CUDA_HOME=none: the package without the allocator, which says so
if (cd "$B/elsewhere" && MEMOBS_CUDA_HOME=none MEMOBS_WERROR=1 "$VPY" -m pip install -v --no-build-isolation \
    --no-index --no-cache-dir "$B/src") >"$B/install_nocuda.log" 2>&1 &&
    grep -q "memobs: MEMOBS_CUDA_HOME=none: building without memobs.torch's allocator" "$B/install_nocuda.log" &&
    ! grep -q -- '-DMEMOBS_PY_CUDA' "$B/install_nocuda.log"; then
    try pip "MEMOBS_CUDA_HOME=none: installed without the allocator; memobs.torch.available() is False" \
        env -C "$B/elsewhere" "$VPY" -c 'import memobs, memobs.torch; assert not memobs.torch.available()'
else
    echo "not ok - pip: MEMOBS_CUDA_HOME=none pip install: built without -DMEMOBS_PY_CUDA, said so"
    tail -n 15 "$B/install_nocuda.log" | sed 's/^/    # /'
    rc=1
fi
"$VPY" -m pip uninstall -y memobs >>"$B/uninstall.log" 2>&1
exit $rc
