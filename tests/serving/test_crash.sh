#!/usr/bin/env bash
# The crash writer (memobs.h, "Private: crash writer"): tests/serving/crash/crash.c
# records known figures on several threads, then crashes with a handler of
# its own that calls memobs__crash_write (as memobs' signal handlers do),
# restores the default action and re-raises. Built as C99, C++17,
# ASan+UBSan and TSan; for each: every crash signal, the process dies with
# it; the JSON and text summaries hold the normal summary's figures (the
# normal writers' output just before the crash is the reference) and the
# recorded ones; the Prometheus file is the normal exposition plus
# memobs_crash_signal, passes promtool, and no counter is below the last
# periodic write's; %p/%r paths, stderr and stdout, a stdout pipe with no
# reader, a missing directory, an old file replaced, exit outputs off, a
# forked child, two threads crashing at once, a crash among busy threads;
# no temporary left. Then what the writer may call: an audit of memobs.h
# (every function it reaches, every call out of it on the async-signal-safe
# list), malloc counted during the write, and its system calls (strace).
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/crash
mkdir -p "$B"
rc=0

. tests/lib.sh # a clean environment, sanitizer options
unset CRASH_APART CRASH_EXIT_OFF CRASH_MARK CRASH_PERIODIC CRASH_PROM CRASH_SUITE
# ASan's own SIGSEGV handler would stand in for the program's; no cores
export ASAN_OPTIONS="$ASAN_OPTIONS:handle_segv=0:handle_abort=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0"
ulimit -c 0

have_promtool=0
if command -v promtool >/dev/null; then have_promtool=1; else
    echo "ok - crash: promtool check metrics # SKIP promtool not installed (tests/deps.sh installs Debian's prometheus)"
fi

CHECK="python3 tests/serving/crash/check.py"

