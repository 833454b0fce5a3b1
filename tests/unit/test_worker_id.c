/* kc-test-label: threads */
/* kc_worker_id: inside callbacks it names the worker running them — the id the dispatcher records
 * as the partition's last_worker (the stats JSON's partitions[].worker / workers[].id), and the
 * thread's name, kc-worker-<id> — and it is -1 on threads that are not workers. */
#include <stdio.h>
#include <string.h>

#include "rt_harness.h"

#define NP      8
#define WORKERS 3

static _Atomic int out_of_range; /* callbacks whose id was not a worker's */
static _Atomic int mismatch;     /* callbacks whose id differed from the dispatcher's record */
static _Atomic int misnamed;     /* callbacks on a thread not named kc-worker-<id> */
static _Atomic long checked;
static _Atomic int ids_used[WORKERS];
static harness_t *H;

static kc_cb_result_t rec_cb(void *opaque, kc_part_t *p, kc_records_t *b)
{
    int id = kc_worker_id();
    if (id < 0 || id >= WORKERS)
        atomic_fetch_add(&out_of_range, 1);
    else
        atomic_store(&ids_used[id], 1);
    /* kc_part_t is the first member of the runtime's partition: the worker running it stored
     * its own id there before calling us (what stats report as partitions[].worker). */
    const kc_rt_part_t *rp = (const kc_rt_part_t *)(const void *)p;
    if (atomic_load(&rp->last_worker) != id)
        atomic_fetch_add(&mismatch, 1);
    char name[16] = "", want[16];
    pthread_getname_np(pthread_self(), name, sizeof name);
    snprintf(want, sizeof want, "kc-worker-%d", id);
    if (strcmp(name, want) != 0)
        atomic_fetch_add(&misnamed, 1);
    atomic_fetch_add(&checked, 1);
    return h_on_records(opaque, p, b);
}

static bool all_delivered(harness_t *h)
{
    for (int i = 0; i < h->np; i++)
        if (atomic_load(&h->hp[i].records) < 200)
            return false;
    return true;
}

static void worker_ids_match_dispatcher(void **state)
{
    (void)state;
    H = calloc(1, sizeof *H);
    assert_non_null(H);
    assert_int_equal(kc_worker_id(), -1); /* the test's own thread is no worker */
    kc_rt_opts_t o = h_opts(H, WORKERS);
    o.cbs.on_records = rec_cb;
    for (int i = 0; i < NP; i++)
        atomic_store(&H->hp[i].sleep_us, 200); /* keep several workers busy at once */
    h_start(H, &o, NP);
    for (int round = 0; round < 20; round++)
        for (int i = 0; i < NP; i++)
            while (!h_push(H, i, 10, 8))
                kc_rt_drain_completions(H->rt, h_cmpl, H);
    assert_true(h_wait(H, all_delivered, 20000));
    assert_int_equal(atomic_load(&out_of_range), 0);
    assert_int_equal(atomic_load(&mismatch), 0);
    assert_int_equal(atomic_load(&misnamed), 0);
    assert_true(atomic_load(&checked) >= NP * 20);
    assert_int_equal(atomic_load(&H->violations), 0);
    int used = 0;
    for (int w = 0; w < WORKERS; w++)
        used += atomic_load(&ids_used[w]);
    assert_true(used >= 2); /* 8 partitions sleeping per view spread over the pool */
    kc_rt_shutdown(H->rt, false, 5000);
    kc_rt_free(H->rt);
    free(H);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(worker_ids_match_dispatcher)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
