/* Monotonic time. Any thread. CLOCK_MONOTONIC, so timers never jump with wall-clock changes. */
#ifndef KC_BASE_CLOCK_H
#define KC_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t kc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline int64_t kc_now_ms(void)
{
    return kc_now_ns() / 1000000LL;
}

/* Wall clock in ms since the epoch, for stats timestamps and ListOffsets-by-time only. */
static inline int64_t kc_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000LL + ts.tv_nsec / 1000000LL;
}

#endif
