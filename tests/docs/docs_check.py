#!/usr/bin/env python3
"""docs_check.py: the checks of tests/docs/test_docs.sh, over a repository tree.

    docs_check.py config ROOT   docs/configuration.md against the sources, both ways
    docs_check.py links ROOT    relative links and #anchors of README.md, docs/**/*.md,
                                tests/README.md, CHANGELOG.md
    docs_check.py readme ROOT [MAX_LINES]
                                README.md at most MAX_LINES (300) lines; every
                                docs/**/*.md page linked from README.md
    docs_check.py prose ROOT    no sentence about how memobs itself was written in
                                README.md, docs/**/*.md, tests/README.md,
                                CHANGELOG.md and the headers

Each prints one line per offender (FILE:LINE: what) and exits 1 when there is
one, 0 when there is none (2 for a usage error). Python 3 standard library only.
"""
import os
import re
import sys
import unicodedata
import urllib.parse

# ---------------------------------------------------------------- sources

HEADERS = ["memobs.h", "memobs_cuda.h", "memobs_python.h"]

NAME = re.compile(r"\bMEMOBS[A-Z0-9_]*\b")


def source_files(root):
    """(path, kind) of every file whose MEMOBS_* names the configuration page
    must list: the headers, the LD_PRELOAD library and its launcher, NCCL's
    profiler plugin, the Python package and its build."""
    out = []

    def add(rel, kind):
        p = os.path.join(root, rel)
        if os.path.isfile(p):
            out.append((rel, kind))

    for h in HEADERS:
        add(h, "c")
    for d in ("preload", "examples/preload", "nccl"):
        full = os.path.join(root, d)
        if os.path.isdir(full):
            for f in sorted(os.listdir(full)):
                if f.endswith((".c", ".h")):
                    add(os.path.join(d, f), "c")
                elif f == "memobs-run" or f.endswith(".sh"):
                    add(os.path.join(d, f), "sh")
    for d in ("python/memobs", "python/build_backend"):
        full = os.path.join(root, d)
        if os.path.isdir(full):
            for f in sorted(os.listdir(full)):
                if f.endswith(".c") or f.endswith(".h"):
                    add(os.path.join(d, f), "c")
                elif f.endswith(".py"):
                    add(os.path.join(d, f), "py")
    add("setup.py", "py")
    return out


def private(name):
    return "__" in name


