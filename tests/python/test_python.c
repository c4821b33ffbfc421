/* memobs_python.h tests: an embedded CPython runs Python files written to
   a scratch directory (so every path and line number is known) that call
   back into C through a built-in module "mtest". Modes (argv[1]) run in
   fresh processes where the environment or Py_Initialize order matters. */
#define MEMOBS_IMPLEMENTATION
#include "memobs_python.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef TEST_SUITE
#define TEST_SUITE "python"
#endif
#include "../check.h"
#include "../memobs_test.h"

static char dir[256]; /* scratch tree: DIR/proj/model_desc/net.py, DIR/lib/site-packages/... */
static memobs_frame_t got[64];
static int ngot;
static char text[8192];

/* ---- the built-in module the Python files call ---------------------- */

static int cap_max = 64; /* buffer size the next capture gets */
static PyObject *mt_capture(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    ngot = memobs_py_capture(got, cap_max);
    memobs_py_format(got, ngot, text, sizeof text);
    return PyLong_FromLong(ngot);
}
/* Captures with the GIL released (as a C extension inside
   Py_BEGIN_ALLOW_THREADS would). */
static PyObject *mt_capture_nogil(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    Py_BEGIN_ALLOW_THREADS
    ngot = memobs_py_capture(got, 64);
    Py_END_ALLOW_THREADS
    memobs_py_format(got, ngot, text, sizeof text);
    return PyLong_FromLong(ngot);
}
/* track(addr, bytes): a tracked host allocation at a fake address. */
static PyObject *mt_track(PyObject *self, PyObject *args) {
    unsigned long long a, n;
    (void)self;
    if (!PyArg_ParseTuple(args, "KK", &a, &n)) return NULL;
    memobs_track_alloc_full((const void *)(uintptr_t)a, n, MEMOBS_MEM_HOST, -1, NULL, NULL, 0);
    Py_RETURN_NONE;
}
static PyObject *mt_boxed(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    memobs_py_stack_text(text, sizeof text, 1);
    Py_RETURN_NONE;
}
/* An engine's allocator that holds its own lock while it records, as
   memobs_cuda.h's wrappers do: track_locked(addr) records a host block
   under the lock; free_locked(addr) takes the lock, or, when it is held
   already (a garbage collection started inside the capture of
   track_locked ran a finalizer that frees), counts the re-entry (a real
   engine would deadlock there) and frees without it. METH_FASTCALL: no
   argument tuple, so the call itself allocates no object the garbage
   collector counts. */
static pthread_mutex_t engine_lock = PTHREAD_MUTEX_INITIALIZER;
static int reentered, freed_locked;
static PyObject *mt_track_locked(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    unsigned long long a;
    (void)self;
    if (n != 1 || (a = PyLong_AsUnsignedLongLong(args[0])) == (unsigned long long)-1) return NULL;
    pthread_mutex_lock(&engine_lock);
    memobs_track_alloc_full((const void *)(uintptr_t)a, 64, MEMOBS_MEM_HOST, -1, NULL, NULL, 0);
    ngot = memobs_py_capture(got, 64); /* what the tracker's provider saw, for the frame checks */
    pthread_mutex_unlock(&engine_lock);
    Py_RETURN_NONE;
}
static PyObject *mt_free_locked(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    unsigned long long a;
    int locked;
    (void)self;
    if (n != 1 || (a = PyLong_AsUnsignedLongLong(args[0])) == (unsigned long long)-1) return NULL;
    locked = pthread_mutex_trylock(&engine_lock) == 0;
    if (!locked) reentered++;
    memobs_track_free((const void *)(uintptr_t)a);
    freed_locked++;
    if (locked) pthread_mutex_unlock(&engine_lock);
    Py_RETURN_NONE;
}
#define MT_FAST(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef mt_methods[] = {{"capture", mt_capture, METH_VARARGS, NULL},
                                   {"track_locked", MT_FAST(mt_track_locked), METH_FASTCALL, NULL},
                                   {"free_locked", MT_FAST(mt_free_locked), METH_FASTCALL, NULL},
                                   {"capture_nogil", mt_capture_nogil, METH_VARARGS, NULL},
                                   {"track", mt_track, METH_VARARGS, NULL},
                                   {"boxed", mt_boxed, METH_VARARGS, NULL},
                                   {NULL, NULL, 0, NULL}};
