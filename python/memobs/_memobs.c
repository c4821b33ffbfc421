/* _memobs.c - the CPython extension module `memobs._memobs` of the Python
   package `memobs` (python/memobs/): memobs' counters, timings, summaries
   and allocation tracker for engines written in Python (nano-vllm and the
   like). CPython 3.9 to 3.13 (GIL builds). The package's __init__.py
   re-exports every name at top level: use `import memobs`.

   Install (from the repository root; no network needed):

       pip install --no-build-isolation .

   or build it in place (`make python-module` writes the package to
   build/python/memobs/, this file as _memobs<suffix>.so beside __init__.py):

       cc -std=c99 -O2 -g -fPIC -shared -Wall -Wextra -Werror -I. \
          $(python3-config --includes) python/memobs/_memobs.c \
          -o DIR/memobs/_memobs$(python3-config --extension-suffix)

   then, with DIR on PYTHONPATH (and python/memobs/__init__.py in DIR/memobs/):

       import memobs
       memobs.record_h2d(block.nbytes, True)    # after queueing a copy: bytes, is_prefill
       memobs.set_phase("decode")               # or: the thread's phase ...
       memobs.record_d2h(block.nbytes, None)    # ... which None stands for
       memobs.record_s2h(block.nbytes, True)    # the storage tier: h2s, s2h, d2s, s2d likewise
       with memobs.timed_transfer("s2h", n):    # a load the engine times itself (record_xfer_ns)
           f.readinto(buf)
       memobs.ttft_start(); memobs.ttft_stop(); memobs.tpot_step()
       with memobs.region("decode_step"): ...   # a named span of this thread, nested, timed
       @memobs.region("prefill")                # every call of the function inside the region
       memobs.mark("kv_evict")                  # a named instant
       memobs.get_regions()                     # per name: count, total_ns, mean_ns, max_ns, marks
       memobs.get_summary()                     # nano-vllm's MemoryObserver.get_summary() shape, and more
       p = memobs.peer_intern("decode-3")       # another instance: KV bytes sent to it, by phase
       memobs.record_peer_xfer(p, memobs.PEER_SEND, block.nbytes)
       memobs.print_summary()                   # on stderr
       memobs.format_prometheus()               # the Prometheus text exposition, a str

   The module holds a private memobs (MEMOBS_HIDDEN): its figures are its
   own even when a C extension of the same process links another memobs.
   Records and reports are exact under any number of Python threads.

   Built with -DMEMOBS_PY_ATTACH (and -fvisibility=hidden), the same source
   is memobs._memobs_attached: no memobs of its own, memobs' symbols left
   undefined for the dynamic linker to bind to the LD_PRELOAD library's
   (libmemobs_preload.so), no torch allocator. memobs/__init__.py imports
   it instead of this one when that library is in the process and its
   memobs_preload_abi() equals the module's _abi_key (MEMOBS__ABI_KEY):
   then the package's phase, regions, records and Python stacks are the
   library's, one instance, one summary. instance() says which build runs.

   Built with -DMEMOBS_PY_CUDA -I<CUDA>/include (setup.py and `make
   python-module` do when they find the CUDA headers), this file also
   holds memobs_cuda.h and memobs.torch's allocator (_torch_alloc.c,
   included at the end: one translation unit, one memobs); its two entry
   points, memobs_torch_malloc and memobs_torch_free, are with
   PyInit__memobs and memobs_host_api (the table NCCL's profiler plugin
   records collectives through) the only symbols the extension exports. No
   libcudart is linked: the runtime is bound when
   memobs.torch.use_allocator() runs.

   Regions: memobs.region(name) interns the name (a str, kept as at most
   63 UTF-8 bytes) the first time that str is seen and returns the same
   object after; its `with` and its decorator begin and end it on memobs'
   stack of the calling thread, and end it when the body raises.
   A region belongs to a thread: in async code keep it from spanning an
   await; generator and coroutine functions cannot be decorated
   (TypeError: the call returns before the body runs).

   Differences from nano-vllm's MemoryObserver, on purpose:
     is_prefill is required (True: prefill, False: decode, None: the
     thread's phase from set_phase(), "unphased" if never set): a missing
     argument is a TypeError, not decode traffic filed as prefill. It is
     also required for record_d2d, which memobs splits by phase too.
     Bytes are a non-negative int (or an object with __index__, such as a
     numpy integer; not a bool or a float) of at most 2**56
     (MEMOBS_MAX_BYTES; ns of record_ttft/record_tpot: MEMOBS_MAX_NS, also
     2**56); anything else raises TypeError or ValueError and records
     nothing.
     reset() (alias complete_reset()) starts a new window for every figure.

   Functions taking a path write "stderr", "stdout" or that file
   (overwritten); %r/%p are not expanded (use an f-string). A file that
   cannot be written raises OSError (FileNotFoundError, PermissionError...).
*/
#ifdef MEMOBS_PY_ATTACH
/* memobs._memobs_attached: no memobs of its own. memobs' symbols stay
   undefined here and the dynamic linker binds them to the LD_PRELOAD
   library's exports (libmemobs_preload.so, preload/
   memobs_preload.c); memobs/__init__.py imports this module only when
   that library is in the process with this module's MEMOBS__ABI_KEY.
   memobs_python.h's own part (the Python stack provider) is built here
   and registered with the preload's instance. No torch allocator: the
   preload observes the runtime's allocations already. */
#undef MEMOBS_PY_CUDA
#define MEMOBS_PYTHON_IMPLEMENTATION
static void pymod_log(int level, const char *msg, void *user);
#define MEMOBS_PY_LOG(level, msg) pymod_log(level, msg, NULL)
#else
/* The private memobs, hidden, but for memobs_host_api (MEMOBS_EXPORT_HOST:
   default visibility): NCCL's profiler plugin, libnccl-profiler-memobs.so,
   finds it by walking the loaded objects and records the process's
   collectives into this memobs ("python" in the summary's instance). The
   attached build defines none: there the LD_PRELOAD library's serves. */
#define MEMOBS_IMPLEMENTATION
#define MEMOBS_HIDDEN
#define MEMOBS_EXPORT_HOST
#define MEMOBS_HOST_INSTANCE "python"
#endif
#include "memobs_python.h"
#ifdef MEMOBS_PY_CUDA
/* memobs.torch's allocator (_torch_alloc.c, included at the end): memobs_cuda.h
   in this translation unit, the runtime's functions hidden, so that the
   forwarders _torch_alloc.c defines for them are the ones called, and
   memobs_cuda.h's driver source is _torch_alloc.c's, never a weak NULL. */
#pragma GCC visibility push(hidden)
#include <cuda_runtime_api.h>
void *memobs_cuda_driver_symbol(const char *name);
#pragma GCC visibility pop
#include "memobs_cuda.h"
#endif

#include <signal.h>
#include <stdio.h>
#include <string.h>

/* Function pointers of the METH_FASTCALL kinds, stored as PyCFunction (the
   documented cast; the detour through void (*)(void) keeps
   -Wcast-function-type quiet). */
#define PYMOD_FN(f) ((PyCFunction)(void (*)(void))(f))
#define PYMOD_ULL(x) ((unsigned long long)(x))

/* ======================================================================== */
/* Arguments                                                                */
/* ======================================================================== */

/* Positional-or-keyword arguments of a METH_FASTCALL | METH_KEYWORDS call:
   out[i] gets the argument called names[i] (borrowed) or NULL; the first
   required ones must be given. 0, or -1 with a TypeError. */
static int pymod_args(const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                      const char *const *names, int n, int required, PyObject **out) {
    Py_ssize_t i, nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    int j;
    for (j = 0; j < n; j++) out[j] = NULL;
    if (nargs > n) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d argument%s (%zd given)", fname, n, n == 1 ? "" : "s",
                     nargs);
        return -1;
    }
    for (i = 0; i < nargs; i++) out[i] = args[i];
    for (i = 0; i < nkw; i++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, i);
        for (j = 0; j < n; j++)
            if (PyUnicode_CompareWithASCIIString(key, names[j]) == 0) break;
        if (j == n) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", fname, key);
            return -1;
        }
        if (out[j]) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", fname, names[j]);
            return -1;
        }
        out[j] = args[nargs + i];
    }
    for (j = 0; j < required; j++) {
        if (!out[j]) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s' (pos %d)", fname, names[j], j + 1);
            return -1;
        }
    }
    return 0;
}

/* The general case of pymod_u64: an int that PyLong_AsUnsignedLongLong
   refused, or an object with __index__. */
static int pymod_u64_slow(PyObject *o, const char *fname, const char *what, uint64_t *out) {
    PyObject *idx;
    long long v;
    int overflow = 0, rc = -1;
    if (PyBool_Check(o) || !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): %s must be an int, not %.200s", fname, what, Py_TYPE(o)->tp_name);
        return -1;
    }
    idx = PyNumber_Index(o);
    if (!idx) return -1;
    v = PyLong_AsLongLongAndOverflow(idx, &overflow);
    if (v == -1 && !overflow && PyErr_Occurred()) {
        /* the exception from __index__ stands */
    } else if (!overflow && v >= 0) {
        *out = (uint64_t)v;
        rc = 0;
    } else if (overflow < 0 || (!overflow && v < 0)) { /* on overflow v is -1: not the sign */
        PyErr_Format(PyExc_ValueError, "%s(): %s must be >= 0, got %R", fname, what, idx);
    } else {
        unsigned long long u = PyLong_AsUnsignedLongLong(idx);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "%s(): %s is out of range: above 2**64-1 (the largest), got %R", fname,
                         what, idx);
        } else {
            *out = (uint64_t)u;
            rc = 0;
        }
    }
    Py_DECREF(idx);
    return rc;
}

/* A count of bytes, an id or an address: 0 <= value < 2**64. 0, or -1 with
   TypeError (not an int; bools are refused) or ValueError (out of range). */
static inline int pymod_u64(PyObject *o, const char *fname, const char *what, uint64_t *out) {
    if (MEMOBS__LIKELY(PyLong_CheckExact(o))) {
        unsigned long long u = PyLong_AsUnsignedLongLong(o);
        if (MEMOBS__LIKELY(u != (unsigned long long)-1 || !PyErr_Occurred())) {
            *out = (uint64_t)u;
            return 0;
        }
        PyErr_Clear(); /* negative or too large: say which */
    }
    return pymod_u64_slow(o, fname, what, out);
}

/* pymod_u64 with memobs' limit of the value (MEMOBS_MAX_BYTES,
   MEMOBS_MAX_NS, both 2**56): above it, ValueError, as memobs would refuse
   it (a bad record). */
static int pymod_u64_max(PyObject *o, const char *fname, const char *what, uint64_t max, const char *max_name,
                         uint64_t *out) {
    if (pymod_u64(o, fname, what, out) < 0) return -1;
    if (MEMOBS__LIKELY(*out <= max)) return 0;
    PyErr_Format(PyExc_ValueError, "%s(): %s must be at most 2**56 (%s), got %R", fname, what, max_name, o);
    return -1;
}

/* A boolean argument, by the one rule of every boolean of the module (the
   environment's words): True/False, an int 0 or 1, or a str memobs reads
   as one (0/1/on/off/true/false/yes/no, any case, as memobs__parse_bool).
   1 or 0, or -1 with TypeError (another type) / ValueError (another value). */
static int pymod_bool_word(const char *s) { /* memobs__parse_bool's words (not in the attached build) */
    static const char *const words[8] = {"0", "off", "false", "no", "1", "on", "true", "yes"};
    int i, j;
    for (i = 0; i < 8; i++) {
        for (j = 0; s[j] && words[i][j] && (s[j] | 0x20) == words[i][j]; j++) {
        }
        if (!s[j] && !words[i][j]) return i >= 4;
    }
    return -1;
}

static int pymod_bool(PyObject *o, const char *fname, const char *what) {
    if (o == Py_True) return 1;
    if (o == Py_False) return 0;
    if (PyUnicode_Check(o)) {
        const char *s = PyUnicode_AsUTF8(o);
        int b;
        if (!s) return -1;
        if ((b = pymod_bool_word(s)) >= 0) return b;
        PyErr_Format(PyExc_ValueError, "%s(): %s must be True/False, 0/1 or one of \"0\", \"1\", \"on\", \"off\", "
                     "\"true\", \"false\", \"yes\", \"no\" (any case), got %R", fname, what, o);
        return -1;
    }
    if (PyLong_Check(o) || PyIndex_Check(o)) {
        PyObject *idx = PyNumber_Index(o);
        int overflow = 0;
        long v;
        if (!idx) return -1;
        v = PyLong_AsLongAndOverflow(idx, &overflow);
        Py_DECREF(idx);
        if (v == -1 && !overflow && PyErr_Occurred()) return -1;
        if (!overflow && (v == 0 || v == 1)) return (int)v;
        PyErr_Format(PyExc_ValueError, "%s(): %s must be True/False, 0/1 or a str like \"on\"/\"off\", got %R",
                     fname, what, o);
        return -1;
    }
    PyErr_Format(PyExc_TypeError, "%s(): %s must be True/False, 0/1 or a str like \"on\"/\"off\", not %.200s", fname,
                 what, Py_TYPE(o)->tp_name);
    return -1;
}

/* A C int in [lo, hi]: 0, or -1 with TypeError / ValueError. */
static int pymod_int(PyObject *o, const char *fname, const char *what, long lo, long hi, int *out) {
    long v;
    int overflow = 0;
    if (PyBool_Check(o) || !PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): %s must be an int, not %.200s", fname, what, Py_TYPE(o)->tp_name);
        return -1;
    }
    v = PyLong_AsLongAndOverflow(o, &overflow);
    if (v == -1 && !overflow && PyErr_Occurred()) return -1;
    if (overflow || v < lo || v > hi) {
        PyErr_Format(PyExc_ValueError, "%s(): %s must be in %ld..%ld, got %R", fname, what, lo, hi, o);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Index of the str o in names[0..n), or -1 with TypeError / ValueError
   (the message lists the names). */
static int pymod_choice(PyObject *o, const char *fname, const char *what, const char *const *names, int n) {
    int i;
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): %s must be a str, not %.200s", fname, what, Py_TYPE(o)->tp_name);
        return -1;
    }
    for (i = 0; i < n; i++)
        if (PyUnicode_CompareWithASCIIString(o, names[i]) == 0) return i;
    {
        char list[160];
        size_t len = 0;
        list[0] = 0;
        for (i = 0; i < n && len < sizeof list; i++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s\"%s\"", i ? ", " : "", names[i]);
        PyErr_Format(PyExc_ValueError, "%s(): %s must be one of %s, got %R", fname, what, list, o);
    }
    return -1;
}

/* Python's sys.stdout and sys.stderr, flushed before memobs writes to C's
   streams, so that what Python printed earlier comes first. */
static void pymod_flush_python_streams(void) {
    static const char *const names[2] = {"stdout", "stderr"};
    int i;
    for (i = 0; i < 2; i++) {
        PyObject *f = PySys_GetObject(names[i]), *r; /* borrowed */
        if (!f || f == Py_None) continue;
        r = PyObject_CallMethod(f, "flush", NULL);
        if (r) Py_DECREF(r);
        else PyErr_Clear(); /* a closed stream is not our error */
    }
}

/* A destination argument: None (default_dest), "stderr", "stdout" or a
   path (str, bytes or os.PathLike) opened for writing. *own: fclose it.
   NULL with an exception set (OSError from errno for a file). */
static FILE *pymod_open(PyObject *path, FILE *default_dest, int *own) {
    PyObject *bytes = NULL;
    const char *p;
    FILE *f;
    *own = 0;
    if (!path || path == Py_None) {
        pymod_flush_python_streams();
        return default_dest;
    }
    if (!PyUnicode_FSConverter(path, &bytes)) return NULL;
    p = PyBytes_AS_STRING(bytes);
    if (strcmp(p, "stderr") == 0 || strcmp(p, "stdout") == 0) {
        pymod_flush_python_streams();
        f = p[3] == 'e' ? stderr : stdout;
    } else if ((f = fopen(p, "w")) != NULL) {
        *own = 1;
    } else {
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path);
    }
    Py_DECREF(bytes);
    return f;
}

/* Closes what pymod_open opened (flushes the C stream otherwise); folds a
   failed write into rc. */
static int pymod_close(FILE *f, int own, int rc) {
    if (own) {
        if (fclose(f) != 0 && rc == MEMOBS_OK) rc = MEMOBS_ERR_IO;
    } else if (fflush(f) != 0 && rc == MEMOBS_OK) {
        rc = MEMOBS_ERR_IO;
    }
    return rc;
}

/* None, or an OSError for a memobs result code of a write to path. */
static PyObject *pymod_io_result(int rc, const char *fname, PyObject *path) {
    if (rc == MEMOBS_OK) Py_RETURN_NONE;
    if (path && path != Py_None)
        PyErr_Format(PyExc_OSError, "%s(): writing %R failed: %s", fname, path, memobs_strerror(rc));
    else
        PyErr_Format(PyExc_OSError, "%s(): writing to stderr failed: %s", fname, memobs_strerror(rc));
    return NULL;
}

/* ======================================================================== */
/* Transfers and phase                                                      */
/* ======================================================================== */

static const char *const pymod_phase_names[MEMOBS_PHASES] = {"unphased", "prefill", "decode"};
static const char *const pymod_record_kw[2] = {"num_bytes", "is_prefill"};
/* memobs_dir_t's names, as the JSON summary and Prometheus spell them */
static const char *const pymod_dir_names[MEMOBS_DIRS] = {"h2d", "d2h", "d2d", "h2s", "s2h", "d2s", "s2d"};

/* is_prefill other than True/False/None: a phase name ("prefill",
   "decode", "unphased"), or any object by its truth value (nonzero:
   prefill, as the C macros read it). Returns the memobs_phase_t, or -1 with
   an exception. */
static int pymod_phase_arg(PyObject *o, const char *fname) {
    int t;
    if (PyUnicode_Check(o)) return pymod_choice(o, fname, "is_prefill (a phase name)", pymod_phase_names, 3);
    t = PyObject_IsTrue(o);
    if (t < 0) return -1;
    return t ? MEMOBS_PHASE_PREFILL : MEMOBS_PHASE_DECODE;
}

/* A phase argument of record_xfer, the collectives and peers: None (the
   calling thread's phase, read now), True (prefill), False (decode) or a
   phase name. The memobs_phase_t, or -1 with TypeError / ValueError. */
static int pymod_phase_opt(PyObject *o, const char *fname) {
    if (!o || o == Py_None) return (int)memobs_get_phase();
    if (o == Py_True) return MEMOBS_PHASE_PREFILL;
    if (o == Py_False) return MEMOBS_PHASE_DECODE;
    if (PyUnicode_Check(o)) return pymod_choice(o, fname, "phase", pymod_phase_names, MEMOBS_PHASES);
    PyErr_Format(PyExc_TypeError, "%s(): phase must be None, True, False or \"prefill\", \"decode\", \"unphased\", "
                 "not %.200s", fname, Py_TYPE(o)->tp_name);
    return -1;
}

/* The direction names interned at import: a str literal of the caller's
   code is the same object, found by its address before any compare. */
static PyObject *pymod_dir_str[MEMOBS_DIRS];

/* A direction: a name ("h2d", "d2h", "d2d", "h2s", "s2h", "d2s", "s2d") or
   its constant DIR_H2D .. DIR_S2D (0..6). The memobs_dir_t, or -1 with
   TypeError / ValueError. */
static int pymod_dir_arg(PyObject *o, const char *fname) {
    int d;
    for (d = 0; d < MEMOBS_DIRS; d++)
        if (o == pymod_dir_str[d]) return d;
    if (PyUnicode_Check(o)) return pymod_choice(o, fname, "dir", pymod_dir_names, MEMOBS_DIRS);
    if (PyBool_Check(o) || !PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): dir must be a direction name (\"h2d\" .. \"s2d\") or DIR_H2D .. "
                     "DIR_S2D, not %.200s", fname, Py_TYPE(o)->tp_name);
        return -1;
    }
    if (pymod_int(o, fname, "dir (DIR_H2D 0 .. DIR_S2D 6)", 0, MEMOBS_DIRS - 1, &d) < 0) return -1;
    return d;
}

/* record_h2d / record_d2h / record_d2d and the storage tier's record_h2s /
   record_s2h / record_d2s / record_s2d(num_bytes, is_prefill). The fast
   path (two positional arguments, an exact int, True/False) is a type
   check, PyLong_AsUnsignedLongLong, two compares and memobs' record: no
   keyword parsing, no PyObject_IsTrue. Arguments are checked before
   anything is recorded. */
static inline __attribute__((always_inline)) PyObject *pymod_record(memobs_dir_t dir, const char *fname,
                                                                    PyObject *const *args, Py_ssize_t nargs,
                                                                    PyObject *kwnames) {
    PyObject *a[2];
    uint64_t bytes;
    if (MEMOBS__LIKELY(nargs == 2 && kwnames == NULL)) {
        a[0] = args[0];
        a[1] = args[1];
    } else if (pymod_args(fname, args, nargs, kwnames, pymod_record_kw, 2, 2, a) < 0) {
        return NULL;
    }
    if (pymod_u64_max(a[0], fname, "num_bytes", MEMOBS_MAX_BYTES, "MEMOBS_MAX_BYTES", &bytes) < 0) return NULL;
    if (MEMOBS__LIKELY(a[1] == Py_True)) {
        MEMOBS_RECORD_XFER(dir, bytes, MEMOBS_PHASE_PREFILL);
    } else if (a[1] == Py_False) {
        MEMOBS_RECORD_XFER(dir, bytes, MEMOBS_PHASE_DECODE);
    } else if (a[1] == Py_None) {
        switch (dir) {
        case MEMOBS_DIR_H2D: MEMOBS_RECORD_H2D_CUR(bytes); break;
        case MEMOBS_DIR_D2H: MEMOBS_RECORD_D2H_CUR(bytes); break;
        case MEMOBS_DIR_D2D: MEMOBS_RECORD_D2D_CUR(bytes); break;
        case MEMOBS_DIR_H2S: MEMOBS_RECORD_H2S_CUR(bytes); break;
        case MEMOBS_DIR_S2H: MEMOBS_RECORD_S2H_CUR(bytes); break;
        case MEMOBS_DIR_D2S: MEMOBS_RECORD_D2S_CUR(bytes); break;
        default: MEMOBS_RECORD_S2D_CUR(bytes); break;
        }
    } else {
        int phase = pymod_phase_arg(a[1], fname);
        if (phase < 0) return NULL;
        MEMOBS_RECORD_XFER(dir, bytes, phase);
    }
    Py_RETURN_NONE;
}

