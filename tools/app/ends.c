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

static int watermarks(part_t *p, int64_t *low, int64_t *high)
{
    kc_error_t e;
    if (kc_query_watermarks(kc_app.c, p->topic, p->partition, low, high, META_TIMEOUT_MS, &e) ==
        KC_OK)
        return 0;
    if (!kc_app.a.quiet)
        fprintf(stderr, "kconsume: %s[%d]: watermarks: %s (asking again)\n", p->topic, p->partition,
                e.msg);
    return -1;
}

/* s@MS in manual assignment: the start offset, asked before kc_assign, so that the start is
 * known (a start past the end under -e is done at once, as for -o OFFSET). *off is -1 when no
 * record is that late (the start is then the end, as kc_seek by timestamp does). 0, or the exit
 * code (reported). */
static int offset_at_time(part_t *p, int64_t ms, int64_t *off)
{
    kc_offset_time_t q = {.topic = p->topic, .partition = p->partition, .timestamp = ms};
    kc_error_t e;
    kc_err_t rc = kc_offsets_for_times(kc_app.c, &q, 1, META_TIMEOUT_MS, &e);
    if (rc != KC_OK) {
        fprintf(stderr, "kconsume: %s[%d]: offset for s@%" PRId64 ": %s\n", p->topic, p->partition,
                ms, e.msg);
        return kc_app_exit_for(rc);
    }
    *off = q.offset;
    return 0;
}

/* ---- -e and -o e@MS: the main thread's end checks -------------------------------------------- */

/* Sets p's end mark from its watermarks (blocking: main thread only, never a callback): the
 * high watermark under -e, the first offset whose timestamp is >= e@MS (kc_offsets_for_times),
 * whichever comes first; INT64_MAX when neither applies yet (e@MS later than every record, no
 * -e: the partition then ends at its first record that late, checked per record). A partition
 * with nothing below its end, or whose start is at or past it, is done at once: no callback will
 * ever come for it. 0 ok, -1 not known yet (asked again later). */
static int learn_end_at(part_t *p, int64_t low, int64_t high, int64_t at_time)
{
    int64_t end = kc_app.a.exit_at_end ? high : INT64_MAX;
    if (kc_app.a.stop_ts >= 0) {
        kc_offset_time_t q = {
            .topic = p->topic, .partition = p->partition, .timestamp = kc_app.a.stop_ts};
        kc_error_t e;
        if (kc_offsets_for_times(kc_app.c, &q, 1, META_TIMEOUT_MS, &e) != KC_OK) {
            if (!kc_app.a.quiet)
                fprintf(stderr, "kconsume: %s[%d]: offset for e@%" PRId64 ": %s (asking again)\n",
                        p->topic, p->partition, kc_app.a.stop_ts, e.msg);
            return -1;
        }
        if (q.offset >= 0 && q.offset < end)
            end = q.offset;
    }
    atomic_store(&p->end, end);
    int64_t sp = start_position(low, high, at_time);
    if (low >= end || (sp >= 0 && sp >= end))
        atomic_store(&p->done, 1);
    return 0;
}

static int learn_end(part_t *p)
{
    int64_t low, high;
    return watermarks(p, &low, &high) ? -1 : learn_end_at(p, low, high, -2);
}

/* Manual assignment: every partition of each -t (or -p's). With -e the end marks are learned
 * before the assignment, so no record past them can be printed before they are known. */
