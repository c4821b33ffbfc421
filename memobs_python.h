/* memobs_python.h - v1.0.0 - Python stack tags for memobs' allocation tracker.
   Needs memobs.h and CPython's headers (python3-config --includes);
   CPython 3.9 to 3.13 (GIL builds). C99/C11, C++11/17.

   Do this in the one file that builds memobs' implementation, before any
   standard header (Python.h must come first; this header includes it):

       #define MEMOBS_IMPLEMENTATION
       #include "memobs_python.h"     // includes Python.h, then memobs.h

   then, once (any thread, before or after Py_Initialize):

       memobs_py_install(NULL);      // defaults + MEMOBS_PY_* environment

   and every tracked allocation (MEMOBS_TRACK_*, memobs_cuda.h's wrappers)
   made by a thread that runs Python code carries that Python stack:

       |   ┌─ Python Stack Trace ───────────────────────────────────
       |   │    models/model_desc/llama.py:308 in forward
       |   │    └─ h = self.embed_tokens(input_ids)
       |   │    models/layers/embedding.py:36 in forward
       |   │    └─ out = torch.empty(n, dim, device="cuda")
       |   └───────────────────────────────────────────────────────

   WHAT A CAPTURE DOES (the hot path, inside the allocation call)
     Checks, without touching Python objects, that the interpreter is
     initialized and not finalizing and that the calling thread holds the
     GIL; else it records one marker frame, "no Python stack (why)", and
     never blocks (unless take_gil is set, below). Then it walks the
     thread's frames through the C API (PyThreadState_GetFrame,
     PyFrame_GetBack, PyFrame_GetCode, the instruction offset) and stores,
     per frame, a code id and a line number. A code id names one code
     object: the first time a code object is seen its file name and
     function name are copied into memobs' own table (bounded,
     MEMOBS_PY_MAX_CODES) and the id is kept in the code object's co_extra
     slot, so later captures find it with one load; no reference to any
     Python object is kept, and reports never touch Python (they work from
     any thread, after Py_Finalize too). Line numbers are cached per
     (code id, instruction offset). The garbage collector is kept off
     for the walk (on 3.11, making frame objects could start a collection
     whose finalizers free through the allocator that is capturing). The
     rules below are applied while walking; the tracker then interns
     identical stacks into one trace id. Nothing is turned into text until
     a report is written: paths are shortened and source lines read from
     the files then. A capture leaves any pending Python exception as it
     found it.

   THE RULES (memobs_py_config_t; defaults, then MEMOBS_PY_* environment,
   then a call)
     priority     comma-separated path parts (default "model_desc"): the
                  stack starts at the outermost frame whose file path
                  contains one; frames outside it are dropped. No match:
                  the whole stack. Env MEMOBS_PY_PRIORITY ("" = none).
     skip         comma-separated path parts whose frames are dropped
                  (default "torch/nn/modules/module.py"). MEMOBS_PY_SKIP.
     max_frames   frames kept (default 5); a longer stack keeps its first
                  head and last tail frames (default 2 and 2) with a
                  "... N frames ..." line between. MEMOBS_PY_FRAMES,
                  MEMOBS_PY_HEAD, MEMOBS_PY_TAIL.
     root         project root (default ""). A path is shown from after its
                  last "site-packages/" (or "dist-packages/"); else from
                  after "ROOT/" (ROOT a directory name) or below ROOT (ROOT
                  starting with '/'); else whole. MEMOBS_PY_ROOT.
     source_width source line under each frame, stripped and cut to this
                  many characters with "..." (default 50; 0 = none).
                  MEMOBS_PY_SOURCE_WIDTH.
     take_gil     1: a thread without the GIL takes it (PyGILState_Ensure)
                  to capture. Off by default: an allocator called while
                  another thread holds the GIL and waits for this one would
                  deadlock, and a thread that asks for the GIL while the
                  interpreter finalizes is stopped by CPython. Safe where
                  the caller released the GIL itself and holds no lock the
                  GIL holder may wait on (PyTorch operators calling a
                  pluggable allocator). MEMOBS_PY_TAKE_GIL.
   A malformed value gets one warning through memobs' log hook and the
   default.

   COMPILE-TIME OPTIONS (where the implementation is built)
     MEMOBS_PY_MAX_CODES      code objects memobs names (default 16384:
                              24 bytes each plus their names, through
                              MEMOBS_MALLOC at the first capture; at most
                              2048 distinct file names). Beyond either,
                              frames show as "<code table full>:LINE"
                              (still filtered by path; counted).
     MEMOBS_PY_MAX_WALK       frames a capture walks at most (default 256):
                              deeper stacks lose their outermost frames.
     MEMOBS_PYTHON_IMPLEMENTATION
                              instead of MEMOBS_IMPLEMENTATION, in a module
                              that links to another module's memobs (whose
                              memobs_* symbols the dynamic linker binds, as
                              the Python package attached to the LD_PRELOAD
                              library does): emits this header's
                              implementation only. Its own warnings then go
                              to MEMOBS_PY_LOG, not memobs' log hook (which
                              lives in the other module).
     MEMOBS_PY_LOG(level, msg)
                              with MEMOBS_PYTHON_IMPLEMENTATION alone: where
                              those warnings go (level a MEMOBS_LOG_* value,
                              msg one line without '\n'). Default: stderr,
                              as memobs' default sink ("memobs: warning: ...").
   MEMOBS_DISABLE makes every function a stub that returns
   MEMOBS_ERR_INVALID or 0 (no Python calls).

   THREADS
     Every function may be called from any thread at any time, with or
     without the GIL. Configuration changes apply to later captures;
     traces already interned keep their frames.

   LIMITS
     Main interpreter only: a subinterpreter's thread gets the marker.
     Free-threaded builds (3.13t) are not supported. Source lines come from
     the file on disk at report time (a file edited since shows its new
     line). Ids of code objects outlive them, so a trace stays printable.

   LICENSE: MIT; the full text is at the end of this file.
*/

#ifndef MEMOBS_PYTHON_H
#define MEMOBS_PYTHON_H

/* Python.h first: it sets feature macros that every standard header must
   see (CPython's own rule), so it precedes memobs.h here. */
#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>

#include "memobs.h"

#if !defined(MEMOBS_VERSION_MAJOR) || MEMOBS_VERSION_MAJOR != 1 || MEMOBS_VERSION_MINOR != 0 || MEMOBS_VERSION_PATCH != 0
#error "memobs_python.h 1.0.0 needs memobs.h 1.0.0 (another memobs.h is on the include path)"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================== */
/* Configuration                                                            */
/* ======================================================================== */

