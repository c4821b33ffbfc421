/* An NVTX v3 injection library as a test double: what Nsight Systems does
   to get a program's NVTX calls, reduced to writing them down. Built as a
   shared object and named by NVTX_INJECTION64_PATH; the NVTX headers
   compiled into the program dlopen it at the program's first NVTX call and
   call InitializeInjectionNvtx2 (nvtxDetail/nvtxInit.h), which fills the
   program's NVTX function table with the functions below
   (nvtxDetail/nvtxImpl.h: the export table NVTX_ETID_CALLBACKS hands out
   GetModuleFunctionTable; each module's table is an array of pointers to
   the program's function pointers, indexed by the NVTX_CBID_* of
   nvtxDetail/nvtxTypes.h, entry 0 unused).

   Each call is one line appended (one write(2), O_APPEND: lines of
   concurrent threads never mix) to the file named by NVTXDBL_LOG:

       TID init                       InitializeInjectionNvtx2 was called
       TID create DOMAIN              nvtxDomainCreateA
       TID register DOMAIN TEXT       nvtxDomainRegisterStringA
       TID push DOMAIN TEXT           nvtxDomainRangePushEx
       TID pop DOMAIN                 nvtxDomainRangePop
       TID mark DOMAIN TEXT           nvtxDomainMarkEx
       TID core CALL                  an NVTX call outside a domain
       TID error CALL: WHY            a call that breaks a rule below

   TID is the calling thread's kernel id (gettid). TEXT is a registered
   string's text, or ascii:TEXT for an ASCII message, or (no message) /
   (unicode) / (message type N). DOMAIN is the name the domain was created
   with, "(default)" for the NULL handle.

   Rules, each from nvToolsExt.h's documentation of the call; a call that
   breaks one is logged as an error line (and, for a pop, returns -1):
   - nvtxEventAttributes_t: version "needs to be set to NVTX_VERSION", size
     "needs to be set to the size in bytes of the event attribute structure"
     (NVTX_EVENT_ATTRIB_STRUCT_SIZE).
   - A domain handle is NULL (the default domain) or one nvtxDomainCreateA
     returned: a tool dereferences it.
   - NVTX_MESSAGE_TYPE_REGISTERED: "a unique string handle that was
     registered with nvtxDomainRegisterStringA()", in the domain of the
     event (a registration belongs to its domain, whose destruction alone
     unregisters it); stricter than a tool, which may not check.
   - Registered strings are "immutable": the text behind the pointer given
     to nvtxDomainRegisterStringA must not change while it is used (a tool
     may keep only the pointer); checked at every use.
   - "Each domain maintains its own nvtxRangePush and nvtxRangePop stack"
     per thread; push returns the 0-based level of the range it starts,
     pop the level it ends, and "if an error occurs a negative value is
     returned": a pop with no range open on the thread in that domain is an
     error (stricter than Nsight, which ignores it).
   The double never unloads (dlclose is never called on success) and may be
   initialized by several NVTX instances (each shared object that compiles
   NVTX's headers has its own function table): it fills each table. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define NVTX_NO_IMPL /* the types and declarations: the calls are ours */
#include <nvtx3/nvToolsExt.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DBL_MAX_DOMAINS 16
#define DBL_MAX_STRINGS 4096
#define DBL_TEXT 256

typedef struct {
    char name[DBL_TEXT];
} dbl_domain_t;

typedef struct {
    int domain;           /* index into dbl.domains, -1: the default domain */
    const char *ptr;      /* as registered: must keep its text */
    char text[DBL_TEXT];  /* the text when registered */
} dbl_string_t;

static struct {
    pthread_mutex_t lock; /* the tables */
    int fd;
    int ndomains, nstrings;
    dbl_domain_t domains[DBL_MAX_DOMAINS];
    dbl_string_t strings[DBL_MAX_STRINGS];
} dbl = {PTHREAD_MUTEX_INITIALIZER, -1, 0, 0, {{{0}}}, {{0, NULL, {0}}}};

/* Per thread: open ranges per domain (index + 1; 0: the default domain). */
static __thread int dbl_depth[DBL_MAX_DOMAINS + 1];

static void dbl_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void dbl_line(const char *fmt, ...) {
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "%ld ", (long)syscall(SYS_gettid));
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof buf - 2) n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    if (write(dbl.fd, buf, (size_t)n) != n) abort(); /* a lost line would pass a test it should fail */
}

/* The domain's index (-1 for NULL), or -2 when the handle is not one of
   ours. Handles are &dbl.domains[i]. */
static int dbl_domain(nvtxDomainHandle_t d) {
    const dbl_domain_t *p = (const dbl_domain_t *)(const void *)d;
    int i, n;
    if (!d) return -1;
    pthread_mutex_lock(&dbl.lock);
    n = dbl.ndomains;
    pthread_mutex_unlock(&dbl.lock);
    for (i = 0; i < n; i++)
        if (p == &dbl.domains[i]) return i;
    return -2;
}

