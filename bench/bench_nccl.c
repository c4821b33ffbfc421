/* bench_nccl.c - `make bench-nccl` (part of `make bench`): what the NCCL
   profiler plugin (libnccl-profiler-memobs.so) costs per collective at each
   activation level, beside an empty plugin of the same shape and beside
   NCCL Inspector.

   A collective is played as NCCL 2.28.9 plays it through the v5 API (its
   src/plugin/profiler.cc and the callers in enqueue.cc and group.cc): an
   AllReduce of 1 Mi bf16 elements, ring, 2 channels, on a 4-rank
   communicator. Each event is played only when the activation mask the
   plugin's init returned asks for it or for one of its descendants, as
   NCCL decides, and stopped or updated only when its handle is not NULL:
     GroupApi start, state GroupStartApiStop, CollApi start and stop,
     state GroupEndApiStart, Group start, Coll start and stop (the plan
     enqueued), Group stop, GroupApi stop; then, as the proxy thread does,
     per channel a KernelCh start, a send and a recv ProxyOp (start, state
     ProxyOpInProgress_v4) with 4 ProxySteps each (start, SendGPUWait,
     SendPeerWait_v4, SendWait with its size / RecvWait, RecvFlushWait
     with its size, RecvGPUWait, stop), the ProxyOp stops, the KernelCh
     KernelChStop state (GPU timer) and stop.
   All on one thread (NCCL spreads them over the user thread and its proxy
   thread): the figure is the plugin's own work per collective.

   Rows: the levels of MEMOBS_NCCL (api, coll, proxy), each in a child
   process of its own (the plugin reads its level at its first init), the
   empty plugin answering with the same mask, runs alternating: empty,
   memobs, empty, ...; "coll x2": two threads playing collectives of the
   one communicator at once (the shared rows' atomic adds under
   contention), ns per collective per thread. Inspector (BENCH_NCCL_INSPECTOR=path of
   libnccl-profiler-inspector.so, else "not built") with the mask its own
   init chooses (Coll | KernelCh | P2p, which NCCL plays like memobs'
   coll level), NCCL_INSPECTOR_ENABLE=1, its output in a temporary folder.
   Inspector needs a CUDA device at init (cudaGetDevice, cuDeviceGet,
   cuDeviceGetUuid): BENCH_NCCL_CUDA_STUBS=folder names a folder with
   libcudart.so.13 and libcuda.so.1 built from bench/bench_nccl_stubs.c,
   loaded first so Inspector binds to them (no GPU needed).

   The bench builds memobs in and exports memobs_host_api, so the plugin
   records into the bench's memobs ("program", the path under the
   LD_PRELOAD library or the Python package): the "counted" column is the
   all_reduce operations memobs holds after the runs, against those
   played, and the timed ones.

   Each figure: BENCH_NCCL_RUNS runs (default 7) of BENCH_NCCL_OPS
   collectives (default 20000), ns per collective: median beside best.
   Figures are printed, never asserted.

   bench_nccl PLUGIN.so */
#define _GNU_SOURCE
#define MEMOBS_IMPLEMENTATION
#define MEMOBS_EXPORT_HOST
#include "memobs.h"
#include "nccl/profiler_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BENCH_NCCL_CHANNELS 2
#define BENCH_NCCL_STEPS 4
#define BENCH_NCCL_COUNT (1u << 20)
#define BENCH_NCCL_CHUNK (1u << 19)
#define BENCH_NCCL_MAX_RUNS 64

/* What NCCL 2.28.9 starts for each event type: the type's own bit or a
   descendant's (src/plugin/profiler.cc). */
#define BENCH_NCCL_TASK_BITS (ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileKernelCh | ncclProfileNetPlugin)
#define BENCH_NCCL_GROUP_API_BITS                                                                                      \
    (ncclProfileGroupApi | ncclProfileP2pApi | ncclProfileCollApi | ncclProfileKernelLaunch | ncclProfileGroup |       \
     ncclProfileColl | ncclProfileP2p | BENCH_NCCL_TASK_BITS)
