/* tests/test_html.c - programs whose HTML report tests/test_html.sh opens
   in headless Chromium. The report is written at exit (MEMOBS_HTML), the
   JSON summary beside it (MEMOBS_SUMMARY, MEMOBS_FORMAT=json).
     empty  records nothing: every section must say what to turn on.
     odd    strings a page must escape: a tag with quotes and
            <script>alert(1)</script>, a job id with markup, a tag that is
            a path with bytes that are not UTF-8.
     many   more than the report shows: 5000 live traces (tags of
            characters that escape long, C stacks of 16 frames), the sampler's
            ring full, the timeline full, every counter slot used with a
            long help text; the report must stay under 2 MB.
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
    return 0;
}

static int many(void) {
    static char tag[96];
    int i;
    char name[32];
    memobs_timeline_enable(65536);
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

static int api(const char *path) {
    if (memobs_write_html(NULL) != MEMOBS_ERR_INVALID) return 2;
    if (memobs_write_html_file("/nonexistent-memobs-dir/x.html") != MEMOBS_ERR_IO) return 3;
    MEMOBS_RECORD_D2D(777, 0); /* decode */
    /* memory over time from the timeline alone (no sampler) */
    memobs_timeline_enable(4096);
    MEMOBS_TRACK_ALLOC_N(arena, 1000, MEMOBS_MEM_PINNED, "pinned_a");
    MEMOBS_TRACK_ALLOC_N(arena + 1000, 3000, MEMOBS_MEM_PINNED, "pinned_b");
    MEMOBS_TRACK_FREE(arena);
    return memobs_write_html_file(path) == MEMOBS_OK ? 0 : 4;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "empty") == 0) return 0;
    if (argc >= 2 && strcmp(argv[1], "odd") == 0) return odd();
    if (argc >= 2 && strcmp(argv[1], "many") == 0) return many();
    if (argc >= 3 && strcmp(argv[1], "api") == 0) return api(argv[2]);
    fprintf(stderr, "usage: %s empty|odd|many|api PATH\n", argv[0]);
    return 2;
}
