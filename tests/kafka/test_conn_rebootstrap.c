/* kc-test-label: background */
/* kc-test-label: threads */
/* KIP-899 / KIP-1102 re-bootstrap (metadata.recovery.strategy), against real brokers.
 *
 * The design: two 1-broker clusters of this test's own, X (port base B) and Y (B + 50), each
 * with topic T of one partition, X holding NX records and Y NY (more than NX). bootstrap.servers
 * is "X,Y": the same list for the whole run, the stable bootstrap address. The consumer's first
 * answer comes from X (the first entry that connects) and names X's broker only; then X stops
 * (stop-broker), so every broker the consumer knows is gone, and the only way on is back through
 * bootstrap.servers to Y — a cluster whose addresses all changed behind the list it was given.
 * Y is a different cluster (its T has another topic id), so the consumer that reaches it starts
 * T over from Y's earliest offset: it delivers more than NX records only if it went back.
 * Cheaper than a proxy that can be re-pointed (the fault proxy rewrites metadata to itself, so
 * behind it the brokers never change) and as real: two Kafka clusters, nothing simulated.
 *  - rebootstrap_reaches_replacement: metadata.recovery.strategy=rebootstrap with a 2 s trigger:
 *    after X stops, Y's records arrive and the stats count a rebootstrap.
 *  - none_stays_with_known_brokers: strategy none: after X stops, nothing more is delivered,
 *    no rebootstrap is counted, and an error event says why (strategy none, bootstrap not asked
 *    again) once the trigger time has passed. Without the strategy the consumer went back to
 *    bootstrap.servers at once (any metadata question with no broker READY went there).
 *  - rebootstrap_required: kc-fault-proxy in front of Y injects REBOOTSTRAP_REQUIRED as the
 *    top-level error of one Metadata answer (v13+): the consumer rebootstraps (counted) although
 *    its broker is up, and records produced afterwards still all arrive, none twice.
 * Ports: KC_PORT_BASE + 700 when KC_PORT_BASE is set, else 24792 (X) and 50 above (Y). Both
 * clusters are torn down in the group teardown. Needs KC_TESTKIT. */
#include "kc_test.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault_proxy_client.h"
#include "kconsume.h"

#define NX      50
#define NY      200
#define MORE    20
#define TRIGGER "2000"

static char dir[200], xdir[256], ydir[256], xaddr[64], yaddr[64], topic[64];
static int xup, yup, xstopped;
/* The case's consumer and proxy, for the case teardown (an assertion leaves the case early). */
static kc_consumer_t *cur;
static kc_fp_t *cur_fp;
static _Atomic int64_t total, dups, next_off, rebootstraps, none_errors;

static int sh(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void testkit(const char *cdir, const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s --dir %s >> %s/testkit.log 2>&1", kc_test_env("KC_TESTKIT"),
             args, cdir, dir);
    if (sh(cmd) != 0)
        fail_msg("failed: %s (see %s/testkit.log)", cmd, dir);
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    for (int i = 0; i < 2; i++)
        if (i ? yup : xup) {
            snprintf(cmd, sizeof cmd, "%s down --dir %s > /dev/null 2>&1",
                     kc_test_env("KC_TESTKIT"), i ? ydir : xdir);
            sh(cmd);
        }
    xup = yup = 0;
    return 0;
}

static void cluster(const char *cdir, int base, char *addr, size_t cap, int records)
{
    char args[512];
    snprintf(args, sizeof args, "up --brokers 1 --port-base %d", base);
    testkit(cdir, args);
    snprintf(addr, cap, "127.0.0.1:%d", base); /* node 1's PLAINTEXT listener (README) */
    snprintf(args, sizeof args, "topic create %s --partitions 1 --replication 1", topic);
    testkit(cdir, args);
    snprintf(args, sizeof args, "produce %s --records %d --size 100", topic, records);
    testkit(cdir, args);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s", kc_test_tmpdir("conn-reboot"));
    snprintf(xdir, sizeof xdir, "%s/x", dir);
    snprintf(ydir, sizeof ydir, "%s/y", dir);
    snprintf(topic, sizeof topic, "kc-reboot-%d", (int)getpid());
    const char *pb = getenv("KC_PORT_BASE");
    int base = (pb ? atoi(pb) : 24092) + 700;
    xup = 1;
    cluster(xdir, base, xaddr, sizeof xaddr, NX);
    yup = 1;
    cluster(ydir, base + 50, yaddr, sizeof yaddr, NY);
    return 0;
}

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o, (void)p;
    const kc_record_t *r;
    while ((r = kc_records_next(b))) {
        int64_t off = kc_record_offset(r);
        /* A restart from Y's offset 0 after X's NX is a new log, not a duplicate. */
        if (off < atomic_load(&next_off) && atomic_load(&total) != NX)
            atomic_fetch_add(&dups, 1);
        atomic_store(&next_off, off + 1);
        atomic_fetch_add(&total, 1);
    }
    return KC_CB_CONTINUE;
}

