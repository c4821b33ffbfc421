/* examples/cuda_offload.cu - the KV-cache offload engine of
   examples/offload_engine.c on a real GPU, instrumented with memobs_cuda.h.

   What it shows: every copy, allocation and request of a small nano-vllm
   style engine goes through memobs' CUDA wrappers, and memobs' figures are
   checked, at the end, against the engine's own tallies.

   The engine: all KV blocks live in a pinned host pool (one
   memobs_cudaMallocHost); the GPU holds the weights and, per worker, a ring
   of N_SLOTS block slots per layer, a prefill buffer, a decode buffer and
   an activation workspace (memobs_cudaMalloc). Two worker threads, each
   with its own CUDA stream, pull requests from a queue. Prefill runs in
   block-sized chunks: the chunk's K/V goes to the prefill buffer (D2D,
   cudaMemcpy2DAsync: K and V rows in one copy), its queries attend over
   every earlier block loaded back into a slot (H2D from the pool) plus the
   chunk itself, and a full chunk is offloaded to the pool (D2H). Decode
   appends one token's K/V to the decode buffer (D2D), attends over all host
   blocks (H2D) plus that buffer, and offloads the buffer when it fills
   (D2H). Each sampled token comes back to the host (a 4-byte D2H into a
   pinned buffer) and the worker waits for it, as a real engine does to
   stream tokens out. Attention is a naive flash-style kernel (one thread
   block per query row and head, running softmax kept across blocks), the
   projections naive matmuls: correct, not fast.

   Recording: every copy is a memobs_cudaMemcpyAsync/2DAsync on the
   worker's stream (the weight upload: memobs_cudaMemcpy, unphased), filed
   under the phase the worker set with memobs_set_phase(PREFILL/DECODE).
   CUDA-event timing is on (memobs_cuda_set_timing(1)), so the summary shows
   beside the bytes issued the bytes of completed copies, their device time
   and GB/s per direction and phase, and the timed copies still in flight.
   Requests are timed per request (memobs_request_begin/token/end): TTFT
   counts from the moment all requests arrive. Counters: kv_blocks_offloaded,
   tokens_generated, attention_flops.

   Memory: device buffers through memobs_cudaMalloc/Free (weights, kv_slots,
   prefill_buffer, decode_buffer, activations, tokens; and a per-request
   "logits" buffer, allocated when a request starts and freed when it ends),
   the pinned pool and per-worker token buffers through
   memobs_cudaMallocHost/FreeHost, and the pageable weight-staging buffer by
   hand (MEMOBS_TRACK_ALLOC_N, MEMOBS_MEM_HOST). The wrappers take no tag, so
   a tag provider (memobs_track_set_tag_provider) names each allocation after the
   engine buffer it is for: memobs_print_alloc_groups() then groups device
   and pinned memory by buffer kind ("Engine Buffer" boxes). Each
   allocation is made and tallied under the engine's alloc_lock, so memobs
   and the engine see one order: current bytes, peaks, allocs, frees per
   kind agree exactly. A peak report goes to stderr when device memory first
   passes the set-up footprint (the first request's logits buffer), unless
   MEMOBS_PEAK_REPORT is set.

   At the end: cudaDeviceSynchronize, memobs_cuda_poll, then
   memobs_print_summary(), memobs_cuda_print_mem(stderr) (driver used
   memory against what memobs tracks: the difference is the CUDA context
   and the allocator's rounding), memobs_print_alloc_groups(stderr). The
   cross-check (exit 1 on any mismatch): bytes and ops per phase and
   direction against the engine's tallies; after the final poll no timed
   copy in flight, none untimed, and the timed bytes and ops equal to the
   issued ones for each phase and direction; requests, TTFT/TPOT/E2E sample
   counts, counters; tracked memory per kind against the engine's tallies;
   no tracker problems; and, after tear-down, nothing live.

   Build (from the repository root; `make cuda-demo` builds and runs it):
       /usr/local/cuda/bin/nvcc -O2 -Werror all-warnings -I. \
           examples/cuda_offload.cu -o build/cuda_offload
   Run (needs one CUDA GPU; it uses device 0):
       ./build/cuda_offload [--json]
   stderr: device name, the peak report, one line per request, the memobs
   summary, driver vs tracked memory, the allocations-by-trace report, then
   "cuda_offload: ok" or the mismatches.
   stdout: "engine tallies: key=value ..." (bytes and ops per direction, in
   total and per phase; requests, tokens, counters; memory per kind), then
   with --json the memobs JSON summary as the last line.
   Exit: 0 all checks pass, 1 a memobs figure differs, 2 a CUDA or set-up
   error (the failing call is logged by MEMOBS_CUDA_CHECK). */

#define MEMOBS_IMPLEMENTATION
#include "memobs_cuda.h"

#include <cuda_runtime.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================================== */
/* Model and engine sizes                                                   */
/* ======================================================================== */

enum {
    N_LAYERS = 4,
    N_HEADS = 8,
    HEAD_DIM = 64,
    HIDDEN = N_HEADS * HEAD_DIM,
    VOCAB = 1024,
    BLOCK = 16,  /* tokens per KV block */
    N_SLOTS = 4, /* device slots per layer */
    N_REQUESTS = 8,
    N_WORKERS = 2,
    MIN_PROMPT = 64,
    MAX_PROMPT = 256,
    MIN_OUT = 16,
    MAX_OUT = 48,
    MAX_TOKENS = MAX_PROMPT + MAX_OUT,
    MAX_BLOCKS = (MAX_TOKENS + BLOCK - 1) / BLOCK,
    /* Blocks go back to the pool when a request ends, so the pool only has
       to hold what the workers have in flight. */
    N_CPU_BLOCKS = N_WORKERS * MAX_BLOCKS + 4,
    MM_THREADS = 128, /* matmul and logits: outputs per thread block */
    NORM_THREADS = 256
};

static_assert(BLOCK <= HEAD_DIM, "attention kernel: one thread per key needs BLOCK <= HEAD_DIM");
static_assert(HIDDEN % MM_THREADS == 0 && VOCAB % MM_THREADS == 0, "matmul tiling");
static_assert(HIDDEN == 2 * NORM_THREADS, "rmsnorm and embed: two elements per thread");
static_assert(HIDDEN <= 1024, "one thread per element of a row");

/* One layer of one block: K[BLOCK][HIDDEN], then V[BLOCK][HIDDEN]. Keeping
   K and V of a layer contiguous makes a slot load or an offload one copy. */
#define LB_FLOATS ((size_t)2 * BLOCK * HIDDEN)
#define LB_BYTES (LB_FLOATS * sizeof(float))
#define ROW_BYTES ((size_t)HIDDEN * sizeof(float))
/* One host block: every layer of it. */
#define HOST_BLOCK_BYTES ((size_t)N_LAYERS * LB_BYTES)
/* The activation rows of a chunk, and the distance from K to V both in the
   workspace (k, v adjacent) and in a layer-block. */
