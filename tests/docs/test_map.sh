#!/usr/bin/env bash
# The map of memobs.h (its doc block's CONTENTS and PRIVATE PREFIXES) against
# the file:
#   - every section banner (a title line between two rule lines) keeps the
#     banners' width and ends in " >>tag" (lowercase letters, digits, dashes);
#   - the tags are all different, and each occurs exactly twice in the file
#     (its CONTENTS entry and its banner: a search goes from one to the other
#     and back);
#   - every CONTENTS entry has its banner and every banner its entry, in the
#     file's order;
#   - every prefix of the glossary occurs in memobs.h past the doc block (as
#     memobs__prefix_ or MEMOBS__PREFIX_), the section each glossary line
#     names is a tag, and that section holds one of the line's prefixes;
#   - every prefix used more than MAP_MIN (20) times has a glossary line.
# Then the checker itself, on copies of memobs.h with one fault planted each:
# each fault is reported, naming what is wrong.
# MAP_FILE checks another file (default memobs.h).
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/map
mkdir -p "$B"
. tests/lib.sh # a clean environment
PY=${PYTHON:-python3}
MIN=${MAP_MIN:-20}
if ! command -v "$PY" >/dev/null 2>&1; then
    echo "not ok - map: $PY not found (set PYTHON)"
    exit 1
fi

