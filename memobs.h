/* memobs.h - v0.1.0 - observer counters for LLM inference engines.
   Header-only, no dependencies beyond libc and pthreads. C99/C11, C++11/17, nvcc.

   Do this in exactly one .c, .cpp or .cu file of your program or library:

       #define MEMOBS_IMPLEMENTATION
       #include "memobs.h"

   and plain `#include "memobs.h"` everywhere else. Link with -pthread.
   Then, in the hot paths of your engine:

       MEMOBS_RECORD_H2D(block_bytes, is_prefill);  // after queueing a copy
       memobs_set_phase(MEMOBS_PHASE_DECODE);        // or: per-thread phase ...
       MEMOBS_RECORD_D2H_CUR(block_bytes);           // ... read by the _CUR forms
       MEMOBS_TTFT_START(); MEMOBS_TTFT_STOP(); MEMOBS_TPOT_STEP();
       memobs_request_begin(id); memobs_request_token(id); memobs_request_end(id);
       MEMOBS_COUNTER_ADD("kv_blocks_evicted", 1);   // your own counters
       memobs_print_summary();                       // at exit, on stderr

   or set MEMOBS_SUMMARY=stderr and change no code. Every call is declared
   below with its units and semantics; README.md has the long form.

   WHAT IT RECORDS
     Transfers: bytes and op counts for H2D, D2H and D2D, each split by phase
       (prefill, decode, and "unphased" for records made with no phase set:
       nothing is silently filed as prefill). Recording is a relaxed load, a
       branch and two plain read-add-writes on a per-thread shard: no lock
       prefix, no shared cache line. Shards are summed when a summary is read,
       so totals are exact under any number of threads.
     Timings: TTFT, TPOT and end-to-end latency as histograms (count, mean,
       p50, p90, p99, max, last), through a global nano-vllm style clock or
       per request id (many requests in flight, any thread).
     User counters: named uint64 counters you declare once and add to from
       anywhere; they appear in every summary.
     Identity: job id, rank, local rank, world size, host, pid, carried by
       every export.

   COMPILE-TIME OPTIONS (define before including memobs.h)
     MEMOBS_IMPLEMENTATION    in one file only: emit the implementation.
     MEMOBS_DISABLE           PROJECT-WIDE, tested with #ifdef. Every macro
                              becomes ((void)sizeof(arg)): no code, no
                              evaluation, no warnings. Functions still link (the
                              implementation starts disabled and stays so).
     MEMOBS_MAX_COUNTERS      PROJECT-WIDE. User counter slots, default 32.
                              Changes the layout of memobs_summary_t.
     MEMOBS_TLS_INITIAL_EXEC  every file of a module. Initial-exec TLS model for
                              the per-thread shard pointer. Makes recording from
                              inside a shared library (.so) as cheap as from an
                              executable, at the cost of static TLS space: safe
                              for libraries linked at start-up; a dlopen()ed
                              module (Python extension) needs the loader's spare
                              static TLS (glibc keeps some; usually fine).
                              Default: the compiler's model, which in a .so
                              costs about 1-2 ns more per record (GCC's
                              -mtls-dialect=gnu2 trims some of that).
     MEMOBS_HIDDEN            PROJECT-WIDE for one shared object. Gives every
                              memobs symbol hidden visibility, so a .so (say a
                              Python extension) keeps a private instance even
                              when another module with its own copy is loaded
                              with RTLD_GLOBAL. Without it, one process should
                              hold one implementation that the rest links to.
     MEMOBS_API               the declaration prefix; overrides MEMOBS_HIDDEN.
     MEMOBS_MAX_REQUESTS      implementation only. Per-request table slots
                              (rounded up to a multiple of 16), default 4096.
     MEMOBS_MALLOC(sz) / MEMOBS_FREE(p)
                              implementation only; both or neither. Allocator
                              for memobs' own bookkeeping (default malloc/free).
     MEMOBS_NO_AUTOINIT       implementation only. Do not read the environment
                              from a constructor at load time; it is read at
                              the first call of memobs_init() or the first
                              record (whichever comes first) instead.

   ENVIRONMENT (read once, at load time or by memobs_init())
     MEMOBS=0|1               start disabled / enabled (default 1). Also
                              on/off, true/false, yes/no.
     MEMOBS_SUMMARY=stderr|stdout|PATH
                              write the summary at exit. In PATH, %r is the
                              rank, %p the pid, %% a percent sign.
     MEMOBS_FORMAT=text|json  format of that summary and of
                              memobs_print_summary() (default text).
     MEMOBS_JOB_ID            job id; else TORCHELASTIC_RUN_ID, SLURM_JOB_ID.
     RANK, LOCAL_RANK, WORLD_SIZE
                              identity (torchrun); else SLURM_PROCID/
                              SLURM_LOCALID/SLURM_NTASKS, then OMPI_COMM_WORLD_*,
                              then PMI_RANK/PMI_SIZE. Default rank 0 of 1.
     A malformed value gets one warning through the log hook and the default.

   THREADS, RESET, FORK
     Every function may be called from any thread at any time. Recording
     never blocks. memobs_reset() starts a new window: it zeroes statistics
     (by moving per-shard baselines, so it cannot lose or tear a concurrent
     record) and keeps in-flight requests, clocks, phases, identity and
     counter registrations. A record racing with a reset lands on one side
     of it. After fork() the child keeps the parent's figures; the shards of
     threads that do not exist in the child are recycled.

   LIMITS
     Linux and other POSIX systems with GCC or Clang (nvcc host compilers
     included). The recording macros are host code (not __device__).
     Histograms are log-linear, 64 sub-buckets per power of two from 64 ns to
     ~9.8 h: reported percentiles are within 0.8% of the true sample value
     (values above the range clamp to the last bucket; max is exact).

   LICENSE: MIT.
*/

#ifndef MEMOBS_H
#define MEMOBS_H

#define MEMOBS_VERSION "0.1.0"
#define MEMOBS_VERSION_NUM 100 /* major * 10000 + minor * 100 + patch */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if !defined(__GNUC__) && !defined(__clang__)
#error "memobs.h needs GCC or Clang (or nvcc with one of them as host compiler)"
#endif

#ifndef MEMOBS_MAX_COUNTERS
#define MEMOBS_MAX_COUNTERS 32
#endif

#ifndef MEMOBS_API
#ifdef MEMOBS_HIDDEN
#define MEMOBS_API __attribute__((visibility("hidden")))
#else
#define MEMOBS_API
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================== */
/* Types                                                                    */
/* ======================================================================== */

/* Result codes of setup and export calls. */
enum {
    MEMOBS_OK = 0,
    MEMOBS_ERR_INVALID = -1, /* bad argument (NULL, out of range, bad name) */
    MEMOBS_ERR_IO = -2,      /* a file could not be opened or written */
    MEMOBS_ERR_FULL = -3,    /* a fixed-capacity table is full */
    MEMOBS_ERR_NOMEM = -4    /* MEMOBS_MALLOC returned NULL */
};

typedef enum {
    MEMOBS_PHASE_NONE = 0, /* "unphased": no phase was set */
    MEMOBS_PHASE_PREFILL = 1,
    MEMOBS_PHASE_DECODE = 2
} memobs_phase_t;

typedef enum { MEMOBS_DIR_H2D = 0, MEMOBS_DIR_D2H = 1, MEMOBS_DIR_D2D = 2 } memobs_dir_t;

typedef enum { MEMOBS_FORMAT_TEXT = 0, MEMOBS_FORMAT_JSON = 1 } memobs_format_t;

enum { MEMOBS_LOG_INFO = 0, MEMOBS_LOG_WARN = 1, MEMOBS_LOG_ERROR = 2 };

typedef struct { uint64_t bytes, count; } memobs_xfer_t;
typedef struct { memobs_xfer_t h2d, d2h, d2d; } memobs_dirs_t;

/* All times in nanoseconds. Percentiles within 0.8% (see LIMITS). */
typedef struct {
    uint64_t count, last_ns, mean_ns, p50_ns, p90_ns, p99_ns, max_ns;
} memobs_latency_t;

typedef struct {
    char job_id[128]; /* "" when unknown */
    char host[72];
    int64_t pid;
    int32_t rank, local_rank, world_size;
} memobs_identity_t;

typedef struct {
    const char *name; /* registered name, valid for the life of the process */
    const char *help; /* "" when none was given */
    uint64_t value;
} memobs_counter_value_t;

typedef struct {
    int enabled;
    uint64_t window_ns; /* time since start-up or the last memobs_reset() */
    /* Transfers. total = prefill + decode + unphased. */
    memobs_dirs_t total, prefill, decode, unphased;
    /* Timings, from both the global clock and per-request calls. */
    memobs_latency_t ttft, tpot, e2e;
    /* Per-request table. */
    uint64_t requests_begun, requests_completed, requests_aborted, requests_in_flight;
    uint64_t requests_dropped;   /* begin with the table full: not timed */
    uint64_t requests_unknown;   /* token/end for an id that is not in flight */
    uint64_t requests_duplicate; /* begin for an id already in flight */
    /* Misuse, counted rather than fatal. */
    uint64_t ttft_unmatched; /* TTFT_STOP without a TTFT_START */
    uint64_t tpot_unarmed;   /* TPOT_STEP before any TTFT_STOP */
    uint64_t bad_records;    /* record with an invalid direction/phase/counter */
    uint64_t untracked_threads; /* records that fell back to the shared shard */
    /* User counters, in registration order. */
    uint32_t ncounters;
    memobs_counter_value_t counters[MEMOBS_MAX_COUNTERS];
    memobs_identity_t identity;
} memobs_summary_t;

