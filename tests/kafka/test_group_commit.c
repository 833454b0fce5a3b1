/* kc-test-label: threads */
/* Manual commits by a group member, for group.protocol=consumer and =classic, with
 * enable.auto.commit=false, the public consumer subscribed to a 3-partition topic:
 *  - from inside on_records: kc_commit_async of the view's end offset, result callback KC_OK;
 *  - from the application thread: kc_commit(NULL) (the held partitions' committable offsets),
 *    then an explicit kc_commit of one partition, then kc_commit_async(NULL) with a callback;
 *  - kc_committed (OffsetFetch) reads back exactly what each step committed;
 *  - no error event at all (an anonymous commit would be UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION
 *    from a group with a live member; a KIP-848 commit without the current epoch,
 *    STALE_MEMBER_EPOCH);
 *  - kafka-consumer-groups --describe (ConsumerGroupCommand) shows the committed offsets at the
 *    log end, lag 0;
 *  - commits racing a rebalance: the app thread commits every 20 ms while a second member joins
 *    and the group rebalances. KIP-848: every commit succeeds (the epoch moves under them; a
 *    STALE_MEMBER_EPOCH is asked again with the fresh one, never surfaced). Classic: a refusal is
 *    only REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID (KC_ERR_BROKER) or "not
 *    a member" (KC_ERR_STATE) while rejoining, each with the explanation appended, and commits
 *    succeed again once the group settled.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "kc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kconsume.h"
#include "proto/kafka_errors.h"

#define NP   3
#define RECS 600

/* Written by workers, read by the test thread: atomics only. */
static _Atomic int64_t total;
static _Atomic int inrec_sent[NP], inrec_ok, inrec_done, async_done, async_rc = 1;
static _Atomic int errors, first_error_kafka;
static char first_error_msg[256]; /* written once before first_error_kafka's release store */
static kc_consumer_t *_Atomic cons;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One topic for every case (each has its own group): created once, RECS records spread by key. */
static char topic[64];

static int make_topic(void **state)
{
    (void)state;
    snprintf(topic, sizeof topic, "kc-gcommit-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions %d --replication 3", topic, NP);
    kc_test_cluster("produce %s --records %d --size 100 --keys 60", topic, RECS);
    return 0;
}

static void on_inrec(void *opaque, kc_err_t rc, const kc_error_t *err)
{
    (void)opaque;
    if (rc == KC_OK)
        atomic_fetch_add(&inrec_ok, 1);
    else
        fprintf(stderr, "# commit from on_records failed: %s\n", err ? err->msg : "?");
    atomic_fetch_add(&inrec_done, 1);
}

static void on_async(void *opaque, kc_err_t rc, const kc_error_t *err)
{
    (void)opaque;
    if (rc != KC_OK)
        fprintf(stderr, "# async commit failed: %s\n", err ? err->msg : "?");
    atomic_store(&async_rc, rc);
    atomic_fetch_add(&async_done, 1);
}

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o;
    while (kc_records_next(b))
        atomic_fetch_add(&total, 1);
    /* Once per partition, from callback context (the async form is the one allowed here). */
    int zero = 0;
    if (p->partition < NP && atomic_compare_exchange_strong(&inrec_sent[p->partition], &zero, 1)) {
        kc_topic_partition_t tp = {p->topic, p->partition, kc_records_next_offset(b)};
        kc_error_t err;
        if (kc_commit_async(atomic_load(&cons), &tp, 1, on_inrec, NULL, &err) != KC_OK)
            atomic_fetch_add(&inrec_done, 1000); /* visible as a failure below */
    }
    return KC_CB_CONTINUE;
}

static void on_event(void *o, const kc_event_t *ev)
{
    (void)o;
    if (ev->type != KC_EVENT_ERROR)
        return;
    if (atomic_fetch_add(&errors, 1) == 0) {
        snprintf(first_error_msg, sizeof first_error_msg, "%s", ev->error->msg);
        atomic_store_explicit(&first_error_kafka,
                              ev->error->kafka_code ? ev->error->kafka_code : -1,
                              memory_order_release);
    }
}

