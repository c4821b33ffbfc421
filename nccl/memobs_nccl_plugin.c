/* nccl/memobs_nccl_plugin.c - libnccl-profiler-memobs.so, memobs as an NCCL
   profiler plugin: collectives (ops, bytes, GPU time, algbw/busbw) and bytes
   per peer rank, recorded into the process's memobs.

   Use: NCCL_PROFILER_PLUGIN=memobs (NCCL 2.26+; older: the file name or a
   path) with build/libnccl-profiler-memobs.so on the library path. Built
   by `make nccl-plugin`. docs/collectives.md is the user's story; this
   block is the plugin's contract, the one tests/nccl/nccl_driver.c checks.

   EXPORTS: only the data objects ncclProfiler_v1 ... ncclProfiler_v6 (name
   "memobs"); NCCL takes the newest it knows. Every function returns
   ncclSuccess (a refused init too; NULL context or mask pointer:
   ncclInvalidArgument).

   ENVIRONMENT (read at the first init)
     MEMOBS_NCCL=off|0|api|coll|proxy|net   level, default coll. Anything
                      else: one warning, coll.
     MEMOBS_NCCL_EVENTS=N   event pool slots (1 .. 1048576), default 4096.
     MEMOBS_NCCL_ATTACH=0|1 0: always record into the plugin's own memobs.

   LEVEL -> ACTIVATION MASK written by every init (NCCL 2.28 keeps one mask
   for the whole process: each init writes the same value)
     level   v5, v6                          v3, v4              v1, v2
     off     0 (init refused)                0                   0
     api     CollApi|P2pApi                  Coll|P2p            Coll|P2p
     coll    CollApi|P2pApi|Coll|P2p|KernelCh Coll|P2p|KernelCh  Coll|P2p
     proxy   coll + ProxyOp|ProxyStep        same                same
     net     proxy + ProxyCtrl|NetPlugin     same                proxy + ProxyCtrl
   Refusal (MEMOBS_NCCL=off/0, or memobs disabled or paused when that init
   runs): *context = NULL, returns ncclSuccess (on an init error NCCL
   2.23-2.27 drop the plugin for the process; 2.28+ take a reference off
   it then and again when that comm is destroyed, which can unload it
   under the other comms). *eActivationMask = 0 only while no accepted init
   wrote a mask; after one it is left as it is (NCCL keeps one mask for
   the process: a refused comm must not turn the others off). Calls with
   a NULL context return ncclSuccess and a NULL handle.

   BAD CALLS: startEvent whose context is not one an init returned and
   that was not finalized since (each entry counts its inits and
   finalizes; the context is compared with the plugin's own entries,
   never read), stopEvent of a handle outside the pool or stale,
   recordEventState of a handle outside the pool (a stale one of the
   pool: ignored), finalize of a dead or foreign context, and every call
   before the first init set the plugin up (or when MEMOBS_NCCL=off left
   it without a memobs): ncclSuccess, no handle, nothing read, BAD_EVENTS
   +1. Those before the first accepted init are added to BAD_EVENTS at
   that init; with MEMOBS_NCCL=off they are counted nowhere.

   IDENTITY: at the first init the plugin picks the memobs it records into:
   MEMOBS_NCCL_ATTACH=0 -> its own; else memobs_host_api() found with
   dlsym(RTLD_DEFAULT) (the LD_PRELOAD library, a program built with
   MEMOBS_EXPORT_HOST that exports it); else in any loaded object
   (dl_iterate_phdr + dlopen(RTLD_NOLOAD): the Python package's private
   memobs); a table whose abi_key or size differs is refused with one
   warning naming both keys; else its own instance ("own", reads MEMOBS_*
   and writes its outputs at exit, as a second instance). The plugin then
   pins itself (RTLD_NODELETE). memobs_coll_set_source("nccl-profiler",
   instance, level, api version) at every successful init.

   COMMUNICATORS: v4+ init registers (commName, commHash/commId, rank,
   nranks, nNodes); v1-v3 have none at init: the comm is registered at its
   first Coll/P2p from the descriptor's name and commHash (rank from the
   descriptor, nranks and nnodes 0 = unknown: no busbw). At most 64 per
   process; beyond, "(other)".

   WHAT IS RECORDED
     level api: v5+: each CollApi is one record at start (kind from func,
       bytes = count x datatype size, untimed); each P2pApi likewise; a
       P2pApi "AlltoAll" is one task of 2 x nranks (a Send and a Recv per
       rank): the plugin emits one all_to_all record (bytes = count x size)
       per 2 x nranks such events of a comm. Gather and Scatter (split
       into sends and recvs by NCCL like AlltoAll, with no root in the
       P2pApi): kind gather/scatter, one op per task event. v1-v4: each
       Coll/P2p is one untimed record at start.
     level coll and above, v5+: each CollApi (not captured) is the
       operation's one record (kind from func, bytes = count x size); it
       takes a slot and completes when it was stopped and its tasks
       completed: a Coll (or P2p) whose parentObj is the CollApi counts
       nothing itself, it times the API's record and gives it seq, algo,
       proto and nChannels (the first task's). NCCL 2.29+ starts no Coll
       for a Broadcast played as AllGatherV, symmetric-kernel and
       copy-engine collectives: these are counted, untimed. A CollApi
       waits for its first task (a grace reference, which that task takes
       over) until MEMOBS_NCCL__GRACE_NS after its stop (a group's tasks
       start at ncclGroupEnd), then is recorded at the next CollApi start of
       the thread that stopped it (a list of its 8 latest such), or when
       the sweep (a slot per CollApi start, and per Coll/P2p start
       without one) passes it, or at its comm's finalize, or at exit. A
       task starting under a CollApi already recorded (a stale handle)
       counts nothing. No slot for the CollApi: recorded at its start,
       untimed, its tasks count nothing (a tagged handle says so).
       KernelCh directly under a CollApi time it.
     level coll and above, v1-v4, and P2p tasks of v5+ (P2pApi parents):
       each Coll/P2p is one record when it completes:
       when its own stopEvent (NCCL: enqueued) and every child it counts
       (KernelCh, ProxyOp) have stopped. v4+: the Coll holds a reference
       for each of its nChannels KernelCh from the start (children that
       come after NCCL stopped the Coll still count; more KernelCh than
       nChannels take a reference each while the Coll lives; when fewer
       come, the operation is recorded 10 s after its stop, when the
       sweep (one slot per Coll/P2p start) passes it, or at its comm's
       finalize, with the time of those that came). v1-v3 give no
       count: a Coll that may have children (v3 at coll level, any at
       proxy level) waits 100 ms after its stop, then is recorded when the
       sweep passes it. Operations still waiting are recorded at their
       comm's finalize and at exit. ns = the first KernelCh's start to the
       last one's end (nccl-tests' time, min(t0)..max(t1) over the
       channels): pTimer at start and at KernelChStop (v4+, GPU time),
       CPU time at KernelCh start and stop (v3); v1-v2: the ProxyOps'
       CPU span (first start to last stop) at proxy level, else untimed
       (0). A channel without a stop time (or with t1 <= t0) adds nothing.
       Also seq (seqNumber), algo, proto (v1 numbers turned into NCCL's
       names), nChannels (v4+; v1-v3 nMaxChannels). A P2p whose P2pApi
       parent says "AlltoAll" goes to the comm's all_to_all: one record
       per 2 x nranks such P2p (bytes = their sum / 2n; ns = their
       longest); under a Gather or Scatter P2pApi a P2p keeps its own kind
       (send, recv). Phase: the CollApi/P2pApi's (read with the host's
       memobs_get_phase on the user thread at the API call; v5+); without
       an API parent the starting thread's phase, and when that is unphased
       the comm's last phase seen (best effort on the CUDA callback
       thread). graphCaptured API calls: CAPTURED_CALLS +1 and no record;
       a task event whose API parent was captured is a replay:
       CAPTURED_REPLAYS +1 per record and the record says captured.
       Datatype sizes: NCCL's names (ncclInt8 ... ncclFloat8e5m2) and
       "Unknown", which NCCL 2.24-2.30 say for ncclUint8 (1 byte); any
       other: 0 bytes and BAD_EVENTS +1. Unknown func: kind
       "other:<func>".
     level proxy: ProxyStep states SendWait (sent) and RecvFlushWait
       (received) with transSize (v4+: proxyStep args) ->
       memobs_record_peer_xfer_timed(rank peer of the comm, SEND/RECV,
       payload, the op's phase, 0): one peer op per step. transSize is
       what the protocol moves: payload = transSize / 2 for LL (16-byte
       lines of 8 data bytes), x 120/128 for LL128, as is for SIMPLE; the
       protocol is the ProxyOp's parent task's (a ProxyOp without one,
       PXN: as is); v1-v3 running totals the same. No other
       state counts (NCCL passes transSize with all of them). v1-v3:
       ProxyOp states SendTransmitted, SendDone / RecvReceived, RecvDone
       carry the op's running total: each increase over the largest seen
       is recorded (NCCL 2.23 shows a send step's bytes one state late). PXN: parentObj
       of a ProxyOp is read only when proxyOp.pid == getpid(); a foreign
       ProxyOp records peer bytes against the init's comm (v4+; v1-v3:
       none) in that comm's last phase.
     level net: NetPlugin and ProxyCtrl events are accepted (NULL handle)
       and counted; the counts are logged at exit (one info line).

   HANDLES AND POOL: one fixed pool of MEMOBS_NCCL_EVENTS slots of 128
   bytes, a lock-free free list (index + tag word). Coll, P2p, KernelCh
   and ProxyOp take a slot; the handle is the slot's address with the
   slot's generation mod 64 in bits 1-6. A ProxyStep takes no slot: its
   handle is its ProxyOp's with bit 0 set. A CollApi at level coll and
   above (v5+, not captured) takes a slot; other API events take none:
   their handle is a small tagged number (phase, captured, AlltoAll,
   counted), never dereferenced. GroupApi, Group, KernelLaunch, CE events: NULL handle. A
   full pool: NULL handle, EVENTS_DROPPED +1; a Coll/P2p without a slot is
   recorded at once (ops, bytes, untimed); a KernelCh without one leaves
   its Coll untimed (if no other times it), a ProxyOp without one loses
   its peer bytes. v1-v4 at level api: Coll/P2p get a tagged number as
   well (recorded at start, nothing to stop). Example, v4, pool of 8: 64
   Colls (nChannels 1) started and stopped, then a KernelCh for each of
   the 8 with a handle: the first finds the pool full (dropped; its Coll
   gives the announced reference back, completes untimed and frees its
   slot), the next 7 get slots and time their Colls: ops 64, timed 7,
   events_dropped 57. A stop of an unknown, stale or
   stopped handle: ncclSuccess and BAD_EVENTS +1.

   THREADS: startEvent/stopEvent/recordEventState from any thread (user,
   CUDA callback, proxy); no lock on their paths but the comm's all_to_all
   accumulator (AlltoAll tasks only) and the first sight of a v1-v3
   communicator. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#define MEMOBS_IMPLEMENTATION
#define MEMOBS_HIDDEN
#define MEMOBS_NO_AUTOINIT
#include "memobs.h"

#include "nccl/profiler_api.h"

#define MEMOBS_NCCL__EXPORT __attribute__((visibility("default")))

/* ======================================================================== */
/* State                                                                    */
/* ======================================================================== */

enum { MEMOBS_NCCL__OFF = 0, MEMOBS_NCCL__API, MEMOBS_NCCL__COLL, MEMOBS_NCCL__PROXY, MEMOBS_NCCL__NET };
static const char *const memobs_nccl__level_names[] = {"off", "api", "coll", "proxy", "net"};

