/* dlopen() of modules that carry the implementation: one built with
   MEMOBS_TLS_INITIAL_EXEC (the Python extension case, which needs the
   loader's spare static TLS), or two built with MEMOBS_HIDDEN loaded with
   RTLD_GLOBAL, which must each keep a private instance. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    void (*rec)(uint64_t);
    uint64_t (*total)(void);
} lib_t;

static int load(const char *path, int mode, lib_t *l) {
    void *h = dlopen(path, RTLD_NOW | mode);
    if (!h) return printf("    # dlopen: %s\n", dlerror()), 0;
    *(void **)&l->rec = dlsym(h, "lib_record");
    *(void **)&l->total = dlsym(h, "lib_total_h2d");
    if (!l->rec || !l->total) return printf("    # dlsym failed in %s\n", path), 0;
    return 1;
}

int main(int argc, char **argv) {
    lib_t a, b;
    int i, mode = argc > 2 ? RTLD_GLOBAL : RTLD_LOCAL;
    if (argc < 2 || !load(argv[1], mode, &a)) return 1;
    if (argc > 2 && !load(argv[2], mode, &b)) return 1;
    for (i = 0; i < 1000; i++) a.rec(7);
    if (argc > 2)
        for (i = 0; i < 10; i++) b.rec(7);
    if (a.total() != 7000) return printf("    # first module total %llu, want 7000\n", (unsigned long long)a.total()), 1;
    if (argc > 2 && b.total() != 70)
        return printf("    # second module total %llu, want 70\n", (unsigned long long)b.total()), 1;
    return 0;
}
