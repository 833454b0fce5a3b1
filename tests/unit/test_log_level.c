/* log.level reaches the process-wide logger when a consumer is created (it was accepted and
 * ignored): the default "info" and "debug" make it more verbose; a consumer asking for less
 * ("error") does not silence what another asked for. No broker: 127.0.0.1:1 is never reached
 * before the consumer is destroyed. */
#include "kc_test.h"

#include "base/log.h"
#include "kconsume.h"

static void consumer_with(const char *level)
{
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", &err), KC_OK);
    if (level)
        assert_int_equal(kc_conf_set(conf, "log.level", level, &err), KC_OK);
    kc_consumer_t *c;
    if (kc_consumer_new(conf, NULL, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    kc_destroy(c);
}

static void level_applied_and_never_lowered(void **state)
{
    (void)state;
    kc_log_configure(NULL, NULL, KC_LOG_WARN); /* the library's own default */
    assert_false(kc_log_enabled(KC_LOG_INFO));
    consumer_with(NULL); /* log.level's default: info */
    assert_true(kc_log_enabled(KC_LOG_INFO));
    assert_false(kc_log_enabled(KC_LOG_DEBUG));
    consumer_with("debug");
    assert_true(kc_log_enabled(KC_LOG_DEBUG));
    consumer_with("error"); /* another consumer's debug stays on */
    assert_true(kc_log_enabled(KC_LOG_DEBUG));
    kc_log_configure(NULL, NULL, KC_LOG_WARN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(level_applied_and_never_lowered)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
