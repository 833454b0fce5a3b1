/*
 * How often the engine drives (a pass over every partition), against the memory broker.
 *
 * backoff_does_not_spin_the_drive: one partition backs off while its broker holds a long-poll
 * Fetch (the fault proxy answers every Fetch with an error for partition 1, so partition 1 is
 * always in BACKOFF, its backoff ending long before the broker's next answer, fetch.max.wait.ms =
 * 3000 on an idle topic). The partition cannot be fetched before that answer, so its backoff's end
 * must not wake the drive: a drive is due per answer (and per timer tick), not per millisecond
 * until the answer.
 *
 * Runtime wakes (kc_engine_wake, the workers' "drained" completions, thousands a second while a
 * big assignment is delivered): wakes_while_every_broker_fetches_do_not_drive, where every
 * broker holds a long poll and nothing is held back, so a wake can change nothing and must not
 * cost a pass; wakes_after_a_refusal_drive_at_once, where the runtime refused the partitions on
 * an idle broker, so each wake must bring a pass on the loop's next turn, not the timer's tick
 * up to a second later.
 *
 * quiet_answers_cost_no_pass: an idle consumer's broker answers every long poll (20 ms here) with
 * an incremental answer that names no partition; nothing changed, so the same request goes again
 * without a pass over the partitions (kc_eng_drive_quiet), and with a pass only when the timer
 * says something may have come due (at most once a second).
 * backoff_is_not_stranded_by_quiet_answers: a partition left out of its broker's set while it backs
 * off must be back in it once the backoff ends, though every answer of that broker is quiet (a
 * repeat of a set built without it would leave it out for as long as the quiet answers go on).
 *
 * Engine-level: drives are counted by kc_engine_stats on the network thread.
 */
#include "fault_proxy_client.h"
#include "kc_test.h"

#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "netthread.h"

#define NPARTS 2
#define WAKES  200
#define ROUNDS 10

static kc_netthread_t *nt;
static kc_engine_t *eng;
static char bootstrap[256];
static int users[NPARTS];
static int64_t delivered[NPARTS]; /* records handed to the sink, by partition (network thread) */

static kc_err_t sink_records(void *opaque, void *user, const char *topic, int32_t partition,
                             int32_t broker, kc_slice_t *s, int64_t first, int64_t next)
{
    (void)opaque, (void)user, (void)topic, (void)broker;
    if (partition >= 0 && partition < NPARTS)
        delivered[partition] += next - first;
    kc_slice_release(s); /* the sink owns the reference */
    return KC_OK;
}

static void sink_error(void *opaque, void *user, const char *topic, int32_t partition,
                       const kc_error_t *e)
{
    (void)opaque, (void)user, (void)topic, (void)partition, (void)e;
}

/* The runtime's side (network thread only): refuse says no to every partition; gen is what
 * sink.fetch_gen returns. */
static int refuse, refuse_part = -1; /* every partition; that one */
static uint64_t gen = 1;

static int sink_may_fetch(void *opaque, void *user)
{
    (void)opaque;
    return !refuse && (int *)user - users != refuse_part;
}

static uint64_t sink_fetch_gen(void *opaque)
{
    (void)opaque;
    return gen;
}

typedef enum { OP_NEW, OP_DRIVES, OP_WAKE, OP_ALLOW, OP_CLOSE } op_t;

typedef struct call {
    op_t op;
    kc_err_t rc;
    uint64_t drives, resends;
    int64_t delivered[NPARTS];
} call_t;

static int wait_ms = 3000; /* fetch.max.wait.ms of the next OP_NEW */

static void on_net(kc_loop_t *loop, void *arg)
{
    call_t *c = arg;
    kc_error_t err;
    c->rc = KC_OK;
    switch (c->op) {
    case OP_NEW: {
        kc_engine_conf_t conf;
        kc_engine_conf_defaults(&conf);
        conf.bootstrap_servers = bootstrap;
        conf.client_id = "kc-engine-passes-test";
        conf.fetch_max_wait_ms = wait_ms;
        kc_engine_sink_t sink = {sink_records, sink_error, NULL, NULL};
        sink.may_fetch = sink_may_fetch;
        sink.fetch_gen = sink_fetch_gen;
        c->rc = kc_engine_new(&eng, loop, &conf, &sink, &err);
        for (int i = 0; i < NPARTS && c->rc == KC_OK; i++)
            c->rc = kc_engine_add(eng, "bench", i, 0, &users[i], &err);
        return;
    }
    case OP_DRIVES: {
        kc_engine_stats_t s;
        kc_engine_stats(eng, &s);
        c->drives = s.drives;
        c->resends = s.resends;
        memcpy(c->delivered, delivered, sizeof delivered);
        return;
    }
    case OP_WAKE: /* what a DRAINED completion does (runtime/consumer.c) */
        gen++;
        kc_engine_wake(eng);
        return;
    case OP_ALLOW: /* the refused partition drained */
        refuse_part = -1;
        gen++;
        kc_engine_wake(eng);
        return;
    case OP_CLOSE:
        kc_engine_close(eng, 1000);
        kc_engine_free(eng);
        eng = NULL;
        return;
    }
}

