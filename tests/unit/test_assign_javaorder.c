/* The Java-compatibility helpers under the assignors: String.hashCode, String.compareTo
 * (UTF-16 order) and java.util.HashMap iteration order. Expected values were printed by Java 17
 * for the same keys (HashMap<String,..> filled in this order; 19 keys, so one resize to 32). */
#include "kc_test.h"

#include <string.h>

#include "group/classic/assign/assign_int.h"

static const char *const KEYS[] = {"BB",        "consumer-1", "Aa",   "mé",   "𝄞x", "C#", "Bb",
                                   "member-17", "AaAa",       "BBBB", "AaBB", "z",  "q0", "q1",
                                   "q2",        "q3",         "q4",   "q5",   "q6"};
#define NKEYS (sizeof KEYS / sizeof KEYS[0])

static void string_hash_matches_java(void **state)
{
    (void)state;
    static const int32_t want[NKEYS] = {
        2112,    -166239206, 2112, 3612, 54944334, 2112, 2144, 1342170681, 2031744, 2031744,
        2031744, 122,        3551, 3552, 3553,     3554, 3555, 3556,       3557};
    for (size_t i = 0; i < NKEYS; i++)
        assert_int_equal(kc_jstr_hash(KEYS[i]), want[i]);
    assert_int_equal(kc_jtp_hash("orders", 7), -1008769153);
}

static void hashmap_order_matches_java(void **state)
{
    (void)state;
    static const char *const want[NKEYS] = {
        "BB",        "Aa", "C#",         "Bb", "q1", "q2",   "q3",   "q4",   "q5", "q6",
        "member-17", "𝄞x", "consumer-1", "z",  "mé", "AaAa", "BBBB", "AaBB", "q0"};
    int32_t h[NKEYS];
    size_t order[NKEYS];
    for (size_t i = 0; i < NKEYS; i++)
        h[i] = kc_jstr_hash(KEYS[i]);
    assert_int_equal(kc_jmap_cap(NKEYS), 32);
    assert_int_equal(kc_jmap_cap(12), 16);
    assert_int_equal(kc_jmap_cap(13), 32);
    kc_jmap_order(h, NKEYS, kc_jmap_cap(NKEYS), order);
    for (size_t i = 0; i < NKEYS; i++)
        assert_string_equal(KEYS[order[i]], want[i]);
}

static void string_order_is_utf16(void **state)
{
    (void)state;
    assert_true(kc_jstr_cmp("a", "b") < 0);
    assert_true(kc_jstr_cmp("ab", "a") > 0);
    assert_int_equal(kc_jstr_cmp("mé", "mé"), 0);
    /* U+1D11E is a surrogate pair (0xD834..) in UTF-16 and sorts before U+FF21, unlike in
     * code point or UTF-8 byte order */
    assert_true(kc_jstr_cmp("𝄞", "Ａ") < 0);
    assert_true(strcmp("𝄞", "Ａ") > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(string_hash_matches_java),
        cmocka_unit_test(hashmap_order_matches_java),
        cmocka_unit_test(string_order_is_utf16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