#define BENCH_NCCL_COLL_API_BITS (ncclProfileCollApi | ncclProfileColl | BENCH_NCCL_TASK_BITS)
#define BENCH_NCCL_GROUP_BITS (ncclProfileGroup | ncclProfileColl | ncclProfileP2p | BENCH_NCCL_TASK_BITS)
#define BENCH_NCCL_COLL_BITS (ncclProfileColl | BENCH_NCCL_TASK_BITS)
#define BENCH_NCCL_PROXY_OP_BITS (ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileNetPlugin)
#define BENCH_NCCL_PROXY_STEP_BITS (ncclProfileProxyStep | ncclProfileNetPlugin)

/* ======================================================================== */
/* The empty plugin                                                         */
/* ======================================================================== */

/* The mask it answers with: the level's, set before its init. */
static int bench_nccl_empty_mask;
static int bench_nccl_empty_ctx;

static ncclResult_t bench_nccl_empty_init(void **context, uint64_t commId, int *eActivationMask, const char *commName,
                                          int nNodes, int nranks, int rank, ncclDebugLogger_t logfn) {
    (void)commId, (void)commName, (void)nNodes, (void)nranks, (void)rank, (void)logfn;
    *context = &bench_nccl_empty_ctx;
    *eActivationMask = bench_nccl_empty_mask;
    return ncclSuccess;
}
static ncclResult_t bench_nccl_empty_start(void *context, void **eHandle, ncclProfilerEventDescr_v5_t *eDescr) {
    (void)eDescr;
    *eHandle = context;
    return ncclSuccess;
}
static ncclResult_t bench_nccl_empty_stop(void *eHandle) {
    (void)eHandle;
    return ncclSuccess;
}
static ncclResult_t bench_nccl_empty_record(void *eHandle, ncclProfilerEventState_v5_t eState,
                                            ncclProfilerEventStateArgs_v5_t *eStateArgs) {
    (void)eHandle, (void)eState, (void)eStateArgs;
    return ncclSuccess;
}
static ncclResult_t bench_nccl_empty_finalize(void *context) {
    (void)context;
    return ncclSuccess;
}
static const ncclProfiler_v5_t bench_nccl_empty = {"empty",
                                                   bench_nccl_empty_init,
                                                   bench_nccl_empty_start,
                                                   bench_nccl_empty_stop,
                                                   bench_nccl_empty_record,
                                                   bench_nccl_empty_finalize};

/* ======================================================================== */
/* Playing a collective                                                     */
/* ======================================================================== */

typedef struct {
    const ncclProfiler_v5_t *p;
    void *ctx;
    int mask;
    uint64_t calls; /* plugin calls made */
} bench_nccl_plug_t;

static void *bench_nccl_start(bench_nccl_plug_t *pl, ncclProfilerEventDescr_v5_t *d) {
    void *h = NULL;
    pl->p->startEvent(pl->ctx, &h, d);
    pl->calls++;
    return h;
}
static void bench_nccl_stop(bench_nccl_plug_t *pl, void *h) {
    if (!h)
        return;
    pl->p->stopEvent(h);
    pl->calls++;
}
static void bench_nccl_record(bench_nccl_plug_t *pl, void *h, ncclProfilerEventState_v5_t s, size_t size,
                              uint64_t timer) {
    ncclProfilerEventStateArgs_v5_t a;
    if (!h)
        return;
    memset(&a, 0, sizeof a);
    if (s == ncclProfilerKernelChStop)
        a.kernelCh.pTimer = timer;
    else
        a.proxyStep.transSize = size;
    pl->p->recordEventState(h, s, &a);
    pl->calls++;
}

static char bench_nccl_sendbuf[64], bench_nccl_recvbuf[64];
static pid_t bench_nccl_pid; /* NCCL keeps getpid() from the plugin's load */

