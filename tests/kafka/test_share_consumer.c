/* Share consumers through the public API (group.type=share, kc_subscribe, on_records) against a
 * real share-enabled broker:
 * - accept_exactly_once: three consumers in one share group on a 3-partition topic of 3000
 *   records: every record delivered exactly once across them, each with delivery count 1, to
 *   more than one consumer; after they closed, a fourth member of the group gets nothing for 4 s
 *   (every record was ACCEPTed: a verdict lost at close would have had the broker release the
 *   record to it);
 * - retry_releases: one consumer returns KC_CB_RETRY (views of one record) for every record whose
 *   index ends in 0 on its first delivery: each comes back with kc_records_delivery_count 2 and
 *   is accepted then; records whose index ends in 1 are rejected with kc_share_ack and never come
 *   back; no other record is delivered twice; the partition's share counters (metrics) say so:
 *   220 delivered, 20 released, 20 rejected, 180 accepted, none held;
 * - verdicts_after_pause: a consumer's callback is held while its only partition is paused, so
 *   the partition leaves the share session (the next ShareFetch forgets it) before the verdicts
 *   on the records in hand are given; the verdicts still reach the broker: after that consumer
 *   closed, a second one in the group gets every record the first did not accept, and none it
 *   did (a verdict dropped for want of a session had the broker hand those records out again
 *   at the close);
 * - commit_acknowledgements: kc_commit with no partitions sends the verdicts given so far and
 *   answers once the broker applied them (its accepted counter covers them when the call
 *   returns), including those of a callback still running at the call, which it waits for;
 *   kc_commit_async_results the same, answered through its callback;
 * - commit_in_pull_mode: with kc_poll, the commit covers the views polled and released before it
 *   and does not wait for views the workers queued that nobody polled yet;
 * - commit_reports_late_verdicts: a verdict refused before it left (its callback outlasted the
 *   group's 2 s lock) is in the next commit's results (KC_ERR_STATE), not only in an event;
 * - pull_lapsed_not_handed_out: a view that waited to be polled until its records' lock ran out
 *   (the group's lock at 2 s, the view before it held 3 s) is not handed out: the views polled
 *   afterwards carry only records handed out again (delivery count 2+).
 * Needs KC_SHARE_BOOTSTRAP, KC_SHARE_CLUSTER_DIR and KC_TESTKIT (tests/run-suite sets them).
 * kc-test-label: share */
#include "kc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "share_driver.h"

#define RECORDS 3000
#define MEMBERS 3

typedef struct tally {
    pthread_mutex_t mu;
    int deliveries[RECORDS];
    int count_seen[RECORDS]; /* delivery count of the last delivery */
    int distinct;
    int by_member[MEMBERS + 1];
    int bad;          /* values that are not a record index, wrong counts */
    bool retry_zeros; /* retry_releases: RETRY index % 10 == 0 at count 1 */
    int retried;
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
    int count = kc_records_delivery_count(b);
    const kc_record_t *r;
    kc_cb_result_t res = KC_CB_CONTINUE;
    pthread_mutex_lock(&t->mu);
    while ((r = kc_records_next(b))) {
        int64_t i = kc_test_record_index(r);
        if (i < 0 || i >= RECORDS || count < 1) {
            t->bad++;
            continue;
        }
        if (t->retry_zeros && i % 10 == 0 && count == 1) {
            t->retried++;
            res = KC_CB_RETRY;
        }
        kc_error_t e;
        if (t->retry_zeros && i % 10 == 1 && kc_share_ack(b, r, KC_SHARE_REJECT, &e) != KC_OK) {
            fprintf(stderr, "kc_share_ack: %s\n", e.msg);
            t->bad++;
        }
        if (!t->deliveries[i]++)
            t->distinct++;
        if (count != t->deliveries[i])
            t->bad++;
        t->count_seen[i] = count;
        t->by_member[m->id]++;
    }
    pthread_mutex_unlock(&t->mu);
    return res;
}

static kc_consumer_t *share_consumer(member_t *m, const char *group, const char *max_records)
{
    char more[96];
    snprintf(more, sizeof more, "worker.threads=2%s%s",
             max_records ? ";callback.batch.max.records=" : "", max_records ? max_records : "");
    kc_callbacks_t cbs = {.on_records = on_records, .opaque = m};
    return kc_sd_consumer(group, more, &cbs);
}