#define ACT_FLOATS ((size_t)BLOCK * HIDDEN)
#define KV_PITCH (ACT_FLOATS * sizeof(float))

/* ======================================================================== */
/* Engine state                                                             */
/* ======================================================================== */

/* The engine's own account of its copies, indexed like memobs
   ([memobs_phase_t][memobs_dir_t]) but computed without it. */
typedef struct {
    uint64_t bytes[3][3], ops[3][3];
    uint64_t tokens, blocks_offloaded, attention_flops;
} tally_t;

typedef struct {
    int id;
    cudaStream_t stream;
    memobs_phase_t phase; /* mirrors memobs_set_phase() for the tallies */
    /* Device memory. */
    float *slots;       /* [N_LAYERS][N_SLOTS][LB_FLOATS] */
    float *prefill_buf; /* [N_LAYERS][LB_FLOATS] */
    float *decode_buf;  /* [N_LAYERS][LB_FLOATS] */
    float *ws;          /* the activation workspace, carved below */
    float *x, *h, *q, *k, *v, *att, *o; /* [BLOCK][HIDDEN]; k and v adjacent */
    float *acc, *mx, *den;              /* online softmax, per (row, head) */
    int *d_tok;                         /* [MAX_TOKENS] the request's tokens */
    /* Pinned host memory: the prompt goes up from here, sampled tokens come
       back here. */
    int *h_tok; /* [MAX_TOKENS] */
    tally_t t;
} worker_t;

typedef struct {
    uint64_t id;
    int prompt_len, out_len;
    int tokens[MAX_TOKENS];
    int table[MAX_BLOCKS]; /* host blocks holding this request's full KV blocks */
    int nblocks;
    int ctx_len; /* tokens whose K/V is cached (host blocks + decode buffer) */
    int worker;
    uint32_t checksum; /* of the generated tokens: shows the run is deterministic */
} request_t;

/* The engine's own account of tracked memory, per memobs_mem_kind_t, kept
   under alloc_lock. */
typedef struct {
    uint64_t current, peak, allocs, frees, alloc_bytes;
} mem_tally_t;

#define ACT_WS_FLOATS (8 * ACT_FLOATS + 2 * (size_t)BLOCK * N_HEADS)

static struct {
    float *embed, *unembed;   /* device weights: [VOCAB][HIDDEN] */
    float *wq, *wk, *wv, *wo; /* [N_LAYERS][HIDDEN][HIDDEN] (in x out) */
    float *pool;              /* pinned: [N_CPU_BLOCKS][N_LAYERS][LB_FLOATS] */
    int free_blocks[N_CPU_BLOCKS];
    int nfree;
    pthread_mutex_t pool_lock;  /* the free list */
    pthread_mutex_t alloc_lock; /* every tracked allocation and free, and the tallies */
    mem_tally_t mem[MEMOBS_MEM_KINDS];
    request_t req[N_REQUESTS];
    int next_req;
    pthread_mutex_t queue_lock;
    memobs_counter_t c_offloaded;
} E;

static void die(const char *msg) {
    fprintf(stderr, "cuda_offload: %s\n", msg);
    exit(2);
}

/* Every CUDA call: MEMOBS_CUDA_CHECK logs a failure with the call's text,
   file and line; the engine then gives up. */
#define CK(call)                                                              \
    do {                                                                      \
        if (MEMOBS_CUDA_CHECK(call) != cudaSuccess) die("CUDA call failed"); \
    } while (0)
/* After kernel launches. */
#define CK_LAUNCH() CK(cudaGetLastError())

/* Deterministic workload: one generator, fixed seeds. */
static uint32_t rng_next(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}
static float rng_unit(uint64_t *s) { /* uniform in [-1, 1) */
    return (float)rng_next(s) / 1073741824.0f - 1.0f;
}

/* ======================================================================== */
/* Tracked memory                                                           */
/* ======================================================================== */

/* The wrappers take no tag. A tag provider gives each allocation one frame:
   the name of the engine buffer the allocating thread says it is making
   (a string literal, so its address is a stable id). */
static thread_local const char *t_site;

static int site_capture(memobs_frame_t *frames, int max, void *user) {
    (void)user;
    if (!t_site || max < 1) return 0;
    frames[0].pc = (uintptr_t)t_site;
    frames[0].line = 0;
    frames[0].aux = 0;
    return 1;
}

static size_t site_format(const memobs_frame_t *frames, int n, char *buf, size_t len, void *user) {
    int w;
    (void)user;
    if (n < 1 || len == 0) return 0;
    w = snprintf(buf, len, "%s", (const char *)frames[0].pc);
    return w < 0 ? 0 : (size_t)w;
}

/* Caller holds alloc_lock. */
static void mem_tally_alloc(memobs_mem_kind_t kind, size_t bytes) {
    mem_tally_t *m = &E.mem[kind];
    m->current += bytes;
    if (m->current > m->peak) m->peak = m->current;
    m->allocs++;
    m->alloc_bytes += bytes;
}

static void mem_tally_free(memobs_mem_kind_t kind, size_t bytes) {
    E.mem[kind].current -= bytes;
    E.mem[kind].frees++;
}

/* Device memory (memobs_cudaMalloc records it, MEMOBS_MEM_DEVICE), made
   and tallied under alloc_lock so memobs and the engine see the same
   order of allocs and frees, and so the same peak. */
static void *dev_alloc(size_t bytes, const char *site) {
    void *p = NULL;
    pthread_mutex_lock(&E.alloc_lock);
    t_site = site;
    CK(memobs_cudaMalloc(&p, bytes));
    t_site = NULL;
    mem_tally_alloc(MEMOBS_MEM_DEVICE, bytes);
    pthread_mutex_unlock(&E.alloc_lock);
    return p;
}

static void dev_free(void *p, size_t bytes) {
    pthread_mutex_lock(&E.alloc_lock);
    CK(memobs_cudaFree(p));
    mem_tally_free(MEMOBS_MEM_DEVICE, bytes);
    pthread_mutex_unlock(&E.alloc_lock);
}

/* Pinned host memory (memobs_cudaMallocHost: MEMOBS_MEM_PINNED). */
static void *pinned_alloc(size_t bytes, const char *site) {
    void *p = NULL;
    pthread_mutex_lock(&E.alloc_lock);
    t_site = site;
    CK(memobs_cudaMallocHost(&p, bytes));
    t_site = NULL;
    mem_tally_alloc(MEMOBS_MEM_PINNED, bytes);
    pthread_mutex_unlock(&E.alloc_lock);
    memset(p, 0, bytes);
    return p;
}

