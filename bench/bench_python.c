/* bench_python.c - memobs_python.h's costs beside the seed's way, in one
   run (make bench; needs python3-config). An embedded CPython calls a
   chain of 20 Python functions whose innermost calls back into C, where
   each figure is timed:

     capture          memobs_py_capture(): the frame walk with the rules
                      applied (what the tag provider does per allocation)
     seed's way       what RTP-LLM's getPythonStackTrace does per
                      allocation: import traceback, extract_stack(frame),
                      and format every frame (path simplified, "file:line
                      in name", the source line cut to 50 characters), then
                      filter and box, all through the C API
     tracked pair     MEMOBS_TRACK_ALLOC + MEMOBS_TRACK_FREE with the
                      provider installed (capture + interning), beside the
                      same pair with no provider
   The frames stay on the stack for the whole loop, as when an engine's
   forward() allocates many tensors. A second set of figures calls the
   chain anew for every capture (fresh frames: CPython 3.11+ makes a frame
   object for each frame the walk visits the first time), measured as the
   difference from the same loop with an empty C call.
   Target: capture at least 50x faster than the seed's way. */
#define MEMOBS_IMPLEMENTATION
#include "memobs_python.h"

#include <stdlib.h>

#define DEPTH 20

static uint64_t iters = 20000;
static double result_ns[8];

static uint64_t now(void) { return memobs_now_ns(); }

/* ---- the seed's way, in C through the C API ------------------------------ */

/* Appends to buf at *o (keeps it terminated). */
static void put(char *buf, size_t len, size_t *o, const char *s, size_t n) {
    if (*o + n + 1 > len) n = len - *o - 1;
    memcpy(buf + *o, s, n);
    *o += n;
    buf[*o] = 0;
}

static const char *seed_short(const char *p) {
    const char *s = strstr(p, "site-packages/");
    return s ? s + 14 : p;
}

/* One allocation's tag the way the seed makes it: returns its length. */
static size_t seed_stack(char *out, size_t len) {
    char frames[64][256];
    int nf = 0, i, first = 0, last;
    size_t o = 0;
    PyObject *tb = PyImport_ImportModule("traceback"), *list = NULL, *it, *fs;
    PyFrameObject *f = PyEval_GetFrame();
    out[0] = 0;
    if (!tb) goto done;
    list = PyObject_CallMethod(tb, "extract_stack", "O", f ? (PyObject *)f : Py_None);
    if (!list || !(it = PyObject_GetIter(list))) goto done;
    while ((fs = PyIter_Next(it)) != NULL) {
        PyObject *fn = PyObject_GetAttrString(fs, "filename"), *ln = PyObject_GetAttrString(fs, "lineno"),
                 *nm = PyObject_GetAttrString(fs, "name"), *src = PyObject_GetAttrString(fs, "line");
        if (fn && ln && nm && src && nf < 64) {
            const char *code = src != Py_None ? PyUnicode_AsUTF8(src) : "";
            snprintf(frames[nf++], sizeof frames[0], "%s:%ld in %s\n    └─ %.50s", seed_short(PyUnicode_AsUTF8(fn)),
                     PyLong_AsLong(ln), PyUnicode_AsUTF8(nm), code ? code : "");
        }
        Py_XDECREF(fn);
        Py_XDECREF(ln);
        Py_XDECREF(nm);
        Py_XDECREF(src);
        Py_DECREF(fs);
    }
    Py_DECREF(it);
    /* reformat: from the outermost model_desc frame, no module.py, 2 + ... + 2 */
    for (i = 0; i < nf; i++)
        if (strstr(frames[i], "model_desc")) { first = i; break; }
    last = nf;
    put(out, len, &o, "\n  ┌─ Python Stack Trace ──────────\n", strlen("\n  ┌─ Python Stack Trace ──────────\n"));
    for (i = first; i < last; i++) {
        int pos = i - first, n = last - first;
        if (strstr(frames[i], "torch/nn/modules/module.py")) continue;
        if (n > 5 && pos >= 2 && pos < n - 2) {
            if (pos == 2) put(out, len, &o, "  │    ...\n", strlen("  │    ...\n"));
            continue;
        }
        put(out, len, &o, "  │", strlen("  │"));
        put(out, len, &o, frames[i], strlen(frames[i]));
        put(out, len, &o, "\n", 1);
    }
    put(out, len, &o, "  └──────────────────────────────\n", strlen("  └──────────────────────────────\n"));
done:
    if (PyErr_Occurred()) PyErr_Clear();
    Py_XDECREF(list);
    Py_XDECREF(tb);
    return o;
}

