/* Device memory by component at an out-of-memory error, against the CUDA
   runtime double (tests/cuda/cudart_double.c: a device of 64 MiB, 4 MiB
   of it used outside memobs, so a large cudaMalloc fails with
   cudaErrorMemoryAllocation as the runtime's does). Allocations tagged
   "weights" and "kv_cache", two made untagged inside the region
   "cuda_graph_pool", one untagged with a C stack, one with neither; then
   out-of-memory errors. Each mode runs in a fresh process
   (tests/cuda/test_oom.sh), which also checks the files left behind. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../memobs_cuda.h"
#include "cudart_double.h"
#include "../check.h"
#include "../memobs_test.h"
#include "cuda_test.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef TEST_SUITE
#define TEST_SUITE "cuda-oom"
#endif

#define MIB ((size_t)1 << 20)

static const char *arg_path; /* a mode's second argument */

static char *read_path(const char *path) {
    FILE *f = fopen(path, "r");
    char *buf;
    if (!f) return (char *)calloc(1, 1);
    buf = read_file(f);
    fclose(f);
    return buf ? buf : (char *)calloc(1, 1);
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static void log_start(void) {
    log_count = 0;
    memobs_set_log(capture_log, NULL);
}

static void *blocks[8];

/* The untagged allocation with a stack: its top frame names it (one name
   in C and C++). */
#ifdef __cplusplus
extern "C" void test_oom_scratch_alloc(void **p, size_t n);
#endif
__attribute__((noinline)) void test_oom_scratch_alloc(void **p, size_t n) {
    memobs_track_set_callstack(8);
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(p, n));
    memobs_track_set_callstack(0);
    __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays */
}

/* 38 MiB tracked on device 0: weights 16 MiB in 2, kv_cache 12 MiB in 1,
   cuda_graph_pool 6 MiB in 2, the scratch 3 MiB, 1 MiB of unknown, and
   a pinned block that is not device memory. 64 MiB in all, 4 MiB
   outside memobs: 22 MiB free. */
static void setup(void) {
    void *h = NULL;
    memobs_track_set_callstack(0);
    CHECK_U64(0, (unsigned)cudadbl_set_total(0, 64 * MIB));
    CHECK_U64(0, (unsigned)cudadbl_set_outside(0, 4 * MIB));
    CHECK_ERR(cudaSuccess, cudaMalloc(&blocks[0], 8 * MIB));
    memobs_track_alloc_full(blocks[0], 8 * MIB, MEMOBS_MEM_DEVICE, 0, NULL, "weights", 0);
    memobs_region_begin("cuda_graph_pool"); /* a tag wins over the region */
    CHECK_ERR(cudaSuccess, cudaMalloc(&blocks[1], 8 * MIB));
    memobs_track_alloc_full(blocks[1], 8 * MIB, MEMOBS_MEM_DEVICE, 0, NULL, "weights", 0);
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&blocks[3], 4 * MIB));
    memobs_region_begin("inner"); /* the innermost region names it */
    memobs_region_end();
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&blocks[4], 2 * MIB));
    memobs_region_end();
    CHECK_ERR(cudaSuccess, cudaMalloc(&blocks[2], 12 * MIB));
    memobs_track_alloc_full(blocks[2], 12 * MIB, MEMOBS_MEM_DEVICE, 0, NULL, "kv_cache", 0);
    test_oom_scratch_alloc(&blocks[5], 3 * MIB);
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&blocks[6], 1 * MIB));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost(&h, 5 * MIB));
    blocks[7] = h;
}

/* The row of one component, as memobs_print_components writes it. */
static void row(char *buf, size_t len, uint64_t bytes, uint64_t blocks_, double share, const char *rule,
                const char *name) {
    char b[32];
    snprintf(buf, len, "\n  %14llu %10s %8llu %6.1f%%  %-7s %s", (unsigned long long)bytes,
             memobs_format_bytes(b, sizeof b, bytes), (unsigned long long)blocks_, share, rule, name);
}

/* The breakdown of the 38 MiB in f's text, in order, and the device's
   lines. */