static int distinct(tally_t *t)
{
    pthread_mutex_lock(&t->mu);
    int n = t->distinct;
    pthread_mutex_unlock(&t->mu);
    return n;
}

/* The value of the first sample of `family` (its labels skipped) in c's metrics. */
static long metric(kc_consumer_t *c, const char *family)
{
    char *text;
    kc_error_t err;
    assert_int_equal(kc_metrics(c, &text, NULL, &err), KC_OK);
    char head[96];
    snprintf(head, sizeof head, "\n%s{", family);
    const char *at = strstr(text, head);
    if (!at)
        fail_msg("no %s in the metrics", family);
    at = strchr(at, '}');
    assert_non_null(at);
    long n = atol(at + 1);
    free(text);
    return n;
}

/* the share sessions' counters, through kc_metrics (the stats JSON's "share" object) */
static long share_accepted(kc_consumer_t *c)
{
    return metric(c, "kconsume_share_accepted");
}

static void accept_exactly_once(void **state)
{
    (void)state;
    char group[64];
    snprintf(group, sizeof group, "kc-share-api-g-%d", (int)getpid());
    kc_sd_setup("kc-share-api", 3, group);
    tally_t *t = calloc(1, sizeof *t);
    assert_non_null(t);
    pthread_mutex_init(&t->mu, NULL);
    member_t m[MEMBERS + 1];
    kc_consumer_t *c[MEMBERS];
    for (int i = 0; i < MEMBERS; i++) {
        m[i] = (member_t){t, i};
        c[i] = share_consumer(&m[i], group, NULL);
    }
    pid_t producer = kc_sd_produce_start(RECORDS);
    int64_t end = kc_test_now_ms() + 120000 * kc_test_time_scale();
    bool produced = false;
    while ((!produced || distinct(t) < RECORDS) && kc_test_now_ms() < end) {
        produced = produced || kc_sd_produce_done(producer);
        kc_test_sleep_ms(50);
    }
    assert_true(produced);
    assert_int_equal(distinct(t), RECORDS);
    kc_test_sleep_ms(1000); /* a redelivery, if any, would show up meanwhile */
    /* no offsets in a share group: the calls that need them refuse, saying why */
    kc_error_t err;
    assert_int_equal(kc_seek(c[0], kc_sd_topic, 0, KC_SEEK_OFFSET, 0, &err), KC_ERR_STATE);
    assert_non_null(strstr(err.msg, "share"));
    kc_topic_partition_t tp = {kc_sd_topic, 0, 0};
    assert_int_equal(kc_assign(c[0], &tp, 1, &err), KC_ERR_STATE);
    assert_non_null(strstr(err.msg, "share"));
    assert_int_equal(kc_commit(c[0], &tp, 1, 5000, &err), KC_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "share"));
    assert_int_equal(kc_commit(c[0], NULL, 0, 5000, &err), KC_OK); /* acknowledgements */
    /* the share sessions' counters, through kc_metrics (the stats JSON's "share" object) */
    long accepted = 0;
    for (int i = 0; i < MEMBERS; i++)
        accepted += share_accepted(c[i]);
    fprintf(stderr, "accepted per the members' share sessions: %ld\n", accepted);
    assert_true(accepted > 0 && accepted <= RECORDS);
    for (int i = 0; i < MEMBERS; i++)
        kc_test_close(c[i]);
    int twice = 0, members_used = 0;
    for (int i = 0; i < RECORDS; i++)
        twice += t->deliveries[i] != 1;
    for (int i = 0; i < MEMBERS; i++)
        members_used += t->by_member[i] > 0;
    fprintf(stderr, "deliveries by member: %d %d %d\n", t->by_member[0], t->by_member[1],
            t->by_member[2]);
    assert_int_equal(twice, 0);
    assert_int_equal(t->bad, 0);
    assert_true(members_used >= 2);
    /* A late member of the group: nothing left to acquire. */
    m[MEMBERS] = (member_t){t, MEMBERS};
    kc_consumer_t *late = share_consumer(&m[MEMBERS], group, NULL);
    kc_test_sleep_ms(4000);
    kc_test_close(late);
    assert_int_equal(t->by_member[MEMBERS], 0);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static void retry_releases(void **state)
{
    (void)state;
    char group[64];
    snprintf(group, sizeof group, "kc-share-retry-g-%d", (int)getpid());
    kc_sd_setup("kc-share-retry", 1, group);
    enum { N = 200 };
    kc_sd_produce(N);
    tally_t *t = calloc(1, sizeof *t);
    assert_non_null(t);
    pthread_mutex_init(&t->mu, NULL);
    t->retry_zeros = true;
    member_t m = {t, 0};
    kc_consumer_t *c = share_consumer(&m, group, "1");
    int64_t end = kc_test_now_ms() + 60000 * kc_test_time_scale();
    int want = N + N / 10; /* each index % 10 == 0 twice */
    for (;;) {
        pthread_mutex_lock(&t->mu);
        int total = t->by_member[0];
        pthread_mutex_unlock(&t->mu);
        if (total >= want || kc_test_now_ms() >= end)
            break;
        kc_test_sleep_ms(50);
    }
    kc_test_sleep_ms(1000);
    /* The partition's own counters (the stats JSON's partitions[], kconsume_partition_share_*):
     * every verdict answered by now (the commit), none held. */
    kc_error_t err;
    assert_int_equal(kc_commit(c, NULL, 0, 10000, &err), KC_OK);
    long acquired = metric(c, "kconsume_partition_share_acquired"),
         delivered = metric(c, "kconsume_partition_share_delivered"),
         accepted = metric(c, "kconsume_partition_share_accepted"),
         released = metric(c, "kconsume_partition_share_released"),
         rejected = metric(c, "kconsume_partition_share_rejected"),
         held = metric(c, "kconsume_partition_share_held"),
         session_released = metric(c, "kconsume_share_session_released");
    char *text, path[64], cmd[256];
    assert_int_equal(kc_metrics(c, &text, NULL, &err), KC_OK);
    snprintf(path, sizeof path, "/tmp/kc-share-metrics-%d.txt", (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    free(text);
    /* Debian's interpreter: its python3-prometheus-client (tests/testkit/install-deps) */
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s --share --client-id-hex 6b636f6e73756d65",
             kc_test_src_path("tests/support/check_metrics.py"), path); /* "kconsume" */
    int rc = system(cmd);
    unlink(path);
    assert_int_equal(rc, 0);
    printf("# partition 0: acquired %ld, delivered %ld, accepted %ld, released %ld, rejected %ld, "
           "held %ld; its session released %ld\n",
           acquired, delivered, accepted, released, rejected, held, session_released);
    kc_test_close(c);
    assert_int_equal(delivered, N + N / 10);
    assert_true(acquired >= delivered); /* gaps are acquired too */
    assert_int_equal(released, N / 10);
    assert_int_equal(rejected, N / 10);
    assert_int_equal(accepted, N - N / 10);
    assert_int_equal(held, 0);
    assert_int_equal(session_released, N / 10);
    assert_int_equal(t->bad, 0);
    assert_int_equal(t->retried, N / 10);
    for (int i = 0; i < N; i++) {
        if (i % 10 == 0) {
            assert_int_equal(t->deliveries[i], 2);
            assert_int_equal(t->count_seen[i], 2);
        } else {
            assert_int_equal(t->deliveries[i], 1);
            assert_int_equal(t->count_seen[i], 1);
        }
    }
    pthread_mutex_destroy(&t->mu);
    free(t);
}

/* verdicts_after_pause: member 0's first callback waits for `go`. */
typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool entered, go;
    int accepted[RECORDS]; /* per record index: deliveries accepted (callback returned CONTINUE) */
    int by_member[2];
    int bad;
} gate_t;

