/* cuda_test.h - what tests/cuda/test_cuda.c and tests/cuda/test_capture.c share: the
   checks of CUDA results and transfer rows, the summary snapshot, the
   runtime double's call counts, and the start of every test. Include after
   memobs_cuda.h, cuda/cudart_double.h and check.h. */
#ifndef MEMOBS_TEST_CUDA_TEST_H
#define MEMOBS_TEST_CUDA_TEST_H

#define CHECK_ERR(expected, call) CHECK_U64((unsigned)(expected), (unsigned)(call))

static memobs_summary_t S; /* large: off the stack */
__attribute__((unused)) static void snap(void) { memobs_get_summary(&S); }
__attribute__((unused)) static long calls(const char *fn) { return cudadbl_calls(fn); }

__attribute__((unused)) static const memobs_xfer_t *xf(const memobs_dirs_t *d, memobs_dir_t dir) {
    return dir == MEMOBS_DIR_H2D ? &d->h2d : dir == MEMOBS_DIR_D2H ? &d->d2h : &d->d2d;
}
#define CHECK_XFER(dirs, dir, bytes_, count_)      \
    do {                                            \
        CHECK_U64(bytes_, xf(&(dirs), dir)->bytes); \
        CHECK_U64(count_, xf(&(dirs), dir)->count); \
    } while (0)

/* Every test starts here: the double's scripts and settings back to the
   start (its objects stay: memobs keeps its CUDA event pool), memobs'
   window reset, phase unphased, device 0, timing off, no error pending,
   and the fake clock well past anything completed before. */
__attribute__((unused)) static void fresh(void) {
    cudadbl_reset_script();
    cudadbl_complete_all();
    (void)memobs_cuda_poll();
    cudadbl_advance_clock(1000.0f);
    memobs_set_enabled(1);
    memobs_cuda_set_timing(0);
    memobs_set_phase(MEMOBS_PHASE_NONE);
    (void)cudaSetDevice(0);
    (void)cudaGetLastError();
    memobs_reset();
    cudadbl_reset_calls();
}

#endif
