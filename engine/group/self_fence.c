/* The self-fence rule (group/self_fence.h). Pure; no state. */
#include "group/self_fence.h"

int64_t kc_self_fence_at(int64_t answered_sent_ms, int64_t session_ms, double ratio)
{
    if (!(ratio > 0) || session_ms <= 0 || answered_sent_ms < 0)
        return INT64_MAX;
    /* Rounded down: fencing a millisecond early is harmless, late is not. A ratio at or above
     * 1 is clamped to the expiry itself (conf validation refuses it; the rule stays safe). */
    int64_t part = ratio >= 1 ? session_ms : (int64_t)((double)session_ms * ratio);
    return answered_sent_ms + part;
}

bool kc_self_fence_due(int64_t answered_sent_ms, int64_t session_ms, double ratio, int64_t now_ms,
                       int64_t *next_ms)
{
    int64_t at = kc_self_fence_at(answered_sent_ms, session_ms, ratio);
    bool due = at != INT64_MAX && now_ms >= at;
    if (next_ms)
        *next_ms = due ? INT64_MAX : at;
    return due;
}

int64_t kc_self_fence_expiry(int64_t answered_sent_ms, int64_t session_ms)
{
    if (session_ms <= 0 || answered_sent_ms < 0)
        return INT64_MAX;
    return answered_sent_ms + session_ms;
}

double kc_self_fence_ratio(double ratio, int64_t session_ms, int64_t interval_ms)
{
    if (!(ratio > 0) || session_ms <= 0 || interval_ms <= 0 || interval_ms >= session_ms)
        return ratio;
    double two = 2.0 * (double)interval_ms;
    double half = (double)interval_ms + (double)(session_ms - interval_ms) / 2;
    double floor = (two < half ? two : half) / (double)session_ms;
    return floor > ratio ? floor : ratio;
}
