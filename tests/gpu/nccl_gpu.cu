/* nccl_gpu.cu - the NCCL profiler plugin (libnccl-profiler-memobs.so) in
   the real NCCL on a real GPU, for tests/gpu/test_gpu_nccl.sh (`make
   gpu-nccl-test`, also run by `make gpu-test`).

   NCCL is opened with dlopen ($NCCL_LIB, else "libnccl.so.2"), never
   linked: on a GPU machine it often lives only inside a Python
   environment (the nvidia-nccl-cu* wheel). Its functions are declared
   from the toolkit's nccl.h at build time.

   This program builds memobs in (MEMOBS_IMPLEMENTATION) with
   MEMOBS_EXPORT_HOST and exports memobs_host_api, so the plugin records
   into this program's memobs ("program") and the figures are checked
   here, exactly, with memobs_coll_get_stats / memobs_peer_get_stats /
   memobs_coll_get_info; the script checks the JSON summary this instance
   writes at exit (MEMOBS_SUMMARY) and, with MEMOBS_NCCL_ATTACH=0, the
   plugin's own instance's.

   Why two processes: NCCL runs a 1-rank communicator with no task events
   (ncclLaunchOneRank: init and finalize only), and refuses two ranks of a
   communicator on one GPU of one host ("Duplicate GPU detected", or from
   2.30 "Multiple Ranks are using the same GPU" unless
   NCCL_MULTI_RANK_GPU_ENABLE=1). The host is NCCL's hash of NCCL_HOSTID,
   so two processes with different NCCL_HOSTID values are two nodes that
   share the GPU and talk through the network transport (sockets on lo):
   real collectives with Coll, KernelCh, ProxyOp and ProxyStep events on
   one GPU. The script starts both ranks with that environment.

   nccl_gpu probe
       "devices: N", "nccl: VERSION"; exits 1 without a device or NCCL.
   nccl_gpu solo
       one 1-rank communicator "memobs-solo": init, AR_OPS all-reduces,
       finalize. The plugin is loaded and attached (source, instance, API
       version) but records no operation: NCCL gives it no task events.
   nccl_gpu rank R IDFILE
       rank R (0 or 1) of the 2-rank communicator "memobs-gpu"; rank 0
       writes the unique id to IDFILE, rank 1 waits for it. Prefill:
       AR_OPS all-reduces of AR_COUNT floats; decode: SR_OPS groups of a
       send and a recv of SR_COUNT floats with the other rank. Results
       checked on the host. Then the figures of the level in MEMOBS_NCCL
       (default coll):
         api    all_reduce prefill, send and recv decode: ops and bytes
         coll   + every operation timed (GPU time), algo/bus bytes, busbw
         proxy  + bytes sent to and received from the other rank, by phase
       no peer rows below proxy; nothing dropped; no other rows.
       Then, in decode, one broadcast of GR_COUNT floats from rank 0
       captured into a CUDA graph and the graph launched GR_REPLAYS times:
       the capture is one captured call, not an operation; from level coll
       up each launch is a broadcast operation (NCCL runs the plan's host
       callback per launch, since its proxy operations need it) counted as
       a captured replay; at level api the launches are not seen.
   With MEMOBS_NCCL_ATTACH=0 the plugin keeps its own memobs: this
   program's memobs must see nothing (the script reads the plugin's
   summary). Every line is "ok - nccl-gpu: ..." / "not ok - ..." with
   "    # " details; exits 1 on a failure. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#define MEMOBS_EXPORT_HOST
#include "memobs.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <nccl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define AR_OPS 20
#define AR_COUNT (1u << 18) /* floats: 1 MiB a call */
#define SR_OPS 10
#define SR_COUNT (1u << 16) /* floats: 256 KiB a call */
#define GR_REPLAYS 5        /* launches of a graph holding one broadcast */
#define GR_COUNT 1024u      /* floats: 4 KiB a broadcast */
#define COMM_NAME "memobs-gpu"
#define SOLO_NAME "memobs-solo"
#define WAIT_S 20

