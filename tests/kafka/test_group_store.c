/* kc-test-label: threads */
/* Against the suite's cluster: kc_store_offset on a KIP-848 member's partitions.
 *  1. A member with enable.auto.offset.store=false (and no auto-commit) consumes everything,
 *     stores an offset of its choosing per partition (half the high watermark), kc_commit(NULL)
 *     commits exactly those, as kc_committed shows; a partition it does not hold is refused.
 *  2. A second member of the group then starts from those committed offsets: while its first
 *     on_records is held, kc_position and the stats already report the start (the committed
 *     offset), and the stats' "committed" shows it too.
 *  3. The exactly-once pattern: a third member's on_assign seeks each partition to an offset
 *     BELOW the committed one (as if kept in the app's own database): delivery starts exactly
 *     there (the runtime's floor follows the seek) and runs to the end.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "kc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"

#define NP   3
#define RECS 600

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char last[16384];     /* the last stats JSON, under mu */
static long consumed;        /* under mu */
static int64_t seen_end[NP]; /* offset after the last record seen per partition, under mu */
static atomic_int hold;      /* phase 2: on_records waits while set */
static atomic_int assigned;
static kc_consumer_t *seeker;   /* phase 3: the member whose on_assign seeks */
static int64_t seek_target[NP]; /* phase 3: where on_assign seeks */
static int64_t first_seen[NP];  /* phase 3: first offset delivered, under mu */
static atomic_int seek_errors;

static void on_assign(void *o, kc_part_t *p)
{
    (void)o;
    kc_consumer_t *c = seeker;
    if (c && p->partition >= 0 && p->partition < NP) {
        kc_error_t e;
        if (kc_seek(c, p->topic, p->partition, KC_SEEK_OFFSET, seek_target[p->partition], &e) !=
            KC_OK) {
            fprintf(stderr, "kc_seek in on_assign: %s\n", e.msg);
            atomic_fetch_add(&seek_errors, 1);
        }
    }
    atomic_fetch_add(&assigned, 1);
}

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o;
    while (atomic_load(&hold))
        usleep(10 * 1000);
    long n = 0;
    const kc_record_t *r;
    int64_t end = -1;
    int64_t first = -1;
    while ((r = kc_records_next(b))) {
        if (first < 0)
            first = kc_record_offset(r);
        n++;
        end = kc_record_offset(r) + 1;
    }
    pthread_mutex_lock(&mu);
    if (p->partition >= 0 && p->partition < NP && first_seen[p->partition] < 0)
        first_seen[p->partition] = first;
    consumed += n;
    if (p->partition >= 0 && p->partition < NP && end > seen_end[p->partition])
        seen_end[p->partition] = end;
    pthread_mutex_unlock(&mu);
    return KC_CB_CONTINUE;
}

static void on_event(void *o, const kc_event_t *ev)
{
    (void)o;
    if (ev->type != KC_EVENT_STATS)
        return;
    pthread_mutex_lock(&mu);
    snprintf(last, sizeof last, "%s", ev->json);
    pthread_mutex_unlock(&mu);
}

static kc_consumer_t *member(const char *group)
{
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    const char *kv[][2] = {{"bootstrap.servers", kc_test_env("KC_BOOTSTRAP")},
                           {"group.id", group},
                           {"group.protocol", "consumer"},
                           {"auto.offset.reset", "earliest"},
                           {"enable.auto.offset.store", "false"},
                           {"enable.auto.commit", "false"},
                           {"statistics.interval.ms", "100"},
                           /* phase 2 holds up to NP callbacks; stats reach on_event on a
                            * free worker */
                           {"worker.threads", "6"},
                           {"fetch.max.wait.ms", "100"}};
    for (size_t i = 0; i < sizeof kv / sizeof *kv; i++)
        if (kc_conf_set(conf, kv[i][0], kv[i][1], &err) != KC_OK)
            fail_msg("%s: %s", kv[i][0], err.msg);
    kc_callbacks_t cbs = {.on_assign = on_assign, .on_records = on_records, .on_event = on_event};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    return c;
}

