#include <stdlib.h>

#include "testutil.h"

int gcommt_failures;
long gcommt_checks;

int gcommt_finish(const char *name)
{
    printf("%s: %ld checks, %d failures\n", name, gcommt_checks, gcommt_failures);
    return gcommt_failures ? 1 : 0;
}

uint64_t gcommt_seed(uint64_t fallback)
{
    const char *s = getenv("GCOMM_TEST_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 0) : fallback;
    return seed ? seed : 0x9e3779b97f4a7c15ull;
}

uint64_t gcommt_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

long gcommt_rand_range(uint64_t *state, long lo, long hi)
{
    return lo + (long)(gcommt_rand(state) % (uint64_t)(hi - lo + 1));
}

void gcommt_fill_random(void *buf, size_t bytes, uint64_t *state)
{
    unsigned char *p = buf;
    for (size_t i = 0; i < bytes; i++) p[i] = (unsigned char)(1 + gcommt_rand(state) % 255);
}
