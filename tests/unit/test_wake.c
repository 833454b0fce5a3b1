/* kc-test-label: threads */
/*
 * The completion wake-up (dispatch.h: kc_rt_wake_claim / kc_rt_wake_rearm) run as consumer.c
 * runs it: workers post completions with kc_rt_post (ring push, then the wake hook), the hook
 * claims the flag and posts one command to a real network thread (io/netthread.h: MPSC queue +
 * eventfd), the command re-arms the flag and drains with kc_rt_drain_completions. The property:
 * a posted completion is always drained within a bound, with no later completion needed to
 * carry it out (a stranded REVOKE_DONE stalls a rebalance).
 *
 * What the end-to-end cases can and cannot show: on x86 the drain's first exchange is a full
 * barrier right after the re-arm, so they pass without the fences too. They still check the
 * protocol's logic (flag ordering, command reuse, the REVOKE_DONE delay pass) under randomized
 * interleavings, and under TSan the data handed through the rings and the command node. The
 * reordering the fences forbid (the drain's loads of the ring tails taking effect before the
 * re-arming store) is, written out in source, "drain, then re-arm": with wake_run in that order
 * this test fails within a few dozen rounds, which is what shows the checks below would see a
 * stranded completion. store_buffer_litmus (the last case) runs the two primitives alone, where
 * x86's own store buffer does show the reordering: it fails with kc_rt_wake_rearm's fence removed.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "fake_batch.h"
#include "kc_test.h"
#include "netthread.h"
#include "rt_internal.h"

#if defined(KC_TSAN)
#define ROUNDS      10000
#define PART_ROUNDS 3000
#else
#define ROUNDS      50000
#define PART_ROUNDS 10000
#endif
#define LITMUS_ROUNDS 2000000u /* or 3 s, whichever comes first */
#define POSTERS       2
#define BOUND_NS      (10 * 1000000000LL) /* "drained within": generous for a loaded 2-vCPU box */
#define REVOKE_EVERY  8

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static uint32_t rnd(uint32_t *s)
{
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

/* A short random pause: mostly a few hundred spins, sometimes a yield, rarely a sleep, so both
 * sides hit every point of the other's sequence. */
static void jitter(uint32_t *s)
{
    uint32_t r = rnd(s);
    if (r % 64 == 0)
        usleep(r % 50);
    else if (r % 8 == 0)
        sched_yield();
    else
        for (volatile uint32_t i = 0, n = r % 512; i < n; i++)
            ;
}

/* ---- the consumer's wake, as consumer.c wires it -------------------------------------------- */

typedef struct waker {
    kc_rt_t *rt;
    kc_netthread_t *nt;
    atomic_int pending; /* consumer.c: c->wake_pending */
    atomic_int live;    /* consumer.c: c->rt_live */
    kc_loop_cmd_t cmd;  /* consumer.c: c->wake_cmd */
    void (*on_cmpl)(void *ctx, const kc_rt_cmpl_t *c);
    uint32_t seed;         /* owner: the network thread */
    _Atomic long commands; /* wake commands run */
    _Atomic long claims;   /* hook calls that posted */
    _Atomic long hook_calls;
} waker_t;

static waker_t W;

static void wake_run(kc_loop_t *loop, kc_loop_cmd_t *cmd)
{
    (void)loop;
    waker_t *w = cmd->opaque;
    atomic_fetch_add(&w->commands, 1);
    jitter(&w->seed);
    kc_rt_wake_rearm(&w->pending);
    jitter(&w->seed);
    if (atomic_load_explicit(&w->live, memory_order_relaxed))
        kc_rt_drain_completions(w->rt, w->on_cmpl, w);
}

static void wake_hook(void *ctx)
{
    waker_t *w = ctx;
    atomic_fetch_add_explicit(&w->hook_calls, 1, memory_order_relaxed);
    if (kc_rt_wake_claim(&w->pending)) {
        atomic_fetch_add_explicit(&w->claims, 1, memory_order_relaxed);
        kc_netthread_post(w->nt, &w->cmd);
    }
}

static void nop(kc_loop_t *loop, void *arg)
{
    (void)loop, (void)arg;
}

static void rt_dead(kc_loop_t *loop, void *arg)
{
    (void)loop, (void)arg;
    atomic_store_explicit(&W.live, 0, memory_order_relaxed);
}

static kc_cb_result_t on_records(void *opaque, kc_part_t *p, kc_records_t *b)
{
    (void)opaque, (void)p;
    while (kc_records_next(b))
        ;
    return KC_CB_CONTINUE;
}

static void start(unsigned workers, void (*on_cmpl)(void *, const kc_rt_cmpl_t *))
{
    memset(&W, 0, sizeof W);
    W.seed = 0x9e3779b9u;
    W.on_cmpl = on_cmpl;
    W.cmd.fn = wake_run;
    W.cmd.opaque = &W;
    kc_error_t e;
    assert_int_equal(kc_netthread_start(&W.nt, KC_LOOP_AUTO, NULL, &e), KC_OK);
    kc_rt_opts_t o = {
        .workers = workers,
        .ring_slots = 64,
        .queued_max_bytes = 1 << 30,
        .auto_store = true,
        .cbs = {.on_records = on_records},
        .decoder = fake_decoder(),
        .wake = wake_hook,
        .wake_ctx = &W,
    };
    assert_int_equal(kc_rt_new(&o, &W.rt, &e), KC_OK);
    atomic_store(&W.live, 1);
}

static void stop(void)
{
    kc_netthread_call(W.nt, rt_dead, NULL); /* as kc_close: no drain after this */
    kc_rt_shutdown(W.rt, false, 5000);
    kc_rt_free(W.rt);
    kc_netthread_stop(W.nt);
}

/* ---- 1. posters on the completion rings ----------------------------------------------------- */

/* Two threads post as worker 0 and worker 1 (the pool's own threads stay idle: no partitions),
 * each in bursts of 1-3 completions, every REVOKE_EVERY-th burst ending with a REVOKE_DONE, then
 * waits until the network thread drained all of them, posting nothing else meanwhile. */
typedef struct poster {
    int id;
    kc_rt_part_t *part;  /* a stand-in the REVOKE_DONE names (drain links it, nobody frees it) */
    _Atomic long posted; /* ERROR completions, numbered 1.. (offset: id << 40 | number) */
    _Atomic long seen;   /* the highest one drained (network thread) */
    _Atomic long revokes_posted, revokes_seen;
    _Atomic long misordered;
    long stranded_at; /* owner: the poster: round of the first stranding, 0 none */
    int64_t worst_ns;
} poster_t;

static poster_t P[POSTERS];

static void cmpl_posters(void *ctx, const kc_rt_cmpl_t *c)
{
    (void)ctx;
    if (c->type == KC_RT_CMPL_REVOKE_DONE) {
        for (int i = 0; i < POSTERS; i++)
            if (c->part == P[i].part)
                atomic_fetch_add(&P[i].revokes_seen, 1);
        return;
    }
    poster_t *p = &P[c->offset >> 40];
    long n = (long)(c->offset & ((1LL << 40) - 1));
    /* in order, none twice: a ring is FIFO and each entry is drained once */
    if (n != atomic_load(&p->seen) + 1)
        atomic_fetch_add(&p->misordered, 1);
    atomic_store(&p->seen, n);
}

static void *poster_main(void *arg)
{
    poster_t *p = arg;
    kc_rt_worker_t *w = &W.rt->w[p->id];
    uint32_t seed = 0x2545f491u * (uint32_t)(p->id + 1);
    for (long round = 1; round <= ROUNDS; round++) {
        jitter(&seed);
        int burst = 1 + (int)(rnd(&seed) % 3);
        for (int k = 0; k < burst; k++) {
            long n = atomic_load(&p->posted) + 1;
            atomic_store(&p->posted, n);
            kc_rt_post(w, KC_RT_CMPL_ERROR, NULL, KC_ERR_STATE, ((int64_t)p->id << 40) | n);
        }
        bool revoke = round % REVOKE_EVERY == 0;
        if (revoke) {
            atomic_fetch_add(&p->revokes_posted, 1);
            kc_rt_post(w, KC_RT_CMPL_REVOKE_DONE, p->part, KC_OK, 0);
        }
        int64_t t0 = now_ns(), t = t0;
        while (atomic_load(&p->seen) != atomic_load(&p->posted) ||
               atomic_load(&p->revokes_seen) != atomic_load(&p->revokes_posted)) {
            if ((t = now_ns()) - t0 > BOUND_NS) {
                p->stranded_at = round;
                return NULL;
            }
            sched_yield();
        }
        if (t - t0 > p->worst_ns)
            p->worst_ns = t - t0;
    }
    return NULL;
}

static void completions_never_stranded(void **state)
{
    (void)state;
    start(POSTERS, cmpl_posters);
    pthread_t th[POSTERS];
    for (int i = 0; i < POSTERS; i++) {
        memset(&P[i], 0, sizeof P[i]);
        P[i].id = i;
        P[i].part = calloc(1, sizeof *P[i].part);
        assert_non_null(P[i].part);
    }
    for (int i = 0; i < POSTERS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, poster_main, &P[i]), 0);
    for (int i = 0; i < POSTERS; i++)
        pthread_join(th[i], NULL);
    kc_netthread_call(W.nt, nop, NULL); /* the last command has run */
    for (int i = 0; i < POSTERS; i++) {
        if (P[i].stranded_at)
            fail_msg("poster %d, round %ld: completion not drained within %lld s (posted %ld, "
                     "drained %ld; REVOKE_DONE posted %ld, drained %ld; wake_pending %d)",
                     i, P[i].stranded_at, BOUND_NS / 1000000000LL, atomic_load(&P[i].posted),
                     atomic_load(&P[i].seen), atomic_load(&P[i].revokes_posted),
                     atomic_load(&P[i].revokes_seen), atomic_load(&W.pending));
        assert_int_equal(atomic_load(&P[i].misordered), 0);
        assert_int_equal(atomic_load(&P[i].revokes_posted), ROUNDS / REVOKE_EVERY);
    }
    /* Quiescent: the last command re-armed the flag; claims never outnumber hook calls, and
     * each claim ran exactly one command. */
    assert_int_equal(atomic_load(&W.pending), 0);
    assert_int_equal(atomic_load(&W.claims), atomic_load(&W.commands));
    assert_true(atomic_load(&W.claims) <= atomic_load(&W.hook_calls));
    print_message("    %ld hook calls, %ld commands; slowest drain %lld us / %lld us\n",
                  atomic_load(&W.hook_calls), atomic_load(&W.commands),
                  (long long)(P[0].worst_ns / 1000), (long long)(P[1].worst_ns / 1000));
    stop();
    for (int i = 0; i < POSTERS; i++)
        free(P[i].part);
}

