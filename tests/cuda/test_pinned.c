/* Pinned memory as asked and as held (memobs.h, "Pinned memory"), through
   memobs_cuda.h's wrappers against the CUDA runtime double
   (tests/cuda/cudart_double.c), each test in a fresh process (the mode):
     engine     a pool that rounds each ask up to a power of two, as
                PyTorch's CachingHostAllocator does, and reuses freed
                blocks from per-class free lists: the table per size
                class, the ratio held/asked, in the getter, the text and
                JSON summaries and the Prometheus exposition;
     threads    threads allocating, asking, registering and freeing at
                once: exact end figures, class by class;
     misuse     asks of NULL, of an unknown block, above the held size:
                refused, counted, one warning per kind; nothing while
                memobs is off;
     register   cudaHostRegister ranges (held, registered), the double's
                refusals (already registered, not registered, a
                registered range given to cudaFreeHost) change nothing;
     full       the allocation tracker's table full: the pinned table
                still holds every block, and lets each go;
     reset      memobs_reset starts the window's peak at what is held;
     disabled   (MEMOBS_DISABLE) the wrappers only make their calls.
   Built by tests/cuda/test_pinned.sh as C11, C++17, ASan+UBSan, TSan and
   with MEMOBS_DISABLE. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../memobs_cuda.h"
#include "cudart_double.h"
#include "../check.h"
#include "cuda_test.h"

#include <pthread.h>
#include <stdlib.h>

#ifndef TEST_SUITE
#define TEST_SUITE "pinned"
#endif

#define MiB (1024ull * 1024ull)

/* ---- an engine's pinned pool, rounding like CachingHostAllocator ---- */

/* Asks n bytes: rounded up to a power of two, a cached block of that size
   reused, else a new one from cudaHostAlloc; memobs told the ask. */
#define POOL_CLASSES 64
#define POOL_CACHE 16
typedef struct {
    void *cached[POOL_CLASSES][POOL_CACHE];
    unsigned ncached[POOL_CLASSES];
} pool_t;

static uint64_t pow2_up(uint64_t n) {
    uint64_t p = 1;
    while (p < n) p <<= 1;
    return p;
}
static unsigned log2_of(uint64_t p) { return 63u - (unsigned)__builtin_clzll(p); }

static void *pool_get(pool_t *pl, uint64_t n) {
    uint64_t size = pow2_up(n);
    unsigned c = log2_of(size);
    void *p = NULL;
    if (pl->ncached[c]) p = pl->cached[c][--pl->ncached[c]];
    else if (memobs_cudaHostAlloc(&p, (size_t)size, cudaHostAllocDefault) != cudaSuccess) return NULL;
    CHECK_U64(MEMOBS_OK, memobs_pinned_asked(p, n));
    return p;
}
/* The user gives the block back: cached, asked 0 (held, nobody's). */
static void pool_put(pool_t *pl, void *p, uint64_t n) {
    unsigned c = log2_of(pow2_up(n));
    CHECK_U64(MEMOBS_OK, memobs_pinned_asked(p, 0));
    pl->cached[c][pl->ncached[c]++] = p;
}
static void pool_empty(pool_t *pl) {
    unsigned c;
    for (c = 0; c < POOL_CLASSES; c++)
        while (pl->ncached[c]) CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(pl->cached[c][--pl->ncached[c]]));
}

static memobs_pinned_t P;
#define CHECK_CLASS(c, blocks_, held_, asked_)            \
    do {                                                  \
        CHECK_U64(blocks_, P.cls[c].blocks);              \
        CHECK_U64(held_, P.cls[c].held_bytes);            \
        CHECK_U64(asked_, P.cls[c].asked_bytes);          \
    } while (0)

/* The classes with blocks, as "c:blocks " pairs: the table holds no other. */
static const char *classes(char *b, size_t len) {
    unsigned c;
    size_t k = 0;
    b[0] = 0;
    for (c = 0; c < MEMOBS_PINNED_CLASSES; c++)
        if (P.cls[c].blocks && k < len) k += (size_t)snprintf(b + k, len - k, "%u:%llu ", c,
                                                             (unsigned long long)P.cls[c].blocks);
    return b;
}

