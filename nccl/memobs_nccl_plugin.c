/* nccl/memobs_nccl_plugin.c - libnccl-profiler-memobs.so, memobs as an NCCL
   profiler plugin: collectives (ops, bytes, GPU time, algbw/busbw) and bytes
   per peer rank, recorded into the process's memobs.

   Use: NCCL_PROFILER_PLUGIN=memobs (NCCL 2.26+; older: the file name or a
   path) with build/libnccl-profiler-memobs.so on the library path. Built
   by `make nccl-plugin`. docs/collectives.md is the user's story; this
   block is the plugin's contract, the one tests/nccl/nccl_driver.c checks.

   EXPORTS: only the data objects ncclProfiler_v1 ... ncclProfiler_v6 (name
   "memobs"); NCCL takes the newest it knows. Every function returns
   ncclSuccess but a refused init.

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
     net     proxy + ProxyCtrl|NetPlugin     same (v3+: NetPlugin) proxy + ProxyCtrl
   Refusal (MEMOBS_NCCL=off/0, or memobs disabled when that init runs):
   *eActivationMask = 0, *context = NULL, returns ncclInternalError. Calls
   with a NULL context return ncclSuccess and a NULL handle.

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
       per 2 x nranks such events of a comm. v1-v4: each Coll/P2p is one
       untimed record at start.
     level coll and above: each Coll/P2p is one record when it completes:
       when its own stopEvent (NCCL: enqueued) and every child it counts
       (KernelCh, ProxyOp) have stopped. v4+: the Coll holds a reference
       for each of its nChannels KernelCh from the start (children that
       come after NCCL stopped the Coll still count; more KernelCh than
       nChannels take a reference each while the Coll lives). ns = the
       longest KernelCh: pTimer at KernelChStop minus pTimer at start (v4+,
       GPU time), CPU time between KernelCh start and stop (v3); v1-v2:
       the longest ProxyOp's CPU span at proxy level, else untimed (0).
       Also seq (seqNumber), algo, proto (v1 numbers turned into NCCL's
       names), nChannels (v4+; v1-v3 nMaxChannels). A P2p whose P2pApi
       parent says "AlltoAll" goes to the comm's all_to_all: one record
       per 2 x nranks such P2p (bytes = their sum / 2n; ns = their
       longest). Phase: the CollApi/P2pApi's (read with the host's
       memobs_get_phase on the user thread at the API call; v5+); without
       an API parent the starting thread's phase, and when that is unphased
       the comm's last phase seen (best effort on the CUDA callback
       thread). graphCaptured API calls: CAPTURED_CALLS +1 and no record;
       a task event whose API parent was captured is a replay:
       CAPTURED_REPLAYS +1 per record and the record says captured.
       Unknown datatype: 0 bytes and BAD_EVENTS +1. Unknown func: kind
       "other:<func>".
     level proxy: ProxyStep states SendWait (sent) and RecvFlushWait
       (received) with transSize (v4+: proxyStep args) ->
       memobs_record_peer_xfer_timed(rank peer of the comm, SEND/RECV,
       transSize, the op's phase, 0): one peer op per step. No other
       state counts (NCCL passes transSize with all of them). v1-v3:
       ProxyOp states SendTransmitted / RecvReceived carry the op's running
       total: the increase since the last one is recorded. PXN: parentObj
       of a ProxyOp is read only when proxyOp.pid == getpid(); a foreign
       ProxyOp records peer bytes against the init's comm (v4+; v1-v3:
       none) in that comm's last phase.
     level net: NetPlugin and ProxyCtrl events are accepted (NULL handle)
       and only counted inside the plugin.

   HANDLES AND POOL: one fixed pool of MEMOBS_NCCL_EVENTS slots of 128
   bytes, a lock-free free list (index + tag word). Coll, P2p, KernelCh
   and ProxyOp take a slot; the handle is the slot's address with the
   slot's generation mod 64 in bits 1-6. A ProxyStep takes no slot: its
   handle is its ProxyOp's with bit 0 set. API events take no slot: their
   handle is a small tagged number (phase, captured, AlltoAll), never
   dereferenced. GroupApi, Group, KernelLaunch, CE events: NULL handle. A
   full pool: NULL handle, EVENTS_DROPPED +1; a Coll/P2p without a slot is
   recorded at once (ops, bytes, untimed). A stop of an unknown, stale or
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

#define MNP_EXPORT __attribute__((visibility("default")))

/* ======================================================================== */
/* State                                                                    */
/* ======================================================================== */

enum { MNP_OFF = 0, MNP_API, MNP_COLL, MNP_PROXY, MNP_NET };
static const char *const mnp_level_names[] = {"off", "api", "coll", "proxy", "net"};

enum { MNP_EV_FREE = 0, MNP_EV_COLL, MNP_EV_P2P, MNP_EV_KCH, MNP_EV_POP };

#define MNP_MAX_COMMS 64
#define MNP_DEFAULT_EVENTS 4096u
#define MNP_MAX_EVENTS (1u << 20)
#define MNP_SLOT_SHIFT 7
#define MNP_GEN_MASK 63u
#define MNP_STEP_BIT 1u
/* API handles: small numbers in the never-mapped first page. */
#define MNP_API_TAG 0x800u
#define MNP_API_PHASE 0x3u
#define MNP_API_CAPTURED 0x4u
#define MNP_API_A2A 0x8u

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
} mnp_comm_t;

typedef struct __attribute__((aligned(128))) {
    uint64_t word;     /* atomic: generation << 32 | references */
    uint32_t next;     /* atomic: free list, index + 1 of the next free slot */
    uint32_t stopped;  /* atomic: stopEvent seen (1 while free) */
    uint8_t type;      /* MNP_EV_* */
    uint8_t phase;
    uint8_t captured;
    uint8_t dir;       /* ProxyOp: MEMOBS_PEER_SEND / RECV */
    uint8_t a2a;       /* P2p task of an AlltoAll call */
    uint8_t version;
    uint8_t pad[2];
    uint32_t expect;   /* atomic: KernelCh announced by nChannels, not yet started */
    int32_t comm_ix;   /* index in mnp.comms, -1 none */
    memobs_comm_t comm;
    memobs_coll_kind_t kind;
    memobs_peer_t peer;
    int32_t nchannels;
    uint32_t parent;   /* index + 1 of the Coll/P2p slot a child holds, 0 none */
    uint64_t bytes;
    uint64_t start_ns; /* host clock when the event started */
    uint64_t t0, t1;   /* KernelCh: timer at start / KernelChStop; ProxyOp: CPU start */
    uint64_t ns;       /* Coll/P2p: the longest child (atomic max) */
    uint64_t aux;      /* Coll/P2p: seq; ProxyOp (v1-v3): transSize seen */
    char algo[16];
    char proto[8];
} mnp_slot_t;