/* ---- 2. the rebalance gate end to end ------------------------------------------------------ */

/* Real partitions revoked on the network thread, their REVOKE_DONE posted by the worker that
 * ran the revoke, drained by the wake command and freed there, as consumer.c's on_cmpl does.
 * Each round waits for its one REVOKE_DONE: nothing else would carry it out if it stranded. */
static _Atomic long revoke_done;

static void cmpl_parts(void *ctx, const kc_rt_cmpl_t *c)
{
    (void)ctx;
    if (c->type == KC_RT_CMPL_REVOKE_DONE) {
        kc_rt_part_free(c->part);
        atomic_fetch_add(&revoke_done, 1);
    }
}

typedef struct round_arg {
    long n;
    uint32_t seed;
} round_arg_t;

static void add_and_revoke(kc_loop_t *loop, void *arg)
{
    (void)loop;
    round_arg_t *a = arg;
    kc_rt_part_t *p = kc_rt_part_add(W.rt, "t", (int32_t)(a->n % 1000), 0);
    if (!p)
        abort(); /* out of memory; cmocka's asserts are for the test's own thread */
    uint32_t r = rnd(&a->seed);
    for (uint32_t k = 0; k < r % 3; k++) { /* sometimes batches the revoke drops or delivers */
        kc_rt_bref_t b = fake_batch((int64_t)k * 4, 4, 8);
        if (kc_rt_part_push(p, &b) != KC_OK)
            kc_slice_release(&b.raw);
    }
    if (r % 4 == 0)
        jitter(&a->seed); /* let a worker pick it up first */
    kc_rt_part_revoke(p, r % 8 == 0);
}