static char OUT[1 << 20];
/* A writer's output into OUT. */
static const char *written(int (*w)(FILE *, int), int arg) {
    FILE *f = tmpfile();
    size_t n;
    if (!f) return "";
    (void)w(f, arg);
    rewind(f);
    n = fread(OUT, 1, sizeof OUT - 1, f);
    OUT[n] = 0;
    fclose(f);
    return OUT;
}
static int w_summary(FILE *f, int fmt) { return memobs_write_summary(f, (memobs_format_t)fmt); }
static int w_prom(FILE *f, int unused) {
    (void)unused;
    return memobs_write_prometheus(f);
}
static int w_html(FILE *f, int unused) {
    (void)unused;
    return memobs_write_html(f);
}

/* Asks of 1.1, 3 and 5 MiB hold 2, 4 and 8 MiB: 14 MiB for 9.1, 1.54x. */
static void engine(void) {
    static pool_t pl;
    const unsigned long long a1 = 1153434, a2 = 3 * MiB, a3 = 5 * MiB, a4 = 5 * MiB / 2; /* 1.1 MiB, rounded */
    void *b1, *b2, *b3, *b4;
    char b[256];
    const char *s;
    fresh();
    b1 = pool_get(&pl, a1);
    b2 = pool_get(&pl, a2);
    b3 = pool_get(&pl, a3);
    CHECK(b1 && b2 && b3);
    CHECK_U64(3, calls("cudaHostAlloc"));
    CHECK_U64(MEMOBS_OK, memobs_get_pinned(&P));
    CHECK_U64(1, P.seen);
    CHECK_U64(3, P.blocks);
    CHECK_U64(14 * MiB, P.held_bytes);
    CHECK_U64(a1 + a2 + a3, P.asked_bytes);
    CHECK_U64(14 * MiB, P.peak_held_bytes);
    CHECK_U64(0, P.registered_bytes);
    CHECK_U64(3, P.allocs);
    CHECK_U64(3, P.asks);
    CHECK_CLASS(21, 1, 2 * MiB, a1);
    CHECK_CLASS(22, 1, 4 * MiB, a2);
    CHECK_CLASS(23, 1, 8 * MiB, a3);
    CHECK_STR("21:1 22:1 23:1 ", classes(b, sizeof b));
    CHECK(P.rss_shmem_bytes != 0 || P.rss_shmem_bytes == 0); /* read: a real number or MEMOBS_UNKNOWN */
    /* the tracker has them as pinned too */
    snap();
    CHECK_U64(14 * MiB, S.mem[MEMOBS_MEM_PINNED].current_bytes);

    /* the text summary: the totals with their ratio, a row per class */
    s = written(w_summary, MEMOBS_FORMAT_TEXT);
    CHECK_HAS(s, "  pinned: held 14.00 MiB in 3 blocks, asked 9.10 MiB: held/asked 1.54x; peak held 14.00 MiB; "
                 "RssShmem ");
    CHECK_HAS(s, "    2 MiB               1     2.00 MiB     1.10 MiB      1.82x\n");
    CHECK_HAS(s, "    4 MiB               1     4.00 MiB     3.00 MiB      1.33x\n");
    CHECK_HAS(s, "    8 MiB               1     8.00 MiB     5.00 MiB      1.60x\n");
    /* JSON */
    s = written(w_summary, MEMOBS_FORMAT_JSON);
    snprintf(b, sizeof b, "\"pinned\":{\"blocks\":3,\"held_bytes\":%llu,\"asked_bytes\":%llu,\"registered_bytes\":0,"
             "\"peak_held_bytes\":%llu,\"held_per_asked\":1.53846,\"rss_shmem_bytes\":", 14 * MiB, a1 + a2 + a3,
             14 * MiB);
    CHECK_HAS(s, b);
    snprintf(b, sizeof b, "{\"class\":22,\"min_bytes\":%llu,\"blocks\":1,\"held_bytes\":%llu,\"asked_bytes\":%llu}",
             4 * MiB, 4 * MiB, a2);
    CHECK_HAS(s, b);
    /* Prometheus, per class */
    s = written(w_prom, 0);
    CHECK_HAS(s, "# TYPE memobs_pinned_held_bytes gauge\n");
    snprintf(b, sizeof b, ",class=\"8MiB\"} %llu\n", 8 * MiB);
    CHECK_HAS(s, b);
    snprintf(b, sizeof b, "memobs_pinned_asked_bytes{job_id=\"\",rank=\"0\",local_rank=\"0\",host=\"%s\","
             "class=\"2MiB\"} %llu\n", S.identity.host, a1);
    CHECK_HAS(s, b);
    CHECK_HAS(s, ",class=\"4MiB\"} 1\n"); /* memobs_pinned_blocks */
    snprintf(b, sizeof b, "memobs_pinned_peak_held_bytes{job_id=\"\",rank=\"0\",local_rank=\"0\",host=\"%s\"} %llu\n",
             S.identity.host, 14 * MiB);
    CHECK_HAS(s, b);
    s = written(w_html, 0);
    CHECK_HAS(s, "<section id=\"pinned\"><h2>Pinned memory</h2>\n<p>held 14.00 MiB in 3 blocks, asked 9.10 MiB: "
                 "held/asked 1.54x;");
    CHECK_HAS(s, "<tr><td>4 MiB</td>");

    /* the 3 MiB ask given back: cached, held for nobody; then 2.5 MiB asked
       of the same class: the cached block again, no new call */
    pool_put(&pl, b2, a2);
    CHECK_U64(MEMOBS_OK, memobs_get_pinned(&P));
    CHECK_CLASS(22, 1, 4 * MiB, 0);
    CHECK_U64(a1 + a3, P.asked_bytes);
    s = written(w_summary, MEMOBS_FORMAT_TEXT);
    CHECK_HAS(s, "    4 MiB               1     4.00 MiB          0 B          -\n");
    b4 = pool_get(&pl, a4);
    CHECK(b4 == b2);
    CHECK_U64(3, calls("cudaHostAlloc"));
    CHECK_U64(MEMOBS_OK, memobs_get_pinned(&P));
    CHECK_CLASS(22, 1, 4 * MiB, a4);
    CHECK_U64(a1 + a3 + a4, P.asked_bytes);
    CHECK_U64(5, P.asks);

    /* all back, the pool emptied: nothing held, the peak stays */
    pool_put(&pl, b1, a1);
    pool_put(&pl, b3, a3);
    pool_put(&pl, b4, a4);
    pool_empty(&pl);
    CHECK_U64(3, calls("cudaFreeHost"));
    CHECK_U64(MEMOBS_OK, memobs_get_pinned(&P));
    CHECK_U64(0, P.blocks);
    CHECK_U64(0, P.held_bytes);
    CHECK_U64(0, P.asked_bytes);
    CHECK_U64(14 * MiB, P.peak_held_bytes);
    CHECK_U64(3, P.frees);
    CHECK_STR("", classes(b, sizeof b));
    snap();
    CHECK_U64(0, S.mem[MEMOBS_MEM_PINNED].current_bytes);
}

