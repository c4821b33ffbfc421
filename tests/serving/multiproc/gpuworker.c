/* A GPU worker of tests/serving/test_prom_multiproc.sh that knows nothing of
   memobs: plain CUDA runtime calls (against the runtime double, as
   libcudart.so.13), run under the LD_PRELOAD library with
   PROMETHEUS_MULTIPROC_DIR set. It cudaMalloc()s 1 MiB (kept), copies
   4096 bytes host to device 3 times and 65536 back once, prints "copied",
   waits for a line on stdin (or its end) and returns. */
#include <cuda_runtime_api.h>
#include <stdio.h>

static char host[65536];

int main(void) {
    void *dev = NULL;
    char line[16];
    int i;
    if (cudaMalloc(&dev, (size_t)1 << 20) != cudaSuccess) return 1;
    for (i = 0; i < 3; i++)
        if (cudaMemcpy(dev, host, 4096, cudaMemcpyHostToDevice) != cudaSuccess) return 1;
    if (cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost) != cudaSuccess) return 1;
    printf("copied\n");
    fflush(stdout);
    (void)!fgets(line, sizeof line, stdin);
    return 0;
}
