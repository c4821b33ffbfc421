/* Item 13: a backend that carries its own memobs (MEMOBS_HIDDEN), which
   tests/serving/hostile/host_unload.c loads, uses and unloads. */
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

__attribute__((visibility("default"))) void lib_record(void) { MEMOBS_RECORD_H2D(4096, 1); }

static void *lib_worker(void *arg) {
    int *fd = (int *)arg;
    char c = 1;
    MEMOBS_RECORD_H2D(4096, 1); /* this thread's shard: its exit runs memobs' thread-exit destructor */
    if (write(fd[1], &c, 1) != 1) return NULL;
    while (read(fd[0], &c, 1) < 0) {
    } /* until the host says so (after its dlclose) */
    return NULL;
}

/* Starts a thread that records, tells fd[1], then waits for fd[0]. */
__attribute__((visibility("default"))) int lib_thread(int *fd, pthread_t *t) {
    return pthread_create(t, NULL, lib_worker, fd);
}
