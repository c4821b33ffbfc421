/* nccl/profiler_api.h - memobs' own declarations of NCCL's profiler plugin
   interface, versions 1 to 6 (the structs a libnccl-profiler-NAME.so exports
   as data objects ncclProfiler_v1 ... ncclProfiler_v6).

   Written from the interface's documented field lists (names, types and
   order of each field, the values of the event-type bits and states) so
   that memobs builds without NCCL's headers. It is an ABI: every struct
   here must lay out exactly as NCCL compiles it. The _Static_assert block
   at the end pins the offsets and sizes that were compared against NCCL's
   own headers on x86-64 and aarch64 Linux (LP64).

   Version history, as a plugin sees it:
     v1 (NCCL 2.23)   init(context, mask); coll/p2p carry name and commHash,
                      func, datatype, algo and proto as numbers.
     v2 (2.24-2.25)   func, datatype, algo, proto as strings.
     v3 (2.26)        KernelCh and NetPlugin events; coll loses trafficBytes.
     v4 (2.27)        init gains the communicator (name, hash, nodes, ranks,
                      rank, a logger); coll/p2p lose name/commHash and gain
                      nChannels; KernelCh carries the GPU timer; state args
                      per ProxyStep instead of per ProxyOp.
     v5 (2.28)        init takes commId second; type is 64-bit; API events
                      (GroupApi, CollApi, P2pApi, KernelLaunch).
     v6 (2.29+)       copy-engine events (CeColl, CeSync, CeBatch).
   NCCL looks up the newest it knows first and adapts older structs. */
#ifndef MEMOBS_NCCL_PROFILER_API_H
#define MEMOBS_NCCL_PROFILER_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Result of every call; a plugin returns ncclSuccess but from a refused
   init. */
typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6
} ncclResult_t;

/* NCCL's logger (v4+ init): level, subsystem flags, file, line, format. */
typedef enum {
    NCCL_LOG_NONE = 0,
    NCCL_LOG_VERSION = 1,
    NCCL_LOG_WARN = 2,
    NCCL_LOG_INFO = 3,
    NCCL_LOG_ABORT = 4,
    NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                                  const char *fmt, ...);

/* Event types: the descriptor's type and the bits of the activation mask. */
enum {
    ncclProfileGroup = 1 << 0,
    ncclProfileColl = 1 << 1,
    ncclProfileP2p = 1 << 2,
    ncclProfileProxyOp = 1 << 3,
    ncclProfileProxyStep = 1 << 4,
    ncclProfileProxyCtrl = 1 << 5,
    ncclProfileKernelCh = 1 << 6,     /* v3+ */
    ncclProfileNetPlugin = 1 << 7,    /* v3+ */
    ncclProfileGroupApi = 1 << 8,     /* v5+ */
    ncclProfileCollApi = 1 << 9,      /* v5+ */
    ncclProfileP2pApi = 1 << 10,      /* v5+ */
    ncclProfileKernelLaunch = 1 << 11, /* v5+ */
    ncclProfileCeColl = 1 << 12,      /* v6 */
    ncclProfileCeSync = 1 << 13,      /* v6 */
    ncclProfileCeBatch = 1 << 14      /* v6 */
};

/* States passed to recordEventState (one enum for every version). */
typedef enum {
    ncclProfilerProxyOpSendPosted = 0, /* ProxyOp states: v1-v3 only */
    ncclProfilerProxyOpSendRemFifoWait = 1,
    ncclProfilerProxyOpSendTransmitted = 2,
    ncclProfilerProxyOpSendDone = 3,
    ncclProfilerProxyOpRecvPosted = 4,
    ncclProfilerProxyOpRecvReceived = 5,
    ncclProfilerProxyOpRecvTransmitted = 6,
    ncclProfilerProxyOpRecvDone = 7,
    ncclProfilerProxyStepSendGPUWait = 8,
    ncclProfilerProxyStepSendWait = 9,
    ncclProfilerProxyStepRecvWait = 10,
    ncclProfilerProxyStepRecvFlushWait = 11,
    ncclProfilerProxyStepRecvGPUWait = 12,
    ncclProfilerProxyCtrlIdle = 13,
    ncclProfilerProxyCtrlActive = 14,
    ncclProfilerProxyCtrlSleep = 15,
    ncclProfilerProxyCtrlWakeup = 16,
    ncclProfilerProxyCtrlAppend = 17,
    ncclProfilerProxyCtrlAppendEnd = 18,
    ncclProfilerProxyOpInProgress_v4 = 19,
    ncclProfilerProxyStepSendPeerWait_v4 = 20,
    ncclProfilerNetPluginUpdate = 21,
    ncclProfilerKernelChStop = 22,
    ncclProfilerGroupStartApiStop = 23,
    ncclProfilerGroupEndApiStart = 24,
    ncclProfilerCeCollStart = 25, /* v6 copy-engine states (declared, never sent) */
    ncclProfilerCeCollComplete = 26,
    ncclProfilerCeSyncStart = 27,
    ncclProfilerCeSyncComplete = 28,
    ncclProfilerCeBatchStart = 29,
    ncclProfilerCeBatchComplete = 30
} ncclProfilerEventState_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v1_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v2_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v3_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v4_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v5_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v6_t;

/* Parts shared by several versions (same layout wherever used). */
typedef struct {
    pid_t pid;         /* process that issued the operation (PXN: maybe not this one) */
    uint8_t channelId;
    int peer;          /* remote rank */
    int nSteps;
    int chunkSize;
    int isSend;
} memobs_nccl_proxy_op_t;
typedef struct {
    int step;
} memobs_nccl_proxy_step_t;
typedef struct {
    int64_t id;
    void *data;
} memobs_nccl_net_plugin_t;

