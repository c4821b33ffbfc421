#!/bin/sh
# bench_preload.sh - runs bench/bench_preload.c's two programs without and
# with the LD_PRELOAD library, in turns, and prints the table
# (bench/bench_preload.awk): make bench-preload (the doubles) and make
# gpu-bench-preload (a GPU).
#   sh bench/bench_preload.sh DIR PRELOAD TURNS [gpu]
# DIR holds bench_preload and bench_preload_driver (and, for the doubles,
# libcudart.so.13 and libcuda.so.1: DIR is put in LD_LIBRARY_PATH);
# PRELOAD is libmemobs_preload.so. Each turn runs both programs plain and
# preloaded, the preloaded ones first in every other turn; a program's
# failure fails the script. BENCH_PL_CALLS (calls per run) and
# BENCH_PL_PINNED reach the programs.
dir=$1 pre=$2 turns=$3 gpu=0
[ "$4" = gpu ] && gpu=1
t=1
lines=$(while [ "$t" -le "$turns" ]; do
    if [ $((t % 2)) = 1 ]; then order="plain preload"; else order="preload plain"; fi
    for w in $order; do
        if [ "$w" = plain ]; then lib=; else lib=$pre; fi
        LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} LD_PRELOAD=$lib "$dir/bench_preload" "$w" || exit 1
        LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} LD_PRELOAD=$lib "$dir/bench_preload_driver" "d$w" || exit 1
    done
    t=$((t + 1))
done) || exit 1
printf '%s\n' "$lines" | awk -v gpu=$gpu -v calls="${BENCH_PL_CALLS:-200000}" -f "$(dirname "$0")/bench_preload.awk"
