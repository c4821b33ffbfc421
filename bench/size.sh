#!/usr/bin/env bash
# make size: the implementation object (-O2) with every exporter, with each
# MEMOBS_NO_* switch and with all of them: text, data and bss (size(1)) and
# the compile's wall and user CPU time, side by side. SIZE_REF=<git revision>
# (or a memobs.h file) adds a row built from that memobs.h (the figures
# before a change).
set -euo pipefail
CC=${CC:-cc}
OUT=${1:-build/size}
mkdir -p "$OUT"
SWITCHES="MEMOBS_NO_HTML MEMOBS_NO_STORMLOG MEMOBS_NO_TORCH_SNAPSHOT"
row() { # row LABEL INCLUDE_DIR DEFINES...: compiles, prints one line
    local label=$1 inc=$2 t0 t1 d
    shift 2
    {
        for d in "$@"; do echo "#define $d"; done
        echo '#define MEMOBS_IMPLEMENTATION'
        echo '#include "memobs.h"'
    } >"$OUT/impl.c"
    t0=$(date +%s%N)
    { time $CC -std=c99 -O2 -Wall -Wextra -Werror -I"$inc" -c "$OUT/impl.c" -o "$OUT/impl.o"; } 2>"$OUT/cpu"
    t1=$(date +%s%N)
    size "$OUT/impl.o" | awk -v l="$label" -v ms=$(((t1 - t0) / 1000000)) -v cpu="$(cat "$OUT/cpu")" \
        'NR == 2 { printf "%-28s %9d %7d %9d %9d %7.2f %7.2f\n", l, $1, $2, $3, $1 + $2 + $3, ms / 1000, cpu }'
}
TIMEFORMAT=%U # user seconds of the compile: steadier than wall time on a busy machine
printf '%-28s %9s %7s %9s %9s %7s %7s\n' "memobs.h (-O2, $CC)" text data bss total "wall s" "user s"
if [ -n "${SIZE_REF:-}" ]; then
    mkdir -p "$OUT/ref"
    if [ -f "$SIZE_REF" ]; then cp "$SIZE_REF" "$OUT/ref/memobs.h"; else git show "$SIZE_REF:memobs.h" >"$OUT/ref/memobs.h"; fi
    row "$(basename "$SIZE_REF") (every exporter)" "$OUT/ref"
fi
row "every exporter" .
for s in $SWITCHES; do row "$s" . "$s"; done
# shellcheck disable=SC2086
row "all three switches" . $SWITCHES
