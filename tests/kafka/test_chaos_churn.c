/* Chaos: group churn under load (tests/support/chaos.h states the checks). One KIP-848 member
 * stays for the whole run; up to four more join and leave (orderly kc_close: revoke, commit,
 * leave) every 3 s, chosen at random, while the producer writes 2000 records/s. Partitions move
 * on every change; each move may redeliver from the last commit (the window), nothing may be
 * lost, and no partition may wait longer than the session timeout.
 * Short (label kafka): 20 s. Long (label chaos): 120 s. Soak (label soak, make soak):
 * KC_SOAK_SECONDS (default 300). Prints a per-member table and the figures line.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "chaos.h"
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define SLOTS 5
#define RATE  2000

static void churn(void **state)
{
    (void)state;
    int secs = 20;
    if (kc_chaos_scale() == KC_CHAOS_LONG)
        secs = 120;
    if (kc_chaos_scale() == KC_CHAOS_SOAK)
        secs = getenv("KC_SOAK_SECONDS") ? atoi(getenv("KC_SOAK_SECONDS")) : 300;
    long n = (long)secs * RATE;
    kc_chaos_t *ch = kc_chaos_new("churn", 8, 3, n);
    char group[128];
    snprintf(group, sizeof group, "kc-chaos-churn-%d", (int)getpid());
    const char *conf = "group.protocol=consumer";
    const char *bs = kc_test_env("KC_BOOTSTRAP");
    kc_chaos_member_t *slot[SLOTS] = {kc_chaos_member_new(ch, bs, group, conf)};
    kc_chaos_member_t *all[64];
    int nall = 0, joins = 1, leaves = 0;
    all[nall++] = slot[0];
    unsigned seed = (unsigned)getpid();
    pid_t prod = kc_chaos_produce_bg(ch, n, RATE);
    int st = 0;
    int64_t start = kc_chaos_now_ms();
    while (waitpid(prod, &st, WNOHANG) == 0) {
        sleep(3);
        if (kc_chaos_now_ms() - start > (int64_t)secs * 1000 + 60000)
            fail_msg("the producer is far behind its schedule");
        int i = 1 + (int)(rand_r(&seed) % (SLOTS - 1));
        if (slot[i]) {
            kc_chaos_member_close(slot[i]);
            slot[i] = NULL;
            leaves++;
        } else if (nall < 64) {
            slot[i] = all[nall++] = kc_chaos_member_new(ch, bs, group, conf);
            joins++;
        }
    }
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    bool done = kc_chaos_wait_complete(ch, 120000);
    printf("# churn %d s: %d joins, %d orderly leaves, complete %d\n", secs, joins, leaves, done);
    printf("# member  records  rebalances  on_lost\n");
    for (int i = 0; i < nall; i++)
        printf("# %6d %8ld %11ld %8d\n", i, kc_chaos_member_records(all[i]),
               kc_chaos_member_rebalances(all[i]), kc_chaos_member_lost(all[i]));
    for (int i = 0; i < SLOTS; i++)
        if (slot[i])
            kc_chaos_member_close(slot[i]);
    kc_chaos_finish(ch, n, 6000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(churn)};
    kc_chaos_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
