/* nccl_driver: plays NCCL's side of the profiler plugin API against
   build/libnccl-profiler-memobs.so, as NCCL 2.23 ... 2.30 call a profiler
   (the facts it follows are in the comments below, each with the NCCL
   source it was read from), for tests/nccl/test_nccl.sh.

       nccl_driver PLUGIN VERSION MODE [RANK]

   It dlopens PLUGIN with RTLD_NOW | RTLD_LOCAL (NCCL src/plugin/
   plugin_open.cc), takes the data object ncclProfiler_v<VERSION> (1..6)
   and plays one of these MODEs:

     scenario  one rank (RANK 0..3) of a 4-rank job with two
               communicators: "tp" (all 4 ranks, one node) and "pp" (pairs
               {0,1} and {2,3}). The table `script` below is the whole job:
               the events played and the values expected are both generated
               from it. With NCCL_DRIVER_EXPECT=PATH the expected values
               (what memobs must show for this rank, this VERSION and the
               level in MEMOBS_NCCL) are written there as JSON for
               tests/nccl/nccl_check.py.
     threads   a user thread and a proxy thread at once: 10,000 all-reduces
               whose kernel channels and proxy operations are played by the
               proxy thread while the user thread stops the collective.
     pool      64 collectives in flight at once, then their kernel
               channels, then one more (run with MEMOBS_NCCL_EVENTS=8);
               prints what got a handle.
     refuse    init is refused: ncclSuccess, mask 0 and a NULL context
               (MEMOBS_NCCL=0 or MEMOBS=0); later calls with the NULL
               context succeed and give NULL handles.
     badstop   a second stop of a handle, a stop of a forged handle and a
               state on a stopped one: each returns ncclSuccess.
     pxn       proxy operations started for another process (proxyOp.pid
               not ours) with a parentObj that must never be read.

   Built three ways from this one file: plain (the program knows nothing
   of memobs: under LD_PRELOAD=libmemobs_preload.so, or with the plugin's
   own instance); with -DDRIVER_LIB -shared, a library whose
   nccl_driver_main(argc, argv) a Python process calls after importing
   memobs; and with -DDRIVER_HOST: the program links memobs
   (MEMOBS_EXPORT_HOST, memobs_host_api exported) and memobs_cuda.h on the
   CUDA runtime double, takes a memory sample every 100 ms of its own
   clock and holds 6 GiB outside memobs during the prefill all-reduces,
   so that its Stormlog file reads as a collective to Stormlog.

   Time is this program's: clock_gettime is defined here and exported
   (-Wl,--export-dynamic-symbol=clock_gettime), so memobs' clock, in the
   program or in the plugin, reads the job's script time in the scenario
   (CPU-stamped kernel channels in v3, proxy spans in v1-v2, Stormlog
   timestamps are exact). The other modes run on the real clock. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../nccl/profiler_api.h"

#ifdef DRIVER_HOST
#define MEMOBS_IMPLEMENTATION
#define MEMOBS_EXPORT_HOST
#include "../../memobs_cuda.h"
#include "../cuda/cudart_double.h"
#endif

/* ------------------------------------------------------------------------ */
/* The clock                                                                */
/* ------------------------------------------------------------------------ */

#define MS 1000000ull
#define US 1000ull
#define EPOCH_NS 1790000000000000000ull /* the job's wall clock at monotonic 0 */

static int fake_on = 1; /* script time from the start (memobs may start first); off in the modes that need none */
static uint64_t fake_ns = 5000000000ull;      /* CLOCK_MONOTONIC now */

int clock_gettime(clockid_t clk, struct timespec *ts) {
    uint64_t v;
    if (!__atomic_load_n(&fake_on, __ATOMIC_ACQUIRE)) return (int)syscall(SYS_clock_gettime, clk, ts);
    v = __atomic_load_n(&fake_ns, __ATOMIC_RELAXED);
    if (clk == CLOCK_REALTIME) v += EPOCH_NS;
    ts->tv_sec = (time_t)(v / 1000000000u);
    ts->tv_nsec = (long)(v % 1000000000u);
    return 0;
}

static void clock_to(uint64_t ns) { /* never backwards */
    if (ns > fake_ns) __atomic_store_n(&fake_ns, ns, __ATOMIC_RELAXED);
}

/* The GPU globaltimer that kernel channels report (pTimer, v4+): its own
   base, never compared with the host clock (only durations count). */
#define GPU_BASE 777000000000ull

/* ------------------------------------------------------------------------ */
/* Failing                                                                  */
/* ------------------------------------------------------------------------ */

static const char *prog = "nccl_driver";
static int failures;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    failures++;
}

static void die(const char *what) {
    fprintf(stderr, "%s: %s\n", prog, what);
    exit(2);
}

/* ------------------------------------------------------------------------ */
/* The plugin, whatever its version                                         */
/* ------------------------------------------------------------------------ */

/* One event as NCCL describes it, before it is written into the
   descriptor of the version played. */
typedef struct {
    uint64_t type;     /* ncclProfile* bit */
    void *parent;      /* parentObj */
    int rank;          /* the rank in the event's communicator */
    const char *func;  /* "AllReduce", ...: v2+ strings, v1 numbers (func_num) */
    const char *dtype; /* "ncclBfloat16", ... */
    size_t count;
    int root, peer;
    uint64_t seq;
    int nchannels;
    const char *comm_name; /* v1-v3: the comm comes only in the coll/p2p descriptor */
    uint64_t comm_hash;
    void *group;  /* v5+ coll/p2p parentGroup */
    int captured; /* v5+ API events' graphCaptured */
    pid_t pid;    /* proxyOp */
    int channel, nsteps, chunk, is_send, step;
    uint64_t ptimer; /* kernelCh start (v4+) */
} ev_t;

typedef struct {
    const char *name;
    uint64_t id;
    int rank, nranks, nnodes;
    void *ctx;
} comm_t;

static int version;
static const void *table; /* ncclProfiler_v<version>_t */

/* ncclFunc_t and ncclDataType_t numbers, for v1 (NCCL src/include/
   nccl_common.h, nccl.h). */
static int func_num(const char *f) {
    static const char *const names[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                        "AllReduce", "SendRecv", "Send",   "Recv"};
    int i;
    for (i = 0; i < 8; i++)
        if (!strcmp(f, names[i])) return i;
    die("no ncclFunc_t number for that func");
    return -1;
}
static int dtype_num(const char *d) {
    static const char *const names[] = {"ncclInt8",   "ncclUint8",   "ncclInt32",   "ncclUint32",
                                        "ncclInt64",  "ncclUint64",  "ncclFloat16", "ncclFloat32",
                                        "ncclFloat64", "ncclBfloat16"};
    int i;
    for (i = 0; i < 10; i++)
        if (!strcmp(d, names[i])) return i;
    die("no ncclDataType_t number for that datatype");
    return -1;
}
static uint64_t dtype_size(const char *d) {
    static const struct { const char *name; uint64_t size; } sizes[] = {
        {"ncclInt8", 1},    {"ncclUint8", 1},   {"ncclInt32", 4},   {"ncclUint32", 4},    {"ncclInt64", 8},
        {"ncclUint64", 8},  {"ncclFloat16", 2}, {"ncclFloat32", 4}, {"ncclFloat64", 8},  {"ncclBfloat16", 2}};
    size_t i;
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (!strcmp(d, sizes[i].name)) return sizes[i].size;
    die("no size for that datatype");
    return 0;
}

/* The fields every version from v2 spells the same way. */
#define FILL_COLL(c, e)                                                                                      \
    do {                                                                                                     \
        (c).seqNumber = (e)->seq;                                                                            \
        (c).func = (e)->func;                                                                                \
        (c).sendBuff = NULL;                                                                                 \
        (c).recvBuff = NULL;                                                                                 \
        (c).count = (e)->count;                                                                              \
        (c).root = (e)->root;                                                                                \
        (c).datatype = (e)->dtype;                                                                           \
        (c).nWarps = 16;                                                                                     \
        (c).algo = "RING";                                                                                   \
        (c).proto = "SIMPLE";                                                                                \
    } while (0)