#define PYMOD_RECORD_FN(name, DIR)                                                                                 \
    static PyObject *pymod_record_##name(PyObject *self, PyObject *const *args, Py_ssize_t nargs,                  \
                                         PyObject *kwnames) {                                                      \
        (void)self;                                                                                                \
        return pymod_record(DIR, "record_" #name, args, nargs, kwnames);                                           \
    }
PYMOD_RECORD_FN(h2d, MEMOBS_DIR_H2D)
PYMOD_RECORD_FN(d2h, MEMOBS_DIR_D2H)
PYMOD_RECORD_FN(d2d, MEMOBS_DIR_D2D)
PYMOD_RECORD_FN(h2s, MEMOBS_DIR_H2S)
PYMOD_RECORD_FN(s2h, MEMOBS_DIR_S2H)
PYMOD_RECORD_FN(d2s, MEMOBS_DIR_D2S)
PYMOD_RECORD_FN(s2d, MEMOBS_DIR_S2D)

/* The checked arguments of record_xfer, record_xfer_ns and
   timed_transfer: dir, nbytes, then phase (None: the thread's, read now). */
typedef struct {
    int dir, phase;
    uint64_t bytes;
} pymod_xfer_args_t;

static int pymod_xfer_args(PyObject *dir, PyObject *nbytes, PyObject *phase, const char *fname,
                           pymod_xfer_args_t *x) {
    if ((x->dir = pymod_dir_arg(dir, fname)) < 0 ||
        pymod_u64_max(nbytes, fname, "nbytes", MEMOBS_MAX_BYTES, "MEMOBS_MAX_BYTES", &x->bytes) < 0)
        return -1;
    if (!phase || phase == Py_None) x->phase = -1; /* the thread's, at the record */
    else if ((x->phase = pymod_phase_opt(phase, fname)) < 0) return -1;
    return 0;
}

static int pymod_xfer_phase(const pymod_xfer_args_t *x) {
    return x->phase < 0 ? (int)memobs_get_phase() : x->phase;
}

/* record_xfer(dir, nbytes, phase=None) and record_xfer_ns(dir, nbytes,
   phase, ns): memobs_record_xfer and memobs_record_xfer_ns, arguments
   checked before anything is recorded. */
static PyObject *pymod_xfer(const char *fname, int timed, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames) {
    static const char *const kw[4] = {"dir", "nbytes", "phase", "ns"};
    PyObject *a[4];
    pymod_xfer_args_t x;
    uint64_t ns = 0;
    if (pymod_args(fname, args, nargs, kwnames, kw, timed ? 4 : 3, timed ? 4 : 2, a) < 0 ||
        pymod_xfer_args(a[0], a[1], a[2], fname, &x) < 0 ||
        (timed && pymod_u64_max(a[3], fname, "ns", MEMOBS_MAX_NS, "MEMOBS_MAX_NS", &ns) < 0))
        return NULL;
    if (timed)
        memobs_record_xfer_ns((memobs_dir_t)x.dir, x.bytes, (memobs_phase_t)pymod_xfer_phase(&x), ns);
    else
        memobs_record_xfer((memobs_dir_t)x.dir, x.bytes, (memobs_phase_t)pymod_xfer_phase(&x));
    Py_RETURN_NONE;
}

static PyObject *pymod_record_xfer(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    (void)self;
    return pymod_xfer("record_xfer", 0, args, nargs, kwnames);
}

static PyObject *pymod_record_xfer_ns(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    (void)self;
    return pymod_xfer("record_xfer_ns", 1, args, nargs, kwnames);
}

/* xfer_begin(dir, nbytes, phase=None): memobs_xfer_begin, its token (0:
   none). xfer_end(token), xfer_cancel(token): True, or False for a token
   not in flight (counted by memobs, one warning). */
static PyObject *pymod_xfer_begin(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const kw[3] = {"dir", "nbytes", "phase"};
    PyObject *a[3];
    pymod_xfer_args_t x;
    (void)self;
    if (pymod_args("xfer_begin", args, nargs, kwnames, kw, 3, 2, a) < 0 ||
        pymod_xfer_args(a[0], a[1], a[2], "xfer_begin", &x) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(
        memobs_xfer_begin((memobs_dir_t)x.dir, x.bytes, (memobs_phase_t)pymod_xfer_phase(&x)));
}

static PyObject *pymod_xfer_done(PyObject *arg, const char *fname, int end) {
    uint64_t t;
    if (pymod_u64(arg, fname, "token", &t) < 0) return NULL;
    return PyBool_FromLong((end ? memobs_xfer_end(t) : memobs_xfer_cancel(t)) == MEMOBS_OK);
}
static PyObject *pymod_xfer_end(PyObject *self, PyObject *arg) {
    (void)self;
    return pymod_xfer_done(arg, "xfer_end", 1);
}
static PyObject *pymod_xfer_cancel(PyObject *self, PyObject *arg) {
    (void)self;
    return pymod_xfer_done(arg, "xfer_cancel", 0);
}

/* timed_transfer(dir, nbytes, phase=None): a context manager that times
   its body with memobs' clock (memobs_now_ns) and, when the body returns,
   records the transfer with that duration (memobs_record_xfer_ns). A body
   that raises records nothing: the load or store did not happen. The
   arguments are checked when the object is made, before the body runs.
   Not a decorator: a transfer's size is the call's, not the function's. */
typedef struct {
    PyObject_HEAD
    pymod_xfer_args_t x;
    uint64_t start; /* memobs_now_ns() at __enter__; 0: not entered */
    uint64_t ns;    /* the duration recorded last; UINT64_MAX: none yet */
} pymod_timed_xfer_t;

static PyTypeObject pymod_timed_xfer_type;

/* a[0..2]: dir, nbytes, phase (NULL: None), not yet checked */
static PyObject *pymod_timed_xfer_make(PyTypeObject *type, PyObject *const *a) {
    pymod_timed_xfer_t *t;
    pymod_xfer_args_t x;
    if (pymod_xfer_args(a[0], a[1], a[2], "timed_transfer", &x) < 0) return NULL;
    if (!(t = PyObject_New(pymod_timed_xfer_t, type))) return NULL;
    t->x = x;
    t->start = 0;
    t->ns = UINT64_MAX;
    return (PyObject *)t;
}

static PyObject *pymod_timed_xfer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"dir", "nbytes", "phase", NULL};
    PyObject *a[3] = {NULL, NULL, NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O:timed_transfer", kw, &a[0], &a[1], &a[2])) return NULL;
    return pymod_timed_xfer_make(type, a);
}

/* timed_transfer(...) without a tuple: what `with memobs.timed_transfer(...)` pays. */
static PyObject *pymod_timed_xfer_vnew(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    static const char *const kw[3] = {"dir", "nbytes", "phase"};
    PyObject *a[3];
    if (pymod_args("timed_transfer", args, PyVectorcall_NARGS(nargsf), kwnames, kw, 3, 2, a) < 0) return NULL;
    return pymod_timed_xfer_make((PyTypeObject *)type, a);
}

static void pymod_timed_xfer_dealloc(PyObject *self) {
    PyObject_Del(self);
}

static PyObject *pymod_timed_xfer_repr(PyObject *self) {
    const pymod_timed_xfer_t *t = (const pymod_timed_xfer_t *)self;
    if (t->x.phase < 0)
        return PyUnicode_FromFormat("memobs.timed_transfer('%s', %llu)", pymod_dir_names[t->x.dir],
                                    PYMOD_ULL(t->x.bytes));
    return PyUnicode_FromFormat("memobs.timed_transfer('%s', %llu, '%s')", pymod_dir_names[t->x.dir],
                                PYMOD_ULL(t->x.bytes), pymod_phase_names[t->x.phase]);
}

static PyObject *pymod_timed_xfer_enter(PyObject *self, PyObject *unused) {
    pymod_timed_xfer_t *t = (pymod_timed_xfer_t *)self;
    (void)unused;
    if (t->start) {
        PyErr_SetString(PyExc_RuntimeError, "timed_transfer: already entered (one `with` at a time; make one "
                        "timed_transfer per transfer)");
        return NULL;
    }
    t->start = memobs_now_ns();
    if (!t->start) t->start = 1;
    Py_INCREF(self);
    return self;
}

/* Records the transfer with the body's time when it returned; a body that
   raised records nothing, and its exception goes on. */
static PyObject *pymod_timed_xfer_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    pymod_timed_xfer_t *t = (pymod_timed_xfer_t *)self;
    uint64_t now = memobs_now_ns(), start = t->start;
    t->start = 0;
    if (!start) {
        PyErr_SetString(PyExc_RuntimeError, "timed_transfer: __exit__ without __enter__");
        return NULL;
    }
    if (nargs < 1 || args[0] == Py_None) {
        t->ns = now > start ? now - start : 0;
        if (t->ns > MEMOBS_MAX_NS) t->ns = MEMOBS_MAX_NS;
        memobs_record_xfer_ns((memobs_dir_t)t->x.dir, t->x.bytes, (memobs_phase_t)pymod_xfer_phase(&t->x), t->ns);
    }
    Py_RETURN_NONE;
}

static PyObject *pymod_timed_xfer_get_ns(PyObject *self, void *unused) {
    const pymod_timed_xfer_t *t = (const pymod_timed_xfer_t *)self;
    (void)unused;
    if (t->ns == UINT64_MAX) Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(t->ns);
}

static PyObject *pymod_timed_xfer_get_dir(PyObject *self, void *unused) {
    (void)unused;
    return PyUnicode_FromString(pymod_dir_names[((pymod_timed_xfer_t *)self)->x.dir]);
}

static PyObject *pymod_timed_xfer_get_nbytes(PyObject *self, void *unused) {
    (void)unused;
    return PyLong_FromUnsignedLongLong(((pymod_timed_xfer_t *)self)->x.bytes);
}

static PyMethodDef pymod_timed_xfer_methods[] = {
    {"__enter__", pymod_timed_xfer_enter, METH_NOARGS, "Starts the clock; returns the timed_transfer."},
    {"__exit__", PYMOD_FN(pymod_timed_xfer_exit), METH_FASTCALL,
     "Records the transfer with the body's duration if the body returned; an exception propagates unchanged and "
     "records nothing."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef pymod_timed_xfer_getset[] = {
    {"ns", pymod_timed_xfer_get_ns, NULL, "The duration recorded by the last `with` (ns); None before one ended "
     "without an exception.", NULL},
    {"dir", pymod_timed_xfer_get_dir, NULL, "The direction's name (\"h2d\" .. \"s2d\").", NULL},
    {"nbytes", pymod_timed_xfer_get_nbytes, NULL, "The bytes the transfer moves.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

#define PYMOD_TIMED_XFER_DOC                                                                                        \
    "timed_transfer(dir, nbytes, phase=None)\n--\n\nA transfer the engine times itself, as a context manager: "      \
    "`with memobs.timed_transfer(\"s2h\", n): f.readinto(buf)` times the body with memobs' clock "                  \
    "(CLOCK_MONOTONIC) and, when it returns, records it as record_xfer_ns(dir, nbytes, phase, ns) does: the "        \
    "transfer, and its bytes, 1 and ns in get_summary()[\"timed\"][phase][dir]. A body that raises records "         \
    "nothing (the exception goes on). dir, nbytes and phase are record_xfer's, checked here (TypeError / "            \
    "ValueError before the body runs); phase None is the thread's phase when the body ends. .ns is the duration "    \
    "recorded. One `with` at a time per object (RuntimeError when entered twice)."

static PyTypeObject pymod_timed_xfer_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "memobs.timed_transfer",
    .tp_basicsize = sizeof(pymod_timed_xfer_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = PYMOD_TIMED_XFER_DOC,
    .tp_new = pymod_timed_xfer_new,
    .tp_vectorcall = pymod_timed_xfer_vnew,
    .tp_dealloc = pymod_timed_xfer_dealloc,
    .tp_repr = pymod_timed_xfer_repr,
    .tp_methods = pymod_timed_xfer_methods,
    .tp_getset = pymod_timed_xfer_getset,
};

static PyObject *pymod_set_phase(PyObject *self, PyObject *arg) {
    int phase;
    (void)self;
    if (arg == Py_None) phase = MEMOBS_PHASE_NONE;
    else if ((phase = pymod_choice(arg, "set_phase", "phase", pymod_phase_names, 3)) < 0) return NULL;
    memobs_set_phase((memobs_phase_t)phase);
    Py_RETURN_NONE;
}

static PyObject *pymod_get_phase(PyObject *self, PyObject *unused) {
    memobs_phase_t p = memobs_get_phase();
    (void)self, (void)unused;
    if (p == MEMOBS_PHASE_PREFILL || p == MEMOBS_PHASE_DECODE) return PyUnicode_FromString(pymod_phase_names[p]);
    Py_RETURN_NONE;
}

/* ======================================================================== */
/* Control and timing                                                       */
/* ======================================================================== */

static PyObject *pymod_enable(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const kw[1] = {"on"};
    PyObject *a[1];
    int on = 1;
    (void)self;
    if (pymod_args("enable", args, nargs, kwnames, kw, 1, 0, a) < 0) return NULL;
    if (a[0] && (on = pymod_bool(a[0], "enable", "on")) < 0) return NULL;
    (void)memobs_set_enabled(on);
    Py_RETURN_NONE;
}

/* set_enabled(on): memobs_set_enabled, the previous setting returned. */
static PyObject *pymod_set_enabled(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const kw[1] = {"on"};
    PyObject *a[1];
    int on;
    (void)self;
    if (pymod_args("set_enabled", args, nargs, kwnames, kw, 1, 1, a) < 0) return NULL;
    if ((on = pymod_bool(a[0], "set_enabled", "on")) < 0) return NULL;
    return PyBool_FromLong(memobs_set_enabled(on));
}

static PyObject *pymod_is_enabled(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    return PyBool_FromLong(memobs_get_enabled());
}

static PyObject *pymod_reset(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    memobs_reset();
    Py_RETURN_NONE;
}

/* flush(): every output the environment asks for at exit, now (the GIL
   released while they are written: they never touch Python). */
static PyObject *pymod_flush(PyObject *self, PyObject *unused) {
    int rc;
    (void)self, (void)unused;
    Py_BEGIN_ALLOW_THREADS
    rc = memobs_flush();
    Py_END_ALLOW_THREADS
    if (rc != MEMOBS_OK) return PyErr_Format(PyExc_OSError, "memobs: writing the outputs failed: %s", memobs_strerror(rc));
    Py_RETURN_NONE;
}

/* Stops under CPython. memobs' C handlers leave SIGINT to Python, and
   SIGTERM and SIGHUP too until CPython has set its own up (so that
   signal.getsignal never says None because of memobs: memobs.h's "Private:
   stops and signals"). The package puts a Python handler of its own,
   _on_stop, on SIGTERM and SIGHUP where Python's is SIG_DFL (the main
   thread, memobs' signals on): it writes the outputs (flush) and ends the
   process by the signal as SIG_DFL would. A program that saves and
   restores the handlers (uvicorn) restores it, and a signal it raises
   again after its own shutdown is still written. */
static PyObject *pymod_on_stop(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    long sig;
    (void)self;
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "_on_stop(signum, frame): the signal number is missing");
        return NULL;
    }
    if ((sig = PyLong_AsLong(args[0])) == -1 && PyErr_Occurred()) return NULL;
    if (sig <= 0 || sig > 64) return PyErr_Format(PyExc_ValueError, "_on_stop: %ld is not a signal number", sig);
    Py_BEGIN_ALLOW_THREADS
    (void)memobs_flush(); /* a failure is said through memobs' log hook */
    Py_END_ALLOW_THREADS
    signal((int)sig, SIG_DFL);
    raise((int)sig);
    Py_RETURN_NONE;
}

/* _on_stop on SIGTERM and SIGHUP where Python's handler is SIG_DFL (memobs'
   signals on), or SIG_DFL back where it is _on_stop (off). Best effort:
   outside the main thread signal.signal refuses, and nothing changes. */
static void pymod_stops(PyObject *m) {
    static const char *const names[2] = {"SIGTERM", "SIGHUP"};
    int on = memobs_get_signals(), i;
    PyObject *sm = PyImport_ImportModule("signal"), *mine = NULL, *dfl = NULL;
    if (!sm || !(mine = PyObject_GetAttrString(m, "_on_stop")) || !(dfl = PyObject_GetAttrString(sm, "SIG_DFL"))) {
        PyErr_Clear();
        Py_XDECREF(sm);
        Py_XDECREF(mine);
        return;
    }
    for (i = 0; i < 2; i++) {
        PyObject *num = PyObject_GetAttrString(sm, names[i]), *cur = NULL, *r = NULL;
        if (num && (cur = PyObject_CallMethod(sm, "getsignal", "O", num)) != NULL) {
            if (on && PyObject_RichCompareBool(cur, dfl, Py_EQ) == 1)
                r = PyObject_CallMethod(sm, "signal", "OO", num, mine);
            else if (!on && cur == mine)
                r = PyObject_CallMethod(sm, "signal", "OO", num, dfl);
        }
        PyErr_Clear();
        Py_XDECREF(r);
        Py_XDECREF(cur);
        Py_XDECREF(num);
    }
    Py_DECREF(dfl);
    Py_DECREF(mine);
    Py_DECREF(sm);
}

static PyObject *pymod_stops_py(PyObject *self, PyObject *unused) {
    (void)unused;
    pymod_stops(self);
    Py_RETURN_NONE;
}

static PyObject *pymod_set_signals(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const kw[1] = {"on"};
    PyObject *a[1];
    int on, was;
    if (pymod_args("set_signals", args, nargs, kwnames, kw, 1, 1, a) < 0) return NULL;
    if ((on = pymod_bool(a[0], "set_signals", "on")) < 0) return NULL;
    was = memobs_set_signals(on);
    pymod_stops(self);
    return PyBool_FromLong(was);
}

static PyObject *pymod_get_signals(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    return PyBool_FromLong(memobs_get_signals());
}

/* Functions of no argument that return None. */
#define PYMOD_VOID(name, call)                                   \
    static PyObject *pymod_##name(PyObject *self, PyObject *unused) { \
        (void)self, (void)unused;                                \
        call;                                                    \
        Py_RETURN_NONE;                                          \
    }
PYMOD_VOID(ttft_start, memobs_ttft_start())
PYMOD_VOID(ttft_stop, memobs_ttft_stop())
PYMOD_VOID(tpot_step, memobs_tpot_step())
PYMOD_VOID(tpot_stop, memobs_tpot_stop())

/* A latency the engine measured on its own clock, in ns: one sample. */
#define PYMOD_LATENCY(pyname, cname)                                                                 \
    static PyObject *pymod_##pyname(PyObject *self, PyObject *arg) {                                 \
        uint64_t ns;                                                                                 \
        (void)self;                                                                                  \
        if (pymod_u64_max(arg, #pyname, "ns", MEMOBS_MAX_NS, "MEMOBS_MAX_NS", &ns) < 0) return NULL; \
        cname(ns);                                                                                   \
        Py_RETURN_NONE;                                                                              \
    }
PYMOD_LATENCY(record_ttft, memobs_record_ttft)
PYMOD_LATENCY(record_tpot, memobs_record_tpot)

/* A str request id as memobs' 64-bit id: FNV-1a 64 of its UTF-8 bytes
   (offset basis 0xcbf29ce484222325, prime 0x100000001b3; per byte, xor
   then multiply, modulo 2**64), so that a program, its log and memobs'
   request lines join on one number (request_id's docstring says it). */
static uint64_t pymod_fnv1a(const char *s, Py_ssize_t n) {
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    Py_ssize_t i;
    for (i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* A request id: an int 0 <= id < 2**64 (or __index__; bools refused), or
   a non-empty str, hashed (pymod_fnv1a). 0, or -1 with TypeError /
   ValueError (negative, too large, "", a lone surrogate). */
static int pymod_req_id(PyObject *o, const char *fname, uint64_t *out) {
    if (MEMOBS__LIKELY(PyLong_CheckExact(o))) return pymod_u64(o, fname, "id", out);
    if (PyUnicode_Check(o)) {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(o, &n);
        if (!s) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "%s(): id %R cannot be encoded as UTF-8 (a lone surrogate)", fname, o);
            return -1;
        }
        if (n == 0) {
            PyErr_Format(PyExc_ValueError, "%s(): id must not be an empty str", fname);
            return -1;
        }
        *out = pymod_fnv1a(s, n);
        return 0;
    }
    if (PyBool_Check(o) || !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): id must be an int (0 to 2**64-1) or a str, not %.200s", fname,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    return pymod_u64(o, fname, "id", out);
}

/* Functions of one request id. */
#define PYMOD_REQUEST(name)                                         \
    static PyObject *pymod_##name(PyObject *self, PyObject *arg) {  \
        uint64_t id;                                                \
        (void)self;                                                 \
        if (pymod_req_id(arg, #name, &id) < 0) return NULL;         \
        memobs_##name(id);                                          \
        Py_RETURN_NONE;                                             \
    }
PYMOD_REQUEST(request_begin)
PYMOD_REQUEST(request_token)
PYMOD_REQUEST(request_end)
PYMOD_REQUEST(request_enter)

static PyObject *pymod_request_leave(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    memobs_request_leave();
    Py_RETURN_NONE;
}

/* request_id(id): the 64-bit id memobs keeps for id (an int as it is). */
static PyObject *pymod_request_id(PyObject *self, PyObject *arg) {
    uint64_t id;
    (void)self;
    if (pymod_req_id(arg, "request_id", &id) < 0) return NULL;
    return PyLong_FromUnsignedLongLong(id);
}

/* request_current(): the request the calling thread is bound to, or None. */
static PyObject *pymod_request_current(PyObject *self, PyObject *unused) {
    uint64_t id;
    (void)self, (void)unused;
    if (!memobs_request_current(&id)) Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(id);
}

/* ======================================================================== */
/* Regions and markers                                                      */
/* ======================================================================== */

/* memobs keeps a name as at most 63 UTF-8 bytes (memobs.h's MEMOBS__REG_NAME,
   defined only where its implementation is: checked there). */
#define PYMOD_NAME_SIZE 64
#if defined(MEMOBS__REG_NAME) && MEMOBS__REG_NAME != PYMOD_NAME_SIZE
#error "PYMOD_NAME_SIZE must be memobs.h's MEMOBS__REG_NAME"
#endif

/* A region or marker name, as memobs keeps it: a str, not empty, no NUL;
   written to buf (size >= 5) as UTF-8 cut at a character boundary to
   size - 1 bytes (memobs cuts at 63; a longer buffer changes nothing), a
   lone surrogate as one U+FFFD (memobs would make three of its three
   bytes). 0, or -1 with TypeError / ValueError. */
static int pymod_name_text(PyObject *o, const char *fname, char *buf, size_t size) {
    Py_ssize_t i, n;
    size_t len = 0;
    int kind;
    const void *data;
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): name must be a str, not %.200s", fname, Py_TYPE(o)->tp_name);
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(o) < 0) return -1;
#endif
    n = PyUnicode_GET_LENGTH(o);
    if (n == 0) {
        PyErr_Format(PyExc_ValueError, "%s(): name must not be empty", fname);
        return -1;
    }
    kind = PyUnicode_KIND(o);
    data = PyUnicode_DATA(o);
    if (PyUnicode_FindChar(o, 0, 0, n, 1) != -1) {
        PyErr_Format(PyExc_ValueError, "%s(): name must not contain a NUL character", fname);
        return -1;
    }
    if (PyUnicode_IS_ASCII(o)) {
        len = (size_t)n < size - 1 ? (size_t)n : size - 1;
        memcpy(buf, data, len);
    } else {
        for (i = 0; i < n; i++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            unsigned char u[4];
            size_t k;
            if (c >= 0xD800 && c <= 0xDFFF) c = 0xFFFD; /* a lone surrogate ("\udcff" from surrogateescape) */
            if (c < 0x80) {
                u[0] = (unsigned char)c, k = 1;
            } else if (c < 0x800) {
                u[0] = (unsigned char)(0xC0 | (c >> 6)), u[1] = (unsigned char)(0x80 | (c & 0x3F)), k = 2;
            } else if (c < 0x10000) {
                u[0] = (unsigned char)(0xE0 | (c >> 12)), u[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
                u[2] = (unsigned char)(0x80 | (c & 0x3F)), k = 3;
            } else {
                u[0] = (unsigned char)(0xF0 | (c >> 18)), u[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
                u[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F)), u[3] = (unsigned char)(0x80 | (c & 0x3F)), k = 4;
            }
            if (len + k > size - 1) break;
            memcpy(buf + len, u, k);
            len += k;
        }
    }
    buf[len] = 0;
    return 0;
}

/* memobs.region: a name interned once (its id kept), entered with `with`
   or applied to a function. Immutable: the open regions are memobs' stack
   of each thread, so one object serves any number of threads and nested
   entries. */
typedef struct {
    PyObject_HEAD
    memobs_region_t id;
    PyObject *name; /* the name as memobs keeps it (str) */
} pymod_region_t;

/* What @region(name) returns: calls func inside the region (vectorcall);
   functools.update_wrapper gives it func's __name__, __doc__, __wrapped__... */
typedef struct {
    PyObject_HEAD
    pymod_region_t *region;
    PyObject *func;
    PyObject *dict;
    PyObject *weakrefs;
    vectorcallfunc vectorcall;
} pymod_rfunc_t;

static PyTypeObject pymod_region_type;
static PyTypeObject pymod_rfunc_type;
static PyObject *pymod_update_wrapper; /* functools.update_wrapper */

/* Region objects by the exact str they were made from, so that
   `with memobs.region("decode_step"):` in a loop makes no object and
   interns nothing after its first pass (a region is immutable: sharing one
   is safe). Bounded: names past PYMOD_REGION_CACHE strs get a new object
   each time. */
static PyObject *pymod_region_cache;
#ifdef MEMOBS_MAX_REGIONS
#define PYMOD_REGION_CACHE (4 * MEMOBS_MAX_REGIONS)
#else
#define PYMOD_REGION_CACHE 1024 /* attached: four times the preload's default MEMOBS_MAX_REGIONS */
#endif

static PyObject *pymod_region_make(PyTypeObject *type, PyObject *name) {
    char text[PYMOD_NAME_SIZE];
    const char *label;
    pymod_region_t *r;
    memobs_region_t id;
    int cacheable = PyUnicode_CheckExact(name); /* a str subclass may hash as it likes */
    if (MEMOBS__LIKELY(cacheable)) {
        PyObject *hit = PyDict_GetItemWithError(pymod_region_cache, name); /* borrowed */
        if (MEMOBS__LIKELY(hit != NULL)) {
            Py_INCREF(hit);
            return hit;
        }
        if (PyErr_Occurred()) return NULL;
    }
    if (!PyUnicode_Check(name) && PyCallable_Check(name)) {
        PyErr_Format(PyExc_TypeError, "region(): name must be a str, not %.200s (a decorator takes the name: "
                     "@memobs.region(\"prefill\"))", Py_TYPE(name)->tp_name);
        return NULL;
    }
    if (pymod_name_text(name, "region", text, sizeof text) < 0) return NULL;
    id = memobs_region_intern(text); /* >= 0: the text is not empty */
    if (id < 0 || !(label = memobs_region_label(id))) {
        PyErr_Format(PyExc_ValueError, "region(): memobs refused the name %R", name);
        return NULL;
    }
    if (!(r = PyObject_New(pymod_region_t, type))) return NULL;
    r->id = id;
    if (!(r->name = PyUnicode_DecodeUTF8(label, (Py_ssize_t)strlen(label), "replace"))) {
        Py_DECREF(r);
        return NULL;
    }
    if (cacheable && PyDict_GET_SIZE(pymod_region_cache) < PYMOD_REGION_CACHE &&
        PyDict_SetItem(pymod_region_cache, name, (PyObject *)r) < 0) {
        Py_DECREF(r);
        return NULL;
    }
    return (PyObject *)r;
}

static PyObject *pymod_region_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"name", NULL};
    PyObject *name;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:region", kw, &name)) return NULL;
    return pymod_region_make(type, name);
}