typedef int32_t memobs_counter_t; /* counter handle; negative = invalid */

typedef void (*memobs_log_fn)(int level, const char *msg, void *user);

/* ======================================================================== */
/* Control                                                                  */
/* ======================================================================== */

/* Reads the environment once (also done at load time). Idempotent. */
MEMOBS_API int memobs_init(void);
MEMOBS_API void memobs_enable(int on);
MEMOBS_API int memobs_is_enabled(void);
/* Starts a new statistics window (see THREADS, RESET, FORK). */
MEMOBS_API void memobs_reset(void);
/* Replaces the diagnostics sink (default: "memobs: warning: ..." on stderr).
   fn == NULL restores the default. */
MEMOBS_API void memobs_set_log(memobs_log_fn fn, void *user);
const char *memobs_strerror(int err);
/* CLOCK_MONOTONIC in nanoseconds: the clock all memobs timings use. */
MEMOBS_API uint64_t memobs_now_ns(void);

/* ======================================================================== */
/* Transfers and phase                                                      */
/* ======================================================================== */

/* Current phase of the calling thread, read by the _CUR record forms.
   Returns MEMOBS_OK, or MEMOBS_ERR_INVALID (phase unchanged) for a value
   that is not a memobs_phase_t. */
MEMOBS_API int memobs_set_phase(memobs_phase_t phase);
MEMOBS_API memobs_phase_t memobs_get_phase(void);

/* Function form of the record macros; dir and phase are checked. */
MEMOBS_API void memobs_record(memobs_dir_t dir, memobs_phase_t phase, uint64_t bytes);

/* ======================================================================== */
/* Timing                                                                   */
/* ======================================================================== */

/* Global clock, nano-vllm compatible: every call yields a sample, not a
   last value. TTFT_STOP consumes the start (a second stop is counted as
   unmatched) and arms the TPOT clock; TPOT_STEP samples the time since the
   previous token; TPOT_STOP disarms it (engine idle). */
MEMOBS_API void memobs_ttft_start(void);
MEMOBS_API void memobs_ttft_stop(void);
MEMOBS_API void memobs_tpot_step(void);
MEMOBS_API void memobs_tpot_stop(void);

/* Per request. The first token gives a TTFT sample, later tokens TPOT
   samples (time since the previous token of that request), end an E2E
   sample (requests with no token are counted as aborted). A begin for an id
   already in flight keeps the first begin time. Both clocks feed the same
   TTFT/TPOT histograms: time a stream of requests with one or the other. */
MEMOBS_API void memobs_request_begin(uint64_t id);
MEMOBS_API void memobs_request_token(uint64_t id);
MEMOBS_API void memobs_request_end(uint64_t id);

/* ======================================================================== */
/* User counters                                                            */
/* ======================================================================== */

/* Registers a counter (or finds one of the same name: any file may register
   the same name and gets the same handle). Names match
   [a-zA-Z_][a-zA-Z0-9_]{0,62}. Returns a handle >= 0, or MEMOBS_ERR_INVALID /
   MEMOBS_ERR_FULL (with a warning). */
MEMOBS_API memobs_counter_t memobs_counter_register(const char *name, const char *help);
/* memobs_counter_add(handle, n) is an inline function declared below. */

/* ======================================================================== */
/* Identity                                                                 */
/* ======================================================================== */

/* job_id may be NULL (keeps the current one). Needs world_size >= 1 and
   0 <= rank, local_rank < world_size; else MEMOBS_ERR_INVALID, unchanged. */
MEMOBS_API int memobs_set_identity(const char *job_id, int rank, int local_rank, int world_size);
MEMOBS_API void memobs_get_identity(memobs_identity_t *out);

/* ======================================================================== */
/* Summaries                                                                */
/* ======================================================================== */

MEMOBS_API void memobs_get_summary(memobs_summary_t *out);
/* Writes the summary in the MEMOBS_FORMAT format (default text) to stderr. */
MEMOBS_API void memobs_print_summary(void);
MEMOBS_API int memobs_write_summary(FILE *f, memobs_format_t fmt);
/* Opens path ("stderr", "stdout" or a file; %r/%p expanded), writes, closes. */
MEMOBS_API int memobs_write_summary_file(const char *path, memobs_format_t fmt);
/* "262.13 GB": decimal units (B, KB, MB, GB, TB) as nano-vllm prints them. */
const char *memobs_fmt_bytes(uint64_t bytes, char *buf, size_t len);
/* "850 ns", "12.30 us", "4.56 ms", "1.23 s". */
const char *memobs_fmt_ns(uint64_t ns, char *buf, size_t len);

/* ======================================================================== */
/* Recording macros                                                         */
/* ======================================================================== */

#ifdef MEMOBS_DISABLE

#define MEMOBS_RECORD_H2D(bytes, prefill) ((void)sizeof(bytes), (void)sizeof(prefill))
#define MEMOBS_RECORD_D2H(bytes, prefill) ((void)sizeof(bytes), (void)sizeof(prefill))
#define MEMOBS_RECORD_D2D(bytes, prefill) ((void)sizeof(bytes), (void)sizeof(prefill))
#define MEMOBS_RECORD_H2D_CUR(bytes) ((void)sizeof(bytes))
#define MEMOBS_RECORD_D2H_CUR(bytes) ((void)sizeof(bytes))
#define MEMOBS_RECORD_D2D_CUR(bytes) ((void)sizeof(bytes))
#define MEMOBS_RECORD_XFER(dir, bytes, phase) \
    ((void)sizeof(dir), (void)sizeof(bytes), (void)sizeof(phase))
#define MEMOBS_SET_PHASE(phase) ((void)sizeof(phase))
#define MEMOBS_TTFT_START() ((void)0)
#define MEMOBS_TTFT_STOP() ((void)0)
#define MEMOBS_TPOT_STEP() ((void)0)
#define MEMOBS_TPOT_STOP() ((void)0)
#define MEMOBS_REQUEST_BEGIN(id) ((void)sizeof(id))
#define MEMOBS_REQUEST_TOKEN(id) ((void)sizeof(id))
#define MEMOBS_REQUEST_END(id) ((void)sizeof(id))
#define MEMOBS_COUNTER_ADD(name, n) ((void)sizeof(name), (void)sizeof(n))

#else /* !MEMOBS_DISABLE */

/* Casts in user-visible expansions: C++ users may build with -Wold-style-cast. */
#ifdef __cplusplus
#define MEMOBS__U64(x) static_cast<uint64_t>(x)
#define MEMOBS__UNS(x) static_cast<unsigned>(x)
#else
#define MEMOBS__U64(x) ((uint64_t)(x))
#define MEMOBS__UNS(x) ((unsigned)(x))
#endif

/* prefill: nonzero = prefill phase, zero = decode phase. */
#define MEMOBS_RECORD_H2D(bytes, prefill) \
    memobs__xfer(MEMOBS_DIR_H2D, (prefill) ? 1u : 2u, MEMOBS__U64(bytes))
#define MEMOBS_RECORD_D2H(bytes, prefill) \
    memobs__xfer(MEMOBS_DIR_D2H, (prefill) ? 1u : 2u, MEMOBS__U64(bytes))
#define MEMOBS_RECORD_D2D(bytes, prefill) \
    memobs__xfer(MEMOBS_DIR_D2D, (prefill) ? 1u : 2u, MEMOBS__U64(bytes))
/* Phase from memobs_set_phase() on this thread ("unphased" if never set). */
#define MEMOBS_RECORD_H2D_CUR(bytes) memobs__xfer_cur(MEMOBS_DIR_H2D, MEMOBS__U64(bytes))
#define MEMOBS_RECORD_D2H_CUR(bytes) memobs__xfer_cur(MEMOBS_DIR_D2H, MEMOBS__U64(bytes))
#define MEMOBS_RECORD_D2D_CUR(bytes) memobs__xfer_cur(MEMOBS_DIR_D2D, MEMOBS__U64(bytes))
#define MEMOBS_RECORD_XFER(dir, bytes, phase) \
    memobs__xfer(MEMOBS__UNS(dir), MEMOBS__UNS(phase), MEMOBS__U64(bytes))
#define MEMOBS_SET_PHASE(phase) ((void)memobs_set_phase(phase))
#define MEMOBS_TTFT_START() memobs_ttft_start()
#define MEMOBS_TTFT_STOP() memobs_ttft_stop()
#define MEMOBS_TPOT_STEP() memobs_tpot_step()
#define MEMOBS_TPOT_STOP() memobs_tpot_stop()
#define MEMOBS_REQUEST_BEGIN(id) memobs_request_begin(MEMOBS__U64(id))
#define MEMOBS_REQUEST_TOKEN(id) memobs_request_token(MEMOBS__U64(id))
#define MEMOBS_REQUEST_END(id) memobs_request_end(MEMOBS__U64(id))
/* Adds n to the counter called name (a string literal); the handle is looked
   up once per call site. */
#define MEMOBS_COUNTER_ADD(name, n)                                              \
    do {                                                                         \
        static int32_t memobs__site_id; /* 0: not looked up, >0: id+1, <0 bad */ \
        int32_t memobs__id = MEMOBS__LOAD(&memobs__site_id);                     \
        if (memobs__id == 0) {                                                   \
            memobs__id = memobs__counter_site(name);                             \
            MEMOBS__STORE(&memobs__site_id, memobs__id);                         \
        }                                                                        \
        if (memobs__id > 0) memobs_counter_add(memobs__id - 1, MEMOBS__U64(n));   \
    } while (0)

#endif /* MEMOBS_DISABLE */

/* ======================================================================== */
/* Private: the inline hot path (names with two underscores are not API)    */
/* ======================================================================== */

