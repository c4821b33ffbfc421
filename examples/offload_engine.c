/* examples/offload_engine.c - a small KV-cache offload engine, instrumented
   with memobs. No GPU needed: "device" memory (GPU HBM) is one malloc'ed
   arena, "host" memory (the pinned CPU block pool) another, and every copy
   between them is a real memcpy.

   The shape follows nano-vllm's offload_engine.py: all KV blocks live in the
   host pool; the device holds, per layer, a ring of N_SLOTS block slots, a
   prefill buffer and a decode buffer. Prefill runs in block-sized chunks:
   each chunk's K/V goes to the prefill buffer (D2D), its queries attend over
   every earlier block loaded back into a slot (H2D) plus the chunk itself,
   and the full chunk is offloaded to the pool (D2H). Decode appends one
   token's K/V to the decode buffer (D2D), attends over all host blocks (H2D)
   plus that buffer, and offloads the buffer when it fills (D2H).

   Below the host pool, a disk tier (a temporary file, as a prefix cache on
   local NVMe would keep them): at the end of its prefill a request stores
   its prompt's full host blocks there (H2S, one pwrite a block), and at its
   end it loads its first block back and checks it against the pool (S2H,
   one pread). The engine waits for each and gives memobs its duration
   (memobs_record_xfer_ns), so the summary shows the disk's bandwidth
   beside the copies; every record is one host block, 192 KiB, which the
   size distribution shows as (128 KiB, 256 KiB].

   Recording, both ways memobs allows: the nano-vllm entry points, which
   know their phase, pass it (MEMOBS_RECORD_H2D(bytes, is_prefill) in
   load_to_slot_layer); the generic copy helpers under them do not know it
   and use MEMOBS_RECORD_*_CUR, which files a copy under the phase its
   thread set with memobs_set_phase(). Every record is the exact number of
   bytes memcpy'ed. Timing is per request (memobs_request_begin/token/end):
   with two workers decoding at once, nano-vllm's single global TTFT/TPOT
   clock would interleave the tokens of different requests.

   Two worker threads (--workers N: 1 to 8) pull requests from a queue, so
   memobs records from several threads at once. The engine keeps its own
   tallies of every copy and checks memobs' figures against them at the
   end: exit 1 on a mismatch.

   The main thread is the scheduler. In waves of as many requests as there
   are workers, once every request of a wave has stored its prompt, it
   gathers the wave's prompt blocks from the host pool into a device prefix
   cache: one batch transfer (H2D, prefill) for several requests at once,
   the wave's block table and its blocks. A request's worker waits for its
   wave's gather before the request ends: its blocks stay in the pool while
   the gather reads them.

   Attribution to requests, both ways memobs allows (docs/requests.md):
     bound    a worker serving request r calls memobs_request_enter(r) first
              and memobs_request_leave() after memobs_request_end(r): every
              copy and disk transfer it records in between is r's, the disk
              tier's with the time the engine waited for it;
     on behalf  the scheduler's gather is made for a wave of requests from
              a thread bound to none: memobs_request_xfer_split shares it by
              the requests' block counts (the table's offsets make it no
              multiple of a block, so the parts show the rounding).
   The weights' upload, before any request, stays the engine's own
   (unattributed). Each request has a tenant (acme, globex, initech:
   memobs_request_tenant). The engine keeps its own ledger of each request
   (bytes and operations per direction and phase, the time of its timed
   transfers; the gather's parts by the same rounding rule, computed by the
   engine) and checks memobs' ledgers (memobs_request_top, all 8) and the
   summary's attributed figures against it. After the requests the demo
   prints the three requests that moved the most and how much of the
   traffic is attributed; MEMOBS_REQUESTS=FILE writes memobs' JSON line of
   every request as it ends.

   Memory, through memobs' allocation tracker, as a real engine would:
     device  every buffer carved from the arena is a tracked allocation with
             a tag per kind of buffer ("weights", "kv_slots",
             "prefill_buffer", "decode_buffer", "activations",
             "prefix_cache"); sampling
             takes a per-step "logits" buffer from the device allocator
             (here malloc) and gives it back.
     pinned  a request that takes a block from the host pool (pool_alloc)
             tracks it as "kv_block" with an 8-frame C stack, and pool_free
             retires it, so the group-by report shows which function holds
             pinned memory. A normal run ends with no block live.
     host    the weight upload's pageable staging buffer ("weights_staging").
   Each allocator records under its lock (pool_lock, alloc_lock) and tallies
   under the same lock, so memobs and the engine see the allocations in one
   order: current bytes, peaks, allocs and frees per kind must agree
   exactly, checked at the end like the copies.
   The peak report (held back until after the summary), growth 25%, min_bytes one past the
   planned device footprint (the arena): set-up stays below it, the first
   step's logits go past it, and that one report shows what holds device
   memory; nothing later grows by 25%. (MEMOBS_PEAK_REPORT in the
   environment wins.) The
   worker serving the last request prints memobs_print_alloc_groups() just
   before that request gives its host blocks back, and the engine prints
   memobs_print_leaks() after it frees its device buffers at the end
   (unless MEMOBS_LEAKS does so at exit).

   Build (libm for expf/sqrtf/sinf/cosf; -rdynamic so stack frames show the
   demo's function names):
       cc -std=c99 -O2 -Wall -Wextra -Werror -pthread -I. \
          examples/offload_engine.c -o offload_engine -lm -rdynamic
   Run (make demo runs it with --reports build/demo_reports.txt):
       ./offload_engine [--json] [--leak] [--workers N] [--tallies FILE] [--ledger FILE]
                        [--attributed FILE] [--reports FILE]
   --leak: request 100 never gives its last host block back, so the leak
   report at the end shows one live pinned kv_block, with its stack (the
   engine's tallies expect it: the run still exits 0).
   stderr, in this order: memobs_print_summary() first, one line per
   request, the top three requests by bytes moved and the attributed share,
   the reports written during the run (the peak report, the
   group-by report; with --reports FILE they stay in FILE and one line
   names it), then the leak report.
   stdout: nothing, or with --json the memobs JSON summary (one line).
   --tallies FILE: the engine's own tallies, for tests/docs/test_demo.sh, as one
   line "engine tallies: key=value ..." (copies, requests, counters, then
   per memory kind: device_current_bytes, _peak_bytes, _live, _allocs,
   _frees, _alloc_bytes; host_...; pinned_...).
   --ledger FILE: the engine's ledger of each request, a JSON line each in
   the shape of memobs' request lines, then a line of its attributed and
   unattributed figures and each gather's split (write_ledger).
   --attributed FILE: memobs_summary_t.attributed as one JSON line (the
   JSON summary does not carry it yet). */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pread, pwrite under -std=c99 */
#endif
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ======================================================================== */
/* Model and engine sizes                                                   */
/* ======================================================================== */

enum {
    N_LAYERS = 4,
    N_HEADS = 6,
    HEAD_DIM = 64,
    HIDDEN = N_HEADS * HEAD_DIM,
    VOCAB = 512,
    BLOCK = 16,  /* tokens per KV block */
    N_SLOTS = 4, /* device slots per layer */
    N_REQUESTS = 8,
    N_WORKERS = 2,   /* the default; --workers N, 1 to MAX_WORKERS */
    MAX_WORKERS = 8,
    MIN_PROMPT = 64,
    MAX_PROMPT = 256,
    MIN_OUT = 16,
    MAX_OUT = 48,
    MAX_TOKENS = MAX_PROMPT + MAX_OUT,
    MAX_BLOCKS = (MAX_TOKENS + BLOCK - 1) / BLOCK,
    /* Blocks go back to the pool when a request ends, so the pool only has
       to hold what the workers have in flight. */
    N_CPU_BLOCKS = MAX_WORKERS * MAX_BLOCKS + 4,
    PREFIX_BLOCKS = MAX_PROMPT / BLOCK, /* a prompt's full blocks, at most */
    /* The device prefix cache's table: a wave's n + 1 offsets, then the
       host block of each of its prompts' full blocks (int32 each). */
    PREFIX_TABLE = MAX_WORKERS + 1 + MAX_WORKERS * PREFIX_BLOCKS
};

/* One layer of one block: K[BLOCK][HIDDEN], then V[BLOCK][HIDDEN]. Keeping
   K and V of a layer contiguous makes a slot load or an offload one memcpy. */
#define LB_FLOATS ((size_t)2 * BLOCK * HIDDEN)
#define LB_BYTES (LB_FLOATS * sizeof(float))
#define ROW_BYTES ((size_t)HIDDEN * sizeof(float))
/* One host block: every layer of it. */
#define HOST_BLOCK_BYTES ((size_t)N_LAYERS * LB_BYTES)

/* ======================================================================== */
/* Engine state                                                             */
/* ======================================================================== */

/* The engine's own account of its copies and disk transfers, indexed like
   memobs ([memobs_phase_t][memobs_dir_t]) but computed without it; ns: the
   time it gave memobs with each timed transfer. */
typedef struct {
    uint64_t bytes[3][MEMOBS_DIRS], ops[3][MEMOBS_DIRS], ns[3][MEMOBS_DIRS];
    uint64_t tokens, blocks_offloaded, attention_flops;
} tally_t;

/* The engine's own ledger of one request: what it moved on the request's
   behalf, by [memobs_phase_t][memobs_dir_t], and the time it waited for
   its timed transfers (the disk tier's), by direction. */
typedef struct {
    uint64_t bytes[3][MEMOBS_DIRS], ops[3][MEMOBS_DIRS], ns[MEMOBS_DIRS];
} ledger_t;

