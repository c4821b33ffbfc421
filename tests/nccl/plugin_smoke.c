/* tests/nccl/plugin_smoke.c - the plugin's own contract, the parts the
   NCCL driver (tests/nccl/nccl_driver.c) does not play: the activation
   mask of every level and version, the plugin staying loaded after
   NCCL's dlclose, children that NCCL starts after it stopped their
   collective (v4+: announced by nChannels, fewer than announced; v1-v3:
   the grace), and NCCL's "Unknown" datatype name (ncclUint8).

   usage: plugin_smoke PLUGIN masks|pin|late|uint8
   The plugin records into its own memobs (MEMOBS_NCCL_ATTACH=0 set by
   tests/nccl/test_nccl_plugin.sh, which reads the JSON summary it writes). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nccl/profiler_api.h"

static void *lib;
static int failures;

static void *sym(const char *name) {
    void *p = dlsym(lib, name);
    if (!p) {
        fprintf(stderr, "no %s in the plugin\n", name);
        failures++;
    }
    return p;
}

/* Each version's init as NCCL calls it; prints the mask it wrote. */
static void masks(void) {
    const ncclProfiler_v1_t *p1 = (const ncclProfiler_v1_t *)sym("ncclProfiler_v1");
    const ncclProfiler_v2_t *p2 = (const ncclProfiler_v2_t *)sym("ncclProfiler_v2");
    const ncclProfiler_v3_t *p3 = (const ncclProfiler_v3_t *)sym("ncclProfiler_v3");
    const ncclProfiler_v4_t *p4 = (const ncclProfiler_v4_t *)sym("ncclProfiler_v4");
    const ncclProfiler_v5_t *p5 = (const ncclProfiler_v5_t *)sym("ncclProfiler_v5");
    const ncclProfiler_v6_t *p6 = (const ncclProfiler_v6_t *)sym("ncclProfiler_v6");
    void *ctx = NULL;
    int mask, rc;
    if (failures) return;
    printf("names %s %s %s %s %s %s\n", p1->name, p2->name, p3->name, p4->name, p5->name, p6->name);
    mask = -1, rc = p1->init(&ctx, &mask);
    printf("v1 rc %d mask %#x ctx %s\n", rc, (unsigned)mask, ctx ? "set" : "NULL");
    mask = -1, rc = p2->init(&ctx, &mask);
    printf("v2 rc %d mask %#x ctx %s\n", rc, (unsigned)mask, ctx ? "set" : "NULL");
    mask = -1, rc = p3->init(&ctx, &mask);
    printf("v3 rc %d mask %#x ctx %s\n", rc, (unsigned)mask, ctx ? "set" : "NULL");
    mask = -1, rc = p4->init(&ctx, &mask, "tp", 41, 1, 4, 0, NULL);
    printf("v4 rc %d mask %#x ctx %s\n", rc, (unsigned)mask, ctx ? "set" : "NULL");
    mask = -1, rc = p5->init(&ctx, 42, &mask, "tp", 1, 4, 0, NULL);
    printf("v5 rc %d mask %#x ctx %s\n", rc, (unsigned)mask, ctx ? "set" : "NULL");
    mask = -1, rc = p6->init(&ctx, 43, &mask, "tp", 1, 4, 0, NULL);
    printf("v6 rc %d mask %#x ctx %s\n", rc, (unsigned)mask, ctx ? "set" : "NULL");
}

/* NCCL dlclose()s its profiler with the last communicator; the plugin
   pinned itself (its own memobs has exit handlers there). */
static void pin(const char *path) {
    const ncclProfiler_v5_t *p = (const ncclProfiler_v5_t *)sym("ncclProfiler_v5");
    void *ctx = NULL;
    int mask = 0;
    if (!p) return;
    if (p->init(&ctx, 7, &mask, "tp", 1, 2, 0, NULL) != ncclSuccess) failures++;
    p->finalize(ctx);
    dlclose(lib);
    printf("loaded after dlclose: %s\n", dlopen(path, RTLD_NOW | RTLD_NOLOAD) ? "yes" : "no");
}

/* v4, comm "tp" (4 ranks): an all-reduce announcing 2 channels, stopped
   (enqueued) before its one KernelCh (1 ms GPU time) comes; the second
   never does: recorded at finalize, timed by the one that came. */