run_variant() { # name suite: crash_NAME as mk/tests.mk makes it
    local name=$1 suite=$2 bin="$B/crash_$1" d st pid f
    ok() { echo "ok - $suite: $1"; }
    bad() { echo "not ok - $suite: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }
    if ! test_make "$bin" >"$bin.log" 2>&1; then
        bad "build failed" "$(head -n 30 "$bin.log")"
        return
    fi
    # fresh DIR: case name; sets d
    fresh() { d="$B/$name/$1"; rm -rf "$d"; mkdir -p "$d"; }
    # crash VAR=VALUE... -- MODE: runs it in $d (stdout to $d/out, stderr to $d/err); sets st, pid
    crash() {
        local envs=()
        while [ "$1" != "--" ]; do envs+=("$1"); shift; done
        st=$($CHECK run 120 "$d/out" "$d/err" env "${envs[@]}" "$bin" "$2" "$d")
        pid=$(cat "$d/pid" 2>/dev/null)
    }
    # expect_sig NAME N: the process died of signal N
    expect_sig() {
        if [ "$st" = "signal $2" ]; then ok "$1: dies of signal $2"; else bad "$1: dies of signal $2" "it ended with: $st" "stderr: $(head -c 400 "$d/err")"; fi
    }
    no_temp() { # NAME: no temporary (PATH.tmp.HOST.PID.N, the old PATH.crash.PID) left in $d
        if ls "$d" | grep -q -e '\.crash\.' -e '\.tmp\.'; then bad "$1: no temporary left" "$(ls "$d")"; else ok "$1: no temporary left"; fi
    }
    checked() { # NAME CHECK-ARGS...: a check.py check
        local n=$1
        shift
        if $CHECK "$@" >"$d/check" 2>&1; then ok "$n"; else bad "$n" "$(cat "$d/check")"; fi
    }
    promtool_ok() { # NAME FILE
        [ $have_promtool = 1 ] || return 0
        if promtool check metrics <"$2" >"$d/promtool" 2>&1 && [ ! -s "$d/promtool" ]; then ok "$1: promtool check metrics"; else bad "$1: promtool check metrics" "$(head -n 10 "$d/promtool")"; fi
    }

    # SIGSEGV (a real fault): JSON summary at a %p path, Prometheus at a %r
    # path written every 100 ms, records made after the first periodic write
    fresh segv
    crash MEMOBS_SUMMARY="$d/sum_%p.json" MEMOBS_FORMAT=json MEMOBS_PROM_FILE="$d/m_r%r.prom" MEMOBS_PROM_INTERVAL_MS=100 \
        RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 MEMOBS_JOB_ID=crash-job CRASH_PERIODIC="$d/m_r1.prom" -- segv
    expect_sig "SIGSEGV" 11
    if [ -n "$pid" ] && [ -f "$d/sum_$pid.json" ]; then
        checked "SIGSEGV: JSON summary at sum_%p.json: the normal summary's members and figures, the recorded ones, crash and partial" \
            json "$d/sum_$pid.json" "$d/ref.json" "$d/expect.json" 11 SIGSEGV
    else
        bad "SIGSEGV: JSON summary at sum_%p.json" "pid $pid; files: $(ls "$d")"
    fi
    checked "SIGSEGV: Prometheus file at m_r%r.prom: the normal exposition (every family), then memobs_crash_signal; no counter below the periodic write's" \
        prom "$d/m_r1.prom" "$d/ref.prom" 11 SIGSEGV "$d/periodic.prom"
    promtool_ok "SIGSEGV" "$d/m_r1.prom"
    no_temp "SIGSEGV"

    # SIGABRT (abort()): the text summary on stderr, Prometheus at a plain path
    fresh abrt
    crash MEMOBS_SUMMARY=stderr MEMOBS_PROM_FILE="$d/m.prom" -- abrt
    expect_sig "SIGABRT" 6
    checked "SIGABRT: text summary on stderr: a first line for the crash, then the normal summary's rows" \
        text "$d/err" "$d/ref.txt" 6 SIGABRT
    checked "SIGABRT: Prometheus file" prom "$d/m.prom" "$d/ref.prom" 6 SIGABRT
    promtool_ok "SIGABRT" "$d/m.prom"
    no_temp "SIGABRT"

    # SIGBUS, SIGFPE, SIGILL (raise()): JSON on stdout; manual records apart for one
    for s in "bus 7 SIGBUS" "fpe 8 SIGFPE" "ill 4 SIGILL"; do
        set -- $s
        fresh "$1"
        if [ "$1" = fpe ]; then
            crash MEMOBS_SUMMARY=stdout MEMOBS_FORMAT=json MEMOBS_PROM_FILE="$d/m.prom" CRASH_APART=1 -- "$1"
        else
            crash MEMOBS_SUMMARY=stdout MEMOBS_FORMAT=json -- "$1"
        fi
        expect_sig "$3" "$2"
        checked "$3: JSON summary on stdout" json "$d/out" "$d/ref.json" "$d/expect.json" "$2" "$3"
        if [ "$1" = fpe ]; then
            checked "$3: manual records apart: the manual families in the Prometheus file" prom "$d/m.prom" "$d/ref.prom" "$2" "$3"
            if grep -q '^memobs_manual_transfer_bytes_total{' "$d/m.prom" && grep -q '"apart":true' "$d/out"; then
                ok "$3: manual figures in both outputs"
            else
                bad "$3: manual figures in both outputs" "$(grep -c manual "$d/m.prom")"
            fi
        fi
    done

    # the summary on a stdout pipe whose reader is gone: no SIGPIPE, the crash's own signal
    fresh pipe
    st=$(python3 - "$bin" "$d" <<'PY'
import subprocess, sys, os
p = subprocess.Popen([sys.argv[1], "segv", sys.argv[2]], stdout=subprocess.PIPE,
                     env=dict(os.environ, MEMOBS_SUMMARY="stdout", MEMOBS_PROM_FILE=sys.argv[2] + "/m.prom"))
p.stdout.close()
try:
    r = p.wait(timeout=120)
    print("signal %d" % -r if r < 0 else "exit %d" % r)
except subprocess.TimeoutExpired:
    p.kill(); print("timeout")
PY
)
    expect_sig "summary on a pipe with no reader (no SIGPIPE)" 11
    checked "summary on a pipe with no reader: the Prometheus file written still" prom "$d/m.prom" "$d/ref.prom" 11 SIGSEGV

    # a missing directory costs the summary only; an old file is replaced whole
    fresh paths
    echo "old summary" >"$d/old.json"
    crash MEMOBS_SUMMARY="$d/nodir/sum.json" MEMOBS_FORMAT=json MEMOBS_PROM_FILE="$d/old.json" -- segv
    expect_sig "summary in a missing directory" 11
    checked "summary in a missing directory: the Prometheus file (over an old file) written still" prom "$d/old.json" "$d/ref.prom" 11 SIGSEGV
    no_temp "summary in a missing directory"
    fresh replace
    echo "old summary" >"$d/sum.json"
    crash MEMOBS_SUMMARY="$d/sum.json" MEMOBS_FORMAT=json -- segv
    checked "an old summary file replaced by the crash's" json "$d/sum.json" "$d/ref.json" "$d/expect.json" 11 SIGSEGV
    no_temp "old summary file replaced"

    # memobs_set_exit_outputs(0): nothing written
    fresh exitoff
    crash MEMOBS_SUMMARY="$d/sum.json" MEMOBS_PROM_FILE="$d/m.prom" CRASH_EXIT_OFF=1 -- segv
    expect_sig "exit outputs off" 11
    if [ ! -e "$d/sum.json" ] && [ ! -e "$d/m.prom" ]; then ok "exit outputs off: no summary, no Prometheus file"; else bad "exit outputs off: no summary, no Prometheus file" "$(ls "$d")"; fi
    no_temp "exit outputs off"

    # a child forked without exec crashes: it writes only to paths of its own (%p)
    fresh fork
    crash MEMOBS_SUMMARY="$d/sum.json" MEMOBS_FORMAT=json MEMOBS_PROM_FILE="$d/m.prom" -- fork
    f=$(cat "$d/out")
    if [ "$st" = "exit 0" ] && [ "${f##* signal }" = 11 ] && [ ! -e "$d/sum.json" ] && [ ! -e "$d/m.prom" ]; then
        ok "forked child crashes: dies of SIGSEGV, leaves the parent's summary and Prometheus paths alone"
    else
        bad "forked child crashes: leaves the parent's paths alone" "parent: $st; $f; files: $(ls "$d")"
    fi
    fresh fork_p
    crash MEMOBS_SUMMARY="$d/sum_%p.json" MEMOBS_FORMAT=json MEMOBS_PROM_FILE="$d/m_%p.prom" -- fork
    f=$(cat "$d/out")
    f=${f#child }
    f=${f%% *}
    if [ -f "$d/sum_$f.json" ] && [ -f "$d/m_$f.prom" ] && [ ! -e "$d/sum_$pid.json" ] && [ ! -e "$d/m_$pid.prom" ]; then
        ok "forked child crashes: writes to %p paths, its own"
        checked "forked child's crash summary: its figures (the parent's at the fork)" json "$d/sum_$f.json" "$d/ref.json" "$d/expect.json" 11 SIGSEGV "$f"
    else
        bad "forked child crashes: writes to %p paths" "child $f, parent $pid; files: $(ls "$d")"
    fi
    no_temp "forked child"

    # two threads crash at once: one write, whole, and the process dies of it
    fresh segv2
    crash MEMOBS_SUMMARY="$d/sum.json" MEMOBS_FORMAT=json MEMOBS_PROM_FILE="$d/m.prom" -- segv2
    expect_sig "two threads crash at once" 11
    checked "two threads crash at once: the summary" json "$d/sum.json" "$d/ref.json" "$d/expect.json" 11 SIGSEGV
    checked "two threads crash at once: the Prometheus file" prom "$d/m.prom" "$d/ref.prom" 11 SIGSEGV
    no_temp "two threads crash at once"

    # a crash among four threads that record, count and track without pause
    fresh busy
    crash MEMOBS_SUMMARY="$d/sum.json" MEMOBS_FORMAT=json MEMOBS_PROM_FILE="$d/m.prom" MEMOBS_PROM_INTERVAL_MS=100 -- busy
    expect_sig "crash among busy threads" 11
    if python3 - "$d/sum.json" "$d/ref.json" >"$d/check" 2>&1 <<'PY'
import json, sys
c, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
ok = c["decode"]["h2d_count"] > r["decode"]["h2d_count"] and c["counters"].get("busy_ops", 0) > 0 \
    and c["memory"]["host"]["allocs"] > r["memory"]["host"]["allocs"] and c["ttft"]["count"] > r["ttft"]["count"]
print("    # decode h2d %d (before %d), busy_ops %s, host allocs %d, ttft %d" % (c["decode"]["h2d_count"],
      r["decode"]["h2d_count"], c["counters"].get("busy_ops"), c["memory"]["host"]["allocs"], c["ttft"]["count"]))
sys.exit(0 if ok else 1)
PY
    then ok "crash among busy threads: the summary parses, with their records"; else bad "crash among busy threads: the summary" "$(cat "$d/check")"; fi
    promtool_ok "crash among busy threads" "$d/m.prom"
    no_temp "crash among busy threads"

    # in-process: the writer from a handler on an alternate stack (its
    # stack, malloc), the periodic write held off and waited for,
    # formatting, locks held, a second writer
    fresh alive
    st=$($CHECK run 120 "$d/out" "$d/err" env MEMOBS_SUMMARY="$d/sum.json" MEMOBS_FORMAT=json \
        MEMOBS_PROM_FILE="$d/m.prom" MEMOBS_PROM_INTERVAL_MS=0 CRASH_PROM="$d/m.prom" CRASH_SUITE="$suite" "$bin" alive "$d")
    cat "$d/out"
    if [ "$st" != "exit 0" ] || grep -q "^not ok" "$d/out"; then bad "alive: in-process checks" "it ended with: $st"; fi
    [ -s "$d/err" ] && bad "alive: stderr is empty" "$(head -c 400 "$d/err")"
}

run_variant c99 crash-c99 # these two with -DCRASH_INTERPOSE
run_variant cxx17 crash-c++17
run_variant asan crash-asan+ubsan
if [ "${CRASH_TSAN:-1}" = 1 ]; then
    run_variant tsan crash-tsan
fi

# what the writer may call, read in memobs.h
d="$B/audit"
mkdir -p "$d"
if $CHECK audit memobs.h >"$d/check" 2>&1; then
    echo "ok - crash: audit: the crash writer's section names no allocator, stdio, lock or log call; every function it reaches calls only async-signal-safe ones"
    cat "$d/check"
else
    echo "not ok - crash: audit of what the crash writer calls"
    cat "$d/check"
    rc=1
fi

# its system calls, from its "crash-begin" to its "crash-end" marker on the crashing thread
if command -v strace >/dev/null && strace -f -o /dev/null true 2>/dev/null; then
    d="$B/strace"
    rm -rf "$d"
    mkdir -p "$d"
    $CHECK run 120 "$d/out" "$d/err" strace -f -qq -o "$d/trace" env MEMOBS_SUMMARY="$d/sum.json" MEMOBS_FORMAT=json \
        MEMOBS_PROM_FILE="$d/m.prom" CRASH_MARK=1 "$B/crash_c99" segv "$d" >/dev/null
    if python3 - "$d/trace" >"$d/check" 2>&1 <<'PY'
import re, sys
allowed = {"openat", "open", "write", "close", "rename", "renameat", "renameat2", "unlink", "unlinkat", "poll",
           "ppoll", "getpid", "clock_gettime",
           # the destination's decision (what the path is, the host id of a temporary's name)
           "stat", "lstat", "fstat", "newfstatat", "statx", "readlink", "readlinkat", "uname", "fcntl", "linkat",
           "fchmod", "fchown", "geteuid"}
lines = open(sys.argv[1]).read().split("\n")
tid, calls, inside = None, [], False
for l in lines:
    m = re.match(r"(\d+)\s+(\w+)\(", l)
    if not m: continue
    if '"crash-begin"' in l: tid, inside = m.group(1), True; continue
    if '"crash-end"' in l and m.group(1) == tid: inside = False; break
    if inside and m.group(1) == tid: calls.append(m.group(2))
bad = sorted(set(calls) - allowed)
print("    # %d system calls: %s" % (len(calls), " ".join(sorted(set(calls)))))
if tid is None or inside or not calls: print("    # markers not found"); sys.exit(1)
if bad: print("    # not allowed: %s" % " ".join(bad)); sys.exit(1)
PY
    then echo "ok - crash: strace: the writer's system calls are open, write, close, rename, poll, getpid, clock_gettime, and the stat, readlink, uname, linkat of the destination's decision (no futex, no mmap, no brk)"; cat "$d/check"
    else echo "not ok - crash: strace: the writer's system calls"; cat "$d/check"; rc=1; fi
else
    echo "ok - crash: strace # SKIP strace not installed or not allowed here"
fi
exit $rc