typedef struct {
    const char *priority; /* comma-separated path parts; "" = none */
    const char *skip;     /* comma-separated path parts; "" = none */
    const char *root;     /* project root marker; "" = none */
    int max_frames;       /* >= 1 */
    int head, tail;       /* each >= 0, head + tail < max_frames */
    int source_width;     /* 0 = no source lines; else >= 8 */
    int take_gil;         /* 0 or 1 */
} memobs_py_config_t;

/* The defaults with the MEMOBS_PY_* environment applied (strings point to
   static storage). */
MEMOBS_API void memobs_py_default_config(memobs_py_config_t *out);
/* The rules in force (strings valid until the next memobs_py_configure). */
MEMOBS_API void memobs_py_get_config(memobs_py_config_t *out);
/* Sets the rules (NULL: the defaults and the environment). Strings are
   copied (at most 255 bytes each). Returns MEMOBS_OK, or
   MEMOBS_ERR_INVALID with a warning (rules unchanged) for a value out of
   range. Captures already interned keep the frames they were given. */
MEMOBS_API int memobs_py_configure(const memobs_py_config_t *config);

/* ======================================================================== */
/* Tag provider                                                             */
/* ======================================================================== */

/* memobs_py_configure(config), then installs the Python stack as the
   tracker's tag provider (memobs_track_set_tag_provider): every tracked
   allocation gets it. Any thread, before or after Py_Initialize. Returns
   MEMOBS_OK or an error code (with a warning). */
MEMOBS_API int memobs_py_install(const memobs_py_config_t *config);
/* Removes the provider; traces made so far stay printable. */
MEMOBS_API int memobs_py_uninstall(void);

/* ======================================================================== */
/* Capture and text                                                         */
/* ======================================================================== */

/* Why a capture holds no Python frames: the line of its marker frame. */
typedef enum {
    MEMOBS_PY_OK = 0,
    MEMOBS_PY_NOT_INITIALIZED = 1, /* before Py_Initialize or after Py_Finalize */
    MEMOBS_PY_FINALIZING = 2,      /* Py_Finalize is running */
    MEMOBS_PY_NO_GIL = 3,          /* the thread does not hold the GIL (and take_gil is off) */
    MEMOBS_PY_NO_FRAME = 4,        /* the thread runs no Python code */
    MEMOBS_PY_SUBINTERPRETER = 5   /* the thread runs in another interpreter */
} memobs_py_status_t;

/* Frame kinds, in memobs_frame_t.aux: a frame of Python code (pc: code id,
   line: line number), an elision (line: frames left out), the marker of a
   capture without frames (line: memobs_py_status_t), a frame whose code
   object found the code table full (line: line number). */
enum { MEMOBS_PY_FRAME = 0, MEMOBS_PY_ELIDED = 1, MEMOBS_PY_NONE = 2, MEMOBS_PY_FULL = 3 };

/* The calling thread's Python stack with the rules applied, outermost
   first, at most max frames (an elision counts as one). Returns the
   count: at least 1 when max >= 1 (a capture without Python frames gives
   one MEMOBS_PY_NONE marker). Exactly what the tag provider records. */
MEMOBS_API int memobs_py_capture(memobs_frame_t *out, int max);
/* Status of the calling thread now (what a capture would say). */
MEMOBS_API memobs_py_status_t memobs_py_status(void);
/* Text of n captured frames, two lines a frame ("path:line in function",
   then "└─ source", no source line when it cannot be read), one for an
   elision or a marker; lines end in '\n' but the last. Returns the length
   written (at most len - 1; buf is always terminated when len > 0). */
MEMOBS_API size_t memobs_py_format(const memobs_frame_t *frames, int n, char *buf, size_t len);
/* Captures and formats in one call; boxed != 0 draws the box a report
   shows ("  ┌─ Python Stack Trace ──...", "  │    " lines, "  └──..."). For
   engines that want the stack as a string (RTP-LLM's getPythonStackTrace). */
MEMOBS_API size_t memobs_py_stack_text(char *buf, size_t len, int boxed);

/* Counters of the Python side, for tests and the summary. */
typedef struct {
    uint64_t captures;     /* captures that walked Python frames */
    uint64_t no_stack[6];  /* captures that gave a marker, by memobs_py_status_t */
    uint64_t codes;        /* code objects named */
    uint64_t codes_full;   /* frames that found the code table full */
    uint64_t line_misses;  /* line numbers computed (not from the cache) */
    uint64_t gil_taken;    /* captures that took the GIL (take_gil) */
} memobs_py_stats_t;
MEMOBS_API void memobs_py_get_stats(memobs_py_stats_t *out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MEMOBS_PYTHON_H */

/* ======================================================================== */
/*                              IMPLEMENTATION                              */
/* ======================================================================== */

#if (defined(MEMOBS_IMPLEMENTATION) || defined(MEMOBS_PYTHON_IMPLEMENTATION)) && !defined(MEMOBS_PYTHON__IMPLEMENTED)
#define MEMOBS_PYTHON__IMPLEMENTED

#if PY_VERSION_HEX < 0x03090000
#error "memobs_python.h needs CPython 3.9 or later"
#endif
#if PY_VERSION_HEX < 0x030B0000
#include <frameobject.h> /* PyFrameObject.f_lasti before 3.11 */
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================== */
/* Private: helpers                                                         */
/* ======================================================================== */

#ifdef MEMOBS__IMPLEMENTED
/* memobs.h's implementation is in this translation unit: its log hook and
   parsers. */
#define memobs_py__log memobs__log
#define memobs_py__parse_int memobs__parse_int
#define memobs_py__parse_bool memobs__parse_bool
#define memobs_py__mix memobs__mix
#else
/* MEMOBS_PYTHON_IMPLEMENTATION alone: memobs lives in another module, whose
   private helpers are out of reach; these do the same here. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#if defined(MEMOBS_MALLOC) != defined(MEMOBS_FREE)
#error "define both MEMOBS_MALLOC and MEMOBS_FREE, or neither"
#endif
#ifndef MEMOBS_MALLOC
#define MEMOBS_MALLOC(sz) malloc(sz)
#define MEMOBS_FREE(p) free(p)
#endif
#ifndef MEMOBS_PY_LOG
#define MEMOBS_PY_LOG(level, msg)                                                                           \
    fprintf(stderr, "memobs: %s: %s\n",                                                                     \
            (level) >= MEMOBS_LOG_ERROR ? "error" : (level) == MEMOBS_LOG_WARN ? "warning" : "info", (msg))
#endif
static inline void memobs_py__log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void memobs_py__log(int level, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    MEMOBS_PY_LOG(level, msg);
}

/* 1/0 for a boolean word (1, on, true, yes / 0, off, false, no, any case), -1 otherwise. */
static inline int memobs_py__parse_bool(const char *s) {
    static const char *const word[8] = {"1", "on", "true", "yes", "0", "off", "false", "no"};
    unsigned i;
    for (i = 0; i < 8; i++) {
        const char *a = s, *b = word[i];
        while (*a && *b && tolower((unsigned char)*a) == *b) a++, b++;
        if (!*a && !*b) return i < 4;
    }
    return -1;
}

/* Whole-string non-negative decimal int: 1 and *out, else 0. */
static inline int memobs_py__parse_int(const char *s, int *out) {
    char *end;
    long v;
    if (!s || !isdigit((unsigned char)*s)) return 0;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end != 0 || v > 0x7fffffffL) return 0;
    *out = (int)v;
    return 1;
}