/* ---- the figures, timed inside the call chain ---------------------------- */

static volatile size_t sink;

static PyObject *b_run(PyObject *self, PyObject *args) {
    memobs_frame_t fr[MEMOBS_MAX_STACK];
    char buf[8192];
    uint64_t i, t0, n = iters;
    int k = 0;
    (void)self;
    (void)args;
    /* capture */
    for (i = 0; i < n / 10; i++) k += memobs_py_capture(fr, MEMOBS_MAX_STACK); /* warm */
    t0 = now();
    for (i = 0; i < n; i++) k += memobs_py_capture(fr, MEMOBS_MAX_STACK);
    result_ns[0] = (double)(now() - t0) / (double)n;
    sink = (size_t)k;
    /* the seed's way */
    for (i = 0; i < n / 100; i++) sink += seed_stack(buf, sizeof buf);
    t0 = now();
    for (i = 0; i < n / 10; i++) sink += seed_stack(buf, sizeof buf);
    result_ns[1] = (double)(now() - t0) / (double)(n / 10);
    /* tracked pairs, with and without the provider */
    memobs_py_install(NULL);
    t0 = now();
    for (i = 0; i < n; i++) {
        MEMOBS_TRACK_ALLOC(buf + (i & 63), 64, MEMOBS_MEM_HOST);
        MEMOBS_TRACK_FREE(buf + (i & 63));
    }
    result_ns[2] = (double)(now() - t0) / (double)n;
    memobs_py_uninstall();
    t0 = now();
    for (i = 0; i < n; i++) {
        MEMOBS_TRACK_ALLOC(buf + (i & 63), 64, MEMOBS_MEM_HOST);
        MEMOBS_TRACK_FREE(buf + (i & 63));
    }
    result_ns[3] = (double)(now() - t0) / (double)n;
    /* what a capture held */
    k = memobs_py_capture(fr, MEMOBS_MAX_STACK);
    memobs_py_format(fr, k, buf, sizeof buf);
    printf("  one capture at depth %d (default rules: %d frames kept):\n", DEPTH, k);
    {
        char *p = buf, *nl;
        for (; p && *p; p = nl ? nl + 1 : NULL) {
            nl = strchr(p, '\n');
            printf("    %.*s\n", nl ? (int)(nl - p) : (int)strlen(p), p);
        }
    }
    Py_RETURN_NONE;
}

static PyObject *b_capture_once(PyObject *self, PyObject *args) {
    memobs_frame_t fr[MEMOBS_MAX_STACK];
    (void)self;
    (void)args;
    sink += (size_t)memobs_py_capture(fr, MEMOBS_MAX_STACK);
    Py_RETURN_NONE;
}
static PyObject *b_nothing(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    Py_RETURN_NONE;
}

static PyMethodDef b_methods[] = {{"run", b_run, METH_NOARGS, NULL},
                                  {"capture_once", b_capture_once, METH_NOARGS, NULL},
                                  {"nothing", b_nothing, METH_NOARGS, NULL},
                                  {NULL, NULL, 0, NULL}};
static struct PyModuleDef b_def = {PyModuleDef_HEAD_INIT, "mbench", NULL, -1, b_methods, NULL, NULL, NULL, NULL};
static PyObject *b_init(void) { return PyModule_Create(&b_def); }

/* The chain: model_desc/chain.py, written to a scratch directory so the
   default priority rule applies as in an engine. */
static const char chain_py[] =
    "import mbench, time\n"
    "def chain(n, fn):\n"
    "    return chain(n - 1, fn) if n else fn()\n"
    "def fresh(reps, fn):\n"
    "    t0 = time.perf_counter_ns()\n"
    "    for _ in range(reps):\n"
    "        chain(%d, fn)\n"
    "    return (time.perf_counter_ns() - t0) / reps\n";