#define FILL_P2P(p, e)                                                                                       \
    do {                                                                                                     \
        (p).func = (e)->func;                                                                                \
        (p).buff = NULL;                                                                                     \
        (p).datatype = (e)->dtype;                                                                           \
        (p).count = (e)->count;                                                                              \
        (p).peer = (e)->peer;                                                                                \
    } while (0)
#define FILL_PROXY(d, e)                                                                                     \
    do {                                                                                                     \
        if ((e)->type == ncclProfileProxyStep) {                                                             \
            (d).proxyStep.step = (e)->step;                                                                  \
            break;                                                                                           \
        }                                                                                                    \
        (d).proxyOp.pid = (e)->pid;                                                                          \
        (d).proxyOp.channelId = (uint8_t)(e)->channel;                                                       \
        (d).proxyOp.peer = (e)->peer;                                                                        \
        (d).proxyOp.nSteps = (e)->nsteps;                                                                    \
        (d).proxyOp.chunkSize = (e)->chunk;                                                                  \
        (d).proxyOp.isSend = (e)->is_send;                                                                   \
    } while (0)
/* v5 and v6 share every field the driver plays. */
#define FILL_V5(d, e)                                                                                        \
    do {                                                                                                     \
        (d).type = (e)->type;                                                                                \
        (d).parentObj = (e)->parent;                                                                         \
        (d).rank = (e)->rank;                                                                                \
        switch ((e)->type) {                                                                                 \
        case ncclProfileGroupApi:                                                                            \
            (d).groupApi.graphCaptured = (e)->captured;                                                      \
            (d).groupApi.groupDepth = 1;                                                                     \
            break;                                                                                           \
        case ncclProfileCollApi:                                                                             \
            (d).collApi.func = (e)->func;                                                                    \
            (d).collApi.count = (e)->count;                                                                  \
            (d).collApi.datatype = (e)->dtype;                                                               \
            (d).collApi.root = (e)->root;                                                                    \
            (d).collApi.stream = NULL;                                                                       \
            (d).collApi.graphCaptured = (e)->captured;                                                       \
            break;                                                                                           \
        case ncclProfileP2pApi:                                                                              \
            (d).p2pApi.func = (e)->func;                                                                     \
            (d).p2pApi.count = (e)->count;                                                                   \
            (d).p2pApi.datatype = (e)->dtype;                                                                \
            (d).p2pApi.stream = NULL;                                                                        \
            (d).p2pApi.graphCaptured = (e)->captured;                                                        \
            break;                                                                                           \
        case ncclProfileColl:                                                                                \
            FILL_COLL((d).coll, e);                                                                          \
            (d).coll.nChannels = (uint8_t)(e)->nchannels;                                                    \
            (d).coll.parentGroup = (e)->group;                                                               \
            break;                                                                                           \
        case ncclProfileP2p:                                                                                 \
            FILL_P2P((d).p2p, e);                                                                            \
            (d).p2p.nChannels = (uint8_t)(e)->nchannels;                                                     \
            (d).p2p.parentGroup = (e)->group;                                                                \
            break;                                                                                           \
        case ncclProfileProxyOp:                                                                             \
        case ncclProfileProxyStep:                                                                           \
            FILL_PROXY(d, e);                                                                                \
            break;                                                                                           \
        case ncclProfileKernelCh:                                                                            \
            (d).kernelCh.channelId = (uint8_t)(e)->channel;                                                  \
            (d).kernelCh.pTimer = (e)->ptimer;                                                               \
            break;                                                                                           \
        }                                                                                                    \
    } while (0)

/* The activation mask the last init wrote (NCCL 2.28.9 keeps one for
   the whole process). */
static int act_mask;

/* Does NCCL start an event of this type under act_mask? It starts an
   event when its own bit or a descendant's is set (2.28.9
   src/plugin/profiler.cc: API events when only Coll or KernelCh is asked
   for; design note 1.5). */
static int wanted(uint64_t type) {
    const uint64_t below_op = ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileNetPlugin;
    const uint64_t below_task = below_op | ncclProfileKernelCh;
    uint64_t m = (uint64_t)(unsigned)act_mask, want;
    switch (type) {
    case ncclProfileGroupApi: case ncclProfileGroup: want = ~(uint64_t)0; break;
    case ncclProfileCollApi: want = ncclProfileCollApi | ncclProfileColl | below_task; break;
    case ncclProfileP2pApi: want = ncclProfileP2pApi | ncclProfileP2p | below_task; break;
    case ncclProfileColl: want = ncclProfileColl | below_task; break;
    case ncclProfileP2p: want = ncclProfileP2p | below_task; break;
    case ncclProfileProxyOp: want = below_op; break;
    case ncclProfileProxyStep: want = ncclProfileProxyStep | ncclProfileNetPlugin; break;
    default: want = type; break;
    }
    return (m & want) != 0;
}

/* Plays startEvent: the event written into the version's descriptor, as
   NCCL's adapters of 2.26+ (src/plugin/profiler/profiler_v*.cc) and the
   older NCCLs do; NULL, without a call, for a type NCCL would not start
   under the mask. */
static void *start(void *ctx, const ev_t *e) {
    void *h = NULL;
    ncclResult_t r = ncclSuccess;
    if (!wanted(e->type)) return NULL;
    switch (version) {
    case 1: {
        ncclProfilerEventDescr_v1_t d;
        memset(&d, 0, sizeof d);
        d.type = (uint8_t)e->type;
        d.parentObj = e->parent;
        d.rank = e->rank;
        if (e->type == ncclProfileColl) {
            d.coll.name = e->comm_name;
            d.coll.commHash = e->comm_hash;
            d.coll.seqNumber = e->seq;
            d.coll.func = (uint8_t)func_num(e->func);
            d.coll.count = e->count;
            d.coll.root = e->root;
            d.coll.datatype = (uint8_t)dtype_num(e->dtype);
            d.coll.trafficBytes = e->count * dtype_size(e->dtype);
            d.coll.nMaxChannels = (uint8_t)e->nchannels;
            d.coll.nWarps = 16;
            d.coll.algo = 1;  /* NCCL_ALGO_RING */
            d.coll.proto = 2; /* NCCL_PROTO_SIMPLE */
        } else if (e->type == ncclProfileP2p) {
            d.p2p.name = e->comm_name;
            d.p2p.commHash = e->comm_hash;
            d.p2p.func = (uint8_t)func_num(e->func);
            d.p2p.datatype = (uint8_t)dtype_num(e->dtype);
            d.p2p.count = e->count;
            d.p2p.peer = e->peer;
        } else if (e->type == ncclProfileProxyOp || e->type == ncclProfileProxyStep) {
            FILL_PROXY(d, e);
        }
        r = ((const ncclProfiler_v1_t *)table)->startEvent(ctx, &h, &d);
        break;
    }
    case 2: {
        ncclProfilerEventDescr_v2_t d;
        memset(&d, 0, sizeof d);
        d.type = (uint8_t)e->type;
        d.parentObj = e->parent;
        d.rank = e->rank;
        if (e->type == ncclProfileColl) {
            d.coll.name = e->comm_name;
            d.coll.commHash = e->comm_hash;
            FILL_COLL(d.coll, e);
            d.coll.trafficBytes = e->count * dtype_size(e->dtype);
            d.coll.nMaxChannels = (uint8_t)e->nchannels;
        } else if (e->type == ncclProfileP2p) {
            d.p2p.name = e->comm_name;
            d.p2p.commHash = e->comm_hash;
            FILL_P2P(d.p2p, e);
        } else if (e->type == ncclProfileProxyOp || e->type == ncclProfileProxyStep) {
            FILL_PROXY(d, e);
        }
        r = ((const ncclProfiler_v2_t *)table)->startEvent(ctx, &h, &d);
        break;
    }
    case 3: {
        ncclProfilerEventDescr_v3_t d;
        memset(&d, 0, sizeof d);
        d.type = (uint8_t)e->type;
        d.parentObj = e->parent;
        d.rank = e->rank;
        if (e->type == ncclProfileColl) {
            d.coll.name = e->comm_name;
            d.coll.commHash = e->comm_hash;
            FILL_COLL(d.coll, e);
            d.coll.nMaxChannels = (uint8_t)e->nchannels;
        } else if (e->type == ncclProfileP2p) {
            d.p2p.name = e->comm_name;
            d.p2p.commHash = e->comm_hash;
            FILL_P2P(d.p2p, e);
        } else if (e->type == ncclProfileKernelCh) {
            d.kernelCh.channelId = (uint8_t)e->channel;
        } else if (e->type == ncclProfileProxyOp || e->type == ncclProfileProxyStep) {
            FILL_PROXY(d, e);
        }
        r = ((const ncclProfiler_v3_t *)table)->startEvent(ctx, &h, &d);
        break;
    }
    case 4: {
        ncclProfilerEventDescr_v4_t d;
        memset(&d, 0, sizeof d);
        d.type = (uint8_t)e->type;
        d.parentObj = e->parent;
        d.rank = e->rank;
        if (e->type == ncclProfileColl) {
            FILL_COLL(d.coll, e);
            d.coll.nChannels = (uint8_t)e->nchannels;
        } else if (e->type == ncclProfileP2p) {
            FILL_P2P(d.p2p, e);
            d.p2p.nChannels = (uint8_t)e->nchannels;
        } else if (e->type == ncclProfileKernelCh) {
            d.kernelCh.channelId = (uint8_t)e->channel;
            d.kernelCh.pTimer = e->ptimer;
        } else if (e->type == ncclProfileProxyOp || e->type == ncclProfileProxyStep) {
            FILL_PROXY(d, e);
        }
        r = ((const ncclProfiler_v4_t *)table)->startEvent(ctx, &h, &d);
        break;
    }
    case 5: {
        ncclProfilerEventDescr_v5_t d;
        memset(&d, 0, sizeof d);
        FILL_V5(d, e);
        r = ((const ncclProfiler_v5_t *)table)->startEvent(ctx, &h, &d);
        break;
    }
    default: {
        ncclProfilerEventDescr_v6_t d;
        memset(&d, 0, sizeof d);
        FILL_V5(d, e);
        r = ((const ncclProfiler_v6_t *)table)->startEvent(ctx, &h, &d);
        break;
    }
    }
    if (r != ncclSuccess) fail("startEvent(type %#" PRIx64 ") returned %d, expected ncclSuccess (0)", e->type, (int)r);
    return h;
}