static void pinned_free(void *p, size_t bytes) {
    pthread_mutex_lock(&E.alloc_lock);
    CK(memobs_cudaFreeHost(p));
    mem_tally_free(MEMOBS_MEM_PINNED, bytes);
    pthread_mutex_unlock(&E.alloc_lock);
}

/* Pageable host memory, recorded by hand: after the malloc, the free's
   record before the free. */
static void *host_alloc(size_t bytes, const char *tag) {
    void *p = malloc(bytes);
    if (!p) die("out of memory");
    pthread_mutex_lock(&E.alloc_lock);
    MEMOBS_TRACK_ALLOC_N(p, bytes, MEMOBS_MEM_HOST, tag);
    mem_tally_alloc(MEMOBS_MEM_HOST, bytes);
    pthread_mutex_unlock(&E.alloc_lock);
    return p;
}

static void host_free(void *p, size_t bytes) {
    pthread_mutex_lock(&E.alloc_lock);
    MEMOBS_TRACK_FREE(p);
    mem_tally_free(MEMOBS_MEM_HOST, bytes);
    pthread_mutex_unlock(&E.alloc_lock);
    free(p);
}

/* ======================================================================== */
/* Host block pool (pinned, one allocation; blocks handed out by index)     */
/* ======================================================================== */

static float *host_block(int b) { return E.pool + (size_t)b * N_LAYERS * LB_FLOATS; }

static float *host_layer_block(int b, int layer) { return host_block(b) + (size_t)layer * LB_FLOATS; }

static int pool_alloc(void) {
    int b;
    pthread_mutex_lock(&E.pool_lock);
    b = E.nfree > 0 ? E.free_blocks[--E.nfree] : -1;
    pthread_mutex_unlock(&E.pool_lock);
    if (b < 0) die("host block pool exhausted");
    return b;
}

/* Only once the owner's stream has finished with the block. */
static void pool_free(int b) {
    pthread_mutex_lock(&E.pool_lock);
    E.free_blocks[E.nfree++] = b;
    pthread_mutex_unlock(&E.pool_lock);
}

/* ======================================================================== */
/* Copies: every copy is here, on the worker's stream, tallied              */
/* ======================================================================== */

static void tally(worker_t *w, memobs_dir_t dir, size_t bytes) {
    w->t.bytes[w->phase][dir] += bytes;
    w->t.ops[w->phase][dir]++;
}

static void set_phase(worker_t *w, memobs_phase_t ph) {
    w->phase = ph;
    if (memobs_set_phase(ph) != MEMOBS_OK) die("memobs_set_phase failed");
}

static memobs_dir_t dir_of(cudaMemcpyKind kind) {
    return kind == cudaMemcpyHostToDevice ? MEMOBS_DIR_H2D
           : kind == cudaMemcpyDeviceToHost ? MEMOBS_DIR_D2H
                                            : MEMOBS_DIR_D2D;
}

static void copy_async(worker_t *w, void *dst, const void *src, size_t n, cudaMemcpyKind kind) {
    CK(memobs_cudaMemcpyAsync(dst, src, n, kind, w->stream));
    tally(w, dir_of(kind), n);
}

/* K and V rows [0, n) (row 0 at src, V at src + KV_PITCH bytes) into rows
   [row, row + n) of a layer-block: one 2D copy of 2 rows of n * ROW_BYTES. */
static void copy_kv_rows(worker_t *w, float *dst_lb, int row, const float *src, int n) {
    size_t width = (size_t)n * ROW_BYTES;
    CK(memobs_cudaMemcpy2DAsync(dst_lb + (size_t)row * HIDDEN, KV_PITCH, src, KV_PITCH, width, 2,
                                cudaMemcpyDeviceToDevice, w->stream));
    tally(w, MEMOBS_DIR_D2D, 2 * width);
}

static float *slot_ptr(worker_t *w, int layer, int slot) {
    return w->slots + ((size_t)layer * N_SLOTS + (size_t)slot) * LB_FLOATS;
}

/* A host block's layer into a ring slot. The slot is free again once the
   attention kernel that read it last has run: stream order sees to that. */
static float *load_to_slot_layer(worker_t *w, int layer, int slot, int hb) {
    float *dst = slot_ptr(w, layer, slot);
    copy_async(w, dst, host_layer_block(hb, layer), LB_BYTES, cudaMemcpyHostToDevice);
    return dst;
}

/* A full device buffer (prefill or decode) becomes the request's next host
   block: one D2H per layer. The buffer may be rewritten right after: the
   next write to it is later on the same stream. */
static void offload_buffer_to_cpu(worker_t *w, request_t *r, const float *buf) {
    int b = pool_alloc(), layer;
    for (layer = 0; layer < N_LAYERS; layer++)
        copy_async(w, host_layer_block(b, layer), buf + (size_t)layer * LB_FLOATS, LB_BYTES, cudaMemcpyDeviceToHost);
    r->table[r->nblocks++] = b;
    memobs_counter_add(E.c_offloaded, 1);
    w->t.blocks_offloaded++;
}

/* ======================================================================== */
/* Kernels                                                                  */
/* ======================================================================== */

/* x[i] = embed[tok[i]] + a sinusoidal position code; grid n, HIDDEN/2 threads. */
__global__ void k_embed(float *x, const float *embed, const int *tok, int pos0) {
    int i = blockIdx.x, j = 2 * threadIdx.x;
    const float *e = embed + (size_t)tok[i] * HIDDEN;
    float f = (float)(pos0 + i) * powf(10000.0f, -(float)j / HIDDEN);
    x[(size_t)i * HIDDEN + j] = e[j] + 0.5f * sinf(f);
    x[(size_t)i * HIDDEN + j + 1] = e[j + 1] + 0.5f * cosf(f);
}

/* out[i] = in[i] / rms(in[i]); grid n, NORM_THREADS threads. */
__global__ void k_rmsnorm(float *out, const float *in) {
    __shared__ float red[NORM_THREADS];
    const float *a = in + (size_t)blockIdx.x * HIDDEN;
    float *b = out + (size_t)blockIdx.x * HIDDEN;
    int t = threadIdx.x, s;
    float a0 = a[t], a1 = a[t + NORM_THREADS], inv;
    red[t] = a0 * a0 + a1 * a1;
    __syncthreads();
    for (s = NORM_THREADS / 2; s > 0; s >>= 1) {
        if (t < s) red[t] += red[t + s];
        __syncthreads();
    }
    inv = rsqrtf(red[0] / HIDDEN + 1e-5f);
    b[t] = a0 * inv;
    b[t + NORM_THREADS] = a1 * inv;
}

/* out[n][HIDDEN] (+)= in[n][HIDDEN] . W[HIDDEN][HIDDEN]; grid (n,
   HIDDEN / MM_THREADS), MM_THREADS threads, one output each. */
