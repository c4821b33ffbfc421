/* memobs' regions and markers as NVTX ranges and marks (memobs_cuda.h),
   checked the way Nsight Systems receives them: the program is run with
   NVTX_INJECTION64_PATH naming the injection double
   tests/cuda/nvtx/nvtx_inject.c, which NVTX's loader (compiled in from the CUDA
   Toolkit's nvtx3 headers) dlopens at the first NVTX call; the double
   writes each call to the file NVTXDBL_LOG names, and the tests read it
   back. Linked with the CUDA runtime double (tests/cuda/cudart_double.c):
   no GPU, no libcudart. Built as C99, C11, C++17, under nvcc and TSan, and
   with MEMOBS_NO_NVTX and MEMOBS_DISABLE, by tests/cuda/test_nvtx.sh.

   Without arguments: the in-process tests (MEMOBS_NVTX unset). With a
   mode, one fresh process: "env_off" (run with MEMOBS_NVTX=0 or another
   "off" word), "env_on" (MEMOBS_NVTX=1 or another "on" word), "env_bogus"
   (a malformed MEMOBS_NVTX: its one warning is checked by the script). A
   build without NVTX (MEMOBS_NO_NVTX, MEMOBS_DISABLE) runs its own tests. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../memobs_cuda.h"
#include "../check.h"
#include "../memobs_test.h"
#include "nvtx/nvtxdbl_log.h"

#include <pthread.h>

#ifndef TEST_SUITE
#define TEST_SUITE "nvtx"
#endif

static long off; /* the log read so far */
__attribute__((unused)) static const char *news(void) { return nvtxdbl_since(&off, 1); }

static void log_start(void) {
    log_count = 0;
    memobs_set_log(capture_log, NULL);
}

#ifdef MEMOBS_CUDA__NVTX

/* No NVTX call at load time: the tool is loaded at the first region. */
static void nothing_before_the_first_region(void) {
    CHECK_U64(1, memobs_cuda_get_nvtx());
    CHECK(!nvtxdbl_exists());
    memobs_region_begin("decode_step");
    CHECK(nvtxdbl_exists());
    memobs_region_end();
    CHECK_STR("init\ncreate memobs\nregister memobs decode_step\npush memobs decode_step\npop memobs\n", news());
}

/* Nested regions, by name, by macro and by id: pushes and pops in order,
   each name registered once. */
static void nested(void) {
    memobs_region_t kv = memobs_region_intern("kv_copy");
    int i;
    CHECK(kv > 0);
    for (i = 0; i < 2; i++) {
        memobs_region_begin("decode_step");
        MEMOBS_REGION_BEGIN("attention");
        memobs_region_begin_id(kv);
        CHECK_U64(3, memobs_region_depth());
        memobs_region_end();
        MEMOBS_REGION_END();
        memobs_region_end();
        if (i == 0)
            CHECK_STR("push memobs decode_step\nregister memobs attention\npush memobs attention\n"
                      "register memobs kv_copy\npush memobs kv_copy\npop memobs\npop memobs\npop memobs\n",
                      news());
        else
            CHECK_STR("push memobs decode_step\npush memobs attention\npush memobs kv_copy\npop memobs\n"
                      "pop memobs\npop memobs\n",
                      news());
    }
    CHECK_U64(0, memobs_region_depth());
}

/* Markers are marks, inside a range or not. */
static void markers(void) {
    memobs_mark("kv_evict");
    MEMOBS_MARK("kv_evict");
    memobs_region_begin("decode_step");
    memobs_mark_id(memobs_region_intern("decode_step"));
    memobs_region_end();
    CHECK_STR("register memobs kv_evict\nmark memobs kv_evict\nmark memobs kv_evict\npush memobs decode_step\n"
              "mark memobs decode_step\npop memobs\n",
              news());
}

/* 70 nested: past MEMOBS_REGION_DEPTH (memobs ends those with id -1) and
   past the 64 pushes the hook remembers one by one; every begin pushes,
   every end pops. */
static void deeper_than_the_stack(void) {
    static char want[8192];
    size_t o = 0;
    int i;
    log_start();
    for (i = 0; i < 70; i++) memobs_region_begin("deep");
    CHECK_U64(70, memobs_region_depth());
    for (i = 0; i < 70; i++) memobs_region_end();
    log_stop();
    CHECK_U64(0, memobs_region_depth());
    o += (size_t)snprintf(want + o, sizeof want - o, "register memobs deep\n");
    for (i = 0; i < 70; i++) o += (size_t)snprintf(want + o, sizeof want - o, "push memobs deep\n");
    for (i = 0; i < 70; i++) o += (size_t)snprintf(want + o, sizeof want - o, "pop memobs\n");
    CHECK_STR(want, news());
    CHECK_U64(1, log_has("deeper than MEMOBS_REGION_DEPTH"));
}