/* Plays stopEvent; NCCL never passes a NULL handle (it skips them, 2.28.9
   src/plugin/profiler.cc), but the badstop mode does. */
static void stop(void *h) {
    ncclResult_t r;
    /* stopEvent has the same type in every version */
    r = ((const ncclProfiler_v1_t *)table)->stopEvent(h);
    if (r != ncclSuccess) fail("stopEvent(%p) returned %d, expected ncclSuccess (0)", h, (int)r);
}

/* Plays recordEventState with the version's state arguments: transSize
   for proxy steps (v4+, ProxyOp in v1-v3), pTimer for KernelChStop. */
static void state(void *h, int st, size_t trans, uint64_t ptimer) {
    ncclResult_t r;
    if (!h) return; /* NCCL records states only on handles it was given */
    if (version <= 3) {
        ncclProfilerEventStateArgs_v1_t a; /* v1-v3 share this shape */
        memset(&a, 0, sizeof a);
        a.proxyOp.transSize = trans;
        a.proxyOp.steps = 1;
        r = ((const ncclProfiler_v1_t *)table)
                ->recordEventState(h, (ncclProfilerEventState_v1_t)st, trans ? &a : NULL);
    } else {
        ncclProfilerEventStateArgs_v4_t a; /* v4-v6 share this shape */
        memset(&a, 0, sizeof a);
        if (st == ncclProfilerKernelChStop) a.kernelCh.pTimer = ptimer;
        else a.proxyStep.transSize = trans;
        r = ((const ncclProfiler_v4_t *)table)->recordEventState(h, (ncclProfilerEventState_v4_t)st, &a);
    }
    if (r != ncclSuccess) fail("recordEventState(state %d) returned %d, expected ncclSuccess (0)", st, (int)r);
}

static void logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
    (void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

static ncclResult_t init_call(comm_t *c, int *mask);

/* Plays init: v1-v3 without the comm's identity, v4 with it, v5+ with
   commId second (example/nccl/profiler_v*.h). Returns init's result;
   *mask is the activation mask the plugin wrote. */
static ncclResult_t init(comm_t *c, int *mask) {
    ncclResult_t r = init_call(c, mask);
    act_mask = *mask;
    return r;
}

static ncclResult_t init_call(comm_t *c, int *mask) {
    switch (version) {
    case 1: case 2: case 3:
        return ((const ncclProfiler_v1_t *)table)->init(&c->ctx, mask);
    case 4:
        return ((const ncclProfiler_v4_t *)table)->init(&c->ctx, mask, c->name, c->id, c->nnodes, c->nranks,
                                                         c->rank, logger);
    case 5:
        return ((const ncclProfiler_v5_t *)table)->init(&c->ctx, c->id, mask, c->name, c->nnodes, c->nranks,
                                                         c->rank, logger);
    default:
        return ((const ncclProfiler_v6_t *)table)->init(&c->ctx, c->id, mask, c->name, c->nnodes, c->nranks,
                                                         c->rank, logger);
    }
}

static void finalize(comm_t *c) {
    ncclResult_t r;
    if (!c->ctx) return; /* 2.28.9 finalizes only a non-NULL context */
    r = ((const ncclProfiler_v1_t *)table)->finalize(c->ctx);
    if (r != ncclSuccess) fail("finalize(%s) returned %d, expected ncclSuccess (0)", c->name, (int)r);
    c->ctx = NULL;
}

static void load(const char *path) {
    char sym[32];
    /* NCCL opens the plugin RTLD_NOW | RTLD_LOCAL (src/plugin/plugin_open.cc)
       and takes the newest struct it knows (src/plugin/profiler.cc). */
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "%s: dlopen %s: %s\n", prog, path, dlerror());
        exit(2);
    }
    snprintf(sym, sizeof sym, "ncclProfiler_v%d", version);
    table = dlsym(lib, sym);
    if (!table) {
        fprintf(stderr, "%s: %s has no %s\n", prog, path, sym);
        exit(2);
    }
    if (!((const ncclProfiler_v1_t *)table)->name) fail("%s.name is NULL", sym);
}

/* ------------------------------------------------------------------------ */
/* The job: one table                                                       */
/* ------------------------------------------------------------------------ */

enum { TP, PP, NCOMMS };
enum { UNPHASED, PREFILL, DECODE, NPHASES };
static const char *const phase_name[NPHASES] = {"unphased", "prefill", "decode"};

/* One row: REPS calls of FUNC on COMM in PHASE, issued at tick TICK of
   the job (a tick is 100 ms; a memory sample ends each), 12 ms apart.
   Each call's kernel runs on NCH channels for CH_NS[i] each (the call's
   GPU time is their max, as NCCL's Inspector takes it). RING: proxy
   operations to the ring's next rank (send) and previous rank (recv),
   STEPS steps of STEP_BYTES each way. JOINED: one ncclGroupStart/End
   with the row before. */
typedef struct {
    int tick, phase, comm;
    const char *func, *dtype;
    size_t count;
    int reps, nch;
    uint64_t ch_ns[2];
    int ring, steps;
    size_t step_bytes;
    int captured;    /* issued during a graph capture: API event only (v5+) */
    int api_only;    /* NCCL 2.29+ starts no Coll below its CollApi (v5+) */
    int min_version; /* played from this version on (0: all) */
    int joined;      /* 1: in one group with the row before */
} row_t;

