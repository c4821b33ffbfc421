/* bench_stops.c - `make bench-stops` (part of `make bench`): what the stop
   handling of issue 25 costs.

   1. A record with the signal handling on (every output configured, so
      memobs installs its handlers) against MEMOBS_SIGNALS=0, in child
      processes of this one run, on and off alternating: each child times
      MEMOBS_RECORD_H2D in a BENCH_LOOP (bench.h) of BENCH_STOPS_ITERS
      iterations, best of 3, and says whether a SIGTERM handler is
      installed. None is expected: the handling adds nothing to a record.
   2. The write at exit, for a given amount of data: a timeline of 64K
      events (filled), 10,000 live tracked allocations (device and host),
      a full sample ring (4096 samples), every output configured. Each
      output written on its own (memobs_write_*_file, the leak report
      through memobs_print_leaks), then memobs_flush() (all of them), 7
      times: median beside best, the file's size and bytes per event or
      allocation, and beside it the same bytes written with one write()
      to a new file of the same folder (median of 7: what the disk costs;
      the rest is formatting).
   3. A stop: a child with that data, ended by SIGTERM, against one that
      returns from main, each timed from the parent's signal (or go) to
      waitpid(); 3 of each, median beside best, and the outputs there.

   The outputs go to a fresh folder under $TMPDIR (default /tmp), removed at
   the end. Built -DMEMOBS_NO_AUTOINIT: the environment is set before
   memobs_init() reads it. Figures are printed, never asserted. */
#define _GNU_SOURCE
#define MEMOBS_NO_AUTOINIT
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"
#include "bench.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define BENCH_STOPS_ITERS 20000000u
#define BENCH_STOPS_TURNS 5  /* children per mode for the record figure */
#define BENCH_STOPS_REPS 7   /* writes per output */
#define BENCH_STOPS_STOPS 3  /* stops per way */
#define BENCH_STOPS_EVENTS 65536
#define BENCH_STOPS_LIVE 10000
#define BENCH_STOPS_SAMPLES 4096

BENCH_LOOP(bench_stops_record, MEMOBS_RECORD_H2D(bytes, 1))

static char bench_stops_dir[1024];

/* ======================================================================== */
/* Helpers                                                                  */
/* ======================================================================== */

static int bench_stops_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v; its median. */
static double bench_stops_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bench_stops_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void bench_stops_path(char *out, size_t len, const char *name) {
    snprintf(out, len, "%s/%s", bench_stops_dir, name);
}

/* Every output variable, into the folder; memobs' environment. */
static void bench_stops_env(void) {
    static const char *const vars[][2] = {
        {"MEMOBS_SUMMARY", "summary.json"}, {"MEMOBS_PROM_FILE", "metrics.prom"}, {"MEMOBS_TIMELINE", "trace.json"},
        {"MEMOBS_STORMLOG", "stormlog.json"}, {"MEMOBS_HTML", "report.html"}, {"MEMOBS_LEAKS", "leaks.txt"},
        {"MEMOBS_TORCH_SNAPSHOT", "snapshot.pickle"}};
    char p[1400];
    unsigned i;
    for (i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        bench_stops_path(p, sizeof p, vars[i][1]);
        setenv(vars[i][0], p, 1);
    }
    setenv("MEMOBS_FORMAT", "json", 1);
    setenv("MEMOBS_PROM_INTERVAL_MS", "0", 1);
    setenv("MEMOBS_TIMELINE_EVENTS", "64K", 1);
    setenv("MEMOBS_SAMPLE_MS", "60000", 1); /* the sampler on; the ring is filled by hand */
}

/* Files in the folder, and their bytes. */
static int bench_stops_files(uint64_t *bytes) {
    DIR *d = opendir(bench_stops_dir);
    struct dirent *e;
    int n = 0;
    *bytes = 0;
    if (!d) return 0;
    while ((e = readdir(d)) != NULL) {
        char p[1400];
        struct stat st;
        if (e->d_name[0] == '.') continue;
        bench_stops_path(p, sizeof p, e->d_name);
        if (stat(p, &st) == 0) {
            n++;
            *bytes += (uint64_t)st.st_size;
        }
    }
    closedir(d);
    return n;
}

static void bench_stops_clean(void) {
    DIR *d = opendir(bench_stops_dir);
    struct dirent *e;
    if (!d) return;
    while ((e = readdir(d)) != NULL) {
        char p[1400];
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        bench_stops_path(p, sizeof p, e->d_name);
        unlink(p);
    }
    closedir(d);
}

