#!/usr/bin/env bash
# tests/serving/test_prom.c (the Prometheus exporter) built four ways: C99, C++17,
# ASan+UBSan, TSan; each runs the in-process tests, then fresh processes:
# an exposition with odd strings and an empty one, both checked against the
# format rules (prom_lint below) and by promtool; MEMOBS_PROM_FILE written
# at exit; MEMOBS_PROM_FILE and MEMOBS_PROM_INTERVAL_MS, good and malformed.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/prom
mkdir -p "$B"
rc=0

. tests/lib.sh # a clean environment, sanitizer options
unset MEMOBS_PROM_FILE MEMOBS_PROM_INTERVAL_MS

# prom_lint FILE: the text exposition format 0.0.4 rules, and memobs' own:
# UTF-8, a trailing newline, no blank or stray comment lines; one HELP and
# one TYPE per family, both before its first sample, a family's lines
# contiguous; names memobs_*, counters *_total; label names valid, the
# identity labels first on every sample, label values escaped; histograms
# with increasing le, cumulative counts, +Inf last and equal to _count,
# _sum and _count present. Prints what is wrong as "    # " lines.
prom_lint() {
    python3 - "$1" <<'PY'
import math, re, sys
errs = []
def err(i, msg):
    if len(errs) < 20: errs.append("line %d: %s" % (i + 1, msg))
raw = open(sys.argv[1], "rb").read()
try:
    text = raw.decode("utf-8")
except UnicodeDecodeError as e:
    print("    # not UTF-8: %s" % e); sys.exit(1)
if not text.endswith("\n"): errs.append("no trailing newline")
lines = text[:-1].split("\n") if text.endswith("\n") else text.split("\n")
NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LNAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
ID = ["job_id", "rank", "local_rank", "host"]
fam = {}       # name -> {"help", "type", "samples"}
seen = []      # families in order of their first line
cur = None
hists = {}     # (family, labels without le) -> {"le": [(le, v)], "sum", "count"}
def family_line(i, name):
    global cur
    if name != cur:
        if name in fam and fam[name]["started"]: err(i, "family %s is not contiguous" % name)
        cur = name
    fam.setdefault(name, {"help": 0, "type": None, "samples": 0, "started": False})["started"] = True
def parse_sample(i, line):
    m = NAME.match(line)
    if not m: return err(i, "no metric name: %r" % line)
    name, p, labels = m.group(0), m.end(), []
    if p < len(line) and line[p] == "{":
        p += 1
        while p < len(line) and line[p] != "}":
            m = LNAME.match(line, p)
            if not m or line[m.end():m.end() + 2] != '="': return err(i, "bad label at %d: %r" % (p, line))
            ln, p, v = m.group(0), m.end() + 2, ""
            while p < len(line) and line[p] != '"':
                if line[p] == "\\":
                    if p + 1 >= len(line) or line[p + 1] not in '\\"n': return err(i, "bad escape in %r" % line)
                    v += {"\\": "\\", '"': '"', "n": "\n"}[line[p + 1]]; p += 2
                elif line[p] == "\n": return err(i, "raw newline in a label value")
                else: v += line[p]; p += 1
            if p >= len(line): return err(i, "unterminated label value")
            p += 1
            labels.append((ln, v))
            if p < len(line) and line[p] == ",": p += 1
        if p >= len(line): return err(i, "unterminated label set")
        p += 1
    if line[p:p + 1] != " ": return err(i, "no space before the value: %r" % line)
    val = line[p + 1:]
    if " " in val: err(i, "a timestamp or junk after the value: %r" % line)
    try: fv = float(val)
    except ValueError: return err(i, "value %r is not a number" % val)
    names = [l[0] for l in labels]
    if len(set(names)) != len(names): err(i, "duplicate label names")
    if names[:4] != ID: err(i, "labels start %s, want %s" % (names[:4], ID))
    return name, labels, fv, val
for i, line in enumerate(lines):
    if line == "": err(i, "blank line"); continue
    if line.startswith("#"):
        parts = line.split(" ", 3)
        if len(parts) < 3 or parts[1] not in ("HELP", "TYPE"): err(i, "stray comment %r" % line); continue
        name = parts[2]
        if not NAME.fullmatch(name): err(i, "bad family name %r" % name)
        if not name.startswith("memobs_"): err(i, "family %s lacks the memobs_ prefix" % name)
        family_line(i, name)
        f = fam[name]
        if f["samples"]: err(i, "%s after samples of %s" % (parts[1], name))
        if parts[1] == "HELP":
            f["help"] += 1
            h = parts[3] if len(parts) > 3 else ""
            if re.search(r"\\[^\\n]|\\$", h.replace("\\\\", "")): err(i, "bad escape in HELP %r" % h)
        else:
            if f["type"]: err(i, "second TYPE for %s" % name)
            f["type"] = parts[3] if len(parts) > 3 else ""
            if f["type"] not in ("counter", "gauge", "histogram"): err(i, "type %r" % f["type"])
            if f["type"] == "counter" and not name.endswith("_total"): err(i, "counter %s lacks _total" % name)
            if f["type"] != "counter" and name.endswith("_total"): err(i, "%s %s ends in _total" % (f["type"], name))
        continue
    s = parse_sample(i, line)
    if not s: continue
    name, labels, fv, val = s
    base = name
    for suf in ("_bucket", "_sum", "_count"):
        if name.endswith(suf) and fam.get(name[:-len(suf)], {}).get("type") == "histogram": base = name[:-len(suf)]
    if base not in fam or not fam[base]["type"]: err(i, "sample of %s before its TYPE" % base); continue
    family_line(i, base)
    f = fam[base]
    f["samples"] += 1
    if f["type"] == "counter" and not fv >= 0: err(i, "negative counter")
    if f["type"] == "histogram":
        key = (base, tuple(l for l in labels if l[0] != "le"))
        h = hists.setdefault(key, {"le": [], "sum": None, "count": None})
        if name.endswith("_bucket"):
            le = [l[1] for l in labels if l[0] == "le"]
            if len(le) != 1 or labels[-1][0] != "le": err(i, "bucket without le last"); continue
            if h["sum"] is not None or h["count"] is not None: err(i, "bucket after _sum/_count")
            h["le"].append((float(le[0]), fv, le[0]))
        elif name.endswith("_sum"): h["sum"] = fv
        else: h["count"] = fv
for name, f in fam.items():
    if f["help"] != 1: errs.append("%s has %d HELP lines" % (name, f["help"]))
    if not f["samples"]: errs.append("%s has no samples" % name)
for (name, _), h in hists.items():
    les = h["le"]
    if not les or les[-1][2] != "+Inf": errs.append("%s: last bucket is not +Inf" % name); continue
    for a, b in zip(les, les[1:]):
        if not b[0] > a[0]: errs.append("%s: le %s after %s" % (name, b[2], a[2]))
        if b[1] < a[1]: errs.append("%s: bucket %s count %g below %g" % (name, b[2], b[1], a[1]))
    if h["count"] is None or h["sum"] is None: errs.append("%s: _sum or _count missing" % name)
    elif les[-1][1] != h["count"]: errs.append("%s: +Inf %g != _count %g" % (name, les[-1][1], h["count"]))
for e in errs: print("    # " + e)
sys.exit(1 if errs else 0)
PY
}