/* Design note 3.7's job, per rank. */
static const row_t script[] = {
    /* prefill, tp: 3 all-reduces of 1 Mi bfloat16 over the ring */
    {.tick = 5, .phase = PREFILL, .comm = TP, .func = "AllReduce", .dtype = "ncclBfloat16", .count = 1048576,
     .reps = 3, .nch = 2, .ch_ns = {2000 * US, 1500 * US}, .ring = 1, .steps = 4, .step_bytes = 524288},
    /* decode, tp: 5 all-gathers of 4096 floats per rank */
    {.tick = 6, .phase = DECODE, .comm = TP, .func = "AllGather", .dtype = "ncclFloat32", .count = 4096,
     .reps = 5, .nch = 1, .ch_ns = {10 * US}},
    /* decode, tp: one all-to-all of 1024 int32 per peer (P2pApi events,
       v5+; earlier versions see its Send and Recv tasks) */
    {.tick = 7, .phase = DECODE, .comm = TP, .func = "AlltoAll", .dtype = "ncclInt32", .count = 1024,
     .reps = 1, .nch = 1, .ch_ns = {100 * US}},
    /* decode, pp: a send to and a receive from the partner, one group */
    {.tick = 8, .phase = DECODE, .comm = PP, .func = "Send", .dtype = "ncclFloat16", .count = 262144,
     .reps = 1, .nch = 1, .ch_ns = {1000 * US}},
    {.tick = 8, .phase = DECODE, .comm = PP, .func = "Recv", .dtype = "ncclFloat16", .count = 262144,
     .reps = 1, .nch = 1, .ch_ns = {1000 * US}, .joined = 1},
    /* decode, tp: an all-reduce made during a CUDA graph capture, never
       replayed: its API event only (v5+) */
    {.tick = 8, .phase = DECODE, .comm = TP, .func = "AllReduce", .dtype = "ncclBfloat16", .count = 1024,
     .reps = 1, .captured = 1, .min_version = 5},
    /* decode, tp: NCCL 2.29+ plays a Broadcast as AllGatherV with the
       task's activation mask 0 (NCCL_ALLGATHERV_ENABLE=1, the default)
       and a symmetric-kernel all-reduce without a Coll either: their
       CollApi events only, counted untimed (v5+) */
    {.tick = 9, .phase = DECODE, .comm = TP, .func = "Broadcast", .dtype = "ncclBfloat16", .count = 8192,
     .reps = 1, .api_only = 1, .min_version = 5},
    {.tick = 9, .phase = DECODE, .comm = TP, .func = "AllReduce", .dtype = "ncclBfloat16", .count = 4096,
     .reps = 2, .api_only = 1, .min_version = 5},
};
#define NROWS (sizeof script / sizeof script[0])
#define TICKS 12       /* samples per rank: Stormlog wants >= 6 and a spike short next to them */
#define TICK_NS (100 * MS)
#define SPIKE_TICK 5   /* the prefill all-reduces: 6 GiB outside memobs while they run */
#define CALL_GAP_NS (12 * MS)
#define NRANKS 4

/* Levels (MEMOBS_NCCL): what the plugin is asked to see. */
enum { L_OFF, L_API, L_COLL, L_PROXY, L_NET };
static int level = L_COLL;

static int parse_level(const char *s) {
    if (!s || !*s || !strcmp(s, "coll")) return L_COLL;
    if (!strcmp(s, "0") || !strcmp(s, "off")) return L_OFF;
    if (!strcmp(s, "api")) return L_API;
    if (!strcmp(s, "proxy")) return L_PROXY;
    if (!strcmp(s, "net")) return L_NET;
    die("MEMOBS_NCCL: not 0|off|api|coll|proxy|net");
    return L_OFF;
}

static comm_t comms[NCOMMS];

static void setup_comms(int rank) {
    comms[TP] = (comm_t){"tp", 0x7470000000000001ull, rank, 4, 1, NULL};
    comms[PP] = (comm_t){"pp", 0x7070000000000010ull + (uint64_t)(rank / 2), rank % 2, 2, 1, NULL};
}

/* The tp ring's neighbours of rank r. */
static int ring_next(int r) { return (r + 1) % NRANKS; }
static int ring_prev(int r) { return (r + NRANKS - 1) % NRANKS; }

/* ---- what memobs must show --------------------------------------------- */

/* Kind labels (memobs.h, "Collectives and peers"). */
static const char *kind_of(const char *func) {
    static const struct { const char *func, *kind; } k[] = {
        {"AllReduce", "all_reduce"}, {"AllGather", "all_gather"}, {"ReduceScatter", "reduce_scatter"},
        {"Broadcast", "broadcast"},  {"Reduce", "reduce"},         {"AlltoAll", "all_to_all"},
        {"Send", "send"},            {"Recv", "recv"}};
    size_t i;
    for (i = 0; i < sizeof k / sizeof k[0]; i++)
        if (!strcmp(func, k[i].func)) return k[i].kind;
    die("no kind for that func");
    return NULL;
}

/* nccl-tests' S multiplier and bus factor (design note 2), for n ranks. */
static uint64_t s_mult(const char *kind, int n) {
    if (n <= 0) return 1;
    return !strcmp(kind, "all_gather") || !strcmp(kind, "reduce_scatter") || !strcmp(kind, "all_to_all") ? (uint64_t)n
                                                                                                          : 1;
}
static double bus_factor(const char *kind, int n) {
    if (n <= 0) return 0; /* nranks unknown (v1-v3): no bus bandwidth */
    if (!strcmp(kind, "all_reduce")) return 2.0 * (n - 1) / n;
    if (!strcmp(kind, "all_gather") || !strcmp(kind, "reduce_scatter") || !strcmp(kind, "all_to_all"))
        return (double)(n - 1) / n;
    if (!strcmp(kind, "broadcast") || !strcmp(kind, "reduce") || !strcmp(kind, "send") || !strcmp(kind, "recv"))
        return 1;
    return 0;
}

typedef struct {
    int comm, phase;
    const char *kind;
    uint64_t ops, bytes, timed_ops, ns, algo_bytes, bus_bytes;
} cell_t;

typedef struct {
    int comm, rank, dir; /* dir 0 send, 1 recv */
    int phase;
    uint64_t bytes, ops;
} peer_cell_t;

typedef struct {
    const char *kind; /* slice "nccl <kind>" on comm's track */
    int comm, phase;
    uint64_t bytes, ns;
    int stormlog; /* a Stormlog event too: memobs writes at most one per comm and kind per 10 ms */
} slice_t;

static cell_t cells[32];
static int ncells;
static peer_cell_t peers[8];
static int npeers;
static slice_t slices[64];
static int nslices;
static int captured_calls;
static int phases_known = 1; /* the plugin's memobs sees the program's phase */

static cell_t *cell(int comm, const char *kind, int phase) {
    int i;
    for (i = 0; i < ncells; i++)
        if (cells[i].comm == comm && cells[i].phase == phase && !strcmp(cells[i].kind, kind)) return &cells[i];
    if (ncells == (int)(sizeof cells / sizeof cells[0])) die("cells: table full");
    cells[ncells] = (cell_t){comm, phase, kind, 0, 0, 0, 0, 0, 0};
    return &cells[ncells++];
}

static void peer_add(int comm, int rank, int dir, int phase, uint64_t bytes) {
    int i;
    for (i = 0; i < npeers; i++)
        if (peers[i].comm == comm && peers[i].rank == rank && peers[i].dir == dir && peers[i].phase == phase) break;
    if (i == npeers && npeers == (int)(sizeof peers / sizeof peers[0])) die("peers: table full");
    if (i == npeers) peers[npeers++] = (peer_cell_t){comm, rank, dir, phase, 0, 0};
    peers[i].bytes += bytes;
    peers[i].ops += 1;
}

/* The nranks memobs knows of comm: v1-v3 init carries none. */
static int known_nranks(int comm) { return version >= 4 ? comms[comm].nranks : 0; }

/* When a task is stopped (NCCL: enqueued) against its children: 0
   before they start (the proxy thread runs late, the common case), 1
   after. IX: the task's place in its call (AlltoAll: its Send/Recv
   index; a group: its row's). Calls alternate. */
static int task_order(int call, int ix) { return (call + ix) % 2; }

/* The time memobs gives an operation of this row: GPU time from kernel
   channels (v3+: CPU stamps in v3, pTimer after), or in v1-v2 at proxy
   level the span of its proxy operations. Children that start after
   their task's stop count (v4+: the collective waits for its nChannels
   kernel channels; v1-v3 give no count and the plugin waits 100 ms for
   them, nccl/memobs_nccl_plugin.c: the driver's come at once). */