def blank_comments(text):
    """C text with each comment's characters but newlines made blanks (so
    that line numbers stay), string and character literals kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j == -1 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j == -1 else j
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def preproc_lines(text):
    """The preprocessor lines of C text (comments blanked), continuation
    lines joined, with their line numbers."""
    lines = blank_comments(text).split("\n")
    i = 0
    while i < len(lines):
        start = i
        line = lines[i]
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + " " + lines[i]
        if re.match(r"\s*#", line):
            yield start + 1, line
        i += 1


def strip_c_comments(line):
    line = re.sub(r"/\*.*?\*/", " ", line)
    return re.sub(r"//.*", "", line)


def scan_sources(root):
    """(env, macros): {name: first 'file:line'} of the MEMOBS_* names read
    from the environment and of those tested by #if/#ifdef/#ifndef/#elif,
    less private names (MEMOBS__*, MEMOBS_CUDA__*, ...) and include guards."""
    env, macros, defined, guards, constants = {}, {}, set(), set(), set()
    texts = []
    for rel, kind in source_files(root):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        texts.append((rel, kind, text))
        if kind != "c":
            continue
        prev = None
        conds = []  # the conditions of the #if blocks open here
        for n, line in preproc_lines(text):
            m = re.match(r"\s*#\s*(if|ifdef|ifndef|elif)\b(.*)", line)
            if m:
                for name in NAME.findall(strip_c_comments(m.group(2))):
                    if not private(name):
                        macros.setdefault(name, "%s:%d" % (rel, n))
            c = re.match(r"\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)", strip_c_comments(line))
            if c:
                if c.group(1).startswith("if"):
                    conds.append(c.group(1) + " " + c.group(2).strip())
                elif c.group(1) == "endif":
                    conds = conds[:-1]
            d = re.match(r"\s*#\s*define\s+(MEMOBS[A-Z0-9_]*)\b(.*)", line)
            if d:
                defined.add(d.group(1))
                # a header's constant (MEMOBS_VERSION_MAJOR): defined under
                # no condition, so not a user's option even where an #if
                # tests it
                # (an include guard's block is no condition)
                if rel in HEADERS and all(re.match(r"ifndef\s+MEMOBS\w*_H$", x) for x in conds):
                    constants.add(d.group(1))
                # an include guard: "#ifndef X_H" then "#define X_H" alone
                if prev == d.group(1) and d.group(1).endswith("_H") and not strip_c_comments(d.group(2)).strip():
                    guards.add(d.group(1))
            g = re.match(r"\s*#\s*ifndef\s+(MEMOBS[A-Z0-9_]*)\s*$", strip_c_comments(line))
            prev = g.group(1) if g else None
    for name in guards | constants:
        macros.pop(name, None)
    for rel, kind, text in texts:
        for n, line in enumerate((blank_comments(text) if kind == "c" else text).split("\n"), 1):
            if kind == "sh":
                found = re.findall(r"\$\{?(MEMOBS[A-Z0-9_]*)", line)
            elif kind == "py":  # os.environ.get("X"), os.environ["X"], os.getenv("X"), "X" in os.environ
                found = re.findall(r"""["'](MEMOBS[A-Z0-9_]*)["']""", line) if re.search(r"environ|getenv", line) else []
            else:
                found = re.findall(r'"(MEMOBS[A-Z0-9_]*)"', line)
            for name in found:
                # a constant's name quoted in a message (MEMOBS_MAX_BYTES)
                # is not a variable: defined by a header, never tested
                if private(name) or name in constants or (name in defined and name not in macros):
                    continue
                env.setdefault(name, "%s:%d" % (rel, n))
    return env, macros


def table_rows(text):
    """(line number, table kind, first cell) of each row of the page's tables:
    kind 'env' under a header whose first cell is 'Variable', 'macro' under
    'Macro' or 'Option', else None."""
    kind = None
    in_table = False
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        f = re.match(r"\s{0,3}(`{3,}|~{3,})", line)
        if fence:
            if f and f.group(1)[0] == fence[0] and len(f.group(1)) >= len(fence):
                fence = None
            continue
        if f:
            fence = f.group(1)
            continue
        if not line.lstrip().startswith("|"):
            in_table = False
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not in_table:
            in_table = True
            head = re.sub(r"[^a-z]", "", cells[0].lower())
            kind = "env" if head.startswith("variable") else "macro" if head.startswith(("macro", "option")) else None
            continue
        if re.match(r"^:?-{3,}:?$", cells[0]):
            continue
        yield n, kind, cells[0]


def check_config(root):
    page = os.path.join(root, "docs", "configuration.md")
    if not os.path.isfile(page):
        print("docs/configuration.md: missing")
        return 1
    env, macros = scan_sources(root)
    with open(page, encoding="utf-8") as f:
        text = f.read()
    listed = {"env": {}, "macro": {}}
    for n, kind, cell in table_rows(text):
        if kind is None:
            continue
        for name in NAME.findall(cell):
            listed[kind].setdefault(name, n)
    bad = 0
    for kind, found, what in (("env", env, "environment variable"),
                              ("macro", macros, "compile-time option")):
        for name in sorted(set(found) - set(listed[kind])):
            print("%s: %s %s is not listed in docs/configuration.md (a '%s' table)"
                  % (found[name], what, name, "Variable" if kind == "env" else "Macro"))
            bad += 1
        for name in sorted(set(listed[kind]) - set(found)):
            print("docs/configuration.md:%d: %s %s is not in the sources (stale)" % (listed[kind][name], what, name))
            bad += 1
    return 1 if bad else 0


# ---------------------------------------------------------------- markdown

def doc_files(root):
    """README.md, docs/**/*.md, tests/README.md, CHANGELOG.md: those present."""
    out = [p for p in ("README.md", "tests/README.md", "CHANGELOG.md") if os.path.isfile(os.path.join(root, p))]
    docs = os.path.join(root, "docs")
    for d, subdirs, files in os.walk(docs):
        subdirs.sort()
        for f in sorted(files):
            if f.endswith(".md"):
                out.append(os.path.relpath(os.path.join(d, f), root))
    return out


def md_lines(text):
    """(line number, line, in_code) for each line; fenced code blocks marked."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        f = re.match(r"\s{0,3}(`{3,}|~{3,})", line)
        if fence:
            if f and f.group(1)[0] == fence[0] and len(f.group(1)) >= len(fence) and not line.strip()[len(f.group(1)):].strip():
                fence = None
            yield n, line, True
            continue
        if f:
            fence = f.group(1)
            yield n, line, True
            continue
        yield n, line, False


def code_spans(line, keep):
    """line with each `code span` replaced by its content (keep) or blanks."""
    out, i = [], 0
    while i < len(line):
        if line[i] == "`":
            j = i
            while j < len(line) and line[j] == "`":
                j += 1
            ticks = line[i:j]
            k = line.find(ticks, j)
            while k != -1 and k + len(ticks) < len(line) and line[k + len(ticks)] == "`":
                k = line.find(ticks, k + len(ticks) + 1)
            if k == -1:
                out.append(ticks)
                i = j
                continue
            inner = line[j:k]
            out.append(("\0" + inner.strip() + "\1") if keep else " " * (k + len(ticks) - i))
            i = k + len(ticks)
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


def heading_text(raw):
    """The text GitHub renders for a heading's markdown."""
    s = code_spans(raw, keep=True)
    s = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", s)
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)
    s = re.sub(r"\[([^\]]*)\]\[[^\]]*\]", r"\1", s)
    s = re.sub("<[^>\x00\x01]*>", "", s)
    # emphasis marks outside code: every * (the slug drops it anyway), and _ or
    # __ around a text (not inside a word: snake_case and a lone _CUR stay)
    parts = re.split("(\x00[^\x01]*\x01)", s)
    for i in range(0, len(parts), 2):
        p = parts[i].replace("*", "")
        p = re.sub(r"(?<![A-Za-z0-9_])(_{1,2})(?=\S)(.+?)(?<=\S)\1(?![A-Za-z0-9_])", r"\2", p)
        p = p.replace("\\", "")
        parts[i] = p
    return "".join(parts).replace("\0", "").replace("\1", "").strip()