__global__ void k_matmul(float *out, const float *in, const float *W, int accumulate) {
    __shared__ float xs[HIDDEN];
    int i = blockIdx.x, j = blockIdx.y * MM_THREADS + threadIdx.x, kk;
    float s = 0.0f;
    for (kk = threadIdx.x; kk < HIDDEN; kk += MM_THREADS) xs[kk] = in[(size_t)i * HIDDEN + kk];
    __syncthreads();
    for (kk = 0; kk < HIDDEN; kk++) s += xs[kk] * W[(size_t)kk * HIDDEN + j];
    if (accumulate) out[(size_t)i * HIDDEN + j] += s;
    else out[(size_t)i * HIDDEN + j] = s;
}

/* grid n, HIDDEN threads. */
__global__ void k_attn_init(float *acc, float *mx, float *den) {
    int i = blockIdx.x, t = threadIdx.x;
    acc[(size_t)i * HIDDEN + t] = 0.0f;
    if (t < N_HEADS) {
        mx[i * N_HEADS + t] = -INFINITY;
        den[i * N_HEADS + t] = 0.0f;
    }
}

/* Folds nkeys keys of one layer-block into the running softmax of query
   row blockIdx.x, head blockIdx.y (flash-attention style, so a slot can be
   reused once this has run). causal: row i sees keys [0, i]. HEAD_DIM
   threads: thread j < nk scores key j, then thread d sums dimension d. */
__global__ void k_attn_block(const float *q, const float *lb, float *acc, float *mx, float *den, int nkeys,
                             int causal) {
    __shared__ float qs[HEAD_DIM], s[BLOCK], c_m[2];
    const float *K = lb, *V = lb + (size_t)BLOCK * HIDDEN;
    const float scale = rsqrtf((float)HEAD_DIM);
    int i = blockIdx.x, hd = blockIdx.y, d = threadIdx.x, j;
    int nk = causal ? i + 1 : nkeys, sm = i * N_HEADS + hd;
    size_t off = (size_t)i * HIDDEN + (size_t)hd * HEAD_DIM;
    float a;
    qs[d] = q[off + d];
    __syncthreads();
    if (d < nk) {
        const float *kr = K + (size_t)d * HIDDEN + (size_t)hd * HEAD_DIM;
        float dot = 0.0f;
        int e;
        for (e = 0; e < HEAD_DIM; e++) dot += qs[e] * kr[e];
        s[d] = dot * scale;
    }
    __syncthreads();
    if (d == 0) {
        float bmax = -INFINITY, m = mx[sm], c = 1.0f, l;
        for (j = 0; j < nk; j++) bmax = fmaxf(bmax, s[j]);
        if (bmax > m) { /* new running max: rescale what was summed so far */
            c = expf(m - bmax);
            m = bmax;
        }
        l = den[sm] * c;
        for (j = 0; j < nk; j++) l += expf(s[j] - m);
        den[sm] = l;
        mx[sm] = m;
        c_m[0] = c;
        c_m[1] = m;
    }
    __syncthreads();
    a = acc[off + d] * c_m[0];
    for (j = 0; j < nk; j++) a += expf(s[j] - c_m[1]) * V[(size_t)j * HIDDEN + (size_t)hd * HEAD_DIM + d];
    acc[off + d] = a;
}

/* grid n, HIDDEN threads. */
__global__ void k_attn_finish(float *att, const float *acc, const float *den) {
    size_t e = (size_t)blockIdx.x * HIDDEN + threadIdx.x;
    att[e] = acc[e] / den[blockIdx.x * N_HEADS + threadIdx.x / HEAD_DIM];
}

/* logits[t] = unembed[t] . h; grid VOCAB / MM_THREADS, MM_THREADS threads. */
__global__ void k_logits(float *logits, const float *unembed, const float *h) {
    __shared__ float hs[HIDDEN];
    int t = blockIdx.x * MM_THREADS + threadIdx.x, j;
    const float *e = unembed + (size_t)t * HIDDEN;
    float s = 0.0f;
    for (j = threadIdx.x; j < HIDDEN; j += MM_THREADS) hs[j] = h[j];
    __syncthreads();
    for (j = 0; j < HIDDEN; j++) s += e[j] * hs[j];
    logits[t] = s;
}

/* *out = argmax(logits), the lowest index on ties; one block of NORM_THREADS. */
__global__ void k_argmax(const float *logits, int *out) {
    __shared__ float bv[NORM_THREADS];
    __shared__ int bi[NORM_THREADS];
    int t = threadIdx.x, u, s;
    float v = logits[t];
    int best = t;
    for (u = t + NORM_THREADS; u < VOCAB; u += NORM_THREADS)
        if (logits[u] > v) {
            v = logits[u];
            best = u;
        }
    bv[t] = v;
    bi[t] = best;
    __syncthreads();
    for (s = NORM_THREADS / 2; s > 0; s >>= 1) {
        if (t < s && (bv[t + s] > bv[t] || (bv[t + s] == bv[t] && bi[t + s] < bi[t]))) {
            bv[t] = bv[t + s];
            bi[t] = bi[t + s];
        }
        __syncthreads();
    }
    if (t == 0) *out = bi[0];
}

/* ======================================================================== */
/* Model                                                                    */
/* ======================================================================== */

/* Query rows [0, n), keys per row: nkeys, or i + 1 causal. q.k and p.v: a
   multiply and an add per element each, per head. */
static void count_attention(worker_t *w, int n, int nkeys, int causal) {
    uint64_t pairs = causal ? (uint64_t)n * (uint64_t)(n + 1) / 2 : (uint64_t)n * (uint64_t)nkeys;
    uint64_t flops = pairs * N_HEADS * 4 * HEAD_DIM;
    MEMOBS_COUNTER_ADD("attention_flops", flops);
    w->t.attention_flops += flops;
}

static void attn_block(worker_t *w, const float *lb, int n, int nkeys, int causal) {
    k_attn_block<<<dim3(n, N_HEADS), HEAD_DIM, 0, w->stream>>>(w->q, lb, w->acc, w->mx, w->den, nkeys, causal);
    CK_LAUNCH();
    count_attention(w, n, nkeys, causal);
}

/* Runs rows [0, n) of w->x (tokens at positions ctx_len..ctx_len+n-1)
   through every layer. Prefill: n tokens of a block-aligned chunk, whose
   K/V goes to the prefill buffer. Decode: one token, into the decode buffer
   after the tail already there. Earlier tokens are all in host blocks. */