/* One collective, seq its sequence number. */
static void bench_nccl_play(bench_nccl_plug_t *pl, uint64_t seq) {
    const int m = pl->mask;
    ncclProfilerEventDescr_v5_t d;
    void *gapi = NULL, *capi = NULL, *group = NULL, *coll = NULL;
    void *kch[BENCH_NCCL_CHANNELS], *op[BENCH_NCCL_CHANNELS][2];
    int c, dir, s;

    /* the user thread: the call, the group end, the plan enqueued */
    if (m & BENCH_NCCL_GROUP_API_BITS) {
        memset(&d, 0, sizeof d);
        d.type = ncclProfileGroupApi;
        d.groupApi.groupDepth = 1;
        gapi = bench_nccl_start(pl, &d);
        bench_nccl_record(pl, gapi, ncclProfilerGroupStartApiStop, 0, 0);
    }
    if (m & BENCH_NCCL_COLL_API_BITS) {
        memset(&d, 0, sizeof d);
        d.type = ncclProfileCollApi;
        d.parentObj = gapi;
        d.collApi.func = "AllReduce";
        d.collApi.count = BENCH_NCCL_COUNT;
        d.collApi.datatype = "ncclBfloat16";
        capi = bench_nccl_start(pl, &d);
        bench_nccl_stop(pl, capi);
    }
    bench_nccl_record(pl, gapi, ncclProfilerGroupEndApiStart, 0, 0);
    if (m & BENCH_NCCL_GROUP_BITS) {
        memset(&d, 0, sizeof d);
        d.type = ncclProfileGroup;
        group = bench_nccl_start(pl, &d);
    }
    if (m & BENCH_NCCL_COLL_BITS) {
        memset(&d, 0, sizeof d);
        d.type = ncclProfileColl;
        d.parentObj = capi;
        d.coll.seqNumber = seq;
        d.coll.func = "AllReduce";
        d.coll.sendBuff = bench_nccl_sendbuf;
        d.coll.recvBuff = bench_nccl_recvbuf;
        d.coll.count = BENCH_NCCL_COUNT;
        d.coll.datatype = "ncclBfloat16";
        d.coll.nChannels = BENCH_NCCL_CHANNELS;
        d.coll.nWarps = 16;
        d.coll.algo = "RING";
        d.coll.proto = "SIMPLE";
        d.coll.parentGroup = group;
        coll = bench_nccl_start(pl, &d);
        bench_nccl_stop(pl, coll);
    }
    bench_nccl_stop(pl, group);
    bench_nccl_stop(pl, gapi);

    /* the proxy thread: kernel channels, proxy ops and their steps */
    for (c = 0; c < BENCH_NCCL_CHANNELS; c++) {
        kch[c] = NULL;
        if (m & ncclProfileKernelCh) {
            memset(&d, 0, sizeof d);
            d.type = ncclProfileKernelCh;
            d.parentObj = coll;
            d.kernelCh.channelId = (uint8_t)c;
            d.kernelCh.pTimer = seq * 4000000u;
            kch[c] = bench_nccl_start(pl, &d);
        }
        for (dir = 0; dir < 2; dir++) {
            op[c][dir] = NULL;
            if (!(m & BENCH_NCCL_PROXY_OP_BITS))
                continue;
            memset(&d, 0, sizeof d);
            d.type = ncclProfileProxyOp;
            d.parentObj = coll;
            d.proxyOp.pid = bench_nccl_pid;
            d.proxyOp.channelId = (uint8_t)c;
            d.proxyOp.peer = dir == 0 ? 1 : 3;
            d.proxyOp.nSteps = BENCH_NCCL_STEPS;
            d.proxyOp.chunkSize = BENCH_NCCL_CHUNK;
            d.proxyOp.isSend = dir == 0;
            op[c][dir] = bench_nccl_start(pl, &d);
            bench_nccl_record(pl, op[c][dir], ncclProfilerProxyOpInProgress_v4, 0, 0);
            for (s = 0; s < BENCH_NCCL_STEPS && (m & BENCH_NCCL_PROXY_STEP_BITS); s++) {
                void *st;
                memset(&d, 0, sizeof d);
                d.type = ncclProfileProxyStep;
                d.parentObj = op[c][dir];
                d.proxyStep.step = s;
                st = bench_nccl_start(pl, &d);
                if (dir == 0) {
                    bench_nccl_record(pl, st, ncclProfilerProxyStepSendGPUWait, 0, 0);
                    bench_nccl_record(pl, st, ncclProfilerProxyStepSendPeerWait_v4, 0, 0);
                    bench_nccl_record(pl, st, ncclProfilerProxyStepSendWait, BENCH_NCCL_CHUNK / 2, 0);
                } else {
                    bench_nccl_record(pl, st, ncclProfilerProxyStepRecvWait, 0, 0);
                    bench_nccl_record(pl, st, ncclProfilerProxyStepRecvFlushWait, BENCH_NCCL_CHUNK / 2, 0);
                    bench_nccl_record(pl, st, ncclProfilerProxyStepRecvGPUWait, 0, 0);
                }
                bench_nccl_stop(pl, st);
            }
        }
    }
    for (c = 0; c < BENCH_NCCL_CHANNELS; c++) {
        for (dir = 0; dir < 2; dir++)
            bench_nccl_stop(pl, op[c][dir]);
        bench_nccl_record(pl, kch[c], ncclProfilerKernelChStop, 0, seq * 4000000u + 1000000u + c * 250000u);
        bench_nccl_stop(pl, kch[c]);
    }
}

