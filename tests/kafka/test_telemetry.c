/* KIP-714 client telemetry against a real broker that takes it: a 1-broker cluster of its own
 * whose metrics plugin (tests/testkit/telemetry/KcTelemetryRecorder.java, `cluster up
 * --telemetry-recorder`) parses every PushTelemetry with the OTLP classes Kafka ships and writes
 * one JSON line per push. Client metrics subscriptions (`cluster client-metrics`) pick what each
 * consumer is asked for, matched by client id.
 *   - pushes_what_the_subscription_asks: a group member consuming RECS records pushes every
 *     interval, names only metrics under its subscription's prefix, with Java's names; its
 *     counters are deltas (the broker asks for delta temporality) whose pushes add up to exactly
 *     the records consumed; per-partition lag carries topic and partition; the Resource names the
 *     group and member; the last push is the terminating one, at close; the broker's client
 *     instance id is the one the stats show.
 *   - narrower_prefix_and_push_off: a second subscription asking for coordinator metrics only
 *     gets nothing else; enable.metrics.push=false sends nothing at all.
 *   - off_without_plugin: the suite's own cluster (no telemetry plugin, so no telemetry APIs)
 *     turns telemetry off quietly: stats say stopped, no error event.
 * kc-test-label: background
 * kc-test-label: threads
 * Needs KC_TESTKIT and KC_BOOTSTRAP (tests/run-suite); boots and stops its own cluster. */
#include "kc_test.h"

#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"
#include "tally.h"

#define NP   3
#define RECS 600

static char dir[512], bootstrap[256], out_path[600], topic[64];
static bool cluster_is_up;

static void cluster(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void cluster(const char *fmt, ...)
{
    char args[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    if (kc_test_cluster_in(dir, NULL, 0, "%s", args) != 0)
        fail_msg("failed: cluster %s --dir %s", args, dir);
}

/* A client metrics subscription. ConfigCommand returns once the controller committed it; the
 * broker applies it from the metadata log a moment later, and a consumer asking before that is
 * told "nothing" and asks again only after the default interval (5 min): the wait covers it. */
static void subscription(const char *name, const char *configs)
{
    cluster("client-metrics %s '%s'", name, configs);
    kc_test_sleep_ms(1000);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s", kc_test_tmpdir("telemetry"));
    snprintf(out_path, sizeof out_path, "%s/pushes.jsonl", dir);
    int up = -1;
    for (int attempt = 0; attempt < 4 && up != 0; attempt++) {
        /* a range of its own: test_engine_eviction (30000-38990) runs beside it */
        int base = 41000 + (int)((getpid() + attempt * 89) % 700) * 10;
        up = kc_test_cluster_in(dir, bootstrap, sizeof bootstrap,
                                "up --brokers 1 --port-base %d --telemetry-recorder %s", base,
                                out_path);
    }
    if (up != 0 || !bootstrap[0])
        return -1;
    cluster_is_up = true;
    snprintf(topic, sizeof topic, "kc-tlm-%d", (int)getpid());
    cluster("topic create %s --partitions %d", topic, NP);
    cluster("produce %s --records %d --size 100 --keys 60 >/dev/null", topic, RECS);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (cluster_is_up)
        (void)kc_test_cluster_in(dir, NULL, 0, "down");
    cluster_is_up = false;
    return 0;
}

/* ---- a consumer ---------------------------------------------------------------------------- */

static kc_consumer_t *start(kc_tally_t *m, const char *bs, const char *client_id, const char *group,
                            const char *extra)
{
    kc_tally_reset(m);
    kc_conf_t *conf = kc_conf_new();
    char pairs[512];
    snprintf(pairs, sizeof pairs,
             "bootstrap.servers=%s;client.id=%s;group.id=%s;auto.offset.reset=earliest;"
             "statistics.interval.ms=200;fetch.max.wait.ms=100%s%s",
             bs, client_id, group, extra ? ";" : "", extra ? extra : "");
    kc_test_conf_set_all(conf, pairs);
    kc_callbacks_t cbs = {
        .on_records = kc_tally_on_records, .on_event = kc_tally_on_event, .opaque = m};
    kc_consumer_t *c = kc_test_consumer(conf, &cbs);
    kc_error_t err;
    const char *topics[] = {topic};
    if (kc_subscribe(c, topics, 1, &err) != KC_OK)
        fail_msg("kc_subscribe: %s", err.msg);
    return c;
}

/* The latest stats' "telemetry" object, parsed (json_decref it); NULL before the first stats. */
static json_t *telemetry_of(kc_tally_t *m)
{
    static char text[32768];
    kc_tally_last_stats(m, text, sizeof text);
    json_t *s = text[0] ? json_loads(text, 0, NULL) : NULL;
    if (!s)
        return NULL;
    json_t *t = json_incref(json_object_get(s, "telemetry"));
    json_decref(s);
    return t;
}

static long long tnum(json_t *t, const char *k)
{
    return (long long)json_number_value(json_object_get(t, k));
}

/* ---- what the broker recorded -------------------------------------------------------------- */

/* Every recorded push of `client_id`, in order (a JSON array; json_decref it). */
static json_t *pushes_of(const char *client_id)
{
    json_t *all = json_array();
    FILE *f = fopen(out_path, "r");
    if (!f)
        return all;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        json_error_t je;
        json_t *p = json_loads(line, 0, &je);
        if (!p)
            fail_msg("recorder line is not JSON (%s): %.200s", je.text, line);
        if (json_object_get(p, "error"))
            fail_msg("the broker's plugin could not parse a push: %s",
                     json_string_value(json_object_get(p, "error")));
        const char *cid = json_string_value(json_object_get(p, "client_id"));
        if (cid && strcmp(cid, client_id) == 0)
            json_array_append(all, p);
        json_decref(p);
    }
    free(line);
    fclose(f);
    return all;
}

static json_t *metric_in(json_t *push, const char *name)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(push, "metrics"), i,
                       m) if (strcmp(json_string_value(json_object_get(m, "name")), name) ==
                              0) return m;
    return NULL;
}