/* region(name) without a tuple: what `with memobs.region("x"):` pays. */
static PyObject *pymod_region_vnew(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (MEMOBS__LIKELY(nargs == 1 && !kwnames)) return pymod_region_make((PyTypeObject *)type, args[0]);
    {
        static const char *const kw[1] = {"name"};
        PyObject *a[1];
        if (pymod_args("region", args, nargs, kwnames, kw, 1, 1, a) < 0) return NULL;
        return pymod_region_make((PyTypeObject *)type, a[0]);
    }
}

static void pymod_region_dealloc(PyObject *self) {
    Py_XDECREF(((pymod_region_t *)self)->name);
    PyObject_Del(self);
}

static PyObject *pymod_region_repr(PyObject *self) {
    return PyUnicode_FromFormat("memobs.region(%R)", ((pymod_region_t *)self)->name);
}

static PyObject *pymod_region_enter(PyObject *self, PyObject *unused) {
    (void)unused;
    memobs_region_begin_id(((pymod_region_t *)self)->id);
    Py_INCREF(self);
    return self;
}

/* Ends the innermost region of the thread (this one, unless a region was
   begun or ended behind the with's back); the exception, if any, goes on. */
static PyObject *pymod_region_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self, (void)args, (void)nargs;
    memobs_region_end();
    Py_RETURN_NONE;
}

static PyObject *pymod_rfunc_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    pymod_rfunc_t *w = (pymod_rfunc_t *)self;
    PyObject *r;
    memobs_region_begin_id(w->region->id);
    r = PyObject_Vectorcall(w->func, args, nargsf, kwnames);
    memobs_region_end(); /* on return and on an exception alike */
    return r;
}

/* region(name)(func): the wrapper. Generator and coroutine functions are
   refused: their call returns at once, so the region would time the
   making of the generator, not its body. */
static PyObject *pymod_region_call(PyObject *self, PyObject *args, PyObject *kwargs) {
    PyObject *func, *code, *r;
    pymod_rfunc_t *w;
    if (!PyArg_ParseTuple(args, "O:region.__call__", &func)) return NULL;
    if (kwargs && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "region.__call__() takes no keyword arguments");
        return NULL;
    }
    if (!PyCallable_Check(func)) {
        PyErr_Format(PyExc_TypeError, "region(%R) decorates a callable, not %.200s", ((pymod_region_t *)self)->name,
                     Py_TYPE(func)->tp_name);
        return NULL;
    }
    if (PyFunction_Check(func) && (code = PyFunction_GetCode(func)) != NULL) { /* borrowed */
        PyObject *fl = PyObject_GetAttrString(code, "co_flags");
        long flags = fl ? PyLong_AsLong(fl) : -1;
        Py_XDECREF(fl);
        if (flags == -1 && PyErr_Occurred()) return NULL;
        if (flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) {
            PyErr_Format(PyExc_TypeError,
                         "region(%R) cannot decorate %R: a generator or coroutine function returns before its body "
                         "runs; use `with` inside the body, not across a yield or an await",
                         ((pymod_region_t *)self)->name, func);
            return NULL;
        }
    }
    if (!(w = PyObject_GC_New(pymod_rfunc_t, &pymod_rfunc_type))) return NULL;
    Py_INCREF(self);
    w->region = (pymod_region_t *)self;
    Py_INCREF(func);
    w->func = func;
    w->dict = NULL;
    w->weakrefs = NULL;
    w->vectorcall = pymod_rfunc_vectorcall;
    PyObject_GC_Track(w);
    /* __module__, __name__, __qualname__, __doc__, __dict__, __wrapped__ (3.12: __type_params__) */
    if (!(r = PyObject_CallFunctionObjArgs(pymod_update_wrapper, (PyObject *)w, func, NULL))) {
        Py_DECREF(w);
        return NULL;
    }
    Py_DECREF(r);
    return (PyObject *)w;
}

static PyObject *pymod_region_get_id(PyObject *self, void *unused) {
    (void)unused;
    return PyLong_FromLong((long)((pymod_region_t *)self)->id);
}

static PyObject *pymod_region_get_name(PyObject *self, void *unused) {
    PyObject *n = ((pymod_region_t *)self)->name;
    (void)unused;
    Py_INCREF(n);
    return n;
}

