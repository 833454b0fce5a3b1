/* kc_share_renew (KIP-1222 lock renewal) against a real share-enabled broker (Kafka 4.2), with
 * the group's record lock set to 2 s (share.record.lock.duration.ms):
 * - renew_keeps_records: a 1-partition topic of 6 records in one producer batch (the
 *   renewal covers the batch the view is of). The member's
 *   first callback (2 records a view, callback.batch.max.records=2) works for 4.5 s, renewing
 *   the lock every second, and accepts. Every renewal succeeds, the verdict is sent (a commit of
 *   acknowledgements finds nothing refused), the views after it on the same batch are delivered
 *   (the worker's lapse deadline moved with the renewal), and no record comes back (delivered
 *   once, delivery count 1). Without renewal the verdict would be refused (its lock ran out after
 *   2 s) and all 6 would come back with delivery count 2.
 * - renew_after_lock_refused: a callback that outlasted the lock (3 s) cannot renew it:
 *   KC_ERR_STATE, and its records come back with delivery count 2.
 * - renew_in_pull_mode: the same as the first from an app thread holding a kc_poll view.
 * - renew_judged_by_its_own_answer: through the fault proxy, every ShareFetch answer held back
 *   1 s and the ShareAcknowledge that carries the renewal 3 s; the first view's verdict rides a
 *   ShareFetch that the broker answers (without error) while the second view's renewal waits,
 *   and the renewal's own answer comes after its 2.5 s timeout. The renewal reports
 *   KC_ERR_TIMEOUT: taking the verdict's clean answer for the renewal's reported KC_OK for a lock
 *   that was never renewed.
 * Needs KC_SHARE_BOOTSTRAP, KC_SHARE_CLUSTER_DIR and KC_TESTKIT (tests/run-suite sets them).
 * kc-test-label: share */
#include "kc_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault_proxy_client.h"
#include "share_driver.h"

#define RECORDS 6

typedef struct tally {
    pthread_mutex_t mu;
    int deliveries[RECORDS];
    int max_count[RECORDS]; /* highest delivery count seen per record */
    int views, bad;
    int renew_ok, renew_failed;
    kc_err_t renew_code; /* the first failed renewal's */
    char renew_msg[256];
    int stall_ms, renew_every_ms; /* the first view's work, and its renewals (0: none) */
} tally_t;

/* Counts the view's records; returns how many. */
static int count_view(tally_t *t, kc_records_t *b)
{
    const kc_record_t *r;
    int n = 0, dc = kc_records_delivery_count(b);
    pthread_mutex_lock(&t->mu);
    while ((r = kc_records_next(b))) {
        int64_t i = kc_test_record_index(r);
        n++;
        if (i < 0 || i >= RECORDS) {
            t->bad++;
            continue;
        }
        t->deliveries[i]++;
        if (dc > t->max_count[i])
            t->max_count[i] = dc;
    }
    t->views++;
    pthread_mutex_unlock(&t->mu);
    return n;
}

/* The first view's long work: stall_ms, renewing every renew_every_ms. */
static void work(tally_t *t, kc_records_t *b)
{
    for (int spent = 0; spent < t->stall_ms;) {
        int step = t->renew_every_ms > 0 ? t->renew_every_ms : t->stall_ms;
        kc_test_sleep_ms(step);
        spent += step;
        if (t->renew_every_ms <= 0 && spent < t->stall_ms)
            continue;
        kc_error_t e;
        kc_err_t rc = kc_share_renew(b, 5000, &e);
        pthread_mutex_lock(&t->mu);
        if (rc == KC_OK) {
            t->renew_ok++;
        } else if (!t->renew_failed++) {
            t->renew_code = rc;
            snprintf(t->renew_msg, sizeof t->renew_msg, "%s", e.msg);
        }
        pthread_mutex_unlock(&t->mu);
    }
}

static kc_cb_result_t on_records(void *opaque, kc_part_t *p, kc_records_t *b)
{
    (void)p;
    tally_t *t = opaque;
    pthread_mutex_lock(&t->mu);
    bool first = t->views == 0;
    pthread_mutex_unlock(&t->mu);
    count_view(t, b);
    if (first)
        work(t, b);
    return KC_CB_CONTINUE;
}

static tally_t *tally_new(int stall_ms, int renew_every_ms)
{
    tally_t *t = calloc(1, sizeof *t);
    assert_non_null(t);
    pthread_mutex_init(&t->mu, NULL);
    t->stall_ms = stall_ms;
    t->renew_every_ms = renew_every_ms;
    return t;
}

