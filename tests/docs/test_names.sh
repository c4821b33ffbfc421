#!/usr/bin/env bash
# The 1.0 names and the names before them (docs/naming.md):
#   - docs/naming.md's table of deprecated C functions and the aliases the
#     headers define agree both ways (old name and replacement);
#   - a program using every deprecated alias (tests/docs/names/aliases.c for
#     memobs.h, tests/docs/names/aliases_cuda.c for memobs_cuda.h against the CUDA
#     runtime double) builds as C99, C++11 (memobs.h), C++17 and under nvcc
#     with exactly one deprecation warning per alias, naming its
#     replacement, and no other warning; run, each alias gives the figures
#     of its replacement;
#   - with MEMOBS_NO_DEPRECATED every old name is gone (a use fails to build);
#   - MEMOBS_TRACE, MEMOBS_TRACE_EVENTS and MEMOBS_TRACE_WRITE_S still work as
#     MEMOBS_TIMELINE, _EVENTS and _WRITE_S, and the new name wins when both
#     are set;
#   - the Python package's old names are still callable and agree with the
#     new ones.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/names
mkdir -p "$B"
CC=${CC:-cc}
CXX=${CXX:-c++}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
PYTHON=${PYTHON:-python3}

. tests/lib.sh # try; a clean environment, sanitizer options
unset MEMOBS_TIMELINE MEMOBS_TIMELINE_EVENTS MEMOBS_TIMELINE_WRITE_S MEMOBS_TRACE MEMOBS_TRACE_EVENTS \
    MEMOBS_TRACE_WRITE_S

ok() { echo "ok - names: $1"; }
bad() {
    echo "not ok - names: $1"
    shift
    local l
    for l in "$@"; do printf '%s\n' "$l" | head -n 20 | sed 's/^/    # /'; done
    rc=1
}

# ---- The aliases the headers define, and docs/naming.md's table -----------
# $B/aliases.txt: "header old new[,new2]" per alias, from the headers.
if ! "$PYTHON" - "$B/aliases.txt" >"$B/table.log" 2>&1 <<'PY'; then
import re, sys
def header_aliases(path):
    s = open(path).read()
    i = s.index("#ifndef MEMOBS_NO_DEPRECATED\nMEMOBS__DEPRECATED")
    j = s.index("#endif /* MEMOBS_NO_DEPRECATED */", i)
    out = {}
    for m in re.finditer(r'MEMOBS__DEPRECATED\("([^"]*)"\)\s*static inline [^(]*?\b(memobs_\w+)\(', s[i:j]):
        out[m.group(2)] = sorted(set(re.findall(r'\b(memobs_\w+)', m.group(1))))
    # nothing deprecated outside the block
    rest = s[:i] + s[j:]
    if re.search(r'MEMOBS__DEPRECATED\("', rest):
        sys.exit("%s: a MEMOBS__DEPRECATED use outside the MEMOBS_NO_DEPRECATED block" % path)
    return out
heads = {"memobs.h": header_aliases("memobs.h"), "memobs_cuda.h": header_aliases("memobs_cuda.h")}
doc = {}
text = open("docs/naming.md").read()
sec = text.split("## Deprecated C functions", 1)[1].split("\n## ", 1)[0]
for line in sec.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) < 3 or not cells[0].startswith("`memobs_"):
        continue
    old = re.match(r'`(memobs_\w+)', cells[0]).group(1)
    if old in doc:
        sys.exit("docs/naming.md: %s listed twice" % old)
    doc[old] = sorted(set(re.findall(r'`(memobs_\w+)', cells[1])))
hdr = {}
for h, d in heads.items():
    for old, new in d.items():
        hdr[old] = new
bad = []
for old in sorted(set(hdr) - set(doc)):
    bad.append("alias %s (a header) is not in docs/naming.md's table" % old)
for old in sorted(set(doc) - set(hdr)):
    bad.append("docs/naming.md lists %s, which no header defines as an alias" % old)
