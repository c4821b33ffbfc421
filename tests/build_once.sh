#!/usr/bin/env bash
# tests/build_once.sh - the C and C++ compilers as tests/run.sh gives them to
# the suites: it links cc, gcc, g++, c++, clang and clang++ to this file in
# $BUILD/tests/bin, first on PATH. A compile that a suite already made in
# this run (the same compiler, folder and arguments, input files of the same
# content, and for a compiled source every header it included, as the
# compiler's -MMD list names them, of the same content) is not made again:
# its output is copied from the first one. A command with two or more
# sources is run as it is (one dependency list per compile).
# Two suites asking for it at once: the second waits for the first. Only a
# compile that succeeded with nothing on stderr or stdout is kept, so every
# warning and error is still the compiler's own; anything the rules below do
# not recognise as one plain compile runs the compiler as it is. The runner
# empties the store at the start of each run (the sources may have changed
# since); MEMOBS_TEST_BUILD_ONCE=0 turns it off. A suite run alone (bash
# tests/AREA/test_X.sh) calls the compilers directly.
name=${0##*/}
here=$(cd "${0%/*}" && pwd -P)

# the real compiler: the first NAME on PATH after this folder
real=
IFS=: read -ra path <<<"$PATH"
for p in "${path[@]}"; do
    [ -n "$p" ] && [ "$(cd "$p" 2>/dev/null && pwd -P)" != "$here" ] && [ -x "$p/$name" ] && { real=$p/$name; break; }
done
[ -n "$real" ] || { echo "$name: not found on PATH (tests/build_once.sh)" >&2; exit 127; }
store=${MEMOBS_TEST_BUILD_ONCE_DIR:-$here/../build-once}
[ "${MEMOBS_TEST_BUILD_ONCE:-1}" = 0 ] && exec "$real" "$@"

# One compile: exactly one -o FILE (not under /dev), no preprocessing only,
# no dependency files, no libraries from a folder (-L: their content is not
# in the key), no response files or standard input.
out=
key_args=()
inputs=()
n=$#
args=("$@")
for ((i = 0; i < n; i++)); do
    a=${args[i]}
    case $a in
    -o)
        [ -z "$out" ] && [ $((i + 1)) -lt $n ] || exec "$real" "$@"
        i=$((i + 1))
        out=${args[i]}
        key_args+=(-o @OUT@)
        continue
        ;;
    -o?* | -E | -S | -M | -MM | -MD | -MMD | -MF* | -MT* | -MQ* | -save-temps* | -L* | -B* | @* | - | -v | --version | -dump* | \
        -print-* | --help* | -###) exec "$real" "$@" ;;
    *=*) # -Wl,--version-script=FILE and the like: the file's content too
        [ -f "${a##*=}" ] && inputs+=("${a##*=}") ;;
    -*) ;;
    *) [ -f "$a" ] && inputs+=("$a") ;;
    esac
    key_args+=("$a")
done
case $out in '' | /dev/*) exec "$real" "$@" ;; esac
[ ${#inputs[@]} -gt 0 ] || exec "$real" "$@"

key=$({
    printf '%s\0' "$real" "$PWD" "${key_args[@]}"
    sha1sum -- "${inputs[@]}" | cut -d' ' -f1
} | sha1sum | cut -d' ' -f1) || exec "$real" "$@"
# the sources among the inputs: one is compiled with a dependency list, so
# that a header changed since (a test writing its own) is never reused
srcs=0
for f in "${inputs[@]}"; do
    case $f in *.c | *.cc | *.cpp | *.cxx | *.C | *.i | *.ii) srcs=$((srcs + 1)) ;; esac
done
[ $srcs -le 1 ] || exec "$real" "$@"
mkdir -p "$store" || exec "$real" "$@"
exec 9>"$store/$key.lock" || exec "$real" "$@"
flock 9 || exec "$real" "$@"
if [ -f "$store/$key" ] && { [ ! -f "$store/$key.deps" ] || sha1sum --status -c "$store/$key.deps" 2>/dev/null; } &&
    cp -f "$store/$key" "$out" 2>/dev/null; then
    exit 0
fi
rm -f "$store/$key" "$store/$key.deps" "$store/$key.d"
deps=()
[ $srcs = 1 ] && deps=(-MMD -MF "$store/$key.d")
"$real" "$@" "${deps[@]}" >"$store/$key.out" 2>"$store/$key.err"
st=$?
cat "$store/$key.out"
cat "$store/$key.err" >&2
if [ $st = 0 ] && [ ! -s "$store/$key.out" ] && [ ! -s "$store/$key.err" ] && [ -f "$out" ]; then
    keep=1
    if [ $srcs = 1 ]; then
        # the files the compile read (make's syntax: "target: a b \"), hashed
        keep=0
        if [ -s "$store/$key.d" ]; then
            mapfile -t used < <(sed -e '1s/^[^:]*://' -e 's/\\$//' "$store/$key.d" | tr -s ' \t' '\n' | grep -v '^$')
            [ ${#used[@]} -gt 0 ] && sha1sum -- "${used[@]}" >"$store/$key.deps" 2>/dev/null && keep=1
        fi
    fi
    [ $keep = 1 ] && cp -f "$out" "$store/$key.tmp" && mv -f "$store/$key.tmp" "$store/$key"
fi
rm -f "$store/$key.out" "$store/$key.err" "$store/$key.d"
exit $st