static call_t net(op_t op)
{
    call_t c = {.op = op};
    kc_netthread_call(nt, on_net, &c);
    return c;
}

/* The memory broker (2 partitions, 100 records each) behind the fault proxy, which answers
 * partition 1 with an error in the next `count` Fetch answers; `bootstrap` names the proxy. */
static kc_fp_t *proxied_broker_failing_partition_1(int count, pid_t *pid)
{
    const char *args[] = {"--partitions", "2", "--records", "100", NULL};
    kc_fp_t *fp;
    assert_int_equal(kc_test_proxied_broker(args, bootstrap, sizeof bootstrap, pid, &fp), 0);
    snprintf(bootstrap, sizeof bootstrap, "%s", kc_fp_bootstrap(fp));
    char reply[256];
    if (kc_fp_cmd(fp, reply, sizeof reply,
                  "inject api=Fetch error=UNKNOWN_SERVER_ERROR scope=partition partition=1 "
                  "count=%d",
                  count) != 0)
        fail_msg("proxy: %s", reply);
    return fp;
}

static void backoff_does_not_spin_the_drive(void **state)
{
    (void)state;
    pid_t pid;
    kc_fp_t *fp = proxied_broker_failing_partition_1(100000, &pid);
    kc_error_t err;
    assert_int_equal(kc_netthread_start(&nt, KC_LOOP_AUTO, NULL, &err), KC_OK);
    assert_int_equal(net(OP_NEW).rc, KC_OK);
    kc_test_sleep_ms(2000); /* partition 0 read to its end; partition 1 in its error loop */
    uint64_t d0 = net(OP_DRIVES).drives;
    kc_test_sleep_ms(3000);
    uint64_t d1 = net(OP_DRIVES).drives;
    long fired = kc_fp_stat(fp, "fired.inject");
    net(OP_CLOSE);
    kc_netthread_stop(nt);
    kc_test_proxied_broker_stop(pid, fp);
    printf("# drives in 3 s with partition 1 backing off: %llu (partition errors injected: %ld)\n",
           (unsigned long long)(d1 - d0), fired);
    assert_true(fired >= 1);
    /* About one per answer and per ≤ 1 s timer tick; a drive woken by the ended backoff until
     * the long poll returns makes thousands. */
    assert_true(d1 - d0 < 200);
}

static pid_t broker_up(void)
{
    const char *args[] = {"--partitions", "2", "--records", "100", NULL};
    pid_t pid = kc_testkit_spawn("kc-memory-broker", args, bootstrap, sizeof bootstrap);
    assert_true(pid > 0);
    kc_error_t err;
    assert_int_equal(kc_netthread_start(&nt, KC_LOOP_AUTO, NULL, &err), KC_OK);
    assert_int_equal(net(OP_NEW).rc, KC_OK);
    return pid;
}

static void broker_down(pid_t pid)
{
    net(OP_CLOSE);
    kc_netthread_stop(nt);
    assert_int_equal(kc_testkit_stop(pid), 0);
    refuse = 0;
    refuse_part = -1;
}

static void wakes_while_every_broker_fetches_do_not_drive(void **state)
{
    (void)state;
    pid_t pid = broker_up();
    kc_test_sleep_ms(2000); /* both partitions read to their end: a long poll in flight */
    uint64_t d0 = net(OP_DRIVES).drives;
    for (int i = 0; i < WAKES; i++) {
        net(OP_WAKE); /* one loop turn each, with time for a pass to run between them */
        kc_test_sleep_ms(1);
    }
    uint64_t d1 = net(OP_DRIVES).drives;
    broker_down(pid);
    printf("# drives during %d wakes with a long poll in flight: %llu\n", WAKES,
           (unsigned long long)(d1 - d0));
    /* The timer's ticks (at most one a second) and the broker's answers: a pass per wake
     * makes WAKES. */
    assert_true(d1 - d0 < WAKES / 4);
}

static void quiet_answers_cost_no_pass(void **state)
{
    (void)state;
    wait_ms = 20;
    pid_t pid = broker_up();
    kc_test_sleep_ms(2000); /* both partitions read to their end */
    call_t c0 = net(OP_DRIVES);
    kc_test_sleep_ms(3000);
    call_t c1 = net(OP_DRIVES);
    broker_down(pid);
    wait_ms = 3000;
    uint64_t passes = c1.drives - c0.drives, resends = c1.resends - c0.resends;
    printf("# 3 s of 20 ms long polls answered empty: %llu requests sent again, %llu passes\n",
           (unsigned long long)resends, (unsigned long long)passes);
    /* ~150 answers; the timer's ticks (about one a second) still pass. A pass per answer makes
     * as many passes as answers, and no request sent again. */
    assert_true(resends >= 30);
    assert_true(passes < resends / 4);
}