static void forward(worker_t *w, request_t *r, int n, int is_prefill) {
    cudaStream_t st = w->stream;
    int layer, blk;
    int tail = r->ctx_len % BLOCK; /* decode: rows already in the decode buffer */
    for (layer = 0; layer < N_LAYERS; layer++) {
        size_t wl = (size_t)layer * HIDDEN * HIDDEN;
        const float *local;
        k_rmsnorm<<<n, NORM_THREADS, 0, st>>>(w->h, w->x);
        k_matmul<<<dim3(n, HIDDEN / MM_THREADS), MM_THREADS, 0, st>>>(w->q, w->h, E.wq + wl, 0);
        k_matmul<<<dim3(n, HIDDEN / MM_THREADS), MM_THREADS, 0, st>>>(w->k, w->h, E.wk + wl, 0);
        k_matmul<<<dim3(n, HIDDEN / MM_THREADS), MM_THREADS, 0, st>>>(w->v, w->h, E.wv + wl, 0);
        CK_LAUNCH();
        if (is_prefill) { /* write_to_prefill_buffer */
            local = w->prefill_buf + (size_t)layer * LB_FLOATS;
            copy_kv_rows(w, (float *)local, 0, w->k, n);
        } else { /* write_to_decode_buffer */
            local = w->decode_buf + (size_t)layer * LB_FLOATS;
            copy_kv_rows(w, (float *)local, tail, w->k, 1);
        }
        k_attn_init<<<n, HIDDEN, 0, st>>>(w->acc, w->mx, w->den);
        CK_LAUNCH();
        /* The ring: block blk goes to slot blk % N_SLOTS, after the kernel
           that read the slot's previous block (same stream). */
        for (blk = 0; blk < r->nblocks; blk++)
            attn_block(w, load_to_slot_layer(w, layer, blk % N_SLOTS, r->table[blk]), n, BLOCK, 0);
        if (is_prefill) attn_block(w, local, n, n, 1);
        else attn_block(w, local, 1, tail + 1, 0);
        k_attn_finish<<<n, HIDDEN, 0, st>>>(w->att, w->acc, w->den);
        k_matmul<<<dim3(n, HIDDEN / MM_THREADS), MM_THREADS, 0, st>>>(w->x, w->att, E.wo + wl, 1); /* residual */
        CK_LAUNCH();
    }
    r->ctx_len += n;
}

/* Greedy token `idx` of the request from row `row` of w->x: sampled on the
   device into d_tok[idx] (where the next decode step's embedding reads it),
   copied back into the pinned h_tok[idx], and waited for. */
static int sample(worker_t *w, float *logits, int row, int idx) {
    int tok;
    k_rmsnorm<<<1, NORM_THREADS, 0, w->stream>>>(w->h, w->x + (size_t)row * HIDDEN);
    k_logits<<<VOCAB / MM_THREADS, MM_THREADS, 0, w->stream>>>(logits, E.unembed, w->h);
    k_argmax<<<1, NORM_THREADS, 0, w->stream>>>(logits, w->d_tok + idx);
    CK_LAUNCH();
    copy_async(w, w->h_tok + idx, w->d_tok + idx, sizeof(int), cudaMemcpyDeviceToHost);
    CK(cudaStreamSynchronize(w->stream));
    tok = w->h_tok[idx];
    if (tok < 0 || tok >= VOCAB) die("sampled token out of range");
    return tok;
}

/* ======================================================================== */
/* Serving                                                                  */
/* ======================================================================== */

static void emit_token(worker_t *w, request_t *r, int tok, int k) {
    r->tokens[r->prompt_len + k] = tok;
    r->checksum = r->checksum * 31u + (uint32_t)tok + 1u;
    memobs_request_token(r->id);
    MEMOBS_COUNTER_ADD("tokens_generated", 1);
    w->t.tokens++;
}

static void serve(worker_t *w, request_t *r) {
    const size_t logits_bytes = (size_t)VOCAB * sizeof(float);
    float *logits = (float *)dev_alloc(logits_bytes, "logits");
    int pos, k, n = 0;
    r->worker = w->id;

    set_phase(w, MEMOBS_PHASE_PREFILL);
    /* h_tok is free: the previous request ended with a synchronize. */
    memcpy(w->h_tok, r->tokens, (size_t)r->prompt_len * sizeof(int));
    copy_async(w, w->d_tok, w->h_tok, (size_t)r->prompt_len * sizeof(int), cudaMemcpyHostToDevice);
    for (pos = 0; pos < r->prompt_len; pos += n) {
        n = r->prompt_len - pos < BLOCK ? r->prompt_len - pos : BLOCK;
        k_embed<<<n, HIDDEN / 2, 0, w->stream>>>(w->x, E.embed, w->d_tok + pos, pos);
        CK_LAUNCH();
        forward(w, r, n, 1);
        if (n == BLOCK) {
            offload_buffer_to_cpu(w, r, w->prefill_buf); /* offload_prefill_buffer */
        } else {
            /* A partial last chunk stays on the device: it seeds the decode buffer. */
            int layer;
            for (layer = 0; layer < N_LAYERS; layer++)
                copy_kv_rows(w, w->decode_buf + (size_t)layer * LB_FLOATS, 0,
                             w->prefill_buf + (size_t)layer * LB_FLOATS, n);
        }
    }
    emit_token(w, r, sample(w, logits, n - 1, r->prompt_len), 0);

    set_phase(w, MEMOBS_PHASE_DECODE);
    for (k = 1; k < r->out_len; k++) {
        pos = r->prompt_len + k - 1; /* the last generated token, already in d_tok */
        k_embed<<<1, HIDDEN / 2, 0, w->stream>>>(w->x, E.embed, w->d_tok + pos, pos);
        CK_LAUNCH();
        forward(w, r, 1, 0);
        if (r->ctx_len % BLOCK == 0) offload_buffer_to_cpu(w, r, w->decode_buf);
        emit_token(w, r, sample(w, logits, 0, r->prompt_len + k), k);
    }
    memobs_request_end(r->id);
    set_phase(w, MEMOBS_PHASE_NONE);

    /* The last sample synchronized the stream: every copy from or to this
       request's host blocks is done, so they can go back to the pool. */
    dev_free(logits, logits_bytes);
    for (k = 0; k < r->nblocks; k++) pool_free(r->table[k]);
}

static request_t *next_request(void) {
    request_t *r = NULL;
    pthread_mutex_lock(&E.queue_lock);
    if (E.next_req < N_REQUESTS) r = &E.req[E.next_req++];
    pthread_mutex_unlock(&E.queue_lock);
    return r;
}

static void *worker_main(void *arg) {
    worker_t *w = (worker_t *)arg;
    request_t *r;
    CK(cudaSetDevice(0)); /* the current device is per thread */
    while ((r = next_request()) != NULL) serve(w, r);
    return NULL;
}

/* ======================================================================== */
/* Set-up and tear-down                                                     */
/* ======================================================================== */

