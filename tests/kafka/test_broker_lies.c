/* kc-test-label: threads */
/* A broker that lies about its versions: it advertises an API's versions in ApiVersions, then
 * answers every request of that API with UNSUPPORTED_VERSION (the fault proxy's inject rule) or
 * with a body that does not decode (its garbage rule), in front of the suite's cluster. For each
 * API on a consumer's path, driven through the public API the way an application meets it:
 *  - the first error (an error event, or the failed call's own error) names the API, within
 *    LIE_BOUND_MS of the first call (not a retry loop that never says what is wrong, not the
 *    caller's timeout), and says what happened: KC_ERR_MALFORMED for a body that does not
 *    decode (not a transport error), UNSUPPORTED_VERSION for the refusal;
 *  - nothing is delivered, no crash (the ASan build), and kc_close returns well within its
 *    timeout (2 s of 5);
 *  - the consumer does not hammer the lying broker: it backs off between attempts.
 * KC_LIES_LOG=debug sets the consumers' log.level (default info) for a post-mortem.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "kc_test.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault_proxy_client.h"
#include "kconsume.h"

#define NP           2
#define LIE_BOUND_MS 10000
#define CALL_MS      15000
#define HAMMER_MS    3000

typedef enum how { ASSIGN, PARTITIONS, WATERMARKS, COMMIT, COMMITTED, GROUP } how_t;

typedef struct seen {
    pthread_mutex_t mu;
    long records;
    char first[512]; /* the first error's message and code */
    kc_err_t first_code;
    int64_t first_ms;
} seen_t;

static char topic[64];

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)p;
    seen_t *s = o;
    pthread_mutex_lock(&s->mu);
    while (kc_records_next(b) != NULL)
        s->records++;
    pthread_mutex_unlock(&s->mu);
    return KC_CB_CONTINUE;
}

static void first_error(seen_t *s, kc_err_t code, const char *msg)
{
    pthread_mutex_lock(&s->mu);
    if (!s->first_ms) {
        snprintf(s->first, sizeof s->first, "%s", msg);
        s->first_code = code;
        s->first_ms = kc_test_now_ms();
    }
    pthread_mutex_unlock(&s->mu);
}

static void on_event(void *o, const kc_event_t *ev)
{
    if (ev->type != KC_EVENT_ERROR)
        return;
    printf("#     event %s: %s\n", kc_err_name(ev->error->code), ev->error->msg);
    first_error(o, ev->error->code, ev->error->msg);
}

static int setup(void **state)
{
    (void)state;
    snprintf(topic, sizeof topic, "kc-lies-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions %d", topic, NP);
    kc_test_cluster("produce %s --records 100 --size 16 --keys 4", topic);
    return 0;
}

static long fired_count(kc_fp_t *fp, const char *rule)
{
    return kc_fp_stat(fp, strcmp(rule, "garbage") == 0 ? "fired.garbage" : "fired.inject");
}