struct request;

typedef struct {
    int id;
    struct request *cur; /* the request it serves, bound with memobs_request_enter; NULL between requests */
    ledger_t own;        /* its copies bound to no request: the engine's own (unattributed) */
    /* Mirrors memobs_set_phase(), so the copy helpers can tally by phase
       from the engine's state while memobs uses its own per-thread phase. */
    memobs_phase_t phase;
    /* Device memory (in the arena). */
    float *slots;       /* [N_LAYERS][N_SLOTS][LB_FLOATS] */
    float *prefill_buf; /* [N_LAYERS][LB_FLOATS] */
    float *decode_buf;  /* [N_LAYERS][LB_FLOATS] */
    float *x, *h, *q, *k, *v, *att, *o; /* activations, [BLOCK][HIDDEN] */
    float *acc, *mx, *den;              /* online softmax, per (row, head) */
    float *disk_buf;                    /* a host block read back from the disk tier (not tracked) */
    tally_t t;
} worker_t;

typedef struct request {
    uint64_t id;
    const char *tenant;
    int prompt_len, out_len;
    int tokens[MAX_TOKENS];
    int table[MAX_BLOCKS]; /* host blocks holding this request's full KV blocks */
    int nblocks;
    int nstored; /* of them, stored in the disk tier (the prompt's full blocks) */
    int ctx_len; /* tokens whose K/V is cached (host blocks + decode buffer) */
    int worker;
    uint32_t checksum; /* of the generated tokens: shows the run is deterministic */
    /* Its ledger: [0] its worker's, [1] the scheduler's share of the batch
       gathers (each written by one thread, read after both are done). */
    ledger_t led[2];
} request_t;

/* One batch transfer made for a wave of requests (memobs_request_xfer_split):
   its bytes, the requests' shares and the parts the engine gave them. */
typedef struct {
    uint64_t bytes;
    int n;
    uint64_t ids[MAX_WORKERS], shares[MAX_WORKERS], parts[MAX_WORKERS];
} split_t;

/* A wave: the requests [first, first + n), as many as there are workers.
   ready: how many have stored their prompt; done: the scheduler gathered
   them. Under wave_lock. */
typedef struct {
    int first, n, ready, done;
} wave_t;

/* The engine's own account of tracked memory, per memobs_mem_kind_t, kept
   under the lock of the allocator that hands that kind out. */
typedef struct {
    uint64_t current, peak, allocs, frees, alloc_bytes;
} mem_tally_t;

enum { MAX_DEV_BUFS = 48 };

static struct {
    float *arena; /* the "GPU" */
    float *embed, *unembed; /* device weights: [VOCAB][HIDDEN] */
    float *wq, *wk, *wv, *wo; /* [N_LAYERS][HIDDEN][HIDDEN] (in x out) */
    float *pool;  /* the host block pool: [N_CPU_BLOCKS][N_LAYERS][LB_FLOATS] */
    int free_blocks[N_CPU_BLOCKS];
    int nfree;
    pthread_mutex_t pool_lock;  /* the free list, and pinned records and tallies */
    pthread_mutex_t alloc_lock; /* device and host records and tallies */
    mem_tally_t mem[MEMOBS_MEM_KINDS];
    struct { float *p; size_t bytes; } dev_buf[MAX_DEV_BUFS]; /* tracked arena ranges */
    int ndev_buf;
    request_t req[N_REQUESTS];
    int next_req;
    pthread_mutex_t queue_lock;
    int n_workers;
    /* The scheduler (the main thread): in waves of n_workers requests, it
       gathers each wave's prompt blocks into the device prefix cache in one
       batch transfer (gather_wave). */
    pthread_mutex_t wave_lock;
    pthread_cond_t wave_cond;
    wave_t wave[N_REQUESTS];
    int nwaves;
    float *prefix_cache;  /* device: [n_workers * PREFIX_BLOCKS] host blocks */
    float *prefix_table;  /* device: PREFIX_TABLE int32s */
    tally_t sched;        /* the scheduler's copies */
    split_t split[N_REQUESTS]; /* one per wave */
    const worker_t *workers, *loader; /* for the engine's attributed figures */
    memobs_counter_t c_offloaded;
    const request_t *leaky; /* --leak: this request keeps its last host block */
    FILE *disk;             /* the disk tier: request i's block k at (i * MAX_BLOCKS + k) blocks */
    FILE *reports;          /* the run's reports, shown after the summary (or --reports FILE) */
    char reports_path[512];
    int reports_tmp;        /* reports_path is ours to remove */
} E;

static void die(const char *msg) {
    fprintf(stderr, "offload_engine: %s\n", msg);
    if (E.reports_tmp) remove(E.reports_path);
    exit(2);
}

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

/* The functions a kv_block's C stack runs through keep external linkage (a
   static function has no exported name, even with -rdynamic: it shows as
   module+offset) and a frame of their own (not inlined into the caller). */
#define STACK_FRAME __attribute__((noinline))
int pool_alloc(void);
void pool_free(int b);
void offload_buffer_to_cpu(worker_t *w, request_t *r, const float *buf);
void serve(worker_t *w, request_t *r);
void store_prefix(worker_t *w, request_t *r);
void check_prefix(worker_t *w, request_t *r);
void *worker_main(void *arg);
static void wave_ready(const struct request *r);
static void wave_wait(const struct request *r);

/* Caller holds the lock of the allocator of that kind. */
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

/* Device and pageable host memory from malloc, recorded and tallied under
   alloc_lock (a caching allocator holds its own lock here anyway). Record
   and tally under one lock: memobs and the engine then see the same order
   of allocs and frees, and so the same peak. The record comes after the
   malloc and the free's before the free: in between, another thread could
   be given the same address. */
static void *tracked_malloc(size_t bytes, memobs_mem_kind_t kind, const char *tag) {
    void *p = malloc(bytes);
    if (!p) die("out of memory");
    pthread_mutex_lock(&E.alloc_lock);
    MEMOBS_TRACK_ALLOC_N(p, bytes, kind, tag);
    mem_tally_alloc(kind, bytes);
    pthread_mutex_unlock(&E.alloc_lock);
    return p;
}

static void tracked_free(void *p, size_t bytes, memobs_mem_kind_t kind) {
    pthread_mutex_lock(&E.alloc_lock);
    MEMOBS_TRACK_FREE(p);
    mem_tally_free(kind, bytes);
    pthread_mutex_unlock(&E.alloc_lock);
    free(p);
}

/* A buffer carved from the device arena: a range of one malloc, but as far
   as memobs can tell a device allocation of its own (distinct address). */
static void dev_track(float *p, size_t bytes, const char *tag) {
    if (E.ndev_buf == MAX_DEV_BUFS) die("too many device buffers");
    E.dev_buf[E.ndev_buf].p = p;
    E.dev_buf[E.ndev_buf++].bytes = bytes;
    pthread_mutex_lock(&E.alloc_lock);
    MEMOBS_TRACK_ALLOC_N(p, bytes, MEMOBS_MEM_DEVICE, tag);
    mem_tally_alloc(MEMOBS_MEM_DEVICE, bytes);
    pthread_mutex_unlock(&E.alloc_lock);
}

/* Shut-down: every arena range goes back, newest first. */
static void dev_untrack_all(void) {
    pthread_mutex_lock(&E.alloc_lock);
    while (E.ndev_buf > 0) {
        E.ndev_buf--;
        MEMOBS_TRACK_FREE(E.dev_buf[E.ndev_buf].p);
        mem_tally_free(MEMOBS_MEM_DEVICE, E.dev_buf[E.ndev_buf].bytes);
    }
    pthread_mutex_unlock(&E.alloc_lock);
}

/* ======================================================================== */
/* Host block pool                                                          */
/* ======================================================================== */

static float *host_block(int b) { return E.pool + (size_t)b * N_LAYERS * LB_FLOATS; }

static float *host_layer_block(int b, int layer) { return host_block(b) + (size_t)layer * LB_FLOATS; }

/* A request takes a block: pinned memory in use from here to pool_free.
   The record carries a C stack (8 frames: here, offload_buffer_to_cpu,
   serve, worker_main, the thread start), so the reports show which code
   path holds pinned memory, not only how much. */
STACK_FRAME int pool_alloc(void) {
    int b;
    pthread_mutex_lock(&E.pool_lock);
    b = E.nfree > 0 ? E.free_blocks[--E.nfree] : -1;
    if (b >= 0) {
        MEMOBS_TRACK_ALLOC_NS(host_block(b), HOST_BLOCK_BYTES, MEMOBS_MEM_PINNED, "kv_block", 8);
        mem_tally_alloc(MEMOBS_MEM_PINNED, HOST_BLOCK_BYTES);
    }
    pthread_mutex_unlock(&E.pool_lock);
    if (b < 0) die("host block pool exhausted");
    return b;
}

STACK_FRAME void pool_free(int b) {
    pthread_mutex_lock(&E.pool_lock);
    MEMOBS_TRACK_FREE(host_block(b)); /* before the block can be handed out again */
    mem_tally_free(MEMOBS_MEM_PINNED, HOST_BLOCK_BYTES);
    E.free_blocks[E.nfree++] = b;
    pthread_mutex_unlock(&E.pool_lock);
}

/* ======================================================================== */
/* Copies: every memcpy between buffers is here, tallied and recorded      */
/* ======================================================================== */

