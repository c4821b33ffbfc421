/* hello.c - memobs in one small C program.

   A pretend inference engine serves one request: the prompt's KV cache
   goes to the GPU (prefill), then it generates 8 tokens and reads their
   logits back (decode). memobs counts each copy by direction and phase,
   times the request (TTFT, TPOT, end to end) and each decode step.

       cc -std=c99 -I. examples/hello.c -o hello -pthread && ./hello
       make examples && build/examples/hello        (the same)

   Needs: a C99 compiler and pthreads, nothing else (no GPU: the "copies"
   are memcpy calls, recorded the way a real engine records each
   cudaMemcpyAsync it queues). */

#define MEMOBS_IMPLEMENTATION /* in exactly one .c file: memobs' code */
#include "memobs.h"

#include <string.h>

enum { BLOCK = 64 * 1024, PROMPT_BLOCKS = 4, TOKENS = 8, LOGITS = 4096 };

static char host_kv[PROMPT_BLOCKS][BLOCK], gpu_kv[PROMPT_BLOCKS][BLOCK];
static char gpu_logits[LOGITS], host_logits[LOGITS];

int main(void) {
    unsigned request = 1;
    MEMOBS_REQUEST_BEGIN(request); /* the request's clock starts */

    /* Prefill: 4 blocks of 64 KiB host -> device, each recorded as it is
       queued. The second argument says "this is a prefill copy". */
    for (int b = 0; b < PROMPT_BLOCKS; b++) {
        memcpy(gpu_kv[b], host_kv[b], BLOCK);
        MEMOBS_RECORD_H2D(BLOCK, 1);
    }

    /* Decode: from here on this thread is in the decode phase, and the
       _CUR macros file their copies under it. */
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    for (int t = 0; t < TOKENS; t++) {
        MEMOBS_REGION_BEGIN("decode_step"); /* a named span: counted, timed */
        memcpy(host_logits, gpu_logits, LOGITS);
        MEMOBS_RECORD_D2H_CUR(LOGITS);
        MEMOBS_REGION_END();
        /* The first token of a request gives a TTFT sample, the next ones
           a TPOT sample each (the time since the previous token). */
        MEMOBS_REQUEST_TOKEN(request);
    }
    MEMOBS_REQUEST_END(request); /* one end-to-end sample */

    /* On stderr: H2D 262.14 KB in 4 ops, all prefill (KB = 1000 bytes),
       D2H 32.77 KB in 8 ops, all decode; TTFT 1 sample, TPOT 7, E2E 1;
       the region decode_step 8 times. MEMOBS_FORMAT=json: as JSON. */
    memobs_print_summary();
    return 0;
}