static void revoke_done_never_stranded(void **state)
{
    (void)state;
    atomic_store(&revoke_done, 0);
    start(2, cmpl_parts);
    round_arg_t a = {0, 0x1234567u};
    int64_t worst = 0;
    for (a.n = 1; a.n <= PART_ROUNDS; a.n++) {
        kc_netthread_call(W.nt, add_and_revoke, &a);
        int64_t t0 = now_ns(), t = t0;
        while (atomic_load(&revoke_done) != a.n) {
            if ((t = now_ns()) - t0 > BOUND_NS)
                fail_msg("round %ld: REVOKE_DONE not drained within %lld s (wake_pending %d)", a.n,
                         BOUND_NS / 1000000000LL, atomic_load(&W.pending));
            sched_yield();
        }
        if (t - t0 > worst)
            worst = t - t0;
    }
    print_message("    %d revokes, %ld wake commands; slowest %lld us\n", PART_ROUNDS,
                  atomic_load(&W.commands), (long long)(worst / 1000));
    stop();
}

/* ---- the two primitives alone: the store-buffer litmus ------------------------------------- */

/*
 * Per round, from pending == 1 (a wake command is on its way) and an empty completion ring:
 *   worker:  kc_rt_cring_push ; kc_rt_wake_claim          -> claimed?
 *   network: kc_rt_wake_rearm ; kc_rt_cring_pop           -> seen?
 * started together (a two-party barrier, then a random few-spin delay on each side so that every
 * alignment of the two sequences comes up). "Neither claimed nor seen" is the stranded outcome
 * the fences forbid. Unlike the end-to-end cases above, nothing else runs between the re-arm and
 * the ring loads: in consumer.c the drain starts with an exchange, which on x86 is a full
 * barrier and would hide a missing fence; here the network side's store->load order rests on
 * kc_rt_wake_rearm alone. x86 does reorder a store with a later load (its store buffer), so this
 * finds a re-arm without its fence on x86 too: `rearm_release_only` below is that variant,
 * measured beside the real one and printed, not asserted (how often a machine shows the
 * reordering is the machine's business).
 */