/* ---- v1 ------------------------------------------------------------------ */
typedef struct {
    uint8_t type;
    void *parentObj;
    int rank;
    __extension__ union {
        struct {
            const char *name;
            uint64_t commHash;
            uint64_t seqNumber;
            uint8_t func; /* ncclFunc_t: Broadcast 0 ... Recv 7 */
            void const *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            uint8_t datatype; /* ncclDataType_t */
            uint32_t op;
            size_t trafficBytes;
            uint8_t nMaxChannels;
            uint8_t nWarps;
            uint8_t algo;  /* TREE 0, RING 1, COLLNET_DIRECT 2, COLLNET_CHAIN 3, NVLS 4, NVLS_TREE 5, PAT 6 */
            uint8_t proto; /* LL 0, LL128 1, SIMPLE 2 */
            int isCollnet;
            int isNvls;
        } coll;
        struct {
            const char *name;
            uint64_t commHash;
            uint8_t func;
            void *buff;
            uint8_t datatype;
            size_t count;
            int peer;
        } p2p;
        memobs_nccl_proxy_op_t proxyOp;
        memobs_nccl_proxy_step_t proxyStep;
    };
} ncclProfilerEventDescr_v1_t;

/* v1-v3 state args: transSize is the ProxyOp's running total. */
typedef union {
    struct {
        size_t transSize;
        int steps;
    } proxyOp;
    struct {
        int appendedProxyOps;
    } proxyCtrl;
} ncclProfilerEventStateArgs_v1_t;
typedef ncclProfilerEventStateArgs_v1_t ncclProfilerEventStateArgs_v2_t;
typedef ncclProfilerEventStateArgs_v1_t ncclProfilerEventStateArgs_v3_t;

typedef struct {
    const char *name;
    ncclResult_t (*init)(void **context, int *eActivationMask);
    ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v1_t *eDescr);
    ncclResult_t (*stopEvent)(void *eHandle);
    ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v1_t eState,
                                     ncclProfilerEventStateArgs_v1_t *eStateArgs);
    ncclResult_t (*finalize)(void *context);
} ncclProfiler_v1_t;

/* ---- v2 ------------------------------------------------------------------ */
typedef struct {
    uint8_t type;
    void *parentObj;
    int rank;
    __extension__ union {
        struct {
            const char *name;
            uint64_t commHash;
            uint64_t seqNumber;
            const char *func;
            void const *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            size_t trafficBytes;
            uint8_t nMaxChannels;
            uint8_t nWarps;
            const char *algo;
            const char *proto;
        } coll;
        struct {
            const char *name;
            uint64_t commHash;
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
        } p2p;
        memobs_nccl_proxy_op_t proxyOp;
        memobs_nccl_proxy_step_t proxyStep;
    };
} ncclProfilerEventDescr_v2_t;

typedef struct {
    const char *name;
    ncclResult_t (*init)(void **context, int *eActivationMask);
    ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v2_t *eDescr);
    ncclResult_t (*stopEvent)(void *eHandle);
    ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v2_t eState,
                                     ncclProfilerEventStateArgs_v2_t *eStateArgs);
    ncclResult_t (*finalize)(void *context);
} ncclProfiler_v2_t;

/* ---- v3 ------------------------------------------------------------------ */
typedef struct {
    uint8_t type;
    void *parentObj;
    int rank;
    __extension__ union {
        struct {
            const char *name;
            uint64_t commHash;
            uint64_t seqNumber;
            const char *func;
            void const *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            uint8_t nMaxChannels;
            uint8_t nWarps;
            const char *algo;
            const char *proto;
        } coll;
        struct {
            const char *name;
            uint64_t commHash;
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
        } p2p;
        memobs_nccl_proxy_op_t proxyOp;
        memobs_nccl_proxy_step_t proxyStep;
        struct {
            uint8_t channelId;
        } kernelCh;
        memobs_nccl_net_plugin_t netPlugin;
    };
} ncclProfilerEventDescr_v3_t;

typedef struct {
    const char *name;
    ncclResult_t (*init)(void **context, int *eActivationMask);
    ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v3_t *eDescr);
    ncclResult_t (*stopEvent)(void *eHandle);
    ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v3_t eState,
                                     ncclProfilerEventStateArgs_v3_t *eStateArgs);
    ncclResult_t (*finalize)(void *context);
} ncclProfiler_v3_t;

/* ---- v4 ------------------------------------------------------------------ */
typedef struct {
    uint64_t seqNumber;
    const char *func;
    void const *sendBuff;
    void *recvBuff;
    size_t count;
    int root;
    const char *datatype;
    uint8_t nChannels;
    uint8_t nWarps;
    const char *algo;
    const char *proto;
} memobs_nccl_coll_v4_t;
typedef struct {
    const char *func;
    void *buff;
    const char *datatype;
    size_t count;
    int peer;
    uint8_t nChannels;
} memobs_nccl_p2p_v4_t;
typedef struct {
    uint8_t channelId;
    uint64_t pTimer; /* GPU globaltimer at the channel's start, ns */
} memobs_nccl_kernel_ch_t;

typedef struct {
    uint8_t type;
    void *parentObj;
    int rank;
    __extension__ union {
        memobs_nccl_coll_v4_t coll;
        memobs_nccl_p2p_v4_t p2p;
        memobs_nccl_proxy_op_t proxyOp;
        memobs_nccl_proxy_step_t proxyStep;
        memobs_nccl_kernel_ch_t kernelCh;
        memobs_nccl_net_plugin_t netPlugin;
    };
} ncclProfilerEventDescr_v4_t;

