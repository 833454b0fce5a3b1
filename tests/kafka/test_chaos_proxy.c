/* Chaos through kc-fault-proxy, manual assignment, records produced while the faults fire
 * (tests/support/chaos.h states the four checks):
 *  - fetch_session: FETCH_SESSION_ID_NOT_FOUND / INVALID_FETCH_SESSION_EPOCH injected into Fetch
 *    responses (what a broker answers when it dropped the session): the fetcher opens a new
 *    session and goes on from its position — no loss, no redelivery, no error event;
 *  - corrupt: a byte of a fetched batch flipped in transit (CRC32C mismatch): reported (KC_ERR_CRC
 *    naming the partition and offsets), skipped, later records delivered;
 *  - truncate_garbage: response frames cut short (connection closed) or filled with random bytes
 *    (correlation id included): the connection resets and the request is retried — no crash, no
 *    loss, no redelivery; the only error events allowed are KC_ERR_MALFORMED reports of an
 *    answer that did not decode; ASan's leak check runs at exit.
 * Short (label kafka) and long (label chaos, KC_CHAOS_SCALE=long) differ in records and faults.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "chaos.h"
#include "fault_proxy_client.h"
#include "kc_test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static kc_fp_t *g_fp;

static int setup(void **state)
{
    (void)state;
    g_fp = kc_fp_start(kc_test_env("KC_BOOTSTRAP"));
    return g_fp ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return g_fp ? kc_fp_stop(g_fp) : 0;
}

static long records(void)
{
    return kc_chaos_scale() == KC_CHAOS_SHORT ? 20000 : 200000;
}

/* Produces `n` records at 4000/s in the background and arms `rules[i % nrules]` every
 * period_ms until the producer is done. Returns how many rules were armed. */
static int under_load(kc_chaos_t *ch, long n, const char *const *rules, int nrules, int period_ms)
{
    pid_t prod = kc_chaos_produce_bg(ch, n, 4000);
    int armed = 0, st = 0;
    char reply[256];
    while (waitpid(prod, &st, WNOHANG) == 0) {
        usleep((useconds_t)period_ms * 1000);
        if (kc_fp_cmd(g_fp, reply, sizeof reply, "%s", rules[armed % nrules]) != 0)
            fail_msg("proxy refused '%s': %s", rules[armed % nrules], reply);
        armed++;
    }
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return armed;
}

static void clear(void)
{
    char reply[256];
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "clear"), 0);
}

static void fetch_session(void **state)
{
    (void)state;
    long n = records();
    kc_chaos_t *ch = kc_chaos_new("fetch_session_inject", 4, 1, n);
    long fired0 = kc_fp_stat(g_fp, "fired.inject");
    kc_chaos_member_t *m = kc_chaos_member_new(ch, kc_fp_bootstrap(g_fp), NULL, NULL);
    const char *rules[] = {"inject api=Fetch error=FETCH_SESSION_ID_NOT_FOUND",
                           "inject api=Fetch error=INVALID_FETCH_SESSION_EPOCH"};
    int armed = under_load(ch, n, rules, 2, 300);
    bool done = kc_chaos_wait_complete(ch, 60000);
    long fired = kc_fp_stat(g_fp, "fired.inject") - fired0;
    clear();
    kc_chaos_member_close(m);
    printf("# armed %d, fired %ld, complete %d\n", armed, fired, done);
    assert_true(fired >= armed / 2); /* the faults did happen, many times */
    kc_chaos_finish(ch, n, 10000);
}

static void corrupt(void **state)
{
    (void)state;
    long n = records();
    kc_chaos_t *ch = kc_chaos_new("corrupt_crc_proxy", 4, 1, n);
    kc_chaos_allow_error(ch, KC_ERR_CRC); /* the contract: reported, skipped */
    long fired0 = kc_fp_stat(g_fp, "fired.corrupt");
    kc_chaos_member_t *m = kc_chaos_member_new(ch, kc_fp_bootstrap(g_fp), NULL, NULL);
    const char *rules[] = {"corrupt api=Fetch"};
    int armed = under_load(ch, n, rules, 1, 1000);
    bool done = kc_chaos_wait_complete(ch, 60000);
    long fired = kc_fp_stat(g_fp, "fired.corrupt") - fired0;
    clear();
    kc_chaos_member_close(m);
    printf("# armed %d, fired %ld, complete %d\n", armed, fired, done);
    assert_true(fired >= 1);
    kc_chaos_finish(ch, n, 10000);
}

static void truncate_garbage(void **state)
{
    (void)state;
    long n = records();
    kc_chaos_t *ch = kc_chaos_new("truncate_garbage", 4, 1, n);
    /* Random bytes in place of an answer are reported (engine/README.md, "A broker that lies":
     * once per API, the request retried at its backoff); nothing is lost or delivered twice. */
    kc_chaos_allow_error(ch, KC_ERR_MALFORMED);
    long t0 = kc_fp_stat(g_fp, "fired.truncate"), g0 = kc_fp_stat(g_fp, "fired.garbage");
    kc_chaos_member_t *m = kc_chaos_member_new(ch, kc_fp_bootstrap(g_fp), NULL, NULL);
    const char *rules[] = {"truncate api=Fetch", "garbage api=Fetch", "truncate api=any bytes=3",
                           "garbage api=any"};
    int armed = under_load(ch, n, rules, 4, 500);
    bool done = kc_chaos_wait_complete(ch, 60000);
    long fired = kc_fp_stat(g_fp, "fired.truncate") - t0 + kc_fp_stat(g_fp, "fired.garbage") - g0;
    clear();
    kc_chaos_member_close(m);
    printf("# armed %d, fired %ld, complete %d\n", armed, fired, done);
    assert_true(fired >= armed / 2);
    kc_chaos_finish(ch, n, 10000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fetch_session),
        cmocka_unit_test(corrupt),
        cmocka_unit_test(truncate_garbage),
    };
    kc_chaos_filter();
    return cmocka_run_group_tests(tests, setup, teardown);
}