static PyMethodDef pymod_region_methods[] = {
    {"__enter__", pymod_region_enter, METH_NOARGS, "Begins the region on the calling thread; returns the region."},
    {"__exit__", PYMOD_FN(pymod_region_exit), METH_FASTCALL,
     "Ends the innermost region of the calling thread; an exception propagates unchanged."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef pymod_region_getset[] = {
    {"name", pymod_region_get_name, NULL, "The name as memobs keeps it (at most 63 UTF-8 bytes; \"(other)\" when "
     "the name table was full).", NULL},
    {"id", pymod_region_get_id, NULL, "memobs' id of the name (0: \"(other)\").", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

#define PYMOD_REGION_DOC                                                                                             \
    "region(name)\n--\n\nA named span of the calling thread: a context manager (`with memobs.region(\"decode_step\"):" \
    "`, ended also when the body raises) and a decorator (`@memobs.region(\"prefill\")`: each call of the function "  \
    "inside the region; functools.wraps semantics). Regions nest (at most 32 deep are timed) and are counted per "   \
    "name: get_regions() gives count, total_ns, mean_ns and max_ns. name: a non-empty str, kept as at most 63 UTF-8 " \
    "bytes (a lone surrogate as U+FFFD), interned when the region is made; region(name) again with the same str "    \
    "returns the same object. One region may be entered any number of times, nested, from any thread. The region "  \
    "is a thread's: do not keep one open across a yield or an await."

static PyTypeObject pymod_region_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "memobs.region",
    .tp_basicsize = sizeof(pymod_region_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = PYMOD_REGION_DOC,
    .tp_new = pymod_region_new,
    .tp_vectorcall = pymod_region_vnew,
    .tp_dealloc = pymod_region_dealloc,
    .tp_repr = pymod_region_repr,
    .tp_call = pymod_region_call,
    .tp_methods = pymod_region_methods,
    .tp_getset = pymod_region_getset,
};

static int pymod_rfunc_traverse(PyObject *self, visitproc visit, void *arg) {
    pymod_rfunc_t *w = (pymod_rfunc_t *)self;
    Py_VISIT(w->region);
    Py_VISIT(w->func);
    Py_VISIT(w->dict);
    return 0;
}

static int pymod_rfunc_clear(PyObject *self) {
    pymod_rfunc_t *w = (pymod_rfunc_t *)self;
    Py_CLEAR(w->region);
    Py_CLEAR(w->func);
    Py_CLEAR(w->dict);
    return 0;
}

static void pymod_rfunc_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    if (((pymod_rfunc_t *)self)->weakrefs) PyObject_ClearWeakRefs(self);
    pymod_rfunc_clear(self);
    PyObject_GC_Del(self);
}

static PyObject *pymod_rfunc_repr(PyObject *self) {
    pymod_rfunc_t *w = (pymod_rfunc_t *)self;
    return PyUnicode_FromFormat("<memobs.region(%R) of %R>", w->region->name, w->func);
}

/* A method: bound as a function is. */
static PyObject *pymod_rfunc_get(PyObject *self, PyObject *obj, PyObject *type) {
    (void)type;
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyObject *pymod_rfunc_get_region(PyObject *self, void *unused) {
    PyObject *r = (PyObject *)((pymod_rfunc_t *)self)->region;
    (void)unused;
    Py_INCREF(r);
    return r;
}

/* pickle (multiprocessing's spawn) and copy: by reference, as a function
   is, under its __qualname__ in its __module__. */
static PyObject *pymod_rfunc_reduce(PyObject *self, PyObject *unused) {
    (void)unused;
    return PyObject_GetAttrString(self, "__qualname__");
}

static PyMethodDef pymod_rfunc_methods[] = {
    {"__reduce__", pymod_rfunc_reduce, METH_NOARGS, "Pickled by reference: its __module__ and __qualname__."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef pymod_rfunc_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {"region", pymod_rfunc_get_region, NULL, "The memobs.region each call is inside.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject pymod_rfunc_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "memobs.region_function",
    .tp_basicsize = sizeof(pymod_rfunc_t),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A function called inside a memobs.region (what @memobs.region(name) returns).",
    .tp_vectorcall_offset = offsetof(pymod_rfunc_t, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_dictoffset = offsetof(pymod_rfunc_t, dict),
    .tp_weaklistoffset = offsetof(pymod_rfunc_t, weakrefs),
    .tp_traverse = pymod_rfunc_traverse,
    .tp_clear = pymod_rfunc_clear,
    .tp_dealloc = pymod_rfunc_dealloc,
    .tp_repr = pymod_rfunc_repr,
    .tp_descr_get = pymod_rfunc_get,
    .tp_methods = pymod_rfunc_methods,
    .tp_getset = pymod_rfunc_getset,
};

static PyObject *pymod_mark(PyObject *self, PyObject *arg) {
    char text[PYMOD_NAME_SIZE];
    (void)self;
    if (Py_TYPE(arg) == &pymod_region_type) {
        memobs_mark_id(((pymod_region_t *)arg)->id);
        Py_RETURN_NONE;
    }
    if (pymod_name_text(arg, "mark", text, sizeof text) < 0) return NULL;
    memobs_mark(text); /* nothing interned while memobs is off */
    Py_RETURN_NONE;
}

static PyObject *pymod_region_depth(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    return PyLong_FromLong(memobs_region_depth());
}

static PyObject *pymod_region_timing(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const kw[1] = {"on"};
    PyObject *a[1];
    int on;
    (void)self;
    if (pymod_args("region_timing", args, nargs, kwnames, kw, 1, 0, a) < 0) return NULL;
    if (!a[0] || a[0] == Py_None) return PyBool_FromLong(memobs_region_get_timing());
    if ((on = pymod_bool(a[0], "region_timing", "on")) < 0) return NULL;
    return PyBool_FromLong(memobs_region_set_timing(on));
}

static PyObject *pymod_region_set_timing(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const kw[1] = {"on"};
    PyObject *a[1];
    int on;
    (void)self;
    if (pymod_args("region_set_timing", args, nargs, kwnames, kw, 1, 1, a) < 0) return NULL;
    if ((on = pymod_bool(a[0], "region_set_timing", "on")) < 0) return NULL;
    return PyBool_FromLong(memobs_region_set_timing(on));
}

static PyObject *pymod_region_get_timing(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    return PyBool_FromLong(memobs_region_get_timing());
}

/* For the tests: memobs_region_end() as C code would call it, unmatched or not. */
static PyObject *pymod_region_end_c(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    memobs_region_end();
    Py_RETURN_NONE;
}

/* The names used in the window (a region ended or a marker set), in id
   order: a list of dicts with the keys of the JSON summary's "regions". */
static PyObject *pymod_regions_list(void) {
    size_t want = memobs_get_regions(NULL, 0), n, i;
    memobs_region_stats_t *r = (memobs_region_stats_t *)PyMem_Malloc((want ? want : 1) * sizeof *r);
    PyObject *list;
    if (!r) return PyErr_NoMemory();
    n = memobs_get_regions(r, want);
    if (n > want) n = want; /* names interned since the first call: not used yet */
    if (!(list = PyList_New(0))) goto done;
    for (i = 0; i < n; i++) {
        const memobs_region_stats_t *x = &r[i];
        PyObject *d;
        if (!x->count && !x->marks) continue;
        d = Py_BuildValue("{s:N,s:K,s:K,s:K,s:K,s:K,s:K,s:O}", "name",
                          PyUnicode_DecodeUTF8(x->name, (Py_ssize_t)strlen(x->name), "replace"), "count",
                          PYMOD_ULL(x->count), "timed", PYMOD_ULL(x->timed), "total_ns", PYMOD_ULL(x->total_ns),
                          "mean_ns", PYMOD_ULL(x->timed ? x->total_ns / x->timed : 0), "max_ns",
                          PYMOD_ULL(x->max_ns), "marks", PYMOD_ULL(x->marks), "collective",
                          x->collective ? Py_True : Py_False);
        if (!d || PyList_Append(list, d) < 0) {
            Py_XDECREF(d);
            Py_CLEAR(list);
            goto done;
        }
        Py_DECREF(d);
    }
done:
    PyMem_Free(r);
    return list;
}

static PyObject *pymod_get_regions(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    return pymod_regions_list();
}

/* ======================================================================== */
/* Summaries                                                                */
/* ======================================================================== */

/* d[key] = v, v's reference consumed (NULL v: an exception is set). */
static int pymod_put(PyObject *d, const char *key, PyObject *v) {
    int rc;
    if (!v) return -1;
    rc = PyDict_SetItemString(d, key, v);
    Py_DECREF(v);
    return rc;
}

/* nano-vllm's "total": its six keys first, then the storage tier's
   directions (memobs' JSON per phase, in memobs_dir_t order). */
static PyObject *pymod_dirs(const memobs_dirs_t *d) {
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "h2d_bytes",
                         PYMOD_ULL(d->h2d.bytes), "h2d_count", PYMOD_ULL(d->h2d.count), "d2h_bytes",
                         PYMOD_ULL(d->d2h.bytes), "d2h_count", PYMOD_ULL(d->d2h.count), "d2d_bytes",
                         PYMOD_ULL(d->d2d.bytes), "d2d_count", PYMOD_ULL(d->d2d.count), "h2s_bytes",
                         PYMOD_ULL(d->h2s.bytes), "h2s_count", PYMOD_ULL(d->h2s.count), "s2h_bytes",
                         PYMOD_ULL(d->s2h.bytes), "s2h_count", PYMOD_ULL(d->s2h.count), "d2s_bytes",
                         PYMOD_ULL(d->d2s.bytes), "d2s_count", PYMOD_ULL(d->d2s.count), "s2d_bytes",
                         PYMOD_ULL(d->s2d.bytes), "s2d_count", PYMOD_ULL(d->s2d.count));
}

static PyObject *pymod_latency(const memobs_latency_t *l) {
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "count", PYMOD_ULL(l->count), "mean_ns",
                         PYMOD_ULL(l->mean_ns), "p50_ns", PYMOD_ULL(l->p50_ns), "p90_ns", PYMOD_ULL(l->p90_ns),
                         "p99_ns", PYMOD_ULL(l->p99_ns), "max_ns", PYMOD_ULL(l->max_ns), "last_ns",
                         PYMOD_ULL(l->last_ns));
}

/* A C string as str (undecodable bytes replaced); "" as None if none_if_empty. */
static PyObject *pymod_text(const char *s, int none_if_empty) {
    if (!s[0] && none_if_empty) Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

static PyObject *pymod_identity(const memobs_identity_t *id) {
    PyObject *d = Py_BuildValue("{s:i,s:i,s:i,s:L}", "rank", (int)id->rank, "local_rank", (int)id->local_rank,
                                "world_size", (int)id->world_size, "pid", (long long)id->pid);
    if (!d) return NULL;
    if (pymod_put(d, "job_id", pymod_text(id->job_id, 1)) < 0 || pymod_put(d, "host", pymod_text(id->host, 0)) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *pymod_memory(const memobs_summary_t *s) {
    static const char *const kname[MEMOBS_MEM_KINDS] = {"device", "host", "pinned", "managed"};
    PyObject *d = PyDict_New();
    unsigned k;
    if (!d) return NULL;
    for (k = 0; k < MEMOBS_MEM_KINDS; k++) {
        const memobs_mem_stats_t *m = &s->mem[k];
        if (pymod_put(d, kname[k],
                      Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "current_bytes",
                                    PYMOD_ULL(m->current_bytes), "peak_bytes", PYMOD_ULL(m->peak_bytes), "live",
                                    PYMOD_ULL(m->live), "allocs", PYMOD_ULL(m->allocs), "frees", PYMOD_ULL(m->frees),
                                    "alloc_bytes", PYMOD_ULL(m->alloc_bytes), "pending_frees",
                                    PYMOD_ULL(m->pending_frees), "pending_bytes", PYMOD_ULL(m->pending_bytes))) < 0) {
            Py_DECREF(d);
            return NULL;
        }
    }
    return d;
}

static PyObject *pymod_tracker(const memobs_summary_t *s) {
    const memobs_track_problems_t *t = &s->track;
    PyObject *d = Py_BuildValue(
        "{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "traces", PYMOD_ULL(t->traces), "capacity",
        PYMOD_ULL(t->capacity), "frees_unknown", PYMOD_ULL(t->frees_unknown), "frees_double",
        PYMOD_ULL(t->frees_double), "frees_null", PYMOD_ULL(t->frees_null), "allocs_null", PYMOD_ULL(t->allocs_null),
        "allocs_zero", PYMOD_ULL(t->allocs_zero), "allocs_duplicate", PYMOD_ULL(t->allocs_duplicate),
        "allocs_bad_kind", PYMOD_ULL(t->allocs_bad_kind), "untracked", PYMOD_ULL(t->untracked), "untracked_bytes",
        PYMOD_ULL(t->untracked_bytes), "untracked_live", PYMOD_ULL(t->untracked_live), "untracked_frees",
        PYMOD_ULL(t->untracked_frees), "traces_dropped", PYMOD_ULL(t->traces_dropped));
    if (d && pymod_put(d, "tracking", PyBool_FromLong(s->tracking)) < 0) Py_CLEAR(d);
    return d;
}

/* Transfers in flight (memobs_inflight_t): per direction count, bytes and
   the oldest's age, the totals and the window's counts. */
static PyObject *pymod_inflight(const memobs_inflight_t *x) {
    PyObject *d, *dirs = PyDict_New();
    unsigned k;
    if (!dirs) return NULL;
    for (k = 0; k < MEMOBS_DIRS; k++)
        if (pymod_put(dirs, pymod_dir_names[k], Py_BuildValue("{s:K,s:K,s:K}", "count", PYMOD_ULL(x->dir[k].count),
                                                              "bytes", PYMOD_ULL(x->dir[k].bytes), "oldest_ns",
                                                              PYMOD_ULL(x->dir[k].oldest_ns))) < 0) {
            Py_DECREF(dirs);
            return NULL;
        }
    d = Py_BuildValue("{s:N,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "directions", dirs, "count",
                      PYMOD_ULL(x->count), "bytes", PYMOD_ULL(x->bytes), "oldest_ns", PYMOD_ULL(x->oldest_ns), "stuck",
                      PYMOD_ULL(x->stuck), "stuck_total", PYMOD_ULL(x->stuck_total), "ended", PYMOD_ULL(x->ended),
                      "cancelled", PYMOD_ULL(x->cancelled), "refused", PYMOD_ULL(x->refused), "misuse",
                      PYMOD_ULL(x->misuse), "stuck_after_ns", PYMOD_ULL(x->stuck_after_ns), "capacity",
                      PYMOD_ULL(x->capacity));
    return d;
}

static PyObject *pymod_timed(const memobs_summary_t *s) {
    const char *const *dname = pymod_dir_names;
    PyObject *d = PyDict_New(), *ph = NULL;
    unsigned p, k;
    if (!d) return NULL;
    for (p = 0; p < MEMOBS_PHASES; p++) {
        if (!(ph = PyDict_New())) goto fail;
        for (k = 0; k < MEMOBS_DIRS; k++) {
            const memobs_timed_t *x = &s->timed[p][k];
            if (pymod_put(ph, dname[k], Py_BuildValue("{s:K,s:K,s:K}", "bytes", PYMOD_ULL(x->bytes), "count",
                                                      PYMOD_ULL(x->count), "ns", PYMOD_ULL(x->ns))) < 0)
                goto fail;
        }
        if (PyDict_SetItemString(d, pymod_phase_names[p], ph) < 0) goto fail;
        Py_CLEAR(ph);
    }
    if (pymod_put(d, "in_flight_copies", PyLong_FromUnsignedLongLong(s->timed_in_flight_copies)) < 0 ||
        pymod_put(d, "in_flight_bytes", PyLong_FromUnsignedLongLong(s->timed_in_flight_bytes)) < 0)
        goto fail;
    return d;
fail:
    Py_XDECREF(ph);
    Py_DECREF(d);
    return NULL;
}

/* Transfer sizes per direction: count, bytes, the percentiles and max (bucket
   bounds, 2^b), and the non-empty log2 buckets as [[upper_bound, count], ...]. */
static PyObject *pymod_sizes(const memobs_summary_t *s) {
    PyObject *d = PyDict_New(), *x = NULL, *b = NULL;
    unsigned k, i;
    if (!d) return NULL;
    for (k = 0; k < MEMOBS_DIRS; k++) {
        const memobs_xfer_sizes_t *z = &s->sizes[k];
        if (!(b = PyList_New(0))) goto fail;
        for (i = 0; i < MEMOBS_SIZE_BUCKETS; i++) {
            PyObject *pair;
            if (!z->buckets[i]) continue;
            if (!(pair = Py_BuildValue("[KK]", PYMOD_ULL(UINT64_C(1) << i), PYMOD_ULL(z->buckets[i])))) goto fail;
            if (PyList_Append(b, pair) < 0) {
                Py_DECREF(pair);
                goto fail;
            }
            Py_DECREF(pair);
        }
        if (!(x = Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K}", "count", PYMOD_ULL(z->count), "bytes",
                                PYMOD_ULL(z->bytes), "p50", PYMOD_ULL(z->p50), "p90", PYMOD_ULL(z->p90), "p99",
                                PYMOD_ULL(z->p99), "max", PYMOD_ULL(z->max))) ||
            PyDict_SetItemString(x, "buckets", b) < 0 || PyDict_SetItemString(d, pymod_dir_names[k], x) < 0)
            goto fail;
        Py_CLEAR(b);
        Py_CLEAR(x);
    }
    return d;
fail:
    Py_XDECREF(b);
    Py_XDECREF(x);
    Py_DECREF(d);
    return NULL;
}

static int pymod_coll_summary(PyObject *d); /* "collectives" and "peers" (Collectives and peers, below) */

/* nano-vllm's MemoryObserver.get_summary() shape ("total" with bytes and
   counts per direction, nano-vllm's six keys first, then the storage
   tier's; "prefill" and "decode" with h2d_bytes and d2h_bytes only, as
   nano-vllm has them), then what memobs adds, named as in its JSON
   summary. */
static PyObject *pymod_summary_dict(const memobs_summary_t *s) {
    PyObject *d = PyDict_New(), *x;
    uint32_t c;
    if (!d) return NULL;
    if (pymod_put(d, "total", pymod_dirs(&s->total)) < 0 ||
        pymod_put(d, "prefill", Py_BuildValue("{s:K,s:K}", "h2d_bytes", PYMOD_ULL(s->prefill.h2d.bytes), "d2h_bytes",
                                              PYMOD_ULL(s->prefill.d2h.bytes))) < 0 ||
        pymod_put(d, "decode", Py_BuildValue("{s:K,s:K}", "h2d_bytes", PYMOD_ULL(s->decode.h2d.bytes), "d2h_bytes",
                                             PYMOD_ULL(s->decode.d2h.bytes))) < 0 ||
        pymod_put(d, "unphased", pymod_dirs(&s->unphased)) < 0)
        goto fail;
    /* every phase with every direction and counts (D2D and storage included) */
    if (!(x = PyDict_New()) || pymod_put(d, "phases", x) < 0) goto fail;
    if (pymod_put(x, "prefill", pymod_dirs(&s->prefill)) < 0 || pymod_put(x, "decode", pymod_dirs(&s->decode)) < 0 ||
        pymod_put(x, "unphased", pymod_dirs(&s->unphased)) < 0)
        goto fail;
    /* the program's own records, apart from the observed ones (memobs_set_manual_apart: the LD_PRELOAD library) */
    if (!(x = PyDict_New()) || pymod_put(d, "manual", x) < 0) goto fail;
    if (pymod_put(x, "apart", PyBool_FromLong(s->manual.apart)) < 0 ||
        pymod_put(x, "total", pymod_dirs(&s->manual.total)) < 0 ||
        pymod_put(x, "prefill", pymod_dirs(&s->manual.prefill)) < 0 ||
        pymod_put(x, "decode", pymod_dirs(&s->manual.decode)) < 0 ||
        pymod_put(x, "unphased", pymod_dirs(&s->manual.unphased)) < 0)
        goto fail;
    if (pymod_put(d, "ttft", pymod_latency(&s->ttft)) < 0 || pymod_put(d, "tpot", pymod_latency(&s->tpot)) < 0 ||
        pymod_put(d, "e2e", pymod_latency(&s->e2e)) < 0)
        goto fail;
    if (pymod_put(d, "requests",
                  Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "begun", PYMOD_ULL(s->requests_begun),
                                "completed", PYMOD_ULL(s->requests_completed), "aborted",
                                PYMOD_ULL(s->requests_aborted), "abandoned", PYMOD_ULL(s->requests_abandoned),
                                "in_flight", PYMOD_ULL(s->requests_in_flight), "dropped",
                                PYMOD_ULL(s->requests_dropped), "unknown", PYMOD_ULL(s->requests_unknown),
                                "duplicate", PYMOD_ULL(s->requests_duplicate))) < 0)
        goto fail;
    /* the part of the transfer figures made on a request's behalf (attribution) */
    if (!(x = PyDict_New()) || pymod_put(d, "attributed", x) < 0) goto fail;
    if (pymod_put(x, "total", pymod_dirs(&s->attributed.total)) < 0 ||
        pymod_put(x, "prefill", pymod_dirs(&s->attributed.prefill)) < 0 ||
        pymod_put(x, "decode", pymod_dirs(&s->attributed.decode)) < 0 ||
        pymod_put(x, "unphased", pymod_dirs(&s->attributed.unphased)) < 0 ||
        pymod_put(x, "orphan_bytes", PyLong_FromUnsignedLongLong(s->attributed.orphan_bytes)) < 0 ||
        pymod_put(x, "bind_misuse", PyLong_FromUnsignedLongLong(s->attributed.bind_misuse)) < 0 ||
        pymod_put(x, "tenant_misuse", PyLong_FromUnsignedLongLong(s->attributed.tenant_misuse)) < 0 ||
        pymod_put(d, "problems",
                  Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "ttft_unmatched", PYMOD_ULL(s->ttft_unmatched),
                                "tpot_unarmed", PYMOD_ULL(s->tpot_unarmed), "bad_records", PYMOD_ULL(s->bad_records),
                                "untracked_threads", PYMOD_ULL(s->untracked_threads), "region_unmatched_ends",
                                PYMOD_ULL(s->region_unmatched_ends), "region_too_deep", PYMOD_ULL(s->region_too_deep),
                                "region_names_dropped", PYMOD_ULL(s->region_names_dropped), "signal_dropped",
                                PYMOD_ULL(s->signal_dropped))) < 0)
        goto fail;
    if (!(x = PyDict_New()) || pymod_put(d, "counters", x) < 0) goto fail;
    for (c = 0; c < s->ncounters && c < MEMOBS_MAX_COUNTERS; c++)
        if (pymod_put(x, s->counters[c].name, PyLong_FromUnsignedLongLong(s->counters[c].value)) < 0) goto fail;
    if (pymod_put(d, "memory", pymod_memory(s)) < 0 || pymod_put(d, "tracker", pymod_tracker(s)) < 0 ||
        pymod_put(d, "timed", pymod_timed(s)) < 0 || pymod_put(d, "sizes", pymod_sizes(s)) < 0 ||
        pymod_put(d, "in_flight", pymod_inflight(&s->in_flight)) < 0 ||
        pymod_put(d, "regions", pymod_regions_list()) < 0 || pymod_put(d, "identity", pymod_identity(&s->identity)) < 0 ||
        pymod_put(d, "enabled", PyBool_FromLong(s->enabled)) < 0 ||
        pymod_put(d, "window_ns", PyLong_FromUnsignedLongLong(s->window_ns)) < 0 ||
        pymod_put(d, "memobs_version", PyUnicode_FromString(MEMOBS_VERSION)) < 0 || pymod_coll_summary(d) < 0)
        goto fail;
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

static PyObject *pymod_get_summary(PyObject *self, PyObject *unused) {
    /* a few KB: off the C stack of whatever thread calls */
    memobs_summary_t *s = (memobs_summary_t *)PyMem_Malloc(sizeof *s);
    PyObject *d;
    (void)self, (void)unused;
    if (!s) return PyErr_NoMemory();
    memobs_get_summary(s);
    d = pymod_summary_dict(s);
    PyMem_Free(s);
    return d;
}

static PyObject *pymod_print_summary(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    pymod_flush_python_streams();
    Py_BEGIN_ALLOW_THREADS
    memobs_print_summary();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *pymod_write_summary(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const kw[2] = {"path", "fmt"};
    static const char *const fmts[2] = {"text", "json"};
    PyObject *a[2];
    int fmt = MEMOBS_FORMAT_TEXT, own, rc;
    FILE *f;
    (void)self;
    if (pymod_args("write_summary", args, nargs, kwnames, kw, 2, 1, a) < 0) return NULL;
    if (a[0] == Py_None) {
        PyErr_SetString(PyExc_TypeError, "write_summary(): path must be a path, \"stderr\" or \"stdout\", not None");
        return NULL;
    }
    if (a[1] && (fmt = pymod_choice(a[1], "write_summary", "fmt", fmts, 2)) < 0) return NULL;
    if (!(f = pymod_open(a[0], stderr, &own))) return NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = memobs_write_summary(f, (memobs_format_t)fmt);
    rc = pymod_close(f, own, rc);
    Py_END_ALLOW_THREADS
    return pymod_io_result(rc, "write_summary", a[0]);
}

static PyObject *pymod_write_html(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const kw[1] = {"path"};
    PyObject *a[1];
    int own, rc;
    FILE *f;
    (void)self;
    if (pymod_args("write_html", args, nargs, kwnames, kw, 1, 1, a) < 0) return NULL;
    if (a[0] == Py_None) {
        PyErr_SetString(PyExc_TypeError, "write_html(): path must be a path, \"stderr\" or \"stdout\", not None");
        return NULL;
    }
    if (!(f = pymod_open(a[0], stderr, &own))) return NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = memobs_write_html(f);
    rc = pymod_close(f, own, rc);
    Py_END_ALLOW_THREADS
    return pymod_io_result(rc, "write_html", a[0]);
}

/* format_prometheus(): memobs_format_prometheus' text as a str. The text
   is whole or "" (its length says how much room it wanted): grow and call
   again until one snapshot fits, since the figures may grow in between.
   The size of the last one starts the next call, so that a scrape is one
   snapshot in the usual case. */
static size_t pymod_prom_hint = 1 << 16;

static PyObject *pymod_format_prometheus(PyObject *self, PyObject *unused) {
    size_t len = pymod_prom_hint, n;
    char *buf;
    PyObject *r;
    (void)self, (void)unused;
    for (;;) {
        if (!(buf = (char *)PyMem_Malloc(len))) return PyErr_NoMemory();
        Py_BEGIN_ALLOW_THREADS /* the snapshot takes memobs' locks: never with the GIL held */
        n = memobs_format_prometheus(buf, len);
        Py_END_ALLOW_THREADS
        if (n == 0) { /* memobs found no memory for the snapshot */
            PyMem_Free(buf);
            return PyErr_NoMemory();
        }
        if (n < len) break;
        PyMem_Free(buf);
        len = n + n / 4 + 4096; /* room for what is recorded before the next call */
    }
    pymod_prom_hint = n + n / 4 + 4096;
    r = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)n, "replace");
    PyMem_Free(buf);
    return r;
}

/* ======================================================================== */
/* Requests: attribution                                                    */
/* ======================================================================== */

/* memobs.request(id): `with` binds the calling thread to request id
   (memobs_request_enter) and leaves it at the end of the body, also when
   the body raises. The object keeps the id only: the bindings are
   memobs' stack of each thread, so one object serves nested entries and
   any number of threads. */
typedef struct {
    PyObject_HEAD
    uint64_t id;
} pymod_request_t;

static PyTypeObject pymod_request_type;

static PyObject *pymod_request_make(PyTypeObject *type, PyObject *id) {
    pymod_request_t *r;
    uint64_t v;
    if (pymod_req_id(id, "request", &v) < 0) return NULL;
    if (!(r = PyObject_New(pymod_request_t, type))) return NULL;
    r->id = v;
    return (PyObject *)r;
}

static PyObject *pymod_request_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"id", NULL};
    PyObject *id;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:request", kw, &id)) return NULL;
    return pymod_request_make(type, id);
}

/* request(id) without a tuple: what `with memobs.request(rid):` pays. */
static PyObject *pymod_request_vnew(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    static const char *const kw[1] = {"id"};
    PyObject *a[1];
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (MEMOBS__LIKELY(nargs == 1 && !kwnames)) return pymod_request_make((PyTypeObject *)type, args[0]);
    if (pymod_args("request", args, nargs, kwnames, kw, 1, 1, a) < 0) return NULL;
    return pymod_request_make((PyTypeObject *)type, a[0]);
}

static void pymod_request_dealloc(PyObject *self) {
    PyObject_Del(self);
}

static PyObject *pymod_request_repr(PyObject *self) {
    return PyUnicode_FromFormat("memobs.request(%llu)", PYMOD_ULL(((pymod_request_t *)self)->id));
}

static PyObject *pymod_request_cm_enter(PyObject *self, PyObject *unused) {
    (void)unused;
    memobs_request_enter(((pymod_request_t *)self)->id);
    Py_INCREF(self);
    return self;
}

/* Leaves the thread's innermost binding (this one, unless a request was
   entered or left behind the with's back); the exception, if any, goes on. */
static PyObject *pymod_request_cm_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self, (void)args, (void)nargs;
    memobs_request_leave();
    Py_RETURN_NONE;
}

static PyObject *pymod_request_get_id(PyObject *self, void *unused) {
    (void)unused;
    return PyLong_FromUnsignedLongLong(((pymod_request_t *)self)->id);
}

static PyMethodDef pymod_request_methods[] = {
    {"__enter__", pymod_request_cm_enter, METH_NOARGS,
     "Binds the calling thread to the request (request_enter); returns the request object."},
    {"__exit__", PYMOD_FN(pymod_request_cm_exit), METH_FASTCALL,
     "Leaves the thread's innermost binding (request_leave); an exception propagates unchanged."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef pymod_request_getset[] = {
    {"id", pymod_request_get_id, NULL, "The 64-bit id memobs keeps (a str's is request_id(str)).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

#define PYMOD_REQUEST_DOC                                                                                           \
    "request(id)\n--\n\nThe calling thread bound to request id for a `with` body: `with memobs.request(rid): ...` " \
    "calls request_enter(rid) on entry and request_leave() on exit, also when the body raises (the exception "     \
    "goes on). Every transfer record the thread makes in between (record_h2d and the others, record_xfer, "        \
    "timed_transfer; under the LD_PRELOAD library the copies it observes) goes to the request's ledger as well "   \
    "as to the figures; regions the thread ends add their time. Bindings nest (8 deep; the innermost gets the "     \
    "records) and belong to a thread: do not keep one across an await or a yield. id: an int (0 to 2**64-1) or a " \
    "str (request_id(str)); the request is begun and ended with request_begin / request_end, outside or inside "   \
    "the body. One object may be entered any number of times, nested, from any thread."

static PyTypeObject pymod_request_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "memobs.request",
    .tp_basicsize = sizeof(pymod_request_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = PYMOD_REQUEST_DOC,
    .tp_new = pymod_request_new,
    .tp_vectorcall = pymod_request_vnew,
    .tp_dealloc = pymod_request_dealloc,
    .tp_repr = pymod_request_repr,
    .tp_methods = pymod_request_methods,
    .tp_getset = pymod_request_getset,
};

/* request_xfer(id, dir, nbytes, phase=None, ns=None): memobs_request_xfer,
   or memobs_request_xfer_ns when ns is given; arguments checked before
   anything is recorded. */
static PyObject *pymod_request_xfer(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const kw[5] = {"id", "dir", "nbytes", "phase", "ns"};
    PyObject *a[5];
    pymod_xfer_args_t x;
    uint64_t id, ns = 0;
    (void)self;
    if (pymod_args("request_xfer", args, nargs, kwnames, kw, 5, 3, a) < 0 ||
        pymod_req_id(a[0], "request_xfer", &id) < 0 || pymod_xfer_args(a[1], a[2], a[3], "request_xfer", &x) < 0 ||
        (a[4] && a[4] != Py_None && pymod_u64_max(a[4], "request_xfer", "ns", MEMOBS_MAX_NS, "MEMOBS_MAX_NS", &ns) < 0))
        return NULL;
    if (a[4] && a[4] != Py_None)
        memobs_request_xfer_ns(id, (memobs_dir_t)x.dir, x.bytes, (memobs_phase_t)pymod_xfer_phase(&x), ns);
    else
        memobs_request_xfer(id, (memobs_dir_t)x.dir, x.bytes, (memobs_phase_t)pymod_xfer_phase(&x));
    Py_RETURN_NONE;
}

/* request_xfer_split(ids, shares, dir, nbytes, phase=None):
   memobs_request_xfer_split, every argument checked first (ids a
   non-empty sequence of ids, shares None or as many ints >= 0 adding up to
   at most 2**64-1). */
static PyObject *pymod_request_xfer_split(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                          PyObject *kwnames) {
    static const char *const kw[5] = {"ids", "shares", "dir", "nbytes", "phase"};
    static const char *const fname = "request_xfer_split";
    PyObject *a[5], *ids = NULL, *shares = NULL, *r = NULL;
    pymod_xfer_args_t x;
    uint64_t *v = NULL, sum = 0;
    Py_ssize_t n, i;
    int rc;
    (void)self;
    if (pymod_args(fname, args, nargs, kwnames, kw, 5, 4, a) < 0 || pymod_xfer_args(a[2], a[3], a[4], fname, &x) < 0)
        return NULL;
    if (PyUnicode_Check(a[0]) || PyBytes_Check(a[0]) || PyByteArray_Check(a[0])) {
        PyErr_Format(PyExc_TypeError, "%s(): ids must be a sequence of ids (a list, a tuple), not %.200s (one "
                     "request: request_xfer)", fname, Py_TYPE(a[0])->tp_name);
        return NULL;
    }
    /* tuples: copies that no __index__ called below can change */
    if (!(ids = PySequence_Tuple(a[0]))) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s(): ids must be a sequence of ids (a list, a tuple), not %.200s", fname,
                         Py_TYPE(a[0])->tp_name);
        }
        return NULL;
    }
    if ((n = PyTuple_GET_SIZE(ids)) == 0) {
        PyErr_Format(PyExc_ValueError, "%s(): ids must not be empty", fname);
        goto done;
    }
    if (a[1] != Py_None) {
        if (PyUnicode_Check(a[1]) || PyBytes_Check(a[1]) || PyByteArray_Check(a[1]) ||
            !(shares = PySequence_Tuple(a[1]))) {
            if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "%s(): shares must be None (equal shares) or a sequence of ints, not "
                             "%.200s", fname, Py_TYPE(a[1])->tp_name);
            }
            goto done;
        }
        if (PyTuple_GET_SIZE(shares) != n) {
            PyErr_Format(PyExc_ValueError, "%s(): %zd ids but %zd shares (one share per id)", fname, n,
                         PyTuple_GET_SIZE(shares));
            goto done;
        }
    }
    if ((size_t)n > PY_SSIZE_T_MAX / (2 * sizeof *v) || !(v = (uint64_t *)PyMem_Malloc((size_t)n * 2 * sizeof *v))) {
        PyErr_NoMemory();
        goto done;
    }
    for (i = 0; i < n; i++)
        if (pymod_req_id(PyTuple_GET_ITEM(ids, i), fname, &v[i]) < 0) goto done;
    for (i = 0; shares && i < n; i++) {
        if (pymod_u64(PyTuple_GET_ITEM(shares, i), fname, "a share", &v[n + i]) < 0) goto done;
        if (sum + v[n + i] < sum) {
            PyErr_Format(PyExc_ValueError, "%s(): the shares add up past 2**64-1", fname);
            goto done;
        }
        sum += v[n + i];
    }
    rc = memobs_request_xfer_split(v, shares ? v + n : NULL, (size_t)n, (memobs_dir_t)x.dir, x.bytes,
                                   (memobs_phase_t)pymod_xfer_phase(&x));
    if (rc != MEMOBS_OK)
        PyErr_Format(PyExc_ValueError, "%s(): memobs refused the transfer: %s", fname, memobs_strerror(rc));
    else {
        Py_INCREF(Py_None);
        r = Py_None;
    }
