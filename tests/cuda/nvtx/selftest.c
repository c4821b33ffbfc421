/* Tests of the NVTX injection double (tests/cuda/nvtx/nvtx_inject.c) through
   NVTX's own loader: this program calls the NVTX v3 API of the CUDA
   Toolkit's headers, run with NVTX_INJECTION64_PATH naming the double and
   NVTXDBL_LOG a fresh file; each test checks one rule of the double, or
   one line format, by the lines it wrote. Built by tests/cuda/test_nvtx.sh. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <nvtx3/nvToolsExt.h>
#include "../../check.h"
#include "nvtxdbl_log.h"

#include <pthread.h>

#ifndef TEST_SUITE
#define TEST_SUITE "nvtx-double"
#endif

static long off;
static nvtxDomainHandle_t dom_a, dom_b;

static nvtxEventAttributes_t attr_reg(nvtxStringHandle_t h) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = h;
    return a;
}

/* NVTX loads the double at the first call, not before. */
static void loaded_at_first_call(void) {
    CHECK(!nvtxdbl_exists());
    dom_a = nvtxDomainCreateA("alpha");
    CHECK(nvtxdbl_exists());
    CHECK(dom_a != NULL);
    CHECK_STR("init\ncreate alpha\n", nvtxdbl_since(&off, 1));
    dom_b = nvtxDomainCreateA("beta");
    CHECK(dom_b != NULL && dom_b != dom_a);
    CHECK_STR("create beta\n", nvtxdbl_since(&off, 1));
}

/* Registered text in pushes and marks; push and pop return the level. */
static void push_pop_levels(void) {
    nvtxStringHandle_t s = nvtxDomainRegisterStringA(dom_a, "outer"), t = nvtxDomainRegisterStringA(dom_a, "inner");
    nvtxEventAttributes_t a = attr_reg(s), b = attr_reg(t);
    CHECK(s != NULL && t != NULL && s != t);
    CHECK_U64(0, nvtxDomainRangePushEx(dom_a, &a));
    CHECK_U64(1, nvtxDomainRangePushEx(dom_a, &b));
    nvtxDomainMarkEx(dom_a, &b);
    CHECK_U64(1, nvtxDomainRangePop(dom_a));
    CHECK_U64(0, nvtxDomainRangePop(dom_a));
    CHECK_STR("register alpha outer\nregister alpha inner\npush alpha outer\npush alpha inner\nmark alpha inner\n"
              "pop alpha\npop alpha\n",
              nvtxdbl_since(&off, 1));
}

/* An ASCII message is told apart from a registered one. */
static void ascii_message(void) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "plain";
    CHECK_U64(0, nvtxDomainRangePushEx(NULL, &a));
    CHECK_U64(0, nvtxDomainRangePop(NULL));
    CHECK_STR("push (default) ascii:plain\npop (default)\n", nvtxdbl_since(&off, 1));
}

/* Rule: version NVTX_VERSION and size NVTX_EVENT_ATTRIB_STRUCT_SIZE. */
static void attributes_version_and_size(void) {
    nvtxEventAttributes_t a = attr_reg(nvtxDomainRegisterStringA(dom_a, "v"));
    char want[256];
    a.version = 2;
    CHECK(nvtxDomainRangePushEx(dom_a, &a) < 0);
    a.version = NVTX_VERSION;
    a.size = 40;
    nvtxDomainMarkEx(dom_a, &a);
    snprintf(want, sizeof want,
             "register alpha v\nerror nvtxDomainRangePushEx: attributes version 2 size %u (expected 3, %u)\n"
             "error nvtxDomainMarkEx: attributes version 3 size 40 (expected 3, %u)\n",
             (unsigned)NVTX_EVENT_ATTRIB_STRUCT_SIZE, (unsigned)NVTX_EVENT_ATTRIB_STRUCT_SIZE,
             (unsigned)NVTX_EVENT_ATTRIB_STRUCT_SIZE);
    CHECK_STR(want, nvtxdbl_since(&off, 1));
}

/* Rule: a domain handle is NULL or one the tool made. */
static void unknown_domain(void) {
    static char fake[64];
    char want[256];
    nvtxDomainHandle_t d = (nvtxDomainHandle_t)(void *)fake;
    CHECK(nvtxDomainRangePop(d) < 0);
    snprintf(want, sizeof want, "error nvtxDomainRangePop: unknown domain %p\n", (void *)fake);
    CHECK_STR(want, nvtxdbl_since(&off, 1));
}