/* ---- threads ---- */

#define THREADS 8
#define ROUNDS 300
#define KEEP 5 /* blocks each thread leaves live */

typedef struct {
    int t;
    void *keep[KEEP];
    uint64_t keep_size[KEEP], keep_asked[KEEP];
    unsigned char *reg; /* a range it registers and keeps */
    int fails;
} worker_t;

static uint64_t wsize(int t, int i) { return 4096u * (uint64_t)(1 + (i * 7 + t) % 37) + (uint64_t)t; }

static void *worker(void *arg) {
    worker_t *w = (worker_t *)arg;
    int i;
    for (i = 0; i < ROUNDS; i++) {
        void *p = NULL;
        uint64_t n = wsize(w->t, i);
        if ((i & 1) ? memobs_cudaMallocHost(&p, (size_t)n) : memobs_cudaHostAlloc(&p, (size_t)n, 0)) {
            w->fails++;
            continue;
        }
        if (i % 3 == 0 && memobs_pinned_asked(p, n / 3) != MEMOBS_OK) w->fails++;
        if (i >= ROUNDS - KEEP) {
            int k = i - (ROUNDS - KEEP);
            w->keep[k] = p;
            w->keep_size[k] = n;
            w->keep_asked[k] = i % 3 == 0 ? n / 3 : n;
        } else if (memobs_cudaFreeHost(p) != cudaSuccess) {
            w->fails++;
        }
        if (i % 50 == 0) { /* a registered range of its own, in and out */
            unsigned char *r = (unsigned char *)malloc(8192);
            if (!r || memobs_cudaHostRegister(r, 8192, 0) != cudaSuccess ||
                memobs_cudaHostUnregister(r) != cudaSuccess)
                w->fails++;
            free(r);
        }
    }
    w->reg = (unsigned char *)malloc(3 * 4096);
    if (!w->reg || memobs_cudaHostRegister(w->reg, 3 * 4096 - 1, 0) != cudaSuccess) w->fails++;
    return NULL;
}