/* A 64-bit mixer (splitmix64's finalizer), for the line cache's slots. */
static inline uint64_t memobs_py__mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
#endif

/* ======================================================================== */
/* Private: state                                                           */
/* ======================================================================== */

#ifndef MEMOBS_PY_MAX_CODES
#define MEMOBS_PY_MAX_CODES 16384
#endif
#ifndef MEMOBS_PY_MAX_WALK
#define MEMOBS_PY_MAX_WALK 256
#endif
#if MEMOBS_PY_MAX_CODES < 1 || MEMOBS_PY_MAX_CODES > 1000000
#error "MEMOBS_PY_MAX_CODES must be in 1..1000000"
#endif
#define MEMOBS_PY__PATTERNS 8        /* path parts per list */
#define MEMOBS_PY__STR 256           /* bytes of a configured string */
#define MEMOBS_PY__LINE_SLOTS 8192   /* line cache, a power of two */
#define MEMOBS_PY__FILE_SLOTS 4096   /* distinct file names (interned), a power of two */
#define MEMOBS_PY__SKIP 1u           /* code flags */
#define MEMOBS_PY__PRIO 2u

/* Version shims: the names CPython gave these calls over 3.9 to 3.13. */
#if PY_VERSION_HEX >= 0x030C0000
#define MEMOBS_PY__GET_EXTRA PyUnstable_Code_GetExtra
#define MEMOBS_PY__SET_EXTRA PyUnstable_Code_SetExtra
#define MEMOBS_PY__EXTRA_INDEX PyUnstable_Eval_RequestCodeExtraIndex
#else
#define MEMOBS_PY__GET_EXTRA _PyCode_GetExtra
#define MEMOBS_PY__SET_EXTRA _PyCode_SetExtra
#define MEMOBS_PY__EXTRA_INDEX _PyEval_RequestCodeExtraIndex
#endif
#if PY_VERSION_HEX >= 0x030D0000
#define MEMOBS_PY__UNCHECKED_TSTATE PyThreadState_GetUnchecked
#define MEMOBS_PY__FINALIZING Py_IsFinalizing
#else
#define MEMOBS_PY__UNCHECKED_TSTATE _PyThreadState_UncheckedGet
#define MEMOBS_PY__FINALIZING _Py_IsFinalizing
#endif

/* From 3.11 a frame object is made when the walk first asks for a frame,
   and on 3.11 making one can start a garbage collection on the spot,
   whose finalizers run Python code, such as a tensor's, that frees
   through the allocator whose call is capturing (and holds its lock).
   The collector stays off for the walk; its work waits for the next
   allocation. (3.12+ only schedules collections; off there too, for two
   cheap calls.) */
#if PY_VERSION_HEX >= 0x030B0000
#define MEMOBS_PY__GC_OFF(on) ((on) = PyGC_Disable())
#define MEMOBS_PY__GC_RESTORE(on) ((on) ? (void)PyGC_Enable() : (void)0)
#else
#define MEMOBS_PY__GC_OFF(on) ((on) = 0)
#define MEMOBS_PY__GC_RESTORE(on) ((void)(on))
#endif

/* One named code object. Written once, before its id is published. */
typedef struct {
    const char *file; /* UTF-8, interned in the file table */
    const char *name; /* UTF-8, co_name */
    memobs__u32_t flags; /* (rules generation << 2) | MEMOBS_PY__SKIP/PRIO; 0 = not classified */
} memobs_py__code_t;

typedef struct {
    uint32_t off, len;
} memobs_py__part_t;

static pthread_once_t memobs_py__once = PTHREAD_ONCE_INIT;
static struct {
    pthread_mutex_t lock;  /* rules, the code and file tables' inserts, the extra index */
    /* rules */
    char priority[MEMOBS_PY__STR], skip[MEMOBS_PY__STR], root[MEMOBS_PY__STR];
    memobs_py__part_t prio_part[MEMOBS_PY__PATTERNS], skip_part[MEMOBS_PY__PATTERNS];
    unsigned nprio, nskip;
    memobs__u32_t max_frames, head, tail, source_width, take_gil;
    memobs__u32_t gen;     /* rules generation, >= 1 */
    /* provider */
    int installed;         /* under lock */
    /* co_extra slot of the main interpreter; -1 until asked (again after a
       Py_Finalize: the next interpreter hands out indices anew) */
    Py_ssize_t extra;
    /* code table: ids 1..ncodes */
    memobs_py__code_t *codes;
    memobs__u32_t ncodes;
    const char **files;    /* MEMOBS_PY__FILE_SLOTS interned file names */
    uint32_t nfiles;
    /* line cache: id << 44 | offset << 20 | line; 0 = empty */
    memobs__u64_t lines[MEMOBS_PY__LINE_SLOTS];
    /* counters */
    memobs__u64_t captures, no_stack[6], codes_full, line_misses, gil_taken;
} memobs_py__g;

static const char *const memobs_py__why[6] = {
    "", "interpreter not initialized", "interpreter finalizing", "thread does not hold the GIL",
    "thread runs no Python code", "thread runs in a subinterpreter"};

#ifndef MEMOBS_DISABLE
static void memobs_py__parts(const char *s, memobs_py__part_t *part, unsigned *n) {
    const char *p = s;
    *n = 0;
    while (*p && *n < MEMOBS_PY__PATTERNS) {
        const char *e = strchr(p, ',');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k) {
            part[*n].off = (uint32_t)(p - s);
            part[*n].len = (uint32_t)k;
            (*n)++;
        }
        p += k + (e ? 1 : 0);
    }
}