/* Committed offsets of all NP partitions (KC_OFFSET_INVALID when none). */
static void committed(kc_consumer_t *c, const char *t, int64_t out[NP])
{
    kc_topic_partition_t tps[NP];
    for (int i = 0; i < NP; i++)
        tps[i] = (kc_topic_partition_t){t, i, 0};
    kc_error_t err;
    if (kc_committed(c, tps, NP, 10000, &err) != KC_OK)
        fail_msg("kc_committed: %s", err.msg);
    for (int i = 0; i < NP; i++)
        out[i] = tps[i].offset;
}

static int at_end(const int64_t got[NP], const int64_t hi[NP])
{
    for (int i = 0; i < NP; i++)
        if (got[i] != (hi[i] > 0 ? hi[i] : KC_OFFSET_INVALID))
            return 0;
    return 1;
}

/* ConsumerGroupCommand --describe: rows for `topic` whose CURRENT-OFFSET equals LOG-END-OFFSET. */
static int describe_at_end(const char *group, int *rows)
{
    char out[256], cmd[1024];
    snprintf(out, sizeof out, "%s/describe-%s.txt", kc_test_env("KC_CLUSTER_DIR"), group);
    snprintf(cmd, sizeof cmd,
             "%s tool ConsumerGroupCommand "
             "--bootstrap-server %s --describe --group %s --dir %s > %s 2>&1",
             kc_test_env("KC_TESTKIT"), kc_test_env("KC_BOOTSTRAP"), group,
             kc_test_env("KC_CLUSTER_DIR"), out);
    int rc = system(cmd);
    (void)rc;
    int ok = 0;
    *rows = 0;
    FILE *f = fopen(out, "r");
    char line[1024];
    while (f && fgets(line, sizeof line, f)) {
        char g[128], t[128], cur[32], end[32], lag[32];
        int p;
        if (sscanf(line, "%127s %127s %d %31s %31s %31s", g, t, &p, cur, end, lag) == 6 &&
            strcmp(g, group) == 0 && strcmp(t, topic) == 0) {
            (*rows)++;
            ok += strcmp(cur, end) == 0 && (strcmp(lag, "0") == 0 || strcmp(lag, "-") == 0);
            printf("#   describe: %s", line);
        }
    }
    if (f)
        fclose(f);
    return ok;
}