enum {
    MEMOBS_NCCL__EV_FREE = 0,
    MEMOBS_NCCL__EV_COLL,
    MEMOBS_NCCL__EV_P2P,
    MEMOBS_NCCL__EV_KCH,
    MEMOBS_NCCL__EV_POP,
    MEMOBS_NCCL__EV_CAPI /* a CollApi (v5+, level coll and above): the operation's record */
};
/* Protocols (the ProxyOp's wire field): how transSize relates to the payload. */
enum { MEMOBS_NCCL__WIRE_UNKNOWN = 0, MEMOBS_NCCL__WIRE_LL, MEMOBS_NCCL__WIRE_LL128, MEMOBS_NCCL__WIRE_SIMPLE };

#define MEMOBS_NCCL__MAX_COMMS 64
#define MEMOBS_NCCL__PEER_CACHE 4096 /* ranks per comm whose peer handle is kept */
#define MEMOBS_NCCL__PEER_UNSET INT32_MIN
#define MEMOBS_NCCL__LATE_NS 10000000000ull /* announced KernelCh still missing 10 s after the stop */
#define MEMOBS_NCCL__GRACE_NS 100000000ull  /* v1-v3: how long a stopped Coll waits for children */
#define MEMOBS_NCCL__GRACE 0x80000000u      /* expect's bit: the v1-v3 grace reference */
#define MEMOBS_NCCL__DEFAULT_EVENTS 4096u
#define MEMOBS_NCCL__MAX_EVENTS (1u << 20)
#define MEMOBS_NCCL__SLOT_SHIFT 7
#define MEMOBS_NCCL__GEN_MASK 63u
#define MEMOBS_NCCL__STEP_BIT 1u
/* API handles: small numbers in the never-mapped first page. */
#define MEMOBS_NCCL__API_TAG 0x800u
#define MEMOBS_NCCL__API_PHASE 0x3u
#define MEMOBS_NCCL__API_CAPTURED 0x4u
#define MEMOBS_NCCL__API_A2A 0x8u
#define MEMOBS_NCCL__API_COUNTED 0x10u /* a CollApi recorded at its start: its tasks count nothing */
#define MEMOBS_NCCL__API_BITS 0x1Fu

typedef struct {
    uint64_t id;
    int rank, nranks, nnodes;
    memobs_comm_t h;
    uint32_t last_phase; /* atomic: the last phase read on a user thread */
    char name[64];
    pthread_mutex_t a2a_lock; /* all_to_all accumulator */
    uint32_t a2a_tasks;
    int a2a_captured;
    memobs_phase_t a2a_phase;
    uint64_t a2a_bytes, a2a_ns, a2a_start;
    int32_t *peers; /* atomic entries: memobs_peer_rank of ranks < npeers, MEMOBS_NCCL__PEER_UNSET before */
    int npeers;
    uint32_t live; /* atomic: inits that gave this entry as their context, not yet finalized */
} memobs_nccl__comm_t;

typedef struct __attribute__((aligned(128))) {
    uint64_t word;    /* atomic: generation << 32 | references */
    uint32_t next;    /* atomic: free list, index + 1 of the next free slot */
    uint32_t stopped; /* atomic: stopEvent seen (1 while free) */
    uint8_t type;     /* MEMOBS_NCCL__EV_* */
    uint8_t phase;
    uint8_t captured;
    uint8_t dir; /* ProxyOp: MEMOBS_PEER_SEND / RECV; CollApi: atomic, 1 once a task filled algo/proto */
    uint8_t a2a; /* P2p task of an AlltoAll call */
    uint8_t version;
    uint8_t wire; /* ProxyOp: MEMOBS_NCCL__WIRE_*, its task's protocol */
    uint8_t pad;
    uint32_t expect; /* atomic: KernelCh announced by nChannels, not yet started; | GRACE */
    int32_t comm_ix; /* index in memobs_nccl__g.comms, -1 none */
    memobs_comm_t comm;
    memobs_coll_kind_t kind;
    memobs_peer_t peer;
    int32_t nchannels;
    uint32_t parent; /* index + 1 of the slot a child holds (KernelCh, ProxyOp: its task; Coll: its CollApi), 0 none */
    uint64_t bytes;
    uint64_t start_ns; /* host clock when the event started */
    uint64_t t0, t1;   /* KernelCh: timer at start / KernelChStop; ProxyOp: CPU start;
                          Coll/P2p/CollApi: t0 the first child's start (atomic min, 0 none), t1 stopped at */
    uint64_t ns;       /* Coll/P2p/CollApi: the last child's end (atomic max, 0 none) */
    uint64_t aux;      /* Coll/P2p: seq; ProxyOp (v1-v3): transSize seen */
    char algo[16];
    char proto[8];
} memobs_nccl__slot_t;

typedef char memobs_nccl__slot_is_128[sizeof(memobs_nccl__slot_t) == (1u << MEMOBS_NCCL__SLOT_SHIFT) ? 1 : -1];

/* The once-control and the comm lock sit apart from the state struct:
   their initializers are the only non-zero ones. */
static pthread_once_t memobs_nccl__once = PTHREAD_ONCE_INIT;
static pthread_mutex_t memobs_nccl__comm_lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
    const memobs_host_api_t *host;
    const char *instance;
    int level;
    uint32_t nslots;
    memobs_nccl__slot_t *slots;
    uintptr_t lo, hi;   /* pool address range */
    uint64_t free_head; /* atomic: tag << 32 | (index + 1), 0 = empty */
    uint32_t ncomms;    /* atomic: entries published */
    memobs_nccl__comm_t comms[MEMOBS_NCCL__MAX_COMMS];
    memobs_nccl__comm_t other;        /* beyond MEMOBS_NCCL__MAX_COMMS */
    memobs_nccl__comm_t legacy;       /* the context of v1-v3 inits (no comm at init) */
    uint64_t net_events, ctrl_events; /* atomic: level net's counts */
    void *self;                       /* dlopen handle pinning the plugin */
    int ready;                        /* atomic: setup done with a memobs to record into (host, pool) */
    int given;                        /* atomic: the mask an accepted init wrote, 0 none yet */
    uint64_t early_bad;               /* atomic: bad calls before `ready` (added to bad_events at the first init) */
} memobs_nccl__g;

/* ======================================================================== */
/* Host table                                                               */
/* ======================================================================== */

/* The plugin's own memobs, called directly (its symbols stay hidden). */
static const memobs_host_api_t memobs_nccl__own_table = MEMOBS__HOST_API_INIT("own");

typedef const memobs_host_api_t *(*memobs_nccl__host_fn)(void);

/* A table usable by this build, or NULL (one warning for a wrong key). */
static const memobs_host_api_t *memobs_nccl__check_table(void *sym, const char *where) {
    union {
        void *p;
        memobs_nccl__host_fn f;
    } u;
    const memobs_host_api_t *t;
    if (!sym) return NULL;
    u.p = sym;
    t = u.f();
    if (!t) return NULL;
    if (t->abi_key != (uint64_t)MEMOBS__ABI_KEY || t->size < sizeof(memobs_host_api_t)) {
        memobs__log(MEMOBS_LOG_WARN,
                    "NCCL profiler: the memobs in %s has ABI key %llx (table %u bytes), this plugin %llx "
                    "(%u bytes): not recording into it",
                    where, (unsigned long long)t->abi_key, (unsigned)t->size, (unsigned long long)MEMOBS__ABI_KEY,
                    (unsigned)sizeof(memobs_host_api_t));
        return NULL;
    }
    return t;
}

typedef struct {
    char **paths;
    size_t n, cap;
    const char *self;
} memobs_nccl__objs_t;

static int memobs_nccl__collect(struct dl_phdr_info *info, size_t size, void *data) {
    memobs_nccl__objs_t *o = (memobs_nccl__objs_t *)data;
    (void)size;
    if (!info->dlpi_name || !info->dlpi_name[0]) return 0;
    if (o->self && strcmp(info->dlpi_name, o->self) == 0) return 0;
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 64;
        char **p = (char **)realloc(o->paths, cap * sizeof *p);
        if (!p) return 1;
        o->paths = p;
        o->cap = cap;
    }
    o->paths[o->n] = strdup(info->dlpi_name);
    if (o->paths[o->n]) o->n++;
    return 0;
}

static const memobs_host_api_t *memobs_nccl__find_host(const char *self) {
    const memobs_host_api_t *t;
    const char *attach = getenv("MEMOBS_NCCL_ATTACH");
    memobs_nccl__objs_t o = {NULL, 0, 0, self};
    size_t i;
    if (attach && strcmp(attach, "0") == 0) return NULL;
    t = memobs_nccl__check_table(dlsym(RTLD_DEFAULT, "memobs_host_api"), "the process's global symbols");
    if (t) return t;
    /* Objects loaded RTLD_LOCAL (a Python extension): names first, the
       loader calls outside dl_iterate_phdr's lock. */
    dl_iterate_phdr(memobs_nccl__collect, &o);
    for (i = 0; i < o.n && !t; i++) {
        void *h = dlopen(o.paths[i], RTLD_NOW | RTLD_NOLOAD);
        if (!h) continue;
        t = memobs_nccl__check_table(dlsym(h, "memobs_host_api"), o.paths[i]);
        if (!t) dlclose(h); /* else kept open: the table's module stays loaded */
    }
    for (i = 0; i < o.n; i++) free(o.paths[i]);
    free(o.paths);
    return t;
}

static int memobs_nccl__parse_level(void) {
    const char *v = getenv("MEMOBS_NCCL");
    int i;
    if (!v || !v[0]) return MEMOBS_NCCL__COLL;
    if (strcmp(v, "0") == 0) return MEMOBS_NCCL__OFF;
    for (i = MEMOBS_NCCL__OFF; i <= MEMOBS_NCCL__NET; i++)
        if (strcasecmp(v, memobs_nccl__level_names[i]) == 0) return i;
    memobs__log(MEMOBS_LOG_WARN, "MEMOBS_NCCL=%.64s: not one of off, 0, api, coll, proxy, net; using coll", v);
    return MEMOBS_NCCL__COLL;
}

static uint32_t memobs_nccl__parse_events(void) {
    const char *v = getenv("MEMOBS_NCCL_EVENTS");
    char *end;
    unsigned long n;
    if (!v || !v[0]) return MEMOBS_NCCL__DEFAULT_EVENTS;
    n = strtoul(v, &end, 10);
    if (*end || n < 1 || n > MEMOBS_NCCL__MAX_EVENTS || v[0] == '-') {
        memobs__log(MEMOBS_LOG_WARN, "MEMOBS_NCCL_EVENTS=%.64s: not a number from 1 to %u; using %u", v,
                    MEMOBS_NCCL__MAX_EVENTS, MEMOBS_NCCL__DEFAULT_EVENTS);
        return MEMOBS_NCCL__DEFAULT_EVENTS;
    }
    return (uint32_t)n;
}

static void memobs_nccl__at_exit(void);

