/*
 * kconsume CLI: the start-up assignment (manual mode) and the -e / -o e@MS end checks: each
 * partition's end mark (its high watermark when assigned, or its first record at or past e@MS)
 * and whether every assigned partition reached it.
 *
 * Owner: the main thread (every function here blocks on the consumer: never called from a
 * callback). Part entries are shared with the workers through their atomics (app.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

int kc_app_ends_matter(void)
{
    return kc_app.a.exit_at_end || kc_app.a.stop_ts >= 0;
}

/* The offset kc_assign starts at: -o -N's needs the partition's watermarks (low, high), s@MS's
 * the offset kc_offsets_for_times gave for MS (at_time; -1 none that late: the end). */
static int64_t start_offset(int64_t low, int64_t high, int64_t at_time)
{
    switch (kc_app.a.start) {
    case KC_CLI_START_BEGINNING:
        return KC_OFFSET_BEGINNING;
    case KC_CLI_START_OFFSET:
        return kc_app.a.start_value;
    case KC_CLI_START_STORED:
        return KC_OFFSET_STORED;
    case KC_CLI_START_TAIL:
        return high - low > kc_app.a.start_value ? high - kc_app.a.start_value : low;
    case KC_CLI_START_TIMESTAMP:
        return at_time >= 0 ? at_time : KC_OFFSET_END;
    default:
        return KC_OFFSET_END;
    }
}

/* Where delivery of a partition starts when that is known before anything is delivered, else
 * -1 (a committed offset; a timestamp whose offset was not asked: at_time -2). */
static int64_t start_position(int64_t low, int64_t high, int64_t at_time)
{
    switch (kc_app.a.start) {
    case KC_CLI_START_BEGINNING:
        return low;
    case KC_CLI_START_END:
        return high;
    case KC_CLI_START_DEFAULT:
        return kc_app.a.group ? -1 : high;
    case KC_CLI_START_OFFSET:
    case KC_CLI_START_TAIL:
        return start_offset(low, high, at_time);
    case KC_CLI_START_TIMESTAMP:
        return at_time >= 0 ? at_time : at_time == -1 ? high : -1;
    default:
        return -1;
    }
}

/* The watermarks of n partitions in one question (each leader asked once for all it leads):
 * low[i] and high[i], or -1 both where there is no answer. 0 when every one was answered. */
static int watermarks(part_t *const *ps, size_t n, int64_t *low, int64_t *high)
{
    kc_watermarks_t *q = calloc(n ? n : 1, sizeof *q);
    kc_error_t e;
    kc_err_t rc = KC_ERR_NOMEM;
    for (size_t i = 0; q && i < n; i++)
        q[i] = (kc_watermarks_t){.topic = ps[i]->topic,
                                 .partition = ps[i]->partition,
                                 .err = KC_ERR_TIMEOUT}; /* no answer until one says otherwise */
    if (q)
        rc = kc_query_watermarks_list(kc_app.c, q, n, META_TIMEOUT_MS, &e);
    else
        snprintf(e.msg, sizeof e.msg, "out of memory");
    if (rc != KC_OK && !kc_app.a.quiet)
        fprintf(stderr, "kconsume: watermarks: %s (asking again)\n", e.msg);
    for (size_t i = 0; i < n; i++) {
        int ok = q && q[i].err == KC_OK;
        low[i] = ok ? q[i].low : -1;
        high[i] = ok ? q[i].high : -1;
    }
    free(q);
    return rc == KC_OK ? 0 : -1;
}

/* The offsets for time `ms` of n partitions in one question (kc_offsets_for_times): off[i], -1
 * where no record is that late, -2 where there is no answer. KC_OK, or the call's error (`e`). */
