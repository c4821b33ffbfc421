/* The container's memory (the sampler's cgroup figures): the cgroup found
   from /proc/self/cgroup and /proc/self/mountinfo and read, on fixture
   trees of cgroup v1 and v2 that tests/tracker/test_cgroup.sh builds
   (CG_FIX: their folder; memobs__cg_set_root reads one in place of /),
   and on this machine's own cgroup (CG_REAL_DIR, CG_REAL_LIMIT: what the
   script found with the shell); RssShmem; the leak detector's time to the
   limit and its warning, on samples put in the ring; the outputs. Built
   as C99, C++17, ASan+UBSan and TSan (tests/four_ways.sh). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../memobs.h"
#include "../check.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TEST_SUITE
#define TEST_SUITE "cgroup"
#endif

static char LOGS[8192];
static int NLOG;
static void log_hook(int level, const char *msg, void *user) {
    size_t n = strlen(LOGS);
    (void)level;
    (void)user;
    NLOG++;
    snprintf(LOGS + n, sizeof LOGS - n, "%s\n", msg);
}
static void logs_clear(void) {
    LOGS[0] = 0;
    NLOG = 0;
}

static const char *fix(void) {
    const char *f = getenv("CG_FIX");
    return f ? f : "";
}

/* One sample with the cgroup read from fixture NAME (fresh: found again). */
static void sample_of(const char *name, memobs_sample_t *s) {
    char root[512];
    snprintf(root, sizeof root, "%s/%s", fix(), name);
    memobs__cg_set_root(root);
    memset(s, 0, sizeof *s);
    memobs__cg_read(s);
}

static void fixtures_present(void) {
    char p[600];
    snprintf(p, sizeof p, "%s/v2/proc/self/cgroup", fix());
    CHECK(fix()[0] != 0);
    CHECK(access(p, R_OK) == 0);
}

static void v2_limited(void) {
    memobs_sample_t s;
    char want[600];
    sample_of("v2", &s);
    CHECK_U64(2, s.cgroup_version);
    snprintf(want, sizeof want, "%s/v2/sys/fs/cgroup/kubepods/pod1/ctr", fix());
    CHECK_STR(want, memobs__cg.dir);
    CHECK_U64(1000000000u, s.cgroup_usage_bytes);
    CHECK_U64(2147483648u, s.cgroup_limit_bytes);
    CHECK_U64(0, s.cgroup_unlimited);
    CHECK_U64(900000000u, s.cgroup_working_set_bytes); /* usage - inactive_file */
    CHECK_U64(5000000u, s.cgroup_shmem_bytes);
    CHECK_U64(600000000u, s.cgroup_anon_bytes);
    CHECK_U64(390000000u, s.cgroup_file_bytes);
    CHECK_U64(100000000u, s.cgroup_inactive_file_bytes);
}

static void v2_unlimited(void) {
    memobs_sample_t s;
    sample_of("v2_max", &s);
    CHECK_U64(2, s.cgroup_version);
    CHECK_U64(MEMOBS_UNKNOWN, s.cgroup_limit_bytes);
    CHECK_U64(1, s.cgroup_unlimited);
    CHECK_U64(300000000u, s.cgroup_usage_bytes);
    /* inactive file above usage (the kernel's figures are read apart): 0, as the kubelet does */
    CHECK_U64(0, s.cgroup_working_set_bytes);
    /* the parents' memory.max binds, the lowest of them, up to the mount
       point (here a cgroup namespace's root, with one lower still) */
    sample_of("v2_parent", &s);
    CHECK_U64(2, s.cgroup_version);
    CHECK_U64(1073741824u, s.cgroup_limit_bytes);
    CHECK_U64(0, s.cgroup_unlimited);
}