static const char *res_attr(json_t *push, const char *key)
{
    return json_string_value(json_object_get(json_object_get(push, "resource"), key));
}

#define P "org.apache.kafka.consumer."

static void pushes_what_the_subscription_asks(void **state)
{
    (void)state;
    char client[64], group[64];
    snprintf(client, sizeof client, "kc-tlm-a-%d", (int)getpid());
    snprintf(group, sizeof group, "kc-tlm-g-%d", (int)getpid());
    char configs[256];
    snprintf(configs, sizeof configs,
             "metrics=" P "fetch.manager.,interval.ms=1000,match=[client_id=%s]", client);
    subscription("kc-tlm-a", configs);
    kc_tally_t m;
    kc_consumer_t *c = start(&m, bootstrap, client, group, NULL);
    int64_t until = kc_test_now_ms() + 60000;
    json_t *t = NULL;
    while (kc_test_now_ms() < until) {
        json_decref(t);
        t = telemetry_of(&m);
        if (atomic_load(&m.total) == RECS && t && tnum(t, "pushes") >= 3)
            break;
        kc_test_sleep_ms(100);
    }
    assert_non_null(t);
    printf("# telemetry: state %s, instance %s, %lld pushes, %lld errors, interval %lld ms, "
           "last %lld bytes / %lld points, compression %lld\n",
           json_string_value(json_object_get(t, "state")),
           json_string_value(json_object_get(t, "client_instance_id")), tnum(t, "pushes"),
           tnum(t, "push_errors"), tnum(t, "push_interval_ms"), tnum(t, "last_push_bytes"),
           tnum(t, "last_push_metrics"), tnum(t, "compression"));
    assert_int_equal(atomic_load(&m.total), RECS);
    assert_true(tnum(t, "pushes") >= 3);
    assert_int_equal(tnum(t, "push_errors"), 0);
    assert_int_equal(tnum(t, "push_interval_ms"), 1000);
    assert_int_equal(tnum(t, "compression"), 4); /* zstd: the broker's first choice */
    char instance[64];
    snprintf(instance, sizeof instance, "%s",
             json_string_value(json_object_get(t, "client_instance_id")));
    json_decref(t);
    kc_test_close(c);
    assert_int_equal(atomic_load(&m.errors), 0);

    json_t *pushes = pushes_of(client);
    size_t n = json_array_size(pushes);
    printf("# the broker recorded %zu pushes of %s\n", n, client);
    assert_true(n >= 4); /* three or more while running, the terminating one at close */
    double consumed = 0, fetches = 0;
    bool lag_seen = false;
    for (size_t i = 0; i < n; i++) {
        json_t *p = json_array_get(pushes, i);
        assert_string_equal(json_string_value(json_object_get(p, "client_instance_uuid")),
                            instance);
        assert_int_equal(json_is_true(json_object_get(p, "terminating")), i == n - 1);
        assert_string_equal(res_attr(p, "group_id"), group);
        assert_non_null(res_attr(p, "group_member_id"));
        size_t k;
        json_t *mt;
        json_array_foreach(json_object_get(p, "metrics"), k, mt)
        {
            const char *name = json_string_value(json_object_get(mt, "name"));
            if (strncmp(name, P "fetch.manager.", strlen(P "fetch.manager.")) != 0)
                fail_msg("push %zu carries %s, outside the subscription", i, name);
        }
        json_t *rc = metric_in(p, P "fetch.manager.records.consumed.total");
        assert_non_null(rc);
        assert_string_equal(json_string_value(json_object_get(rc, "type")), "sum");
        assert_true(json_is_true(json_object_get(rc, "monotonic")));
        assert_string_equal(json_string_value(json_object_get(rc, "temporality")), "delta");
        consumed += json_number_value(
            json_object_get(json_array_get(json_object_get(rc, "points"), 0), "value"));
        json_t *ft = metric_in(p, P "fetch.manager.fetch.total");
        assert_non_null(ft);
        fetches += json_number_value(
            json_object_get(json_array_get(json_object_get(ft, "points"), 0), "value"));
        json_t *lag = metric_in(p, P "fetch.manager.records.lag");
        if (lag) {
            json_t *pt;
            json_array_foreach(json_object_get(lag, "points"), k, pt)
            {
                json_t *a = json_object_get(pt, "attributes");
                assert_string_equal(json_string_value(json_object_get(a, "topic")), topic);
                assert_non_null(json_object_get(a, "partition"));
                assert_string_equal(json_string_value(json_object_get(lag, "type")), "gauge");
                lag_seen = true;
            }
        }
        assert_non_null(metric_in(p, P "fetch.manager.records.lag.max"));
    }
    printf("# records consumed, summed over the pushes' deltas: %.0f of %d; fetches %.0f\n",
           consumed, RECS, fetches);
    assert_true(consumed == RECS); /* every delta once: none lost, none counted twice */
    assert_true(fetches >= 1);
    assert_true(lag_seen);
    json_decref(pushes);
}

