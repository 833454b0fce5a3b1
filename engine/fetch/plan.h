/*
 * The fetch plan: which broker fetches which partitions, and when each broker's next Fetch may
 * go. Pure: the network thread passes partitions and the time in, and gets back requests to
 * send; it reports each request's end (response or failure) back.
 *
 * - The active assignment is grouped by fetch target (the leader, or the KIP-392 preferred read
 *   replica while client.rack is set and the choice has not expired), so each broker gets ONE
 *   Fetch per round carrying all its partitions: 12 partitions on 3 brokers is 3 requests.
 * - One fetch in flight per broker; a broker's next request does not wait for other brokers.
 * - A broker with nothing wanted whose session still holds partitions gets one more request
 *   (its forgotten list), then its fetcher is dropped.
 * - throttle_time_ms (KIP-219) holds that broker's next request back; a failed request or a
 *   top-level error backs off that broker only. Per-partition errors are engine/fetch/partition.h.
 *
 * How the network thread drives it (one loop iteration):
 *   kc_fetch_plan_compute(plan, parts, n, now)          after any position/state/metadata change
 *     (or, inside a pass of the caller's own: kc_fetch_plan_begin, then kc_fetch_plan_add for
 *     each partition whose route is not busy)
 *   n = kc_fetch_plan_ready(plan, now, sends, max, &wake)
 *   for each send: kc_fetch_codec_request(...) → encode → write to send.fetcher->broker_id
 *   on a decoded response:
 *     o = kc_fetch_plan_on_response(plan, broker, &kc_fetch_codec_session_resp(m), throttle, now)
 *     if o is OK or FALLBACK: for each kc_fetch_codec_next(&it, &r):
 *         p = the partition for r.tp (skip if unassigned)
 *         r.error_code ? kc_partition_on_fetch_error(p, ...)   (act on the event)
 *         : held = kc_session_held(&fetcher->session, &r.tp);
 *           if held && kc_fetch_plan_accepts(p, broker, held->fetch_offset, conf, now):
 *               hand the records off; position = last offset in the handed-off batch headers + 1
 *           kc_partition_on_fetch_ok(p, r.high_watermark, ...)
 *     RESET: nothing surfaced, just fetch again; FAILED: report, the broker backs off.
 *   on a transport failure or timeout: kc_fetch_plan_on_failure(plan, broker, now)
 *   at close: kc_fetch_plan_close(plan, sends, max), send them, then kc_fetch_plan_free.
 *
 * Owner: network thread.
 */
#ifndef KC_ENGINE_FETCH_PLAN_H
#define KC_ENGINE_FETCH_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fetch/partition.h"
#include "fetch/session.h"

typedef struct kc_fetch_plan_conf {
    kc_partition_conf_t part;
    int64_t sessionless_backoff_ms; /* how long a broker without sessions stays sessionless */
} kc_fetch_plan_conf_t;

/* One broker's fetcher. Owner: network thread. Address stable while it lives. */
typedef struct kc_fetcher {
    int32_t broker_id;
    kc_session_t session;
    uint8_t in_flight;
    int64_t throttle_until_ms; /* KIP-219: no request before this */
    int64_t backoff_until_ms;  /* after a failed request or a top-level error */
    int32_t failures;          /* consecutive, for the broker backoff */
    kc_session_part_t *wanted; /* rebuilt by kc_fetch_plan_compute */
    size_t n_wanted, cap_wanted;
    /* The pass that built `wanted` left out a partition routed here that only time or an answer
     * brings back (a backoff, a hold, offsets awaited), or routed one here through a read replica
     * (a route that lapses with time): see kc_fetch_plan_settled. */
    uint8_t unsettled;
    /* The session holds exactly `wanted`: the request built from it was answered and committed,
     * and no pass rebuilt it since (a pass clears it), so the next request repeats it. */
    uint8_t same;
    uint64_t gen; /* the plan's gen when `wanted` was built */
} kc_fetcher_t;

typedef struct kc_fetch_plan_stats {
    uint64_t fetchers_created;
    uint64_t fetchers_dropped;
} kc_fetch_plan_stats_t;

/* Owner: network thread. */
typedef struct kc_fetch_plan {
    kc_fetch_plan_conf_t conf;
    kc_fetcher_t **f; /* pointers, so a fetcher's address survives growth */
    size_t n, cap;
    kc_fetch_plan_stats_t stats;
    /* During a pass: brokers a left-out partition made unsettled before they had a fetcher
     * (one created later in the pass starts unsettled); past the array, every one created. */
    int32_t unsettled_new[8];
    uint8_t n_unsettled_new, unsettled_new_all;
    uint64_t gen; /* kc_fetch_plan_changed's count */
} kc_fetch_plan_t;

/* A request ready to go: encode `req` for `fetcher->broker_id` (engine/fetch/codec.h). */
typedef struct kc_fetch_send {
    kc_fetcher_t *fetcher;
    kc_session_req_t req;
} kc_fetch_send_t;