static void v2_namespace(void) {
    memobs_sample_t s;
    char want[600];
    /* "0::/" with the mount's root "/": the mount point is the container's cgroup */
    sample_of("v2_ns", &s);
    CHECK_U64(2, s.cgroup_version);
    snprintf(want, sizeof want, "%s/v2_ns/sys/fs/cgroup", fix());
    CHECK_STR(want, memobs__cg.dir);
    CHECK_U64(4096, s.cgroup_usage_bytes);
    /* the mount shows an outer root the path is not below: the mount point */
    sample_of("v2_outer", &s);
    CHECK_U64(2, s.cgroup_version);
    snprintf(want, sizeof want, "%s/v2_outer/sys/fs/cgroup", fix());
    CHECK_STR(want, memobs__cg.dir);
    CHECK_U64(8192, s.cgroup_usage_bytes);
    CHECK_U64(1073741824u, s.cgroup_limit_bytes);
    /* a mount point with a space (\040 in mountinfo) */
    sample_of("v2_space", &s);
    CHECK_U64(2, s.cgroup_version);
    snprintf(want, sizeof want, "%s/v2_space/sys/fs/cgroup space/a", fix());
    CHECK_STR(want, memobs__cg.dir);
    CHECK_U64(12288, s.cgroup_usage_bytes);
}

static void v1_limited(void) {
    memobs_sample_t s;
    char want[600];
    sample_of("v1", &s);
    CHECK_U64(1, s.cgroup_version);
    snprintf(want, sizeof want, "%s/v1/sys/fs/cgroup/memory/docker/abc", fix());
    CHECK_STR(want, memobs__cg.dir);
    CHECK_U64(500000000u, s.cgroup_usage_bytes);
    CHECK_U64(1073741824u, s.cgroup_limit_bytes);
    CHECK_U64(0, s.cgroup_unlimited);
    CHECK_U64(300000000u, s.cgroup_working_set_bytes); /* usage - total_inactive_file */
    CHECK_U64(1000, s.cgroup_shmem_bytes);
    CHECK_U64(250000000u, s.cgroup_anon_bytes);
    CHECK_U64(240000000u, s.cgroup_file_bytes);
    CHECK_U64(200000000u, s.cgroup_inactive_file_bytes);
    /* the mount's root is the cgroup (no cgroup namespace, docker's): the mount point */
    sample_of("v1_root", &s);
    CHECK_U64(1, s.cgroup_version);
    snprintf(want, sizeof want, "%s/v1_root/sys/fs/cgroup/memory", fix());
    CHECK_STR(want, memobs__cg.dir);
    CHECK_U64(700000000u, s.cgroup_usage_bytes);
}

static void v1_unlimited_and_parent(void) {
    memobs_sample_t s;
    char want[600];
    /* hybrid, like a machine with both: the "0::" line and cgroup2 mounted,
       the memory controller on v1; v1's "no limit" is 2^63 page-rounded */
    sample_of("hybrid", &s);
    CHECK_U64(1, s.cgroup_version);
    snprintf(want, sizeof want, "%s/hybrid/sys/fs/cgroup/memory/process_api/x1", fix());
    CHECK_STR(want, memobs__cg.dir);
    CHECK_U64(7876608u, s.cgroup_usage_bytes); /* not the unified mount's memory.current (1) */
    CHECK_U64(MEMOBS_UNKNOWN, s.cgroup_limit_bytes);
    CHECK_U64(1, s.cgroup_unlimited);
    CHECK_U64(7876608u - 659456u, s.cgroup_working_set_bytes);
    /* a parent's limit binds: hierarchical_memory_limit, lower than the cgroup's none */
    sample_of("v1_parent", &s);
    CHECK_U64(1, s.cgroup_version);
    CHECK_U64(3000000000u, s.cgroup_limit_bytes);
    CHECK_U64(0, s.cgroup_unlimited);
}

