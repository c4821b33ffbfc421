/* Two modules with their own memobs (MEMOBS_HIDDEN), loaded in this
   order: the first records H2D only, the second D2H only, for about
   MS milliseconds while their Prometheus files are rewritten every
   100 ms; meanwhile this program reads both files: each must only ever
   hold its own module's figures, and a counter never goes down.
   Usage: dl LIB_A LIB_B PROM_A PROM_B MS. Prints the totals recorded. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*rec_fn)(uint64_t);

static rec_fn load(const char *path, const char *sym) {
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    rec_fn f;
    if (!h) {
        printf("    # dlopen: %s\n", dlerror());
        return NULL;
    }
    *(void **)&f = dlsym(h, sym);
    if (!f) printf("    # %s not in %s\n", sym, path);
    return f;
}

/* The value of the sample of family memobs_transfer_bytes_total with
   direction dir, summed over phases; -1 when the file is absent. */
static long long prom_bytes(const char *path, const char *dir) {
    char line[1024], key[64];
    long long sum = 0;
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    snprintf(key, sizeof key, "direction=\"%s\"", dir);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "memobs_transfer_bytes_total{", 28) == 0 && strstr(line, key))
            sum += strtoll(strrchr(line, ' ') + 1, NULL, 10);
    fclose(f);
    return sum;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    rec_fn a, b;
    long long last_a = 0, last_b = 0, na = 0, nb = 0, reads = 0;
    double end;
    int bad = 0;
    if (argc < 6) return 2;
    a = load(argv[1], "lib_h2d");
    b = load(argv[2], "lib_d2h");
    if (!a || !b) return 1;
    end = now_s() + atof(argv[5]) / 1000.0;
    while (now_s() < end) {
        long long ha, da, hb, db;
        a(7);
        na++;
        b(5);
        nb++;
        if (na % 64) continue;
        ha = prom_bytes(argv[3], "h2d");
        da = prom_bytes(argv[3], "d2h");
        hb = prom_bytes(argv[4], "h2d");
        db = prom_bytes(argv[4], "d2h");
        reads++;
        if (ha >= 0 && (ha < last_a || da != 0)) {
            printf("    # %s: h2d %lld after %lld, d2h %lld (want 0)\n", argv[3], ha, last_a, da);
            bad = 1;
            break;
        }
        if (hb >= 0 && (db < last_b || hb != 0)) {
            printf("    # %s: d2h %lld after %lld, h2d %lld (want 0)\n", argv[4], db, last_b, hb);
            bad = 1;
            break;
        }
        if (ha > last_a) last_a = ha;
        if (db > last_b) last_b = db;
    }
    printf("recorded a %lld b %lld; last read a %lld b %lld; %lld reads\n", 7 * na, 5 * nb, last_a, last_b, reads);
    return bad;
}