/* v4+ state args. */
typedef union {
    struct {
        size_t transSize; /* the step's size (SendWait, RecvFlushWait) */
    } proxyStep;
    struct {
        int appendedProxyOps;
    } proxyCtrl;
    struct {
        void *data;
    } netPlugin;
    struct {
        uint64_t pTimer; /* GPU globaltimer at the channel's stop, ns */
    } kernelCh;
} ncclProfilerEventStateArgs_v4_t;
typedef ncclProfilerEventStateArgs_v4_t ncclProfilerEventStateArgs_v5_t;
typedef ncclProfilerEventStateArgs_v4_t ncclProfilerEventStateArgs_v6_t;

typedef struct {
    const char *name;
    ncclResult_t (*init)(void **context, int *eActivationMask, const char *commName, uint64_t commHash, int nNodes,
                         int nranks, int rank, ncclDebugLogger_t logfn);
    ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v4_t *eDescr);
    ncclResult_t (*stopEvent)(void *eHandle);
    ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v4_t eState,
                                     ncclProfilerEventStateArgs_v4_t *eStateArgs);
    ncclResult_t (*finalize)(void *context);
} ncclProfiler_v4_t;

/* ---- v5 ------------------------------------------------------------------ */
typedef struct {
    bool graphCaptured;
    int groupDepth;
} memobs_nccl_group_api_t;
typedef struct {
    const char *func;
    size_t count;
    const char *datatype;
    int root;
    void *stream;
    bool graphCaptured;
} memobs_nccl_coll_api_t;
typedef struct {
    const char *func;
    size_t count;
    const char *datatype;
    void *stream;
    bool graphCaptured;
} memobs_nccl_p2p_api_t;
typedef struct {
    void *stream;
} memobs_nccl_kernel_launch_t;
typedef struct {
    uint64_t seqNumber;
    const char *func;
    void const *sendBuff;
    void *recvBuff;
    size_t count;
    int root;
    const char *datatype;
    uint8_t nChannels;
    uint8_t nWarps;
    const char *algo;
    const char *proto;
    void *parentGroup; /* the v4 parent (Group event); parentObj is the CollApi */
} memobs_nccl_coll_v5_t;
typedef struct {
    const char *func;
    void *buff;
    const char *datatype;
    size_t count;
    int peer;
    uint8_t nChannels;
    void *parentGroup;
} memobs_nccl_p2p_v5_t;

typedef struct {
    uint64_t type;
    void *parentObj;
    int rank;
    __extension__ union {
        memobs_nccl_group_api_t groupApi;
        memobs_nccl_coll_api_t collApi;
        memobs_nccl_p2p_api_t p2pApi;
        memobs_nccl_kernel_launch_t kernelLaunch;
        memobs_nccl_coll_v5_t coll;
        memobs_nccl_p2p_v5_t p2p;
        memobs_nccl_proxy_op_t proxyOp;
        memobs_nccl_proxy_step_t proxyStep;
        memobs_nccl_kernel_ch_t kernelCh;
        memobs_nccl_net_plugin_t netPlugin;
    };
} ncclProfilerEventDescr_v5_t;

typedef struct {
    const char *name;
    ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName, int nNodes,
                         int nranks, int rank, ncclDebugLogger_t logfn);
    ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v5_t *eDescr);
    ncclResult_t (*stopEvent)(void *eHandle);
    ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v5_t eState,
                                     ncclProfilerEventStateArgs_v5_t *eStateArgs);
    ncclResult_t (*finalize)(void *context);
} ncclProfiler_v5_t;

/* ---- v6 ------------------------------------------------------------------ */
typedef struct {
    uint64_t seqNumber;
    const char *func;
    void const *sendBuff;
    void *recvBuff;
    size_t count;
    int root;
    const char *datatype;
    const char *syncStrategy;
    bool intraBatchSync;
    uint32_t batchSize;
    uint32_t numBatches;
    uint32_t ceSeqNum;
    void *stream;
} memobs_nccl_ce_coll_t;
typedef struct {
    bool isComplete;
    int nRanks;
} memobs_nccl_ce_sync_t;
typedef struct {
    int numOps;
    size_t totalBytes;
    bool useIntraSync;
} memobs_nccl_ce_batch_t;

typedef struct {
    uint64_t type;
    void *parentObj;
    int rank;
    __extension__ union {
        memobs_nccl_group_api_t groupApi;
        memobs_nccl_coll_api_t collApi;
        memobs_nccl_p2p_api_t p2pApi;
        memobs_nccl_kernel_launch_t kernelLaunch;
        memobs_nccl_coll_v5_t coll;
        memobs_nccl_p2p_v5_t p2p;
        memobs_nccl_proxy_op_t proxyOp;
        memobs_nccl_proxy_step_t proxyStep;
        memobs_nccl_kernel_ch_t kernelCh;
        memobs_nccl_net_plugin_t netPlugin;
        memobs_nccl_ce_coll_t ceColl;
        memobs_nccl_ce_sync_t ceCollSync;
        memobs_nccl_ce_batch_t ceCollBatch;
    };
} ncclProfilerEventDescr_v6_t;

typedef struct {
    const char *name;
    ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName, int nNodes,
                         int nranks, int rank, ncclDebugLogger_t logfn);
    ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v6_t *eDescr);
    ncclResult_t (*stopEvent)(void *eHandle);
    ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v6_t eState,
                                     ncclProfilerEventStateArgs_v6_t *eStateArgs);
    ncclResult_t (*finalize)(void *context);
} ncclProfiler_v6_t;

/* ---- layout pins ------------------------------------------------------- */
/* Offsets, sizes and alignments as NCCL's own headers give them on LP64
   Linux (x86-64, aarch64), compiled side by side when this file was
   written. A failure here means this file no longer matches the ABI. */
