#!/usr/bin/env bash
# memobs-run, the launcher, as `make install` installs it: the installed
# bin/memobs-run preloads the installed lib/libmemobs_preload.so (found
# beside the script, also after the tree is moved or through a symbolic
# link) into tests/preload/test_preload.c, a CUDA program linked against the
# runtime double (tests/cuda/cudart_double.c as libcudart.so.13, as
# tests/preload/test_preload.sh builds it). The figures in every output an option
# names are exact; the command's exit status and signal pass through; bad
# options, no command and a missing library are exit status 2 with a message.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/launcher
rm -rf "$B" && mkdir -p "$B"
B=$(cd "$B" && pwd)
CC=${CC:-cc}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror"

. tests/lib.sh # a clean environment, try, expect_check, line
unset LD_PRELOAD MEMOBS_PRELOAD_LIB MEMOBS_TIMELINE DESTDIR MAKEFLAGS MFLAGS MAKELEVEL
ok() { echo "ok - launcher: $1"; }
bad() { echo "not ok - launcher: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

if [ ! -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    echo "not ok - launcher: $CUDA_INC/cuda_runtime_api.h is missing (set CUDA_INC; tests/deps.sh installs the toolkit)"
    exit 1
fi
version=$(sed -n 's/^#define MEMOBS_VERSION "\([^"]*\)".*/\1/p' memobs.h)

# 1. make install: the library and the launcher, executable, beside the headers
PFX=$B/prefix
R=$PFX/bin/memobs-run
if make -s install PREFIX="$PFX" BUILD="$B/obj" DESTDIR= >"$B/make.log" 2>&1 && [ ! -s "$B/make.log" ] &&
    [ -x "$PFX/lib/libmemobs_preload.so" ] && [ -x "$R" ] && [ -f "$PFX/include/memobs.h" ] &&
    nm -D --defined-only "$PFX/lib/libmemobs_preload.so" | grep -Eq ' T cudaMemcpy(@|$)' &&
    head -n 1 "$R" | grep -qx '#!/bin/sh'; then
    ok "make install PREFIX=<tmp>: lib/libmemobs_preload.so (interposes cudaMemcpy) and bin/memobs-run (#!/bin/sh), both mode 755"
else
    bad "make install PREFIX=<tmp>: lib/libmemobs_preload.so and bin/memobs-run" "$(head -c 2000 "$B/make.log")" \
        "$(cd "$PFX" 2>/dev/null && find . -type f | tr '\n' ' ')"
    exit 1
fi

# 2. the runtime double as libcudart.so.13 and a CUDA program linked to it
if { $CC -std=c11 -O2 -g -fPIC -shared $W -I. -I"$CUDA_INC" tests/cuda/cudart_double.c -o "$B/libcudart.so.13" \
        -Wl,-soname,libcudart.so.13 -Wl,--version-script=mk/cudart_double.map -pthread &&
    $CC -std=c11 -O2 -g $W -I"$CUDA_INC" tests/preload/test_preload.c -o "$B/prog" -L"$B" -l:libcudart.so.13 -pthread -ldl &&
    printf 'int other_lib_marker;\n' >"$B/other.c" &&
    $CC -O2 -fPIC -shared $W "$B/other.c" -o "$B/libother.so"; } >"$B/build.log" 2>&1 && [ ! -s "$B/build.log" ]; then
    ok "build: the runtime double as libcudart.so.13 and tests/preload/test_preload.c linked to it"
else
    bad "build: the runtime double as libcudart.so.13 and tests/preload/test_preload.c linked to it" "$(head -c 2000 "$B/build.log")"
    exit 1
fi

# launch NAME [VAR=VALUE...] -- LAUNCHER-ARGS...: run in $B/NAME/ (outputs land there);
# NAME.out, NAME.err, NAME.st beside it. The double is found through LD_LIBRARY_PATH.
launch() {
    local name=$1 st
    shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    mkdir -p "$B/$name"
    # (the subshell's own stderr is dropped: its note when a command dies by a signal)
    (cd "$B/$name" && timeout 60 env LD_LIBRARY_PATH="$B" "${envs[@]}" "$@" >"$B/$name.out" 2>"$B/$name.err") 2>/dev/null
    st=$?
    echo "$st" >"$B/$name.st"
}
st() { cat "$B/$1.st"; }
grep_env() { sed -n "s/^$2=//p" "$B/$1.out"; } # grep_env NAME VAR: VAR's value in NAME.out
# The program's 4 threads x 50 H2D copies of 1000 bytes, in decode, and 4 device blocks of 1000 bytes
H2D_ROW='^  H2D +\| +200\.00 KB +200 \| +0 B +0 \| +200\.00 KB +200 \| +0 B +0$'
DEV_ROW='^  device +\| +4\.00 KB +4\.00 KB \| +4 +4 +0 '
EXPECT='{"total": {"h2d_bytes": 200000, "h2d_count": 200, "d2h_bytes": 0, "d2d_bytes": 0}, "decode": {"h2d_bytes": 200000, "h2d_count": 200}, "prefill": {"h2d_bytes": 0, "h2d_count": 0}, "memory": {"device": {"current_bytes": 4000, "allocs": 4, "frees": 0, "live": 4}}}'

# 3. no option: the text summary on stderr, figures exact
launch plain -- "$R" "$B/prog" threads
if [ "$(st plain)" = 0 ] && grep -q '^== memobs summary ==' "$B/plain.err" && grep -Eq "$H2D_ROW" "$B/plain.err" &&
    grep -Eq "$DEV_ROW" "$B/plain.err" && [ "$(line expect "$B/plain.out")" != "" ] &&
    [ -z "$(ls -A "$B/plain")" ]; then
    ok "installed memobs-run PROG: the summary on stderr, H2D 200.00 KB in 200 ops (all decode), device 4.00 KB in 4 live blocks; no file written"
else
    bad "installed memobs-run PROG: the summary on stderr with exact figures" "status $(st plain)" \
        "$(head -c 2500 "$B/plain.err")" "files: $(ls -A "$B/plain")"
fi

# 4. every output option at once: each file written, each with the program's figures
launch all MEMOBS_SAMPLE_MS=50 -- "$R" --json s.json --prom m.prom --timeline t.json --html r.html \
    --stormlog st.json -- "$B/prog" threads
if [ "$(st all)" = 0 ] && [ ! -s "$B/all.err" ]; then
    ok "memobs-run --json --prom --timeline --html --stormlog PROG: exit 0, nothing on stderr"
else
    bad "memobs-run --json --prom --timeline --html --stormlog PROG: exit 0, nothing on stderr" "status $(st all)" \
        "$(head -c 2000 "$B/all.err")"
fi
if out=$(expect_check "$B/all/s.json" "$EXPECT") && out2=$(expect_check "$B/all/s.json" "$(line expect "$B/all.out")"); then
    ok "--json FILE: the JSON summary, H2D 200000 bytes / 200 ops, all decode; device 4000 bytes in 4 live blocks"
else
    bad "--json FILE: the JSON summary's figures" "$out" "${out2:-}"
fi
prom() { # prom METRIC LABELS-REGEX: the sample's value
    grep -E "^$1\{[^}]*$2[^}]*\} " "$B/all/m.prom" | awk '{print $NF}'
}
if [ "$(prom memobs_transfer_bytes_total 'direction="h2d",phase="decode"')" = 200000 ] &&
    [ "$(prom memobs_transfer_ops_total 'direction="h2d",phase="decode"')" = 200 ] &&
    [ "$(prom memobs_transfer_bytes_total 'direction="h2d",phase="prefill"')" = 0 ] &&
    [ "$(prom memobs_transfer_bytes_total 'direction="d2h",phase="decode"')" = 0 ]; then
    ok "--prom FILE: memobs_transfer_bytes_total{h2d,decode} 200000, _ops_total 200, prefill and D2H 0"
else
    bad "--prom FILE: memobs_transfer_bytes_total{h2d,decode} 200000, _ops_total 200" \
        "$(grep -E '^memobs_transfer_(bytes|ops)_total' "$B/all/m.prom" 2>&1 | head -n 6)"
fi
if out=$(python3 - "$B/all/t.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
cp = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "copy"]
n, total = len(cp), sum(e["args"]["bytes"] for e in cp)
names = sorted({e["name"] for e in cp})
if (n, total, names) != (200, 200000, ["H2D decode"]):
    print("copy events %d, bytes %d, names %s" % (n, total, names)); sys.exit(1)
PY
); then
    ok "--timeline FILE: 200 copy events named 'H2D decode', 200000 bytes in all"
else
    bad "--timeline FILE: 200 copy events named 'H2D decode', 200000 bytes in all" "$out"
fi
if grep -q '<title>memobs report: ' "$B/all/r.html" && grep -q '<title>H2D decode: 200.00 KB in 200 ops<' "$B/all/r.html" &&
    grep -q '</html>' "$B/all/r.html"; then
    ok "--html FILE: the report, whole, with 'H2D decode: 200.00 KB in 200 ops'"
else
    bad "--html FILE: the report with 'H2D decode: 200.00 KB in 200 ops'" "$(head -c 300 "$B/all/r.html" 2>&1)"
fi
if out=$(python3 - "$B/all/st.json" "$B/all.err" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
if not isinstance(s, list) or not s:
    print("not a non-empty list: %r" % (s,)); sys.exit(1)
bad = [x for x in s if x.get("schema_version") != 2 or x.get("collector") != "memobs"]
if bad: print("records: %r" % bad[:2]); sys.exit(1)
PY
); then
    ok "--stormlog FILE: Stormlog records (schema_version 2, collector memobs) with MEMOBS_SAMPLE_MS from the environment"
else
    bad "--stormlog FILE: Stormlog records (schema_version 2, collector memobs)" "$out"
fi

# 5. --summary FILE, --opt=VALUE; MEMOBS_SUMMARY of the caller's kept; --summary stdout
launch sumfile -- "$R" --summary=sum.txt "$B/prog" threads
launch envsum MEMOBS_SUMMARY=env.json MEMOBS_FORMAT=json -- "$R" "$B/prog" threads
launch envoff MEMOBS_SUMMARY=0 -- "$R" "$B/prog" threads
if [ "$(st sumfile)" = 0 ] && [ ! -s "$B/sumfile.err" ] && grep -Eq "$H2D_ROW" "$B/sumfile/sum.txt"; then
    ok "--summary=FILE: the text summary in FILE (H2D row exact), nothing on stderr"
else
    bad "--summary=FILE: the text summary in FILE" "status $(st sumfile)" "$(head -c 1500 "$B/sumfile.err")"
fi
if [ "$(st envsum)" = 0 ] && [ ! -s "$B/envsum.err" ] && out=$(expect_check "$B/envsum/env.json" "$EXPECT") &&
    [ "$(st envoff)" = 0 ] && [ ! -s "$B/envoff.err" ] && [ -z "$(ls -A "$B/envoff")" ]; then
    ok "MEMOBS_SUMMARY set by the caller wins over the stderr default (a JSON file, exact; 0: no summary)"
else
    bad "MEMOBS_SUMMARY set by the caller wins over the stderr default" "status $(st envsum) / $(st envoff)" "${out:-}" \
        "$(head -c 800 "$B/envsum.err")" "$(head -c 800 "$B/envoff.err")"
fi

# 6. LD_PRELOAD: the library first, the caller's entries kept; the double's program runs
launch ldp LD_PRELOAD="$B/libother.so" -- "$R" sh -c 'echo "LD_PRELOAD=$LD_PRELOAD"; echo "MEMOBS_SUMMARY=$MEMOBS_SUMMARY"'
if [ "$(st ldp)" = 0 ] && [ "$(grep_env ldp LD_PRELOAD)" = "$PFX/lib/libmemobs_preload.so:$B/libother.so" ] &&
    grep -qx 'MEMOBS_SUMMARY=stderr' "$B/ldp.out"; then
    ok "the command sees LD_PRELOAD=<prefix>/lib/libmemobs_preload.so:<the caller's> and MEMOBS_SUMMARY=stderr"
else
    bad "the command sees LD_PRELOAD=<prefix>/lib/libmemobs_preload.so:<the caller's>" "status $(st ldp)" \
        "$(cat "$B/ldp.out")" "$(head -c 800 "$B/ldp.err")"
fi
launch vars -- "$R" --timeline tl.json --html h.html --stormlog s.json --prom p.prom -- env
if [ "$(grep_env vars MEMOBS_TIMELINE)" = tl.json ] && [ "$(grep_env vars MEMOBS_TRACE)" = tl.json ] &&
    [ "$(grep_env vars MEMOBS_HTML)" = h.html ] && [ "$(grep_env vars MEMOBS_STORMLOG)" = s.json ] &&
    [ "$(grep_env vars MEMOBS_PROM_FILE)" = p.prom ]; then
    ok "options set MEMOBS_TIMELINE and MEMOBS_TRACE (its older name), MEMOBS_HTML, MEMOBS_STORMLOG, MEMOBS_PROM_FILE"
else
    bad "options set MEMOBS_TIMELINE, MEMOBS_TRACE, MEMOBS_HTML, MEMOBS_STORMLOG, MEMOBS_PROM_FILE" \
        "$(grep '^MEMOBS' "$B/vars.out")"
fi

# 7. the command's exit status and signal are its own (exec: no shell left between)
launch exit3 -- "$R" -- sh -c 'exit 3'
launch prog3 -- "$R" "$B/prog" nosuchmode
launch term -- "$R" -- sh -c 'kill -TERM $$'
launch parent -- "$R" -- sh -c 'cat /proc/$PPID/comm'
if [ "$(st exit3)" = 3 ] && [ "$(st term)" = 143 ] && [ "$(st prog3)" = "$(cd "$B" && LD_LIBRARY_PATH="$B" ./prog nosuchmode >/dev/null 2>&1; echo $?)" ]; then
    ok "exit status passes through: sh -c 'exit 3' gives 3, the program's own status the same as without, SIGTERM gives 143"
else
    bad "exit status passes through: 3, the program's own, 143 for SIGTERM" \
        "got $(st exit3), $(st prog3), $(st term)" "$(head -c 500 "$B/term.err")"
fi
if [ "$(st parent)" = 0 ] && [ "$(cat "$B/parent.out")" = timeout ]; then
    ok "exec: the command's parent is the launcher's caller (timeout), no memobs-run shell left between"
else
    bad "exec: the command's parent is the launcher's caller (timeout)" "parent: $(cat "$B/parent.out")"
fi
launch notfound -- "$R" -- "$B/no-such-program"
if [ "$(st notfound)" = 127 ] && [ -s "$B/notfound.err" ]; then
    ok "a command that does not exist: status 127 and a message, as env(1) and the shell give"
else
    bad "a command that does not exist: status 127" "got $(st notfound)" "$(cat "$B/notfound.err")"
fi

# 8. the default library is found relative to the script: a moved prefix, a link to the script
mv "$PFX" "$B/moved"
mkdir -p "$B/links" && ln -s "$B/moved/bin/memobs-run" "$B/links/memobs-run"
launch moved -- "$B/moved/bin/memobs-run" --json m.json "$B/prog" threads
launch linked -- "$B/links/memobs-run" --json l.json "$B/prog" threads
launch inpath PATH="$B/links:$PATH" -- memobs-run --json p.json "$B/prog" threads
if [ "$(st moved)" = 0 ] && out=$(expect_check "$B/moved/m.json" "$EXPECT") &&
    [ "$(st linked)" = 0 ] && out=$(expect_check "$B/linked/l.json" "$EXPECT") &&
    [ "$(st inpath)" = 0 ] && out=$(expect_check "$B/inpath/p.json" "$EXPECT"); then
    ok "the prefix moved, the script reached by a symbolic link, or found in PATH: ../lib/libmemobs_preload.so found, figures exact"
else
    bad "the prefix moved, a symbolic link, PATH: ../lib/libmemobs_preload.so found" \
        "status $(st moved) / $(st linked) / $(st inpath)" "$out" \
        "$(head -c 500 "$B/moved.err")" "$(head -c 500 "$B/linked.err")" "$(head -c 500 "$B/inpath.err")"
fi
R=$B/moved/bin/memobs-run
cp "$B/moved/lib/libmemobs_preload.so" "$B/copy.so"
launch lib -- "$R" --lib ../copy.so --json j.json "$B/prog" threads
launch envlib MEMOBS_PRELOAD_LIB="$B/copy.so" -- "$R" -- sh -c 'echo "$LD_PRELOAD"'
if [ "$(st lib)" = 0 ] && out=$(expect_check "$B/lib/j.json" "$EXPECT") && [ "$(cat "$B/envlib.out")" = "$B/copy.so" ]; then
    ok "--lib PATH (relative, made absolute) and MEMOBS_PRELOAD_LIB choose the library"
else
    bad "--lib PATH and MEMOBS_PRELOAD_LIB choose the library" "status $(st lib)" "$out" "$(cat "$B/envlib.out")" \
        "$(head -c 500 "$B/lib.err")"
fi

# 9. usage errors: status 2, one message naming the problem, the command not run
errcase() { # errcase NAME WANT-IN-MESSAGE [VAR=VALUE...] -- ARGS...
    local name=$1 want=$2
    shift 2
    launch "err_$name" "$@"
    if [ "$(st "err_$name")" = 2 ] && grep -q -- "$want" "$B/err_$name.err" && [ ! -s "$B/err_$name.out" ]; then
        echo "$name"
    else
        echo "FAILED $name: status $(st "err_$name"), stderr: $(head -c 300 "$B/err_$name.err")" >&2
    fi
}
errs=$( {
    errcase unknown 'unknown option: --bogus' -- "$R" --bogus -- echo ran
    errcase novalue 'option --json needs a value' -- "$R" --json
    errcase empty 'option --prom needs a value' -- "$R" --prom= echo ran
    errcase nocmd 'no command to run' -- "$R" --json x.json
    errcase nocmd2 'no command to run' -- "$R" --
    errcase both '--summary and --json' -- "$R" --summary stderr --json x.json echo ran
    errcase nolib 'no preload library at /nonexistent/libx.so' -- "$R" --lib /nonexistent/libx.so echo ran
    errcase noenvlib 'no preload library at /nonexistent/liby.so' MEMOBS_PRELOAD_LIB=/nonexistent/liby.so -- "$R" echo ran
} 2>"$B/errs.log" | tr '\n' ' ')
mkdir -p "$B/bare/bin" && cp "$R" "$B/bare/bin/"
launch nodefault -- "$B/bare/bin/memobs-run" echo ran
if [ "$errs" = "unknown novalue empty nocmd nocmd2 both nolib noenvlib " ] && [ "$(st nodefault)" = 2 ] &&
    grep -q "no preload library at $B/bare/lib/libmemobs_preload.so" "$B/nodefault.err"; then
    ok "usage errors exit 2 with a message and run nothing: unknown option, option without a value, no command, --summary with --json, a --lib / MEMOBS_PRELOAD_LIB / default library that does not exist"
else
    bad "usage errors exit 2 with a message and run nothing" "passed: $errs" "$(cat "$B/errs.log")" \
        "no default library: status $(st nodefault), $(cat "$B/nodefault.err")"
fi

# 10. --help and --version
launch help -- "$R" --help
launch ver -- "$R" --version
miss=
for o in --summary --json --prom --timeline --html --stormlog --lib --help --version; do
    grep -q -- "^  $o" "$B/help.out" || miss="$miss $o"
done
# the three places the library is looked for, in order, the source tree's build/ last
grep -q 'default: MEMOBS_PRELOAD_LIB,$' "$B/help.out" || miss="$miss MEMOBS_PRELOAD_LIB"
grep -q 'else ../lib/libmemobs_preload.so beside this script,$' "$B/help.out" || miss="$miss ../lib/"
grep -q " build/libmemobs_preload.so: make preload)$" "$B/help.out" || miss="$miss build/"
if [ "$(st help)" = 0 ] && [ -z "$miss" ] && grep -q '^Usage: memobs-run ' "$B/help.out" &&
    [ "$(st ver)" = 0 ] && [ "$(cat "$B/ver.out")" = "memobs-run $version" ]; then
    ok "--help lists every option and the library's three defaults, build/ last (exit 0); --version says 'memobs-run $version' (memobs.h's MEMOBS_VERSION)"
else
    bad "--help lists every option; --version says memobs.h's version" "missing:$miss" "version: $(cat "$B/ver.out")"
fi

exit $rc
