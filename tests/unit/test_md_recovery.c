/* Where metadata is asked and when to rebootstrap (engine/md_recovery.c, KIP-899 / KIP-1102):
 * bootstrap.servers until an answer names brokers; then only the named brokers; rebootstrap
 * after trigger.ms with none reachable at every look (a READY broker in between restarts the
 * count), or at once on REBOOTSTRAP_REQUIRED; none never goes back and says so once per outage. */
#include "kc_test.h"

#include "md_recovery.h"

static void bootstrap_until_brokers_named(void **state)
{
    (void)state;
    kc_mdr_t r;
    kc_mdr_init(&r, KC_MDR_STRATEGY_REBOOTSTRAP, 1000);
    assert_int_equal(kc_mdr_choose(&r, 0, 0), KC_MDR_USE_BOOTSTRAP);
    assert_int_equal(kc_mdr_choose(&r, 0, 5000), KC_MDR_USE_BOOTSTRAP); /* no trigger before */
    kc_mdr_on_metadata(&r, 0); /* naming nobody leaves nobody to ask */
    assert_int_equal(kc_mdr_choose(&r, 0, 6000), KC_MDR_USE_BOOTSTRAP);
    kc_mdr_on_metadata(&r, 3);
    assert_int_equal(kc_mdr_choose(&r, 1, 6000), KC_MDR_USE_BROKERS);
    assert_int_equal(kc_mdr_choose(&r, 0, 6000), KC_MDR_USE_BROKERS);
}

static void rebootstrap_after_trigger(void **state)
{
    (void)state;
    kc_mdr_t r;
    kc_mdr_init(&r, KC_MDR_STRATEGY_REBOOTSTRAP, 1000);
    kc_mdr_on_metadata(&r, 1);
    assert_int_equal(kc_mdr_choose(&r, 0, 10000), KC_MDR_USE_BROKERS); /* the count starts */
    assert_int_equal(kc_mdr_choose(&r, 0, 10999), KC_MDR_USE_BROKERS);
    assert_int_equal(kc_mdr_choose(&r, 1, 11000), KC_MDR_USE_BROKERS); /* one came back */
    assert_int_equal(kc_mdr_choose(&r, 0, 11500), KC_MDR_USE_BROKERS); /* a new count */
    assert_int_equal(kc_mdr_choose(&r, 0, 12499), KC_MDR_USE_BROKERS);
    assert_int_equal(kc_mdr_choose(&r, 0, 12500), KC_MDR_REBOOTSTRAP);
    assert_int_equal(kc_mdr_choose(&r, 0, 12600), KC_MDR_REBOOTSTRAP); /* until done */
    kc_mdr_rebootstrapped(&r);
    assert_int_equal(r.rebootstraps, 1);
    assert_int_equal(kc_mdr_choose(&r, 0, 12600), KC_MDR_USE_BOOTSTRAP);
    assert_int_equal(kc_mdr_choose(&r, 0, 99999), KC_MDR_USE_BOOTSTRAP);
    kc_mdr_on_metadata(&r, 1);
    assert_int_equal(kc_mdr_choose(&r, 0, 100000), KC_MDR_USE_BROKERS);
    assert_int_equal(kc_mdr_choose(&r, 0, 101000), KC_MDR_REBOOTSTRAP);
    assert_int_equal(kc_mdr_stranded(&r, 200000), 0); /* rebootstrap does not report */
}

static void rebootstrap_required(void **state)
{
    (void)state;
    kc_mdr_t r;
    kc_mdr_init(&r, KC_MDR_STRATEGY_REBOOTSTRAP, 300000);
    assert_int_equal(kc_mdr_on_required(&r), 1); /* from bootstrap.servers: already there */
    kc_mdr_on_metadata(&r, 1);
    assert_int_equal(kc_mdr_choose(&r, 1, 0), KC_MDR_USE_BROKERS);
    assert_int_equal(kc_mdr_on_required(&r), 1);
    assert_int_equal(kc_mdr_choose(&r, 1, 0), KC_MDR_REBOOTSTRAP); /* even with one READY */
    kc_mdr_rebootstrapped(&r);
    assert_int_equal(kc_mdr_choose(&r, 1, 0), KC_MDR_USE_BOOTSTRAP);
    kc_mdr_on_metadata(&r, 1);
    assert_int_equal(kc_mdr_choose(&r, 1, 0), KC_MDR_USE_BROKERS); /* the request is spent */
}

static void none_never_goes_back(void **state)
{
    (void)state;
    kc_mdr_t r;
    kc_mdr_init(&r, KC_MDR_STRATEGY_NONE, 1000);
    assert_int_equal(kc_mdr_choose(&r, 0, 0), KC_MDR_USE_BOOTSTRAP);
    kc_mdr_on_metadata(&r, 1);
    assert_int_equal(kc_mdr_on_required(&r), 0);
    assert_int_equal(kc_mdr_choose(&r, 0, 1000), KC_MDR_USE_BROKERS);
    assert_int_equal(kc_mdr_stranded(&r, 1999), 0);
    for (int64_t t = 1000; t < 1000000; t += 777)
        assert_int_equal(kc_mdr_choose(&r, 0, t), KC_MDR_USE_BROKERS);
    assert_int_equal(kc_mdr_stranded(&r, 1000000), 1);
    assert_int_equal(kc_mdr_stranded(&r, 2000000), 0); /* once per outage */
    assert_int_equal(kc_mdr_choose(&r, 1, 2000000), KC_MDR_USE_BROKERS);
    assert_int_equal(kc_mdr_choose(&r, 0, 2000001), KC_MDR_USE_BROKERS);
    assert_int_equal(kc_mdr_stranded(&r, 2001001), 1); /* a new outage says it again */
    assert_int_equal(r.rebootstraps, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bootstrap_until_brokers_named),
        cmocka_unit_test(rebootstrap_after_trigger),
        cmocka_unit_test(rebootstrap_required),
        cmocka_unit_test(none_never_goes_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