done:
    PyMem_Free(v);
    Py_XDECREF(shares);
    Py_DECREF(ids);
    return r;
}

/* request_tenant(id, name): memobs_request_tenant, the name checked here
   as memobs checks it (1 to 63 bytes of UTF-8, no control character);
   True when the request is filed under it, False when memobs refused (an
   id not in flight, a second tenant: counted in tenant_misuse). */
static PyObject *pymod_request_tenant(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const kw[2] = {"id", "name"};
    PyObject *a[2];
    uint64_t id;
    const char *s;
    Py_ssize_t n, i;
    (void)self;
    if (pymod_args("request_tenant", args, nargs, kwnames, kw, 2, 2, a) < 0 ||
        pymod_req_id(a[0], "request_tenant", &id) < 0)
        return NULL;
    if (!PyUnicode_Check(a[1])) {
        PyErr_Format(PyExc_TypeError, "request_tenant(): name must be a str, not %.200s", Py_TYPE(a[1])->tp_name);
        return NULL;
    }
    if (!(s = PyUnicode_AsUTF8AndSize(a[1], &n))) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "request_tenant(): name %R cannot be encoded as UTF-8 (a lone surrogate)", a[1]);
        return NULL;
    }
    if (n < 1 || n > 63) {
        PyErr_Format(PyExc_ValueError, "request_tenant(): name must be 1 to 63 bytes of UTF-8, got %zd", n);
        return NULL;
    }
    for (i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
            PyErr_Format(PyExc_ValueError, "request_tenant(): name must have no control character, got %R", a[1]);
            return NULL;
        }
    return PyBool_FromLong(memobs_request_tenant(id, s) == MEMOBS_OK);
}

static const char *const pymod_req_state_names[5] = {"in_flight", "completed", "aborted", "abandoned", "dropped"};

/* {dir: ns} of a ledger's engine_ns or device_ns */
static PyObject *pymod_dir_ns(const uint64_t *ns) {
    PyObject *d = PyDict_New();
    unsigned k;
    for (k = 0; d && k < MEMOBS_DIRS; k++)
        if (pymod_put(d, pymod_dir_names[k], PyLong_FromUnsignedLongLong(ns[k])) < 0) Py_CLEAR(d);
    return d;
}

/* A request's ledger (memobs_request_info_t) as a dict of its fields;
   "xfer" per phase as get_summary()["phases"] has them, with "total" (the
   phases summed), and "bytes": every byte it moved. */
static PyObject *pymod_request_info_dict(const memobs_request_info_t *i) {
    PyObject *d, *x = NULL;
    memobs_dirs_t total;
    uint64_t bytes = 0;
    unsigned p, k;
    memset(&total, 0, sizeof total);
    for (p = 0; p < MEMOBS_PHASES; p++)
        for (k = 0; k < MEMOBS_DIRS; k++) {
            const memobs_xfer_t *f = memobs_dirs_get(&i->xfer[p], k);
            memobs_xfer_t *t = memobs_dirs_at(&total, k);
            t->bytes = t->bytes + f->bytes < t->bytes ? UINT64_MAX : t->bytes + f->bytes;
            t->count += f->count;
        }
    for (k = 0; k < MEMOBS_DIRS; k++) {
        uint64_t b = memobs_dirs_get(&total, k)->bytes;
        bytes = bytes + b < bytes ? UINT64_MAX : bytes + b;
    }
    if (!(d = PyDict_New())) return NULL;
    if (pymod_put(d, "id", PyLong_FromUnsignedLongLong(i->id)) < 0 ||
        pymod_put(d, "tenant", pymod_text(i->tenant, 1)) < 0 ||
        pymod_put(d, "state", PyUnicode_FromString(pymod_req_state_names[(unsigned)i->state < 5 ? i->state : 0])) < 0 ||
        pymod_put(d, "begin_ns", PyLong_FromUnsignedLongLong(i->begin_ns)) < 0 ||
        pymod_put(d, "end_ns", PyLong_FromUnsignedLongLong(i->end_ns)) < 0 || !(x = PyDict_New()) ||
        pymod_put(d, "xfer", x) < 0 || pymod_put(x, "total", pymod_dirs(&total)) < 0 ||
        pymod_put(x, "prefill", pymod_dirs(&i->xfer[MEMOBS_PHASE_PREFILL])) < 0 ||
        pymod_put(x, "decode", pymod_dirs(&i->xfer[MEMOBS_PHASE_DECODE])) < 0 ||
        pymod_put(x, "unphased", pymod_dirs(&i->xfer[MEMOBS_PHASE_NONE])) < 0 ||
        pymod_put(d, "bytes", PyLong_FromUnsignedLongLong(bytes)) < 0 ||
        pymod_put(d, "engine_ns", pymod_dir_ns(i->engine_ns)) < 0 ||
        pymod_put(d, "device_ns", pymod_dir_ns(i->device_ns)) < 0 ||
        pymod_put(d, "wait_ns", PyLong_FromUnsignedLongLong(i->wait_ns)) < 0 ||
        pymod_put(d, "region_ns", PyLong_FromUnsignedLongLong(i->region_ns)) < 0 ||
        pymod_put(d, "tokens", PyLong_FromUnsignedLongLong(i->tokens)) < 0 ||
        pymod_put(d, "ttft_ns", PyLong_FromUnsignedLongLong(i->ttft_ns)) < 0 ||
        pymod_put(d, "tpot_ns", PyLong_FromUnsignedLongLong(i->tpot_ns)) < 0 ||
        pymod_put(d, "e2e_ns", PyLong_FromUnsignedLongLong(i->e2e_ns)) < 0 ||
        pymod_put(d, "current_bytes", PyLong_FromUnsignedLongLong(i->current_bytes)) < 0 ||
        pymod_put(d, "peak_bytes", PyLong_FromUnsignedLongLong(i->peak_bytes)) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

/* request_info(id): the ledger of request id while it is in flight, None
   when it is not (or memobs is off). */
static PyObject *pymod_request_info(PyObject *self, PyObject *arg) {
    memobs_request_info_t info;
    uint64_t id;
    (void)self;
    if (pymod_req_id(arg, "request_info", &id) < 0) return NULL;
    if (memobs_request_info(id, &info) != MEMOBS_OK) Py_RETURN_NONE;
    return pymod_request_info_dict(&info);
}

/* request_top(by="bytes", n=10): memobs_request_top as a list of dicts. */
static PyObject *pymod_request_top(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const kw[2] = {"by", "n"};
    static const char *const bys[2] = {"bytes", "wait"};
    PyObject *a[2], *list;
    memobs_request_info_t *top;
    int by = MEMOBS_REQUEST_TOP_BYTES, n = MEMOBS_REQUEST_TOP;
    size_t got, i;
    (void)self;
    if (pymod_args("request_top", args, nargs, kwnames, kw, 2, 0, a) < 0 ||
        (a[0] && (by = pymod_choice(a[0], "request_top", "by", bys, 2)) < 0) ||
        (a[1] && pymod_int(a[1], "request_top", "n", 0, INT_MAX, &n) < 0))
        return NULL;
    if (n > MEMOBS_REQUEST_TOP) n = MEMOBS_REQUEST_TOP; /* memobs keeps no more */
    if (!(top = (memobs_request_info_t *)PyMem_Malloc(MEMOBS_REQUEST_TOP * sizeof *top))) return PyErr_NoMemory();
    got = memobs_request_top(by ? MEMOBS_REQUEST_TOP_WAIT : MEMOBS_REQUEST_TOP_BYTES, top, (size_t)n);
    if ((list = PyList_New(0)) != NULL)
        for (i = 0; i < got; i++) {
            PyObject *d = pymod_request_info_dict(&top[i]);
            if (!d || PyList_Append(list, d) < 0) {
                Py_XDECREF(d);
                Py_CLEAR(list);
                break;
            }
            Py_DECREF(d);
        }
    PyMem_Free(top);
    return list;
}

/* ======================================================================== */
/* Collectives and peers                                                    */
/* ======================================================================== */

static const char *const pymod_peer_dir_names[MEMOBS_PEER_DIRS] = {"send", "recv"};

/* A handle memobs gave (peer_intern, peer_rank, coll_register_comm,
   coll_kind_intern): an int in [0, limit). */
static int pymod_handle(PyObject *o, const char *fname, const char *what, const char *from, int limit, int *out) {
    if (PyBool_Check(o) || !PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): %s must be an int (a handle from %s), not %.200s", fname, what, from,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    if (pymod_int(o, fname, what, 0, limit - 1, out) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s(): %s must be a handle from %s (0..%d), got %R", fname, what, from,
                     limit - 1, o);
        return -1;
    }
    return 0;
}

/* dir: PEER_SEND (0), PEER_RECV (1), "send" or "recv". */
static int pymod_peer_dir(PyObject *o, const char *fname) {
    int d;
    if (PyUnicode_Check(o)) return pymod_choice(o, fname, "dir", pymod_peer_dir_names, MEMOBS_PEER_DIRS);
    if (PyBool_Check(o) || !PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): dir must be PEER_SEND, PEER_RECV, \"send\" or \"recv\", not %.200s",
                     fname, Py_TYPE(o)->tp_name);
        return -1;
    }
    if (pymod_int(o, fname, "dir (PEER_SEND 0, PEER_RECV 1)", 0, MEMOBS_PEER_DIRS - 1, &d) < 0) return -1;
    return d;
}

/* A negative result code of memobs as an exception: ValueError for
   MEMOBS_ERR_INVALID, RuntimeError for a full table and the rest. */
static PyObject *pymod_refused(const char *fname, int rc, const char *what) {
    PyErr_Format(rc == MEMOBS_ERR_INVALID ? PyExc_ValueError : PyExc_RuntimeError, "%s(): memobs refused %s: %s",
                 fname, what, memobs_strerror(rc));
    return NULL;
}

/* peer_intern(name): the handle of a named peer ("decode-3"). */
static PyObject *pymod_peer_intern(PyObject *self, PyObject *arg) {
    char text[PYMOD_NAME_SIZE];
    memobs_peer_t id;
    (void)self;
    if (pymod_name_text(arg, "peer_intern", text, sizeof text) < 0) return NULL;
    if ((id = memobs_peer_intern(text)) < 0)
        return pymod_refused("peer_intern", id, id == MEMOBS_ERR_FULL ? "the name (the peer table is full: "
                                                                        "MEMOBS_MAX_PEERS)" : "the name");
    return PyLong_FromLong((long)id);
}

/* peer_rank(comm, rank): a rank of a communicator as a peer. */
static PyObject *pymod_peer_rank(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const kw[2] = {"comm", "rank"};
    PyObject *a[2];
    int comm, rank;
    memobs_peer_t id;
    (void)self;
    if (pymod_args("peer_rank", args, nargs, kwnames, kw, 2, 2, a) < 0 ||
        pymod_handle(a[0], "peer_rank", "comm", "coll_register_comm()", MEMOBS_MAX_COMMS, &comm) < 0 ||
        pymod_int(a[1], "peer_rank", "rank", 0, INT32_MAX, &rank) < 0)
        return NULL;
    if ((id = memobs_peer_rank((memobs_comm_t)comm, rank)) < 0)
        return pymod_refused("peer_rank", id, id == MEMOBS_ERR_FULL ? "the rank (the peer table is full: "
                                                                      "MEMOBS_MAX_PEERS)" : "the rank (an unknown "
                                                                      "communicator, or rank >= its nranks)");
    return PyLong_FromLong((long)id);
}

/* record_peer_xfer(peer, dir, nbytes, phase=None) and
   record_peer_xfer_timed(peer, dir, nbytes, phase, ns): arguments checked
   before anything is recorded. */
static PyObject *pymod_peer_xfer(const char *fname, int timed, PyObject *const *args, Py_ssize_t nargs,
                                 PyObject *kwnames) {
    static const char *const kw[5] = {"peer", "dir", "nbytes", "phase", "ns"};
    PyObject *a[5];
    int peer, dir, phase;
    uint64_t bytes, ns = 0;
    if (pymod_args(fname, args, nargs, kwnames, kw, timed ? 5 : 4, timed ? 5 : 3, a) < 0 ||
        pymod_handle(a[0], fname, "peer", "peer_intern() or peer_rank()", MEMOBS_MAX_PEERS, &peer) < 0 ||
        (dir = pymod_peer_dir(a[1], fname)) < 0 ||
        pymod_u64_max(a[2], fname, "nbytes", MEMOBS_MAX_BYTES, "MEMOBS_MAX_BYTES", &bytes) < 0 ||
        (timed && pymod_u64_max(a[4], fname, "ns", MEMOBS_MAX_NS, "MEMOBS_MAX_NS", &ns) < 0) ||
        (phase = pymod_phase_opt(a[3], fname)) < 0)
        return NULL;
    if (timed)
        memobs_record_peer_xfer_timed((memobs_peer_t)peer, (memobs_peer_dir_t)dir, bytes, (memobs_phase_t)phase, ns);
    else
        memobs_record_peer_xfer((memobs_peer_t)peer, (memobs_peer_dir_t)dir, bytes, (memobs_phase_t)phase);
    Py_RETURN_NONE;
}

static PyObject *pymod_record_peer_xfer(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    (void)self;
    return pymod_peer_xfer("record_peer_xfer", 0, args, nargs, kwnames);
}

static PyObject *pymod_record_peer_xfer_timed(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                              PyObject *kwnames) {
    (void)self;
    return pymod_peer_xfer("record_peer_xfer_timed", 1, args, nargs, kwnames);
}

/* coll_register_comm(name, id, rank, nranks, nnodes=1). */
static PyObject *pymod_coll_register_comm(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                          PyObject *kwnames) {
    static const char *const kw[5] = {"name", "id", "rank", "nranks", "nnodes"};
    PyObject *a[5];
    char text[PYMOD_NAME_SIZE];
    const char *name = NULL;
    uint64_t id;
    int rank, nranks, nnodes = 1;
    memobs_comm_t comm;
    (void)self;
    if (pymod_args("coll_register_comm", args, nargs, kwnames, kw, 5, 4, a) < 0) return NULL;
    if (a[0] != Py_None) {
        if (pymod_name_text(a[0], "coll_register_comm", text, sizeof text) < 0) return NULL;
        name = text;
    }
    if (pymod_u64(a[1], "coll_register_comm", "id", &id) < 0 ||
        pymod_int(a[2], "coll_register_comm", "rank", 0, INT32_MAX, &rank) < 0 ||
        pymod_int(a[3], "coll_register_comm", "nranks (0: unknown)", 0, INT32_MAX, &nranks) < 0 ||
        (a[4] && pymod_int(a[4], "coll_register_comm", "nnodes (0: unknown)", 0, INT32_MAX, &nnodes) < 0))
        return NULL;
    if (nranks > 0 && rank >= nranks) {
        PyErr_Format(PyExc_ValueError, "coll_register_comm(): rank must be below nranks (%d), got %d", nranks, rank);
        return NULL;
    }
    if ((comm = memobs_coll_register_comm(name, id, rank, nranks, nnodes)) < 0)
        return pymod_refused("coll_register_comm", comm, "the communicator");
    return PyLong_FromLong((long)comm);
}

/* A kind argument: a handle, or a name interned now. */
static int pymod_kind_arg(PyObject *o, const char *fname, int *out) {
    if (PyUnicode_Check(o)) {
        char text[PYMOD_NAME_SIZE];
        memobs_coll_kind_t k;
        if (pymod_name_text(o, fname, text, sizeof text) < 0) return -1;
        if ((k = memobs_coll_kind_intern(text)) < 0) {
            pymod_refused(fname, k, "the kind's name");
            return -1;
        }
        *out = (int)k;
        return 0;
    }
    return pymod_handle(o, fname, "kind", "COLL_* or coll_kind_intern()", MEMOBS_MAX_COLL_KINDS, out);
}

static PyObject *pymod_coll_kind_intern(PyObject *self, PyObject *arg) {
    int k;
    (void)self;
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "coll_kind_intern(): name must be a str, not %.200s", Py_TYPE(arg)->tp_name);
        return NULL;
    }
    if (pymod_kind_arg(arg, "coll_kind_intern", &k) < 0) return NULL;
    return PyLong_FromLong(k);
}

static PyObject *pymod_coll_kind_label(PyObject *self, PyObject *arg) {
    int k;
    const char *label;
    (void)self;
    if (pymod_handle(arg, "coll_kind_label", "kind", "COLL_* or coll_kind_intern()", MEMOBS_MAX_COLL_KINDS, &k) < 0)
        return NULL;
    if (!(label = memobs_coll_kind_label((memobs_coll_kind_t)k))) Py_RETURN_NONE;
    return pymod_text(label, 0);
}

/* record_coll(comm, kind, nbytes, phase=None, ns=0). */
static PyObject *pymod_record_coll(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const kw[5] = {"comm", "kind", "nbytes", "phase", "ns"};
    PyObject *a[5];
    int comm, kind, phase;
    uint64_t bytes, ns = 0;
    (void)self;
    if (pymod_args("record_coll", args, nargs, kwnames, kw, 5, 3, a) < 0 ||
        pymod_handle(a[0], "record_coll", "comm", "coll_register_comm()", MEMOBS_MAX_COMMS, &comm) < 0 ||
        pymod_kind_arg(a[1], "record_coll", &kind) < 0 ||
        pymod_u64_max(a[2], "record_coll", "nbytes", MEMOBS_MAX_BYTES, "MEMOBS_MAX_BYTES", &bytes) < 0 ||
        (a[4] && pymod_u64_max(a[4], "record_coll", "ns", MEMOBS_MAX_NS, "MEMOBS_MAX_NS", &ns) < 0) ||
        (phase = pymod_phase_opt(a[3], "record_coll")) < 0)
        return NULL;
    memobs_record_coll((memobs_comm_t)comm, (memobs_coll_kind_t)kind, bytes, (memobs_phase_t)phase, ns);
    Py_RETURN_NONE;
}

/* memobs' snapshot of the collectives: rows in PyMem (free it), *n of them. */
static memobs_coll_stats_t *pymod_coll_rows(size_t *n) {
    size_t want = memobs_coll_get_stats(NULL, 0);
    memobs_coll_stats_t *r = (memobs_coll_stats_t *)PyMem_Malloc((want ? want : 1) * sizeof *r);
    if (!r) {
        PyErr_NoMemory();
        return NULL;
    }
    *n = memobs_coll_get_stats(r, want);
    if (*n > want) *n = want; /* rows added since the first call: in the next snapshot */
    return r;
}

static memobs_peer_stats_t *pymod_peer_rows(size_t *n) {
    size_t want = memobs_peer_get_stats(NULL, 0);
    memobs_peer_stats_t *r = (memobs_peer_stats_t *)PyMem_Malloc((want ? want : 1) * sizeof *r);
    if (!r) {
        PyErr_NoMemory();
        return NULL;
    }
    *n = memobs_peer_get_stats(r, want);
    if (*n > want) *n = want;
    return r;
}

/* The figures of one (communicator, kind, phase), as the JSON summary's. */
static PyObject *pymod_coll_figures(const memobs_coll_stats_t *x) {
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:d,s:d}", "ops", PYMOD_ULL(x->ops), "bytes", PYMOD_ULL(x->bytes),
                         "timed_ops", PYMOD_ULL(x->timed_ops), "ns", PYMOD_ULL(x->ns), "algo_bytes",
                         PYMOD_ULL(x->algo_bytes), "bus_bytes", PYMOD_ULL(x->bus_bytes), "algbw_gbs", x->algbw_gbs,
                         "busbw_gbs", x->busbw_gbs);
}

static const char *pymod_phase_name(memobs_phase_t p) {
    return pymod_phase_names[(unsigned)p < MEMOBS_PHASES ? (unsigned)p : 0];
}

/* coll_get_stats(): one dict per (communicator, kind, phase) with ops. */
static PyObject *pymod_coll_get_stats(PyObject *self, PyObject *unused) {
    size_t n, i;
    memobs_coll_stats_t *r = pymod_coll_rows(&n);
    PyObject *list = NULL;
    (void)self, (void)unused;
    if (!r) return NULL;
    if (!(list = PyList_New(0))) goto done;
    for (i = 0; i < n; i++) {
        const memobs_coll_stats_t *x = &r[i];
        PyObject *d = pymod_coll_figures(x);
        if (!d || pymod_put(d, "comm", PyLong_FromLong((long)x->comm)) < 0 ||
            pymod_put(d, "comm_name", pymod_text(x->comm_name ? x->comm_name : "", 0)) < 0 ||
            pymod_put(d, "comm_id", PyLong_FromUnsignedLongLong(x->comm_id)) < 0 ||
            pymod_put(d, "rank", PyLong_FromLong(x->rank)) < 0 || pymod_put(d, "nranks", PyLong_FromLong(x->nranks)) < 0 ||
            pymod_put(d, "nnodes", PyLong_FromLong(x->nnodes)) < 0 ||
            pymod_put(d, "kind", PyLong_FromLong((long)x->kind)) < 0 ||
            pymod_put(d, "kind_name", pymod_text(x->kind_name ? x->kind_name : "", 0)) < 0 ||
            pymod_put(d, "phase", PyUnicode_FromString(pymod_phase_name(x->phase))) < 0 ||
            PyList_Append(list, d) < 0) {
            Py_XDECREF(d);
            Py_CLEAR(list);
            goto done;
        }
        Py_DECREF(d);
    }
done:
    PyMem_Free(r);
    return list;
}

