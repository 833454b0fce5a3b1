/* The broker's answers to a share consumer's acknowledgements, as KC_EVENT_SHARE_ACK events,
 * against a real share-enabled broker (its record lock is 10 s: tests/testkit/cluster --share):
 * - applied_answers_reported: share.ack.events=all; one consumer on a 1-partition topic of 500
 *   records accepts them, rejecting with kc_share_ack the ones whose index ends in 1. Events
 *   without an error cover every offset 0..499, each range inside it, and their ack_records add
 *   up to at least 500 (rejections are verdicts too; more only after a redelivery); none is
 *   refused. A second consumer of another group
 *   with the default (share.ack.events=errors) reads the same 500 records and gets no such
 *   event.
 * - lock_expired_is_refused: the default setting; the first view's callback outlasts the record
 *   lock (11 s) and then accepts: the broker had handed those records out again, so the
 *   acceptance cannot count, and the consumer hears it as a KC_EVENT_SHARE_ACK naming the
 *   partition and the offsets, never silently: not sent (KC_ERR_STATE: the records came back
 *   to this member as delivery 2, or the lock ran out, before the verdict), or refused by the
 *   broker (KC_ERR_BROKER and its code) when it got there after the lock ran out. The records
 *   come back with delivery count 2 and are accepted then. Sent, the late acceptance would be
 *   taken for delivery 2's when it came first, and ignored without an error once delivery 2's
 *   was applied (the broker drops acknowledgements below its start offset).
 * - lock_ran_out_elsewhere: the same, but the first member pauses the partition while its
 *   callback stalls and a second member takes the records the broker hands out again and
 *   accepts them; the first member's late acceptance is refused (its lock ran out), not sent
 *   and reported applied as the broker's answer would have it.
 * Needs KC_SHARE_BOOTSTRAP, KC_SHARE_CLUSTER_DIR and KC_TESTKIT (tests/run-suite sets them).
 * kc-test-label: share */
#include "kc_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "share_driver.h"

#define RECORDS 500

typedef struct seen {
    pthread_mutex_t mu;
    int delivered[RECORDS]; /* deliveries of each record */
    int distinct, max_count;
    bool stall_first; /* lock_*: the first view outlasts the lock */
    bool stalled;
    /* KC_EVENT_SHARE_ACK */
    int applied, refused, bad_range;
    int64_t applied_records;
    uint8_t covered[RECORDS];
    kc_err_t refused_code;
    int16_t refused_kafka;
    int64_t refused_first, refused_last;
    char refused_msg[256];
} seen_t;

static kc_cb_result_t on_records(void *opaque, kc_part_t *p, kc_records_t *b)
{
    (void)p;
    seen_t *s = opaque;
    pthread_mutex_lock(&s->mu);
    bool stall = s->stall_first && !s->stalled;
    s->stalled = true;
    pthread_mutex_unlock(&s->mu);
    if (stall)
        sleep(11); /* past the broker's 10 s record lock */
    int count = kc_records_delivery_count(b);
    const kc_record_t *r;
    pthread_mutex_lock(&s->mu);
    while ((r = kc_records_next(b))) {
        int64_t i = kc_test_record_index(r);
        if (i < 0 || i >= RECORDS)
            continue;
        if (!s->delivered[i]++)
            s->distinct++;
        if (count > s->max_count)
            s->max_count = count;
        if (!s->stall_first && i % 10 == 1)
            (void)kc_share_ack(b, r, KC_SHARE_REJECT, NULL);
    }
    pthread_mutex_unlock(&s->mu);
    return KC_CB_CONTINUE;
}

static void on_event(void *opaque, const kc_event_t *ev)
{
    seen_t *s = opaque;
    if (ev->type != KC_EVENT_SHARE_ACK)
        return;
    pthread_mutex_lock(&s->mu);
    if (strcmp(ev->topic, kc_sd_topic) != 0 || ev->partition != 0 || ev->ack_first < 0 ||
        ev->ack_first > ev->offset || ev->offset >= RECORDS || ev->ack_records < 0 ||
        ev->ack_records > ev->offset - ev->ack_first + 1) {
        s->bad_range++;
    } else if (!ev->error) {
        s->applied++;
        s->applied_records += ev->ack_records;
        for (int64_t o = ev->ack_first; o <= ev->offset; o++)
            s->covered[o] = 1;
    } else {
        if (!s->refused++) {
            s->refused_code = ev->error->code;
            s->refused_kafka = ev->error->kafka_code;
            s->refused_first = ev->ack_first;
            s->refused_last = ev->offset;
            snprintf(s->refused_msg, sizeof s->refused_msg, "%s", ev->error->msg);
        }
    }
    pthread_mutex_unlock(&s->mu);
}