/* A worker's copy: in its tallies and, while it serves a request (bound to
   it in memobs), in that request's ledger. */
static void tally(worker_t *w, memobs_dir_t dir, memobs_phase_t ph, size_t bytes) {
    ledger_t *l = w->cur ? &w->cur->led[0] : &w->own;
    w->t.bytes[ph][dir] += bytes;
    w->t.ops[ph][dir]++;
    l->bytes[ph][dir] += bytes;
    l->ops[ph][dir]++;
}

static void set_phase(worker_t *w, memobs_phase_t ph) {
    w->phase = ph;
    memobs_set_phase(ph);
}

/* Generic copies for code that does not know (or care) which phase it
   serves: memobs files them under the calling thread's current phase. */
static void copy_h2d(worker_t *w, void *dst, const void *src, size_t n) {
    memcpy(dst, src, n);
    MEMOBS_RECORD_H2D_CUR(n);
    tally(w, MEMOBS_DIR_H2D, w->phase, n);
}

static void copy_d2h(worker_t *w, void *dst, const void *src, size_t n) {
    memcpy(dst, src, n);
    MEMOBS_RECORD_D2H_CUR(n);
    tally(w, MEMOBS_DIR_D2H, w->phase, n);
}

/* K and V rows [0, n) of one layer-block into another: two memcpys, one op. */
static void copy_d2d_rows(worker_t *w, float *dst_lb, const float *src_lb, int n) {
    size_t half = (size_t)n * ROW_BYTES;
    memcpy(dst_lb, src_lb, half);
    memcpy(dst_lb + (size_t)BLOCK * HIDDEN, src_lb + (size_t)BLOCK * HIDDEN, half);
    MEMOBS_RECORD_D2D_CUR(2 * half);
    tally(w, MEMOBS_DIR_D2D, w->phase, 2 * half);
}

/* The nano-vllm entry points. These know their phase and say so. */

static float *slot_ptr(worker_t *w, int layer, int slot) {
    return w->slots + ((size_t)layer * N_SLOTS + (size_t)slot) * LB_FLOATS;
}

/* Used by both prefill and decode, hence the flag (as in nano-vllm). */
static float *load_to_slot_layer(worker_t *w, int layer, int slot, int host_block, int is_prefill) {
    float *dst = slot_ptr(w, layer, slot);
    memcpy(dst, host_layer_block(host_block, layer), LB_BYTES);
    MEMOBS_RECORD_H2D(LB_BYTES, is_prefill);
    tally(w, MEMOBS_DIR_H2D, is_prefill ? MEMOBS_PHASE_PREFILL : MEMOBS_PHASE_DECODE, LB_BYTES);
    return dst;
}

/* The chunk's K/V (rows [0, n) of w->k, w->v) into the prefill buffer. */
static void write_to_prefill_buffer(worker_t *w, int layer, int n) {
    float *lb = w->prefill_buf + (size_t)layer * LB_FLOATS;
    size_t half = (size_t)n * ROW_BYTES;
    memcpy(lb, w->k, half);
    memcpy(lb + (size_t)BLOCK * HIDDEN, w->v, half);
    MEMOBS_RECORD_D2D(2 * half, 1);
    tally(w, MEMOBS_DIR_D2D, MEMOBS_PHASE_PREFILL, 2 * half);
}

/* One token's K/V (row 0 of w->k, w->v) into row `row` of the decode buffer. */
static void write_to_decode_buffer(worker_t *w, int layer, int row) {
    float *lb = w->decode_buf + (size_t)layer * LB_FLOATS;
    memcpy(lb + (size_t)row * HIDDEN, w->k, ROW_BYTES);
    memcpy(lb + (size_t)(BLOCK + row) * HIDDEN, w->v, ROW_BYTES);
    MEMOBS_RECORD_D2D(2 * ROW_BYTES, 0);
    tally(w, MEMOBS_DIR_D2D, MEMOBS_PHASE_DECODE, 2 * ROW_BYTES);
}

/* A full device buffer (prefill or decode) becomes the request's next host
   block. Shared by both phases, so it leaves the phase to copy_d2h. */
STACK_FRAME void offload_buffer_to_cpu(worker_t *w, request_t *r, const float *buf) {
    int b = pool_alloc(), layer;
    for (layer = 0; layer < N_LAYERS; layer++) /* offload_slot_layer_to_cpu */
        copy_d2h(w, host_layer_block(b, layer), buf + (size_t)layer * LB_FLOATS, LB_BYTES);
    r->table[r->nblocks++] = b;
    memobs_counter_add(E.c_offloaded, 1);
    w->t.blocks_offloaded++;
}

/* ======================================================================== */
/* Model                                                                    */
/* ======================================================================== */

static void rmsnorm(float *out, const float *in, int n) {
    int i, j;
    for (i = 0; i < n; i++) {
        const float *a = in + (size_t)i * HIDDEN;
        float *b = out + (size_t)i * HIDDEN, ss = 0.0f, inv;
        for (j = 0; j < HIDDEN; j++) ss += a[j] * a[j];
        inv = 1.0f / sqrtf(ss / HIDDEN + 1e-5f);
        for (j = 0; j < HIDDEN; j++) b[j] = a[j] * inv;
    }
}

/* out[n][HIDDEN] = in[n][HIDDEN] . w[HIDDEN][HIDDEN]; j innermost so it vectorizes. */
static void matmul(float *out, const float *in, const float *w, int n) {
    int i, kk, j;
    for (i = 0; i < n; i++) {
        float *o = out + (size_t)i * HIDDEN;
        const float *a = in + (size_t)i * HIDDEN;
        memset(o, 0, ROW_BYTES);
        for (kk = 0; kk < HIDDEN; kk++) {
            const float *wr = w + (size_t)kk * HIDDEN;
            float s = a[kk];
            for (j = 0; j < HIDDEN; j++) o[j] += s * wr[j];
        }
    }
}

/* Token embedding plus a sinusoidal position code, rows [0, n). */
static void embed_tokens(worker_t *w, const int *tok, int pos0, int n) {
    int i, j;
    for (i = 0; i < n; i++) {
        const float *e = E.embed + (size_t)tok[i] * HIDDEN;
        float *x = w->x + (size_t)i * HIDDEN;
        for (j = 0; j < HIDDEN; j += 2) {
            float f = (float)(pos0 + i) * powf(10000.0f, -(float)j / HIDDEN);
            x[j] = e[j] + 0.5f * sinf(f);
            x[j + 1] = e[j + 1] + 0.5f * cosf(f);
        }
    }
}

static void attn_init(worker_t *w, int n) {
    int i;
    memset(w->acc, 0, (size_t)n * ROW_BYTES);
    for (i = 0; i < n * N_HEADS; i++) {
        w->mx[i] = -INFINITY;
        w->den[i] = 0.0f;
    }
}

/* Folds nkeys keys of one layer-block into the running softmax of query rows
   [0, n) (flash-attention style, so a block can be dropped after use). With
   causal, query row i sees keys [0, i]; else it sees all nkeys. */
static void attn_block(worker_t *w, const float *lb, int n, int nkeys, int causal) {
    const float *K = lb, *V = lb + (size_t)BLOCK * HIDDEN;
    const float scale = 1.0f / sqrtf((float)HEAD_DIM);
    uint64_t pairs = 0, flops;
    int i, hd, j, d;
    for (i = 0; i < n; i++) {
        int nk = causal ? i + 1 : nkeys;
        pairs += (uint64_t)nk;
        for (hd = 0; hd < N_HEADS; hd++) {
            const float *q = w->q + (size_t)i * HIDDEN + hd * HEAD_DIM;
            float *acc = w->acc + (size_t)i * HIDDEN + hd * HEAD_DIM;
            float *m = &w->mx[i * N_HEADS + hd], *l = &w->den[i * N_HEADS + hd];
            float s[BLOCK], bmax = -INFINITY;
            for (j = 0; j < nk; j++) {
                const float *kr = K + (size_t)j * HIDDEN + hd * HEAD_DIM;
                float dot = 0.0f;
                for (d = 0; d < HEAD_DIM; d++) dot += q[d] * kr[d];
                s[j] = dot * scale;
                if (s[j] > bmax) bmax = s[j];
            }
            if (bmax > *m) { /* new running max: rescale what was summed so far */
                float c = expf(*m - bmax);
                for (d = 0; d < HEAD_DIM; d++) acc[d] *= c;
                *l *= c;
                *m = bmax;
            }
            for (j = 0; j < nk; j++) {
                const float *vr = V + (size_t)j * HIDDEN + hd * HEAD_DIM;
                float p = expf(s[j] - *m);
                *l += p;
                for (d = 0; d < HEAD_DIM; d++) acc[d] += p * vr[d];
            }
        }
    }
    /* q.k and p*v: a multiply and an add per element each, per head. */
    flops = pairs * N_HEADS * 4 * HEAD_DIM;
    MEMOBS_COUNTER_ADD("attention_flops", flops);
    w->t.attention_flops += flops;
}

/* A row is [N_HEADS][HEAD_DIM], so element e belongs to (row, head) e / HEAD_DIM. */
static void attn_finish(worker_t *w, int n) {
    size_t e;
    for (e = 0; e < (size_t)n * HIDDEN; e++) w->att[e] = w->acc[e] / w->den[e / HEAD_DIM];
}

/* Runs rows [0, n) of w->x (tokens at positions ctx_len..ctx_len+n-1)
   through every layer. Prefill: n tokens of a block-aligned chunk, whose
   K/V goes to the prefill buffer. Decode: one token, into the decode buffer
   after the tail already there. Earlier tokens are all in host blocks. */