static void setup_worker(worker_t *w, int id) {
    const size_t act = ACT_FLOATS, sm = (size_t)BLOCK * N_HEADS;
    memset(w, 0, sizeof *w);
    w->id = id;
    CK(cudaStreamCreateWithFlags(&w->stream, cudaStreamNonBlocking));
    w->slots = (float *)dev_alloc((size_t)N_LAYERS * N_SLOTS * LB_BYTES, "kv_slots");
    w->prefill_buf = (float *)dev_alloc((size_t)N_LAYERS * LB_BYTES, "prefill_buffer");
    w->decode_buf = (float *)dev_alloc((size_t)N_LAYERS * LB_BYTES, "decode_buffer");
    w->ws = (float *)dev_alloc(ACT_WS_FLOATS * sizeof(float), "activations");
    w->d_tok = (int *)dev_alloc((size_t)MAX_TOKENS * sizeof(int), "tokens");
    w->h_tok = (int *)pinned_alloc((size_t)MAX_TOKENS * sizeof(int), "token_io");
    w->x = w->ws;
    w->h = w->ws + act;
    w->q = w->ws + 2 * act;
    w->k = w->ws + 3 * act; /* v right after k: copy_kv_rows relies on it */
    w->v = w->ws + 4 * act;
    w->att = w->ws + 5 * act;
    w->o = w->ws + 6 * act;
    w->acc = w->ws + 7 * act;
    w->mx = w->ws + 8 * act;
    w->den = w->ws + 8 * act + sm;
    /* Rows of a partial chunk past n are never read, but start clean. */
    CK(cudaMemsetAsync(w->ws, 0, ACT_WS_FLOATS * sizeof(float), w->stream));
    CK(cudaMemsetAsync(w->decode_buf, 0, (size_t)N_LAYERS * LB_BYTES, w->stream));
    CK(cudaStreamSynchronize(w->stream));
}

static void teardown_worker(worker_t *w) {
    CK(cudaStreamSynchronize(w->stream));
    pinned_free(w->h_tok, (size_t)MAX_TOKENS * sizeof(int));
    dev_free(w->d_tok, (size_t)MAX_TOKENS * sizeof(int));
    dev_free(w->ws, ACT_WS_FLOATS * sizeof(float));
    dev_free(w->decode_buf, (size_t)N_LAYERS * LB_BYTES);
    dev_free(w->prefill_buf, (size_t)N_LAYERS * LB_BYTES);
    dev_free(w->slots, (size_t)N_LAYERS * N_SLOTS * LB_BYTES);
    CK(cudaStreamDestroy(w->stream));
}

#define EMB_BYTES ((size_t)VOCAB * HIDDEN * sizeof(float))
#define MATS_BYTES ((size_t)N_LAYERS * HIDDEN * HIDDEN * sizeof(float))

static void alloc_weights(void) {
    E.embed = (float *)dev_alloc(EMB_BYTES, "weights");
    E.unembed = (float *)dev_alloc(EMB_BYTES, "weights");
    E.wq = (float *)dev_alloc(MATS_BYTES, "weights");
    E.wk = (float *)dev_alloc(MATS_BYTES, "weights");
    E.wv = (float *)dev_alloc(MATS_BYTES, "weights");
    E.wo = (float *)dev_alloc(MATS_BYTES, "weights");
}

static void free_weights(void) {
    dev_free(E.wo, MATS_BYTES);
    dev_free(E.wv, MATS_BYTES);
    dev_free(E.wk, MATS_BYTES);
    dev_free(E.wq, MATS_BYTES);
    dev_free(E.unembed, EMB_BYTES);
    dev_free(E.embed, EMB_BYTES);
}

/* Weights are made on the host and uploaded with synchronous copies from a
   pageable staging buffer before serving starts: no phase is set, so
   memobs files them as "unphased". */
static void load_weights(tally_t *t) {
    const size_t mat = (size_t)HIDDEN * HIDDEN, nemb = (size_t)VOCAB * HIDDEN;
    const size_t staging = (nemb > mat ? nemb : mat) * sizeof(float);
    float *host = (float *)host_alloc(staging, "weights_staging");
    float *dst[4];
    uint64_t seed = 0x5eed0001u;
    size_t i;
    int m, layer;
    dst[0] = E.wq;
    dst[1] = E.wk;
    dst[2] = E.wv;
    dst[3] = E.wo;
    for (m = 0; m < 2; m++) {
        for (i = 0; i < nemb; i++) host[i] = rng_unit(&seed);
        CK(memobs_cudaMemcpy(m == 0 ? E.embed : E.unembed, host, nemb * sizeof(float), cudaMemcpyHostToDevice));
        t->bytes[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D] += nemb * sizeof(float);
        t->ops[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D]++;
    }
    for (m = 0; m < 4; m++)
        for (layer = 0; layer < N_LAYERS; layer++) {
            /* uniform [-a, a) has variance a^2/3: this a keeps outputs near unit scale */
            for (i = 0; i < mat; i++) host[i] = rng_unit(&seed) * sqrtf(3.0f / HIDDEN);
            CK(memobs_cudaMemcpy(dst[m] + (size_t)layer * mat, host, mat * sizeof(float), cudaMemcpyHostToDevice));
            t->bytes[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D] += mat * sizeof(float);
            t->ops[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D]++;
        }
    host_free(host, staging);
}

static void make_requests(void) {
    uint64_t seed = 0x1234abcdu;
    int i, j;
    for (i = 0; i < N_REQUESTS; i++) {
        request_t *r = &E.req[i];
        uint64_t ts = 0x70c0000u + (uint64_t)i;
        memset(r, 0, sizeof *r);
        r->id = 100 + (uint64_t)i;
        r->prompt_len = MIN_PROMPT + (int)(rng_next(&seed) % (MAX_PROMPT - MIN_PROMPT + 1));
        r->out_len = MIN_OUT + (int)(rng_next(&seed) % (MAX_OUT - MIN_OUT + 1));
        for (j = 0; j < r->prompt_len; j++) r->tokens[j] = (int)(rng_next(&ts) % VOCAB);
    }
}

/* ======================================================================== */
/* Cross-check against memobs                                               */
/* ======================================================================== */

static int mismatches;

static void expect(const char *what, uint64_t memobs_v, uint64_t engine_v) {
    if (memobs_v == engine_v) return;
    fprintf(stderr, "MISMATCH %s: memobs %llu, engine %llu\n", what, (unsigned long long)memobs_v,
            (unsigned long long)engine_v);
    mismatches++;
}

static uint64_t counter_value(const memobs_summary_t *s, const char *name) {
    uint32_t c;
    for (c = 0; c < s->ncounters; c++)
        if (strcmp(s->counters[c].name, name) == 0) return s->counters[c].value;
    fprintf(stderr, "MISMATCH counter %s: not in the memobs summary\n", name);
    mismatches++;
    return 0;
}

static const char *const kind_name[MEMOBS_MEM_KINDS] = {"device", "host", "pinned", "managed"};
static const char *const dir_name[3] = {"h2d", "d2h", "d2d"};
static const char *const phase_name[4] = {"unphased", "prefill", "decode", "total"};

