#!/usr/bin/env bash
# memobs inside shared libraries: implementation in a .so with macros used
# from the executable (C++), a dlopen()ed .so with MEMOBS_TLS_INITIAL_EXEC,
# and two dlopen()ed copies kept apart by MEMOBS_HIDDEN.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/shared
mkdir -p "$B"
. tests/lib.sh
W="-Wall -Wextra -Werror -I."
try shared "implementation in a .so, macros in a C++ executable, 4 threads: exact" sh -c \
    "${CC:-cc} -std=c99 -O2 $W -fPIC -shared tests/core/shared/lib.c -o $B/libmo.so -pthread &&
     ${CXX:-c++} -std=c++11 -O2 $W tests/core/shared/main.cpp -o $B/main -L$B -lmo -Wl,-rpath,'\$ORIGIN' -pthread &&
     $B/main"
try shared "dlopen() of a .so built with MEMOBS_TLS_INITIAL_EXEC" sh -c \
    "${CC:-cc} -std=c99 -O2 $W -DMEMOBS_TLS_INITIAL_EXEC -fPIC -shared tests/core/shared/lib.c -o $B/libmo_ie.so -pthread &&
     ${CC:-cc} -std=c99 -O2 $W tests/core/shared/dlopen.c -o $B/dlopen -ldl &&
     $B/dlopen $B/libmo_ie.so"
try shared "two modules with their own copy (MEMOBS_HIDDEN), RTLD_GLOBAL: private instances" sh -c \
    "${CC:-cc} -std=c99 -O2 $W -DMEMOBS_HIDDEN -fPIC -shared tests/core/shared/lib.c -o $B/libmo_a.so -pthread &&
     ${CC:-cc} -std=c99 -O2 $W -DMEMOBS_HIDDEN -fPIC -shared tests/core/shared/lib.c -o $B/libmo_b.so -pthread &&
     $B/dlopen $B/libmo_a.so $B/libmo_b.so"
exit $rc