static void store_commit_restart(void **state)
{
    (void)state;
    char topic[64], group[64];
    snprintf(topic, sizeof topic, "kc-gstore-%d", (int)getpid());
    snprintf(group, sizeof group, "kc-gstore-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions %d --replication 3", topic, NP);
    kc_test_cluster("produce %s --records %d --size 50 --keys 32", topic, RECS);
    kc_error_t err;
    const char *topics[] = {topic};

    /* 1: consume everything, store half of each partition, commit, read back. */
    kc_consumer_t *c = member(group);
    assert_int_equal(kc_subscribe(c, topics, 1, &err), KC_OK);
    int ok = 0;
    for (int i = 0; i < 300 && !ok; i++) { /* up to 30 s */
        usleep(100 * 1000);
        pthread_mutex_lock(&mu);
        ok = consumed >= RECS;
        pthread_mutex_unlock(&mu);
    }
    if (!ok)
        fail_msg("consumed %ld of %d", consumed, RECS);
    int64_t stored[NP];
    for (int p = 0; p < NP; p++) {
        pthread_mutex_lock(&mu);
        int64_t end = seen_end[p];
        pthread_mutex_unlock(&mu);
        assert_true(end >= 2); /* 32 keys over 3 partitions: each has records */
        /* auto store off: nothing delivered made anything committable */
        int64_t pos = 0;
        assert_int_equal(kc_position(c, topic, p, &pos, &err), KC_OK);
        assert_int_equal(pos, KC_OFFSET_INVALID);
        stored[p] = end / 2;
        if (kc_store_offset(c, topic, p, stored[p], &err) != KC_OK)
            fail_msg("kc_store_offset %d: %s", p, err.msg);
        assert_int_equal(kc_position(c, topic, p, &pos, &err), KC_OK);
        assert_int_equal(pos, stored[p]);
    }
    assert_int_equal(kc_store_offset(c, topic, NP + 3, 1, &err), KC_ERR_NOT_FOUND);
    assert_non_null(strstr(err.msg, "not assigned"));
    if (kc_commit(c, NULL, 0, 10000, &err) != KC_OK)
        fail_msg("kc_commit: %s", err.msg);
    kc_topic_partition_t tps[NP];
    for (int p = 0; p < NP; p++)
        tps[p] = (kc_topic_partition_t){topic, p, -7};
    if (kc_committed(c, tps, NP, 10000, &err) != KC_OK)
        fail_msg("kc_committed: %s", err.msg);
    for (int p = 0; p < NP; p++)
        assert_int_equal(tps[p].offset, stored[p]);
    /* close: no auto-commit, so the stored offsets stay the group's */
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);

    /* 2: a new member starts from the committed offsets; its first on_records is held. */
    atomic_store(&hold, 1);
    atomic_store(&assigned, 0);
    pthread_mutex_lock(&mu);
    last[0] = '\0';
    pthread_mutex_unlock(&mu);
    c = member(group);
    assert_int_equal(kc_subscribe(c, topics, 1, &err), KC_OK);
    char snap[16384] = "";
    ok = 0;
    for (int i = 0; i < 300 && !ok; i++) { /* up to 30 s */
        usleep(100 * 1000);
        if (atomic_load(&assigned) < NP)
            continue;
        pthread_mutex_lock(&mu);
        snprintf(snap, sizeof snap, "%s", last);
        pthread_mutex_unlock(&mu);
        ok = 1;
        for (int p = 0; p < NP && ok; p++) {
            int64_t pos = -5;
            ok = kc_position(c, topic, p, &pos, &err) == KC_OK && pos == stored[p] &&
                 kc_test_stats_part(snap, topic, p, "position") == stored[p] &&
                 kc_test_stats_part(snap, topic, p, "committed") == stored[p];
        }
    }
    atomic_store(&hold, 0);
    if (!ok)
        fail_msg("start positions not reported (assigned %d); last stats: %.1500s",
                 atomic_load(&assigned),
                 strstr(snap, "\"partitions\"") ? strstr(snap, "\"partitions\"") : snap);
    printf("# stored %lld/%lld/%lld committed exactly; the next member reports them as start\n",
           (long long)stored[0], (long long)stored[1], (long long)stored[2]);
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);

    /* 3: on_assign seeks below the committed offsets; delivery starts exactly there. */
    int64_t want = 0;
    pthread_mutex_lock(&mu);
    consumed = 0;
    for (int p = 0; p < NP; p++) {
        seek_target[p] = stored[p] / 2;
        first_seen[p] = -1;
        want += seen_end[p] - seek_target[p];
    }
    pthread_mutex_unlock(&mu);
    c = member(group);
    seeker = c;
    assert_int_equal(kc_subscribe(c, topics, 1, &err), KC_OK);
    long got = 0;
    for (int i = 0; i < 300 && got < want; i++) { /* up to 30 s */
        usleep(100 * 1000);
        pthread_mutex_lock(&mu);
        got = consumed;
        pthread_mutex_unlock(&mu);
    }
    usleep(300 * 1000);
    pthread_mutex_lock(&mu);
    printf("# on_assign seek below committed: first delivered %lld/%lld/%lld (targets "
           "%lld/%lld/%lld, committed %lld/%lld/%lld), %ld records of %lld expected\n",
           (long long)first_seen[0], (long long)first_seen[1], (long long)first_seen[2],
           (long long)seek_target[0], (long long)seek_target[1], (long long)seek_target[2],
           (long long)stored[0], (long long)stored[1], (long long)stored[2], consumed,
           (long long)want);
    for (int p = 0; p < NP; p++)
        if (seen_end[p] > seek_target[p])
            assert_int_equal(first_seen[p], seek_target[p]);
    assert_int_equal(consumed, want);
    pthread_mutex_unlock(&mu);
    assert_int_equal(atomic_load(&seek_errors), 0);
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    seeker = NULL;
    kc_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(store_commit_restart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
