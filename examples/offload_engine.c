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

   Recording, both ways memobs allows: the nano-vllm entry points, which
   know their phase, pass it (MEMOBS_RECORD_H2D(bytes, is_prefill) in
   load_to_slot_layer); the generic copy helpers under them do not know it
   and use MEMOBS_RECORD_*_CUR, which files a copy under the phase its
   thread set with memobs_set_phase(). Every record is the exact number of
   bytes memcpy'ed. Timing is per request (memobs_request_begin/token/end):
   with two workers decoding at once, nano-vllm's single global TTFT/TPOT
   clock would interleave the tokens of different requests.

   Two worker threads pull requests from a queue, so memobs records from
   several threads at once. The engine keeps its own tallies of every copy
   and checks memobs' figures against them at the end: exit 1 on a mismatch.

   Build (libm for expf/sqrtf/sinf/cosf):
       cc -std=c99 -O2 -Wall -Wextra -Werror -pthread -I. \
          examples/offload_engine.c -o offload_engine -lm
   Run:
       ./offload_engine [--json]
   stderr: one line per request, then memobs_print_summary().
   stdout: "engine tallies: key=value ...", then with --json the memobs JSON
   summary as the last line. */

#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

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
    N_HEADS = 6,
    HEAD_DIM = 64,
    HIDDEN = N_HEADS * HEAD_DIM,
    VOCAB = 512,
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
    N_CPU_BLOCKS = N_WORKERS * MAX_BLOCKS + 4
};

/* One layer of one block: K[BLOCK][HIDDEN], then V[BLOCK][HIDDEN]. Keeping
   K and V of a layer contiguous makes a slot load or an offload one memcpy. */
#define LB_FLOATS ((size_t)2 * BLOCK * HIDDEN)
#define LB_BYTES (LB_FLOATS * sizeof(float))
#define ROW_BYTES ((size_t)HIDDEN * sizeof(float))

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
    /* Mirrors memobs_set_phase(), so the copy helpers can tally by phase
       from the engine's state while memobs uses its own per-thread phase. */
    memobs_phase_t phase;
    /* Device memory (in the arena). */
    float *slots;       /* [N_LAYERS][N_SLOTS][LB_FLOATS] */
    float *prefill_buf; /* [N_LAYERS][LB_FLOATS] */
    float *decode_buf;  /* [N_LAYERS][LB_FLOATS] */
    float *x, *h, *q, *k, *v, *att, *o; /* activations, [BLOCK][HIDDEN] */
    float *acc, *mx, *den;              /* online softmax, per (row, head) */
    float *logits;                      /* [VOCAB] */
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

static struct {
    float *arena; /* the "GPU" */
    float *embed, *unembed; /* device weights: [VOCAB][HIDDEN] */
    float *wq, *wk, *wv, *wo; /* [N_LAYERS][HIDDEN][HIDDEN] (in x out) */
    float *pool;  /* the host block pool: [N_CPU_BLOCKS][N_LAYERS][LB_FLOATS] */
    int free_blocks[N_CPU_BLOCKS];
    int nfree;
    pthread_mutex_t pool_lock;
    request_t req[N_REQUESTS];
    int next_req;
    pthread_mutex_t queue_lock;
    memobs_counter_t c_offloaded;
} E;