static void threads(void) {
    static worker_t w[THREADS];
    pthread_t th[THREADS];
    uint64_t cb[MEMOBS_PINNED_CLASSES] = {0}, ch[MEMOBS_PINNED_CLASSES] = {0}, ca[MEMOBS_PINNED_CLASSES] = {0};
    uint64_t held = 0, asked = 0, blocks = 0;
    int t, k;
    unsigned c;
    fresh();
    for (t = 0; t < THREADS; t++) {
        w[t].t = t;
        CHECK_U64(0, pthread_create(&th[t], NULL, worker, &w[t]));
    }
    for (t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    for (t = 0; t < THREADS; t++) {
        CHECK_U64(0, w[t].fails);
        for (k = 0; k < KEEP; k++) {
            c = log2_of(w[t].keep_size[k]);
            cb[c]++, ch[c] += w[t].keep_size[k], ca[c] += w[t].keep_asked[k];
            blocks++, held += w[t].keep_size[k], asked += w[t].keep_asked[k];
        }
        c = log2_of(3 * 4096 - 1);
        cb[c]++, ch[c] += 3 * 4096 - 1, ca[c] += 3 * 4096 - 1;
        blocks++, held += 3 * 4096 - 1, asked += 3 * 4096 - 1;
    }
    CHECK_U64(MEMOBS_OK, memobs_get_pinned(&P));
    CHECK_U64(blocks, P.blocks);
    CHECK_U64(held, P.held_bytes);
    CHECK_U64(asked, P.asked_bytes);
    CHECK_U64(THREADS * (3 * 4096 - 1), P.registered_bytes);
    CHECK_U64(THREADS * (ROUNDS + ROUNDS / 50 + 1), P.allocs);
    CHECK_U64(THREADS * (ROUNDS - KEEP + ROUNDS / 50), P.frees);
    CHECK_U64(THREADS * (ROUNDS / 3), P.asks);
    CHECK(P.peak_held_bytes >= held);
    for (c = 0; c < MEMOBS_PINNED_CLASSES; c++) CHECK_CLASS(c, cb[c], ch[c], ca[c]);
    /* and out again */
    for (t = 0; t < THREADS; t++) {
        for (k = 0; k < KEEP; k++) CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(w[t].keep[k]));
        CHECK_ERR(cudaSuccess, memobs_cudaHostUnregister(w[t].reg));
        free(w[t].reg);
    }
    CHECK_U64(MEMOBS_OK, memobs_get_pinned(&P));
    CHECK_U64(0, P.blocks);
    CHECK_U64(0, P.held_bytes);
    CHECK_U64(0, P.asked_bytes);
    CHECK_U64(0, P.registered_bytes);
    for (c = 0; c < MEMOBS_PINNED_CLASSES; c++) CHECK_CLASS(c, 0, 0, 0);
}

/* ---- misuse ---- */

/* The warnings about pinned memory (memobs_pinned_asked, memobs_get_pinned); others counted apart. */
static int LOGS, OTHER_LOGS;
static char LOG[4][512];
static void log_fn(int level, const char *msg, void *user) {
    (void)level, (void)user;
    if (!strstr(msg, "memobs_pinned_asked") && !strstr(msg, "memobs_get_pinned")) {
        OTHER_LOGS++;
        return;
    }
    if (LOGS < 4) snprintf(LOG[LOGS], sizeof LOG[0], "%s", msg);
    LOGS++;
}

