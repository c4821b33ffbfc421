/* tests/outputs/test_html.c - programs whose HTML report tests/outputs/test_html.sh opens
   in headless Chromium. The report is written at exit (MEMOBS_HTML), the
   JSON summary beside it (MEMOBS_SUMMARY, MEMOBS_FORMAT=json).
     empty  records nothing: every section must say what to turn on.
     odd    strings a page must escape: a tag with quotes and
            <script>alert(1)</script>, a job id with markup, a tag that is
            a path with bytes that are not UTF-8. Manual records apart
            (memobs_set_manual_apart): the manual vs observed table.
     many   more than the report shows: 5000 live traces (tags of
            characters that escape long, C stacks of 16 frames), the sampler's
            ring full, the timeline full, every counter slot used with a
            long help text; the report must stay under 2 MB.
     worst  the largest report at default limits (see worst()): under
            1 MB, as memobs.h's doc says.
     storage  the storage tier beside the GPU directions, the timeline on:
            every direction recorded, known sizes (H2S: 3 of 4096 B and
            1 of 70 B; S2H: 2 of 1 MiB timed by the engine, 1 ms each;
            D2S 1 B, S2D 0 B, H2D 1000 B, D2H 2 of 3 MiB, D2D none), so
            the report shows 7 rows, 21 bars, 7 lines, the sizes table
            and the bucket bars exact, and a bandwidth row engine-timed.
     api    memobs_write_html_file() on an unwritable path returns
            MEMOBS_ERR_IO, on NULL FILE MEMOBS_ERR_INVALID; then writes
            argv[2] itself, with pinned memory tracked while the timeline
            is on and no sampler (memory over time from the timeline). */
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

#include <stdlib.h>
#include <string.h>

static char arena[1 << 16];

static int odd(void) {
    /* a tag with quotes and a script, one with a path and invalid UTF-8 */
    if (memobs_set_identity("job \"<b>x</b>\" & 'y'", 0, 0, 1) != MEMOBS_OK) return 1;
    MEMOBS_TRACK_ALLOC_N(arena, 4096, MEMOBS_MEM_HOST, "q\"uo'te <script>alert(1)</script>");
    MEMOBS_TRACK_ALLOC_N(arena + 8192, 2048, MEMOBS_MEM_HOST, "/opt/m\xff\xfeodel/<i>x</i>.py:12 caf\xc3\xa9");
    memobs_counter_add(memobs_counter_register("odd_counter", "help with <script>alert(2)</script> & \"quotes\""), 3);
    MEMOBS_RECORD_H2D(1000, 1);
    /* manual vs observed: 600 B counted by hand in decode, 1000 B seen */
    memobs_set_manual_apart(1);
    MEMOBS_RECORD_H2D(600, 0);
    MEMOBS_RECORD_D2H(5, 1);
    return 0;
}

static int many(void) {
    static char tag[96];
    int i;
    char name[32];
    memobs_timeline_start(65536);
    for (i = 0; i < 5000; i++) {
        snprintf(tag, sizeof tag, "trace-%d-\"\"\"\"<<<<>>>>&&&&\"\"\"\"<<<<>>>>&&&&", i);
        memobs_track_alloc_full(arena + i, (uint64_t)(i + 1) * 16, MEMOBS_MEM_HOST, -1, NULL, tag, 16);
    }
    for (i = 0; i < 100000; i++) {
        MEMOBS_RECORD_H2D((uint64_t)(i % 97 + 1) * 4096, i & 1);
        MEMOBS_RECORD_D2H((uint64_t)(i % 31 + 1) * 4096, i & 1);
    }
    for (i = 0; i < 5000; i++) memobs_sample_now();
    for (i = 0; i < MEMOBS_MAX_COUNTERS; i++) {
        char help[200];
        snprintf(name, sizeof name, "counter_%d", i);
        memset(help, '<', sizeof help - 1);
        help[sizeof help - 1] = 0;
        memobs_counter_add(memobs_counter_register(name, help), (uint64_t)i);
    }
    for (i = 0; i < 3000; i++) {
        memobs_request_begin((uint64_t)i);
        memobs_request_token((uint64_t)i);
        memobs_request_token((uint64_t)i);
        memobs_request_end((uint64_t)i);
    }
    return 0;
}

/* worst: what makes the largest report at default limits. Every trace
   has 32 provider frames whose text is all double quotes (6 bytes each
   once escaped), a tag of 63 of them; every counter slot has a 63-byte
   name and 127 bytes of help of '<'; latencies across 9 decades; the
   sampler's ring and the timeline full; every direction (the storage
   tier's too) with a record in every size bucket, 1 B to 2^56 B; the
   Requests block with both top lists full and 32 tenants and "other",
   names of quotes. */
static uintptr_t worst_seq;
static int worst_capture(memobs_frame_t *frames, int max, void *user) {
    int i;
    (void)user;
    worst_seq++;
    for (i = 0; i < max && i < 32; i++) {
        frames[i].pc = worst_seq * 64 + (uintptr_t)i;
        frames[i].line = (uint32_t)i;
        frames[i].aux = 0;
    }
    return i;
}
static size_t worst_format(const memobs_frame_t *frames, int n, char *buf, size_t len, void *user) {
    size_t o = 0;
    int i;
    (void)frames, (void)user;
    for (i = 0; i < n && o + 202 < len; i++) {
        memset(buf + o, '"', 200);
        o += 200;
        buf[o++] = '\n';
    }
    if (o < len) buf[o] = 0;
    return o;
}