#define RB_KEY       "\"rebootstraps\":"
#define CONNECTS_KEY "\"connects\":"

/* The brokers' "connects" in the stats, summed: the last seen, and whether it ever went down (a
 * total must not: the connections a rebootstrap closed still count). */
static _Atomic long long connects_last, connects_fell;

static void note_connects(const char *json)
{
    long long sum = 0;
    for (const char *p = strstr(json, CONNECTS_KEY); p; p = strstr(p + 1, CONNECTS_KEY))
        sum += strtoll(p + strlen(CONNECTS_KEY), NULL, 10);
    if (sum < atomic_exchange(&connects_last, sum))
        atomic_fetch_add(&connects_fell, 1);
}

static void on_event(void *o, const kc_event_t *ev)
{
    (void)o;
    if (ev->type == KC_EVENT_STATS && ev->json) {
        if (getenv("KC_REBOOT_LOG"))
            printf("# stats %s\n", ev->json);
        note_connects(ev->json);
        const char *p = strstr(ev->json, RB_KEY);
        if (p)
            atomic_store(&rebootstraps, strtoll(p + strlen(RB_KEY), NULL, 10));
    } else if (ev->type == KC_EVENT_ERROR && ev->error &&
               strstr(ev->error->msg, "metadata.recovery.strategy=none")) {
        printf("# error event: %s\n", ev->error->msg);
        atomic_fetch_add(&none_errors, 1);
    }
}

static kc_consumer_t *start(const char *servers, const char *strategy)
{
    atomic_store(&total, 0);
    atomic_store(&dups, 0);
    atomic_store(&connects_last, 0);
    atomic_store(&connects_fell, 0);
    atomic_store(&next_off, 0);
    atomic_store(&rebootstraps, -1);
    atomic_store(&none_errors, 0);
    kc_conf_t *conf = kc_conf_new();
    kc_test_conf_set(conf, "bootstrap.servers", servers);
    kc_test_conf_set(conf, "auto.offset.reset", "earliest");
    kc_test_conf_set(conf, "metadata.recovery.strategy", strategy);
    kc_test_conf_set(conf, "metadata.recovery.rebootstrap.trigger.ms", TRIGGER);
    kc_test_conf_set(conf, "metadata.max.age.ms", "1000");
    kc_test_conf_set(conf, "reconnect.backoff.max.ms", "500");
    kc_test_conf_set(conf, "request.timeout.ms", "5000");
    kc_test_conf_set(conf, "statistics.interval.ms", "200");
    if (getenv("KC_REBOOT_LOG")) /* debugging: e.g. KC_REBOOT_LOG=debug */
        kc_test_conf_set(conf, "log.level", getenv("KC_REBOOT_LOG"));
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event};
    kc_consumer_t *c = NULL;
    kc_error_t err;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    cur = c;
    kc_topic_partition_t tp = {topic, 0, KC_OFFSET_BEGINNING};
    assert_int_equal(kc_assign(c, &tp, 1, &err), KC_OK);
    return c;
}

static int wait_for(_Atomic int64_t *v, int64_t want, int ms)
{
    for (int i = 0; i < ms / 100 && atomic_load(v) < want; i++)
        kc_test_sleep_ms(100);
    return atomic_load(v) >= want;
}

static void stop(kc_consumer_t *c)
{
    kc_error_t err;
    cur = NULL;
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
}

static void stop_x(void)
{
    xstopped = 1;
    testkit(xdir, "stop-broker 1");
}

/* Each case leaves X running, no consumer and no proxy, also when it failed half-way. */
static int case_teardown(void **state)
{
    (void)state;
    if (cur) {
        kc_error_t err;
        kc_close(cur, 5000, &err);
        kc_destroy(cur);
        cur = NULL;
    }
    if (cur_fp) {
        kc_fp_stop(cur_fp);
        cur_fp = NULL;
    }
    if (xstopped) {
        xstopped = 0;
        testkit(xdir, "start-broker 1");
    }
    return 0;
}