#define MEMOBS__LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define MEMOBS__STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define MEMOBS__ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define MEMOBS__LIKELY(x) __builtin_expect(!!(x), 1)
#define MEMOBS__UNLIKELY(x) __builtin_expect(!!(x), 0)

#ifdef MEMOBS_TLS_INITIAL_EXEC
#define MEMOBS__TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#define MEMOBS__TLS_MODEL
#endif

/* One-field structs: a plain assignment to a counter does not compile. */
typedef struct { uint64_t v; } memobs__u64_t;
typedef struct { uint32_t v; } memobs__u32_t;
/* The on/off flag read by every record: a cache line of its own, so a write
   to a neighbouring global cannot slow every record down. */
typedef struct { uint32_t v; char pad[60]; } memobs__flag_t;

#define MEMOBS__NPHASE 3
#define MEMOBS__NDIR 3

/* Per-thread shard. The owner thread is the only writer of xfer[] and
   user[] (relaxed load + relaxed store: a plain add, no lock prefix);
   readers sum all shards with relaxed loads. Cache-line aligned. */
typedef struct memobs__shard_s {
    memobs__u64_t xfer[MEMOBS__NPHASE][MEMOBS__NDIR][2]; /* [phase][dir][bytes, count] */
    memobs__u64_t user[MEMOBS_MAX_COUNTERS];
    /* Bookkeeping below is touched only under the registry lock. */
    uint64_t base_xfer[MEMOBS__NPHASE][MEMOBS__NDIR][2] __attribute__((aligned(64)));
    uint64_t base_user[MEMOBS_MAX_COUNTERS];
    struct memobs__shard_s *next; /* registry list */
    void *raw;                    /* block from MEMOBS_MALLOC */
    int in_use;                   /* owned by a live thread */
    int shared;                   /* the fallback shard: written with atomic adds */
} memobs__shard_t;

typedef struct {
    memobs__shard_t *shard; /* NULL until the thread's first record */
    uint32_t phase;         /* memobs_phase_t */
} memobs__tls_t;

extern MEMOBS_API memobs__flag_t memobs__on;
extern MEMOBS_API __thread memobs__tls_t memobs__tls MEMOBS__TLS_MODEL;

MEMOBS_API void memobs__xfer_slow(unsigned dir, unsigned phase, uint64_t bytes);
MEMOBS_API void memobs__counter_slow(memobs_counter_t c, uint64_t n);
MEMOBS_API int32_t memobs__counter_site(const char *name);

static inline void memobs__xfer(unsigned dir, unsigned phase, uint64_t bytes) {
    if (MEMOBS__LIKELY(MEMOBS__LOAD(&memobs__on.v) != 0)) {
        memobs__shard_t *s = memobs__tls.shard;
        if (MEMOBS__LIKELY(s != NULL && dir < MEMOBS__NDIR && phase < MEMOBS__NPHASE)) {
            memobs__u64_t *c = s->xfer[phase][dir];
            MEMOBS__STORE(&c[0].v, MEMOBS__LOAD(&c[0].v) + bytes);
            MEMOBS__STORE(&c[1].v, MEMOBS__LOAD(&c[1].v) + 1u);
        } else {
            memobs__xfer_slow(dir, phase, bytes);
        }
    }
}

static inline void memobs__xfer_cur(unsigned dir, uint64_t bytes) {
    memobs__xfer(dir, memobs__tls.phase, bytes);
}

