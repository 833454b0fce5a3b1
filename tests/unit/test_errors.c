/* The error model: the kc_err_t table and the generated Kafka error table agree with Kafka. */
#include "kc_test.h"

#include <string.h>

#include "base/err.h"
#include "proto/kafka_errors.h"
#include "rt_internal.h"

static void kc_codes_have_names_and_texts(void **state)
{
    (void)state;
    assert_string_equal(kc_err_name(KC_OK), "KC_OK");
    assert_string_equal(kc_err_name(KC_ERR_TIMEOUT), "KC_ERR_TIMEOUT");
    assert_string_equal(kc_err_str(KC_ERR_CRC), "record batch CRC mismatch");
    assert_string_equal(kc_err_name((kc_err_t)-9999), "KC_ERR_UNKNOWN");
}

static void kc_fail_formats_and_returns_code(void **state)
{
    (void)state;
    kc_error_t e;
    assert_int_equal(kc_fail(&e, KC_ERR_MALFORMED, "Fetch v%d: field %s", 17, "records"),
                     KC_ERR_MALFORMED);
    assert_int_equal(e.code, KC_ERR_MALFORMED);
    assert_string_equal(e.msg, "Fetch v17: field records");
    assert_int_equal(kc_fail(NULL, KC_ERR_NOMEM, "x"), KC_ERR_NOMEM);
}

static void kafka_codes_come_from_kafkas_table(void **state)
{
    (void)state;
    /* Values from Kafka's protocol guide; the constants and the table are generated from the
     * Java enum, so a mismatch here means the generator, not this test, is wrong. The only place
     * a code is written as a number: everywhere else it is its constant. */
    assert_int_equal(KC_KAFKA_UNKNOWN_SERVER_ERROR, -1);
    assert_int_equal(KC_KAFKA_NONE, 0);
    assert_int_equal(KC_KAFKA_OFFSET_OUT_OF_RANGE, 1);
    assert_int_equal(KC_KAFKA_NOT_COORDINATOR, 16);
    assert_int_equal(KC_KAFKA_FETCH_SESSION_ID_NOT_FOUND, 70);
    assert_int_equal(KC_KAFKA_INVALID_FETCH_SESSION_EPOCH, 71);
    assert_int_equal(KC_KAFKA_FENCED_MEMBER_EPOCH, 110);
    assert_int_equal(KC_KAFKA_STALE_MEMBER_EPOCH, 113);
    assert_string_equal(kc_kafka_err_name(KC_KAFKA_UNKNOWN_SERVER_ERROR), "UNKNOWN_SERVER_ERROR");
    assert_string_equal(kc_kafka_err_name(KC_KAFKA_NOT_COORDINATOR), "NOT_COORDINATOR");
    assert_string_equal(kc_kafka_err_name(KC_KAFKA_FETCH_SESSION_ID_NOT_FOUND),
                        "FETCH_SESSION_ID_NOT_FOUND");
    assert_string_equal(kc_kafka_err_name(KC_KAFKA_INVALID_FETCH_SESSION_EPOCH),
                        "INVALID_FETCH_SESSION_EPOCH");
    assert_string_equal(kc_kafka_err_name(KC_KAFKA_FENCED_MEMBER_EPOCH), "FENCED_MEMBER_EPOCH");
    assert_true(kc_kafka_err_retriable(KC_KAFKA_NOT_COORDINATOR));
    assert_false(kc_kafka_err_retriable(KC_KAFKA_OFFSET_OUT_OF_RANGE));
    assert_string_equal(kc_kafka_err_name(32000), "UNKNOWN_KAFKA_ERROR");

    kc_error_t e;
    assert_int_equal(kc_fail_kafka(&e, KC_KAFKA_NOT_COORDINATOR, "OffsetCommit to broker %d", 2),
                     KC_ERR_BROKER);
    assert_int_equal(e.kafka_code, KC_KAFKA_NOT_COORDINATOR);
    assert_string_equal(e.msg, "NOT_COORDINATOR: OffsetCommit to broker 2");
}

/* KC_EVENT_ERROR's `retriable`: connection and time-outs are, refusals and misuse are not, and
 * a broker's code follows Kafka's RetriableException table. */
static void error_events_say_retriable(void **state)
{
    (void)state;
    static const struct {
        kc_err_t code;
        int16_t kafka;
        bool retriable;
    } cases[] = {
        {KC_ERR_TRANSPORT, 0, true},
        {KC_ERR_TIMEOUT, 0, true},
        {KC_ERR_AGAIN, 0, true},
        {KC_ERR_QUEUE_FULL, 0, true},
        {KC_ERR_BROKER, KC_KAFKA_NOT_LEADER_OR_FOLLOWER, true},
        {KC_ERR_BROKER, KC_KAFKA_UNKNOWN_TOPIC_OR_PARTITION, true},
        {KC_ERR_BROKER, KC_KAFKA_OFFSET_OUT_OF_RANGE, false},
        {KC_ERR_BROKER, KC_KAFKA_TOPIC_AUTHORIZATION_FAILED, false},
        {KC_ERR_FATAL, 0, false},
        {KC_ERR_AUTH, 0, false},
        {KC_ERR_TLS, 0, false},
        {KC_ERR_STATE, 0, false},
        {KC_ERR_CONFIG, 0, false},
        {KC_ERR_MALFORMED, 0, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        kc_error_t e = {.code = cases[i].code, .kafka_code = cases[i].kafka};
        if (kc_rt_error_retriable(&e) != cases[i].retriable)
            fail_msg("%s (kafka %d): retriable %d, want %d", kc_err_name(e.code), e.kafka_code,
                     !cases[i].retriable, cases[i].retriable);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kc_codes_have_names_and_texts),
        cmocka_unit_test(kc_fail_formats_and_returns_code),
        cmocka_unit_test(kafka_codes_come_from_kafkas_table),
        cmocka_unit_test(error_events_say_retriable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