static const char *dbl_domain_name(int i) { return i < 0 ? "(default)" : dbl.domains[i].name; }

/* Writes an event's text into out; 0 (after an error line) when the
   attributes break a rule. */
static int dbl_text(const char *call, int domain, const nvtxEventAttributes_t *a, char *out, size_t n) {
    if (!a) {
        dbl_line("error %s: NULL attributes", call);
        return 0;
    }
    if (a->version != NVTX_VERSION || a->size != NVTX_EVENT_ATTRIB_STRUCT_SIZE) {
        dbl_line("error %s: attributes version %u size %u (expected %u, %u)", call, (unsigned)a->version,
                 (unsigned)a->size, (unsigned)NVTX_VERSION, (unsigned)NVTX_EVENT_ATTRIB_STRUCT_SIZE);
        return 0;
    }
    switch (a->messageType) {
    case NVTX_MESSAGE_UNKNOWN: snprintf(out, n, "(no message)"); return 1;
    case NVTX_MESSAGE_TYPE_ASCII:
        snprintf(out, n, "ascii:%s", a->message.ascii ? a->message.ascii : "(null)");
        return 1;
    case NVTX_MESSAGE_TYPE_UNICODE: snprintf(out, n, "(unicode)"); return 1;
    case NVTX_MESSAGE_TYPE_REGISTERED: {
        const dbl_string_t *s = (const dbl_string_t *)(const void *)a->message.registered;
        int i, ns;
        pthread_mutex_lock(&dbl.lock);
        ns = dbl.nstrings;
        pthread_mutex_unlock(&dbl.lock);
        for (i = 0; i < ns; i++)
            if (s == &dbl.strings[i]) break;
        if (i == ns) {
            dbl_line("error %s: registered string %p was not registered", call, (const void *)s);
            return 0;
        }
        if (s->domain != domain) {
            dbl_line("error %s: string \"%s\" registered in domain %s, used in %s", call, s->text,
                     dbl_domain_name(s->domain), dbl_domain_name(domain));
            return 0;
        }
        if (strncmp(s->ptr, s->text, sizeof s->text) != 0) {
            dbl_line("error %s: registered string \"%s\" changed to \"%.64s\"", call, s->text, s->ptr);
            return 0;
        }
        snprintf(out, n, "%s", s->text);
        return 1;
    }
    default: snprintf(out, n, "(message type %d)", (int)a->messageType); return 1;
    }
}

static nvtxDomainHandle_t NVTX_API dbl_domain_create(const char *name) {
    dbl_domain_t *d = NULL;
    pthread_mutex_lock(&dbl.lock);
    if (name && dbl.ndomains < DBL_MAX_DOMAINS) {
        d = &dbl.domains[dbl.ndomains];
        snprintf(d->name, sizeof d->name, "%s", name);
        dbl.ndomains++;
    }
    pthread_mutex_unlock(&dbl.lock);
    if (d) dbl_line("create %s", name);
    else dbl_line("error nvtxDomainCreateA: %s", name ? "too many domains" : "NULL name");
    return (nvtxDomainHandle_t)(void *)d;
}

static nvtxStringHandle_t NVTX_API dbl_register(nvtxDomainHandle_t domain, const char *text) {
    int di = dbl_domain(domain);
    dbl_string_t *s = NULL;
    if (di == -2) {
        dbl_line("error nvtxDomainRegisterStringA: unknown domain %p", (void *)domain);
        return NULL;
    }
    pthread_mutex_lock(&dbl.lock);
    if (text && dbl.nstrings < DBL_MAX_STRINGS) {
        s = &dbl.strings[dbl.nstrings];
        s->domain = di;
        s->ptr = text;
        snprintf(s->text, sizeof s->text, "%s", text);
        dbl.nstrings++;
    }
    pthread_mutex_unlock(&dbl.lock);
    if (s) dbl_line("register %s %s", dbl_domain_name(di), text);
    else dbl_line("error nvtxDomainRegisterStringA: %s", text ? "too many strings" : "NULL string");
    return (nvtxStringHandle_t)(void *)s;
}

static int NVTX_API dbl_push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *a) {
    char text[DBL_TEXT + 16];
    int di = dbl_domain(domain);
    if (di == -2) {
        dbl_line("error nvtxDomainRangePushEx: unknown domain %p", (void *)domain);
        return -1;
    }
    if (!dbl_text("nvtxDomainRangePushEx", di, a, text, sizeof text)) return -1;
    dbl_line("push %s %s", dbl_domain_name(di), text);
    return dbl_depth[di + 1]++;
}

static int NVTX_API dbl_pop(nvtxDomainHandle_t domain) {
    int di = dbl_domain(domain);
    if (di == -2) {
        dbl_line("error nvtxDomainRangePop: unknown domain %p", (void *)domain);
        return -1;
    }
    if (dbl_depth[di + 1] == 0) {
        dbl_line("error nvtxDomainRangePop: no range open in %s on this thread", dbl_domain_name(di));
        return -1;
    }
    dbl_line("pop %s", dbl_domain_name(di));
    return --dbl_depth[di + 1];
}