static void tally_free(tally_t *t)
{
    pthread_mutex_destroy(&t->mu);
    free(t);
}

/* A new topic with RECORDS records and a group whose record lock is 2 s. */
static void setup(const char *prefix, char *group, size_t len)
{
    snprintf(group, len, "%s-g-%d", prefix, (int)getpid());
    kc_sd_setup(prefix, 1, group);
    kc_sd_group_config(group, "share.record.lock.duration.ms=2000");
    kc_sd_produce_one_batch(RECORDS);
}

/* Waits until `want` records were delivered, or `ms` passed. */
static int wait_delivered(tally_t *t, int want, int ms)
{
    int n = 0;
    for (int64_t end = kc_test_now_ms() + ms; kc_test_now_ms() < end; kc_test_sleep_ms(50)) {
        n = 0;
        pthread_mutex_lock(&t->mu);
        for (int i = 0; i < RECORDS; i++)
            n += t->deliveries[i];
        pthread_mutex_unlock(&t->mu);
        if (n >= want)
            break;
    }
    return n;
}

static void print_tally(const char *what, const tally_t *t)
{
    printf("# %s: %d views; renewals %d ok, %d failed%s%s; per record deliveries/count:", what,
           t->views, t->renew_ok, t->renew_failed, t->renew_failed ? ": " : "",
           t->renew_failed ? t->renew_msg : "");
    for (int i = 0; i < RECORDS; i++)
        printf(" %d/%d", t->deliveries[i], t->max_count[i]);
    printf("\n");
}

static void assert_once(const tally_t *t)
{
    assert_int_equal(t->bad, 0);
    for (int i = 0; i < RECORDS; i++) {
        assert_int_equal(t->deliveries[i], 1);
        assert_int_equal(t->max_count[i], 1);
    }
}

static void renew_keeps_records(void **state)
{
    (void)state;
    char group[64];
    setup("kc-share-renew", group, sizeof group);
    tally_t *t = tally_new(4500, 1000);
    kc_callbacks_t cbs = {.on_records = on_records, .opaque = t};
    kc_consumer_t *c = kc_sd_consumer(group, "callback.batch.max.records=2;worker.threads=1", &cbs);
    int got = wait_delivered(t, RECORDS, 30000);
    /* Long enough for the 2 s lock to run out twice after the verdict, had it not counted. */
    kc_test_sleep_ms(5000);
    kc_error_t e;
    kc_err_t rc = kc_commit(c, NULL, 0, 5000, &e);
    printf("# commit of acknowledgements: %s\n", rc == KC_OK ? "ok" : e.msg);
    kc_test_close(c);
    print_tally("renewing every 1 s through 4.5 s of work", t);
    assert_int_equal(got, RECORDS);
    assert_int_equal(t->renew_failed, 0);
    assert_int_equal(t->renew_ok, 5); /* at 1, 2, 3, 4 and 5 s */
    assert_int_equal(rc, KC_OK);
    assert_once(t);
    tally_free(t);
}

static void renew_after_lock_refused(void **state)
{
    (void)state;
    char group[64];
    setup("kc-share-renew-late", group, sizeof group);
    tally_t *t = tally_new(3000, 0); /* one renewal, after the 2 s lock */
    kc_callbacks_t cbs = {.on_records = on_records, .opaque = t};
    kc_consumer_t *c = kc_sd_consumer(group, "worker.threads=1", &cbs);
    int got = wait_delivered(t, 2 * RECORDS, 30000); /* every record a second time */
    kc_test_close(c);
    print_tally("one renewal after 3 s of work", t);
    assert_int_equal(got, 2 * RECORDS);
    assert_int_equal(t->renew_ok, 0);
    assert_int_equal(t->renew_failed, 1);
    assert_int_equal(t->renew_code, KC_ERR_STATE);
    for (int i = 0; i < RECORDS; i++)
        assert_int_equal(t->max_count[i], 2);
    tally_free(t);
}

