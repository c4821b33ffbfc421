#!/usr/bin/env bash
# A 4-rank job as Stormlog's distributed analyses read it: tests/nccl/test_ranks.c
# (memobs_cuda.h against the CUDA runtime double, on its own fake clock) run
# as ranks 0-3 with RANK/LOCAL_RANK/WORLD_SIZE, MEMOBS_STORMLOG and
# MEMOBS_STORMLOG_HOST; rank 2 jumps at sample 3, the others at sample 7;
# an NCCL all-reduce region holds 6 GiB outside memobs at sample 15 on every
# rank. Each file must pass the schema validator, and
# tests/python/stormlog_ranks.py applies Stormlog's per-rank rules: one
# series per rank, rank 2 first, the gap = memory outside memobs, markers at
# the all-reduce, host memory kept. Then the same with 2 devices per rank.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/distributed
mkdir -p "$B"
CC=${CC:-cc}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror"
. tests/lib.sh

suite=distributed
ok() { echo "ok - $suite: $1"; }
bad() { echo "not ok - $suite: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

if [ ! -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    bad "the CUDA Toolkit's headers are needed: no $CUDA_INC/cuda_runtime_api.h (set CUDA_INC)"
    exit 1
fi
bin=$B/test_ranks
if ! { $CC -std=c11 -O1 -g $W -I"$CUDA_INC" -c -o "$bin.double.o" tests/cuda/cudart_double.c &&
    $CC -std=c99 -O1 -g $W -I"$CUDA_INC" -c -o "$bin.o" tests/nccl/test_ranks.c &&
    $CC -o "$bin" "$bin.o" "$bin.double.o" -pthread -lm; } >"$bin.log" 2>&1; then
    bad "build failed" "$(head -n 20 "$bin.log")"
    exit 1
fi

GIB=1073741824
python3 tests/python/stormlog_ranks.py --selftest || rc=1
for ndev in 1 2; do
    d=$B/dev$ndev
    rm -rf "$d"
    mkdir -p "$d"
    files=() hosts=() ran=1
    for r in 0 1 2 3; do
        spike=7
        [ $r = 2 ] && spike=3
        if ! RANK=$r LOCAL_RANK=0 WORLD_SIZE=4 MEMOBS_JOB_ID=job-42 MEMOBS_STORMLOG="$d/rank%r.json" \
            MEMOBS_STORMLOG_HOST="$d/host%r.json" "$bin" $spike $((r * 3)) $ndev 2>"$d/err$r"; then
            bad "$ndev device(s): rank $r ran" "$(head -n 10 "$d/err$r")"
            ran=0
        elif [ -s "$d/err$r" ]; then
            bad "$ndev device(s): rank $r: nothing on stderr" "$(head -n 10 "$d/err$r")"
        fi
        files+=("$d/rank$r.json")
        hosts+=("$d/host$r.json")
    done
    [ $ran = 1 ] || continue
    if out=$(python3 tests/python/stormlog_check.py "${files[@]}" --expect-device --expect region --expect peak 2>&1) &&
        out2=$(python3 tests/python/stormlog_check.py "${hosts[@]}" --expect region 2>&1); then
        ok "$ndev device(s): the rank files and their host companions pass the schema v2 validator"
    else
        bad "$ndev device(s): the files pass the schema v2 validator" "$out" "${out2:-}"
    fi
    python3 tests/python/stormlog_ranks.py --leader 2 --outside $((ndev * GIB)) --burst $((6 * GIB)) \
        --devices $ndev "${files[@]}" --host "${hosts[@]}" | sed "s/^\(\(not \)\?ok - distributed:\)/\1 $ndev device(s):/"
    [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
done
exit $rc