for old in sorted(set(doc) & set(hdr)):
    if doc[old] != hdr[old]:
        bad.append("%s: the header says use %s, docs/naming.md %s" % (old, hdr[old], doc[old]))
# every replacement is a declared function of the headers
decl = open("memobs.h").read() + open("memobs_cuda.h").read()
for old, new in hdr.items():
    for n in new:
        if not re.search(r'MEMOBS_API [^;(]*\b%s\(' % n, decl):
            bad.append("%s's replacement %s is not declared" % (old, n))
if bad:
    print("\n".join(bad)); sys.exit(1)
with open(sys.argv[1], "w") as f:
    for h, d in heads.items():
        for old, new in sorted(d.items()):
            f.write("%s %s %s\n" % (h, old, ",".join(new)))
print("%d aliases" % len(hdr))
PY
    bad "docs/naming.md's table and the headers' aliases agree both ways" "$(cat "$B/table.log")"
else
    ok "docs/naming.md's table and the headers' aliases agree both ways ($(cat "$B/table.log"))"
fi
n_core=$(grep -c '^memobs.h ' "$B/aliases.txt" 2>/dev/null)
n_cuda=$(grep -c '^memobs_cuda.h ' "$B/aliases.txt" 2>/dev/null)
if [ "${n_core:-0}" -ge 20 ] && [ "${n_cuda:-0}" -ge 5 ]; then
    ok "aliases found: $n_core in memobs.h, $n_cuda in memobs_cuda.h"
else
    bad "aliases found in the headers" "memobs.h: ${n_core:-0}, memobs_cuda.h: ${n_cuda:-0}"
fi

cat >"$B/warnings.py" <<'PY'
import re, sys
header, log, table = sys.argv[1:4]
want = {}
for line in open(table):
    h, old, new = line.split()
    if h == header:
        want[old] = new.split(",")
got, other = {}, []
for line in open(log, errors="replace"):
    if "warning" not in line and "error" not in line:
        continue
    m = re.search(r"[‘'](.*?)[’'] is deprecated: use (.*?) \[-Wdeprecated-declarations\]", line)
    if not m:
        other.append(line.rstrip())
        continue
    n = re.search(r'(memobs_\w+)\(', m.group(1)) or re.search(r'(memobs_\w+)', m.group(1))
    got.setdefault(n.group(1), []).append(m.group(2))
bad = []
for old, new in sorted(want.items()):
    msgs = got.get(old, [])
    if len(msgs) != 1:
        bad.append("%s: %d deprecation warnings, expected 1" % (old, len(msgs)))
    elif sorted(set(re.findall(r'(memobs_\w+)', msgs[0]))) != sorted(new):
        bad.append("%s: the warning says use %s, expected %s" % (old, msgs[0], new))
for old in sorted(set(got) - set(want)):
    bad.append("a deprecation warning for %s, which is no alias of %s" % (old, header))
bad += ["another diagnostic: " + l for l in other]
if bad:
    print("\n".join(bad)); sys.exit(1)
print(len(want))
PY

# warnings HEADER LOG WHAT: the build log LOG holds exactly one deprecation
# warning per alias of HEADER, each naming the header's replacement, and no
# other warning or error.
warnings() {
    local header=$1 log=$2 what=$3 out
    if out=$("$PYTHON" "$B/warnings.py" "$header" "$log" "$B/aliases.txt" 2>&1); then
        ok "$what: one deprecation warning per alias ($out), naming its replacement, no other diagnostic"
    else
        bad "$what: one deprecation warning per alias, naming its replacement, no other diagnostic" "$out"
    fi
}

