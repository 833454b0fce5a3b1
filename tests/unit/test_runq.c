/* kc-test-label: threads */
/*
 * The run queue: correctness of the mutex+condvar queue (every pushed partition popped exactly
 * once by 4 consumers, blocking pops woken), and the measurement behind choosing it over ck_ring
 * MPMC (runtime/README.md): the same 3-producer / 3-consumer workload through both, printed.
 * The MPMC half is not built under TSan: ck's MPMC dequeue reads a slot speculatively before its
 * CAS (benign by design, a race to TSan), and the point here is the timing anyway.
 */
#include <ck_ring.h>
#include <stdio.h>
#include <unistd.h>
#include <time.h>

#include "kc_test.h"
#include "rt_internal.h"

#define ITEMS 200000
#define PROD  3
#define CONS  3

static kc_rt_runq_t Q;
static kc_rt_part_t *PARTS;
static _Atomic long popped;
static _Atomic int seen[ITEMS];

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *mq_prod(void *arg)
{
    long id = (long)arg;
    for (long i = id; i < ITEMS; i += PROD)
        kc_rt_runq_push(&Q, &PARTS[i]);
    return NULL;
}

static void *mq_cons(void *arg)
{
    (void)arg;
    kc_rt_part_t *p;
    bool had = false;
    while ((p = kc_rt_runq_pop(&Q, had))) {
        had = true;
        atomic_fetch_add(&seen[p - PARTS], 1);
        atomic_fetch_add(&popped, 1);
    }
    return NULL;
}

static double run_mutex_queue(void)
{
    pthread_t p[PROD], c[CONS];
    assert_int_equal(kc_rt_runq_init(&Q), 0);
    atomic_store(&popped, 0);
    int64_t t0 = now_ns();
    for (long i = 0; i < CONS; i++)
        pthread_create(&c[i], NULL, mq_cons, NULL);
    for (long i = 0; i < PROD; i++)
        pthread_create(&p[i], NULL, mq_prod, (void *)i);
    for (int i = 0; i < PROD; i++)
        pthread_join(p[i], NULL);
    kc_rt_runq_stop(&Q, KC_RT_STOP_DRAIN);
    for (int i = 0; i < CONS; i++)
        pthread_join(c[i], NULL);
    double ns = (double)(now_ns() - t0) / ITEMS;
    kc_rt_runq_fini(&Q);
    return ns;
}

static void mutex_queue_exactly_once(void **state)
{
    (void)state;
    PARTS = calloc(ITEMS, sizeof *PARTS);
    double ns = run_mutex_queue();
    assert_int_equal(atomic_load(&popped), ITEMS);
    for (int i = 0; i < ITEMS; i++)
        assert_int_equal(atomic_load(&seen[i]), 1);
    printf("runq mutex+condvar: %.0f ns per item (%d producers, %d consumers, %ld CPUs)\n", ns,
           PROD, CONS, sysconf(_SC_NPROCESSORS_ONLN));
    free(PARTS);
}

#if !defined(KC_TSAN)
static struct ck_ring MR;
static ck_ring_buffer_t *MB;
static _Atomic int mpmc_done;
/* fewer items: on a loaded 2-vCPU box the spinning variant is slow, and burns shared CPU */
#define MPMC_ITEMS 20000

static void *mp_prod(void *arg)
{
    long id = (long)arg;
    for (long i = id; i < MPMC_ITEMS; i += PROD)
        while (!ck_ring_enqueue_mpmc(&MR, MB, &PARTS[i]))
            sched_yield(); /* full: a lock-free run queue must spin/yield (or add a futex) */
    return NULL;
}

static void *mp_cons(void *arg)
{
    (void)arg;
    void *v;
    for (;;) {
        if (ck_ring_dequeue_mpmc(&MR, MB, &v)) {
            atomic_fetch_add(&seen[(kc_rt_part_t *)v - PARTS], 1);
            atomic_fetch_add(&popped, 1);
        } else if (atomic_load(&mpmc_done) && atomic_load(&popped) >= MPMC_ITEMS) {
            return NULL;
        } else {
            sched_yield(); /* empty: a real pool would need a sleeping flag + futex here */
        }
    }
}

static void mpmc_for_comparison(void **state)
{
    (void)state;
    PARTS = calloc(ITEMS, sizeof *PARTS);
    MB = calloc(1024, sizeof *MB);
    ck_ring_init(&MR, 1024);
    for (int i = 0; i < ITEMS; i++)
        atomic_store(&seen[i], 0);
    atomic_store(&popped, 0);
    pthread_t p[PROD], c[CONS];
    int64_t t0 = now_ns();
    for (long i = 0; i < CONS; i++)
        pthread_create(&c[i], NULL, mp_cons, NULL);
    for (long i = 0; i < PROD; i++)
        pthread_create(&p[i], NULL, mp_prod, (void *)i);
    for (int i = 0; i < PROD; i++)
        pthread_join(p[i], NULL);
    atomic_store(&mpmc_done, 1);
    for (int i = 0; i < CONS; i++)
        pthread_join(c[i], NULL);
    double ns = (double)(now_ns() - t0) / MPMC_ITEMS;
    assert_int_equal(atomic_load(&popped), MPMC_ITEMS);
    for (int i = 0; i < MPMC_ITEMS; i++)
        assert_int_equal(atomic_load(&seen[i]), 1);
    printf("runq ck_ring MPMC:  %.0f ns per item (yielding when empty/full)\n", ns);
    free(MB);
    free(PARTS);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mutex_queue_exactly_once),
#if !defined(KC_TSAN)
        cmocka_unit_test(mpmc_for_comparison),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