/* The data the writers write: 64K timeline events, 10,000 live
   allocations (9,000 device, 1,000 host, each with a tag), a full ring
   of samples. */
static char bench_stops_arena[BENCH_STOPS_LIVE];

static void bench_stops_fill(void) {
    unsigned i;
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    for (i = 0; i < BENCH_STOPS_LIVE; i++)
        MEMOBS_TRACK_ALLOC_N(bench_stops_arena + i, 4096u + 64u * (i % 100),
                             i % 10 ? MEMOBS_MEM_DEVICE : MEMOBS_MEM_HOST, i % 2 ? "kv_cache" : "activations");
    for (i = 0; i < 2 * BENCH_STOPS_EVENTS; i++) MEMOBS_RECORD_H2D_CUR(4096 + (i & 0xff));
    for (i = 0; i < BENCH_STOPS_SAMPLES; i++) memobs_sample_now();
}

/* ======================================================================== */
/* 1. A record, handling on and off (child processes)                       */
/* ======================================================================== */

/* In a child: best of 3 loops, ns per record; whether SIGTERM has a handler. */
static int bench_stops_record_child(void) {
    struct sigaction old;
    double best = 0;
    int r;
    unsetenv("MEMOBS_TIMELINE"); /* the timeline would change what a record does */
    unsetenv("MEMOBS_TIMELINE_EVENTS");
    unsetenv("MEMOBS_SAMPLE_MS");
    memobs_init();
    bench_stops_record(BENCH_STOPS_ITERS / 10, NULL); /* warm-up */
    for (r = 0; r < 3; r++) {
        uint64_t t0 = memobs_now_ns();
        double ns;
        bench_stops_record(BENCH_STOPS_ITERS, NULL);
        ns = (double)(memobs_now_ns() - t0) / BENCH_STOPS_ITERS;
        if (r == 0 || ns < best) best = ns;
    }
    sigaction(SIGTERM, NULL, &old);
    memobs_set_exit_outputs(0); /* nothing to write at its exit */
    printf("%.4f %d\n", best, (old.sa_flags & SA_SIGINFO) ? 1 : old.sa_handler != SIG_DFL);
    return 0;
}