/* An end with no region open pops nothing. */
static void unmatched_end(void) {
    log_start();
    memobs_region_end();
    memobs_region_begin("decode_step");
    memobs_region_end();
    memobs_region_end();
    log_stop();
    CHECK_STR("push memobs decode_step\npop memobs\n", news());
    CHECK_U64(1, log_has("with no region open"));
}

/* A region with no name kept is "(other)", in NVTX too. */
static void no_name(void) {
    log_start();
    memobs_region_begin(NULL);
    memobs_region_end();
    log_stop();
    CHECK_STR("register memobs (other)\npush memobs (other)\npop memobs\n", news());
}

/* Switched at run time: off makes no call; a region keeps the state it
   began with, so pushes and pops stay balanced across a switch. */
static void switched_at_run_time(void) {
    CHECK_U64(MEMOBS_OK, memobs_cuda_set_nvtx(0));
    CHECK_U64(0, memobs_cuda_get_nvtx());
    memobs_region_begin("decode_step");
    memobs_mark("kv_evict");
    memobs_region_end();
    CHECK_STR("", news());
    CHECK_U64(MEMOBS_OK, memobs_cuda_set_nvtx(1));
    CHECK_U64(1, memobs_cuda_get_nvtx());
    memobs_region_begin("decode_step");
    memobs_mark("kv_evict");
    memobs_region_end();
    CHECK_STR("push memobs decode_step\nmark memobs kv_evict\npop memobs\n", news());
    /* begun on, ended off: popped */
    memobs_region_begin("decode_step");
    CHECK_U64(MEMOBS_OK, memobs_cuda_set_nvtx(0));
    memobs_region_begin("attention");
    memobs_mark("kv_evict");
    memobs_region_end();
    memobs_region_end();
    CHECK_STR("push memobs decode_step\npop memobs\n", news());
    /* begun off, ended on: not popped */
    memobs_region_begin("decode_step");
    CHECK_U64(MEMOBS_OK, memobs_cuda_set_nvtx(1));
    memobs_region_begin("attention");
    memobs_region_end();
    memobs_region_end();
    CHECK_STR("push memobs attention\npop memobs\n", news());
    CHECK_U64(MEMOBS_OK, memobs_cuda_set_nvtx(5)); /* any non-zero: on */
    CHECK_U64(1, memobs_cuda_get_nvtx());
}

