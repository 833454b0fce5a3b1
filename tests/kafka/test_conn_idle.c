/* kc-test-label: threads */
/* Connection settings through the public consumer, against the testkit's PLAINTEXT listener:
 *  - idle_close_reopens: with connections.max.idle.ms=1500 the connections that go quiet (the
 *    bootstrap and the offsets coordinator, once the offsets are fetched) are closed, the stats'
 *    connections.idle_closes counts them, a commit opens the coordinator connection again, and
 *    consumption goes on over the busy fetch connection (records produced later all arrive,
 *    none twice);
 *  - idle_close_off: with 0 the same run closes nothing;
 *  - keepalive: socket.keepalive.enable=true puts SO_KEEPALIVE on this process's broker
 *    sockets (ss shows their keepalive timer), false leaves it off.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "kc_test.h"
#include "tally.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"

#define NP   2
#define RECS 300
#define MORE 100

static char topic[64];
static int64_t in_topic = RECS; /* records in the topic so far (test thread only) */
static _Atomic int64_t idle_closes;
static kc_tally_t tally;

static void on_event(void *o, const kc_event_t *ev)
{
    kc_tally_event(o, ev);
    if (ev->type != KC_EVENT_STATS || !ev->json)
        return;
    const char *p = strstr(ev->json, "\"connections\":{\"idle_closes\":");
    if (p)
        atomic_store(&idle_closes,
                     strtoll(p + strlen("\"connections\":{\"idle_closes\":"), NULL, 10));
}

static int setup(void **state)
{
    (void)state;
    snprintf(topic, sizeof topic, "kc-idle-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions %d --replication 1", topic, NP);
    kc_test_cluster("produce %s --records %d --size 100", topic, RECS);
    return 0;
}

static kc_consumer_t *start(const char *idle_ms, const char *keepalive, const char *group)
{
    kc_tally_reset(&tally);
    atomic_store(&idle_closes, -1);
    kc_conf_t *conf = kc_conf_new();
    kc_test_conf_set(conf, "bootstrap.servers", kc_test_env("KC_BOOTSTRAP"));
    kc_test_conf_set(conf, "group.id", group);
    kc_test_conf_set(conf, "enable.auto.commit", "false");
    kc_test_conf_set(conf, "worker.threads", "2");
    kc_test_conf_set(conf, "statistics.interval.ms", "250");
    kc_test_conf_set(conf, "connections.max.idle.ms", idle_ms);
    kc_test_conf_set(conf, "socket.keepalive.enable", keepalive);
    kc_callbacks_t cbs = {
        .on_records = kc_tally_on_records, .on_event = on_event, .opaque = &tally};
    kc_consumer_t *c = kc_test_consumer(conf, &cbs);
    kc_test_assign_all(c, topic, NP, KC_OFFSET_BEGINNING);
    return c;
}

/* Consumes everything, stays quiet for 4 s (the idle time, 1.5 s, over twice), commits, reads
 * records produced afterwards; returns the idle closes the stats counted in the quiet time. */
static int64_t quiet_run(const char *idle_ms, const char *group)
{
    kc_consumer_t *c = start(idle_ms, "true", group);
    kc_tally_expect(&tally, in_topic, 60000, "the records there");
    kc_test_commit_check(c, topic, NP, in_topic);
    kc_test_sleep_ms(4000);
    int64_t closes = atomic_load(&idle_closes);
    printf("# connections.max.idle.ms=%s: %lld idle close(s) after 4 s quiet\n", idle_ms,
           (long long)closes);
    kc_test_commit_check(c, topic, NP,
                         in_topic); /* the coordinator connection: opened again when closed */
    kc_test_cluster("produce %s --records %d --size 50", topic, MORE);
    in_topic += MORE;
    kc_tally_expect(&tally, in_topic, 60000, "with those produced after the quiet time");
    kc_error_t err;
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
    return closes;
}

static void idle_close_reopens(void **state)
{
    (void)state;
    char group[96];
    snprintf(group, sizeof group, "%s-idle", topic);
    assert_true(quiet_run("1500", group) >= 1);
}

static void idle_close_off(void **state)
{
    (void)state;
    char group[96];
    snprintf(group, sizeof group, "%s-noidle", topic);
    assert_int_equal(quiet_run("0", group), 0);
}

/* This process's established TCP sockets to the brokers of `servers` (host:port,...) with a
 * keepalive timer, and all of them. */
static void count_sockets(const char *servers, int *with_keepalive, int *all)
{
    char filter[512] = "", cmd[768], line[1024], me[32];
    for (const char *p = servers; *p;) {
        size_t n = strcspn(p, ",");
        const char *colon = memrchr(p, ':', n);
        assert_non_null(colon);
        size_t used = strlen(filter);
        snprintf(filter + used, sizeof filter - used, "%sdport = :%.*s", used ? " or " : "",
                 (int)(n - (size_t)(colon + 1 - p)), colon + 1);
        p += n + (p[n] == ',');
    }
    snprintf(cmd, sizeof cmd, "ss -tnpoH state established '( %s )' 2>/dev/null", filter);
    snprintf(me, sizeof me, "pid=%d,", (int)getpid());
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    *with_keepalive = *all = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, me)) {
            (*all)++;
            if (strstr(line, "timer:(keepalive"))
                (*with_keepalive)++;
        }
    pclose(f);
}

static void keepalive(void **state)
{
    (void)state;
    const char *bs = kc_test_env("KC_BOOTSTRAP");
    const char *on[] = {"true", "false"};
    for (int i = 0; i < 2; i++) {
        char group[96];
        snprintf(group, sizeof group, "%s-ka-%s", topic, on[i]);
        kc_consumer_t *c = start("0", on[i], group);
        kc_tally_expect(&tally, in_topic, 60000, on[i]);
        int ka = 0, all = 0;
        count_sockets(bs, &ka, &all);
        printf("# socket.keepalive.enable=%s: %d of %d socket(s) to the brokers with keepalive\n",
               on[i], ka, all);
        assert_true(all >= 1);
        if (i == 0)
            assert_int_equal(ka, all);
        else
            assert_int_equal(ka, 0);
        kc_error_t err;
        assert_int_equal(kc_close(c, 5000, &err), KC_OK);
        kc_destroy(c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(idle_close_reopens),
        cmocka_unit_test(idle_close_off),
        cmocka_unit_test(keepalive),
    };
    kc_test_filter();
    return cmocka_run_group_tests(tests, setup, NULL);
}