#if defined(__LP64__) && defined(__linux__)
#ifdef __cplusplus
#define MEMOBS_NCCL__PIN(cond) static_assert(cond, #cond)
#else
#define MEMOBS_NCCL__PIN(cond) __extension__ _Static_assert(cond, #cond)
#endif
#if !defined(__cplusplus) || __cplusplus >= 201103L
MEMOBS_NCCL__PIN(sizeof(ncclProfilerEventDescr_v1_t) == 120 && __alignof__(ncclProfilerEventDescr_v1_t) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v1_t, type) == 0
                 && offsetof(ncclProfilerEventDescr_v1_t, parentObj) == 8
                 && offsetof(ncclProfilerEventDescr_v1_t, rank) == 16);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v1_t, coll.name) == 24
                 && offsetof(ncclProfilerEventDescr_v1_t, coll.commHash) == 32
                 && offsetof(ncclProfilerEventDescr_v1_t, coll.seqNumber) == 40
                 && offsetof(ncclProfilerEventDescr_v1_t, coll.func) == 48
                 && offsetof(ncclProfilerEventDescr_v1_t, coll.sendBuff) == 56
                 && offsetof(ncclProfilerEventDescr_v1_t, coll.recvBuff) == 64
                 && offsetof(ncclProfilerEventDescr_v1_t, coll.count) == 72
                 && offsetof(ncclProfilerEventDescr_v1_t, coll.root) == 80
                 && offsetof(ncclProfilerEventDescr_v1_t, coll.datatype) == 84
                 && offsetof(ncclProfilerEventDescr_v1_t, coll.op) == 88
                 && offsetof(ncclProfilerEventDescr_v1_t, coll.trafficBytes) == 96
                 && offsetof(ncclProfilerEventDescr_v1_t, coll.nMaxChannels) == 104
                 && offsetof(ncclProfilerEventDescr_v1_t, coll.nWarps) == 105
                 && offsetof(ncclProfilerEventDescr_v1_t, coll.algo) == 106
                 && offsetof(ncclProfilerEventDescr_v1_t, coll.proto) == 107
                 && offsetof(ncclProfilerEventDescr_v1_t, coll.isCollnet) == 108
                 && offsetof(ncclProfilerEventDescr_v1_t, coll.isNvls) == 112);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v1_t, p2p.name) == 24
                 && offsetof(ncclProfilerEventDescr_v1_t, p2p.commHash) == 32
                 && offsetof(ncclProfilerEventDescr_v1_t, p2p.func) == 40
                 && offsetof(ncclProfilerEventDescr_v1_t, p2p.buff) == 48
                 && offsetof(ncclProfilerEventDescr_v1_t, p2p.datatype) == 56
                 && offsetof(ncclProfilerEventDescr_v1_t, p2p.count) == 64
                 && offsetof(ncclProfilerEventDescr_v1_t, p2p.peer) == 72);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v1_t, proxyOp.pid) == 24
                 && offsetof(ncclProfilerEventDescr_v1_t, proxyOp.channelId) == 28
                 && offsetof(ncclProfilerEventDescr_v1_t, proxyOp.peer) == 32
                 && offsetof(ncclProfilerEventDescr_v1_t, proxyOp.nSteps) == 36
                 && offsetof(ncclProfilerEventDescr_v1_t, proxyOp.chunkSize) == 40
                 && offsetof(ncclProfilerEventDescr_v1_t, proxyOp.isSend) == 44);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v1_t, proxyStep.step) == 24);
MEMOBS_NCCL__PIN(sizeof(ncclProfilerEventDescr_v2_t) == 128 && __alignof__(ncclProfilerEventDescr_v2_t) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v2_t, type) == 0
                 && offsetof(ncclProfilerEventDescr_v2_t, parentObj) == 8
                 && offsetof(ncclProfilerEventDescr_v2_t, rank) == 16);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v2_t, coll.name) == 24
                 && offsetof(ncclProfilerEventDescr_v2_t, coll.commHash) == 32
                 && offsetof(ncclProfilerEventDescr_v2_t, coll.seqNumber) == 40
                 && offsetof(ncclProfilerEventDescr_v2_t, coll.func) == 48
                 && offsetof(ncclProfilerEventDescr_v2_t, coll.sendBuff) == 56
                 && offsetof(ncclProfilerEventDescr_v2_t, coll.recvBuff) == 64
                 && offsetof(ncclProfilerEventDescr_v2_t, coll.count) == 72
                 && offsetof(ncclProfilerEventDescr_v2_t, coll.root) == 80
                 && offsetof(ncclProfilerEventDescr_v2_t, coll.datatype) == 88
                 && offsetof(ncclProfilerEventDescr_v2_t, coll.trafficBytes) == 96
                 && offsetof(ncclProfilerEventDescr_v2_t, coll.nMaxChannels) == 104
                 && offsetof(ncclProfilerEventDescr_v2_t, coll.nWarps) == 105
                 && offsetof(ncclProfilerEventDescr_v2_t, coll.algo) == 112
                 && offsetof(ncclProfilerEventDescr_v2_t, coll.proto) == 120);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v2_t, p2p.name) == 24
                 && offsetof(ncclProfilerEventDescr_v2_t, p2p.commHash) == 32
                 && offsetof(ncclProfilerEventDescr_v2_t, p2p.func) == 40
                 && offsetof(ncclProfilerEventDescr_v2_t, p2p.buff) == 48
                 && offsetof(ncclProfilerEventDescr_v2_t, p2p.datatype) == 56
                 && offsetof(ncclProfilerEventDescr_v2_t, p2p.count) == 64
                 && offsetof(ncclProfilerEventDescr_v2_t, p2p.peer) == 72);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v2_t, proxyOp.pid) == 24
                 && offsetof(ncclProfilerEventDescr_v2_t, proxyOp.channelId) == 28
                 && offsetof(ncclProfilerEventDescr_v2_t, proxyOp.peer) == 32
                 && offsetof(ncclProfilerEventDescr_v2_t, proxyOp.nSteps) == 36
                 && offsetof(ncclProfilerEventDescr_v2_t, proxyOp.chunkSize) == 40
                 && offsetof(ncclProfilerEventDescr_v2_t, proxyOp.isSend) == 44);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v2_t, proxyStep.step) == 24);