/* One API lying in one way, met through `how`. */
static void lie(const char *api, const char *rule, how_t how)
{
    printf("# %s: %s\n", api, rule);
    kc_fp_t *fp = kc_fp_start(kc_test_env("KC_BOOTSTRAP"));
    assert_non_null(fp);
    char reply[256];
    /* ConsumerGroupHeartbeat hidden: group.protocol=auto then runs the classic protocol, whose
     * APIs are the ones lying here. */
    if (kc_fp_cmd(fp, reply, sizeof reply, "hide-api api=ConsumerGroupHeartbeat") != 0 ||
        kc_fp_cmd(fp, reply, sizeof reply, "%s api=%s count=1000000", rule, api) != 0)
        fail_msg("proxy: %s", reply);
    seen_t *s = calloc(1, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    /* A group of its own per case: the member of a case before (fatal, so it did not leave)
     * would hold the next JoinGroup in the broker until its session expires. */
    char group[96];
    snprintf(group, sizeof group, "kc-lies-%s-%s-%d", api,
             strcmp(rule, "garbage") == 0 ? "garbage" : "refused", (int)getpid());
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    const char *kv[][2] = {{"bootstrap.servers", kc_fp_bootstrap(fp)},
                           {"group.id", group},
                           {"auto.offset.reset", "earliest"},
                           {"enable.auto.commit", "false"},
                           {"fetch.max.wait.ms", "100"},
                           {"log.level", getenv("KC_LIES_LOG") ? getenv("KC_LIES_LOG") : "info"}};
    for (size_t i = 0; i < sizeof kv / sizeof *kv; i++)
        if (kc_conf_set(conf, kv[i][0], kv[i][1], &err) != KC_OK)
            fail_msg("%s: %s", kv[i][0], err.msg);
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event, .opaque = s};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    kc_topic_partition_t tps[NP];
    for (int p = 0; p < NP; p++)
        tps[p] = (kc_topic_partition_t){topic, p, KC_OFFSET_BEGINNING};
    int64_t t0 = kc_test_now_ms();
    kc_err_t rc = KC_OK;
    int32_t n = 0;
    int64_t lo, hi;
    const char *topics[] = {topic};
    switch (how) {
    case ASSIGN:
        rc = kc_assign(c, tps, NP, &err);
        break;
    case PARTITIONS:
        rc = kc_topic_partitions(c, topic, &n, CALL_MS, &err);
        break;
    case WATERMARKS:
        rc = kc_query_watermarks(c, topic, 0, &lo, &hi, CALL_MS, &err);
        break;
    case COMMIT:
        tps[0].offset = 1;
        rc = kc_commit(c, tps, 1, CALL_MS, &err);
        break;
    case COMMITTED:
        rc = kc_committed(c, tps, NP, CALL_MS, &err);
        break;
    case GROUP:
        rc = kc_subscribe(c, topics, 1, &err);
        break;
    }
    if (rc != KC_OK) {
        printf("#     call %s: %s\n", kc_err_name(rc), err.msg);
        first_error(s, rc, err.msg);
    }
    for (int64_t end = t0 + LIE_BOUND_MS; kc_test_now_ms() < end;) {
        pthread_mutex_lock(&s->mu);
        bool got = s->first_ms != 0;
        pthread_mutex_unlock(&s->mu);
        if (got)
            break;
        kc_test_sleep_ms(50);
    }
    /* A group member keeps trying (the coordinator may recover), but not every few ms: over
     * HAMMER_MS the lookups back off from retry.backoff.ms (100) doubling to 1 s, about 6
     * attempts; without a backoff it was one every ~12 ms (about 250). */
    long fired_before = 0, fired_during = 0;
    if (how == GROUP) {
        fired_before = fired_count(fp, rule);
        kc_test_sleep_ms(HAMMER_MS);
        fired_during = fired_count(fp, rule) - fired_before;
        printf("#   proxy fired %ld times in the %d ms after the first error\n", fired_during,
               HAMMER_MS);
    }
    int64_t tc = kc_test_now_ms();
    (void)kc_close(c, 5000, &err);
    kc_destroy(c);
    int64_t close_ms = kc_test_now_ms() - tc;
    pthread_mutex_lock(&s->mu);
    printf("#   first error after %lld ms: %s: %s; close %lld ms; records %ld\n",
           (long long)(s->first_ms ? s->first_ms - t0 : -1), kc_err_name(s->first_code), s->first,
           (long long)close_ms, s->records);
    assert_true(s->first_ms != 0);
    assert_true(s->first_ms - t0 < LIE_BOUND_MS);
    if (!strstr(s->first, api))
        fail_msg("the first error does not name %s: %s", api, s->first);
    /* "Fetch" must not be found only as part of "OffsetFetch" */
    if (strcmp(api, "Fetch") == 0 && strstr(s->first, "OffsetFetch") &&
        !strstr(s->first, " Fetch") && strncmp(s->first, "Fetch", 5) != 0)
        fail_msg("the first error names OffsetFetch, not Fetch: %s", s->first);
    /* Said for what it is: not a transport error (which sends one looking at the network), and
     * the broker's refusal by its name. */
    if (strcmp(rule, "garbage") == 0)
        assert_int_equal(s->first_code, KC_ERR_MALFORMED);
    else if (!strstr(s->first, "UNSUPPORTED_VERSION"))
        fail_msg("the first error does not say UNSUPPORTED_VERSION: %s", s->first);
    assert_int_equal(s->records, 0);
    pthread_mutex_unlock(&s->mu);
    /* Nothing a lying broker says may hold kc_close to its 5 s timeout: a member that was
     * joining when a group request failed goes on closing (engine/group/classic/member.c). */
    assert_true(close_ms < 2000);
    assert_true(fired_during <= 15);
    long fired = fired_count(fp, rule);
    printf("#   proxy fired %ld\n", fired);
    assert_true(fired > 0);
    assert_int_equal(kc_fp_stop(fp), 0);
    free(s);
}

