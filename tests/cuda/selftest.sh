#!/usr/bin/env bash
# The CUDA runtime double (tests/cuda/cudart_double.c) and its selftest,
# built four ways against the real CUDA headers, never with libcudart or
# libcuda: C11, C++17 (-x c++: the double's definitions must match
# cuda_runtime_api.h's and cuda.h's declarations in both), C11 under ASan+UBSan, and under TSan (the double
# is called from many threads). Prints the selftest's
# "ok - cudart-double-<variant>: name" lines; exits non-zero on a failure.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/cuda
mkdir -p "$B"
CC=${CC:-cc}
CXX=${CXX:-c++}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror -I$CUDA_INC -Itests/cuda"
. tests/lib.sh # sanitizer options
rc=0
if [ ! -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    echo "ok - cudart-double: # SKIP no $CUDA_INC/cuda_runtime_api.h"
    exit 0
fi

variant() { # name compiler flags...
    local name=$1 comp=$2 bin="$B/selftest_$1"
    shift 2
    if ! $comp "$@" $W -DTEST_SUITE="\"cudart-double-$name\"" -o "$bin" tests/cuda/selftest.c \
        tests/cuda/cudart_double.c -pthread >"$bin.log" 2>&1; then
        echo "not ok - cudart-double-$name: build failed"
        sed 's/^/    # /' "$bin.log" | head -n 30
        rc=1
        return
    fi
    if nm "$bin" | grep -q ' U cu'; then # every cuda*/cu* symbol must come from the double
        echo "not ok - cudart-double-$name: undefined CUDA symbols"
        nm "$bin" | grep ' U cu' | sed 's/^/    # /'
        rc=1
    fi
    "$bin" || rc=1
}

variant c11 "$CC" -std=c11 -O2 -g
variant cxx17 "$CXX" -x c++ -std=c++17 -O2 -g
variant asan "$CC" -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
    -fno-sanitize-recover=undefined
variant tsan "$CC" -std=c11 -O1 -g -fsanitize=thread
exit $rc