static void misuse(void) {
    void *p = NULL;
    static unsigned char other[64];
    fresh();
    memobs_set_log(log_fn, NULL);
    CHECK_ERR(cudaSuccess, memobs_cudaHostAlloc(&p, 1000, 0));
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_pinned_asked(NULL, 1));
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_pinned_asked(NULL, 2));
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_pinned_asked(other, 1));
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_pinned_asked((char *)p + 1, 1)); /* inside: not a block's start */
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_pinned_asked(p, 1001));
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_pinned_asked(p, 5000));
    CHECK_U64(MEMOBS_OK, memobs_pinned_asked(p, 1000)); /* the whole block: fine */
    CHECK_U64(3, LOGS);
    CHECK_HAS(LOG[0], "memobs_pinned_asked: NULL block");
    CHECK_HAS(LOG[1], "not the start of a live pinned block");
    CHECK_HAS(LOG[2], "more than the block's 1000 bytes held");
    CHECK_U64(MEMOBS_OK, memobs_get_pinned(&P));
    CHECK_U64(2, P.asks_null);
    CHECK_U64(2, P.asks_unknown);
    CHECK_U64(2, P.asks_over);
    CHECK_U64(1, P.asks);
    CHECK_U64(1000, P.asked_bytes); /* the refused asks changed nothing */
    CHECK_CLASS(9, 1, 1000, 1000);
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_get_pinned(NULL));
    CHECK_U64(4, LOGS);
    /* in the outputs */
    CHECK_HAS(written(w_summary, MEMOBS_FORMAT_TEXT),
              "    refused asks: 2 NULL, 2 unknown block, 2 above held; 0 blocks left out (no memory)\n");
    CHECK_HAS(written(w_summary, MEMOBS_FORMAT_JSON), "\"asks\":1,\"asks_null\":2,\"asks_unknown\":2,\"asks_over\":2,");
    CHECK_HAS(written(w_prom, 0), ",reason=\"unknown\"} 2\n");
    /* memobs off: a block allocated then is not seen, and its ask is not a misuse */
    {
        void *q = NULL;
        memobs_set_enabled(0);
        CHECK_ERR(cudaSuccess, memobs_cudaHostAlloc(&q, 4096, 0));
        CHECK_U64(MEMOBS_OK, memobs_pinned_asked(q, 10));
        memobs_set_enabled(1);
        CHECK_U64(MEMOBS_ERR_INVALID, memobs_pinned_asked(q, 10)); /* on again: memobs never saw it */
        CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(q));
    }
    CHECK_U64(MEMOBS_OK, memobs_get_pinned(&P));
    CHECK_U64(3, P.asks_unknown);
    CHECK_U64(1, P.blocks);
    /* off, a block seen before still leaves */
    memobs_set_enabled(0);
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(p));
    memobs_set_enabled(1);
    CHECK_U64(MEMOBS_OK, memobs_get_pinned(&P));
    CHECK_U64(0, P.blocks);
    CHECK_U64(4, LOGS);
    memobs_set_log(NULL, NULL);
}

/* ---- registered ranges and the runtime's refusals ---- */

static void registered(void) {
    static unsigned char buf[5 * 4096] __attribute__((aligned(4096)));
    void *p = NULL;
    fresh();
    CHECK_ERR(cudaSuccess, memobs_cudaHostRegister(buf, 3 * 4096 + 100, cudaHostRegisterDefault));
    CHECK_ERR(cudaErrorHostMemoryAlreadyRegistered, memobs_cudaHostRegister(buf + 4096, 4096, 0));
    CHECK_ERR(cudaErrorHostMemoryNotRegistered, memobs_cudaHostUnregister(buf + 4096));
    CHECK_ERR(cudaErrorInvalidValue, memobs_cudaFreeHost(buf)); /* not from cudaHostAlloc */
    (void)cudaGetLastError();
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost(&p, 100));
    CHECK_ERR(cudaErrorHostMemoryNotRegistered, memobs_cudaHostUnregister(p)); /* allocated, not registered */
    (void)cudaGetLastError();
    CHECK_U64(MEMOBS_OK, memobs_get_pinned(&P));
    CHECK_U64(2, P.blocks);
    CHECK_U64(3 * 4096 + 100 + 100, P.held_bytes);
    CHECK_U64(3 * 4096 + 100, P.registered_bytes);
    CHECK_CLASS(13, 1, 3 * 4096 + 100, 3 * 4096 + 100);
    CHECK_CLASS(6, 1, 100, 100);
    CHECK_U64(MEMOBS_OK, memobs_pinned_asked(buf, 4096)); /* a pool on a registered arena */
    CHECK_HAS(written(w_summary, MEMOBS_FORMAT_TEXT),
              "    of held, 12.10 KiB registered in place (cudaHostRegister: not in RssShmem)\n");
    CHECK_ERR(cudaSuccess, memobs_cudaHostUnregister(buf));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(p));
    CHECK_U64(MEMOBS_OK, memobs_get_pinned(&P));
    CHECK_U64(0, P.blocks);
    CHECK_U64(0, P.held_bytes);
    CHECK_U64(0, P.registered_bytes);
    CHECK_U64(2, P.frees);
}