/* Caller holds the lock. Copies the rules (validated already) in. */
static void memobs_py__apply(const memobs_py_config_t *c) {
    snprintf(memobs_py__g.priority, MEMOBS_PY__STR, "%s", c->priority ? c->priority : "");
    snprintf(memobs_py__g.skip, MEMOBS_PY__STR, "%s", c->skip ? c->skip : "");
    snprintf(memobs_py__g.root, MEMOBS_PY__STR, "%s", c->root ? c->root : "");
    memobs_py__parts(memobs_py__g.priority, memobs_py__g.prio_part, &memobs_py__g.nprio);
    memobs_py__parts(memobs_py__g.skip, memobs_py__g.skip_part, &memobs_py__g.nskip);
    MEMOBS__STORE(&memobs_py__g.max_frames.v, (uint32_t)c->max_frames);
    MEMOBS__STORE(&memobs_py__g.head.v, (uint32_t)c->head);
    MEMOBS__STORE(&memobs_py__g.tail.v, (uint32_t)c->tail);
    MEMOBS__STORE(&memobs_py__g.source_width.v, (uint32_t)c->source_width);
    MEMOBS__STORE(&memobs_py__g.take_gil.v, (uint32_t)(c->take_gil != 0));
    __atomic_store_n(&memobs_py__g.gen.v, MEMOBS__LOAD(&memobs_py__g.gen.v) % 0x3fffffffu + 1u, __ATOMIC_RELEASE);
}
#endif

/* A checked rule set; what is wrong goes to the log. */
static int memobs_py__valid(const memobs_py_config_t *c) {
    const char *bad = NULL;
    if (c->max_frames < 1 || c->max_frames > MEMOBS_MAX_STACK) bad = "max_frames must be in 1..MEMOBS_MAX_STACK";
    else if (c->head < 0 || c->tail < 0 || c->head + c->tail > c->max_frames - 1)
        bad = "head and tail must be >= 0 with head + tail < max_frames";
    else if (c->source_width != 0 && (c->source_width < 8 || c->source_width > 400))
        bad = "source_width must be 0 or in 8..400";
    else if ((c->priority && strlen(c->priority) >= MEMOBS_PY__STR) || (c->skip && strlen(c->skip) >= MEMOBS_PY__STR) ||
             (c->root && strlen(c->root) >= MEMOBS_PY__STR))
        bad = "priority, skip and root must be shorter than 256 bytes";
    if (bad) memobs_py__log(MEMOBS_LOG_WARN, "memobs_py_configure: %s; rules unchanged", bad);
    return bad == NULL;
}

/* An integer variable within [lo, hi], else a warning and the default. */
static int memobs_py__env_range(const char *name, int def, int lo, int hi) {
    const char *s = getenv(name);
    int v;
    if (!s) return def;
    if (memobs_py__parse_int(s, &v) && v >= lo && v <= hi) return v;
    memobs_py__log(MEMOBS_LOG_WARN, "%s='%s' is not an integer in %d..%d; using %d", name, s, lo, hi, def);
    return def;
}

static const char *memobs_py__env_str(const char *name, const char *def) {
    const char *s = getenv(name);
    if (!s) return def;
    if (strlen(s) >= MEMOBS_PY__STR) {
        memobs_py__log(MEMOBS_LOG_WARN, "%s is %u bytes long (at most %d); using '%s'", name, (unsigned)strlen(s),
                    MEMOBS_PY__STR - 1, def);
        return def;
    }
    return s;
}

void memobs_py_default_config(memobs_py_config_t *out) {
    memobs_py_config_t c;
    const char *g;
    int b;
    if (!out) return;
    c.priority = memobs_py__env_str("MEMOBS_PY_PRIORITY", "model_desc");
    c.skip = memobs_py__env_str("MEMOBS_PY_SKIP", "torch/nn/modules/module.py");
    c.root = memobs_py__env_str("MEMOBS_PY_ROOT", "");
    c.max_frames = memobs_py__env_range("MEMOBS_PY_FRAMES", 5, 1, MEMOBS_MAX_STACK);
    c.head = memobs_py__env_range("MEMOBS_PY_HEAD", c.max_frames >= 5 ? 2 : (c.max_frames - 1) / 2, 0, MEMOBS_MAX_STACK);
    c.tail = memobs_py__env_range("MEMOBS_PY_TAIL", c.max_frames >= 5 ? 2 : (c.max_frames - 1) - (c.max_frames - 1) / 2,
                                  0, MEMOBS_MAX_STACK);
    if (c.head + c.tail > c.max_frames - 1) {
        memobs_py__log(MEMOBS_LOG_WARN, "MEMOBS_PY_HEAD + MEMOBS_PY_TAIL (%d) must be below MEMOBS_PY_FRAMES (%d); "
                    "using %d and %d", c.head + c.tail, c.max_frames, (c.max_frames - 1) / 2,
                    (c.max_frames - 1) - (c.max_frames - 1) / 2);
        c.head = (c.max_frames - 1) / 2;
        c.tail = (c.max_frames - 1) - c.head;
    }
    c.source_width = memobs_py__env_range("MEMOBS_PY_SOURCE_WIDTH", 50, 0, 400);
    if (c.source_width != 0 && c.source_width < 8) {
        memobs_py__log(MEMOBS_LOG_WARN, "MEMOBS_PY_SOURCE_WIDTH=%d: must be 0 or at least 8; using 50", c.source_width);
        c.source_width = 50;
    }
    c.take_gil = 0;
    g = getenv("MEMOBS_PY_TAKE_GIL");
    if (g) {
        b = memobs_py__parse_bool(g);
        if (b < 0) memobs_py__log(MEMOBS_LOG_WARN, "MEMOBS_PY_TAKE_GIL='%s' is not 0/1/on/off; using 0", g);
        else c.take_gil = b;
    }
    *out = c;
}

static void memobs_py__fork_lock(void) { pthread_mutex_lock(&memobs_py__g.lock); }
static void memobs_py__fork_unlock(void) { pthread_mutex_unlock(&memobs_py__g.lock); }

static void memobs_py__init_once(void) {
    pthread_mutex_init(&memobs_py__g.lock, NULL);
    /* a fork() while another thread holds the lock must not leave the
       child's copy locked */
    pthread_atfork(memobs_py__fork_lock, memobs_py__fork_unlock, memobs_py__fork_unlock);
    memobs_py__g.extra = -1;
    memobs_init();
#ifndef MEMOBS_DISABLE
    {
        memobs_py_config_t c;
        memobs_py_default_config(&c);
        memobs_py__apply(&c);
    }
#endif
}

static void memobs_py__init(void) { pthread_once(&memobs_py__once, memobs_py__init_once); }

