/* Share groups (KIP-932) against a real share-enabled broker (Kafka 4.2, tests/run-suite's share
 * cluster): members made of engine/group's member over ShareGroupHeartbeat and engine/share's
 * sessions (tests/support/share_driver.c), every record ACCEPTed.
 * - three members on a 3-partition topic: every record is accepted exactly once across them,
 *   and each member got records;
 * - five members on the same kind of topic (more members than partitions): every member is
 *   assigned partitions (the broker shares them), every record is still accepted exactly once,
 *   and more members than there are partitions got records.
 * The members join and get their assignments before the records are written (in a child
 * process while they heartbeat), so a late joiner does not find everything taken.
 * Needs KC_SHARE_BOOTSTRAP, KC_SHARE_CLUSTER_DIR and KC_TESTKIT (tests/run-suite sets them).
 * kc-test-label: share */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "share_driver.h"

#define RECORDS 3000

typedef struct tally {
    int accepted[RECORDS];
    int by_member[8];
    int total;
    int bad_index;
} tally_t;

static kc_share_ack_type_t accept_all(void *ctx, kc_sd_member_t *m, int64_t index, int16_t count)
{
    (void)count;
    tally_t *t = ctx;
    if (index < 0 || index >= RECORDS) {
        t->bad_index++;
        return KC_SHARE_ACK_ACCEPT;
    }
    t->accepted[index]++;
    t->by_member[m->id]++;
    t->total++;
    return KC_SHARE_ACK_ACCEPT;
}

static void run_members(int n, const char *prefix)
{
    char group[64];
    snprintf(group, sizeof group, "%s-g-%d", prefix, (int)getpid());
    kc_sd_setup(prefix, 3, group);
    tally_t *t = calloc(1, sizeof *t);
    kc_sd_member_t *m = calloc((size_t)n, sizeof *m);
    assert_non_null(t);
    assert_non_null(m);
    for (int i = 0; i < n; i++)
        kc_sd_start(&m[i], i, group, accept_all, t);
    /* Every member in the group with partitions before any record exists, so that the records
     * can go to all of them (one joining late would find them taken). */
    int64_t end = kc_sd_now_ms() + 30000;
    bool all_assigned = false;
    while (kc_sd_now_ms() < end && !all_assigned) {
        all_assigned = true;
        for (int i = 0; i < n; i++) {
            kc_sd_step(&m[i]);
            all_assigned = all_assigned && m[i].ever_assigned;
        }
    }
    assert_true(all_assigned);
    pid_t producer = kc_sd_produce_start(RECORDS);
    bool produced = false;
    end = kc_sd_now_ms() + 90000;
    while (kc_sd_now_ms() < end && (t->total < RECORDS || !produced)) {
        produced = produced || kc_sd_produce_done(producer);
        for (int i = 0; i < n; i++)
            kc_sd_step(&m[i]);
    }
    for (int i = 0; i < n; i++)
        kc_sd_close(&m[i]);
    int twice = 0, missing = 0, got = 0;
    uint64_t acked = 0, failed = 0;
    for (int i = 0; i < RECORDS; i++) {
        missing += t->accepted[i] == 0;
        twice += t->accepted[i] > 1;
    }
    for (int i = 0; i < n; i++) {
        print_message("member %d: assigned %s, %d record(s) accepted, %llu acknowledged, %llu "
                      "refused, %llu error(s)\n",
                      i, m[i].ever_assigned ? "yes" : "never", t->by_member[i],
                      (unsigned long long)m[i].acked_ok, (unsigned long long)m[i].ack_failed,
                      (unsigned long long)m[i].errors);
        got += t->by_member[i] > 0;
        acked += m[i].acked_ok;
        failed += m[i].ack_failed;
        assert_true(m[i].ever_assigned);
        assert_int_equal(m[i].errors, 0);
    }
    print_message("%d records: %d missing, %d accepted more than once, %d member(s) got records\n",
                  RECORDS, missing, twice, got);
    assert_int_equal(t->bad_index, 0);
    assert_int_equal(missing, 0);
    assert_int_equal(twice, 0);
    assert_int_equal(failed, 0);
    /* every delivered record acknowledged and applied (gaps too: acked >= records) */
    assert_true(acked >= RECORDS);
    /* three members: one partition each; five: more members got records than there are
     * partitions, which a consumer group cannot do */
    if (n == 3)
        assert_int_equal(got, 3);
    else
        assert_true(got > 3);
    free(m);
    free(t);
}

static void three_members_accept_once(void **state)
{
    (void)state;
    run_members(3, "kc-share3");
}

static void five_members_three_partitions(void **state)
{
    (void)state;
    run_members(5, "kc-share5");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(three_members_accept_once),
        cmocka_unit_test(five_members_three_partitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