static const memobs_xfer_t *xfer_of(const memobs_dirs_t *md, int d) {
    return d == 0 ? &md->h2d : d == 1 ? &md->d2h : &md->d2d;
}

/* Called with every stream idle and the timed copies polled. */
static void cross_check(const tally_t *t) {
    memobs_summary_t *s = (memobs_summary_t *)malloc(sizeof *s);
    const memobs_track_problems_t *tp;
    uint64_t timed_ns = 0;
    char what[96];
    int p, d, k;
    if (!s) die("out of memory");
    memobs_get_summary(s);

    /* Issued copies: memobs against the engine. */
    for (p = 0; p < 4; p++) {
        const memobs_dirs_t *md = p == 0 ? &s->unphased : p == 1 ? &s->prefill : p == 2 ? &s->decode : &s->total;
        for (d = 0; d < 3; d++) {
            const memobs_xfer_t *x = xfer_of(md, d);
            uint64_t b = 0, n = 0;
            int q;
            for (q = 0; q < 3; q++) {
                if (p != 3 && q != p) continue;
                b += t->bytes[q][d];
                n += t->ops[q][d];
            }
            snprintf(what, sizeof what, "%s %s bytes", phase_name[p], dir_name[d]);
            expect(what, x->bytes, b);
            snprintf(what, sizeof what, "%s %s ops", phase_name[p], dir_name[d]);
            expect(what, x->count, n);
        }
    }

    /* Device-timed copies: after the final poll every copy is complete, so
       completed equals issued for each phase and direction. */
    expect("timed copies in flight", s->timed_in_flight_copies, 0);
    expect("timed bytes in flight", s->timed_in_flight_bytes, 0);
    expect("untimed copies", memobs_cuda_get_untimed(), 0);
    for (p = 0; p < MEMOBS_PHASES; p++) {
        const memobs_dirs_t *md = p == 0 ? &s->unphased : p == 1 ? &s->prefill : &s->decode;
        for (d = 0; d < MEMOBS_DIRS; d++) {
            snprintf(what, sizeof what, "%s %s timed bytes == issued", phase_name[p], dir_name[d]);
            expect(what, s->timed[p][d].bytes, xfer_of(md, d)->bytes);
            snprintf(what, sizeof what, "%s %s timed ops == issued", phase_name[p], dir_name[d]);
            expect(what, s->timed[p][d].count, xfer_of(md, d)->count);
            timed_ns += s->timed[p][d].ns;
        }
    }
    if (timed_ns == 0) {
        fprintf(stderr, "MISMATCH timed device time: memobs 0 ns for %llu copies\n",
                (unsigned long long)s->total.h2d.count + s->total.d2h.count + s->total.d2d.count);
        mismatches++;
    }

    expect("requests begun", s->requests_begun, N_REQUESTS);
    expect("requests completed", s->requests_completed, N_REQUESTS);
    expect("requests in flight", s->requests_in_flight, 0);
    expect("ttft samples", s->ttft.count, N_REQUESTS);
    expect("tpot samples", s->tpot.count, t->tokens - N_REQUESTS);
    expect("e2e samples", s->e2e.count, N_REQUESTS);
    expect("problems", s->requests_dropped + s->requests_unknown + s->requests_duplicate + s->ttft_unmatched +
                           s->tpot_unarmed + s->bad_records + s->untracked_threads,
           0);
    expect("counter kv_blocks_offloaded", counter_value(s, "kv_blocks_offloaded"), t->blocks_offloaded);
    expect("counter tokens_generated", counter_value(s, "tokens_generated"), t->tokens);
    expect("counter attention_flops", counter_value(s, "attention_flops"), t->attention_flops);

    /* Tracked memory: the workers are done, so these figures are final. */
    for (k = 0; k < MEMOBS_MEM_KINDS; k++) {
        const memobs_mem_stats_t *ms = &s->mem[k];
        const mem_tally_t *mt = &E.mem[k];
        snprintf(what, sizeof what, "%s current bytes", kind_name[k]);
        expect(what, ms->current_bytes, mt->current);
        snprintf(what, sizeof what, "%s peak bytes", kind_name[k]);
        expect(what, ms->peak_bytes, mt->peak);
        snprintf(what, sizeof what, "%s live", kind_name[k]);
        expect(what, ms->live, mt->allocs - mt->frees);
        snprintf(what, sizeof what, "%s allocs", kind_name[k]);
        expect(what, ms->allocs, mt->allocs);
        snprintf(what, sizeof what, "%s frees", kind_name[k]);
        expect(what, ms->frees, mt->frees);
        snprintf(what, sizeof what, "%s alloc bytes", kind_name[k]);
        expect(what, ms->alloc_bytes, mt->alloc_bytes);
        snprintf(what, sizeof what, "%s pending frees", kind_name[k]);
        expect(what, ms->pending_frees, 0);
    }
    expect("tracked device bytes on device 0", memobs_get_device_bytes(0, NULL), E.mem[MEMOBS_MEM_DEVICE].current);
    expect("host blocks back in the pool", (uint64_t)E.nfree, N_CPU_BLOCKS);
    expect("tracking", (uint64_t)s->tracking, 1);
    tp = &s->track;
    expect("tracker problems", tp->frees_unknown + tp->frees_double + tp->frees_null + tp->allocs_null +
                                   tp->allocs_zero + tp->allocs_duplicate + tp->allocs_bad_kind + tp->untracked +
                                   tp->untracked_live + tp->untracked_frees + tp->traces_dropped,
           0);
    expect("out-of-memory errors", memobs_cuda_get_oom_count(), 0);
    free(s);
}

/* After tear-down: nothing may be left live. */
static void check_released(void) {
    memobs_summary_t *s = (memobs_summary_t *)malloc(sizeof *s);
    char what[64];
    int k;
    if (!s) die("out of memory");
    memobs_get_summary(s);
    for (k = 0; k < MEMOBS_MEM_KINDS; k++) {
        snprintf(what, sizeof what, "%s live after tear-down", kind_name[k]);
        expect(what, s->mem[k].live, 0);
        snprintf(what, sizeof what, "%s bytes after tear-down", kind_name[k]);
        expect(what, s->mem[k].current_bytes, E.mem[k].current);
        expect("engine tally after tear-down", E.mem[k].current, 0);
    }
    free(s);
}

/* ======================================================================== */
/* Main                                                                     */
/* ======================================================================== */