static void die(const char *msg) {
    fprintf(stderr, "offload_engine: %s\n", msg);
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
/* Host block pool                                                          */
/* ======================================================================== */

static int pool_alloc(void) {
    int b;
    pthread_mutex_lock(&E.pool_lock);
    b = E.nfree > 0 ? E.free_blocks[--E.nfree] : -1;
    pthread_mutex_unlock(&E.pool_lock);
    if (b < 0) die("host block pool exhausted");
    return b;
}

static void pool_free(int b) {
    pthread_mutex_lock(&E.pool_lock);
    E.free_blocks[E.nfree++] = b;
    pthread_mutex_unlock(&E.pool_lock);
}

static float *host_layer_block(int b, int layer) {
    return E.pool + ((size_t)b * N_LAYERS + (size_t)layer) * LB_FLOATS;
}

/* ======================================================================== */
/* Copies: every memcpy between buffers is here, tallied and recorded      */
/* ======================================================================== */

static void tally(worker_t *w, memobs_dir_t dir, memobs_phase_t ph, size_t bytes) {
    w->t.bytes[ph][dir] += bytes;
    w->t.ops[ph][dir]++;
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
static void offload_buffer_to_cpu(worker_t *w, request_t *r, const float *buf) {
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
   to the input embedding, this toy's residual stream just echoes its input. */
static int sample(worker_t *w, int row) {
    int t, j, best = 0;
    rmsnorm(w->h, w->x + (size_t)row * HIDDEN, 1);
    for (t = 0; t < VOCAB; t++) {
        const float *e = E.unembed + (size_t)t * HIDDEN;
        float s = 0.0f;
        for (j = 0; j < HIDDEN; j++) s += e[j] * w->h[j];
        w->logits[t] = s;
        if (s > w->logits[best]) best = t;
    }
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

static void serve(worker_t *w, request_t *r) {
    int pos, k, n = 0;
    r->worker = w->id;
    set_phase(w, MEMOBS_PHASE_PREFILL);
    for (pos = 0; pos < r->prompt_len; pos += n) {
        n = r->prompt_len - pos < BLOCK ? r->prompt_len - pos : BLOCK;
        embed_tokens(w, r->tokens + pos, pos, n);
        forward(w, r, n, 1);
        if (n == BLOCK) {
            offload_buffer_to_cpu(w, r, w->prefill_buf); /* offload_prefill_buffer */
        } else {
            /* A partial last chunk stays on the device: it seeds the decode buffer. */
            int layer;
            for (layer = 0; layer < N_LAYERS; layer++)
                copy_d2d_rows(w, w->decode_buf + (size_t)layer * LB_FLOATS,
                              w->prefill_buf + (size_t)layer * LB_FLOATS, n);
        }
    }
    emit_token(w, r, sample(w, n - 1), 0);

    set_phase(w, MEMOBS_PHASE_DECODE);
    for (k = 1; k < r->out_len; k++) {
        pos = r->prompt_len + k - 1; /* feed the last generated token */
        embed_tokens(w, r->tokens + pos, pos, 1);
        forward(w, r, 1, 0);
        if (r->ctx_len % BLOCK == 0) offload_buffer_to_cpu(w, r, w->decode_buf);
        emit_token(w, r, sample(w, 0), k);
    }
    memobs_request_end(r->id);

    set_phase(w, MEMOBS_PHASE_NONE);
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
    while ((r = next_request()) != NULL) serve(w, r);
    return NULL;
}

/* ======================================================================== */
/* Set-up                                                                   */
/* ======================================================================== */

/* Bump allocator over the device arena, in 64-byte steps. With no arena
   yet it only measures, so the layout is written down once. */
static float *dev_take(size_t *used, size_t nfloats) {
    float *p = E.arena ? E.arena + *used : NULL;
    *used += (nfloats + 15) & ~(size_t)15;
    return p;
}

static void carve_device(worker_t *workers, size_t *used) {
    const size_t act = (size_t)BLOCK * HIDDEN;
    int i;
    *used = 0;
    E.embed = dev_take(used, (size_t)VOCAB * HIDDEN);
    E.unembed = dev_take(used, (size_t)VOCAB * HIDDEN);
    E.wq = dev_take(used, (size_t)N_LAYERS * HIDDEN * HIDDEN);
    E.wk = dev_take(used, (size_t)N_LAYERS * HIDDEN * HIDDEN);
    E.wv = dev_take(used, (size_t)N_LAYERS * HIDDEN * HIDDEN);
    E.wo = dev_take(used, (size_t)N_LAYERS * HIDDEN * HIDDEN);
    for (i = 0; i < N_WORKERS; i++) {
        worker_t *w = &workers[i];
        w->id = i;
        w->slots = dev_take(used, (size_t)N_LAYERS * N_SLOTS * LB_FLOATS);
        w->prefill_buf = dev_take(used, (size_t)N_LAYERS * LB_FLOATS);
        w->decode_buf = dev_take(used, (size_t)N_LAYERS * LB_FLOATS);
        w->x = dev_take(used, act);
        w->h = dev_take(used, act);
        w->q = dev_take(used, act);
        w->k = dev_take(used, act);
        w->v = dev_take(used, act);
        w->att = dev_take(used, act);
        w->o = dev_take(used, act);
        w->acc = dev_take(used, act);
        w->mx = dev_take(used, (size_t)BLOCK * N_HEADS);
        w->den = dev_take(used, (size_t)BLOCK * N_HEADS);
        w->logits = dev_take(used, VOCAB);
    }
}

/* Weights are made on the host and uploaded before serving starts: no
   phase is set, so memobs files these copies as "unphased". */
static void load_weights(worker_t *loader) {
    const size_t mat = (size_t)HIDDEN * HIDDEN, nemb = (size_t)VOCAB * HIDDEN;
    float *host = (float *)malloc((nemb > mat ? nemb : mat) * sizeof(float));
    float *dst[4];
    uint64_t seed = 0x5eed0001u;
    size_t i;
    int m, layer;
    if (!host) die("out of memory");
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
    free(host);
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

static void cross_check(const tally_t *t) {
    static const char *const dname[3] = {"h2d", "d2h", "d2d"};
    static const char *const pname[4] = {"unphased", "prefill", "decode", "total"};
    memobs_summary_t *s = (memobs_summary_t *)malloc(sizeof *s);
    char what[64];
    int p, d;
    if (!s) die("out of memory");
    memobs_get_summary(s);
    for (p = 0; p < 4; p++) {
        const memobs_dirs_t *md = p == 0 ? &s->unphased : p == 1 ? &s->prefill : p == 2 ? &s->decode : &s->total;
        for (d = 0; d < 3; d++) {
            const memobs_xfer_t *x = d == 0 ? &md->h2d : d == 1 ? &md->d2h : &md->d2d;
            uint64_t b = 0, n = 0;
            int q;
            for (q = 0; q < 3; q++) {
                if (p != 3 && q != p) continue;
                b += t->bytes[q][d];
                n += t->ops[q][d];
            }
            snprintf(what, sizeof what, "%s %s bytes", pname[p], dname[d]);
            expect(what, x->bytes, b);
            snprintf(what, sizeof what, "%s %s ops", pname[p], dname[d]);
            expect(what, x->count, n);
        }
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
    free(s);
}

/* ======================================================================== */
/* Main                                                                     */
/* ======================================================================== */

int main(int argc, char **argv) {
    static worker_t workers[N_WORKERS];
    pthread_t th[N_WORKERS];
    worker_t loader;
    tally_t t;
    size_t used;
    uint64_t t0, t1;
    char buf[32];
    int json = 0, i, p, d;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else {
            fprintf(stderr, "usage: %s [--json]\n", argv[0]);
            return 2;
        }
    }

    carve_device(workers, &used); /* measure */
    E.arena = (float *)calloc(used, sizeof(float));
    E.pool = (float *)calloc((size_t)N_CPU_BLOCKS * N_LAYERS * LB_FLOATS, sizeof(float));
    if (!E.arena || !E.pool) die("out of memory");
    carve_device(workers, &used);
    pthread_mutex_init(&E.pool_lock, NULL);
    pthread_mutex_init(&E.queue_lock, NULL);
    for (i = 0; i < N_CPU_BLOCKS; i++) E.free_blocks[E.nfree++] = N_CPU_BLOCKS - 1 - i;

    /* A handle for the site that uses the function form. The other two are
       bumped by name with MEMOBS_COUNTER_ADD, which would register them on
       first use; registering them here gives them help text and a fixed
       place in the summary. */
    E.c_offloaded = memobs_counter_register("kv_blocks_offloaded", "KV blocks written to the host pool");
    if (E.c_offloaded < 0 || memobs_counter_register("tokens_generated", "tokens sampled, all requests") < 0 ||
        memobs_counter_register("attention_flops", "q.k and p.v multiplies and adds") < 0)
        die("memobs_counter_register failed");

    memset(&loader, 0, sizeof loader);
    load_weights(&loader);

    make_requests();
    t0 = memobs_now_ns();
    /* All requests arrive at once; like nano-vllm's scheduler.add(), TTFT
       counts from here, so it includes the wait for a free worker. */
    for (i = 0; i < N_REQUESTS; i++) memobs_request_begin(E.req[i].id);
    for (i = 0; i < N_WORKERS; i++)
        if (pthread_create(&th[i], NULL, worker_main, &workers[i]) != 0) die("pthread_create failed");
    for (i = 0; i < N_WORKERS; i++) pthread_join(th[i], NULL);
    t1 = memobs_now_ns();

    t = loader.t;
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
            (unsigned long long)t.tokens, N_WORKERS, memobs_fmt_ns(t1 - t0, buf, sizeof buf));
    memobs_print_summary();

    printf("engine tallies:");
    for (p = 0; p < 4; p++) {
        static const char *const pre[4] = {"", "prefill_", "decode_", "unphased_"};
        static const char *const dname[3] = {"h2d", "d2h", "d2d"};
        for (d = 0; d < 3; d++) {
            uint64_t b = 0, n = 0;
            int q;
            for (q = 0; q < 3; q++) {
                /* p: 0 total, 1 prefill, 2 decode, 3 unphased (memobs phase 0) */
                if (p != 0 && q != (p == 3 ? 0 : p)) continue;
                b += t.bytes[q][d];
                n += t.ops[q][d];
            }
            printf(" %s%s=%llu %s%s_ops=%llu", pre[p], dname[d], (unsigned long long)b, pre[p], dname[d],
                   (unsigned long long)n);
        }
    }
    printf(" requests=%d tokens=%llu kv_blocks_offloaded=%llu attention_flops=%llu\n", N_REQUESTS,
           (unsigned long long)t.tokens, (unsigned long long)t.blocks_offloaded,
           (unsigned long long)t.attention_flops);
    if (json) memobs_write_summary(stdout, MEMOBS_FORMAT_JSON);
    fflush(stdout);

    cross_check(&t);
    free(E.arena);
    free(E.pool);
    if (mismatches) {
        fprintf(stderr, "offload_engine: %d memobs figure(s) differ from the engine's tallies%s\n", mismatches,
                memobs_is_enabled() ? "" : " (memobs is off: MEMOBS=0 in the environment, or built with MEMOBS_DISABLE)");
        return 1;
    }
    return 0;
}
