/* Record view accessors, including lazy header decoding from the wire bytes (no allocation). */
#include <string.h>

#include "kc_test.h"
#include "record.h"

static void accessors_and_headers(void **state)
{
    (void)state;
    /* two headers: "a" -> "xy", "bb" -> null ; zig-zag varints: 1 -> 0x02, 2 -> 0x04, -1 -> 0x01 */
    static const uint8_t hdr[] = {0x02, 'a', 0x04, 'x', 'y', 0x04, 'b', 'b', 0x01};
    kc_record_t r = {.offset = 42,
                     .timestamp = 1700,
                     .key = NULL,
                     .key_len = -1,
                     .value = (const uint8_t *)"",
                     .value_len = 0,
                     .headers = hdr,
                     .headers_len = sizeof hdr,
                     .header_count = 2};
    size_t len = 99;
    assert_int_equal(kc_record_offset(&r), 42);
    assert_int_equal(kc_record_timestamp(&r), 1700);
    assert_null(kc_record_key(&r, &len));
    assert_int_equal(len, 0);
    assert_non_null(kc_record_value(&r, &len)); /* empty, not null */
    assert_int_equal(len, 0);
    assert_int_equal(kc_record_header_count(&r), 2);
    const char *name;
    const void *val;
    size_t nl, vl;
    assert_int_equal(kc_record_header(&r, 1, &name, &nl, &val, &vl), KC_OK);
    assert_int_equal(nl, 2);
    assert_memory_equal(name, "bb", 2);
    assert_null(val);
    size_t cur = 0;
    assert_int_equal(kc_record_header_next(&r, &cur, &name, &nl, &val, &vl), KC_OK);
    assert_memory_equal(name, "a", 1);
    assert_int_equal(vl, 2);
    assert_memory_equal(val, "xy", 2);
    assert_int_equal(kc_record_header_next(&r, &cur, &name, &nl, &val, &vl), KC_OK);
    assert_int_equal(kc_record_header_next(&r, &cur, &name, &nl, &val, &vl), KC_ERR_NOT_FOUND);
    assert_int_equal(kc_record_header(&r, 2, &name, &nl, &val, &vl), KC_ERR_NOT_FOUND);

    static const uint8_t bad[] = {0x10, 'a'}; /* name length 8 runs past the end */
    r.headers = bad;
    r.headers_len = sizeof bad;
    assert_int_equal(kc_record_header(&r, 0, &name, &nl, &val, &vl), KC_ERR_MALFORMED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accessors_and_headers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