static void late_v4(void) {
    const ncclProfiler_v4_t *p = (const ncclProfiler_v4_t *)sym("ncclProfiler_v4");
    ncclProfilerEventDescr_v4_t d;
    ncclProfilerEventStateArgs_v4_t a;
    void *ctx = NULL, *coll = NULL, *kch = NULL;
    int mask = 0;
    if (!p || p->init(&ctx, &mask, "tp", 0x7470, 1, 4, 0, NULL) != ncclSuccess) {
        failures++;
        return;
    }
    memset(&d, 0, sizeof d);
    d.type = ncclProfileColl;
    d.coll.func = "AllReduce";
    d.coll.datatype = "ncclFloat32";
    d.coll.count = 1024;
    d.coll.nChannels = 2;
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
    p->startEvent(ctx, &coll, &d);
    p->stopEvent(coll);
    memset(&d, 0, sizeof d);
    d.type = ncclProfileKernelCh;
    d.parentObj = coll;
    d.kernelCh.pTimer = 5000;
    p->startEvent(ctx, &kch, &d);
    a.kernelCh.pTimer = 1005000;
    p->recordEventState(kch, ncclProfilerKernelChStop, &a);
    p->stopEvent(kch);
    p->finalize(ctx);
}

/* v1 at proxy level: a send/recv pair's Send stopped before its ProxyOp
   starts (the proxy thread runs late): the grace keeps it, the op's bytes
   (running totals 4096 then 8192) go to peer rank 1 of comm "world". */
static void late_v1(void) {
    const ncclProfiler_v1_t *p = (const ncclProfiler_v1_t *)sym("ncclProfiler_v1");
    ncclProfilerEventDescr_v1_t d;
    ncclProfilerEventStateArgs_v1_t a;
    void *ctx = NULL, *task = NULL, *op = NULL;
    int mask = 0;
    if (!p || p->init(&ctx, &mask) != ncclSuccess) {
        failures++;
        return;
    }
    memset(&d, 0, sizeof d);
    d.type = ncclProfileP2p;
    d.rank = 0;
    d.p2p.name = "world";
    d.p2p.commHash = 0x776f;
    d.p2p.func = 6; /* ncclFuncSend */
    d.p2p.datatype = 7; /* ncclFloat32 */
    d.p2p.count = 2048;
    d.p2p.peer = 1;
    p->startEvent(ctx, &task, &d);
    p->stopEvent(task);
    memset(&d, 0, sizeof d);
    d.type = ncclProfileProxyOp;
    d.parentObj = task;
    d.proxyOp.pid = getpid();
    d.proxyOp.peer = 1;
    d.proxyOp.isSend = 1;
    p->startEvent(ctx, &op, &d);
    memset(&a, 0, sizeof a);
    a.proxyOp.transSize = 4096;
    p->recordEventState(op, ncclProfilerProxyOpSendTransmitted, &a);
    a.proxyOp.transSize = 8192;
    p->recordEventState(op, ncclProfilerProxyOpSendTransmitted, &a);
    p->recordEventState(op, ncclProfilerProxyOpSendDone, &a); /* no growth: nothing more */
    a.proxyOp.transSize = 1 << 20;
    p->recordEventState(op, ncclProfilerProxyOpSendPosted, &a); /* not a counted state */
    p->stopEvent(op);
    p->finalize(ctx);
}

/* NCCL names ncclUint8 "Unknown": v5 at level api, a CollApi Broadcast of
   1000 of them is 1000 bytes; a name it never gives is 0 bytes and a bad
   event. */
static void uint8(void) {
    const ncclProfiler_v5_t *p = (const ncclProfiler_v5_t *)sym("ncclProfiler_v5");
    ncclProfilerEventDescr_v5_t d;
    void *ctx = NULL, *h = NULL;
    int mask = 0;
    if (!p || p->init(&ctx, 0x7538, &mask, "u8", 1, 2, 0, NULL) != ncclSuccess) {
        failures++;
        return;
    }
    memset(&d, 0, sizeof d);
    d.type = ncclProfileCollApi;
    d.collApi.func = "Broadcast";
    d.collApi.count = 1000;
    d.collApi.datatype = "Unknown";
    p->startEvent(ctx, &h, &d);
    p->stopEvent(h);
    d.collApi.func = "Reduce";
    d.collApi.datatype = "ncclNoSuchType";
    p->startEvent(ctx, &h, &d);
    p->stopEvent(h);
    p->finalize(ctx);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s PLUGIN masks|pin|late|uint8\n", argv[0]);
        return 2;
    }
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    if (!strcmp(argv[2], "masks")) masks();
    else if (!strcmp(argv[2], "pin")) pin(argv[1]);
    else if (!strcmp(argv[2], "late")) late_v4(), late_v1();
    else if (!strcmp(argv[2], "uint8")) uint8();
    else return 2;
    return failures ? 1 : 0;
}
