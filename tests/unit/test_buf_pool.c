/* kc-test-label: threads */
/* The frame buffer cache (io/base/buf_pool.c): big buffers come back for reuse, small ones never
 * enter it, it keeps at most 8 buffers, a reused buffer reports the size asked for (the receive
 * path fills a frame to cap), mid-sized buffers (a ShareFetch answer) come back from a tier of
 * their own that neither serves nor takes the big ones, and take/give from two threads at once
 * is clean (TSan). */
#include <pthread.h>
#include <string.h>

#include "base/buf.h"
#include "kc_test.h"

static void reuse_and_sizes(void **state)
{
    (void)state;
    kc_buf_pool_drain();
    kc_buf_t *a = kc_buf_new(300 << 10);
    assert_non_null(a);
    assert_int_equal(a->cap, 300 << 10);
    assert_true(a->alloc >= a->cap);
    memset(a->data, 0xab, a->cap); /* the whole asked-for size is writable */
    kc_buf_t *keep = a;
    kc_buf_unref(a);
    assert_int_equal(kc_buf_pool_idle_bytes(NULL), keep->alloc); /* kept, not freed */
    kc_buf_t *b = kc_buf_new(290 << 10); /* fits the pooled one: the same memory again */
    assert_ptr_equal(b, keep);
    assert_int_equal(b->cap, 290 << 10);
    assert_int_equal(b->len, 0);
    assert_int_equal(atomic_load(&b->refcnt), 1);
    assert_int_equal(kc_buf_pool_idle_bytes(NULL), 0);
    kc_buf_t *c = kc_buf_new(4 << 20); /* larger than anything pooled: a new one */
    assert_ptr_not_equal(c, b);
    kc_buf_unref(b);
    kc_buf_unref(c);
    kc_buf_t *small = kc_buf_new(1000); /* below KC_BUF_POOL_MIN: plain malloc/free */
    size_t idle = kc_buf_pool_idle_bytes(NULL);
    kc_buf_unref(small);
    assert_int_equal(kc_buf_pool_idle_bytes(NULL), idle);
    kc_buf_pool_drain();
    assert_int_equal(kc_buf_pool_idle_bytes(NULL), 0);
}

static void bounded(void **state)
{
    (void)state;
    kc_buf_pool_drain();
    kc_buf_t *v[12];
    for (int i = 0; i < 12; i++)
        assert_non_null(v[i] = kc_buf_new(1 << 20));
    size_t one = v[0]->alloc;
    for (int i = 0; i < 12; i++)
        kc_buf_unref(v[i]);
    assert_int_equal(kc_buf_pool_idle_bytes(NULL), 8 * one); /* 8 slots; the other 4 were freed */
    /* the largest idle buffer, across both tiers: what the fetch budget lets a frame reuse */
    kc_buf_t *small = kc_buf_new(100 << 10), *large = kc_buf_new(3 << 20);
    assert_non_null(small);
    assert_non_null(large);
    size_t large_alloc = large->alloc, largest = 0;
    kc_buf_unref(small);
    kc_buf_pool_idle_bytes(&largest);
    assert_int_equal(largest, one);
    kc_buf_unref(large); /* replaces one of the 1 MiB ones: a larger buffer serves more frames */
    kc_buf_pool_idle_bytes(&largest);
    assert_int_equal(largest, large_alloc);
    kc_buf_pool_drain();
    kc_buf_pool_idle_bytes(&largest);
    assert_int_equal(largest, 0);
}

static void mid_sized_tier(void **state)
{
    (void)state;
    kc_buf_pool_drain();
    kc_buf_t *a = kc_buf_new(100 << 10);
    assert_non_null(a);
    assert_true(a->alloc >= a->cap && a->alloc < KC_BUF_POOL_MIN);
    kc_buf_t *keep = a;
    kc_buf_unref(a);
    assert_int_equal(kc_buf_pool_idle_bytes(NULL), keep->alloc); /* kept */
    kc_buf_t *b = kc_buf_new(90 << 10);
    assert_ptr_equal(b, keep); /* no allocation for the next answer */
    assert_int_equal(b->cap, 90 << 10);
    kc_buf_unref(b);
    /* a big frame does not take the mid-sized buffer, nor a big one a mid-sized slot */
    kc_buf_t *big = kc_buf_new(300 << 10);
    assert_ptr_not_equal(big, keep);
    kc_buf_unref(big);
    kc_buf_t *c = kc_buf_new(80 << 10);
    assert_ptr_equal(c, keep); /* best fit in its own tier, though a big one is idle too */
    kc_buf_unref(c);
    /* just under the big tier's least: its buffer stays in the mid-sized tier */
    kc_buf_t *d = kc_buf_new(KC_BUF_POOL_MIN - 100);
    assert_true(d->alloc < KC_BUF_POOL_MIN);
    kc_buf_t *dk = d;
    kc_buf_unref(d);
    d = kc_buf_new(KC_BUF_POOL_MIN - 10);
    assert_ptr_equal(d, dk);
    kc_buf_unref(d);
    kc_buf_pool_drain();
    /* at most 8 mid-sized buffers idle */
    kc_buf_t *v[12];
    for (int i = 0; i < 12; i++)
        assert_non_null(v[i] = kc_buf_new(100 << 10));
    size_t one = v[0]->alloc;
    for (int i = 0; i < 12; i++)
        kc_buf_unref(v[i]);
    assert_int_equal(kc_buf_pool_idle_bytes(NULL), 8 * one);
    kc_buf_pool_drain();
}

static void *churn(void *arg)
{
    kc_buf_t **handoff = arg;
    for (int i = 0; i < 20000; i++) {
        kc_buf_t *b = kc_buf_new((size_t)(16 + i % 752) << 10); /* both tiers */
        if (!b)
            return (void *)1;
        b->data[b->cap - 1] = 1;
        /* Every other buffer is dropped by the other thread, as a worker drops a frame the
         * network thread took. */
        if (i % 2) {
            kc_buf_t *prev = __atomic_exchange_n(handoff, b, __ATOMIC_ACQ_REL);
            kc_buf_unref(prev);
        } else {
            kc_buf_unref(b);
        }
    }
    return NULL;
}

static void two_threads(void **state)
{
    (void)state;
    kc_buf_t *handoff = NULL;
    pthread_t t1, t2;
    void *r1, *r2;
    assert_int_equal(pthread_create(&t1, NULL, churn, &handoff), 0);
    assert_int_equal(pthread_create(&t2, NULL, churn, &handoff), 0);
    pthread_join(t1, &r1);
    pthread_join(t2, &r2);
    assert_null(r1);
    assert_null(r2);
    kc_buf_unref(handoff);
    assert_true(kc_buf_pool_idle_bytes(NULL) <= (size_t)32 << 20);
    kc_buf_pool_drain();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reuse_and_sizes),
        cmocka_unit_test(bounded),
        cmocka_unit_test(mid_sized_tier),
        cmocka_unit_test(two_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
