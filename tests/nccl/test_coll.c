/* Collectives and peers (memobs.h, "Collectives and peers"): the
   bandwidths of nccl-tests on the examples of the profiler plugin's driver
   (exact), registration, full tables, bad input, reset, fork, threads
   (exact totals), the source note, memobs_host_api's table, the text and
   JSON summary, and MEMOBS_DISABLE. tests/nccl/test_coll.sh builds it C99,
   C++17, ASan+UBSan, TSan and disabled, and checks the files of

       test_coll                   the in-process tests
       test_coll outputs DIR       DIR/summary.json, summary.txt, prom.txt,
                                   trace.json, stormlog.json, report.html

   with python3 and promtool. Every build defines MEMOBS_EXPORT_HOST. */
#define _POSIX_C_SOURCE 200809L
#define MEMOBS_IMPLEMENTATION
#define MEMOBS_EXPORT_HOST
#include "../../memobs.h"
#include "../check.h"
#include "../memobs_test.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TEST_SUITE
#define TEST_SUITE "coll"
#endif

__attribute__((unused)) static void log_start(void) {
    log_count = 0;
    memobs__g.warned.v = 0;
    memobs__coll.warned.v = 0;
    memobs_set_log(capture_log, NULL);
}

/* Doubles computed from exact integers: equal to the decimal to 1e-12. */
#define CHECK_GBS(expected, actual)                                                                          \
    do {                                                                                                     \
        double check__e = (expected), check__a = (actual);                                                   \
        if (fabs(check__e - check__a) > 1e-12 * (fabs(check__e) + 1e-300)) {                                   \
            check__failed_checks++;                                                                          \
            printf("    # %s:%d: %s: expected %.12g, got %.12g\n", __FILE__, __LINE__, #actual, check__e, check__a); \
        }                                                                                                    \
    } while (0)

static memobs_coll_stats_t rows[1024];

/* The row (comm, kind, phase), or one with ops 0. */
static memobs_coll_stats_t row_of(memobs_comm_t c, memobs_coll_kind_t k, memobs_phase_t ph) {
    size_t n = memobs_coll_get_stats(rows, 1024), i;
    memobs_coll_stats_t none;
    for (i = 0; i < n && i < 1024; i++)
        if (rows[i].comm == c && rows[i].kind == k && rows[i].phase == ph) return rows[i];
    memset(&none, 0, sizeof none);
    return none;
}

static memobs_peer_stats_t peer_of(memobs_peer_t p) {
    static memobs_peer_stats_t all[MEMOBS_MAX_PEERS];
    size_t n = memobs_peer_get_stats(all, MEMOBS_MAX_PEERS), i;
    memobs_peer_stats_t none;
    for (i = 0; i < n && i < MEMOBS_MAX_PEERS; i++)
        if (all[i].id == p) return all[i];
    memset(&none, 0, sizeof none);
    none.id = -1;
    return none;
}

static uint64_t bad_records(void) {
    memobs_summary_t s;
    memobs_get_summary(&s);
    return s.bad_records;
}

#ifndef MEMOBS_DISABLE
/* The driver's table (docs/collectives.md): a 4-rank tensor-parallel
   communicator and a 2-rank pipeline pair. */
static memobs_comm_t tp, pp;

static void setup(void) {
    memobs_reset();
    tp = memobs_coll_register_comm("tp", 0x7470u, 1, 4, 1);
    pp = memobs_coll_register_comm("pp", 0x7070u, 0, 2, 1);
}

static void test_bandwidths(void) {
    memobs_coll_stats_t r;
    memobs_comm_t n0 = memobs_coll_register_comm("unknown size", 0x30u, 0, 0, 0);
    memobs_comm_t one = memobs_coll_register_comm("alone", 0x31u, 0, 1, 1);
    int i;
    setup();
    /* all_reduce 1,048,576 x bf16 (2 bytes), 3 times 2 ms */
    for (i = 0; i < 3; i++) memobs_record_coll(tp, MEMOBS_COLL_ALL_REDUCE, 2097152u, MEMOBS_PHASE_PREFILL, 2000000u);
    r = row_of(tp, MEMOBS_COLL_ALL_REDUCE, MEMOBS_PHASE_PREFILL);
    CHECK_U64(3, r.ops);
    CHECK_U64(6291456u, r.bytes);
    CHECK_U64(3, r.timed_ops);
    CHECK_U64(6000000u, r.ns);
    CHECK_U64(6291456u, r.algo_bytes);
    CHECK_U64(9437184u, r.bus_bytes); /* x 2(n-1)/n = 1.5 */
    CHECK_GBS(1.048576, r.algbw_gbs);
    CHECK_GBS(1.572864, r.busbw_gbs);
    CHECK_STR("tp", r.comm_name);
    CHECK_STR("all_reduce", r.kind_name);
    CHECK_U64(1, r.rank);
    CHECK_U64(4, r.nranks);
    CHECK_U64(0x7470u, r.comm_id);
    /* all_gather 4096 x fp32 per rank, 5 times 10 us: S = 4 x 16384 */
    for (i = 0; i < 5; i++)
        memobs_record_coll(tp, memobs_coll_kind_intern("AllGather"), 16384u, MEMOBS_PHASE_DECODE, 10000u);
    r = row_of(tp, MEMOBS_COLL_ALL_GATHER, MEMOBS_PHASE_DECODE);
    CHECK_U64(5, r.ops);
    CHECK_U64(81920u, r.bytes);
    CHECK_U64(327680u, r.algo_bytes);
    CHECK_U64(245760u, r.bus_bytes); /* x (n-1)/n */
    CHECK_GBS(6.5536, r.algbw_gbs);
    CHECK_GBS(4.9152, r.busbw_gbs);
    /* all_to_all 1024 x int32 per peer, once, 100 us */
    memobs_record_coll(tp, MEMOBS_COLL_ALL_TO_ALL, 4096u, MEMOBS_PHASE_DECODE, 100000u);
    r = row_of(tp, MEMOBS_COLL_ALL_TO_ALL, MEMOBS_PHASE_DECODE);
    CHECK_U64(16384u, r.algo_bytes);
    CHECK_U64(12288u, r.bus_bytes);
    CHECK_GBS(0.16384, r.algbw_gbs);
    CHECK_GBS(0.12288, r.busbw_gbs);
    /* reduce_scatter: S = n x bytes, (n-1)/n */
    memobs_record_coll(tp, MEMOBS_COLL_REDUCE_SCATTER, 1000u, MEMOBS_PHASE_DECODE, 1000u);
    r = row_of(tp, MEMOBS_COLL_REDUCE_SCATTER, MEMOBS_PHASE_DECODE);
    CHECK_U64(4000u, r.algo_bytes);
    CHECK_U64(3000u, r.bus_bytes);
    /* send and recv of 262,144 x fp16 on the pair, 1 ms: factor 1 */
    memobs_record_coll(pp, MEMOBS_COLL_SEND, 524288u, MEMOBS_PHASE_DECODE, 1000000u);
    memobs_record_coll(pp, memobs_coll_kind_intern("Recv"), 524288u, MEMOBS_PHASE_DECODE, 1000000u);
    r = row_of(pp, MEMOBS_COLL_SEND, MEMOBS_PHASE_DECODE);
    CHECK_GBS(0.524288, r.algbw_gbs);
    CHECK_GBS(0.524288, r.busbw_gbs);
    r = row_of(pp, MEMOBS_COLL_RECV, MEMOBS_PHASE_DECODE);
    CHECK_U64(524288u, r.bus_bytes);
    /* broadcast, reduce: factor 1; gather, scatter: none */
    memobs_record_coll(tp, MEMOBS_COLL_BROADCAST, 777u, MEMOBS_PHASE_DECODE, 7u);
    CHECK_U64(777u, row_of(tp, MEMOBS_COLL_BROADCAST, MEMOBS_PHASE_DECODE).bus_bytes);
    memobs_record_coll(tp, MEMOBS_COLL_GATHER, 800u, MEMOBS_PHASE_DECODE, 8u);
    r = row_of(tp, MEMOBS_COLL_GATHER, MEMOBS_PHASE_DECODE);
    CHECK_U64(800u, r.algo_bytes);
    CHECK_U64(0, r.bus_bytes);
    CHECK_GBS(100.0, r.algbw_gbs);
    CHECK_GBS(0.0, r.busbw_gbs);
    /* nranks 0: bytes and algbw kept (S = bytes), no bus bandwidth */
    memobs_record_coll(n0, MEMOBS_COLL_ALL_REDUCE, 5000u, MEMOBS_PHASE_NONE, 1000u);
    memobs_record_coll(n0, MEMOBS_COLL_ALL_GATHER, 5000u, MEMOBS_PHASE_NONE, 1000u);
    r = row_of(n0, MEMOBS_COLL_ALL_REDUCE, MEMOBS_PHASE_NONE);
    CHECK_U64(5000u, r.algo_bytes);
    CHECK_U64(0, r.bus_bytes);
    CHECK_GBS(0.0, r.busbw_gbs);
    CHECK_GBS(5.0, r.algbw_gbs);
    CHECK_U64(5000u, row_of(n0, MEMOBS_COLL_ALL_GATHER, MEMOBS_PHASE_NONE).algo_bytes);
    /* one rank: 2(n-1)/n = 0 */
    memobs_record_coll(one, MEMOBS_COLL_ALL_REDUCE, 5000u, MEMOBS_PHASE_NONE, 1000u);
    CHECK_U64(0, row_of(one, MEMOBS_COLL_ALL_REDUCE, MEMOBS_PHASE_NONE).bus_bytes);
    /* untimed: counted, not in the bandwidths */
    memobs_record_coll(tp, MEMOBS_COLL_ALL_REDUCE, 2097152u, MEMOBS_PHASE_PREFILL, 0);
    r = row_of(tp, MEMOBS_COLL_ALL_REDUCE, MEMOBS_PHASE_PREFILL);
    CHECK_U64(4, r.ops);
    CHECK_U64(3, r.timed_ops);
    CHECK_U64(8388608u, r.bytes);
    CHECK_U64(6291456u, r.algo_bytes);
    CHECK_GBS(1.572864, r.busbw_gbs);
    /* the bus bytes are exact in integers where a double is not: 3 ranks, 2(n-1)/n = 4/3 */
    {
        memobs_comm_t t3 = memobs_coll_register_comm("three", 0x33u, 2, 3, 1);
        memobs_record_coll(t3, MEMOBS_COLL_ALL_REDUCE, MEMOBS_MAX_BYTES, MEMOBS_PHASE_NONE, 1u);
        memobs_record_coll(t3, MEMOBS_COLL_ALL_REDUCE, 2u, MEMOBS_PHASE_NONE, 1u);
        /* (2^56 + 2) x 4 / 3 = 96076792050570584 exactly */
        CHECK_U64(UINT64_C(96076792050570584), row_of(t3, MEMOBS_COLL_ALL_REDUCE, MEMOBS_PHASE_NONE).bus_bytes);
    }
}

static void test_registration(void) {
    memobs_coll_stats_t r;
    memobs_comm_t a = memobs_coll_register_comm("reg", 0xabcu, 0, 2, 1);
    memobs_comm_t b = memobs_coll_register_comm("reg again", 0xabcu, 0, 2, 1);
    memobs_comm_t c = memobs_coll_register_comm("reg", 0xabcu, 1, 2, 1);
    memobs_comm_t d = memobs_coll_register_comm(NULL, 0xbeefu, 0, 2, 1);
    memobs_comm_t e = memobs_coll_register_comm("", 0xbeef2u, 0, 0, 0);
    memobs_comm_t f = memobs_coll_register_comm("reg", 0xdddu, 0, 2, 1); /* the name of another of rank 0 */
    log_start();
    CHECK(a > 0);
    CHECK_U64((uint64_t)a, (uint64_t)b); /* same id and rank */
    CHECK(c > 0 && c != a);
    CHECK_U64((uint64_t)MEMOBS_ERR_INVALID, (uint64_t)memobs_coll_register_comm("x", 1u, 2, 2, 1));
    CHECK_U64((uint64_t)MEMOBS_ERR_INVALID, (uint64_t)memobs_coll_register_comm("x", 1u, -1, 2, 1));
    CHECK_U64((uint64_t)MEMOBS_ERR_INVALID, (uint64_t)memobs_coll_register_comm("x", 1u, 0, -2, 1));
    CHECK_U64(3, log_count);
    log_stop();
    memobs_reset();
    memobs_record_coll(d, MEMOBS_COLL_BROADCAST, 1u, MEMOBS_PHASE_NONE, 0);
    memobs_record_coll(e, MEMOBS_COLL_BROADCAST, 1u, MEMOBS_PHASE_NONE, 0);
    memobs_record_coll(f, MEMOBS_COLL_BROADCAST, 1u, MEMOBS_PHASE_NONE, 0);
    r = row_of(d, MEMOBS_COLL_BROADCAST, MEMOBS_PHASE_NONE);
    CHECK_STR("comm beef", r.comm_name);
    r = row_of(e, MEMOBS_COLL_BROADCAST, MEMOBS_PHASE_NONE);
    CHECK_STR("comm beef2", r.comm_name);
    r = row_of(f, MEMOBS_COLL_BROADCAST, MEMOBS_PHASE_NONE);
    CHECK_STR("reg ddd", r.comm_name);
    /* kinds: NCCL's names, memobs' own, any case, others interned */
    CHECK_U64(MEMOBS_COLL_ALL_REDUCE, memobs_coll_kind_intern("AllReduce"));
    CHECK_U64(MEMOBS_COLL_ALL_REDUCE, memobs_coll_kind_intern("all_reduce"));
    CHECK_U64(MEMOBS_COLL_ALL_TO_ALL, memobs_coll_kind_intern("AlltoAll"));
    CHECK_U64(MEMOBS_COLL_SEND_RECV, memobs_coll_kind_intern("SendRecv"));
    CHECK_U64(MEMOBS_COLL_REDUCE_SCATTER, memobs_coll_kind_intern("REDUCESCATTER"));
    CHECK_U64(MEMOBS_COLL_OTHER, memobs_coll_kind_intern("other"));
    CHECK_U64((uint64_t)MEMOBS_ERR_INVALID, (uint64_t)memobs_coll_kind_intern(NULL));
    CHECK_U64((uint64_t)MEMOBS_ERR_INVALID, (uint64_t)memobs_coll_kind_intern(""));
    {
        memobs_coll_kind_t v = memobs_coll_kind_intern("AllGatherV");
        CHECK(v >= MEMOBS_COLL_FIXED_KINDS);
        CHECK_U64((uint64_t)v, (uint64_t)memobs_coll_kind_intern("AllGatherV"));
        CHECK_STR("other:AllGatherV", memobs_coll_kind_label(v));
    }
    CHECK_STR("all_gather", memobs_coll_kind_label(MEMOBS_COLL_ALL_GATHER));
    CHECK_STR("send_recv", memobs_coll_kind_label(MEMOBS_COLL_SEND_RECV));
    CHECK(memobs_coll_kind_label(-1) == NULL);
    CHECK(memobs_coll_kind_label(MEMOBS_MAX_COLL_KINDS) == NULL);
    /* peers */
    {
        memobs_peer_t p = memobs_peer_intern("decode-3"), q = memobs_peer_rank(a, 1), q2 = memobs_peer_rank(c, 1);
        memobs_peer_stats_t s;
        CHECK(p >= 0 && q >= 0 && q2 >= 0 && p != q && q != q2);
        CHECK_U64((uint64_t)p, (uint64_t)memobs_peer_intern("decode-3"));
        CHECK_U64((uint64_t)q, (uint64_t)memobs_peer_rank(a, 1));
        CHECK_U64((uint64_t)MEMOBS_ERR_INVALID, (uint64_t)memobs_peer_intern(NULL));
        CHECK_U64((uint64_t)MEMOBS_ERR_INVALID, (uint64_t)memobs_peer_intern(""));
        log_start();
        CHECK_U64((uint64_t)MEMOBS_ERR_INVALID, (uint64_t)memobs_peer_rank(a, 2));
        CHECK_U64((uint64_t)MEMOBS_ERR_INVALID, (uint64_t)memobs_peer_rank(a, -1));
        CHECK_U64((uint64_t)MEMOBS_ERR_INVALID, (uint64_t)memobs_peer_rank(MEMOBS_MAX_COMMS, 0));
        log_stop();
        memobs_record_peer_xfer(q, MEMOBS_PEER_SEND, 10u, MEMOBS_PHASE_PREFILL);
        memobs_record_peer_xfer(q2, MEMOBS_PEER_SEND, 10u, MEMOBS_PHASE_PREFILL);
        s = peer_of(q);
        CHECK_STR("reg r1", s.name);
        CHECK_U64((uint64_t)a, (uint64_t)s.comm);
        CHECK_U64(1, s.rank);
        s = peer_of(q2); /* the same label from another rank of the communicator: its id added */
        CHECK(strncmp(s.name, "reg r1 #", 8) == 0);
        memobs_record_peer_xfer(p, MEMOBS_PEER_RECV, 10u, MEMOBS_PHASE_DECODE);
        s = peer_of(p);
        CHECK_STR("decode-3", s.name);
        CHECK_U64((uint64_t)-1, (uint64_t)(int64_t)s.comm);
        CHECK_U64((uint64_t)-1, (uint64_t)(int64_t)s.rank);
    }
}

static void test_peers(void) {
    memobs_peer_t p, q;
    memobs_peer_stats_t s;
    setup();
    p = memobs_peer_rank(tp, 2);
    q = memobs_peer_intern("10.0.0.7:5600");
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    MEMOBS_RECORD_PEER_XFER(p, MEMOBS_PEER_SEND, 524288, MEMOBS_PHASE_PREFILL);
    MEMOBS_RECORD_PEER_XFER(p, MEMOBS_PEER_SEND, 524288, MEMOBS_PHASE_PREFILL);
    MEMOBS_RECORD_PEER_XFER_CUR(p, MEMOBS_PEER_RECV, 100);
    memobs_record_peer_xfer_timed(q, MEMOBS_PEER_RECV, 1u << 20, MEMOBS_PHASE_DECODE, 2000u);
    memobs_record_peer_xfer_timed(q, MEMOBS_PEER_RECV, 1u << 20, MEMOBS_PHASE_DECODE, 0u);
    memobs_set_phase(MEMOBS_PHASE_NONE);
    s = peer_of(p);
    CHECK_STR("tp r2", s.name);
    CHECK_U64(1048576u, s.bytes[MEMOBS_PEER_SEND][MEMOBS_PHASE_PREFILL]);
    CHECK_U64(2, s.ops[MEMOBS_PEER_SEND][MEMOBS_PHASE_PREFILL]);
    CHECK_U64(100, s.bytes[MEMOBS_PEER_RECV][MEMOBS_PHASE_DECODE]);
    CHECK_U64(0, s.ns[MEMOBS_PEER_SEND][MEMOBS_PHASE_PREFILL]);
    s = peer_of(q);
    CHECK_U64(2u << 20, s.bytes[MEMOBS_PEER_RECV][MEMOBS_PHASE_DECODE]);
    CHECK_U64(2, s.ops[MEMOBS_PEER_RECV][MEMOBS_PHASE_DECODE]);
    CHECK_U64(2000u, s.ns[MEMOBS_PEER_RECV][MEMOBS_PHASE_DECODE]);
    CHECK_U64(0, s.ops[MEMOBS_PEER_SEND][MEMOBS_PHASE_DECODE]);
}

static void test_bad_input(void) {
    memobs_coll_record_t r;
    uint64_t before;
    memobs_peer_t p;
    size_t rows_before;
    setup();
    p = memobs_peer_intern("bad-input peer");
    rows_before = memobs_coll_get_stats(NULL, 0);
    before = bad_records();
    log_start();
    memobs_record_coll_ex(NULL);
    memobs_record_coll(-1, MEMOBS_COLL_ALL_REDUCE, 1u, MEMOBS_PHASE_NONE, 0);
    memobs_record_coll(MEMOBS_MAX_COMMS, MEMOBS_COLL_ALL_REDUCE, 1u, MEMOBS_PHASE_NONE, 0);
    memobs_record_coll(tp, -1, 1u, MEMOBS_PHASE_NONE, 0);
    memobs_record_coll(tp, MEMOBS_MAX_COLL_KINDS - 1, 1u, MEMOBS_PHASE_NONE, 0); /* never interned */
    memobs_record_coll(tp, MEMOBS_COLL_ALL_REDUCE, 1u, (memobs_phase_t)3, 0);
    memobs_record_coll(tp, MEMOBS_COLL_ALL_REDUCE, MEMOBS_MAX_BYTES + 1u, MEMOBS_PHASE_NONE, 0);
    memobs_record_coll(tp, MEMOBS_COLL_ALL_REDUCE, 1u, MEMOBS_PHASE_NONE, MEMOBS_MAX_NS + 1u);
    memset(&r, 0, sizeof r);
    r.comm = tp;
    r.kind = MEMOBS_COLL_ALL_REDUCE;
    r.bytes = UINT64_MAX; /* a negative size cast */
    memobs_record_coll_ex(&r);
    memobs_record_peer_xfer(-1, MEMOBS_PEER_SEND, 1u, MEMOBS_PHASE_NONE);
    memobs_record_peer_xfer(MEMOBS_MAX_PEERS, MEMOBS_PEER_SEND, 1u, MEMOBS_PHASE_NONE);
    memobs_record_peer_xfer(p, (memobs_peer_dir_t)2, 1u, MEMOBS_PHASE_NONE);
    memobs_record_peer_xfer(p, MEMOBS_PEER_SEND, 1u, (memobs_phase_t)7);
    memobs_record_peer_xfer(p, MEMOBS_PEER_SEND, MEMOBS_MAX_BYTES + 1u, MEMOBS_PHASE_NONE);
    memobs_record_peer_xfer_timed(p, MEMOBS_PEER_SEND, 1u, MEMOBS_PHASE_NONE, UINT64_MAX);
    memobs_coll_note((memobs_coll_note_t)MEMOBS_COLL_NOTES, 1u);
    CHECK_U64(16, bad_records() - before);
    CHECK_U64(rows_before, memobs_coll_get_stats(NULL, 0));
    CHECK(peer_of(p).id < 0); /* nothing kept */
    CHECK(log_count >= 1 && log_count <= 3); /* one warning per kind of bad record */
    log_stop();
    /* the largest record passes; sums saturate */
    memobs_record_coll(tp, MEMOBS_COLL_REDUCE, MEMOBS_MAX_BYTES, MEMOBS_PHASE_NONE, 1u);
    CHECK_U64(MEMOBS_MAX_BYTES, row_of(tp, MEMOBS_COLL_REDUCE, MEMOBS_PHASE_NONE).bytes);
    {
        int i;
        for (i = 0; i < 300; i++) memobs_record_coll(tp, MEMOBS_COLL_REDUCE, MEMOBS_MAX_BYTES, MEMOBS_PHASE_NONE, 1u);
    }
    CHECK_U64(UINT64_MAX, row_of(tp, MEMOBS_COLL_REDUCE, MEMOBS_PHASE_NONE).bytes);
    CHECK_U64(301, row_of(tp, MEMOBS_COLL_REDUCE, MEMOBS_PHASE_NONE).ops);
    /* all_gather of 2^56 bytes on 4 ranks, 2^58 each: S saturates after 64, never wraps */
    {
        int i;
        for (i = 0; i < 63; i++) memobs_record_coll(tp, MEMOBS_COLL_ALL_GATHER, MEMOBS_MAX_BYTES, MEMOBS_PHASE_NONE, 1u);
        CHECK_U64(UINT64_C(63) << 58, row_of(tp, MEMOBS_COLL_ALL_GATHER, MEMOBS_PHASE_NONE).algo_bytes);
        memobs_record_coll(tp, MEMOBS_COLL_ALL_GATHER, MEMOBS_MAX_BYTES, MEMOBS_PHASE_NONE, 1u);
    }
    CHECK_U64(UINT64_MAX, row_of(tp, MEMOBS_COLL_ALL_GATHER, MEMOBS_PHASE_NONE).algo_bytes);
    CHECK_U64(UINT64_MAX, row_of(tp, MEMOBS_COLL_ALL_GATHER, MEMOBS_PHASE_NONE).bus_bytes);
    memobs_reset();
}

/* Runs in a child: fills the tables from wherever this process has them. */
static void fill_tables(void) {
    char name[64];
    int i;
    memobs_coll_info_t info;
    memobs_comm_t c;
    memobs_peer_t p;
    log_start();
    for (i = 0; i < MEMOBS_MAX_COMMS + 5; i++) {
        snprintf(name, sizeof name, "fill %d", i);
        c = memobs_coll_register_comm(name, 0x1000u + (uint64_t)i, 0, 2, 1);
        if (c < 0) CHECK(c >= 0);
    }
    c = memobs_coll_register_comm("one more", 0x9999u, 0, 2, 1);
    CHECK_U64(0, c); /* "(other)" */
    memobs_record_coll(c, MEMOBS_COLL_ALL_REDUCE, 100u, MEMOBS_PHASE_NONE, 10u);
    CHECK_U64(1, row_of(0, MEMOBS_COLL_ALL_REDUCE, MEMOBS_PHASE_NONE).ops);
    CHECK_STR("(other)", row_of(0, MEMOBS_COLL_ALL_REDUCE, MEMOBS_PHASE_NONE).comm_name);
    CHECK_U64(0, row_of(0, MEMOBS_COLL_ALL_REDUCE, MEMOBS_PHASE_NONE).bus_bytes); /* nranks unknown */
    for (i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "Kind%d", i);
        (void)memobs_coll_kind_intern(name);
    }
    CHECK_U64(MEMOBS_COLL_OTHER, memobs_coll_kind_intern("KindNew"));
    for (i = 0; i < MEMOBS_MAX_PEERS + 3; i++) {
        snprintf(name, sizeof name, "peer %d", i);
        p = memobs_peer_intern(name);
        (void)p;
    }
    CHECK_U64((uint64_t)MEMOBS_ERR_FULL, (uint64_t)memobs_peer_intern("peer new"));
    CHECK_U64((uint64_t)MEMOBS_ERR_FULL, (uint64_t)memobs_peer_rank(1, 1));
    memobs_coll_get_info(&info);
    CHECK(info.comms_dropped >= 6);
    CHECK(info.kinds_dropped >= 1);
    CHECK(info.peers_dropped >= 5);
    CHECK_U64(1, log_has("communicator 'one more' not kept") + log_has("communicator 'fill"));
    CHECK_U64(1, log_has("collective kind '"));
    CHECK_U64(1, log_has("peer '"));
    CHECK_U64(3, log_count); /* one warning each */
    log_stop();
}

