/* One rank of the dashboard test's 4-rank run (tests/serving/test_dashboard.sh):
   records known, rank-dependent figures in two rounds and writes its
   Prometheus text after each, for node_exporter's textfile collector.

     rank JOB_ID RANK PROM_FILE [CGROUP_ROOT]

   Round 1: records, samples, writes PROM_FILE, prints "written 1 DIRS" on
   stdout (DIRS: the transfer directions this memobs.h has), then waits for
   a line on stdin; round 2 records the same again, writes, prints
   "written 2 DIRS" and exits. With PROMETHEUS_MULTIPROC_DIR set
   (tests/serving/test_prom_multiproc.sh), each round calls memobs_flush()
   just before it writes PROM_FILE, so the prometheus_client multiprocess
   files hold the same figures, and round 2 waits for a line too before
   it exits. Built with memobs_cuda.h against the CUDA
   runtime double (tests/cuda/), so the samples carry the driver's figures
   of device 0: used = the double's live device memory + its "outside".

   tests/serving/dashboard/check.py models every figure below from the same
   parameters; keep the two in step. Per round, for rank r:
     transfers  per direction d: 100 records, record i in phase i % 3
                (0 unphased, 1 prefill, 2 decode), of size 2^(12+d+g) - 64r
                where g = 0 (i < 50), 1 (i < 90), 2 (i < 99), 3 (i = 99):
                in the size buckets 12+d to 15+d, so p50, p90 and p99 are
                the bounds 2^(12+d), 2^(13+d), 2^(14+d), each with a filled
                bucket above it (a quantile on a bound with an empty bucket
                above it would jump to that bucket's top on a rounding);
                records with i % 4 == 0 are timed, ns = size (d + 1) / (r + 1)
     TTFT       98 samples: one in each bucket from (0.25, 0.5] to (80, 160]
                (TTFT_FILL), 40 of 0.3 s, 45 of TTFT2[r], 2 of 15 s (and the 2
                completed requests' own, under 0.25 s); no bucket a
                percentile can land on is empty, as for the sizes
     TPOT       100 samples: one in each bucket from (0.025, 0.05] to
                (20, 40] (TPOT_FILL), 40 of 0.03 s, 40 of TPOT2[r], 4 of 1.5 s
     requests   1 + r begun then abandoned (timeout 1 ns and a summary;
                the previous round's in-flight ones go with them), 2
                completed (begin, token, end), 4 - r aborted (begin, end),
                2 + r left in flight; r + 1 tokens of unknown requests
     regions    "prefill_step" (r + 1) x 2 ms, "decode_step" 4 x 1 ms,
                "kv_offload" 2 x 0.5 ms (spun on the clock: measured, not
                exact); one region end with none open
     memory     device: (r + 1) x 2 MiB cudaMalloc'd (live), the double's
                outside memory set to k (r + 1) MiB in round k; host:
                (r + 1) x 100000 bytes tracked (live) and 4096 allocated
                and freed; pinned: 65536 (live)
     collectives comm "tp" (rank r of 4): 3 all_reduce in prefill of
                (r + 1) MiB, 200 us each; 2 all_gather in decode of 256 KiB,
                (r + 1) x 50 us each
     samples    12 (memobs_sample_now), so the host, device and leak gauges
                exist; the container's memory is this machine's cgroup, or,
                given CGROUP_ROOT, a cgroup v2 fixture tree the test wrote
                there (with a limit: the machine's may have none)
     in flight  r + 1 transfers of 1 MiB to storage (h2s, prefill) and one
                of 4096 (r + 1) bytes from the device to storage (d2s,
                decode) begun (memobs_xfer_begin) and never ended
     counter    memobs_user_dash_round_total: the round */
#define MEMOBS_IMPLEMENTATION
#include "../../../memobs_cuda.h"
#include "../../cuda/cudart_double.h"

#include <stdio.h>
#include <stdlib.h>

#define MIB (UINT64_C(1) << 20)

static const double TTFT_FILL[11] = {0.3, 0.6, 0.9, 2.0, 4.0, 6.0, 9.0, 15.0, 30.0, 60.0, 100.0};
static const double TTFT2[4] = {0.9, 2.0, 4.0, 7.0};
static const double TPOT_FILL[16] = {0.03, 0.06, 0.09, 0.12, 0.18, 0.25, 0.35, 0.45,
                                     0.6,  0.9,  1.5,  4.0,  6.0,  9.0,  15.0, 30.0};
static const double TPOT2[4] = {0.09, 0.18, 0.35, 0.6};

static uint64_t ns_of(double s) { return (uint64_t)(s * 1e9 + 0.5); }

static void spin_region(const char *name, uint64_t ns) {
    uint64_t t0;
    memobs_region_begin(name);
    t0 = memobs_now_ns();
    while (memobs_now_ns() - t0 < ns) {
    }
    memobs_region_end();
}

static void transfers(int r) {
    int d, i;
    for (d = 0; d < MEMOBS_DIRS; d++) {
        for (i = 0; i < 100; i++) {
            int shift = i < 50 ? 12 : i < 90 ? 13 : i < 99 ? 14 : 15;
            uint64_t size = (UINT64_C(1) << (shift + d)) - 64u * (uint64_t)r;
            memobs_phase_t ph = (memobs_phase_t)(i % 3);
            if (i % 4 == 0)
                memobs_record_xfer_ns((memobs_dir_t)d, size, ph, size * (uint64_t)(d + 1) / (uint64_t)(r + 1));
            else
                memobs_record_xfer((memobs_dir_t)d, size, ph);
        }
    }
}