/* ======================================================================== */
/* Runs                                                                     */
/* ======================================================================== */

static double bench_nccl_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static unsigned bench_nccl_env(const char *name, unsigned dflt, unsigned max) {
    const char *v = getenv(name);
    unsigned long n = v && *v ? strtoul(v, NULL, 10) : dflt;
    return n == 0 ? dflt : n > max ? max : (unsigned)n;
}

/* ns per collective of one run of n. */
static double bench_nccl_run(bench_nccl_plug_t *pl, unsigned n, uint64_t *seq) {
    double t0 = bench_nccl_now();
    unsigned i;
    for (i = 0; i < n; i++)
        bench_nccl_play(pl, (*seq)++);
    return (bench_nccl_now() - t0) / n;
}

/* NCCL always passes its logger (which returns at once below its level). */
static void bench_nccl_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line, const char *fmt,
                           ...) {
    (void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

static int bench_nccl_init(bench_nccl_plug_t *pl, const ncclProfiler_v5_t *p) {
    memset(pl, 0, sizeof *pl);
    pl->p = p;
    if (p->init(&pl->ctx, 0x6d656d6f6273ull, &pl->mask, "bench", 1, 4, 0, bench_nccl_log) != ncclSuccess)
        pl->mask = 0;
    return pl->mask;
}

static const ncclProfiler_v5_t *bench_nccl_load(const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    const ncclProfiler_v5_t *p;
    if (!h) {
        printf("error %s\n", dlerror());
        return NULL;
    }
    p = (const ncclProfiler_v5_t *)dlsym(h, "ncclProfiler_v5");
    if (!p)
        printf("error %s has no ncclProfiler_v5\n", path);
    return p;
}

/* One thread's share of a child's runs: its own copies of the two
   plugins' state (the same contexts), its own sequence numbers. */
typedef struct {
    bench_nccl_plug_t plug, empty;
    unsigned ops, runs;
    uint64_t seq, eseq, first;
    double e[BENCH_NCCL_MAX_RUNS], t[BENCH_NCCL_MAX_RUNS];
} bench_nccl_worker_t;
static pthread_barrier_t bench_nccl_barrier;
static int bench_nccl_nthreads;

static void *bench_nccl_worker(void *arg) {
    bench_nccl_worker_t *w = (bench_nccl_worker_t *)arg;
    unsigned r;
    bench_nccl_run(&w->plug, w->ops / 4 + 1, &w->seq); /* warm */
    bench_nccl_run(&w->empty, w->ops / 4 + 1, &w->eseq);
    for (r = 0; r < w->runs; r++) {
        if (bench_nccl_nthreads > 1)
            pthread_barrier_wait(&bench_nccl_barrier);
        w->e[r] = bench_nccl_run(&w->empty, w->ops, &w->eseq);
        if (bench_nccl_nthreads > 1)
            pthread_barrier_wait(&bench_nccl_barrier);
        w->t[r] = bench_nccl_run(&w->plug, w->ops, &w->seq);
    }
    return NULL;
}

/* In a child: "calls N mask M", then per run "t EMPTY_NS PLUGIN_NS" (ns
   per collective, the threads' mean), then "counted OPS TIMED PLAYED". */
static int bench_nccl_child(const char *path, const char *level, int inspector, int nthreads) {
    unsigned runs = bench_nccl_env("BENCH_NCCL_RUNS", 7, BENCH_NCCL_MAX_RUNS);
    unsigned ops = bench_nccl_env("BENCH_NCCL_OPS", 20000, 100000000);
    const char *stubs = getenv("BENCH_NCCL_CUDA_STUBS");
    static bench_nccl_worker_t w[2];
    bench_nccl_plug_t plug, empty;
    const ncclProfiler_v5_t *p;
    pthread_t th;
    uint64_t played = 1;
    unsigned r;
    int k;
    if (inspector && stubs && *stubs) {
        char lib[1024];
        snprintf(lib, sizeof lib, "%s/libcudart.so.13", stubs);
        if (!dlopen(lib, RTLD_NOW | RTLD_GLOBAL))
            return printf("error %s\n", dlerror()), 1;
        snprintf(lib, sizeof lib, "%s/libcuda.so.1", stubs);
        if (!dlopen(lib, RTLD_NOW | RTLD_GLOBAL))
            return printf("error %s\n", dlerror()), 1;
    }
    bench_nccl_pid = getpid();
    if (!inspector)
        setenv("MEMOBS_NCCL", level, 1);
    if (!(p = bench_nccl_load(path)))
        return 1;
    if (!bench_nccl_init(&plug, p))
        return printf("error %s: init gave mask 0\n", path), 1;
    bench_nccl_empty_mask = plug.mask;
    bench_nccl_init(&empty, &bench_nccl_empty);
    bench_nccl_play(&plug, 1); /* the calls one collective makes */
    printf("calls %llu mask 0x%x\n", (unsigned long long)plug.calls, plug.mask);
    bench_nccl_nthreads = nthreads;
    for (k = 0; k < nthreads; k++) {
        w[k].plug = plug;
        w[k].empty = empty;
        w[k].ops = ops;
        w[k].runs = runs;
        w[k].first = w[k].seq = w[k].eseq = ((uint64_t)k << 40) + 2;
    }
    if (nthreads > 1) {
        pthread_barrier_init(&bench_nccl_barrier, NULL, (unsigned)nthreads);
        if (pthread_create(&th, NULL, bench_nccl_worker, &w[1]) != 0)
            return printf("error pthread_create\n"), 1;
    }
    bench_nccl_worker(&w[0]);
    if (nthreads > 1)
        pthread_join(th, NULL);
    for (r = 0; r < runs; r++) {
        double e = 0, t = 0;
        for (k = 0; k < nthreads; k++)
            e += w[k].e[r] / nthreads, t += w[k].t[r] / nthreads;
        printf("t %.2f %.2f\n", e, t);
    }
    for (k = 0; k < nthreads; k++)
        played += w[k].seq - w[k].first;
    p->finalize(plug.ctx);
    if (!inspector) {
        memobs_coll_stats_t rows[8];
        size_t i, n = memobs_coll_get_stats(rows, 8);
        uint64_t n_ops = 0, timed = 0;
        for (i = 0; i < n && i < 8; i++)
            if (rows[i].kind == MEMOBS_COLL_ALL_REDUCE)
                n_ops += rows[i].ops, timed += rows[i].timed_ops;
        printf("counted %llu %llu %llu\n", (unsigned long long)n_ops, (unsigned long long)timed,
               (unsigned long long)played);
    }
    return 0;
}

static int bench_nccl_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Runs a child; prints its row. */
static void bench_nccl_row(const char *path, const char *level, int inspector, int nthreads, const char *label) {
    int fd[2], st = 0;
    char line[512], err[512] = "";
    double e[BENCH_NCCL_MAX_RUNS], t[BENCH_NCCL_MAX_RUNS];
    unsigned long long calls = 0, counted = 0, timed = 0, played = 0;
    unsigned mask = 0;
    int n = 0;
    pid_t pid;
    FILE *f;
    fflush(stdout);
    if (pipe(fd) != 0 || (pid = fork()) < 0) {
        printf("  %-10s fork failed\n", label);
        return;
    }
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 1);
        _exit(bench_nccl_child(path, level, inspector, nthreads) ? 1 : (fflush(stdout), 0));
    }
    close(fd[1]);
    f = fdopen(fd[0], "r");
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "calls %llu mask %x", &calls, &mask) == 2)
            continue;
        if (sscanf(line, "counted %llu %llu %llu", &counted, &timed, &played) == 3)
            continue;
        if (n < BENCH_NCCL_MAX_RUNS && sscanf(line, "t %lf %lf", &e[n], &t[n]) == 2)
            n++;
        else if (strncmp(line, "error ", 6) == 0)
            snprintf(err, sizeof err, "%s", line + 6);
    }
    if (f)
        fclose(f);
    waitpid(pid, &st, 0);
    if (n == 0) {
        err[strcspn(err, "\n")] = 0;
        printf("  %-10s failed: %s (exit %d)\n", label, *err ? err : "no figures",
               WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        return;
    }
    qsort(e, n, sizeof e[0], bench_nccl_cmp);
    qsort(t, n, sizeof t[0], bench_nccl_cmp);
    {
        double me = e[n / 2], mt = t[n / 2];
        char cnt[64] = "";
        if (played)
            snprintf(cnt, sizeof cnt, "%llu/%llu, %llu timed", counted, played, timed);
        printf("  %-10s %5llu 0x%04x  %9.1f %9.1f  %9.1f %9.1f  %+9.1f ns %+7.2f ns  %5.1fx  %s\n", label, calls, mask,
               me, e[0], mt, t[0], mt - me, (mt - me) / (double)calls, mt / me, cnt);
    }
}