static void test_full_tables(void) {
    pid_t pid;
    int st = 0;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        fill_tables();
        fflush(stdout);
        _exit(check__failed_checks ? 1 : 0);
    }
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_reset_and_fork(void) {
    memobs_coll_info_t info;
    memobs_peer_t p;
    pid_t pid;
    int st = 0;
    setup();
    p = memobs_peer_intern("reset peer");
    memobs_record_coll(tp, MEMOBS_COLL_ALL_REDUCE, 100u, MEMOBS_PHASE_PREFILL, 10u);
    memobs_record_peer_xfer(p, MEMOBS_PEER_SEND, 5u, MEMOBS_PHASE_PREFILL);
    memobs_coll_note(MEMOBS_COLL_NOTE_EVENTS_DROPPED, 4u);
    memobs_coll_note(MEMOBS_COLL_NOTE_CAPTURED_REPLAYS, 2u);
    memobs_coll_get_info(&info);
    CHECK_U64(4, info.notes[MEMOBS_COLL_NOTE_EVENTS_DROPPED]);
    CHECK_U64(2, info.notes[MEMOBS_COLL_NOTE_CAPTURED_REPLAYS]);
    /* fork: the child keeps the figures and records its own */
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int bad = row_of(tp, MEMOBS_COLL_ALL_REDUCE, MEMOBS_PHASE_PREFILL).ops != 1;
        memobs_record_coll(tp, MEMOBS_COLL_ALL_REDUCE, 100u, MEMOBS_PHASE_PREFILL, 10u);
        bad |= row_of(tp, MEMOBS_COLL_ALL_REDUCE, MEMOBS_PHASE_PREFILL).ops != 2;
        bad |= memobs_coll_register_comm("child comm", 0xc41du, 0, 2, 1) <= 0;
        _exit(bad);
    }
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_U64(1, row_of(tp, MEMOBS_COLL_ALL_REDUCE, MEMOBS_PHASE_PREFILL).ops); /* the parent's own */
    memobs_reset();
    CHECK_U64(0, memobs_coll_get_stats(NULL, 0));
    CHECK_U64(0, memobs_peer_get_stats(NULL, 0));
    memobs_coll_get_info(&info);
    CHECK_U64(0, info.notes[MEMOBS_COLL_NOTE_EVENTS_DROPPED]);
    CHECK_U64(0, info.notes[MEMOBS_COLL_NOTE_CAPTURED_REPLAYS]);
    /* the registrations stay */
    CHECK_U64((uint64_t)tp, (uint64_t)memobs_coll_register_comm("tp", 0x7470u, 1, 4, 1));
    CHECK_U64((uint64_t)p, (uint64_t)memobs_peer_intern("reset peer"));
    memobs_record_coll(tp, MEMOBS_COLL_ALL_REDUCE, 100u, MEMOBS_PHASE_PREFILL, 10u);
    CHECK_U64(100, row_of(tp, MEMOBS_COLL_ALL_REDUCE, MEMOBS_PHASE_PREFILL).bytes);
    /* off at run time: nothing kept */
    memobs_set_enabled(0);
    memobs_record_coll(tp, MEMOBS_COLL_ALL_REDUCE, 100u, MEMOBS_PHASE_PREFILL, 10u);
    memobs_record_peer_xfer(p, MEMOBS_PEER_SEND, 5u, MEMOBS_PHASE_PREFILL);
    memobs_set_enabled(1);
    CHECK_U64(1, row_of(tp, MEMOBS_COLL_ALL_REDUCE, MEMOBS_PHASE_PREFILL).ops);
    CHECK_U64(0, memobs_peer_get_stats(NULL, 0));
}