int main(int argc, char **argv) {
    char dir[256], path[300], code[1024];
    FILE *f;
    PyObject *m, *r;
    double fresh_cap = 0, fresh_none = 0;
    if (argc > 1) iters = strtoull(argv[1], NULL, 10);
    if (iters < 100) iters = 100;
    snprintf(dir, sizeof dir, "/tmp/memobs_pybench_XXXXXX");
    if (!mkdtemp(dir)) return 2;
    snprintf(path, sizeof path, "%s/model_desc", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/model_desc/chain.py", dir);
    f = fopen(path, "w");
    if (!f) return 2;
    fprintf(f, chain_py, DEPTH - 1);
    fclose(f);
    PyImport_AppendInittab("mbench", b_init);
    Py_InitializeEx(0);
    snprintf(code, sizeof code, "import sys\nsys.dont_write_bytecode = True\nsys.path.insert(0, '%s/model_desc')\n", dir);
    PyRun_SimpleString(code);
    m = PyImport_ImportModule("chain");
    if (!m) { PyErr_Print(); return 2; }
    printf("== memobs_python.h: Python stack capture (CPython %s)\n", PY_VERSION);
    /* frames stay: chain(19) -> run */
    r = PyObject_CallMethod(m, "chain", "iO", DEPTH - 1, PyObject_GetAttrString(PyImport_ImportModule("mbench"), "run"));
    if (!r) { PyErr_Print(); return 2; }
    Py_DECREF(r);
    /* fresh frames: the chain is called anew per capture */
    {
        PyObject *mb = PyImport_ImportModule("mbench");
        PyObject *cap = PyObject_GetAttrString(mb, "capture_once"), *none = PyObject_GetAttrString(mb, "nothing");
        int rep;
        /* the best of 5 of each, subtracted (the best difference would
           favour a run where noise hit the baseline) */
        for (rep = 0; rep < 5; rep++) {
            PyObject *a = PyObject_CallMethod(m, "fresh", "KO", (unsigned long long)(iters / 4), cap);
            PyObject *b = PyObject_CallMethod(m, "fresh", "KO", (unsigned long long)(iters / 4), none);
            double x = a ? PyFloat_AsDouble(a) : 0, y = b ? PyFloat_AsDouble(b) : 0;
            if (rep == 0 || x < fresh_cap) fresh_cap = x;
            if (rep == 0 || y < fresh_none) fresh_none = y;
            Py_XDECREF(a);
            Py_XDECREF(b);
        }
        Py_DECREF(cap);
        Py_DECREF(none);
        Py_DECREF(mb);
    }
    printf("\n  %-62s %12s\n", "figure (depth 20: the chain's 20 Python frames)", "ns per call");
    printf("  %-62s %12.0f\n", "capture, memobs_py_capture (frames on the stack)", result_ns[0]);
    printf("  %-62s %12.0f\n", "seed's way: traceback.extract_stack + format, from C", result_ns[1]);
    printf("  %-62s %12.0f\n", "tracked alloc+free pair, Python stack tag", result_ns[2]);
    printf("  %-62s %12.0f\n", "tracked alloc+free pair, no provider", result_ns[3]);
    printf("  %-62s %12.0f\n", "capture with fresh frames (chain called anew each time)", fresh_cap - fresh_none);
    printf("  %-62s %12.0f\n", "  (the 20-call chain itself, with an empty C call at its end)", fresh_none);
    printf("\n  capture vs the seed's way: %.0fx faster  (target >= 50x: %s)\n", result_ns[1] / result_ns[0],
           result_ns[1] / result_ns[0] >= 50 ? "PASS" : "MISS");
    printf("  with fresh frames:         %.0fx faster\n", result_ns[1] / (fresh_cap - fresh_none));
    Py_DECREF(m);
    Py_Finalize();
    snprintf(code, sizeof code, "rm -rf '%s'", dir);
    if (system(code) != 0) return 0;
    return 0;
}