MEMOBS_NCCL__PIN(sizeof(ncclProfilerEventDescr_v3_t) == 120 && __alignof__(ncclProfilerEventDescr_v3_t) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v3_t, type) == 0
                 && offsetof(ncclProfilerEventDescr_v3_t, parentObj) == 8
                 && offsetof(ncclProfilerEventDescr_v3_t, rank) == 16);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v3_t, coll.name) == 24
                 && offsetof(ncclProfilerEventDescr_v3_t, coll.commHash) == 32
                 && offsetof(ncclProfilerEventDescr_v3_t, coll.seqNumber) == 40
                 && offsetof(ncclProfilerEventDescr_v3_t, coll.func) == 48
                 && offsetof(ncclProfilerEventDescr_v3_t, coll.sendBuff) == 56
                 && offsetof(ncclProfilerEventDescr_v3_t, coll.recvBuff) == 64
                 && offsetof(ncclProfilerEventDescr_v3_t, coll.count) == 72
                 && offsetof(ncclProfilerEventDescr_v3_t, coll.root) == 80
                 && offsetof(ncclProfilerEventDescr_v3_t, coll.datatype) == 88
                 && offsetof(ncclProfilerEventDescr_v3_t, coll.nMaxChannels) == 96
                 && offsetof(ncclProfilerEventDescr_v3_t, coll.nWarps) == 97
                 && offsetof(ncclProfilerEventDescr_v3_t, coll.algo) == 104
                 && offsetof(ncclProfilerEventDescr_v3_t, coll.proto) == 112);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v3_t, p2p.name) == 24
                 && offsetof(ncclProfilerEventDescr_v3_t, p2p.commHash) == 32
                 && offsetof(ncclProfilerEventDescr_v3_t, p2p.func) == 40
                 && offsetof(ncclProfilerEventDescr_v3_t, p2p.buff) == 48
                 && offsetof(ncclProfilerEventDescr_v3_t, p2p.datatype) == 56
                 && offsetof(ncclProfilerEventDescr_v3_t, p2p.count) == 64
                 && offsetof(ncclProfilerEventDescr_v3_t, p2p.peer) == 72);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v3_t, proxyOp.pid) == 24
                 && offsetof(ncclProfilerEventDescr_v3_t, proxyOp.channelId) == 28
                 && offsetof(ncclProfilerEventDescr_v3_t, proxyOp.peer) == 32
                 && offsetof(ncclProfilerEventDescr_v3_t, proxyOp.nSteps) == 36
                 && offsetof(ncclProfilerEventDescr_v3_t, proxyOp.chunkSize) == 40
                 && offsetof(ncclProfilerEventDescr_v3_t, proxyOp.isSend) == 44);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v3_t, proxyStep.step) == 24);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v3_t, kernelCh.channelId) == 24);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v3_t, netPlugin.id) == 24
                 && offsetof(ncclProfilerEventDescr_v3_t, netPlugin.data) == 32);
MEMOBS_NCCL__PIN(sizeof(ncclProfilerEventDescr_v4_t) == 104 && __alignof__(ncclProfilerEventDescr_v4_t) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v4_t, type) == 0
                 && offsetof(ncclProfilerEventDescr_v4_t, parentObj) == 8
                 && offsetof(ncclProfilerEventDescr_v4_t, rank) == 16);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v4_t, coll.seqNumber) == 24
                 && offsetof(ncclProfilerEventDescr_v4_t, coll.func) == 32
                 && offsetof(ncclProfilerEventDescr_v4_t, coll.sendBuff) == 40
                 && offsetof(ncclProfilerEventDescr_v4_t, coll.recvBuff) == 48
                 && offsetof(ncclProfilerEventDescr_v4_t, coll.count) == 56
                 && offsetof(ncclProfilerEventDescr_v4_t, coll.root) == 64
                 && offsetof(ncclProfilerEventDescr_v4_t, coll.datatype) == 72
                 && offsetof(ncclProfilerEventDescr_v4_t, coll.nChannels) == 80
                 && offsetof(ncclProfilerEventDescr_v4_t, coll.nWarps) == 81
                 && offsetof(ncclProfilerEventDescr_v4_t, coll.algo) == 88
                 && offsetof(ncclProfilerEventDescr_v4_t, coll.proto) == 96);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v4_t, p2p.func) == 24
                 && offsetof(ncclProfilerEventDescr_v4_t, p2p.buff) == 32
                 && offsetof(ncclProfilerEventDescr_v4_t, p2p.datatype) == 40
                 && offsetof(ncclProfilerEventDescr_v4_t, p2p.count) == 48
                 && offsetof(ncclProfilerEventDescr_v4_t, p2p.peer) == 56
                 && offsetof(ncclProfilerEventDescr_v4_t, p2p.nChannels) == 60);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v4_t, proxyOp.pid) == 24
                 && offsetof(ncclProfilerEventDescr_v4_t, proxyOp.channelId) == 28
                 && offsetof(ncclProfilerEventDescr_v4_t, proxyOp.peer) == 32
                 && offsetof(ncclProfilerEventDescr_v4_t, proxyOp.nSteps) == 36
                 && offsetof(ncclProfilerEventDescr_v4_t, proxyOp.chunkSize) == 40
                 && offsetof(ncclProfilerEventDescr_v4_t, proxyOp.isSend) == 44);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v4_t, proxyStep.step) == 24);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v4_t, kernelCh.channelId) == 24
                 && offsetof(ncclProfilerEventDescr_v4_t, kernelCh.pTimer) == 32);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v4_t, netPlugin.id) == 24
                 && offsetof(ncclProfilerEventDescr_v4_t, netPlugin.data) == 32);
