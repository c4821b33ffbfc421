/* The implementation, plus a check of what the use_* builds recorded. */
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

void use_c(unsigned long long id);
void use_cxx(unsigned long long id);
#ifdef WITH_CUDA
void use_cu(unsigned long long id);
#endif

int main(void) {
    memobs_summary_t s;
    unsigned long long n = 2;
    int bad = 0;
    use_c(1);
    use_cxx(2);
#ifdef WITH_CUDA
    use_cu(3);
    n = 3;
#endif
    memobs_get_summary(&s);
#define EXPECT(want, got) \
    if ((unsigned long long)(want) != (unsigned long long)(got)) bad = 1, printf("    # %s: expected %llu, got %llu\n", #got, (unsigned long long)(want), (unsigned long long)(got))
    EXPECT(1000 * n, s.prefill.h2d.bytes);
    EXPECT(205 * n, s.decode.d2h.bytes);
    EXPECT(30 * n, s.prefill.d2d.bytes);
    EXPECT(4 * n, s.decode.h2d.bytes);
    EXPECT(6 * n, s.decode.d2d.bytes);
    EXPECT(7 * n, s.unphased.d2d.bytes);
    EXPECT(1004 * n, s.total.h2d.bytes);
    EXPECT(7 * n, s.total.h2d.count + s.total.d2h.count + s.total.d2d.count);
    EXPECT(1, s.ncounters);
    EXPECT(n, s.counters[0].value);
    EXPECT(2 * n, s.ttft.count); /* global clock + per request */
    EXPECT(n, s.e2e.count);
    EXPECT(n, s.requests_completed);
    EXPECT(3000 * n, s.mem[MEMOBS_MEM_DEVICE].current_bytes);
    EXPECT(5 * n, s.mem[MEMOBS_MEM_HOST].allocs + s.mem[MEMOBS_MEM_DEVICE].allocs + s.mem[MEMOBS_MEM_PINNED].allocs +
                      s.mem[MEMOBS_MEM_MANAGED].allocs);
    EXPECT(4 * n, s.mem[MEMOBS_MEM_HOST].frees + s.mem[MEMOBS_MEM_PINNED].frees + s.mem[MEMOBS_MEM_MANAGED].frees);
    EXPECT(0, s.mem[MEMOBS_MEM_PINNED].current_bytes + s.mem[MEMOBS_MEM_HOST].current_bytes);
    EXPECT(0, s.track.frees_unknown + s.track.allocs_duplicate);
    {
        memobs_region_stats_t r[8];
        size_t k, nr = memobs_get_regions(r, 8);
        unsigned long long ends = 0, marks = 0, scoped = 0;
        for (k = 0; k < nr && k < 8; k++) {
            if (!strcmp(r[k].name, "compile_region")) ends = r[k].count;
            if (!strcmp(r[k].name, "compile_mark")) marks = r[k].marks;
            if (!strcmp(r[k].name, "compile_scoped")) scoped = r[k].count;
        }
        EXPECT(n, ends);
        EXPECT(n, marks);
        EXPECT(2 * (n - 1), scoped); /* the C++ and CUDA builds */
        EXPECT(0, memobs_region_depth());
        EXPECT(0, s.region_unmatched_ends);
    }
    return bad;
}