typedef char mnp_slot_is_128[sizeof(mnp_slot_t) == (1u << MNP_SLOT_SHIFT) ? 1 : -1];

/* The once-control and the comm lock sit apart from the state struct:
   their initializers are the only non-zero ones. */
static pthread_once_t mnp_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t mnp_comm_lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
    const memobs_host_api_t *host;
    const char *instance;
    int level;
    int version;       /* API version of the first init */
    uint32_t nslots;
    mnp_slot_t *slots;
    uintptr_t lo, hi;  /* pool address range */
    uint64_t free_head; /* atomic: tag << 32 | (index + 1), 0 = empty */
    uint32_t ncomms;   /* atomic: entries published */
    mnp_comm_t comms[MNP_MAX_COMMS];
    mnp_comm_t other;  /* beyond MNP_MAX_COMMS */
    mnp_comm_t legacy; /* the context of v1-v3 inits (no comm at init) */
    uint64_t net_events, ctrl_events; /* atomic: level net's counts */
    void *self;        /* dlopen handle pinning the plugin */
} mnp;

/* ======================================================================== */
/* Host table                                                               */
/* ======================================================================== */

/* The plugin's own memobs, called directly (its symbols stay hidden). */
static const memobs_host_api_t mnp_own_table = {
    MEMOBS__ABI_KEY,           (uint32_t)sizeof(memobs_host_api_t),
    "own",                     memobs_get_enabled,
    memobs_get_phase,          memobs_now_ns,
    memobs_coll_register_comm, memobs_coll_kind_intern,
    memobs_record_coll_ex,     memobs_peer_intern,
    memobs_peer_rank,          memobs_record_peer_xfer_timed,
    memobs_coll_set_source,    memobs_coll_note,
    memobs_get_identity};

typedef const memobs_host_api_t *(*mnp_host_fn)(void);

/* A table usable by this build, or NULL (one warning for a wrong key). */
static const memobs_host_api_t *mnp_check_table(void *sym, const char *where) {
    union {
        void *p;
        mnp_host_fn f;
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
                    where, (unsigned long long)t->abi_key, (unsigned)t->size,
                    (unsigned long long)MEMOBS__ABI_KEY, (unsigned)sizeof(memobs_host_api_t));
        return NULL;
    }
    return t;
}

typedef struct {
    char **paths;
    size_t n, cap;
    const char *self;
} mnp_objs_t;

