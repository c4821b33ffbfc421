"""Checks of tests/serving/test_crash.sh on what the crash writer wrote.

  check.py run SECONDS OUT ERR CMD...     how CMD ended (its stdout to OUT, stderr to ERR):
                                           "signal N", "exit N" or "timeout"
  check.py json CRASH REF EXPECT SIG NAME [PID]
                                           the crash's JSON summary against the normal one
                                           (PID: a forked child's, in place of the reference's)
  check.py text CRASH REF SIG NAME         the crash's text summary against the normal one
  check.py prom CRASH REF SIG NAME [PERIODIC]
                                           the crash's Prometheus file against the normal
                                           exposition, its counters against a periodic write
  check.py audit MEMOBS_H                  what the crash writer calls, transitively

Each prints what is wrong as "    # " lines and exits 1 when anything is.
"""
import json
import re
import subprocess
import sys

errs = []


def err(msg):
    errs.append(msg)


def done():
    for e in errs[:30]:
        print("    # " + e)
    sys.exit(1 if errs else 0)


def run(argv):
    limit = float(argv[0])
    try:
        with open(argv[1], "wb") as out, open(argv[2], "wb") as er:
            r = subprocess.run(argv[3:], timeout=limit, stdout=out, stderr=er)
    except subprocess.TimeoutExpired:
        print("timeout")
        return
    print("signal %d" % -r.returncode if r.returncode < 0 else "exit %d" % r.returncode)


def walk(want, got, path):
    for k, v in want.items():
        g = got.get(k) if isinstance(got, dict) else None
        if isinstance(v, dict):
            walk(v, g, path + k + ".")
        elif g != v:
            err("%s%s: expected %s, got %s" % (path, k, v, g))


def check_json(crash, ref, expect, sig, name, pid=None):
    try:
        c = json.load(open(crash))
    except Exception as e:
        return err("%s is not JSON: %s" % (crash, e))
    r = json.load(open(ref))
    want = {"signal": int(sig), "name": name or None, "left_out": ["host_memory"]}
    if c.get("crash") != want:
        err("crash: expected %s, got %s" % (want, c.get("crash")))
    if c.get("partial") is not True:
        err("partial: expected true, got %s" % c.get("partial"))
    if list(c)[:3] != ["memobs_version", "crash", "partial"]:
        err("first members: %s" % list(c)[:3])
    if not c.get("window_ns", 0) >= r.get("window_ns", 0):
        err("window_ns %s below the reference's %s" % (c.get("window_ns"), r.get("window_ns")))
    for k in ("crash", "partial", "window_ns"):
        c.pop(k, None)
    if pid is not None:
        if c.get("identity", {}).get("pid") != int(pid):
            err("identity.pid: expected %s, got %s" % (pid, c.get("identity", {}).get("pid")))
        c.get("identity", {}).pop("pid", None)
        r.get("identity", {}).pop("pid", None)
    r.pop("window_ns", None)
    r.pop("host_memory", None)
    if list(c) != list(r):
        err("members: crash %s, normal %s" % (list(c), list(r)))
    for k in r:
        if c.get(k) != r[k]:
            err("%s: crash %s, normal summary %s" % (k, json.dumps(c.get(k))[:300], json.dumps(r[k])[:300]))
    walk(json.load(open(expect)), c, "")


def check_text(crash, ref, sig, name):
    c = open(crash).read().split("\n")
    r = open(ref).read().split("\n")
    first = "== memobs crash summary == written at a crash (signal %s%s) by its signal handler; host memory left out" % (
        sig, ", " + name if name else "")
    if c[0] != first:
        err("first line: %r, want %r" % (c[0], first))
    window = re.compile(r"  window \S+ \S+")
    c = [window.sub("  window W", x) for x in c[1:]]
    r = [window.sub("  window W", x) for x in r]
    if c != r:
        for i in range(max(len(c), len(r))):
            a = c[i] if i < len(c) else None
            b = r[i] if i < len(r) else None
            if a != b:
                err("line %d: crash %r, normal %r" % (i + 2, a, b))


SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$")


