/* engine/part_index: the engine's position index, against a plain array searched linearly (the
 * code it replaced), over random adds, swap-removes and renames, with the real hashes and with a
 * hash of 3 values (every probe chain collides, so backward-shift deletion is exercised). */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "part_index.h"

#define MAXN 600

typedef struct model {
    char topic[MAXN][16];
    int32_t part[MAXN];
    size_t n;
    int weak; /* hash = partition % 3 */
    kc_pidx_t x;
} model_t;

typedef struct key {
    const char *topic;
    int32_t part;
} key_t_;

static bool eq(const void *ctx, size_t pos, const void *key)
{
    const model_t *m = ctx;
    const key_t_ *k = key;
    return pos < m->n && m->part[pos] == k->part && strcmp(m->topic[pos], k->topic) == 0;
}

static uint64_t h(const model_t *m, const char *topic, int32_t part)
{
    return m->weak ? (uint64_t)(part % 3) : kc_pidx_hash_name(topic, part);
}

static ssize_t linear(const model_t *m, const char *topic, int32_t part)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->part[i] == part && strcmp(m->topic[i], topic) == 0)
            return (ssize_t)i;
    return -1;
}

static void check_all(model_t *m)
{
    for (size_t i = 0; i < m->n; i++) {
        key_t_ k = {m->topic[i], m->part[i]};
        assert_int_equal(kc_pidx_find(&m->x, h(m, k.topic, k.part), eq, m, &k), (ssize_t)i);
    }
    assert_int_equal(m->x.n, m->n);
}

static void run(int weak, unsigned seed)
{
    model_t *m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->weak = weak;
    srand(seed);
    kc_error_t err;
    for (int step = 0; step < 40000; step++) {
        int op = rand() % 10;
        char topic[16];
        snprintf(topic, sizeof topic, "t%d", rand() % 7);
        int32_t part = rand() % 120;
        key_t_ k = {topic, part};
        ssize_t want = linear(m, topic, part);
        assert_int_equal(kc_pidx_find(&m->x, h(m, topic, part), eq, m, &k), want);
        if (op < 6 && want < 0 && m->n < MAXN) { /* add at the end */
            assert_int_equal(kc_pidx_reserve(&m->x, m->n + 1, &err), KC_OK);
            snprintf(m->topic[m->n], sizeof m->topic[0], "%s", topic);
            m->part[m->n] = part;
            kc_pidx_insert(&m->x, h(m, topic, part), m->n);
            m->n++;
        } else if (op < 9 && want >= 0) { /* remove; the last element moves into its place */
            size_t i = (size_t)want, last = m->n - 1;
            kc_pidx_remove(&m->x, h(m, topic, part), i);
            if (i != last) {
                memcpy(m->topic[i], m->topic[last], sizeof m->topic[0]);
                m->part[i] = m->part[last];
                kc_pidx_move(&m->x, h(m, m->topic[i], m->part[i]), last, i);
            }
            m->n--;
        } else if (want >= 0) { /* a new key for the same element (the engine's topic id) */
            size_t i = (size_t)want;
            char nt[16];
            snprintf(nt, sizeof nt, "u%d", rand() % 7);
            if (linear(m, nt, part) < 0) {
                kc_pidx_remove(&m->x, h(m, topic, part), i);
                snprintf(m->topic[i], sizeof m->topic[0], "%s", nt);
                kc_pidx_insert(&m->x, h(m, nt, part), i);
            }
        }
        if (step % 997 == 0)
            check_all(m);
    }
    check_all(m);
    printf("# %s hash: %zu entries at the end, table of %zu\n", weak ? "3-valued" : "real", m->n,
           m->x.cap);
    kc_pidx_free(&m->x);
    free(m);
}

static void matches_linear_search(void **state)
{
    (void)state;
    run(0, 1);
    run(0, 7);
}

static void matches_linear_search_all_colliding(void **state)
{
    (void)state;
    run(1, 3);
}

static void empty_index_finds_nothing(void **state)
{
    (void)state;
    kc_pidx_t x = {0};
    model_t m = {0};
    key_t_ k = {"t", 0};
    assert_int_equal(kc_pidx_find(&x, 1, eq, &m, &k), -1);
    kc_pidx_remove(&x, 1, 0); /* nothing to remove: no effect */
    kc_pidx_free(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_linear_search),
        cmocka_unit_test(matches_linear_search_all_colliding),
        cmocka_unit_test(empty_index_finds_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