/* ---- the tracker's table full (MEMOBS_TRACK_CAPACITY=2, set by the script) ---- */

static void full(void) {
    void *p[6];
    int i;
    fresh();
    memobs_set_log(log_fn, NULL); /* the tracker's warning: its table is full */
    for (i = 0; i < 6; i++) CHECK_ERR(cudaSuccess, memobs_cudaHostAlloc(&p[i], (size_t)(1000 << i), 0));
    snap();
    CHECK(S.track.untracked >= 4); /* the tracker kept two */
    CHECK_U64(MEMOBS_OK, memobs_get_pinned(&P));
    CHECK_U64(6, P.blocks);
    CHECK_U64(63000, P.held_bytes);
    for (i = 0; i < 6; i++) CHECK_U64(MEMOBS_OK, memobs_pinned_asked(p[i], 10));
    CHECK_U64(MEMOBS_OK, memobs_get_pinned(&P));
    CHECK_U64(60, P.asked_bytes);
    for (i = 0; i < 6; i++) CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(p[i]));
    CHECK_U64(MEMOBS_OK, memobs_get_pinned(&P));
    CHECK_U64(0, P.blocks);
    CHECK_U64(0, P.held_bytes);
    CHECK_U64(0, P.asked_bytes);
    CHECK_U64(6, P.frees);
    CHECK_U64(1, OTHER_LOGS);
    CHECK_U64(0, LOGS);
    memobs_set_log(NULL, NULL);
}

/* ---- memobs_reset: the peak starts again at what is held ---- */

static void reset(void) {
    void *a = NULL, *b = NULL;
    fresh();
    CHECK_ERR(cudaSuccess, memobs_cudaHostAlloc(&a, 4 * MiB, 0));
    CHECK_ERR(cudaSuccess, memobs_cudaHostAlloc(&b, 2 * MiB, 0));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(a));
    CHECK_U64(MEMOBS_OK, memobs_get_pinned(&P));
    CHECK_U64(6 * MiB, P.peak_held_bytes);
    memobs_reset();
    CHECK_U64(MEMOBS_OK, memobs_get_pinned(&P));
    CHECK_U64(2 * MiB, P.peak_held_bytes);
    CHECK_U64(2 * MiB, P.held_bytes);
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(b));
}

/* ---- MEMOBS_DISABLE: the calls made, nothing seen ---- */

static void disabled(void) {
    void *p = NULL;
    CHECK_ERR(cudaSuccess, memobs_cudaHostAlloc(&p, 4096, 0));
    CHECK_U64(MEMOBS_OK, memobs_pinned_asked(p, 10));
    CHECK_U64(MEMOBS_OK, memobs_get_pinned(&P));
    CHECK_U64(0, P.seen);
    CHECK_U64(0, P.blocks);
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(p));
    CHECK_U64(1, cudadbl_calls("cudaHostAlloc"));
    CHECK_U64(1, cudadbl_calls("cudaFreeHost"));
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    check__suite = TEST_SUITE;
    cudadbl_reset();
    (void)classes;
    (void)w_html;
    if (!strcmp(mode, "engine")) RUN(engine);
    else if (!strcmp(mode, "threads")) RUN(threads);
    else if (!strcmp(mode, "misuse")) RUN(misuse);
    else if (!strcmp(mode, "register")) RUN(registered);
    else if (!strcmp(mode, "full")) RUN(full);
    else if (!strcmp(mode, "reset")) RUN(reset);
    else if (!strcmp(mode, "disabled")) RUN(disabled);
    else {
        printf("not ok - %s: unknown mode '%s'\n", check__suite, mode);
        return 1;
    }
    return CHECK_DONE();
}