#define THREADS 4
#define OPS 10000
static memobs_peer_t thr_peer;
static void *worker(void *arg) {
    int i, t = (int)(intptr_t)arg;
    memobs_coll_record_t r;
    memset(&r, 0, sizeof r);
    r.comm = tp;
    r.kind = t % 2 ? MEMOBS_COLL_ALL_GATHER : MEMOBS_COLL_ALL_REDUCE;
    r.phase = MEMOBS_PHASE_DECODE;
    r.algo = "RING";
    r.proto = "SIMPLE";
    for (i = 0; i < OPS; i++) {
        r.bytes = 1000u + (uint64_t)(i % 7);
        r.ns = i % 3 ? 100u : 0u;
        r.seq = (uint64_t)i;
        memobs_record_coll_ex(&r);
        memobs_record_peer_xfer_timed(thr_peer, (memobs_peer_dir_t)(i % 2), 10u, MEMOBS_PHASE_DECODE, 1u);
    }
    return NULL;
}

static void test_threads(void) {
    pthread_t th[THREADS];
    memobs_coll_stats_t r;
    memobs_peer_stats_t s;
    uint64_t bytes = 0, timed = 0, sbytes = 0;
    int i;
    setup();
    thr_peer = memobs_peer_rank(tp, 3);
    for (i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    for (i = 0; i < OPS; i++) {
        bytes += 1000u + (uint64_t)(i % 7);
        if (i % 3) timed++, sbytes += 1000u + (uint64_t)(i % 7);
    }
    r = row_of(tp, MEMOBS_COLL_ALL_REDUCE, MEMOBS_PHASE_DECODE);
    CHECK_U64(2 * OPS, r.ops);
    CHECK_U64(2 * bytes, r.bytes);
    CHECK_U64(2 * timed, r.timed_ops);
    CHECK_U64(2 * timed * 100u, r.ns);
    CHECK_U64(2 * sbytes, r.algo_bytes);
    CHECK_U64(2 * sbytes * 3 / 2, r.bus_bytes);
    r = row_of(tp, MEMOBS_COLL_ALL_GATHER, MEMOBS_PHASE_DECODE);
    CHECK_U64(2 * OPS, r.ops);
    CHECK_U64(2 * sbytes * 4, r.algo_bytes);
    s = peer_of(thr_peer);
    CHECK_U64(THREADS * OPS / 2, s.ops[MEMOBS_PEER_SEND][MEMOBS_PHASE_DECODE]);
    CHECK_U64(THREADS * OPS / 2 * 10, s.bytes[MEMOBS_PEER_RECV][MEMOBS_PHASE_DECODE]);
    CHECK_U64(THREADS * OPS / 2, s.ns[MEMOBS_PEER_RECV][MEMOBS_PHASE_DECODE]);
}

static void test_source(void) {
    memobs_coll_info_t info;
    memobs_coll_set_source("nccl-profiler", "program", "coll", 5);
    memobs_coll_set_source(NULL, NULL, "proxy", 6); /* NULL keeps */
    memobs_coll_note(MEMOBS_COLL_NOTE_BAD_EVENTS, 3u);
    memobs_coll_get_info(&info);
    CHECK_STR("nccl-profiler", info.source);
    CHECK_STR("program", info.instance);
    CHECK_STR("proxy", info.level);
    CHECK_U64(6, info.api_version);
    CHECK_U64(3, info.notes[MEMOBS_COLL_NOTE_BAD_EVENTS]);
    memobs_coll_set_source("a source name longer than thirty-one bytes", "an instance too long", "", 0);
    memobs_coll_get_info(&info);
    CHECK_STR("a source name longer than thirt", info.source);
    CHECK_STR("an instance too", info.instance);
    CHECK_STR("", info.level);
    memobs_coll_set_source("nccl-profiler", "program", "coll", 5);
}

static void test_host_api(void) {
    const memobs_host_api_t *h = memobs_host_api();
    CHECK(h != NULL);
    CHECK_U64(MEMOBS__ABI_KEY, h->abi_key);
    CHECK_U64(sizeof(memobs_host_api_t), h->size);
    CHECK_STR("program", h->instance);
    CHECK(h->get_enabled == memobs_get_enabled && h->get_phase == memobs_get_phase && h->now_ns == memobs_now_ns);
    CHECK(h->coll_register_comm == memobs_coll_register_comm && h->coll_kind_intern == memobs_coll_kind_intern);
    CHECK(h->record_coll_ex == memobs_record_coll_ex && h->peer_intern == memobs_peer_intern);
    CHECK(h->peer_rank == memobs_peer_rank && h->record_peer_xfer_timed == memobs_record_peer_xfer_timed);
    CHECK(h->coll_set_source == memobs_coll_set_source && h->coll_note == memobs_coll_note);
    CHECK(h->get_identity == memobs_get_identity);
    CHECK(h == memobs_host_api());
    /* a record through the table is a record */
    setup();
    {
        memobs_coll_record_t r;
        memset(&r, 0, sizeof r);
        r.comm = h->coll_register_comm("tp", 0x7470u, 1, 4, 1);
        r.kind = h->coll_kind_intern("AllReduce");
        r.bytes = 64u;
        r.ns = 1u;
        h->record_coll_ex(&r);
        CHECK_U64(1, row_of(tp, MEMOBS_COLL_ALL_REDUCE, MEMOBS_PHASE_NONE).ops);
    }
}

static void test_summary(void) {
    FILE *f = tmpfile();
    char *t;
    setup();
    memobs_record_coll(tp, MEMOBS_COLL_ALL_REDUCE, 2097152u, MEMOBS_PHASE_PREFILL, 2000000u);
    memobs_record_coll(tp, MEMOBS_COLL_ALL_REDUCE, 2097152u, MEMOBS_PHASE_PREFILL, 2000000u);
    memobs_record_coll(tp, MEMOBS_COLL_ALL_REDUCE, 2097152u, MEMOBS_PHASE_PREFILL, 2000000u);
    memobs_record_coll(pp, memobs_coll_kind_intern("AllGatherV"), 100u, MEMOBS_PHASE_DECODE, 0);
    memobs_record_peer_xfer(memobs_peer_rank(tp, 2), MEMOBS_PEER_SEND, 4096u, MEMOBS_PHASE_PREFILL);
    CHECK(f != NULL);
    if (!f) return;
    memobs_write_summary(f, MEMOBS_FORMAT_TEXT);
    t = read_file(f);
    CHECK_HAS(t, "  collectives:\n    tp  rank 1/4, 1 node\n");
    CHECK_HAS(t, "      all_reduce         prefill         3    6.29 MB    6.00 ms      1.049      1.573\n");
    CHECK_HAS(t, "      other:AllGatherV   decode          1      100 B          -        n/a        n/a\n");
    CHECK_HAS(t, "1 untimed (not in the bandwidths)");
    CHECK_HAS(t, "  peers:\n");
    CHECK_HAS(t, "      tp r2                            send prefill     4.10 KB        1          -\n");
    CHECK_HAS(t, "  collectives from nccl-profiler, instance program, level coll, profiler API v5;");
    free(t);
    fclose(f);
}
#endif /* !MEMOBS_DISABLE */

/* The files tests/nccl/test_coll.sh checks (the timeline and Stormlog on). */
static int scenario_outputs(const char *dir) {
    char path[1024];
    int rc = 0, i;
    memobs_coll_record_t r;
    memobs_comm_t tp2, pp2;
    memobs_peer_t p;
    uint64_t t0;
    memobs_timeline_start(4096);
    tp2 = memobs_coll_register_comm("tp", 0x7470u, 1, 4, 1);
    pp2 = memobs_coll_register_comm("pp \"odd\" \\ name", 0x7070u, 0, 2, 1);
    memobs_coll_set_source("nccl-profiler", "program", "coll", 5);
    memobs_coll_note(MEMOBS_COLL_NOTE_CAPTURED_CALLS, 1u);
    t0 = memobs_now_ns();
    memset(&r, 0, sizeof r);
    r.comm = tp2;
    r.kind = MEMOBS_COLL_ALL_REDUCE;
    r.phase = MEMOBS_PHASE_PREFILL;
    r.bytes = 2097152u;
    r.ns = 2000000u;
    r.algo = "RING";
    r.proto = "SIMPLE";
    r.nchannels = 2;
    for (i = 0; i < 3; i++) { /* 20 ms apart: each a Stormlog event */
        r.start_ns = t0 + (uint64_t)i * 20000000u;
        r.seq = (uint64_t)i + 1u;
        memobs_record_coll_ex(&r);
    }
    r.kind = MEMOBS_COLL_ALL_GATHER;
    r.phase = MEMOBS_PHASE_DECODE;
    r.bytes = 16384u;
    r.ns = 10000u;
    r.algo = "a \"new\" algo";
    r.proto = NULL;
    r.nchannels = 0;
    for (i = 0; i < 5; i++) { /* 1 ms apart: one Stormlog event */
        r.start_ns = t0 + 100000000u + (uint64_t)i * 1000000u;
        r.seq = (uint64_t)i + 1u;
        r.captured = i == 4;
        memobs_record_coll_ex(&r);
    }
    memset(&r, 0, sizeof r);
    r.comm = pp2;
    r.kind = MEMOBS_COLL_SEND;
    r.phase = MEMOBS_PHASE_DECODE;
    r.bytes = 524288u;
    r.ns = 1000000u; /* start 0: now - ns */
    memobs_record_coll_ex(&r);
    memobs_record_coll(pp2, memobs_coll_kind_intern("AllGatherV"), 100u, MEMOBS_PHASE_DECODE, 0);
    p = memobs_peer_rank(tp2, 2);
    memobs_record_peer_xfer(p, MEMOBS_PEER_SEND, 6291456u, MEMOBS_PHASE_PREFILL);
    memobs_record_peer_xfer_timed(memobs_peer_intern("decode-3 \"kv\""), MEMOBS_PEER_RECV, 1048576u,
                                  MEMOBS_PHASE_DECODE, 500000u);
    memobs_sample_now();
    snprintf(path, sizeof path, "%s/summary.json", dir);
    rc |= memobs_write_summary_file(path, MEMOBS_FORMAT_JSON);
    snprintf(path, sizeof path, "%s/summary.txt", dir);
    rc |= memobs_write_summary_file(path, MEMOBS_FORMAT_TEXT);
    snprintf(path, sizeof path, "%s/prom.txt", dir);
    rc |= memobs_write_prometheus_file(path);
    snprintf(path, sizeof path, "%s/trace.json", dir);
    rc |= memobs_write_timeline_file(path);
    snprintf(path, sizeof path, "%s/stormlog.json", dir);
    rc |= memobs_write_stormlog_file(path);
    snprintf(path, sizeof path, "%s/report.html", dir);
    rc |= memobs_write_html_file(path);
    return rc != MEMOBS_OK;
}

/* Run with MEMOBS_SUMMARY and MEMOBS_PROM_FILE set: a crash after a few
   records; the crash writer's summary and exposition carry them. */
static int scenario_crash(void) {
    memobs_comm_t c = memobs_coll_register_comm("tp", 0x7470u, 1, 4, 1);
    memobs_record_coll(c, MEMOBS_COLL_ALL_REDUCE, 2097152u, MEMOBS_PHASE_PREFILL, 2000000u);
    memobs_record_peer_xfer(memobs_peer_rank(c, 2), MEMOBS_PEER_SEND, 4096u, MEMOBS_PHASE_PREFILL);
    abort();
}

#ifdef MEMOBS_DISABLE
static void test_compiled_out(void) {
    memobs_comm_t c = memobs_coll_register_comm("tp", 1u, 0, 2, 1);
    memobs_peer_t p = memobs_peer_intern("x");
    memobs_coll_info_t info;
    const memobs_host_api_t *h = memobs_host_api();
    memobs_record_coll(c, MEMOBS_COLL_ALL_REDUCE, 100u, MEMOBS_PHASE_NONE, 10u);
    memobs_record_peer_xfer(p, MEMOBS_PEER_SEND, 1u, MEMOBS_PHASE_NONE);
    MEMOBS_RECORD_PEER_XFER(p, MEMOBS_PEER_SEND, 1, MEMOBS_PHASE_NONE);
    MEMOBS_RECORD_PEER_XFER_CUR(p, MEMOBS_PEER_SEND, 1);
    memobs_coll_set_source("nccl-profiler", "program", "coll", 5);
    memobs_coll_note(MEMOBS_COLL_NOTE_EVENTS_DROPPED, 1u);
    memobs_coll_get_info(&info);
    CHECK_U64(0, memobs_coll_get_stats(NULL, 0));
    CHECK_U64(0, memobs_peer_get_stats(NULL, 0));
    CHECK_STR("", info.source);
    CHECK_U64(0, info.notes[MEMOBS_COLL_NOTE_EVENTS_DROPPED]);
    CHECK(h != NULL && h->abi_key == MEMOBS__ABI_KEY);
    CHECK_U64(0, bad_records());
    (void)row_of;
    (void)peer_of;
}
#endif

int main(int argc, char **argv) {
    check__suite = TEST_SUITE;
    if (argc > 2 && !strcmp(argv[1], "outputs")) return scenario_outputs(argv[2]);
    if (argc > 1 && !strcmp(argv[1], "crash")) return scenario_crash();
#ifdef MEMOBS_DISABLE
    RUN(test_compiled_out);
#else
    RUN(test_bandwidths);
    RUN(test_registration);
    RUN(test_peers);
    RUN(test_bad_input);
    RUN(test_full_tables);
    RUN(test_reset_and_fork);
    RUN(test_threads);
    RUN(test_source);
    RUN(test_host_api);
    RUN(test_summary);
#endif
    return CHECK_DONE();
}
