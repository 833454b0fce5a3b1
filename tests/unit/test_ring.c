/* kc-test-label: threads */
/* The typed SPSC rings over ck_ring: FIFO, capacity (size - 1), and a two-thread stream in
 * order with no loss or duplication; the batch ring's growth (ring.h): FIFO across segments, the
 * full size's bound, and a consumer draining and freeing old segments while the producer grows. */
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

static void push_n(kc_rt_bring_t *r, int64_t from, int n)
{
    for (int64_t i = from; i < from + n; i++) {
        kc_rt_bref_t b = {.base_offset = i};
        assert_true(kc_rt_bring_push(r, &b));
    }
}

static void pop_n(kc_rt_bring_t *r, int64_t from, int n)
{
    for (int64_t i = from; i < from + n; i++) {
        kc_rt_bref_t b;
        assert_true(kc_rt_bring_pop(r, &b));
        assert_int_equal(b.base_offset, i);
    }
}

static void batch_ring_grows_in_order(void **state)
{
    (void)state;
    kc_rt_bring_t r;
    assert_int_equal(kc_rt_bring_init(&r, 64), KC_OK);
    assert_int_equal(ck_ring_capacity(&r.prod->ring), KC_RT_BRING_FIRST);
    /* The first segment full, then one push more: it goes to a new segment of twice the size,
     * and what is left in the old one comes out before it, also after more pushes. */
    push_n(&r, 0, KC_RT_BRING_FIRST - 1);
    assert_int_equal(ck_ring_capacity(&r.prod->ring), KC_RT_BRING_FIRST);
    push_n(&r, KC_RT_BRING_FIRST - 1, 1);
    assert_int_equal(ck_ring_capacity(&r.prod->ring), 2 * KC_RT_BRING_FIRST);
    assert_true(r.cons != r.prod);
    const int k = KC_RT_BRING_FIRST / 2 - 1; /* popped, with entries left in the old segment */
    pop_n(&r, 0, k);
    push_n(&r, KC_RT_BRING_FIRST, 1);
    assert_int_equal(kc_rt_bring_size(&r), KC_RT_BRING_FIRST - k + 1);
    pop_n(&r, k, KC_RT_BRING_FIRST - k + 1);
    assert_true(r.cons == r.prod); /* the drained segment was left (and freed: ASan) */
    kc_rt_bref_t b;
    assert_false(kc_rt_bring_pop(&r, &b));
    /* Up to the full size's bound, 63 queued, whatever the segments hold. */
    push_n(&r, 100, 63);
    assert_int_equal(kc_rt_bring_size(&r), 63);
    b.base_offset = -1;
    assert_false(kc_rt_bring_push(&r, &b));
    assert_int_equal(ck_ring_capacity(&r.prod->ring), 64);
    pop_n(&r, 100, 1);
    push_n(&r, 163, 1); /* one popped: room for one */
    assert_false(kc_rt_bring_push(&r, &b));
    pop_n(&r, 101, 63);
    assert_false(kc_rt_bring_pop(&r, &b));
    /* The consumer's second look: a segment that looked empty before the producer filled it
     * and linked the next one still holds entries, which come out before the next segment's. */
    kc_rt_bring_fini(&r); /* from a fresh ring */
    assert_int_equal(kc_rt_bring_init(&r, 64), KC_OK);
    push_n(&r, 0, KC_RT_BRING_FIRST); /* the last of them grew the ring */
    kc_rt_bseg_t *first_seg = r.cons;
    assert_true(kc_rt_bring_next_segment(&r)); /* a link, but entries left: stay */
    assert_true(r.cons == first_seg);
    pop_n(&r, 0, KC_RT_BRING_FIRST);
    assert_true(r.cons == r.prod);
    /* Segments still queued at fini are freed there (ASan's leak check). */
    push_n(&r, 0, 40);
    kc_rt_bring_fini(&r);

    /* A ring no larger than its first segment is that size from the start and never grows. */
    assert_int_equal(kc_rt_bring_init(&r, KC_RT_BRING_FIRST), KC_OK);
    push_n(&r, 0, KC_RT_BRING_FIRST - 1);
    assert_false(kc_rt_bring_push(&r, &b));
    assert_true(r.cons == r.prod);
    pop_n(&r, 0, KC_RT_BRING_FIRST - 1);
    kc_rt_bring_fini(&r);
}

#define N 200000
static kc_rt_bring_t R;
static int64_t n_items = N;

static void *producer(void *arg)
{
    (void)arg;
    for (int64_t i = 0; i < n_items; i++) {
        kc_rt_bref_t b = {.base_offset = i, .last_offset = i * 3};
        while (!kc_rt_bring_push(&R, &b))
            sched_yield();
    }
    return NULL;
}

/* One stream of n items through a fresh ring of `size` slots, producer and consumer on two
 * threads. */
static void stream(unsigned size, int64_t n)
{
    assert_int_equal(kc_rt_bring_init(&R, size), KC_OK);
    n_items = n;
    pthread_t t;
    pthread_create(&t, NULL, producer, NULL);
    int64_t next = 0;
    while (next < n) {
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

static void two_threads_in_order(void **state)
{
    (void)state;
    stream(64, N);
}

/* Growth while the consumer pops: every round starts a ring at its first segment, so each grows
 * from KC_RT_BRING_FIRST to 256 slots with the consumer draining and freeing the old segments as
 * the producer links new ones. Under TSan the link's release/acquire is what orders the old
 * segment's last entries before its free; under ASan a producer touching a freed segment fails. */
static void two_threads_while_growing(void **state)
{
    (void)state;
    for (int round = 0; round < 300; round++)
        stream(256, 600);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fifo_and_capacity),
        cmocka_unit_test(batch_ring_grows_in_order),
        cmocka_unit_test(two_threads_in_order),
        cmocka_unit_test(two_threads_while_growing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