static kc_err_t offsets_at(part_t *const *ps, size_t n, int64_t ms, int64_t *off, kc_error_t *e)
{
    kc_offset_time_t *q = calloc(n ? n : 1, sizeof *q);
    if (!q) {
        for (size_t i = 0; i < n; i++)
            off[i] = -2;
        *e = (kc_error_t){.code = KC_ERR_NOMEM, .msg = "out of memory"};
        return KC_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        q[i] = (kc_offset_time_t){.topic = ps[i]->topic,
                                  .partition = ps[i]->partition,
                                  .timestamp = ms,
                                  .err = KC_ERR_TIMEOUT}; /* as in watermarks() */
    kc_err_t rc = kc_offsets_for_times(kc_app.c, q, n, META_TIMEOUT_MS, e);
    for (size_t i = 0; i < n; i++)
        off[i] = q[i].err == KC_OK ? q[i].offset : -2;
    free(q);
    return rc;
}

/* ---- -e and -o e@MS: the main thread's end checks -------------------------------------------- */

/* Sets p's end mark from its watermarks (blocking: main thread only, never a callback): the
 * high watermark under -e, the first offset whose timestamp is >= e@MS (`stop`, from
 * offsets_at), whichever comes first; INT64_MAX when neither applies yet (e@MS later than every
 * record, no -e: the partition then ends at its first record that late, checked per record). A
 * partition with nothing below its end, or whose start is at or past it, is done at once: no
 * callback will ever come for it. */
static void learn_end_at(part_t *p, int64_t low, int64_t high, int64_t at_time, int64_t stop)
{
    int64_t end = kc_app.a.exit_at_end ? high : INT64_MAX;
    if (stop >= 0 && stop < end)
        end = stop;
    atomic_store(&p->end, end);
    int64_t sp = start_position(low, high, at_time);
    if (low >= end || (sp >= 0 && sp >= end))
        atomic_store(&p->done, 1);
}

/* The end marks of n partitions: one watermarks question, and with e@MS one offsets-for-times
 * question, for all of them. low/high: their watermarks when the caller has them (else NULL:
 * asked here); at_time: the start offsets of s@MS, or NULL. A partition whose answers did not
 * come keeps end -1 and is asked again by all_at_end. */
static void learn_ends(part_t *const *ps, size_t n, const int64_t *low, const int64_t *high,
                       const int64_t *at_time)
{
    int64_t *lo = calloc(n ? n : 1, sizeof *lo), *hi = calloc(n ? n : 1, sizeof *hi);
    int64_t *stop = calloc(n ? n : 1, sizeof *stop);
    if (!lo || !hi || !stop)
        goto out; /* out of memory: all_at_end asks again */
    if (low) {
        memcpy(lo, low, n * sizeof *lo);
        memcpy(hi, high, n * sizeof *hi);
    } else {
        (void)watermarks(ps, n, lo, hi);
    }
    for (size_t i = 0; i < n; i++)
        stop[i] = -1;
    if (kc_app.a.stop_ts >= 0) {
        kc_error_t e;
        if (offsets_at(ps, n, kc_app.a.stop_ts, stop, &e) != KC_OK && !kc_app.a.quiet)
            fprintf(stderr, "kconsume: offsets for e@%" PRId64 ": %s (asking again)\n",
                    kc_app.a.stop_ts, e.msg);
    }
    for (size_t i = 0; i < n; i++)
        if (lo[i] >= 0 && stop[i] != -2)
            learn_end_at(ps[i], lo[i], hi[i], at_time ? at_time[i] : -2, stop[i]);
out:
    free(lo);
    free(hi);
    free(stop);
}

/* Manual assignment: every partition of each -t (or -p's). With -e the end marks are learned
 * before the assignment, so no record past them can be printed before they are known. The
 * cluster questions go in one list each (watermarks, offsets for s@MS and e@MS), so that
 * thousands of partitions start in a few round trips, not one per partition. */
int kc_app_assign_all(void)
{
    part_t **ps = NULL;
    size_t n = 0;
    kc_error_t e;
    int code = 0;
    for (size_t t = 0; t < kc_app.a.n_topics; t++) {
        int32_t count = 1, first = kc_app.a.partition;
        if (first < 0) {
            first = 0;
            kc_err_t rc =
                kc_topic_partitions(kc_app.c, kc_app.a.topics[t], &count, META_TIMEOUT_MS, &e);
            if (rc != KC_OK) {
                fprintf(stderr, "kconsume: topic '%s': %s\n", kc_app.a.topics[t], e.msg);
                free(ps);
                return kc_app_exit_for(rc);
            }
        }
        part_t **more = realloc(ps, (n + (size_t)count) * sizeof *ps);
        if (!more) {
            free(ps);
            return KC_CLI_EXIT_RUNTIME;
        }
        ps = more;
        for (int32_t i = 0; i < count; i++) {
            part_t *p = kc_app_part_get(kc_app.a.topics[t], first + i);
            if (!p) {
                free(ps);
                return KC_CLI_EXIT_RUNTIME;
            }
            ps[n++] = p;
        }
    }
    int64_t *low = calloc(n ? n : 1, sizeof *low), *high = calloc(n ? n : 1, sizeof *high);
    int64_t *at_time = calloc(n ? n : 1, sizeof *at_time);
    kc_topic_partition_t *tps = calloc(n ? n : 1, sizeof *tps);
    if (!low || !high || !at_time || !tps) {
        code = KC_CLI_EXIT_RUNTIME;
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        low[i] = high[i] = -1, at_time[i] = -2;
    if (kc_app.a.start == KC_CLI_START_TAIL || kc_app_ends_matter()) {
        /* -o -N cannot start without the end; -e asks again for what is missing (all_at_end) */
        if (watermarks(ps, n, low, high) && kc_app.a.start == KC_CLI_START_TAIL) {
            code = KC_CLI_EXIT_UNREACHABLE;
            goto out;
        }
    }
    if (kc_app.a.start == KC_CLI_START_TIMESTAMP) {
        kc_err_t rc = offsets_at(ps, n, kc_app.a.start_value, at_time, &e);
        if (rc != KC_OK) {
            fprintf(stderr, "kconsume: offsets for s@%" PRId64 ": %s\n", kc_app.a.start_value,
                    e.msg);
            code = kc_app_exit_for(rc);
            goto out;
        }
    }
    if (kc_app_ends_matter())
        learn_ends(ps, n, low, high, at_time);
    for (size_t i = 0; i < n; i++) {
        atomic_store(&ps[i]->assigned, 1);
        tps[i] = (kc_topic_partition_t){ps[i]->topic, ps[i]->partition,
                                        start_offset(low[i], high[i], at_time[i])};
    }
    if (kc_assign(kc_app.c, tps, n, &e) != KC_OK) {
        fprintf(stderr, "kconsume: assign: %s\n", e.msg);
        code = KC_CLI_EXIT_RUNTIME;
    }
out:
    free(ps);
    free(low);
    free(high);
    free(at_time);
    free(tps);
    return code;
}

/* -G -e: the end marks of every partition of the subscribed topics, learned before joining, in
 * one question for all of them. Later, with fetches in flight, a watermark question queues
 * behind the long-poll Fetch on the leader's connection (a broker answers one request per
 * connection at a time, so up to fetch.max.wait.ms each). "The end" is the high watermark at
 * start anyway. A topic that cannot be asked now is left to all_at_end. */
int kc_app_learn_group_ends(void)
{
    kc_error_t e;
    part_t **ps = NULL;
    size_t n = 0;
    for (size_t t = 0; t < kc_app.a.n_topics; t++) {
        int32_t count = 0;
        kc_err_t rc =
            kc_topic_partitions(kc_app.c, kc_app.a.topics[t], &count, META_TIMEOUT_MS, &e);
        int code = kc_app_exit_for(rc);
        if (code == KC_CLI_EXIT_NOT_FOUND || code == KC_CLI_EXIT_UNREACHABLE ||
            code == KC_CLI_EXIT_AUTH) {
            fprintf(stderr, "kconsume: topic '%s': %s\n", kc_app.a.topics[t], e.msg);
            free(ps);
            return code;
        }
        if (rc != KC_OK || count <= 0)
            continue;
        part_t **more = realloc(ps, (n + (size_t)count) * sizeof *ps);
        if (!more)
            break; /* out of memory: all_at_end asks for the rest */
        ps = more;
        for (int32_t i = 0; i < count; i++)
            if ((ps[n] = kc_app_part_get(kc_app.a.topics[t], i)) != NULL)
                n++;
    }
    learn_ends(ps, n, NULL, NULL, NULL);
    free(ps);
    return 0;
}

/* -G: partitions handed to this member whose delivery position is still unknown (nothing
 * delivered yet, and no committed offset to start from: kc_position reports a start read from
 * the group's committed offset, but one resolved by auto.offset.reset only after a delivery). A
 * partition handed over already at its end never delivers a record, so its committed offset is
 * asked instead (one batched, blocking question at most once a second, main thread). Committed at
 * or past the end: nothing below the end is left for anyone, and nothing past it is printed. */
static void committed_ends(part_t **ps, size_t n)
{
    static uint64_t last;
    kc_topic_partition_t tps[256];
    if (n == 0 || kc_app_now_ns() - last < 1000000000u)
        return;
    last = kc_app_now_ns();
    if (n > sizeof tps / sizeof *tps)
        n = sizeof tps / sizeof *tps;
    for (size_t i = 0; i < n; i++)
        tps[i] = (kc_topic_partition_t){ps[i]->topic, ps[i]->partition, KC_OFFSET_INVALID};
    if (kc_committed(kc_app.c, tps, n, META_TIMEOUT_MS, NULL) != KC_OK)
        return; /* asked again in a second */
    for (size_t i = 0; i < n; i++)
        if (tps[i].offset >= 0 && tps[i].offset >= atomic_load(&ps[i]->end))
            atomic_store(&ps[i]->done, 1);
}

/* Returns 1 when every partition the consumer holds is done and it holds at least one. Asks the
 * watermarks of newly assigned partitions (blocking, so here on the main thread and never in a
 * callback). What it holds is the consumer's own list (kc_assignment), not the on_assign flags:
 * a group hands a member several partitions in one step, but their on_assign calls run one after
 * another (and on several workers), so between two of them the flags name only part of the
 * step, and a part already at its end would end the run with the rest never read by anyone. */
int kc_app_all_at_end(void)
{
    kc_topic_partition_t *held = NULL;
    size_t n = 0;
    if (kc_assignment(kc_app.c, &held, &n, NULL) != KC_OK)
        return 0; /* asked again on the next tick */
    part_t **ps = calloc(n ? n : 1, sizeof *ps), **no_end = calloc(n ? n : 1, sizeof *no_end);
    size_t n_no_end = 0, done = 0, n_unknown = 0;
    part_t *unknown[256];
    for (size_t i = 0; ps && no_end && i < n; i++) {
        if (!(ps[i] = kc_app_part_get(held[i].topic, held[i].partition)))
            break; /* out of memory: not done; the next tick asks again */
        if (!atomic_load(&ps[i]->done) && atomic_load(&ps[i]->end) < 0)
            no_end[n_no_end++] = ps[i];
    }
    free(held);
    if (!ps || !no_end || (n && !ps[n - 1])) {
        free(ps);
        free(no_end);
        return 0;
    }
    if (n_no_end)
        learn_ends(no_end, n_no_end, NULL, NULL, NULL); /* one question for all of them */
    /* The delivery positions of those not done but with an end, in one question (a partition
     * whose last offsets are control records or compacted away never delivers end - 1, so its
     * worker cannot mark it). no_end's room is reused for them. */
    part_t **open = no_end;
    size_t n_open = 0;
    for (size_t i = 0; i < n; i++) {
        if (atomic_load(&ps[i]->done))
            done++;
        else if (atomic_load(&ps[i]->end) >= 0)
            open[n_open++] = ps[i];
    }
    kc_topic_partition_t *pos = n_open ? calloc(n_open, sizeof *pos) : NULL;
    for (size_t i = 0; pos && i < n_open; i++)
        pos[i] = (kc_topic_partition_t){open[i]->topic, open[i]->partition, KC_OFFSET_INVALID};
    /* Not assigned any more (taken away since kc_assignment): KC_OFFSET_INVALID, as unknown */
    if (pos)
        (void)kc_position_list(kc_app.c, pos, n_open, NULL);
    for (size_t i = 0; pos && i < n_open; i++) {
        part_t *p = open[i];
        if (pos[i].offset >= 0 && pos[i].offset >= atomic_load(&p->end))
            atomic_store(&p->done, 1);
        else if (kc_app.a.group && pos[i].offset < 0 &&
                 n_unknown < sizeof unknown / sizeof *unknown)
            unknown[n_unknown++] = p;
        done += (size_t)atomic_load(&p->done);
    }
    free(pos); /* out of memory: not done; the next tick asks again */
    free(ps);
    free(no_end);
    if (done < n)
        committed_ends(unknown, n_unknown);
    return n > 0 && done == n;
}
