/* Monotonic time. Any thread. CLOCK_MONOTONIC, so timers never jump with wall-clock changes. */
#ifndef KC_BASE_CLOCK_H
#define KC_BASE_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

static inline int64_t kc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A condition variable whose timed waits take CLOCK_MONOTONIC deadlines (kc_now_ns's clock), so
 * a wall-clock step neither shortens nor stretches a timeout. */
static inline void kc_cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

static inline int64_t kc_now_ms(void)
{
    return kc_now_ns() / 1000000LL;
}

/* Wall clock in ms since the epoch, for stats timestamps, ListOffsets-by-time and OAUTHBEARER
 * token expiry (tokens carry wall-clock times) only. */
static inline int64_t kc_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000LL + ts.tv_nsec / 1000000LL;
}

#endif
