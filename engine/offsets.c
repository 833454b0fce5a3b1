/*
 * Offsets helpers: commit identity, result classification, deadline retries (offsets.h).
 *
 * Owner: network thread. Pure: no I/O, time passed in.
 */
#include "offsets.h"

#include <string.h>

#include "proto/kafka_errors.h"

kc_err_t kc_offsets_identity_anonymous(kc_commit_identity_t *who, const char *group_id,
                                       kc_error_t *err)
{
    if (!group_id || !*group_id)
        return kc_fail(err, KC_ERR_CONFIG, "committing offsets needs group.id");
    who->group_id = group_id;
    who->member_id = "";
    who->generation_or_epoch = KC_GENERATION_NONE;
    who->group_instance_id = NULL;
    return KC_OK;
}

kc_err_t kc_offsets_identity_member(kc_commit_identity_t *who, const char *group_id,
                                    const char *member_id, int32_t generation_or_epoch,
                                    const char *group_instance_id, kc_error_t *err)
{
    if (!group_id || !*group_id)
        return kc_fail(err, KC_ERR_CONFIG, "committing offsets needs group.id");
    if (!member_id || !*member_id || generation_or_epoch < 0)
        return kc_fail(err, KC_ERR_STATE,
                       "group %s: a member commit needs the member id and a current "
                       "generation/epoch (got '%s', %d); use the anonymous form outside a group",
                       group_id, member_id ? member_id : "(null)", (int)generation_or_epoch);
    who->group_id = group_id;
    who->member_id = member_id;
    who->generation_or_epoch = generation_or_epoch;
    who->group_instance_id = group_instance_id && *group_instance_id ? group_instance_id : NULL;
    return KC_OK;
}

static int identity_ok(const kc_commit_identity_t *w)
{
    if (!w->group_id || !*w->group_id || !w->member_id)
        return 0;
    if (!*w->member_id) /* anonymous: -1 and no instance id, nothing else */
        return w->generation_or_epoch == KC_GENERATION_NONE && !w->group_instance_id;
    return w->generation_or_epoch >= 0;
}

kc_err_t kc_offsets_build_commit(kc_commit_req_t *out, const kc_commit_identity_t *who,
                                 const kc_commit_entry_t *entries, size_t n, kc_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (!identity_ok(who))
        return kc_fail(err, KC_ERR_INVALID_ARG,
                       "OffsetCommit: identity must be anonymous (\"\", -1) or a member (id, "
                       "epoch >= 0); got ('%s', %d)",
                       who->member_id ? who->member_id : "(null)", (int)who->generation_or_epoch);
    if (n == 0 || !entries)
        return kc_fail(err, KC_ERR_INVALID_ARG, "OffsetCommit: no partitions");
    for (size_t i = 0; i < n; i++) {
        if (!entries[i].topic || entries[i].partition < 0 || entries[i].offset < 0)
            return kc_fail(err, KC_ERR_INVALID_ARG,
                           "OffsetCommit: entry %zu (partition %d, offset %lld) is invalid", i,
                           (int)entries[i].partition, (long long)entries[i].offset);
    }
    out->who = *who;
    out->entries = entries;
    out->n_entries = n;
    return KC_OK;
}

kc_offsets_verdict_t kc_offsets_classify(int16_t code)
{
    switch (code) {
    case KC_KAFKA_NONE:
        return KC_OFFSETS_OK;
    case KC_KAFKA_NOT_COORDINATOR:
    case KC_KAFKA_COORDINATOR_NOT_AVAILABLE:
    case KC_KAFKA_COORDINATOR_LOAD_IN_PROGRESS:
        return KC_OFFSETS_REDISCOVER;
    case KC_KAFKA_STALE_MEMBER_EPOCH:
        return KC_OFFSETS_RETRY_FRESH_EPOCH;
    /* OffsetFetch with require_stable: a transaction is still open on the partition; and a
     * request the broker timed out. Both settle by themselves. */
    case KC_KAFKA_UNSTABLE_OFFSET_COMMIT:
    case KC_KAFKA_REQUEST_TIMED_OUT:
        return KC_OFFSETS_RETRY;
    default:
        /* UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS,
         * GROUP_AUTHORIZATION_FAILED, OFFSET_METADATA_TOO_LARGE, ... : the caller decides. */
        return KC_OFFSETS_FAIL;
    }
}

/* Which retry verdict wins when partitions disagree: rediscovering the coordinator also
 * refreshes everything a later retry needs. */
static int urgency(kc_offsets_verdict_t v)
{
    switch (v) {
    case KC_OFFSETS_REDISCOVER:
        return 3;
    case KC_OFFSETS_RETRY_FRESH_EPOCH:
        return 2;
    case KC_OFFSETS_RETRY:
        return 1;
    default:
        return 0;
    }
}

void kc_offsets_classify_response(int16_t top_code, const int16_t *part_codes, size_t n,
                                  kc_offsets_verdict_t *part_verdicts, kc_offsets_result_t *out)
{
    memset(out, 0, sizeof *out);
    kc_offsets_verdict_t retry = KC_OFFSETS_OK;
    out->first_error = top_code;
    for (size_t i = 0; i < n; i++) {
        int16_t c = top_code ? top_code : part_codes[i];
        kc_offsets_verdict_t v = kc_offsets_classify(c);
        if (part_verdicts)
            part_verdicts[i] = v;
        if (c && !out->first_error)
            out->first_error = c;
        if (v == KC_OFFSETS_FAIL)
            out->n_failed++;
        else if (v != KC_OFFSETS_OK)
            out->n_retry++;
        if (urgency(v) > urgency(retry))
            retry = v;
    }
    if (n == 0 && top_code) /* a top-level error with no partitions listed */
        retry = kc_offsets_classify(top_code);
    if (retry != KC_OFFSETS_OK && retry != KC_OFFSETS_FAIL)
        out->verdict = retry;
    else if (out->n_failed || retry == KC_OFFSETS_FAIL)
        out->verdict = KC_OFFSETS_FAIL;
    else
        out->verdict = KC_OFFSETS_OK;
}

void kc_retry_start(kc_retry_t *r, int64_t now_ms, int64_t timeout_ms, int64_t backoff_ms,
                    int64_t backoff_max_ms, uint64_t seed)
{
    memset(r, 0, sizeof *r);
    r->deadline_ms = now_ms + (timeout_ms > 0 ? timeout_ms : 0);
    r->backoff_ms = backoff_ms > 0 ? backoff_ms : 1;
    r->backoff_max_ms = backoff_max_ms >= r->backoff_ms ? backoff_max_ms : r->backoff_ms;
    r->next_backoff_ms = r->backoff_ms;
    r->rng = seed ? seed : 0x9e3779b97f4a7c15ULL; /* xorshift must not start at 0 */
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

kc_err_t kc_retry_next(kc_retry_t *r, int64_t now_ms, int64_t *at_ms, kc_error_t *err)
{
    int64_t b = r->next_backoff_ms;
    /* ±20% jitter, so clients that lost the same coordinator do not come back in lockstep. */
    int64_t span = b / 5;
    if (span > 0)
        b += (int64_t)(xorshift(&r->rng) % (uint64_t)(2 * span + 1)) - span;
    if (now_ms + b >= r->deadline_ms)
        return kc_fail(err, KC_ERR_TIMEOUT, "gave up after %u attempts: deadline reached",
                       r->attempts + 1);
    r->attempts++;
    *at_ms = now_ms + b;
    r->next_backoff_ms =
        r->next_backoff_ms * 2 > r->backoff_max_ms ? r->backoff_max_ms : r->next_backoff_ms * 2;
    return KC_OK;
}
