/* The one clock every subsystem times with: CLOCK_MONOTONIC, in nanoseconds. */
#ifndef KF_COMMON_CLOCK_H
#define KF_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t kf_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double kf_now_s(void) { return (double)kf_now_ns() * 1e-9; }

#endif