static int npass, nfail;
static char who[16] = ""; /* "r0: ", "solo: " */
static int my_rank;

static void result(int good, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void result(int good, const char *fmt, ...) {
    va_list ap;
    printf("%s - nccl-gpu: %s", good ? "ok" : "not ok", who);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (good)
        npass++;
    else
        nfail++;
}

/* NCCL's functions, from nccl.h, looked up in the library. */
static struct {
    void *lib;
    char path[512];
    ncclResult_t (*get_version)(int *);
    ncclResult_t (*get_unique_id)(ncclUniqueId *);
    ncclResult_t (*init_rank_config)(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *);
    ncclResult_t (*finalize)(ncclComm_t);
    ncclResult_t (*destroy)(ncclComm_t);
    ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*broadcast)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    ncclResult_t (*send)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    ncclResult_t (*recv)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    ncclResult_t (*group_start)(void);
    ncclResult_t (*group_end)(void);
    const char *(*error_string)(ncclResult_t);
    const char *(*last_error)(ncclComm_t);
    int version;
} nccl;

#define NCCL_FN(field, name)                                                                                           \
    do {                                                                                                               \
        *(void **)&nccl.field = dlsym(nccl.lib, name);                                                                 \
        if (!nccl.field) {                                                                                             \
            printf("not ok - nccl-gpu: %s missing in %s\n", name, nccl.path);                                          \
            return -1;                                                                                                 \
        }                                                                                                              \
    } while (0)

static int nccl_open(void) {
    const char *path = getenv("NCCL_LIB");
    if (!path || !*path)
        path = "libnccl.so.2";
    nccl.lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!nccl.lib) {
        printf("not ok - nccl-gpu: dlopen(%s): %s (set NCCL_LIB)\n", path, dlerror());
        return -1;
    }
    struct link_map *lm = NULL;
    snprintf(nccl.path, sizeof nccl.path, "%s", dlinfo(nccl.lib, RTLD_DI_LINKMAP, &lm) == 0 && lm ? lm->l_name : path);
    NCCL_FN(get_version, "ncclGetVersion");
    NCCL_FN(get_unique_id, "ncclGetUniqueId");
    NCCL_FN(init_rank_config, "ncclCommInitRankConfig");
    NCCL_FN(finalize, "ncclCommFinalize");
    NCCL_FN(destroy, "ncclCommDestroy");
    NCCL_FN(all_reduce, "ncclAllReduce");
    NCCL_FN(broadcast, "ncclBroadcast");
    NCCL_FN(send, "ncclSend");
    NCCL_FN(recv, "ncclRecv");
    NCCL_FN(group_start, "ncclGroupStart");
    NCCL_FN(group_end, "ncclGroupEnd");
    NCCL_FN(error_string, "ncclGetErrorString");
    NCCL_FN(last_error, "ncclGetLastError");
    if (nccl.get_version(&nccl.version) != ncclSuccess)
        nccl.version = 0;
    return 0;
}

/* The profiler API version NCCL asks for first, newest first: 2.29+ v6,
   2.28 v5, 2.27 v4, 2.26 v3, 2.24-2.25 v2, 2.23 v1 (each NCCL's
   src/plugin/profiler.cc, src/misc/profiler.cc before 2.26). */
static int expected_api_version(int v) {
    if (v >= 22900)
        return 6;
    if (v >= 22800)
        return 5;
    if (v >= 22700)
        return 4;
    if (v >= 22600)
        return 3;
    if (v >= 22400)
        return 2;
    return 1;
}

static const char *level(void) {
    const char *l = getenv("MEMOBS_NCCL");
    return l && *l ? l : "coll";
}