int main(int argc, char **argv) {
    const char *ins = getenv("BENCH_NCCL_INSPECTOR");
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 2) {
        fprintf(stderr, "usage: %s libnccl-profiler-memobs.so\n", argv[0]);
        return 2;
    }
    printf("== NCCL profiler plugin: ns per collective played as NCCL 2.28.9 does (v5 API; AllReduce, ring, %d "
           "channels; at proxy %d ProxyOps x %d steps), one thread but coll x2; median and best of %u runs x %u ==\n",
           BENCH_NCCL_CHANNELS, 2 * BENCH_NCCL_CHANNELS, BENCH_NCCL_STEPS,
           bench_nccl_env("BENCH_NCCL_RUNS", 7, BENCH_NCCL_MAX_RUNS),
           bench_nccl_env("BENCH_NCCL_OPS", 20000, 100000000));
    printf("  %-10s %5s %6s  %9s %9s  %9s %9s  %12s %10s  %6s  %s\n", "level", "calls", "mask", "empty", "best",
           "plugin", "best", "added/coll", "added/call", "ratio", "counted by memobs");
    bench_nccl_row(argv[1], "api", 0, 1, "api");
    bench_nccl_row(argv[1], "coll", 0, 1, "coll");
    bench_nccl_row(argv[1], "proxy", 0, 1, "proxy");
    bench_nccl_row(argv[1], "coll", 0, 2, "coll x2");
    if (ins && *ins) {
        char dir[] = "/tmp/bench_nccl_inspector.XXXXXX";
        if (mkdtemp(dir)) {
            char cmd[sizeof dir + 16];
            setenv("NCCL_INSPECTOR_ENABLE", "1", 1);
            setenv("NCCL_INSPECTOR_DUMP_DIR", dir, 1);
            bench_nccl_row(ins, "", 1, 1, "inspector");
            snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
            if (system(cmd) != 0)
                printf("  (could not remove %s)\n", dir);
        }
    } else {
        printf("  %-10s not built (BENCH_NCCL_INSPECTOR=path of libnccl-profiler-inspector.so, from NCCL's "
               "plugins/profiler/inspector; BENCH_NCCL_CUDA_STUBS without a GPU)\n",
               "inspector");
    }
    printf("  (empty: a plugin that returns at once, given the same mask; calls: the plugin's per collective (NCCL "
           "skips the stop and states of a NULL handle); added/call = added/coll / calls; coll x2: two threads "
           "playing collectives of one communicator at once, ns per collective per thread)\n");
    return 0;
}
