/* kc-test-label: threads-long */
/* group.protocol=auto, the default, against the suite's cluster (Kafka 4.x, which has KIP-848):
 *  fresh_group_is_kip848       two members with no group setting: both run KIP-848 ("protocol":
 *                              "consumer" in the stats), every record consumed, none twice.
 *  classic_group_stays_classic a Java consumer (classic, range) holds the group: a kconsume member
 *                              with no group setting joins it as classic and the two share the
 *                              partitions (the group is not converted under the Java member).
 *  classic_setting_means_classic  partition.assignment.strategy set: classic, no error.
 * Through the fault proxy in front of the cluster:
 *  no_api_auto_falls_to_classic    ApiVersions without ConsumerGroupHeartbeat (hide-api, a broker
 *                                  before 3.7): classic, every record consumed.
 *  no_api_forced_consumer_fails_fast  the same with group.protocol=consumer: a fatal
 *                                  KC_ERR_FATAL error naming group.protocol=classic within the
 *                                  session timeout, not a FindCoordinator loop.
 *  unsupported_version_auto_falls_to_classic  the first ConsumerGroupHeartbeat answered
 *                                  UNSUPPORTED_VERSION (what 3.7-3.9 answer with the protocol
 *                                  off): classic.
 *  unsupported_version_forced_fails_fast  the same, forced: fatal, naming group.protocol=classic.
 *  describe_retry_follows_retry_backoff  DescribeGroups answered NOT_COORDINATOR once (what a
 *                                  fresh cluster's coordinator answers until its
 *                                  __consumer_offsets partition is loaded): asked again after
 *                                  retry.backoff.ms (3 s here, with jitter 2.4-3.6 s), not
 *                                  sooner, then KIP-848 and every record consumed.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "kc_test.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault_proxy_client.h"
#include "kconsume.h"

#define NP   4
#define RECS 800

typedef struct member {
    pthread_mutex_t mu;
    char stats[16384];
    char fatal[512];
    atomic_long records, fatals;
    int64_t fatal_ms;
} member_t;

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)p;
    member_t *m = o;
    long n = 0;
    while (kc_records_next(b))
        n++;
    atomic_fetch_add(&m->records, n);
    return KC_CB_CONTINUE;
}

static void on_event(void *o, const kc_event_t *ev)
{
    member_t *m = o;
    pthread_mutex_lock(&m->mu);
    if (ev->type == KC_EVENT_STATS)
        snprintf(m->stats, sizeof m->stats, "%s", ev->json);
    if (ev->type == KC_EVENT_ERROR && ev->error->code == KC_ERR_FATAL &&
        atomic_fetch_add(&m->fatals, 1) == 0) {
        snprintf(m->fatal, sizeof m->fatal, "%s", ev->error->msg);
        m->fatal_ms = kc_test_now_ms();
    }
    if (ev->type == KC_EVENT_ERROR)
        printf("# error: %s\n", ev->error->msg);
    pthread_mutex_unlock(&m->mu);
}

static char topic[64], group[64];

static void fresh_topic(const char *tag)
{
    static int n;
    snprintf(topic, sizeof topic, "kc-auto-%s-%d-%d", tag, (int)getpid(), n);
    snprintf(group, sizeof group, "kc-auto-%s-%d-%d", tag, (int)getpid(), n++);
    kc_test_cluster("topic create %s --partitions %d --replication 3", topic, NP);
    kc_test_cluster("produce %s --records %d --size 40 --keys 40", topic, RECS);
}

/* A consumer of `group` through `bootstrap`, with extra settings "k=v;k=v". */
static kc_consumer_t *member(member_t *m, const char *bootstrap, const char *extra)
{
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    const char *kv[][2] = {{"bootstrap.servers", bootstrap},
                           {"group.id", group},
                           {"auto.offset.reset", "earliest"},
                           {"statistics.interval.ms", "200"},
                           {"fetch.max.wait.ms", "100"}};
    for (size_t i = 0; i < sizeof kv / sizeof *kv; i++)
        if (kc_conf_set(conf, kv[i][0], kv[i][1], &err) != KC_OK)
            fail_msg("%s: %s", kv[i][0], err.msg);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", extra ? extra : "");
    char *save = NULL;
    for (char *t = strtok_r(buf, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(t, '=');
        *eq = '\0';
        if (kc_conf_set(conf, t, eq + 1, &err) != KC_OK)
            fail_msg("%s: %s", t, err.msg);
    }
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event, .opaque = m};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    const char *topics[] = {topic};
    if (kc_subscribe(c, topics, 1, &err) != KC_OK)
        fail_msg("kc_subscribe: %s", err.msg);
    return c;
}