typedef struct litmus {
    kc_rt_cring_t ring;
    atomic_int pending;
    _Atomic unsigned bar, done; /* barrier arrivals: two per round */
    atomic_bool stop;           /* set by the network side before its last arrival at `bar` */
    bool claimed;               /* the worker's outcome, published by its `done` arrival */
} litmus_t;

static void rearm_release_only(atomic_int *pending)
{
    atomic_store_explicit(pending, 0, memory_order_release);
}

static void litmus_wait(_Atomic unsigned *v, unsigned want)
{
    for (unsigned spins = 0; atomic_load_explicit(v, memory_order_acquire) < want; spins++)
        if (spins > 2000) /* a single core, or valgrind: let the other side run */
            sched_yield();
}

static void litmus_delay(uint32_t *seed)
{
    for (volatile uint32_t i = 0, n = rnd(seed) % 48; i < n; i++)
        ;
}

static void *litmus_worker(void *arg)
{
    litmus_t *l = arg;
    uint32_t seed = 0x2545f491u;
    kc_rt_cmpl_t c = {.type = KC_RT_CMPL_DRAINED};
    for (unsigned r = 1;; r++) {
        atomic_fetch_add_explicit(&l->bar, 1, memory_order_acq_rel);
        litmus_wait(&l->bar, 2 * r);
        if (atomic_load_explicit(&l->stop, memory_order_relaxed)) /* ordered by the barrier */
            return NULL;
        litmus_delay(&seed);
        if (!kc_rt_cring_push(&l->ring, &c))
            abort(); /* the network side empties the ring every round */
        l->claimed = kc_rt_wake_claim(&l->pending);
        atomic_fetch_add_explicit(&l->done, 1, memory_order_acq_rel);
    }
}

/* Up to `rounds` rounds (or max_ns) with `rearm` on the network side (this thread); returns the
 * stranded ones, *ran the rounds run. */
static long litmus_run(void (*rearm)(atomic_int *), unsigned rounds, int64_t max_ns, long *ran)
{
    static litmus_t l;
    memset(&l, 0, sizeof l);
    assert_int_equal(kc_rt_cring_init(&l.ring, 4), KC_OK);
    atomic_init(&l.pending, 1);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, litmus_worker, &l), 0);
    uint32_t seed = 0x9e3779b9u;
    long strands = 0;
    int64_t end = now_ns() + max_ns;
    kc_rt_cmpl_t c;
    unsigned r;
    for (r = 1;; r++) {
        bool last = r > rounds || ((r & 1023) == 0 && now_ns() > end);
        if (last)
            atomic_store_explicit(&l.stop, true, memory_order_relaxed); /* before the arrival */
        atomic_fetch_add_explicit(&l.bar, 1, memory_order_acq_rel);
        litmus_wait(&l.bar, 2 * r);
        if (last)
            break;
        litmus_delay(&seed);
        rearm(&l.pending);
        bool seen = kc_rt_cring_pop(&l.ring, &c);
        atomic_fetch_add_explicit(&l.done, 1, memory_order_acq_rel);
        litmus_wait(&l.done, 2 * r);
        strands += !l.claimed && !seen;
        /* The next round starts from pending == 1 and an empty ring again (the worker's push is
         * visible now: its `done` arrival came after it). */
        if (!seen && !kc_rt_cring_pop(&l.ring, &c))
            fail_msg("round %u: the worker's push is not in the ring", r);
        atomic_store_explicit(&l.pending, 1, memory_order_relaxed);
    }
    assert_int_equal(pthread_join(t, NULL), 0);
    kc_rt_cring_fini(&l.ring);
    *ran = (long)r - 1;
    return strands;
}

static void store_buffer_litmus(void **state)
{
    (void)state;
    long ran_fenced, ran_plain;
    long plain = litmus_run(rearm_release_only, LITMUS_ROUNDS, 3000000000LL, &ran_plain);
    long fenced = litmus_run(kc_rt_wake_rearm, LITMUS_ROUNDS, 3000000000LL, &ran_fenced);
    print_message("    store-buffer litmus: kc_rt_wake_rearm %ld stranded in %ld rounds; a "
                  "release-only re-arm %ld stranded in %ld rounds\n",
                  fenced, ran_fenced, plain, ran_plain);
    assert_int_equal(fenced, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(completions_never_stranded),
        cmocka_unit_test(revoke_done_never_stranded),
        cmocka_unit_test(store_buffer_litmus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
