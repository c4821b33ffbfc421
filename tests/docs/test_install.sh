#!/usr/bin/env bash
# tests/docs/test_install.sh - checks `make install` / `make uninstall`
# (mk/install.mk): the headers, pkg-config and CMake files, the LD_PRELOAD
# library and its launcher (tests/preload/test_launcher.sh runs them), the Grafana
# dashboard (share/memobs/grafana/memobs.json), and that the
# installed memobs can be consumed through pkg-config and through
# find_package(memobs), also after the installed tree has been moved.
#
# Run from anywhere (it changes to the repository root): bash tests/docs/test_install.sh
# Prints one line per check, "ok - install: <what>" or
# "not ok - install: <what>: <detail>", followed on failure by the step's log
# as "    # " lines. Exits 1 if any check failed.

set -u

cd "$(dirname "$0")/../.." || exit 1

# Nothing from the caller's environment should steer the install or the runs:
# a `make test DESTDIR=...` would reach the sub-make through MAKEFLAGS, and
# MEMOBS=0 would switch recording off in the consumer.
unset DESTDIR MAKEFLAGS MFLAGS MAKEFILES MAKELEVEL
unset MEMOBS MEMOBS_SUMMARY MEMOBS_FORMAT

failed=0
pass() { echo "ok - install: $1"; }
fail() {
    echo "not ok - install: $1: $2"
    failed=1
    if [ -s "$log" ]; then sed -e 's/^/    # /' "$log" | tail -n 80; fi
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memobs-install-test.XXXXXX") || {
    echo "not ok - install: setup: mktemp -d failed"
    exit 1
}
trap 'rm -rf "$tmp"' EXIT
log=$tmp/log
: >"$log"

# Run a command with its output going to the log (replaced at each step).
quiet() { "$@" >"$log" 2>&1; }
# Same, keeping what was already logged by this step.
quiet_more() { "$@" >>"$log" 2>&1; }

have() { command -v "$1" >/dev/null 2>&1; }
# has_word WORD ARGS...: is WORD one of ARGS?
has_word() {
    local w=$1 a
    shift
    for a in "$@"; do [ "$a" = "$w" ] && return 0; done
    return 1
}

cc=${CC:-cc}
for tool in make "$cc"; do
    if ! have "$tool"; then
        echo "not ok - install: $tool missing"
        exit 1
    fi
done
have_pkgconfig=1
have_cmake=1
if ! have pkg-config; then
    echo "not ok - install: pkg-config missing"
    failed=1
    have_pkgconfig=0
fi
if ! have cmake; then
    echo "not ok - install: cmake missing"
    failed=1
    have_cmake=0
fi

# Version the install should carry: the one in memobs.h.
version=$(sed -n 's/^[[:space:]]*#[[:space:]]*define[[:space:]][[:space:]]*MEMOBS_VERSION[[:space:]][[:space:]]*"\([^"]*\)".*/\1/p' memobs.h 2>/dev/null | head -n 1)
[ -n "$version" ] || version=0.0.0

headers=$(ls memobs*.h 2>/dev/null)
if [ -z "$headers" ]; then
    echo "not ok - install: setup: no memobs*.h at the repository root"
    exit 1
fi

# Files install must create under a prefix, relative to it, with their mode.
expected_files() {
    for h in $headers; do echo "include/$h 0644"; done
    echo lib/pkgconfig/memobs.pc 0644
    echo lib/cmake/memobs/memobsConfig.cmake 0644
    echo lib/cmake/memobs/memobsConfigVersion.cmake 0644
    echo lib/libmemobs_preload.so 0755
    echo lib/libnccl-profiler-memobs.so 0755
    echo bin/memobs-run 0755
    echo share/memobs/grafana/memobs.json 0644
}