void memobs_py_get_config(memobs_py_config_t *out) {
    if (!out) return;
    memobs_py__init();
    pthread_mutex_lock(&memobs_py__g.lock);
    out->priority = memobs_py__g.priority;
    out->skip = memobs_py__g.skip;
    out->root = memobs_py__g.root;
    out->max_frames = (int)MEMOBS__LOAD(&memobs_py__g.max_frames.v);
    out->head = (int)MEMOBS__LOAD(&memobs_py__g.head.v);
    out->tail = (int)MEMOBS__LOAD(&memobs_py__g.tail.v);
    out->source_width = (int)MEMOBS__LOAD(&memobs_py__g.source_width.v);
    out->take_gil = (int)MEMOBS__LOAD(&memobs_py__g.take_gil.v);
    pthread_mutex_unlock(&memobs_py__g.lock);
}

void memobs_py_get_stats(memobs_py_stats_t *out) {
    unsigned i;
    if (!out) return;
    memobs_py__init();
    out->captures = MEMOBS__LOAD(&memobs_py__g.captures.v);
    for (i = 0; i < 6; i++) out->no_stack[i] = MEMOBS__LOAD(&memobs_py__g.no_stack[i].v);
    out->codes = __atomic_load_n(&memobs_py__g.ncodes.v, __ATOMIC_ACQUIRE);
    out->codes_full = MEMOBS__LOAD(&memobs_py__g.codes_full.v);
    out->line_misses = MEMOBS__LOAD(&memobs_py__g.line_misses.v);
    out->gil_taken = MEMOBS__LOAD(&memobs_py__g.gil_taken.v);
}

#ifdef MEMOBS_DISABLE

int memobs_py_configure(const memobs_py_config_t *config) { (void)config; return MEMOBS_ERR_INVALID; }
int memobs_py_install(const memobs_py_config_t *config) { (void)config; return MEMOBS_ERR_INVALID; }
int memobs_py_uninstall(void) { return MEMOBS_ERR_INVALID; }
int memobs_py_capture(memobs_frame_t *out, int max) { (void)out; (void)max; (void)memobs_py__why; (void)memobs_py__valid; return 0; }
memobs_py_status_t memobs_py_status(void) { return MEMOBS_PY_NOT_INITIALIZED; }
size_t memobs_py_format(const memobs_frame_t *frames, int n, char *buf, size_t len) {
    (void)frames; (void)n;
    if (buf && len) buf[0] = 0;
    return 0;
}
size_t memobs_py_stack_text(char *buf, size_t len, int boxed) {
    (void)boxed;
    if (buf && len) buf[0] = 0;
    return 0;
}

#else /* !MEMOBS_DISABLE */

int memobs_py_configure(const memobs_py_config_t *config) {
    memobs_py_config_t c;
    memobs_py__init();
    if (config) c = *config;
    else memobs_py_default_config(&c);
    if (!memobs_py__valid(&c)) return MEMOBS_ERR_INVALID;
    pthread_mutex_lock(&memobs_py__g.lock);
    memobs_py__apply(&c);
    pthread_mutex_unlock(&memobs_py__g.lock);
    return MEMOBS_OK;
}

/* ======================================================================== */
/* Private: code objects                                                    */
/* ======================================================================== */

