#!/usr/bin/env bash
# The header in every mode users build it in: C99/C11 (gcc, clang),
# C++11/C++17 (g++, clang++) and nvcc, enabled and MEMOBS_DISABLE, with
# strict warnings as errors; then the C, C++ and nvcc objects linked into one
# program that checks what each recorded; then the MEMOBS_DISABLE contract.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/compile
mkdir -p "$B"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
WC="-Wall -Wextra -Werror -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Wcast-qual -Wundef"

. tests/lib.sh

for cc in gcc clang; do
    for std in c99 c11; do
        for def in "" -DMEMOBS_DISABLE; do
            try compile "$cc -std=$std $def" sh -c "$cc -std=$std $WC -Wstrict-prototypes $def -I. -c tests/core/compile/main.c -o $B/m.o &&
                $cc -std=$std $WC -Wstrict-prototypes $def -I. -c tests/core/compile/use.c -o $B/u.o"
        done
    done
done
for cxx in g++ clang++; do
    for std in c++11 c++17; do
        for def in "" -DMEMOBS_DISABLE; do
            try compile "$cxx -std=$std $def" sh -c "$cxx -x c++ -std=$std $WC $def -I. -c tests/core/compile/main.c -o $B/m.o &&
                $cxx -x c++ -std=$std $WC -Wold-style-cast $def -I. -c tests/core/compile/use.c -o $B/u.o"
        done
    done
done
have_nvcc=0
if [ -x "$NVCC" ]; then
    have_nvcc=1
    cp tests/core/compile/use.c "$B/use.cu"
    cp tests/core/compile/main.c "$B/main.cu"
    for def in "" -DMEMOBS_DISABLE; do
        try compile "nvcc $def" sh -c "$NVCC -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror $def -I. -c $B/main.cu -o $B/m.o &&
            $NVCC -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror $def -I. -c $B/use.cu -o $B/u.o"
    done
else
    echo "not ok - compile: nvcc not found at $NVCC (set NVCC=...)"
    rc=1
fi

