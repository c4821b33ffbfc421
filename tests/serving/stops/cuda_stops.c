/* tests/serving/stops/cuda_stops.c - a CUDA program that knows nothing of memobs,
   for the LD_PRELOAD library's part of tests/serving/test_stops.sh: linked with
   -lcudart against the runtime double (tests/cuda/cudart_double.c as a
   shared libcudart.so.13, built as tests/preload/test_preload.sh builds it) and
   run with LD_PRELOAD=libmemobs_preload.so, then without it (the
   reference for the exit status and the signal).

   cuda_stops END
     Copies on 2 threads, CUDA_STOPS_ITERS iterations each: H2D 4096+t,
     D2H 2048+t, D2D 256 bytes (cudaMemcpy; no phase set: unphased); 24
     cudaMalloc of 1 MiB + 4096 i and 8 cudaMallocHost of 65536, all left
     live. Then END: return, wait (say "ready", wait for a signal), segv,
     abort, _exit (_exit(6)). STOPS_READY_FD as in tests/serving/stops/stops.c. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CUDA_STOPS_ITERS 200

static char *cuda_stops_dev[2][2], *cuda_stops_host[2];
static int *volatile cuda_stops_null;

static void cuda_stops_check(const char *what, cudaError_t e) {
    if (e != cudaSuccess) {
        fprintf(stderr, "cuda_stops: %s failed (%d)\n", what, (int)e);
        _exit(95);
    }
}

static void *cuda_stops_worker(void *arg) {
    unsigned t = (unsigned)(uintptr_t)arg, i;
    char *d0 = cuda_stops_dev[t][0], *d1 = cuda_stops_dev[t][1], *h = cuda_stops_host[t];
    for (i = 0; i < CUDA_STOPS_ITERS; i++) {
        cuda_stops_check("H2D", cudaMemcpy(d0, h, 4096 + t, cudaMemcpyHostToDevice));
        cuda_stops_check("D2H", cudaMemcpy(h, d0, 2048 + t, cudaMemcpyDeviceToHost));
        cuda_stops_check("D2D", cudaMemcpy(d1, d0, 256, cudaMemcpyDeviceToDevice));
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *end = argc > 1 ? argv[1] : "return", *s = getenv("STOPS_READY_FD");
    pthread_t th[2];
    void *p;
    unsigned i;
    for (i = 0; i < 24; i++) cuda_stops_check("cudaMalloc", cudaMalloc(&p, (1u << 20) + 4096u * i));
    for (i = 0; i < 8; i++) cuda_stops_check("cudaMallocHost", cudaMallocHost(&p, 65536));
    for (i = 0; i < 2; i++) {
        cuda_stops_check("cudaMalloc", cudaMalloc((void **)&cuda_stops_dev[i][0], 8192));
        cuda_stops_check("cudaMalloc", cudaMalloc((void **)&cuda_stops_dev[i][1], 8192));
        cuda_stops_host[i] = (char *)calloc(1, 8192);
        if (!cuda_stops_host[i]) return 96;
    }
    for (i = 0; i < 2; i++)
        if (pthread_create(&th[i], NULL, cuda_stops_worker, (void *)(uintptr_t)i) != 0) return 97;
    for (i = 0; i < 2; i++) pthread_join(th[i], NULL);
    if (!strcmp(end, "return")) return 0;
    if (!strcmp(end, "_exit")) _exit(6);
    if (!strcmp(end, "abort")) abort();
    if (!strcmp(end, "segv")) {
        *cuda_stops_null = 1;
        return 70;
    }
    if (!strcmp(end, "wait")) {
        char line[64];
        int n = snprintf(line, sizeof line, "ready %ld\n", (long)getpid());
        if (!s || write(atoi(s), line, (size_t)n) != n) return 98;
        for (;;) pause();
    }
    fprintf(stderr, "cuda_stops: unknown END '%s'\n", end);
    return 2;
}