static void missing_and_malformed(void) {
    memobs_sample_t s;
    uint64_t bad0 = MEMOBS__LOAD(&memobs__cg.bad.v);
    logs_clear();
    /* no /proc/self/cgroup: none found, every figure unknown */
    sample_of("none", &s);
    CHECK_U64(0, s.cgroup_version);
    CHECK_U64(MEMOBS_UNKNOWN, s.cgroup_usage_bytes);
    CHECK_U64(MEMOBS_UNKNOWN, s.cgroup_working_set_bytes);
    CHECK_U64(MEMOBS_UNKNOWN, s.cgroup_limit_bytes);
    CHECK_U64(0, s.cgroup_unlimited);
    /* a cgroup line and no cgroup mount: none */
    sample_of("nomount", &s);
    CHECK_U64(0, s.cgroup_version);
    /* memory.current only: no limit file, no memory.stat */
    sample_of("missing", &s);
    CHECK_U64(2, s.cgroup_version);
    CHECK_U64(123456, s.cgroup_usage_bytes);
    CHECK_U64(MEMOBS_UNKNOWN, s.cgroup_limit_bytes);
    CHECK_U64(0, s.cgroup_unlimited); /* unread, not unlimited */
    CHECK_U64(MEMOBS_UNKNOWN, s.cgroup_working_set_bytes);
    CHECK_U64(MEMOBS_UNKNOWN, s.cgroup_shmem_bytes);
    CHECK_U64(bad0, MEMOBS__LOAD(&memobs__cg.bad.v)); /* missing is not malformed */
    CHECK_U64(0, NLOG);
    /* not numbers: unknown, counted, one warning for all */
    sample_of("malformed", &s);
    CHECK_U64(2, s.cgroup_version);
    CHECK_U64(MEMOBS_UNKNOWN, s.cgroup_usage_bytes);     /* "12a" */
    CHECK_U64(MEMOBS_UNKNOWN, s.cgroup_limit_bytes);     /* "-5" */
    CHECK_U64(MEMOBS_UNKNOWN, s.cgroup_inactive_file_bytes); /* "inactive_file x" */
    CHECK_U64(MEMOBS_UNKNOWN, s.cgroup_shmem_bytes);     /* "shmem 99999999999999999999999" */
    CHECK_U64(77, s.cgroup_anon_bytes);                  /* its neighbours still read */
    CHECK_U64(MEMOBS_UNKNOWN, s.cgroup_working_set_bytes);
    CHECK_U64(bad0 + 4, MEMOBS__LOAD(&memobs__cg.bad.v));
    memobs__cg_read(&s); /* again: counted again, no second warning */
    CHECK_U64(bad0 + 8, MEMOBS__LOAD(&memobs__cg.bad.v));
    CHECK_U64(1, NLOG);
    CHECK_HAS(LOGS, "a figure that is not a number");
    /* an empty file: unknown, not counted */
    sample_of("empty", &s);
    CHECK_U64(2, s.cgroup_version);
    CHECK_U64(MEMOBS_UNKNOWN, s.cgroup_usage_bytes);
    CHECK_U64(bad0 + 8, MEMOBS__LOAD(&memobs__cg.bad.v));
}

static void rss_shmem(void) {
    /* a shared mapping touched: RssShmem grows by it (in kB pages) */
    size_t len = 8u << 20, i;
    uint64_t before = memobs__proc_status_bytes("RssShmem"), after;
    char *m = (char *)mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(before != MEMOBS_UNKNOWN);
    CHECK(m != (char *)MAP_FAILED);
    if (m == (char *)MAP_FAILED) return;
    for (i = 0; i < len; i += 4096) m[i] = 1;
    after = memobs__proc_status_bytes("RssShmem:");
    CHECK(after != MEMOBS_UNKNOWN && after >= before + len);
    munmap(m, len);
    CHECK_U64(MEMOBS_UNKNOWN, memobs__proc_status_bytes("NoSuchField"));
    CHECK_U64(MEMOBS_UNKNOWN, memobs__proc_status_bytes("Name")); /* not "N kB" */
    CHECK(memobs__proc_status_bytes("VmRSS") > 0);
}

static uint64_t file_u64(const char *dir, const char *name) {
    char p[1200], b[64];
    FILE *f;
    unsigned long long v = 0;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (!(f = fopen(p, "r"))) return MEMOBS_UNKNOWN;
    if (!fgets(b, sizeof b, f) || sscanf(b, "%llu", &v) != 1) v = (unsigned long long)MEMOBS_UNKNOWN;
    fclose(f);
    return (uint64_t)v;
}

/* This machine's cgroup: the directory the script found, the limit it
   read; usage against the file read before and after the sample (other
   processes of the cgroup move it: it must lie within them, give or take
   64 MB, or equal a read made when the two agreed). */