static void forward(worker_t *w, request_t *r, int n, int is_prefill) {
    int layer, blk;
    size_t e;
    int tail = r->ctx_len % BLOCK; /* decode: rows already in the decode buffer */
    for (layer = 0; layer < N_LAYERS; layer++) {
        size_t wl = (size_t)layer * HIDDEN * HIDDEN;
        const float *local;
        rmsnorm(w->h, w->x, n);
        matmul(w->q, w->h, E.wq + wl, n);
        matmul(w->k, w->h, E.wk + wl, n);
        matmul(w->v, w->h, E.wv + wl, n);
        if (is_prefill) {
            write_to_prefill_buffer(w, layer, n);
            local = w->prefill_buf + (size_t)layer * LB_FLOATS;
        } else {
            write_to_decode_buffer(w, layer, tail);
            local = w->decode_buf + (size_t)layer * LB_FLOATS;
        }
        attn_init(w, n);
        /* The ring lets a real engine load slot b+1 while computing on slot
           b; here the copies are synchronous but the layout is the same. */
        for (blk = 0; blk < r->nblocks; blk++) {
            const float *lb = load_to_slot_layer(w, layer, blk % N_SLOTS, r->table[blk], is_prefill);
            attn_block(w, lb, n, BLOCK, 0);
        }
        if (is_prefill) attn_block(w, local, n, n, 1);
        else attn_block(w, local, 1, tail + 1, 0);
        attn_finish(w, n);
        matmul(w->o, w->att, E.wo + wl, n);
        for (e = 0; e < (size_t)n * HIDDEN; e++) w->x[e] += w->o[e]; /* residual */
    }
    r->ctx_len += n;
}

/* Greedy next token from row `row` of w->x. A separate output matrix: tied
   to the input embedding, this toy's residual stream just echoes its input.
   The logits are per-step scratch from the device allocator, as a framework
   hands out a fresh logits tensor each step. */
