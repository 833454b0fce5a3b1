/* The JSON text writer (io/base/json.c): its number writers give printf's text for every
 * magnitude, literals and fields append as written, and strings are escaped. */
#include "kc_test.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"

static void integers_print_as_printf_does(void **state)
{
    (void)state;
    const int64_t s[] = {0,         1,         -1,        9,         10,
                         -10,       99,        100,       123456789, -987654321,
                         INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, INT64_MIN + 1};
    const uint64_t u[] = {0, 1, 9, 10, 1000000, UINT32_MAX, (uint64_t)INT64_MAX + 1, UINT64_MAX};
    char want[64];
    for (size_t i = 0; i < sizeof s / sizeof s[0] + sizeof u / sizeof u[0]; i++) {
        bool sig = i < sizeof s / sizeof s[0];
        size_t k = sig ? i : i - sizeof s / sizeof s[0];
        kc_json_t w;
        kc_json_init(&w, 0);
        if (sig) {
            kc_json_i64(&w, s[k]);
            snprintf(want, sizeof want, "%" PRId64, s[k]);
        } else {
            kc_json_u64(&w, u[k]);
            snprintf(want, sizeof want, "%" PRIu64, u[k]);
        }
        assert_string_equal(w.p, want);
        assert_int_equal(w.n, strlen(want));
        kc_json_free(&w);
    }
    /* a pseudo-random walk over every digit count, appended into one growing text */
    kc_json_t w;
    kc_json_init(&w, 8); /* small: the writes grow it many times */
    char *expect = calloc(1, 1 << 20);
    assert_non_null(expect);
    size_t n = 0;
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int64_t v = (int64_t)(x >> (x % 64));
        kc_json_field(&w, i ? "," : "[", v);
        n += (size_t)snprintf(expect + n, (1 << 20) - n, "%s%" PRId64, i ? "," : "[", v);
    }
    kc_json_lit(&w, "]");
    expect[n++] = ']';
    assert_int_equal(w.n, n);
    char *text = kc_json_take(&w);
    assert_string_equal(text, expect);
    free(text);
    free(expect);
}

static void literals_fields_and_strings(void **state)
{
    (void)state;
    kc_json_t w;
    kc_json_init(&w, 0);
    kc_json_lit(&w, "{\"topic\":");
    kc_json_str(&w, "a\"b\\c\n\x7f");
    kc_json_field(&w, ",\"lag\":", -1);
    kc_json_put(&w, ",\"x\":1garbage", 6);
    kc_json_lit(&w, "}");
    char *text = kc_json_take(&w);
    assert_string_equal(text, "{\"topic\":\"a\\\"b\\\\c\\u000a\\u007f\",\"lag\":-1,\"x\":1}");
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(integers_print_as_printf_does),
        cmocka_unit_test(literals_fields_and_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