static void memobs_nccl__setup(void) {
    Dl_info self;
    const char *self_path = NULL;
    size_t bytes;
    uint32_t i;
    void *p;
    if (dladdr((void *)&memobs_nccl__g, &self) && self.dli_fname) self_path = self.dli_fname;
    memobs_nccl__g.level = memobs_nccl__parse_level();
    if (memobs_nccl__g.level == MEMOBS_NCCL__OFF) return; /* every init refuses: no host, no pool */
    memobs_nccl__g.host = memobs_nccl__find_host(self_path);
    if (!memobs_nccl__g.host) {
        memobs_init(); /* the own instance reads MEMOBS_* now (MEMOBS_NO_AUTOINIT) */
        memobs_nccl__g.host = &memobs_nccl__own_table;
    }
    memobs_nccl__g.instance = memobs_nccl__g.host->instance ? memobs_nccl__g.host->instance : "own";
    /* NCCL dlclose()s its profiler when the last communicator goes; an
       exit handler of the own instance still points here. */
    if (self_path) memobs_nccl__g.self = dlopen(self_path, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    memobs_nccl__g.nslots = memobs_nccl__parse_events();
    bytes = (size_t)memobs_nccl__g.nslots * sizeof(memobs_nccl__slot_t);
    p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        memobs__log(MEMOBS_LOG_WARN, "NCCL profiler: no memory for %u events; every event is dropped",
                    (unsigned)memobs_nccl__g.nslots);
        memobs_nccl__g.nslots = 0;
        __atomic_store_n(&memobs_nccl__g.ready, 1, __ATOMIC_RELEASE);
        return;
    }
    memobs_nccl__g.slots = (memobs_nccl__slot_t *)p;
    memobs_nccl__g.lo = (uintptr_t)p;
    memobs_nccl__g.hi = memobs_nccl__g.lo + bytes;
    for (i = 0; i < memobs_nccl__g.nslots; i++) {
        memobs_nccl__g.slots[i].next = i + 1 < memobs_nccl__g.nslots ? i + 2 : 0;
        memobs_nccl__g.slots[i].stopped = 1;
        memobs_nccl__g.slots[i].word = 0;
    }
    __atomic_store_n(&memobs_nccl__g.free_head, memobs_nccl__g.nslots ? 1u : 0u, __ATOMIC_RELEASE);
    atexit(memobs_nccl__at_exit);
    __atomic_store_n(&memobs_nccl__g.ready, 1, __ATOMIC_RELEASE);
}

/* ======================================================================== */
/* Pool and handles                                                         */
/* ======================================================================== */