static void real_cgroup(void) {
    const char *dir = getenv("CG_REAL_DIR"), *lim = getenv("CG_REAL_LIMIT");
    memobs_sample_t s;
    int tries, exact = 0;
    memobs__cg_set_root(NULL);
    memset(&s, 0, sizeof s);
    memobs__cg_read(&s);
    if (!dir || !dir[0]) { /* the script found none: memobs neither */
        CHECK_U64(0, s.cgroup_version);
        return;
    }
    CHECK(s.cgroup_version == 1 || s.cgroup_version == 2);
    CHECK_STR(dir, memobs__cg.dir);
    if (lim && strcmp(lim, "none") == 0) {
        CHECK_U64(1, s.cgroup_unlimited);
        CHECK_U64(MEMOBS_UNKNOWN, s.cgroup_limit_bytes);
    } else if (lim) {
        CHECK_U64(strtoull(lim, NULL, 10), s.cgroup_limit_bytes);
    }
    for (tries = 0; tries < 50 && !exact; tries++) {
        const char *f = s.cgroup_version == 2 ? "memory.current" : "memory.usage_in_bytes";
        uint64_t a = file_u64(dir, f), b, lo, hi;
        memobs__cg_read(&s);
        b = file_u64(dir, f);
        CHECK(a != MEMOBS_UNKNOWN && b != MEMOBS_UNKNOWN && s.cgroup_usage_bytes != MEMOBS_UNKNOWN);
        lo = a < b ? a : b;
        hi = a < b ? b : a;
        CHECK(s.cgroup_usage_bytes + (64u << 20) >= lo && s.cgroup_usage_bytes <= hi + (64u << 20));
        exact = a == b && s.cgroup_usage_bytes == a;
    }
    if (!exact) printf("    # note: the cgroup's usage moved on every one of 50 reads (a busy machine)\n");
    CHECK(s.cgroup_working_set_bytes != MEMOBS_UNKNOWN && s.cgroup_working_set_bytes <= s.cgroup_usage_bytes);
    CHECK(s.cgroup_inactive_file_bytes != MEMOBS_UNKNOWN);
    CHECK(s.rss_shmem_bytes != MEMOBS_UNKNOWN);
}

/* Threads taking their first samples together: one stores the directory,
   every sample has the figures. */
static volatile int GO;
static memobs_sample_t TS[4];
static void *first_sample(void *arg) {
    memobs_sample_t *s = (memobs_sample_t *)arg;
    while (!__atomic_load_n(&GO, __ATOMIC_ACQUIRE)) {
    }
    memobs__cg_read(s);
    return NULL;
}
static void threads_first(void) {
    pthread_t t[4];
    unsigned i;
    char root[512];
    snprintf(root, sizeof root, "%s/v1", fix());
    memobs__cg_set_root(root);
    __atomic_store_n(&GO, 0, __ATOMIC_RELEASE);
    for (i = 0; i < 4; i++) CHECK(pthread_create(&t[i], NULL, first_sample, &TS[i]) == 0);
    __atomic_store_n(&GO, 1, __ATOMIC_RELEASE);
    for (i = 0; i < 4; i++) pthread_join(t[i], NULL);
    for (i = 0; i < 4; i++) {
        CHECK_U64(1, TS[i].cgroup_version);
        CHECK_U64(500000000u, TS[i].cgroup_usage_bytes);
    }
    CHECK_U64(2, memobs__cg.state.v);
}

/* After fork() the child finds its cgroup again (here: another root). */
static void fork_again(void) {
    char root[512];
    pid_t pid;
    int st = 0;
    memobs_sample_t s;
    sample_of("v1", &s);
    CHECK_U64(2, memobs__cg.state.v);
    pid = fork();
    if (pid == 0) {
        int ok = memobs__cg.state.v == 0; /* forgotten */
        snprintf(root, sizeof root, "%s/v2", fix());
        size_t k = strlen(root);
        if (k < sizeof memobs__cg.root) memcpy(memobs__cg.root, root, k + 1); /* not set_root: the state stays */
        memobs__cg_read(&s);
        ok &= s.cgroup_version == 2 && s.cgroup_usage_bytes == 1000000000u;
        _exit(ok ? 0 : 3);
    }
    CHECK(pid > 0);
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_U64(2, memobs__cg.state.v); /* the parent's stays */
}

/* The sampler off: samples without the reads. */
static void switched_off(void) {
    memobs_sample_t s;
    char root[512];
    snprintf(root, sizeof root, "%s/v2", fix());
    memobs__cg_set_root(root);
    memobs__cg_set_enabled(0);
    memobs__cg_read(&s);
    CHECK_U64(0, s.cgroup_version);
    CHECK_U64(MEMOBS_UNKNOWN, s.cgroup_usage_bytes);
    CHECK_U64(MEMOBS_UNKNOWN, s.rss_shmem_bytes);
    memobs__cg_set_enabled(1);
    memobs__cg_read(&s);
    CHECK_U64(2, s.cgroup_version);
}

