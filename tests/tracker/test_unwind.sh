#!/usr/bin/env bash
# tests/tracker/test_unwind.c (the tracker's frame-pointer unwinder) built with
# -fno-omit-frame-pointer -rdynamic five ways: C99, C++17, clang C11,
# ASan+UBSan, TSan; each runs the in-process tests, then one fresh process
# per environment (MEMOBS_UNWIND=fp, =backtrace, =FP, malformed). Then two
# builds: -DMEMOBS_UNWIND=MEMOBS_UNWIND_FP (fp by default) and
# -DMEMOBS__NO_FP_UNWIND (a platform without the walker: backtrace(), one
# warning).
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/unwind
mkdir -p "$B"
CC=${CC:-cc}
CXX=${CXX:-c++}
W="-Wall -Wextra -Werror -I."
rc=0

. tests/lib.sh # a clean environment, sanitizer options

# build NAME SUITE COMPILER FLAGS...: $B/unwind_NAME, or a "not ok" line
build() {
    local name=$1 suite=$2 comp=$3
    shift 3
    if ! $comp "$@" $W -fno-omit-frame-pointer -DTEST_SUITE="\"$suite\"" -o "$B/unwind_$name" tests/tracker/test_unwind.c \
        -pthread -rdynamic -lm >"$B/unwind_$name.log" 2>&1; then
        echo "not ok - $suite: build failed"
        head -n 30 "$B/unwind_$name.log" | sed 's/^/    # /'
        rc=1
        return 1
    fi
}

# mode NAME VAR=VALUE... -- MODE: runs a mode of $B/unwind_NAME with that
# environment, stdout (ok/not ok lines) shown, stderr to $B/NAME.err
mode() {
    local name=$1 envs=()
    shift
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    env "${envs[@]}" "$B/unwind_$name" "$@" 2>"$B/$name.err" | grep -v ' passed, .* failed$'
    if [ "${PIPESTATUS[0]}" -ne 0 ]; then rc=1; sed 's/^/    # stderr: /' "$B/$name.err" | head -n 10; fi
}

# stderr_is NAME SUITE WHAT PATTERN...: $B/NAME.err has exactly one line per pattern, each matching once
stderr_is() {
    local name=$1 suite=$2 what=$3 p
    shift 3
    if [ "$(wc -l <"$B/$name.err")" -ne $# ]; then
        echo "not ok - $suite: $what"
        echo "    # stderr has $(wc -l <"$B/$name.err") lines, want $#:"
        sed 's/^/    #   /' "$B/$name.err"
        rc=1
        return
    fi
    for p in "$@"; do
        if [ "$(grep -c -- "$p" "$B/$name.err")" -ne 1 ]; then
            echo "not ok - $suite: $what"
            echo "    # no single line matching '$p' in:"
            sed 's/^/    #   /' "$B/$name.err"
            rc=1
            return
        fi
    done
    echo "ok - $suite: $what"
}

run_variant() { # name suite compiler flags...
    local name=$1 suite=$2
    build "$@" || return
    "$B/unwind_$name" || rc=1
    mode "$name" MEMOBS_UNWIND=fp -- fp
    stderr_is "$name" "$suite" "MEMOBS_UNWIND=fp: no warning"
    mode "$name" MEMOBS_UNWIND=FP -- fp
    stderr_is "$name" "$suite" "MEMOBS_UNWIND=FP (any case): no warning"
    mode "$name" MEMOBS_UNWIND=backtrace -- backtrace
    stderr_is "$name" "$suite" "MEMOBS_UNWIND=backtrace: no warning"
    mode "$name" MEMOBS_UNWIND=bogus -- backtrace
    stderr_is "$name" "$suite" "MEMOBS_UNWIND=bogus: one warning, backtrace kept" \
        "^memobs: warning: MEMOBS_UNWIND='bogus' is not backtrace or fp; using backtrace$"
    mode "$name" MEMOBS_UNWIND= -- backtrace
    stderr_is "$name" "$suite" "MEMOBS_UNWIND empty: one warning, backtrace kept" \
        "^memobs: warning: MEMOBS_UNWIND='' is not backtrace or fp; using backtrace$"
}

run_variant c99 unwind-c99 "$CC" -std=c99 -O2 -g
# the main thread's bounds with no stack rlimit (glibc takes its size from it)
if [ -x "$B/unwind_c99" ]; then
    out=$( (ulimit -s unlimited && MEMOBS_UNWIND=fp "$B/unwind_c99" fp) 2>&1)
    if [ $? -eq 0 ] && [ "$(printf '%s\n' "$out" | grep -c '^ok - ')" -eq 1 ]; then
        echo "ok - unwind-c99: MEMOBS_UNWIND=fp with ulimit -s unlimited"
    else
        echo "not ok - unwind-c99: MEMOBS_UNWIND=fp with ulimit -s unlimited"
        printf '%s\n' "$out" | head -n 20 | sed 's/^/    # /'
        rc=1
    fi
fi
run_variant cxx17 unwind-c++17 "$CXX" -x c++ -std=c++17 -O2 -g
if command -v clang >/dev/null; then
    run_variant clang unwind-clang clang -std=c11 -O2 -g
else
    echo "ok - unwind-clang: # SKIP no clang"
fi
run_variant asan unwind-asan+ubsan "$CC" -std=c11 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined
run_variant tsan unwind-tsan "$CC" -std=c11 -O1 -g -fsanitize=thread

# fp the default at compile time; the environment still chooses
if build fpdef unwind-fp-default "$CC" -std=c99 -O2 -g -DMEMOBS_UNWIND=MEMOBS_UNWIND_FP; then
    mode fpdef -- fp
    stderr_is fpdef unwind-fp-default "-DMEMOBS_UNWIND=MEMOBS_UNWIND_FP: fp by default, no warning"
    mode fpdef MEMOBS_UNWIND=backtrace -- backtrace
    stderr_is fpdef unwind-fp-default "-DMEMOBS_UNWIND=MEMOBS_UNWIND_FP, MEMOBS_UNWIND=backtrace: backtrace"
    mode fpdef MEMOBS_UNWIND=bogus -- fp
    stderr_is fpdef unwind-fp-default "-DMEMOBS_UNWIND=MEMOBS_UNWIND_FP, MEMOBS_UNWIND=bogus: one warning, fp kept" \
        "^memobs: warning: MEMOBS_UNWIND='bogus' is not backtrace or fp; using fp$"
fi

# no walker built (as on other platforms): backtrace(), said once
if build nofp unwind-no-fp "$CC" -std=c99 -O2 -g -DMEMOBS__NO_FP_UNWIND; then
    mode nofp MEMOBS_UNWIND=fp -- no_fp
    stderr_is nofp unwind-no-fp "MEMOBS_UNWIND=fp without the walker: one warning at start-up" \
        "^memobs: warning: frame-pointer unwinding is built for x86-64 and aarch64 with glibc only; C stacks are captured with backtrace() instead$"
fi
exit $rc
