/* tests/outputs/test_html_requests.c - programs whose HTML report shows the
   "Requests" block (attribution to requests), for tests/outputs/test_html.sh
   and tests/python/html_check.py's "requests" and "requests-full" checks.
   Each mode records, writes the report to PATH with memobs_write_html_file,
   then prints on stdout, as JSON, what the API says of the same moment:
   memobs_get_summary's transfer and attributed figures and the two
   memobs_request_top lists. Nothing is recorded between the report and
   those reads, so the report's figures must equal them.

     requests PATH  both ways of attribution, tenants, misuse:
       r1 "alpha": bound (enter/leave): H2D 2 x 4000000 prefill, D2H
          1000000 decode; 2 tokens; completed.
       r2 "</script><b>&\"'": memobs_request_xfer H2D 3000 prefill,
          memobs_request_xfer_ns D2H 5000 decode in 2 ms; 1 token.
       r3 "alpha", r4 (no tenant yet): memobs_request_xfer_split D2D 1000
          decode, shares 1:3 -> 250 and 750; r3 bound: D2H 777 unphased;
          then r4 filed under "caf\xc3\xa9-\xce\xb2" (its bytes so far count
          for it); 1 token each.
       r5 (no tenant): memobs_request_xfer_ns H2D 100 prefill in 9 ms; no
          token: aborted.
       r6 "alpha" and r7 "beta", nested bindings: r6 H2D 10 decode, r7 H2D
          20 decode, r6 H2D 30 decode; r6 1 token, completed; r7 stays in
          flight (its 20 bytes count for "beta", 0 requests finished).
       Orphan: memobs_request_xfer(999) H2D 555 prefill (never begun).
       Misuse: a leave with no enter (bind 1); a tenant for an id not in
          flight and a second tenant for r7 (tenant 2).
       Unattributed: H2D 1000000 prefill, D2D 12345 decode, D2H 42
          unphased.
     full PATH  more than the block shows: 45 requests k = 1..45, id
       2^64 - 46 + k (20 digits), under tenant k % 40 (a name of 61 double
       quotes and two letters: 40 names, 32 with counters of their own,
       the rest "other"), each with memobs_request_xfer_ns in all 7
       directions d (the storage tier's too): k x 1000003 + d bytes, phase
       d % 3, k x 1000 + d ns; 1 token. The top lists keep 10 each; the
       block's worst size. */
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char block[65536];

static void json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

static const char *const dir_key[MEMOBS_DIRS] = {"h2d", "d2h", "d2d", "h2s", "s2h", "d2s", "s2d"};
static const char *const ph_key[MEMOBS_PHASES] = {"unphased", "prefill", "decode"};

static void json_dirs(const memobs_dirs_t *x) {
    unsigned d;
    printf("{");
    for (d = 0; d < MEMOBS_DIRS; d++)
        printf("%s\"%s\": [%llu, %llu]", d ? ", " : "", dir_key[d],
               (unsigned long long)memobs_dirs_get(x, d)->bytes, (unsigned long long)memobs_dirs_get(x, d)->count);
    printf("}");
}

static void json_info(const memobs_request_info_t *r) {
    unsigned p, d;
    printf("{\"id\": %llu, \"tenant\": ", (unsigned long long)r->id);
    json_str(r->tenant);
    printf(", \"state\": %d, \"xfer\": {", (int)r->state);
    for (p = 0; p < MEMOBS_PHASES; p++) {
        printf("%s\"%s\": ", p ? ", " : "", ph_key[p]);
        json_dirs(&r->xfer[p]);
    }
    printf("}, \"engine_ns\": [");
    for (d = 0; d < MEMOBS_DIRS; d++) printf("%s%llu", d ? ", " : "", (unsigned long long)r->engine_ns[d]);
    printf("], \"device_ns\": [");
    for (d = 0; d < MEMOBS_DIRS; d++) printf("%s%llu", d ? ", " : "", (unsigned long long)r->device_ns[d]);
    printf("], \"wait_ns\": %llu, \"tokens\": %llu, \"ttft_ns\": %llu, \"e2e_ns\": %llu, \"peak_bytes\": %llu}",
           (unsigned long long)r->wait_ns, (unsigned long long)r->tokens, (unsigned long long)r->ttft_ns,
           (unsigned long long)r->e2e_ns, (unsigned long long)r->peak_bytes);
}

/* The API's view, after the report: the summary's figures and the tops. */
static int print_api(void) {
    static memobs_summary_t s;
    static memobs_request_info_t top[2][MEMOBS_REQUEST_TOP];
    size_t n[2], i;
    int by;
    memobs_get_summary(&s);
    n[0] = memobs_request_top(MEMOBS_REQUEST_TOP_BYTES, top[0], MEMOBS_REQUEST_TOP);
    n[1] = memobs_request_top(MEMOBS_REQUEST_TOP_WAIT, top[1], MEMOBS_REQUEST_TOP);
    printf("{\"total\": ");
    json_dirs(&s.total);
    printf(",\n \"attributed\": {\"total\": ");
    json_dirs(&s.attributed.total);
    printf(", \"prefill\": ");
    json_dirs(&s.attributed.prefill);
    printf(", \"decode\": ");
    json_dirs(&s.attributed.decode);
    printf(", \"unphased\": ");
    json_dirs(&s.attributed.unphased);
    printf(",\n  \"orphan_bytes\": %llu, \"bind_misuse\": %llu, \"tenant_misuse\": %llu},\n",
           (unsigned long long)s.attributed.orphan_bytes, (unsigned long long)s.attributed.bind_misuse,
           (unsigned long long)s.attributed.tenant_misuse);
    printf(" \"requests_in_flight\": %llu,\n \"top\": {", (unsigned long long)s.requests_in_flight);
    for (by = 0; by < 2; by++) {
        printf("%s\"%s\": [", by ? ",\n  " : "", by ? "wait" : "bytes");
        for (i = 0; i < n[by]; i++) {
            printf("%s\n   ", i ? "," : "");
            json_info(&top[by][i]);
        }
        printf("]");
    }
    printf("}}\n");
    return fflush(stdout) == 0 ? 0 : 1;
}