MEMOBS_NCCL__PIN(sizeof(ncclProfilerEventDescr_v5_t) == 112 && __alignof__(ncclProfilerEventDescr_v5_t) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v5_t, type) == 0
                 && offsetof(ncclProfilerEventDescr_v5_t, parentObj) == 8
                 && offsetof(ncclProfilerEventDescr_v5_t, rank) == 16);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v5_t, groupApi.graphCaptured) == 24
                 && offsetof(ncclProfilerEventDescr_v5_t, groupApi.groupDepth) == 28);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v5_t, collApi.func) == 24
                 && offsetof(ncclProfilerEventDescr_v5_t, collApi.count) == 32
                 && offsetof(ncclProfilerEventDescr_v5_t, collApi.datatype) == 40
                 && offsetof(ncclProfilerEventDescr_v5_t, collApi.root) == 48
                 && offsetof(ncclProfilerEventDescr_v5_t, collApi.stream) == 56
                 && offsetof(ncclProfilerEventDescr_v5_t, collApi.graphCaptured) == 64);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v5_t, p2pApi.func) == 24
                 && offsetof(ncclProfilerEventDescr_v5_t, p2pApi.count) == 32
                 && offsetof(ncclProfilerEventDescr_v5_t, p2pApi.datatype) == 40
                 && offsetof(ncclProfilerEventDescr_v5_t, p2pApi.stream) == 48
                 && offsetof(ncclProfilerEventDescr_v5_t, p2pApi.graphCaptured) == 56);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v5_t, kernelLaunch.stream) == 24);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v5_t, coll.seqNumber) == 24
                 && offsetof(ncclProfilerEventDescr_v5_t, coll.func) == 32
                 && offsetof(ncclProfilerEventDescr_v5_t, coll.sendBuff) == 40
                 && offsetof(ncclProfilerEventDescr_v5_t, coll.recvBuff) == 48
                 && offsetof(ncclProfilerEventDescr_v5_t, coll.count) == 56
                 && offsetof(ncclProfilerEventDescr_v5_t, coll.root) == 64
                 && offsetof(ncclProfilerEventDescr_v5_t, coll.datatype) == 72
                 && offsetof(ncclProfilerEventDescr_v5_t, coll.nChannels) == 80
                 && offsetof(ncclProfilerEventDescr_v5_t, coll.nWarps) == 81
                 && offsetof(ncclProfilerEventDescr_v5_t, coll.algo) == 88
                 && offsetof(ncclProfilerEventDescr_v5_t, coll.proto) == 96
                 && offsetof(ncclProfilerEventDescr_v5_t, coll.parentGroup) == 104);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v5_t, p2p.func) == 24
                 && offsetof(ncclProfilerEventDescr_v5_t, p2p.buff) == 32
                 && offsetof(ncclProfilerEventDescr_v5_t, p2p.datatype) == 40
                 && offsetof(ncclProfilerEventDescr_v5_t, p2p.count) == 48
                 && offsetof(ncclProfilerEventDescr_v5_t, p2p.peer) == 56
                 && offsetof(ncclProfilerEventDescr_v5_t, p2p.nChannels) == 60
                 && offsetof(ncclProfilerEventDescr_v5_t, p2p.parentGroup) == 64);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v5_t, proxyOp.pid) == 24
                 && offsetof(ncclProfilerEventDescr_v5_t, proxyOp.channelId) == 28
                 && offsetof(ncclProfilerEventDescr_v5_t, proxyOp.peer) == 32
                 && offsetof(ncclProfilerEventDescr_v5_t, proxyOp.nSteps) == 36
                 && offsetof(ncclProfilerEventDescr_v5_t, proxyOp.chunkSize) == 40
                 && offsetof(ncclProfilerEventDescr_v5_t, proxyOp.isSend) == 44);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v5_t, proxyStep.step) == 24);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v5_t, kernelCh.channelId) == 24
                 && offsetof(ncclProfilerEventDescr_v5_t, kernelCh.pTimer) == 32);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v5_t, netPlugin.id) == 24
                 && offsetof(ncclProfilerEventDescr_v5_t, netPlugin.data) == 32);