/* {phase: {"bytes", "ops", "ns"}} of one direction of a peer, every phase. */
static PyObject *pymod_peer_dir_dict(const memobs_peer_stats_t *x, int dir) {
    static const unsigned order[MEMOBS_PHASES] = {MEMOBS_PHASE_PREFILL, MEMOBS_PHASE_DECODE, MEMOBS_PHASE_NONE};
    PyObject *d = PyDict_New();
    unsigned i;
    if (!d) return NULL;
    for (i = 0; i < MEMOBS_PHASES; i++) {
        unsigned p = order[i];
        if (pymod_put(d, pymod_phase_names[p],
                      Py_BuildValue("{s:K,s:K,s:K}", "bytes", PYMOD_ULL(x->bytes[dir][p]), "ops",
                                    PYMOD_ULL(x->ops[dir][p]), "ns", PYMOD_ULL(x->ns[dir][p]))) < 0) {
            Py_DECREF(d);
            return NULL;
        }
    }
    return d;
}

/* peer_get_stats(): one dict per peer used: "id", "name", "comm" (the
   communicator's handle) and "rank" (None for a named peer), "send" and
   "recv" with every phase. */
static PyObject *pymod_peer_get_stats(PyObject *self, PyObject *unused) {
    size_t n, i;
    memobs_peer_stats_t *r = pymod_peer_rows(&n);
    PyObject *list = NULL;
    (void)self, (void)unused;
    if (!r) return NULL;
    if (!(list = PyList_New(0))) goto done;
    for (i = 0; i < n; i++) {
        const memobs_peer_stats_t *x = &r[i];
        PyObject *d = PyDict_New();
        if (!d || pymod_put(d, "id", PyLong_FromLong((long)x->id)) < 0 ||
            pymod_put(d, "name", pymod_text(x->name ? x->name : "", 0)) < 0 ||
            pymod_put(d, "comm", x->comm >= 0 ? PyLong_FromLong((long)x->comm) : (Py_INCREF(Py_None), Py_None)) < 0 ||
            pymod_put(d, "rank", x->comm >= 0 ? PyLong_FromLong(x->rank) : (Py_INCREF(Py_None), Py_None)) < 0 ||
            pymod_put(d, "send", pymod_peer_dir_dict(x, MEMOBS_PEER_SEND)) < 0 ||
            pymod_put(d, "recv", pymod_peer_dir_dict(x, MEMOBS_PEER_RECV)) < 0 || PyList_Append(list, d) < 0) {
            Py_XDECREF(d);
            Py_CLEAR(list);
            goto done;
        }
        Py_DECREF(d);
    }
done:
    PyMem_Free(r);
    return list;
}

/* The source's fields and the drop counters, as the JSON summary's
   "collectives" has them. */
static PyObject *pymod_coll_info_dict(const memobs_coll_info_t *in) {
    return Py_BuildValue("{s:N,s:N,s:N,s:i,s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "source", pymod_text(in->source, 0),
                         "instance", pymod_text(in->instance, 0), "level", pymod_text(in->level, 0), "api_version",
                         in->api_version, "events_dropped", PYMOD_ULL(in->notes[MEMOBS_COLL_NOTE_EVENTS_DROPPED]),
                         "bad_events", PYMOD_ULL(in->notes[MEMOBS_COLL_NOTE_BAD_EVENTS]), "captured_calls",
                         PYMOD_ULL(in->notes[MEMOBS_COLL_NOTE_CAPTURED_CALLS]), "captured_replays",
                         PYMOD_ULL(in->notes[MEMOBS_COLL_NOTE_CAPTURED_REPLAYS]), "comms_dropped",
                         PYMOD_ULL(in->comms_dropped), "kinds_dropped", PYMOD_ULL(in->kinds_dropped),
                         "peers_dropped", PYMOD_ULL(in->peers_dropped));
}

static PyObject *pymod_coll_get_info(PyObject *self, PyObject *unused) {
    memobs_coll_info_t in;
    (void)self, (void)unused;
    memset(&in, 0, sizeof in);
    memobs_coll_get_info(&in);
    return pymod_coll_info_dict(&in);
}

/* get_summary()'s "collectives" and "peers": the JSON summary's, read
   from it (one writer, so the two never disagree: every communicator
   registered, algbw_gbs None when nothing was timed, busbw_gbs None
   without a bus factor, a peer's phases with bytes or operations), added
   to d only when something was recorded or a source was set. */
static PyObject *pymod_json_loads; /* json.loads, imported at the first use */

static int pymod_coll_summary(PyObject *d) {
    static const char *const keys[2] = {"collectives", "peers"};
    memobs_coll_info_t in;
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    int rc, i;
    PyObject *text, *j;
    memset(&in, 0, sizeof in);
    memobs_coll_get_info(&in);
    if (!in.source[0] && !in.instance[0] && !in.level[0] && !in.api_version && !memobs_coll_get_stats(NULL, 0) &&
        !memobs_peer_get_stats(NULL, 0))
        return 0;
    if (!pymod_json_loads) {
        PyObject *mod = PyImport_ImportModule("json");
        if (!mod) return -1;
        pymod_json_loads = PyObject_GetAttrString(mod, "loads");
        Py_DECREF(mod);
        if (!pymod_json_loads) return -1;
    }
    if (!(f = open_memstream(&buf, &len))) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    Py_BEGIN_ALLOW_THREADS /* the writer takes memobs' locks: never with the GIL held */
    rc = memobs_write_summary(f, MEMOBS_FORMAT_JSON);
    if (fclose(f) != 0 && rc == MEMOBS_OK) rc = MEMOBS_ERR_IO;
    Py_END_ALLOW_THREADS
    if (rc != MEMOBS_OK) {
        free(buf);
        PyErr_Format(PyExc_RuntimeError, "get_summary(): the JSON summary could not be written: %s",
                     memobs_strerror(rc));
        return -1;
    }
    text = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)len, "replace");
    free(buf); /* open_memstream's, from malloc */
    if (!text) return -1;
    j = PyObject_CallFunctionObjArgs(pymod_json_loads, text, NULL);
    Py_DECREF(text);
    if (!j) return -1;
    for (i = 0, rc = 0; i < 2 && rc == 0; i++) {
        PyObject *v = PyDict_Check(j) ? PyDict_GetItemString(j, keys[i]) : NULL; /* borrowed */
        if (v) rc = PyDict_SetItemString(d, keys[i], v);
    }
    Py_DECREF(j);
    return rc;
}

/* ======================================================================== */
/* Allocation tracker                                                       */
/* ======================================================================== */

static PyObject *pymod_track_alloc(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const kw[5] = {"ptr", "nbytes", "kind", "tag", "device"};
    static const char *const kinds[MEMOBS_MEM_KINDS] = {"device", "host", "pinned", "managed"};
    PyObject *a[5];
    uint64_t ptr, bytes;
    int kind = MEMOBS_MEM_DEVICE, device = -1;
    const char *tag = NULL;
    (void)self;
    if (pymod_args("track_alloc", args, nargs, kwnames, kw, 5, 2, a) < 0) return NULL;
    if (pymod_u64(a[0], "track_alloc", "ptr", &ptr) < 0 ||
        pymod_u64_max(a[1], "track_alloc", "nbytes", MEMOBS_MAX_BYTES, "MEMOBS_MAX_BYTES", &bytes) < 0)
        return NULL;
    if (ptr > (uint64_t)UINTPTR_MAX) {
        PyErr_Format(PyExc_ValueError, "track_alloc(): ptr %R is not an address", a[0]);
        return NULL;
    }
    if (a[2] && (kind = pymod_choice(a[2], "track_alloc", "kind", kinds, MEMOBS_MEM_KINDS)) < 0) return NULL;
    if (a[3] && a[3] != Py_None) {
        if (!PyUnicode_Check(a[3])) {
            PyErr_Format(PyExc_TypeError, "track_alloc(): tag must be a str or None, not %.200s",
                         Py_TYPE(a[3])->tp_name);
            return NULL;
        }
        if (!(tag = PyUnicode_AsUTF8(a[3]))) return NULL;
    }
    if (a[4] && a[4] != Py_None && pymod_int(a[4], "track_alloc", "device", -1, 1 << 20, &device) < 0) return NULL;
    /* with the GIL held: the Python tag provider reads this thread's stack */
    memobs_track_alloc_full((const void *)(uintptr_t)ptr, bytes, (memobs_mem_kind_t)kind, device, NULL, tag, -1);
    Py_RETURN_NONE;
}

static PyObject *pymod_track_free(PyObject *self, PyObject *arg) {
    uint64_t ptr;
    (void)self;
    if (pymod_u64(arg, "track_free", "ptr", &ptr) < 0) return NULL;
    if (ptr > (uint64_t)UINTPTR_MAX) {
        PyErr_Format(PyExc_ValueError, "track_free(): ptr %R is not an address", arg);
        return NULL;
    }
    memobs_track_free((const void *)(uintptr_t)ptr);
    Py_RETURN_NONE;
}

/* print_allocations / print_alloc_groups / print_leaks(path=None). */
static PyObject *pymod_report(const char *fname, int (*report)(FILE *), PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames) {
    static const char *const kw[1] = {"path"};
    PyObject *a[1];
    FILE *f;
    int own, rc;
    if (pymod_args(fname, args, nargs, kwnames, kw, 1, 0, a) < 0) return NULL;
    if (!(f = pymod_open(a[0], stderr, &own))) return NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = report(f);
    rc = pymod_close(f, own, rc < 0 ? rc : MEMOBS_OK);
    Py_END_ALLOW_THREADS
    return pymod_io_result(rc, fname, a[0]);
}

static PyObject *pymod_print_allocations(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                         PyObject *kwnames) {
    (void)self;
    return pymod_report("print_allocations", memobs_print_allocations, args, nargs, kwnames);
}
static PyObject *pymod_print_alloc_groups(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                          PyObject *kwnames) {
    (void)self;
    return pymod_report("print_alloc_groups", memobs_print_alloc_groups, args, nargs, kwnames);
}
static PyObject *pymod_print_leaks(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    (void)self;
    return pymod_report("print_leaks", memobs_print_leaks, args, nargs, kwnames);
}

/* write_torch_snapshot(path): PyTorch's memory snapshot, pickled. */
static PyObject *pymod_write_torch_snapshot(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                            PyObject *kwnames) {
    static const char *const kw[1] = {"path"};
    PyObject *a[1];
    FILE *f;
    int own, rc;
    (void)self;
    if (pymod_args("write_torch_snapshot", args, nargs, kwnames, kw, 1, 1, a) < 0) return NULL;
    if (a[0] == Py_None) {
        PyErr_SetString(PyExc_TypeError, "write_torch_snapshot(): path must be a path, not None");
        return NULL;
    }
    if (!(f = pymod_open(a[0], stderr, &own))) return NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = memobs_write_torch_snapshot(f);
    rc = pymod_close(f, own, rc);
    Py_END_ALLOW_THREADS
    return pymod_io_result(rc, "write_torch_snapshot", a[0]);
}

/* torch_history_start(max_events=0): the snapshot's history on
   (memobs_torch_history_start). */
static PyObject *pymod_torch_history_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                           PyObject *kwnames) {
    static const char *const kw[1] = {"max_events"};
    PyObject *a[1];
    uint64_t n = 0;
    int rc;
    (void)self;
    if (pymod_args("torch_history_start", args, nargs, kwnames, kw, 1, 0, a) < 0 ||
        (a[0] && pymod_u64(a[0], "torch_history_start", "max_events", &n) < 0))
        return NULL;
    if ((rc = memobs_torch_history_start(n)) != MEMOBS_OK)
        return pymod_refused("torch_history_start", rc, rc == MEMOBS_ERR_INVALID ? "max_events (at most 2**24; 0 "
                             "with MEMOBS_TORCH_EVENTS=0)" : "the history (no memory for its ring)");
    Py_RETURN_NONE;
}

static PyObject *pymod_torch_history_stop(PyObject *self, PyObject *unused) {
    int rc;
    (void)self, (void)unused;
    if ((rc = memobs_torch_history_stop()) != MEMOBS_OK) return pymod_refused("torch_history_stop", rc, "it");
    Py_RETURN_NONE;
}

/* get_torch_history(device=0): memobs_get_torch_history as a dict. */
static PyObject *pymod_get_torch_history(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                         PyObject *kwnames) {
    static const char *const kw[1] = {"device"};
    PyObject *a[1];
    memobs_torch_history_t h;
    int dev = 0;
    (void)self;
    if (pymod_args("get_torch_history", args, nargs, kwnames, kw, 1, 0, a) < 0 ||
        (a[0] && pymod_int(a[0], "get_torch_history", "device", 0, 1 << 20, &dev) < 0))
        return NULL;
    if (memobs_get_torch_history(dev, &h) != MEMOBS_OK)
        return pymod_refused("get_torch_history", MEMOBS_ERR_INVALID, "the device (MEMOBS_MAX_DEVICES)");
    return Py_BuildValue("{sKsKsKsKsO}", "recorded", PYMOD_ULL(h.recorded), "kept", PYMOD_ULL(h.kept), "dropped",
                         PYMOD_ULL(h.dropped), "capacity", PYMOD_ULL(h.capacity), "recording",
                         h.recording ? Py_True : Py_False);
}

/* get_allocations(): the live blocks as dicts, the trace's text with each. */
static PyObject *pymod_get_allocations(PyObject *self, PyObject *unused) {
    static const char *const kname[MEMOBS_MEM_KINDS] = {"device", "host", "pinned", "managed"};
    memobs_alloc_info_t *a = NULL;
    size_t n = 0, cap = 0, i;
    PyObject *list;
    char text[8192];
    (void)self, (void)unused;
    /* the table may grow between the two calls: retry with room to spare */
    for (;;) {
        size_t live = memobs_get_allocations(a, cap);
        if (live <= cap) {
            n = live;
            break;
        }
        PyMem_Free(a);
        cap = live + live / 4 + 64;
        if (!(a = (memobs_alloc_info_t *)PyMem_Malloc(cap * sizeof *a))) return PyErr_NoMemory();
    }
    if (!(list = PyList_New(0))) goto fail;
    for (i = 0; i < n; i++) {
        int len = a[i].trace == MEMOBS_NO_TRACE ? -1 : memobs_format_trace(text, sizeof text, a[i].trace);
        PyObject *d = Py_BuildValue(
            "{s:K,s:K,s:s,s:i,s:s,s:K,s:K,s:N,s:O,s:N}", "ptr", PYMOD_ULL((uintptr_t)a[i].ptr), "nbytes",
            PYMOD_ULL(a[i].bytes), "kind", (unsigned)a[i].kind < MEMOBS_MEM_KINDS ? kname[a[i].kind] : "?", "device",
            (int)a[i].device, "phase", pymod_phase_names[(unsigned)a[i].phase < MEMOBS_PHASES ? a[i].phase : 0],
            "stream", PYMOD_ULL((uintptr_t)a[i].stream), "time_ns", PYMOD_ULL(a[i].time_ns), "trace",
            a[i].trace == MEMOBS_NO_TRACE ? (Py_INCREF(Py_None), Py_None) : PyLong_FromUnsignedLong(a[i].trace), "pending_free", a[i].pending_free ? Py_True : Py_False,
            "stack", len < 0 ? (Py_INCREF(Py_None), Py_None) : PyUnicode_DecodeUTF8(text, len, "replace"));
        if (!d || PyList_Append(list, d) < 0) {
            Py_XDECREF(d);
            Py_DECREF(list);
            goto fail;
        }
        Py_DECREF(d);
    }
    PyMem_Free(a);
    return list;
fail:
    PyMem_Free(a);
    return NULL;
}

/* get_device_bytes(device): (tracked now, the most there ever were). */
static PyObject *pymod_device_bytes(PyObject *self, PyObject *arg) {
    int dev;
    uint64_t now, most = 0;
    (void)self;
    if (pymod_int(arg, "get_device_bytes", "device", 0, 1 << 20, &dev) < 0) return NULL;
    now = memobs_get_device_bytes(dev, &most);
    return Py_BuildValue("(KK)", PYMOD_ULL(now), PYMOD_ULL(most));
}

/* get_pinned(): memobs_get_pinned as a dict; the size classes with live
   blocks as a list (RssShmem None when it could not be read). */
static PyObject *pymod_get_pinned(PyObject *self, PyObject *unused) {
    memobs_pinned_t x;
    PyObject *d, *cls, *c, *rss;
    unsigned k;
    (void)self, (void)unused;
    memobs_get_pinned(&x);
    if (!(cls = PyList_New(0))) return NULL;
    for (k = 0; k < MEMOBS_PINNED_CLASSES; k++) {
        if (!x.cls[k].blocks) continue;
        c = Py_BuildValue("{s:I,s:K,s:K,s:K,s:K}", "class", k, "min_bytes", PYMOD_ULL((uint64_t)1 << k), "blocks",
                          PYMOD_ULL(x.cls[k].blocks), "held_bytes", PYMOD_ULL(x.cls[k].held_bytes), "asked_bytes",
                          PYMOD_ULL(x.cls[k].asked_bytes));
        if (!c || PyList_Append(cls, c) < 0) {
            Py_XDECREF(c);
            Py_DECREF(cls);
            return NULL;
        }
        Py_DECREF(c);
    }
    if (x.rss_shmem_bytes == MEMOBS_UNKNOWN) {
        Py_INCREF(Py_None);
        rss = Py_None;
    } else if (!(rss = PyLong_FromUnsignedLongLong(PYMOD_ULL(x.rss_shmem_bytes)))) {
        Py_DECREF(cls);
        return NULL;
    }
    d = Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:O,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:O,s:O}", "blocks",
                      PYMOD_ULL(x.blocks), "held_bytes", PYMOD_ULL(x.held_bytes), "asked_bytes",
                      PYMOD_ULL(x.asked_bytes), "registered_bytes", PYMOD_ULL(x.registered_bytes), "peak_held_bytes",
                      PYMOD_ULL(x.peak_held_bytes), "rss_shmem_bytes", rss, "allocs", PYMOD_ULL(x.allocs), "frees",
                      PYMOD_ULL(x.frees), "asks", PYMOD_ULL(x.asks), "asks_null", PYMOD_ULL(x.asks_null),
                      "asks_unknown", PYMOD_ULL(x.asks_unknown), "asks_over", PYMOD_ULL(x.asks_over), "untracked",
                      PYMOD_ULL(x.untracked), "seen", x.seen ? Py_True : Py_False, "classes", cls);
    Py_DECREF(rss);
    Py_DECREF(cls);
    return d;
}

/* pinned_asked(block, asked_bytes): True when taken, False when refused
   (counted and warned once, as memobs_pinned_asked). */
static PyObject *pymod_pinned_asked(PyObject *self, PyObject *args) {
    PyObject *a, *n;
    uint64_t block, asked;
    (void)self;
    if (!PyArg_UnpackTuple(args, "pinned_asked", 2, 2, &a, &n)) return NULL;
    if (pymod_u64(a, "pinned_asked", "block", &block) < 0 || pymod_u64(n, "pinned_asked", "asked_bytes", &asked) < 0)
        return NULL;
    if ((uint64_t)(uintptr_t)block != block) {
        PyErr_Format(PyExc_ValueError, "pinned_asked(): block %R is not an address", a);
        return NULL;
    }
    return PyBool_FromLong(memobs_pinned_asked((const void *)(uintptr_t)block, asked) == MEMOBS_OK);
}

/* ======================================================================== */
/* Python stacks                                                            */
/* ======================================================================== */

/* A string rule: None (*out untouched), a str, or (lists) a list/tuple of
   str joined with ",". *hold gets the str *out points into (or NULL). */
static int pymod_parts(PyObject *o, const char *what, int lists, PyObject **hold, const char **out) {
    *hold = NULL;
    if (!o || o == Py_None) return 0;
    if (PyUnicode_Check(o)) {
        Py_INCREF(o);
        *hold = o;
    } else if (lists && (PyList_Check(o) || PyTuple_Check(o))) {
        PyObject *sep = PyUnicode_FromString(",");
        if (!sep) return -1;
        *hold = PyUnicode_Join(sep, o); /* TypeError for an item that is not a str */
        Py_DECREF(sep);
        if (!*hold) return -1;
    } else {
        PyErr_Format(PyExc_TypeError, "track_python_stacks(): %s must be a str%s, not %.200s", what,
                     lists ? " or a list of str" : "", Py_TYPE(o)->tp_name);
        return -1;
    }
    if (!(*out = PyUnicode_AsUTF8(*hold))) return -1;
    return 0;
}

/* While memobs_py_install runs, this thread's warnings are kept here (for
   the exception's message) rather than printed; other threads' go to
   stderr as memobs prints them. */
static __thread char *pymod_log_buf;
#define PYMOD_LOG_LEN 512

static void pymod_log(int level, const char *msg, void *user) {
    (void)user;
    if (pymod_log_buf && !pymod_log_buf[0]) {
        snprintf(pymod_log_buf, PYMOD_LOG_LEN, "%s", msg);
        return;
    }
    fprintf(stderr, "memobs: %s: %s\n",
            level >= MEMOBS_LOG_ERROR ? "error" : level == MEMOBS_LOG_WARN ? "warning" : "info", msg);
}