static void member_commits(const char *protocol)
{
    atomic_store(&total, 0);
    for (int i = 0; i < NP; i++)
        atomic_store(&inrec_sent[i], 0);
    atomic_store(&inrec_ok, 0);
    atomic_store(&inrec_done, 0);
    atomic_store(&async_done, 0);
    atomic_store(&errors, 0);
    char group[64];
    snprintf(group, sizeof group, "kc-gcommit-g-%s-%d", protocol, (int)getpid());

    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    const char *kv[][2] = {{"bootstrap.servers", kc_test_env("KC_BOOTSTRAP")},
                           {"group.id", group},
                           {"group.protocol", protocol},
                           {"enable.auto.commit", "false"},
                           {"auto.offset.reset", "earliest"},
                           {"worker.threads", "2"},
                           {"callback.batch.max.records", "50"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        if (kc_conf_set(conf, kv[i][0], kv[i][1], &err) != KC_OK)
            fail_msg("%s: %s", kv[i][0], err.msg);
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    atomic_store(&cons, c);
    int64_t hi[NP], sum = 0;
    int nonempty = 0;
    for (int i = 0; i < NP; i++) {
        assert_int_equal(kc_query_watermarks(c, topic, i, NULL, &hi[i], 10000, &err), KC_OK);
        sum += hi[i];
        nonempty += hi[i] > 0;
    }
    assert_int_equal(sum, RECS);
    const char *sub[] = {topic};
    assert_int_equal(kc_subscribe(c, sub, 1, &err), KC_OK);

    int64_t t0 = now_ms();
    while (now_ms() - t0 < 60000 && atomic_load(&total) < sum)
        usleep(20 * 1000);
    assert_int_equal(atomic_load(&total), sum);
    while (now_ms() - t0 < 70000 && atomic_load(&inrec_done) < nonempty)
        usleep(20 * 1000);
    printf("# %s: consumed %lld in %lld ms; commits from on_records: %d of %d ok\n", protocol,
           (long long)sum, (long long)(now_ms() - t0), atomic_load(&inrec_ok), nonempty);
    assert_int_equal(atomic_load(&inrec_done), nonempty);
    assert_int_equal(atomic_load(&inrec_ok), nonempty);

    /* Sync from the app thread, the held partitions' committable offsets. The last callbacks
     * may still be returning when `total` reached the end: ask until they all count. */
    int64_t got[NP];
    int ok = 0;
    for (int i = 0; i < 50 && !ok; i++) {
        if (kc_commit(c, NULL, 0, 10000, &err) != KC_OK)
            fail_msg("kc_commit(NULL): %s", err.msg);
        committed(c, topic, got);
        ok = at_end(got, hi);
        if (!ok)
            usleep(100 * 1000);
    }
    printf("# %s: after kc_commit(NULL): %lld %lld %lld (ends %lld %lld %lld)\n", protocol,
           (long long)got[0], (long long)got[1], (long long)got[2], (long long)hi[0],
           (long long)hi[1], (long long)hi[2]);
    assert_true(ok);

    /* Sync, explicit: one partition moved back to 5, read back. */
    int bp = hi[0] > 5 ? 0 : hi[1] > 5 ? 1 : 2;
    kc_topic_partition_t one = {topic, bp, 5};
    if (kc_commit(c, &one, 1, 10000, &err) != KC_OK)
        fail_msg("kc_commit(explicit): %s", err.msg);
    committed(c, topic, got);
    assert_int_equal(got[bp], 5);

    /* Async from the app thread, committable offsets again: back at the end. */
    assert_int_equal(kc_commit_async(c, NULL, 0, on_async, NULL, &err), KC_OK);
    while (now_ms() - t0 < 90000 && atomic_load(&async_done) == 0)
        usleep(20 * 1000);
    assert_int_equal(atomic_load(&async_done), 1);
    assert_int_equal(atomic_load(&async_rc), KC_OK);
    committed(c, topic, got);
    assert_true(at_end(got, hi));

    int rows, at = describe_at_end(group, &rows);
    printf("# %s: describe: %d rows, %d at the log end\n", protocol, rows, at);
    assert_int_equal(rows, NP);
    assert_int_equal(at, NP);

    int ne = atomic_load(&errors);
    if (ne)
        fail_msg("%s: %d error event(s), first (kafka %d): %s", protocol, ne,
                 atomic_load_explicit(&first_error_kafka, memory_order_acquire), first_error_msg);
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);
}

static _Atomic int b_assigns;

static void b_on_assign(void *o, kc_part_t *p)
{
    (void)o, (void)p;
    atomic_fetch_add(&b_assigns, 1);
}

static kc_cb_result_t b_on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o, (void)p;
    while (kc_records_next(b))
        ;
    return KC_CB_CONTINUE;
}