/* Adds n to a registered counter; exact under threads like the transfers. */
static inline void memobs_counter_add(memobs_counter_t c, uint64_t n) {
    if (MEMOBS__LIKELY(MEMOBS__LOAD(&memobs__on.v) != 0)) {
        memobs__shard_t *s = memobs__tls.shard;
        if (MEMOBS__LIKELY(s != NULL && c >= 0 && c < MEMOBS_MAX_COUNTERS)) {
            MEMOBS__STORE(&s->user[c].v, MEMOBS__LOAD(&s->user[c].v) + n);
        } else {
            memobs__counter_slow(c, n);
        }
    }
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MEMOBS_H */

/* ======================================================================== */
/* ======================================================================== */
/*                              IMPLEMENTATION                              */
/* ======================================================================== */
/* ======================================================================== */

#if defined(MEMOBS_IMPLEMENTATION) && !defined(MEMOBS__IMPLEMENTED)
#define MEMOBS__IMPLEMENTED

#if defined(MEMOBS_MALLOC) != defined(MEMOBS_FREE)
#error "define both MEMOBS_MALLOC and MEMOBS_FREE, or neither"
#endif
#ifndef MEMOBS_MALLOC
#include <stdlib.h>
#define MEMOBS_MALLOC(sz) malloc(sz)
#define MEMOBS_FREE(p) free(p)
#endif
#ifndef MEMOBS_MAX_REQUESTS
#define MEMOBS_MAX_REQUESTS 4096
#endif

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/utsname.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================== */
/* Private: state                                                           */
/* ======================================================================== */

#define MEMOBS__XCHG(p, v) __atomic_exchange_n((p), (v), __ATOMIC_RELAXED)
#define MEMOBS__FETCH_OR(p, v) __atomic_fetch_or((p), (v), __ATOMIC_RELAXED)
#define MEMOBS__CAS(p, expected, desired) \
    __atomic_compare_exchange_n((p), (expected), (desired), 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)

/* Histogram: values < 64 ns exact; above, 64 sub-buckets per power of two
   up to 2^45 ns. Bucket width / lower bound <= 1/64, so the bucket midpoint
   is within 0.79% of any value in the bucket. */
#define MEMOBS__HIST_SUB_BITS 6
#define MEMOBS__HIST_SUB (1u << MEMOBS__HIST_SUB_BITS)
#define MEMOBS__HIST_MAX_EXP 45
#define MEMOBS__HIST_NB (MEMOBS__HIST_SUB * (MEMOBS__HIST_MAX_EXP - MEMOBS__HIST_SUB_BITS + 2))

typedef struct {
    memobs__u64_t count, sum, max, last;
    memobs__u64_t b[MEMOBS__HIST_NB];
    uint64_t base_count, base_sum, base_b[MEMOBS__HIST_NB]; /* under state.lock */
} memobs__hist_t;

/* Counted events that are not transfers; each has a baseline for reset. */
enum {
    MEMOBS__ST_REQ_BEGUN,
    MEMOBS__ST_REQ_COMPLETED,
    MEMOBS__ST_REQ_ABORTED,
    MEMOBS__ST_REQ_DROPPED,
    MEMOBS__ST_REQ_UNKNOWN,
    MEMOBS__ST_REQ_DUPLICATE,
    MEMOBS__ST_TTFT_UNMATCHED,
    MEMOBS__ST_TPOT_UNARMED,
    MEMOBS__ST_BAD_RECORD,
    MEMOBS__ST_UNTRACKED,
    MEMOBS__ST_COUNT
};

/* Warn-once bits. */
enum {
    MEMOBS__W_BAD_RECORD = 1u << 0,
    MEMOBS__W_REQ_FULL = 1u << 1,
    MEMOBS__W_REQ_UNKNOWN = 1u << 2,
    MEMOBS__W_TTFT_UNMATCHED = 1u << 3,
    MEMOBS__W_TPOT_UNARMED = 1u << 4,
    MEMOBS__W_UNTRACKED = 1u << 5,
    MEMOBS__W_BAD_COUNTER = 1u << 6,
    MEMOBS__W_NULL_ARG = 1u << 7,
    MEMOBS__W_REQ_DUPLICATE = 1u << 8
};

#define MEMOBS__REQ_STRIPES 16
#define MEMOBS__REQ_PER_STRIPE ((MEMOBS_MAX_REQUESTS + MEMOBS__REQ_STRIPES - 1) / MEMOBS__REQ_STRIPES)

typedef struct {
    uint64_t id, begin_ns, last_ns;
    uint32_t tokens, used;
} memobs__req_t;

typedef struct {
    pthread_mutex_t lock;
    uint32_t n;
    memobs__req_t slot[MEMOBS__REQ_PER_STRIPE];
} memobs__req_stripe_t;

typedef struct {
    char name[64];
    char help_buf[128];
    /* "" until help is known, then help_buf. help_buf is written once, before
       the pointer is published, so a summary can read the text without the
       lock while a late registration supplies it. */
    const char *help;
} memobs__counter_def_t;

/* All mutable state but the hot enabled flag and the TLS slot. */
static pthread_once_t memobs__once = PTHREAD_ONCE_INIT; /* not zero on every libc */
static struct {
    pthread_mutex_t lock; /* shards list, baselines, identity, counters, config */
    pthread_key_t key;    /* thread-exit hook that recycles a shard */
    int key_ok;
    memobs__shard_t *shards;
    memobs__shard_t fallback; /* used when a shard cannot be allocated */
    memobs__u64_t st[MEMOBS__ST_COUNT];
    uint64_t st_base[MEMOBS__ST_COUNT];
    memobs__hist_t ttft, tpot, e2e;
    memobs__u64_t ttft_start_ns, tpot_last_ns; /* global clock; 0 = not set */
    memobs__u64_t window_start_ns;
    memobs__req_stripe_t req[MEMOBS__REQ_STRIPES];
    memobs__counter_def_t counters[MEMOBS_MAX_COUNTERS];
    memobs__u32_t ncounters;
    memobs_identity_t identity;
    memobs_format_t format;
    char summary_path[512]; /* MEMOBS_SUMMARY, "" = none */
    memobs_log_fn log_fn;
    void *log_user;
    memobs__u32_t warned;
} memobs__g;

#ifdef MEMOBS_DISABLE
memobs__flag_t memobs__on __attribute__((aligned(64))) = {0, {0}};
#else
memobs__flag_t memobs__on __attribute__((aligned(64))) = {1, {0}};
#endif
__thread memobs__tls_t memobs__tls MEMOBS__TLS_MODEL;

/* ======================================================================== */
/* Private: diagnostics                                                     */
/* ======================================================================== */

static void memobs__vlog(int level, const char *fmt, va_list ap) {
    char msg[512];
    memobs_log_fn fn;
    void *user;
    vsnprintf(msg, sizeof msg, fmt, ap);
    fn = __atomic_load_n(&memobs__g.log_fn, __ATOMIC_ACQUIRE);
    user = __atomic_load_n(&memobs__g.log_user, __ATOMIC_RELAXED);
    if (fn) {
        fn(level, msg, user);
    } else {
        fprintf(stderr, "memobs: %s: %s\n",
                level >= MEMOBS_LOG_ERROR ? "error" : level == MEMOBS_LOG_WARN ? "warning" : "info", msg);
    }
}

static void memobs__log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void memobs__log(int level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    memobs__vlog(level, fmt, ap);
    va_end(ap);
}

/* Logs the first occurrence of a kind of bad event; later ones are only
   counted (the summary shows the counts). */
static void memobs__warn_once(uint32_t bit, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void memobs__warn_once(uint32_t bit, const char *fmt, ...) {
    va_list ap;
    if (MEMOBS__FETCH_OR(&memobs__g.warned.v, bit) & bit) return;
    va_start(ap, fmt);
    memobs__vlog(MEMOBS_LOG_WARN, fmt, ap);
    va_end(ap);
}

void memobs_set_log(memobs_log_fn fn, void *user) {
    __atomic_store_n(&memobs__g.log_user, user, __ATOMIC_RELAXED);
    __atomic_store_n(&memobs__g.log_fn, fn, __ATOMIC_RELEASE);
}

const char *memobs_strerror(int err) {
    switch (err) {
    case MEMOBS_OK: return "ok";
    case MEMOBS_ERR_INVALID: return "invalid argument";
    case MEMOBS_ERR_IO: return "i/o error";
    case MEMOBS_ERR_FULL: return "table full";
    case MEMOBS_ERR_NOMEM: return "out of memory";
    default: return "unknown error";
    }
}

/* ======================================================================== */
/* Private: environment and start-up                                        */
/* ======================================================================== */

#if defined(__linux__) && defined(__LP64__)
/* Strict -std=c99/c11 hides clock_gettime() unless the includer defined a
   POSIX feature macro before its first libc header; the libc symbol is there
   regardless, so reach it under a private name (LP64 Linux: time_t is long,
   CLOCK_MONOTONIC is 1). */
struct memobs__timespec { long tv_sec, tv_nsec; };
extern int memobs__clock_gettime(int clk, struct memobs__timespec *ts) __asm__("clock_gettime");
uint64_t memobs_now_ns(void) {
    struct memobs__timespec ts;
    memobs__clock_gettime(1, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#else
uint64_t memobs_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

static int memobs__streq_nocase(const char *a, const char *b) {
    while (*a && *b && tolower((unsigned char)*a) == tolower((unsigned char)*b)) { a++; b++; }
    return *a == 0 && *b == 0;
}

/* 1/0 for a boolean word, -1 for anything else. */
static int memobs__parse_bool(const char *s) {
    static const char *const yes[] = {"1", "on", "true", "yes"};
    static const char *const no[] = {"0", "off", "false", "no"};
    unsigned i;
    for (i = 0; i < 4; i++) {
        if (memobs__streq_nocase(s, yes[i])) return 1;
        if (memobs__streq_nocase(s, no[i])) return 0;
    }
    return -1;
}

/* Whole-string non-negative decimal int. */
static int memobs__parse_int(const char *s, int *out) {
    char *end;
    long v;
    if (!s || !*s || !isdigit((unsigned char)*s)) return 0;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end != 0 || v > 0x7fffffffL) return 0;
    *out = (int)v;
    return 1;
}

/* Reads the first set variable of a launcher family; 1 on success. */
static int memobs__env_int(const char *name, int *out, int *found) {
    const char *s = getenv(name);
    if (!s) return 0;
    *found = 1;
    if (memobs__parse_int(s, out)) return 1;
    memobs__log(MEMOBS_LOG_WARN, "%s='%s' is not a non-negative integer; ignored", name, s);
    return 0;
}

static void memobs__identity_from_env(void) {
    static const char *const fam[4][3] = {
        {"RANK", "LOCAL_RANK", "WORLD_SIZE"},
        {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"},
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
        {"PMI_RANK", "PMI_LOCAL_RANK", "PMI_SIZE"}};
    static const char *const jobs[3] = {"MEMOBS_JOB_ID", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID"};
    memobs_identity_t *id = &memobs__g.identity;
    struct utsname un;
    unsigned f, i;
    id->rank = 0;
    id->local_rank = 0;
    id->world_size = 1;
    id->pid = (int64_t)getpid();
    snprintf(id->host, sizeof id->host, "%s", uname(&un) == 0 ? un.nodename : "unknown");
    for (i = 0; i < 3; i++) {
        const char *s = getenv(jobs[i]);
        if (s && *s) {
            snprintf(id->job_id, sizeof id->job_id, "%s", s);
            break;
        }
    }
    for (f = 0; f < 4; f++) {
        int found = 0, rank = 0, local = 0, world = 1;
        int ok_rank = memobs__env_int(fam[f][0], &rank, &found);
        int ok_local = memobs__env_int(fam[f][1], &local, &found);
        int ok_world = memobs__env_int(fam[f][2], &world, &found);
        if (!found) continue;
        if (!ok_world) world = (ok_rank && rank >= local ? rank : local) + 1;
        if (world < 1 || (ok_rank && rank >= world) || (ok_local && local >= world)) {
            memobs__log(MEMOBS_LOG_WARN, "%s/%s/%s give rank %d, local rank %d of world size %d: inconsistent; "
                        "using rank 0 of 1", fam[f][0], fam[f][1], fam[f][2], rank, local, world);
            break;
        }
        id->rank = ok_rank ? rank : 0;
        id->local_rank = ok_local ? local : 0;
        id->world_size = world;
        break;
    }
}

static void memobs__shard_release(void *p);
static void memobs__at_exit(void);
static void memobs__atfork_prepare(void);
static void memobs__atfork_parent(void);
static void memobs__atfork_child(void);

static void memobs__init_once(void) {
    const char *s;
    unsigned i;
    pthread_mutex_init(&memobs__g.lock, NULL);
    for (i = 0; i < MEMOBS__REQ_STRIPES; i++) pthread_mutex_init(&memobs__g.req[i].lock, NULL);
    memobs__g.key_ok = pthread_key_create(&memobs__g.key, memobs__shard_release) == 0;
    memobs__g.fallback.shared = 1;
    memobs__g.fallback.in_use = 1;
    memobs__g.shards = &memobs__g.fallback;
    MEMOBS__STORE(&memobs__g.window_start_ns.v, memobs_now_ns());
    pthread_atfork(memobs__atfork_prepare, memobs__atfork_parent, memobs__atfork_child);
    memobs__identity_from_env();
#ifdef MEMOBS_DISABLE
    (void)s;
    (void)memobs__parse_bool;
    (void)memobs__at_exit;
    return; /* compiled out: stay off, read nothing */
#else
    if ((s = getenv("MEMOBS")) != NULL) {
        int b = memobs__parse_bool(s);
        if (b < 0) memobs__log(MEMOBS_LOG_WARN, "MEMOBS='%s' is not 0/1/on/off/true/false/yes/no; staying enabled", s);
        else MEMOBS__STORE(&memobs__on.v, (uint32_t)b);
    }
    if ((s = getenv("MEMOBS_FORMAT")) != NULL) {
        if (memobs__streq_nocase(s, "json")) memobs__g.format = MEMOBS_FORMAT_JSON;
        else if (memobs__streq_nocase(s, "text")) memobs__g.format = MEMOBS_FORMAT_TEXT;
        else memobs__log(MEMOBS_LOG_WARN, "MEMOBS_FORMAT='%s' is not text or json; using text", s);
    }
    if ((s = getenv("MEMOBS_SUMMARY")) != NULL) {
        if (!*s) {
            memobs__log(MEMOBS_LOG_WARN, "MEMOBS_SUMMARY is empty; no summary at exit");
        } else if (strlen(s) >= sizeof memobs__g.summary_path) {
            memobs__log(MEMOBS_LOG_WARN, "MEMOBS_SUMMARY is longer than %u bytes; no summary at exit",
                        (unsigned)sizeof memobs__g.summary_path - 1);
        } else {
            strcpy(memobs__g.summary_path, s);
            atexit(memobs__at_exit);
        }
    }
#endif
}

int memobs_init(void) {
    pthread_once(&memobs__once, memobs__init_once);
    return MEMOBS_OK;
}

#if !defined(MEMOBS_NO_AUTOINIT) && !defined(MEMOBS_DISABLE)
__attribute__((constructor)) static void memobs__ctor(void) { memobs_init(); }
#endif

void memobs_enable(int on) {
    memobs_init();
#ifdef MEMOBS_DISABLE
    (void)on;
#else
    MEMOBS__STORE(&memobs__on.v, on ? 1u : 0u);
#endif
}

int memobs_is_enabled(void) { return MEMOBS__LOAD(&memobs__on.v) != 0; }

/* memobs_write_summary_file() reports its own failures. */
static void memobs__at_exit(void) { (void)memobs_write_summary_file(memobs__g.summary_path, memobs__g.format); }

/* ======================================================================== */
/* Private: shards                                                          */
/* ======================================================================== */

/* Gives the calling thread a shard (a recycled one if any), or NULL. */
static memobs__shard_t *memobs__shard_acquire(void) {
    memobs__shard_t *s;
    memobs_init();
    pthread_mutex_lock(&memobs__g.lock);
    for (s = memobs__g.shards; s; s = s->next)
        if (!s->in_use) break;
    if (!s) {
        void *raw = MEMOBS_MALLOC(sizeof(memobs__shard_t) + 64);
        if (raw) {
            s = (memobs__shard_t *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
            memset(s, 0, sizeof *s);
            s->raw = raw;
            s->next = memobs__g.shards;
            memobs__g.shards = s;
        }
    }
    if (s) s->in_use = 1;
    pthread_mutex_unlock(&memobs__g.lock);
    if (s && memobs__g.key_ok) pthread_setspecific(memobs__g.key, s);
    memobs__tls.shard = s;
    return s;
}

/* Thread exit: the shard keeps its figures and goes to the next new thread. */
static void memobs__shard_release(void *p) {
    memobs__shard_t *s = (memobs__shard_t *)p;
    memobs__tls.shard = NULL;
    pthread_mutex_lock(&memobs__g.lock);
    s->in_use = 0;
    pthread_mutex_unlock(&memobs__g.lock);
}

/* fork(): hold every lock across it so the child never inherits one held
   by a thread that does not exist there. */
static void memobs__atfork_prepare(void) {
    unsigned i;
    pthread_mutex_lock(&memobs__g.lock);
    for (i = 0; i < MEMOBS__REQ_STRIPES; i++) pthread_mutex_lock(&memobs__g.req[i].lock);
}
static void memobs__atfork_parent(void) {
    unsigned i;
    for (i = 0; i < MEMOBS__REQ_STRIPES; i++) pthread_mutex_unlock(&memobs__g.req[i].lock);
    pthread_mutex_unlock(&memobs__g.lock);
}
static void memobs__atfork_child(void) {
    memobs__shard_t *s;
    for (s = memobs__g.shards; s; s = s->next)
        if (!s->shared && s != memobs__tls.shard) s->in_use = 0;
    memobs__g.identity.pid = (int64_t)getpid();
    memobs__atfork_parent();
}

void memobs__xfer_slow(unsigned dir, unsigned phase, uint64_t bytes) {
    memobs__shard_t *s;
    if (dir >= MEMOBS__NDIR || phase >= MEMOBS__NPHASE) {
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_BAD_RECORD].v, 1u);
        memobs__warn_once(MEMOBS__W_BAD_RECORD, "record with direction %u / phase %u ignored (valid: 0..2)", dir, phase);
        return;
    }
    s = memobs__tls.shard ? memobs__tls.shard : memobs__shard_acquire();
    if (!MEMOBS__LOAD(&memobs__on.v)) return; /* start-up just read MEMOBS=0 */
    if (s) {
        memobs__xfer(dir, phase, bytes);
        return;
    }
    MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_UNTRACKED].v, 1u);
    memobs__warn_once(MEMOBS__W_UNTRACKED, "could not allocate a per-thread shard; this thread records through a "
                      "shared (slower) shard");
    MEMOBS__ADD(&memobs__g.fallback.xfer[phase][dir][0].v, bytes);
    MEMOBS__ADD(&memobs__g.fallback.xfer[phase][dir][1].v, 1u);
}

void memobs__counter_slow(memobs_counter_t c, uint64_t n) {
    memobs__shard_t *s;
    if (c < 0 || c >= (memobs_counter_t)MEMOBS__LOAD(&memobs__g.ncounters.v)) {
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_BAD_RECORD].v, 1u);
        memobs__warn_once(MEMOBS__W_BAD_COUNTER, "add to counter handle %d, which is not registered; ignored", (int)c);
        return;
    }
    s = memobs__tls.shard ? memobs__tls.shard : memobs__shard_acquire();
    if (!MEMOBS__LOAD(&memobs__on.v)) return;
    if (s) {
        memobs_counter_add(c, n);
        return;
    }
    MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_UNTRACKED].v, 1u);
    MEMOBS__ADD(&memobs__g.fallback.user[c].v, n);
}