static PyObject *pymod_track_python_stacks(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                           PyObject *kwnames) {
    static const char *const kw[8] = {"priority", "skip",   "root",         "max_frames",
                                      "head",     "tail",   "source_width", "take_gil"};
    PyObject *a[8], *hold[3] = {NULL, NULL, NULL}, *result = NULL;
    memobs_py_config_t cfg;
    int rc, i;
    (void)self;
    if (pymod_args("track_python_stacks", args, nargs, kwnames, kw, 8, 0, a) < 0) return NULL;
    memobs_py_default_config(&cfg);
    if (pymod_parts(a[0], "priority", 1, &hold[0], &cfg.priority) < 0 ||
        pymod_parts(a[1], "skip", 1, &hold[1], &cfg.skip) < 0 ||
        pymod_parts(a[2], "root", 0, &hold[2], &cfg.root) < 0)
        goto done;
    {
        int *ints[4];
        ints[0] = &cfg.max_frames, ints[1] = &cfg.head, ints[2] = &cfg.tail, ints[3] = &cfg.source_width;
        for (i = 0; i < 4; i++)
            if (a[3 + i] && a[3 + i] != Py_None &&
                pymod_int(a[3 + i], "track_python_stacks", kw[3 + i], 0, 1 << 20, ints[i]) < 0)
                goto done;
    }
    if (a[7] && a[7] != Py_None) {
        int t = pymod_bool(a[7], "track_python_stacks", "take_gil");
        if (t < 0) goto done;
        cfg.take_gil = t;
    }
    {
        char why[PYMOD_LOG_LEN];
        why[0] = 0;
        pymod_log_buf = why;
        memobs_set_log(pymod_log, NULL);
        rc = memobs_py_install(&cfg);
        memobs_set_log(NULL, NULL);
        pymod_log_buf = NULL;
        if (rc == MEMOBS_OK && why[0]) fprintf(stderr, "memobs: warning: %s\n", why);
        if (rc != MEMOBS_OK) {
            /* a rule out of range: ValueError; a full provider table: RuntimeError */
            PyErr_Format(rc == MEMOBS_ERR_INVALID ? PyExc_ValueError : PyExc_RuntimeError,
                         "track_python_stacks(): %s", why[0] ? why : memobs_strerror(rc));
            goto done;
        }
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    for (i = 0; i < 3; i++) Py_XDECREF(hold[i]);
    return result;
}

static PyObject *pymod_untrack_python_stacks(PyObject *self, PyObject *unused) {
    int rc;
    (void)self, (void)unused;
    if ((rc = memobs_py_uninstall()) != MEMOBS_OK) {
        PyErr_Format(PyExc_RuntimeError, "untrack_python_stacks(): %s", memobs_strerror(rc));
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *pymod_stack_text(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const kw[1] = {"boxed"};
    PyObject *a[1], *r;
    char small[8192], *buf = small;
    size_t len = sizeof small, n;
    int boxed = 0;
    (void)self;
    if (pymod_args("stack_text", args, nargs, kwnames, kw, 1, 0, a) < 0) return NULL;
    if (a[0] && (boxed = pymod_bool(a[0], "stack_text", "boxed")) < 0) return NULL;
    /* the text is cut at len - 1: retry larger while it fills the buffer */
    while ((n = memobs_py_stack_text(buf, len, boxed)) + 1 >= len && len < ((size_t)1 << 24)) {
        if (buf != small) PyMem_Free(buf);
        len *= 4;
        if (!(buf = (char *)PyMem_Malloc(len))) return PyErr_NoMemory();
    }
    r = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)n, "replace");
    if (buf != small) PyMem_Free(buf);
    return r;
}

/* ======================================================================== */
/* memobs.torch (built with the CUDA headers)                               */
/* ======================================================================== */

#ifdef MEMOBS_PY_CUDA
#include "_torch_alloc.c"

/* _torch_bind(runtime=None): binds the allocator's CUDA runtime (the first
   call also reads the allocator's environment and installs its tag
   provider); returns the runtime's path. RuntimeError when none can be
   bound or another one already is. */
static PyObject *pymod_torch_bind(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const kw[1] = {"runtime"};
    PyObject *a[1], *b = NULL;
    char err[sizeof memobs_torch__g.path + 256];
    int first = !memobs_torch__bound(), rc;
    (void)self;
    if (pymod_args("_torch_bind", args, nargs, kwnames, kw, 1, 0, a) < 0) return NULL;
    if (a[0] && a[0] != Py_None && !PyUnicode_FSConverter(a[0], &b)) return NULL;
    rc = memobs_torch__bind(b ? PyBytes_AS_STRING(b) : NULL, err, sizeof err);
    Py_XDECREF(b);
    if (rc < 0) {
        PyErr_SetString(PyExc_RuntimeError, err);
        return NULL;
    }
    if (first) memobs_torch__setup();
    return PyUnicode_DecodeFSDefault(memobs_torch__g.path);
}

static int pymod_torch_need_bound(const char *fname) {
    if (memobs_torch__bound()) return 0;
    PyErr_Format(PyExc_RuntimeError, "%s(): no CUDA runtime is bound yet: call memobs.torch.use_allocator() first",
                 fname);
    return -1;
}

/* _torch_settings(): {"runtime": path or None, "stream_ordered", "take_gil"}. */
static PyObject *pymod_torch_settings(PyObject *self, PyObject *unused) {
    int bound = memobs_torch__bound();
    (void)self, (void)unused;
    return Py_BuildValue("{s:N,s:O,s:O}", "runtime",
                         bound ? PyUnicode_DecodeFSDefault(memobs_torch__g.path) : (Py_INCREF(Py_None), Py_None),
                         "stream_ordered", bound && !__atomic_load_n(&memobs_torch__g.sync, __ATOMIC_RELAXED) ? Py_True : Py_False,
                         "take_gil", bound && memobs_torch__g.take_gil ? Py_True : Py_False);
}

static PyObject *pymod_torch_report(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    (void)self;
    if (pymod_torch_need_bound("report") < 0) return NULL;
    return pymod_report("report", memobs_torch__report, args, nargs, kwnames);
}

/* _cuda_poll(): memobs_cuda_poll(), without the GIL (it may query events). */
static PyObject *pymod_cuda_poll(PyObject *self, PyObject *unused) {
    int n;
    (void)self, (void)unused;
    if (pymod_torch_need_bound("poll") < 0) return NULL;
    Py_BEGIN_ALLOW_THREADS
    n = memobs_cuda_poll();
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(n);
}
#define PYMOD_CUDA_VERSION CUDART_VERSION
#else
#define PYMOD_CUDA_VERSION 0
#endif

/* ======================================================================== */
/* Module                                                                   */
/* ======================================================================== */

#ifdef MEMOBS_PY_ATTACH
#define PYMOD_NAME "memobs._memobs_attached"
#define PYMOD_INIT PyInit__memobs_attached
#define PYMOD_INSTANCE "preload"
#define PYMOD_WHOSE                                                                                            \
    "This build holds no memobs: it records into the LD_PRELOAD library's (libmemobs_preload.so), whose "      \
    "symbols the dynamic linker bound; memobs/__init__.py imports it only when that library is in the process " \
    "with its ABI key (_abi_key)."
#else
#define PYMOD_NAME "memobs._memobs"
#define PYMOD_INIT PyInit__memobs
#define PYMOD_INSTANCE "private"
#define PYMOD_WHOSE "The module keeps its own memobs instance."
#endif

/* instance(): whose memobs this build records into. */
static PyObject *pymod_instance(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    return PyUnicode_FromString(PYMOD_INSTANCE);
}

/* _preload_abi(): the LD_PRELOAD library's memobs_preload_abi(), or None
   when the process has none. Attached, the call is bound at load (the
   module cannot load without the function); private, it is looked up in
   the global scope. */
#ifdef MEMOBS_PY_ATTACH
uint64_t memobs_preload_abi(void);
#define PYMOD_PRELOAD_ABI() (&memobs_preload_abi)
#else
#include <dlfcn.h>
#define PYMOD_PRELOAD_ABI() ((uint64_t(*)(void))dlsym(RTLD_DEFAULT, "memobs_preload_abi"))
#endif
static PyObject *pymod_preload_abi(PyObject *self, PyObject *unused) {
    uint64_t (*abi)(void) = PYMOD_PRELOAD_ABI();
    (void)self, (void)unused;
    if (!abi) Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(abi());
}

#define PYMOD_KW (METH_FASTCALL | METH_KEYWORDS)

static PyMethodDef pymod_methods[] = {
    {"record_h2d", PYMOD_FN(pymod_record_h2d), PYMOD_KW,
     "record_h2d(num_bytes, is_prefill)\n--\n\nRecords a host-to-device copy of num_bytes (0 to 2**56; above: "
     "ValueError). is_prefill: True (prefill), False (decode) or None (the thread's phase from set_phase(); "
     "\"unphased\" if none). Required."},
    {"record_d2h", PYMOD_FN(pymod_record_d2h), PYMOD_KW,
     "record_d2h(num_bytes, is_prefill)\n--\n\nRecords a device-to-host copy; see record_h2d."},
    {"record_d2d", PYMOD_FN(pymod_record_d2d), PYMOD_KW,
     "record_d2d(num_bytes, is_prefill)\n--\n\nRecords a device-to-device copy; see record_h2d."},
    {"record_h2s", PYMOD_FN(pymod_record_h2s), PYMOD_KW,
     "record_h2s(num_bytes, is_prefill)\n--\n\nRecords a store from host memory to storage (a KV block offloaded "
     "to local NVMe, a network filesystem, an object store); see record_h2d."},
    {"record_s2h", PYMOD_FN(pymod_record_s2h), PYMOD_KW,
     "record_s2h(num_bytes, is_prefill)\n--\n\nRecords a load from storage into host memory; see record_h2d."},
    {"record_d2s", PYMOD_FN(pymod_record_d2s), PYMOD_KW,
     "record_d2s(num_bytes, is_prefill)\n--\n\nRecords a store from device memory to storage with no host copy "
     "(GPUDirect Storage); see record_h2d."},
    {"record_s2d", PYMOD_FN(pymod_record_s2d), PYMOD_KW,
     "record_s2d(num_bytes, is_prefill)\n--\n\nRecords a load from storage into device memory (GPUDirect "
     "Storage); see record_h2d."},
    {"record_xfer", PYMOD_FN(pymod_record_xfer), PYMOD_KW,
     "record_xfer(dir, nbytes, phase=None)\n--\n\nRecords a transfer of nbytes (0 to 2**56) in direction dir: "
     "\"h2d\", \"d2h\", \"d2d\", \"h2s\", \"s2h\", \"d2s\", \"s2d\" or DIR_H2D .. DIR_S2D. phase: None (the "
     "thread's phase), True (prefill), False (decode) or \"prefill\", \"decode\", \"unphased\". "
     "memobs_record_xfer; record_h2d(n, p) is record_xfer(\"h2d\", n, p)."},
    {"record_xfer_ns", PYMOD_FN(pymod_record_xfer_ns), PYMOD_KW,
     "record_xfer_ns(dir, nbytes, phase, ns)\n--\n\nA transfer the engine timed itself (a file read it waited "
     "for, an asynchronous I/O's completion): record_xfer, and nbytes, 1 and ns (0 to 2**56; 0: recorded, not "
     "timed) in get_summary()[\"timed\"][phase][dir], so its bandwidth shows beside the device-timed copies'. "
     "memobs_record_xfer_ns. timed_transfer() times a `with` block this way."},
    {"xfer_begin", PYMOD_FN(pymod_xfer_begin), PYMOD_KW,
     "xfer_begin(dir, nbytes, phase=None)\n--\n\nA transfer starts that the engine waits for elsewhere (an "
     "asynchronous read, a network fetch): its token (an int, never 0), in flight until xfer_end(token) records it "
     "as record_xfer_ns with the time between the two. 0: no token (memobs off, the table full). dir and phase as "
     "record_xfer. The request the calling thread is bound to gets it, whatever thread ends it. "
     "memobs_xfer_begin."},
    {"xfer_end", pymod_xfer_end, METH_O,
     "xfer_end(token)\n--\n\nThe transfer of xfer_begin's token is done: recorded with its duration (ns). True, "
     "or False for a token not in flight (0, ended already; counted, one warning). memobs_xfer_end."},
    {"xfer_cancel", pymod_xfer_cancel, METH_O,
     "xfer_cancel(token)\n--\n\nThe transfer of xfer_begin's token was abandoned: out of flight, nothing "
     "recorded. True, or False for a token not in flight. memobs_xfer_cancel."},
    {"set_phase", pymod_set_phase, METH_O,
     "set_phase(phase)\n--\n\nThe calling thread's phase, read by record_*(n, None): \"prefill\", \"decode\" or "
     "None (unphased)."},
    {"get_phase", pymod_get_phase, METH_NOARGS,
     "get_phase()\n--\n\nThe calling thread's phase: \"prefill\", \"decode\" or None."},
    {"ttft_start", pymod_ttft_start, METH_NOARGS,
     "ttft_start()\n--\n\nStarts the global TTFT clock (nano-vllm: at schedule time)."},
    {"ttft_stop", pymod_ttft_stop, METH_NOARGS,
     "ttft_stop()\n--\n\nA TTFT sample since ttft_start(); arms the TPOT clock."},
    {"tpot_step", pymod_tpot_step, METH_NOARGS, "tpot_step()\n--\n\nA TPOT sample: time since the previous token."},
    {"tpot_stop", pymod_tpot_stop, METH_NOARGS, "tpot_stop()\n--\n\nDisarms the TPOT clock (engine idle)."},
    {"record_ttft", pymod_record_ttft, METH_O,
     "record_ttft(ns)\n--\n\nOne TTFT sample the engine measured on its own clock, in ns (an int from 0 to 2**56; 0 "
     "is ignored)."},
    {"record_tpot", pymod_record_tpot, METH_O,
     "record_tpot(ns)\n--\n\nOne TPOT sample the engine measured on its own clock, in ns (an int from 0 to 2**56; 0 "
     "is ignored)."},
    {"request_begin", pymod_request_begin, METH_O,
     "request_begin(id)\n--\n\nStarts timing request id (an int 0 to 2**64-1, or a str: request_id(str)); its "
     "ledger (request_info) lives until request_end."},
    {"request_token", pymod_request_token, METH_O,
     "request_token(id)\n--\n\nA token of request id: the first gives a TTFT sample, later ones TPOT samples."},
    {"request_end", pymod_request_end, METH_O,
     "request_end(id)\n--\n\nEnds request id: an E2E sample; its ledger is finished (MEMOBS_REQUESTS writes its "
     "line, request_top() may keep it)."},
    {"request_id", pymod_request_id, METH_O,
     "request_id(id)\n--\n\nThe 64-bit id memobs keeps for id, as every request_* call takes it: an int (0 to "
     "2**64-1) is itself; a str is FNV-1a 64 of its UTF-8 bytes: h = 0xcbf29ce484222325, then for each byte "
     "h = ((h ^ byte) * 0x100000001b3) % 2**64 (in Python: for b in s.encode(\"utf-8\"): h = ((h ^ b) * "
     "0x100000001b3) & 0xFFFFFFFFFFFFFFFF). The \"id\" of memobs' request lines (MEMOBS_REQUESTS) is this number: "
     "compute it to join them with an engine's own log. ValueError for \"\", a lone surrogate, a negative int or "
     "one above 2**64-1; TypeError for another type (bools included)."},
    {"request_enter", pymod_request_enter, METH_O,
     "request_enter(id)\n--\n\nBinds the calling thread to request id (memobs_request_enter): its transfer "
     "records from now on go to the request's ledger as well as to the figures, until request_leave(). Nests 8 "
     "deep (the innermost gets the records; deeper enters are counted in get_summary()[\"attributed\"]"
     "[\"bind_misuse\"]). Prefer `with memobs.request(id):`."},
    {"request_leave", pymod_request_leave, METH_NOARGS,
     "request_leave()\n--\n\nEnds the calling thread's innermost binding (request_enter); back to the one "
     "outside, or none. A leave with no enter is counted (bind_misuse), never an error."},
    {"request_current", pymod_request_current, METH_NOARGS,
     "request_current()\n--\n\nThe id of the request the calling thread is bound to (innermost), None when "
     "none is."},
    {"request_xfer", PYMOD_FN(pymod_request_xfer), PYMOD_KW,
     "request_xfer(id, dir, nbytes, phase=None, ns=None)\n--\n\nOne transfer made on request id's behalf, from "
     "any thread (a scheduler moving a request's blocks): recorded as record_xfer(dir, nbytes, phase) records it, "
     "and its bytes and one operation in the request's ledger; the calling thread's binding does not take it. ns "
     "(0 to 2**56): a transfer the engine timed, as record_xfer_ns, its time also the ledger's engine_ns[dir]. An "
     "id not in flight: in the attributed figures and orphan_bytes, in no ledger. memobs_request_xfer(_ns)."},
    {"request_xfer_split", PYMOD_FN(pymod_request_xfer_split), PYMOD_KW,
     "request_xfer_split(ids, shares, dir, nbytes, phase=None)\n--\n\nOne transfer of nbytes made for several "
     "requests (a batch's blocks in one copy), shared by weights: ids a non-empty sequence of ids, shares None "
     "(equal shares) or as many ints >= 0 (tokens, blocks; all 0: equal). Part i is floor(nbytes * C_i / S) - "
     "floor(nbytes * C_(i-1) / S), C_i the sum of shares[0..i], S of all: whole bytes, each within one byte of "
     "its exact share, adding up to nbytes exactly (1000 over [1, 1, 1]: 333, 333, 334). One operation of the "
     "figures and one of each ledger. memobs_request_xfer_split; TypeError / ValueError (nothing recorded) for "
     "bad arguments."},
    {"request_tenant", PYMOD_FN(pymod_request_tenant), PYMOD_KW,
     "request_tenant(id, name)\n--\n\nFiles request id (in flight) under a tenant: name 1 to 63 bytes of UTF-8, "
     "no control character (else ValueError). The first 32 names (MEMOBS_MAX_TENANTS) have counters of their own, "
     "later ones are filed as \"other\". True when filed; False when memobs refused it (an id not in flight, a "
     "request with another tenant already: counted in get_summary()[\"attributed\"][\"tenant_misuse\"])."},
    {"request_info", pymod_request_info, METH_O,
     "request_info(id)\n--\n\nThe ledger of request id while it is in flight, None when it is not (never begun, "
     "ended) or memobs is off: a dict with memobs_request_info_t's fields: \"id\", \"tenant\" (None when none), "
     "\"state\" (\"in_flight\"; for finished ones \"completed\", \"aborted\", \"abandoned\", \"dropped\"), "
     "\"begin_ns\", \"end_ns\" (memobs' clock; 0 in flight), \"xfer\" (\"total\", \"prefill\", \"decode\", "
     "\"unphased\", each as get_summary()[\"total\"]: h2d_bytes, h2d_count, ...), \"bytes\" (every byte it moved), "
     "\"engine_ns\" and \"device_ns\" ({dir: ns}), \"wait_ns\" (their sum), \"region_ns\", \"tokens\", "
     "\"ttft_ns\", \"tpot_ns\" (the mean), \"e2e_ns\", \"current_bytes\", \"peak_bytes\" (tracked memory its "
     "bound threads allocated)."},
    {"request_top", PYMOD_FN(pymod_request_top), PYMOD_KW,
     "request_top(by=\"bytes\", n=10)\n--\n\nThe requests finished since start-up or reset() that moved the most "
     "bytes (by=\"bytes\") or waited longest on transfers (by=\"wait\": wait_ns), largest first: a list of up to "
     "n (at most the 10 memobs keeps) dicts as request_info() returns, with their final state and end_ns."},
    {"mark", pymod_mark, METH_O,
     "mark(name)\n--\n\nA marker: a named instant, counted per name (get_regions()[...][\"marks\"]). name: a "
     "non-empty str (interned on each call) or a region (its name, no lookup)."},
    {"region_depth", pymod_region_depth, METH_NOARGS,
     "region_depth()\n--\n\nRegions open on the calling thread (an int >= 0)."},
    {"region_set_timing", PYMOD_FN(pymod_region_set_timing), PYMOD_KW,
     "region_set_timing(on)\n--\n\nRegion timing on (True) or off (False), for every thread; returns the setting "
     "before the call. On (the default; MEMOBS_REGION_TIMING=0 turns it off at start): two clock reads per region, "
     "its time in total_ns and max_ns. Off: regions are counted, not timed (\"timed\" stops growing), unless the "
     "timeline is on or the name is a collective."},
    {"region_get_timing", pymod_region_get_timing, METH_NOARGS,
     "region_get_timing()\n--\n\nTrue while regions are timed (see region_set_timing)."},
    {"region_timing", PYMOD_FN(pymod_region_timing), PYMOD_KW,
     "region_timing(on=None)\n--\n\nRegion timing on (True) or off (False), for every thread; returns the setting "
     "before the call (on=None: returns it, changes nothing). On (the default; MEMOBS_REGION_TIMING=0 turns it off "
     "at start): two clock reads per region, its time in total_ns and max_ns. Off: regions are counted, not timed "
     "(\"timed\" stops growing), unless the timeline is on or the name is a collective. Deprecated name: "
     "region_set_timing(on) / region_get_timing()."},
    {"get_regions", pymod_get_regions, METH_NOARGS,
     "get_regions()\n--\n\nThe names used in the window (a region ended or a marker set), in the order they were "
     "first interned: a list of dicts with \"name\", \"count\" (regions ended), \"timed\" (of those, timed), "
     "\"total_ns\", \"mean_ns\" (total_ns / timed, 0 if none), \"max_ns\", \"marks\" and \"collective\" (a "
     "name Stormlog takes for a collective: nccl, all_reduce, barrier...)."},
    {"_region_end", pymod_region_end_c, METH_NOARGS,
     "_region_end()\n--\n\nmemobs_region_end() as C code calls it: ends the thread's innermost region, or counts "
     "an unmatched end (problems[\"region_unmatched_ends\"]). For tests; use a region's `with`."},
    {"get_summary", pymod_get_summary, METH_NOARGS,
     "get_summary()\n--\n\nA dict: nano-vllm's MemoryObserver.get_summary() keys (\"total\": nano-vllm's six keys, "
     "then h2s_, s2h_, d2s_ and s2d_bytes and _count; \"prefill\", \"decode\": nano-vllm's two), then \"unphased\", "
     "\"phases\" (every phase, every direction and counts), "
     "\"manual\" (the program's own records, apart from the observed ones under the LD_PRELOAD library: \"apart\" "
     "and \"total\", \"prefill\", \"decode\", \"unphased\" as \"total\"), \"ttft\", \"tpot\", "
     "\"e2e\", \"requests\", \"attributed\" (the part of the transfers made on a request's behalf: \"total\", "
     "\"prefill\", \"decode\", \"unphased\" as \"total\", and \"orphan_bytes\", \"bind_misuse\", "
     "\"tenant_misuse\"; unattributed = the phase's figures - these), \"problems\", \"counters\", \"memory\", \"tracker\", \"timed\" (per phase and "
     "direction: bytes, count, ns), \"sizes\" (per direction: count, bytes, p50, p90, p99, max and \"buckets\", "
     "[[upper_bound, count], ...] of the non-empty log2 buckets), \"regions\" (as "
     "get_regions()), \"identity\", "
     "\"enabled\", \"window_ns\", \"memobs_version\"; and, once a collective or a peer transfer was recorded "
     "or NCCL's profiler plugin set its source, \"collectives\" (coll_get_info()'s keys and \"comms\": name, id, "
     "rank, nranks, nnodes and \"kinds\": {kind: {phase: figures}}, algbw_gbs None when untimed, busbw_gbs None "
     "without a bus factor) and \"peers\" (name, comm name, rank, send and recv: the phases with bytes or "
     "operations), as the JSON summary has them."},
    {"instance", pymod_instance, METH_NOARGS,
     "instance()\n--\n\nWhose memobs the package records into: \"private\" (its own, in this extension) or "
     "\"preload\" (the LD_PRELOAD library's, libmemobs_preload.so, chosen at import when that library is in the "
     "process: one instance, one summary; MEMOBS_PY_ATTACH=0 chooses the private one)."},
    {"print_summary", pymod_print_summary, METH_NOARGS,
     "print_summary()\n--\n\nWrites the summary to stderr (MEMOBS_FORMAT: text or json)."},
    {"write_summary", PYMOD_FN(pymod_write_summary), PYMOD_KW,
     "write_summary(path, fmt=\"text\")\n--\n\nWrites the summary (fmt \"text\" or \"json\") to path, \"stderr\" "
     "or \"stdout\". OSError if it cannot be written."},
    {"write_html", PYMOD_FN(pymod_write_html), PYMOD_KW,
     "write_html(path)\n--\n\nWrites the one-file HTML report (inline SVG charts; opens offline) to path, "
     "\"stderr\" or \"stdout\". OSError if it cannot be written."},
    {"format_prometheus", pymod_format_prometheus, METH_NOARGS,
     "format_prometheus()\n--\n\nThe Prometheus text exposition (format 0.0.4) of one snapshot of memobs, as a str: "
     "what MEMOBS_PROM_FILE writes, for an engine serving its own /metrics (memobs_format_prometheus). Names "
     "start with memobs_; every sample has the labels job_id, rank, local_rank and host; times in seconds, sizes "
     "in bytes. memobs.prometheus.Collector yields the same families to prometheus_client's registry."},
    {"reset", pymod_reset, METH_NOARGS,
     "reset()\n--\n\nStarts a new window: every figure back to zero (in-flight requests, clocks and phases are "
     "kept)."},
    {"complete_reset", pymod_reset, METH_NOARGS, "complete_reset()\n--\n\nnano-vllm's name for reset()."},
    {"set_enabled", PYMOD_FN(pymod_set_enabled), PYMOD_KW,
     "set_enabled(on)\n--\n\nSwitches recording on (True) or off (False); returns the setting before the call."},
    {"get_enabled", pymod_is_enabled, METH_NOARGS, "get_enabled()\n--\n\nTrue when recording is on."},
    {"enable", PYMOD_FN(pymod_enable), PYMOD_KW,
     "enable(on=True)\n--\n\nSwitches recording on or off. Deprecated name: set_enabled(on)."},
    {"flush", pymod_flush, METH_NOARGS,
     "flush()\n--\n\nWrites every output the environment asks for at exit (MEMOBS_SUMMARY, MEMOBS_PROM_FILE, "
     "MEMOBS_TIMELINE, MEMOBS_HTML...) now, as exit would: for an engine's own shutdown path. The package calls it "
     "at an exit by an uncaught KeyboardInterrupt (which ends in SIGINT, past C's exit handlers). OSError if a "
     "writer failed."},
    {"set_signals", PYMOD_FN(pymod_set_signals), PYMOD_KW,
     "set_signals(on)\n--\n\nmemobs' handlers for stop and crash signals on (True, the default; env "
     "MEMOBS_SIGNALS) or off (False: what they replaced is put back where they are still installed). SIGTERM and "
     "SIGHUP get the package's handler where Python's is SIG_DFL: it writes the outputs, then ends the process by "
     "the signal; SIGINT is left to Python (KeyboardInterrupt: an exit by it is written by the package's exit "
     "hook), SIGQUIT alone; crashes call the crash writer. "
     "Returns the setting before the call."},
    {"is_enabled", pymod_is_enabled, METH_NOARGS,
     "is_enabled()\n--\n\nTrue when recording is on. Deprecated name: get_enabled()."},
    {"get_signals", pymod_get_signals, METH_NOARGS,
     "get_signals()\n--\n\nTrue while memobs' stop and crash signal handlers are wanted (see set_signals)."},
    {"track_python_stacks", PYMOD_FN(pymod_track_python_stacks), PYMOD_KW,
     "track_python_stacks(priority=None, skip=None, root=None, max_frames=None, head=None, tail=None, "
     "source_width=None, take_gil=None)\n--\n\nEvery tracked allocation gets the Python stack of the thread that "
     "makes it. Arguments left None keep the default (or the MEMOBS_PY_* environment); priority and skip are a "
     "str of comma-separated path parts or a list of them. ValueError for rules memobs refuses."},
    {"untrack_python_stacks", pymod_untrack_python_stacks, METH_NOARGS,
     "untrack_python_stacks()\n--\n\nStops capturing Python stacks; traces made so far stay printable."},
    {"stack_text", PYMOD_FN(pymod_stack_text), PYMOD_KW,
     "stack_text(boxed=False)\n--\n\nThe calling thread's Python stack, with the track_python_stacks() rules, as "
     "a report shows it."},
    {"track_alloc", PYMOD_FN(pymod_track_alloc), PYMOD_KW,
     "track_alloc(ptr, nbytes, kind=\"device\", tag=None, device=None)\n--\n\nRecords an allocation at address "
     "ptr (an int) of nbytes (0 to 2**56); kind \"device\", \"host\", \"pinned\" or \"managed\"; tag a str; "
     "device an index (None: the thread's)."},
    {"track_free", pymod_track_free, METH_O,
     "track_free(ptr)\n--\n\nRecords the free of ptr; call it before releasing the memory."},
    {"print_allocations", PYMOD_FN(pymod_print_allocations), PYMOD_KW,
     "print_allocations(path=None)\n--\n\nThe block table of live allocations, largest first, with their stacks "
     "(stderr when path is None)."},
    {"print_alloc_groups", PYMOD_FN(pymod_print_alloc_groups), PYMOD_KW,
     "print_alloc_groups(path=None)\n--\n\nLive bytes and counts per trace (tag and stack), largest first."},
    {"print_leaks", PYMOD_FN(pymod_print_leaks), PYMOD_KW,
     "print_leaks(path=None)\n--\n\nWhat is still live, grouped by trace."},
    {"write_torch_snapshot", PYMOD_FN(pymod_write_torch_snapshot), PYMOD_KW,
     "write_torch_snapshot(path)\n--\n\nWrites tracked device memory as PyTorch's memory snapshot (a pickle, as "
     "torch.cuda.memory._snapshot() returns) to path: one segment per live device allocation and each device's "
     "history of allocations and frees, with their tags, C and Python stacks. Open it in "
     "https://pytorch.org/memory_viz (drag the file in). The history is recorded only on request: between "
     "torch_history_start() and torch_history_stop(), or from start-up when MEMOBS_TORCH_SNAPSHOT is set; "
     "without it the file has the segments and blocks, empty device_traces and memobs' \"history\": \"off\" "
     "(one warning). OSError if it cannot be written."},
    {"torch_history_start", PYMOD_FN(pymod_torch_history_start), PYMOD_KW,
     "torch_history_start(max_events=0)\n--\n\nRecords the PyTorch snapshot's history of device allocations "
     "and frees from now, each device keeping its newest max_events events (0: MEMOBS_TORCH_EVENTS, default "
     "16384), as torch.cuda.memory._record_memory_history(max_entries=N). Events kept from before stay (a new "
     "max_events keeps the newest that fit); calling it again is harmless. ValueError above 2**24."},
    {"torch_history_stop", pymod_torch_history_stop, METH_NOARGS,
     "torch_history_stop()\n--\n\nStops recording the history; what was kept stays for the snapshot (PyTorch's "
     "_record_memory_history(enabled=None) forgets it, memobs keeps it)."},
    {"get_torch_history", PYMOD_FN(pymod_get_torch_history), PYMOD_KW,
     "get_torch_history(device=0)\n--\n\nThe snapshot history of a device: a dict with \"recorded\" (events "
     "since start-up), \"kept\", \"dropped\", \"capacity\" and \"recording\" (True while the history is "
     "recorded)."},
    {"get_allocations", pymod_get_allocations, METH_NOARGS,
     "get_allocations()\n--\n\nThe live tracked allocations: a list of dicts with \"ptr\", \"nbytes\", \"kind\", "
     "\"device\", \"phase\", \"stream\" (an int; 0: none), \"time_ns\", \"trace\" (an id or None), "
     "\"pending_free\" and \"stack\" (the trace's text: its tag, then one line per frame; None without one)."},
    {"get_device_bytes", pymod_device_bytes, METH_O,
     "get_device_bytes(device)\n--\n\n(now, most): tracked bytes of kind \"device\" on device now, and the most "
     "there ever were in this process (reset() keeps it)."},
    {"device_bytes", pymod_device_bytes, METH_O,
     "device_bytes(device)\n--\n\nDeprecated name of get_device_bytes(device)."},
    {"get_pinned", pymod_get_pinned, METH_NOARGS,
     "get_pinned()\n--\n\nPinned host memory as held and as asked (memobs_get_pinned): a dict of \"blocks\", "
     "\"held_bytes\", \"asked_bytes\", \"registered_bytes\", \"peak_held_bytes\", \"rss_shmem_bytes\" (RssShmem "
     "of /proc/self/status, None when unread), \"allocs\", \"frees\", \"asks\", \"asks_null\", \"asks_unknown\", "
     "\"asks_over\", \"untracked\", \"seen\" and \"classes\": the power-of-two size classes with live blocks "
     "(\"class\", \"min_bytes\", \"blocks\", \"held_bytes\", \"asked_bytes\"). Bytes."},
    {"pinned_asked", pymod_pinned_asked, METH_VARARGS,
     "pinned_asked(block, asked_bytes)\n--\n\nA pool tells what its user asked of a live pinned block (its start "
     "address, an int; the newest ask counts; 0 when the pool takes it back). True when taken; False when "
     "refused (an unknown block, more than it holds: counted, one warning)."},
    {"peer_intern", pymod_peer_intern, METH_O,
     "peer_intern(name)\n--\n\nThe handle (an int) of a named peer: another instance or host that bytes go to or "
     "come from (\"decode-3\", \"10.0.0.7:5600\"). name: a non-empty str, kept as at most 63 UTF-8 bytes; the "
     "same name gives the same handle. RuntimeError when the peer table is full (MEMOBS_MAX_PEERS, 256 named "
     "peers and ranks)."},
    {"peer_rank", PYMOD_FN(pymod_peer_rank), PYMOD_KW,
     "peer_rank(comm, rank)\n--\n\nThe handle of a rank of a communicator (comm from coll_register_comm()) as a "
     "peer, labelled \"<comm name> r<rank>\". ValueError for an unknown communicator or a rank out of range."},
    {"record_peer_xfer", PYMOD_FN(pymod_record_peer_xfer), PYMOD_KW,
     "record_peer_xfer(peer, dir, nbytes, phase=None)\n--\n\nRecords nbytes (0 to 2**56) sent to (dir PEER_SEND "
     "or \"send\") or received from (PEER_RECV, \"recv\") peer (a handle from peer_intern() or peer_rank()). "
     "phase: None (the calling thread's phase from set_phase()), True (prefill), False (decode) or a phase name. "
     "Arguments are checked before anything is recorded."},
    {"record_peer_xfer_timed", PYMOD_FN(pymod_record_peer_xfer_timed), PYMOD_KW,
     "record_peer_xfer_timed(peer, dir, nbytes, phase, ns)\n--\n\nrecord_peer_xfer with the transfer's duration "
     "in ns (0 to 2**56; 0: untimed) measured by the caller; phase None is the thread's phase."},
    {"coll_register_comm", PYMOD_FN(pymod_coll_register_comm), PYMOD_KW,
     "coll_register_comm(name, id, rank, nranks, nnodes=1)\n--\n\nThe handle (an int) of a communicator: name "
     "a str or None (\"comm <id hex>\"), id an int (0 to 2**64 - 1), rank 0 <= rank < nranks, nranks 0 when "
     "unknown (no bus bandwidth then), nnodes its nodes. The same id and rank give the same handle."},
    {"coll_kind_intern", pymod_coll_kind_intern, METH_O,
     "coll_kind_intern(name)\n--\n\nThe id of a collective kind: NCCL's names (\"AllReduce\", \"AlltoAll\", "
     "...) and memobs' (\"all_reduce\", ...) give the COLL_* constants, any other name an id of its own "
     "labelled \"other:<name>\" (COLL_OTHER when the kind table is full)."},
    {"coll_kind_label", pymod_coll_kind_label, METH_O,
     "coll_kind_label(kind)\n--\n\nThe label of a kind id (\"all_reduce\", \"other:AllGatherV\"), None if "
     "the id is not used."},
    {"record_coll", PYMOD_FN(pymod_record_coll), PYMOD_KW,
     "record_coll(comm, kind, nbytes, phase=None, ns=0)\n--\n\nRecords one completed collective of comm (a handle "
     "from coll_register_comm()): kind a COLL_* id, an id from coll_kind_intern() or a name; nbytes = count x "
     "datatype size (per rank for all_gather and reduce_scatter, per peer for all_to_all); phase as "
     "record_peer_xfer; ns its duration (0: untimed). memobs derives the algorithm and bus bandwidths as "
     "nccl-tests defines them."},
    {"coll_get_stats", pymod_coll_get_stats, METH_NOARGS,
     "coll_get_stats()\n--\n\nOne dict per (communicator, kind, phase) with operations: \"comm\" (handle), "
     "\"comm_name\", \"comm_id\", \"rank\", \"nranks\", \"nnodes\", \"kind\" (id), \"kind_name\", \"phase\", "
     "\"ops\", \"bytes\", \"timed_ops\", \"ns\", \"algo_bytes\" and \"bus_bytes\" (of the timed "
     "operations), \"algbw_gbs\", \"busbw_gbs\" (1e9 bytes/s; 0 when nothing was timed or the kind has no bus "
     "factor)."},
    {"peer_get_stats", pymod_peer_get_stats, METH_NOARGS,
     "peer_get_stats()\n--\n\nOne dict per peer used: \"id\" (handle), \"name\", \"comm\" and \"rank\" "
     "(None for a named peer), \"send\" and \"recv\": {phase: {\"bytes\", \"ops\", \"ns\"}} for "
     "\"prefill\", \"decode\" and \"unphased\"."},
    {"coll_get_info", pymod_coll_get_info, METH_NOARGS,
     "coll_get_info()\n--\n\nWhere the collective figures come from: \"source\" (\"nccl-profiler\", \"\" when "
     "no backend said), \"instance\" (whose memobs the NCCL plugin records into: \"preload\", \"python\", "
     "\"program\" or \"own\"), \"level\", \"api_version\" (the NCCL profiler API NCCL chose, 0 none), "
     "\"events_dropped\", \"bad_events\", \"captured_calls\", \"captured_replays\", \"comms_dropped\", "
     "\"kinds_dropped\", \"peers_dropped\"."},
    {"_on_stop", PYMOD_FN(pymod_on_stop), METH_FASTCALL,
     "_on_stop(signum, frame)\n--\n\nThe package's handler of SIGTERM and SIGHUP: writes the outputs (flush()), "
     "then ends the process by the signal as its default action would."},
    {"_stops", pymod_stops_py, METH_NOARGS,
     "_stops()\n--\n\nPuts _on_stop on SIGTERM and SIGHUP where Python's handler is SIG_DFL (signals on), or "
     "SIG_DFL back where it is _on_stop (off). Called by memobs/__init__.py and set_signals()."},
    {"_preload_abi", pymod_preload_abi, METH_NOARGS,
     "_preload_abi()\n--\n\nmemobs_preload_abi() of the LD_PRELOAD library in the process (its MEMOBS__ABI_KEY), "
     "or None without one; compare _abi_key."},
#ifdef MEMOBS_PY_CUDA
    {"_torch_bind", PYMOD_FN(pymod_torch_bind), PYMOD_KW,
     "_torch_bind(runtime=None)\n--\n\nBinds the allocator's CUDA runtime; returns its path. Use "
     "memobs.torch.use_allocator()."},
    {"_torch_settings", pymod_torch_settings, METH_NOARGS,
     "_torch_settings()\n--\n\nThe allocator's runtime path (None: unbound), stream_ordered and take_gil."},
    {"_torch_report", PYMOD_FN(pymod_torch_report), PYMOD_KW,
     "_torch_report(path=None)\n--\n\nmemobs.torch.report(): live blocks, bytes per trace, the driver's view."},
    {"_cuda_poll", pymod_cuda_poll, METH_NOARGS,
     "_cuda_poll()\n--\n\nmemobs_cuda_poll(): completed stream-ordered frees and timed copies settle."},
#endif
    {NULL, NULL, 0, NULL}};

#define PYMOD_ABOUT                                                                                              \
    ", the extension module of the package memobs (use `import memobs`): transfer counters (H2D, D2H, D2D and "  \
    "the storage tier's H2S, S2H, D2S, S2D per phase, with their sizes), TTFT/TPOT/E2E histograms, regions and markers (named spans and instants, counted and timed per "     \
    "name), summaries and an allocation tracker with Python stacks, for inference engines. "

static struct PyModuleDef pymod_def = {
    PyModuleDef_HEAD_INIT,
    PYMOD_NAME,
    PYMOD_NAME PYMOD_ABOUT PYMOD_WHOSE,
    -1,
    pymod_methods,
    NULL,
    NULL,
    NULL,
    NULL};

PyMODINIT_FUNC PYMOD_INIT(void);
PyMODINIT_FUNC PYMOD_INIT(void) {
    PyObject *m = PyModule_Create(&pymod_def), *key;
    if (!m) return NULL;
    if (PyModule_AddStringConstant(m, "__version__", MEMOBS_VERSION) < 0 ||
        PyModule_AddIntConstant(m, "_cuda_version", PYMOD_CUDA_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    {
        /* the directions of record_xfer and record_peer_xfer, and the fixed collective kinds */
        static const struct {
            const char *name;
            long value;
        } k[] = {{"DIR_H2D", MEMOBS_DIR_H2D},
                 {"DIR_D2H", MEMOBS_DIR_D2H},
                 {"DIR_D2D", MEMOBS_DIR_D2D},
                 {"DIR_H2S", MEMOBS_DIR_H2S},
                 {"DIR_S2H", MEMOBS_DIR_S2H},
                 {"DIR_D2S", MEMOBS_DIR_D2S},
                 {"DIR_S2D", MEMOBS_DIR_S2D},
                 {"PEER_SEND", MEMOBS_PEER_SEND},
                 {"PEER_RECV", MEMOBS_PEER_RECV},
                 {"COLL_ALL_REDUCE", MEMOBS_COLL_ALL_REDUCE},
                 {"COLL_ALL_GATHER", MEMOBS_COLL_ALL_GATHER},
                 {"COLL_REDUCE_SCATTER", MEMOBS_COLL_REDUCE_SCATTER},
                 {"COLL_BROADCAST", MEMOBS_COLL_BROADCAST},
                 {"COLL_REDUCE", MEMOBS_COLL_REDUCE},
                 {"COLL_ALL_TO_ALL", MEMOBS_COLL_ALL_TO_ALL},
                 {"COLL_GATHER", MEMOBS_COLL_GATHER},
                 {"COLL_SCATTER", MEMOBS_COLL_SCATTER},
                 {"COLL_SEND", MEMOBS_COLL_SEND},
                 {"COLL_RECV", MEMOBS_COLL_RECV},
                 {"COLL_SEND_RECV", MEMOBS_COLL_SEND_RECV},
                 {"COLL_OTHER", MEMOBS_COLL_OTHER}};
        size_t i;
        for (i = 0; i < sizeof k / sizeof k[0]; i++)
            if (PyModule_AddIntConstant(m, k[i].name, k[i].value) < 0) {
                Py_DECREF(m);
                return NULL;
            }
    }
    {
        int d;
        for (d = 0; d < MEMOBS_DIRS; d++)
            if (!pymod_dir_str[d] && !(pymod_dir_str[d] = PyUnicode_InternFromString(pymod_dir_names[d]))) {
                Py_DECREF(m);
                return NULL;
            }
    }
    /* the layouts its inline records assume (memobs.h's MEMOBS__ABI_KEY) */
    if (!(key = PyLong_FromUnsignedLongLong(MEMOBS__ABI_KEY)) || PyModule_AddObject(m, "_abi_key", key) < 0) {
        Py_XDECREF(key);
        Py_DECREF(m);
        return NULL;
    }
#ifndef MEMOBS_PY_ATTACH
    /* attached, nothing of the preload's memobs is touched before
       __init__.py has compared its key with _abi_key (its constructor
       read the environment) */
    memobs_init();
#endif
    {
        PyObject *ft = PyImport_ImportModule("functools");
        if (ft) {
            pymod_update_wrapper = PyObject_GetAttrString(ft, "update_wrapper");
            Py_DECREF(ft);
        }
    }
    if (!pymod_update_wrapper || !(pymod_region_cache = PyDict_New()) || PyType_Ready(&pymod_region_type) < 0 ||
        PyType_Ready(&pymod_rfunc_type) < 0 || PyType_Ready(&pymod_timed_xfer_type) < 0 ||
        PyType_Ready(&pymod_request_type) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&pymod_region_type);
    if (PyModule_AddObject(m, "region", (PyObject *)&pymod_region_type) < 0) {
        Py_DECREF(&pymod_region_type);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&pymod_timed_xfer_type);
    if (PyModule_AddObject(m, "timed_transfer", (PyObject *)&pymod_timed_xfer_type) < 0) {
        Py_DECREF(&pymod_timed_xfer_type);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&pymod_request_type);
    if (PyModule_AddObject(m, "request", (PyObject *)&pymod_request_type) < 0) {
        Py_DECREF(&pymod_request_type);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
