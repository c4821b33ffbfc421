/* Every public macro, compiled in each language mode without the
   implementation (tests/core/test_compile.sh). Records fixed amounts that
   main.c checks after linking the C, C++ and nvcc builds together. */
#include "memobs.h"

#ifndef USE_FN
#define USE_FN use_c
#endif

#ifdef __cplusplus
extern "C"
#endif
void USE_FN(unsigned long long id);

void USE_FN(unsigned long long id) {
    MEMOBS_RECORD_H2D(1000, 1);
    MEMOBS_RECORD_D2H(200, 0);
    MEMOBS_RECORD_D2D(30, 1);
    MEMOBS_SET_PHASE(MEMOBS_PHASE_DECODE);
    MEMOBS_RECORD_H2D_CUR(4);
    MEMOBS_RECORD_D2H_CUR(5);
    MEMOBS_RECORD_D2D_CUR(6);
    MEMOBS_RECORD_XFER(MEMOBS_DIR_D2D, 7, MEMOBS_PHASE_NONE);
    MEMOBS_SET_PHASE(MEMOBS_PHASE_NONE);
    MEMOBS_COUNTER_ADD("compile_uses", 1);
    MEMOBS_TTFT_START();
    MEMOBS_TTFT_STOP();
    MEMOBS_TPOT_STEP();
    MEMOBS_TPOT_STOP();
    MEMOBS_REQUEST_BEGIN(id);
    MEMOBS_REQUEST_TOKEN(id);
    MEMOBS_REQUEST_END(id);
    MEMOBS_REGION_BEGIN("compile_region");
    MEMOBS_MARK("compile_mark");
    MEMOBS_REGION_END();
#ifdef __cplusplus
    {
        MEMOBS_REGION("compile_scoped");
        MEMOBS_REGION("compile_scoped"); /* two in one scope: each its own variable */
    }
#endif
    {
        /* Per build: one 3000-byte device block kept live, four freed. */
        static char blocks[5];
        MEMOBS_TRACK_ALLOC(&blocks[0], 3000, MEMOBS_MEM_DEVICE);
        MEMOBS_TRACK_ALLOC_N(&blocks[1], 100, MEMOBS_MEM_PINNED, "compile_tag");
        MEMOBS_TRACK_ALLOC_S(&blocks[2], 10, MEMOBS_MEM_HOST, 4);
        MEMOBS_TRACK_ALLOC_NS(&blocks[3], 1, MEMOBS_MEM_MANAGED, "compile_tag", 2);
        MEMOBS_TRACK_ALLOC(&blocks[4], 5u, MEMOBS_MEM_HOST);
        MEMOBS_TRACK_FREE(&blocks[1]);
        MEMOBS_TRACK_FREE(&blocks[2]);
        MEMOBS_TRACK_FREE(&blocks[3]);
        MEMOBS_TRACK_FREE(&blocks[4]);
        if (blocks[0]) id++; /* a real use: nvcc warns about a variable used only in sizeof */
    }
}
