/* Share-group verdicts against a real share-enabled broker (tests/support/share_driver.c): one
 * member on a 1-partition topic of 100 records releases every record whose index ends in 0 and
 * rejects every one ending in 1, accepts the rest.
 * - RELEASE: each released record comes back, with delivery count 2, and is accepted then;
 * - REJECT: no rejected record ever comes back (the member keeps fetching for 4 s after the
 *   rest is done);
 * - nothing but the released records is delivered twice, and every acknowledgement is applied.
 * Needs KC_SHARE_BOOTSTRAP, KC_SHARE_CLUSTER_DIR and KC_TESTKIT (tests/run-suite sets them).
 * kc-test-label: share */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "share_driver.h"

#define RECORDS 100

typedef struct verdicts {
    int deliveries[RECORDS];
    int16_t last_count[RECORDS];
    int accepted, rejected, released, wrong_count;
} verdicts_t;

static kc_share_ack_type_t decide(void *ctx, kc_sd_member_t *m, int64_t index, int16_t count)
{
    (void)m;
    verdicts_t *v = ctx;
    if (index < 0 || index >= RECORDS)
        fail_msg("record index %lld out of range", (long long)index);
    v->deliveries[index]++;
    v->last_count[index] = count;
    if (count != v->deliveries[index])
        v->wrong_count++;
    if (index % 10 == 0 && count == 1) {
        v->released++;
        return KC_SHARE_ACK_RELEASE;
    }
    if (index % 10 == 1) {
        v->rejected++;
        return KC_SHARE_ACK_REJECT;
    }
    v->accepted++;
    return KC_SHARE_ACK_ACCEPT;
}

static void release_and_reject(void **state)
{
    (void)state;
    char group[64];
    snprintf(group, sizeof group, "kc-share-verdict-g-%d", (int)getpid());
    kc_sd_setup("kc-share-verdict", 1, group);
    pid_t producer = kc_sd_produce_start(RECORDS);
    while (!kc_sd_produce_done(producer))
        usleep(50 * 1000);
    verdicts_t *v = calloc(1, sizeof *v);
    assert_non_null(v);
    kc_sd_member_t m;
    kc_sd_start(&m, 0, group, decide, v);
    /* done: 80 accepted at once + 10 released and accepted on their second delivery */
    int64_t end = kc_sd_now_ms() + 60000;
    while (kc_sd_now_ms() < end && v->accepted < 90)
        kc_sd_step(&m);
    int64_t quiet = kc_sd_now_ms() + 4000;
    while (kc_sd_now_ms() < quiet)
        kc_sd_step(&m);
    kc_sd_close(&m);
    int released_back = 0, rejected_back = 0, others_twice = 0;
    for (int i = 0; i < RECORDS; i++) {
        if (i % 10 == 0)
            released_back += v->deliveries[i] == 2 && v->last_count[i] == 2;
        else if (i % 10 == 1)
            rejected_back += v->deliveries[i] > 1;
        else
            others_twice += v->deliveries[i] != 1;
    }
    print_message("accepted %d, released %d (back with delivery count 2: %d), rejected %d (back: "
                  "%d), others not delivered once: %d; acknowledged %llu, refused %llu\n",
                  v->accepted, v->released, released_back, v->rejected, rejected_back, others_twice,
                  (unsigned long long)m.acked_ok, (unsigned long long)m.ack_failed);
    assert_int_equal(v->released, 10);
    assert_int_equal(released_back, 10);
    assert_int_equal(v->rejected, 10);
    assert_int_equal(rejected_back, 0);
    assert_int_equal(others_twice, 0);
    assert_int_equal(v->accepted, 90);
    assert_int_equal(v->wrong_count, 0);
    assert_int_equal(m.ack_failed, 0);
    assert_int_equal(m.errors, 0);
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(release_and_reject),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
