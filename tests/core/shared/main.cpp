// An executable (C++) that records through macros while the implementation
// lives in a shared library it links, from several threads.
#include "memobs.h"
#include <thread>
#include <vector>

extern "C" void lib_record(uint64_t bytes);

int main() {
    std::vector<std::thread> t;
    for (int k = 0; k < 4; k++)
        t.emplace_back([] {
            for (int i = 0; i < 100000; i++) {
                MEMOBS_RECORD_H2D(3, 1);  // inline, in the executable
                lib_record(2);            // inside the .so
            }
        });
    for (auto &th : t) th.join();
    memobs_summary_t s;
    memobs_get_summary(&s);
    bool ok = s.prefill.h2d.bytes == 1200000 && s.decode.h2d.bytes == 800000 && s.total.h2d.count == 800000;
    if (!ok)
        printf("    # prefill %llu (want 1200000), decode %llu (want 800000), ops %llu (want 800000)\n",
               (unsigned long long)s.prefill.h2d.bytes, (unsigned long long)s.decode.h2d.bytes,
               (unsigned long long)s.total.h2d.count);
    return ok ? 0 : 1;
}