void memobs_record(memobs_dir_t dir, memobs_phase_t phase, uint64_t bytes) {
    memobs__xfer((unsigned)dir, (unsigned)phase, bytes);
}

int memobs_set_phase(memobs_phase_t phase) {
    if ((unsigned)phase >= MEMOBS__NPHASE) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_set_phase(%d): not a memobs_phase_t; phase unchanged", (int)phase);
        return MEMOBS_ERR_INVALID;
    }
    memobs__tls.phase = (uint32_t)phase;
    return MEMOBS_OK;
}

memobs_phase_t memobs_get_phase(void) { return (memobs_phase_t)memobs__tls.phase; }

/* ======================================================================== */
/* Private: histograms and timing                                           */
/* ======================================================================== */

static unsigned memobs__hist_index(uint64_t v) {
    unsigned e;
    if (v < MEMOBS__HIST_SUB) return (unsigned)v;
    e = 63u - (unsigned)__builtin_clzll(v);
    if (e > MEMOBS__HIST_MAX_EXP) return MEMOBS__HIST_NB - 1;
    return MEMOBS__HIST_SUB * (e - MEMOBS__HIST_SUB_BITS + 1) +
           (unsigned)((v >> (e - MEMOBS__HIST_SUB_BITS)) & (MEMOBS__HIST_SUB - 1));
}

/* Midpoint of bucket i (its exact value below 64 ns). */
static uint64_t memobs__hist_value(unsigned i) {
    unsigned e, sub;
    uint64_t lo, width;
    if (i < MEMOBS__HIST_SUB) return i;
    e = i / MEMOBS__HIST_SUB + MEMOBS__HIST_SUB_BITS - 1;
    sub = i % MEMOBS__HIST_SUB;
    width = (uint64_t)1 << (e - MEMOBS__HIST_SUB_BITS);
    lo = ((uint64_t)1 << e) + sub * width;
    return lo + width / 2;
}

static void memobs__hist_add(memobs__hist_t *h, uint64_t ns) {
    uint64_t m = MEMOBS__LOAD(&h->max.v);
    MEMOBS__ADD(&h->b[memobs__hist_index(ns)].v, 1u);
    MEMOBS__ADD(&h->sum.v, ns);
    MEMOBS__ADD(&h->count.v, 1u);
    MEMOBS__STORE(&h->last.v, ns);
    while (ns > m && !MEMOBS__CAS(&h->max.v, &m, ns)) {
    }
}

/* Caller holds memobs__g.lock. */
static void memobs__hist_rebase(memobs__hist_t *h) {
    unsigned i;
    h->base_count = MEMOBS__LOAD(&h->count.v);
    h->base_sum = MEMOBS__LOAD(&h->sum.v);
    for (i = 0; i < MEMOBS__HIST_NB; i++) h->base_b[i] = MEMOBS__LOAD(&h->b[i].v);
    MEMOBS__STORE(&h->max.v, 0u);
    MEMOBS__STORE(&h->last.v, 0u);
}

/* Caller holds memobs__g.lock. Percentiles use the bucket counts read here,
   so they stay consistent with each other while samples arrive. */
static void memobs__hist_read(memobs__hist_t *h, memobs_latency_t *out) {
    static const double q[3] = {0.50, 0.90, 0.99};
    uint64_t *pq[3], rank[3];
    uint64_t n = 0, seen = 0, cnt, max = MEMOBS__LOAD(&h->max.v);
    unsigned i, k = 0;
    pq[0] = &out->p50_ns;
    pq[1] = &out->p90_ns;
    pq[2] = &out->p99_ns;
    memset(out, 0, sizeof *out);
    for (i = 0; i < MEMOBS__HIST_NB; i++) n += MEMOBS__LOAD(&h->b[i].v) - h->base_b[i];
    if (n == 0) return;
    out->count = n;
    out->last_ns = MEMOBS__LOAD(&h->last.v);
    cnt = MEMOBS__LOAD(&h->count.v) - h->base_count;
    out->mean_ns = (MEMOBS__LOAD(&h->sum.v) - h->base_sum) / (cnt ? cnt : 1);
    /* rank = ceil(q * n): the smallest sample with at least q of all samples
       at or below it. The sample of rank n is the max, known exactly. */
    for (k = 0; k < 3; k++) {
        double r = q[k] * (double)n;
        rank[k] = (uint64_t)r + ((double)(uint64_t)r < r);
        if (rank[k] == 0) rank[k] = 1;
    }
    for (i = 0, k = 0; i < MEMOBS__HIST_NB && k < 3; i++) {
        seen += MEMOBS__LOAD(&h->b[i].v) - h->base_b[i];
        for (; k < 3 && seen >= rank[k]; k++) {
            uint64_t v = memobs__hist_value(i);
            *pq[k] = (rank[k] == n || (max && v > max)) ? max : v;
        }
    }
    out->max_ns = max;
}

void memobs_ttft_start(void) {
    if (!MEMOBS__LOAD(&memobs__on.v)) return;
    MEMOBS__STORE(&memobs__g.ttft_start_ns.v, memobs_now_ns());
}

void memobs_ttft_stop(void) {
    uint64_t now, start;
    if (!MEMOBS__LOAD(&memobs__on.v)) return;
    now = memobs_now_ns();
    start = MEMOBS__XCHG(&memobs__g.ttft_start_ns.v, (uint64_t)0);
    if (start == 0) {
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_TTFT_UNMATCHED].v, 1u);
        memobs__warn_once(MEMOBS__W_TTFT_UNMATCHED, "TTFT_STOP without a TTFT_START; not timed (counted)");
        return;
    }
    memobs__hist_add(&memobs__g.ttft, now > start ? now - start : 0);
    MEMOBS__STORE(&memobs__g.tpot_last_ns.v, now);
}