/* ---- the leak detector: samples put in the ring ---- */
static void ring_clear(void) {
    pthread_once(&memobs__bg_once, memobs__bg_init);
    pthread_mutex_lock(&memobs__smp.lock);
    memobs__smp.head = memobs__smp.n = 0;
    pthread_mutex_unlock(&memobs__smp.lock);
}
/* n samples 1 s apart: the working set from ws0, growing mb_min MB/min;
   limit (MEMOBS_UNKNOWN: unlimited) */
static void ring_fill(size_t n, uint64_t ws0, double mb_min, uint64_t limit) {
    size_t i;
    ring_clear();
    for (i = 0; i < n; i++) {
        memobs_sample_t s;
        memset(&s, 0, sizeof s);
        s.time_ns = (uint64_t)1000000000u * (i + 10);
        s.rss_bytes = s.anon_bytes = 100000000u;
        s.heap_bytes = s.heap_reserved_bytes = 50000000u;
        s.cgroup_version = 2;
        s.cgroup_working_set_bytes = ws0 + (uint64_t)(mb_min * 1e6 * (double)i / 60.0);
        s.cgroup_usage_bytes = s.cgroup_working_set_bytes + 1000000u;
        s.cgroup_limit_bytes = limit;
        s.cgroup_unlimited = limit == MEMOBS_UNKNOWN;
        s.cgroup_shmem_bytes = 4096;
        s.cgroup_anon_bytes = s.cgroup_file_bytes = s.cgroup_inactive_file_bytes = 1000000u;
        s.rss_shmem_bytes = 8192;
        CHECK(memobs__sample_push(&s) == MEMOBS_OK);
    }
}

/* The summary in fmt into buf: its length (0 on failure). */
static size_t summary_of(memobs_format_t fmt, char *buf, size_t len) {
    FILE *f = tmpfile();
    size_t n = 0;
    buf[0] = 0;
    if (!f) return 0;
    if (memobs_write_summary(f, fmt) == MEMOBS_OK) {
        rewind(f);
        n = fread(buf, 1, len - 1, f);
        buf[n] = 0;
    }
    fclose(f);
    return n;
}

