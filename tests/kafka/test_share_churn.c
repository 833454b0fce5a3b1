/* Share groups under membership churn, through the public API (group.type=share, worker pool),
 * against a real share-enabled broker:
 * - churn: three consumers on a 3-partition topic while 30,000 records are written; five times
 *   during the run one consumer closes (leaving mid-stream, records in its callbacks) and a new one
 * joins. Every record reaches a callback exactly once across all of them: a record a leaving member
 *   accepted must not be handed out again (its verdict reaches the broker before the member
 *   leaves), and none is lost;
 * - many_members: twelve consumers on a 3-partition topic (more members than partitions, so the
 *   broker shares each partition among several) and 30,000 records: every record accepted
 *   exactly once, and more members than partitions got records.
 * Needs KC_SHARE_BOOTSTRAP, KC_SHARE_CLUSTER_DIR and KC_TESTKIT (tests/run-suite sets them).
 * kc-test-label: share */
#include "kc_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "share_driver.h"

#define MAX_MEMBERS 16

typedef struct tally {
    pthread_mutex_t mu;
    int *deliveries; /* per record index */
    int records;
    int distinct, twice, bad;
    int by_member[MAX_MEMBERS];
} tally_t;

typedef struct member {
    tally_t *t;
    int id;
} member_t;

static kc_cb_result_t on_records(void *opaque, kc_part_t *p, kc_records_t *b)
{
    (void)p;
    member_t *m = opaque;
    tally_t *t = m->t;
    const kc_record_t *r;
    pthread_mutex_lock(&t->mu);
    while ((r = kc_records_next(b))) {
        int64_t i = kc_test_record_index(r);
        if (i < 0 || i >= t->records) {
            t->bad++;
            continue;
        }
        if (t->deliveries[i]++)
            t->twice++;
        else
            t->distinct++;
        t->by_member[m->id]++;
    }
    pthread_mutex_unlock(&t->mu);
    kc_test_sleep_ms(1); /* a little work per view: callbacks are running when members leave */
    return KC_CB_CONTINUE;
}

static tally_t *tally_new(int records)
{
    tally_t *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->deliveries = calloc((size_t)records, sizeof *t->deliveries);
    assert_non_null(t->deliveries);
    t->records = records;
    pthread_mutex_init(&t->mu, NULL);
    return t;
}

static void tally_free(tally_t *t)
{
    pthread_mutex_destroy(&t->mu);
    free(t->deliveries);
    free(t);
}

static int distinct(tally_t *t)
{
    pthread_mutex_lock(&t->mu);
    int n = t->distinct;
    pthread_mutex_unlock(&t->mu);
    return n;
}

static kc_consumer_t *member(member_t *m, const char *group)
{
    kc_callbacks_t cbs = {.on_records = on_records, .opaque = m};
    return kc_sd_consumer(group, "worker.threads=2;callback.batch.max.records=20", &cbs);
}

/* Waits until every record was delivered (or the time is up) and the producer is done. */
static void wait_all(tally_t *t, pid_t producer, bool *produced)
{
    int64_t end = kc_test_now_ms() + 180000 * kc_test_time_scale();
    while ((!*produced || distinct(t) < t->records) && kc_test_now_ms() < end) {
        *produced = *produced || kc_sd_produce_done(producer);
        kc_test_sleep_ms(50);
    }
}

static void check(tally_t *t, const char *what)
{
    int never = 0;
    for (int i = 0; i < t->records; i++)
        never += t->deliveries[i] == 0;
    fprintf(stderr, "%s: %d records, delivered twice %d, never %d, bad %d\n", what, t->records,
            t->twice, never, t->bad);
    assert_int_equal(t->bad, 0);
    assert_int_equal(never, 0);
    assert_int_equal(t->twice, 0);
}

static void churn(void **state)
{
    (void)state;
    int records = 30000, cycles = 5;
    char group[64];
    snprintf(group, sizeof group, "kc-share-churn-g-%d", (int)getpid());
    kc_sd_setup("kc-share-churn", 3, group);
    tally_t *t = tally_new(records);
    member_t m[MAX_MEMBERS];
    kc_consumer_t *c[MAX_MEMBERS] = {0};
    int n = 0;
    for (; n < 3; n++) {
        m[n] = (member_t){t, n};
        c[n] = member(&m[n], group);
    }
    kc_test_sleep_ms(3000); /* the three hold their assignments before the records come */
    pid_t producer = kc_sd_produce_start(records);
    bool produced = false;
    int oldest = 0;
    for (int k = 1; k <= cycles; k++) {
        /* at k/(cycles+1) of the records: the oldest member leaves, a new one joins */
        int64_t end = kc_test_now_ms() + 120000 * kc_test_time_scale();
        while (distinct(t) < records * k / (cycles + 1) && kc_test_now_ms() < end) {
            produced = produced || kc_sd_produce_done(producer);
            kc_test_sleep_ms(10);
        }
        fprintf(stderr, "churn %d at %d records: member %d leaves, %d joins\n", k, distinct(t),
                oldest, n);
        kc_test_close(c[oldest]);
        c[oldest++] = NULL;
        m[n] = (member_t){t, n};
        c[n] = member(&m[n], group);
        n++;
    }
    wait_all(t, producer, &produced);
    assert_true(produced);
    kc_test_sleep_ms(1500); /* a record handed out again, if any, shows up meanwhile */
    for (int i = 0; i < n; i++)
        if (c[i])
            kc_test_close(c[i]);
    fprintf(stderr, "by member:");
    for (int i = 0; i < n; i++)
        fprintf(stderr, " %d", t->by_member[i]);
    fprintf(stderr, "\n");
    check(t, "churn");
    tally_free(t);
}

static void many_members(void **state)
{
    (void)state;
    enum { MEMBERS = 12 };
    int records = 30000;
    char group[64];
    snprintf(group, sizeof group, "kc-share-many-g-%d", (int)getpid());
    kc_sd_setup("kc-share-many", 3, group);
    tally_t *t = tally_new(records);
    member_t m[MEMBERS];
    kc_consumer_t *c[MEMBERS];
    for (int i = 0; i < MEMBERS; i++) {
        m[i] = (member_t){t, i};
        c[i] = member(&m[i], group);
    }
    kc_test_sleep_ms(5000); /* every member holds its share of the partitions */
    pid_t producer = kc_sd_produce_start(records);
    bool produced = false;
    wait_all(t, producer, &produced);
    assert_true(produced);
    kc_test_sleep_ms(1500);
    for (int i = 0; i < MEMBERS; i++)
        kc_test_close(c[i]);
    int used = 0;
    fprintf(stderr, "by member:");
    for (int i = 0; i < MEMBERS; i++) {
        fprintf(stderr, " %d", t->by_member[i]);
        used += t->by_member[i] > 0;
    }
    fprintf(stderr, "\n");
    check(t, "many_members");
    assert_true(used > 3); /* more members than partitions got records */
    tally_free(t);
}

int main(void)
{
    kc_test_filter();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(churn),
        cmocka_unit_test(many_members),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