# memobs_cuda.h against the Toolkit's headers (system headers: their own
# warnings are not ours), in every mode, implementation included.
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
if [ -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    printf '#define MEMOBS_IMPLEMENTATION\n#include "memobs_cuda.h"\n' >"$B/cuda_impl.c"
    printf '#include "memobs_cuda.h"\ncudaError_t use_cuda(void *d, const void *s);\ncudaError_t use_cuda(void *d, const void *s) { return MEMOBS_CUDA_CHECK(memobs_cudaMemcpy(d, s, 8, cudaMemcpyHostToDevice)); }\n' >"$B/cuda_use.c"
    # the VMM wrappers, declared where <cuda.h> comes first
    printf '#include <cuda.h>\n#include "memobs_cuda.h"\nCUresult use_vmm(CUmemGenericAllocationHandle *h, const CUmemAllocationProp *p, CUdeviceptr *va);\nCUresult use_vmm(CUmemGenericAllocationHandle *h, const CUmemAllocationProp *p, CUdeviceptr *va) {\n    CUresult r = memobs_cuMemAddressReserve(va, 4u << 20, 0, 0, 0);\n    if (r == CUDA_SUCCESS) r = memobs_cuMemCreate(h, 2u << 20, p, 0);\n    if (r == CUDA_SUCCESS) r = memobs_cuMemMap(*va, 2u << 20, 0, *h, 0);\n    if (r == CUDA_SUCCESS) r = memobs_cuMemUnmap(*va, 2u << 20);\n    if (r == CUDA_SUCCESS) r = memobs_cuMemRelease(*h);\n    return r == CUDA_SUCCESS ? memobs_cuMemAddressFree(*va, 4u << 20) : r;\n}\n' >"$B/cuda_vmm.c"
    cp "$B/cuda_impl.c" "$B/cuda_impl.cu"
    for def in "" -DMEMOBS_DISABLE; do
        for cc in "gcc -std=c99" "gcc -std=c11" "clang -std=c99"; do
            try compile "memobs_cuda.h: $cc $def" sh -c "$cc $WC -Wstrict-prototypes $def -I. -isystem $CUDA_INC -c $B/cuda_impl.c -o $B/ci.o &&
                $cc $WC $def -I. -isystem $CUDA_INC -c $B/cuda_use.c -o $B/cu.o &&
                $cc $WC $def -I. -isystem $CUDA_INC -c $B/cuda_vmm.c -o $B/cv.o"
        done
        for cxx in "g++ -std=c++11" "g++ -std=c++17" "clang++ -std=c++17"; do
            try compile "memobs_cuda.h: $cxx $def" sh -c "$cxx -x c++ $WC $def -I. -isystem $CUDA_INC -c $B/cuda_impl.c -o $B/ci.o &&
                $cxx -x c++ $WC -Wold-style-cast $def -I. -isystem $CUDA_INC -c $B/cuda_use.c -o $B/cu.o &&
                $cxx -x c++ $WC -Wold-style-cast $def -I. -isystem $CUDA_INC -c $B/cuda_vmm.c -o $B/cv.o"
        done
        if [ $have_nvcc = 1 ]; then
            try compile "memobs_cuda.h: nvcc $def" $NVCC -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror $def -I. \
                -c "$B/cuda_impl.cu" -o "$B/ci.o"
        fi
    done
else
    echo "not ok - compile: memobs_cuda.h: no $CUDA_INC/cuda_runtime_api.h (set CUDA_INC=...)"
    rc=1
fi

# memobs_python.h against CPython's headers (system headers: their own
# warnings are not ours), in every mode, implementation included.
if PY_INC=$(python3-config --includes 2>/dev/null); then
    PY_ISYS=$(printf '%s\n' $PY_INC | sed -n 's/^-I/-isystem /p' | sort -u | tr '\n' ' ')
    printf '#define MEMOBS_IMPLEMENTATION\n#include "memobs_python.h"\n' >"$B/py_impl.c"
    printf '#include "memobs_python.h"\nsize_t use_py(char *b, size_t n);\nsize_t use_py(char *b, size_t n) { memobs_frame_t f[4]; int k = memobs_py_capture(f, 4); return memobs_py_format(f, k, b, n); }\n' >"$B/py_use.c"
    # its part alone (MEMOBS_PYTHON_IMPLEMENTATION: memobs in another module)
    printf '#define MEMOBS_PYTHON_IMPLEMENTATION\n#include "memobs_python.h"\n' >"$B/py_alone.c"
    cp "$B/py_impl.c" "$B/py_impl.cu"
    cp "$B/py_alone.c" "$B/py_alone.cu"
    for def in "" -DMEMOBS_DISABLE; do
        for cc in "gcc -std=c99" "gcc -std=c11" "clang -std=c99"; do
            try compile "memobs_python.h: $cc $def (and its part alone)" sh -c "$cc $WC -Wstrict-prototypes $def -I. $PY_ISYS -c $B/py_impl.c -o $B/pi.o &&
                $cc $WC -Wstrict-prototypes $def -I. $PY_ISYS -c $B/py_alone.c -o $B/pa.o &&
                $cc $WC $def -I. $PY_ISYS -c $B/py_use.c -o $B/pu.o"
        done
        for cxx in "g++ -std=c++11" "g++ -std=c++17" "clang++ -std=c++17"; do
            try compile "memobs_python.h: $cxx $def (and its part alone)" sh -c "$cxx -x c++ $WC $def -I. $PY_ISYS -c $B/py_impl.c -o $B/pi.o &&
                $cxx -x c++ $WC $def -I. $PY_ISYS -c $B/py_alone.c -o $B/pa.o &&
                $cxx -x c++ $WC -Wold-style-cast $def -I. $PY_ISYS -c $B/py_use.c -o $B/pu.o"
        done
        if [ $have_nvcc = 1 ]; then
            try compile "memobs_python.h: nvcc $def (and its part alone)" sh -c "$NVCC -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror $def -I. \
                $PY_ISYS -c '$B/py_impl.cu' -o '$B/pi.o' &&
                $NVCC -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror $def -I. $PY_ISYS -c '$B/py_alone.cu' -o '$B/pa.o'"
        fi
    done
else
    echo "not ok - compile: memobs_python.h: python3-config is missing (tests/deps.sh installs python3-dev)"
    rc=1
fi

# One program: the implementation built as C; the macros used from C, C++
# and (where there is nvcc) CUDA translation units.
link="gcc -std=c99 -O2 -I. -c tests/core/compile/main.c -o $B/main.o &&
      gcc -std=c99 -O2 -I. -DUSE_FN=use_c -c tests/core/compile/use.c -o $B/use_c.o &&
      g++ -x c++ -std=c++11 -O2 -I. -DUSE_FN=use_cxx -c tests/core/compile/use.c -o $B/use_cxx.o"
if [ $have_nvcc = 1 ]; then
    link="$link && gcc -std=c99 -O2 -I. -DWITH_CUDA -c tests/core/compile/main.c -o $B/main.o &&
          $NVCC -O2 -I. -DUSE_FN=use_cu -c $B/use.cu -o $B/use_cu.o &&
          $NVCC $B/main.o $B/use_c.o $B/use_cxx.o $B/use_cu.o -o $B/mixed -lpthread"
else
    link="$link && g++ $B/main.o $B/use_c.o $B/use_cxx.o -o $B/mixed -pthread"
fi
try compile "C, C++ and CUDA objects share one set of counters" sh -c "$link && $B/mixed"

# MEMOBS_DISABLE: no code, no evaluation, functions link and stay off.
try compile "MEMOBS_DISABLE: arguments not evaluated, functions link, stays off" sh -c \
    "gcc -std=c99 -O2 -Wall -Wextra -Werror -DMEMOBS_DISABLE -I. tests/core/compile/disabled.c -o $B/disabled -pthread &&
     MEMOBS=1 $B/disabled"
sizes=$(gcc -std=c99 -O2 -DMEMOBS_DISABLE -I. -c tests/core/compile/disabled.c -o "$B/d.o" &&
        nm -S "$B/d.o" | awk '$4 == "all_macros" || $4 == "empty" { print $4, $2 }' | sort)
if [ "$(echo "$sizes" | awk '{ print $2 }' | sort -u | wc -l)" = 1 ] && [ "$(echo "$sizes" | wc -l)" = 2 ]; then
    echo "ok - compile: MEMOBS_DISABLE: a function full of macros is as large as an empty one"
else
    echo "not ok - compile: MEMOBS_DISABLE emits code: sizes $(echo $sizes)"
    rc=1
fi
undef=$(nm -u "$B/d.o" | grep -c memobs)
# d.o holds the implementation too; what matters is that all_macros calls nothing
if objdump -d --no-show-raw-insn "$B/d.o" | awk '/<all_macros>:/,/^$/' | grep -q call; then
    echo "not ok - compile: MEMOBS_DISABLE: all_macros calls something"
    rc=1
else
    echo "ok - compile: MEMOBS_DISABLE: all_macros makes no calls ($undef undefined memobs symbols)"
fi
try compile "make bench-build (the benches still build; they are timed only by make bench)" \
    make -s bench-build BUILD="${BUILD:-build/tests}"
exit $rc
