/* dlopen() of a .so built with MEMOBS_TLS_INITIAL_EXEC: the Python
   extension case, which needs the loader's spare static TLS. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

int main(int argc, char **argv) {
    void *h;
    void (*rec)(uint64_t);
    uint64_t (*total)(void);
    int i;
    if (argc < 2) return 2;
    h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("    # dlopen: %s\n", dlerror());
        return 1;
    }
    *(void **)&rec = dlsym(h, "lib_record");
    *(void **)&total = dlsym(h, "lib_total_h2d");
    if (!rec || !total) return printf("    # dlsym failed\n"), 1;
    for (i = 0; i < 1000; i++) rec(7);
    if (total() != 7000) return printf("    # total %llu, want 7000\n", (unsigned long long)total()), 1;
    return 0;
}