int kc_app_assign_all(void)
{
    kc_topic_partition_t *tps = NULL;
    size_t n = 0;
    kc_error_t e;
    for (size_t t = 0; t < kc_app.a.n_topics; t++) {
        int32_t count = 1, first = kc_app.a.partition;
        if (first < 0) {
            first = 0;
            kc_err_t rc =
                kc_topic_partitions(kc_app.c, kc_app.a.topics[t], &count, META_TIMEOUT_MS, &e);
            if (rc != KC_OK) {
                fprintf(stderr, "kconsume: topic '%s': %s\n", kc_app.a.topics[t], e.msg);
                free(tps);
                return kc_app_exit_for(rc);
            }
        }
        kc_topic_partition_t *more = realloc(tps, (n + (size_t)count) * sizeof *tps);
        if (!more) {
            free(tps);
            return KC_CLI_EXIT_RUNTIME;
        }
        tps = more;
        for (int32_t i = 0; i < count; i++) {
            part_t *p = kc_app_part_get(kc_app.a.topics[t], first + i);
            if (!p) {
                free(tps);
                return KC_CLI_EXIT_RUNTIME;
            }
            atomic_store(&p->assigned, 1);
            int64_t low = -1, high = -1, at_time = -2;
            if (kc_app.a.start == KC_CLI_START_TAIL && watermarks(p, &low, &high)) {
                free(tps);
                return KC_CLI_EXIT_UNREACHABLE; /* -o -N cannot start without the end */
            }
            if (kc_app.a.start == KC_CLI_START_TIMESTAMP) {
                int code = offset_at_time(p, kc_app.a.start_value, &at_time);
                if (code) {
                    free(tps);
                    return code;
                }
            }
            if (kc_app_ends_matter()) /* on failure, all_at_end asks again */
                (void)(watermarks(p, &low, &high) == 0 ? learn_end_at(p, low, high, at_time) : -1);
            tps[n++] = (kc_topic_partition_t){kc_app.a.topics[t], first + i,
                                              start_offset(low, high, at_time)};
        }
    }
    kc_err_t rc = kc_assign(kc_app.c, tps, n, &e);
    free(tps);
    if (rc != KC_OK) {
        fprintf(stderr, "kconsume: assign: %s\n", e.msg);
        return KC_CLI_EXIT_RUNTIME;
    }
    return 0;
}

/* -G -e: the end marks of every partition of the subscribed topics, learned before joining.
 * Later, with fetches in flight, a watermark question queues behind the long-poll Fetch on the
 * leader's connection (a broker answers one request per connection at a time, so up to
 * fetch.max.wait.ms each): asking per partition after the assignment took ~1 s a partition.
 * "The end" is the high watermark at start anyway. A topic that cannot be asked now is left to
 * all_at_end (per partition, as before). */
int kc_app_learn_group_ends(void)
{
    kc_error_t e;
    for (size_t t = 0; t < kc_app.a.n_topics; t++) {
        int32_t count = 0;
        kc_err_t rc =
            kc_topic_partitions(kc_app.c, kc_app.a.topics[t], &count, META_TIMEOUT_MS, &e);
        int code = kc_app_exit_for(rc);
        if (code == KC_CLI_EXIT_NOT_FOUND || code == KC_CLI_EXIT_UNREACHABLE ||
            code == KC_CLI_EXIT_AUTH) {
            fprintf(stderr, "kconsume: topic '%s': %s\n", kc_app.a.topics[t], e.msg);
            return code;
        }
        if (rc != KC_OK)
            continue;
        for (int32_t i = 0; i < count; i++) {
            part_t *p = kc_app_part_get(kc_app.a.topics[t], i);
            if (p)
                (void)learn_end(p);
        }
    }
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
    size_t done = 0, n_unknown = 0;
    part_t *unknown[256];
    for (size_t i = 0; i < n; i++) {
        part_t *p = kc_app_part_get(held[i].topic, held[i].partition);
        if (!p)
            break; /* out of memory: not done; the next tick asks again */
        if (atomic_load(&p->done)) {
            done++;
            continue;
        }
        if (atomic_load(&p->end) < 0 && learn_end(p))
            continue;
        int64_t pos = -1;
        if (!atomic_load(&p->done) &&
            kc_position(kc_app.c, p->topic, p->partition, &pos, NULL) == KC_OK && pos >= 0 &&
            pos >= atomic_load(&p->end))
            atomic_store(&p->done, 1);
        else if (kc_app.a.group && pos < 0 && atomic_load(&p->end) >= 0 &&
                 n_unknown < sizeof unknown / sizeof *unknown)
            unknown[n_unknown++] = p;
        done += (size_t)atomic_load(&p->done);
    }
    free(held);
    if (done < n)
        committed_ends(unknown, n_unknown);
    return n > 0 && done == n;
}