static int sample(worker_t *w, int row) {
    float *logits = (float *)tracked_malloc((size_t)VOCAB * sizeof(float), MEMOBS_MEM_DEVICE, "logits");
    int t, j, best = 0;
    rmsnorm(w->h, w->x + (size_t)row * HIDDEN, 1);
    for (t = 0; t < VOCAB; t++) {
        const float *e = E.unembed + (size_t)t * HIDDEN;
        float s = 0.0f;
        for (j = 0; j < HIDDEN; j++) s += e[j] * w->h[j];
        logits[t] = s;
        if (s > logits[best]) best = t;
    }
    tracked_free(logits, (size_t)VOCAB * sizeof(float), MEMOBS_MEM_DEVICE);
    return best;
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

STACK_FRAME void serve(worker_t *w, request_t *r) {
    int pos, k, n = 0;
    r->worker = w->id;
    /* From here to the end, every copy and disk transfer this thread
       records is r's (and in r's ledger: tally). */
    memobs_request_enter(r->id);
    w->cur = r;
    set_phase(w, MEMOBS_PHASE_PREFILL);
    for (pos = 0; pos < r->prompt_len; pos += n) {
        n = r->prompt_len - pos < BLOCK ? r->prompt_len - pos : BLOCK;
        MEMOBS_REGION_BEGIN("prefill_chunk"); /* regions name what the engine does, in every output */
        embed_tokens(w, r->tokens + pos, pos, n);
        forward(w, r, n, 1);
        if (n == BLOCK) {
            MEMOBS_REGION_BEGIN("kv_offload");
            offload_buffer_to_cpu(w, r, w->prefill_buf); /* offload_prefill_buffer */
            MEMOBS_REGION_END();
        } else {
            /* A partial last chunk stays on the device: it seeds the decode buffer. */
            int layer;
            for (layer = 0; layer < N_LAYERS; layer++)
                copy_d2d_rows(w, w->decode_buf + (size_t)layer * LB_FLOATS,
                              w->prefill_buf + (size_t)layer * LB_FLOATS, n);
        }
        MEMOBS_REGION_END();
    }
    store_prefix(w, r);
    wave_ready(r);
    emit_token(w, r, sample(w, n - 1), 0);

    set_phase(w, MEMOBS_PHASE_DECODE);
    for (k = 1; k < r->out_len; k++) {
        pos = r->prompt_len + k - 1; /* feed the last generated token */
        MEMOBS_REGION_BEGIN("decode_step");
        embed_tokens(w, r->tokens + pos, pos, 1);
        forward(w, r, 1, 0);
        if (r->ctx_len % BLOCK == 0) {
            MEMOBS_REGION_BEGIN("kv_offload");
            offload_buffer_to_cpu(w, r, w->decode_buf);
            MEMOBS_REGION_END();
        }
        emit_token(w, r, sample(w, 0), k);
        MEMOBS_REGION_END();
    }
    /* Its blocks stay in the pool, and its ledger open, until the
       scheduler's gather has read them. */
    wave_wait(r);
    check_prefix(w, r);
    memobs_request_end(r->id);
    memobs_request_leave();
    w->cur = NULL;

    set_phase(w, MEMOBS_PHASE_NONE);
    if (r == &E.req[N_REQUESTS - 1]) {
        /* The last request, finished but still holding its host blocks (and
           the other worker may hold some too): who holds memory now. */
        fprintf(E.reports, "offload_engine: request %llu done, %d host blocks not yet back in the pool:\n",
                (unsigned long long)r->id, r->nblocks);
        fflush(E.reports); /* the file is shared with the peak report's appends */
        memobs_print_alloc_groups(E.reports);
        fflush(E.reports);
    }
    for (k = 0; k < r->nblocks; k++) {
        if (r == E.leaky && k == r->nblocks - 1) continue; /* --leak: never given back */
        pool_free(r->table[k]);
    }
}

/* ======================================================================== */
/* The disk tier: waited for, timed by the engine                          */
/* ======================================================================== */

static off_t disk_offset(const request_t *r, int k) {
    return (off_t)(((size_t)(r - E.req) * MAX_BLOCKS + (size_t)k) * HOST_BLOCK_BYTES);
}

/* One host block to or from the disk tier (H2S: a store, S2H: a load),
   recorded with the time the engine waited for it. */
static void disk_xfer(worker_t *w, memobs_dir_t dir, float *block, off_t off) {
    uint64_t t0 = memobs_now_ns(), ns;
    ssize_t n = dir == MEMOBS_DIR_H2S ? pwrite(fileno(E.disk), block, HOST_BLOCK_BYTES, off)
                                      : pread(fileno(E.disk), block, HOST_BLOCK_BYTES, off);
    if (n != (ssize_t)HOST_BLOCK_BYTES) die(dir == MEMOBS_DIR_H2S ? "disk tier: short write" : "disk tier: short read");
    ns = memobs_now_ns() - t0;
    if (ns == 0) ns = 1; /* a clock too coarse to see it: timed, not untimed */
    memobs_record_xfer_ns(dir, HOST_BLOCK_BYTES, w->phase, ns);
    tally(w, dir, w->phase, HOST_BLOCK_BYTES);
    w->t.ns[w->phase][dir] += ns;
    if (w->cur) w->cur->led[0].ns[dir] += ns; /* bound: memobs files the wait under the request too */
}

/* End of prefill: the prompt's full blocks go to the disk tier. */
STACK_FRAME void store_prefix(worker_t *w, request_t *r) {
    int k;
    MEMOBS_REGION_BEGIN("disk_store");
    for (k = 0; k < r->nblocks; k++)
        disk_xfer(w, MEMOBS_DIR_H2S, E.pool + (size_t)r->table[k] * (HOST_BLOCK_BYTES / sizeof(float)),
                  disk_offset(r, k));
    r->nstored = r->nblocks;
    MEMOBS_REGION_END();
}

/* End of decode: the first stored block comes back, equal to the pool's. */
STACK_FRAME void check_prefix(worker_t *w, request_t *r) {
    if (!r->nstored) return;
    MEMOBS_REGION_BEGIN("disk_load");
    disk_xfer(w, MEMOBS_DIR_S2H, w->disk_buf, disk_offset(r, 0));
    if (memcmp(w->disk_buf, E.pool + (size_t)r->table[0] * (HOST_BLOCK_BYTES / sizeof(float)), HOST_BLOCK_BYTES))
        die("disk tier: a block read back differs from the pool's");
    MEMOBS_REGION_END();
}

/* ======================================================================== */
/* The scheduler: a batch transfer for a wave of requests                   */
/* ======================================================================== */

static wave_t *wave_of(const request_t *r) { return &E.wave[(int)(r - E.req) / E.n_workers]; }

/* r has stored its prompt: its full blocks are in the pool for good. */
static void wave_ready(const request_t *r) {
    pthread_mutex_lock(&E.wave_lock);
    wave_of(r)->ready++;
    pthread_cond_broadcast(&E.wave_cond);
    pthread_mutex_unlock(&E.wave_lock);
}

/* Before r ends. It cannot wait forever: the queue hands out every
   request of a wave before any of the next, and nothing waits before
   wave_ready, so the waves become ready, and are gathered, in order. */
static void wave_wait(const request_t *r) {
    wave_t *v = wave_of(r);
    pthread_mutex_lock(&E.wave_lock);
    while (!v->done) pthread_cond_wait(&E.wave_cond, &E.wave_lock);
    pthread_mutex_unlock(&E.wave_lock);
}

/* Part i of a transfer of `bytes` shared by shares[0..n): the difference
   of the rounded cumulative shares, floor(bytes x C_i / S) - floor(bytes x
   C_(i-1) / S), C_i = shares[0] + ... + shares[i], S their sum (all 0:
   equal shares), the rule memobs_request_xfer_split documents; written
   out here so the engine's ledger does not come from memobs. bytes x C_i
   fits in 64 bits: a wave's gather is under 2^25 bytes, C_i under 2^8. */
static uint64_t split_part(uint64_t bytes, const uint64_t *shares, int n, int i) {
    uint64_t sum = 0, cum = 0, prev = 0;
    int j;
    for (j = 0; j < n; j++) sum += shares[j];
    for (j = 0; j <= i; j++) {
        prev = cum;
        cum += sum ? shares[j] : 1u;
    }
    if (!sum) sum = (uint64_t)n;
    return bytes * cum / sum - bytes * prev / sum;
}

/* Once every request of wave v has stored its prompt, one batch transfer
   brings the wave's prompt blocks into the device prefix cache (H2D): on a
   GPU one gather launch reads the wave's table (n + 1 offsets, then a
   block number per block) and copies the blocks it names, so table and
   blocks are one transfer, made for n requests at once from this thread.
   memobs_request_xfer_split shares it by the requests' block counts; the
   table's offsets make the bytes no multiple of the blocks, so the parts
   show the rounding. Filed under prefill: it is the prompts' KV. */
static void gather_wave(int v) {
    wave_t *wv = &E.wave[v];
    split_t *sp = &E.split[v];
    int32_t table[PREFIX_TABLE];
    int i, k, nb = 0;
    size_t tbytes;
    pthread_mutex_lock(&E.wave_lock);
    while (wv->ready < wv->n) pthread_cond_wait(&E.wave_cond, &E.wave_lock);
    pthread_mutex_unlock(&E.wave_lock);
    sp->n = wv->n;
    for (i = 0; i < wv->n; i++) {
        const request_t *r = &E.req[wv->first + i];
        table[i] = nb;
        for (k = 0; k < r->nstored; k++) table[wv->n + 1 + nb++] = r->table[k];
        sp->ids[i] = r->id;
        sp->shares[i] = (uint64_t)r->nstored;
    }
    table[wv->n] = nb;
    tbytes = (size_t)(wv->n + 1 + nb) * sizeof(int32_t);
    memcpy(E.prefix_table, table, tbytes);
    for (k = 0; k < nb; k++)
        memcpy(E.prefix_cache + (size_t)k * (HOST_BLOCK_BYTES / sizeof(float)), host_block(table[wv->n + 1 + k]),
               HOST_BLOCK_BYTES);
    sp->bytes = tbytes + (uint64_t)nb * HOST_BLOCK_BYTES;
    if (memobs_request_xfer_split(sp->ids, sp->shares, (size_t)sp->n, MEMOBS_DIR_H2D, sp->bytes,
                                  MEMOBS_PHASE_PREFILL) != MEMOBS_OK)
        die("memobs_request_xfer_split refused the gather");
    E.sched.bytes[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_H2D] += sp->bytes;
    E.sched.ops[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_H2D]++;
    for (i = 0; i < sp->n; i++) {
        ledger_t *l = &E.req[wv->first + i].led[1];
        sp->parts[i] = split_part(sp->bytes, sp->shares, sp->n, i);
        l->bytes[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_H2D] += sp->parts[i];
        l->ops[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_H2D]++; /* one operation in each request's ledger */
    }
    for (k = 0; k < nb; k++)
        if (memcmp(E.prefix_cache + (size_t)k * (HOST_BLOCK_BYTES / sizeof(float)),
                   host_block(table[wv->n + 1 + k]), HOST_BLOCK_BYTES))
            die("prefix cache: a gathered block differs from the pool's");
    pthread_mutex_lock(&E.wave_lock);
    wv->done = 1;
    pthread_cond_broadcast(&E.wave_cond);
    pthread_mutex_unlock(&E.wave_lock);
}

static request_t *next_request(void) {
    request_t *r = NULL;
    pthread_mutex_lock(&E.queue_lock);
    if (E.next_req < N_REQUESTS) r = &E.req[E.next_req++];
    pthread_mutex_unlock(&E.queue_lock);
    return r;
}

STACK_FRAME void *worker_main(void *arg) {
    worker_t *w = (worker_t *)arg;
    request_t *r;
    while ((r = next_request()) != NULL) serve(w, r);
    return NULL;
}

/* ======================================================================== */
/* Set-up                                                                   */
/* ======================================================================== */

/* Bump allocator over the device arena, in 64-byte steps. With no arena
   yet it only measures, so the layout is written down once; with the arena
   each buffer becomes a tracked device allocation tagged `tag`. */
static float *dev_take(size_t *used, size_t nfloats, const char *tag) {
    float *p = E.arena ? E.arena + *used : NULL;
    if (p) dev_track(p, nfloats * sizeof(float), tag);
    *used += (nfloats + 15) & ~(size_t)15;
    return p;
}

static void carve_device(worker_t *workers, size_t *used) {
    const size_t act = (size_t)BLOCK * HIDDEN, sm = (size_t)BLOCK * N_HEADS; /* both multiples of 16 */
    int i;
    *used = 0;
    E.embed = dev_take(used, (size_t)VOCAB * HIDDEN, "weights");
    E.unembed = dev_take(used, (size_t)VOCAB * HIDDEN, "weights");
    E.wq = dev_take(used, (size_t)N_LAYERS * HIDDEN * HIDDEN, "weights");
    E.wk = dev_take(used, (size_t)N_LAYERS * HIDDEN * HIDDEN, "weights");
    E.wv = dev_take(used, (size_t)N_LAYERS * HIDDEN * HIDDEN, "weights");
    E.wo = dev_take(used, (size_t)N_LAYERS * HIDDEN * HIDDEN, "weights");
    /* The prefix cache: a wave's prompt blocks, and their table (int32s, in
       float-sized words). */
    E.prefix_cache = dev_take(used, (size_t)E.n_workers * PREFIX_BLOCKS * (HOST_BLOCK_BYTES / sizeof(float)),
                              "prefix_cache");
    E.prefix_table = dev_take(used, PREFIX_TABLE, "prefix_cache");
    for (i = 0; i < E.n_workers; i++) {
        worker_t *w = &workers[i];
        float *ws;
        w->id = i;
        w->slots = dev_take(used, (size_t)N_LAYERS * N_SLOTS * LB_FLOATS, "kv_slots");
        w->prefill_buf = dev_take(used, (size_t)N_LAYERS * LB_FLOATS, "prefill_buffer");
        w->decode_buf = dev_take(used, (size_t)N_LAYERS * LB_FLOATS, "decode_buffer");
        /* One workspace per worker for the activations. */
        ws = dev_take(used, 8 * act + 2 * sm, "activations");
        if (!ws) continue; /* measuring */
        w->x = ws;
        w->h = ws + act;
        w->q = ws + 2 * act;
        w->k = ws + 3 * act;
        w->v = ws + 4 * act;
        w->att = ws + 5 * act;
        w->o = ws + 6 * act;
        w->acc = ws + 7 * act;
        w->mx = ws + 8 * act;
        w->den = ws + 8 * act + sm;
    }
}

/* Weights are made on the host and uploaded before serving starts: no
   phase is set, so memobs files these copies as "unphased". */
static void load_weights(worker_t *loader) {
    const size_t mat = (size_t)HIDDEN * HIDDEN, nemb = (size_t)VOCAB * HIDDEN;
    const size_t staging = (nemb > mat ? nemb : mat) * sizeof(float);
    float *host = (float *)tracked_malloc(staging, MEMOBS_MEM_HOST, "weights_staging");
    float *dst[4];
    uint64_t seed = 0x5eed0001u;
    size_t i;
    int m, layer;
    dst[0] = E.wq; dst[1] = E.wk; dst[2] = E.wv; dst[3] = E.wo;
    for (i = 0; i < nemb; i++) host[i] = rng_unit(&seed);
    copy_h2d(loader, E.embed, host, nemb * sizeof(float));
    for (i = 0; i < nemb; i++) host[i] = rng_unit(&seed);
    copy_h2d(loader, E.unembed, host, nemb * sizeof(float));
    for (m = 0; m < 4; m++)
        for (layer = 0; layer < N_LAYERS; layer++) {
            /* uniform [-a, a) has variance a^2/3: this a keeps outputs near unit scale */
            for (i = 0; i < mat; i++) host[i] = rng_unit(&seed) * sqrtf(3.0f / HIDDEN);
            copy_h2d(loader, dst[m] + (size_t)layer * mat, host, mat * sizeof(float));
        }
    tracked_free(host, staging, MEMOBS_MEM_HOST);
}

/* The requests, their tenants (three customers of the service) and the
   scheduler's waves (as many requests as workers). */
static void make_requests(void) {
    static const char *const tenants[3] = {"acme", "globex", "initech"};
    uint64_t seed = 0x1234abcdu;
    int i, j;
    for (i = 0; i < N_REQUESTS; i += E.n_workers) {
        E.wave[E.nwaves].first = i;
        E.wave[E.nwaves++].n = N_REQUESTS - i < E.n_workers ? N_REQUESTS - i : E.n_workers;
    }
    for (i = 0; i < N_REQUESTS; i++) {
        request_t *r = &E.req[i];
        uint64_t ts = 0x70c0000u + (uint64_t)i;
        memset(r, 0, sizeof *r);
        r->id = 100 + (uint64_t)i;
        r->tenant = tenants[i % 3];
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

static const char *const dir_name[MEMOBS_DIRS] = {"h2d", "d2h", "d2d", "h2s", "s2h", "d2s", "s2d"};

static void cross_check(const tally_t *t) {
    static const char *const pname[4] = {"unphased", "prefill", "decode", "total"};
    memobs_summary_t *s = (memobs_summary_t *)malloc(sizeof *s);
    const memobs_track_problems_t *tp;
    char what[64];
    int p, d, k;
    if (!s) die("out of memory");
    memobs_get_summary(s);
    for (p = 0; p < 4; p++) {
        const memobs_dirs_t *md = p == 0 ? &s->unphased : p == 1 ? &s->prefill : p == 2 ? &s->decode : &s->total;
        for (d = 0; d < MEMOBS_DIRS; d++) {
            const memobs_xfer_t *x = memobs_dirs_get(md, (unsigned)d);
            uint64_t b = 0, n = 0, tb = 0, tn = 0, tns = 0;
            int q;
            for (q = 0; q < 3; q++) {
                if (p != 3 && q != p) continue;
                b += t->bytes[q][d];
                n += t->ops[q][d];
                if (t->ns[q][d]) { /* the timed ones: the disk tier's */
                    tb += t->bytes[q][d];
                    tn += t->ops[q][d];
                    tns += t->ns[q][d];
                }
            }
            snprintf(what, sizeof what, "%s %s bytes", pname[p], dir_name[d]);
            expect(what, x->bytes, b);
            snprintf(what, sizeof what, "%s %s ops", pname[p], dir_name[d]);
            expect(what, x->count, n);
            if (p < 3) {
                snprintf(what, sizeof what, "%s %s timed bytes, ops, ns", pname[p], dir_name[d]);
                expect(what, s->timed[p][d].bytes + s->timed[p][d].count + s->timed[p][d].ns, tb + tn + tns);
            }
        }
    }
    /* every disk transfer is one host block: one size bucket, (128 KiB, 256 KiB] */
    for (d = MEMOBS_DIR_H2S; d <= MEMOBS_DIR_S2H; d++) {
        snprintf(what, sizeof what, "%s records of 192 KiB in the 256 KiB bucket", dir_name[d]);
        expect(what, s->sizes[d].buckets[18], s->sizes[d].count);
    }
    expect("requests begun", s->requests_begun, N_REQUESTS);
    expect("requests completed", s->requests_completed, N_REQUESTS);
    expect("requests in flight", s->requests_in_flight, 0);
    expect("ttft samples", s->ttft.count, N_REQUESTS);
    expect("tpot samples", s->tpot.count, t->tokens - N_REQUESTS);
    expect("e2e samples", s->e2e.count, N_REQUESTS);
    expect("problems", s->requests_dropped + s->requests_unknown + s->requests_duplicate + s->ttft_unmatched +
           s->tpot_unarmed + s->bad_records + s->untracked_threads, 0);
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
    }
    /* The pool's free list, not the tally: every block a request took came
       back, but for the one --leak keeps. */
    expect("pinned live == host blocks out of the pool", s->mem[MEMOBS_MEM_PINNED].live,
           (uint64_t)(N_CPU_BLOCKS - E.nfree));
    expect("tracking", (uint64_t)s->tracking, 1);
    tp = &s->track;
    expect("tracker problems", tp->frees_unknown + tp->frees_double + tp->frees_null + tp->allocs_null +
           tp->allocs_zero + tp->allocs_duplicate + tp->allocs_bad_kind + tp->untracked + tp->untracked_live +
           tp->untracked_frees + tp->traces_dropped, 0);
    free(s);
}

/* ======================================================================== */
/* What the demo prints, and where                                          */
/* ======================================================================== */

/* The reports written during the run (the peak report, by memobs; the
   allocations by trace, by the last request's worker) go to one file, so
   that the summary comes first: --reports FILE keeps them there, else a
   temporary file is copied to stderr after the summary. The peak report
   appends to the path, so the engine's FILE appends too. */
static void open_reports(const char *path) {
    FILE *f;
    if (path) {
        if (strlen(path) >= sizeof E.reports_path || strchr(path, '%')) die("--reports: a path without %, please");
        strcpy(E.reports_path, path);
        if (!(f = fopen(path, "w")) || fclose(f) != 0) die("--reports: cannot create the file");
    } else {
        const char *dir = getenv("TMPDIR");
        int fd;
        if (!dir || !*dir || strchr(dir, '%')) dir = "/tmp";
        if ((size_t)snprintf(E.reports_path, sizeof E.reports_path, "%s/offload_engine.XXXXXX", dir) >=
            sizeof E.reports_path)
            die("TMPDIR is too long");
        if ((fd = mkstemp(E.reports_path)) < 0) die("cannot create a temporary file for the run's reports");
        close(fd);
        E.reports_tmp = 1;
    }
    if (!(E.reports = fopen(E.reports_path, "a"))) die("cannot open the reports file");
}

static void close_reports(const char *path) {
    char chunk[4096];
    size_t n;
    fclose(E.reports);
    E.reports = NULL;
    if (path) {
        fprintf(stderr, "offload_engine: the peak report and the allocations by trace: %s\n", path);
        return;
    }
    {
        FILE *f = fopen(E.reports_path, "r");
        if (!f) die("cannot read the reports file back");
        while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) fwrite(chunk, 1, n, stderr);
        fclose(f);
    }
    remove(E.reports_path);
    E.reports_tmp = 0;
}

/* A tally of a direction d: p 0 the total, 1 prefill, 2 decode, 3
   unphased (memobs phase 0). */
static uint64_t tally_of(const uint64_t v[3][MEMOBS_DIRS], int p, int d) {
    return p == 0 ? v[0][d] + v[1][d] + v[2][d] : v[p == 3 ? 0 : p][d];
}

/* --tallies FILE: one line, "engine tallies: key=value ...", for
   tests/docs/test_demo.sh: the copies (total and per phase), requests, counters,
   then per memory kind. */
static void write_tallies(FILE *f, const tally_t *t) {
    static const char *const pre[4] = {"", "prefill_", "decode_", "unphased_"};
    int p, d, k;
    fprintf(f, "engine tallies:");
    for (p = 0; p < 4; p++)
        for (d = 0; d < MEMOBS_DIRS; d++)
            fprintf(f, " %s%s=%llu %s%s_ops=%llu", pre[p], dir_name[d], (unsigned long long)tally_of(t->bytes, p, d),
                    pre[p], dir_name[d], (unsigned long long)tally_of(t->ops, p, d));
    fprintf(f, " requests=%d tokens=%llu kv_blocks_offloaded=%llu attention_flops=%llu", N_REQUESTS,
            (unsigned long long)t->tokens, (unsigned long long)t->blocks_offloaded,
            (unsigned long long)t->attention_flops);
    for (k = 0; k < MEMOBS_MEM_KINDS; k++) {
        const mem_tally_t *m = &E.mem[k];
        if (k == MEMOBS_MEM_MANAGED) continue; /* the engine has none */
        fprintf(f, " %s_current_bytes=%llu %s_peak_bytes=%llu %s_live=%llu %s_allocs=%llu %s_frees=%llu"
                   " %s_alloc_bytes=%llu", kind_name[k], (unsigned long long)m->current, kind_name[k],
                (unsigned long long)m->peak, kind_name[k], (unsigned long long)(m->allocs - m->frees),
                kind_name[k], (unsigned long long)m->allocs, kind_name[k], (unsigned long long)m->frees,
                kind_name[k], (unsigned long long)m->alloc_bytes);
    }
    fprintf(f, "\n");
}

/* ======================================================================== */
/* Attribution: the engine's ledgers beside memobs'                         */
/* ======================================================================== */

static const char *const phase_name[3] = {"unphased", "prefill", "decode"};

/* Request r's whole ledger: its worker's part and the scheduler's. */
static void ledger_of(const request_t *r, ledger_t *l) {
    int p, d;
    *l = r->led[0];
    for (p = 0; p < 3; p++)
        for (d = 0; d < MEMOBS_DIRS; d++) {
            l->bytes[p][d] += r->led[1].bytes[p][d];
            l->ops[p][d] += r->led[1].ops[p][d];
        }
}

static uint64_t ledger_bytes(const ledger_t *l) {
    uint64_t b = 0;
    int p, d;
    for (p = 0; p < 3; p++)
        for (d = 0; d < MEMOBS_DIRS; d++) b += l->bytes[p][d];
    return b;
}

/* The engine's attributed figures, counted as memobs counts them: bytes
   and operations its workers made bound to a request, plus each batch
   gather once (one operation, however many requests share it); and its
   unattributed ones, the copies bound to none (the weights' upload). */
static void engine_attributed(ledger_t *att, ledger_t *unatt) {
    int i, p, d;
    memset(att, 0, sizeof *att);
    *unatt = E.loader->own;
    for (i = 0; i < N_REQUESTS; i++)
        for (p = 0; p < 3; p++)
            for (d = 0; d < MEMOBS_DIRS; d++) {
                att->bytes[p][d] += E.req[i].led[0].bytes[p][d];
                att->ops[p][d] += E.req[i].led[0].ops[p][d];
            }
    for (p = 0; p < 3; p++)
        for (d = 0; d < MEMOBS_DIRS; d++) {
            att->bytes[p][d] += E.sched.bytes[p][d];
            att->ops[p][d] += E.sched.ops[p][d];
            for (i = 0; i < E.n_workers; i++) {
                unatt->bytes[p][d] += E.workers[i].own.bytes[p][d];
                unatt->ops[p][d] += E.workers[i].own.ops[p][d];
            }
        }
}

static void json_phases(FILE *f, const uint64_t bytes[3][MEMOBS_DIRS], const uint64_t ops[3][MEMOBS_DIRS]) {
    int p, d;
    fprintf(f, "{");
    for (p = 0; p < 3; p++) {
        fprintf(f, "%s\"%s\":{", p ? "," : "", phase_name[p]);
        for (d = 0; d < MEMOBS_DIRS; d++)
            fprintf(f, "%s\"%s\":[%llu,%llu]", d ? "," : "", dir_name[d], (unsigned long long)bytes[p][d],
                    (unsigned long long)ops[p][d]);
        fprintf(f, "}");
    }
    fprintf(f, "}");
}

static void json_u64s(FILE *f, const char *key, const uint64_t *v, int n) {
    int i;
    fprintf(f, ",\"%s\":[", key);
    for (i = 0; i < n; i++) fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)v[i]);
    fprintf(f, "]");
}

