#!/usr/bin/env bash
# The exporters that compile out (MEMOBS_NO_HTML, MEMOBS_NO_STORMLOG,
# MEMOBS_NO_TORCH_SNAPSHOT): for each switch and for all three together,
# tests/core/cutout_engine.c builds warning-free as C99, C11, C++11 and C++17
# (and once under nvcc), the exporter's code is gone from the object, its
# variable set at run time gives one clear warning and exit status 0, its
# public writers return MEMOBS_ERR_INVALID, and every other output (the
# JSON summary, the Prometheus file, the leak report, the counters) is the
# full build's. Then the static memory: the collectives' tables and
# Stormlog's ring of marks are no longer static (made at their first use).
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/cutout
mkdir -p "$B"
B=$(cd "$B" && pwd)
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CC=${CC:-cc}
CXX=${CXX:-c++}
W="-Wall -Wextra -Werror -I."
SRC=tests/core/cutout_engine.c

. tests/lib.sh # try; a clean environment, sanitizer options

ok() { echo "ok - cutout: $1"; }
bad() { echo "not ok - cutout: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

# switch: its outputs' variables, a function of its code, its public writers
vars_of() {
    case $1 in
    MEMOBS_NO_HTML) echo MEMOBS_HTML ;;
    MEMOBS_NO_STORMLOG) echo MEMOBS_STORMLOG MEMOBS_STORMLOG_HOST ;;
    MEMOBS_NO_TORCH_SNAPSHOT) echo MEMOBS_TORCH_SNAPSHOT ;;
    esac
}
code_of() {
    case $1 in
    MEMOBS_NO_HTML) echo memobs__html_printf ;;
    MEMOBS_NO_STORMLOG) echo memobs__sl_write ;;
    MEMOBS_NO_TORCH_SNAPSHOT) echo memobs__pk_int ;;
    esac
}
writers_of() {
    case $1 in
    MEMOBS_NO_HTML) echo memobs_write_html_file memobs_write_html ;;
    MEMOBS_NO_STORMLOG)
        echo memobs_write_stormlog_file memobs_write_stormlog_host_file memobs_write_stormlog ;;
    MEMOBS_NO_TORCH_SNAPSHOT) echo memobs_write_torch_snapshot_file memobs_write_torch_snapshot ;;
    esac
}
file_of() { # the file run() names for an output variable
    case $1 in
    MEMOBS_HTML) echo r.html ;;
    MEMOBS_STORMLOG) echo s.json ;;
    MEMOBS_STORMLOG_HOST) echo sh.json ;;
    MEMOBS_TORCH_SNAPSHOT) echo t.pickle ;;
    esac
}
SWITCHES="MEMOBS_NO_HTML MEMOBS_NO_STORMLOG MEMOBS_NO_TORCH_SNAPSHOT"
CONFIGS="MEMOBS_NO_HTML MEMOBS_NO_STORMLOG MEMOBS_NO_TORCH_SNAPSHOT all"
switches_of() { if [ "$1" = all ]; then echo $SWITCHES; else echo "$1"; fi; }
defs_of() { for s in $(switches_of "$1"); do printf -- '-D%s ' "$s"; done; }

# Every output, at exit; the one run of a build (run NAME EXE) writes them
# under $B/NAME/ and its stdout and stderr beside them.
run() {
    local d=$B/$1
    rm -rf "$d" && mkdir -p "$d"
    (cd "$d" && env MEMOBS_FORMAT=json MEMOBS_SUMMARY=sum.json MEMOBS_PROM_FILE=m.prom MEMOBS_LEAKS=leaks.txt \
        MEMOBS_HTML=r.html MEMOBS_STORMLOG=s.json MEMOBS_STORMLOG_HOST=sh.json MEMOBS_TORCH_SNAPSHOT=t.pickle \
        "$2" >stdout 2>stderr)
    echo $? >"$d/rc"
}

# The fields that depend on the clock or the pid, made constant.
norm() {
    python3 - "$1" <<'PY'
import json, re, sys
d = sys.argv[1]
s = json.load(open(d + "/sum.json"))
s["window_ns"] = 0
s["identity"]["pid"] = 0
print(json.dumps(s, sort_keys=True, indent=1))
for line in open(d + "/m.prom"):
    print(re.sub(r'pid="\d+"', 'pid=""', line.rstrip("\n")))
for line in open(d + "/leaks.txt"):
    line = re.sub(r"pid \d+", "pid N", line.rstrip("\n"))
    print(re.sub(r" *\d+(\.\d\d)? (ns|us|ms|s) ", " T ", line))  # an age, padded to its column: any width
print(open(d + "/stdout").read())
PY
}