static void print_tallies(const tally_t *t) {
    static const char *const pre[4] = {"", "prefill_", "decode_", "unphased_"};
    int p, d, k;
    printf("engine tallies:");
    for (p = 0; p < 4; p++)
        for (d = 0; d < 3; d++) {
            uint64_t b = 0, n = 0;
            int q;
            for (q = 0; q < 3; q++) {
                /* p: 0 total, 1 prefill, 2 decode, 3 unphased (memobs phase 0) */
                if (p != 0 && q != (p == 3 ? 0 : p)) continue;
                b += t->bytes[q][d];
                n += t->ops[q][d];
            }
            printf(" %s%s=%llu %s%s_ops=%llu", pre[p], dir_name[d], (unsigned long long)b, pre[p], dir_name[d],
                   (unsigned long long)n);
        }
    printf(" requests=%d tokens=%llu kv_blocks_offloaded=%llu attention_flops=%llu", N_REQUESTS,
           (unsigned long long)t->tokens, (unsigned long long)t->blocks_offloaded,
           (unsigned long long)t->attention_flops);
    for (k = 0; k < MEMOBS_MEM_KINDS; k++) {
        const mem_tally_t *m = &E.mem[k];
        if (k == MEMOBS_MEM_MANAGED) continue; /* the engine has none */
        printf(" %s_current_bytes=%llu %s_peak_bytes=%llu %s_live=%llu %s_allocs=%llu %s_frees=%llu"
               " %s_alloc_bytes=%llu",
               kind_name[k], (unsigned long long)m->current, kind_name[k], (unsigned long long)m->peak, kind_name[k],
               (unsigned long long)(m->allocs - m->frees), kind_name[k], (unsigned long long)m->allocs, kind_name[k],
               (unsigned long long)m->frees, kind_name[k], (unsigned long long)m->alloc_bytes);
    }
    printf("\n");
}

int main(int argc, char **argv) {
    static worker_t workers[N_WORKERS];
    pthread_t th[N_WORKERS];
    memobs_tag_provider_t prov;
    struct cudaDeviceProp prop;
    tally_t t;
    uint64_t t0, t1;
    char buf[32];
    int json = 0, ndev = 0, i, p, d;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else {
            fprintf(stderr, "usage: %s [--json]\n", argv[0]);
            return 2;
        }
    }

    CK(cudaGetDeviceCount(&ndev));
    if (ndev < 1) die("no CUDA device");
    CK(cudaSetDevice(0));
    CK(cudaGetDeviceProperties(&prop, 0));
    fprintf(stderr, "cuda_offload: device 0: %s, %d SMs, %s\n", prop.name, prop.multiProcessorCount,
            memobs_format_bytes(buf, sizeof buf, prop.totalGlobalMem));

    pthread_mutex_init(&E.pool_lock, NULL);
    pthread_mutex_init(&E.alloc_lock, NULL);
    pthread_mutex_init(&E.queue_lock, NULL);
    memset(&t, 0, sizeof t);

    memset(&prov, 0, sizeof prov);
    prov.capture = site_capture;
    prov.format = site_format;
    prov.title = "Engine Buffer";
    if (memobs_track_set_tag_provider(&prov) != MEMOBS_OK) die("memobs_track_set_tag_provider failed");
    (void)memobs_cuda_set_timing(1);

    E.c_offloaded = memobs_counter_register("kv_blocks_offloaded", "KV blocks written to the host pool");
    if (E.c_offloaded < 0 || memobs_counter_register("tokens_generated", "tokens sampled, all requests") < 0 ||
        memobs_counter_register("attention_flops", "q.k and p.v multiplies and adds") < 0)
        die("memobs_counter_register failed");

    /* Set-up: weights, the pinned pool, each worker's stream and buffers. */
    alloc_weights();
    E.pool = (float *)pinned_alloc((size_t)N_CPU_BLOCKS * HOST_BLOCK_BYTES, "kv_pool");
    for (i = 0; i < N_CPU_BLOCKS; i++) E.free_blocks[E.nfree++] = N_CPU_BLOCKS - 1 - i;
    for (i = 0; i < N_WORKERS; i++) setup_worker(&workers[i], i);
    load_weights(&t);
    /* Peak report: quiet up to the set-up footprint, then at the first
       byte past it (the first request's logits) and at each 25% beyond. */
    if (!getenv("MEMOBS_PEAK_REPORT") &&
        memobs_track_set_peak_report("stderr", 0.25, E.mem[MEMOBS_MEM_DEVICE].current + 1) != MEMOBS_OK)
        die("memobs_track_set_peak_report failed");

    make_requests();
    t0 = memobs_now_ns();
    /* All requests arrive at once: TTFT includes the wait for a worker. */
    for (i = 0; i < N_REQUESTS; i++) memobs_request_begin(E.req[i].id);
    for (i = 0; i < N_WORKERS; i++)
        if (pthread_create(&th[i], NULL, worker_main, &workers[i]) != 0) die("pthread_create failed");
    for (i = 0; i < N_WORKERS; i++) pthread_join(th[i], NULL);
    t1 = memobs_now_ns();

    /* Everything issued is done; resolve the last timed copies. */
    CK(cudaDeviceSynchronize());
    memobs_cuda_poll();

    for (i = 0; i < N_WORKERS; i++) {
        const tally_t *wt = &workers[i].t;
        for (p = 0; p < 3; p++)
            for (d = 0; d < 3; d++) {
                t.bytes[p][d] += wt->bytes[p][d];
                t.ops[p][d] += wt->ops[p][d];
            }
        t.tokens += wt->tokens;
        t.blocks_offloaded += wt->blocks_offloaded;
        t.attention_flops += wt->attention_flops;
    }

    for (i = 0; i < N_REQUESTS; i++) {
        const request_t *r = &E.req[i];
        fprintf(stderr, "request %llu: prompt %3d, generated %2d, worker %d, host blocks %2d, tokens %08x\n",
                (unsigned long long)r->id, r->prompt_len, r->out_len, r->worker, r->nblocks, r->checksum);
    }
    fprintf(stderr, "served %d requests, %llu tokens, on %d workers in %s\n", N_REQUESTS,
            (unsigned long long)t.tokens, N_WORKERS, memobs_format_ns(buf, sizeof buf, t1 - t0));
    memobs_print_summary();
    if (memobs_cuda_print_mem(stderr) != MEMOBS_OK) die("memobs_cuda_print_mem failed");
    memobs_print_alloc_groups(stderr);

    print_tallies(&t);
    if (json) memobs_write_summary(stdout, MEMOBS_FORMAT_JSON);
    fflush(stdout);

    cross_check(&t);

    /* Tear-down: everything goes back; memobs must then see nothing live. */
    for (i = N_WORKERS; i-- > 0;) teardown_worker(&workers[i]);
    pinned_free(E.pool, (size_t)N_CPU_BLOCKS * HOST_BLOCK_BYTES);
    free_weights();
    check_released();

    if (mismatches) {
        fprintf(stderr, "cuda_offload: %d memobs figure(s) differ from the engine's tallies%s\n", mismatches,
                memobs_get_enabled() ? ""
                                    : " (memobs is off: MEMOBS=0 in the environment, or built with MEMOBS_DISABLE)");
        return 1;
    }
    fprintf(stderr, "cuda_offload: ok: memobs agrees with the engine's tallies\n");
    return 0;
}