static void renew_in_pull_mode(void **state)
{
    (void)state;
    char group[64];
    setup("kc-share-renew-pull", group, sizeof group);
    tally_t *t = tally_new(4500, 1500);
    kc_callbacks_t cbs = {.opaque = t}; /* no on_records: kc_poll */
    kc_consumer_t *c = kc_sd_consumer(group, "callback.batch.max.records=2;worker.threads=1", &cbs);
    int got = 0;
    for (int64_t end = kc_test_now_ms() + 30000; got < RECORDS && kc_test_now_ms() < end;) {
        kc_records_t *b = NULL;
        kc_error_t e;
        if (kc_poll(c, 500, &b, &e) != KC_OK || !b)
            continue;
        bool first = t->views == 0;
        got += count_view(t, b);
        if (first)
            work(t, b);
        kc_records_release(c, b, KC_CB_CONTINUE);
    }
    /* anything that comes back would come now */
    for (int64_t end = kc_test_now_ms() + 5000; kc_test_now_ms() < end;) {
        kc_records_t *b = NULL;
        kc_error_t e;
        if (kc_poll(c, 500, &b, &e) == KC_OK && b) {
            count_view(t, b);
            kc_records_release(c, b, KC_CB_CONTINUE);
        }
    }
    kc_test_close(c);
    print_tally("pull mode, renewing every 1.5 s through 4.5 s of work", t);
    assert_int_equal(got, RECORDS);
    assert_int_equal(t->renew_failed, 0);
    assert_int_equal(t->renew_ok, 3);
    assert_once(t);
    tally_free(t);
}

typedef struct judged {
    pthread_mutex_t mu;
    int views;
    kc_err_t rc;
    char msg[256];
    int64_t took_ms;
} judged_t;

static kc_cb_result_t judged_records(void *opaque, kc_part_t *p, kc_records_t *b)
{
    (void)p;
    judged_t *j = opaque;
    while (kc_records_next(b))
        ;
    pthread_mutex_lock(&j->mu);
    int view = ++j->views;
    pthread_mutex_unlock(&j->mu);
    if (view != 2)
        return KC_CB_CONTINUE;
    /* the first view's verdict is on its way in a ShareFetch held back by the proxy */
    kc_test_sleep_ms(1250);
    kc_error_t e;
    int64_t t0 = kc_test_now_ms();
    kc_err_t rc = kc_share_renew(b, 2500, &e);
    pthread_mutex_lock(&j->mu);
    j->rc = rc;
    j->took_ms = kc_test_now_ms() - t0;
    snprintf(j->msg, sizeof j->msg, "%s", rc == KC_OK ? "" : e.msg);
    pthread_mutex_unlock(&j->mu);
    return KC_CB_CONTINUE;
}

static void renew_judged_by_its_own_answer(void **state)
{
    (void)state;
    char group[64];
    snprintf(group, sizeof group, "kc-share-renew-judged-g-%d", (int)getpid());
    kc_sd_setup("kc-share-renew-judged", 1, group);
    kc_sd_produce_one_batch(RECORDS);
    kc_fp_t *fp = kc_fp_start(kc_test_env("KC_SHARE_BOOTSTRAP"));
    assert_non_null(fp);
    char reply[256], more[256];
    assert_int_equal(
        kc_fp_cmd(fp, reply, sizeof reply, "delay api=ShareFetch ms=1000 count=100000"), 0);
    assert_int_equal(kc_fp_cmd(fp, reply, sizeof reply, "delay api=ShareAcknowledge ms=3000"), 0);
    snprintf(more, sizeof more,
             "bootstrap.servers=%s;callback.batch.max.records=2;worker.threads=1",
             kc_fp_bootstrap(fp));
    judged_t *j = calloc(1, sizeof *j);
    assert_non_null(j);
    pthread_mutex_init(&j->mu, NULL);
    kc_callbacks_t cbs = {.on_records = judged_records, .opaque = j};
    kc_consumer_t *c = kc_sd_consumer(group, more, &cbs);
    for (int64_t end = kc_test_now_ms() + 60000; kc_test_now_ms() < end; kc_test_sleep_ms(50)) {
        pthread_mutex_lock(&j->mu);
        bool done = j->views >= 3;
        pthread_mutex_unlock(&j->mu);
        if (done)
            break;
    }
    assert_int_equal(kc_fp_cmd(fp, reply, sizeof reply, "clear"), 0);
    kc_test_close(c);
    printf("# renewal behind a held-back ShareAcknowledge: %s after %lld ms%s%s\n",
           kc_err_name(j->rc), (long long)j->took_ms, j->msg[0] ? ": " : "", j->msg);
    assert_int_equal(kc_fp_stop(fp), 0);
    assert_true(j->views >= 3);
    assert_int_equal(j->rc, KC_ERR_TIMEOUT);
    assert_true(j->took_ms >= 2400);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(renew_keeps_records),
        cmocka_unit_test(renew_after_lock_refused),
        cmocka_unit_test(renew_in_pull_mode),
        cmocka_unit_test(renew_judged_by_its_own_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