static uint64_t op_ns(const row_t *w) {
    uint64_t ns = w->ch_ns[0] > w->ch_ns[1] ? w->ch_ns[0] : w->ch_ns[1];
    if (level < L_COLL) return 0;
    if (version >= 3) return ns;
    return level >= L_PROXY && w->ring ? ns : 0;
}

/* One operation as memobs counts it. */
static void expect_op(int comm, const char *kind, int phase, uint64_t bytes, uint64_t ns, int stormlog) {
    int n = known_nranks(comm);
    cell_t *c = cell(comm, kind, phases_known ? phase : UNPHASED);
    uint64_t s = bytes * s_mult(kind, n);
    c->ops++;
    c->bytes += bytes;
    if (ns) {
        c->timed_ops++;
        c->ns += ns;
        c->algo_bytes += s;
        c->bus_bytes += (uint64_t)((double)s * bus_factor(kind, n) + 0.5); /* exact for this job's sizes */
    }
    if (nslices < (int)(sizeof slices / sizeof slices[0]))
        slices[nslices++] = (slice_t){kind, comm, phases_known ? phase : UNPHASED, bytes, ns, stormlog};
}

static void expect_row(const row_t *w, int rank) {
    uint64_t bytes = w->count * dtype_size(w->dtype);
    int call, j;
    if (version < w->min_version) return;
    for (call = 0; call < w->reps; call++) {
        if (w->captured) {
            captured_calls++;
            continue;
        }
        if (!strcmp(w->func, "AlltoAll")) {
            uint64_t ns = 0;
            /* a Send and a Recv task per rank, self included, Send first */
            for (j = 0; j < 2 * comms[w->comm].nranks; j++) {
                uint64_t t = op_ns(w);
                /* v1-v4: the tasks themselves, all within 1 ms: one
                   Stormlog event for the sends, one for the receives */
                if (version < 5) expect_op(w->comm, j % 2 ? "recv" : "send", w->phase, bytes, t, j < 2);
                if (t > ns) ns = t;
            }
            /* v5+: one all_to_all, its longest task */
            if (version >= 5) expect_op(w->comm, "all_to_all", w->phase, bytes, ns, 1);
            continue;
        }
        if (w->api_only) { /* counted from the CollApi alone: untimed */
            expect_op(w->comm, kind_of(w->func), w->phase, bytes, 0, 1);
            continue;
        }
        expect_op(w->comm, kind_of(w->func), w->phase, bytes, op_ns(w), 1); /* calls are 12 ms apart */
        if (w->ring && level >= L_PROXY) {
            int ph = phases_known ? w->phase : UNPHASED;
            for (j = 0; j < w->steps; j++) {
                peer_add(w->comm, ring_next(rank), 0, ph, w->step_bytes);
                peer_add(w->comm, ring_prev(rank), 1, ph, w->step_bytes);
            }
        }
    }
}

static void write_expect(const char *path, int rank) {
    FILE *f = fopen(path, "w");
    int i, c;
    if (!f) die("cannot write NCCL_DRIVER_EXPECT");
    fprintf(f, "{\"version\": %d, \"rank\": %d, \"captured_calls\": %d,\n \"comms\": [", version, rank,
            captured_calls);
    for (c = 0; c < NCOMMS; c++) {
        int first = 1;
        fprintf(f, "%s\n  {\"name\": \"%s\", \"id\": %" PRIu64 ", \"rank\": %d, \"nranks\": %d, \"nnodes\": %d, "
                   "\"kinds\": [",
                c ? "," : "", comms[c].name, comms[c].id, comms[c].rank, known_nranks(c), version >= 4 ? 1 : 0);
        for (i = 0; i < ncells; i++) {
            const cell_t *x = &cells[i];
            if (x->comm != c) continue;
            fprintf(f, "%s\n   {\"kind\": \"%s\", \"phase\": \"%s\", \"ops\": %" PRIu64 ", \"bytes\": %" PRIu64
                       ", \"timed_ops\": %" PRIu64 ", \"ns\": %" PRIu64 ", \"algo_bytes\": %" PRIu64
                       ", \"bus_bytes\": %" PRIu64 ", \"bus_factor\": %s}",
                    first ? "" : ",", x->kind, phase_name[x->phase], x->ops, x->bytes, x->timed_ops, x->ns,
                    x->algo_bytes, x->bus_bytes, bus_factor(x->kind, known_nranks(c)) > 0 ? "true" : "false");
            first = 0;
        }
        fprintf(f, "]}");
    }
    fprintf(f, "],\n \"peers\": [");
    for (i = 0; i < npeers; i++)
        fprintf(f, "%s\n  {\"comm\": \"%s\", \"rank\": %d, \"dir\": \"%s\", \"phase\": \"%s\", \"bytes\": %" PRIu64
                   ", \"ops\": %" PRIu64 "}",
                i ? "," : "", comms[peers[i].comm].name, peers[i].rank, peers[i].dir ? "recv" : "send",
                phase_name[peers[i].phase], peers[i].bytes, peers[i].ops);
    fprintf(f, "],\n \"slices\": [");
    for (i = 0; i < nslices; i++)
        fprintf(f,
                "%s\n  {\"name\": \"nccl %s\", \"comm\": \"%s\", \"track\": \"nccl %s r%d\", \"phase\": \"%s\", "
                "\"bytes\": %" PRIu64 ", \"ns\": %" PRIu64 ", \"stormlog\": %s}",
                i ? "," : "", slices[i].kind, comms[slices[i].comm].name, comms[slices[i].comm].name,
                comms[slices[i].comm].rank, phase_name[slices[i].phase], slices[i].bytes, slices[i].ns,
                slices[i].stormlog ? "true" : "false");
    fprintf(f, "]}\n");
    if (fclose(f) != 0) die("cannot write NCCL_DRIVER_EXPECT");
}

/* ---- the events played --------------------------------------------------- */

static pid_t my_pid;
static uint64_t seqs[NCOMMS][8]; /* per comm and func (ncclFunc_t), as NCCL counts */

/* The phase the program is in: memobs' own in DRIVER_HOST, else the
   preload's (memobs_set_phase, exported by libmemobs_preload.so) when
   there is one. */
static int (*set_phase_fn)(int);
static void set_phase(int phase) {
#ifdef DRIVER_HOST
    memobs_set_phase((memobs_phase_t)phase);
#else
    if (set_phase_fn) set_phase_fn(phase);
#endif
}

/* Children of one task: its kernel channels and its proxy operations
   (with their steps), started now and stopped at now + their duration in
   increasing order, the clock moving to each stop (so CPU-stamped
   channels in v3 and proxy spans in v1-v2 last exactly that). */
typedef struct {
    void *h;
    uint64_t end_ns;
    int is_kernel;
    uint64_t gpu_start;
} child_t;

static void proxy_steps(void *op, int is_send, int steps, size_t bytes) {
    int s;
    for (s = 0; s < steps; s++) {
        ev_t e;
        void *h;
        memset(&e, 0, sizeof e);
        e.type = ncclProfileProxyStep;
        e.parent = op;
        e.step = s;
        h = start(comms[TP].ctx, &e);
        if (version <= 3) {
            /* v1-v3: NCCL 2.23-2.26 gave the bytes in ProxyOp states
               (src/transport/net.cc); step states carry no arguments */
            state(h, is_send ? ncclProfilerProxyStepSendGPUWait : ncclProfilerProxyStepRecvWait, 0, 0);
            state(h, is_send ? ncclProfilerProxyStepSendWait : ncclProfilerProxyStepRecvFlushWait, 0, 0);
            state(op, is_send ? ncclProfilerProxyOpSendTransmitted : ncclProfilerProxyOpRecvReceived,
                  bytes * (size_t)(s + 1), 0); /* the op's running total */
        } else if (is_send) {
            /* transSize rides on every step state (2.28.9 profiler.cc);
               only SendWait's is the step's size sent (net.cc) */
            state(h, ncclProfilerProxyStepSendGPUWait, bytes, 0);
            state(h, ncclProfilerProxyStepSendPeerWait_v4, bytes, 0);
            state(h, ncclProfilerProxyStepSendWait, bytes, 0);
        } else {
            state(h, ncclProfilerProxyStepRecvWait, bytes, 0);
            state(h, ncclProfilerProxyStepRecvFlushWait, bytes, 0); /* received */
            state(h, ncclProfilerProxyStepRecvGPUWait, bytes, 0);
        }
        if (h) stop(h);
    }
}