static void NVTX_API dbl_mark(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *a) {
    char text[DBL_TEXT + 16];
    int di = dbl_domain(domain);
    if (di == -2) {
        dbl_line("error nvtxDomainMarkEx: unknown domain %p", (void *)domain);
        return;
    }
    if (dbl_text("nvtxDomainMarkEx", di, a, text, sizeof text)) dbl_line("mark %s %s", dbl_domain_name(di), text);
}

/* Calls memobs has no business making: written down, so a test sees them. */
static nvtxRangeId_t NVTX_API dbl_range_start(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *a) {
    (void)domain;
    (void)a;
    dbl_line("core nvtxDomainRangeStartEx");
    return 0;
}
static void NVTX_API dbl_range_end(nvtxDomainHandle_t domain, nvtxRangeId_t id) {
    (void)domain;
    (void)id;
    dbl_line("core nvtxDomainRangeEnd");
}
static void NVTX_API dbl_domain_destroy(nvtxDomainHandle_t domain) {
    (void)domain;
    dbl_line("core nvtxDomainDestroy");
}
static void NVTX_API dbl_core_mark_ex(const nvtxEventAttributes_t *a) {
    (void)a;
    dbl_line("core nvtxMarkEx");
}
static void NVTX_API dbl_core_mark_a(const char *m) { dbl_line("core nvtxMarkA %s", m ? m : "(null)"); }
static int NVTX_API dbl_core_push_ex(const nvtxEventAttributes_t *a) {
    (void)a;
    dbl_line("core nvtxRangePushEx");
    return 0;
}
static int NVTX_API dbl_core_push_a(const char *m) {
    dbl_line("core nvtxRangePushA %s", m ? m : "(null)");
    return 0;
}
static int NVTX_API dbl_core_pop(void) {
    dbl_line("core nvtxRangePop");
    return 0;
}

/* Points entry id of module's table at fn; 0 when the table is too short. */
static int dbl_set(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module, unsigned id, NvtxFunctionPointer fn) {
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    /* size: the entries, the unused 0 included, without the NULL after them */
    if (!cb->GetModuleFunctionTable(module, &table, &size) || !table || id == 0 || id >= size || !table[id]) return 0;
    *table[id] = fn;
    return 1;
}

#define DBL_FN(f) ((NvtxFunctionPointer)(f)) /* void (*)(void): GCC's -Wcast-function-type allows it */

__attribute__((visibility("default"))) int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
    const NvtxExportTableCallbacks *cb;
    const NvtxExportTableVersionInfo *vi;
    const char *path = getenv("NVTXDBL_LOG");
    int ok = 1;
    pthread_mutex_lock(&dbl.lock);
    if (dbl.fd < 0 && path) dbl.fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    pthread_mutex_unlock(&dbl.lock);
    if (dbl.fd < 0) {
        fprintf(stderr, "nvtx_inject: NVTXDBL_LOG is unset or cannot be opened\n");
        return 0; /* NVTX then makes every call a no-op */
    }
    cb = (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
    vi = (const NvtxExportTableVersionInfo *)get(NVTX_ETID_VERSIONINFO);
    if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable) {
        dbl_line("error InitializeInjectionNvtx2: no callbacks export table");
        return 0;
    }
    /* "This must be set by tools when attaching" (nvtxTypes.h) */
    if (vi && vi->struct_size >= sizeof *vi && vi->SetInjectionNvtxVersion) vi->SetInjectionNvtxVersion(NVTX_VERSION);
    ok &= dbl_set(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateA, DBL_FN(dbl_domain_create));
    ok &= dbl_set(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRegisterStringA, DBL_FN(dbl_register));
    ok &= dbl_set(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx, DBL_FN(dbl_push));
    ok &= dbl_set(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePop, DBL_FN(dbl_pop));
    ok &= dbl_set(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainMarkEx, DBL_FN(dbl_mark));
    ok &= dbl_set(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangeStartEx, DBL_FN(dbl_range_start));
    ok &= dbl_set(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangeEnd, DBL_FN(dbl_range_end));
    ok &= dbl_set(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainDestroy, DBL_FN(dbl_domain_destroy));
    ok &= dbl_set(cb, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkEx, DBL_FN(dbl_core_mark_ex));
    ok &= dbl_set(cb, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkA, DBL_FN(dbl_core_mark_a));
    ok &= dbl_set(cb, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushEx, DBL_FN(dbl_core_push_ex));
    ok &= dbl_set(cb, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushA, DBL_FN(dbl_core_push_a));
    ok &= dbl_set(cb, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePop, DBL_FN(dbl_core_pop));
    if (!ok) {
        dbl_line("error InitializeInjectionNvtx2: a function table is too short");
        return 0;
    }
    dbl_line("init");
    return 1;
}