/* --ledger FILE: the engine's own ledger of each request, one JSON line
   each in the shape of memobs' request lines (MEMOBS_REQUESTS): id,
   tenant, tokens, and per direction bytes, ops, [bytes, ops] per phase and
   engine_ns (the time it gave memobs with the request's timed transfers);
   then one line "engine": its attributed and unattributed figures by phase
   and direction ([bytes, ops]) and each batch gather's split (bytes, ids,
   shares, the parts it gave). */
static void write_ledger(FILE *f) {
    ledger_t l, att, unatt;
    int i, p, d;
    for (i = 0; i < N_REQUESTS; i++) {
        const request_t *r = &E.req[i];
        ledger_of(r, &l);
        fprintf(f, "{\"id\":%llu,\"tenant\":\"%s\",\"tokens\":%d,\"xfer\":{", (unsigned long long)r->id, r->tenant,
                r->out_len);
        for (d = 0; d < MEMOBS_DIRS; d++) {
            uint64_t b = 0, n = 0;
            for (p = 0; p < 3; p++) {
                b += l.bytes[p][d];
                n += l.ops[p][d];
            }
            fprintf(f, "%s\"%s\":{\"bytes\":%llu,\"ops\":%llu", d ? "," : "", dir_name[d], (unsigned long long)b,
                    (unsigned long long)n);
            for (p = 0; p < 3; p++)
                fprintf(f, ",\"%s\":[%llu,%llu]", phase_name[p], (unsigned long long)l.bytes[p][d],
                        (unsigned long long)l.ops[p][d]);
            fprintf(f, ",\"engine_ns\":%llu}", (unsigned long long)l.ns[d]);
        }
        fprintf(f, "}}\n");
    }
    engine_attributed(&att, &unatt);
    fprintf(f, "{\"engine\":{\"attributed\":");
    json_phases(f, (const uint64_t(*)[MEMOBS_DIRS])att.bytes, (const uint64_t(*)[MEMOBS_DIRS])att.ops);
    fprintf(f, ",\"unattributed\":");
    json_phases(f, (const uint64_t(*)[MEMOBS_DIRS])unatt.bytes, (const uint64_t(*)[MEMOBS_DIRS])unatt.ops);
    fprintf(f, ",\"splits\":[");
    for (i = 0; i < E.nwaves; i++) {
        const split_t *sp = &E.split[i];
        fprintf(f, "%s{\"dir\":\"h2d\",\"phase\":\"prefill\",\"bytes\":%llu", i ? "," : "",
                (unsigned long long)sp->bytes);
        json_u64s(f, "ids", sp->ids, sp->n);
        json_u64s(f, "shares", sp->shares, sp->n);
        json_u64s(f, "parts", sp->parts, sp->n);
        fprintf(f, "}");
    }
    fprintf(f, "]}}\n");
}