/* Rule: a registered string is used in its own domain. */
static void string_of_another_domain(void) {
    nvtxEventAttributes_t a = attr_reg(nvtxDomainRegisterStringA(dom_b, "b_only"));
    nvtxDomainMarkEx(dom_a, &a);
    nvtxDomainMarkEx(dom_b, &a);
    CHECK_STR("register beta b_only\nerror nvtxDomainMarkEx: string \"b_only\" registered in domain beta, used in "
              "alpha\nmark beta b_only\n",
              nvtxdbl_since(&off, 1));
}

/* Rule: a registered string's text does not change. */
static void string_changed(void) {
    static char text[16] = "before";
    nvtxEventAttributes_t a = attr_reg(nvtxDomainRegisterStringA(dom_a, text));
    nvtxDomainMarkEx(dom_a, &a);
    strcpy(text, "after");
    nvtxDomainMarkEx(dom_a, &a);
    CHECK_STR("register alpha before\nmark alpha before\n"
              "error nvtxDomainMarkEx: registered string \"before\" changed to \"after\"\n",
              nvtxdbl_since(&off, 1));
}

/* Rule: a pop with no range open on the thread, in that domain, fails. */
static void pop_without_push(void) {
    nvtxEventAttributes_t a = attr_reg(nvtxDomainRegisterStringA(dom_a, "a_range"));
    CHECK(nvtxDomainRangePop(dom_a) < 0);
    CHECK_U64(0, nvtxDomainRangePushEx(dom_a, &a));
    CHECK(nvtxDomainRangePop(dom_b) < 0); /* stacks are per domain */
    CHECK_U64(0, nvtxDomainRangePop(dom_a));
    CHECK_STR("register alpha a_range\nerror nvtxDomainRangePop: no range open in alpha on this thread\n"
              "push alpha a_range\nerror nvtxDomainRangePop: no range open in beta on this thread\npop alpha\n",
              nvtxdbl_since(&off, 1));
}

static long thread_tid;
static void *pop_elsewhere(void *arg) {
    (void)arg;
    thread_tid = nvtxdbl_gettid();
    return (void *)(long)nvtxDomainRangePop(dom_a);
}

/* Rule: stacks are per thread; each line carries its thread's id. */
static void per_thread(void) {
    nvtxEventAttributes_t a = attr_reg(nvtxDomainRegisterStringA(dom_a, "mine"));
    pthread_t t;
    void *r = NULL;
    char want[512], buf[512];
    const char *text;
    CHECK_U64(0, nvtxDomainRangePushEx(dom_a, &a));
    CHECK_U64(0, pthread_create(&t, NULL, pop_elsewhere, NULL));
    CHECK_U64(0, pthread_join(t, &r));
    CHECK((long)r < 0);
    CHECK_U64(0, nvtxDomainRangePop(dom_a));
    text = nvtxdbl_since(&off, 0);
    CHECK(thread_tid != 0 && thread_tid != nvtxdbl_gettid());
    CHECK_STR("register alpha mine\npush alpha mine\npop alpha\n",
              nvtxdbl_thread(text, nvtxdbl_gettid(), buf, sizeof buf));
    CHECK_STR("error nvtxDomainRangePop: no range open in alpha on this thread\n",
              nvtxdbl_thread(text, thread_tid, buf, sizeof buf));
    snprintf(want, sizeof want, "%ld register alpha mine\n", nvtxdbl_gettid());
    CHECK(strncmp(text, want, strlen(want)) == 0);
}

/* Calls outside a domain are written down too. */
static void core_calls(void) {
    nvtxMarkA("m");
    CHECK_U64(0, nvtxRangePushA("r"));
    CHECK_U64(0, nvtxRangePop());
    CHECK_STR("core nvtxMarkA m\ncore nvtxRangePushA r\ncore nvtxRangePop\n", nvtxdbl_since(&off, 1));
}

int main(void) {
    check__suite = TEST_SUITE;
    RUN(loaded_at_first_call);
    RUN(push_pop_levels);
    RUN(ascii_message);
    RUN(attributes_version_and_size);
    RUN(unknown_domain);
    RUN(string_of_another_domain);
    RUN(string_changed);
    RUN(pop_without_push);
    RUN(per_thread);
    RUN(core_calls);
    return CHECK_DONE();
}