# runs WHAT BIN: the program's own TAP lines, and its exit status.
runs() {
    local what=$1 bin=$2 out st
    out=$("$bin" 2>"$bin.err")
    st=$?
    printf '%s\n' "$out" | grep -E '^(not ok|ok) - |^    # '
    if [ $st -ne 0 ] || grep -q '^not ok' <<<"$out"; then
        bad "$what: every alias gives the figures of its replacement (exit $st)" "$(head -n 10 "$bin.err")"
    else
        ok "$what: every alias gives the figures of its replacement ($(grep -c '^ok' <<<"$out") checks)"
    fi
}

# ---- memobs.h's aliases: C99, C++17, nvcc ---------------------------------
WK="-Wall -Wextra -Werror -Wno-error=deprecated-declarations -I."
build_core() { # NAME EXTRA-OBJECTS COMPILE... (the compiler line; -c and -o are added)
    local name=$1 extra=$2
    shift 2
    if "$@" -DNAMES_SUITE="\"names-$name\"" -c tests/docs/names/aliases.c -o "$B/aliases_$name.o" >"$B/aliases_$name.log" 2>&1 &&
        $CXX -o "$B/aliases_$name" "$B/aliases_$name.o" $extra -pthread -ldl -lm >>"$B/aliases_$name.link" 2>&1; then
        warnings memobs.h "$B/aliases_$name.log" "memobs.h aliases, $name"
        runs "memobs.h aliases, $name" "$B/aliases_$name"
    else
        bad "memobs.h aliases, $name: build" "$(cat "$B/aliases_$name.log" "$B/aliases_$name.link" 2>/dev/null | grep -v 'is deprecated\|note:\|^ *[0-9]* |\|^ *|' | head -n 20)"
    fi
}
build_core c99 "" $CC -std=c99 $WK -Wstrict-prototypes
build_core c++11 "" $CXX -x c++ -std=c++11 $WK
build_core c++17 "" $CXX -x c++ -std=c++17 $WK
have_nvcc=0
[ -x "$NVCC" ] && have_nvcc=1
if [ $have_nvcc = 1 ] && $CC -std=c11 -c tests/cuda/nvtx/fatbin_stubs.c -o "$B/fatbin_stubs.o" >"$B/stubs.log" 2>&1; then
    build_core nvcc "$B/fatbin_stubs.o" $NVCC -x cu -Xcompiler -Wall,-Wextra,-Werror,-Wno-error=deprecated-declarations -I.
else
    bad "nvcc at $NVCC builds the fatbin stubs (set NVCC=...)" "$(head -n 5 "$B/stubs.log" 2>/dev/null)"
fi