static kc_consumer_t *consumer(seen_t *s, const char *group, const char *ack_events)
{
    char more[64] = "";
    if (ack_events)
        snprintf(more, sizeof more, "share.ack.events=%s", ack_events);
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event, .opaque = s};
    return kc_sd_consumer(group, ack_events ? more : NULL, &cbs);
}

static seen_t *seen_new(void)
{
    seen_t *s = calloc(1, sizeof *s);
    assert_non_null(s);
    pthread_mutex_init(&s->mu, NULL);
    return s;
}

/* Waits up to ms for cond(s) under s->mu. */
static bool wait_for(seen_t *s, bool (*cond)(const seen_t *), int ms)
{
    for (int64_t end = kc_test_now_ms() + ms; kc_test_now_ms() < end; kc_test_sleep_ms(50)) {
        pthread_mutex_lock(&s->mu);
        bool ok = cond(s);
        pthread_mutex_unlock(&s->mu);
        if (ok)
            return true;
    }
    return false;
}

static bool all_acknowledged(const seen_t *s)
{
    return s->distinct == RECORDS && s->applied_records >= RECORDS;
}

static bool all_read(const seen_t *s)
{
    return s->distinct == RECORDS;
}

/* A 1-partition topic "<prefix>-…" of RECORDS records, and `group` ("<prefix>-g-<pid>") set up
 * to read it from the start. */
static void topic_of_records(const char *prefix, char *group, size_t len)
{
    snprintf(group, len, "%s-g-%d", prefix, (int)getpid());
    kc_sd_setup(prefix, 1, group);
    pid_t producer = kc_sd_produce_start(RECORDS);
    while (!kc_sd_produce_done(producer))
        usleep(50 * 1000);
}

static void applied_answers_reported(void **state)
{
    (void)state;
    char group[64], quiet_group[64];
    topic_of_records("kc-share-ackev", group, sizeof group);
    snprintf(quiet_group, sizeof quiet_group, "kc-share-ackev-q-%d", (int)getpid());
    char cmd[256];
    snprintf(cmd, sizeof cmd,
             "tool ConfigCommand --bootstrap-server %s --entity-type groups --entity-name %s "
             "--alter --add-config share.auto.offset.reset=earliest",
             kc_test_env("KC_SHARE_BOOTSTRAP"), quiet_group);
    kc_sd_testkit(cmd);

    seen_t *s = seen_new(), *q = seen_new();
    kc_consumer_t *c = consumer(s, group, "all");
    kc_consumer_t *quiet = consumer(q, quiet_group, NULL);
    bool done = wait_for(s, all_acknowledged, 60000);
    assert_true(wait_for(q, all_read, 60000));
    kc_test_sleep_ms(1000); /* the quiet consumer's answers arrive meanwhile */
    kc_test_close(c);
    kc_test_close(quiet);
    int covered = 0;
    for (int i = 0; i < RECORDS; i++)
        covered += s->covered[i];
    print_message("applied answers %d for %lld verdicts, offsets covered %d of %d, refused %d, "
                  "bad ranges %d; the errors-only consumer: %d events, %d records read\n",
                  s->applied, (long long)s->applied_records, covered, RECORDS, s->refused,
                  s->bad_range, q->applied + q->refused + q->bad_range, q->distinct);
    assert_true(done);
    assert_true(s->applied_records >= RECORDS); /* more only if something was redelivered */
    assert_int_equal(covered, RECORDS);
    assert_int_equal(s->refused, 0);
    assert_int_equal(s->bad_range, 0);
    assert_int_equal(q->applied + q->refused + q->bad_range, 0);
    free(s);
    free(q);
}

