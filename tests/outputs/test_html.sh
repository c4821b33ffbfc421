#!/usr/bin/env bash
# tests/outputs/test_html.sh - memobs' HTML report (memobs_write_html, MEMOBS_HTML)
# opened in headless Chromium (Debian's chromium; tests/deps.sh installs
# it): for the demo engine (examples/offload_engine.c with the timeline,
# the sampler and C stacks on) and for an empty run, odd strings and a run
# with more data than the report shows (tests/outputs/test_html.c), and runs
# that attribute transfers to requests (tests/outputs/test_html_requests.c). Checks, with
# tests/python/html_check.py over the DOM Chromium rendered:
#   - no script error (an injected window.onerror, and Chromium's console
#     log), and the detector itself sees a deliberate error;
#   - every figure in the DOM (data-memobs, data-v) equals the JSON summary
#     of the same run (MEMOBS_SUMMARY, MEMOBS_FORMAT=json), in the rendered
#     DOM and in the markup alone (no script run);
#   - the sections, what they draw, and "not recorded ... turn on" where
#     there is no data; the storage tier's rows, bars and lines when a run
#     recorded storage transfers (none otherwise), the transfer sizes'
#     table and bucket bars exact;
#   - odd strings (quotes, <script>, bytes that are not UTF-8, a path)
#     arrive as text;
#   - the Requests block (attribution) against the API's own figures:
#     attributed + unattributed = total per direction, the top requests by
#     bytes and by wait (tables and bars) row by row, the tenants' rows
#     against the scenario counted by hand, a hostile tenant name as text;
#     its size with every list full; no block without attribution;
#   - the size bound (2 MB) with 5000 traces, a full sampler ring and a full
#     timeline; under 1 MB for the worst case at default limits;
#   - MEMOBS_HTML's %r/%p; an unwritable path (one warning, exit 0); the
#     return codes; memory over time from the timeline without samples; a
#     MEMOBS_DISABLE build; memobs.write_html in Python (a Python frame in
#     the traces);
#   - a screenshot of the demo's report (MEMOBS_HTML_SHOTS=DIR copies it
#     there as html_report.png, with the report as html_report.html and its
#     first screen as html_report_top.png: how docs/ gets them).
# A missing chromium is a failure, never a skip.
# Prints "ok - html: ..." / "not ok - html: ..." lines; exits 1 on a failure.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build}/html
mkdir -p "$B"
CC=${CC:-cc}
PYTHON=${PYTHON:-python3}
. tests/lib.sh # try; a clean environment
unset MEMOBS_HTML

fail() { echo "not ok - html: $1"; shift; for l in "$@"; do printf '%s\n' "$l" | sed 's/^/    # /'; done; rc=1; }
pass() { echo "ok - html: $1"; }

for tool in chromium "$CC" python3; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        fail "setup: expected $tool on PATH, got none (bash tests/deps.sh as root installs chromium)"
        exit 1
    fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memobs-html-test.XXXXXX") || { fail "setup: mktemp -d"; exit 1; }
trap 'rm -rf "$tmp"' EXIT
CHECK="$PYTHON tests/python/html_check.py"
MAX=$((2 * 1024 * 1024))

# chrome FILE DOM [FLAGS...]: Chromium's rendered DOM of FILE into DOM, its
# log (console messages included) into DOM.log; a fresh profile each time.
chrome() {
    local file=$1 dom=$2 prof
    shift 2
    prof=$(mktemp -d "$tmp/profile.XXXXXX")
    timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$prof" \
        --enable-logging=stderr --v=0 "$@" --dump-dom "file://$file" >"$dom" 2>"$dom.log"
}

# inject FILE OUT: FILE with a first script that counts errors into
# <html data-js-errors="N"> at load.
inject() {
    $PYTHON - "$1" "$2" <<'PY'
import sys
src = open(sys.argv[1], encoding="utf-8").read()
probe = ('<script>window.__memobsErr=0;window.addEventListener("error",function(){window.__memobsErr++;});'
         'window.addEventListener("load",function(){document.documentElement.setAttribute('
         '"data-js-errors",String(window.__memobsErr));});</script>')
i = src.index("<head>") + len("<head>")
open(sys.argv[2], "w", encoding="utf-8").write(src[:i] + probe + src[i:])
PY
}

