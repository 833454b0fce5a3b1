/* kc-test-label: threads */
/* The typed SPSC rings over ck_ring: FIFO, capacity (size - 1), and a two-thread stream in
 * order with no loss or duplication. */
#include <pthread.h>

#include "kc_test.h"
#include "ring.h"

static void fifo_and_capacity(void **state)
{
    (void)state;
    kc_rt_cring_t r;
    assert_int_equal(kc_rt_cring_init(&r, 6), KC_OK); /* rounded up to 8: holds 7 */
    kc_rt_cmpl_t c = {0}, out;
    for (int i = 0; i < 7; i++) {
        c.offset = i;
        assert_true(kc_rt_cring_push(&r, &c));
    }
    assert_false(kc_rt_cring_push(&r, &c));
    for (int i = 0; i < 7; i++) {
        assert_true(kc_rt_cring_pop(&r, &out));
        assert_int_equal(out.offset, i);
    }
    assert_false(kc_rt_cring_pop(&r, &out));
    kc_rt_cring_fini(&r);
}

#define N 200000
static kc_rt_bring_t R;

static void *producer(void *arg)
{
    (void)arg;
    for (int64_t i = 0; i < N; i++) {
        kc_rt_bref_t b = {.base_offset = i, .last_offset = i * 3};
        while (!kc_rt_bring_push(&R, &b))
            sched_yield();
    }
    return NULL;
}

static void two_threads_in_order(void **state)
{
    (void)state;
    assert_int_equal(kc_rt_bring_init(&R, 64), KC_OK);
    pthread_t t;
    pthread_create(&t, NULL, producer, NULL);
    int64_t next = 0;
    while (next < N) {
        kc_rt_bref_t b;
        if (!kc_rt_bring_pop(&R, &b)) {
            sched_yield();
            continue;
        }
        assert_int_equal(b.base_offset, next);
        assert_int_equal(b.last_offset, next * 3);
        next++;
    }
    pthread_join(t, NULL);
    kc_rt_bref_t b;
    assert_false(kc_rt_bring_pop(&R, &b));
    assert_int_equal(kc_rt_bring_size(&R), 0);
    kc_rt_bring_fini(&R);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fifo_and_capacity),
        cmocka_unit_test(two_threads_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