void memobs_tpot_step(void) {
    uint64_t now, last;
    if (!MEMOBS__LOAD(&memobs__on.v)) return;
    now = memobs_now_ns();
    last = MEMOBS__LOAD(&memobs__g.tpot_last_ns.v);
    /* Only the thread that moves the clock from last to now takes the sample. */
    do {
        if (last == 0) {
            MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_TPOT_UNARMED].v, 1u);
            memobs__warn_once(MEMOBS__W_TPOT_UNARMED, "TPOT_STEP before any TTFT_STOP; not timed (counted)");
            return;
        }
    } while (!MEMOBS__CAS(&memobs__g.tpot_last_ns.v, &last, now));
    memobs__hist_add(&memobs__g.tpot, now > last ? now - last : 0);
}

void memobs_tpot_stop(void) { MEMOBS__STORE(&memobs__g.tpot_last_ns.v, (uint64_t)0); }

/* ======================================================================== */
/* Private: per-request table                                               */
/* ======================================================================== */

static uint64_t memobs__mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Locks the stripe of id; *at is the slot holding id or, if absent, the
   first free slot of its probe run (or -1 when the stripe is full). */
static memobs__req_stripe_t *memobs__req_find(uint64_t id, int *at, int *found) {
    uint64_t h = memobs__mix(id);
    memobs__req_stripe_t *st = &memobs__g.req[h % MEMOBS__REQ_STRIPES];
    unsigned i, n = MEMOBS__REQ_PER_STRIPE, j = (unsigned)((h / MEMOBS__REQ_STRIPES) % n);
    memobs_init();
    pthread_mutex_lock(&st->lock);
    *at = -1;
    *found = 0;
    for (i = 0; i < n; i++, j = (j + 1) % n) {
        if (!st->slot[j].used) {
            *at = (int)j;
            return st;
        }
        if (st->slot[j].id == id) {
            *at = (int)j;
            *found = 1;
            return st;
        }
    }
    return st;
}

/* Removes slot j keeping linear-probe runs intact (backward shift). */
static void memobs__req_remove(memobs__req_stripe_t *st, unsigned j) {
    unsigned n = MEMOBS__REQ_PER_STRIPE, k = j;
    st->slot[j].used = 0;
    st->n--;
    for (;;) {
        unsigned home;
        k = (k + 1) % n;
        if (!st->slot[k].used) return;
        home = (unsigned)((memobs__mix(st->slot[k].id) / MEMOBS__REQ_STRIPES) % n);
        /* Move k into the hole j if its home is not in (j, k] cyclically. */
        if ((j < k) ? (home <= j || home > k) : (home <= j && home > k)) {
            st->slot[j] = st->slot[k];
            st->slot[k].used = 0;
            j = k;
        }
    }
}

void memobs_request_begin(uint64_t id) {
    int at, found;
    memobs__req_stripe_t *st;
    uint64_t now;
    if (!MEMOBS__LOAD(&memobs__on.v)) return;
    now = memobs_now_ns();
    st = memobs__req_find(id, &at, &found);
    if (found) {
        pthread_mutex_unlock(&st->lock);
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_REQ_DUPLICATE].v, 1u);
        memobs__warn_once(MEMOBS__W_REQ_DUPLICATE, "request %llu begun twice; keeping the first begin (counted)",
                          (unsigned long long)id);
        return;
    }
    if (at < 0) {
        pthread_mutex_unlock(&st->lock);
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_REQ_DROPPED].v, 1u);
        memobs__warn_once(MEMOBS__W_REQ_FULL, "request table full (MEMOBS_MAX_REQUESTS=%u); request %llu not timed "
                          "(counted)", (unsigned)MEMOBS_MAX_REQUESTS, (unsigned long long)id);
        return;
    }
    st->slot[at].id = id;
    st->slot[at].begin_ns = now;
    st->slot[at].last_ns = 0;
    st->slot[at].tokens = 0;
    st->slot[at].used = 1;
    st->n++;
    pthread_mutex_unlock(&st->lock);
    MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_REQ_BEGUN].v, 1u);
}

/* Locks the stripe of an in-flight id and returns its slot; for an id not
   in flight, counts it as unknown and returns NULL with nothing locked. */
static memobs__req_t *memobs__req_live(uint64_t id, const char *what, memobs__req_stripe_t **st) {
    int at, found;
    *st = memobs__req_find(id, &at, &found);
    if (found) return &(*st)->slot[at];
    pthread_mutex_unlock(&(*st)->lock);
    MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_REQ_UNKNOWN].v, 1u);
    memobs__warn_once(MEMOBS__W_REQ_UNKNOWN, "%s for request %llu, which is not in flight; ignored (counted)", what,
                      (unsigned long long)id);
    return NULL;
}

void memobs_request_token(uint64_t id) {
    memobs__req_stripe_t *st;
    memobs__req_t *r;
    uint64_t now, prev, begin;
    uint32_t tokens;
    if (!MEMOBS__LOAD(&memobs__on.v)) return;
    now = memobs_now_ns();
    if ((r = memobs__req_live(id, "token", &st)) == NULL) return;
    tokens = r->tokens++;
    prev = r->last_ns;
    begin = r->begin_ns;
    r->last_ns = now;
    pthread_mutex_unlock(&st->lock);
    if (tokens == 0) memobs__hist_add(&memobs__g.ttft, now > begin ? now - begin : 0);
    else memobs__hist_add(&memobs__g.tpot, now > prev ? now - prev : 0);
}

void memobs_request_end(uint64_t id) {
    memobs__req_stripe_t *st;
    memobs__req_t *r;
    uint64_t now, begin;
    uint32_t tokens;
    if (!MEMOBS__LOAD(&memobs__on.v)) return;
    now = memobs_now_ns();
    if ((r = memobs__req_live(id, "end", &st)) == NULL) return;
    tokens = r->tokens;
    begin = r->begin_ns;
    memobs__req_remove(st, (unsigned)(r - st->slot));
    pthread_mutex_unlock(&st->lock);
    if (tokens == 0) {
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_REQ_ABORTED].v, 1u);
        return;
    }
    MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_REQ_COMPLETED].v, 1u);
    memobs__hist_add(&memobs__g.e2e, now > begin ? now - begin : 0);
}

/* ======================================================================== */
/* Private: user counters                                                   */
/* ======================================================================== */

static int memobs__valid_name(const char *s) {
    size_t i;
    if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
    for (i = 1; s[i]; i++)
        if (i >= 63 || !(isalnum((unsigned char)s[i]) || s[i] == '_')) return 0;
    return 1;
}

/* Caller holds memobs__g.lock; called at most once per counter. */
static void memobs__counter_help(memobs__counter_def_t *d, const char *help) {
    snprintf(d->help_buf, sizeof d->help_buf, "%s", help);
    __atomic_store_n(&d->help, (const char *)d->help_buf, __ATOMIC_RELEASE);
}

memobs_counter_t memobs_counter_register(const char *name, const char *help) {
    uint32_t i, n;
    memobs_counter_t rc;
    if (!memobs__valid_name(name)) {
        memobs__log(MEMOBS_LOG_WARN, "counter name '%s' is not [a-zA-Z_][a-zA-Z0-9_]{0,62}; not registered",
                    name ? name : "(null)");
        return MEMOBS_ERR_INVALID;
    }
    memobs_init();
    pthread_mutex_lock(&memobs__g.lock);
    n = MEMOBS__LOAD(&memobs__g.ncounters.v);
    for (i = 0; i < n; i++)
        if (strcmp(memobs__g.counters[i].name, name) == 0) break;
    if (i < n) {
        rc = (memobs_counter_t)i;
        /* A MEMOBS_COUNTER_ADD site may have registered it first, without help. */
        if (help && *help && !*memobs__g.counters[i].help) memobs__counter_help(&memobs__g.counters[i], help);
    } else if (n >= MEMOBS_MAX_COUNTERS) {
        rc = MEMOBS_ERR_FULL;
    } else {
        strcpy(memobs__g.counters[n].name, name);
        memobs__g.counters[n].help = "";
        if (help && *help) memobs__counter_help(&memobs__g.counters[n], help);
        /* Publish the name before the count that makes it visible. */
        __atomic_store_n(&memobs__g.ncounters.v, n + 1, __ATOMIC_RELEASE);
        rc = (memobs_counter_t)n;
    }
    pthread_mutex_unlock(&memobs__g.lock);
    if (rc == MEMOBS_ERR_FULL)
        memobs__log(MEMOBS_LOG_WARN, "counter '%s' not registered: all MEMOBS_MAX_COUNTERS=%d slots are taken", name,
                    MEMOBS_MAX_COUNTERS);
    return rc;
}

int32_t memobs__counter_site(const char *name) {
    memobs_counter_t c = memobs_counter_register(name, NULL);
    return c >= 0 ? c + 1 : -1;
}

/* ======================================================================== */
/* Private: identity                                                        */
/* ======================================================================== */

int memobs_set_identity(const char *job_id, int rank, int local_rank, int world_size) {
    if (world_size < 1 || rank < 0 || rank >= world_size || local_rank < 0 || local_rank >= world_size) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_set_identity: rank %d, local rank %d, world size %d is inconsistent; "
                    "identity unchanged", rank, local_rank, world_size);
        return MEMOBS_ERR_INVALID;
    }
    memobs_init();
    pthread_mutex_lock(&memobs__g.lock);
    if (job_id) snprintf(memobs__g.identity.job_id, sizeof memobs__g.identity.job_id, "%s", job_id);
    memobs__g.identity.rank = rank;
    memobs__g.identity.local_rank = local_rank;
    memobs__g.identity.world_size = world_size;
    pthread_mutex_unlock(&memobs__g.lock);
    return MEMOBS_OK;
}

