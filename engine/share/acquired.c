/* Acquired-record ranges: the checks and the lookups (acquired.h). Pure. */
#include "share/acquired.h"

kc_err_t kc_share_acquired_check(const kc_share_range_t *r, size_t n, int64_t rec_first,
                                 int64_t rec_last, const char *topic, int32_t partition,
                                 kc_error_t *err)
{
    for (size_t i = 0; i < n; i++) {
        if (r[i].first < 0 || r[i].first > r[i].last)
            return kc_fail(err, KC_ERR_MALFORMED,
                           "ShareFetch %s[%d]: acquired records %lld..%lld run backwards", topic,
                           (int)partition, (long long)r[i].first, (long long)r[i].last);
        /* No log reaches the largest offset (its next offset would not exist); past here every
         * "last + 1" of the acknowledgements stays representable. */
        if (r[i].last == INT64_MAX)
            return kc_fail(err, KC_ERR_MALFORMED,
                           "ShareFetch %s[%d]: acquired records %lld..%lld end at the largest "
                           "offset there is",
                           topic, (int)partition, (long long)r[i].first, (long long)r[i].last);
        if (r[i].delivery_count < 1)
            return kc_fail(err, KC_ERR_MALFORMED,
                           "ShareFetch %s[%d]: acquired records %lld..%lld have delivery count %d",
                           topic, (int)partition, (long long)r[i].first, (long long)r[i].last,
                           (int)r[i].delivery_count);
        if (i > 0 && r[i].first <= r[i - 1].last)
            return kc_fail(err, KC_ERR_MALFORMED,
                           "ShareFetch %s[%d]: acquired records %lld..%lld %s %lld..%lld (ranges "
                           "must ascend without overlap)",
                           topic, (int)partition, (long long)r[i].first, (long long)r[i].last,
                           r[i].first == r[i - 1].first && r[i].last == r[i - 1].last
                               ? "repeat"
                               : "overlap or precede",
                           (long long)r[i - 1].first, (long long)r[i - 1].last);
        if (r[i].first < rec_first || r[i].last > rec_last) {
            if (rec_first > rec_last)
                return kc_fail(err, KC_ERR_MALFORMED,
                               "ShareFetch %s[%d]: acquired records %lld..%lld but the answer "
                               "carries no records",
                               topic, (int)partition, (long long)r[i].first, (long long)r[i].last);
            return kc_fail(err, KC_ERR_MALFORMED,
                           "ShareFetch %s[%d]: acquired records %lld..%lld lie outside the "
                           "records the answer carries (%lld..%lld)",
                           topic, (int)partition, (long long)r[i].first, (long long)r[i].last,
                           (long long)rec_first, (long long)rec_last);
        }
    }
    return KC_OK;
}

int16_t kc_share_acquired_count(const kc_share_range_t *r, size_t n, int64_t offset)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].last < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && r[lo].first <= offset ? r[lo].delivery_count : 0;
}

int64_t kc_share_acquired_span(const kc_share_range_t *r, size_t n)
{
    int64_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += (int64_t)((uint64_t)r[i].last - (uint64_t)r[i].first + 1u); /* checked: first >= 0 */
    return s;
}