/* The group object's protocol once it is decided ("" while choosing or before any stats). */
static void protocol_of(member_t *m, char *out, size_t cap)
{
    pthread_mutex_lock(&m->mu);
    const char *g = strstr(m->stats, "\"group\":{\"protocol\":\"");
    out[0] = '\0';
    if (g) {
        g += strlen("\"group\":{\"protocol\":\"");
        snprintf(out, cap, "%.*s", (int)strcspn(g, "\""), g);
    }
    if (strcmp(out, "auto") == 0)
        out[0] = '\0';
    pthread_mutex_unlock(&m->mu);
}

/* Partitions in the group object's "assignment". */
static int assigned(member_t *m)
{
    pthread_mutex_lock(&m->mu);
    const char *a = strstr(m->stats, "\"assignment\":[");
    const char *end = a ? strstr(a, "]]") : NULL; /* the last pair's end; none: empty */
    int n = 0;
    for (const char *q = a ? a + 14 : NULL; q && end && q < end; q++)
        n += *q == '[';
    pthread_mutex_unlock(&m->mu);
    return n;
}

/* Waits up to `ms` for the protocol to be decided; returns it in out. */
static void wait_protocol(member_t *m, char *out, size_t cap, int ms)
{
    for (int64_t end = kc_test_now_ms() + ms; kc_test_now_ms() < end; kc_test_sleep_ms(100)) {
        protocol_of(m, out, cap);
        if (out[0])
            break;
    }
    pthread_mutex_lock(&m->mu);
    const char *g = strstr(m->stats, "\"group\":");
    printf("# group object: %.300s\n", g ? g : "(no stats yet)");
    pthread_mutex_unlock(&m->mu);
}

static void close_member(kc_consumer_t *c)
{
    kc_error_t err;
    if (kc_close(c, 15000, &err) != KC_OK)
        fail_msg("kc_close: %s", err.msg);
    kc_destroy(c);
}

static void fresh_group_is_kip848(void **state)
{
    (void)state;
    fresh_topic("fresh");
    member_t a, b;
    kc_consumer_t *ca = member(&a, kc_test_env("KC_BOOTSTRAP"), NULL);
    char pa[32] = "", pb[32] = "";
    wait_protocol(&a, pa, sizeof pa, 20000);
    kc_consumer_t *cb = member(&b, kc_test_env("KC_BOOTSTRAP"), NULL);
    wait_protocol(&b, pb, sizeof pb, 20000);
    int64_t end = kc_test_now_ms() + 30000;
    while (kc_test_now_ms() < end &&
           (atomic_load(&a.records) + atomic_load(&b.records) < RECS ||
            assigned(&a) + assigned(&b) != NP || !assigned(&a) || !assigned(&b)))
        kc_test_sleep_ms(100);
    long total = atomic_load(&a.records) + atomic_load(&b.records);
    printf("# fresh group: protocols %s, %s; assigned %d + %d; records %ld of %d\n", pa, pb,
           assigned(&a), assigned(&b), total, RECS);
    assert_string_equal(pa, "consumer");
    assert_string_equal(pb, "consumer"); /* a KIP-848 group is not taken for a classic one */
    assert_int_equal(assigned(&a) + assigned(&b), NP);
    assert_true(assigned(&a) > 0 && assigned(&b) > 0);
    assert_int_equal(total, RECS);
    close_member(cb);
    close_member(ca);
}