def samples(text):
    types, out = {}, {}
    for line in text.split("\n"):
        if line.startswith("# TYPE "):
            _, _, n, t = line.split(" ", 3)
            types[n] = t
        elif line and not line.startswith("#"):
            m = SAMPLE.match(line)
            if not m:
                err("not a sample: %r" % line)
                continue
            out[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return types, out


# The container's families: read from the cgroup when the exposition is
# written, left out at a crash (as the sampler's host memory is).
CONTAINER = re.compile(r"^(# (HELP|TYPE) )?(memobs_cgroup_memory_\w+|memobs_process_rss_shmem_bytes)[ {]")


def check_prom(crash, ref, sig, name, periodic=None):
    c = open(crash).read()
    r = "\n".join(l for l in open(ref).read().split("\n") if not CONTAINER.match(l))
    if not c.startswith(r):
        cl, rl = c.split("\n"), r.split("\n")
        for i, (a, b) in enumerate(zip(cl, rl)):
            if a != b:
                err("line %d: crash %r, normal exposition %r" % (i + 1, a, b))
                break
        else:
            err("the crash's file is shorter than the normal exposition (%d, %d bytes)" % (len(c), len(r)))
        return
    tail = c[len(r):].split("\n")
    want = ["# HELP memobs_crash_signal The signal the process crashed with: this file was written by memobs' "
            "crash handler, and the process is gone.", "# TYPE memobs_crash_signal gauge"]
    if tail[:2] != want or len(tail) != 4 or tail[3] != "":
        return err("after the normal exposition: %r" % tail)
    m = SAMPLE.match(tail[2])
    if not m or m.group(1) != "memobs_crash_signal" or not m.group(2).endswith(',signal="%s"}' % (name or "other")) \
            or m.group(3) != str(sig):
        err("crash family sample: %r" % tail[2])
    if periodic:
        pt, ps = samples(open(periodic).read())
        ct, cs = samples(c)
        higher = 0
        n = 0
        for (nm, lab), v in ps.items():
            fam = re.sub(r"_(bucket|sum|count)$", "", nm) if nm not in pt else nm
            if pt.get(fam) not in ("counter", "histogram"):
                continue
            n += 1
            if (nm, lab) not in cs:
                err("series %s%s of the periodic write is gone" % (nm, lab))
            elif cs[(nm, lab)] < v:
                err("%s%s went down: periodic %s, crash %s" % (nm, lab, v, cs[(nm, lab)]))
            elif cs[(nm, lab)] > v:
                higher += 1
        if n < 50:
            err("only %d counter series in the periodic write" % n)
        if higher == 0:
            err("no counter above the periodic write's (the records made after it are missing)")


# The crash writer's calls, transitively: every function it can reach in
# memobs.h, and every call out of memobs.h, which must be async-signal-safe
# (POSIX.1-2008 TC2's list) or a compiler builtin.
AS_SAFE = {"open", "write", "close", "rename", "unlink", "poll", "getpid", "clock_gettime", "memcpy", "memset",
           "strlen", "strcmp", "strstr", "pthread_self", "pthread_equal",
           # the destination's decision, shared with the exit writers (memobs__whole_open)
           "stat", "fstat", "fcntl", "uname", "strcpy", "strncmp", "strrchr",
           # memobs.h's private names (__asm__ labels) of lstat, readlink, linkat, fchmod, fchown, geteuid
           "memobs__lstat", "memobs__readlink", "memobs__linkat", "memobs__fchmod", "memobs__fchown", "memobs__geteuid"}
# pthread_equal is not on the list; glibc's is `return a == b`.
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "do", "else", "case", "defined"}
FORBIDDEN = re.compile(r"\b(malloc|calloc|realloc|free|MEMOBS_MALLOC|MEMOBS_FREE|printf|fprintf|snprintf|vsnprintf|"
                       r"sprintf|fopen|fclose|fwrite|fputs|fputc|fflush|pthread_mutex_\w+|pthread_once|"
                       r"memobs__spin_lock|memobs__log|memobs__warn_once|memobs_init|getenv|strerror|"
                       r"memobs_get_summary|memobs__expand_path|memobs_get_identity|sched_yield|"
                       r"memobs__figs_get|memobs__leak_write|memobs__out_file|memobs__out_fwrite|memobs__prom_gen)\s*\(")