void memobs_get_identity(memobs_identity_t *out) {
    if (!out) {
        memobs__warn_once(MEMOBS__W_NULL_ARG, "NULL output pointer passed to a memobs_get_* call; ignored");
        return;
    }
    memobs_init();
    pthread_mutex_lock(&memobs__g.lock);
    *out = memobs__g.identity;
    pthread_mutex_unlock(&memobs__g.lock);
}

/* ======================================================================== */
/* Private: summary and reset                                               */
/* ======================================================================== */

static void memobs__xfer_sum(memobs_xfer_t *x, memobs__shard_t *s, unsigned ph, unsigned d) {
    x->bytes += MEMOBS__LOAD(&s->xfer[ph][d][0].v) - s->base_xfer[ph][d][0];
    x->count += MEMOBS__LOAD(&s->xfer[ph][d][1].v) - s->base_xfer[ph][d][1];
}

static void memobs__dirs_add(memobs_dirs_t *to, const memobs_dirs_t *a) {
    to->h2d.bytes += a->h2d.bytes; to->h2d.count += a->h2d.count;
    to->d2h.bytes += a->d2h.bytes; to->d2h.count += a->d2h.count;
    to->d2d.bytes += a->d2d.bytes; to->d2d.count += a->d2d.count;
}

void memobs_get_summary(memobs_summary_t *out) {
    memobs_dirs_t *by_phase[MEMOBS__NPHASE];
    memobs__shard_t *s;
    uint64_t st[MEMOBS__ST_COUNT];
    uint32_t i, c;
    if (!out) {
        memobs__warn_once(MEMOBS__W_NULL_ARG, "NULL output pointer passed to a memobs_get_* call; ignored");
        return;
    }
    memobs_init();
    memset(out, 0, sizeof *out);
    by_phase[MEMOBS_PHASE_NONE] = &out->unphased;
    by_phase[MEMOBS_PHASE_PREFILL] = &out->prefill;
    by_phase[MEMOBS_PHASE_DECODE] = &out->decode;
    out->enabled = memobs_is_enabled();
    out->window_ns = memobs_now_ns() - MEMOBS__LOAD(&memobs__g.window_start_ns.v);
    pthread_mutex_lock(&memobs__g.lock);
    out->ncounters = __atomic_load_n(&memobs__g.ncounters.v, __ATOMIC_ACQUIRE);
    for (s = memobs__g.shards; s; s = s->next) {
        for (i = 0; i < MEMOBS__NPHASE; i++) {
            memobs__xfer_sum(&by_phase[i]->h2d, s, i, MEMOBS_DIR_H2D);
            memobs__xfer_sum(&by_phase[i]->d2h, s, i, MEMOBS_DIR_D2H);
            memobs__xfer_sum(&by_phase[i]->d2d, s, i, MEMOBS_DIR_D2D);
        }
        for (c = 0; c < out->ncounters; c++) out->counters[c].value += MEMOBS__LOAD(&s->user[c].v) - s->base_user[c];
    }
    for (c = 0; c < out->ncounters; c++) {
        out->counters[c].name = memobs__g.counters[c].name;
        out->counters[c].help = __atomic_load_n(&memobs__g.counters[c].help, __ATOMIC_ACQUIRE);
    }
    for (i = 0; i < MEMOBS__ST_COUNT; i++) st[i] = MEMOBS__LOAD(&memobs__g.st[i].v) - memobs__g.st_base[i];
    memobs__hist_read(&memobs__g.ttft, &out->ttft);
    memobs__hist_read(&memobs__g.tpot, &out->tpot);
    memobs__hist_read(&memobs__g.e2e, &out->e2e);
    out->identity = memobs__g.identity;
    pthread_mutex_unlock(&memobs__g.lock);
    for (i = 0; i < MEMOBS__NPHASE; i++) memobs__dirs_add(&out->total, by_phase[i]);
    for (i = 0; i < MEMOBS__REQ_STRIPES; i++) {
        pthread_mutex_lock(&memobs__g.req[i].lock);
        out->requests_in_flight += memobs__g.req[i].n;
        pthread_mutex_unlock(&memobs__g.req[i].lock);
    }
    out->requests_begun = st[MEMOBS__ST_REQ_BEGUN];
    out->requests_completed = st[MEMOBS__ST_REQ_COMPLETED];
    out->requests_aborted = st[MEMOBS__ST_REQ_ABORTED];
    out->requests_dropped = st[MEMOBS__ST_REQ_DROPPED];
    out->requests_unknown = st[MEMOBS__ST_REQ_UNKNOWN];
    out->requests_duplicate = st[MEMOBS__ST_REQ_DUPLICATE];
    out->ttft_unmatched = st[MEMOBS__ST_TTFT_UNMATCHED];
    out->tpot_unarmed = st[MEMOBS__ST_TPOT_UNARMED];
    out->bad_records = st[MEMOBS__ST_BAD_RECORD];
    out->untracked_threads = st[MEMOBS__ST_UNTRACKED];
}

void memobs_reset(void) {
    memobs__shard_t *s;
    unsigned i;
    memobs_init();
    pthread_mutex_lock(&memobs__g.lock);
    for (s = memobs__g.shards; s; s = s->next) {
        uint64_t *bx = &s->base_xfer[0][0][0];
        memobs__u64_t *x = &s->xfer[0][0][0];
        for (i = 0; i < MEMOBS__NPHASE * MEMOBS__NDIR * 2; i++) bx[i] = MEMOBS__LOAD(&x[i].v);
        for (i = 0; i < MEMOBS_MAX_COUNTERS; i++) s->base_user[i] = MEMOBS__LOAD(&s->user[i].v);
    }
    for (i = 0; i < MEMOBS__ST_COUNT; i++) memobs__g.st_base[i] = MEMOBS__LOAD(&memobs__g.st[i].v);
    memobs__hist_rebase(&memobs__g.ttft);
    memobs__hist_rebase(&memobs__g.tpot);
    memobs__hist_rebase(&memobs__g.e2e);
    MEMOBS__STORE(&memobs__g.window_start_ns.v, memobs_now_ns());
    pthread_mutex_unlock(&memobs__g.lock);
}

/* ======================================================================== */
/* Private: formatting and writers                                          */
/* ======================================================================== */

const char *memobs_fmt_bytes(uint64_t bytes, char *buf, size_t len) {
    static const char *const unit[] = {"KB", "MB", "GB", "TB", "PB", "EB"};
    double v = (double)bytes;
    unsigned u = 0;
    if (!buf || len == 0) return "";
    if (bytes < 1000) {
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    v /= 1000.0;
    while (v >= 999.995 && u < 5) {
        v /= 1000.0;
        u++;
    }
    snprintf(buf, len, "%.2f %s", v, unit[u]);
    return buf;
}

const char *memobs_fmt_ns(uint64_t ns, char *buf, size_t len) {
    if (!buf || len == 0) return "";
    if (ns < 1000) snprintf(buf, len, "%llu ns", (unsigned long long)ns);
    else if (ns < 999995ull) snprintf(buf, len, "%.2f us", (double)ns / 1e3);
    else if (ns < 999995000ull) snprintf(buf, len, "%.2f ms", (double)ns / 1e6);
    else snprintf(buf, len, "%.2f s", (double)ns / 1e9);
    return buf;
}

static void memobs__json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c < 0x20 || c == 0x7f) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void memobs__text_xfer(FILE *f, const memobs_xfer_t *x) {
    char b[32];
    fprintf(f, " | %10s %8llu", memobs_fmt_bytes(x->bytes, b, sizeof b), (unsigned long long)x->count);
}

static void memobs__text_latency(FILE *f, const char *name, const memobs_latency_t *l) {
    const uint64_t *v[6];
    char b[32];
    unsigned i;
    v[0] = &l->mean_ns; v[1] = &l->p50_ns; v[2] = &l->p90_ns;
    v[3] = &l->p99_ns;  v[4] = &l->max_ns; v[5] = &l->last_ns;
    fprintf(f, "  %-5s %8llu", name, (unsigned long long)l->count);
    for (i = 0; i < 6; i++) fprintf(f, " %10s", l->count ? memobs_fmt_ns(*v[i], b, sizeof b) : "-");
    fputc('\n', f);
}

/* One line naming every kind of misuse seen in the window, if any. */
static void memobs__text_problems(FILE *f, const memobs_summary_t *s) {
    const uint64_t v[7] = {s->requests_dropped, s->requests_unknown, s->requests_duplicate, s->ttft_unmatched,
                           s->tpot_unarmed, s->bad_records, s->untracked_threads};
    static const char *const what[7] = {"requests not timed (table full)", "token/end for ids not in flight",
                                        "duplicate begins", "TTFT stops without a start",
                                        "TPOT steps before a first token", "bad records",
                                        "records via the shared shard (no per-thread shard)"};
    unsigned i, n = 0;
    for (i = 0; i < 7; i++) {
        if (!v[i]) continue;
        fprintf(f, "%s %llu %s", n++ ? "," : "  problems:", (unsigned long long)v[i], what[i]);
    }
    if (n) fputc('\n', f);
}

