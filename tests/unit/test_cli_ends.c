/* The kconsume CLI's -e check (tools/app/ends.c) while an assignment is only partly delivered:
 * a partition the consumer holds whose on_assign has not run yet keeps the run going, even when
 * every partition whose on_assign did run is at its end. A group hands a member several
 * partitions in one step and their on_assign calls run one after another, so the check sees this
 * state between two of them; here the second on_assign is held until the checks are done, so
 * the interleaving is the same on every run. No broker: the partitions are assigned at explicit
 * offsets, which kc_position reports before anything is fetched.
 * kc-test-label: threads */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "kc_test.h"

#include "app/app.h"

/* on_assign as the CLI's: the registry entry is flagged assigned. Partition 1's is held at a
 * gate until the test opens it. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open, held_at_gate;

static void on_assign(void *opaque, kc_part_t *kp)
{
    (void)opaque;
    if (kp->partition == 1) {
        pthread_mutex_lock(&gate_mu);
        held_at_gate = 1;
        pthread_cond_broadcast(&gate_cv);
        while (!gate_open)
            pthread_cond_wait(&gate_cv, &gate_mu);
        pthread_mutex_unlock(&gate_mu);
    }
    part_t *p = kc_app_part_get(kp->topic, kp->partition);
    if (p)
        atomic_store(&p->assigned, 1);
}

static void open_gate(void)
{
    pthread_mutex_lock(&gate_mu);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
}

static int wait_flag(part_t *p, int want)
{
    for (int i = 0; i < 500; i++) {
        if (atomic_load(&p->assigned) == want)
            return 1;
        kc_test_sleep_ms(10);
    }
    return 0;
}

static void test_held_partition_keeps_the_run_going(void **state)
{
    (void)state;
    atomic_store(&kc_app.stop_code, -1);
    kc_error_t err;
    kc_conf_t *conf = kc_conf_new();
    assert_non_null(conf);
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "worker.threads", "1", &err), KC_OK);
    kc_callbacks_t cbs = {.on_assign = on_assign};
    assert_int_equal(kc_consumer_new(conf, &cbs, &kc_app.c, &err), KC_OK); /* owns conf */

    /* End marks as -e learned them: 2,500 records in each partition. */
    part_t *p0 = kc_app_part_get("G", 0), *p1 = kc_app_part_get("G", 1);
    assert_non_null(p0);
    assert_non_null(p1);
    atomic_store(&p0->end, 2500);
    atomic_store(&p1->end, 2500);

    /* Partition 0 at its end: its on_assign runs, and it is done (as after its last record). */
    kc_topic_partition_t first = {"G", 0, 2500};
    assert_int_equal(kc_assign(kc_app.c, &first, 1, &err), KC_OK);
    assert_true(wait_flag(p0, 1));
    assert_int_equal(kc_app_all_at_end(), 1);
    atomic_store(&p0->done, 1);

    /* Partition 1 joins with 1,200 records left; its on_assign is held. */
    kc_topic_partition_t second = {"G", 1, 1300};
    assert_int_equal(kc_incremental_assign(kc_app.c, &second, 1, &err), KC_OK);
    pthread_mutex_lock(&gate_mu);
    for (int i = 0; i < 500 && !held_at_gate; i++) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 10 * 1000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&gate_cv, &gate_mu, &until);
    }
    int held = held_at_gate;
    pthread_mutex_unlock(&gate_mu);
    assert_true(held);
    assert_int_equal(atomic_load(&p1->assigned), 0); /* the CLI's flag does not name it yet */
    /* Every flagged partition is at its end, but partition 1 is held and not read. */
    assert_int_equal(kc_app_all_at_end(), 0);
    assert_int_equal(atomic_load(&p1->done), 0);

    open_gate();
    assert_true(wait_flag(p1, 1));
    assert_int_equal(kc_app_all_at_end(), 0); /* at 1300 of 2500 */

    /* Without partition 1 only the finished one is held: the run ends. */
    assert_int_equal(kc_incremental_unassign(kc_app.c, &second, 1, &err), KC_OK);
    assert_int_equal(kc_app_all_at_end(), 1);

    kc_destroy(kc_app.c);
    kc_app.c = NULL;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_held_partition_keeps_the_run_going),
    };
    kc_test_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
