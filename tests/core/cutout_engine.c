/* tests/core/test_cutout.sh: one engine's worth of records, built with every
   exporter and with MEMOBS_NO_* switches (CUT_DEFS). With no argument it
   records (copies, a device allocation, a region, a collective, a peer's
   bytes) and prints its counters; its exit outputs come from the
   environment. With "writers" it calls every public writer of a file and
   prints what each returned. */
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

#include <stdio.h>
#include <string.h>

static char dev_block[4096];

static void record(void) {
    memobs_comm_t comm = memobs_coll_register_comm("tp", 0x1234u, 0, 4, 1);
    memobs_peer_t peer = memobs_peer_rank(comm, 2);
    memobs_dirs_t t;
    memobs_summary_t s;
    memobs_coll_stats_t c[4];
    memobs_peer_stats_t p[4];
    uint64_t max = 0, cur;
    size_t nc, np;
    memobs_record_xfer(MEMOBS_DIR_H2D, 65536, MEMOBS_PHASE_PREFILL);
    memobs_record_xfer_ns(MEMOBS_DIR_D2H, 4096, MEMOBS_PHASE_DECODE, 2000);
    memobs_region_set_timing(0); /* its times differ run to run */
    memobs_region_begin("decode_step");
    memobs_track_alloc_full(dev_block, sizeof dev_block, MEMOBS_MEM_DEVICE, 0, NULL, "kv_cache", 0);
    memobs_region_end();
    memobs_record_coll(comm, MEMOBS_COLL_ALL_REDUCE, 1048576, MEMOBS_PHASE_DECODE, 1000000);
    memobs_record_peer_xfer_timed(peer, MEMOBS_PEER_SEND, 262144, MEMOBS_PHASE_PREFILL, 50000);
    memobs_get_summary(&s);
    t = s.total;
    cur = memobs_get_device_bytes(0, &max);
    nc = memobs_coll_get_stats(c, 4);
    np = memobs_peer_get_stats(p, 4);
    printf("h2d %llu/%llu d2h %llu/%llu device0 %llu max %llu live %llu\n", (unsigned long long)t.h2d.bytes,
           (unsigned long long)t.h2d.count, (unsigned long long)t.d2h.bytes, (unsigned long long)t.d2h.count,
           (unsigned long long)cur, (unsigned long long)max, (unsigned long long)s.mem[MEMOBS_MEM_DEVICE].live);
    printf("collectives %zu: %s %s ops %llu bytes %llu; peers %zu: %s sent %llu\n", nc, nc ? c[0].comm_name : "",
           nc ? c[0].kind_name : "", nc ? (unsigned long long)c[0].ops : 0ull, nc ? (unsigned long long)c[0].bytes : 0ull,
           np, np ? p[0].name : "", np ? (unsigned long long)p[0].bytes[MEMOBS_PEER_SEND][MEMOBS_PHASE_PREFILL] : 0ull);
}

static void writers(const char *dir) {
    static const struct {
        const char *name, *file;
        int (*fn)(const char *);
    } w[] = {{"memobs_write_html_file", "r.html", memobs_write_html_file},
             {"memobs_write_stormlog_file", "s.json", memobs_write_stormlog_file},
             {"memobs_write_stormlog_host_file", "sh.json", memobs_write_stormlog_host_file},
             {"memobs_write_torch_snapshot_file", "t.pickle", memobs_write_torch_snapshot_file}};
    char path[512];
    FILE *f;
    size_t i;
    printf("memobs_torch_history_start %d\n", memobs_torch_history_start(0)); /* the snapshot's history wanted */
    for (i = 0; i < sizeof w / sizeof w[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, w[i].file);
        printf("%s %d\n", w[i].name, w[i].fn(path));
    }
    snprintf(path, sizeof path, "%s/streams", dir);
    if ((f = fopen(path, "wb")) == NULL) return;
    printf("memobs_write_html %d\n", memobs_write_html(f));
    printf("memobs_write_stormlog %d\n", memobs_write_stormlog(f));
    printf("memobs_write_torch_snapshot %d\n", memobs_write_torch_snapshot(f));
    fclose(f);
    printf("memobs_torch_history_stop %d\n", memobs_torch_history_stop());
}

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "writers") == 0) writers(argv[2]);
    else record();
    return 0;
}