static int mnp_collect(struct dl_phdr_info *info, size_t size, void *data) {
    mnp_objs_t *o = (mnp_objs_t *)data;
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

static const memobs_host_api_t *mnp_find_host(const char *self) {
    const memobs_host_api_t *t;
    const char *attach = getenv("MEMOBS_NCCL_ATTACH");
    mnp_objs_t o = {NULL, 0, 0, self};
    size_t i;
    if (attach && strcmp(attach, "0") == 0) return NULL;
    t = mnp_check_table(dlsym(RTLD_DEFAULT, "memobs_host_api"), "the process's global symbols");
    if (t) return t;
    /* Objects loaded RTLD_LOCAL (a Python extension): names first, the
       loader calls outside dl_iterate_phdr's lock. */
    dl_iterate_phdr(mnp_collect, &o);
    for (i = 0; i < o.n && !t; i++) {
        void *h = dlopen(o.paths[i], RTLD_NOW | RTLD_NOLOAD);
        if (!h) continue;
        t = mnp_check_table(dlsym(h, "memobs_host_api"), o.paths[i]);
        if (!t) dlclose(h); /* else kept open: the table's module stays loaded */
    }
    for (i = 0; i < o.n; i++) free(o.paths[i]);
    free(o.paths);
    return t;
}

static int mnp_parse_level(void) {
    const char *v = getenv("MEMOBS_NCCL");
    int i;
    if (!v || !v[0]) return MNP_COLL;
    if (strcmp(v, "0") == 0) return MNP_OFF;
    for (i = MNP_OFF; i <= MNP_NET; i++)
        if (strcasecmp(v, mnp_level_names[i]) == 0) return i;
    memobs__log(MEMOBS_LOG_WARN, "MEMOBS_NCCL=%.64s: not one of off, 0, api, coll, proxy, net; using coll", v);
    return MNP_COLL;
}

static uint32_t mnp_parse_events(void) {
    const char *v = getenv("MEMOBS_NCCL_EVENTS");
    char *end;
    unsigned long n;
    if (!v || !v[0]) return MNP_DEFAULT_EVENTS;
    n = strtoul(v, &end, 10);
    if (*end || n < 1 || n > MNP_MAX_EVENTS || v[0] == '-') {
        memobs__log(MEMOBS_LOG_WARN, "MEMOBS_NCCL_EVENTS=%.64s: not a number from 1 to %u; using %u", v,
                    MNP_MAX_EVENTS, MNP_DEFAULT_EVENTS);
        return MNP_DEFAULT_EVENTS;
    }
    return (uint32_t)n;
}

static void mnp_setup(void) {
    Dl_info self;
    const char *self_path = NULL;
    size_t bytes;
    uint32_t i;
    void *p;
    if (dladdr((void *)&mnp, &self) && self.dli_fname) self_path = self.dli_fname;
    mnp.level = mnp_parse_level();
    mnp.host = mnp_find_host(self_path);
    if (!mnp.host) {
        memobs_init(); /* the own instance reads MEMOBS_* now (MEMOBS_NO_AUTOINIT) */
        mnp.host = &mnp_own_table;
    }
    mnp.instance = mnp.host->instance ? mnp.host->instance : "own";
    /* NCCL dlclose()s its profiler when the last communicator goes; an
       exit handler of the own instance still points here. */
    if (self_path) mnp.self = dlopen(self_path, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    mnp.nslots = mnp_parse_events();
    bytes = (size_t)mnp.nslots * sizeof(mnp_slot_t);
    p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        memobs__log(MEMOBS_LOG_WARN, "NCCL profiler: no memory for %u events; every event is dropped",
                    (unsigned)mnp.nslots);
        mnp.nslots = 0;
        return;
    }
    mnp.slots = (mnp_slot_t *)p;
    mnp.lo = (uintptr_t)p;
    mnp.hi = mnp.lo + bytes;
    for (i = 0; i < mnp.nslots; i++) {
        mnp.slots[i].next = i + 1 < mnp.nslots ? i + 2 : 0;
        mnp.slots[i].stopped = 1;
        mnp.slots[i].word = 0;
    }
    __atomic_store_n(&mnp.free_head, mnp.nslots ? 1u : 0u, __ATOMIC_RELEASE);
}

/* ======================================================================== */
/* Pool and handles                                                         */
/* ======================================================================== */

static mnp_slot_t *mnp_alloc(void) {
    uint64_t head = __atomic_load_n(&mnp.free_head, __ATOMIC_ACQUIRE), nh;
    for (;;) {
        uint32_t ix = (uint32_t)head;
        if (!ix) return NULL;
        nh = (((head >> 32) + 1) << 32) | __atomic_load_n(&mnp.slots[ix - 1].next, __ATOMIC_RELAXED);
        if (__atomic_compare_exchange_n(&mnp.free_head, &head, nh, 1, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
            return &mnp.slots[ix - 1];
    }
}

/* The slot's generation moves on: every handle to it is stale from now. */
static void mnp_free(mnp_slot_t *s) {
    uint32_t ix = (uint32_t)(s - mnp.slots) + 1;
    uint64_t w = __atomic_load_n(&s->word, __ATOMIC_RELAXED), head, nh;
    __atomic_store_n(&s->stopped, 1u, __ATOMIC_RELAXED);
    __atomic_store_n(&s->word, ((w >> 32) + 1) << 32, __ATOMIC_RELEASE);
    head = __atomic_load_n(&mnp.free_head, __ATOMIC_RELAXED);
    do {
        __atomic_store_n(&s->next, (uint32_t)head, __ATOMIC_RELAXED);
        nh = (((head >> 32) + 1) << 32) | ix;
    } while (!__atomic_compare_exchange_n(&mnp.free_head, &head, nh, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

/* Makes a fresh slot live with refs references; returns its handle. */
static void *mnp_publish(mnp_slot_t *s, uint32_t refs) {
    uint64_t gen = __atomic_load_n(&s->word, __ATOMIC_RELAXED) >> 32;
    __atomic_store_n(&s->stopped, 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&s->word, (gen << 32) | refs, __ATOMIC_RELEASE);
    return (void *)((uintptr_t)s | (uintptr_t)((gen & MNP_GEN_MASK) << 1));
}

static void mnp_clear(mnp_slot_t *s, int type, int version) {
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
    s->t0 = s->t1 = 0;
    __atomic_store_n(&s->ns, (uint64_t)0, __ATOMIC_RELAXED);
    s->aux = 0;
    s->algo[0] = 0;
    s->proto[0] = 0;
}

static int mnp_is_api(const void *h) { return ((uintptr_t)h & ~(uintptr_t)0xF) == MNP_API_TAG; }

/* The live slot a handle names (generation checked), or NULL. */
static mnp_slot_t *mnp_slot_of(const void *handle, int *step) {
    uintptr_t h = (uintptr_t)handle, off;
    mnp_slot_t *s;
    if (h < mnp.lo || h >= mnp.hi) return NULL;
    off = h - mnp.lo;
    s = &mnp.slots[off >> MNP_SLOT_SHIFT];
    if (step) *step = (int)(off & MNP_STEP_BIT);
    if (((__atomic_load_n(&s->word, __ATOMIC_ACQUIRE) >> 32) & MNP_GEN_MASK) != ((off >> 1) & MNP_GEN_MASK))
        return NULL;
    return s;
}

static uint32_t mnp_gen_of(const void *handle) { return (uint32_t)(((uintptr_t)handle >> 1) & MNP_GEN_MASK); }

/* One more reference to a live parent of generation g; 0 when it is gone. */
static int mnp_ref(mnp_slot_t *p, uint32_t g) {
    uint64_t w = __atomic_load_n(&p->word, __ATOMIC_ACQUIRE);
    do {
        if ((uint32_t)w == 0 || ((w >> 32) & MNP_GEN_MASK) != g) return 0;
    } while (!__atomic_compare_exchange_n(&p->word, &w, w + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
    return 1;
}

static void mnp_atomic_max(uint64_t *p, uint64_t v) {
    uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

static void mnp_note(memobs_coll_note_t what) { mnp.host->coll_note(what, 1); }

/* ======================================================================== */
/* Communicators                                                            */
/* ======================================================================== */

static void mnp_comm_fill(mnp_comm_t *c, const char *name, uint64_t id, int rank, int nranks, int nnodes) {
    c->id = id;
    c->rank = rank;
    c->nranks = nranks;
    c->nnodes = nnodes;
    snprintf(c->name, sizeof c->name, "%s", name ? name : "");
    pthread_mutex_init(&c->a2a_lock, NULL);
    c->h = mnp.host->coll_register_comm(name, id, rank, nranks, nnodes);
}

/* The entry of (id, rank), created on first sight. Lookups are lock-free
   (entries are published by the count); creation takes comm_lock. */
static mnp_comm_t *mnp_comm_get(const char *name, uint64_t id, int rank, int nranks, int nnodes) {
    uint32_t n = __atomic_load_n(&mnp.ncomms, __ATOMIC_ACQUIRE), i;
    mnp_comm_t *c;
    for (i = 0; i < n; i++)
        if (mnp.comms[i].id == id && mnp.comms[i].rank == rank) return &mnp.comms[i];
    pthread_mutex_lock(&mnp_comm_lock);
    n = __atomic_load_n(&mnp.ncomms, __ATOMIC_RELAXED);
    for (i = 0; i < n; i++)
        if (mnp.comms[i].id == id && mnp.comms[i].rank == rank) break;
    if (i < n) {
        c = &mnp.comms[i];
    } else if (n < MNP_MAX_COMMS) {
        c = &mnp.comms[n];
        mnp_comm_fill(c, name, id, rank, nranks, nnodes);
        __atomic_store_n(&mnp.ncomms, n + 1, __ATOMIC_RELEASE);
    } else {
        c = &mnp.other;
        if (!c->name[0]) mnp_comm_fill(c, "(other)", 0, 0, 0, 0);
    }
    pthread_mutex_unlock(&mnp_comm_lock);
    return c;
}

static int mnp_comm_ix(const mnp_comm_t *c) {
    return c >= mnp.comms && c < mnp.comms + MNP_MAX_COMMS ? (int)(c - mnp.comms) : c == &mnp.other ? MNP_MAX_COMMS : -1;
}
static mnp_comm_t *mnp_comm_at(int ix) {
    return ix >= 0 && ix < MNP_MAX_COMMS ? &mnp.comms[ix] : ix == MNP_MAX_COMMS ? &mnp.other : NULL;
}

/* The thread's phase; unphased falls back on the comm's last phase seen
   (the CUDA callback thread has none of its own). */
static memobs_phase_t mnp_phase(mnp_comm_t *c) {
    memobs_phase_t ph = mnp.host->get_phase();
    if (ph != MEMOBS_PHASE_NONE) {
        if (c) __atomic_store_n(&c->last_phase, (uint32_t)ph, __ATOMIC_RELAXED);
        return ph;
    }
    return c ? (memobs_phase_t)__atomic_load_n(&c->last_phase, __ATOMIC_RELAXED) : MEMOBS_PHASE_NONE;
}

/* ======================================================================== */
/* Names: func, datatype, algo, proto                                       */
/* ======================================================================== */

static memobs_coll_kind_t mnp_kind(const char *func) {
    static const struct {
        const char *name;
        memobs_coll_kind_t kind;
    } k[] = {{"AllReduce", MEMOBS_COLL_ALL_REDUCE}, {"AllGather", MEMOBS_COLL_ALL_GATHER},
             {"ReduceScatter", MEMOBS_COLL_REDUCE_SCATTER}, {"Broadcast", MEMOBS_COLL_BROADCAST},
             {"Reduce", MEMOBS_COLL_REDUCE}, {"AlltoAll", MEMOBS_COLL_ALL_TO_ALL},
             {"Gather", MEMOBS_COLL_GATHER}, {"Scatter", MEMOBS_COLL_SCATTER},
             {"Send", MEMOBS_COLL_SEND}, {"Recv", MEMOBS_COLL_RECV}, {"SendRecv", MEMOBS_COLL_SEND_RECV}};
    size_t i;
    memobs_coll_kind_t id;
    if (!func || !func[0]) return MEMOBS_COLL_OTHER;
    for (i = 0; i < sizeof k / sizeof k[0]; i++)
        if (strcmp(func, k[i].name) == 0) return k[i].kind;
    id = mnp.host->coll_kind_intern(func);
    return id < 0 ? MEMOBS_COLL_OTHER : id;
}

/* ncclFunc_t (v1). */
static memobs_coll_kind_t mnp_kind_num(unsigned f) {
    static const memobs_coll_kind_t k[8] = {MEMOBS_COLL_BROADCAST,      MEMOBS_COLL_REDUCE,
                                            MEMOBS_COLL_ALL_GATHER,     MEMOBS_COLL_REDUCE_SCATTER,
                                            MEMOBS_COLL_ALL_REDUCE,     MEMOBS_COLL_SEND_RECV,
                                            MEMOBS_COLL_SEND,           MEMOBS_COLL_RECV};
    return f < 8 ? k[f] : MEMOBS_COLL_OTHER;
}

/* Bytes of one element; 0 unknown. */
static unsigned mnp_dtype_size(const char *d) {
    static const struct {
        const char *name;
        unsigned size;
    } t[] = {{"ncclInt8", 1},     {"ncclUint8", 1},      {"ncclInt32", 4},        {"ncclUint32", 4},
             {"ncclInt64", 8},    {"ncclUint64", 8},     {"ncclFloat16", 2},      {"ncclFloat32", 4},
             {"ncclFloat64", 8},  {"ncclBfloat16", 2},   {"ncclFloat8e4m3", 1},   {"ncclFloat8e5m2", 1}};
    size_t i;
    if (!d) return 0;
    for (i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(d, t[i].name) == 0) return t[i].size;
    return 0;
}

/* ncclDataType_t (v1): int8 uint8 int32 uint32 int64 uint64 fp16 fp32 fp64 bf16 fp8 fp8. */
static unsigned mnp_dtype_size_num(unsigned d) {
    static const unsigned char s[12] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
    return d < 12 ? s[d] : 0;
}

static const char *mnp_algo_num(unsigned a) {
    static const char *const n[7] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
    return a < 7 ? n[a] : NULL;
}
static const char *mnp_proto_num(unsigned p) {
    static const char *const n[3] = {"LL", "LL128", "SIMPLE"};
    return p < 3 ? n[p] : NULL;
}

static void mnp_copy(char *dst, size_t cap, const char *src) {
    size_t n = 0;
    if (src)
        for (; n + 1 < cap && src[n]; n++) dst[n] = src[n];
    dst[n] = 0;
}

/* ======================================================================== */
/* Records                                                                  */
/* ======================================================================== */

static void mnp_emit(const memobs_coll_record_t *rec) {
    mnp.host->record_coll_ex(rec);
    if (rec->captured) mnp_note(MEMOBS_COLL_NOTE_CAPTURED_REPLAYS);
}

/* One task of an AlltoAll call: every 2 x nranks of a comm make one
   all_to_all record. */
static void mnp_a2a_add(mnp_comm_t *c, uint64_t bytes, memobs_phase_t phase, uint64_t start, uint64_t ns,
                        int captured) {
    memobs_coll_record_t rec;
    uint32_t n;
    int emit = 0;
    if (!c || c->nranks <= 0) return;
    n = 2u * (uint32_t)c->nranks;
    memset(&rec, 0, sizeof rec);
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
    if (emit) mnp_emit(&rec);
}

/* The last reference of a Coll/P2p went: its record, then the slot back. */
static void mnp_complete(mnp_slot_t *s) {
    uint64_t ns = __atomic_load_n(&s->ns, __ATOMIC_RELAXED);
    if (s->a2a) {
        mnp_a2a_add(mnp_comm_at(s->comm_ix), s->bytes, (memobs_phase_t)s->phase, s->start_ns, ns, s->captured);
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
        mnp_emit(&rec);
    }
    mnp_free(s);
}

static void mnp_unref(mnp_slot_t *s) {
    uint64_t w = __atomic_fetch_sub(&s->word, (uint64_t)1, __ATOMIC_ACQ_REL);
    if ((uint32_t)w == 1) mnp_complete(s);
}

/* ======================================================================== */
/* Events, version-neutral                                                  */
/* ======================================================================== */

/* A Coll or P2p descriptor, whatever the version. */
typedef struct {
    int version, is_p2p;
    void *parent;
    int rank;
    const char *func;     /* v2+ */
    int func_num;         /* v1, else -1 */
    const char *dtype;    /* v2+ */
    int dtype_num;        /* v1, else -1 */
    uint64_t count, seq;
    const char *algo, *proto;
    int nchannels;        /* exact (v4+), else 0 */
    int max_channels;     /* v1-v3 nMaxChannels */
    const char *comm_name; /* v1-v3 */
    uint64_t comm_hash;   /* v1-v3 */
} mnp_task_t;

static mnp_comm_t *mnp_ctx_comm(void *context) {
    mnp_comm_t *c = (mnp_comm_t *)context;
    return c == &mnp.legacy ? NULL : c;
}

static void *mnp_start_task(void *context, const mnp_task_t *t) {
    mnp_comm_t *c = mnp_ctx_comm(context);
    memobs_coll_kind_t kind;
    unsigned esize;
    uint64_t bytes;
    memobs_phase_t phase;
    int captured = 0, a2a = 0;
    mnp_slot_t *s;
    uint32_t expect = 0;
    if (!c) c = mnp_comm_get(t->comm_name, t->comm_hash, t->rank, 0, 0);
    kind = t->func_num >= 0 ? mnp_kind_num((unsigned)t->func_num) : mnp_kind(t->func);
    esize = t->dtype_num >= 0 ? mnp_dtype_size_num((unsigned)t->dtype_num) : mnp_dtype_size(t->dtype);
    if (!esize) mnp_note(MEMOBS_COLL_NOTE_BAD_EVENTS);
    bytes = t->count * esize;
    if (t->parent && mnp_is_api(t->parent)) {
        uintptr_t a = (uintptr_t)t->parent;
        phase = (memobs_phase_t)(a & MNP_API_PHASE);
        captured = (a & MNP_API_CAPTURED) != 0;
        a2a = t->is_p2p && (a & MNP_API_A2A) != 0;
    } else {
        phase = mnp_phase(c);
    }
    if (mnp.level == MNP_API) { /* v1-v4 at api level: counted at once */
        memobs_coll_record_t rec;
        memset(&rec, 0, sizeof rec);
        rec.comm = c->h;
        rec.kind = kind;
        rec.phase = phase;
        rec.bytes = bytes;
        rec.start_ns = mnp.host->now_ns();
        rec.seq = t->seq;
        rec.captured = captured;
        mnp_emit(&rec);
        return (void *)(uintptr_t)MNP_API_TAG;
    }
    s = mnp_alloc();
    if (!s) {
        mnp_note(MEMOBS_COLL_NOTE_EVENTS_DROPPED);
        if (a2a) {
            mnp_a2a_add(c, bytes, phase, mnp.host->now_ns(), 0, captured);
        } else {
            memobs_coll_record_t rec;
            memset(&rec, 0, sizeof rec);
            rec.comm = c->h;
            rec.kind = kind;
            rec.phase = phase;
            rec.bytes = bytes;
            rec.start_ns = mnp.host->now_ns();
            rec.seq = t->seq;
            rec.algo = t->algo;
            rec.proto = t->proto;
            rec.nchannels = t->nchannels ? t->nchannels : t->max_channels;
            rec.captured = captured;
            mnp_emit(&rec);
        }
        return NULL;
    }
    mnp_clear(s, t->is_p2p ? MNP_EV_P2P : MNP_EV_COLL, t->version);
    s->phase = (uint8_t)phase;
    s->captured = (uint8_t)captured;
    s->a2a = (uint8_t)a2a;
    s->comm_ix = mnp_comm_ix(c);
    s->comm = c->h;
    s->kind = kind;
    s->nchannels = t->nchannels ? t->nchannels : t->max_channels;
    s->bytes = bytes;
    s->start_ns = mnp.host->now_ns();
    s->aux = t->seq;
    mnp_copy(s->algo, sizeof s->algo, t->algo);
    mnp_copy(s->proto, sizeof s->proto, t->proto);
    if (t->version >= 4 && mnp.level >= MNP_COLL && t->nchannels > 0) expect = (uint32_t)t->nchannels;
    __atomic_store_n(&s->expect, expect, __ATOMIC_RELAXED);
    return mnp_publish(s, 1 + expect);
}

/* API events (v5+): a tagged number; at level api also the record. */
static void *mnp_start_api(void *context, int p2p, const char *func, uint64_t count, const char *dtype,
                           int captured) {
    mnp_comm_t *c = mnp_ctx_comm(context);
    memobs_phase_t phase = mnp_phase(c);
    int a2a = p2p && func && strcmp(func, "AlltoAll") == 0;
    if (captured) mnp_note(MEMOBS_COLL_NOTE_CAPTURED_CALLS);
    if (mnp.level == MNP_API && !captured && c) {
        unsigned esize = mnp_dtype_size(dtype);
        if (!esize) mnp_note(MEMOBS_COLL_NOTE_BAD_EVENTS);
        if (a2a) {
            mnp_a2a_add(c, count * esize, phase, mnp.host->now_ns(), 0, 0);
        } else {
            memobs_coll_record_t rec;
            memset(&rec, 0, sizeof rec);
            rec.comm = c->h;
            rec.kind = mnp_kind(func);
            rec.phase = phase;
            rec.bytes = count * esize;
            rec.start_ns = mnp.host->now_ns();
            mnp_emit(&rec);
        }
    }
    return (void *)(uintptr_t)(MNP_API_TAG | (unsigned)phase | (captured ? MNP_API_CAPTURED : 0u) |
                               (a2a ? MNP_API_A2A : 0u));
}

/* A KernelCh: times its parent Coll/P2p. has_timer: pTimer given (v4+). */
static void *mnp_start_kch(void *parent, int version, int has_timer, uint64_t ptimer) {
    mnp_slot_t *p = mnp_slot_of(parent, NULL), *s;
    uint32_t e;
    int held = 0;
    if (!p || (p->type != MNP_EV_COLL && p->type != MNP_EV_P2P)) return NULL;
    /* A reference announced by nChannels, else a new one. */
    e = __atomic_load_n(&p->expect, __ATOMIC_RELAXED);
    while (e > 0 && !held)
        held = __atomic_compare_exchange_n(&p->expect, &e, e - 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
    if (!held && !mnp_ref(p, mnp_gen_of(parent))) return NULL;
    s = mnp_alloc();
    if (!s) {
        mnp_note(MEMOBS_COLL_NOTE_EVENTS_DROPPED);
        mnp_unref(p);
        return NULL;
    }
    mnp_clear(s, MNP_EV_KCH, version);
    s->parent = (uint32_t)(p - mnp.slots) + 1;
    s->t0 = has_timer ? ptimer : mnp.host->now_ns();
    s->aux = (uint64_t)has_timer;
    return mnp_publish(s, 1);
}

/* A ProxyOp: peer bytes (proxy level) and, v1-v2, the op's time. */
static void *mnp_start_pop(void *context, void *parent, int version, pid_t pid, int peer, int is_send) {
    mnp_comm_t *c = mnp_ctx_comm(context);
    mnp_slot_t *p = NULL, *s;
    memobs_phase_t phase;
    memobs_comm_t comm;
    int comm_ix;
    /* PXN: a parent from another process's address space is never read. */
    if (parent && pid == getpid() && !mnp_is_api(parent)) {
        p = mnp_slot_of(parent, NULL);
        if (p && ((p->type != MNP_EV_COLL && p->type != MNP_EV_P2P) || !mnp_ref(p, mnp_gen_of(parent)))) p = NULL;
    }
    if (p) {
        phase = (memobs_phase_t)p->phase;
        comm = p->comm;
        comm_ix = p->comm_ix;
    } else if (c) {
        phase = (memobs_phase_t)__atomic_load_n(&c->last_phase, __ATOMIC_RELAXED);
        comm = c->h;
        comm_ix = mnp_comm_ix(c);
    } else {
        return NULL; /* v1-v3 with no parent: no comm to charge */
    }
    s = mnp_alloc();
    if (!s) {
        mnp_note(MEMOBS_COLL_NOTE_EVENTS_DROPPED);
        if (p) mnp_unref(p);
        return NULL;
    }
    mnp_clear(s, MNP_EV_POP, version);
    s->parent = p ? (uint32_t)(p - mnp.slots) + 1 : 0;
    s->phase = (uint8_t)phase;
    s->comm = comm;
    s->comm_ix = comm_ix;
    s->dir = (uint8_t)(is_send ? MEMOBS_PEER_SEND : MEMOBS_PEER_RECV);
    s->peer = mnp.level >= MNP_PROXY ? mnp.host->peer_rank(comm, peer) : -1;
    s->t0 = mnp.host->now_ns();
    return mnp_publish(s, 1);
}

static void *mnp_start_step(void *parent) {
    int step = 0;
    mnp_slot_t *p = mnp_slot_of(parent, &step);
    if (!p || step || p->type != MNP_EV_POP) return NULL;
    return (void *)((uintptr_t)parent | MNP_STEP_BIT);
}

static void mnp_peer_bytes(const mnp_slot_t *s, memobs_peer_dir_t dir, uint64_t bytes) {
    if (s->peer < 0 || !bytes) return;
    mnp.host->record_peer_xfer_timed(s->peer, dir, bytes, (memobs_phase_t)s->phase, 0);
}

/* args_v4: the v4+ union, else NULL; args_v1: the v1-v3 union, else NULL. */
static void mnp_record_state(void *handle, int state, const ncclProfilerEventStateArgs_v4_t *a4,
                             const ncclProfilerEventStateArgs_v1_t *a1) {
    int step = 0;
    mnp_slot_t *s;
    if (!handle || mnp_is_api(handle)) return;
    s = mnp_slot_of(handle, &step);
    if (!s) return;
    if (step) {
        if (s->type != MNP_EV_POP || !a4) return;
        if (state == ncclProfilerProxyStepSendWait) mnp_peer_bytes(s, MEMOBS_PEER_SEND, a4->proxyStep.transSize);
        else if (state == ncclProfilerProxyStepRecvFlushWait)
            mnp_peer_bytes(s, MEMOBS_PEER_RECV, a4->proxyStep.transSize);
        return;
    }
    if (s->type == MNP_EV_KCH && state == ncclProfilerKernelChStop && a4) {
        __atomic_store_n(&s->t1, a4->kernelCh.pTimer, __ATOMIC_RELAXED);
    } else if (s->type == MNP_EV_POP && a1 &&
               (state == ncclProfilerProxyOpSendTransmitted || state == ncclProfilerProxyOpRecvReceived)) {
        /* v1-v3: the op's running total; count what it grew by. */
        uint64_t total = a1->proxyOp.transSize, seen = __atomic_load_n(&s->aux, __ATOMIC_RELAXED);
        __atomic_store_n(&s->aux, total, __ATOMIC_RELAXED);
        mnp_peer_bytes(s, state == ncclProfilerProxyOpSendTransmitted ? MEMOBS_PEER_SEND : MEMOBS_PEER_RECV,
                       total >= seen ? total - seen : total);
    }
}

static void mnp_stop(void *handle) {
    int step = 0;
    mnp_slot_t *s, *p;
    if (!handle || mnp_is_api(handle)) return;
    s = mnp_slot_of(handle, &step);
    if (step) return; /* ProxyStep: no slot */
    if (!s || __atomic_exchange_n(&s->stopped, 1u, __ATOMIC_ACQ_REL)) {
        mnp_note(MEMOBS_COLL_NOTE_BAD_EVENTS);
        return;
    }
    switch (s->type) {
    case MNP_EV_COLL:
    case MNP_EV_P2P: mnp_unref(s); return;
    case MNP_EV_KCH:
        p = s->parent ? &mnp.slots[s->parent - 1] : NULL;
        if (p) {
            uint64_t t1 = __atomic_load_n(&s->t1, __ATOMIC_RELAXED), ns = 0;
            if (!s->aux) t1 = mnp.host->now_ns(); /* v3: CPU time */
            if (t1 > s->t0) ns = t1 - s->t0;
            mnp_atomic_max(&p->ns, ns);
        }
        mnp_free(s);
        if (p) mnp_unref(p);
        return;
    case MNP_EV_POP:
        p = s->parent ? &mnp.slots[s->parent - 1] : NULL;
        if (p && s->version <= 2) { /* v1-v2: no KernelCh, the op's span */
            uint64_t now = mnp.host->now_ns();
            if (now > s->t0) mnp_atomic_max(&p->ns, now - s->t0);
        }
        mnp_free(s);
        if (p) mnp_unref(p);
        return;
    default: mnp_note(MEMOBS_COLL_NOTE_BAD_EVENTS); return;
    }
}

/* ======================================================================== */
/* init / finalize                                                          */
/* ======================================================================== */

static int mnp_mask(int version) {
    int m = 0, level = mnp.level;
    if (level >= MNP_API)
        m |= version >= 5 ? (ncclProfileCollApi | ncclProfileP2pApi) : (ncclProfileColl | ncclProfileP2p);
    if (level >= MNP_COLL) {
        m |= ncclProfileColl | ncclProfileP2p;
        if (version >= 3) m |= ncclProfileKernelCh;
    }
    if (level >= MNP_PROXY) m |= ncclProfileProxyOp | ncclProfileProxyStep;
    if (level >= MNP_NET) {
        m |= ncclProfileProxyCtrl;
        if (version >= 3) m |= ncclProfileNetPlugin;
    }
    return m;
}

/* v1-v3: comm NULL (communicators come with the events). */
static ncclResult_t mnp_init(int version, void **context, int *mask, const char *name, uint64_t id, int nnodes,
                             int nranks, int rank, ncclDebugLogger_t logfn) {
    mnp_comm_t *c;
    pthread_once(&mnp_once, mnp_setup);
    if (context) *context = NULL;
    if (mnp.level == MNP_OFF || !mnp.host->get_enabled() || !context || !mask) {
        if (mask) __atomic_store_n(mask, 0, __ATOMIC_RELAXED);
        return ncclInternalError;
    }
    if (!mnp.version) mnp.version = version;
    mnp.host->coll_set_source("nccl-profiler", mnp.instance, mnp_level_names[mnp.level], version);
    c = version >= 4 ? mnp_comm_get(name, id, rank, nranks, nnodes) : &mnp.legacy;
    __atomic_store_n(mask, mnp_mask(version), __ATOMIC_RELAXED);
    *context = c;
    if (logfn)
        logfn(NCCL_LOG_INFO, 1ul /* NCCL_INIT */, __FILE__, __LINE__,
              "memobs profiler: level %s, recording into the %s memobs (comm %s rank %d/%d)",
              mnp_level_names[mnp.level], mnp.instance, name ? name : "", rank, nranks);
    return ncclSuccess;
}

static ncclResult_t mnp_finalize(void *context) {
    (void)context; /* entries stay: memobs keeps the comm's figures */
    return ncclSuccess;
}

/* ======================================================================== */
/* Per-version entry points                                                 */
/* ======================================================================== */

static void mnp_task_v123(mnp_task_t *t, int version, void *parent, int rank) {
    memset(t, 0, sizeof *t);
    t->version = version;
    t->parent = parent;
    t->rank = rank;
    t->func_num = -1;
    t->dtype_num = -1;
}

/* Types the level did not ask for (NCCL may start API parents anyway):
   NULL, except the counted ones. */
static void *mnp_other(uint64_t type) {
    if (type == ncclProfileNetPlugin) __atomic_fetch_add(&mnp.net_events, (uint64_t)1, __ATOMIC_RELAXED);
    else if (type == ncclProfileProxyCtrl) __atomic_fetch_add(&mnp.ctrl_events, (uint64_t)1, __ATOMIC_RELAXED);
    return NULL;
}

static ncclResult_t mnp_init_v1(void **context, int *mask) {
    return mnp_init(1, context, mask, NULL, 0, 0, 0, 0, NULL);
}
static ncclResult_t mnp_init_v2(void **context, int *mask) {
    return mnp_init(2, context, mask, NULL, 0, 0, 0, 0, NULL);
}
static ncclResult_t mnp_init_v3(void **context, int *mask) {
    return mnp_init(3, context, mask, NULL, 0, 0, 0, 0, NULL);
}
static ncclResult_t mnp_init_v4(void **context, int *mask, const char *name, uint64_t hash, int nnodes, int nranks,
                                int rank, ncclDebugLogger_t logfn) {
    return mnp_init(4, context, mask, name, hash, nnodes, nranks, rank, logfn);
}
static ncclResult_t mnp_init_v5(void **context, uint64_t id, int *mask, const char *name, int nnodes, int nranks,
                                int rank, ncclDebugLogger_t logfn) {
    return mnp_init(5, context, mask, name, id, nnodes, nranks, rank, logfn);
}
static ncclResult_t mnp_init_v6(void **context, uint64_t id, int *mask, const char *name, int nnodes, int nranks,
                                int rank, ncclDebugLogger_t logfn) {
    return mnp_init(6, context, mask, name, id, nnodes, nranks, rank, logfn);
}

static ncclResult_t mnp_start_v1(void *context, void **h, ncclProfilerEventDescr_v1_t *d) {
    mnp_task_t t;
    if (!h) return ncclSuccess;
    *h = NULL;
    if (!context || !d) return ncclSuccess;
    switch (d->type) {
    case ncclProfileColl:
        mnp_task_v123(&t, 1, d->parentObj, d->rank);
        t.func_num = d->coll.func;
        t.dtype_num = d->coll.datatype;
        t.count = d->coll.count;
        t.seq = d->coll.seqNumber;
        t.algo = mnp_algo_num(d->coll.algo);
        t.proto = mnp_proto_num(d->coll.proto);
        t.max_channels = d->coll.nMaxChannels;
        t.comm_name = d->coll.name;
        t.comm_hash = d->coll.commHash;
        *h = mnp_start_task(context, &t);
        break;
    case ncclProfileP2p:
        mnp_task_v123(&t, 1, d->parentObj, d->rank);
        t.is_p2p = 1;
        t.func_num = d->p2p.func;
        t.dtype_num = d->p2p.datatype;
        t.count = d->p2p.count;
        t.comm_name = d->p2p.name;
        t.comm_hash = d->p2p.commHash;
        *h = mnp_start_task(context, &t);
        break;
    case ncclProfileProxyOp:
        *h = mnp_start_pop(context, d->parentObj, 1, d->proxyOp.pid, d->proxyOp.peer, d->proxyOp.isSend);
        break;
    case ncclProfileProxyStep: *h = mnp_start_step(d->parentObj); break;
    default: *h = mnp_other(d->type); break;
    }
    return ncclSuccess;
}

/* v2 and v3 share the coll/p2p fields but for v2's trafficBytes. */
#define MNP_TASK_V23(t, d, ver)                                                                                   \
    do {                                                                                                          \
        if ((d)->type == ncclProfileColl) {                                                                       \
            mnp_task_v123(&(t), ver, (d)->parentObj, (d)->rank);                                                  \
            (t).func = (d)->coll.func;                                                                            \
            (t).dtype = (d)->coll.datatype;                                                                       \
            (t).count = (d)->coll.count;                                                                          \
            (t).seq = (d)->coll.seqNumber;                                                                        \
            (t).algo = (d)->coll.algo;                                                                            \
            (t).proto = (d)->coll.proto;                                                                          \
            (t).max_channels = (d)->coll.nMaxChannels;                                                            \
            (t).comm_name = (d)->coll.name;                                                                       \
            (t).comm_hash = (d)->coll.commHash;                                                                   \
        } else {                                                                                                  \
            mnp_task_v123(&(t), ver, (d)->parentObj, (d)->rank);                                                  \
            (t).is_p2p = 1;                                                                                       \
            (t).func = (d)->p2p.func;                                                                             \
            (t).dtype = (d)->p2p.datatype;                                                                        \
            (t).count = (d)->p2p.count;                                                                           \
            (t).comm_name = (d)->p2p.name;                                                                        \
            (t).comm_hash = (d)->p2p.commHash;                                                                    \
        }                                                                                                         \
    } while (0)

static ncclResult_t mnp_start_v2(void *context, void **h, ncclProfilerEventDescr_v2_t *d) {
    mnp_task_t t;
    if (!h) return ncclSuccess;
    *h = NULL;
    if (!context || !d) return ncclSuccess;
    switch (d->type) {
    case ncclProfileColl:
    case ncclProfileP2p:
        MNP_TASK_V23(t, d, 2);
        *h = mnp_start_task(context, &t);
        break;
    case ncclProfileProxyOp:
        *h = mnp_start_pop(context, d->parentObj, 2, d->proxyOp.pid, d->proxyOp.peer, d->proxyOp.isSend);
        break;
    case ncclProfileProxyStep: *h = mnp_start_step(d->parentObj); break;
    default: *h = mnp_other(d->type); break;
    }
    return ncclSuccess;
}

static ncclResult_t mnp_start_v3(void *context, void **h, ncclProfilerEventDescr_v3_t *d) {
    mnp_task_t t;
    if (!h) return ncclSuccess;
    *h = NULL;
    if (!context || !d) return ncclSuccess;
    switch (d->type) {
    case ncclProfileColl:
    case ncclProfileP2p:
        MNP_TASK_V23(t, d, 3);
        *h = mnp_start_task(context, &t);
        break;
    case ncclProfileKernelCh: *h = mnp_start_kch(d->parentObj, 3, 0, 0); break;
    case ncclProfileProxyOp:
        *h = mnp_start_pop(context, d->parentObj, 3, d->proxyOp.pid, d->proxyOp.peer, d->proxyOp.isSend);
        break;
    case ncclProfileProxyStep: *h = mnp_start_step(d->parentObj); break;
    default: *h = mnp_other(d->type); break;
    }
    return ncclSuccess;
}

/* v4, v5 and v6 share coll/p2p/proxy/kernelCh field names. */
#define MNP_TASK_V456(t, d, ver)                                                                                  \
    do {                                                                                                          \
        memset(&(t), 0, sizeof(t));                                                                               \
        (t).version = ver;                                                                                        \
        (t).parent = (d)->parentObj;                                                                              \
        (t).rank = (d)->rank;                                                                                     \
        (t).func_num = -1;                                                                                        \
        (t).dtype_num = -1;                                                                                       \
        if ((d)->type == ncclProfileColl) {                                                                       \
            (t).func = (d)->coll.func;                                                                            \
            (t).dtype = (d)->coll.datatype;                                                                       \
            (t).count = (d)->coll.count;                                                                          \
            (t).seq = (d)->coll.seqNumber;                                                                        \
            (t).algo = (d)->coll.algo;                                                                            \
            (t).proto = (d)->coll.proto;                                                                          \
            (t).nchannels = (d)->coll.nChannels;                                                                  \
        } else {                                                                                                  \
            (t).is_p2p = 1;                                                                                       \
            (t).func = (d)->p2p.func;                                                                             \
            (t).dtype = (d)->p2p.datatype;                                                                        \
            (t).count = (d)->p2p.count;                                                                           \
            (t).nchannels = (d)->p2p.nChannels;                                                                   \
        }                                                                                                         \
    } while (0)

#define MNP_START_V456(ver, d, context, h)                                                                        \
    do {                                                                                                          \
        mnp_task_t t;                                                                                             \
        switch ((d)->type) {                                                                                      \
        case ncclProfileColl:                                                                                     \
        case ncclProfileP2p:                                                                                      \
            MNP_TASK_V456(t, d, ver);                                                                             \
            *(h) = mnp_start_task(context, &t);                                                                   \
            break;                                                                                                \
        case ncclProfileKernelCh: *(h) = mnp_start_kch((d)->parentObj, ver, 1, (d)->kernelCh.pTimer); break;      \
        case ncclProfileProxyOp:                                                                                  \
            *(h) = mnp_start_pop(context, (d)->parentObj, ver, (d)->proxyOp.pid, (d)->proxyOp.peer,               \
                                 (d)->proxyOp.isSend);                                                            \
            break;                                                                                                \
        case ncclProfileProxyStep: *(h) = mnp_start_step((d)->parentObj); break;                                  \
        default: *(h) = mnp_other((d)->type); break;                                                              \
        }                                                                                                         \
    } while (0)

static ncclResult_t mnp_start_v4(void *context, void **h, ncclProfilerEventDescr_v4_t *d) {
    if (!h) return ncclSuccess;
    *h = NULL;
    if (!context || !d) return ncclSuccess;
    MNP_START_V456(4, d, context, h);
    return ncclSuccess;
}

static ncclResult_t mnp_start_v5(void *context, void **h, ncclProfilerEventDescr_v5_t *d) {
    if (!h) return ncclSuccess;
    *h = NULL;
    if (!context || !d) return ncclSuccess;
    if (d->type == ncclProfileCollApi)
        *h = mnp_start_api(context, 0, d->collApi.func, d->collApi.count, d->collApi.datatype,
                           d->collApi.graphCaptured);
    else if (d->type == ncclProfileP2pApi)
        *h = mnp_start_api(context, 1, d->p2pApi.func, d->p2pApi.count, d->p2pApi.datatype, d->p2pApi.graphCaptured);
    else
        MNP_START_V456(5, d, context, h);
    return ncclSuccess;
}

static ncclResult_t mnp_start_v6(void *context, void **h, ncclProfilerEventDescr_v6_t *d) {
    if (!h) return ncclSuccess;
    *h = NULL;
    if (!context || !d) return ncclSuccess;
    if (d->type == ncclProfileCollApi)
        *h = mnp_start_api(context, 0, d->collApi.func, d->collApi.count, d->collApi.datatype,
                           d->collApi.graphCaptured);
    else if (d->type == ncclProfileP2pApi)
        *h = mnp_start_api(context, 1, d->p2pApi.func, d->p2pApi.count, d->p2pApi.datatype, d->p2pApi.graphCaptured);
    else
        MNP_START_V456(6, d, context, h);
    return ncclSuccess;
}

static ncclResult_t mnp_stop_any(void *handle) {
    mnp_stop(handle);
    return ncclSuccess;
}

static ncclResult_t mnp_state_v1(void *handle, ncclProfilerEventState_v1_t state, ncclProfilerEventStateArgs_v1_t *a) {
    mnp_record_state(handle, (int)state, NULL, a);
    return ncclSuccess;
}
static ncclResult_t mnp_state_v4(void *handle, ncclProfilerEventState_v4_t state, ncclProfilerEventStateArgs_v4_t *a) {
    mnp_record_state(handle, (int)state, a, NULL);
    return ncclSuccess;
}

MNP_EXPORT const ncclProfiler_v1_t ncclProfiler_v1 = {"memobs",     mnp_init_v1,  mnp_start_v1,
                                                      mnp_stop_any, mnp_state_v1, mnp_finalize};
MNP_EXPORT const ncclProfiler_v2_t ncclProfiler_v2 = {"memobs",     mnp_init_v2,  mnp_start_v2,
                                                      mnp_stop_any, mnp_state_v1, mnp_finalize};
MNP_EXPORT const ncclProfiler_v3_t ncclProfiler_v3 = {"memobs",     mnp_init_v3,  mnp_start_v3,
                                                      mnp_stop_any, mnp_state_v1, mnp_finalize};
MNP_EXPORT const ncclProfiler_v4_t ncclProfiler_v4 = {"memobs",     mnp_init_v4,  mnp_start_v4,
                                                      mnp_stop_any, mnp_state_v4, mnp_finalize};
MNP_EXPORT const ncclProfiler_v5_t ncclProfiler_v5 = {"memobs",     mnp_init_v5,  mnp_start_v5,
                                                      mnp_stop_any, mnp_state_v4, mnp_finalize};
MNP_EXPORT const ncclProfiler_v6_t ncclProfiler_v6 = {"memobs",     mnp_init_v6,  mnp_start_v6,
                                                      mnp_stop_any, mnp_state_v4, mnp_finalize};