static void narrower_prefix_and_push_off(void **state)
{
    (void)state;
    char b[64], off[64], group[64];
    snprintf(b, sizeof b, "kc-tlm-b-%d", (int)getpid());
    snprintf(off, sizeof off, "kc-tlm-off-%d", (int)getpid());
    snprintf(group, sizeof group, "kc-tlm-g2-%d", (int)getpid());
    subscription("kc-tlm-b", "metrics=" P "coordinator.,interval.ms=1000,"
                             "match=[client_id=kc-tlm-(b|off)-.*]");
    kc_tally_t mb, mo;
    kc_consumer_t *cb = start(&mb, bootstrap, b, group, NULL);
    kc_consumer_t *co = start(&mo, bootstrap, off, group, "enable.metrics.push=false");
    int64_t until = kc_test_now_ms() + 60000;
    json_t *t = NULL;
    while (kc_test_now_ms() < until) {
        json_decref(t);
        t = telemetry_of(&mb);
        if (t && tnum(t, "pushes") >= 2 && atomic_load(&mb.total) + atomic_load(&mo.total) == RECS)
            break;
        kc_test_sleep_ms(100);
    }
    assert_non_null(t);
    assert_true(tnum(t, "pushes") >= 2);
    json_decref(t);
    t = telemetry_of(&mo);
    assert_non_null(t);
    assert_string_equal(json_string_value(json_object_get(t, "state")), "off");
    assert_int_equal(tnum(t, "pushes"), 0);
    json_decref(t);
    kc_test_close(cb);
    kc_test_close(co);
    json_t *pushes = pushes_of(b);
    assert_true(json_array_size(pushes) >= 3);
    size_t i, k;
    json_t *p, *mt;
    bool assigned = false;
    json_array_foreach(pushes, i, p)
    {
        json_array_foreach(json_object_get(p, "metrics"), k, mt)
        {
            const char *name = json_string_value(json_object_get(mt, "name"));
            if (strncmp(name, P "coordinator.", strlen(P "coordinator.")) != 0)
                fail_msg("%s pushed %s, outside its subscription", b, name);
            assigned |= strcmp(name, P "coordinator.assigned.partitions") == 0;
        }
    }
    assert_true(assigned);
    json_decref(pushes);
    pushes = pushes_of(off);
    assert_int_equal(json_array_size(pushes), 0);
    json_decref(pushes);
}

static void off_without_plugin(void **state)
{
    (void)state;
    char client[64], group[64];
    snprintf(client, sizeof client, "kc-tlm-plain-%d", (int)getpid());
    snprintf(group, sizeof group, "kc-tlm-plain-%d", (int)getpid());
    kc_tally_t m;
    kc_consumer_t *c = start(&m, kc_test_env("KC_BOOTSTRAP"), client, group, NULL);
    int64_t until = kc_test_now_ms() + 30000;
    json_t *t = NULL;
    while (kc_test_now_ms() < until) {
        json_decref(t);
        t = telemetry_of(&m);
        if (t && strcmp(json_string_value(json_object_get(t, "state")), "stopped") == 0)
            break;
        kc_test_sleep_ms(100);
    }
    assert_non_null(t);
    printf("# without a plugin: %s (%s)\n", json_string_value(json_object_get(t, "state")),
           json_string_value(json_object_get(t, "stopped")));
    assert_string_equal(json_string_value(json_object_get(t, "state")), "stopped");
    assert_non_null(strstr(json_string_value(json_object_get(t, "stopped")), "does not take"));
    assert_int_equal(tnum(t, "pushes"), 0);
    json_decref(t);
    kc_test_close(c);
    assert_int_equal(atomic_load(&m.errors), 0);
}

int main(void)
{
    kc_test_filter();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pushes_what_the_subscription_asks),
        cmocka_unit_test(narrower_prefix_and_push_off),
        cmocka_unit_test(off_without_plugin),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