static void latencies(int r) {
    int i;
    for (i = 0; i < 11; i++) memobs_record_ttft(ns_of(TTFT_FILL[i]));
    for (i = 0; i < 87; i++) memobs_record_ttft(ns_of(i < 40 ? 0.3 : i < 85 ? TTFT2[r] : 15.0));
    for (i = 0; i < 16; i++) memobs_record_tpot(ns_of(TPOT_FILL[i]));
    for (i = 0; i < 84; i++) memobs_record_tpot(ns_of(i < 40 ? 0.03 : i < 80 ? TPOT2[r] : 1.5));
}

static void requests(int r, int round) {
    memobs_summary_t *s = (memobs_summary_t *)malloc(sizeof *s);
    uint64_t base = (uint64_t)round * 1000u, t0;
    int i;
    for (i = 0; i < 1 + r; i++) memobs_request_begin(base + 100u + (uint64_t)i);
    (void)memobs_request_set_timeout(1);
    t0 = memobs_now_ns();
    while (memobs_now_ns() - t0 < 1000u) {
    }
    memobs_get_summary(s); /* ends every request idle past 1 ns as abandoned */
    free(s);
    (void)memobs_request_set_timeout(0);
    for (i = 0; i < 2; i++) {
        memobs_request_begin(base + 200u + (uint64_t)i);
        memobs_request_token(base + 200u + (uint64_t)i);
        memobs_request_end(base + 200u + (uint64_t)i);
    }
    for (i = 0; i < 4 - r; i++) {
        memobs_request_begin(base + 300u + (uint64_t)i);
        memobs_request_end(base + 300u + (uint64_t)i);
    }
    for (i = 0; i < 2 + r; i++) memobs_request_begin(base + 400u + (uint64_t)i);
    for (i = 0; i < r + 1; i++) memobs_request_token(base + 900u + (uint64_t)i);
}

static void regions(int r) {
    int i;
    for (i = 0; i < r + 1; i++) spin_region("prefill_step", 2000000u);
    for (i = 0; i < 4; i++) spin_region("decode_step", 1000000u);
    for (i = 0; i < 2; i++) spin_region("kv_offload", 500000u);
    memobs_region_end(); /* none open: region_unmatched_ends */
}

static int memory(int r, int round) {
    static char blocks[3]; /* addresses the tracker files the host and pinned blocks under */
    void *dev = NULL, *scratch = NULL;
    if (memobs_cudaMalloc(&dev, (size_t)(r + 1) * 2u * MIB) != cudaSuccess) return 1;
    cudadbl_set_outside(0, (size_t)round * (size_t)(r + 1) * MIB);
    memobs_track_alloc_full(&blocks[round - 1], (uint64_t)(r + 1) * 100000u, MEMOBS_MEM_HOST, 0, NULL, "host",
                            0);
    if (round == 1) memobs_track_alloc_full(&blocks[2], 65536u, MEMOBS_MEM_PINNED, 0, NULL, "pinned", 0);
    scratch = malloc(1);
    memobs_track_alloc_full(scratch, 4096u, MEMOBS_MEM_HOST, 0, NULL, "scratch", 0);
    memobs_track_free(scratch);
    free(scratch);
    return 0;
}

static int inflight(int r) {
    int i;
    for (i = 0; i < r + 1; i++)
        if (!memobs_xfer_begin(MEMOBS_DIR_H2S, MIB, MEMOBS_PHASE_PREFILL)) return 1;
    return !memobs_xfer_begin(MEMOBS_DIR_D2S, 4096u * (uint64_t)(r + 1), MEMOBS_PHASE_DECODE);
}

static void collectives(int r) {
    memobs_comm_t tp = memobs_coll_register_comm("tp", 0x7470u, r, 4, 1);
    int i;
    for (i = 0; i < 3; i++)
        memobs_record_coll(tp, MEMOBS_COLL_ALL_REDUCE, (uint64_t)(r + 1) * MIB, MEMOBS_PHASE_PREFILL, 200000u);
    for (i = 0; i < 2; i++)
        memobs_record_coll(tp, MEMOBS_COLL_ALL_GATHER, 256u * 1024u, MEMOBS_PHASE_DECODE, (uint64_t)(r + 1) * 50000u);
}

int main(int argc, char **argv) {
    memobs_counter_t round_counter;
    char line[64];
    int r, round, i, mp = getenv("PROMETHEUS_MULTIPROC_DIR") != NULL;
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: rank JOB_ID RANK PROM_FILE [CGROUP_ROOT]\n");
        return 2;
    }
    if (argc == 5) memobs__cg_set_root(argv[4]); /* a test-only root */
    r = atoi(argv[2]);
    if (memobs_set_identity(argv[1], r, r, 4) != MEMOBS_OK) return 2;
    cudadbl_set_total(0, (size_t)1 << 30);
    round_counter = memobs_counter_register("dash_round", "The dashboard test's round (1, then 2).");
    for (round = 1; round <= 2; round++) {
        transfers(r);
        latencies(r);
        requests(r, round);
        regions(r);
        if (memory(r, round)) {
            fprintf(stderr, "rank %d: cudaMalloc failed\n", r);
            return 1;
        }
        collectives(r);
        if (inflight(r)) {
            fprintf(stderr, "rank %d: memobs_xfer_begin gave no token\n", r);
            return 1;
        }
        for (i = 0; i < 12; i++) (void)memobs_sample_now();
        memobs_counter_add(round_counter, 1);
        if (mp && memobs_flush() != MEMOBS_OK) return 1; /* the multiprocess files, with the same figures */
        if (memobs_write_prometheus_file(argv[3]) != MEMOBS_OK) return 1;
        printf("written %d %d\n", round, MEMOBS_DIRS);
        fflush(stdout);
        if ((round == 1 || mp) && !fgets(line, sizeof line, stdin)) return 1;
    }
    return 0;
}