static kc_consumer_t *new_member(const char *group, const char *protocol, const kc_callbacks_t *cbs)
{
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    const char *kv[][2] = {{"bootstrap.servers", kc_test_env("KC_BOOTSTRAP")},
                           {"group.id", group},
                           {"group.protocol", protocol},
                           {"enable.auto.commit", "false"},
                           {"auto.offset.reset", "earliest"},
                           {"worker.threads", "1"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        if (kc_conf_set(conf, kv[i][0], kv[i][1], &err) != KC_OK)
            fail_msg("%s: %s", kv[i][0], err.msg);
    kc_consumer_t *c;
    if (kc_consumer_new(conf, cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    const char *sub[] = {topic};
    if (kc_subscribe(c, sub, 1, &err) != KC_OK)
        fail_msg("kc_subscribe: %s", err.msg);
    return c;
}

static void commits_during_rebalance(const char *protocol)
{
    atomic_store(&total, 0);
    atomic_store(&errors, 0);
    atomic_store(&b_assigns, 0);
    char group[64];
    snprintf(group, sizeof group, "kc-grace-g-%s-%d", protocol, (int)getpid());
    kc_callbacks_t ca = {.on_records = on_records, .on_event = on_event};
    kc_callbacks_t cb = {.on_assign = b_on_assign, .on_records = b_on_records};
    for (int i = 0; i < NP; i++)
        atomic_store(&inrec_sent[i], 1); /* no commits from A's callbacks here */
    kc_consumer_t *a = new_member(group, protocol, &ca);
    int64_t t0 = now_ms();
    while (now_ms() - t0 < 30000 && atomic_load(&total) < RECS)
        usleep(20 * 1000);
    assert_int_equal(atomic_load(&total), RECS);

    kc_consumer_t *b = new_member(group, protocol, &cb);
    int ok = 0, refused = 0, state = 0, other = 0;
    int64_t settled_at = -1, t1 = now_ms();
    kc_error_t err, last_refusal = {0};
    while (now_ms() - t1 < 40000) {
        kc_err_t rc = kc_commit(a, NULL, 0, 10000, &err);
        if (rc == KC_OK) {
            ok++;
        } else if (rc == KC_ERR_BROKER &&
                   (err.kafka_code == KC_KAFKA_REBALANCE_IN_PROGRESS ||
                    err.kafka_code == KC_KAFKA_ILLEGAL_GENERATION ||
                    err.kafka_code == KC_KAFKA_UNKNOWN_MEMBER_ID) &&
                   strstr(err.msg, " (")) {
            refused++;
            last_refusal = err;
        } else if (rc == KC_ERR_STATE && strstr(err.msg, "member")) {
            state++;
            last_refusal = err;
        } else {
            other++;
            fprintf(stderr, "# %s: unexpected commit result %s: %s\n", protocol, kc_err_name(rc),
                    err.msg);
        }
        if (settled_at < 0 && atomic_load(&b_assigns) > 0)
            settled_at = now_ms();
        if (settled_at >= 0 && now_ms() - settled_at > 2000 && rc == KC_OK)
            break;
        usleep(20 * 1000);
    }
    printf("# %s: commits while a member joined: %d ok, %d refused by the broker, %d while "
           "rejoining, %d other; second member assigned after %lld ms%s%s\n",
           protocol, ok, refused, state, other, (long long)(settled_at >= 0 ? settled_at - t1 : -1),
           refused + state ? "; last: " : "", refused + state ? last_refusal.msg : "");
    assert_true(settled_at >= 0);
    assert_int_equal(other, 0);
    if (strcmp(protocol, "consumer") == 0)
        assert_int_equal(refused + state, 0);
    /* The last commit, after the group settled, succeeded (the loop ends only on one). */
    assert_true(now_ms() - t1 < 40000);
    assert_int_equal(kc_close(b, 10000, &err), KC_OK);
    kc_destroy(b);
    assert_int_equal(kc_close(a, 10000, &err), KC_OK);
    kc_destroy(a);
}

static void kip848_commits_during_rebalance(void **state)
{
    (void)state;
    commits_during_rebalance("consumer");
}

static void classic_commits_during_rebalance(void **state)
{
    (void)state;
    commits_during_rebalance("classic");
}

static void kip848_member_commits(void **state)
{
    (void)state;
    member_commits("consumer");
}

static void classic_member_commits(void **state)
{
    (void)state;
    member_commits("classic");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kip848_member_commits),
        cmocka_unit_test(classic_member_commits),
        cmocka_unit_test(kip848_commits_during_rebalance),
        cmocka_unit_test(classic_commits_during_rebalance),
    };
    return cmocka_run_group_tests(tests, make_topic, NULL);
}