MEMOBS_NCCL__PIN(sizeof(ncclProfilerEventDescr_v6_t) == 112 && __alignof__(ncclProfilerEventDescr_v6_t) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v6_t, type) == 0
                 && offsetof(ncclProfilerEventDescr_v6_t, parentObj) == 8
                 && offsetof(ncclProfilerEventDescr_v6_t, rank) == 16);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v6_t, groupApi.graphCaptured) == 24
                 && offsetof(ncclProfilerEventDescr_v6_t, groupApi.groupDepth) == 28);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v6_t, collApi.func) == 24
                 && offsetof(ncclProfilerEventDescr_v6_t, collApi.count) == 32
                 && offsetof(ncclProfilerEventDescr_v6_t, collApi.datatype) == 40
                 && offsetof(ncclProfilerEventDescr_v6_t, collApi.root) == 48
                 && offsetof(ncclProfilerEventDescr_v6_t, collApi.stream) == 56
                 && offsetof(ncclProfilerEventDescr_v6_t, collApi.graphCaptured) == 64);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v6_t, p2pApi.func) == 24
                 && offsetof(ncclProfilerEventDescr_v6_t, p2pApi.count) == 32
                 && offsetof(ncclProfilerEventDescr_v6_t, p2pApi.datatype) == 40
                 && offsetof(ncclProfilerEventDescr_v6_t, p2pApi.stream) == 48
                 && offsetof(ncclProfilerEventDescr_v6_t, p2pApi.graphCaptured) == 56);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v6_t, kernelLaunch.stream) == 24);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v6_t, coll.seqNumber) == 24
                 && offsetof(ncclProfilerEventDescr_v6_t, coll.func) == 32
                 && offsetof(ncclProfilerEventDescr_v6_t, coll.sendBuff) == 40
                 && offsetof(ncclProfilerEventDescr_v6_t, coll.recvBuff) == 48
                 && offsetof(ncclProfilerEventDescr_v6_t, coll.count) == 56
                 && offsetof(ncclProfilerEventDescr_v6_t, coll.root) == 64
                 && offsetof(ncclProfilerEventDescr_v6_t, coll.datatype) == 72
                 && offsetof(ncclProfilerEventDescr_v6_t, coll.nChannels) == 80
                 && offsetof(ncclProfilerEventDescr_v6_t, coll.nWarps) == 81
                 && offsetof(ncclProfilerEventDescr_v6_t, coll.algo) == 88
                 && offsetof(ncclProfilerEventDescr_v6_t, coll.proto) == 96
                 && offsetof(ncclProfilerEventDescr_v6_t, coll.parentGroup) == 104);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v6_t, p2p.func) == 24
                 && offsetof(ncclProfilerEventDescr_v6_t, p2p.buff) == 32
                 && offsetof(ncclProfilerEventDescr_v6_t, p2p.datatype) == 40
                 && offsetof(ncclProfilerEventDescr_v6_t, p2p.count) == 48
                 && offsetof(ncclProfilerEventDescr_v6_t, p2p.peer) == 56
                 && offsetof(ncclProfilerEventDescr_v6_t, p2p.nChannels) == 60
                 && offsetof(ncclProfilerEventDescr_v6_t, p2p.parentGroup) == 64);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v6_t, proxyOp.pid) == 24
                 && offsetof(ncclProfilerEventDescr_v6_t, proxyOp.channelId) == 28
                 && offsetof(ncclProfilerEventDescr_v6_t, proxyOp.peer) == 32
                 && offsetof(ncclProfilerEventDescr_v6_t, proxyOp.nSteps) == 36
                 && offsetof(ncclProfilerEventDescr_v6_t, proxyOp.chunkSize) == 40
                 && offsetof(ncclProfilerEventDescr_v6_t, proxyOp.isSend) == 44);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v6_t, proxyStep.step) == 24);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v6_t, kernelCh.channelId) == 24
                 && offsetof(ncclProfilerEventDescr_v6_t, kernelCh.pTimer) == 32);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v6_t, netPlugin.id) == 24
                 && offsetof(ncclProfilerEventDescr_v6_t, netPlugin.data) == 32);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v6_t, ceColl.seqNumber) == 24
                 && offsetof(ncclProfilerEventDescr_v6_t, ceColl.func) == 32
                 && offsetof(ncclProfilerEventDescr_v6_t, ceColl.sendBuff) == 40
                 && offsetof(ncclProfilerEventDescr_v6_t, ceColl.recvBuff) == 48
                 && offsetof(ncclProfilerEventDescr_v6_t, ceColl.count) == 56
                 && offsetof(ncclProfilerEventDescr_v6_t, ceColl.root) == 64
                 && offsetof(ncclProfilerEventDescr_v6_t, ceColl.datatype) == 72
                 && offsetof(ncclProfilerEventDescr_v6_t, ceColl.syncStrategy) == 80
                 && offsetof(ncclProfilerEventDescr_v6_t, ceColl.intraBatchSync) == 88
                 && offsetof(ncclProfilerEventDescr_v6_t, ceColl.batchSize) == 92
                 && offsetof(ncclProfilerEventDescr_v6_t, ceColl.numBatches) == 96
                 && offsetof(ncclProfilerEventDescr_v6_t, ceColl.ceSeqNum) == 100
                 && offsetof(ncclProfilerEventDescr_v6_t, ceColl.stream) == 104);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v6_t, ceCollSync.isComplete) == 24
                 && offsetof(ncclProfilerEventDescr_v6_t, ceCollSync.nRanks) == 28);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventDescr_v6_t, ceCollBatch.numOps) == 24
                 && offsetof(ncclProfilerEventDescr_v6_t, ceCollBatch.totalBytes) == 32
                 && offsetof(ncclProfilerEventDescr_v6_t, ceCollBatch.useIntraSync) == 40);
MEMOBS_NCCL__PIN(sizeof(ncclProfilerEventStateArgs_v1_t) == 16 && __alignof__(ncclProfilerEventStateArgs_v1_t) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventStateArgs_v1_t, proxyOp.transSize) == 0
                 && offsetof(ncclProfilerEventStateArgs_v1_t, proxyOp.steps) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventStateArgs_v1_t, proxyCtrl.appendedProxyOps) == 0);
MEMOBS_NCCL__PIN(sizeof(ncclProfilerEventStateArgs_v2_t) == 16 && __alignof__(ncclProfilerEventStateArgs_v2_t) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventStateArgs_v2_t, proxyOp.transSize) == 0
                 && offsetof(ncclProfilerEventStateArgs_v2_t, proxyOp.steps) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventStateArgs_v2_t, proxyCtrl.appendedProxyOps) == 0);
