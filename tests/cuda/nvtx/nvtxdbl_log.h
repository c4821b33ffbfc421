/* Reading back what the NVTX injection double (nvtx_inject.c) wrote to
   the file named by NVTXDBL_LOG: tests/cuda/nvtx/selftest.c and
   tests/cuda/test_nvtx.c. */
#ifndef NVTXDBL_LOG_H
#define NVTXDBL_LOG_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NVTXDBL_MAX 65536

/* The log's path (the test fails loudly without one). */
__attribute__((unused)) static const char *nvtxdbl_path(void) {
    const char *p = getenv("NVTXDBL_LOG");
    if (!p || !*p) {
        printf("not ok - NVTXDBL_LOG is not set\n");
        exit(2);
    }
    return p;
}

/* 1 if the log exists (the double was loaded: it opens it at init). */
__attribute__((unused)) static int nvtxdbl_exists(void) { return access(nvtxdbl_path(), F_OK) == 0; }

/* The lines written since *off (which moves past them), each as "TID
   text"; with strip, without "TID ". Static storage: copy what you keep. */
__attribute__((unused)) static const char *nvtxdbl_since(long *off, int strip) {
    static char raw[NVTXDBL_MAX], out[NVTXDBL_MAX];
    FILE *f = fopen(nvtxdbl_path(), "r");
    size_t n = 0, o = 0, i = 0;
    out[0] = 0;
    if (!f) return out;
    if (fseek(f, *off, SEEK_SET) == 0) n = fread(raw, 1, sizeof raw - 1, f);
    fclose(f);
    raw[n] = 0;
    *off += (long)n;
    while (i < n) {
        size_t e = i;
        while (e < n && raw[e] != '\n') e++;
        if (strip) {
            while (i < e && raw[i] != ' ') i++;
            if (i < e) i++;
        }
        if (o + (e - i) + 2 < sizeof out) {
            memcpy(out + o, raw + i, e - i);
            o += e - i;
            out[o++] = '\n';
        }
        i = e + 1;
    }
    out[o] = 0;
    return out;
}

/* Of text (as from nvtxdbl_since(.., 0)), the lines of thread tid, without
   "TID ", into buf. */
__attribute__((unused)) static const char *nvtxdbl_thread(const char *text, long tid, char *buf, size_t len) {
    size_t o = 0;
    const char *p = text;
    buf[0] = 0;
    while (*p) {
        const char *e = strchr(p, '\n'), *sp = strchr(p, ' ');
        if (!e) e = p + strlen(p);
        if (sp && sp < e && strtol(p, NULL, 10) == tid && o + (size_t)(e - sp) + 1 < len) {
            memcpy(buf + o, sp + 1, (size_t)(e - sp - 1));
            o += (size_t)(e - sp - 1);
            buf[o++] = '\n';
            buf[o] = 0;
        }
        p = *e ? e + 1 : e;
    }
    return buf;
}

__attribute__((unused)) static long nvtxdbl_gettid(void) { return (long)syscall(SYS_gettid); }

#endif