static void backoff_is_not_stranded_by_quiet_answers(void **state)
{
    (void)state;
    /* Partition 1's first answer is an error: it backs off (retry.backoff.ms) while partition 0
     * is read to its end and its broker answers every 20 ms, naming nothing. */
    pid_t pid;
    kc_fp_t *fp = proxied_broker_failing_partition_1(1, &pid);
    memset(delivered, 0, sizeof delivered);
    wait_ms = 20;
    kc_error_t err;
    assert_int_equal(kc_netthread_start(&nt, KC_LOOP_AUTO, NULL, &err), KC_OK);
    assert_int_equal(net(OP_NEW).rc, KC_OK);
    int64_t t0 = kc_test_now_ms(), took = -1;
    call_t c;
    while (kc_test_now_ms() - t0 < 10000) {
        c = net(OP_DRIVES);
        if (c.delivered[1] >= 100) {
            took = kc_test_now_ms() - t0;
            break;
        }
        kc_test_sleep_ms(10);
    }
    c = net(OP_DRIVES);
    long fired = kc_fp_stat(fp, "fired.inject");
    net(OP_CLOSE);
    kc_netthread_stop(nt);
    kc_test_proxied_broker_stop(pid, fp);
    wait_ms = 3000;
    printf("# partition 1 (one error, then a backoff) read after %lld ms; %llu requests sent "
           "again, %llu passes\n",
           (long long)took, (unsigned long long)c.resends, (unsigned long long)c.drives);
    assert_int_equal(fired, 1);
    assert_int_equal(c.delivered[0], 100);
    /* The backoff is 100 ms; left out of the repeated set, it waits for a pass that happens to
     * follow a quiet answer, seconds or never. */
    assert_true(took >= 0 && took < 3000);
}

/* Partition 1 is refused by the runtime while partition 0 is read to its end and its broker
 * answers every 20 ms, naming nothing; the passes in between (the timer's) pass partition 1 over
 * while the long poll is out. Then it drains: the wake must reach the broker's set, though the
 * last pass held nothing back on an idle broker and every answer is quiet. */
static void refused_partition_comes_back_after_quiet_answers(void **state)
{
    (void)state;
    memset(delivered, 0, sizeof delivered);
    refuse_part = 1;
    wait_ms = 20;
    pid_t pid = broker_up();
    kc_test_sleep_ms(2500); /* partition 0 read; two timer passes or more */
    call_t c = net(OP_DRIVES);
    assert_int_equal(c.delivered[0], 100);
    assert_int_equal(c.delivered[1], 0);
    net(OP_ALLOW);
    int64_t t0 = kc_test_now_ms(), took = -1;
    while (kc_test_now_ms() - t0 < 10000) {
        if (net(OP_DRIVES).delivered[1] >= 100) {
            took = kc_test_now_ms() - t0;
            break;
        }
        kc_test_sleep_ms(10);
    }
    broker_down(pid);
    wait_ms = 3000;
    printf("# partition 1 read %lld ms after the runtime let it go\n", (long long)took);
    /* The next answer's pass: tens of ms. A set repeated without it: not before a metadata
     * refresh (minutes). */
    assert_true(took >= 0 && took < 3000);
}

static void wakes_after_a_refusal_drive_at_once(void **state)
{
    (void)state;
    refuse = 1; /* nothing is ever fetched, so no Fetch is in flight */
    pid_t pid = broker_up();
    kc_test_sleep_ms(500);
    int64_t t0 = kc_test_now_ms();
    for (int i = 0; i < ROUNDS; i++) {
        uint64_t d0 = net(OP_DRIVES).drives;
        net(OP_WAKE);
        while (net(OP_DRIVES).drives == d0)
            kc_test_sleep_ms(1);
    }
    int64_t took = kc_test_now_ms() - t0;
    broker_down(pid);
    printf("# %d wakes after a refusal, each until its pass: %lld ms\n", ROUNDS, (long long)took);
    /* A pass on the next loop turn: milliseconds each. Left to the timer (up to 1 s after the
     * last pass), ROUNDS waits take seconds. */
    assert_true(took < ROUNDS * 250);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(backoff_does_not_spin_the_drive),
        cmocka_unit_test(wakes_while_every_broker_fetches_do_not_drive),
        cmocka_unit_test(wakes_after_a_refusal_drive_at_once),
        cmocka_unit_test(quiet_answers_cost_no_pass),
        cmocka_unit_test(backoff_is_not_stranded_by_quiet_answers),
        cmocka_unit_test(refused_partition_comes_back_after_quiet_answers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