# ---- memobs_cuda.h's aliases against the runtime double -------------------
if [ -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    if $CC -std=c11 -O1 -Wall -Wextra -Werror -I. -I"$CUDA_INC" -c tests/cuda/cudart_double.c -o "$B/double.o" \
        >"$B/double.log" 2>&1; then
        build_cuda() { # NAME EXTRA-OBJECTS COMPILE...
            local name=$1 extra=$2
            shift 2
            if "$@" -I"$CUDA_INC" -Itests -DNAMES_SUITE="\"names-cuda-$name\"" -c tests/docs/names/aliases_cuda.c \
                -o "$B/cuda_$name.o" >"$B/cuda_$name.log" 2>&1 &&
                $CXX -o "$B/cuda_$name" "$B/cuda_$name.o" "$B/double.o" $extra -pthread -rdynamic -lm -ldl \
                    >"$B/cuda_$name.link" 2>&1; then
                if nm "$B/cuda_$name" | grep -q ' U cuda'; then
                    bad "memobs_cuda.h aliases, $name: every CUDA symbol comes from the double" \
                        "$(nm "$B/cuda_$name" | grep ' U cuda')"
                fi
                warnings memobs_cuda.h "$B/cuda_$name.log" "memobs_cuda.h aliases, $name"
                runs "memobs_cuda.h aliases, $name" "$B/cuda_$name"
            else
                bad "memobs_cuda.h aliases, $name: build" "$(cat "$B/cuda_$name.log" "$B/cuda_$name.link" 2>/dev/null | grep -v 'is deprecated\|note:\|^ *[0-9]* |\|^ *|' | head -n 20)"
            fi
        }
        build_cuda c99 "" $CC -std=c99 $WK
        build_cuda c++17 "" $CXX -x c++ -std=c++17 $WK
        [ $have_nvcc = 1 ] && build_cuda nvcc "$B/fatbin_stubs.o" \
            $NVCC -x cu -Xcompiler -Wall,-Wextra,-Werror,-Wno-error=deprecated-declarations -I.
    else
        bad "the CUDA runtime double builds" "$(head -n 20 "$B/double.log")"
    fi
else
    bad "no $CUDA_INC/cuda_runtime_api.h (set CUDA_INC=...)"
fi

# ---- MEMOBS_NO_DEPRECATED: every old name gone ----------------------------
{
    echo '#include "memobs_cuda.h"'
    echo 'void use_old_names(void);'
    echo 'void use_old_names(void) {'
    awk '{ print "    (void)&" $2 ";" }' "$B/aliases.txt"
    echo '}'
} >"$B/old_names.cc"
if $CXX -std=c++17 -Wall -Wextra -Werror -Wno-deprecated-declarations -I. -I"$CUDA_INC" -fsyntax-only \
    "$B/old_names.cc" >"$B/old_names.log" 2>&1; then
    ok "every old name is there by default ($(wc -l <"$B/aliases.txt") taken by address, C++17)"
else
    bad "every old name is there by default" "$(head -n 20 "$B/old_names.log")"
fi
$CXX -std=c++17 -DMEMOBS_NO_DEPRECATED -I. -I"$CUDA_INC" -fsyntax-only -fmax-errors=0 "$B/old_names.cc" \
    >"$B/no_dep.log" 2>&1
st=$?
missing=$(awk '{ print $2 }' "$B/aliases.txt" | while read -r n; do
    grep -q "[‘']$n[’'] was not declared" "$B/no_dep.log" || echo "$n"
done)
if [ $st -ne 0 ] && [ -z "$missing" ]; then
    ok "MEMOBS_NO_DEPRECATED: each old name is undeclared (C++17: $(wc -l <"$B/aliases.txt") errors)"
else
    bad "MEMOBS_NO_DEPRECATED: each old name is undeclared" "still declared: ${missing:-none} (exit $st)"
fi
if $CC -std=c99 -DMEMOBS_NO_DEPRECATED -Werror=implicit-function-declaration -I. -c tests/docs/names/aliases.c \
    -o "$B/no_dep_c.o" >"$B/no_dep_c.log" 2>&1; then
    bad "MEMOBS_NO_DEPRECATED: the alias program does not build as C99"
elif grep -q "implicit declaration of function .memobs_enable" "$B/no_dep_c.log"; then
    ok "MEMOBS_NO_DEPRECATED: the alias program does not build as C99 (memobs_enable undeclared)"
else
    bad "MEMOBS_NO_DEPRECATED: the alias program fails for the old names" "$(head -n 10 "$B/no_dep_c.log")"
fi
# with MEMOBS_DISABLE the aliases still compile, warning-free but for the deprecations
if $CC -std=c99 $WK -DMEMOBS_DISABLE -c tests/docs/names/aliases.c -o "$B/disabled.o" >"$B/disabled.log" 2>&1; then
    warnings memobs.h "$B/disabled.log" "MEMOBS_DISABLE, C99"
else
    bad "MEMOBS_DISABLE: the alias program builds (C99)" "$(grep -v 'is deprecated' "$B/disabled.log" | head -n 10)"
fi

# ---- Environment: MEMOBS_TRACE* as aliases of MEMOBS_TIMELINE* -------------
cat >"$B/env.c" <<'EOF'
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"
#include <stdio.h>
int main(void) {
    memobs_timeline_stats_t st;
    memobs_init();
    memobs_record_xfer(MEMOBS_DIR_H2D, 4096, MEMOBS_PHASE_PREFILL);
    memobs_timeline_get_stats(&st);
    printf("capacity %llu limit %llu\n", (unsigned long long)st.capacity,
           (unsigned long long)memobs_timeline_get_write_limit());
    return 0;
}
EOF
if $CC -std=c99 -Wall -Wextra -Werror -I. "$B/env.c" -o "$B/env" -pthread -ldl >"$B/env.log" 2>&1; then
    # envcase NAME WANT-STDOUT VAR=VALUE...: the program's line under the variables
    envcase() {
        local what=$1 want=$2 got
        shift 2
        got=$(env "$@" "$B/env" 2>"$B/env.err")
        if [ "$got" = "$want" ] && [ ! -s "$B/env.err" ]; then
            ok "$what"
        else
            bad "$what" "expected: $want" "got: $got" "stderr: $(head -n 3 "$B/env.err")"
        fi
    }
    envcase "no variable: the timeline is off, write limit 20 s" "capacity 0 limit 20000000000"
    envcase "MEMOBS_TRACE_EVENTS=1024 (the old name) turns the timeline on: 1024 events" \
        "capacity 1024 limit 20000000000" MEMOBS_TRACE_EVENTS=1024
    envcase "MEMOBS_TIMELINE_EVENTS=2048: 2048 events" "capacity 2048 limit 20000000000" MEMOBS_TIMELINE_EVENTS=2048
    envcase "both set: MEMOBS_TIMELINE_EVENTS=4096 wins over MEMOBS_TRACE_EVENTS=1024" \
        "capacity 4096 limit 20000000000" MEMOBS_TRACE_EVENTS=1024 MEMOBS_TIMELINE_EVENTS=4096
    envcase "MEMOBS_TIMELINE_EVENTS=0 wins over MEMOBS_TRACE_EVENTS=1024 (off)" \
        "capacity 0 limit 20000000000" MEMOBS_TRACE_EVENTS=1024 MEMOBS_TIMELINE_EVENTS=0
    envcase "MEMOBS_TRACE_WRITE_S=5 (the old name): limit 5 s" "capacity 0 limit 5000000000" MEMOBS_TRACE_WRITE_S=5
    envcase "both set: MEMOBS_TIMELINE_WRITE_S=7 wins over MEMOBS_TRACE_WRITE_S=5" "capacity 0 limit 7000000000" \
        MEMOBS_TRACE_WRITE_S=5 MEMOBS_TIMELINE_WRITE_S=7
    got=$(env MEMOBS_TRACE_EVENTS=bogus "$B/env" 2>&1 >/dev/null)
    if [ "$got" = "memobs: warning: MEMOBS_TRACE_EVENTS='bogus' is not an event count up to 67108864 (like 65536 or 64K); using 65536" ]; then
        ok "a bad old-name value is reported under the name that was set"
    else
        bad "a bad old-name value is reported under the name that was set" "got: $got"
    fi
    rm -f "$B"/old.json "$B"/new.json "$B"/old2.json
    env MEMOBS_TRACE="$B/old.json" "$B/env" >/dev/null 2>"$B/env.err"
    if [ -s "$B/old.json" ] && head -c 15 "$B/old.json" | grep -q '^{"traceEvents":' && [ ! -s "$B/env.err" ]; then
        ok "MEMOBS_TRACE=PATH (the old name) writes the timeline at exit"
    else
        bad "MEMOBS_TRACE=PATH (the old name) writes the timeline at exit" "$(head -c 200 "$B/old.json" 2>&1)" \
            "$(head -n 3 "$B/env.err")"
    fi
    env MEMOBS_TRACE="$B/old2.json" MEMOBS_TIMELINE="$B/new.json" "$B/env" >/dev/null 2>"$B/env.err"
    if [ -s "$B/new.json" ] && [ ! -e "$B/old2.json" ] && [ ! -s "$B/env.err" ] &&
        "$PYTHON" -c 'import json,sys; e=json.load(open(sys.argv[1]))["traceEvents"]; sys.exit(not any(x.get("args",{}).get("bytes")==4096 for x in e))' "$B/new.json"; then
        ok "both set: MEMOBS_TIMELINE=PATH wins (its file written, with the 4096-byte record; MEMOBS_TRACE's not)"
    else
        bad "both set: MEMOBS_TIMELINE=PATH wins" "new.json: $(ls -l "$B/new.json" 2>&1)" \
            "old2.json: $(ls -l "$B/old2.json" 2>&1)" "$(head -n 3 "$B/env.err")"
    fi
else
    bad "the environment probe builds" "$(head -n 20 "$B/env.log")"
fi

cat >"$B/old_names.py" <<'PY'
import memobs
bad = []
def eq(what, want, got):
    if want != got:
        bad.append("%s: expected %r, got %r" % (what, want, got))
eq("__version__", "1.0.0", memobs.__version__)
for old, new in [("enable", "set_enabled"), ("is_enabled", "get_enabled"), ("region_timing", "region_set_timing"),
                 ("device_bytes", "get_device_bytes")]:
    eq("%s and %s are exported" % (old, new), True, old in memobs.__all__ and new in memobs.__all__)
memobs.enable(False)
eq("enable(False): get_enabled()", False, memobs.get_enabled())
eq("is_enabled() == get_enabled()", memobs.get_enabled(), memobs.is_enabled())
eq("set_enabled(True) returns the previous setting", False, memobs.set_enabled(True))
eq("is_enabled() after set_enabled(True)", True, memobs.is_enabled())
memobs.reset()
memobs.record_h2d(4096, False)
eq("a record after the old-name switch counts", 4096, memobs.get_summary()["decode"]["h2d_bytes"])
eq("region_timing() reads", True, memobs.region_timing())
eq("region_timing(False) returns the previous", True, memobs.region_timing(False))
eq("region_get_timing() after region_timing(False)", False, memobs.region_get_timing())
eq("region_set_timing(True) returns False", False, memobs.region_set_timing(True))
eq("region_timing() agrees", True, memobs.region_timing())
memobs.track_alloc(0x5000, 8192, "device", tag="names", device=3)
eq("device_bytes(3) == get_device_bytes(3) == (8192, 8192)", (8192, 8192),
   memobs.device_bytes(3) if memobs.device_bytes(3) == memobs.get_device_bytes(3) else None)
memobs.track_free(0x5000)
eq("get_signals() is a bool", bool, type(memobs.get_signals()))
if bad:
    print("\n".join(bad)); raise SystemExit(1)
PY
# ---- Python: the old names are the same functions under their old names ----
if PYINC=$("$PYTHON-config" --includes 2>/dev/null) && SUFFIX=$("$PYTHON-config" --extension-suffix 2>/dev/null); then
    rm -rf "$B/py" && mkdir -p "$B/py/memobs" && cp python/memobs/*.py python/memobs/__init__.pyi "$B/py/memobs/"
    if $CC -std=c99 -O1 -fPIC -shared -Wall -Wextra -Werror -I. $PYINC python/memobs/_memobs.c \
        -o "$B/py/memobs/_memobs$SUFFIX" >"$B/py.log" 2>&1; then
        if out=$(PYTHONPATH="$B/py" MEMOBS_PY_ATTACH=0 "$PYTHON" "$B/old_names.py" 2>&1); then
            ok "Python: enable, is_enabled, region_timing, device_bytes still callable, agreeing with the 1.0 names"
        else
            bad "Python: the old names still callable, agreeing with the 1.0 names" "$out"
        fi
    else
        bad "Python: the extension builds" "$(head -n 20 "$B/py.log")"
    fi
else
    bad "$PYTHON-config not found (install the Python development headers)"
fi

exit $rc