#define UNSUP "inject error=UNSUPPORTED_VERSION"

static void metadata_unsupported(void **st)
{
    (void)st, lie("Metadata", UNSUP, PARTITIONS);
}
static void metadata_garbage(void **st)
{
    (void)st, lie("Metadata", "garbage", PARTITIONS);
}
static void list_offsets_unsupported(void **st)
{
    (void)st, lie("ListOffsets", UNSUP, WATERMARKS);
}
static void list_offsets_garbage(void **st)
{
    (void)st, lie("ListOffsets", "garbage", WATERMARKS);
}
static void fetch_unsupported(void **st)
{
    (void)st, lie("Fetch", UNSUP, ASSIGN);
}
static void fetch_garbage(void **st)
{
    (void)st, lie("Fetch", "garbage", ASSIGN);
}
static void offset_commit_unsupported(void **st)
{
    (void)st, lie("OffsetCommit", UNSUP, COMMIT);
}
static void offset_commit_garbage(void **st)
{
    (void)st, lie("OffsetCommit", "garbage", COMMIT);
}
static void offset_fetch_unsupported(void **st)
{
    (void)st, lie("OffsetFetch", UNSUP, COMMITTED);
}
static void offset_fetch_garbage(void **st)
{
    (void)st, lie("OffsetFetch", "garbage", COMMITTED);
}
static void find_coordinator_unsupported(void **st)
{
    (void)st, lie("FindCoordinator", UNSUP, COMMITTED);
}
static void find_coordinator_garbage(void **st)
{
    (void)st, lie("FindCoordinator", "garbage", COMMITTED);
}
static void join_group_unsupported(void **st)
{
    (void)st, lie("JoinGroup", UNSUP, GROUP);
}
static void join_group_garbage(void **st)
{
    (void)st, lie("JoinGroup", "garbage", GROUP);
}
static void sync_group_unsupported(void **st)
{
    (void)st, lie("SyncGroup", UNSUP, GROUP);
}
static void sync_group_garbage(void **st)
{
    (void)st, lie("SyncGroup", "garbage", GROUP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(metadata_unsupported),
        cmocka_unit_test(metadata_garbage),
        cmocka_unit_test(list_offsets_unsupported),
        cmocka_unit_test(list_offsets_garbage),
        cmocka_unit_test(fetch_unsupported),
        cmocka_unit_test(fetch_garbage),
        cmocka_unit_test(offset_commit_unsupported),
        cmocka_unit_test(offset_commit_garbage),
        cmocka_unit_test(offset_fetch_unsupported),
        cmocka_unit_test(offset_fetch_garbage),
        cmocka_unit_test(find_coordinator_unsupported),
        cmocka_unit_test(find_coordinator_garbage),
        cmocka_unit_test(join_group_unsupported),
        cmocka_unit_test(join_group_garbage),
        cmocka_unit_test(sync_group_unsupported),
        cmocka_unit_test(sync_group_garbage),
    };
    kc_test_filter();
    return cmocka_run_group_tests(tests, setup, NULL);
}