/* Runs this program as a record child, signals off or on; its figure. */
static int bench_stops_spawn_record(const char *self, int off, double *ns, int *handler) {
    int fd[2], st;
    char buf[128];
    ssize_t n;
    pid_t pid;
    if (pipe(fd) != 0) return -1;
    pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        if (off) setenv("MEMOBS_SIGNALS", "0", 1);
        else unsetenv("MEMOBS_SIGNALS");
        execl(self, self, "--record-child", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    n = read(fd[0], buf, sizeof buf - 1);
    close(fd[0]);
    waitpid(pid, &st, 0);
    if (n <= 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
    buf[n] = 0;
    return sscanf(buf, "%lf %d", ns, handler) == 2 ? 0 : -1;
}

static void bench_stops_records(const char *self) {
    double on[BENCH_STOPS_TURNS], off[BENCH_STOPS_TURNS], mon, moff;
    int hon = -1, hoff = -1, t;
    for (t = 0; t < BENCH_STOPS_TURNS; t++)
        if (bench_stops_spawn_record(self, 0, &on[t], &hon) != 0 || bench_stops_spawn_record(self, 1, &off[t], &hoff) != 0) {
            printf("  a record child failed\n");
            return;
        }
    mon = bench_stops_median(on, BENCH_STOPS_TURNS);
    moff = bench_stops_median(off, BENCH_STOPS_TURNS);
    printf("\n1. MEMOBS_RECORD_H2D, 1 thread, every output configured: %d child processes each way, alternating; "
           "each the best of 3 loops of %u\n", BENCH_STOPS_TURNS, BENCH_STOPS_ITERS);
    printf("  %-44s %9s %9s  %s\n", "", "median", "best", "SIGTERM handler installed");
    printf("  %-44s %6.2f ns %6.2f ns  %s\n", "signal handling on (the default)", mon, on[0],
           hon ? "yes" : "no (none installed: the handling is not there)");
    printf("  %-44s %6.2f ns %6.2f ns  %s\n", "MEMOBS_SIGNALS=0", moff, off[0], hoff ? "yes" : "no");
    printf("  %-44s %+6.2f ns %+6.2f ns  (%.2fx the median)\n", "on - off", mon - moff, on[0] - off[0], mon / moff);
}

/* ======================================================================== */
/* 2. The write at exit, per output                                         */
/* ======================================================================== */

typedef struct {
    const char *name, *file;
    int (*write)(const char *path);
    const char *per; /* what its size is divided by */
    double per_n;
} bench_stops_out_t;

static int bench_stops_summary(const char *p) { return memobs_write_summary_file(p, MEMOBS_FORMAT_JSON); }
static int bench_stops_leaks(const char *p) {
    FILE *f = fopen(p, "w");
    int r;
    if (!f) return -1;
    r = memobs_print_leaks(f);
    return fclose(f) != 0 ? -1 : r;
}

/* The same bytes with one write() to a new file, BENCH_STOPS_REPS times:
   the disk's part (median, ms). */
static double bench_stops_raw(const char *path, uint64_t *size) {
    char p2[1500];
    struct stat st;
    double t[BENCH_STOPS_REPS];
    char *buf;
    int fd, r;
    ssize_t n;
    *size = 0;
    if (stat(path, &st) != 0 || !(buf = (char *)malloc((size_t)st.st_size + 1))) return 0;
    fd = open(path, O_RDONLY);
    n = fd >= 0 ? read(fd, buf, (size_t)st.st_size) : -1;
    if (fd >= 0) close(fd);
    snprintf(p2, sizeof p2, "%s.raw", path);
    for (r = 0; r < BENCH_STOPS_REPS; r++) {
        uint64_t t0 = memobs_now_ns();
        fd = open(p2, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0 && n > 0 && write(fd, buf, (size_t)n) != n) n = -1;
        if (fd >= 0) close(fd);
        t[r] = (double)(memobs_now_ns() - t0) / 1e6;
        unlink(p2);
    }
    free(buf);
    *size = n > 0 ? (uint64_t)n : 0;
    return bench_stops_median(t, BENCH_STOPS_REPS);
}

static void bench_stops_writes(void) {
    bench_stops_out_t outs[] = {
        {"summary (JSON)", "summary.json", bench_stops_summary, "", 0},
        {"Prometheus", "metrics.prom", memobs_write_prometheus_file, "", 0},
        {"leak report", "leaks.txt", bench_stops_leaks, "", 0}, /* rows by trace: 2 here */
        {"Stormlog", "stormlog.json", memobs_write_stormlog_file, "sample", BENCH_STOPS_SAMPLES},
        {"PyTorch snapshot", "snapshot.pickle", memobs_write_torch_snapshot_file, "device allocation",
         BENCH_STOPS_LIVE * 9 / 10},
        {"HTML report", "report.html", memobs_write_html_file, "", 0},
        {"Chrome trace", "trace.json", memobs_write_timeline_file, "event", BENCH_STOPS_EVENTS},
    };
    memobs_timeline_stats_t tl;
    double t[BENCH_STOPS_REPS], all[BENCH_STOPS_REPS], sum_med = 0, med_all;
    uint64_t total = 0;
    unsigned i;
    int r, files = 0;
    memobs_timeline_get_stats(&tl);
    printf("\n2. the write at exit: a timeline of %llu events (%llu recorded), %d live allocations (device and host, "
           "tagged), %llu samples; each output %d times\n", (unsigned long long)tl.kept,
           (unsigned long long)tl.recorded, BENCH_STOPS_LIVE, (unsigned long long)memobs_get_samples(NULL, 0),
           BENCH_STOPS_REPS);
    printf("  %-18s %10s %10s %12s %22s %12s  %s\n", "output", "median", "best", "size", "per", "one write()",
           "not the disk");
    for (i = 0; i < sizeof outs / sizeof outs[0]; i++) {
        char p[1400], per[40] = "";
        uint64_t size = 0;
        double med, raw;
        bench_stops_path(p, sizeof p, outs[i].file);
        for (r = 0; r < BENCH_STOPS_REPS; r++) {
            uint64_t t0 = memobs_now_ns();
            if (outs[i].write(p) != MEMOBS_OK) printf("  (%s: the write failed)\n", outs[i].name);
            t[r] = (double)(memobs_now_ns() - t0) / 1e6;
        }
        med = bench_stops_median(t, BENCH_STOPS_REPS);
        raw = bench_stops_raw(p, &size);
        if (outs[i].per_n > 0)
            snprintf(per, sizeof per, "%.0f B/%s", (double)size / outs[i].per_n, outs[i].per);
        printf("  %-18s %7.2f ms %7.2f ms %9.1f KB %22s %9.2f ms  %3.0f%%\n", outs[i].name, med, t[0],
               (double)size / 1e3, per, raw, med > 0 ? 100.0 * (med - raw) / med : 0);
        sum_med += med;
        total += size;
    }
    for (r = 0; r < BENCH_STOPS_REPS; r++) {
        uint64_t t0 = memobs_now_ns();
        memobs_flush();
        all[r] = (double)(memobs_now_ns() - t0) / 1e6;
    }
    files = bench_stops_files(&total);
    med_all = bench_stops_median(all, BENCH_STOPS_REPS); /* sorts: all[0] is the best after it */
    printf("  %-18s %7.2f ms %7.2f ms %9.1f KB  (the sum of the rows' medians: %.2f ms; %d files in the folder)\n",
           "memobs_flush()", med_all, all[0], (double)total / 1e3, sum_med, files);
}

/* ======================================================================== */
/* 3. A stop: SIGTERM against return                                        */
/* ======================================================================== */

/* In a child: the data, "r" on fd 1, then wait: a signal, or a byte on
   stdin (then return from main). */
static int bench_stops_stop_child(void) {
    char c;
    memobs_init();
    bench_stops_fill();
    if (write(1, "r", 1) != 1) return 1;
    if (read(0, &c, 1) < 0) return 1;
    return 0;
}

/* ms from the parent's SIGTERM (or go byte) to waitpid(); files written. */
static double bench_stops_spawn_stop(const char *self, int term, int *files, int *status) {
    int up[2], down[2], st;
    char c;
    uint64_t t0, bytes;
    pid_t pid;
    bench_stops_clean();
    if (pipe(up) != 0 || pipe(down) != 0) return -1;
    pid = fork();
    if (pid == 0) {
        dup2(up[1], 1);
        dup2(down[0], 0);
        close(up[0]);
        close(up[1]);
        close(down[0]);
        close(down[1]);
        execl(self, self, "--stop-child", (char *)NULL);
        _exit(127);
    }
    close(up[1]);
    close(down[0]);
    if (read(up[0], &c, 1) != 1) return -1;
    t0 = memobs_now_ns();
    if (term) kill(pid, SIGTERM);
    else if (write(down[1], "g", 1) != 1) return -1;
    waitpid(pid, &st, 0);
    t0 = memobs_now_ns() - t0;
    close(up[0]);
    close(down[1]);
    *files = bench_stops_files(&bytes);
    *status = st;
    return (double)t0 / 1e6;
}

static void bench_stops_stops(const char *self) {
    double v[2][BENCH_STOPS_STOPS];
    int files[2] = {0, 0}, st[2] = {0, 0}, w, r;
    for (r = 0; r < BENCH_STOPS_STOPS; r++)
        for (w = 0; w < 2; w++) v[w][r] = bench_stops_spawn_stop(self, w, &files[w], &st[w]);
    printf("\n3. a stop with that data and every output configured, from the parent's go to waitpid(): %d each way\n",
           BENCH_STOPS_STOPS);
    printf("  %-30s %10s %10s  %s\n", "", "median", "best", "outputs there / how it ended");
    for (w = 0; w < 2; w++) {
        double m = bench_stops_median(v[w], BENCH_STOPS_STOPS);
        printf("  %-30s %7.1f ms %7.1f ms  %d of 7 / %s %d\n", w ? "SIGTERM" : "return from main", m, v[w][0],
               files[w], WIFSIGNALED(st[w]) ? "signal" : "exit", WIFSIGNALED(st[w]) ? WTERMSIG(st[w]) : WEXITSTATUS(st[w]));
    }
}

/* ======================================================================== */
/* Main                                                                     */
/* ======================================================================== */

int main(int argc, char **argv) {
    const char *tmp = getenv("TMPDIR");
    char self[4096];
    ssize_t n;
    if (argc > 1 && !strcmp(argv[1], "--record-child")) return bench_stops_record_child();
    if (argc > 1 && !strcmp(argv[1], "--stop-child")) return bench_stops_stop_child();
    n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 1;
    self[n] = 0;
    snprintf(bench_stops_dir, sizeof bench_stops_dir, "%s/memobs_bench_stops.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(bench_stops_dir)) return perror("mkdtemp"), 1;
    setenv("BENCH_STOPS_DIR", bench_stops_dir, 1);
    bench_stops_env();
    printf("memobs %s, the stop handling (issue 25); outputs in %s (removed after)\n", MEMOBS_VERSION,
           bench_stops_dir);
    bench_stops_records(self);
    memobs_init();
    bench_stops_fill();
    bench_stops_writes();
    memobs_set_exit_outputs(0);
    bench_stops_stops(self);
    bench_stops_clean();
    rmdir(bench_stops_dir);
    return 0;
}