# Print what is wrong with the files under $1 (nothing if all is well):
# missing, different from the source, or not of their mode.
check_installed() {
    local root=$1 f m
    while read -r f m; do
        if [ ! -f "$root/$f" ]; then
            echo "missing $f"
        elif [ -z "$(find "$root/$f" -prune -perm "$m")" ]; then
            echo "$f is not mode $m"
        fi
    done < <(expected_files)
    for f in $headers; do
        [ -f "$root/include/$f" ] && ! cmp -s "$f" "$root/include/$f" && echo "include/$f differs from $f"
    done
    [ -f "$root/share/memobs/grafana/memobs.json" ] && ! cmp -s grafana/memobs.json "$root/share/memobs/grafana/memobs.json" &&
        echo "share/memobs/grafana/memobs.json differs from grafana/memobs.json"
    grep -q '@[A-Za-z_]*@' "$root/lib/pkgconfig/memobs.pc" "$root"/lib/cmake/memobs/*.cmake 2>/dev/null &&
        echo "unsubstituted @VAR@ left in a generated file"
    return 0
}

# Run a built consumer; it prints "consumer ok" on success.
run_consumer() {
    local out
    out=$("$1" 2>&1)
    local rc=$?
    echo "$out" >>"$log"
    [ $rc -eq 0 ] && [ "$out" = "consumer ok" ]
}

# Configure, build and run tests/docs/install against prefix $1 in build dir $2.
# Sets $why on failure.
cmake_consumer() {
    local prefix=$1 build=$2
    if ! quiet cmake -S tests/docs/install -B "$build" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_EXPORT_COMPILE_COMMANDS=ON; then
        why="cmake configure failed"
        return 1
    fi
    # The package must be the one under $prefix, not some other install.
    local dir
    dir=$(sed -n 's/^memobs_DIR:[A-Z]*=//p' "$build/CMakeCache.txt")
    if [ "$dir" != "$prefix/lib/cmake/memobs" ]; then
        why="memobs_DIR is '$dir', expected '$prefix/lib/cmake/memobs'"
        return 1
    fi
    if ! quiet_more cmake --build "$build"; then
        why="cmake --build failed"
        return 1
    fi
    if [ -f "$build/compile_commands.json" ] &&
        ! grep -q -- "$prefix/include" "$build/compile_commands.json"; then
        why="the compile command does not use $prefix/include"
        return 1
    fi
    if ! run_consumer "$build/consumer"; then
        why="consumer failed"
        return 1
    fi
    return 0
}

prefix=$tmp/prefix

# 1. make install
what="make install PREFIX=<tmp>: headers, memobs.pc, CMake package, lib/libmemobs_preload.so, lib/libnccl-profiler-memobs.so, bin/memobs-run (0755) and the Grafana dashboard"
if ! quiet make -s install PREFIX="$prefix" DESTDIR= BUILD="$tmp/obj"; then
    fail "$what" "make exited non-zero"
    exit 1
fi
problems=$(check_installed "$prefix")
if [ -n "$problems" ]; then
    echo "$problems" >>"$log"
    fail "$what" "$(echo "$problems" | head -n 1)"
    exit 1
fi
pass "$what"

# What a user reads about the install: the usage comment of the installed
# memobsConfig.cmake names this version (a find_package line that works),
# and README.md's Install section names every file install puts there.
what="memobsConfig.cmake's comment suggests find_package(memobs $version REQUIRED), the installed version"
sug=$(sed -n 's/^#   find_package(memobs \([^ ]*\) REQUIRED)$/\1/p' "$prefix/lib/cmake/memobs/memobsConfig.cmake")
if [ "$sug" = "$version" ]; then pass "$what"; else : >"$log"; fail "$what" "got '$sug'"; fi
what="README.md's Install section names every file make install writes"
readme_install=$(sed -n '/^## Install$/,/^## /p' README.md)
missing=
while read -r f m; do
    case $f in include/*) f=include/ ;; lib/cmake/memobs/*) f=lib/cmake/memobs/ ;; esac
    case $readme_install in *"\`$f"*) ;; *) missing="$missing $f" ;; esac
done < <(expected_files)
if [ -z "$missing" ]; then pass "$what"; else : >"$log"; fail "$what" "not named:$missing"; fi

# 2. pkg-config
if [ $have_pkgconfig = 1 ]; then
    what="pkg-config --modversion is $version"
    : >"$log"
    got=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --modversion memobs 2>"$log")
    if [ "$got" = "$version" ]; then pass "$what"; else fail "$what" "got '$got'"; fi

    what="pkg-config consumer builds and runs"
    : >"$log"
    # $cc and $flags are word lists on purpose.
    # shellcheck disable=SC2086
    if ! flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs memobs 2>"$log"); then
        fail "$what" "pkg-config --cflags --libs memobs failed"
    elif ! has_word "-I$prefix/include" $flags; then
        fail "$what" "flags '$flags' lack -I$prefix/include"
    elif ! quiet $cc -Wall -o "$tmp/consumer-pc" tests/docs/install/consumer.c $flags; then
        fail "$what" "compile failed ($cc ... $flags)"
    elif ! run_consumer "$tmp/consumer-pc"; then
        fail "$what" "consumer failed"
    else
        pass "$what"
    fi
fi

# 3. CMake package
if [ $have_cmake = 1 ]; then
    what="cmake version file (SameMajorVersion)"
    cat >"$tmp/version_check.cmake" <<'EOF'
# cmake -DVF=<memobsConfigVersion.cmake> -P version_check.cmake
cmake_minimum_required(VERSION 3.16)
# try(<label> <want compatible 0/1> <want exact 0/1> <version> [<range max> INCLUDE|EXCLUDE])
function(try label want_compat want_exact req)
  set(PACKAGE_FIND_VERSION "${req}")
  set(PACKAGE_FIND_VERSION_RANGE "")
  if(ARGC GREATER 4)
    set(PACKAGE_FIND_VERSION_RANGE "${req}...${ARGV4}")
    set(PACKAGE_FIND_VERSION_MIN "${req}")
    set(PACKAGE_FIND_VERSION_MAX "${ARGV4}")
    set(PACKAGE_FIND_VERSION_RANGE_MIN INCLUDE)
    set(PACKAGE_FIND_VERSION_RANGE_MAX "${ARGV5}")
  endif()
  include("${VF}")
  set(c 0)
  set(e 0)
  if(PACKAGE_VERSION_COMPATIBLE)
    set(c 1)
  endif()
  if(PACKAGE_VERSION_EXACT)
    set(e 1)
  endif()
  if(NOT c EQUAL want_compat OR NOT e EQUAL want_exact)
    message(SEND_ERROR "${label}: request '${req}' ${ARGV4} ${ARGV5} against "
      "${PACKAGE_VERSION}: compatible=${c} exact=${e}, expected ${want_compat}/${want_exact}")
  endif()
endfunction()

set(PACKAGE_FIND_VERSION "")
include("${VF}")
set(v "${PACKAGE_VERSION}")
if(NOT v MATCHES "^([0-9]+)\\.([0-9]+)\\.([0-9]+)")
  message(FATAL_ERROR "PACKAGE_VERSION '${v}' is not x.y.z")
endif()
set(major ${CMAKE_MATCH_1})
set(minor ${CMAKE_MATCH_2})
set(patch ${CMAKE_MATCH_3})
math(EXPR next_major "${major} + 1")
math(EXPR next_patch "${patch} + 1")

try("no version" 1 0 "")
try("same version" 1 1 "${v}")
try("major only" 1 0 "${major}")
try("major.minor" 1 0 "${major}.${minor}")
try("newer patch" 0 0 "${major}.${minor}.${next_patch}")
try("next major" 0 0 "${next_major}")
if(major GREATER 0)
  math(EXPR prev_major "${major} - 1")
  try("previous major" 0 0 "${prev_major}.0")
endif()
try("range up to next major" 1 0 "${major}" "${next_major}" EXCLUDE)
try("range ending at it" 1 0 "${major}" "${v}" INCLUDE)
try("range ending before it" 0 0 "${major}" "${v}" EXCLUDE)
try("the version memobsConfig.cmake's comment suggests" 1 1 "${SUG}")
EOF
    if quiet cmake -DVF="$prefix/lib/cmake/memobs/memobsConfigVersion.cmake" -DSUG="$sug" -P "$tmp/version_check.cmake"; then
        pass "$what"
    else
        fail "$what" "see log"
    fi

    what="find_package(memobs 1.0) consumer builds and runs"
    why=
    if cmake_consumer "$prefix" "$tmp/build"; then pass "$what"; else fail "$what" "$why"; fi
fi

# 4. Relocation: move the installed tree, the CMake package must follow it.
moved=$tmp/elsewhere/moved-prefix
mkdir -p "$tmp/elsewhere"
if ! mv "$prefix" "$moved"; then
    : >"$log"
    fail "relocated prefix" "mv failed"
    exit 1
fi
if [ $have_cmake = 1 ]; then
    what="cmake package is relocatable"
    why=
    if cmake_consumer "$moved" "$tmp/build-moved"; then pass "$what"; else fail "$what" "$why"; fi
fi

# 5. make uninstall removes exactly what install created.
what="make uninstall"
mkdir -p "$moved/include" "$moved/lib/pkgconfig"
echo '/* not ours */' >"$moved/include/other.h"
echo 'Name: other' >"$moved/lib/pkgconfig/other.pc"
if ! quiet make -s uninstall PREFIX="$moved" DESTDIR=; then
    fail "$what" "make exited non-zero"
else
    left=$(cd "$moved" && find . -type f | sed 's|^\./||' | LC_ALL=C sort | tr '\n' ' ')
    if [ "$left" != "include/other.h lib/pkgconfig/other.pc " ]; then
        fail "$what" "files left afterwards: $left(expected only include/other.h lib/pkgconfig/other.pc)"
    elif [ -e "$moved/lib/cmake/memobs" ]; then
        fail "$what" "lib/cmake/memobs is still there"
    elif [ -e "$moved/share/memobs" ]; then
        fail "$what" "share/memobs is still there"
    else
        pass "$what"
    fi
fi

# 6. DESTDIR staging: files land under DESTDIR, paths inside name PREFIX only.
what="make install/uninstall with DESTDIR"
stage=$tmp/stage
if ! quiet make -s install PREFIX=/opt/memobs DESTDIR="$stage" BUILD="$tmp/obj"; then
    fail "$what" "make install exited non-zero"
else
    problems=$(check_installed "$stage/opt/memobs")
    outside=$(cd "$stage" && find . -type f ! -path './opt/memobs/*' | tr '\n' ' ')
    if [ -n "$problems" ]; then
        fail "$what" "$(echo "$problems" | head -n 1)"
    elif [ -n "$outside" ]; then
        fail "$what" "files outside DESTDIR/PREFIX: $outside"
    elif ! grep -qx 'prefix=/opt/memobs' "$stage/opt/memobs/lib/pkgconfig/memobs.pc"; then
        fail "$what" "memobs.pc does not say prefix=/opt/memobs"
    elif grep -rq -- "$stage" "$stage/opt/memobs/lib"; then
        fail "$what" "an installed file mentions the DESTDIR path"
    elif ! quiet make -s uninstall PREFIX=/opt/memobs DESTDIR="$stage"; then
        fail "$what" "make uninstall exited non-zero"
    elif [ -n "$(find "$stage" -type f)" ]; then
        fail "$what" "files left after uninstall: $(cd "$stage" && find . -type f | tr '\n' ' ')"
    else
        pass "$what"
    fi
fi

exit $failed