void kc_fetch_plan_init(kc_fetch_plan_t *plan, const kc_fetch_plan_conf_t *conf);
void kc_fetch_plan_free(kc_fetch_plan_t *plan);

/* Rebuilds the wanted set of every broker with no Fetch in flight from the partitions (fetch
 * target, position, leader epoch, max bytes). Creates fetchers for new targets; fetchers no
 * partition targets keep an empty wanted set until they drain. A broker with a Fetch in flight
 * keeps its set, and partitions routed to it are passed over (no fetch target is asked, so a
 * finished backoff stays BACKOFF): nothing for them can be sent before that answer, and the
 * answer is followed by a compute that includes them. Call whenever positions, metadata or
 * states change. */
kc_err_t kc_fetch_plan_compute(kc_fetch_plan_t *plan, kc_partition_t *parts, size_t n_parts,
                               int64_t now_ms, kc_error_t *err);
/* kc_fetch_plan_compute in pieces, for a caller that passes over its partitions anyway (the
 * engine's drive: one pass instead of one of its own and one here). kc_fetch_plan_begin empties
 * the wanted set of every broker with no Fetch in flight; then, for each partition,
 * kc_fetch_plan_passes_over says whether its route has a Fetch in flight (the partition stays
 * where it is), and for one it does not pass over kc_fetch_plan_add adds it to its fetch
 * target's set. The result is kc_fetch_plan_compute's over the same partitions in the same
 * order. */
void kc_fetch_plan_begin(kc_fetch_plan_t *plan);
bool kc_fetch_plan_passes_over(kc_fetch_plan_t *plan, kc_partition_t *p, int64_t now_ms);
kc_err_t kc_fetch_plan_add(kc_fetch_plan_t *plan, kc_partition_t *p, int64_t now_ms,
                           kc_error_t *err);

/* The requests that may go now: at most one per broker, none to a broker in flight, throttled
 * or backing off. Drops fetchers with nothing left to send. Fills up to `max` entries and
 * returns how many; *next_wake_ms (if not NULL) gets the earliest time a held-back broker may
 * send, or INT64_MAX. */
size_t kc_fetch_plan_ready(kc_fetch_plan_t *plan, int64_t now_ms, kc_fetch_send_t *out, size_t max,
                           int64_t *next_wake_ms);

/* The Fetch to `broker_id` was answered: top-level error and session id, throttle_time_ms. */
kc_session_outcome_t kc_fetch_plan_on_response(kc_fetch_plan_t *plan, int32_t broker_id,
                                               const kc_session_resp_t *resp, int32_t throttle_ms,
                                               int64_t now_ms);

/* The Fetch to `broker_id` failed (transport, timeout, undecodable). */
void kc_fetch_plan_on_failure(kc_fetch_plan_t *plan, int32_t broker_id, int64_t now_ms);

/* Consumer close: a close request (S, -1) for every open session not in flight. */
size_t kc_fetch_plan_close(kc_fetch_plan_t *plan, kc_fetch_send_t *out, size_t max);

/* Whether records for `p` in a response from `broker_id` may be delivered. A response can be
 * stale by the time it is read: the partition moved to another broker, was paused, reset or
 * seeked while the request was in flight. Delivering then would duplicate or skip records, so
 * the records are dropped (the next request asks again from the right place).
 * `requested_offset` is the fetch offset the broker used for it: kc_session_held() after the
 * response committed, or the entry of a sessionless request. */
int kc_fetch_plan_accepts(kc_partition_t *p, int32_t broker_id, int64_t requested_offset,
                          const kc_fetch_plan_conf_t *conf, int64_t now_ms);

kc_fetcher_t *kc_fetch_plan_find(kc_fetch_plan_t *plan, int32_t broker_id);

/* Whether broker_id has a Fetch in flight (KC_NO_BROKER: false). */
bool kc_fetch_plan_busy(const kc_fetch_plan_t *plan, int32_t broker_id);

/* Whether broker_id's wanted set, as the last pass over the partitions built it, is still the
 * one that pass would build now, provided nothing happened since but the answer to the request
 * built from it, and that answer named no partition (an incremental session's answer where
 * nothing changed): every partition routed there was in it or was left out only for something
 * whose end the caller hears of (a pause, the runtime's refusal: the caller bumps the plan with
 * kc_fetch_plan_changed then), none went there through a read replica, no replica's lapse moved
 * one there while the set was out, and no change came since (kc_fetch_plan_changed). A caller
 * that knows no event came may then send the same set again (kc_fetch_plan_ready) without a
 * pass over every partition, which is an idle consumer's whole cost per empty long poll at
 * thousands of partitions. False for a broker with a Fetch in flight or without a fetcher. */
bool kc_fetch_plan_settled(const kc_fetch_plan_t *plan, int32_t broker_id);
/* Partitions changed since the last pass (added, removed, moved to another broker, their fields
 * or fetchability): the sets of brokers with a Fetch in flight, which the next pass keeps, no
 * longer count as settled; the pass after their answers rebuilds them. */
void kc_fetch_plan_changed(kc_fetch_plan_t *plan);

#endif
