/* tests/nccl/real_nccl.c - the real libnccl.so.2 with the profiler plugin,
   run by tests/nccl/test_real_nccl.sh (no GPU needed).

   real_nccl init
       dlopen($NCCL_LIB, default "libnccl.so.2"), then ncclGetVersion,
       ncclGetUniqueId and ncclCommInitRank(nranks 1, rank 0): one line per
       call with its return code and NCCL's error text, and whether a
       libnccl-profiler-memobs.so is mapped in the process afterwards (NCCL
       opens its profiler plugin inside ncclCommInitRank, after the device
       set-up). Exits 0 when every call ran, whatever NCCL returned.
   real_nccl loader VALUE
       what NCCL 2.26+ does with NCCL_PROFILER_PLUGIN=VALUE (its
       src/plugin/plugin_open.cc): dlopen(VALUE, RTLD_NOW | RTLD_LOCAL), and
       when VALUE is neither a path nor a "lib*.so" name,
       dlopen("libnccl-profiler-VALUE.so"); then, as 2.28.9's
       src/plugin/profiler.cc, dlsym of ncclProfiler_v5, v4, v3, v2, v1 (the
       first found is used; 2.29+ try ncclProfiler_v6 first). Prints each
       step and the chosen struct's name and function pointers; exits 1
       when NCCL would not load a profiler.

   The NCCL functions are declared from nccl.h (the CUDA toolkit's) and
   looked up with dlsym: the test never links libnccl. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The head every ncclProfiler_vN_t shares: a name, then init,
   startEvent, stopEvent, recordEventState, finalize (init's arguments
   differ by version; only the addresses are looked at here). */
typedef struct {
    const char *name;
    void *fn[5];
} profiler_head_t;

static int mapped_cb(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    if (info->dlpi_name && strstr(info->dlpi_name, "libnccl-profiler-memobs")) {
        snprintf((char *)data, 512, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

/* The path of a libnccl-profiler-memobs.so mapped in this process, or "". */
static const char *plugin_mapped(void) {
    static char path[512];
    path[0] = 0;
    dl_iterate_phdr(mapped_cb, path);
    return path;
}

static void *nccl_sym(void *lib, const char *name) {
    void *f = dlsym(lib, name);
    if (!f) {
        printf("error: %s not found in libnccl: %s\n", name, dlerror());
        exit(2);
    }
    return f;
}

static int run_init(void) {
    const char *path = getenv("NCCL_LIB");
    if (!path || !*path)
        path = "libnccl.so.2";
    void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        printf("error: dlopen(%s): %s\n", path, dlerror());
        return 2;
    }
    struct link_map *lm = NULL;
    if (dlinfo(lib, RTLD_DI_LINKMAP, &lm) == 0 && lm)
        printf("libnccl: %s\n", lm->l_name);

    ncclResult_t (*get_version)(int *) = (ncclResult_t(*)(int *))nccl_sym(lib, "ncclGetVersion");
    ncclResult_t (*get_unique_id)(ncclUniqueId *) = (ncclResult_t(*)(ncclUniqueId *))nccl_sym(lib, "ncclGetUniqueId");
    ncclResult_t (*comm_init_rank)(ncclComm_t *, int, ncclUniqueId, int) =
        (ncclResult_t(*)(ncclComm_t *, int, ncclUniqueId, int))nccl_sym(lib, "ncclCommInitRank");
    ncclResult_t (*comm_destroy)(ncclComm_t) = (ncclResult_t(*)(ncclComm_t))nccl_sym(lib, "ncclCommDestroy");
    const char *(*error_string)(ncclResult_t) = (const char *(*)(ncclResult_t))nccl_sym(lib, "ncclGetErrorString");
    const char *(*last_error)(ncclComm_t) = (const char *(*)(ncclComm_t))nccl_sym(lib, "ncclGetLastError");

    int version = 0;
    ncclResult_t r = get_version(&version);
    printf("get_version: %d %d\n", (int)r, version);
    printf("plugin_after_version: %s\n", *plugin_mapped() ? "mapped" : "not mapped");

    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    r = get_unique_id(&id);
    printf("get_unique_id: %d %s\n", (int)r, error_string(r));

    ncclComm_t comm = NULL;
    r = comm_init_rank(&comm, 1, id, 0);
    printf("comm_init_rank: %d %s\n", (int)r, error_string(r));
    printf("last_error: %s\n", last_error(NULL));
    const char *mapped = plugin_mapped();
    printf("plugin_after_init: %s%s\n", *mapped ? "mapped " : "not mapped", mapped);
    if (r == ncclSuccess && comm) {
        r = comm_destroy(comm);
        printf("comm_destroy: %d %s\n", (int)r, error_string(r));
    }
    return 0;
}

static int run_loader(const char *value) {
    char name[256];
    void *h = dlopen(value, RTLD_NOW | RTLD_LOCAL);
    printf("open %s: %s\n", value, h ? "loaded" : dlerror());
    size_t n = strlen(value);
    if (!h && !strchr(value, '/') && (strncmp(value, "lib", 3) != 0 || n < 3 || strcmp(value + n - 3, ".so") != 0)) {
        snprintf(name, sizeof name, "libnccl-profiler-%s.so", value);
        h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        printf("open %s: %s\n", name, h ? "loaded" : dlerror());
    }
    if (!h) {
        printf("result: no profiler library\n");
        return 1;
    }
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm)
        printf("path: %s\n", lm->l_name);
    for (int v = 6; v >= 1; v--) {
        snprintf(name, sizeof name, "ncclProfiler_v%d", v);
        printf("%s: %s\n", name, dlsym(h, name) ? "found" : "missing");
    }
    const profiler_head_t *p = NULL;
    int used = 0;
    for (int v = 5; v >= 1 && !p; v--) {
        snprintf(name, sizeof name, "ncclProfiler_v%d", v);
        p = (const profiler_head_t *)dlsym(h, name);
        used = v;
    }
    if (!p) {
        printf("result: unsupported (no ncclProfiler_v1..v5)\n");
        return 1;
    }
    int nfn = 0;
    for (int i = 0; i < 5; i++)
        nfn += p->fn[i] != NULL;
    printf("chosen: ncclProfiler_v%d name %s functions %d\n", used, p->name ? p->name : "(null)", nfn);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 2 && strcmp(argv[1], "init") == 0)
        return run_init();
    if (argc == 3 && strcmp(argv[1], "loader") == 0)
        return run_loader(argv[2]);
    fprintf(stderr, "usage: %s init | loader VALUE\n", argv[0]);
    return 2;
}
