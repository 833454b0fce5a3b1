/*
 * The io_uring ring setups io/loop_uring.c falls back to on older kernels, by their
 * KC_URING_SETUP names, for the tests that run the loop and the connections on each of them on
 * this kernel. Owner: the test's thread (it sets the environment variable).
 */
#ifndef KC_TEST_URING_SETUPS_H
#define KC_TEST_URING_SETUPS_H

#include <liburing.h>
#include <stdbool.h>
#include <stdlib.h>

#include "kc_test.h"
#include "loop.h"

typedef struct kc_test_uring_setup {
    const char *name;
    unsigned flags;
} kc_test_uring_setup_t;

static const kc_test_uring_setup_t kc_test_uring_setups[] = {
    {"single-coop", IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN},
    {"coop", IORING_SETUP_COOP_TASKRUN},
    {"plain", 0},
};
#define KC_TEST_URING_SETUPS (sizeof kc_test_uring_setups / sizeof kc_test_uring_setups[0])

/* Whether this kernel takes the default (newest) setup, so every older one too; skips the test
 * where io_uring is refused. */
static inline bool kc_test_uring_newest(void)
{
    unsetenv("KC_URING_SETUP"); /* the default, whatever the test's environment says */
    kc_loop_t *l = NULL;
    if (kc_loop_new(&l, KC_LOOP_URING, NULL) != KC_OK)
        skip();
    bool newest =
        kc_loop_uring_flags(l) == (IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
    kc_loop_free(l);
    return newest;
}

/* Sets KC_URING_SETUP to setup i for the loops the test makes next, and checks that a loop gets
 * those flags (where the kernel has them all; an older kernel falls back further). */
static inline void kc_test_uring_setup_use(size_t i, bool newest)
{
    setenv("KC_URING_SETUP", kc_test_uring_setups[i].name, 1);
    kc_loop_t *l = NULL;
    kc_error_t e = {0};
    if (kc_loop_new(&l, KC_LOOP_URING, &e) != KC_OK)
        fail_msg("KC_URING_SETUP=%s: %s", kc_test_uring_setups[i].name, e.msg);
    if (newest)
        assert_int_equal(kc_loop_uring_flags(l), kc_test_uring_setups[i].flags);
    kc_loop_free(l);
}

/* A teardown: the setup name must not outlive its test, failed or not (later io_uring tests
 * would run on the older setup, or skip on a bad name). */
static inline int kc_test_uring_setup_unset(void **state)
{
    (void)state;
    unsetenv("KC_URING_SETUP");
    return 0;
}

#endif
