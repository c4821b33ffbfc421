#!/usr/bin/env bash
# The driver's virtual memory management through memobs_cuda.h
# (memobs_cuMemCreate, memobs_cuMemMap, ...; the helpers the LD_PRELOAD
# library calls too): tests/cuda/test_vmm.c linked with the runtime double,
# which models cuMemCreate and friends as cuda.h documents them. Builds:
# C99, C++17, ASan+UBSan, TSan (threads growing and shrinking segments
# concurrently), and the tables full (MEMOBS_CUDA_MAX_VMM=4). stderr must
# stay empty.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/vmm
mkdir -p "$B"
CC=${CC:-cc}
CXX=${CXX:-c++}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror -I. -I$CUDA_INC"

. tests/lib.sh # a clean environment, sanitizer options

if [ ! -f "$CUDA_INC/cuda.h" ]; then
    echo "ok - vmm: # SKIP no CUDA headers in $CUDA_INC (set CUDA_INC)"
    exit 0
fi

# variant NAME TESTCOMP DOUBLECOMP LINKER FLAGS...
variant() {
    local name=$1 tcomp=$2 dcomp=$3 link=$4 bin="$B/vmm_$1"
    shift 4
    if ! { $dcomp "$@" $W -c -o "$bin.double.o" tests/cuda/cudart_double.c &&
        $tcomp "$@" $W -DTEST_SUITE="\"vmm ($name)\"" -c -o "$bin.o" tests/cuda/test_vmm.c &&
        $link "$@" -o "$bin" "$bin.o" "$bin.double.o" -pthread -rdynamic -lm; } >"$bin.log" 2>&1; then
        echo "not ok - vmm ($name): build"
        sed 's/^/    # /' "$bin.log" | head -n 30
        rc=1
        return
    fi
    timeout 120 "$bin" 2>"$bin.err" || rc=1
    if [ -s "$bin.err" ]; then
        echo "not ok - vmm ($name): nothing on stderr"
        sed 's/^/    # /' "$bin.err" | head -n 20
        rc=1
    fi
}

variant c99 "$CC -std=c99 -O1 -g" "$CC -std=c11 -O1 -g" "$CC"
variant c++17 "$CXX -x c++ -std=c++17 -O1 -g" "$CXX -x c++ -std=c++17 -O1 -g" "$CXX"
variant asan "$CC -std=c11 -O1 -g" "$CC -std=c11 -O1 -g" "$CC" -fsanitize=address,undefined -fno-omit-frame-pointer
variant tsan "$CC -std=c11 -O1 -g" "$CC -std=c11 -O1 -g" "$CC" -fsanitize=thread
variant full "$CC -std=c11 -O1 -g" "$CC -std=c11 -O1 -g" "$CC" -DFULL -DMEMOBS_CUDA_MAX_VMM=4
exit $rc