TOKENS = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)


def strip(src):
    """Comments, strings and character constants out (newlines kept)."""
    def blank(m):
        s = m.group(0)
        return "\n" * s.count("\n") if s.startswith("/") else s[0] * 2
    return TOKENS.sub(blank, src)


def audit(path):
    raw = open(path).read()
    start = raw.index("/* Private: crash writer")
    end = raw.index("/* Private: stops and signals")
    section = strip(raw[start:end])
    for m in FORBIDDEN.finditer(section):
        err("the crash writer's section calls %s" % m.group(1))
    src = strip(raw)
    lines = src.split("\n")
    macros, funcs = {}, {}
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"\s*#\s*define\s+(\w+)\(", line)
        if m:
            body = line
            while body.endswith("\\") and i + 1 < len(lines):
                i += 1
                body = body[:-1] + " " + lines[i]
            macros[m.group(1)] = body
            i += 1
            continue
        # a definition: starts at column 0, "name(" before the first "{" and no ";" before it
        if line and not line[0].isspace() and line[0] not in "#}" and "(" in line:
            j, head = i, line
            while "{" not in head and ";" not in head and j + 1 < len(lines) and j - i < 8:
                j += 1
                head += " " + lines[j]
            if "{" in head and ";" not in head.split("{")[0] and "=" not in head.split("(")[0]:
                names = re.findall(r"(\w+)\s*\(", head.split("{")[0])
                names = [n for n in names if n not in ("__attribute__", "__asm__")]
                if names:
                    k = j
                    while k < len(lines) and lines[k] != "}" and not (k == j and head.rstrip().endswith("}")):
                        k += 1
                    funcs.setdefault(names[0], []).append("\n".join(lines[j:k + 1]).split("{", 1)[-1])
                    i = k + 1
                    continue
        i += 1
    seen, external, todo = set(), set(), ["memobs__crash_write"]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        bodies = funcs.get(f) or ([macros[f]] if f in macros else [])
        for body in bodies:
            if f in macros:
                body = body.split(")", 1)[1]
            for n in re.findall(r"\b([A-Za-z_]\w*)\s*\(", body):
                if n in KEYWORDS or n.startswith("__atomic_") or n.startswith("__builtin_") or n.startswith("va_"):
                    continue
                if n in funcs or n in macros:
                    todo.append(n)
                elif n not in ("offsetof", "S_ISFIFO", "S_ISREG", "S_ISDIR"):
                    external.add(n)
            # functions passed by name (the generators) are reached too
            for n in re.findall(r"\b(memobs_\w+)\b", body):
                if n in funcs and n not in seen:
                    todo.append(n)
    # types and fields followed by "(" are not calls: drop what is declared as a type
    external -= {"uint64_t", "uint32_t", "int64_t", "int32_t", "size_t", "uintptr_t", "char", "int", "unsigned",
                 "long", "double", "void", "const"}
    # o->drain(...): the sink's drain, a function pointer; the drains the
    # reached code names are followed above (memobs__crash_drain), and the
    # FILE's (memobs__out_fwrite) is named only where a FILE sink is made,
    # which the writer does not reach
    for n in sorted(external - AS_SAFE - {"memobs__clock_gettime", "drain"}):
        err("reaches %s, which is not on the async-signal-safe list" % n)
    for n in sorted(seen):
        if FORBIDDEN.search(n + "("):
            err("reaches %s" % n)
    if not {"memobs__crash_gather", "memobs__hist_read", "memobs__crash_drain", "memobs__summary_read",
            "memobs__summary_text", "memobs__summary_json", "memobs__prom_write"} <= seen:
        err("the audit's parse missed the writer's functions: %s" % sorted(seen))
    print("    # %d functions reached; calls out of memobs.h: %s" % (len(seen), " ".join(sorted(external))))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "run":
        run(args)
        sys.exit(0)
    {"json": check_json, "text": check_text, "prom": check_prom, "audit": audit}[cmd](*args)
    done()