/* Plays one task (Coll or P2p) under parent, with its children. gpu0:
   the GPU time its kernel starts (the tasks of one call share it: one
   kernel); the host clock runs on from now. order 0: the task is stopped
   (enqueued) before its children start, as when the proxy thread runs
   late; 1: after they start. */
static void play_task(const row_t *w, int comm, const char *func, int peer, void *parent, void *group, int rank,
                      uint64_t gpu0, int order) {
    ev_t e;
    void *task;
    child_t ch[4];
    int nch = 0, i, j;
    uint64_t t0 = fake_ns;
    uint64_t dur = w->ch_ns[0] > w->ch_ns[1] ? w->ch_ns[0] : w->ch_ns[1];
    int is_coll = strcmp(func, "Send") && strcmp(func, "Recv");

    memset(&e, 0, sizeof e);
    e.type = is_coll ? ncclProfileColl : ncclProfileP2p;
    e.parent = parent;
    e.group = group;
    e.rank = comms[comm].rank;
    e.func = func;
    e.dtype = w->dtype;
    e.count = w->count;
    e.peer = peer;
    e.seq = seqs[comm][func_num(func)]++;
    e.nchannels = w->nch;
    e.comm_name = comms[comm].name;
    e.comm_hash = comms[comm].id;
    task = start(comms[comm].ctx, &e);
    if (order == 0 && task) stop(task);
    if (task) {
        /* kernel channels (v3+) */
        for (i = 0; version >= 3 && i < w->nch; i++) {
            memset(&e, 0, sizeof e);
            e.type = ncclProfileKernelCh;
            e.parent = task;
            e.rank = comms[comm].rank;
            e.channel = i;
            e.ptimer = GPU_BASE + gpu0;
            ch[nch] = (child_t){start(comms[comm].ctx, &e), t0 + w->ch_ns[i], 1, GPU_BASE + gpu0};
            nch++;
        }
        /* proxy operations to the ring's neighbours, the span of the
           call's kernel */
        for (j = 0; w->ring && j < 2; j++) {
            memset(&e, 0, sizeof e);
            e.type = ncclProfileProxyOp;
            e.parent = task;
            e.rank = comms[comm].rank;
            e.pid = my_pid;
            e.channel = 0;
            e.peer = j == 0 ? ring_next(rank) : ring_prev(rank);
            e.nsteps = w->steps;
            e.chunk = (int)w->step_bytes;
            e.is_send = j == 0;
            ch[nch] = (child_t){start(comms[comm].ctx, &e), t0 + dur, 0, 0};
            if (ch[nch].h) {
                if (version >= 4) state(ch[nch].h, ncclProfilerProxyOpInProgress_v4, 0, 0);
                proxy_steps(ch[nch].h, j == 0, w->steps, w->step_bytes);
            }
            nch++;
        }
    }
    if (order == 1 && task) stop(task);
    /* stop the children in the order they end */
    for (i = 0; i < nch; i++) {
        int k, best = -1;
        for (k = 0; k < nch; k++)
            if (ch[k].h && (best < 0 || ch[k].end_ns < ch[best].end_ns)) best = k;
        if (best < 0) break;
        clock_to(ch[best].end_ns);
        if (ch[best].is_kernel && version >= 4) /* KernelChStop: v4+ */
            state(ch[best].h, ncclProfilerKernelChStop, 0, ch[best].gpu_start + (ch[best].end_ns - t0));
        stop(ch[best].h);
        ch[best].h = NULL;
    }
}

static void *start_api(int comm, uint64_t type, void *parent, const char *func, const row_t *w) {
    ev_t e;
    memset(&e, 0, sizeof e);
    e.type = type;
    e.parent = parent;
    e.rank = comms[comm].rank;
    e.func = func;
    e.dtype = w ? w->dtype : NULL;
    e.count = w ? w->count : 0;
    e.captured = w ? w->captured : 0;
    return start(comms[comm].ctx, &e);
}

/* One call of row w (all rows of a group when w is the group's first). */
static void play_call(const row_t *w, int nrows, int rank, int call) {
    int comm = w->comm, i, j;
    uint64_t t0 = fake_ns;
    void *group;
    if (version >= 5) {
        /* ncclGroupStart/End: GroupApi, its two states, then each call's
           API event and task (NCCL 2.28.9 src/plugin/profiler.cc) */
        group = start_api(comm, ncclProfileGroupApi, NULL, NULL, w);
        state(group, ncclProfilerGroupStartApiStop, 0, 0);
        for (i = 0; i < nrows; i++) {
            const row_t *x = &w[i];
            if (!strcmp(x->func, "AlltoAll")) {
                /* split into a Send and a Recv per rank, each its own
                   P2pApi("AlltoAll") event (enqueue.cc) */
                for (j = 0; j < 2 * comms[comm].nranks; j++) {
                    void *api = start_api(comm, ncclProfileP2pApi, group, x->func, x);
                    play_task(x, comm, j % 2 ? "Recv" : "Send", j / 2, api, group, rank, t0, task_order(0, j));
                    if (api) stop(api);
                }
            } else if (!strcmp(x->func, "Send") || !strcmp(x->func, "Recv")) {
                void *api = start_api(comm, ncclProfileP2pApi, group, x->func, x);
                play_task(x, comm, x->func, 1 - comms[comm].rank, api, group, rank, t0, task_order(call, i));
                if (api) stop(api);
            } else {
                void *api = start_api(comm, ncclProfileCollApi, group, x->func, x);
                if (!x->captured && !x->api_only)
                    play_task(x, comm, x->func, -1, api, group, rank, t0, task_order(call, i));
                if (api) stop(api);
            }
        }
        state(group, ncclProfilerGroupEndApiStart, 0, 0);
        if (group) stop(group);
        return;
    }
    /* v1-v4: a Group event is the tasks' parent */
    group = start_api(comm, ncclProfileGroup, NULL, NULL, NULL);
    for (i = 0; i < nrows; i++) {
        const row_t *x = &w[i];
        if (!strcmp(x->func, "AlltoAll")) {
            for (j = 0; j < 2 * comms[comm].nranks; j++)
                play_task(x, comm, j % 2 ? "Recv" : "Send", j / 2, group, NULL, rank, t0, task_order(0, j));
        } else {
            play_task(x, comm, x->func, !strcmp(x->func, "Send") || !strcmp(x->func, "Recv") ? 1 - comms[comm].rank : -1,
                      group, NULL, rank, t0, task_order(call, i));
        }
    }
    if (group) stop(group);
}

/* ---- the scenario -------------------------------------------------------- */

#ifdef DRIVER_HOST
#define GIB ((size_t)1 << 30)
static void *weights;
static void host_setup(void) {
    int e;
    cudadbl_set_total(0, 80 * GIB);
    cudadbl_set_outside(0, GIB);
    if ((e = memobs_cudaMalloc(&weights, 2 * GIB)) != 0) die("weights: cudaMalloc failed");
}
static void host_sample(void) {
    if (memobs_sample_now() != MEMOBS_OK) fail("memobs_sample_now failed");
}
static void host_outside(size_t bytes) { cudadbl_set_outside(0, bytes); }
#endif