static bool refused_and_reread(const seen_t *s)
{
    return s->refused > 0 && s->distinct == RECORDS && s->max_count >= 2;
}

static void lock_expired_is_refused(void **state)
{
    (void)state;
    char group[64];
    topic_of_records("kc-share-acklock", group, sizeof group);
    seen_t *s = seen_new();
    s->stall_first = true;
    kc_consumer_t *c = consumer(s, group, NULL);
    bool ok = wait_for(s, refused_and_reread, 60000);
    kc_test_close(c);
    seen_t r = *s; /* the asserts below may end the test: nothing of s is needed after this */
    free(s);
    s = &r;
    print_message("refused %d: %s %s (%d) offsets %lld..%lld: %s; %d records read, highest "
                  "delivery count %d; applied answers reported: %d\n",
                  s->refused, kc_err_name(s->refused_code), kc_kafka_error_name(s->refused_kafka),
                  s->refused_kafka, (long long)s->refused_first, (long long)s->refused_last,
                  s->refused_msg, s->distinct, s->max_count, s->applied);
    assert_true(ok);
    assert_true((s->refused_code == KC_ERR_BROKER && s->refused_kafka > 0) ||
                (s->refused_code == KC_ERR_STATE && s->refused_kafka == 0));
    assert_true(s->refused_first >= 0 && s->refused_last >= s->refused_first);
    assert_non_null(strstr(s->refused_msg, kc_sd_topic));
    assert_int_equal(s->applied, 0); /* share.ack.events=errors: applied answers stay quiet */
    assert_int_equal(s->bad_range, 0);
}

static bool has_stalled(const seen_t *s)
{
    return s->stalled;
}

static void lock_ran_out_elsewhere(void **state)
{
    (void)state;
    char group[64];
    topic_of_records("kc-share-acklock2", group, sizeof group);
    seen_t *a = seen_new(), *b = seen_new();
    a->stall_first = true;
    b->stalled = true; /* the second member never stalls */
    kc_consumer_t *ca = consumer(a, group, NULL);
    assert_true(wait_for(a, has_stalled, 30000)); /* the first member holds the first records */
    /* and fetches no more, so the records its lock gives back can only go to the second */
    kc_topic_partition_t tp = {kc_sd_topic, 0, 0};
    kc_error_t err;
    assert_int_equal(kc_pause(ca, &tp, 1, &err), KC_OK);
    kc_consumer_t *cb = consumer(b, group, NULL);
    bool ok = false;
    int distinct = 0;
    for (int64_t end = kc_test_now_ms() + 60000; !ok && kc_test_now_ms() < end;
         kc_test_sleep_ms(50)) {
        pthread_mutex_lock(&a->mu);
        pthread_mutex_lock(&b->mu);
        distinct = 0;
        for (int i = 0; i < RECORDS; i++)
            distinct += a->delivered[i] || b->delivered[i];
        ok = a->refused > 0 && distinct == RECORDS;
        pthread_mutex_unlock(&b->mu);
        pthread_mutex_unlock(&a->mu);
    }
    kc_test_close(ca);
    kc_test_close(cb);
    seen_t ra = *a, rb = *b;
    free(a);
    free(b);
    print_message("first member: refused %d: %s (%d) offsets %lld..%lld: %s; records read %d "
                  "and %d (%d distinct), highest delivery count %d and %d\n",
                  ra.refused, kc_err_name(ra.refused_code), ra.refused_kafka,
                  (long long)ra.refused_first, (long long)ra.refused_last, ra.refused_msg,
                  ra.distinct, rb.distinct, distinct, ra.max_count, rb.max_count);
    assert_true(ok);
    assert_true((ra.refused_code == KC_ERR_BROKER && ra.refused_kafka > 0) ||
                (ra.refused_code == KC_ERR_STATE && ra.refused_kafka == 0));
    assert_non_null(strstr(ra.refused_msg, kc_sd_topic));
    assert_int_equal(ra.bad_range + rb.bad_range, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(applied_answers_reported),
        cmocka_unit_test(lock_expired_is_refused),
        cmocka_unit_test(lock_ran_out_elsewhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