static void classic_group_stays_classic(void **state)
{
    (void)state;
    fresh_topic("java");
    char out[256], cmd[1600];
    snprintf(out, sizeof out, "%s/java.out", kc_test_tmpdir("auto-java"));
    pid_t j = fork();
    assert_true(j >= 0);
    if (j == 0) {
        setsid(); /* its own process group: the JVM under the testkit script goes with it */
        snprintf(cmd, sizeof cmd,
                 "exec %s tool ConsoleConsumer --bootstrap-server "
                 "%s --topic %s --group %s --consumer-property group.protocol=classic "
                 "--consumer-property partition.assignment.strategy=org.apache.kafka.clients."
                 "consumer.RangeAssignor --consumer-property auto.offset.reset=earliest "
                 "--dir %s > %s 2>&1",
                 kc_test_env("KC_TESTKIT"), kc_test_env("KC_BOOTSTRAP"), topic, group,
                 kc_test_env("KC_CLUSTER_DIR"), out);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    /* The Java member is in the group once it printed the records. */
    long lines = 0;
    for (int64_t end = kc_test_now_ms() + 60000; kc_test_now_ms() < end && lines < RECS;
         kc_test_sleep_ms(250)) {
        FILE *f = fopen(out, "r");
        lines = 0;
        for (int ch; f && (ch = fgetc(f)) != EOF;)
            lines += ch == '\n';
        if (f)
            fclose(f);
    }
    member_t k;
    kc_consumer_t *c = member(&k, kc_test_env("KC_BOOTSTRAP"), NULL);
    char p[32] = "";
    wait_protocol(&k, p, sizeof p, 20000);
    int n = 0;
    for (int64_t end = kc_test_now_ms() + 30000; kc_test_now_ms() < end && !(n = assigned(&k));)
        kc_test_sleep_ms(100);
    printf("# classic group: the Java member printed %ld records; kconsume chose %s and holds %d "
           "of %d partitions\n",
           lines, p, n, NP);
    close_member(c);
    kill(-j, SIGTERM);
    int st;
    waitpid(j, &st, 0);
    assert_true(lines >= RECS);
    assert_string_equal(p, "classic");
    assert_true(n > 0 && n < NP); /* shared with the Java member, not taken over */
}

static void classic_setting_means_classic(void **state)
{
    (void)state;
    fresh_topic("set");
    member_t m;
    kc_consumer_t *c =
        member(&m, kc_test_env("KC_BOOTSTRAP"), "partition.assignment.strategy=roundrobin");
    char p[32] = "";
    wait_protocol(&m, p, sizeof p, 20000);
    for (int64_t end = kc_test_now_ms() + 30000;
         kc_test_now_ms() < end && atomic_load(&m.records) < RECS;)
        kc_test_sleep_ms(100);
    printf("# partition.assignment.strategy set: %s, %ld records\n", p, atomic_load(&m.records));
    assert_string_equal(p, "classic");
    assert_int_equal(atomic_load(&m.records), RECS);
    assert_int_equal(atomic_load(&m.fatals), 0);
    close_member(c);
}

/* A member through a fault proxy armed with `rule`; auto: every record through classic;
 * forced: a fatal error naming the fix within 10 s (the session timeout is 45 s). */
static void through_proxy(const char *rule, bool forced)
{
    fresh_topic(forced ? "pxf" : "pxa");
    kc_fp_t *fp = kc_fp_start(kc_test_env("KC_BOOTSTRAP"));
    assert_non_null(fp);
    char reply[256];
    if (kc_fp_cmd(fp, reply, sizeof reply, "%s", rule) != 0)
        fail_msg("%s: %s", rule, reply);
    member_t m;
    int64_t t0 = kc_test_now_ms();
    kc_consumer_t *c = member(&m, kc_fp_bootstrap(fp), forced ? "group.protocol=consumer" : NULL);
    if (forced) {
        for (int64_t end = t0 + 20000; kc_test_now_ms() < end && !atomic_load(&m.fatals);)
            kc_test_sleep_ms(50);
        pthread_mutex_lock(&m.mu);
        printf("# %s, forced consumer: fatal after %lld ms: %s\n", rule,
               (long long)(m.fatal_ms - t0), m.fatal);
        bool names_fix = strstr(m.fatal, "group.protocol=classic") != NULL;
        int64_t took = m.fatal_ms - t0;
        pthread_mutex_unlock(&m.mu);
        assert_int_equal(atomic_load(&m.fatals), 1);
        assert_true(names_fix);
        assert_true(took < 10000);
    } else {
        char p[32] = "";
        for (int64_t end = t0 + 40000; kc_test_now_ms() < end; kc_test_sleep_ms(100)) {
            protocol_of(&m, p, sizeof p);
            if (strcmp(p, "classic") == 0 && atomic_load(&m.records) >= RECS)
                break;
        }
        printf("# %s, auto: %s, %ld records, %ld fatal\n", rule, p, atomic_load(&m.records),
               atomic_load(&m.fatals));
        assert_string_equal(p, "classic");
        assert_int_equal(atomic_load(&m.records), RECS);
        assert_int_equal(atomic_load(&m.fatals), 0);
    }
    kc_error_t err;
    (void)kc_close(c, 10000, &err);
    kc_destroy(c);
    assert_int_equal(kc_fp_stop(fp), 0);
}

static void no_api_auto_falls_to_classic(void **state)
{
    (void)state;
    through_proxy("hide-api api=ConsumerGroupHeartbeat", false);
}

static void no_api_forced_consumer_fails_fast(void **state)
{
    (void)state;
    through_proxy("hide-api api=ConsumerGroupHeartbeat", true);
}

static void unsupported_version_auto_falls_to_classic(void **state)
{
    (void)state;
    through_proxy("inject api=ConsumerGroupHeartbeat error=UNSUPPORTED_VERSION count=1000", false);
}

static void unsupported_version_forced_fails_fast(void **state)
{
    (void)state;
    through_proxy("inject api=ConsumerGroupHeartbeat error=UNSUPPORTED_VERSION count=1000", true);
}

static void describe_retry_follows_retry_backoff(void **state)
{
    (void)state;
    fresh_topic("dgretry");
    kc_fp_t *fp = kc_fp_start(kc_test_env("KC_BOOTSTRAP"));
    assert_non_null(fp);
    char reply[256];
    if (kc_fp_cmd(fp, reply, sizeof reply, "inject api=DescribeGroups error=NOT_COORDINATOR") != 0)
        fail_msg("inject: %s", reply);
    member_t m;
    kc_consumer_t *c =
        member(&m, kc_fp_bootstrap(fp), "retry.backoff.ms=3000;retry.backoff.max.ms=3000");
    int64_t failed_at = 0, chosen_at = 0;
    char p[32] = "";
    for (int64_t end = kc_test_now_ms() + 40000; kc_test_now_ms() < end; kc_test_sleep_ms(50)) {
        if (!failed_at && kc_fp_stat(fp, "fired.inject") >= 1)
            failed_at = kc_test_now_ms();
        protocol_of(&m, p, sizeof p);
        if (p[0] && !chosen_at)
            chosen_at = kc_test_now_ms();
        if (chosen_at && atomic_load(&m.records) >= RECS)
            break;
    }
    printf("# DescribeGroups refused at +0, protocol %s chosen at +%lld ms, %ld records\n", p,
           (long long)(chosen_at - failed_at), atomic_load(&m.records));
    assert_true(failed_at > 0);
    assert_string_equal(p, "consumer");
    /* The answer is seen at most 50 ms late; the choice cannot be seen early. */
    assert_true(chosen_at - failed_at >= 2400 - 50);
    assert_int_equal(atomic_load(&m.records), RECS);
    assert_int_equal(atomic_load(&m.fatals), 0);
    close_member(c);
    assert_int_equal(kc_fp_stop(fp), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fresh_group_is_kip848),
        cmocka_unit_test(classic_group_stays_classic),
        cmocka_unit_test(classic_setting_means_classic),
        cmocka_unit_test(no_api_auto_falls_to_classic),
        cmocka_unit_test(no_api_forced_consumer_fails_fast),
        cmocka_unit_test(unsupported_version_auto_falls_to_classic),
        cmocka_unit_test(unsupported_version_forced_fails_fast),
        cmocka_unit_test(describe_retry_follows_retry_backoff),
    };
    kc_test_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