static struct PyModuleDef mt_def = {PyModuleDef_HEAD_INIT, "mtest", NULL, -1, mt_methods, NULL, NULL, NULL, NULL};
static PyObject *mt_init(void) { return PyModule_Create(&mt_def); }

/* ---- the Python files ------------------------------------------------ */

static void write_file(const char *rel, const char *body) {
    char path[512], *p;
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    for (p = path + strlen(dir) + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = 0;
        mkdir(path, 0755);
        *p = '/';
    }
    f = fopen(path, "w");
    if (!f) { perror(path); exit(2); }
    fputs(body, f);
    fclose(f);
}

/* Line numbers below are the ones these files have. */
static const char net_py[] =
    "import mtest\n"                                   /* 1 */
    "from torch.nn.modules import module\n"            /* 2 */
    "def inner(k):\n"                                  /* 3 */
    "    return mtest.capture()\n"                     /* 4 */
    "def mid(k):\n"                                    /* 5 */
    "    return inner(k)\n"                            /* 6 */
    "def outer(k):\n"                                  /* 7 */
    "    return mid(k)\n"                              /* 8 */
    "def deep(n):\n"                                   /* 9 */
    "    return deep(n - 1) if n else inner(0)\n"      /* 10 */
    "def via_module(k):\n"                             /* 11 */
    "    return module.call_impl(inner, k)\n"          /* 12 */
    "def alloc_a(addr):\n"                             /* 13 */
    "    mtest.track(addr, 1000)\n"                    /* 14 */
    "def alloc_b(addr):\n"                             /* 15 */
    "    mtest.track(addr, 3000)\n"                    /* 16 */
    "def long_line(k):\n"                              /* 17 */
    "    return mtest.capture() if k >= 0 else mtest.capture_nogil() + 1234567890 * 1234567890\n" /* 18 */
    "def nogil(k):\n"                                  /* 19 */
    "    return mtest.capture_nogil()\n"               /* 20 */
    "def boxed(k):\n"                                  /* 21 */
    "    return mtest.boxed()\n"                       /* 22 */
    "def raises(k):\n"                                 /* 23 */
    "    try:\n"                                       /* 24 */
    "        raise KeyError('kept')\n"                 /* 25 */
    "    except KeyError:\n"                           /* 26 */
    "        return mtest.capture()\n"                 /* 27 */
    "class Garbage:\n"                                 /* 28 */
    "    def __init__(self, addr):\n"                  /* 29 */
    "        self.addr, self.me = addr, self\n"        /* 30 */
    "    def __del__(self):\n"                         /* 31 */
    "        mtest.free_locked(self.addr)\n"           /* 32 */
    "def gc_alloc(addr):\n"                            /* 33 */
    "    Garbage(addr + 8)\n"                          /* 34 */
    "    return gc_mid(addr)\n"                        /* 35 */
    "def gc_mid(addr):\n"                              /* 36 */
    "    return mtest.track_locked(addr)\n";           /* 37 */
static const char module_py[] =
    "def call_impl(fn, k):\n"                          /* 1 */
    "    return fn(k)\n";                              /* 2 */
static const char util_py[] =
    "import mtest\n"                                   /* 1 */
    "def helper():\n"                                  /* 2 */
    "    return mtest.capture()\n";                    /* 3 */