static void check_breakdown(const char *out) {
    char want[5][256], line[512], fb[32];
    const char *at[5], *sec = strstr(out, "== memobs components == device 0: 7 live device allocations, ");
    int i;
    CHECK(sec != NULL);
    if (!sec) return;
    row(want[0], sizeof want[0], 16 * MIB, 2, 1600.0 / 38, "tag", "weights");
    row(want[1], sizeof want[1], 12 * MIB, 1, 1200.0 / 38, "tag", "kv_cache");
    row(want[2], sizeof want[2], 6 * MIB, 2, 600.0 / 38, "region", "cuda_graph_pool");
    row(want[3], sizeof want[3], 3 * MIB, 1, 300.0 / 38, "frame", "test_oom_scratch_alloc+0x");
    row(want[4], sizeof want[4], 1 * MIB, 1, 100.0 / 38, "unknown", "(unknown)");
    for (i = 0; i < 5; i++) {
        at[i] = strstr(sec, want[i]);
        CHECK_HAS(sec, want[i]);
        if (i && at[i] && at[i - 1]) CHECK(at[i - 1] < at[i]); /* largest first */
    }
    snprintf(line, sizeof line, "\n  device 0: driver %llu bytes used of %llu, %llu free; memobs tracks %llu; outside "
             "memobs %llu bytes (%s)\n", (unsigned long long)(42 * MIB), (unsigned long long)(64 * MIB),
             (unsigned long long)(22 * MIB), (unsigned long long)(38 * MIB), (unsigned long long)(4 * MIB),
             memobs_format_bytes(fb, sizeof fb, 4 * MIB));
    CHECK_HAS(sec, line);
    snprintf(line, sizeof line, "\n  device 0: largest free block: not reported (the CUDA driver gives only the free "
             "total, %s)\n", memobs_format_bytes(fb, sizeof fb, 22 * MIB));
    CHECK_HAS(sec, line);
}

static void teardown(void) {
    int i;
    for (i = 0; i < 7; i++) CHECK_ERR(cudaSuccess, memobs_cudaFree(blocks[i]));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(blocks[7]));
    cudadbl_reset();
}

/* The report to a file (arg_path): the breakdown, exact and sorted; with
   the history on, the snapshot written next to it once (the script checks
   the pickle); a second error writes none. */
static void mode_report(void) {
    void *p = (void *)&p;
    char *out, want[1200];
    memobs_component_t c[8];
    log_start();
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_set_oom_report(arg_path));
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_torch_history_start(0)); /* the snapshot's history from here */
    setup();
    CHECK_U64(5, memobs_get_components(0, c, 8));
    CHECK_STR("weights", c[0].name);
    CHECK_U64(MEMOBS_COMPONENT_TAG, c[0].from);
    CHECK_U64(16 * MIB, c[0].bytes);
    CHECK_U64(2, c[0].blocks);
    CHECK_STR("cuda_graph_pool", c[2].name);
    CHECK_U64(MEMOBS_COMPONENT_REGION, c[2].from);
    CHECK_U64(MEMOBS_COMPONENT_FRAME, c[3].from);
    CHECK(strncmp(c[3].name, "test_oom_scratch_alloc+0x", 25) == 0);
    CHECK_U64(MEMOBS_COMPONENT_UNKNOWN, c[4].from);
    CHECK_U64(0, memobs_get_components(1, NULL, 0)); /* nothing on device 1 */
    CHECK_ERR(cudaErrorMemoryAllocation, memobs_cudaMalloc(&p, 32 * MIB));
    out = read_path(arg_path);
    check_breakdown(out);
    snprintf(want, sizeof want, "\n  PyTorch memory snapshot (with its history) written to %s.pickle\n", arg_path);
    CHECK_HAS(out, want);
    /* the existing contents stay */
    CHECK_HAS(out, "== memobs summary ==");
    CHECK_HAS(out, "== memobs allocations == rank 0 pid ");
    free(out);
    snprintf(want, sizeof want, "%s.pickle", arg_path);
    CHECK(exists(want));
    CHECK(rename(want, (snprintf(want + 600, 500, "%s.first.pickle", arg_path), want + 600)) == 0);
    /* a second error: reported, no snapshot written again */
    CHECK_ERR(cudaErrorMemoryAllocation, memobs_cudaMalloc(&p, 40 * MIB));
    CHECK_U64(2, memobs_cuda_get_oom_count());
    CHECK(!exists(want));
    out = read_path(arg_path);
    CHECK_HAS(out, "(out of memory 2 of 3)");
    CHECK(strstr(strstr(out, "(out of memory 2 of 3)"), "PyTorch memory snapshot") == NULL);
    free(out);
    CHECK_U64(0, (unsigned)log_count);
    log_stop();
    teardown();
}

