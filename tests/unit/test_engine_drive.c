/* How often the engine passes over every partition: calls that come in batches cost one pass.
 * An assignment of N partitions is N kc_engine_add (and a pause of all of them N
 * kc_engine_pause) on the network thread; each used to drive the engine at once, a pass over
 * every partition assigned so far, so 10,000 partitions took 50 million partition visits before
 * the first Fetch. And within a pass, the sink's backpressure answer is asked again only where
 * it may have changed (sink.fetch_gen): an idle consumer asked every partition after every Fetch
 * answer. No broker is needed: the bootstrap address refuses connections, so no partition has a
 * broker with a Fetch in flight and every one is a candidate on every pass. */
#include "kc_test.h"

#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "engine_int.h" /* kc_eng_drive: a pass on demand */
#include "netthread.h"

#define NPARTS 2000

static kc_netthread_t *nt;
static kc_engine_t *eng;
static int users[NPARTS];

static kc_err_t sink_records(void *opaque, void *user, const char *topic, int32_t partition,
                             int32_t broker, kc_slice_t *s, int64_t first, int64_t next)
{
    (void)opaque, (void)user, (void)topic, (void)partition, (void)broker, (void)s, (void)first,
        (void)next;
    return KC_OK;
}

static void sink_error(void *opaque, void *user, const char *topic, int32_t partition,
                       const kc_error_t *e)
{
    (void)opaque, (void)user, (void)topic, (void)partition, (void)e;
}

/* The counting sink (network thread only). */
static uint64_t gen = 1;
static long asks;
static int refuse_below; /* partitions [0, refuse_below) answer no */

static int sink_may_fetch(void *opaque, void *user)
{
    (void)opaque;
    asks++;
    return (int *)user - users >= refuse_below;
}

static uint64_t sink_fetch_gen(void *opaque)
{
    (void)opaque;
    return gen;
}

typedef enum {
    OP_NEW,
    OP_NEW_COUNTING,
    OP_ADD_ALL,
    OP_PAUSE_ALL,
    OP_DRIVES,
    OP_PASS,
    OP_BUMP,
    OP_REFUSE_10,
    OP_CLOSE
} op_t;

typedef struct call {
    op_t op;
    kc_err_t rc;
    uint64_t before, after; /* drives around the call */
    long asks;              /* sink_may_fetch calls so far */
} call_t;

static uint64_t drives(void)
{
    kc_engine_stats_t s;
    kc_engine_stats(eng, &s);
    return s.drives;
}

static void on_net(kc_loop_t *loop, void *arg)
{
    call_t *c = arg;
    kc_error_t err;
    c->rc = KC_OK;
    switch (c->op) {
    case OP_NEW_COUNTING:
    case OP_NEW: {
        kc_engine_conf_t conf;
        kc_engine_conf_defaults(&conf);
        conf.bootstrap_servers = "127.0.0.1:1";
        conf.client_id = "kc-engine-drive-test";
        kc_engine_sink_t sink = {sink_records, sink_error, NULL, NULL};
        if (c->op == OP_NEW_COUNTING)
            sink.may_fetch = sink_may_fetch, sink.fetch_gen = sink_fetch_gen;
        c->rc = kc_engine_new(&eng, loop, &conf, &sink, &err);
        return;
    }
    case OP_PASS:
        kc_eng_drive(eng);
        break;
    case OP_BUMP:
        gen++;
        break;
    case OP_REFUSE_10:
        refuse_below = 10;
        break;
    case OP_ADD_ALL:
        c->before = drives();
        for (int i = 0; i < NPARTS && c->rc == KC_OK; i++)
            c->rc = kc_engine_add(eng, "t", i, 0, &users[i], &err);
        c->after = drives();
        return;
    case OP_PAUSE_ALL:
        c->before = drives();
        for (int i = 0; i < NPARTS && c->rc == KC_OK; i++)
            c->rc = kc_engine_pause(eng, "t", i, 1, &err);
        c->after = drives();
        return;
    case OP_DRIVES:
        break;
    case OP_CLOSE:
        kc_engine_close(eng, 1000);
        kc_engine_free(eng);
        eng = NULL;
        return;
    }
    c->after = drives();
    c->asks = asks;
}