# ---- the full build ----------------------------------------------------------
full_ok=1
if $CC -std=c99 -O2 $W "$SRC" -o "$B/engine_full" -pthread -lm >"$B/full.log" 2>&1 &&
    $CC -std=c99 -O0 $W -c "$SRC" -o "$B/engine_full.o" >>"$B/full.log" 2>&1; then
    run full "$B/engine_full"
    if [ "$(cat "$B/full/rc")" = 0 ] && [ -s "$B/full/r.html" ] && [ -s "$B/full/s.json" ] &&
        [ -s "$B/full/t.pickle" ] && [ ! -s "$B/full/stderr" ]; then
        ok "the full build writes every output, no warning"
    else
        bad "the full build's outputs" "rc $(cat "$B/full/rc")" "$(ls "$B/full" | tr '\n' ' ')" "$(head -5 "$B/full/stderr")"
        full_ok=0
    fi
    norm "$B/full" >"$B/full.norm"
else
    bad "the full build" "$(head -20 "$B/full.log")"
    full_ok=0
fi

for cfg in $CONFIGS; do
    defs=$(defs_of "$cfg")
    name=${cfg#MEMOBS_}
    # ---- compiles: four language modes, and the code gone ----
    log=$B/$name.log
    : >"$log"
    rm -f "$B/engine_$name"
    fails=""
    # C99 at -O2 (the engine run below; -O2's own warnings), the others checked
    $CC -std=c99 -O2 $W $defs "$SRC" -o "$B/engine_$name" -pthread -lm >>"$log" 2>&1 || fails=" [c99]"
    for m in "$CC -std=c11 -x c" "$CXX -std=c++11 -x c++" "$CXX -std=c++17 -x c++"; do
        o=$B/$name.$(echo "$m" | sed 's/.*-std=\([^ ]*\).*/\1/').o # the C11 one for nm below
        $m -O0 $W $defs -c "$SRC" -o "$o" >>"$log" 2>&1 || fails="$fails [$m]"
    done
    if [ -z "$fails" ]; then
        ok "$cfg: C99, C11, C++11, C++17 with -Wall -Wextra -Werror"
    else
        bad "$cfg: compiles" "failed:$fails" "$(head -20 "$log")"
    fi
    gone="" kept=""
    for s in $SWITCHES; do
        f=$(code_of "$s")
        has=$(nm "$B/$name.c11.o" 2>/dev/null | grep -c " $f\$")
        full_has=$(nm "$B/engine_full.o" 2>/dev/null | grep -c " $f\$")
        case " $(switches_of "$cfg") " in
        *" $s "*) [ "$has" = 0 ] && [ "$full_has" = 1 ] || gone="$gone $f (here $has, full build $full_has)" ;;
        *) [ "$has" = 1 ] || kept="$kept $f" ;;
        esac
    done
    if [ -z "$gone$kept" ]; then
        ok "$cfg: nm: the exporter's code is gone, the others' is there"
    else
        bad "$cfg: nm" "still there:$gone" "missing:$kept"
    fi

    # ---- a run with every output asked for ----
    [ -x "$B/engine_$name" ] || continue # its build failed (above)
    run "$name" "$B/engine_$name"
    want=""
    for s in $SWITCHES; do
        case " $(switches_of "$cfg") " in
        *" $s "*) for v in $(vars_of "$s"); do
            f=$(file_of "$v")
            want="${want}memobs: warning: memobs was built with $s: $v=$f is not written
