/* Monotonic wall-clock time for timeouts and benchmarks. */
#ifndef GCOMM_COMMON_TIMER_H
#define GCOMM_COMMON_TIMER_H

#include <stdint.h>
#include <time.h>

static inline uint64_t gcommi_time_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif /* GCOMM_COMMON_TIMER_H */
