/*
 * Offsets: the pure parts of OffsetCommit / OffsetFetch — who commits (identity), what a result
 * means, and how long to keep asking. The coordinator logic (engine/coordinator.c) drives these;
 * nothing here does I/O or reads a clock.
 *
 * Identity, and why it matters:
 * - A consumer without membership commits in the ANONYMOUS form: member id "" and generation
 *   (classic) / member epoch (KIP-848) -1, no instance id. The broker honours it only while the
 *   group has no members, so a detached client cannot overwrite a live group's positions. A
 *   made-up member id is rejected with UNKNOWN_MEMBER_ID, which reads like a membership bug in a
 *   client that has none — so this module refuses to build one.
 * - A member commits under its own identity: member id, current generation / member epoch, and
 *   group.instance.id when static.
 *
 * Results: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE and COORDINATOR_LOAD_IN_PROGRESS arrive
 * inside a *successful* response (top level or per partition). Nothing below the decode would
 * retry them, so the verdict is "invalidate the cached coordinator and ask again", bounded by a
 * deadline (kc_retry_t) rather than an attempt count: the condition is "ask again in a moment",
 * and a coordinator that is loading may take seconds, not N tries.
 *
 * Owner: network thread.
 */
#ifndef KC_ENGINE_OFFSETS_H
#define KC_ENGINE_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define KC_GENERATION_NONE (-1) /* anonymous: generation_id / member_epoch on the wire */

typedef struct kc_commit_identity {
    const char *group_id;
    const char *member_id;         /* "" when anonymous; never invented */
    int32_t generation_or_epoch;   /* -1 when anonymous */
    const char *group_instance_id; /* NULL unless a static member */
} kc_commit_identity_t;

kc_err_t kc_offsets_identity_anonymous(kc_commit_identity_t *who, const char *group_id,
                                       kc_error_t *err);

/* A member's identity: member id non-empty, generation/epoch >= 0, instance id optional. */
kc_err_t kc_offsets_identity_member(kc_commit_identity_t *who, const char *group_id,
                                    const char *member_id, int32_t generation_or_epoch,
                                    const char *group_instance_id, kc_error_t *err);

/* One partition to commit. Strings are borrowed: they must outlive the request's encoding. */
typedef struct kc_commit_entry {
    const char *topic;
    uint8_t topic_id[16]; /* OffsetCommit v10+ names topics by id; zero when unknown */
    int32_t partition;
    int64_t offset;       /* the next offset to consume (processed + 1) */
    int32_t leader_epoch; /* of the last processed record, -1 unknown */
    const char *metadata; /* NULL = none */
} kc_commit_entry_t;

/* The OffsetCommit content, codec-neutral. */
typedef struct kc_commit_req {
    kc_commit_identity_t who;
    const kc_commit_entry_t *entries;
    size_t n_entries;
} kc_commit_req_t;

/* Checks the identity is one of the two legal forms (never a member id with epoch -1, never an
 * epoch without a member id) and the entries are sane, and fills `out`. */
kc_err_t kc_offsets_build_commit(kc_commit_req_t *out, const kc_commit_identity_t *who,
                                 const kc_commit_entry_t *entries, size_t n, kc_error_t *err);

typedef enum kc_offsets_verdict {
    KC_OFFSETS_OK = 0,
    KC_OFFSETS_REDISCOVER,        /* coordinator moved/unavailable/loading: FindCoordinator,
                                     then ask again before the deadline */
    KC_OFFSETS_RETRY_FRESH_EPOCH, /* STALE_MEMBER_EPOCH: retry with the member's new epoch */
    KC_OFFSETS_RETRY,             /* transient (UNSTABLE_OFFSET_COMMIT, timeouts): ask again */
    KC_OFFSETS_FAIL,              /* report to the caller with the Kafka error */
} kc_offsets_verdict_t;

/* Pure: one error code (top level or per partition) → verdict. */
kc_offsets_verdict_t kc_offsets_classify(int16_t kafka_code);

typedef struct kc_offsets_result {
    kc_offsets_verdict_t verdict; /* what to do with the request as a whole: the most urgent
                                     retry verdict if any partition needs one, else FAIL if any
                                     partition failed, else OK */
    int16_t first_error;          /* first non-zero code (top level first), 0 if none */
    size_t n_failed;              /* partitions to report as failed */
    size_t n_retry;               /* partitions to ask again for */
} kc_offsets_result_t;

/* Classifies a whole OffsetCommit/OffsetFetch response: a non-zero top-level code applies to
 * every partition. `part_verdicts` (may be NULL) receives each partition's verdict, so the
 * caller retries the retriable ones and reports the failed ones — both can happen at once. */
void kc_offsets_classify_response(int16_t top_code, const int16_t *part_codes, size_t n,
                                  kc_offsets_verdict_t *part_verdicts, kc_offsets_result_t *out);

/* A deadline-bounded retry schedule with exponential backoff and ±20% jitter (Java's
 * retry.backoff.ms / retry.backoff.max.ms shape). Owner: whoever owns the request (network
 * thread). Attempts are counted for log lines only; the deadline alone decides. */
typedef struct kc_retry {
    int64_t deadline_ms;
    int64_t backoff_ms;
    int64_t backoff_max_ms;
    int64_t next_backoff_ms;
    uint32_t attempts;
    uint64_t rng; /* xorshift state: deterministic for a given seed */
} kc_retry_t;

void kc_retry_start(kc_retry_t *r, int64_t now_ms, int64_t timeout_ms, int64_t backoff_ms,
                    int64_t backoff_max_ms, uint64_t seed);

/* When to ask again: *at_ms = now + backoff. KC_ERR_TIMEOUT (no retry) when that would be at or
 * past the deadline — no attempt is scheduled that could not finish before it. */
kc_err_t kc_retry_next(kc_retry_t *r, int64_t now_ms, int64_t *at_ms, kc_error_t *err);

/* Time left for one attempt's own timeout (0 when past the deadline). */
static inline int64_t kc_retry_remaining(const kc_retry_t *r, int64_t now_ms)
{
    return r->deadline_ms > now_ms ? r->deadline_ms - now_ms : 0;
}

#endif