static void make_tree(void) {
    snprintf(dir, sizeof dir, "%s/memobs_py_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) { perror("mkdtemp"); exit(2); }
    write_file("proj/model_desc/net.py", net_py);
    write_file("lib/site-packages/torch/__init__.py", "");
    write_file("lib/site-packages/torch/nn/__init__.py", "");
    write_file("lib/site-packages/torch/nn/modules/__init__.py", "");
    write_file("lib/site-packages/torch/nn/modules/module.py", module_py);
    write_file("lib/site-packages/pkg/__init__.py", "");
    write_file("lib/site-packages/pkg/util.py", util_py);
}

static void start_python(void) {
    char code[1024];
    if (PyImport_AppendInittab("mtest", mt_init) != 0 && !Py_IsInitialized()) { puts("inittab"); exit(2); }
    Py_InitializeEx(0);
    snprintf(code, sizeof code,
             "import sys\nsys.dont_write_bytecode = True\nsys.path[:0] = ['%s/proj/model_desc', '%s/lib/site-packages']\n"
             "import net, pkg.util\n",
             dir, dir);
    if (PyRun_SimpleString(code) != 0) { puts("    # set-up failed"); exit(2); }
}

/* Runs a statement (in __main__, a "<string>" frame outside model_desc). */
static int py(const char *stmt) { return PyRun_SimpleString(stmt); }

static const memobs_py_config_t *rules(const char *priority, const char *skip, const char *root, int max, int head,
                                       int tail, int width) {
    static memobs_py_config_t c;
    memobs_py_default_config(&c);
    c.priority = priority;
    c.skip = skip;
    c.root = root;
    c.max_frames = max;
    c.head = head;
    c.tail = tail;
    c.source_width = width;
    return &c;
}
static void defaults(void) { memobs_py_configure(rules("model_desc", "torch/nn/modules/module.py", "", 5, 2, 2, 50)); }

/* "name:line" of a captured Python frame, or "<kind>". */
static const char *fr_name(int i) {
    static char b[8][128];
    char *s = b[i & 7];
    if (i >= ngot) return "<none>";
    if (got[i].aux == MEMOBS_PY_ELIDED) snprintf(s, 128, "...%u", (unsigned)got[i].line);
    else if (got[i].aux == MEMOBS_PY_NONE) snprintf(s, 128, "<none %u>", (unsigned)got[i].line);
    else if (got[i].aux != MEMOBS_PY_FRAME || got[i].pc < 1) snprintf(s, 128, "<full>");
    else snprintf(s, 128, "%s:%u", memobs_py__g.codes[got[i].pc - 1].name, (unsigned)got[i].line);
    return s;
}

/* ---- tests ------------------------------------------------------------ */

static void captures_known_chain(void) {
    memobs_py_configure(rules("model_desc", "torch/nn/modules/module.py", "proj", 5, 2, 2, 50));
    CHECK(py("net.outer(0)") == 0);
    CHECK_U64(3, ngot);
    CHECK_STR("outer:8", fr_name(0));
    CHECK_STR("mid:6", fr_name(1));
    CHECK_STR("inner:4", fr_name(2));
    CHECK_STR("model_desc/net.py:8 in outer\n"
              "└─ return mid(k)\n"
              "model_desc/net.py:6 in mid\n"
              "└─ return inner(k)\n"
              "model_desc/net.py:4 in inner\n"
              "└─ return mtest.capture()",
              text);
    defaults();
}

static void without_priority_keeps_whole_stack(void) {
    memobs_py_configure(rules("", "torch/nn/modules/module.py", "proj", 8, 2, 2, 50));
    CHECK(py("net.outer(0)") == 0);
    CHECK_U64(4, ngot);
    CHECK_STR("<module>:1", fr_name(0)); /* the "<string>" statement */
    CHECK_STR("inner:4", fr_name(3));
    CHECK_HAS(text, "<string>:1 in <module>\nmodel_desc/");
    defaults();
}

static void skipped_paths_are_dropped(void) {
    defaults();
    CHECK(py("net.via_module(0)") == 0);
    CHECK_U64(2, ngot);
    CHECK_STR("via_module:12", fr_name(0));
    CHECK_STR("inner:4", fr_name(1));
    CHECK(strstr(text, "module.py") == NULL);
    /* with no skip rule the torch frame shows, its path after site-packages/ */
    memobs_py_configure(rules("model_desc", "", "", 5, 2, 2, 50));
    CHECK(py("net.via_module(0)") == 0);
    CHECK_U64(3, ngot);
    CHECK_STR("call_impl:2", fr_name(1));
    CHECK_HAS(text, "\ntorch/nn/modules/module.py:2 in call_impl\n└─ return fn(k)\n");
    defaults();
}

static void head_and_tail(void) {
    defaults();
    CHECK(py("net.deep(7)") == 0); /* deep x8, inner: 9 frames */
    CHECK_U64(5, ngot);
    CHECK_STR("deep:10", fr_name(0));
    CHECK_STR("deep:10", fr_name(1));
    CHECK_STR("...5", fr_name(2));
    CHECK_STR("deep:10", fr_name(3));
    CHECK_STR("inner:4", fr_name(4));
    CHECK_HAS(text, "\n... 5 frames ...\n");
    /* 5 frames fit exactly: no elision */
    CHECK(py("net.deep(3)") == 0);
    CHECK_U64(5, ngot);
    CHECK_STR("deep:10", fr_name(2));
    /* other numbers */
    memobs_py_configure(rules("model_desc", "", "", 4, 1, 2, 50));
    CHECK(py("net.deep(7)") == 0);
    CHECK_U64(4, ngot);
    CHECK_STR("deep:10", fr_name(0));
    CHECK_STR("...6", fr_name(1));
    CHECK_STR("deep:10", fr_name(2));
    CHECK_STR("inner:4", fr_name(3));
    /* a capture buffer smaller than the rules: the buffer wins */
    defaults();
    cap_max = 3;
    CHECK(py("net.deep(7)") == 0);
    cap_max = 64;
    CHECK_U64(3, ngot);
    CHECK_STR("deep:10", fr_name(0));
    CHECK_STR("...7", fr_name(1));
    CHECK_STR("inner:4", fr_name(2));
    defaults();
}

static void path_simplification(void) {
    char want[600];
    memobs_py_configure(rules("", "", "", 8, 2, 2, 50));
    CHECK(py("pkg.util.helper()") == 0);
    CHECK_HAS(text, "\npkg/util.py:3 in helper\n└─ return mtest.capture()");
    /* a root marker (a directory name) */
    memobs_py_configure(rules("model_desc", "", "proj", 5, 2, 2, 50));
    CHECK(py("net.outer(0)") == 0);
    CHECK_HAS(text, "model_desc/net.py:8 in outer\n");
    CHECK(strncmp(text, "model_desc/net.py", 17) == 0);
    /* a root prefix (an absolute path) */
    snprintf(want, sizeof want, "%s/proj/model_desc", dir);
    memobs_py_configure(rules("model_desc", "", want, 5, 2, 2, 50));
    CHECK(py("net.outer(0)") == 0);
    CHECK(strncmp(text, "net.py:8 in outer\n", 18) == 0);
    /* no root, no site-packages: the whole path */
    defaults();
    CHECK(py("net.outer(0)") == 0);
    snprintf(want, sizeof want, "%s/proj/model_desc/net.py:8 in outer\n", dir);
    CHECK(strncmp(text, want, strlen(want)) == 0);
    if (strncmp(text, want, strlen(want)) != 0) printf("    # want %s    # got %s\n", want, text);
}

static void source_lines(void) {
    memobs_py_configure(rules("model_desc", "", "proj", 5, 2, 2, 50));
    CHECK(py("net.long_line(0)") == 0);
    /* 88 characters stripped: 47 kept, then "..." (50 columns) */
    CHECK_HAS(text, "\n└─ return mtest.capture() if k >= 0 else mtest.cap...");
    memobs_py_configure(rules("model_desc", "", "proj", 5, 2, 2, 20));
    CHECK(py("net.long_line(0)") == 0);
    CHECK_HAS(text, "\n└─ return mtest.capt...");
    memobs_py_configure(rules("model_desc", "", "proj", 5, 2, 2, 0));
    CHECK(py("net.long_line(0)") == 0);
    CHECK_STR("model_desc/net.py:18 in long_line", text);
    defaults();
}

static void boxed_text(void) {
    char want[1024];
    memobs_py_configure(rules("model_desc", "", "proj", 5, 2, 2, 50));
    CHECK(py("net.boxed(0)") == 0);
    snprintf(want, sizeof want,
             "  ┌─ Python Stack Trace ────────────────────────────────────────\n"
             "  │    model_desc/net.py:22 in boxed\n"
             "  │    └─ return mtest.boxed()\n"
             "  └──────────────────────────────────────────────────────────────");
    CHECK_STR(want, text);
    defaults();
}

static void interning_and_report(void) {
    memobs_alloc_info_t a[8];
    size_t n, i;
    uint32_t ta = MEMOBS_NO_TRACE, ta2 = MEMOBS_NO_TRACE, tb = MEMOBS_NO_TRACE;
    FILE *f;
    char *out;
    memobs_py_configure(rules("model_desc", "", "proj", 5, 2, 2, 50));
    CHECK(py("net.alloc_a(0x1000); net.alloc_a(0x2000); net.alloc_b(0x3000)") == 0);
    n = memobs_get_allocations(a, 8);
    CHECK_U64(3, n);
    for (i = 0; i < n && i < 8; i++) {
        if (a[i].ptr == (void *)0x1000) ta = a[i].trace;
        if (a[i].ptr == (void *)0x2000) ta2 = a[i].trace;
        if (a[i].ptr == (void *)0x3000) tb = a[i].trace;
    }
    CHECK(ta != MEMOBS_NO_TRACE);
    CHECK_U64(ta, ta2); /* same stack, one trace */
    CHECK(tb != ta);
    f = tmpfile();
    memobs_print_allocations(f);
    out = read_file(f);
    fclose(f);
    CHECK_HAS(out, "|   ┌─ Python Stack Trace ─────");
    CHECK_HAS(out, "|   │    model_desc/net.py:16 in alloc_b");
    CHECK_HAS(out, "|   │    └─ mtest.track(addr, 3000)");
    CHECK_HAS(out, "|   │    model_desc/net.py:14 in alloc_a");
    CHECK_HAS(out, "[Multi-Line Stack]");
    free(out);
    memobs_track_free((void *)0x1000);
    memobs_track_free((void *)0x2000);
    memobs_track_free((void *)0x3000);
    defaults();
}

static void line_cache(void) {
    memobs_py_stats_t s0, s1;
    defaults();
    CHECK(py("net.outer(0)") == 0);
    memobs_py_get_stats(&s0);
    CHECK(py("for _ in range(100): net.outer(0)") == 0);
    memobs_py_get_stats(&s1);
    /* the loop's own frame (line 1 of "<string>") is new; nothing else is */
    CHECK(s1.line_misses - s0.line_misses <= 1);
    CHECK_U64(s0.captures + 100, s1.captures);
    CHECK_U64(s0.codes + 1, s1.codes); /* the new "<string>" code object */
}

static void exception_kept(void) {
    PyObject *t, *v, *tb;
    defaults();
    /* an exception being handled (sys.exc_info) stays as it was */
    CHECK(py("r = net.raises(0)\nimport sys\nassert sys.exc_info()[0] is None") == 0);
    CHECK_STR("raises:27", fr_name(ngot - 1));
    /* a pending exception set by C code stays set */
    PyErr_SetString(PyExc_ValueError, "pending");
    ngot = memobs_py_capture(got, 64);
    CHECK(PyErr_Occurred() == PyExc_ValueError);
    PyErr_Fetch(&t, &v, &tb);
    CHECK(v && PyUnicode_Check(v) ? strcmp(PyUnicode_AsUTF8(v), "pending") == 0 : v != NULL);
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
    CHECK(!PyErr_Occurred());
}

static void *c_thread(void *arg) {
    (void)arg;
    ngot = memobs_py_capture(got, 64);
    memobs_py_format(got, ngot, text, sizeof text);
    return NULL;
}

static void threads_without_gil(void) {
    pthread_t t;
    memobs_py_stats_t s0, s1;
    defaults();
    memobs_py_get_stats(&s0);
    /* a Python thread that released the GIL */
    CHECK(py("net.nogil(0)") == 0);
    CHECK_U64(1, ngot);
    CHECK_U64(MEMOBS_PY_NONE, got[0].aux);
    CHECK_U64(MEMOBS_PY_NO_GIL, got[0].line);
    CHECK_STR("no Python stack (thread does not hold the GIL)", text);
    /* a thread Python never saw, while the main thread holds the GIL: no
       wait, no crash */
    pthread_create(&t, NULL, c_thread, NULL);
    pthread_join(t, NULL);
    CHECK_U64(1, ngot);
    CHECK_U64(MEMOBS_PY_NO_GIL, got[0].line);
    memobs_py_get_stats(&s1);
    CHECK_U64(s0.no_stack[MEMOBS_PY_NO_GIL] + 2, s1.no_stack[MEMOBS_PY_NO_GIL]);
    CHECK_U64(0, s1.gil_taken - s0.gil_taken);
    /* take_gil: the C thread takes it (the main thread lets it go) and has
       no Python frame */
    {
        memobs_py_config_t c = *rules("model_desc", "", "", 5, 2, 2, 50);
        c.take_gil = 1;
        CHECK_U64(MEMOBS_OK, memobs_py_configure(&c));
    }
    Py_BEGIN_ALLOW_THREADS
    pthread_create(&t, NULL, c_thread, NULL);
    pthread_join(t, NULL);
    Py_END_ALLOW_THREADS
    CHECK_U64(1, ngot);
    CHECK_U64(MEMOBS_PY_NO_FRAME, got[0].line);
    CHECK_STR("no Python stack (thread runs no Python code)", text);
    /* take_gil and a Python thread that released it: its own stack */
    CHECK(py("net.nogil(0)") == 0);
    CHECK_STR("nogil:20", fr_name(ngot - 1));
    memobs_py_get_stats(&s1);
    CHECK_U64(2, s1.gil_taken - s0.gil_taken);
    defaults();
}

/* CPython 3.11 makes a frame object for each frame the walk visits, and
   making one can start a garbage collection right there, whose finalizers
   run Python code: one that frees through the engine's allocator would
   take the lock the allocating call holds. memobs_py_capture keeps the
   collector off while it walks; the collection runs later. (3.9 and 3.10
   have frame objects already; 3.12+ runs collections between bytecodes.) */
static void gc_inside_capture(void) {
    memobs_alloc_info_t a[4];
    defaults();
    reentered = freed_locked = 0;
    CHECK(py("import gc, mtest\n"
             "old = gc.get_threshold()\n"
             "gc.collect()\n"
             "gc.set_threshold(1, 1, 1)\n"
             "try:\n"
             "    for i in range(100):\n"
             "        mtest.track(0x100000 + 16 * i + 8, 8)\n"
             "        net.gc_alloc(0x100000 + 16 * i)\n"
             "finally:\n"
             "    gc.set_threshold(*old)\n"
             "gc.collect()\n") == 0);
    CHECK_U64(0, reentered);
    CHECK_U64(100, freed_locked); /* every finalizer ran, later */
    CHECK_U64(2, ngot);
    CHECK_STR("gc_alloc:35", fr_name(0));
    CHECK_STR("gc_mid:37", fr_name(1));
    CHECK_U64(100, memobs_get_allocations(a, 4)); /* the blocks of track_locked, none of the freed */
    CHECK(py("import mtest\nfor i in range(100): mtest.free_locked(0x100000 + 16 * i)") == 0);
    CHECK_U64(0, memobs_get_allocations(a, 4));
    CHECK_U64(0, reentered);
}

static void bad_config(void) {
    memobs_py_config_t c, now;
    log_count = 0;
    memobs_set_log(capture_log, NULL);
    memobs_py_default_config(&c);
    c.max_frames = 0;
    CHECK_U64((unsigned)MEMOBS_ERR_INVALID, (unsigned)memobs_py_configure(&c));
    memobs_py_default_config(&c);
    c.head = 3;
    CHECK_U64((unsigned)MEMOBS_ERR_INVALID, (unsigned)memobs_py_configure(&c));
    memobs_py_default_config(&c);
    c.source_width = 3;
    CHECK_U64((unsigned)MEMOBS_ERR_INVALID, (unsigned)memobs_py_configure(&c));
    log_stop();
    CHECK_U64(3, log_count);
    CHECK_U64(1, log_has("head and tail must be >= 0 with head + tail < max_frames"));
    memobs_py_get_config(&now);
    CHECK_U64(5, now.max_frames);
    CHECK_U64(2, now.head);
    CHECK_STR("model_desc", now.priority);
    CHECK_U64(0, memobs_py_capture(NULL, 4));
    CHECK_U64(0, memobs_py_format(got, 1, NULL, 0));
}

/* ---- modes -------------------------------------------------------------- */

/* Before Py_Initialize, after Py_Finalize, and with Python again. */
static int mode_lifecycle(void) {
    memobs_alloc_info_t a[4];
    char *out;
    FILE *f;
    memobs_py_install(NULL);
    CHECK_U64(MEMOBS_PY_NOT_INITIALIZED, memobs_py_status());
    ngot = memobs_py_capture(got, 8);
    CHECK_U64(1, ngot);
    CHECK_U64(MEMOBS_PY_NOT_INITIALIZED, got[0].line);
    memobs_track_alloc_full((void *)0x10, 10, MEMOBS_MEM_HOST, -1, NULL, "before", 0);
    make_tree();
    start_python();
    CHECK_U64(MEMOBS_PY_NO_FRAME, memobs_py_status()); /* C code with the GIL, no Python frame */
    memobs_py_configure(rules("model_desc", "", "proj", 5, 2, 2, 50));
    CHECK(py("net.alloc_a(0x20)") == 0);
    Py_Finalize();
    CHECK_U64(MEMOBS_PY_NOT_INITIALIZED, memobs_py_status());
    memobs_track_alloc_full((void *)0x30, 30, MEMOBS_MEM_HOST, -1, NULL, "after", 0);
    CHECK_U64(3, memobs_get_allocations(a, 4));
    /* reports after Py_Finalize name the frames from memobs' own copies */
    f = tmpfile();
    memobs_print_allocations(f);
    out = read_file(f);
    fclose(f);
    CHECK_HAS(out, "|   │    model_desc/net.py:14 in alloc_a");
    CHECK_HAS(out, "|   │    no Python stack (interpreter not initialized)");
    free(out);
    /* a second interpreter: the co_extra index is asked for again */
    start_python();
    CHECK(py("net.outer(0)") == 0);
    CHECK_STR("outer:8", fr_name(0));
    CHECK_STR("inner:4", fr_name(2));
    Py_Finalize();
    return 0;
}

/* Built with MEMOBS_PY_MAX_CODES=3: code objects past the third show as
   "<code table full>", still filtered by their path, and are counted. */
static int mode_codes_full(void) {
    memobs_py_stats_t st;
    make_tree();
    start_python();
    memobs_py_configure(rules("model_desc", "", "proj", 5, 2, 2, 50));
    CHECK(py("net.outer(0)") == 0); /* inner, mid, outer take the 3 ids */
    CHECK_U64(3, ngot);
    CHECK_STR("outer:8", fr_name(0));
    CHECK(py("net.deep(1)") == 0); /* deep: no id left */
    CHECK_U64(3, ngot);
    CHECK_STR("<full>", fr_name(0));
    CHECK_U64(10, got[0].line);
    CHECK_STR("inner:4", fr_name(2));
    CHECK_HAS(text, "<code table full>:10\n<code table full>:10\nmodel_desc/net.py:4 in inner");
    memobs_py_get_stats(&st);
    CHECK_U64(3, st.codes);
    CHECK(st.codes_full >= 2);
    Py_Finalize();
    return 0;
}

/* MEMOBS_PY_* read by memobs_py_default_config. */
static int mode_env(const char *want) {
    memobs_py_config_t c;
    char b[600];
    memobs_py_default_config(&c);
    snprintf(b, sizeof b, "priority=%s skip=%s root=%s frames=%d head=%d tail=%d width=%d gil=%d", c.priority, c.skip,
             c.root, c.max_frames, c.head, c.tail, c.source_width, c.take_gil);
    CHECK_STR(want, b);
    return 0;
}

int main(int argc, char **argv) {
    check__suite = TEST_SUITE;
    if (argc > 2 && strcmp(argv[1], "env") == 0) {
        mode_env(argv[2]);
        if (check__failed_checks) printf("not ok - %s: environment gives %s\n", check__suite, argv[2]);
        else printf("ok - %s: environment gives %s\n", check__suite, argv[2]);
        return check__failed_checks != 0;
    }
    if (argc > 1 && strcmp(argv[1], "codes_full") == 0) {
        RUN(mode_codes_full);
        return CHECK_DONE();
    }
    if (argc > 1 && strcmp(argv[1], "lifecycle") == 0) {
        RUN(mode_lifecycle);
        return CHECK_DONE();
    }
    memobs_py_install(NULL);
    make_tree();
    start_python();
    RUN(captures_known_chain);
    RUN(without_priority_keeps_whole_stack);
    RUN(skipped_paths_are_dropped);
    RUN(head_and_tail);
    RUN(path_simplification);
    RUN(source_lines);
    RUN(boxed_text);
    RUN(interning_and_report);
    RUN(line_cache);
    RUN(exception_kept);
    RUN(threads_without_gil);
    RUN(gc_inside_capture);
    RUN(bad_config);
    Py_Finalize();
    return CHECK_DONE();
}