static void bootstrap_list(char *out, size_t cap)
{
    snprintf(out, cap, "%s,%s", xaddr, yaddr);
}

static void rebootstrap_reaches_replacement(void **state)
{
    (void)state;
    char servers[160];
    bootstrap_list(servers, sizeof servers);
    kc_consumer_t *c = start(servers, "rebootstrap");
    assert_true(wait_for(&total, NX, 60000));
    kc_test_sleep_ms(500);
    assert_int_equal(atomic_load(&total), NX); /* from X alone */
    stop_x();
    /* Y's log from its start (another topic id: a new log) or from NX on: NY - NX at least. */
    int reached = wait_for(&total, NY, 60000);
    printf("# rebootstrap: %lld delivered (X had %d, Y has %d), %lld rebootstrap(s)\n",
           (long long)atomic_load(&total), NX, NY, (long long)atomic_load(&rebootstraps));
    assert_true(reached);
    assert_true(wait_for(&rebootstraps, 1, 5000));
    assert_int_equal(atomic_load(&dups), 0);
    stop(c);
}

static void none_stays_with_known_brokers(void **state)
{
    (void)state;
    char servers[160];
    bootstrap_list(servers, sizeof servers);
    kc_consumer_t *c = start(servers, "none");
    assert_true(wait_for(&total, NX, 60000));
    stop_x();
    /* The error comes once the trigger time (2 s) has passed with X gone; then some more. */
    int said = wait_for(&none_errors, 1, 30000);
    kc_test_sleep_ms(4000);
    printf("# none: %lld delivered (X had %d), %lld rebootstrap(s), error event %s\n",
           (long long)atomic_load(&total), NX, (long long)atomic_load(&rebootstraps),
           said ? "seen" : "missing");
    assert_int_equal(atomic_load(&total), NX);
    assert_int_equal(atomic_load(&rebootstraps), 0);
    assert_true(said);
    stop(c);
}

static void rebootstrap_required(void **state)
{
    (void)state;
    kc_fp_t *fp = cur_fp = kc_fp_start(yaddr);
    assert_non_null(fp);
    kc_consumer_t *c = start(kc_fp_bootstrap(fp), "rebootstrap");
    assert_true(wait_for(&total, NY, 60000));
    assert_true(wait_for(&rebootstraps, 0, 5000)); /* a stats event came */
    assert_int_equal(atomic_load(&rebootstraps), 0);
    char reply[256];
    assert_int_equal(kc_fp_cmd(fp, reply, sizeof reply,
                               "inject api=Metadata error=REBOOTSTRAP_REQUIRED scope=top count=1"),
                     0);
    /* metadata.max.age.ms=1000: the next refresh meets the error. */
    int went = wait_for(&rebootstraps, 1, 15000);
    long fired = kc_fp_stat(fp, "fired.inject");
    printf("# REBOOTSTRAP_REQUIRED: injected %ld, %lld rebootstrap(s)\n", fired,
           (long long)atomic_load(&rebootstraps));
    assert_int_equal(fired, 1);
    assert_true(went);
    kc_test_sleep_ms(1000);
    assert_int_equal(atomic_load(&rebootstraps), 1); /* one answer, one rebootstrap */
    char args[256];
    snprintf(args, sizeof args, "produce %s --records %d --size 100", topic, MORE);
    testkit(ydir, args);
    assert_true(wait_for(&total, NY + MORE, 60000));
    kc_test_sleep_ms(500);
    assert_int_equal(atomic_load(&total), NY + MORE);
    assert_int_equal(atomic_load(&dups), 0);
    /* the connection the rebootstrap closed and the one after it */
    printf("# broker connects after the rebootstrap: %lld (went down %lld times)\n",
           (long long)atomic_load(&connects_last), (long long)atomic_load(&connects_fell));
    assert_true(atomic_load(&connects_last) >= 2);
    assert_int_equal(atomic_load(&connects_fell), 0);
    stop(c);
    cur_fp = NULL;
    assert_int_equal(kc_fp_stop(fp), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(rebootstrap_reaches_replacement, case_teardown),
        cmocka_unit_test_teardown(none_stays_with_known_brokers, case_teardown),
        cmocka_unit_test_teardown(rebootstrap_required, case_teardown),
    };
    if (getenv("KC_TEST_FILTER")) /* one case, e.g. KC_TEST_FILTER=rebootstrap_required */
        cmocka_set_test_filter(getenv("KC_TEST_FILTER"));
    return cmocka_run_group_tests(tests, setup, teardown);
}