# opens NAME FILE: no script error, by the injected probe and the console log.
opens() {
    local name=$1 file=$2 out
    inject "$file" "$tmp/$name.probe.html" || { fail "$name: inject the error probe"; return; }
    chrome "$tmp/$name.probe.html" "$tmp/$name.probe.dom"
    $CHECK errors "$tmp/$name.probe.dom" "$name" || rc=1
    out=$(grep -E 'CONSOLE|Uncaught' "$tmp/$name.probe.dom.log")
    if [ -z "$out" ]; then pass "$name: no console message"; else fail "$name: no console message" "$out"; fi
}

# size NAME FILE: under 2 MB.
size() {
    local n
    n=$(wc -c <"$2")
    if [ "$n" -le "$MAX" ]; then pass "$1: report size $n bytes <= 2 MB"; else fail "$1: report size" "expected <= $MAX bytes, got $n"; fi
}

# --- the build
if $CC -std=c99 -O2 -Wall -Wextra -Werror -pthread -I. examples/offload_engine.c -o "$tmp/engine" -lm -rdynamic \
    >"$tmp/build.log" 2>&1 && $CC -std=c99 -O2 -Wall -Wextra -Werror -pthread -I. tests/outputs/test_html.c \
    -o "$tmp/prog" >>"$tmp/build.log" 2>&1 && $CC -std=c99 -O2 -Wall -Wextra -Werror -pthread -I. \
    tests/outputs/test_html_requests.c -o "$tmp/reqprog" >>"$tmp/build.log" 2>&1; then
    pass "build the demo engine, tests/outputs/test_html.c and test_html_requests.c (C99, -Werror)"
else
    fail "build the demo engine, tests/outputs/test_html.c and test_html_requests.c (C99, -Werror)" \
        "$(head -n 30 "$tmp/build.log")"
    exit 1
fi

# --- the detector works: a page with an error is caught both ways
printf '<!DOCTYPE html><html><head></head><body><script>noSuchFunction();</script></body></html>\n' >"$tmp/bad.html"
inject "$tmp/bad.html" "$tmp/bad.probe.html"
chrome "$tmp/bad.probe.html" "$tmp/bad.dom"
if grep -q 'data-js-errors="1"' "$tmp/bad.dom" && grep -q 'Uncaught' "$tmp/bad.dom.log"; then
    pass "the error probe and the console log catch a deliberate script error"
else
    fail "the error probe and the console log catch a deliberate script error" \
        "DOM: $(head -c 300 "$tmp/bad.dom")" "log: $(tail -n 5 "$tmp/bad.dom.log")"
fi

# --- the demo: timeline, sampler, C stacks; a leaked block so a trace is live
( cd "$tmp" && MEMOBS_HTML="$tmp/demo_r%r_p%p.html" MEMOBS_SUMMARY="$tmp/demo.json" MEMOBS_FORMAT=json \
    MEMOBS_TIMELINE_EVENTS=65536 MEMOBS_SAMPLE_MS=2 MEMOBS_CALLSTACK=8 ./engine --leak >demo.out 2>demo.err )