# check_map FILE: one "ok - map: ..." or "not ok - map: ..." line per rule,
# offenders as "    # " lines; exit status 1 when a rule fails.
check_map() {
    "$PY" - "$1" "$MIN" <<'PY'
import re, sys
from collections import Counter, defaultdict

path, min_uses = sys.argv[1], int(sys.argv[2])
lines = open(path, encoding="utf-8").read().split("\n")
failed = 0

def rule(ok, what, offenders=()):
    global failed
    print("%s - map: %s" % ("ok" if ok else "not ok", what))
    for o in list(offenders)[:30]:
        print("    # " + o)
    if not ok:
        failed = 1

# The doc block: from the first line to the first "*/".
end = next(i for i, l in enumerate(lines) if "*/" in l)
doc = lines[: end + 1]

# Banners: a title line between two rule lines, itself no rule.
RULE = re.compile(r"^/\* =+ \*/$")
TAG = re.compile(r" >>([a-z0-9]+(?:-[a-z0-9]+)*) \*/$")
banners = []  # (line number, title, tag or None)
for i in range(1, len(lines) - 1):
    if (RULE.match(lines[i - 1]) and RULE.match(lines[i + 1]) and not RULE.match(lines[i])
            and re.match(r"^/\* .* \*/$", lines[i])):
        m = TAG.search(lines[i])
        title = lines[i][3:].rstrip("*/ ")
        if m:
            title = title[: title.rfind(">>")].rstrip()
        banners.append((i + 1, title.strip(), m.group(1) if m else None, len(lines[i])))
width = len(lines[banners[0][0] - 2]) if banners else 0

# CONTENTS: entry lines "  >>tag  what"; PRIVATE PREFIXES: "     prefixes  section  what".
def block(head):
    start = next((i for i, l in enumerate(doc) if l.startswith("   " + head)), None)
    if start is None:
        return None, []
    stop = start + 1
    while stop < len(doc) and doc[stop].strip() and not doc[stop].startswith("   " + "*/"):
        stop += 1
    return start, [(i + 1, doc[i]) for i in range(start, stop)]

toc_at, toc_lines = block("CONTENTS")
glo_at, glo_lines = block("PRIVATE PREFIXES")
rule(toc_at is not None and glo_at is not None,
     "the doc block has its CONTENTS and PRIVATE PREFIXES",
     [h + " is missing" for h, at in (("CONTENTS", toc_at), ("PRIVATE PREFIXES", glo_at)) if at is None])
toc = []  # (line number, tag)
for n, l in toc_lines:
    m = re.match(r"^\s+>>(\S+)\s", l + " ")
    if m:
        toc.append((n, m.group(1)))
glossary = []  # (line number, [prefixes], section)
ENTRY = re.compile(r"^     (\S+(?: \S+)*)\s{2,}([a-z0-9-]+)(?:\s{2,}.*)?$")
for n, l in glo_lines:
    m = ENTRY.match(l)
    if m and m.group(1) != "prefixes":
        glossary.append((n, m.group(1).split(), m.group(2)))

# 1. every banner tagged, at the width of its rules
bad = ["line %d: %s: %s" % (n, t, "no >>tag" if not g else "%d columns, not %d" % (w, width))
       for n, t, g, w in banners if not g or w != width]
rule(not bad, "%d banners, each with a >>tag, %d columns wide" % (len(banners), width), bad)

# 2. tags unique, each occurring twice (entry and banner)
tags = [g for _, _, g, _ in banners if g]
dup = [t for t, c in Counter(tags).items() if c > 1]
rule(not dup, "%d banner tags, all different" % len(tags), ["tag >>%s on %d banners" % (t, tags.count(t)) for t in dup])
text = "\n".join(lines)
occ = Counter(re.findall(r">>([a-z0-9-]+)", text))
odd = ["line %d: >>%s occurs %d times" % (n, t, occ[t]) for n, _, t, _ in banners if t and occ[t] != 2]
rule(not odd, "each banner's >>tag occurs exactly twice: its CONTENTS entry and its banner", odd)

# 3. CONTENTS against the banners, both ways, in order
banner_tags = set(tags)
toc_tags = [t for _, t in toc]
nobanner = ["line %d: >>%s: no banner has this tag" % (n, t) for n, t in toc if t not in banner_tags]
rule(not nobanner, "%d CONTENTS entries, each with its banner" % len(toc), nobanner)
noentry = ["line %d: %s (>>%s): not in CONTENTS" % (n, ti, g) for n, ti, g, _ in banners if g and g not in toc_tags]
rule(not noentry, "%d tagged banners, each with its CONTENTS entry" % len(tags), noentry)
both = [t for t in toc_tags if t in banner_tags]
file_order = [g for _, _, g, _ in banners if g in set(toc_tags)]
where = {}
for n, _, g, _ in banners:
    where.setdefault(g, n)
order_bad = []
for a, b in zip(both, file_order):
    if a != b:
        order_bad.append("CONTENTS has >>%s where the file has >>%s (line %d)" % (a, b, where[b]))
        break
rule(not order_bad and len(both) == len(file_order),
     "CONTENTS lists the %d sections in the file's order" % len(both), order_bad)

# 4. the glossary against the code past the doc block
code = "\n".join(lines[end + 1:])
uses = Counter()
for m in re.finditer(r"\bmemobs__([a-z0-9]+)_", code):
    uses[m.group(1)] += 1
for m in re.finditer(r"\bMEMOBS__([A-Z0-9]+)_", code):
    uses[m.group(1)] += 1
# the uses per section (by banner tag; before the first banner: "")
sec_uses = defaultdict(Counter)
starts = [(n, g or "") for n, _, g, _ in banners]
k = 0
cur = ""
for i in range(end + 1, len(lines)):
    while k < len(starts) and starts[k][0] <= i + 1:
        cur = starts[k][1]
        k += 1
    for m in re.finditer(r"\b(?:memobs__([a-z0-9]+)|MEMOBS__([A-Z0-9]+))_", lines[i]):
        sec_uses[cur][m.group(1) or m.group(2)] += 1
listed = [p for _, ps, _ in glossary for p in ps]
unused = ["line %d: %s: no %s in memobs.h" % (n, p, ("memobs__%s_" if p.islower() or p.isdigit() else "MEMOBS__%s_") % p)
          for n, ps, _ in glossary for p in ps if uses[p] == 0]
rule(not unused and glossary, "the glossary's %d prefixes (%d lines) are each used in memobs.h"
     % (len(listed), len(glossary)), unused)
dupp = [p for p, c in Counter(listed).items() if c > 1]
rule(not dupp, "each prefix has one glossary line", ["%s on %d lines" % (p, listed.count(p)) for p in dupp])
wrong = []
for n, ps, s in glossary:
    if s not in banner_tags:
        wrong.append("line %d: %s: no section >>%s" % (n, " ".join(ps), s))
    elif not any(sec_uses[s][p] for p in ps):
        wrong.append("line %d: %s: none of them in section >>%s" % (n, " ".join(ps), s))
rule(not wrong, "each glossary line names a section that holds its prefixes", wrong)
frequent = sorted((p for p, c in uses.items() if c > min_uses), key=lambda p: -uses[p])
missing = ["%s: %d uses" % (("memobs__%s_" if p.islower() or p.isdigit() else "MEMOBS__%s_") % p, uses[p])
           for p in frequent if p not in listed]
rule(not missing, "the %d prefixes used more than %d times each have a glossary line (of %d prefixes in all)"
     % (len(frequent), min_uses, len(uses)), missing)
sys.exit(failed)
PY
}