static call_t net(op_t op)
{
    call_t c = {.op = op};
    kc_netthread_call(nt, on_net, &c);
    return c;
}

/* Waits for the pass the batch asked for; returns the drives counted by then. */
static uint64_t after_pass(uint64_t before)
{
    uint64_t d = before;
    for (int i = 0; i < 200 && d == before; i++) {
        kc_test_sleep_ms(10);
        d = net(OP_DRIVES).after;
    }
    return d;
}

static void batch_costs_one_pass(op_t op, const char *what)
{
    call_t c = net(op);
    assert_int_equal(c.rc, KC_OK);
    uint64_t later = after_pass(c.after);
    printf("# %s of %d partitions: %llu pass(es) during the calls, %llu right after\n", what,
           NPARTS, (unsigned long long)(c.after - c.before), (unsigned long long)(later - c.after));
    assert_int_equal(c.after - c.before, 0);
    assert_true(later - c.after >= 1); /* the pass still comes, on the loop's next turn */
}

static void batches_cost_one_pass(void **state)
{
    (void)state;
    kc_error_t err;
    assert_int_equal(kc_netthread_start(&nt, KC_LOOP_AUTO, NULL, &err), KC_OK);
    assert_int_equal(net(OP_NEW).rc, KC_OK);
    batch_costs_one_pass(OP_ADD_ALL, "kc_engine_add");
    batch_costs_one_pass(OP_PAUSE_ALL, "kc_engine_pause");
    net(OP_CLOSE);
    kc_netthread_stop(nt);
}

/* Drives `n` passes after `first` (each kc_eng_drive is one; the engine's own timer may add
 * some): the drives and asks counted right after `first`'s call, on the network thread, and
 * after the passes. */
static void passes(op_t first, int n, call_t *before, call_t *after)
{
    *before = net(first);
    for (int i = 0; i < n; i++)
        net(OP_PASS);
    *after = net(OP_DRIVES);
}

static void idle_partitions_are_not_asked_again(void **state)
{
    (void)state;
    kc_error_t err;
    assert_int_equal(kc_netthread_start(&nt, KC_LOOP_AUTO, NULL, &err), KC_OK);
    assert_int_equal(net(OP_NEW_COUNTING).rc, KC_OK);
    call_t c = net(OP_ADD_ALL);
    after_pass(c.after);
    /* The first pass asked every partition once. */
    call_t a = net(OP_DRIVES), b;
    assert_int_equal(a.asks, NPARTS);
    /* Nothing changed: no partition is asked again, however many passes. */
    passes(OP_DRIVES, 20, &a, &b);
    printf("# unchanged: %llu passes, %ld asks\n", (unsigned long long)(b.after - a.after),
           b.asks - a.asks);
    assert_true(b.after - a.after >= 20);
    assert_int_equal(b.asks - a.asks, 0);
    /* The sink's number changed: each partition is asked once more; the ten that answer no
     * are then asked on every pass (a worker draining them is not counted). */
    net(OP_REFUSE_10);
    passes(OP_BUMP, 20, &a, &b); /* counted in the same call as the change */
    long passes_run = (long)(b.after - a.after);
    printf("# changed once, ten refused: %ld passes, %ld asks\n", passes_run, b.asks - a.asks);
    assert_true(passes_run >= 20);
    assert_int_equal(b.asks - a.asks, NPARTS + 10 * (passes_run - 1));
    net(OP_CLOSE);
    kc_netthread_stop(nt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(batches_cost_one_pass),
                                       cmocka_unit_test(idle_partitions_are_not_asked_again)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