st=$?
set -- "$tmp"/demo_r0_p*.html
if [ "$st" -eq 0 ] && [ $# -eq 1 ] && [ -f "$1" ]; then
    pass "demo: exits 0, MEMOBS_HTML written at exit with %r/%p expanded ($(basename "$1"))"
    demo=$1
    pid=${demo##*_p}
    pid=${pid%.html}
    chrome "$demo" "$tmp/demo.dom"
    if grep -q "data-memobs=\"identity.pid\" data-v=\"$pid\"" "$tmp/demo.dom"; then
        pass "demo: %p is the pid the report names"
    else
        fail "demo: %p is the pid the report names" "file pid $pid"
    fi
    size demo "$demo"
    $CHECK summary "$tmp/demo.dom" "$tmp/demo.json" demo || rc=1
    $CHECK sections "$tmp/demo.dom" demo demo || rc=1
    opens demo "$demo"
    # Without scripts the figures are in the markup itself: the file as
    # parsed, no script run. (Headless Chromium's --dump-dom and
    # --screenshot give nothing with scripts off, so the page is not drawn so.)
    $CHECK summary "$demo" "$tmp/demo.json" "demo, the markup without scripts" || rc=1
    prof=$(mktemp -d "$tmp/profile.XXXXXX")
    timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$prof" \
        --hide-scrollbars --screenshot="$tmp/demo.png" --window-size=1280,4400 "file://$demo" >"$tmp/shot.log" 2>&1
    if [ -s "$tmp/demo.png" ] && [ "$(head -c 8 "$tmp/demo.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
        [ "$(wc -c <"$tmp/demo.png")" -gt 20000 ]; then
        pass "demo: screenshot made ($(wc -c <"$tmp/demo.png") bytes PNG)"
        if [ -n "${MEMOBS_HTML_SHOTS:-}" ]; then
            cp "$tmp/demo.png" "$MEMOBS_HTML_SHOTS/html_report.png" && cp "$demo" "$MEMOBS_HTML_SHOTS/html_report.html"
            # and its first screen, for README.md and docs/exports/html.md
            timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
                --disable-background-networking --disable-component-update --disable-sync \
                --user-data-dir="$(mktemp -d "$tmp/profile.XXXXXX")" --hide-scrollbars \
                --screenshot="$MEMOBS_HTML_SHOTS/html_report_top.png" --window-size=1280,1000 "file://$demo" \
                >>"$tmp/shot.log" 2>&1
        fi
    else
        fail "demo: screenshot made" "$(tail -n 5 "$tmp/shot.log")"
    fi
else
    fail "demo: exits 0, MEMOBS_HTML written at exit with %r/%p expanded" "exit $st, files: $*" \
        "$(tail -n 20 "$tmp/demo.err")"
fi

# --- an empty run: every section says what to turn on
MEMOBS_HTML="$tmp/empty.html" MEMOBS_SUMMARY="$tmp/empty.json" MEMOBS_FORMAT=json "$tmp/prog" empty 2>"$tmp/empty.err"
if [ -s "$tmp/empty.html" ]; then
    pass "empty: MEMOBS_HTML written at exit"
    chrome "$tmp/empty.html" "$tmp/empty.dom"
    $CHECK summary "$tmp/empty.dom" "$tmp/empty.json" empty || rc=1
    $CHECK sections "$tmp/empty.dom" empty empty || rc=1
    opens empty "$tmp/empty.html"
    size empty "$tmp/empty.html"
else
    fail "empty: MEMOBS_HTML written at exit" "$(cat "$tmp/empty.err")"
fi

# --- odd strings, written to an odd path
odd="$tmp/odd \"q\" <p> & 'a'.html"
MEMOBS_HTML="$odd" MEMOBS_SUMMARY="$tmp/odd.json" MEMOBS_FORMAT=json "$tmp/prog" odd 2>"$tmp/odd.err"
if [ -s "$odd" ]; then
    pass "odd: written to a path with quotes, <, & and spaces"
    cp "$odd" "$tmp/odd.html"
    chrome "$tmp/odd.html" "$tmp/odd.dom"
    $CHECK odd "$tmp/odd.dom" "$tmp/odd.html" || rc=1
    $CHECK summary "$tmp/odd.dom" "$tmp/odd.json" odd || rc=1
    opens odd "$tmp/odd.html"
else
    fail "odd: written to a path with quotes, <, & and spaces" "$(cat "$tmp/odd.err")"
fi

# --- more than the report shows: the size bound
MEMOBS_HTML="$tmp/many.html" MEMOBS_SUMMARY="$tmp/many.json" MEMOBS_FORMAT=json "$tmp/prog" many 2>"$tmp/many.err"
if [ -s "$tmp/many.html" ]; then
    pass "many: MEMOBS_HTML written at exit"
    size many "$tmp/many.html"
    chrome "$tmp/many.html" "$tmp/many.dom"
    $CHECK summary "$tmp/many.dom" "$tmp/many.json" many || rc=1
    $CHECK sections "$tmp/many.dom" many many || rc=1
    opens many "$tmp/many.html"
else
    fail "many: MEMOBS_HTML written at exit" "$(tail -n 5 "$tmp/many.err")"
fi

# --- the storage tier: 7 rows, 21 bars, 7 lines, the transfer sizes exact
MEMOBS_HTML="$tmp/storage.html" MEMOBS_SUMMARY="$tmp/storage.json" MEMOBS_FORMAT=json "$tmp/prog" storage \
    2>"$tmp/storage.err"
if [ -s "$tmp/storage.html" ]; then
    pass "storage: MEMOBS_HTML written at exit"
    chrome "$tmp/storage.html" "$tmp/storage.dom"
    $CHECK summary "$tmp/storage.dom" "$tmp/storage.json" storage || rc=1
    $CHECK sections "$tmp/storage.dom" storage storage || rc=1
    opens storage "$tmp/storage.html"
    size storage "$tmp/storage.html"
else
    fail "storage: MEMOBS_HTML written at exit" "$(tail -n 5 "$tmp/storage.err")"
fi

# --- the worst case at default limits: under 1 MB (memobs.h's doc says so)
MEMOBS_HTML="$tmp/worst.html" MEMOBS_SUMMARY="$tmp/worst.json" MEMOBS_FORMAT=json "$tmp/prog" worst 2>"$tmp/worst.err"
if [ -s "$tmp/worst.html" ]; then
    n=$(wc -c <"$tmp/worst.html")
    if [ "$n" -le 1048576 ]; then pass "worst: report size $n bytes <= 1 MB"; else fail "worst: report size" "expected <= 1048576 bytes, got $n"; fi
    chrome "$tmp/worst.html" "$tmp/worst.dom"
    $CHECK summary "$tmp/worst.dom" "$tmp/worst.json" worst || rc=1
    opens worst "$tmp/worst.html"
else
    fail "worst: MEMOBS_HTML written at exit" "$(tail -n 5 "$tmp/worst.err")"
fi

# --- attribution to requests: the Requests block against the API's figures
# (tests/outputs/test_html_requests.c prints them, as JSON, right after it
# writes the report), and the JSON summary at exit for the rest of the page
for mode in requests full; do
    MEMOBS_SUMMARY="$tmp/$mode.json" MEMOBS_FORMAT=json "$tmp/reqprog" $mode "$tmp/$mode.html" \
        >"$tmp/$mode.api.json" 2>"$tmp/$mode.err"
    st=$?
    if [ "$st" -eq 0 ] && [ -s "$tmp/$mode.html" ] && [ -s "$tmp/$mode.api.json" ]; then
        pass "$mode: memobs_write_html_file wrote the report, the program printed the API's figures"
        chrome "$tmp/$mode.html" "$tmp/$mode.dom"
        $CHECK requests "$tmp/$mode.dom" "$tmp/$mode.html" "$tmp/$mode.api.json" $mode $mode || rc=1
        $CHECK requests "$tmp/$mode.html" "$tmp/$mode.html" "$tmp/$mode.api.json" $mode \
            "$mode, the markup without scripts" || rc=1
        $CHECK summary "$tmp/$mode.dom" "$tmp/$mode.json" $mode || rc=1
        opens $mode "$tmp/$mode.html"
        size $mode "$tmp/$mode.html"
    else
        fail "$mode: memobs_write_html_file wrote the report, the program printed the API's figures" "exit $st" \
            "$(tail -n 5 "$tmp/$mode.err")"
    fi
done

# MEMOBS_REPORT_ROWS=5 cuts the tenants' rows: the 5 largest named, "other" kept, the rest counted
MEMOBS_REPORT_ROWS=5 "$tmp/reqprog" full "$tmp/rows.html" >/dev/null 2>"$tmp/rows.err"
got=$(grep -o 'data-tenant="[0-9]*"' "$tmp/rows.html" | tr '\n' ' ')
if [ "$got" = 'data-tenant="4" data-tenant="3" data-tenant="2" data-tenant="1" data-tenant="0" data-tenant="32" ' ] &&
    grep -q '<p>27 more tenants (MEMOBS_REPORT_ROWS)</p>' "$tmp/rows.html"; then
    pass "MEMOBS_REPORT_ROWS=5: the 5 largest tenants (named 5th to 1st: 2 requests each), \"other\" kept, 27 more counted"
else
    fail "MEMOBS_REPORT_ROWS=5: the 5 largest tenants (named 5th to 1st: 2 requests each), \"other\" kept, 27 more counted" \
        "rows: $got" "$(grep -o '<p>[0-9]* more tenants[^<]*</p>' "$tmp/rows.html")"
fi

# --- an unwritable MEMOBS_HTML: one warning, no crash
MEMOBS_HTML=/nonexistent-memobs-dir/r%r.html "$tmp/prog" empty 2>"$tmp/unw.err"
st=$?
n=$(grep -c . "$tmp/unw.err")
if [ "$st" -eq 0 ] && [ "$n" -eq 1 ] && grep -q '/nonexistent-memobs-dir/r0.html' "$tmp/unw.err"; then
    pass "unwritable MEMOBS_HTML: exit 0, one warning naming the expanded path"
else
    fail "unwritable MEMOBS_HTML: exit 0, one warning naming the expanded path" "exit $st, $n lines:" \
        "$(cat "$tmp/unw.err")"
fi

# --- the API's return codes, and a report written by the call
"$tmp/prog" api "$tmp/api.html" 2>"$tmp/api.err"
st=$?
if [ "$st" -eq 0 ] && grep -q 'data-memobs="d2d.decode.bytes" data-v="777"' "$tmp/api.html"; then
    pass "memobs_write_html(NULL) MEMOBS_ERR_INVALID, unwritable file MEMOBS_ERR_IO, a path MEMOBS_OK"
else
    fail "memobs_write_html(NULL) MEMOBS_ERR_INVALID, unwritable file MEMOBS_ERR_IO, a path MEMOBS_OK" \
        "exit $st (2: NULL, 3: unwritable, 4: path)" "$(cat "$tmp/api.err")"
fi

# memory over time without the sampler: from the timeline's allocations
if grep -q 'id="memory-chart"' "$tmp/api.html" && grep -q 'tracked pinned (timeline)' "$tmp/api.html" &&
    grep -q 'peak of tracked pinned (timeline): 4.00 KB' "$tmp/api.html"; then
    pass "no sampler, timeline on: memory over time from the timeline's allocations (peak 4.00 KB marked)"
else
    fail "no sampler, timeline on: memory over time from the timeline's allocations (peak 4.00 KB marked)" \
        "$(sed -n '/<h3>Over time/,/<\/svg>/p' "$tmp/api.html" | head -n 12)"
fi

# --- compiled out (MEMOBS_DISABLE): links, writes a report of nothing
if $CC -std=c99 -O2 -Wall -Wextra -Werror -pthread -DMEMOBS_DISABLE -I. tests/outputs/test_html.c -o "$tmp/prog_off" \
    >"$tmp/off.log" 2>&1; then
    "$tmp/prog_off" api "$tmp/off.html" 2>>"$tmp/off.log"
    st=$?
    if [ "$st" -eq 0 ] && grep -q 'data-memobs="d2d.decode.bytes" data-v="0"' "$tmp/off.html" &&
        grep -q 'data-memobs="enabled">off<' "$tmp/off.html"; then
        pass "MEMOBS_DISABLE: builds (-Werror), links, writes a report that records nothing and says off"
    else
        fail "MEMOBS_DISABLE: builds (-Werror), links, writes a report that records nothing and says off" \
            "exit $st" "$(tail -n 5 "$tmp/off.log")"
    fi
else
    fail "MEMOBS_DISABLE: builds (-Werror), links" "$(head -n 20 "$tmp/off.log")"
fi

# --- Python: memobs.write_html
if PYINC=$("$PYTHON-config" --includes 2>/dev/null) && SUFFIX=$("$PYTHON-config" --extension-suffix 2>/dev/null); then
    mkdir -p "$tmp/py/memobs" && cp python/memobs/*.py python/memobs/__init__.pyi "$tmp/py/memobs/"
    if $CC -std=c99 -O1 -fPIC -shared -Wall -Wextra -Werror -I. $PYINC python/memobs/_memobs.c \
        -o "$tmp/py/memobs/_memobs$SUFFIX" >"$tmp/py.log" 2>&1; then
        PYTHONPATH="$tmp/py" $PYTHON - "$tmp/py.html" >"$tmp/py.out" 2>&1 <<'PY'
import sys, memobs
memobs.record_h2d(4242, True)
memobs.track_python_stacks()
def python_alloc_site():
    memobs.track_alloc(0x10000, 4096, "host", "py_tag")
python_alloc_site()
memobs.write_html(sys.argv[1])
try:
    memobs.write_html("/nonexistent-memobs-dir/x.html")
    print("no OSError")
except OSError:
    pass
PY
        if [ ! -s "$tmp/py.out" ] && grep -q 'data-memobs="h2d.prefill.bytes" data-v="4242"' "$tmp/py.html"; then
            pass "python: memobs.write_html(path) writes the report; OSError on an unwritable path"
        else
            fail "python: memobs.write_html(path) writes the report; OSError on an unwritable path" "$(cat "$tmp/py.out")"
        fi
        if sed -n '/id="traces"/,/<\/section>/p' "$tmp/py.html" | grep -q 'python_alloc_site'; then
            pass "python: the traces section shows a Python frame (python_alloc_site)"
        else
            fail "python: the traces section shows a Python frame (python_alloc_site)" \
                "$(sed -n '/id="traces"/,/<\/section>/p' "$tmp/py.html" | head -n 20)"
        fi
    else
        fail "python: build the extension" "$(head -n 20 "$tmp/py.log")"
    fi
else
    fail "python: $PYTHON-config not found (the Python development headers)"
fi

exit $rc