/* Caller holds the lock. The interned copy of a file name (NULL: no room). */
static const char *memobs_py__file(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i;
    uint32_t slot;
    char *copy;
    for (i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    for (slot = (uint32_t)h & (MEMOBS_PY__FILE_SLOTS - 1);; slot = (slot + 1) & (MEMOBS_PY__FILE_SLOTS - 1)) {
        const char *f = memobs_py__g.files[slot];
        if (!f) break;
        if (strncmp(f, s, n) == 0 && f[n] == 0) return f;
    }
    if (memobs_py__g.nfiles >= MEMOBS_PY__FILE_SLOTS / 2) return NULL;
    copy = (char *)MEMOBS_MALLOC(n + 1);
    if (!copy) return NULL;
    memcpy(copy, s, n);
    copy[n] = 0;
    memobs_py__g.files[slot] = copy;
    memobs_py__g.nfiles++;
    return copy;
}

/* UTF-8 of a str object, or "?" (no exception is left set). */
static const char *memobs_py__utf8(PyObject *o, Py_ssize_t *n) {
    const char *s = (o && PyUnicode_Check(o)) ? PyUnicode_AsUTF8AndSize(o, n) : NULL;
    if (!s) {
        if (PyErr_Occurred()) PyErr_Clear();
        *n = 1;
        return "?";
    }
    return s;
}

static int memobs_py__has_part(const char *path, const char *list, const memobs_py__part_t *part, unsigned n) {
    unsigned i;
    for (i = 0; i < n; i++) {
        const char *p = path;
        size_t k = part[i].len;
        for (; (p = strchr(p, list[part[i].off])) != NULL; p++)
            if (strncmp(p, list + part[i].off, k) == 0) return 1;
    }
    return 0;
}

/* Rules flags of a file path (under the current rules). */
static uint32_t memobs_py__classify(const char *path) {
    uint32_t f = 0;
    if (memobs_py__has_part(path, memobs_py__g.skip, memobs_py__g.skip_part, memobs_py__g.nskip)) f |= MEMOBS_PY__SKIP;
    if (memobs_py__has_part(path, memobs_py__g.priority, memobs_py__g.prio_part, memobs_py__g.nprio))
        f |= MEMOBS_PY__PRIO;
    return f;
}

static void memobs_py__at_exit(void) {
    /* Runs at the end of Py_Finalize: a later interpreter hands out its own
       co_extra indices. */
    __atomic_store_n(&memobs_py__g.extra, (Py_ssize_t)-1, __ATOMIC_RELEASE);
}

/* GIL held. The co_extra index for this interpreter, or -1. */
static Py_ssize_t memobs_py__extra_index(void) {
    Py_ssize_t x = __atomic_load_n(&memobs_py__g.extra, __ATOMIC_ACQUIRE);
    if (x >= 0) return x;
    pthread_mutex_lock(&memobs_py__g.lock);
    x = memobs_py__g.extra;
    if (x < 0) {
        x = MEMOBS_PY__EXTRA_INDEX(NULL);
        if (x < 0) {
            PyErr_Clear();
            memobs_py__log(MEMOBS_LOG_WARN, "memobs_python: no co_extra index left (255 per interpreter); "
                                         "Python frames are named without a cache");
        } else {
            (void)Py_AtExit(memobs_py__at_exit);
            __atomic_store_n(&memobs_py__g.extra, x, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&memobs_py__g.lock);
    return x;
}

/* GIL held. Names a code object: its id (>= 1), or 0 with the table full.
   *flags gets its rules flags. */
static uint32_t memobs_py__code_id(PyCodeObject *co, uint32_t *flags) {
    Py_ssize_t x = memobs_py__extra_index();
    void *extra = NULL;
    uint32_t id, gen = __atomic_load_n(&memobs_py__g.gen.v, __ATOMIC_ACQUIRE), fl;
    memobs_py__code_t *e;
    if (x >= 0 && MEMOBS_PY__GET_EXTRA((PyObject *)co, x, &extra) == 0 && extra &&
        (uintptr_t)extra <= __atomic_load_n(&memobs_py__g.ncodes.v, __ATOMIC_ACQUIRE)) {
        id = (uint32_t)(uintptr_t)extra;
        e = &memobs_py__g.codes[id - 1];
        fl = MEMOBS__LOAD(&e->flags.v);
        if ((fl >> 2) != gen) { /* the rules changed since: once per code object */
            pthread_mutex_lock(&memobs_py__g.lock);
            fl = gen << 2 | memobs_py__classify(e->file);
            pthread_mutex_unlock(&memobs_py__g.lock);
            MEMOBS__STORE(&e->flags.v, fl);
        }
        *flags = fl & 3u;
        return id;
    }
    if (PyErr_Occurred()) PyErr_Clear();
    {
        Py_ssize_t nf, nn;
        const char *file = memobs_py__utf8(co->co_filename, &nf), *name = memobs_py__utf8(co->co_name, &nn);
        char *ncopy;
        pthread_mutex_lock(&memobs_py__g.lock);
        id = MEMOBS__LOAD(&memobs_py__g.ncodes.v);
        /* without a co_extra index a code object could not be found again:
           name none rather than one per capture */
        e = id < MEMOBS_PY_MAX_CODES && x >= 0 ? &memobs_py__g.codes[id] : NULL;
        ncopy = e ? (char *)MEMOBS_MALLOC((size_t)nn + 1) : NULL;
        if (e && ncopy && (e->file = memobs_py__file(file, (size_t)nf)) != NULL) {
            memcpy(ncopy, name, (size_t)nn);
            ncopy[nn] = 0;
            e->name = ncopy;
            fl = gen << 2 | memobs_py__classify(e->file);
            MEMOBS__STORE(&e->flags.v, fl);
            id++;
            __atomic_store_n(&memobs_py__g.ncodes.v, id, __ATOMIC_RELEASE);
        } else {
            if (ncopy) MEMOBS_FREE(ncopy);
            fl = memobs_py__classify(file);
            id = 0;
        }
        pthread_mutex_unlock(&memobs_py__g.lock);
        if (id && x >= 0 && MEMOBS_PY__SET_EXTRA((PyObject *)co, x, (void *)(uintptr_t)id) != 0) PyErr_Clear();
        if (!id) MEMOBS__ADD(&memobs_py__g.codes_full.v, 1u);
        *flags = fl & 3u;
        return id;
    }
}

/* GIL held. Line number of a frame, through the cache. */
static uint32_t memobs_py__line(PyFrameObject *f, uint32_t id) {
#if PY_VERSION_HEX >= 0x030B0000
    int lasti = PyFrame_GetLasti(f);
#else
    int lasti = f->f_lasti;
#endif
    uint64_t key = (uint64_t)id << 44 | (uint64_t)(uint32_t)lasti << 20, v;
    uint32_t slot = (uint32_t)(memobs_py__mix(key) & (MEMOBS_PY__LINE_SLOTS - 1));
    int line;
    int cacheable = id != 0 && lasti >= 0 && lasti < (1 << 24);
    if (cacheable) {
        v = MEMOBS__LOAD(&memobs_py__g.lines[slot].v);
        if (v && (v & ~(uint64_t)0xfffff) == key) return (uint32_t)(v & 0xfffff);
    }
    line = PyFrame_GetLineNumber(f);
    if (line < 0) line = 0;
    MEMOBS__ADD(&memobs_py__g.line_misses.v, 1u);
    if (cacheable && line < (1 << 20)) MEMOBS__STORE(&memobs_py__g.lines[slot].v, key | (uint64_t)line);
    return (uint32_t)line;
}

/* ======================================================================== */
/* Private: capture                                                         */
/* ======================================================================== */

/* Whether the calling thread may walk its frames now, reading no Python
   object: *tstate gets its thread state when it holds the GIL. */
static memobs_py_status_t memobs_py__check(PyThreadState **tstate) {
    PyThreadState *cur;
    *tstate = NULL;
    if (!Py_IsInitialized()) return MEMOBS_PY_NOT_INITIALIZED;
    if (MEMOBS_PY__FINALIZING()) return MEMOBS_PY_FINALIZING;
    /* Up to 3.11 this reads the GIL holder of the whole process, from 3.12
       this thread's attached state: either way the GIL is ours only if it
       is this thread's own state (a thread Python never saw has none). */
    cur = MEMOBS_PY__UNCHECKED_TSTATE();
    if (cur == NULL || cur != PyGILState_GetThisThreadState()) return MEMOBS_PY_NO_GIL;
    if (PyThreadState_GetInterpreter(cur) != PyInterpreterState_Main()) return MEMOBS_PY_SUBINTERPRETER;
    *tstate = cur;
    return MEMOBS_PY_OK;
}

memobs_py_status_t memobs_py_status(void) {
    PyThreadState *ts;
    memobs_py_status_t st = memobs_py__check(&ts);
    if (st == MEMOBS_PY_OK) {
        int gc;
        PyFrameObject *f;
        MEMOBS_PY__GC_OFF(gc);
        f = PyThreadState_GetFrame(ts);
        MEMOBS_PY__GC_RESTORE(gc);
        if (!f) return MEMOBS_PY_NO_FRAME;
        Py_DECREF(f); /* the running frame keeps its frame object: not the last reference */
    }
    return st;
}

static void memobs_py__set(memobs_frame_t *f, uintptr_t pc, uint32_t line, uint32_t aux) {
    f->pc = pc;
    f->line = line;
    f->aux = aux;
}

typedef struct {
    uint32_t id, line, flags;
} memobs_py__walked_t;

/* GIL held, tstate is the caller's. Walks and applies the rules. */
static int memobs_py__walk(PyThreadState *ts, memobs_frame_t *out, int max) {
    memobs_py__walked_t w[MEMOBS_PY_MAX_WALK];
    PyFrameObject *f = PyThreadState_GetFrame(ts);
    int n = 0, prio = -1, i, o = 0, keep, head, tail, visited = 0;
    uint32_t mf = MEMOBS__LOAD(&memobs_py__g.max_frames.v);
    if (!f) return 0;
    while (f && visited++ < MEMOBS_PY_MAX_WALK) {
        PyCodeObject *co = PyFrame_GetCode(f);
        PyFrameObject *back;
        uint32_t flags = 0, id = memobs_py__code_id(co, &flags);
        if (!(flags & MEMOBS_PY__SKIP)) {
            w[n].id = id;
            w[n].line = memobs_py__line(f, id);
            w[n].flags = flags;
            if (flags & MEMOBS_PY__PRIO) prio = n;
            n++;
        }
        Py_DECREF(co);
        back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    Py_XDECREF(f);
    if (n == 0) return 0;
    keep = prio >= 0 ? prio + 1 : n; /* w[0] is the innermost frame */
    if ((uint32_t)max < mf) mf = (uint32_t)max;
    head = (int)MEMOBS__LOAD(&memobs_py__g.head.v);
    tail = (int)MEMOBS__LOAD(&memobs_py__g.tail.v);
    if (head + tail > (int)mf - 1) { /* max below the rules' */
        head = ((int)mf - 1) / 2;
        tail = (int)mf - 1 - head;
    }
    for (i = keep - 1; i >= 0; i--) { /* outermost first */
        int pos = keep - 1 - i; /* position from the outermost kept frame */
        if (keep > (int)mf && pos >= head && i >= tail) {
            if (pos == head) memobs_py__set(&out[o++], 0, (uint32_t)(keep - head - tail), MEMOBS_PY_ELIDED);
            continue;
        }
        memobs_py__set(&out[o++], w[i].id, w[i].line, w[i].id ? MEMOBS_PY_FRAME : MEMOBS_PY_FULL);
    }
    return o;
}

int memobs_py_capture(memobs_frame_t *out, int max) {
    PyThreadState *ts;
    memobs_py_status_t st;
    PyGILState_STATE gs = PyGILState_UNLOCKED;
    int taken = 0, n = 0;
    if (!out || max < 1) return 0;
    memobs_py__init();
    if (!memobs_py__g.codes) {
        pthread_mutex_lock(&memobs_py__g.lock);
        if (!memobs_py__g.codes) {
            memobs_py__g.files = (const char **)MEMOBS_MALLOC(MEMOBS_PY__FILE_SLOTS * sizeof(const char *));
            if (memobs_py__g.files) {
                memset((void *)memobs_py__g.files, 0, MEMOBS_PY__FILE_SLOTS * sizeof(const char *));
                __atomic_store_n(&memobs_py__g.codes,
                                 (memobs_py__code_t *)MEMOBS_MALLOC(MEMOBS_PY_MAX_CODES * sizeof(memobs_py__code_t)),
                                 __ATOMIC_RELEASE);
            }
        }
        pthread_mutex_unlock(&memobs_py__g.lock);
    }
    st = memobs_py__check(&ts);
    if (st == MEMOBS_PY_NO_GIL && MEMOBS__LOAD(&memobs_py__g.take_gil.v)) {
        /* A thread Python never saw gets a thread state from it too. */
        gs = PyGILState_Ensure();
        taken = 1;
        MEMOBS__ADD(&memobs_py__g.gil_taken.v, 1u);
        st = memobs_py__check(&ts);
    }
    if (st == MEMOBS_PY_OK && !memobs_py__g.codes) st = MEMOBS_PY_NO_FRAME; /* no memory for the tables */
    if (st == MEMOBS_PY_OK) {
        int gc;
#if PY_VERSION_HEX >= 0x030C0000
        PyObject *pending = PyErr_GetRaisedException();
#else
        PyObject *pt, *pv, *ptb;
        PyErr_Fetch(&pt, &pv, &ptb);
#endif
        MEMOBS_PY__GC_OFF(gc);
        n = memobs_py__walk(ts, out, max);
        MEMOBS_PY__GC_RESTORE(gc);
        if (PyErr_Occurred()) PyErr_Clear();
#if PY_VERSION_HEX >= 0x030C0000
        PyErr_SetRaisedException(pending);
#else
        PyErr_Restore(pt, pv, ptb);
#endif
        if (n == 0) st = MEMOBS_PY_NO_FRAME;
    }
    if (taken) PyGILState_Release(gs);
    if (st != MEMOBS_PY_OK) {
        memobs_py__set(&out[0], 0, (uint32_t)st, MEMOBS_PY_NONE);
        MEMOBS__ADD(&memobs_py__g.no_stack[st].v, 1u);
        return 1;
    }
    MEMOBS__ADD(&memobs_py__g.captures.v, 1u);
    return n;
}

/* ======================================================================== */
/* Private: text                                                            */
/* ======================================================================== */

/* The path as reports show it: after the last site-packages/ (or
   dist-packages/); else after the project root (a path prefix when it
   starts with '/', else a directory name); else whole. */
static const char *memobs_py__short_path(const char *path, const char *root) {
    static const char *const pk[2] = {"site-packages/", "dist-packages/"};
    const char *best = NULL, *p;
    unsigned i;
    for (i = 0; i < 2; i++)
        for (p = path; (p = strstr(p, pk[i])) != NULL; p++) best = p + strlen(pk[i]);
    if (best && *best) return best;
    if (root[0] == '/') {
        size_t k = strlen(root);
        while (k > 1 && root[k - 1] == '/') k--;
        if (strncmp(path, root, k) == 0 && path[k] == '/' && path[k + 1]) return path + k + 1;
    } else if (root[0]) {
        size_t k = strlen(root);
        for (p = path; (p = strstr(p, root)) != NULL; p++)
            if ((p == path || p[-1] == '/') && p[k] == '/' && p[k + 1]) return p + k + 1;
    }
    return path;
}

/* Line `line` (1-based) of a file, stripped and cut to width columns with
   "..." (UTF-8 aware), into out; 0 when it cannot be read. */
static int memobs_py__source(const char *path, uint32_t line, int width, char *out, size_t len) {
    char buf[4096], text[1024];
    size_t got, tl = 0, i;
    uint32_t at = 1;
    int done = 0;
    FILE *f;
    if (!line || path[0] == '<' || len < 8) return 0;
    f = fopen(path, "rb");
    if (!f) return 0;
    while (!done && (got = fread(buf, 1, sizeof buf, f)) > 0) {
        for (i = 0; i < got; i++) {
            if (at == line) {
                if (buf[i] == '\n' || buf[i] == '\r') { done = 1; break; }
                if (tl + 1 < sizeof text) text[tl++] = buf[i];
            } else if (buf[i] == '\n' && ++at > line) {
                done = 1;
                break;
            }
        }
    }
    fclose(f);
    if (at != line) return 0;
    text[tl] = 0;
    {
        char *s = text, *e = text + tl;
        const char *c;
        size_t o = 0;
        int cols = 0, keep;
        while (*s == ' ' || *s == '\t') s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t')) *--e = 0;
        if (!*s) return 0;
        for (c = s; *c; c++) cols += ((unsigned char)*c & 0xC0) != 0x80;
        keep = cols <= width ? cols : width - 3; /* columns kept before "..." */
        for (c = s; *c && o + 4 < len; c++) {
            if (((unsigned char)*c & 0xC0) != 0x80 && keep-- == 0) break;
            out[o++] = *c;
        }
        if (cols > width) memcpy(out + o, "...", 3), o += 3;
        out[o] = 0;
        return 1;
    }
}

/* Appends printf-style text at *o, keeping buf terminated. */
static void memobs_py__put(char *buf, size_t len, size_t *o, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void memobs_py__put(char *buf, size_t len, size_t *o, const char *fmt, ...) {
    va_list ap;
    int w;
    if (*o + 1 >= len) return;
    va_start(ap, fmt);
    w = vsnprintf(buf + *o, len - *o, fmt, ap);
    va_end(ap);
    if (w > 0) *o += (size_t)w < len - *o ? (size_t)w : len - *o - 1;
}

size_t memobs_py_format(const memobs_frame_t *fr, int n, char *buf, size_t len) {
    size_t o = 0;
    int i, width;
    char root[MEMOBS_PY__STR];
    uint32_t ncodes;
    if (!buf || len == 0) return 0;
    buf[0] = 0;
    if (!fr || n <= 0) return 0;
    memobs_py__init();
    pthread_mutex_lock(&memobs_py__g.lock);
    memcpy(root, memobs_py__g.root, sizeof root);
    pthread_mutex_unlock(&memobs_py__g.lock);
    width = (int)MEMOBS__LOAD(&memobs_py__g.source_width.v);
    ncodes = __atomic_load_n(&memobs_py__g.ncodes.v, __ATOMIC_ACQUIRE);
    for (i = 0; i < n; i++) {
        const char *nl = i ? "\n" : "";
        switch (fr[i].aux) {
        case MEMOBS_PY_FRAME:
            if (fr[i].pc >= 1 && fr[i].pc <= ncodes) {
                const memobs_py__code_t *e = &memobs_py__g.codes[fr[i].pc - 1];
                char src[512];
                memobs_py__put(buf, len, &o, "%s%s:%u in %s", nl, memobs_py__short_path(e->file, root),
                               (unsigned)fr[i].line, e->name);
                if (width > 0 && memobs_py__source(e->file, fr[i].line, width, src, sizeof src))
                    memobs_py__put(buf, len, &o, "\n└─ %s", src);
            } else {
                memobs_py__put(buf, len, &o, "%s<unknown code %lu>:%u", nl, (unsigned long)fr[i].pc,
                               (unsigned)fr[i].line);
            }
            break;
        case MEMOBS_PY_ELIDED:
            memobs_py__put(buf, len, &o, "%s... %u frame%s ...", nl, (unsigned)fr[i].line, fr[i].line == 1 ? "" : "s");
            break;
        case MEMOBS_PY_NONE:
            memobs_py__put(buf, len, &o, "%sno Python stack (%s)", nl,
                           fr[i].line >= 1 && fr[i].line <= 5 ? memobs_py__why[fr[i].line] : "?");
            break;
        default:
            memobs_py__put(buf, len, &o, "%s<code table full>:%u", nl, (unsigned)fr[i].line);
            break;
        }
    }
    return o;
}

size_t memobs_py_stack_text(char *buf, size_t len, int boxed) {
    memobs_frame_t fr[MEMOBS_MAX_STACK];
    char *text;
    size_t o = 0, k;
    const char *p;
    int n;
    if (!buf || len == 0) return 0;
    buf[0] = 0;
    n = memobs_py_capture(fr, MEMOBS_MAX_STACK);
    if (!boxed) return memobs_py_format(fr, n, buf, len);
    text = (char *)MEMOBS_MALLOC(len);
    if (!text) return 0;
    memobs_py_format(fr, n, text, len);
    memobs_py__put(buf, len, &o, "  ┌─ Python Stack Trace ");
    for (k = 0; k < 40; k++) memobs_py__put(buf, len, &o, "─");
    for (p = text; *p;) {
        const char *nl = strchr(p, '\n');
        int w = nl ? (int)(nl - p) : (int)strlen(p);
        memobs_py__put(buf, len, &o, "\n  │    %.*s", w, p);
        p += w + (nl ? 1 : 0);
    }
    memobs_py__put(buf, len, &o, "\n  └");
    for (k = 0; k < 62; k++) memobs_py__put(buf, len, &o, "─");
    MEMOBS_FREE(text);
    return o;
}

/* ======================================================================== */
/* Private: tag provider                                                    */
/* ======================================================================== */

static int memobs_py__provider_capture(memobs_frame_t *frames, int max, void *user) {
    (void)user;
    return memobs_py_capture(frames, max);
}

static size_t memobs_py__provider_format(const memobs_frame_t *frames, int n, char *buf, size_t len, void *user) {
    (void)user;
    return memobs_py_format(frames, n, buf, len);
}

int memobs_py_install(const memobs_py_config_t *config) {
    memobs_tag_provider_t p;
    int rc = memobs_py_configure(config);
    if (rc != MEMOBS_OK) return rc;
    pthread_mutex_lock(&memobs_py__g.lock);
    if (!memobs_py__g.installed) {
        memset(&p, 0, sizeof p);
        p.capture = memobs_py__provider_capture;
        p.format = memobs_py__provider_format;
        p.title = "Python Stack Trace";
        rc = memobs_track_set_tag_provider(&p);
        if (rc == MEMOBS_OK) memobs_py__g.installed = 1;
    }
    pthread_mutex_unlock(&memobs_py__g.lock);
    return rc;
}

int memobs_py_uninstall(void) {
    memobs_py__init();
    pthread_mutex_lock(&memobs_py__g.lock);
    if (memobs_py__g.installed) {
        memobs_track_set_tag_provider(NULL);
        memobs_py__g.installed = 0;
    }
    pthread_mutex_unlock(&memobs_py__g.lock);
    return MEMOBS_OK;
}

#endif /* MEMOBS_DISABLE */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MEMOBS_IMPLEMENTATION */

/*
------------------------------------------------------------------------------
This software is available under the MIT License (SPDX-License-Identifier: MIT).
------------------------------------------------------------------------------
MIT License

Copyright (c) 2026 the memobs authors

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
*/