F=${MAP_FILE:-memobs.h}
check_map "$F" || rc=1

# ---- the checker, on copies of memobs.h with one fault each ----------------
# plant NAME PYTHON-EDIT EXPECT: EXPECT (a regular expression) must be
# among the checker's lines for the copy, and the checker must exit 1.
plant() {
    local name=$1 edit=$2 expect=$3 out
    "$PY" - "$F" "$B/planted.h" "$edit" <<'PY'
import sys
s = open(sys.argv[1], encoding="utf-8").read()
exec(sys.argv[3])
open(sys.argv[2], "w", encoding="utf-8").write(s)
PY
    out=$(check_map "$B/planted.h")
    local st=$?
    if [ $st -eq 1 ] && printf '%s\n' "$out" | grep -Eq -- "$expect"; then
        echo "ok - map: checker: $name"
    else
        echo "not ok - map: checker: $name"
        echo "    # expected exit 1 and a line matching: $expect"
        echo "    # actual: exit $st"
        printf '%s\n' "$out" | grep -v '^ok' | head -n 12 | sed 's/^/    # /'
        rc=1
    fi
}
# r(a, b): replace the first a (which must be there) by b
R='def r(a, b):
    global s
    assert a in s, a
    s = s.replace(a, b, 1)
'
plant "a banner without its tag" "$R
r('/* Private: shards                                                 >>shards */',
  '/* Private: shards                                                          */')" \
    '# line [0-9]+: Private: shards: no >>tag'
plant "a banner wider than its rules" "$R
r('>>shards */', ' >>shards */')" \
    '# line [0-9]+: Private: shards: 79 columns, not 78'
plant "a tag on two banners" "$R
r('/* Private: shards                                                 >>shards */',
  '/* Private: shards                                                  >>state */')" \
    '# tag >>state on 2 banners'
plant "a CONTENTS entry with no banner" "$R
r('       >>shards ', '       >>shard ')" \
    '# line [0-9]+: >>shard: no banner has this tag'
plant "a banner with no CONTENTS entry" "$R
r('/* Private: shards                                                 >>shards */',
  '/* Private: shards                                                 >>shardz */')" \
    'Private: shards \(>>shardz\): not in CONTENTS'
plant "a tag written a third time" "$R
r('   PRIVATE PREFIXES', '   (>>tracker)\n   PRIVATE PREFIXES')" \
    '>>tracker occurs 3 times'
plant "CONTENTS out of the file's order" "$R
import re
a = re.search(r'\n       >>histograms .*\n', s).group(0)
b = re.search(r'\n       >>requests .*\n', s).group(0)
s = s.replace(a, '\n@@A@@\n', 1).replace(b, a, 1).replace('\n@@A@@\n', b, 1)" \
    'CONTENTS has >>requests where the file has >>histograms'
plant "a glossary prefix no longer in memobs.h" "$R
r('     bg              worker ', '     bg zzq          worker ')" \
    '# line [0-9]+: zzq: no memobs__zzq_ in memobs.h'
plant "a glossary line naming a section without its prefixes" "$R
r('     bg              worker ', '     bg              html   ')" \
    '# line [0-9]+: bg: none of them in section >>html'
plant "a frequent prefix with no glossary line" "$R
r('     bg              worker         BackGround worker\n', '')" \
    '# memobs__bg_: [0-9]+ uses'
plant "a new prefix used 21 times" "$R
s += ''.join('static int memobs__newthing_%d;\n' % i for i in range(21))" \
    '# memobs__newthing_: 21 uses'

exit $rc
