/* memobs.h (a fixture of tests/docs/test_docs.sh): every fault the checks must
   report. This header was written in a review round by the lead. */
#ifndef MEMOBS_H
#define MEMOBS_H
#ifndef MEMOBS_MAX_THINGS
#define MEMOBS_MAX_THINGS 16
#endif
#ifdef MEMOBS_NEW_SWITCH
#endif
static const char *memobs__a(void) { return getenv("MEMOBS_SUMMARY"); }
static const char *memobs__b(void) { return getenv("MEMOBS_NEW_VAR"); }
#endif