"
        done ;;
        esac
    done
    got=$(sort "$B/$name/stderr")
    want=$(printf '%s' "$want" | sort)
    missing=""
    for s in $(switches_of "$cfg"); do
        for v in $(vars_of "$s"); do
            f=$(file_of "$v")
            [ -e "$B/$name/$f" ] && missing="$missing $f written"
        done
    done
    if [ "$(cat "$B/$name/rc")" = 0 ] && [ "$got" = "$want" ] && [ -z "$missing" ]; then
        ok "$cfg: its variables set: exit 0, one warning each (\"memobs was built with MEMOBS_NO_...: ... is not written\"), no file"
    else
        bad "$cfg: its variables set" "rc $(cat "$B/$name/rc")$missing" "expected stderr:" "$want" "actual:" "$got"
    fi
    if [ $full_ok = 1 ] && norm "$B/$name" >"$B/$name.norm" 2>&1 && cmp -s "$B/full.norm" "$B/$name.norm"; then
        ok "$cfg: the JSON summary, Prometheus file, leak report and counters are the full build's"
    else
        bad "$cfg: the other outputs" "$(diff "$B/full.norm" "$B/$name.norm" | head -10)"
    fi

    # ---- the public writers ----
    (cd "$B/$name" && "$B/engine_$name" writers . >writers.out 2>writers.err)
    wrong=""
    for s in $SWITCHES; do
        for fn in $(writers_of "$s"); do
            v=$(sed -n "s/^$fn //p" "$B/$name/writers.out" | tail -1)
            case " $(switches_of "$cfg") " in
            *" $s "*) [ "$v" = -1 ] && grep -q "^memobs: warning: $fn: memobs was built with $s; nothing written\$" \
                "$B/$name/writers.err" || wrong="$wrong $fn=$v" ;;
            *) [ "$v" = 0 ] || wrong="$wrong $fn=$v" ;;
            esac
        done
    done
    if [ -z "$wrong" ]; then
        ok "$cfg: its memobs_write_* return MEMOBS_ERR_INVALID (-1) with a warning; the others 0"
    else
        bad "$cfg: writers" "wrong:$wrong" "$(head -5 "$B/$name/writers.err")"
    fi
    # the snapshot's history calls: MEMOBS_ERR_INVALID and one warning each where it is cut out, else 0, silent
    wrong=""
    for fn in memobs_torch_history_start memobs_torch_history_stop; do
        v=$(sed -n "s/^$fn //p" "$B/$name/writers.out" | tail -1)
        n=$(grep -c "^memobs: warning: $fn: memobs was built with MEMOBS_NO_TORCH_SNAPSHOT; no history\$" "$B/$name/writers.err")
        case " $(switches_of "$cfg") " in
        *" MEMOBS_NO_TORCH_SNAPSHOT "*) [ "$v" = -1 ] && [ "$n" = 1 ] || wrong="$wrong $fn=$v ($n warnings)" ;;
        *) [ "$v" = 0 ] && [ "$n" = 0 ] || wrong="$wrong $fn=$v ($n warnings)" ;;
        esac
    done
    if [ -z "$wrong" ]; then
        ok "$cfg: memobs_torch_history_start/_stop: $(case " $(switches_of "$cfg") " in *" MEMOBS_NO_TORCH_SNAPSHOT "*) echo "MEMOBS_ERR_INVALID (-1), one warning each" ;; *) echo "0, no warning" ;; esac)"
    else
        bad "$cfg: memobs_torch_history_start/_stop" "wrong:$wrong" "$(head -5 "$B/$name/writers.err")"
    fi
done

# ---- nvcc, all switches ----
if [ -x "$NVCC" ]; then
    cp "$SRC" "$B/engine.cu"
    try cutout "nvcc -x cu, all three switches, -Werror all-warnings" \
        "$NVCC" -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror $(defs_of all) -I. -c "$B/engine.cu" -o "$B/cu.o"
else
    bad "nvcc not found at $NVCC (set NVCC=...)"
fi

# ---- static memory ----
sz() { # sz OBJECT SYMBOL: its size in bytes
    local h
    h=$(nm -S "$1" 2>/dev/null | awk -v n="$2" '$4 == n { print $2 }')
    [ -n "$h" ] && echo $((16#$h))
}
coll=$(sz "$B/engine_full.o" memobs__coll)
if [ -n "$coll" ] && [ "$coll" -lt 16384 ]; then
    ok "static: memobs__coll is $coll bytes (the ~350 KB of tables come at the first registration; 360 KB before)"
else
    bad "static: memobs__coll" "expected under 16384 bytes, got '$coll'"
fi
smp=$(sz "$B/engine_full.o" memobs__smp)
if [ -n "$smp" ] && [ "$smp" -lt 20000 ]; then
    ok "static: memobs__smp is $smp bytes (Stormlog's ring of 4096 marks comes at the first mark; 170 KB before)"
else
    bad "static: memobs__smp" "expected under 20000 bytes, got '$smp'"
fi
exit $rc