static int run_scenario(int rank) {
    int tick, i, mask = -1, call;
    size_t r;
    const char *exp = getenv("NCCL_DRIVER_EXPECT");
    uint64_t base;

    __atomic_store_n(&fake_on, 1, __ATOMIC_RELEASE);
    fake_ns += (uint64_t)rank * 3 * MS; /* the ranks start 3 ms apart */
    base = fake_ns;
#ifdef DRIVER_HOST
    host_setup();
    /* MEMOBS_NCCL_ATTACH=0: the plugin's own memobs never sees our phase */
    phases_known = !(getenv("MEMOBS_NCCL_ATTACH") && !strcmp(getenv("MEMOBS_NCCL_ATTACH"), "0"));
#else
    phases_known = set_phase_fn != NULL;
#endif
    for (i = 0; i < NCOMMS; i++) {
        int m = -1;
        ncclResult_t res = init(&comms[i], &m);
        if (res != ncclSuccess) fail("init(%s) returned %d, expected ncclSuccess (0)", comms[i].name, (int)res);
        if (i && m != mask) fail("init(%s) wrote mask %#x, the first init %#x: expected the same", comms[i].name, m, mask);
        mask = m;
    }
    if (mask == 0) fail("init wrote mask 0 at level %d", level);
    for (r = 0; r < NROWS; r++) expect_row(&script[r], rank);
    if (exp) write_expect(exp, rank);

    for (tick = 0; tick < TICKS; tick++) {
        uint64_t t = base + (uint64_t)tick * TICK_NS + 10 * MS;
#ifdef DRIVER_HOST
        if (tick == SPIKE_TICK) host_outside(7 * GIB); /* the all-reduces' 6 GiB of buffers */
#endif
        for (r = 0; r < NROWS; r++) {
            const row_t *w = &script[r];
            size_t n = 1;
            if (w->tick != tick || version < w->min_version || w->joined) continue;
            while (r + n < NROWS && script[r + n].joined) n++; /* its group */
            set_phase(w->phase);
            for (call = 0; call < w->reps; call++) {
                clock_to(t);
                play_call(w, (int)n, rank, call);
                t += CALL_GAP_NS; /* >= 10 ms: every call its own Stormlog event */
            }
        }
        clock_to(base + (uint64_t)(tick + 1) * TICK_NS);
#ifdef DRIVER_HOST
        host_sample();
        if (tick == SPIKE_TICK) host_outside(GIB);
#endif
    }
    for (i = 0; i < NCOMMS; i++) finalize(&comms[i]);
#ifdef DRIVER_HOST
    {
        const char *text = getenv("NCCL_DRIVER_TEXT");
        if (text && memobs_write_summary_file(text, MEMOBS_FORMAT_TEXT) != MEMOBS_OK) fail("text summary not written");
        if (memobs_cudaFree(weights) != 0) fail("cudaFree(weights) failed");
    }
#endif
    return failures ? 1 : 0;
}

/* ---- user and proxy threads at once -------------------------------------- */

#define THREAD_OPS 10000
#define THREAD_COUNT 256 /* bfloat16 per all-reduce: 512 bytes */
#define QCAP 64

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void *q[QCAP];
    unsigned head, tail;
    int done;
} pq = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, 0, 0};

/* The proxy progress thread: each collective's kernel channel and its
   send to the ring's next rank (NCCL README: ProxyOp, ProxyStep and
   KernelCh come from the proxy thread). */
static void *proxy_main(void *arg) {
    int rank = *(int *)arg;
    for (;;) {
        void *task, *kc;
        ev_t e;
        int dir;
        pthread_mutex_lock(&pq.mu);
        while (pq.head == pq.tail && !pq.done) pthread_cond_wait(&pq.cv, &pq.mu);
        if (pq.head == pq.tail) {
            pthread_mutex_unlock(&pq.mu);
            return NULL;
        }
        task = pq.q[pq.head++ % QCAP];
        pthread_cond_broadcast(&pq.cv);
        pthread_mutex_unlock(&pq.mu);

        memset(&e, 0, sizeof e);
        e.type = ncclProfileKernelCh;
        e.parent = task;
        e.ptimer = GPU_BASE;
        kc = start(comms[TP].ctx, &e);
        for (dir = 0; dir < 2; dir++) {
            void *op;
            memset(&e, 0, sizeof e);
            e.type = ncclProfileProxyOp;
            e.parent = task;
            e.pid = my_pid;
            e.peer = dir ? ring_prev(rank) : ring_next(rank);
            e.nsteps = 1;
            e.chunk = THREAD_COUNT * 2;
            e.is_send = !dir;
            op = start(comms[TP].ctx, &e);
            if (op) {
                proxy_steps(op, !dir, 1, THREAD_COUNT * 2);
                stop(op);
            }
        }
        if (kc) {
            state(kc, ncclProfilerKernelChStop, 0, GPU_BASE + 1000);
            stop(kc);
        }
    }
}

static int run_threads(int rank) {
    pthread_t th;
    int i, mask = 0;
    row_t w = {.phase = DECODE, .comm = TP, .func = "AllReduce", .dtype = "ncclBfloat16", .count = THREAD_COUNT,
               .reps = THREAD_OPS, .nch = 1, .ch_ns = {1000}, .ring = 1, .steps = 1, .step_bytes = THREAD_COUNT * 2};
    const char *exp = getenv("NCCL_DRIVER_EXPECT");
    if (version < 5) die("threads: played with v5 or v6");
    for (i = 0; i < NCOMMS; i++)
        if (init(&comms[i], &mask) != ncclSuccess) fail("init(%s) failed", comms[i].name);
    phases_known = 0;
    expect_row(&w, rank);
    nslices = 0; /* not kept: 10,000 */
    if (exp) write_expect(exp, rank);
    if (pthread_create(&th, NULL, proxy_main, &rank) != 0) die("pthread_create");
    for (i = 0; i < THREAD_OPS; i++) {
        void *g = start_api(TP, ncclProfileGroupApi, NULL, NULL, &w);
        void *api = start_api(TP, ncclProfileCollApi, g, w.func, &w);
        ev_t e;
        void *task;
        memset(&e, 0, sizeof e);
        e.type = ncclProfileColl;
        e.parent = api;
        e.group = g;
        e.func = w.func;
        e.dtype = w.dtype;
        e.count = w.count;
        e.seq = (uint64_t)i;
        e.nchannels = 1;
        task = start(comms[TP].ctx, &e);
        if (task) {
            pthread_mutex_lock(&pq.mu);
            while (pq.tail - pq.head == QCAP) pthread_cond_wait(&pq.cv, &pq.mu);
            pq.q[pq.tail++ % QCAP] = task;
            pthread_cond_broadcast(&pq.cv);
            pthread_mutex_unlock(&pq.mu);
            stop(task); /* enqueued: races with the proxy thread's children */
        } else {
            fail("collective %d got no handle (pool of %s)", i, getenv("MEMOBS_NCCL_EVENTS") ? "set" : "default");
        }
        if (api) stop(api);
        if (g) stop(g);
    }
    pthread_mutex_lock(&pq.mu);
    pq.done = 1;
    pthread_cond_broadcast(&pq.cv);
    pthread_mutex_unlock(&pq.mu);
    pthread_join(th, NULL);
    for (i = 0; i < NCOMMS; i++) finalize(&comms[i]);
    return failures ? 1 : 0;
}

/* ---- pool full ------------------------------------------------------------ */

#define POOL_INFLIGHT 64

static void *pool_coll(int i) {
    ev_t e;
    memset(&e, 0, sizeof e);
    e.type = ncclProfileColl;
    e.rank = comms[TP].rank;
    e.func = "AllGather";
    e.dtype = "ncclFloat32";
    e.count = 4096;
    e.seq = (uint64_t)i;
    e.nchannels = 1;
    return start(comms[TP].ctx, &e);
}

/* Returns 1 if the kernel channel got a handle. */
static int pool_kernel(void *task) {
    ev_t e;
    void *kc;
    memset(&e, 0, sizeof e);
    e.type = ncclProfileKernelCh;
    e.parent = task;
    e.ptimer = GPU_BASE;
    kc = start(comms[TP].ctx, &e);
    if (!kc) return 0;
    state(kc, ncclProfilerKernelChStop, 0, GPU_BASE + 10 * US);
    stop(kc);
    return 1;
}