static int attached(void) {
    const char *a = getenv("MEMOBS_NCCL_ATTACH");
    return !(a && strcmp(a, "0") == 0);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define CUDA_OK(call)                                                                                                  \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                       \
            result(0, "%s: %s", #call, cudaGetErrorString(e_));                                                        \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)
#define NCCL_OK(comm, call)                                                                                            \
    do {                                                                                                               \
        ncclResult_t r_ = (call);                                                                                      \
        if (r_ != ncclSuccess) {                                                                                       \
            result(0, "%s: %d %s (%s)", #call, (int)r_, nccl.error_string(r_), nccl.last_error(comm));                 \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

__global__ void fill(float *p, size_t n, float v) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = v;
}

/* Every element of the device buffer d (n floats) equals want. */
static int all_equal(const float *d, size_t n, float want, float *bad_value) {
    float *h = (float *)malloc(n * sizeof(float));
    int good = h && cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess;
    for (size_t i = 0; good && i < n; i++)
        if (h[i] != want)
            *bad_value = h[i], good = 0;
    free(h);
    return good;
}

/* The rows of this program's memobs. */
static memobs_coll_stats_t rows[64];
static size_t nrows;
static memobs_peer_stats_t peers[16];
static size_t npeers;

static void snapshot(void) {
    nrows = memobs_coll_get_stats(rows, 64);
    if (nrows > 64)
        nrows = 64;
    npeers = memobs_peer_get_stats(peers, 16);
    if (npeers > 16)
        npeers = 16;
}

static const memobs_coll_stats_t *row(const char *comm, const char *kind, memobs_phase_t phase) {
    for (size_t i = 0; i < nrows; i++)
        if (rows[i].comm_name && strcmp(rows[i].comm_name, comm) == 0 && rows[i].kind_name &&
            strcmp(rows[i].kind_name, kind) == 0 && rows[i].phase == phase)
            return &rows[i];
    return NULL;
}

static void show_rows(void) {
    for (size_t i = 0; i < nrows; i++)
        printf("    # row: %s r%d/%d nodes %d %s phase %d: ops %llu bytes %llu timed %llu ns %llu algo %llu bus %llu "
               "busbw %.3f GB/s\n",
               rows[i].comm_name, rows[i].rank, rows[i].nranks, rows[i].nnodes, rows[i].kind_name, (int)rows[i].phase,
               (unsigned long long)rows[i].ops, (unsigned long long)rows[i].bytes,
               (unsigned long long)rows[i].timed_ops, (unsigned long long)rows[i].ns,
               (unsigned long long)rows[i].algo_bytes, (unsigned long long)rows[i].bus_bytes, rows[i].busbw_gbs);
    for (size_t i = 0; i < npeers; i++)
        printf("    # peer: %s (rank %d): send prefill %llu decode %llu unphased %llu; recv prefill %llu decode %llu "
               "unphased %llu bytes\n",
               peers[i].name, peers[i].rank, (unsigned long long)peers[i].bytes[MEMOBS_PEER_SEND][MEMOBS_PHASE_PREFILL],
               (unsigned long long)peers[i].bytes[MEMOBS_PEER_SEND][MEMOBS_PHASE_DECODE],
               (unsigned long long)peers[i].bytes[MEMOBS_PEER_SEND][MEMOBS_PHASE_NONE],
               (unsigned long long)peers[i].bytes[MEMOBS_PEER_RECV][MEMOBS_PHASE_PREFILL],
               (unsigned long long)peers[i].bytes[MEMOBS_PEER_RECV][MEMOBS_PHASE_DECODE],
               (unsigned long long)peers[i].bytes[MEMOBS_PEER_RECV][MEMOBS_PHASE_NONE]);
}

/* The plugin's source line: set at its first init, attached or not. */
static void check_info(void) {
    memobs_coll_info_t info;
    memset(&info, 0, sizeof info);
    memobs_coll_get_info(&info);
    printf("    # memobs_coll_get_info: source \"%s\" instance \"%s\" level \"%s\" api_version %d events_dropped %llu "
           "bad_events %llu\n",
           info.source, info.instance, info.level, info.api_version,
           (unsigned long long)info.notes[MEMOBS_COLL_NOTE_EVENTS_DROPPED],
           (unsigned long long)info.notes[MEMOBS_COLL_NOTE_BAD_EVENTS]);
    if (!attached()) {
        result(info.source[0] == 0 && nrows == 0 && npeers == 0,
               "MEMOBS_NCCL_ATTACH=0: the plugin keeps its own memobs: nothing in this program's (source \"%s\", %zu "
               "rows, %zu peers)",
               info.source, nrows, npeers);
        return;
    }
    int want_api = expected_api_version(nccl.version);
    result(strcmp(info.source, "nccl-profiler") == 0 && strcmp(info.instance, "program") == 0 &&
               strcmp(info.level, level()) == 0 && info.api_version == want_api,
           "the plugin attached to this program's memobs: source \"nccl-profiler\" instance \"program\" level \"%s\" "
           "api_version %d (NCCL %d asks for it first); got \"%s\" \"%s\" \"%s\" %d",
           level(), want_api, nccl.version, info.source, info.instance, info.level, info.api_version);
    result(info.notes[MEMOBS_COLL_NOTE_EVENTS_DROPPED] == 0 && info.notes[MEMOBS_COLL_NOTE_BAD_EVENTS] == 0,
           "no event dropped, no bad event (%llu, %llu)",
           (unsigned long long)info.notes[MEMOBS_COLL_NOTE_EVENTS_DROPPED],
           (unsigned long long)info.notes[MEMOBS_COLL_NOTE_BAD_EVENTS]);
}

static int run_solo(void) {
    snprintf(who, sizeof who, "solo: ");
    ncclUniqueId id;
    ncclComm_t comm = NULL;
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.commName = SOLO_NAME;
    float *buf = NULL;
    cudaStream_t st;
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc((void **)&buf, AR_COUNT * sizeof(float)));
    NCCL_OK(NULL, nccl.get_unique_id(&id));
    NCCL_OK(NULL, nccl.init_rank_config(&comm, 1, id, 0, &cfg));
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    for (int i = 0; i < AR_OPS; i++)
        NCCL_OK(comm, nccl.all_reduce(buf, buf, AR_COUNT, ncclFloat, ncclSum, comm, st));
    CUDA_OK(cudaStreamSynchronize(st));
    NCCL_OK(comm, nccl.finalize(comm));
    NCCL_OK(comm, nccl.destroy(comm));
    result(1, "a 1-rank communicator: init, %d all-reduces, finalize, destroy", AR_OPS);
    snapshot();
    show_rows();
    check_info();
    result(nrows == 0 && npeers == 0,
           "a 1-rank communicator records no operation: NCCL runs it with no task events (ncclLaunchOneRank); "
           "%zu rows, %zu peers",
           nrows, npeers);
    cudaFree(buf);
    cudaStreamDestroy(st);
    return 0;
}

/* Rank 0 writes the id (a temporary, then rename); rank 1 waits for it. */
static int exchange_id(int rank, const char *file, ncclUniqueId *id) {
    char tmp[1024];
    if (rank == 0) {
        NCCL_OK(NULL, nccl.get_unique_id(id));
        snprintf(tmp, sizeof tmp, "%s.tmp", file);
        FILE *f = fopen(tmp, "wb");
        if (!f || fwrite(id, sizeof *id, 1, f) != 1 || fclose(f) != 0 || rename(tmp, file) != 0) {
            result(0, "write the unique id to %s: %s", file, strerror(errno));
            return 1;
        }
        return 0;
    }
    double until = now_s() + WAIT_S;
    for (;;) {
        FILE *f = fopen(file, "rb");
        if (f) {
            size_t n = fread(id, sizeof *id, 1, f);
            fclose(f);
            if (n == 1)
                return 0;
        }
        if (now_s() > until) {
            result(0, "no unique id from rank 0 in %s after %d s", file, WAIT_S);
            return 1;
        }
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
}

/* Operations are recorded as they complete (the last KernelCh or ProxyOp
   stop, on NCCL's proxy thread): wait until the expected ones are in. */
static void wait_for_ops(void) {
    double until = now_s() + WAIT_S;
    for (;;) {
        snapshot();
        const memobs_coll_stats_t *a = row(COMM_NAME, "all_reduce", MEMOBS_PHASE_PREFILL);
        const memobs_coll_stats_t *s = row(COMM_NAME, "send", MEMOBS_PHASE_DECODE);
        const memobs_coll_stats_t *r = row(COMM_NAME, "recv", MEMOBS_PHASE_DECODE);
        const memobs_coll_stats_t *b = row(COMM_NAME, "broadcast", MEMOBS_PHASE_DECODE);
        int bdone = strcmp(level(), "api") == 0 || (b && b->ops >= GR_REPLAYS);
        if ((a && a->ops >= AR_OPS && s && s->ops >= SR_OPS && r && r->ops >= SR_OPS && bdone) || now_s() > until)
            return;
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
}

static void check_row(const char *kind, memobs_phase_t phase, uint64_t ops, uint64_t bytes) {
    const memobs_coll_stats_t *r = row(COMM_NAME, kind, phase);
    const char *ph = phase == MEMOBS_PHASE_PREFILL ? "prefill" : "decode";
    if (!r) {
        result(0, "%s %s: no row", kind, ph);
        return;
    }
    result(r->ops == ops && r->bytes == bytes && r->nranks == 2 && r->nnodes == 2 && r->rank == my_rank,
           "%s %s: ops %llu bytes %llu, comm " COMM_NAME " rank %d of 2 on 2 nodes (got ops %llu bytes %llu, rank %d "
           "of %d on %d)",
           kind, ph, (unsigned long long)ops, (unsigned long long)bytes, my_rank, (unsigned long long)r->ops,
           (unsigned long long)r->bytes, r->rank, r->nranks, r->nnodes);
    if (strcmp(level(), "api") == 0) {
        printf("    # level api: %s timed_ops %llu ns %llu (enqueue times only)\n", kind,
               (unsigned long long)r->timed_ops, (unsigned long long)r->ns);
        return;
    }
    /* S = bytes (all_reduce, send, recv); factor 2(n-1)/n = 1 for
       all_reduce at n = 2, 1 for send and recv: bus bytes = S. */
    result(r->timed_ops == ops && r->ns > 0 && r->algo_bytes == bytes && r->bus_bytes == bytes && r->busbw_gbs > 0,
           "%s %s: every operation timed (GPU time), algo and bus bytes %llu (timed_ops %llu, %.3f ms, algo %llu, "
           "bus %llu, algbw %.3f busbw %.3f GB/s)",
           kind, ph, (unsigned long long)bytes, (unsigned long long)r->timed_ops, r->ns / 1e6,
           (unsigned long long)r->algo_bytes, (unsigned long long)r->bus_bytes, r->algbw_gbs, r->busbw_gbs);
}

/* Bytes the network transport moved to and from the other rank: at least
   the payload (ring all-reduce over 2 ranks sends and receives S each
   call; a send or recv its count), at most twice it (the LL and LL128
   protocols carry flags beside the data). */
static void check_peer(int rank) {
    const memobs_peer_stats_t *p = NULL;
    for (size_t i = 0; i < npeers; i++)
        if (peers[i].rank == 1 - rank && peers[i].name && strstr(peers[i].name, COMM_NAME))
            p = &peers[i];
    if (strcmp(level(), "proxy") != 0 && strcmp(level(), "net") != 0) {
        result(npeers == 0, "level %s: no bytes per peer (%zu peer rows)", level(), npeers);
        return;
    }
    if (!p) {
        result(0, "proxy level: a peer row for rank %d of " COMM_NAME, 1 - rank);
        return;
    }
    const uint64_t ar = (uint64_t)AR_OPS * AR_COUNT * 4, sr = (uint64_t)SR_OPS * SR_COUNT * 4;
    for (int dir = 0; dir < 2; dir++) {
        uint64_t a = p->bytes[dir][MEMOBS_PHASE_PREFILL], d = p->bytes[dir][MEMOBS_PHASE_DECODE];
        result(a >= ar && a <= 2 * ar && d >= sr && d <= 2 * sr && p->bytes[dir][MEMOBS_PHASE_NONE] == 0,
               "proxy level: %s rank %d (\"%s\"): prefill %llu bytes (payload %llu), decode %llu (payload %llu), "
               "unphased 0 (%llu)",
               dir == MEMOBS_PEER_SEND ? "sent to" : "received from", 1 - rank, p->name, (unsigned long long)a,
               (unsigned long long)ar, (unsigned long long)d, (unsigned long long)sr,
               (unsigned long long)p->bytes[dir][MEMOBS_PHASE_NONE]);
    }
}

static int run_rank(int rank, const char *idfile) {
    snprintf(who, sizeof who, "r%d: ", rank);
    my_rank = rank;
    const int peer = 1 - rank;
    ncclUniqueId id;
    ncclComm_t comm = NULL;
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.commName = COMM_NAME;
    float *ar = NULL, *sbuf = NULL, *rbuf = NULL, bad = 0;
    cudaStream_t st;
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc((void **)&ar, AR_COUNT * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&sbuf, SR_COUNT * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&rbuf, SR_COUNT * sizeof(float)));
    if (exchange_id(rank, idfile, &id))
        return 1;
    double t0 = now_s();
    NCCL_OK(NULL, nccl.init_rank_config(&comm, 2, id, rank, &cfg));
    printf("    # ncclCommInitRankConfig: %.2f s\n", now_s() - t0);

    /* prefill: each all-reduce sums (rank + 1) over 2 ranks: 3 */
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    for (int i = 0; i < AR_OPS; i++) {
        fill<<<(AR_COUNT + 255) / 256, 256, 0, st>>>(ar, AR_COUNT, (float)(rank + 1));
        NCCL_OK(comm, nccl.all_reduce(ar, ar, AR_COUNT, ncclFloat, ncclSum, comm, st));
    }
    CUDA_OK(cudaStreamSynchronize(st));
    result(all_equal(ar, AR_COUNT, 3.0f, &bad), "prefill: %d all-reduces of %u floats, each element 1 + 2 = 3 (%g)",
           AR_OPS, AR_COUNT, bad ? bad : 3.0);
    /* decode: a send and a recv in one group with the other rank */
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    fill<<<(SR_COUNT + 255) / 256, 256, 0, st>>>(sbuf, SR_COUNT, (float)(10 * (rank + 1)));
    for (int i = 0; i < SR_OPS; i++) {
        NCCL_OK(comm, nccl.group_start());
        NCCL_OK(comm, nccl.send(sbuf, SR_COUNT, ncclFloat, peer, comm, st));
        NCCL_OK(comm, nccl.recv(rbuf, SR_COUNT, ncclFloat, peer, comm, st));
        NCCL_OK(comm, nccl.group_end());
    }
    CUDA_OK(cudaStreamSynchronize(st));
    bad = 0;
    result(all_equal(rbuf, SR_COUNT, (float)(10 * (peer + 1)), &bad),
           "decode: %d send/recv pairs of %u floats with rank %d, received its %d (%g)", SR_OPS, SR_COUNT, peer,
           10 * (peer + 1), bad ? bad : 10.0 * (peer + 1));
    /* decode: a broadcast captured once into a graph, launched GR_REPLAYS times */
    float *gbuf = NULL;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    CUDA_OK(cudaMalloc((void **)&gbuf, GR_COUNT * sizeof(float)));
    fill<<<(GR_COUNT + 255) / 256, 256, 0, st>>>(gbuf, GR_COUNT, (float)(100 * (rank + 1)));
    CUDA_OK(cudaStreamSynchronize(st));
    CUDA_OK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    NCCL_OK(comm, nccl.broadcast(gbuf, gbuf, GR_COUNT, ncclFloat, 0, comm, st));
    CUDA_OK(cudaStreamEndCapture(st, &graph));
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < GR_REPLAYS; i++)
        CUDA_OK(cudaGraphLaunch(exec, st));
    CUDA_OK(cudaStreamSynchronize(st));
    bad = 0;
    result(all_equal(gbuf, GR_COUNT, 100.0f, &bad),
           "decode: a graph holding one broadcast from rank 0 launched %d times, every element 100 (%g)", GR_REPLAYS,
           bad ? bad : 100.0);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaFree(gbuf);
    memobs_set_phase(MEMOBS_PHASE_NONE);
    NCCL_OK(comm, nccl.finalize(comm));
    NCCL_OK(comm, nccl.destroy(comm));

    if (attached())
        wait_for_ops();
    else
        snapshot();
    show_rows();
    check_info();
    if (!attached())
        return 0;
    check_row("all_reduce", MEMOBS_PHASE_PREFILL, AR_OPS, (uint64_t)AR_OPS * AR_COUNT * 4);
    check_row("send", MEMOBS_PHASE_DECODE, SR_OPS, (uint64_t)SR_OPS * SR_COUNT * 4);
    check_row("recv", MEMOBS_PHASE_DECODE, SR_OPS, (uint64_t)SR_OPS * SR_COUNT * 4);
    {
        memobs_coll_info_t info;
        const int api = strcmp(level(), "api") == 0;
        const memobs_coll_stats_t *b = row(COMM_NAME, "broadcast", MEMOBS_PHASE_DECODE);
        memset(&info, 0, sizeof info);
        memobs_coll_get_info(&info);
        uint64_t calls = info.notes[MEMOBS_COLL_NOTE_CAPTURED_CALLS], replays = info.notes[MEMOBS_COLL_NOTE_CAPTURED_REPLAYS];
        uint64_t bops = b ? b->ops : 0, bbytes = b ? b->bytes : 0;
        if (api)
            result(calls == 1 && replays == 0 && bops == 0,
                   "graph, level api: the capture is 1 captured call, its %d launches not seen (captured calls %llu, "
                   "replays %llu, broadcast ops %llu)",
                   GR_REPLAYS, (unsigned long long)calls, (unsigned long long)replays, (unsigned long long)bops);
        else
            result(calls == 1 && replays == GR_REPLAYS && bops == GR_REPLAYS &&
                       bbytes == (uint64_t)GR_REPLAYS * GR_COUNT * 4,
                   "graph, level %s: the capture is 1 captured call, each of its %d launches a broadcast operation "
                   "(captured replays %d, bytes %llu); got captured calls %llu, replays %llu, broadcast ops %llu "
                   "bytes %llu",
                   level(), GR_REPLAYS, GR_REPLAYS, (unsigned long long)GR_REPLAYS * GR_COUNT * 4,
                   (unsigned long long)calls, (unsigned long long)replays, (unsigned long long)bops,
                   (unsigned long long)bbytes);
        size_t want = api ? 3 : 4;
        result(nrows == want, "no other rows: %zu (all_reduce prefill, send and recv decode%s); got %zu", want,
               api ? "" : ", broadcast decode", nrows);
    }
    check_peer(rank);
    cudaFree(ar);
    cudaFree(sbuf);
    cudaFree(rbuf);
    cudaStreamDestroy(st);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (argc >= 2 && strcmp(argv[1], "probe") == 0) {
        if (e != cudaSuccess || ndev <= 0) {
            printf("no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
            return 1;
        }
        struct cudaDeviceProp prop;
        int mode = -1;
        if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess &&
            cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, 0) == cudaSuccess)
            printf("devices: %d (0: %s, compute mode %d%s)\n", ndev, prop.name, mode,
                   mode == cudaComputeModeDefault ? ": processes share it" : ": 2 ranks may not share it");
        if (nccl_open())
            return 1;
        printf("nccl: %d %s\n", nccl.version, nccl.path);
        return 0;
    }
    if (e != cudaSuccess || ndev <= 0) {
        printf("not ok - nccl-gpu: no CUDA device\n");
        return 1;
    }
    if (nccl_open())
        return 1;
    int rc;
    if (argc == 2 && strcmp(argv[1], "solo") == 0)
        rc = run_solo();
    else if (argc == 4 && strcmp(argv[1], "rank") == 0 && (argv[2][0] == '0' || argv[2][0] == '1') && !argv[2][1])
        rc = run_rank(argv[2][0] - '0', argv[3]);
    else {
        fprintf(stderr, "usage: %s probe | solo | rank 0|1 IDFILE\n", argv[0]);
        return 2;
    }
    return rc || nfail ? 1 : 0;
}
