/* kc-test-label: threads */
/* queued.max.bytes against the suite's cluster: a 4-partition topic of ~16 MB read with slow
 * callbacks (20 ms per view, 2 workers) and queued.max.bytes = 1 MiB. The stats JSON (every
 * 20 ms) gives the runtime's buffered bytes (queued batches) and frame bytes (the response
 * frames those batches keep alive: what the cap bounds, runtime/memory_budget.c); both peaks must
 * stay within the cap plus one Kafka batch (~64 KiB here) per partition: each Fetch asks for at
 * most the budget left (kc_rt_fetch_budget, split over the brokers), but a broker always returns a
 * partition's first batch whole. Every record is delivered. Prints the peak. Needs KC_BOOTSTRAP,
 * KC_TESTKIT, KC_CLUSTER_DIR. */
#include "kc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"

#define NP   4
#define RECS 16000
#define CAP  (1 << 20)
#define MPFB (256 << 10)

static _Atomic long long total, peak, peak_frames, samples;

static void raise_to(_Atomic long long *m, long long v)
{
    long long old = atomic_load(m);
    while (v > old && !atomic_compare_exchange_weak(m, &old, v))
        ;
}

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o, (void)p;
    while (kc_records_next(b))
        atomic_fetch_add(&total, 1);
    usleep(20 * 1000);
    return KC_CB_CONTINUE;
}

static void on_event(void *o, const kc_event_t *ev)
{
    (void)o;
    if (ev->type != KC_EVENT_STATS)
        return;
    /* the top-level "buffered_bytes" follows the "group" object */
    const char *g = strstr(ev->json, "\"group\":");
    const char *k = g ? strstr(g, "},\"buffered_bytes\":") : NULL;
    if (!k)
        return;
    raise_to(&peak, atoll(k + strlen("},\"buffered_bytes\":")));
    const char *f = strstr(k, ",\"frame_bytes\":");
    if (f)
        raise_to(&peak_frames, atoll(f + strlen(",\"frame_bytes\":")));
    atomic_fetch_add(&samples, 1);
}

static void cap_respected(void **state)
{
    (void)state;
    char topic[64], v[32];
    snprintf(topic, sizeof topic, "kc-mem-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions %d --replication 3", topic, NP);
    kc_test_cluster("produce %s --records %d --size 1000", topic, RECS);
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", kc_test_env("KC_BOOTSTRAP"), &err),
                     KC_OK);
    snprintf(v, sizeof v, "%d", CAP);
    assert_int_equal(kc_conf_set(conf, "queued.max.bytes", v, &err), KC_OK);
    snprintf(v, sizeof v, "%d", MPFB);
    assert_int_equal(kc_conf_set(conf, "max.partition.fetch.bytes", v, &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "worker.threads", "2", &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "statistics.interval.ms", "20", &err), KC_OK);
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    kc_topic_partition_t tps[NP];
    for (int i = 0; i < NP; i++)
        tps[i] = (kc_topic_partition_t){topic, i, KC_OFFSET_BEGINNING};
    assert_int_equal(kc_assign(c, tps, NP, &err), KC_OK);
    for (int i = 0; i < 1200 && atomic_load(&total) < RECS; i++)
        usleep(100 * 1000);
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
    long long bound = CAP + (long long)NP * (65536 + 4096);
    printf("# %lld records; peak buffered %lld bytes, peak frame bytes %lld (cap %d, bound "
           "%lld) over %lld samples\n",
           (long long)atomic_load(&total), (long long)atomic_load(&peak),
           (long long)atomic_load(&peak_frames), CAP, bound, (long long)atomic_load(&samples));
    assert_int_equal(atomic_load(&total), RECS);
    assert_true(atomic_load(&samples) >= 20);
    assert_true(atomic_load(&peak) > 0);
    assert_true(atomic_load(&peak) <= bound);
    assert_true(atomic_load(&peak_frames) > 0);
    assert_true(atomic_load(&peak_frames) <= bound);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(cap_respected)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
