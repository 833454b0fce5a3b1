/*
 * kconsume CLI: the state its files share (kc_app, app.h says who owns each part), the clock and
 * the stop code. Any thread.
 */
#include <stdatomic.h>
#include <time.h>

#include "app.h"

kc_app_t kc_app = {
    .out_mu = PTHREAD_MUTEX_INITIALIZER, .reg_mu = PTHREAD_MUTEX_INITIALIZER, .stats_fd = 2};

uint64_t kc_app_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* First writer wins: a later, different reason to stop does not override the first. */
void kc_app_request_stop(int code)
{
    int exp = -1;
    atomic_compare_exchange_strong(&kc_app.stop_code, &exp, code);
}