static int requests(const char *path) {
    static const uint64_t ids34[2] = {3, 4}, shares[2] = {1, 3};
    const char *hostile = "</script><b>&\"'";
    /* r1: bound */
    memobs_request_begin(1);
    if (memobs_request_tenant(1, "alpha") != MEMOBS_OK) return 10;
    memobs_request_enter(1);
    MEMOBS_RECORD_H2D(4000000, 1);
    MEMOBS_TRACK_ALLOC(block, 65536, MEMOBS_MEM_DEVICE);
    MEMOBS_RECORD_H2D(4000000, 1);
    MEMOBS_TRACK_FREE(block);
    MEMOBS_RECORD_D2H(1000000, 0);
    memobs_request_leave();
    memobs_request_token(1);
    memobs_request_token(1);
    memobs_request_end(1);
    /* r2: on its behalf, from outside any binding */
    memobs_request_begin(2);
    if (memobs_request_tenant(2, hostile) != MEMOBS_OK) return 11;
    memobs_request_xfer(2, MEMOBS_DIR_H2D, 3000, MEMOBS_PHASE_PREFILL);
    memobs_request_xfer_ns(2, MEMOBS_DIR_D2H, 5000, MEMOBS_PHASE_DECODE, 2000000);
    memobs_request_token(2);
    memobs_request_end(2);
    /* r3, r4: one transfer split, then r4's tenant after its bytes */
    memobs_request_begin(3);
    memobs_request_begin(4);
    if (memobs_request_tenant(3, "alpha") != MEMOBS_OK) return 12;
    if (memobs_request_xfer_split(ids34, shares, 2, MEMOBS_DIR_D2D, 1000, MEMOBS_PHASE_DECODE) != MEMOBS_OK) return 13;
    memobs_request_enter(3);
    memobs_record_xfer(MEMOBS_DIR_D2H, 777, MEMOBS_PHASE_NONE);
    memobs_request_leave();
    if (memobs_request_tenant(4, "caf\xc3\xa9-\xce\xb2") != MEMOBS_OK) return 14;
    memobs_request_token(3);
    memobs_request_end(3);
    memobs_request_token(4);
    memobs_request_end(4);
    /* r5: waited longest, moved least; aborted */
    memobs_request_begin(5);
    memobs_request_xfer_ns(5, MEMOBS_DIR_H2D, 100, MEMOBS_PHASE_PREFILL, 9000000);
    memobs_request_end(5);
    /* r6, r7: nested bindings; r7 stays in flight */
    memobs_request_begin(6);
    memobs_request_begin(7);
    if (memobs_request_tenant(6, "alpha") != MEMOBS_OK || memobs_request_tenant(7, "beta") != MEMOBS_OK) return 15;
    memobs_request_enter(6);
    MEMOBS_RECORD_H2D(10, 0);
    memobs_request_enter(7);
    MEMOBS_RECORD_H2D(20, 0);
    memobs_request_leave();
    MEMOBS_RECORD_H2D(30, 0);
    memobs_request_leave();
    memobs_request_token(6);
    memobs_request_end(6);
    /* an orphan, misuse, and records for no request */
    memobs_request_xfer(999, MEMOBS_DIR_H2D, 555, MEMOBS_PHASE_PREFILL);
    memobs_request_leave();
    if (memobs_request_tenant(12345, "nobody") != MEMOBS_ERR_INVALID) return 16;
    if (memobs_request_tenant(7, "alpha") != MEMOBS_ERR_INVALID) return 17;
    MEMOBS_RECORD_H2D(1000000, 1);
    MEMOBS_RECORD_D2D(12345, 0);
    memobs_record_xfer(MEMOBS_DIR_D2H, 42, MEMOBS_PHASE_NONE);
    if (memobs_write_html_file(path) != MEMOBS_OK) return 18;
    return print_api();
}

static int full(const char *path) {
    char name[64];
    uint64_t k, id;
    unsigned d;
    int t;
    for (k = 1; k <= 45; k++) {
        id = UINT64_MAX - 45 + k; /* the longest ids: 20 digits */
        t = (int)(k % 40);
        memset(name, '"', sizeof name - 1);
        name[sizeof name - 1] = 0;
        name[62] = (char)('A' + t % 26);
        name[61] = (char)('A' + t / 26);
        memobs_request_begin(id);
        if (memobs_request_tenant(id, name) != MEMOBS_OK) return 10;
        for (d = 0; d < MEMOBS_DIRS; d++)
            memobs_request_xfer_ns(id, (memobs_dir_t)d, k * 1000003u + d, (memobs_phase_t)(d % MEMOBS_PHASES),
                                   k * 1000 + d);
        memobs_request_token(id);
        memobs_request_end(id);
    }
    if (memobs_write_html_file(path) != MEMOBS_OK) return 18;
    return print_api();
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "requests") == 0) return requests(argv[2]);
    if (argc >= 3 && strcmp(argv[1], "full") == 0) return full(argv[2]);
    fprintf(stderr, "usage: %s requests|full PATH\n", argv[0]);
    return 2;
}