/* v4, MEMOBS_NCCL_EVENTS=8: 64 all-gathers enqueued before any kernel
   runs (NCCL stops a Coll when it is enqueued; its kernel channels come
   later from the proxy thread). Collectives and kernel channels take a
   slot each: 8 collectives get one, 56 do not (counted at once,
   untimed), and the kernel channels of the 8 find the pool full too, so
   those 8 end untimed. Then the pool must be whole again: one more
   all-gather and its channel get slots and are timed. Expected: ops 65,
   timed 1, events_dropped 64. */
static int run_pool(int rank) {
    void *task[POOL_INFLIGHT];
    int i, mask = 0, got = 0, kernels = 0, last = 0;
    (void)rank;
    for (i = 0; i < NCOMMS; i++)
        if (init(&comms[i], &mask) != ncclSuccess) fail("init(%s) failed", comms[i].name);
    for (i = 0; i < POOL_INFLIGHT; i++) {
        task[i] = pool_coll(i); /* must return at once, full or not */
        got += task[i] != NULL;
    }
    for (i = 0; i < POOL_INFLIGHT; i++)
        if (task[i]) stop(task[i]);
    for (i = 0; i < POOL_INFLIGHT; i++)
        if (task[i]) kernels += pool_kernel(task[i]);
    task[0] = pool_coll(POOL_INFLIGHT);
    if (task[0]) {
        stop(task[0]);
        last = 1 + pool_kernel(task[0]);
    }
    printf("in flight: %d handles of %d, %d kernel channels; then: %s\n", got, POOL_INFLIGHT, kernels,
           last == 2 ? "collective and channel" : last ? "collective only" : "nothing");
    for (i = 0; i < NCOMMS; i++) finalize(&comms[i]);
    return failures ? 1 : 0;
}

/* ---- refusal ---------------------------------------------------------------- */

static int run_refuse(void) {
    int i, mask = -1;
    for (i = 0; i < NCOMMS; i++) {
        ncclResult_t r = init(&comms[i], &mask);
        /* refused with ncclSuccess and an empty context: an error would
           make NCCL drop the plugin for every communicator */
        if (r != ncclSuccess) fail("init(%s) returned %d, expected ncclSuccess (refused: NULL context)", comms[i].name, (int)r);
        if (mask != 0) fail("init(%s) wrote mask %#x, expected 0", comms[i].name, mask);
        if (comms[i].ctx) fail("init(%s) set context %p, expected NULL", comms[i].name, comms[i].ctx);
    }
    /* 2.28.9 keeps the plugin after a failed init and may still call
       startEvent with the NULL context (src/plugin/profiler.cc), as when
       another comm's init set the process-wide mask again */
    act_mask = -1;
    for (i = 0; i < 4; i++) {
        static const uint64_t types[] = {ncclProfileColl, ncclProfileP2p, ncclProfileProxyOp, ncclProfileKernelCh};
        ev_t e;
        void *h;
        memset(&e, 0, sizeof e);
        if (types[i] == ncclProfileKernelCh && version < 3) continue;
        e.type = types[i];
        e.func = "AllReduce";
        e.dtype = "ncclFloat32";
        e.count = 1;
        e.comm_name = "tp";
        e.pid = my_pid;
        h = start(NULL, &e);
        if (h) fail("startEvent with a NULL context gave handle %p, expected NULL", h);
    }
    for (i = 0; i < NCOMMS; i++) finalize(&comms[i]);
    printf("refused\n");
    return failures ? 1 : 0;
}

/* ---- bad and double stops ---------------------------------------------------- */

static int run_badstop(int rank) {
    int i, mask = 0;
    void *task;
    ev_t e;
    uintptr_t forged;
    (void)rank;
    for (i = 0; i < NCOMMS; i++)
        if (init(&comms[i], &mask) != ncclSuccess) fail("init(%s) failed", comms[i].name);
    memset(&e, 0, sizeof e);
    e.type = ncclProfileColl;
    e.rank = comms[TP].rank;
    e.func = "AllReduce";
    e.dtype = "ncclFloat32";
    e.count = 1024;
    e.nchannels = 0; /* no kernel channel to wait for: done at its stop */
    e.comm_name = comms[TP].name;
    e.comm_hash = comms[TP].id;
    task = start(comms[TP].ctx, &e);
    if (!task) fail("no handle for a collective");
    stop(task);
    stop(task); /* a second stop of the same handle */
    forged = (uintptr_t)task ^ (uintptr_t)0x40; /* another slot's address */
    stop((void *)forged);
    state(task, ncclProfilerKernelChStop, 0, 1); /* a state on a stopped handle */
    for (i = 0; i < NCOMMS; i++) finalize(&comms[i]);
    printf("badstop done\n");
    return failures ? 1 : 0;
}

/* ---- PXN: a proxy of another process --------------------------------------- */

/* The parentObj of another process's proxy is an address there: here it
   must never be read. It points into a page with no access (reading it
   faults, sanitizer or not) or at a small address never mapped. */
static int run_pxn(int rank) {
    int i, mask = 0, s;
    void *task;
    ev_t e;
    void *poison = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    (void)rank;
    if (poison == MAP_FAILED) die("mmap");
    for (i = 0; i < NCOMMS; i++)
        if (init(&comms[i], &mask) != ncclSuccess) fail("init(%s) failed", comms[i].name);
    memset(&e, 0, sizeof e);
    e.type = ncclProfileColl;
    e.rank = comms[TP].rank;
    e.func = "AllReduce";
    e.dtype = "ncclBfloat16";
    e.count = 1048576;
    e.nchannels = 1;
    e.comm_name = comms[TP].name;
    e.comm_hash = comms[TP].id;
    task = start(comms[TP].ctx, &e);
    if (task) stop(task);
    for (s = 0; s < 2; s++) {
        void *op;
        /* PXN: the proxy of rank (r+1)%4's process starts the op: its pid,
           its parent pointer (NCCL README "PXN") */
        memset(&e, 0, sizeof e);
        e.type = ncclProfileProxyOp;
        e.parent = s ? (void *)(uintptr_t)0x10 : (char *)poison + 64;
        e.pid = my_pid + 100000 + s;
        e.peer = 1;
        e.nsteps = 2;
        e.chunk = 4096;
        e.is_send = 1;
        op = start(comms[TP].ctx, &e);
        if (op) {
            if (version >= 4) state(op, ncclProfilerProxyOpInProgress_v4, 0, 0);
            proxy_steps(op, 1, 2, 4096);
            stop(op);
        }
    }
    for (i = 0; i < NCOMMS; i++) finalize(&comms[i]);
    printf("pxn done\n");
    return failures ? 1 : 0;
}

#ifdef DRIVER_LIB
/* Built as a library (-DDRIVER_LIB -shared) for a Python process to call
   through ctypes, after `import memobs`: the plugin finds the package's
   memobs_host_api among the loaded objects (instance "python"). */
__attribute__((visibility("default"))) int nccl_driver_main(int argc, char **argv);
#define main nccl_driver_main
#endif

int main(int argc, char **argv) {
    int rank;
    const char *mode;
    if (argc < 4) {
        fprintf(stderr, "usage: %s PLUGIN VERSION scenario|threads|pool|refuse|badstop|pxn [RANK]\n", prog);
        return 2;
    }
    version = atoi(argv[2]);
    if (version < 1 || version > 6) die("VERSION: 1..6");
    mode = argv[3];
    rank = argc > 4 ? atoi(argv[4]) : 0;
    if (rank < 0 || rank >= NRANKS) die("RANK: 0..3");
    level = parse_level(getenv("MEMOBS_NCCL"));
    my_pid = getpid();
    *(void **)&set_phase_fn = dlsym(RTLD_DEFAULT, "memobs_set_phase");
    setup_comms(rank);
    load(argv[1]);
    if (!strcmp(mode, "scenario")) return run_scenario(rank);
    __atomic_store_n(&fake_on, 0, __ATOMIC_RELEASE); /* the real clock from here */
    if (!strcmp(mode, "threads")) return run_threads(rank);
    if (!strcmp(mode, "pool")) return run_pool(rank);
    if (!strcmp(mode, "refuse")) return run_refuse();
    if (!strcmp(mode, "badstop")) return run_badstop(rank);
    if (!strcmp(mode, "pxn")) return run_pxn(rank);
    die("unknown MODE");
    return 2;
}