MEMOBS_NCCL__PIN(sizeof(ncclProfilerEventStateArgs_v3_t) == 16 && __alignof__(ncclProfilerEventStateArgs_v3_t) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventStateArgs_v3_t, proxyOp.transSize) == 0
                 && offsetof(ncclProfilerEventStateArgs_v3_t, proxyOp.steps) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventStateArgs_v3_t, proxyCtrl.appendedProxyOps) == 0);
MEMOBS_NCCL__PIN(sizeof(ncclProfilerEventStateArgs_v4_t) == 8 && __alignof__(ncclProfilerEventStateArgs_v4_t) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventStateArgs_v4_t, proxyStep.transSize) == 0);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventStateArgs_v4_t, proxyCtrl.appendedProxyOps) == 0);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventStateArgs_v4_t, netPlugin.data) == 0);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventStateArgs_v4_t, kernelCh.pTimer) == 0);
MEMOBS_NCCL__PIN(sizeof(ncclProfilerEventStateArgs_v5_t) == 8 && __alignof__(ncclProfilerEventStateArgs_v5_t) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventStateArgs_v5_t, proxyStep.transSize) == 0);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventStateArgs_v5_t, proxyCtrl.appendedProxyOps) == 0);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventStateArgs_v5_t, netPlugin.data) == 0);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventStateArgs_v5_t, kernelCh.pTimer) == 0);
MEMOBS_NCCL__PIN(sizeof(ncclProfilerEventStateArgs_v6_t) == 8 && __alignof__(ncclProfilerEventStateArgs_v6_t) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventStateArgs_v6_t, proxyStep.transSize) == 0);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventStateArgs_v6_t, proxyCtrl.appendedProxyOps) == 0);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventStateArgs_v6_t, netPlugin.data) == 0);
MEMOBS_NCCL__PIN(offsetof(ncclProfilerEventStateArgs_v6_t, kernelCh.pTimer) == 0);
MEMOBS_NCCL__PIN(sizeof(ncclProfiler_v1_t) == 48 && __alignof__(ncclProfiler_v1_t) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfiler_v1_t, name) == 0 && offsetof(ncclProfiler_v1_t, init) == 8
                 && offsetof(ncclProfiler_v1_t, startEvent) == 16 && offsetof(ncclProfiler_v1_t, stopEvent) == 24
                 && offsetof(ncclProfiler_v1_t, recordEventState) == 32
                 && offsetof(ncclProfiler_v1_t, finalize) == 40);
MEMOBS_NCCL__PIN(sizeof(ncclProfiler_v2_t) == 48 && __alignof__(ncclProfiler_v2_t) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfiler_v2_t, name) == 0 && offsetof(ncclProfiler_v2_t, init) == 8
                 && offsetof(ncclProfiler_v2_t, startEvent) == 16 && offsetof(ncclProfiler_v2_t, stopEvent) == 24
                 && offsetof(ncclProfiler_v2_t, recordEventState) == 32
                 && offsetof(ncclProfiler_v2_t, finalize) == 40);
MEMOBS_NCCL__PIN(sizeof(ncclProfiler_v3_t) == 48 && __alignof__(ncclProfiler_v3_t) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfiler_v3_t, name) == 0 && offsetof(ncclProfiler_v3_t, init) == 8
                 && offsetof(ncclProfiler_v3_t, startEvent) == 16 && offsetof(ncclProfiler_v3_t, stopEvent) == 24
                 && offsetof(ncclProfiler_v3_t, recordEventState) == 32
                 && offsetof(ncclProfiler_v3_t, finalize) == 40);
MEMOBS_NCCL__PIN(sizeof(ncclProfiler_v4_t) == 48 && __alignof__(ncclProfiler_v4_t) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfiler_v4_t, name) == 0 && offsetof(ncclProfiler_v4_t, init) == 8
                 && offsetof(ncclProfiler_v4_t, startEvent) == 16 && offsetof(ncclProfiler_v4_t, stopEvent) == 24
                 && offsetof(ncclProfiler_v4_t, recordEventState) == 32
                 && offsetof(ncclProfiler_v4_t, finalize) == 40);
MEMOBS_NCCL__PIN(sizeof(ncclProfiler_v5_t) == 48 && __alignof__(ncclProfiler_v5_t) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfiler_v5_t, name) == 0 && offsetof(ncclProfiler_v5_t, init) == 8
                 && offsetof(ncclProfiler_v5_t, startEvent) == 16 && offsetof(ncclProfiler_v5_t, stopEvent) == 24
                 && offsetof(ncclProfiler_v5_t, recordEventState) == 32
                 && offsetof(ncclProfiler_v5_t, finalize) == 40);
MEMOBS_NCCL__PIN(sizeof(ncclProfiler_v6_t) == 48 && __alignof__(ncclProfiler_v6_t) == 8);
MEMOBS_NCCL__PIN(offsetof(ncclProfiler_v6_t, name) == 0 && offsetof(ncclProfiler_v6_t, init) == 8
                 && offsetof(ncclProfiler_v6_t, startEvent) == 16 && offsetof(ncclProfiler_v6_t, stopEvent) == 24
                 && offsetof(ncclProfiler_v6_t, recordEventState) == 32
                 && offsetof(ncclProfiler_v6_t, finalize) == 40);
MEMOBS_NCCL__PIN(sizeof(ncclResult_t) == 4 && sizeof(ncclProfilerEventState_t) == 4);
#endif
#undef MEMOBS_NCCL__PIN
#endif

#ifdef __cplusplus
}
#endif

#endif /* MEMOBS_NCCL_PROFILER_API_H */