typedef struct gmember {
    gate_t *g;
    int id;
} gmember_t;

static kc_cb_result_t gated_records(void *opaque, kc_part_t *p, kc_records_t *b)
{
    (void)p;
    gmember_t *m = opaque;
    gate_t *g = m->g;
    pthread_mutex_lock(&g->mu);
    if (m->id == 0 && !g->entered) {
        g->entered = true;
        pthread_cond_broadcast(&g->cv);
        while (!g->go)
            pthread_cond_wait(&g->cv, &g->mu);
    }
    const kc_record_t *r;
    while ((r = kc_records_next(b))) {
        int64_t i = kc_test_record_index(r);
        if (i < 0 || i >= RECORDS) {
            g->bad++;
            continue;
        }
        g->accepted[i]++;
        g->by_member[m->id]++;
    }
    pthread_mutex_unlock(&g->mu);
    return KC_CB_CONTINUE;
}

static void verdicts_after_pause(void **state)
{
    (void)state;
    enum { N = 200 };
    char group[64];
    snprintf(group, sizeof group, "kc-share-pause-g-%d", (int)getpid());
    kc_sd_setup("kc-share-pause", 1, group);
    kc_sd_produce(N);
    gate_t *g = calloc(1, sizeof *g);
    assert_non_null(g);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    gmember_t m[2] = {{g, 0}, {g, 1}};
    kc_callbacks_t cbs = {.on_records = gated_records, .opaque = &m[0]};
    kc_consumer_t *a = kc_sd_consumer(group, "worker.threads=2", &cbs);
    int64_t end = kc_test_now_ms() + 60000 * kc_test_time_scale();
    pthread_mutex_lock(&g->mu);
    while (!g->entered && kc_test_now_ms() < end) {
        pthread_mutex_unlock(&g->mu);
        kc_test_sleep_ms(20);
        pthread_mutex_lock(&g->mu);
    }
    bool entered = g->entered;
    pthread_mutex_unlock(&g->mu);
    assert_true(entered);
    /* the partition leaves the share session while its records are in the callback */
    kc_topic_partition_t tp = {kc_sd_topic, 0, 0};
    kc_error_t err;
    assert_int_equal(kc_pause(a, &tp, 1, &err), KC_OK);
    kc_test_sleep_ms(1500); /* several ShareFetch rounds (fetch.max.wait.ms 200): forgotten */
    pthread_mutex_lock(&g->mu);
    g->go = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    kc_test_sleep_ms(1500);
    kc_test_close(a);
    pthread_mutex_lock(&g->mu);
    int first = g->by_member[0];
    pthread_mutex_unlock(&g->mu);
    fprintf(stderr, "accepted by the first consumer: %d of %d\n", first, N);
    assert_true(first > 0);
    /* a second consumer: everything the first did not accept, nothing it did */
    cbs.opaque = &m[1];
    kc_consumer_t *b = kc_sd_consumer(group, "worker.threads=2", &cbs);
    end = kc_test_now_ms() + 60000 * kc_test_time_scale();
    for (;;) {
        pthread_mutex_lock(&g->mu);
        int total = g->by_member[0] + g->by_member[1];
        pthread_mutex_unlock(&g->mu);
        if (total >= N || kc_test_now_ms() >= end)
            break;
        kc_test_sleep_ms(50);
    }
    kc_test_sleep_ms(2000); /* a record handed out again, if any, shows up meanwhile */
    kc_test_close(b);
    int twice = 0, never = 0;
    for (int i = 0; i < N; i++) {
        twice += g->accepted[i] > 1;
        never += g->accepted[i] == 0;
    }
    fprintf(stderr, "accepted by the second: %d; accepted twice: %d; never: %d\n", g->by_member[1],
            twice, never);
    assert_int_equal(g->bad, 0);
    assert_int_equal(twice, 0);
    assert_int_equal(never, 0);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

/* commit_acknowledgements: the first view sleeps; `covered` counts the records of views that
 * started before the test called the commit (their entry saw `committing` clear). */
typedef struct ctally {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool entered, committing;
    int processed, covered;
    bool async_done;
    kc_err_t async_rc;
    size_t async_n;
    int async_bad;
} ctally_t;

static kc_cb_result_t counting_records(void *opaque, kc_part_t *p, kc_records_t *b)
{
    (void)p;
    ctally_t *t = opaque;
    pthread_mutex_lock(&t->mu);
    bool first = !t->entered, covered = !t->committing;
    t->entered = true;
    pthread_mutex_unlock(&t->mu);
    if (first)
        kc_test_sleep_ms(1000); /* still running when the commit is called */
    int n = 0;
    while (kc_records_next(b))
        n++;
    pthread_mutex_lock(&t->mu);
    t->processed += n;
    if (covered)
        t->covered += n;
    pthread_mutex_unlock(&t->mu);
    return KC_CB_CONTINUE;
}

static void async_done(void *opaque, kc_err_t rc, const kc_error_t *err,
                       const kc_commit_result_t *res, size_t n)
{
    ctally_t *t = opaque;
    pthread_mutex_lock(&t->mu);
    t->async_rc = rc;
    t->async_n = n;
    for (size_t i = 0; i < n; i++)
        t->async_bad += res[i].code != KC_OK || res[i].offset <= 0;
    if (rc != KC_OK)
        fprintf(stderr, "kc_commit_async_results: %s\n", err ? err->msg : "?");
    t->async_done = true;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

static int processed(ctally_t *t)
{
    pthread_mutex_lock(&t->mu);
    int n = t->processed;
    pthread_mutex_unlock(&t->mu);
    return n;
}

/* One partition, four workers: its records run on several workers at once (share lanes), each
 * accepted exactly once. The callback takes 2 ms per record, so the views of the batches the
 * member holds overlap in time; the most callbacks seen running together is printed. */
typedef struct par {
    pthread_mutex_t mu;
    int inside, most, accepted, twice, bad;
    int seen[RECORDS];
} par_t;

static kc_cb_result_t par_records(void *opaque, kc_part_t *p, kc_records_t *b)
{
    par_t *t = opaque;
    pthread_mutex_lock(&t->mu);
    if (p->partition != 0)
        t->bad++;
    if (++t->inside > t->most)
        t->most = t->inside;
    pthread_mutex_unlock(&t->mu);
    const kc_record_t *r;
    int n = 0;
    while ((r = kc_records_next(b))) {
        int64_t i = kc_test_record_index(r);
        pthread_mutex_lock(&t->mu);
        if (i < 0 || i >= RECORDS)
            t->bad++;
        else if (t->seen[i]++)
            t->twice++;
        else
            t->accepted++;
        pthread_mutex_unlock(&t->mu);
        n++;
    }
    kc_test_sleep_ms(2 * n);
    pthread_mutex_lock(&t->mu);
    t->inside--;
    pthread_mutex_unlock(&t->mu);
    return KC_CB_CONTINUE;
}

static void one_partition_on_every_worker(void **state)
{
    (void)state;
    enum { N = 2000 };
    char group[64];
    snprintf(group, sizeof group, "kc-share-par-g-%d", (int)getpid());
    kc_sd_setup("kc-share-par", 1, group);
    kc_sd_produce(N);
    par_t *t = calloc(1, sizeof *t);
    assert_non_null(t);
    pthread_mutex_init(&t->mu, NULL);
    kc_callbacks_t cbs = {.on_records = par_records, .opaque = t};
    int64_t t0 = kc_test_now_ms();
    kc_consumer_t *c =
        kc_sd_consumer(group, "worker.threads=4;callback.batch.max.records=25", &cbs);
    int64_t end = t0 + 60000 * kc_test_time_scale();
    int accepted = 0;
    while (kc_test_now_ms() < end) {
        pthread_mutex_lock(&t->mu);
        accepted = t->accepted;
        pthread_mutex_unlock(&t->mu);
        if (accepted >= N)
            break;
        kc_test_sleep_ms(20);
    }
    int64_t took = kc_test_now_ms() - t0;
    kc_error_t err;
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);
    fprintf(stderr,
            "one partition, 4 workers: %d accepted in %lld ms; at most %d callbacks at once\n",
            t->accepted, (long long)took, t->most);
    assert_int_equal(t->accepted, N);
    assert_int_equal(t->twice, 0);
    assert_int_equal(t->bad, 0);
    assert_true(t->most >= 2);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static void commit_acknowledgements(void **state)
{
    (void)state;
    enum { N = 200, MORE = 100 };
    char group[64];
    snprintf(group, sizeof group, "kc-share-commit-g-%d", (int)getpid());
    kc_sd_setup("kc-share-commit", 1, group);
    kc_sd_produce(N);
    ctally_t *t = calloc(1, sizeof *t);
    assert_non_null(t);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    /* fetch.max.wait.ms 2000: with every record handed out, a ShareFetch carrying the verdicts
     * would be answered only after that wait; the commit does not leave them to it */
    kc_callbacks_t cbs = {.on_records = counting_records, .opaque = t};
    kc_consumer_t *c = kc_sd_consumer(group, "worker.threads=2;fetch.max.wait.ms=2000", &cbs);
    int64_t end = kc_test_now_ms() + 60000 * kc_test_time_scale();
    for (;;) {
        pthread_mutex_lock(&t->mu);
        bool in = t->entered;
        pthread_mutex_unlock(&t->mu);
        if (in || kc_test_now_ms() >= end)
            break;
        kc_test_sleep_ms(10);
    }
    pthread_mutex_lock(&t->mu);
    assert_true(t->entered);
    t->committing = true;
    pthread_mutex_unlock(&t->mu);
    kc_commit_result_t *res = NULL;
    size_t n = 0;
    kc_error_t err;
    kc_err_t rc = kc_commit_results(c, NULL, 0, 15000, &res, &n, &err);
    if (rc != KC_OK)
        fail_msg("kc_commit_results: %s", err.msg);
    pthread_mutex_lock(&t->mu);
    int covered = t->covered;
    pthread_mutex_unlock(&t->mu);
    long accepted = share_accepted(c);
    fprintf(stderr, "commit: %zu result(s); covered %d; accepted %ld\n", n, covered, accepted);
    assert_true(covered > 0); /* the sleeping view, at least */
    assert_true(accepted >= covered);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(res[i].topic, kc_sd_topic);
        assert_int_equal(res[i].partition, 0);
        assert_int_equal(res[i].code, KC_OK);
        assert_true(res[i].offset > 0);
    }
    free(res);
    /* the rest, then more, committed asynchronously */
    kc_sd_produce(MORE);
    end = kc_test_now_ms() + 60000 * kc_test_time_scale();
    while (processed(t) < N + MORE && kc_test_now_ms() < end)
        kc_test_sleep_ms(20);
    assert_int_equal(processed(t), N + MORE);
    assert_int_equal(kc_commit_async_results(c, NULL, 0, async_done, t, &err), KC_OK);
    pthread_mutex_lock(&t->mu);
    while (!t->async_done)
        pthread_cond_wait(&t->cv, &t->mu);
    pthread_mutex_unlock(&t->mu);
    assert_int_equal(t->async_rc, KC_OK);
    assert_int_equal(t->async_bad, 0);
    accepted = share_accepted(c);
    fprintf(stderr, "async commit: %zu result(s); accepted %ld of %d\n", t->async_n, accepted,
            N + MORE);
    assert_int_equal(accepted, N + MORE);
    /* offsets are not a share group's to commit */
    kc_offset_meta_t om = {kc_sd_topic, 0, 1, NULL};
    assert_int_equal(kc_commit_metadata(c, &om, 1, 5000, &err), KC_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "share"));
    kc_test_close(c);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static void commit_in_pull_mode(void **state)
{
    (void)state;
    enum { N = 400 };
    char group[64];
    snprintf(group, sizeof group, "kc-share-pull-g-%d", (int)getpid());
    kc_sd_setup("kc-share-pull", 2, group);
    kc_sd_produce(N);
    kc_callbacks_t cbs = {0}; /* pull mode */
    kc_consumer_t *c =
        kc_sd_consumer(group, "worker.threads=2;callback.batch.max.records=10", &cbs);
    int polled = 0;
    int64_t end = kc_test_now_ms() + 60000 * kc_test_time_scale();
    kc_error_t err;
    while (polled < N / 4 && kc_test_now_ms() < end) {
        kc_records_t *b = NULL;
        if (kc_poll(c, 200, &b, &err) != KC_OK || !b)
            continue;
        while (kc_records_next(b))
            polled++;
        kc_records_release(c, b, KC_CB_CONTINUE);
    }
    assert_true(polled >= N / 4);
    kc_test_sleep_ms(300); /* the workers queue more views meanwhile, unpolled */
    int64_t t0 = kc_test_now_ms();
    kc_err_t rc = kc_commit(c, NULL, 0, 5000, &err);
    if (rc != KC_OK)
        fail_msg("kc_commit in pull mode: %s", err.msg);
    long accepted = share_accepted(c);
    fprintf(stderr, "pull mode: polled %d, accepted %ld, commit took %lld ms\n", polled, accepted,
            (long long)(kc_test_now_ms() - t0));
    assert_true(accepted >= polled);
    kc_test_close(c);
}

/* pull_lapsed_not_handed_out: with the group's record lock at 2 s, a view polled and held for
 * 3 s outlasts the lock of every record acquired with it, including those of the views the other
 * worker queued meanwhile. None of those is handed out afterwards: the views polled after it
 * carry only records the broker handed out again (delivery count 2 or more). */
static void pull_lapsed_not_handed_out(void **state)
{
    (void)state;
    enum { N = 40 };
    char group[64];
    snprintf(group, sizeof group, "kc-share-lapse-g-%d", (int)getpid());
    kc_sd_setup("kc-share-lapse", 1, group);
    kc_sd_group_config(group, "share.record.lock.duration.ms=2000");
    kc_sd_produce(N);
    kc_callbacks_t cbs = {0}; /* pull mode */
    kc_consumer_t *c = kc_sd_consumer(group, "worker.threads=2;callback.batch.max.records=5", &cbs);
    kc_error_t err;
    kc_records_t *b = NULL;
    for (int64_t end = kc_test_now_ms() + 30000; !b && kc_test_now_ms() < end;)
        if (kc_poll(c, 200, &b, &err) != KC_OK)
            b = NULL;
    assert_non_null(b);
    int first_count = kc_records_delivery_count(b);
    kc_test_sleep_ms(3000); /* the other worker's views wait in the queue meanwhile */
    kc_records_release(c, b, KC_CB_CONTINUE); /* too late to count */
    int after = 0, fresh = 0, views = 0;
    for (int64_t end = kc_test_now_ms() + 3000; kc_test_now_ms() < end;) {
        b = NULL;
        if (kc_poll(c, 200, &b, &err) != KC_OK || !b)
            continue;
        views++;
        int count = kc_records_delivery_count(b);
        while (kc_records_next(b)) {
            after++;
            fresh += count == 1;
        }
        kc_records_release(c, b, KC_CB_CONTINUE);
    }
    long lapsed = metric(c, "kconsume_share_lapsed");
    printf("# first view: delivery %d, held 3 s; then %d views, %d records, %d of delivery 1; "
           "lapsed %ld\n",
           first_count, views, after, fresh, lapsed);
    kc_test_close(c);
    assert_int_equal(first_count, 1);
    assert_int_equal(fresh, 0);
    assert_true(after > 0);
    assert_true(lapsed > 0);
}

/* commit_reports_late_verdicts: the first view's callback outlasts the group's 2 s lock, so its
 * acceptance is refused before it leaves (the broker handed the records out again); the next
 * commit lists the partition with KC_ERR_STATE and says why, instead of answering KC_OK. */
typedef struct late {
    _Atomic int calls, done_first;
} late_t;

static kc_cb_result_t late_records(void *opaque, kc_part_t *p, kc_records_t *b)
{
    (void)p;
    (void)b;
    late_t *l = opaque;
    if (atomic_fetch_add(&l->calls, 1) == 0) {
        kc_test_sleep_ms(3000);
        atomic_store(&l->done_first, 1);
    }
    return KC_CB_CONTINUE;
}

static void commit_reports_late_verdicts(void **state)
{
    (void)state;
    char group[64];
    snprintf(group, sizeof group, "kc-share-late-g-%d", (int)getpid());
    kc_sd_setup("kc-share-late", 1, group);
    kc_sd_group_config(group, "share.record.lock.duration.ms=2000");
    kc_sd_produce(20);
    late_t l = {0};
    kc_callbacks_t cbs = {.on_records = late_records, .opaque = &l};
    kc_consumer_t *c = kc_sd_consumer(group, "worker.threads=1", &cbs);
    for (int64_t end = kc_test_now_ms() + 30000;
         !atomic_load(&l.done_first) && kc_test_now_ms() < end;)
        kc_test_sleep_ms(50);
    assert_true(atomic_load(&l.done_first));
    kc_commit_result_t *res = NULL;
    size_t n = 0;
    kc_error_t err = {0};
    kc_err_t rc = kc_commit_results(c, NULL, 0, 10000, &res, &n, &err);
    printf("# commit after the late verdict: %s (%s), %zu result(s)", kc_err_name(rc), err.msg, n);
    for (size_t i = 0; i < n; i++)
        printf("; %s[%d] %s offset %lld", res[i].topic, res[i].partition, kc_err_name(res[i].code),
               (long long)res[i].offset);
    printf("\n");
    kc_test_close(c);
    assert_int_equal(rc, KC_ERR_STATE);
    assert_non_null(strstr(err.msg, "not sent"));
    assert_int_equal(n, 1);
    assert_int_equal(res[0].partition, 0);
    assert_int_equal(res[0].code, KC_ERR_STATE);
    assert_true(res[0].offset > 0);
    free(res);
}

int main(void)
{
    kc_test_filter();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accept_exactly_once),
        cmocka_unit_test(retry_releases),
        cmocka_unit_test(verdicts_after_pause),
        cmocka_unit_test(one_partition_on_every_worker),
        cmocka_unit_test(commit_acknowledgements),
        cmocka_unit_test(commit_in_pull_mode),
        cmocka_unit_test(pull_lapsed_not_handed_out),
        cmocka_unit_test(commit_reports_late_verdicts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
