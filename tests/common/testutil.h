/* Small test harness shared by all tests: assertions that report file:line and keep going,
 * reproducible random data, and the CTest skip convention (exit code 77). */
#ifndef GCOMM_TESTUTIL_H
#define GCOMM_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gcomm/gcomm.h"

#define GCOMM_TEST_SKIP 77

#ifdef __cplusplus
extern "C" {
#endif

extern int gcommt_failures;
extern long gcommt_checks;

#define TEST_CHECK(cond, ...)                                                                  \
    do {                                                                                       \
        gcommt_checks++;                                                                       \
        if (!(cond)) {                                                                         \
            gcommt_failures++;                                                                 \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                    \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fprintf(stderr, "\n");                                                             \
        }                                                                                      \
    } while (0)

/* Checks a gcomm call returned the expected status; prints the detail string when it did not. */
#define TEST_RC(expected, call)                                                                \
    do {                                                                                       \
        int rc_ = (call);                                                                      \
        TEST_CHECK(rc_ == (expected), "%s returned %d (%s), expected %d (%s); detail: %s",     \
                   #call, rc_, gcomm_error_string(rc_), (int)(expected),                       \
                   gcomm_error_string(expected), gcomm_last_error_detail());                   \
    } while (0)

#define TEST_OK(call) TEST_RC(GCOMM_SUCCESS, call)

/* Prints "<name>: N checks, M failures" and returns the process exit code (0 or 1). */
int gcommt_finish(const char *name);

/* Deterministic xorshift generator; the seed comes from GCOMM_TEST_SEED when set, so a failing
 * random test can be replayed. */
uint64_t gcommt_seed(uint64_t fallback);
uint64_t gcommt_rand(uint64_t *state);
/* Uniform in [lo, hi]. */
long gcommt_rand_range(uint64_t *state, long lo, long hi);
/* Fills bytes with random values, never a run of zeros (so unwritten output is visible). */
void gcommt_fill_random(void *buf, size_t bytes, uint64_t *state);

#ifdef __cplusplus
}
#endif

#endif /* GCOMM_TESTUTIL_H */
