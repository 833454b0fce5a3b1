/* kconsume's share members beside Java's (real share-enabled broker): two members of
 * tests/support/share_driver.c and Java's ConsoleShareConsumer (KafkaShareConsumer, implicit
 * acknowledgement) in one share group on a 3-partition topic.
 * - Java's ShareGroupCommand --describe --members lists both kconsume members;
 * - once all three are members (ShareGroupDescribe), 3000 records are written: every record is
 *   accepted exactly once across kconsume and Java (nothing lost, nothing twice).
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
    int seen[RECORDS];
    int ours;
} tally_t;

static kc_share_ack_type_t accept_rec(void *ctx, kc_sd_member_t *m, int64_t index, int16_t count)
{
    (void)m;
    (void)count;
    tally_t *t = ctx;
    if (index >= 0 && index < RECORDS) {
        t->seen[index]++;
        t->ours++;
    }
    return KC_SHARE_ACK_ACCEPT;
}

static void step_all(kc_sd_member_t *m, int n)
{
    for (int i = 0; i < n; i++)
        kc_sd_step(&m[i]);
}

static void java_and_kconsume_in_one_group(void **state)
{
    (void)state;
    char group[64], cmd[1024], out[512], desc[512];
    snprintf(group, sizeof group, "kc-share-java-g-%d", (int)getpid());
    kc_sd_setup("kc-share-java", 3, group);
    snprintf(out, sizeof out, "%s/java.out", kc_test_tmpdir("share-java"));
    snprintf(desc, sizeof desc, "%s/describe.out", kc_test_tmpdir("share-java"));
    /* Java's consumer exits once it has seen nothing for 15 s */
    snprintf(cmd, sizeof cmd,
             "tool org.apache.kafka.tools.consumer.ConsoleShareConsumer --bootstrap-server %s "
             "--topic %s --group %s --timeout-ms 15000",
             kc_test_env("KC_SHARE_BOOTSTRAP"), kc_sd_topic, group);
    pid_t java = kc_sd_testkit_start(cmd, out);
    tally_t *t = calloc(1, sizeof *t);
    assert_non_null(t);
    kc_sd_member_t m[2];
    for (int i = 0; i < 2; i++)
        kc_sd_start(&m[i], i, group, accept_rec, t);
    int64_t end = kc_sd_now_ms() + 60000;
    int members = 0;
    while (kc_sd_now_ms() < end && (members < 3 || !m[0].ever_assigned || !m[1].ever_assigned)) {
        step_all(m, 2);
        members = kc_sd_describe_members(&m[0], group);
    }
    print_message("share group %s: %d member(s)\n", group, members);
    assert_int_equal(members, 3);

    /* Java's view of the group names our members */
    snprintf(cmd, sizeof cmd,
             "tool org.apache.kafka.tools.consumer.group.ShareGroupCommand --bootstrap-server %s "
             "--describe --members --group %s",
             kc_test_env("KC_SHARE_BOOTSTRAP"), group);
    pid_t d = kc_sd_testkit_start(cmd, desc);
    int st;
    while (!kc_sd_child_done(d, &st))
        step_all(m, 2);
    assert_int_equal(st, 0);
    FILE *f = fopen(desc, "r");
    assert_non_null(f);
    char line[1024];
    int named = 0;
    while (fgets(line, sizeof line, f))
        for (int i = 0; i < 2; i++)
            named += strstr(line, m[i].gc.member_id) != NULL;
    fclose(f);
    print_message("ShareGroupCommand --describe --members names %d of our 2 members\n", named);
    assert_int_equal(named, 2);

    pid_t producer = kc_sd_produce_start(RECORDS);
    bool produced = false, java_done = false;
    end = kc_sd_now_ms() + 120000;
    while (kc_sd_now_ms() < end && !(produced && java_done)) {
        produced = produced || kc_sd_produce_done(producer);
        java_done = java_done || kc_sd_child_done(java, &st);
        step_all(m, 2);
    }
    assert_true(produced);
    assert_true(java_done);
    for (int i = 0; i < 2; i++)
        kc_sd_close(&m[i]);
    f = fopen(out, "r");
    assert_non_null(f);
    int java_n = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        char *e;
        long v = strtol(line, &e, 10);
        if (e == line || v < 0 || v >= RECORDS) {
            bad++;
            continue;
        }
        t->seen[v]++;
        java_n++;
    }
    fclose(f);
    int missing = 0, twice = 0;
    for (int i = 0; i < RECORDS; i++) {
        missing += t->seen[i] == 0;
        twice += t->seen[i] > 1;
    }
    print_message("kconsume accepted %d, Java %d (%d other line(s)); %d missing, %d twice\n",
                  t->ours, java_n, bad, missing, twice);
    assert_int_equal(missing, 0);
    assert_int_equal(twice, 0);
    assert_true(t->ours > 0);
    assert_true(java_n > 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(m[i].ack_failed, 0);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(java_and_kconsume_in_one_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