static memobs_nccl__slot_t *memobs_nccl__alloc(void) {
    uint64_t head = __atomic_load_n(&memobs_nccl__g.free_head, __ATOMIC_ACQUIRE), nh;
    for (;;) {
        uint32_t ix = (uint32_t)head;
        if (!ix) return NULL;
        nh = (((head >> 32) + 1) << 32) | __atomic_load_n(&memobs_nccl__g.slots[ix - 1].next, __ATOMIC_RELAXED);
        if (__atomic_compare_exchange_n(&memobs_nccl__g.free_head, &head, nh, 1, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
            return &memobs_nccl__g.slots[ix - 1];
    }
}

/* The slot's generation moves on: every handle to it is stale from now. */
static void memobs_nccl__free(memobs_nccl__slot_t *s) {
    uint32_t ix = (uint32_t)(s - memobs_nccl__g.slots) + 1;
    uint64_t w = __atomic_load_n(&s->word, __ATOMIC_RELAXED), head, nh;
    __atomic_store_n(&s->stopped, 1u, __ATOMIC_RELAXED);
    __atomic_store_n(&s->word, ((w >> 32) + 1) << 32, __ATOMIC_RELEASE);
    head = __atomic_load_n(&memobs_nccl__g.free_head, __ATOMIC_RELAXED);
    do {
        __atomic_store_n(&s->next, (uint32_t)head, __ATOMIC_RELAXED);
        nh = (((head >> 32) + 1) << 32) | ix;
    } while (!__atomic_compare_exchange_n(&memobs_nccl__g.free_head, &head, nh, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

/* Makes a fresh slot live with refs references; returns its handle. */
static void *memobs_nccl__publish(memobs_nccl__slot_t *s, uint32_t refs) {
    uint64_t gen = __atomic_load_n(&s->word, __ATOMIC_RELAXED) >> 32;
    __atomic_store_n(&s->stopped, 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&s->word, (gen << 32) | refs, __ATOMIC_RELEASE);
    return (void *)((uintptr_t)s | (uintptr_t)((gen & MEMOBS_NCCL__GEN_MASK) << 1));
}

static void memobs_nccl__clear(memobs_nccl__slot_t *s, int type, int version) {
    s->type = (uint8_t)type;
    s->phase = MEMOBS_PHASE_NONE;
    s->captured = 0;
    s->dir = 0;
    s->a2a = 0;
    s->version = (uint8_t)version;
    __atomic_store_n(&s->expect, 0u, __ATOMIC_RELAXED);
    s->comm_ix = -1;
    s->comm = -1;
    s->kind = MEMOBS_COLL_OTHER;
    s->peer = -1;
    s->nchannels = 0;
    s->parent = 0;
    s->bytes = 0;
    s->start_ns = 0;
    s->wire = MEMOBS_NCCL__WIRE_UNKNOWN;
    __atomic_store_n(&s->t0, (uint64_t)0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->t1, (uint64_t)0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->ns, (uint64_t)0, __ATOMIC_RELAXED);
    s->aux = 0;
    s->algo[0] = 0;
    s->proto[0] = 0;
}

static int memobs_nccl__is_api(const void *h) {
    return ((uintptr_t)h & ~(uintptr_t)MEMOBS_NCCL__API_BITS) == MEMOBS_NCCL__API_TAG;
}

/* The live slot a handle names (generation checked), or NULL. */
static memobs_nccl__slot_t *memobs_nccl__slot_of(const void *handle, int *step) {
    uintptr_t h = (uintptr_t)handle, off;
    memobs_nccl__slot_t *s;
    if (h < memobs_nccl__g.lo || h >= memobs_nccl__g.hi) return NULL;
    off = h - memobs_nccl__g.lo;
    s = &memobs_nccl__g.slots[off >> MEMOBS_NCCL__SLOT_SHIFT];
    if (step) *step = (int)(off & MEMOBS_NCCL__STEP_BIT);
    if (((__atomic_load_n(&s->word, __ATOMIC_ACQUIRE) >> 32) & MEMOBS_NCCL__GEN_MASK) !=
        ((off >> 1) & MEMOBS_NCCL__GEN_MASK))
        return NULL;
    return s;
}

static uint32_t memobs_nccl__gen_of(const void *handle) {
    return (uint32_t)(((uintptr_t)handle >> 1) & MEMOBS_NCCL__GEN_MASK);
}

/* One more reference to a live parent of generation g; 0 when it is gone. */
static int memobs_nccl__ref(memobs_nccl__slot_t *p, uint32_t g) {
    uint64_t w = __atomic_load_n(&p->word, __ATOMIC_ACQUIRE);
    do {
        if ((uint32_t)w == 0 || ((w >> 32) & MEMOBS_NCCL__GEN_MASK) != g) return 0;
    } while (!__atomic_compare_exchange_n(&p->word, &w, w + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
    return 1;
}

static void memobs_nccl__atomic_max(uint64_t *p, uint64_t v) {
    uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

/* Earliest start: 0 is "none yet". */
static void memobs_nccl__atomic_min(uint64_t *p, uint64_t v) {
    uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v && (!cur || v < cur) && !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

/* A child's span [t0, t1] widens its task's (or CollApi's): nccl-tests'
   time is the first channel's start to the last one's end. */
static void memobs_nccl__widen(memobs_nccl__slot_t *p, uint64_t t0, uint64_t t1) {
    if (!t0 || t1 <= t0) return;
    memobs_nccl__atomic_min(&p->t0, t0);
    memobs_nccl__atomic_max(&p->ns, t1);
}

/* The operation's time: first start to last end of its children, 0 none. */
static uint64_t memobs_nccl__span(memobs_nccl__slot_t *s) {
    uint64_t t0 = __atomic_load_n(&s->t0, __ATOMIC_RELAXED), t1 = __atomic_load_n(&s->ns, __ATOMIC_RELAXED);
    return t0 && t1 > t0 ? t1 - t0 : 0;
}

static void memobs_nccl__note(memobs_coll_note_t what) { memobs_nccl__g.host->coll_note(what, 1); }

/* Setup done and a memobs to record into: every entry point but init
   checks this first (NCCL, or a host, may call before any init, or
   after MEMOBS_NCCL=off refused them all). */
static int memobs_nccl__ready(void) { return __atomic_load_n(&memobs_nccl__g.ready, __ATOMIC_ACQUIRE); }

/* A call the plugin cannot honour (a context or handle it never gave, or
   no longer lives): BAD_EVENTS +1; before the first accepted init there is
   no memobs yet: kept and added at that init. */
static void memobs_nccl__bad(void) {
    if (memobs_nccl__ready())
        memobs_nccl__note(MEMOBS_COLL_NOTE_BAD_EVENTS);
    else
        __atomic_fetch_add(&memobs_nccl__g.early_bad, (uint64_t)1, __ATOMIC_RELAXED);
}

/* ======================================================================== */
/* Communicators                                                            */
/* ======================================================================== */

static void memobs_nccl__comm_fill(memobs_nccl__comm_t *c, const char *name, uint64_t id, int rank, int nranks,
                                   int nnodes) {
    c->id = id;
    c->rank = rank;
    c->nranks = nranks;
    c->nnodes = nnodes;
    snprintf(c->name, sizeof c->name, "%s", name ? name : "");
    pthread_mutex_init(&c->a2a_lock, NULL);
    c->h = memobs_nccl__g.host->coll_register_comm(name, id, rank, nranks, nnodes);
    c->npeers = nranks < MEMOBS_NCCL__PEER_CACHE ? nranks : MEMOBS_NCCL__PEER_CACHE;
    c->peers = c->npeers > 0 ? (int32_t *)malloc((size_t)c->npeers * sizeof *c->peers) : NULL;
    if (!c->peers) c->npeers = 0;
    for (int i = 0; i < c->npeers; i++) c->peers[i] = MEMOBS_NCCL__PEER_UNSET;
}

/* The peer of a rank of comm h (entry c, when known), looked up once per
   rank: memobs_peer_rank takes memobs' table lock and formats a label. */
static memobs_peer_t memobs_nccl__peer(memobs_nccl__comm_t *c, memobs_comm_t h, int rank) {
    int32_t p;
    if (!c || rank < 0 || rank >= c->npeers) return memobs_nccl__g.host->peer_rank(h, rank);
    p = __atomic_load_n(&c->peers[rank], __ATOMIC_RELAXED);
    if (p == MEMOBS_NCCL__PEER_UNSET) {
        p = memobs_nccl__g.host->peer_rank(h, rank);
        __atomic_store_n(&c->peers[rank], p, __ATOMIC_RELAXED);
    }
    return p;
}

/* The entry of (id, rank), created on first sight. Lookups are lock-free
   (entries are published by the count); creation takes comm_lock. */
static memobs_nccl__comm_t *memobs_nccl__comm_get(const char *name, uint64_t id, int rank, int nranks, int nnodes) {
    uint32_t n = __atomic_load_n(&memobs_nccl__g.ncomms, __ATOMIC_ACQUIRE), i;
    memobs_nccl__comm_t *c;
    for (i = 0; i < n; i++)
        if (memobs_nccl__g.comms[i].id == id && memobs_nccl__g.comms[i].rank == rank) return &memobs_nccl__g.comms[i];
    pthread_mutex_lock(&memobs_nccl__comm_lock);
    n = __atomic_load_n(&memobs_nccl__g.ncomms, __ATOMIC_RELAXED);
    for (i = 0; i < n; i++)
        if (memobs_nccl__g.comms[i].id == id && memobs_nccl__g.comms[i].rank == rank) break;
    if (i < n) {
        c = &memobs_nccl__g.comms[i];
    } else if (n < MEMOBS_NCCL__MAX_COMMS) {
        c = &memobs_nccl__g.comms[n];
        memobs_nccl__comm_fill(c, name, id, rank, nranks, nnodes);
        __atomic_store_n(&memobs_nccl__g.ncomms, n + 1, __ATOMIC_RELEASE);
    } else {
        c = &memobs_nccl__g.other;
        if (!c->name[0]) memobs_nccl__comm_fill(c, "(other)", 0, 0, 0, 0);
    }
    pthread_mutex_unlock(&memobs_nccl__comm_lock);
    return c;
}

static int memobs_nccl__comm_ix(const memobs_nccl__comm_t *c) {
    if (c >= memobs_nccl__g.comms && c < memobs_nccl__g.comms + MEMOBS_NCCL__MAX_COMMS)
        return (int)(c - memobs_nccl__g.comms);
    return c == &memobs_nccl__g.other ? MEMOBS_NCCL__MAX_COMMS : -1;
}
static memobs_nccl__comm_t *memobs_nccl__comm_at(int ix) {
    return ix >= 0 && ix < MEMOBS_NCCL__MAX_COMMS ? &memobs_nccl__g.comms[ix]
           : ix == MEMOBS_NCCL__MAX_COMMS         ? &memobs_nccl__g.other
                                                  : NULL;
}

/* A context this plugin gave (a comm entry, "(other)" or the v1-v3 one)
   whose init was not yet finalized; anything else is never read. */
static memobs_nccl__comm_t *memobs_nccl__ctx_live(void *context) {
    uintptr_t c = (uintptr_t)context, lo = (uintptr_t)memobs_nccl__g.comms;
    uint32_t n;
    memobs_nccl__comm_t *e = NULL;
    if (!memobs_nccl__ready()) return NULL;
    n = __atomic_load_n(&memobs_nccl__g.ncomms, __ATOMIC_ACQUIRE);
    if (c == (uintptr_t)&memobs_nccl__g.legacy)
        e = &memobs_nccl__g.legacy;
    else if (c == (uintptr_t)&memobs_nccl__g.other)
        e = &memobs_nccl__g.other;
    else if (c >= lo && c < lo + (uintptr_t)n * sizeof(memobs_nccl__comm_t) && (c - lo) % sizeof(memobs_nccl__comm_t) == 0)
        e = &memobs_nccl__g.comms[(c - lo) / sizeof(memobs_nccl__comm_t)];
    return e && __atomic_load_n(&e->live, __ATOMIC_ACQUIRE) > 0 ? e : NULL;
}

/* The thread's phase; unphased falls back on the comm's last phase seen
   (the CUDA callback thread has none of its own). */
static memobs_phase_t memobs_nccl__phase(memobs_nccl__comm_t *c) {
    memobs_phase_t ph = memobs_nccl__g.host->get_phase();
    if (ph != MEMOBS_PHASE_NONE) {
        if (c) __atomic_store_n(&c->last_phase, (uint32_t)ph, __ATOMIC_RELAXED);
        return ph;
    }
    return c ? (memobs_phase_t)__atomic_load_n(&c->last_phase, __ATOMIC_RELAXED) : MEMOBS_PHASE_NONE;
}

/* ======================================================================== */
/* Names: func, datatype, algo, proto                                       */
/* ======================================================================== */

static memobs_coll_kind_t memobs_nccl__kind(const char *func) {
    static const struct {
        const char *name;
        memobs_coll_kind_t kind;
    } k[] = {{"AllReduce", MEMOBS_COLL_ALL_REDUCE},
             {"AllGather", MEMOBS_COLL_ALL_GATHER},
             {"ReduceScatter", MEMOBS_COLL_REDUCE_SCATTER},
             {"Broadcast", MEMOBS_COLL_BROADCAST},
             {"Reduce", MEMOBS_COLL_REDUCE},
             {"AlltoAll", MEMOBS_COLL_ALL_TO_ALL},
             {"Gather", MEMOBS_COLL_GATHER},
             {"Scatter", MEMOBS_COLL_SCATTER},
             {"Send", MEMOBS_COLL_SEND},
             {"Recv", MEMOBS_COLL_RECV},
             {"SendRecv", MEMOBS_COLL_SEND_RECV}};
    size_t i;
    memobs_coll_kind_t id;
    if (!func || !func[0]) return MEMOBS_COLL_OTHER;
    for (i = 0; i < sizeof k / sizeof k[0]; i++)
        if (strcmp(func, k[i].name) == 0) return k[i].kind;
    id = memobs_nccl__g.host->coll_kind_intern(func);
    return id < 0 ? MEMOBS_COLL_OTHER : id;
}

/* ncclFunc_t (v1). */
static memobs_coll_kind_t memobs_nccl__kind_num(unsigned f) {
    static const memobs_coll_kind_t k[8] = {MEMOBS_COLL_BROADCAST,      MEMOBS_COLL_REDUCE,     MEMOBS_COLL_ALL_GATHER,
                                            MEMOBS_COLL_REDUCE_SCATTER, MEMOBS_COLL_ALL_REDUCE, MEMOBS_COLL_SEND_RECV,
                                            MEMOBS_COLL_SEND,           MEMOBS_COLL_RECV};
    return f < 8 ? k[f] : MEMOBS_COLL_OTHER;
}

/* Bytes of one element; 0 unknown. NCCL's ncclDatatypeToString (2.24 to
   2.30) has no case for ncclUint8 and gives "Unknown" for it; NCCL refuses
   an invalid datatype before any event, so "Unknown" is ncclUint8. */
static unsigned memobs_nccl__dtype_size(const char *d) {
    static const struct {
        const char *name;
        unsigned size;
    } t[] = {{"ncclInt8", 1},       {"ncclUint8", 1},      {"ncclInt32", 4},   {"ncclUint32", 4},  {"ncclInt64", 8},
             {"ncclUint64", 8},     {"ncclFloat16", 2},    {"ncclFloat32", 4}, {"ncclFloat64", 8}, {"ncclBfloat16", 2},
             {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1}, {"Unknown", 1}};
    size_t i;
    if (!d) return 0;
    for (i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(d, t[i].name) == 0) return t[i].size;
    return 0;
}

/* ncclDataType_t (v1): int8 uint8 int32 uint32 int64 uint64 fp16 fp32 fp64 bf16 fp8 fp8. */
static unsigned memobs_nccl__dtype_size_num(unsigned d) {
    static const unsigned char s[12] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
    return d < 12 ? s[d] : 0;
}

static const char *memobs_nccl__algo_num(unsigned a) {
    static const char *const n[7] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
    return a < 7 ? n[a] : NULL;
}
static const char *memobs_nccl__proto_num(unsigned p) {
    static const char *const n[3] = {"LL", "LL128", "SIMPLE"};
    return p < 3 ? n[p] : NULL;
}

static int memobs_nccl__wire(const char *proto) {
    if (!proto || !proto[0]) return MEMOBS_NCCL__WIRE_UNKNOWN;
    if (strcmp(proto, "LL") == 0) return MEMOBS_NCCL__WIRE_LL;
    if (strcmp(proto, "LL128") == 0) return MEMOBS_NCCL__WIRE_LL128;
    if (strcmp(proto, "SIMPLE") == 0 || strcmp(proto, "Simple") == 0) return MEMOBS_NCCL__WIRE_SIMPLE;
    return MEMOBS_NCCL__WIRE_UNKNOWN;
}

static void memobs_nccl__copy(char *dst, size_t cap, const char *src) {
    size_t n = 0;
    if (src)
        for (; n + 1 < cap && src[n]; n++) dst[n] = src[n];
    dst[n] = 0;
}

/* ======================================================================== */
/* Records                                                                  */
/* ======================================================================== */

static void memobs_nccl__emit(const memobs_coll_record_t *rec) {
    memobs_nccl__g.host->record_coll_ex(rec);
    if (rec->captured) memobs_nccl__note(MEMOBS_COLL_NOTE_CAPTURED_REPLAYS);
}

/* One task of an AlltoAll call: every 2 x nranks of a comm make one
   all_to_all record. A comm of unknown size ("(other)") keeps each task
   as its own kind (alone: the P2p's send or recv). */
static void memobs_nccl__a2a_add(memobs_nccl__comm_t *c, memobs_coll_kind_t alone, uint64_t bytes, memobs_phase_t phase,
                                 uint64_t start, uint64_t ns, int captured) {
    memobs_coll_record_t rec;
    uint32_t n;
    int emit = 0;
    memset(&rec, 0, sizeof rec);
    if (!c || c->nranks <= 0) {
        rec.comm = c ? c->h : -1;
        rec.kind = alone;
        rec.phase = phase;
        rec.bytes = bytes;
        rec.ns = ns;
        rec.start_ns = start;
        rec.captured = captured;
        memobs_nccl__emit(&rec);
        return;
    }
    n = 2u * (uint32_t)c->nranks;
    pthread_mutex_lock(&c->a2a_lock);
    if (c->a2a_tasks == 0) {
        c->a2a_phase = phase;
        c->a2a_start = start;
    }
    c->a2a_tasks++;
    c->a2a_bytes += bytes;
    if (ns > c->a2a_ns) c->a2a_ns = ns;
    c->a2a_captured |= captured;
    if (c->a2a_tasks >= n) {
        rec.comm = c->h;
        rec.kind = MEMOBS_COLL_ALL_TO_ALL;
        rec.phase = c->a2a_phase;
        rec.bytes = c->a2a_bytes / n;
        rec.ns = c->a2a_ns;
        rec.start_ns = c->a2a_start;
        rec.captured = c->a2a_captured;
        c->a2a_tasks = 0;
        c->a2a_bytes = c->a2a_ns = c->a2a_start = 0;
        c->a2a_captured = 0;
        emit = 1;
    }
    pthread_mutex_unlock(&c->a2a_lock);
    if (emit) memobs_nccl__emit(&rec);
}

/* The last reference went: a Coll/P2p's record, then the slot back. */
static void memobs_nccl__unref(memobs_nccl__slot_t *s);

static void memobs_nccl__complete(memobs_nccl__slot_t *s) {
    uint64_t ns = memobs_nccl__span(s);
    if (s->type != MEMOBS_NCCL__EV_COLL && s->type != MEMOBS_NCCL__EV_P2P && s->type != MEMOBS_NCCL__EV_CAPI) {
        /* KernelCh, ProxyOp: nothing of their own to record */
    } else if (s->type != MEMOBS_NCCL__EV_CAPI && s->parent) {
        /* a task of a CollApi: its time and names go to the API's record */
        memobs_nccl__slot_t *pa = &memobs_nccl__g.slots[s->parent - 1];
        memobs_nccl__widen(pa, __atomic_load_n(&s->t0, __ATOMIC_RELAXED), __atomic_load_n(&s->ns, __ATOMIC_RELAXED));
        if (!__atomic_exchange_n(&pa->dir, (uint8_t)1, __ATOMIC_ACQ_REL)) {
            memcpy(pa->algo, s->algo, sizeof pa->algo);
            memcpy(pa->proto, s->proto, sizeof pa->proto);
            pa->nchannels = s->nchannels;
            pa->aux = s->aux;
            pa->start_ns = s->start_ns;
        }
        memobs_nccl__unref(pa);
    } else if (s->a2a) {
        memobs_nccl__a2a_add(memobs_nccl__comm_at(s->comm_ix), s->kind, s->bytes, (memobs_phase_t)s->phase, s->start_ns,
                             ns, s->captured);
    } else {
        memobs_coll_record_t rec;
        memset(&rec, 0, sizeof rec);
        rec.comm = s->comm;
        rec.kind = s->kind;
        rec.phase = (memobs_phase_t)s->phase;
        rec.bytes = s->bytes;
        rec.ns = ns;
        rec.start_ns = s->start_ns;
        rec.seq = s->aux;
        rec.algo = s->algo[0] ? s->algo : NULL;
        rec.proto = s->proto[0] ? s->proto : NULL;
        rec.nchannels = s->nchannels;
        rec.captured = s->captured;
        memobs_nccl__emit(&rec);
    }
    memobs_nccl__free(s);
}

static void memobs_nccl__unref(memobs_nccl__slot_t *s) {
    uint64_t w = __atomic_fetch_sub(&s->word, (uint64_t)1, __ATOMIC_ACQ_REL);
    if ((uint32_t)w == 1) memobs_nccl__complete(s);
}

/* A Coll/P2p holds a reference for each KernelCh its nChannels announced
   (v4+). Should fewer come, the sweep gives the missing ones back once the
   Coll was stopped MEMOBS_NCCL__LATE_NS ago (finalize: at once), so that
   the operation is recorded late rather than never. v1-v3 announce no
   count: a Coll that may have children (v3 KernelCh, proxy level
   ProxyOp) holds one grace reference instead, given back
   MEMOBS_NCCL__GRACE_NS after its stop, so that children NCCL starts
   after the stop (the proxy thread picks them up later) still find it.
   Safe on any slot: it holds a reference of its own while it looks. */
static void memobs_nccl__sweep_slot(memobs_nccl__slot_t *s, uint64_t now, int comm_ix) {
    uint64_t w = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE), stopped_at;
    uint32_t e;
    if ((uint32_t)w == 0 || !memobs_nccl__ref(s, (uint32_t)(w >> 32) & MEMOBS_NCCL__GEN_MASK)) return;
    stopped_at = __atomic_load_n(&s->t1, __ATOMIC_RELAXED);
    e = __atomic_load_n(&s->expect, __ATOMIC_RELAXED);
    if ((s->type == MEMOBS_NCCL__EV_COLL || s->type == MEMOBS_NCCL__EV_P2P || s->type == MEMOBS_NCCL__EV_CAPI) && e > 0 &&
        stopped_at &&
        (comm_ix < 0 ? now > stopped_at &&
                           now - stopped_at > ((e & ~MEMOBS_NCCL__GRACE) ? MEMOBS_NCCL__LATE_NS : MEMOBS_NCCL__GRACE_NS)
                     : s->comm_ix == comm_ix || comm_ix == INT32_MAX) &&
        __atomic_compare_exchange_n(&s->expect, &e, 0u, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        uint32_t n = (e & ~MEMOBS_NCCL__GRACE) + (e >> 31);
        while (n--) memobs_nccl__unref(s);
    }
    memobs_nccl__unref(s);
}

/* Every stopped operation of comm entry comm_ix (INT32_MAX: all) still
   waiting for children is recorded now. */
static void memobs_nccl__flush(int comm_ix) {
    uint32_t i;
    for (i = 0; i < memobs_nccl__g.nslots; i++) memobs_nccl__sweep_slot(&memobs_nccl__g.slots[i], 0, comm_ix);
}

/* At exit (before the exit handlers of the memobs it records into, which
   were registered earlier): a program that never destroys its comms. */
static void memobs_nccl__at_exit(void) {
    memobs_nccl__flush(INT32_MAX);
    if (memobs_nccl__g.level == MEMOBS_NCCL__NET)
        memobs__log(MEMOBS_LOG_INFO, "NCCL profiler: %llu network plugin events, %llu proxy control events",
                    (unsigned long long)__atomic_load_n(&memobs_nccl__g.net_events, __ATOMIC_RELAXED),
                    (unsigned long long)__atomic_load_n(&memobs_nccl__g.ctrl_events, __ATOMIC_RELAXED));
}

/* One slot per Coll/P2p start, in turn (a few more when the pool is full):
   each thread has its own hand, and a slot is only read (two loads, no
   write to a line another thread may be using) unless its time is up. */
static void memobs_nccl__sweep(uint64_t now, unsigned n) {
    static __thread uint32_t hand;
    while (n-- && memobs_nccl__g.nslots) {
        memobs_nccl__slot_t *s = &memobs_nccl__g.slots[hand++ % memobs_nccl__g.nslots];
        uint32_t e = __atomic_load_n(&s->expect, __ATOMIC_RELAXED);
        uint64_t at;
        if (!e) continue;
        at = __atomic_load_n(&s->t1, __ATOMIC_RELAXED);
        if (!at || now <= at || now - at <= ((e & ~MEMOBS_NCCL__GRACE) ? MEMOBS_NCCL__LATE_NS : MEMOBS_NCCL__GRACE_NS))
            continue;
        memobs_nccl__sweep_slot(s, now, -1);
    }
}

/* CollApi events a thread stopped with no task below them yet (a
   Broadcast through AllGatherV, a symmetric or copy-engine collective, or
   a group whose tasks are still to start), oldest first: each CollApi
   start looks at the oldest and records it once its grace is over, so
   that a run of Coll-less collectives is seen about 100 ms after each,
   not when the sweep's hand comes round. A full list forgets its oldest
   (the sweep or the finalize records it). */
#define MEMOBS_NCCL__PENDING 8
static __thread struct {
    void *h[MEMOBS_NCCL__PENDING];
    unsigned head, n;
} memobs_nccl__pend;

static void memobs_nccl__pending_add(void *handle) {
    unsigned i = (memobs_nccl__pend.head + memobs_nccl__pend.n) % MEMOBS_NCCL__PENDING;
    if (memobs_nccl__pend.n == MEMOBS_NCCL__PENDING) {
        memobs_nccl__pend.head = (memobs_nccl__pend.head + 1) % MEMOBS_NCCL__PENDING;
        memobs_nccl__pend.n--;
    }
    memobs_nccl__pend.h[i] = handle;
    memobs_nccl__pend.n++;
}

static void memobs_nccl__pending_sweep(uint64_t now) {
    while (memobs_nccl__pend.n) {
        void *h = memobs_nccl__pend.h[memobs_nccl__pend.head];
        memobs_nccl__slot_t *s = memobs_nccl__slot_of(h, NULL);
        if (s && (__atomic_load_n(&s->expect, __ATOMIC_RELAXED) & MEMOBS_NCCL__GRACE)) {
            uint64_t at = __atomic_load_n(&s->t1, __ATOMIC_RELAXED);
            if (at && now > at && now - at <= MEMOBS_NCCL__GRACE_NS) return; /* the oldest is not due yet */
            memobs_nccl__sweep_slot(s, now, -1);
        }
        memobs_nccl__pend.head = (memobs_nccl__pend.head + 1) % MEMOBS_NCCL__PENDING;
        memobs_nccl__pend.n--;
    }
}

/* ======================================================================== */
/* Events, version-neutral                                                  */
/* ======================================================================== */

/* A Coll or P2p descriptor, whatever the version. */
typedef struct {
    int version, is_p2p;
    void *parent;
    int rank;
    const char *func;  /* v2+ */
    int func_num;      /* v1, else -1 */
    const char *dtype; /* v2+ */
    int dtype_num;     /* v1, else -1 */
    uint64_t count, seq;
    const char *algo, *proto;
    int nchannels;         /* exact (v4+), else 0 */
    int max_channels;      /* v1-v3 nMaxChannels */
    const char *comm_name; /* v1-v3 */
    uint64_t comm_hash;    /* v1-v3 */
} memobs_nccl__task_t;

static memobs_nccl__comm_t *memobs_nccl__ctx_comm(void *context) {
    memobs_nccl__comm_t *c = (memobs_nccl__comm_t *)context;
    return c == &memobs_nccl__g.legacy ? NULL : c;
}

/* The live CollApi a task names as its parent, with a reference held
   (the API's wait for its first task handed over), or NULL. *stale: the
   parent is a handle of the pool that is no longer live (the API was
   recorded already: the task counts nothing). */
static memobs_nccl__slot_t *memobs_nccl__api_parent(void *parent, int *stale) {
    memobs_nccl__slot_t *pa;
    uint32_t e;
    *stale = 0;
    if ((uintptr_t)parent < memobs_nccl__g.lo || (uintptr_t)parent >= memobs_nccl__g.hi) return NULL;
    pa = memobs_nccl__slot_of(parent, NULL);
    if (!pa || !memobs_nccl__ref(pa, memobs_nccl__gen_of(parent))) {
        *stale = 1;
        return NULL;
    }
    if (pa->type != MEMOBS_NCCL__EV_CAPI) {
        memobs_nccl__unref(pa);
        *stale = 1;
        return NULL;
    }
    e = __atomic_load_n(&pa->expect, __ATOMIC_ACQUIRE);
    if ((e & MEMOBS_NCCL__GRACE) &&
        __atomic_compare_exchange_n(&pa->expect, &e, e & ~MEMOBS_NCCL__GRACE, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        memobs_nccl__unref(pa); /* the grace reference: this task's now stands for it */
    return pa;
}

static void *memobs_nccl__start_task(void *context, const memobs_nccl__task_t *t) {
    memobs_nccl__comm_t *c = memobs_nccl__ctx_comm(context);
    memobs_nccl__slot_t *pa = NULL;
    memobs_coll_kind_t kind;
    unsigned esize;
    uint64_t bytes;
    memobs_phase_t phase;
    int captured = 0, a2a = 0;
    memobs_nccl__slot_t *s;
    uint32_t expect = 0, refs;
    uint64_t now;
    int waits;
    if (memobs_nccl__g.level == MEMOBS_NCCL__API && t->version >= 5) return NULL; /* counted by the API event */
    if (!c) c = memobs_nccl__comm_get(t->comm_name, t->comm_hash, t->rank, 0, 0);
    if (t->parent && memobs_nccl__is_api(t->parent)) {
        uintptr_t a = (uintptr_t)t->parent;
        if (a & MEMOBS_NCCL__API_COUNTED) return NULL; /* its CollApi was recorded at its start */
        phase = (memobs_phase_t)(a & MEMOBS_NCCL__API_PHASE);
        captured = (a & MEMOBS_NCCL__API_CAPTURED) != 0;
        a2a = t->is_p2p && (a & MEMOBS_NCCL__API_A2A) != 0;
    } else if (t->parent && t->version >= 5) {
        int stale;
        pa = memobs_nccl__api_parent(t->parent, &stale);
        if (stale) return NULL; /* its CollApi was recorded: this late task counts nothing */
        phase = pa ? (memobs_phase_t)pa->phase : memobs_nccl__phase(c);
    } else {
        phase = memobs_nccl__phase(c);
    }
    if (pa) { /* the CollApi has the kind and bytes (and said a bad datatype) */
        kind = pa->kind;
        bytes = 0;
    } else {
        kind = t->func_num >= 0 ? memobs_nccl__kind_num((unsigned)t->func_num) : memobs_nccl__kind(t->func);
        esize = t->dtype_num >= 0 ? memobs_nccl__dtype_size_num((unsigned)t->dtype_num)
                                  : memobs_nccl__dtype_size(t->dtype);
        if (!esize) memobs_nccl__note(MEMOBS_COLL_NOTE_BAD_EVENTS);
        bytes = t->count * esize;
    }
    if (memobs_nccl__g.level == MEMOBS_NCCL__API) { /* v1-v4 at api level: counted at once */
        memobs_coll_record_t rec;
        memset(&rec, 0, sizeof rec);
        rec.comm = c->h;
        rec.kind = kind;
        rec.phase = phase;
        rec.bytes = bytes;
        rec.start_ns = memobs_nccl__g.host->now_ns();
        rec.seq = t->seq;
        rec.captured = captured;
        memobs_nccl__emit(&rec);
        return (void *)(uintptr_t)MEMOBS_NCCL__API_TAG;
    }
    /* Children to wait for: KernelCh (v3+), ProxyOp (proxy level). */
    waits =
        memobs_nccl__g.level >= MEMOBS_NCCL__PROXY || (memobs_nccl__g.level >= MEMOBS_NCCL__COLL && t->version >= 3);
    now = memobs_nccl__g.host->now_ns();
    if (waits && !pa) memobs_nccl__sweep(now, 1); /* under a CollApi: it swept */
    s = memobs_nccl__alloc();
    if (!s && waits) {
        memobs_nccl__sweep(now, 8);
        s = memobs_nccl__alloc();
    }
    if (!s) {
        memobs_nccl__note(MEMOBS_COLL_NOTE_EVENTS_DROPPED);
        if (pa) {
            memobs_nccl__unref(pa); /* the CollApi counts it, untimed */
        } else if (a2a) {
            memobs_nccl__a2a_add(c, kind, bytes, phase, now, 0, captured);
        } else {
            memobs_coll_record_t rec;
            memset(&rec, 0, sizeof rec);
            rec.comm = c->h;
            rec.kind = kind;
            rec.phase = phase;
            rec.bytes = bytes;
            rec.start_ns = now;
            rec.seq = t->seq;
            rec.algo = t->algo;
            rec.proto = t->proto;
            rec.nchannels = t->nchannels ? t->nchannels : t->max_channels;
            rec.captured = captured;
            memobs_nccl__emit(&rec);
        }
        return NULL;
    }
    memobs_nccl__clear(s, t->is_p2p ? MEMOBS_NCCL__EV_P2P : MEMOBS_NCCL__EV_COLL, t->version);
    s->phase = (uint8_t)phase;
    s->captured = (uint8_t)captured;
    s->a2a = (uint8_t)a2a;
    s->comm_ix = memobs_nccl__comm_ix(c);
    s->comm = c->h;
    s->kind = kind;
    s->parent = pa ? (uint32_t)(pa - memobs_nccl__g.slots) + 1 : 0;
    s->nchannels = t->nchannels ? t->nchannels : t->max_channels;
    s->bytes = bytes;
    s->start_ns = now;
    s->aux = t->seq;
    memobs_nccl__copy(s->algo, sizeof s->algo, t->algo);
    memobs_nccl__copy(s->proto, sizeof s->proto, t->proto);
    if (t->version >= 4 && memobs_nccl__g.level >= MEMOBS_NCCL__COLL && t->nchannels > 0)
        expect = (uint32_t)t->nchannels;
    else if (t->version <= 3 && waits)
        expect = MEMOBS_NCCL__GRACE;
    refs = 1 + (expect & ~MEMOBS_NCCL__GRACE) + (expect >> 31);
    __atomic_store_n(&s->expect, expect, __ATOMIC_RELAXED);
    return memobs_nccl__publish(s, refs);
}

/* API events (v5+): a tagged number; at level api also the record. */
static void *memobs_nccl__start_api(void *context, int p2p, const char *func, uint64_t count, const char *dtype,
                                    int captured) {
    memobs_nccl__comm_t *c = memobs_nccl__ctx_comm(context);
    memobs_phase_t phase = memobs_nccl__phase(c);
    int a2a = p2p && func && strcmp(func, "AlltoAll") == 0, counted = 0;
    if (captured) memobs_nccl__note(MEMOBS_COLL_NOTE_CAPTURED_CALLS);
    if (memobs_nccl__g.level >= MEMOBS_NCCL__COLL && !p2p && !captured && c) {
        /* The CollApi is the operation (NCCL 2.29+ starts no Coll for a
           Broadcast played as AllGatherV, symmetric kernels, copy-engine
           collectives): its record, timed by the Coll and KernelCh below
           it when they come. It waits for its first task until
           MEMOBS_NCCL__GRACE_NS after its stop (a group's tasks start at
           ncclGroupEnd, after the call returned). */
        uint64_t now = memobs_nccl__g.host->now_ns();
        unsigned esize = memobs_nccl__dtype_size(dtype);
        memobs_nccl__slot_t *s;
        memobs_nccl__pending_sweep(now);
        memobs_nccl__sweep(now, 1);
        s = memobs_nccl__alloc();
        if (!s) {
            memobs_nccl__sweep(now, 8);
            s = memobs_nccl__alloc();
        }
        if (s) {
            if (!esize) memobs_nccl__note(MEMOBS_COLL_NOTE_BAD_EVENTS);
            memobs_nccl__clear(s, MEMOBS_NCCL__EV_CAPI, 5);
            s->phase = (uint8_t)phase;
            s->comm_ix = memobs_nccl__comm_ix(c);
            s->comm = c->h;
            s->kind = memobs_nccl__kind(func);
            s->bytes = count * esize;
            s->start_ns = now;
            __atomic_store_n(&s->expect, MEMOBS_NCCL__GRACE, __ATOMIC_RELAXED);
            return memobs_nccl__publish(s, 2);
        }
        /* a full pool: recorded now, untimed; its tasks count nothing */
        memobs_nccl__note(MEMOBS_COLL_NOTE_EVENTS_DROPPED);
        counted = 1;
    }
    if ((memobs_nccl__g.level == MEMOBS_NCCL__API || counted) && !captured && c) {
        unsigned esize = memobs_nccl__dtype_size(dtype);
        if (!esize) memobs_nccl__note(MEMOBS_COLL_NOTE_BAD_EVENTS);
        if (a2a) {
            memobs_nccl__a2a_add(c, MEMOBS_COLL_ALL_TO_ALL, count * esize, phase, memobs_nccl__g.host->now_ns(), 0, 0);
        } else {
            memobs_coll_record_t rec;
            memset(&rec, 0, sizeof rec);
            rec.comm = c->h;
            rec.kind = memobs_nccl__kind(func);
            rec.phase = phase;
            rec.bytes = count * esize;
            rec.start_ns = memobs_nccl__g.host->now_ns();
            memobs_nccl__emit(&rec);
        }
    }
    return (void *)(uintptr_t)(MEMOBS_NCCL__API_TAG | (unsigned)phase | (captured ? MEMOBS_NCCL__API_CAPTURED : 0u) |
                               (a2a ? MEMOBS_NCCL__API_A2A : 0u) | (counted ? MEMOBS_NCCL__API_COUNTED : 0u));
}

/* A KernelCh: times its parent Coll/P2p. has_timer: pTimer given (v4+). */
static void *memobs_nccl__start_kch(void *parent, int version, int has_timer, uint64_t ptimer) {
    memobs_nccl__slot_t *p = memobs_nccl__slot_of(parent, NULL), *s;
    uint32_t e;
    int held = 0;
    if (!p) return NULL;
    /* A reference announced by nChannels (only a Coll/P2p has any), else a
       new one; the parent's fields are read once it is held. */
    e = __atomic_load_n(&p->expect, __ATOMIC_RELAXED);
    while ((e & ~MEMOBS_NCCL__GRACE) > 0 && !held)
        held = __atomic_compare_exchange_n(&p->expect, &e, e - 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
    if (!held && !memobs_nccl__ref(p, memobs_nccl__gen_of(parent))) return NULL;
    if (p->type != MEMOBS_NCCL__EV_COLL && p->type != MEMOBS_NCCL__EV_P2P && p->type != MEMOBS_NCCL__EV_CAPI) {
        memobs_nccl__unref(p);
        return NULL;
    }
    s = memobs_nccl__alloc();
    if (!s) {
        memobs_nccl__note(MEMOBS_COLL_NOTE_EVENTS_DROPPED);
        memobs_nccl__unref(p);
        return NULL;
    }
    memobs_nccl__clear(s, MEMOBS_NCCL__EV_KCH, version);
    s->parent = (uint32_t)(p - memobs_nccl__g.slots) + 1;
    s->t0 = has_timer ? ptimer : memobs_nccl__g.host->now_ns();
    s->aux = (uint64_t)has_timer;
    return memobs_nccl__publish(s, 1);
}

/* A ProxyOp: peer bytes (proxy level) and, v1-v2, the op's time. */
static void *memobs_nccl__start_pop(void *context, void *parent, int version, pid_t pid, int peer, int is_send) {
    memobs_nccl__comm_t *c = memobs_nccl__ctx_comm(context);
    memobs_nccl__slot_t *p = NULL, *s;
    memobs_phase_t phase;
    memobs_comm_t comm;
    int comm_ix;
    /* PXN: a parent from another process's address space is never read. */
    if (parent && pid == getpid() && !memobs_nccl__is_api(parent)) {
        p = memobs_nccl__slot_of(parent, NULL);
        if (p && !memobs_nccl__ref(p, memobs_nccl__gen_of(parent))) p = NULL;
        if (p && p->type != MEMOBS_NCCL__EV_COLL && p->type != MEMOBS_NCCL__EV_P2P) {
            memobs_nccl__unref(p);
            p = NULL;
        }
    }
    if (p) {
        phase = (memobs_phase_t)p->phase;
        comm = p->comm;
        comm_ix = p->comm_ix;
    } else if (c) {
        phase = (memobs_phase_t)__atomic_load_n(&c->last_phase, __ATOMIC_RELAXED);
        comm = c->h;
        comm_ix = memobs_nccl__comm_ix(c);
    } else {
        return NULL; /* v1-v3 with no parent: no comm to charge */
    }
    s = memobs_nccl__alloc();
    if (!s) {
        memobs_nccl__note(MEMOBS_COLL_NOTE_EVENTS_DROPPED);
        if (p) memobs_nccl__unref(p);
        return NULL;
    }
    memobs_nccl__clear(s, MEMOBS_NCCL__EV_POP, version);
    s->parent = p ? (uint32_t)(p - memobs_nccl__g.slots) + 1 : 0;
    s->wire = p ? memobs_nccl__wire(p->proto) : MEMOBS_NCCL__WIRE_UNKNOWN;
    s->phase = (uint8_t)phase;
    s->comm = comm;
    s->comm_ix = comm_ix;
    s->dir = (uint8_t)(is_send ? MEMOBS_PEER_SEND : MEMOBS_PEER_RECV);
    s->peer =
        memobs_nccl__g.level >= MEMOBS_NCCL__PROXY ? memobs_nccl__peer(memobs_nccl__comm_at(comm_ix), comm, peer) : -1;
    s->t0 = memobs_nccl__g.host->now_ns();
    return memobs_nccl__publish(s, 1);
}

static void *memobs_nccl__start_step(void *parent) {
    int step = 0;
    memobs_nccl__slot_t *p = memobs_nccl__slot_of(parent, &step);
    if (!p || step || p->type != MEMOBS_NCCL__EV_POP) return NULL;
    return (void *)((uintptr_t)parent | MEMOBS_NCCL__STEP_BIT);
}

/* Proxy-level sizes (transSize) count what the protocol moves: LL sends
   16-byte lines of 8 bytes of data and 8 of flags, LL128 128-byte lines
   of 120 bytes of data; Simple moves the data alone. The peer figures are
   payload: LL halved, LL128 x 120/128; a protocol unknown (no parent in
   this process: PXN) leaves them as NCCL gave them. */
static uint64_t memobs_nccl__payload(int wire, uint64_t bytes) {
    if (wire == MEMOBS_NCCL__WIRE_LL) return bytes / 2;
    if (wire == MEMOBS_NCCL__WIRE_LL128) return bytes / 128 * 120 + bytes % 128 * 120 / 128;
    return bytes;
}

static void memobs_nccl__peer_bytes(const memobs_nccl__slot_t *s, memobs_peer_dir_t dir, uint64_t bytes) {
    bytes = memobs_nccl__payload(s->wire, bytes);
    if (s->peer < 0 || !bytes) return;
    memobs_nccl__g.host->record_peer_xfer_timed(s->peer, dir, bytes, (memobs_phase_t)s->phase, 0);
}

/* args_v4: the v4+ union, else NULL; args_v1: the v1-v3 union, else NULL. */
static void memobs_nccl__record_state(void *handle, int state, const ncclProfilerEventStateArgs_v4_t *a4,
                                      const ncclProfilerEventStateArgs_v1_t *a1) {
    int step = 0;
    memobs_nccl__slot_t *s;
    if (!handle || memobs_nccl__is_api(handle)) return;
    s = memobs_nccl__slot_of(handle, &step);
    if (!s) {
        /* a stale handle of the pool (a state after the stop) is ignored;
           one the plugin never gave is a bad call */
        if ((uintptr_t)handle < memobs_nccl__g.lo || (uintptr_t)handle >= memobs_nccl__g.hi) memobs_nccl__bad();
        return;
    }
    if (step) {
        if (s->type != MEMOBS_NCCL__EV_POP || !a4) return;
        if (state == ncclProfilerProxyStepSendWait)
            memobs_nccl__peer_bytes(s, MEMOBS_PEER_SEND, a4->proxyStep.transSize);
        else if (state == ncclProfilerProxyStepRecvFlushWait)
            memobs_nccl__peer_bytes(s, MEMOBS_PEER_RECV, a4->proxyStep.transSize);
        return;
    }
    if (s->type == MEMOBS_NCCL__EV_KCH && state == ncclProfilerKernelChStop && a4) {
        __atomic_store_n(&s->t1, a4->kernelCh.pTimer, __ATOMIC_RELAXED);
    } else if (s->type == MEMOBS_NCCL__EV_POP && a1 &&
               (state == ncclProfilerProxyOpSendTransmitted || state == ncclProfilerProxyOpSendDone ||
                state == ncclProfilerProxyOpRecvReceived || state == ncclProfilerProxyOpRecvDone)) {
        /* v1-v3: the op's running total; count what it grew by. 2.23 gives
           SendTransmitted the total before the step, so the last step shows
           only at SendDone; later versions after it (Done adds nothing). */
        uint64_t total = a1->proxyOp.transSize, seen = __atomic_load_n(&s->aux, __ATOMIC_RELAXED);
        if (total > seen) {
            __atomic_store_n(&s->aux, total, __ATOMIC_RELAXED);
            memobs_nccl__peer_bytes(s, state <= ncclProfilerProxyOpSendDone ? MEMOBS_PEER_SEND : MEMOBS_PEER_RECV,
                                    total - seen);
        }
    }
}

static void memobs_nccl__stop(void *handle) {
    int step = 0;
    memobs_nccl__slot_t *s, *p;
    if (!handle || memobs_nccl__is_api(handle)) return;
    s = memobs_nccl__slot_of(handle, &step);
    if (step) return; /* ProxyStep: no slot */
    if (!s || __atomic_exchange_n(&s->stopped, 1u, __ATOMIC_ACQ_REL)) {
        memobs_nccl__note(MEMOBS_COLL_NOTE_BAD_EVENTS);
        return;
    }
    switch (s->type) {
    case MEMOBS_NCCL__EV_COLL:
    case MEMOBS_NCCL__EV_P2P:
    case MEMOBS_NCCL__EV_CAPI:
        __atomic_store_n(&s->t1, memobs_nccl__g.host->now_ns() | 1u, __ATOMIC_RELAXED); /* stopped at, never 0 */
        if (s->type == MEMOBS_NCCL__EV_CAPI && (__atomic_load_n(&s->expect, __ATOMIC_RELAXED) & MEMOBS_NCCL__GRACE))
            memobs_nccl__pending_add(handle);
        memobs_nccl__unref(s);
        return;
    case MEMOBS_NCCL__EV_KCH:
        p = s->parent ? &memobs_nccl__g.slots[s->parent - 1] : NULL;
        if (p) {
            uint64_t t1 = __atomic_load_n(&s->t1, __ATOMIC_RELAXED);
            if (!s->aux) t1 = memobs_nccl__g.host->now_ns(); /* v3: CPU time */
            memobs_nccl__widen(p, s->t0, t1);
        }
        if (p) memobs_nccl__unref(p);
        memobs_nccl__unref(s);
        return;
    case MEMOBS_NCCL__EV_POP:
        p = s->parent ? &memobs_nccl__g.slots[s->parent - 1] : NULL;
        if (p && s->version <= 2) /* v1-v2: no KernelCh, the ops' span */
            memobs_nccl__widen(p, s->t0, memobs_nccl__g.host->now_ns());
        if (p) memobs_nccl__unref(p);
        memobs_nccl__unref(s);
        return;
    default: memobs_nccl__note(MEMOBS_COLL_NOTE_BAD_EVENTS); return;
    }
}

/* ======================================================================== */
/* init / finalize                                                          */
/* ======================================================================== */

static int memobs_nccl__mask(int version) {
    int m = 0, level = memobs_nccl__g.level;
    if (level >= MEMOBS_NCCL__API)
        m |= version >= 5 ? (ncclProfileCollApi | ncclProfileP2pApi) : (ncclProfileColl | ncclProfileP2p);
    if (level >= MEMOBS_NCCL__COLL) {
        m |= ncclProfileColl | ncclProfileP2p;
        if (version >= 3) m |= ncclProfileKernelCh;
    }
    if (level >= MEMOBS_NCCL__PROXY) m |= ncclProfileProxyOp | ncclProfileProxyStep;
    if (level >= MEMOBS_NCCL__NET) {
        m |= ncclProfileProxyCtrl;
        if (version >= 3) m |= ncclProfileNetPlugin;
    }
    return m;
}

/* v1-v3: comm NULL (communicators come with the events). */
static ncclResult_t memobs_nccl__init(int version, void **context, int *mask, const char *name, uint64_t id, int nnodes,
                                      int nranks, int rank, ncclDebugLogger_t logfn) {
    memobs_nccl__comm_t *c;
    uint64_t early;
    int m;
    pthread_once(&memobs_nccl__once, memobs_nccl__setup);
    if (!context || !mask) return ncclInvalidArgument;
    *context = NULL;
    if (!memobs_nccl__ready() || !memobs_nccl__g.host->get_enabled()) {
        /* Refused: an empty context and ncclSuccess (on an error NCCL
           2.23-2.27 drop the plugin for the whole process; 2.28+ take a
           reference off it at the error and another at the comm's
           destroy). NCCL keeps one mask for the process: written 0 only
           while no accepted init gave one. */
        if (!__atomic_load_n(&memobs_nccl__g.given, __ATOMIC_ACQUIRE)) __atomic_store_n(mask, 0, __ATOMIC_RELAXED);
        return ncclSuccess;
    }
    early = __atomic_exchange_n(&memobs_nccl__g.early_bad, (uint64_t)0, __ATOMIC_RELAXED);
    if (early) memobs_nccl__g.host->coll_note(MEMOBS_COLL_NOTE_BAD_EVENTS, early);
    memobs_nccl__g.host->coll_set_source("nccl-profiler", memobs_nccl__g.instance,
                                         memobs_nccl__level_names[memobs_nccl__g.level], version);
    c = version >= 4 ? memobs_nccl__comm_get(name, id, rank, nranks, nnodes) : &memobs_nccl__g.legacy;
    __atomic_fetch_add(&c->live, 1u, __ATOMIC_ACQ_REL);
    m = memobs_nccl__mask(version);
    __atomic_store_n(mask, m, __ATOMIC_RELAXED);
    __atomic_store_n(&memobs_nccl__g.given, m, __ATOMIC_RELEASE);
    *context = c;
    if (logfn)
        logfn(NCCL_LOG_INFO, 1ul /* NCCL_INIT */, __FILE__, __LINE__,
              "memobs profiler: level %s, recording into the %s memobs (comm %s rank %d/%d)",
              memobs_nccl__level_names[memobs_nccl__g.level], memobs_nccl__g.instance, name ? name : "", rank, nranks);
    return ncclSuccess;
}

/* The comm goes: operations still waiting for announced KernelCh are
   recorded now. Its entry stays (memobs keeps the comm's figures). */
static ncclResult_t memobs_nccl__finalize(void *context) {
    memobs_nccl__comm_t *e, *c;
    uint32_t live;
    if (!context) return ncclSuccess; /* a refused init's */
    e = memobs_nccl__ctx_live(context);
    live = e ? __atomic_load_n(&e->live, __ATOMIC_ACQUIRE) : 0;
    while (live > 0 && !__atomic_compare_exchange_n(&e->live, &live, live - 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    }
    if (!live) {
        memobs_nccl__bad(); /* a second finalize, one before any init, or a context never given */
        return ncclSuccess;
    }
    c = memobs_nccl__ctx_comm(context);
    if (memobs_nccl__g.level >= MEMOBS_NCCL__API) memobs_nccl__flush(c ? memobs_nccl__comm_ix(c) : INT32_MAX);
    return ncclSuccess;
}

/* ======================================================================== */
/* Per-version entry points                                                 */
/* ======================================================================== */

static void memobs_nccl__task_v123(memobs_nccl__task_t *t, int version, void *parent, int rank) {
    memset(t, 0, sizeof *t);
    t->version = version;
    t->parent = parent;
    t->rank = rank;
    t->func_num = -1;
    t->dtype_num = -1;
}

/* Types the level did not ask for (NCCL may start API parents anyway):
   NULL, except the counted ones. */
static void *memobs_nccl__other(uint64_t type) {
    if (type == ncclProfileNetPlugin)
        __atomic_fetch_add(&memobs_nccl__g.net_events, (uint64_t)1, __ATOMIC_RELAXED);
    else if (type == ncclProfileProxyCtrl)
        __atomic_fetch_add(&memobs_nccl__g.ctrl_events, (uint64_t)1, __ATOMIC_RELAXED);
    return NULL;
}

static ncclResult_t memobs_nccl__init_v1(void **context, int *mask) {
    return memobs_nccl__init(1, context, mask, NULL, 0, 0, 0, 0, NULL);
}
static ncclResult_t memobs_nccl__init_v2(void **context, int *mask) {
    return memobs_nccl__init(2, context, mask, NULL, 0, 0, 0, 0, NULL);
}
static ncclResult_t memobs_nccl__init_v3(void **context, int *mask) {
    return memobs_nccl__init(3, context, mask, NULL, 0, 0, 0, 0, NULL);
}
static ncclResult_t memobs_nccl__init_v4(void **context, int *mask, const char *name, uint64_t hash, int nnodes,
                                         int nranks, int rank, ncclDebugLogger_t logfn) {
    return memobs_nccl__init(4, context, mask, name, hash, nnodes, nranks, rank, logfn);
}
static ncclResult_t memobs_nccl__init_v5(void **context, uint64_t id, int *mask, const char *name, int nnodes,
                                         int nranks, int rank, ncclDebugLogger_t logfn) {
    return memobs_nccl__init(5, context, mask, name, id, nnodes, nranks, rank, logfn);
}
static ncclResult_t memobs_nccl__init_v6(void **context, uint64_t id, int *mask, const char *name, int nnodes,
                                         int nranks, int rank, ncclDebugLogger_t logfn) {
    return memobs_nccl__init(6, context, mask, name, id, nnodes, nranks, rank, logfn);
}

static ncclResult_t memobs_nccl__start_v1(void *context, void **h, ncclProfilerEventDescr_v1_t *d) {
    memobs_nccl__task_t t;
    if (!h) return ncclSuccess;
    *h = NULL;
    if (!context || !d) return ncclSuccess;
    if (!memobs_nccl__ctx_live(context)) {
        memobs_nccl__bad(); /* before any init, after finalize, or never given */
        return ncclSuccess;
    }
    switch (d->type) {
    case ncclProfileColl:
        memobs_nccl__task_v123(&t, 1, d->parentObj, d->rank);
        t.func_num = d->coll.func;
        t.dtype_num = d->coll.datatype;
        t.count = d->coll.count;
        t.seq = d->coll.seqNumber;
        t.algo = memobs_nccl__algo_num(d->coll.algo);
        t.proto = memobs_nccl__proto_num(d->coll.proto);
        t.max_channels = d->coll.nMaxChannels;
        t.comm_name = d->coll.name;
        t.comm_hash = d->coll.commHash;
        *h = memobs_nccl__start_task(context, &t);
        break;
    case ncclProfileP2p:
        memobs_nccl__task_v123(&t, 1, d->parentObj, d->rank);
        t.is_p2p = 1;
        t.func_num = d->p2p.func;
        t.dtype_num = d->p2p.datatype;
        t.count = d->p2p.count;
        t.comm_name = d->p2p.name;
        t.comm_hash = d->p2p.commHash;
        *h = memobs_nccl__start_task(context, &t);
        break;
    case ncclProfileProxyOp:
        *h = memobs_nccl__start_pop(context, d->parentObj, 1, d->proxyOp.pid, d->proxyOp.peer, d->proxyOp.isSend);
        break;
    case ncclProfileProxyStep: *h = memobs_nccl__start_step(d->parentObj); break;
    default: *h = memobs_nccl__other(d->type); break;
    }
    return ncclSuccess;
}

/* v2 and v3 share the coll/p2p fields but for v2's trafficBytes. */
#define MEMOBS_NCCL__TASK_V23(t, d, ver)                                                                               \
    do {                                                                                                               \
        if ((d)->type == ncclProfileColl) {                                                                            \
            memobs_nccl__task_v123(&(t), ver, (d)->parentObj, (d)->rank);                                              \
            (t).func = (d)->coll.func;                                                                                 \
            (t).dtype = (d)->coll.datatype;                                                                            \
            (t).count = (d)->coll.count;                                                                               \
            (t).seq = (d)->coll.seqNumber;                                                                             \
            (t).algo = (d)->coll.algo;                                                                                 \
            (t).proto = (d)->coll.proto;                                                                               \
            (t).max_channels = (d)->coll.nMaxChannels;                                                                 \
            (t).comm_name = (d)->coll.name;                                                                            \
            (t).comm_hash = (d)->coll.commHash;                                                                        \
        } else {                                                                                                       \
            memobs_nccl__task_v123(&(t), ver, (d)->parentObj, (d)->rank);                                              \
            (t).is_p2p = 1;                                                                                            \
            (t).func = (d)->p2p.func;                                                                                  \
            (t).dtype = (d)->p2p.datatype;                                                                             \
            (t).count = (d)->p2p.count;                                                                                \
            (t).comm_name = (d)->p2p.name;                                                                             \
            (t).comm_hash = (d)->p2p.commHash;                                                                         \
        }                                                                                                              \
    } while (0)

static ncclResult_t memobs_nccl__start_v2(void *context, void **h, ncclProfilerEventDescr_v2_t *d) {
    memobs_nccl__task_t t;
    if (!h) return ncclSuccess;
    *h = NULL;
    if (!context || !d) return ncclSuccess;
    if (!memobs_nccl__ctx_live(context)) {
        memobs_nccl__bad(); /* before any init, after finalize, or never given */
        return ncclSuccess;
    }
    switch (d->type) {
    case ncclProfileColl:
    case ncclProfileP2p:
        MEMOBS_NCCL__TASK_V23(t, d, 2);
        *h = memobs_nccl__start_task(context, &t);
        break;
    case ncclProfileProxyOp:
        *h = memobs_nccl__start_pop(context, d->parentObj, 2, d->proxyOp.pid, d->proxyOp.peer, d->proxyOp.isSend);
        break;
    case ncclProfileProxyStep: *h = memobs_nccl__start_step(d->parentObj); break;
    default: *h = memobs_nccl__other(d->type); break;
    }
    return ncclSuccess;
}

static ncclResult_t memobs_nccl__start_v3(void *context, void **h, ncclProfilerEventDescr_v3_t *d) {
    memobs_nccl__task_t t;
    if (!h) return ncclSuccess;
    *h = NULL;
    if (!context || !d) return ncclSuccess;
    if (!memobs_nccl__ctx_live(context)) {
        memobs_nccl__bad(); /* before any init, after finalize, or never given */
        return ncclSuccess;
    }
    switch (d->type) {
    case ncclProfileColl:
    case ncclProfileP2p:
        MEMOBS_NCCL__TASK_V23(t, d, 3);
        *h = memobs_nccl__start_task(context, &t);
        break;
    case ncclProfileKernelCh: *h = memobs_nccl__start_kch(d->parentObj, 3, 0, 0); break;
    case ncclProfileProxyOp:
        *h = memobs_nccl__start_pop(context, d->parentObj, 3, d->proxyOp.pid, d->proxyOp.peer, d->proxyOp.isSend);
        break;
    case ncclProfileProxyStep: *h = memobs_nccl__start_step(d->parentObj); break;
    default: *h = memobs_nccl__other(d->type); break;
    }
    return ncclSuccess;
}

/* v4, v5 and v6 share coll/p2p/proxy/kernelCh field names. */
#define MEMOBS_NCCL__TASK_V456(t, d, ver)                                                                              \
    do {                                                                                                               \
        memset(&(t), 0, sizeof(t));                                                                                    \
        (t).version = ver;                                                                                             \
        (t).parent = (d)->parentObj;                                                                                   \
        (t).rank = (d)->rank;                                                                                          \
        (t).func_num = -1;                                                                                             \
        (t).dtype_num = -1;                                                                                            \
        if ((d)->type == ncclProfileColl) {                                                                            \
            (t).func = (d)->coll.func;                                                                                 \
            (t).dtype = (d)->coll.datatype;                                                                            \
            (t).count = (d)->coll.count;                                                                               \
            (t).seq = (d)->coll.seqNumber;                                                                             \
            (t).algo = (d)->coll.algo;                                                                                 \
            (t).proto = (d)->coll.proto;                                                                               \
            (t).nchannels = (d)->coll.nChannels;                                                                       \
        } else {                                                                                                       \
            (t).is_p2p = 1;                                                                                            \
            (t).func = (d)->p2p.func;                                                                                  \
            (t).dtype = (d)->p2p.datatype;                                                                             \
            (t).count = (d)->p2p.count;                                                                                \
            (t).nchannels = (d)->p2p.nChannels;                                                                        \
        }                                                                                                              \
    } while (0)

#define MEMOBS_NCCL__START_V456(ver, d, context, h)                                                                    \
    do {                                                                                                               \
        memobs_nccl__task_t t;                                                                                         \
        switch ((d)->type) {                                                                                           \
        case ncclProfileColl:                                                                                          \
        case ncclProfileP2p:                                                                                           \
            MEMOBS_NCCL__TASK_V456(t, d, ver);                                                                         \
            *(h) = memobs_nccl__start_task(context, &t);                                                               \
            break;                                                                                                     \
        case ncclProfileKernelCh: *(h) = memobs_nccl__start_kch((d)->parentObj, ver, 1, (d)->kernelCh.pTimer); break;  \
        case ncclProfileProxyOp:                                                                                       \
            *(h) = memobs_nccl__start_pop(context, (d)->parentObj, ver, (d)->proxyOp.pid, (d)->proxyOp.peer,           \
                                          (d)->proxyOp.isSend);                                                        \
            break;                                                                                                     \
        case ncclProfileProxyStep: *(h) = memobs_nccl__start_step((d)->parentObj); break;                              \
        default: *(h) = memobs_nccl__other((d)->type); break;                                                          \
        }                                                                                                              \
    } while (0)

static ncclResult_t memobs_nccl__start_v4(void *context, void **h, ncclProfilerEventDescr_v4_t *d) {
    if (!h) return ncclSuccess;
    *h = NULL;
    if (!context || !d) return ncclSuccess;
    if (!memobs_nccl__ctx_live(context)) {
        memobs_nccl__bad(); /* before any init, after finalize, or never given */
        return ncclSuccess;
    }
    MEMOBS_NCCL__START_V456(4, d, context, h);
    return ncclSuccess;
}

static ncclResult_t memobs_nccl__start_v5(void *context, void **h, ncclProfilerEventDescr_v5_t *d) {
    if (!h) return ncclSuccess;
    *h = NULL;
    if (!context || !d) return ncclSuccess;
    if (!memobs_nccl__ctx_live(context)) {
        memobs_nccl__bad(); /* before any init, after finalize, or never given */
        return ncclSuccess;
    }
    if (d->type == ncclProfileCollApi)
        *h = memobs_nccl__start_api(context, 0, d->collApi.func, d->collApi.count, d->collApi.datatype,
                                    d->collApi.graphCaptured);
    else if (d->type == ncclProfileP2pApi)
        *h = memobs_nccl__start_api(context, 1, d->p2pApi.func, d->p2pApi.count, d->p2pApi.datatype,
                                    d->p2pApi.graphCaptured);
    else
        MEMOBS_NCCL__START_V456(5, d, context, h);
    return ncclSuccess;
}

static ncclResult_t memobs_nccl__start_v6(void *context, void **h, ncclProfilerEventDescr_v6_t *d) {
    if (!h) return ncclSuccess;
    *h = NULL;
    if (!context || !d) return ncclSuccess;
    if (!memobs_nccl__ctx_live(context)) {
        memobs_nccl__bad(); /* before any init, after finalize, or never given */
        return ncclSuccess;
    }
    if (d->type == ncclProfileCollApi)
        *h = memobs_nccl__start_api(context, 0, d->collApi.func, d->collApi.count, d->collApi.datatype,
                                    d->collApi.graphCaptured);
    else if (d->type == ncclProfileP2pApi)
        *h = memobs_nccl__start_api(context, 1, d->p2pApi.func, d->p2pApi.count, d->p2pApi.datatype,
                                    d->p2pApi.graphCaptured);
    else
        MEMOBS_NCCL__START_V456(6, d, context, h);
    return ncclSuccess;
}

static ncclResult_t memobs_nccl__stop_any(void *handle) {
    if (!handle) return ncclSuccess;
    if (!memobs_nccl__ready())
        memobs_nccl__bad();
    else
        memobs_nccl__stop(handle);
    return ncclSuccess;
}

static ncclResult_t memobs_nccl__state_v1(void *handle, ncclProfilerEventState_v1_t state,
                                          ncclProfilerEventStateArgs_v1_t *a) {
    if (!handle) return ncclSuccess;
    if (!memobs_nccl__ready())
        memobs_nccl__bad();
    else
        memobs_nccl__record_state(handle, (int)state, NULL, a);
    return ncclSuccess;
}
static ncclResult_t memobs_nccl__state_v4(void *handle, ncclProfilerEventState_v4_t state,
                                          ncclProfilerEventStateArgs_v4_t *a) {
    if (!handle) return ncclSuccess;
    if (!memobs_nccl__ready())
        memobs_nccl__bad();
    else
        memobs_nccl__record_state(handle, (int)state, a, NULL);
    return ncclSuccess;
}

MEMOBS_NCCL__EXPORT const ncclProfiler_v1_t ncclProfiler_v1 = {"memobs",
                                                               memobs_nccl__init_v1,
                                                               memobs_nccl__start_v1,
                                                               memobs_nccl__stop_any,
                                                               memobs_nccl__state_v1,
                                                               memobs_nccl__finalize};
MEMOBS_NCCL__EXPORT const ncclProfiler_v2_t ncclProfiler_v2 = {"memobs",
                                                               memobs_nccl__init_v2,
                                                               memobs_nccl__start_v2,
                                                               memobs_nccl__stop_any,
                                                               memobs_nccl__state_v1,
                                                               memobs_nccl__finalize};
MEMOBS_NCCL__EXPORT const ncclProfiler_v3_t ncclProfiler_v3 = {"memobs",
                                                               memobs_nccl__init_v3,
                                                               memobs_nccl__start_v3,
                                                               memobs_nccl__stop_any,
                                                               memobs_nccl__state_v1,
                                                               memobs_nccl__finalize};
MEMOBS_NCCL__EXPORT const ncclProfiler_v4_t ncclProfiler_v4 = {"memobs",
                                                               memobs_nccl__init_v4,
                                                               memobs_nccl__start_v4,
                                                               memobs_nccl__stop_any,
                                                               memobs_nccl__state_v4,
                                                               memobs_nccl__finalize};
MEMOBS_NCCL__EXPORT const ncclProfiler_v5_t ncclProfiler_v5 = {"memobs",
                                                               memobs_nccl__init_v5,
                                                               memobs_nccl__start_v5,
                                                               memobs_nccl__stop_any,
                                                               memobs_nccl__state_v4,
                                                               memobs_nccl__finalize};
MEMOBS_NCCL__EXPORT const ncclProfiler_v6_t ncclProfiler_v6 = {"memobs",
                                                               memobs_nccl__init_v6,
                                                               memobs_nccl__start_v6,
                                                               memobs_nccl__stop_any,
                                                               memobs_nccl__state_v4,
                                                               memobs_nccl__finalize};
