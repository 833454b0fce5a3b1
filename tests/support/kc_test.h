/* Shared helpers for kconsume's C tests (unit and kafka). cmocka is the runner. */
#ifndef KC_TEST_H
#define KC_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* The value of an environment variable that a kafka-labelled test needs; fails the test with a
 * message naming the variable (and how tests/run-suite sets it) when it is unset. */
const char *kc_test_env(const char *name);

/* Path of a file under the source tree (KC_SOURCE_DIR), in a static buffer. */
const char *kc_test_src_path(const char *rel);

/* Multiplier for wall-clock bounds in tests (KC_TEST_TIME_SCALE, default 1): tests/valgrind-unit
 * sets it, since code runs 20-50 times slower there. Only latency bounds scale by it, never a
 * count or an ordering. */
int64_t kc_test_time_scale(void);

#endif