def slug(text):
    """GitHub's anchor for a heading: lowercase; every character dropped but
    letters, digits, marks, '-', '_' and spaces; each space a '-'."""
    out = []
    for ch in text.lower():
        cat = unicodedata.category(ch)
        if ch in "-_ " or cat[0] in "LNM":
            out.append("-" if ch == " " else ch)
    return "".join(out)


_anchor_cache = {}


def anchors(path):
    """The anchors of a markdown file: its headings' slugs (a repeated slug
    gets -1, -2, ...) and the ids and names of its HTML elements."""
    if path in _anchor_cache:
        return _anchor_cache[path]
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    seen, out = {}, set()
    prev = ""
    for n, line, code in md_lines(text):
        if code:
            prev = ""
            continue
        h = None
        m = re.match(r"\s{0,3}(#{1,6})(\s+(.*?))?\s*$", line)
        if m:
            h = re.sub(r"\s+#+\s*$", "", m.group(3) or "")
            h = "" if re.fullmatch(r"#+", h) else h
        elif re.match(r"\s{0,3}(=+|-+)\s*$", line) and prev.strip() and not re.match(r"\s{0,3}([#>|*+-]|\d+[.)]\s)", prev):
            h = prev.strip()
        if h is not None:
            base = slug(heading_text(h))
            s = base
            if base in seen:
                while True:
                    seen[base] += 1
                    s = "%s-%d" % (base, seen[base])
                    if s not in seen:
                        break
            seen.setdefault(s, 0)
            out.add(s)
            prev = ""
        else:
            prev = line
        for a in re.findall(r"""<[a-zA-Z][^>]*\b(?:id|name)\s*=\s*["']([^"']+)["']""", line):
            out.add(a)
    _anchor_cache[path] = out
    return out


LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]*)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTMLREF = re.compile(r"""<(?:a|img|source)\b[^>]*?\b(?:href|src)\s*=\s*["']([^"']*)["']""", re.I)


def links_of(text):
    """(line number, target) of every link, image, reference definition and
    HTML href/src outside code; a link's text may run over several lines."""
    lines = [("" if code else code_spans(line, keep=False)) for _, line, code in md_lines(text)]
    flat = "\n".join(lines)
    found = []
    for m in LINK.finditer(flat):
        found.append((flat.count("\n", 0, m.start()) + 1, m.group(1).strip("<>")))
    for m in HTMLREF.finditer(flat):
        found.append((flat.count("\n", 0, m.start()) + 1, m.group(1)))
    for n, line in enumerate(lines, 1):
        m = REFDEF.match(line)
        if m:
            found.append((n, m.group(1).strip("<>")))
    return sorted(found)


