/* Item 22 (fork cost): argv[1] forks (default 500), each child _exits at
   once, the parent waits; prints the medians of fork() in the parent, of
   fork() to the child's first line (its fork handlers run), and of the
   whole fork and wait, and the page faults per fork in the parent and in
   a child (copy-on-write faults: what the fork handlers write). Run with
   and without the LD_PRELOAD library. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 500, i;
    double *t = malloc(sizeof *t * 3 * (size_t)(n > 0 ? n : 1));
    int fd[2];
    struct rusage r0, r1, rc;
    if (!t || n < 1 || pipe(fd) != 0) return 2;
    getrusage(RUSAGE_SELF, &r0);
    for (i = 0; i < n; i++) {
        double t0 = now_us(), tc;
        pid_t p = fork();
        if (p == 0) {
            tc = now_us();
            _exit(write(fd[1], &tc, sizeof tc) == sizeof tc ? 0 : 1);
        }
        t[i] = now_us() - t0;
        if (p < 0 || read(fd[0], &tc, sizeof tc) != sizeof tc || waitpid(p, NULL, 0) != p) return perror("fork"), 2;
        t[n + i] = tc - t0;
        t[2 * n + i] = now_us() - t0;
    }
    getrusage(RUSAGE_SELF, &r1);
    getrusage(RUSAGE_CHILDREN, &rc);
    for (i = 0; i < 3; i++) qsort(t + i * n, (size_t)n, sizeof *t, cmp);
    printf("fork() in the parent %.0f us, to the child %.0f us, fork and wait %.0f us (medians of %d)\n", t[n / 2],
           t[n + n / 2], t[2 * n + n / 2], n);
    printf("page faults per fork: parent %.1f, child %.1f\n", (double)(r1.ru_minflt - r0.ru_minflt) / n,
           (double)rc.ru_minflt / n);
    free(t);
    return 0;
}