have_promtool=0
if command -v promtool >/dev/null; then
    have_promtool=1
else
    echo "ok - prom: promtool check metrics # SKIP promtool not installed (tests/deps.sh installs Debian's prometheus)"
fi

run_variant() { # name suite: prom_NAME as mk/tests.mk makes it
    local name=$1 suite=$2 bin="$B/prom_$1" out="$B/$1"
    ok() { echo "ok - $suite: $1"; }
    bad() { echo "not ok - $suite: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }
    if ! test_make "$bin" >"$bin.log" 2>&1; then
        bad "build failed" "$(head -n 30 "$bin.log")"
        return
    fi
    # in-process tests
    "$bin" || rc=1

    # mode VAR=VALUE... -- MODE [ARGS]: runs a mode with that environment,
    # stdout (ok/not ok lines) shown, stderr to $out.err
    mode() {
        local envs=()
        while [ "$1" != "--" ]; do envs+=("$1"); shift; done
        shift
        env "${envs[@]}" "$bin" "$@" 2>"$out.err"
        if [ $? -ne 0 ]; then rc=1; echo "not ok - $suite: mode $*: exit status"; sed 's/^/    # stderr: /' "$out.err" | head -n 10; fi
    }
    # stderr_is NAME PATTERN...: stderr has exactly one line per pattern, each matching once
    stderr_is() {
        local name=$1 p
        shift
        if [ "$(wc -l <"$out.err")" -ne $# ]; then bad "$name" "stderr has $(wc -l <"$out.err") lines, want $#:" "$(cat "$out.err")"; return; fi
        for p in "$@"; do
            if [ "$(grep -c -- "$p" "$out.err")" -ne 1 ]; then bad "$name" "no single line matching '$p' in:" "$(cat "$out.err")"; return; fi
        done
        ok "$name"
    }
    no_temporaries() { # NAME: nothing like *.tmp.* left in $B
        if ls "$B" | grep -q '\.tmp\.'; then bad "$1" "temporaries left: $(ls "$B" | grep '\.tmp\.')"; else ok "$1"; fi
    }

    # expositions: the format rules, then promtool
    local f
    rm -f "$out".expo*.prom
    mode -- expo "$out.expo.prom"
    mode -- expo_empty "$out.expo_empty.prom"
    for f in expo expo_empty; do
        if prom_lint "$out.$f.prom" >"$out.lint"; then
            ok "$f: format rules (one HELP/TYPE per family, TYPE first, contiguous, histograms, escapes, newline)"
        else
            bad "$f: format rules" "$(cat "$out.lint")"
        fi
        if [ $have_promtool = 1 ]; then
            if promtool check metrics <"$out.$f.prom" >"$out.promtool" 2>&1 && [ ! -s "$out.promtool" ]; then
                ok "$f: promtool check metrics prints nothing and exits 0"
            else
                bad "$f: promtool check metrics" "$(head -n 10 "$out.promtool")"
            fi
        fi
    done
    # the odd strings came through escaped
    if grep -q '^memobs_info{job_id="odd \\"job\\"\\\\\\nid ä€😀 �",rank="1",local_rank="1",host="[^"]*",version="[0-9.]*",world_size="2"} 1$' "$out.expo.prom" \
        && grep -q '^# HELP memobs_user_odd_help_total quote " backslash \\\\ newline\\n— ü � end$' "$out.expo.prom" \
        && grep -q '^# HELP memobs_user_no_help_total User counter no_help\.$' "$out.expo.prom"; then
        ok "expo: odd job id and help text escaped"
    else
        bad "expo: odd job id and help text escaped" "$(grep -E '^memobs_info|HELP memobs_user' "$out.expo.prom")"
    fi

    # MEMOBS_PROM_FILE: written at exit (%r expanded), atomically, nothing on stderr
    rm -f "$out".exit_*
    mode MEMOBS_PROM_FILE="$out.exit_r%r.prom" MEMOBS_JOB_ID=exit-job RANK=3 LOCAL_RANK=1 WORLD_SIZE=4 -- exit
    f="$out.exit_r3.prom"
    if [ -f "$f" ] && grep -q '^memobs_transfer_bytes_total{job_id="exit-job",rank="3",local_rank="1",host="[^"]*",direction="h2d",phase="prefill"} 12345$' "$f" \
        && grep -q '^memobs_user_at_exit_total{job_id="exit-job",rank="3",local_rank="1",host="[^"]*"} 4$' "$f" \
        && prom_lint "$f" >"$out.lint" && [ ! -s "$out.err" ]; then
        ok "MEMOBS_PROM_FILE=path: written at exit by a child process"
    else
        bad "MEMOBS_PROM_FILE=path: written at exit by a child process" "file $f: $(ls "$out".exit_* 2>&1)" \
            "$(grep -E 'h2d",phase="prefill|at_exit' "$f" 2>&1)" "$(cat "$out.lint" 2>/dev/null)" "stderr: $(cat "$out.err")"
    fi
    no_temporaries "MEMOBS_PROM_FILE: no temporary left"
    rm -f "$out".exit_*
    mode MEMOBS_PROM_FILE=/nonexistent/dir/m.prom -- exit
    stderr_is "MEMOBS_PROM_FILE in a missing directory: one warning at exit, exit status 0" \
        "^memobs: warning: cannot write the Prometheus file to '/nonexistent/dir/m.prom': cannot create a temporary file in its folder: No such file or directory$"
    rm -f "$out".fork*
    mode MEMOBS_PROM_FILE="$out.fork.prom" -- fork_exit
    if [ -f "$out.fork.prom" ] && grep -q 'direction="d2d",phase="unphased"} 999$' "$out.fork.prom"; then
        ok "MEMOBS_PROM_FILE: the parent writes its file at its exit"
    else
        bad "MEMOBS_PROM_FILE: the parent writes its file at its exit" "$(ls "$out".fork* 2>&1)"
    fi
    mode MEMOBS_PROM_FILE="$out.fork_%p.prom" -- fork_exit
    rm -f "$out".fork*
    rm -f "$out".periodic.prom
    mode MEMOBS_PROM_FILE="$out.periodic.prom" MEMOBS_PROM_INTERVAL_MS=100 -- periodic
    rm -f "$out".periodic.prom
    mode MEMOBS_PROM_FILE= -- exit
    stderr_is "MEMOBS_PROM_FILE empty: off (the rule of every output variable), no warning"

    # MEMOBS_PROM_INTERVAL_MS
    mode -- interval 15000000000
    stderr_is "MEMOBS_PROM_INTERVAL_MS unset: 15 s, no warning"
    mode MEMOBS_PROM_INTERVAL_MS=2000 -- interval 2000000000
    stderr_is "MEMOBS_PROM_INTERVAL_MS=2000: no warning"
    mode MEMOBS_PROM_INTERVAL_MS=0 -- interval 0
    stderr_is "MEMOBS_PROM_INTERVAL_MS=0 (at exit only): no warning"
    local v
    for v in abc 50 86400001 -5 "1000 " 99999999999; do
        mode MEMOBS_PROM_INTERVAL_MS="$v" -- interval 15000000000
        stderr_is "MEMOBS_PROM_INTERVAL_MS='$v': one warning, the default" \
            "^memobs: warning: MEMOBS_PROM_INTERVAL_MS='$v' is not 0 or a number of milliseconds from 100 to 86400000; using 15000$"
    done
}

run_variant c99 prom-c99
run_variant cxx17 prom-c++17
run_variant asan prom-asan+ubsan
run_variant tsan prom-tsan
exit $rc