def resolve(root, src, target):
    """(path relative to root or None, anchor or None, error or None) for a
    link target found in file src; path None for an external link."""
    if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
        return None, None, None
    path, _, anchor = target.partition("#")
    path = urllib.parse.unquote(path.split("?")[0])
    if not path:
        return src, anchor or None, None
    base = root if path.startswith("/") else os.path.join(root, os.path.dirname(src))
    full = os.path.normpath(os.path.join(base, path.lstrip("/")))
    rel = os.path.relpath(full, root)
    if rel == ".." or rel.startswith(".." + os.sep):
        return None, None, "points outside the repository"
    return rel, anchor or None, None


def check_links(root):
    bad = 0
    for src in doc_files(root):
        with open(os.path.join(root, src), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for n, target in links_of(text):
            if not target:
                print("%s:%d: empty link" % (src, n))
                bad += 1
                continue
            rel, anchor, err = resolve(root, src, target)
            if err:
                print("%s:%d: %s %s" % (src, n, target, err))
                bad += 1
                continue
            if rel is None:
                continue
            full = os.path.join(root, rel)
            if not os.path.exists(full):
                print("%s:%d: %s: no such file (%s)" % (src, n, target, rel))
                bad += 1
                continue
            if anchor and rel.endswith(".md") and os.path.isfile(full):
                if urllib.parse.unquote(anchor) not in anchors(full):
                    print("%s:%d: %s: no anchor #%s in %s" % (src, n, target, anchor, rel))
                    bad += 1
    return 1 if bad else 0


def check_readme(root, max_lines=300):
    bad = 0
    readme = os.path.join(root, "README.md")
    if not os.path.isfile(readme):
        print("README.md: missing")
        return 1
    with open(readme, encoding="utf-8", errors="replace") as f:
        text = f.read()
    n = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if n > max_lines:
        print("README.md: %d lines, more than %d" % (n, max_lines))
        bad += 1
    linked = set()
    for _, target in links_of(text):
        rel, _, err = resolve(root, "README.md", target)
        if rel and not err:
            linked.add(os.path.normpath(rel))
    for page in doc_files(root):
        if page.startswith("docs" + os.sep) and os.path.normpath(page) not in linked:
            print("%s: not linked from README.md" % page)
            bad += 1
    return 1 if bad else 0


# ---------------------------------------------------------------- prose

# Telltale phrases of text about how memobs itself was written (by whom, in
# which session, from which issue or notes) rather than about memobs, its
# users, its peers and its tests. Case-insensitive, whole words.
TELLTALES = [
    r"sessions?",
    r"seeds?|seed's",
    r"(?:was|were|is|are|be|been|being) lent",
    r"no GPU was",
    r"the issues? (?:that|which|who)",
    r"the issue's",
    r"issue #?\d+",
    r"review rounds?",
    r"rounds? of review",
    r"the lead",
    r"(?:config|docs|names|tests|layout) helper",
    r"helper (?:session|agent)s?",
    r"design card",
    r"the brief",
    r"worktrees?",
    r"was written from",
    r"(?:AI|LLM|coding) agents?",
]
TELLTALE = re.compile(r"\b(?:%s)\b" % "|".join(TELLTALES), re.I)


def check_prose(root):
    bad = 0
    files = doc_files(root) + [h for h in HEADERS if os.path.isfile(os.path.join(root, h))]
    for rel in files:
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                found = [m.group(0) for m in TELLTALE.finditer(line)]
                if found:
                    print("%s:%d: %s: %s" % (rel, n, ", ".join('"%s"' % f for f in found), line.strip()[:160]))
                    bad += 1
    return 1 if bad else 0


def main(argv):
    if len(argv) < 3 or argv[1] not in ("config", "links", "readme", "prose"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = argv[2]
    if argv[1] == "config":
        return check_config(root)
    if argv[1] == "links":
        return check_links(root)
    if argv[1] == "readme":
        return check_readme(root, int(argv[3]) if len(argv) > 3 else 300)
    return check_prose(root)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
