#!/usr/bin/env bash
# tests/core/test_attribution.c built four ways (mk/tests.mk): C99, C++17,
# ASan+UBSan and TSan; then its --lines mode under MEMOBS_REQUESTS: the
# request lines against what the program says it did, and the file's bound
# (MEMOBS_REQUESTS_MAX_BYTES: rotated to PATH.1).
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}
rc=0
bash tests/four_ways.sh attribution || rc=1

check_lines() { # what, expected.jsonl, the lines' files...: each request's line against the program's record
    local what=$1 want=$2 out
    shift 2
    if out=$(python3 - "$want" "$@" 2>&1 <<'PY'
import json, sys
want = [json.loads(l) for l in open(sys.argv[1])]
got = []
for path in sys.argv[2:]:
    for l in open(path, "rb"):
        assert l.endswith(b"\n"), "a line without its newline (torn)"
        got.append(json.loads(l))
by_id = {g["id"]: g for g in got}
assert len(by_id) == len(got), "an id twice"
keep = [w for w in want if w["id"] in by_id]
for w in keep:
    g = by_id[w["id"]]
    assert g["tenant"] == w["tenant"], (w["id"], g["tenant"], w["tenant"])
    assert g["state"] == w["state"], (w["id"], g["state"], w["state"])
    assert g["abandoned"] is False
    assert g["xfer"]["h2d"]["bytes"] == w["h2d"] and g["xfer"]["h2d"]["ops"] == 1, g["xfer"]["h2d"]
    assert g["xfer"]["h2d"]["prefill"] == [w["h2d"], 1], g["xfer"]["h2d"]
    assert g["xfer"]["s2h"]["decode"] == [w["s2h"], 1], g["xfer"]["s2h"]
    assert g["xfer"]["s2h"]["engine_ns"] == w["engine_ns"] == g["wait_ns"], g
    assert set(g["xfer"]) == {"h2d", "d2h", "d2d", "h2s", "s2h", "d2s", "s2d"}
    assert g["end_unix_ns"] >= g["begin_unix_ns"] > 1.7e18
    assert (g["e2e_ns"] > 0) == (w["state"] == "completed")
print(len(keep), len(want), len(got))
PY
    ); then
        echo "ok - attribution: lines: $what ($out: kept, made, read)"
        LAST=$out
    else
        echo "not ok - attribution: lines: $what"
        printf '%s\n' "$out" | sed 's/^/    # /'
        rc=1
        LAST=
    fi
}

prog=$B/attribution_c99
d=$B/attribution_lines
rm -rf "$d" && mkdir -p "$d"
if [ -x "$prog" ]; then
    # every line, unbounded
    MEMOBS_REQUESTS="$d/all.jsonl" MEMOBS_REQUESTS_MAX_BYTES=0 "$prog" --lines 50 >"$d/want.jsonl" 2>"$d/err"
    check_lines "50 requests, each line equal to the program's record" "$d/want.jsonl" "$d/all.jsonl"
    [ "$LAST" = "50 50 50" ] || { echo "not ok - attribution: lines: all 50 kept (got '$LAST')"; rc=1; }
    # bounded: 4 KB; the file is renamed to .1 once it reaches the bound, so
    # the newest lines are kept, at most twice the bound and a line on disk
    MEMOBS_REQUESTS="$d/b.jsonl" MEMOBS_REQUESTS_MAX_BYTES=4K "$prog" --lines 50 >"$d/want_b.jsonl" 2>"$d/err_b"
    size=$(( $(stat -c %s "$d/b.jsonl") + $(stat -c %s "$d/b.jsonl.1") ))
    line=$(head -n 1 "$d/b.jsonl" | wc -c)
    check_lines "bounded to 4K: the two files hold the newest lines" "$d/want_b.jsonl" "$d/b.jsonl.1" "$d/b.jsonl"
    newest=$(tail -n 1 "$d/b.jsonl" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["id"])')
    if [ "$newest" = 9049 ] && [ "$size" -le $((2 * (4096 + line))) ] && [ "$(stat -c %s "$d/b.jsonl.1")" -ge 4096 ] &&
        [ ! -e "$d/b.jsonl.2" ]; then
        echo "ok - attribution: lines: rotated at 4K: $size bytes on disk (at most 2 x (4096 + a line)), newest id $newest"
    else
        echo "not ok - attribution: lines: rotation"
        echo "    # size $size (line $line), newest '$newest'"; ls -l "$d" | sed 's/^/    # /'
        rc=1
    fi
    # a malformed bound: one warning, the default kept
    MEMOBS_REQUESTS="$d/m.jsonl" MEMOBS_REQUESTS_MAX_BYTES=lots "$prog" --lines 2 >/dev/null 2>"$d/err_m"
    if grep -q "MEMOBS_REQUESTS_MAX_BYTES='lots' is not a byte count" "$d/err_m" && [ "$(wc -l <"$d/m.jsonl")" = 2 ]; then
        echo "ok - attribution: lines: a malformed MEMOBS_REQUESTS_MAX_BYTES warns and keeps the default"
    else
        echo "not ok - attribution: lines: malformed bound"; sed 's/^/    # /' "$d/err_m"; rc=1
    fi
    # lines written while other threads reset the window and fork: no
    # deadlock (a line takes no lock of memobs' but its own), one line each
    if MEMOBS_REQUESTS="$d/busy.jsonl" timeout 120 "$prog" --busy 3000 >/dev/null 2>"$d/err_busy" &&
        [ "$(wc -l <"$d/busy.jsonl")" = 3000 ] && [ "$(sort -u "$d/busy.jsonl" | wc -l)" = 3000 ]; then
        echo "ok - attribution: lines: 3000 requests ended on 3 threads while a fourth resets and forks: no deadlock, 3000 lines"
    else
        echo "not ok - attribution: lines: ended while another thread resets and forks (status $?)"
        echo "    # lines: $(wc -l <"$d/busy.jsonl" 2>/dev/null)"; sed 's/^/    # /' "$d/err_busy" | head -5; rc=1
    fi
    # an unwritable folder: one warning, the program runs on
    if MEMOBS_REQUESTS="$d/none/x.jsonl" "$prog" --lines 3 >/dev/null 2>"$d/err_u" &&
        [ "$(grep -c "cannot open '$d/none/x.jsonl' for the request lines" "$d/err_u")" -ge 1 ]; then
        echo "ok - attribution: lines: an unwritable path warns, the program goes on"
    else
        echo "not ok - attribution: lines: unwritable path"; sed 's/^/    # /' "$d/err_u"; rc=1
    fi
else
    echo "not ok - attribution: lines: $prog was not built"
    rc=1
fi
exit $rc
