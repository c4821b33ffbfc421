#!/usr/bin/env bash
# Environment variables: MEMOBS, MEMOBS_SUMMARY, MEMOBS_FORMAT, identity from
# launcher variables; malformed values warn once and fall back. JSON output
# is checked with Python's json parser.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/env
mkdir -p "$B"
rm -f "$B"/*.json "$B"/*.txt
rc=0
unset MEMOBS MEMOBS_SUMMARY MEMOBS_FORMAT MEMOBS_JOB_ID RANK LOCAL_RANK WORLD_SIZE \
    SLURM_PROCID SLURM_LOCALID SLURM_NTASKS SLURM_JOB_ID TORCHELASTIC_RUN_ID \
    OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_LOCAL_RANK OMPI_COMM_WORLD_SIZE PMI_RANK PMI_LOCAL_RANK PMI_SIZE

if ! ${CC:-cc} -std=c99 -O2 -Wall -Wextra -Werror -I. tests/core/env_probe.c -o "$B/probe" -pthread 2>"$B/build.log"; then
    echo "not ok - env: build env_probe"
    sed 's/^/    # /' "$B/build.log"
    exit 1
fi

ok() { echo "ok - env: $1"; }
bad() { echo "not ok - env: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

. tests/lib.sh # json_check

# probe VAR=VALUE... : runs the probe with that environment, stderr to $B/err
probe() { env "$@" "$B/probe" 2>"$B/err" >"$B/out"; }

probe MEMOBS_SUMMARY="$B/s.json" MEMOBS_FORMAT=json
if json_check "$B/s.json" 's["total"]["h2d_bytes"] == 4096 and s["prefill"]["h2d_bytes"] == 4096 and s["decode"]["d2h_bytes"] == 100 and s["total"]["d2h_count"] == 1 and s["counters"]["probe_events"] == 3 and s["enabled"] is True and s["identity"]["rank"] == 0 and s["identity"]["world_size"] == 1 and s["identity"]["job_id"] is None' \
    && [ ! -s "$B/err" ]; then
    ok "MEMOBS_SUMMARY=path MEMOBS_FORMAT=json writes a parseable summary at exit"
else
    bad "MEMOBS_SUMMARY=path MEMOBS_FORMAT=json" "stderr: $(head -c 300 "$B/err")"
fi

probe MEMOBS=0 MEMOBS_SUMMARY="$B/off.json" MEMOBS_FORMAT=json
if json_check "$B/off.json" 's["enabled"] is False and s["total"]["h2d_bytes"] == 0 and s["counters"].get("probe_events", 0) == 0'; then
    ok "MEMOBS=0 starts disabled"
else
    bad "MEMOBS=0 starts disabled"
fi

probe MEMOBS=maybe MEMOBS_SUMMARY="$B/maybe.json" MEMOBS_FORMAT=json
if json_check "$B/maybe.json" 's["enabled"] is True and s["total"]["h2d_bytes"] == 4096' \
    && [ "$(grep -c "MEMOBS='maybe'" "$B/err")" = 1 ] && [ "$(wc -l <"$B/err")" = 1 ]; then
    ok "MEMOBS=maybe: one warning, stays enabled"
else
    bad "MEMOBS=maybe" "stderr: $(cat "$B/err")"
fi

probe MEMOBS=off MEMOBS_SUMMARY=stdout
if grep -q '\[disabled\]' "$B/out" && [ ! -s "$B/err" ]; then ok "MEMOBS=off and MEMOBS_SUMMARY=stdout"
else bad "MEMOBS=off and MEMOBS_SUMMARY=stdout" "stdout: $(head -c 300 "$B/out")"; fi

probe MEMOBS_SUMMARY=stderr MEMOBS_FORMAT=xml
if grep -q "MEMOBS_FORMAT='xml' is not text or json; using text" "$B/err" && grep -q '^== memobs summary ==' "$B/err" \
    && grep -q '^  H2D   |    4.10 KB        1 |' "$B/err"; then
    ok "MEMOBS_FORMAT=xml: warning, text summary on stderr"
else
    bad "MEMOBS_FORMAT=xml" "stderr: $(head -c 400 "$B/err")"
fi

probe MEMOBS_SUMMARY=/nonexistent-dir/s.json
code=$?
if [ $code = 0 ] && grep -q "cannot write the summary to '/nonexistent-dir/s.json'" "$B/err"; then
    ok "unwritable MEMOBS_SUMMARY: warning, exit status untouched"
else
    bad "unwritable MEMOBS_SUMMARY" "exit $code, stderr: $(cat "$B/err")"
fi

probe MEMOBS_SUMMARY="$B/r%r.%p.json" MEMOBS_FORMAT=json RANK=3 LOCAL_RANK=1 WORLD_SIZE=8 MEMOBS_JOB_ID='job "x"\y'
f=$(ls "$B"/r3.*.json 2>/dev/null | head -n 1)
if [ -n "$f" ] && json_check "$f" 's["identity"]["rank"] == 3 and s["identity"]["local_rank"] == 1 and s["identity"]["world_size"] == 8 and s["identity"]["job_id"] == "job \"x\"\\y" and str(s["identity"]["pid"]) in sys.argv[1]'; then
    ok "RANK/LOCAL_RANK/WORLD_SIZE/MEMOBS_JOB_ID in the summary; %r and %p in the path"
else
    bad "identity from torchrun variables" "files: $(ls "$B")"
fi

probe MEMOBS_SUMMARY="$B/slurm.json" MEMOBS_FORMAT=json SLURM_PROCID=5 SLURM_LOCALID=1 SLURM_NTASKS=6 SLURM_JOB_ID=4242
if json_check "$B/slurm.json" 's["identity"]["rank"] == 5 and s["identity"]["world_size"] == 6 and s["identity"]["job_id"] == "4242"'; then
    ok "identity from SLURM variables"
else
    bad "identity from SLURM variables"
fi

probe MEMOBS_SUMMARY="$B/badrank.json" MEMOBS_FORMAT=json RANK=abc WORLD_SIZE=4
if json_check "$B/badrank.json" 's["identity"]["rank"] == 0 and s["identity"]["world_size"] == 4' \
    && grep -q "RANK='abc' is not a non-negative integer" "$B/err"; then
    ok "RANK=abc: warning, rank 0"
else
    bad "RANK=abc" "stderr: $(cat "$B/err")"
fi

probe MEMOBS_SUMMARY="$B/inconsistent.json" MEMOBS_FORMAT=json RANK=9 WORLD_SIZE=4
if json_check "$B/inconsistent.json" 's["identity"]["rank"] == 0 and s["identity"]["world_size"] == 1' \
    && grep -q "inconsistent" "$B/err"; then
    ok "RANK >= WORLD_SIZE: warning, rank 0 of 1"
else
    bad "RANK >= WORLD_SIZE" "stderr: $(cat "$B/err")"
fi

# MEMOBS_NO_AUTOINIT: no constructor; the first record reads the environment
if ${CC:-cc} -std=c99 -O2 -Wall -Wextra -Werror -DMEMOBS_NO_AUTOINIT -I. tests/core/env_probe.c -o "$B/probe_lazy" -pthread 2>"$B/build.log" &&
    env MEMOBS=0 MEMOBS_SUMMARY="$B/lazy.json" MEMOBS_FORMAT=json "$B/probe_lazy" 2>"$B/err" &&
    json_check "$B/lazy.json" 's["enabled"] is False and s["total"]["h2d_bytes"] == 0'; then
    ok "MEMOBS_NO_AUTOINIT: the first record reads MEMOBS=0 before counting"
else
    bad "MEMOBS_NO_AUTOINIT" "$(cat "$B/build.log" "$B/err")"
fi

env MEMOBS_FORMAT=json "$B/probe" print 2>"$B/err" >/dev/null
if json_check "$B/err" 's["total"]["h2d_bytes"] == 4096'; then
    ok "memobs_print_summary() follows MEMOBS_FORMAT=json"
else
    bad "memobs_print_summary() with MEMOBS_FORMAT=json"
fi
exit $rc
