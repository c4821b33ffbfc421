/* majors.h - the runtime API of one CUDA major (MAJOR: 11, 12 or 13) for
   the programs of tests/preload/test_preload_majors.sh, which are compiled
   against the CUDA 13 headers: where an older major's signature differs,
   it is declared here under a private C name bound, by an asm label, to
   the runtime's symbol. INSTANTIATE, BATCH and BATCH3D call that major's
   cudaGraphInstantiate, cudaMemcpyBatchAsync and cudaMemcpy3DBatchAsync
   (12.8's with a failIdx, written to *fi; none in 11). Built with
   CUDA_API_PER_THREAD_DEFAULT_STREAM, the 12.8 batches bind their _ptsz
   entry points, as the header does for the others. */
#ifndef MEMOBS_TEST_MAJORS_H
#define MEMOBS_TEST_MAJORS_H
#include <cuda_runtime_api.h>

#if MAJOR == 11
typedef cudaError_t instantiate11_t(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, cudaGraphNode_t *pErrorNode,
                                    char *pLogBuffer, size_t bufferSize);
instantiate11_t instantiate11 __asm__("cudaGraphInstantiate");
#define INSTANTIATE(x, g, log) instantiate11(x, g, &(log).node, (log).text, sizeof (log).text)
#else
#define INSTANTIATE(x, g, log) ((void)(log), cudaGraphInstantiate(x, g, 0))
#endif

#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
#define MAJORS_PT "_ptsz"
#else
#define MAJORS_PT ""
#endif

#if MAJOR == 12
typedef cudaError_t batch12_t(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                              struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                              size_t *failIdx, cudaStream_t stream);
typedef cudaError_t batch3d12_t(size_t numOps, struct cudaMemcpy3DBatchOp *opList, size_t *failIdx,
                                unsigned long long flags, cudaStream_t stream);
batch12_t batch12 __asm__("cudaMemcpyBatchAsync" MAJORS_PT);
batch3d12_t batch3d12 __asm__("cudaMemcpy3DBatchAsync" MAJORS_PT);
#define BATCH(d, s, z, n, a, ai, na, fi, st) batch12(d, s, z, n, a, ai, na, fi, st)
#define BATCH3D(n, ops, fi, st) batch3d12(n, ops, fi, 0, st)
#elif MAJOR == 13
#define BATCH(d, s, z, n, a, ai, na, fi, st) ((void)(fi), cudaMemcpyBatchAsync(d, s, z, n, a, ai, na, st))
#define BATCH3D(n, ops, fi, st) ((void)(fi), cudaMemcpy3DBatchAsync(n, ops, 0, st))
#endif

/* 11's log of a failed instantiation */
typedef struct {
    cudaGraphNode_t node;
    char text[64];
} inst_log_t;
#endif
