#!/usr/bin/env bash
# The documents against the sources (tests/docs/docs_check.py does the work):
#   configuration  docs/configuration.md lists every MEMOBS_* environment
#                  variable the sources read (getenv, os.environ, the
#                  launcher's ${MEMOBS_*}) and every MEMOBS_* name they test
#                  with #if/#ifdef/#ifndef/#elif (private MEMOBS__* names and
#                  include guards left out), and nothing else: none missing,
#                  none stale;
#   links          every relative link and image of README.md, docs/**/*.md,
#                  tests/README.md and CHANGELOG.md names a file that exists,
#                  and every #anchor one of its target's headings (GitHub's
#                  slugs) or HTML ids;
#   readme         README.md is at most 300 lines and links every docs page;
#   prose          no sentence in README, docs or the headers about how
#                  memobs itself was written (a list of telltale phrases);
#   first minutes  what a new user reads first says what works: README's
#                  Python quick start runs as pasted (memobs stubbed: no
#                  undefined name), no `pip install .` that needs the network,
#                  each example's row says what it needs, the units are
#                  explained before the first figure, memobs.h's identity
#                  list names every variable it reads, serving.md's flush rule
#                  stands at the top.
# First the checker itself, on fixtures: tests/docs/good (every check
# passes: duplicate headings, setext headings, code spans and blocks,
# emphasis, HTML anchors, external links, private names, include guards,
# quoted constants) and tests/docs/bad (each fault planted once; the report
# must be exactly tests/docs/bad/expected.txt).
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/docs
mkdir -p "$B"
. tests/lib.sh # try, rc

PY=${PYTHON:-python3}
CHECK="$PY tests/docs/docs_check.py"

# fixtures
for c in config links readme prose; do
    try docs "checker: the good fixture passes $c" $CHECK $c tests/docs/good
done
for c in config links readme prose; do
    echo "== $c"
    $CHECK $c tests/docs/bad 3
    echo "rc=$?"
done >"$B/bad.out" 2>&1
try docs "checker: the bad fixture's faults are all reported, and nothing else" \
    diff -u tests/docs/bad/expected.txt "$B/bad.out"
# the exit status, not the text alone, says failure
for c in config links readme prose; do
    try docs "checker: $c exits 1 on the bad fixture" \
        bash -c "$CHECK $c tests/docs/bad 3 >/dev/null 2>&1; [ \$? -eq 1 ]"
done

# the repository: every offender shown (try shows the first 20 lines)
check() { # check NAME CMD...
    local name=$1
    shift
    if "$@" >"$B/log" 2>&1; then
        echo "ok - docs: $name"
        grep '^note:' "$B/log" | sed 's/^/    # /'
    else
        echo "not ok - docs: $name"
        sed 's/^/    # /' "$B/log" | head -n 300
        rc=1
    fi
}
check "configuration.md lists every environment variable and compile-time option, none stale" $CHECK config .
check "no dead relative link or anchor in README.md, docs/, tests/README.md, CHANGELOG.md" $CHECK links .
check "README.md is at most 300 lines and links every docs page" $CHECK readme . 300
check "no sentence about how memobs was written in README, docs, headers" $CHECK prose .

# The first five minutes (see the top of this file).
first() { # first NAME: runs the python check NAME below
    $PY - "$1" <<'PY'
import contextlib, re, sys, types
name = sys.argv[1]
readme = open("README.md").read()
lines = readme.splitlines()

def fail(msg):
    print(msg)
    sys.exit(1)

if name == "python":
    m = re.search(r"^## Quick start: Python\n.*?^```python\n(.*?)^```", readme, re.S | re.M)
    if not m:
        fail("no ```python block under '## Quick start: Python'")
    class Stub(types.ModuleType):  # every call accepted: only the snippet's own names are tested
        def __getattr__(self, attr):
            if attr == "region":
                return lambda *a, **k: contextlib.nullcontext()
            return lambda *a, **k: None
    sys.modules["memobs"] = Stub("memobs")
    try:
        exec(compile(m.group(1), "README.md (Python quick start)", "exec"), {})
    except Exception as e:
        fail("the snippet raised %s: %s" % (type(e).__name__, e))
elif name == "pip":
    bad = []
    for f in ["README.md", "examples/hello.py"]:
        for i, l in enumerate(open(f).read().splitlines(), 1):
            if re.search(r"pip install (-\S+ )*\.(\s|$|`)", l) and "--no-build-isolation" not in l:
                bad.append("%s:%d: %s" % (f, i, l.strip()))
    if bad:
        fail("a pip install that fetches setuptools from the network:\n" + "\n".join(bad))
elif name == "examples":
    import glob
    rows = [l for l in lines if l.startswith("|") and "examples/" in l]
    bad = []
    for ex in sorted(glob.glob("examples/hello*")):
        row = [r for r in rows if "`%s`" % ex in r]
        cells = [c.strip() for c in row[0].strip("|").split("|")] if row else []
        if len(cells) < 4 or not re.search(r"GPU|toolkit|Toolkit|compiler|Python", cells[-1]):
            bad.append("%s: %s" % (ex, row[0] if row else "in no row of the entry table"))
    if bad:
        fail("the entry table's last cell must say what the example needs:\n" + "\n".join(bad))
elif name == "units":
    u = next((i for i, l in enumerate(lines) if l.startswith("Units: ")), None)
    fig = next((i for i, l in enumerate(lines) if re.search(r"\d MB ", l)), None)
    if u is None or fig is None or u > fig or "KiB" not in " ".join(lines[u:u + 4]):
        fail("README.md: a 'Units: ' paragraph (SI and KiB) before the first MB figure: units at %s, figure at %s"
             % (u, fig))
    if "### Units in the text summary" not in open("docs/c-api.md").read():
        fail("docs/c-api.md: no '### Units in the text summary'")
elif name == "identity":
    h = open("memobs.h").read()
    table = re.search(r"memobs__identity_from_env\(void\) \{\n(.*?)\};", h, re.S)
    impl = re.search(r"^#\s*if.*\bMEMOBS_IMPLEMENTATION\b", h, re.M)  # the API part ends there
    doc = h[:impl.start()] if impl else ""
    if not table or not doc:
        fail("memobs.h: no memobs__identity_from_env table or no API part")
    names = re.findall(r'"([A-Z_]+)"', table.group(1))
    doc = re.sub(r'"[A-Z_]+"', "", doc)
    miss = [n for n in names if not re.search(r"\b%s\b" % n, doc) and n.rsplit("_", 1)[0] + "_*" not in doc
            and n.split("_")[0] + "_COMM_WORLD_*" not in doc]
    if len(names) < 12 or miss:
        fail("memobs.h's doc block leaves out %s (of %s)" % (miss, names))
elif name == "flush":
    head = open("docs/serving.md").read().splitlines()[:25]
    if not any(l.startswith("> **Rule: call `memobs_flush()` in your shutdown path**") for l in head):
        fail("docs/serving.md: no '> **Rule: call `memobs_flush()` in your shutdown path**' in its first 25 lines")
PY
}
check "first minutes: README's Python quick start runs as pasted (no undefined name)" first python
check "first minutes: README and examples/hello.py say pip install --no-build-isolation (works offline)" first pip
check "first minutes: README's entry table says what each example needs" first examples
check "first minutes: units explained before the first figure (README) and in docs/c-api.md" first units
check "first minutes: memobs.h's identity list names every variable it reads (PMI_LOCAL_RANK too)" first identity
check "first minutes: docs/serving.md opens with the memobs_flush() rule" first flush

exit $rc
