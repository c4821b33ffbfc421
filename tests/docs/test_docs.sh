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
#                  memobs itself was written (a list of telltale phrases).
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

exit $rc