static int worst(void) {
    static const memobs_tag_provider_t prov = {worst_capture, NULL, worst_format, "Quotes", NULL};
    char tag[64], name[64], help[128];
    uint64_t v = 1000;
    int i;
    memobs_timeline_start(65536);
    if (memobs_track_set_tag_provider(&prov) != MEMOBS_OK) return 1;
    memset(tag, '"', sizeof tag - 1);
    tag[sizeof tag - 1] = 0;
    for (i = 0; i < 3000; i++) memobs_track_alloc_full(arena + i, (uint64_t)(i + 1), MEMOBS_MEM_HOST, -1, NULL, tag, 0);
    for (i = 0; i < MEMOBS_MAX_COUNTERS; i++) {
        memset(name, 'a', sizeof name - 1);
        name[sizeof name - 1] = 0;
        name[0] = (char)('a' + i % 26);
        name[1] = (char)('a' + i / 26);
        memset(help, '<', sizeof help - 1);
        help[sizeof help - 1] = 0;
        memobs_counter_add(memobs_counter_register(name, help), 1);
    }
    for (i = 0; i < 20000; i++) {
        memobs_record_ttft(v);
        memobs_record_tpot(v);
        v = v * 1.001 > 1e15 ? 1000 : (uint64_t)((double)v * 1.001) + 1;
        MEMOBS_RECORD_H2D(4096, i & 1);
    }
    for (i = 0; i < MEMOBS_DIRS * MEMOBS_SIZE_BUCKETS; i++)
        memobs_record_xfer((memobs_dir_t)(i / MEMOBS_SIZE_BUCKETS), (uint64_t)1 << (i % MEMOBS_SIZE_BUCKETS),
                           (memobs_phase_t)(i % MEMOBS_PHASES));
    for (i = 0; i < 5000; i++) memobs_sample_now();
    /* the Requests block at its largest: 45 requests with 20-digit ids
       moving and waiting in every direction, 40 tenants of quotes (32 with
       counters of their own, the rest "other") */
    for (i = 1; i <= 45; i++) {
        uint64_t id = UINT64_MAX - 45 + (uint64_t)i;
        unsigned d;
        memset(name, '"', sizeof name - 1);
        name[sizeof name - 1] = 0;
        name[62] = (char)('A' + i % 40 % 26);
        name[61] = (char)('A' + i % 40 / 26);
        memobs_request_begin(id);
        memobs_request_tenant(id, name);
        for (d = 0; d < MEMOBS_DIRS; d++)
            memobs_request_xfer_ns(id, (memobs_dir_t)d, (uint64_t)i << 40, (memobs_phase_t)(d % MEMOBS_PHASES),
                                   (uint64_t)i << 30);
        memobs_request_token(id);
        memobs_request_end(id);
    }
    return 0;
}

static int storage(void) {
    int i;
    memobs_timeline_start(4096);
    for (i = 0; i < 3; i++) MEMOBS_RECORD_H2S(4096, 1); /* prefill */
    MEMOBS_RECORD_H2S(70, 0);                          /* decode */
    for (i = 0; i < 2; i++) memobs_record_xfer_ns(MEMOBS_DIR_S2H, 1 << 20, MEMOBS_PHASE_PREFILL, 1000000);
    MEMOBS_RECORD_D2S(1, 0);
    MEMOBS_RECORD_XFER(MEMOBS_DIR_S2D, 0, MEMOBS_PHASE_NONE);
    MEMOBS_RECORD_H2D(1000, 1);
    for (i = 0; i < 2; i++) MEMOBS_RECORD_D2H(3 << 20, 0);
    return 0;
}

static int api(const char *path) {
    if (memobs_write_html(NULL) != MEMOBS_ERR_INVALID) return 2;
    if (memobs_write_html_file("/nonexistent-memobs-dir/x.html") != MEMOBS_ERR_IO) return 3;
    MEMOBS_RECORD_D2D(777, 0); /* decode */
    /* memory over time from the timeline alone (no sampler) */
    memobs_timeline_start(4096);
    MEMOBS_TRACK_ALLOC_N(arena, 1000, MEMOBS_MEM_PINNED, "pinned_a");
    MEMOBS_TRACK_ALLOC_N(arena + 1000, 3000, MEMOBS_MEM_PINNED, "pinned_b");
    MEMOBS_TRACK_FREE(arena);
    return memobs_write_html_file(path) == MEMOBS_OK ? 0 : 4;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "empty") == 0) return 0;
    if (argc >= 2 && strcmp(argv[1], "odd") == 0) return odd();
    if (argc >= 2 && strcmp(argv[1], "many") == 0) return many();
    if (argc >= 2 && strcmp(argv[1], "worst") == 0) return worst();
    if (argc >= 2 && strcmp(argv[1], "storage") == 0) return storage();
    if (argc >= 3 && strcmp(argv[1], "api") == 0) return api(argv[2]);
    fprintf(stderr, "usage: %s empty|odd|many|worst|storage|api PATH\n", argv[0]);
    return 2;
}