static size_t lines(const char *s) {
    size_t n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

#define ROUNDS 200
static pthread_barrier_t start;
static long tids[2];
static void *worker(void *arg) {
    int k = (int)(long)arg, i;
    char step[32], attn[32];
    snprintf(step, sizeof step, "t%d_step", k);
    snprintf(attn, sizeof attn, "t%d_attn", k);
    tids[k] = nvtxdbl_gettid();
    pthread_barrier_wait(&start);
    for (i = 0; i < ROUNDS; i++) {
        memobs_region_begin(step);
        memobs_region_begin("shared");
        memobs_region_begin(attn);
        memobs_mark("shared");
        memobs_region_end();
        memobs_region_end();
        memobs_region_end();
    }
    return NULL;
}

/* Two threads, each with its own nested regions (and one name used by
   both, registered before they start): each thread's lines are its own
   well-formed sequence. */
static void threads(void) {
    static char want[2][65536], got[65536];
    const char *text;
    pthread_t t[2];
    int k, i;
    memobs_mark("shared"); /* registered here, not by a racing thread */
    CHECK_STR("register memobs shared\nmark memobs shared\n", news());
    pthread_barrier_init(&start, NULL, 2);
    for (k = 0; k < 2; k++) CHECK_U64(0, pthread_create(&t[k], NULL, worker, (void *)(long)k));
    for (k = 0; k < 2; k++) CHECK_U64(0, pthread_join(t[k], NULL));
    pthread_barrier_destroy(&start);
    text = nvtxdbl_since(&off, 0);
    CHECK(tids[0] != tids[1]);
    for (k = 0; k < 2; k++) {
        size_t o = 0;
        for (i = 0; i < ROUNDS; i++) {
            if (i == 0) o += (size_t)snprintf(want[k] + o, sizeof want[k] - o, "register memobs t%d_step\n", k);
            o += (size_t)snprintf(want[k] + o, sizeof want[k] - o, "push memobs t%d_step\npush memobs shared\n", k);
            if (i == 0) o += (size_t)snprintf(want[k] + o, sizeof want[k] - o, "register memobs t%d_attn\n", k);
            o += (size_t)snprintf(want[k] + o, sizeof want[k] - o,
                                  "push memobs t%d_attn\nmark memobs shared\npop memobs\npop memobs\npop memobs\n", k);
        }
        CHECK_STR(want[k], nvtxdbl_thread(text, tids[k], got, sizeof got));
    }
    CHECK_U64(lines(want[0]) + lines(want[1]), lines(text)); /* no line of another thread */
}

/* Nothing else was called: every line so far was checked, and the double
   found no broken rule. */
static void no_errors(void) {
    long all = 0;
    const char *text = nvtxdbl_since(&all, 1);
    CHECK(strstr(text, "error") == NULL);
    CHECK(strstr(text, "core ") == NULL);
    CHECK(strstr(text, "ascii:") == NULL);
}

/* MEMOBS_NVTX off: no NVTX call at all (the tool is never loaded), until
   memobs_cuda_set_nvtx(1); a region open at that moment pops nothing. */
static void env_off(void) {
    CHECK_U64(0, memobs_cuda_get_nvtx());
    memobs_region_begin("decode_step");
    memobs_mark("kv_evict");
    memobs_region_end();
    memobs_region_begin("decode_step");
    CHECK(!nvtxdbl_exists());
    CHECK(__atomic_load_n(&memobs__reg_hook, __ATOMIC_RELAXED) == NULL); /* not installed: no cost */
    CHECK_U64(MEMOBS_OK, memobs_cuda_set_nvtx(1));
    CHECK_U64(1, memobs_cuda_get_nvtx());
    CHECK(__atomic_load_n(&memobs__reg_hook, __ATOMIC_RELAXED) == &memobs_cuda__nvtx_hook);
    memobs_region_begin("attention");
    memobs_region_end();
    memobs_region_end();
    CHECK_STR("init\ncreate memobs\nregister memobs attention\npush memobs attention\npop memobs\n", news());
}

/* MEMOBS_NVTX on (or malformed: on, with a warning the script checks). */
static void env_on(void) {
    CHECK_U64(1, memobs_cuda_get_nvtx());
    memobs_region_begin("decode_step");
    memobs_region_end();
    CHECK_STR("init\ncreate memobs\nregister memobs decode_step\npush memobs decode_step\npop memobs\n", news());
}

#else /* built without NVTX: MEMOBS_NO_NVTX or MEMOBS_DISABLE */

/* No NVTX call, whatever is asked. */
static void compiled_out(void) {
    log_start();
    CHECK_U64(0, memobs_cuda_get_nvtx());
    CHECK_U64(MEMOBS_OK, memobs_cuda_set_nvtx(0));
#ifdef MEMOBS_DISABLE
    CHECK_U64(MEMOBS_OK, memobs_cuda_set_nvtx(1)); /* like every setting of a compiled-out build */
    CHECK_U64(0, log_count);
#else
    CHECK_U64((unsigned)MEMOBS_ERR_INVALID, (unsigned)memobs_cuda_set_nvtx(1));
    CHECK_U64(1, log_count);
    CHECK_U64(1, log_has("memobs_cuda_set_nvtx(1): NVTX is not compiled in"));
#endif
    log_stop();
    CHECK_U64(0, memobs_cuda_get_nvtx());
    memobs_region_begin("decode_step");
    memobs_mark("kv_evict");
    memobs_region_end();
    CHECK(!nvtxdbl_exists());
    CHECK(__atomic_load_n(&memobs__reg_hook, __ATOMIC_RELAXED) == NULL);
}
#endif

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    check__suite = TEST_SUITE;
    (void)mode;
#ifdef MEMOBS_CUDA__NVTX
    if (strcmp(mode, "env_off") == 0) {
        RUN(env_off);
        RUN(no_errors);
    } else if (strcmp(mode, "env_on") == 0 || strcmp(mode, "env_bogus") == 0) {
        RUN(env_on);
        RUN(no_errors);
    } else {
        RUN(nothing_before_the_first_region);
        RUN(nested);
        RUN(markers);
        RUN(deeper_than_the_stack);
        RUN(unmatched_end);
        RUN(no_name);
        RUN(switched_at_run_time);
        RUN(threads);
        RUN(no_errors);
    }
#else
    RUN(compiled_out);
#endif
    return CHECK_DONE();
}