/* History off: the report has the breakdown, no snapshot is written (the
   script checks the working directory). */
static void mode_no_history(void) {
    void *p = (void *)&p;
    char *out;
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_set_oom_report(arg_path));
    setup();
    CHECK_ERR(cudaErrorMemoryAllocation, memobs_cudaMalloc(&p, 32 * MIB));
    out = read_path(arg_path);
    check_breakdown(out);
    CHECK(strstr(out, "PyTorch memory snapshot") == NULL);
    free(out);
    teardown();
}

/* The history on (from the environment: MEMOBS_TORCH_SNAPSHOT, or by the
   call here), the report on stderr: the snapshot goes where the
   environment or the default says; an unwritable MEMOBS_OOM_SNAPSHOT
   warns once, and a second error tries no more. */
static void mode_history(void) {
    void *p = (void *)&p;
    const char *env = getenv("MEMOBS_OOM_SNAPSHOT");
    int bad = env && strstr(env, "/no/such/dir/") != NULL;
    log_start();
    if (!getenv("MEMOBS_TORCH_SNAPSHOT")) CHECK_U64(MEMOBS_OK, (unsigned)memobs_torch_history_start(0));
    setup();
    CHECK_ERR(cudaErrorMemoryAllocation, memobs_cudaMalloc(&p, 32 * MIB));
    CHECK_U64(bad ? 1 : 0, (unsigned)log_count);
    if (bad) CHECK_U64(1, (unsigned)log_has("/no/such/dir/"));
    CHECK_ERR(cudaErrorMemoryAllocation, memobs_cudaMalloc(&p, 32 * MIB));
    CHECK_U64(bad ? 1 : 0, (unsigned)log_count); /* no second try */
    if (log_count != (bad ? 1 : 0)) log_dump();
    log_stop();
    teardown();
}

/* The on-demand block (MEMOBS_COMPONENTS=1 in the environment, or not):
   the text and JSON summaries and the HTML report to files named after
   arg_path, which the script reads. */
static void mode_summary(void) {
    char path[600];
    setup();
    snprintf(path, sizeof path, "%s.txt", arg_path);
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_write_summary_file(path, MEMOBS_FORMAT_TEXT));
    snprintf(path, sizeof path, "%s.json", arg_path);
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_write_summary_file(path, MEMOBS_FORMAT_JSON));
    snprintf(path, sizeof path, "%s.html", arg_path);
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_write_html_file(path));
    snprintf(path, sizeof path, "%s.print", arg_path);
    {
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        if (f) {
            CHECK_U64(MEMOBS_OK, (unsigned)memobs_print_components(f, -1));
            CHECK_U64(MEMOBS_OK, (unsigned)memobs_print_components(f, 0));
            fclose(f);
        }
    }
    log_start();
    CHECK_U64((unsigned)MEMOBS_ERR_INVALID, (unsigned)memobs_print_components(NULL, 0));
    CHECK_U64((unsigned)MEMOBS_ERR_INVALID, (unsigned)memobs_print_components(stdout, MEMOBS_MAX_DEVICES));
    CHECK_U64(0, memobs_get_components(-2, NULL, 0));
    CHECK_U64(3, (unsigned)log_count);
    log_stop();
    {
        char *out = read_path(path);
        check_breakdown(out);
        CHECK_HAS(out, "== memobs components == all devices: 7 live device allocations, ");
        free(out);
    }
    teardown();
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    check__suite = TEST_SUITE;
    arg_path = argc > 2 ? argv[2] : NULL;
    cudadbl_reset();
    if (!strcmp(mode, "report") && arg_path) {
        RUN(mode_report);
    } else if (!strcmp(mode, "no_history") && arg_path) {
        RUN(mode_no_history);
    } else if (!strcmp(mode, "history")) {
        RUN(mode_history);
    } else if (!strcmp(mode, "summary") && arg_path) {
        RUN(mode_summary);
    } else {
        printf("not ok - %s: unknown mode '%s'\n", check__suite, mode);
        return 1;
    }
    return CHECK_DONE();
}