static void memobs__write_text(FILE *f, const memobs_summary_t *s) {
    static const char *const dname[4] = {"H2D", "D2H", "D2D", "all"};
    const memobs_dirs_t *cols[4];
    char b[32];
    unsigned d, c;
    cols[0] = &s->total; cols[1] = &s->prefill; cols[2] = &s->decode; cols[3] = &s->unphased;
    fprintf(f, "== memobs summary == job %s  rank %d/%d (local %d)  host %s  pid %lld  window %s%s\n",
            s->identity.job_id[0] ? s->identity.job_id : "-", (int)s->identity.rank, (int)s->identity.world_size,
            (int)s->identity.local_rank, s->identity.host, (long long)s->identity.pid,
            memobs_fmt_ns(s->window_ns, b, sizeof b), s->enabled ? "" : "  [disabled]");
    fprintf(f, "  %-5s | %10s %8s | %10s %8s | %10s %8s | %10s %8s\n", "xfer", "total", "ops", "prefill", "ops",
            "decode", "ops", "unphased", "ops");
    for (d = 0; d < 4; d++) {
        fprintf(f, "  %-5s", dname[d]);
        for (c = 0; c < 4; c++) {
            memobs_xfer_t all;
            const memobs_xfer_t *x;
            if (d < 3) {
                x = d == 0 ? &cols[c]->h2d : d == 1 ? &cols[c]->d2h : &cols[c]->d2d;
            } else {
                all.bytes = cols[c]->h2d.bytes + cols[c]->d2h.bytes + cols[c]->d2d.bytes;
                all.count = cols[c]->h2d.count + cols[c]->d2h.count + cols[c]->d2d.count;
                x = &all;
            }
            memobs__text_xfer(f, x);
        }
        fputc('\n', f);
    }
    fprintf(f, "  %-5s %8s %10s %10s %10s %10s %10s %10s\n", "time", "count", "mean", "p50", "p90", "p99", "max",
            "last");
    memobs__text_latency(f, "TTFT", &s->ttft);
    memobs__text_latency(f, "TPOT", &s->tpot);
    memobs__text_latency(f, "E2E", &s->e2e);
    fprintf(f, "  requests: %llu begun, %llu completed, %llu aborted, %llu in flight\n",
            (unsigned long long)s->requests_begun, (unsigned long long)s->requests_completed,
            (unsigned long long)s->requests_aborted, (unsigned long long)s->requests_in_flight);
    if (s->ncounters) {
        fprintf(f, "  counters:\n");
        for (c = 0; c < s->ncounters; c++)
            fprintf(f, "    %-32s %20llu%s%s\n", s->counters[c].name, (unsigned long long)s->counters[c].value,
                    s->counters[c].help[0] ? "  " : "", s->counters[c].help);
    }
    memobs__text_problems(f, s);
}

static void memobs__json_dirs(FILE *f, const char *name, const memobs_dirs_t *d) {
    fprintf(f,
            "\"%s\":{\"h2d_bytes\":%llu,\"h2d_count\":%llu,\"d2h_bytes\":%llu,\"d2h_count\":%llu,"
            "\"d2d_bytes\":%llu,\"d2d_count\":%llu}",
            name, (unsigned long long)d->h2d.bytes, (unsigned long long)d->h2d.count,
            (unsigned long long)d->d2h.bytes, (unsigned long long)d->d2h.count, (unsigned long long)d->d2d.bytes,
            (unsigned long long)d->d2d.count);
}

static void memobs__json_latency(FILE *f, const char *name, const memobs_latency_t *l) {
    fprintf(f,
            "\"%s\":{\"count\":%llu,\"last_ns\":%llu,\"mean_ns\":%llu,\"p50_ns\":%llu,\"p90_ns\":%llu,"
            "\"p99_ns\":%llu,\"max_ns\":%llu}",
            name, (unsigned long long)l->count, (unsigned long long)l->last_ns, (unsigned long long)l->mean_ns,
            (unsigned long long)l->p50_ns, (unsigned long long)l->p90_ns, (unsigned long long)l->p99_ns,
            (unsigned long long)l->max_ns);
}

static void memobs__write_json(FILE *f, const memobs_summary_t *s) {
    uint32_t c;
    fprintf(f, "{\"memobs_version\":\"%s\",\"identity\":{\"job_id\":", MEMOBS_VERSION);
    if (s->identity.job_id[0]) memobs__json_str(f, s->identity.job_id);
    else fputs("null", f);
    fprintf(f, ",\"rank\":%d,\"local_rank\":%d,\"world_size\":%d,\"host\":", (int)s->identity.rank,
            (int)s->identity.local_rank, (int)s->identity.world_size);
    memobs__json_str(f, s->identity.host);
    fprintf(f, ",\"pid\":%lld},\"enabled\":%s,\"window_ns\":%llu,", (long long)s->identity.pid,
            s->enabled ? "true" : "false", (unsigned long long)s->window_ns);
    memobs__json_dirs(f, "total", &s->total);
    fputc(',', f);
    memobs__json_dirs(f, "prefill", &s->prefill);
    fputc(',', f);
    memobs__json_dirs(f, "decode", &s->decode);
    fputc(',', f);
    memobs__json_dirs(f, "unphased", &s->unphased);
    fputc(',', f);
    memobs__json_latency(f, "ttft", &s->ttft);
    fputc(',', f);
    memobs__json_latency(f, "tpot", &s->tpot);
    fputc(',', f);
    memobs__json_latency(f, "e2e", &s->e2e);
    fprintf(f,
            ",\"requests\":{\"begun\":%llu,\"completed\":%llu,\"aborted\":%llu,\"in_flight\":%llu,"
            "\"dropped\":%llu,\"unknown\":%llu,\"duplicate\":%llu},"
            "\"problems\":{\"ttft_unmatched\":%llu,\"tpot_unarmed\":%llu,\"bad_records\":%llu,"
            "\"untracked_threads\":%llu},\"counters\":{",
            (unsigned long long)s->requests_begun, (unsigned long long)s->requests_completed,
            (unsigned long long)s->requests_aborted, (unsigned long long)s->requests_in_flight,
            (unsigned long long)s->requests_dropped, (unsigned long long)s->requests_unknown,
            (unsigned long long)s->requests_duplicate, (unsigned long long)s->ttft_unmatched,
            (unsigned long long)s->tpot_unarmed, (unsigned long long)s->bad_records,
            (unsigned long long)s->untracked_threads);
    for (c = 0; c < s->ncounters; c++) {
        if (c) fputc(',', f);
        memobs__json_str(f, s->counters[c].name);
        fprintf(f, ":%llu", (unsigned long long)s->counters[c].value);
    }
    fputs("}}\n", f);
}

int memobs_write_summary(FILE *f, memobs_format_t fmt) {
    memobs_summary_t *s;
    if (!f || (fmt != MEMOBS_FORMAT_TEXT && fmt != MEMOBS_FORMAT_JSON)) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_write_summary: %s", !f ? "NULL FILE" : "unknown format");
        return MEMOBS_ERR_INVALID;
    }
    /* memobs_summary_t is a few KB: keep it off small thread stacks. */
    s = (memobs_summary_t *)MEMOBS_MALLOC(sizeof *s);
    if (!s) return MEMOBS_ERR_NOMEM;
    memobs_get_summary(s);
    if (fmt == MEMOBS_FORMAT_JSON) memobs__write_json(f, s);
    else memobs__write_text(f, s);
    MEMOBS_FREE(s);
    if (fflush(f) != 0 || ferror(f)) return MEMOBS_ERR_IO;
    return MEMOBS_OK;
}

void memobs_print_summary(void) {
    memobs_init();
    memobs_write_summary(stderr, memobs__g.format);
}

/* Expands %r (rank), %p (pid) and %% in a path; 0 if it does not fit. */
static int memobs__expand_path(const char *in, char *out, size_t len) {
    memobs_identity_t id;
    size_t o = 0;
    memobs_get_identity(&id);
    for (; *in; in++) {
        char tmp[24];
        const char *add = tmp;
        if (in[0] == '%' && in[1] == 'r') snprintf(tmp, sizeof tmp, "%d", (int)id.rank), in++;
        else if (in[0] == '%' && in[1] == 'p') snprintf(tmp, sizeof tmp, "%lld", (long long)getpid()), in++;
        else if (in[0] == '%' && in[1] == '%') tmp[0] = '%', tmp[1] = 0, in++;
        else tmp[0] = *in, tmp[1] = 0;
        if (o + strlen(add) + 1 > len) return 0;
        memcpy(out + o, add, strlen(add));
        o += strlen(add);
    }
    out[o] = 0;
    return 1;
}

int memobs_write_summary_file(const char *path, memobs_format_t fmt) {
    char full[1024];
    FILE *f;
    int rc;
    if (!path || !*path) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_write_summary_file: empty path");
        return MEMOBS_ERR_INVALID;
    }
    memobs_init();
    if (strcmp(path, "stderr") == 0) return memobs_write_summary(stderr, fmt);
    if (strcmp(path, "stdout") == 0) return memobs_write_summary(stdout, fmt);
    if (!memobs__expand_path(path, full, sizeof full)) {
        memobs__log(MEMOBS_LOG_WARN, "summary path '%s' is too long once expanded", path);
        return MEMOBS_ERR_INVALID;
    }
    f = fopen(full, "w");
    if (!f) {
        memobs__log(MEMOBS_LOG_WARN, "cannot open '%s' for the summary: %s", full, strerror(errno));
        return MEMOBS_ERR_IO;
    }
    rc = memobs_write_summary(f, fmt);
    if (fclose(f) != 0 && rc == MEMOBS_OK) rc = MEMOBS_ERR_IO;
    if (rc != MEMOBS_OK) memobs__log(MEMOBS_LOG_WARN, "writing the summary to '%s' failed: %s", full, memobs_strerror(rc));
    return rc;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MEMOBS_IMPLEMENTATION */

/* SPDX-License-Identifier: MIT */