static void leak_horizon(void) {
    memobs_leak_t l;
    char buf[1 << 16];
    size_t len;
    logs_clear();
    memobs__cg.horizon_s = 3600;
    /* 900 MB growing 10 MB/min to 1 GB: 100 MB headroom, 600 s - 59 s of growth */
    ring_fill(60, 900000000u, 10.0, 1000000000u);
    CHECK(memobs_leak_check(&l) == MEMOBS_OK);
    CHECK(l.ws_known);
    CHECK(l.ws_mb_min > 9.99 && l.ws_mb_min < 10.01);
    CHECK(l.ws_r2 > 0.999);
    CHECK_U64(1000000000u, l.limit_bytes);
    CHECK_U64(l.limit_bytes - l.ws_bytes, l.headroom_bytes);
    CHECK(l.ws_bytes > 909000000u && l.ws_bytes < 910000000u);
    /* headroom / slope, in seconds: (1e9 - ws) / 10e6 * 60 */
    CHECK(l.limit_eta_s > (double)l.headroom_bytes / 10e6 * 60 - 1 &&
          l.limit_eta_s < (double)l.headroom_bytes / 10e6 * 60 + 1);
    CHECK(l.limit_eta_s > 540 && l.limit_eta_s < 550);
    CHECK(l.limit_warn);
    CHECK_U64(3600, l.limit_horizon_s);
    CHECK_U64(1, NLOG);
    CHECK_HAS(LOGS, "reaches its memory limit");
    CHECK(memobs_leak_check(&l) == MEMOBS_OK && l.limit_warn);
    CHECK_U64(1, NLOG); /* once */
    /* the outputs say it */
    len = summary_of(MEMOBS_FORMAT_TEXT, buf, sizeof buf);
    CHECK(len > 0 && len < sizeof buf);
    CHECK_HAS(buf, "container memory: cgroup v2, usage 910.");
    CHECK_HAS(buf, "limit 1.00 GB (headroom 9");
    CHECK_HAS(buf, "process RssShmem 8.19 KB");
    CHECK_HAS(buf, "warning: the container's working set grows at 10.0 MB/min");
    len = summary_of(MEMOBS_FORMAT_JSON, buf, sizeof buf);
    CHECK(len > 0 && len < sizeof buf);
    CHECK_HAS(buf, "\"cgroup\":{\"version\":2,\"usage_bytes\":");
    CHECK_HAS(buf, "\"limit_bytes\":1000000000,\"unlimited\":false,\"headroom_bytes\":");
    CHECK_HAS(buf, "\"rss_shmem_bytes\":8192");
    CHECK_HAS(buf, "\"limit_horizon_s\":3600,\"limit_warning\":true");
    /* a horizon shorter than the time left: no warning */
    memobs__cg.horizon_s = 60;
    CHECK(memobs_leak_check(&l) == MEMOBS_OK);
    CHECK(!l.limit_warn && l.limit_eta_s > 540);
    memobs__cg.horizon_s = 3600;
    /* unlimited: no limit, no headroom, no time */
    ring_fill(60, 900000000u, 10.0, MEMOBS_UNKNOWN);
    CHECK(memobs_leak_check(&l) == MEMOBS_OK);
    CHECK(l.ws_known && !l.limit_warn);
    CHECK_U64(MEMOBS_UNKNOWN, l.limit_bytes);
    CHECK_U64(MEMOBS_UNKNOWN, l.headroom_bytes);
    CHECK(l.limit_eta_s < 0);
    len = summary_of(MEMOBS_FORMAT_TEXT, buf, sizeof buf);
    CHECK_HAS(buf, "limit none, shmem 4.10 KB");
    /* flat: no time to the limit */
    ring_fill(60, 900000000u, 0.0, 1000000000u);
    CHECK(memobs_leak_check(&l) == MEMOBS_OK);
    CHECK(l.limit_eta_s < 0 && !l.limit_warn);
    CHECK_U64(100000000u, l.headroom_bytes);
    /* over the limit already (the kernel reclaims; usage may pass it by a little): headroom 0 */
    ring_fill(60, 1100000000u, 10.0, 1000000000u);
    CHECK(memobs_leak_check(&l) == MEMOBS_OK);
    CHECK_U64(0, l.headroom_bytes);
    CHECK(l.limit_warn && l.limit_eta_s == 0);
    /* too few samples: a fit, no verdict */
    ring_fill(9, 900000000u, 10.0, 1000000000u);
    CHECK(memobs_leak_check(&l) == MEMOBS_OK);
    CHECK(l.ws_known && l.limit_eta_s < 0 && !l.limit_warn);
    /* a sample without a cgroup in the window: the slope unknown */
    ring_fill(30, 900000000u, 10.0, 1000000000u);
    {
        memobs_sample_t s;
        memset(&s, 0, sizeof s);
        s.time_ns = 100000000000u;
        s.cgroup_working_set_bytes = MEMOBS_UNKNOWN;
        CHECK(memobs__sample_push(&s) == MEMOBS_OK);
    }
    CHECK(memobs_leak_check(&l) == MEMOBS_OK);
    CHECK(!l.ws_known && l.limit_eta_s < 0);
    CHECK_U64(MEMOBS_UNKNOWN, l.ws_bytes);
    ring_clear();
}

/* Prometheus: the gauges, from the figures read at the write (the sampler
   off); the limit absent when there is none; at a crash none. */