/* --attributed FILE: memobs' attributed figures (memobs_summary_t.attributed),
   one JSON line, for the test: keyed as the JSON summary's phases
   ("h2d_bytes", "h2d_count", ...), plus orphan_bytes, bind_misuse and
   tenant_misuse. */
static void write_attributed(FILE *f, const memobs_summary_t *s) {
    static const char *const pname[4] = {"total", "prefill", "decode", "unphased"};
    int p, d;
    fprintf(f, "{");
    for (p = 0; p < 4; p++) {
        const memobs_dirs_t *md = p == 0 ? &s->attributed.total : p == 1 ? &s->attributed.prefill
                                : p == 2 ? &s->attributed.decode : &s->attributed.unphased;
        fprintf(f, "%s\"%s\":{", p ? "," : "", pname[p]);
        for (d = 0; d < MEMOBS_DIRS; d++)
            fprintf(f, "%s\"%s_bytes\":%llu,\"%s_count\":%llu", d ? "," : "", dir_name[d],
                    (unsigned long long)memobs_dirs_get(md, (unsigned)d)->bytes, dir_name[d],
                    (unsigned long long)memobs_dirs_get(md, (unsigned)d)->count);
        fprintf(f, "}");
    }
    fprintf(f, ",\"orphan_bytes\":%llu,\"bind_misuse\":%llu,\"tenant_misuse\":%llu}\n",
            (unsigned long long)s->attributed.orphan_bytes, (unsigned long long)s->attributed.bind_misuse,
            (unsigned long long)s->attributed.tenant_misuse);
}

/* The bytes a request moved, by memobs' ledger of it. */
static uint64_t info_moved(const memobs_request_info_t *i) {
    uint64_t b = 0;
    int p, d;
    for (p = 0; p < 3; p++)
        for (d = 0; d < MEMOBS_DIRS; d++) b += memobs_dirs_get(&i->xfer[p], (unsigned)d)->bytes;
    return b;
}

/* memobs' attributed figures and every request's ledger (all N_REQUESTS
   are in memobs_request_top's list of MEMOBS_REQUEST_TOP) against the
   engine's. */
static void cross_check_attribution(const memobs_summary_t *s) {
    memobs_request_info_t top[MEMOBS_REQUEST_TOP];
    size_t n = memobs_request_top(MEMOBS_REQUEST_TOP_BYTES, top, MEMOBS_REQUEST_TOP), k;
    ledger_t att, unatt, l;
    char what[96];
    int p, d, i;
    engine_attributed(&att, &unatt);
    for (p = 0; p < 3; p++) {
        const memobs_dirs_t *md = p == 0 ? &s->attributed.unphased : p == 1 ? &s->attributed.prefill
                                                                            : &s->attributed.decode;
        for (d = 0; d < MEMOBS_DIRS; d++) {
            snprintf(what, sizeof what, "attributed %s %s bytes", phase_name[p], dir_name[d]);
            expect(what, memobs_dirs_get(md, (unsigned)d)->bytes, att.bytes[p][d]);
            snprintf(what, sizeof what, "attributed %s %s ops", phase_name[p], dir_name[d]);
            expect(what, memobs_dirs_get(md, (unsigned)d)->count, att.ops[p][d]);
        }
    }
    expect("attributed orphan bytes, bind and tenant misuse",
           s->attributed.orphan_bytes + s->attributed.bind_misuse + s->attributed.tenant_misuse, 0);
    expect("requests in memobs_request_top's list", n, N_REQUESTS);
    for (k = 0; k < n; k++) {
        const request_t *r = NULL;
        for (i = 0; i < N_REQUESTS; i++)
            if (E.req[i].id == top[k].id) r = &E.req[i];
        if (!r) {
            snprintf(what, sizeof what, "request %llu in memobs_request_top is one of the engine's",
                     (unsigned long long)top[k].id);
            expect(what, 0, 1);
            continue;
        }
        ledger_of(r, &l);
        for (p = 0; p < 3; p++)
            for (d = 0; d < MEMOBS_DIRS; d++) {
                const memobs_xfer_t *x = memobs_dirs_get(&top[k].xfer[p], (unsigned)d);
                snprintf(what, sizeof what, "request %llu's %s %s bytes, ops", (unsigned long long)r->id,
                         phase_name[p], dir_name[d]);
                expect(what, x->bytes, l.bytes[p][d]);
                expect(what, x->count, l.ops[p][d]);
            }
        for (d = 0; d < MEMOBS_DIRS; d++) {
            snprintf(what, sizeof what, "request %llu's %s engine-timed ns", (unsigned long long)r->id, dir_name[d]);
            expect(what, top[k].engine_ns[d], l.ns[d]);
        }
        snprintf(what, sizeof what, "request %llu's tenant %s", (unsigned long long)r->id, r->tenant);
        expect(what, (uint64_t)strcmp(top[k].tenant, r->tenant), 0);
        snprintf(what, sizeof what, "request %llu completed, its tokens", (unsigned long long)r->id);
        expect(what, (uint64_t)top[k].state * 1000 + top[k].tokens, MEMOBS_REQUEST_COMPLETED * 1000 + (uint64_t)r->out_len);
        if (k > 0 && ledger_bytes(&l) > info_moved(&top[k - 1])) expect("memobs_request_top's order", 0, 1);
    }
}

/* What a first-time user wants from attribution: which requests moved the
   most (memobs_request_top), and how much of the traffic is the requests'
   at all. */