static void prometheus(void) {
    static char buf[1 << 18];
    char root[512];
    size_t n;
    ring_clear();
    snprintf(root, sizeof root, "%s/v2", fix());
    memobs__cg_set_root(root);
    /* the gauges are the newest sample's, as the host memory's: none before one */
    n = memobs_format_prometheus(buf, sizeof buf);
    CHECK(n > 0 && n < sizeof buf);
    CHECK(strstr(buf, "memobs_cgroup_memory") == NULL && strstr(buf, "memobs_process_rss_shmem_bytes") == NULL);
    CHECK(memobs_sample_now() == MEMOBS_OK);
    n = memobs_format_prometheus(buf, sizeof buf);
    CHECK(n > 0 && n < sizeof buf);
    CHECK_HAS(buf, "# TYPE memobs_cgroup_memory_usage_bytes gauge\n");
    CHECK_HAS(buf, "# HELP memobs_cgroup_memory_working_set_bytes ");
    CHECK_HAS(buf, "memobs_cgroup_memory_usage_bytes{");
    CHECK_HAS(buf, "} 1000000000\n");
    CHECK_HAS(buf, "} 900000000\n");
    CHECK_HAS(buf, "} 2147483648\n");
    CHECK_HAS(buf, "# TYPE memobs_cgroup_memory_shmem_bytes gauge\n");
    CHECK_HAS(buf, "} 5000000\n");
    CHECK_HAS(buf, "# TYPE memobs_process_rss_shmem_bytes gauge\nmemobs_process_rss_shmem_bytes{");
    snprintf(root, sizeof root, "%s/v2_max", fix());
    memobs__cg_set_root(root);
    CHECK(memobs_sample_now() == MEMOBS_OK);
    n = memobs_format_prometheus(buf, sizeof buf);
    CHECK(n > 0 && n < sizeof buf);
    CHECK(strstr(buf, "memobs_cgroup_memory_limit_bytes") == NULL); /* no family without a sample */
    CHECK_HAS(buf, "# TYPE memobs_cgroup_memory_shmem_bytes gauge\n");
    snprintf(root, sizeof root, "%s/none", fix());
    memobs__cg_set_root(root);
    CHECK(memobs_sample_now() == MEMOBS_OK);
    n = memobs_format_prometheus(buf, sizeof buf);
    CHECK(strstr(buf, "memobs_cgroup_memory") == NULL);
    CHECK_HAS(buf, "memobs_process_rss_shmem_bytes{");
    /* the reads off: no container family */
    memobs__cg_set_enabled(0);
    CHECK(memobs_sample_now() == MEMOBS_OK);
    n = memobs_format_prometheus(buf, sizeof buf);
    CHECK(n > 0 && strstr(buf, "memobs_process_rss_shmem_bytes") == NULL);
    memobs__cg_set_enabled(1);
}

/* Stormlog: a sample's metadata carries the cgroup_* keys; HTML: the
   container table and the warning. */
static void stormlog_and_html(void) {
    char path[] = "/tmp/memobs_cg_XXXXXX";
    int fd = mkstemp(path);
    FILE *f;
    static char buf[1 << 20];
    size_t n;
    CHECK(fd >= 0);
    if (fd < 0) return;
    close(fd);
    ring_fill(60, 900000000u, 10.0, 1000000000u);
    f = fopen(path, "w+");
    CHECK(f != NULL);
    if (!f) return;
#ifndef MEMOBS_NO_STORMLOG
    CHECK(memobs_write_stormlog(f) == MEMOBS_OK);
    rewind(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    CHECK_HAS(buf, "\"cgroup_version\":2,\"cgroup_usage_bytes\":901000000,\"cgroup_working_set_bytes\":900000000,"
                   "\"cgroup_limit_bytes\":1000000000,\"cgroup_shmem_bytes\":4096,\"rss_shmem_bytes\":8192");
#endif
    fclose(f);
    f = fopen(path, "w+");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(memobs_write_html(f) == MEMOBS_OK);
    rewind(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    unlink(path);
    CHECK_HAS(buf, "<h3>Container memory</h3>");
    CHECK_HAS(buf, "data-cgroup=\"limit_bytes\" data-v=\"1000000000\"");
    CHECK_HAS(buf, "data-cgroup=\"limit_eta_s\"");
    CHECK_HAS(buf, "data-warn=\"1\"");
    ring_clear();
}

int main(void) {
    check__suite = TEST_SUITE;
    memobs_set_log(log_hook, NULL);
    RUN(fixtures_present);
    RUN(v2_limited);
    RUN(v2_unlimited);
    RUN(v2_namespace);
    RUN(v1_limited);
    RUN(v1_unlimited_and_parent);
    RUN(missing_and_malformed);
    RUN(rss_shmem);
    RUN(real_cgroup);
    RUN(threads_first);
    RUN(fork_again);
    RUN(switched_off);
    RUN(leak_horizon);
    RUN(prometheus);
    RUN(stormlog_and_html);
    memobs__cg_set_root(NULL);
    return CHECK_DONE();
}