static void print_attribution(const memobs_summary_t *s) {
    memobs_request_info_t top[3];
    size_t n = memobs_request_top(MEMOBS_REQUEST_TOP_BYTES, top, 3), i;
    uint64_t all = 0, att = 0;
    char b1[32], b2[32], b3[32], b4[32];
    int d;
    fprintf(stderr, "top %zu requests by bytes moved (memobs_request_top; MEMOBS_REQUESTS=FILE: a JSON line each):\n", n);
    for (i = 0; i < n; i++)
        fprintf(stderr, "  request %llu, tenant %s: %s moved, %s waited on the disk tier, TTFT %s, E2E %s\n",
                (unsigned long long)top[i].id, top[i].tenant[0] ? top[i].tenant : "(none)",
                memobs_format_bytes(b1, sizeof b1, info_moved(&top[i])),
                memobs_format_ns(b2, sizeof b2, top[i].wait_ns), memobs_format_ns(b3, sizeof b3, top[i].ttft_ns),
                memobs_format_ns(b4, sizeof b4, top[i].e2e_ns));
    for (d = 0; d < MEMOBS_DIRS; d++) {
        all += memobs_dirs_get(&s->total, (unsigned)d)->bytes;
        att += memobs_dirs_get(&s->attributed.total, (unsigned)d)->bytes;
    }
    fprintf(stderr, "attributed to requests: %s of %s moved; the engine's own (the weights' upload): %s\n",
            memobs_format_bytes(b1, sizeof b1, att), memobs_format_bytes(b2, sizeof b2, all),
            memobs_format_bytes(b3, sizeof b3, all - att));
}

/* ======================================================================== */
/* Main                                                                     */
/* ======================================================================== */

int main(int argc, char **argv) {
    static worker_t workers[MAX_WORKERS];
    static worker_t loader;
    pthread_t th[MAX_WORKERS];
    memobs_summary_t *s;
    tally_t t;
    size_t used;
    uint64_t t0, t1;
    char buf[32];
    const char *tallies = NULL, *reports = NULL, *ledger = NULL, *attributed = NULL;
    FILE *tf = NULL;
    int json = 0, i, p, d;

    E.n_workers = N_WORKERS;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--leak") == 0) {
            E.leaky = &E.req[0];
        } else if (strcmp(argv[i], "--tallies") == 0 && i + 1 < argc) {
            tallies = argv[++i];
        } else if (strcmp(argv[i], "--reports") == 0 && i + 1 < argc) {
            reports = argv[++i];
        } else if (strcmp(argv[i], "--ledger") == 0 && i + 1 < argc) {
            ledger = argv[++i];
        } else if (strcmp(argv[i], "--attributed") == 0 && i + 1 < argc) {
            attributed = argv[++i];
        } else if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc && atoi(argv[i + 1]) >= 1 &&
                   atoi(argv[i + 1]) <= MAX_WORKERS) {
            E.n_workers = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--json] [--leak] [--workers 1-%d] [--tallies FILE] [--ledger FILE] "
                    "[--attributed FILE] [--reports FILE|stderr]\n", argv[0], MAX_WORKERS);
            return 2;
        }
    }
    if (reports && strcmp(reports, "stderr") == 0) reports = NULL;
    open_reports(reports);

    pthread_mutex_init(&E.pool_lock, NULL);
    pthread_mutex_init(&E.alloc_lock, NULL);
    pthread_mutex_init(&E.queue_lock, NULL);
    pthread_mutex_init(&E.wave_lock, NULL);
    pthread_cond_init(&E.wave_cond, NULL);
    E.workers = workers;
    E.loader = &loader;
    carve_device(workers, &used); /* measure */
    /* Peak report: quiet up to the planned device footprint (weights, KV
       slots, buffers: the arena), then at the first byte past it and at
       each 25% beyond the last report. */
    if (!getenv("MEMOBS_PEAK_REPORT") &&
        memobs_track_set_peak_report(E.reports_path, 0.25, (uint64_t)used * sizeof(float) + 1) != MEMOBS_OK)
        die("memobs_track_set_peak_report failed");
    E.arena = (float *)calloc(used, sizeof(float));
    E.pool = (float *)calloc((size_t)N_CPU_BLOCKS * N_LAYERS * LB_FLOATS, sizeof(float));
    if (!E.arena || !E.pool) die("out of memory");
    if (!(E.disk = tmpfile())) die("disk tier: tmpfile() failed");
    for (i = 0; i < E.n_workers; i++)
        if (!(workers[i].disk_buf = (float *)malloc(HOST_BLOCK_BYTES))) die("out of memory");
    carve_device(workers, &used); /* and track */
    for (i = 0; i < N_CPU_BLOCKS; i++) E.free_blocks[E.nfree++] = N_CPU_BLOCKS - 1 - i;

    /* A handle for the site that uses the function form. The other two are
       bumped by name with MEMOBS_COUNTER_ADD, which would register them on
       first use; registering them here gives them help text and a fixed
       place in the summary. */
    E.c_offloaded = memobs_counter_register("kv_blocks_offloaded", "KV blocks written to the host pool");
    if (E.c_offloaded < 0 || memobs_counter_register("tokens_generated", "tokens sampled, all requests") < 0 ||
        memobs_counter_register("attention_flops", "q.k and p.v multiplies and adds") < 0)
        die("memobs_counter_register failed");

    load_weights(&loader); /* bound to no request: the engine's own */

    make_requests();
    t0 = memobs_now_ns();
    /* All requests arrive at once; like nano-vllm's scheduler.add(), TTFT
       counts from here, so it includes the wait for a free worker. */
    for (i = 0; i < N_REQUESTS; i++) {
        memobs_request_begin(E.req[i].id);
        if (memobs_request_tenant(E.req[i].id, E.req[i].tenant) != MEMOBS_OK)
            die("memobs_request_tenant failed");
    }
    for (i = 0; i < E.n_workers; i++)
        if (pthread_create(&th[i], NULL, worker_main, &workers[i]) != 0) die("pthread_create failed");
    /* This thread is the scheduler: a gather per wave, in order. */
    for (i = 0; i < E.nwaves; i++) gather_wave(i);
    for (i = 0; i < E.n_workers; i++) pthread_join(th[i], NULL);
    t1 = memobs_now_ns();

    t = loader.t;
    for (p = 0; p < 3; p++)
        for (d = 0; d < MEMOBS_DIRS; d++) {
            t.bytes[p][d] += E.sched.bytes[p][d];
            t.ops[p][d] += E.sched.ops[p][d];
        }
    for (i = 0; i < E.n_workers; i++) {
        const tally_t *wt = &workers[i].t;
        for (p = 0; p < 3; p++)
            for (d = 0; d < MEMOBS_DIRS; d++) {
                t.bytes[p][d] += wt->bytes[p][d];
                t.ops[p][d] += wt->ops[p][d];
                t.ns[p][d] += wt->ns[p][d];
            }
        t.tokens += wt->tokens;
        t.blocks_offloaded += wt->blocks_offloaded;
        t.attention_flops += wt->attention_flops;
    }

    /* The summary first: it is what the demo is for. Then the requests,
       then the reports memobs and the engine wrote during the run. */
    memobs_print_summary();
    fprintf(stderr, "served %d requests, %llu tokens, on %d workers in %s\n", N_REQUESTS,
            (unsigned long long)t.tokens, E.n_workers, memobs_format_ns(buf, sizeof buf, t1 - t0));
    for (i = 0; i < N_REQUESTS; i++) {
        const request_t *r = &E.req[i];
        fprintf(stderr, "request %llu: prompt %3d, generated %2d, worker %d, host blocks %2d, tokens %08x, tenant %s\n",
                (unsigned long long)r->id, r->prompt_len, r->out_len, r->worker, r->nblocks, r->checksum, r->tenant);
    }
    if (!(s = (memobs_summary_t *)malloc(sizeof *s))) die("out of memory");
    memobs_get_summary(s); /* the requests have all ended: their figures are final */
    print_attribution(s);
    close_reports(reports);

    if (tallies && !(tf = fopen(tallies, "w"))) die("--tallies: cannot open the file");
    if (tf) write_tallies(tf, &t);
    if (tf && fclose(tf) != 0) die("--tallies: cannot write the file");
    if (ledger && !(tf = fopen(ledger, "w"))) die("--ledger: cannot open the file");
    if (ledger) write_ledger(tf);
    if (ledger && fclose(tf) != 0) die("--ledger: cannot write the file");
    if (attributed && !(tf = fopen(attributed, "w"))) die("--attributed: cannot open the file");
    if (attributed) write_attributed(tf, s);
    if (attributed && fclose(tf) != 0) die("--attributed: cannot write the file");
    if (json) memobs_write_summary(stdout, MEMOBS_FORMAT_JSON);
    fflush(stdout);

    cross_check(&t);
    cross_check_attribution(s);
    free(s);

    /* Shut-down: the device buffers go; the pool's pinned blocks are all
       back by now (--leak: all but one). What memobs still sees live is
       what the engine lost track of. */
    dev_untrack_all();
    if (!getenv("MEMOBS_LEAKS")) memobs_print_leaks(stderr);
    free(E.arena);
    free(E.pool);
    for (i = 0; i < E.n_workers; i++) free(workers[i].disk_buf);
    fclose(E.disk);
    if (mismatches) {
        fprintf(stderr, "offload_engine: %d memobs figure(s) differ from the engine's tallies%s\n", mismatches,
                memobs_get_enabled() ? "" : " (memobs is off: MEMOBS=0 in the environment, or built with MEMOBS_DISABLE)");
        return 1;
    }
    return 0;
}
