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

/* Runs only the cases of this program whose name matches the glob in KC_TEST_FILTER (cmocka's
 * filter), when it is set: the compatibility suite (tests/compat/run-compat) runs one feature's
 * cases per broker version. Call before cmocka_run_group_tests. */
void kc_test_filter(void);

/* Path of a file under the source tree (KC_SOURCE_DIR), in a static buffer. */
const char *kc_test_src_path(const char *rel);

/* Multiplier for wall-clock bounds in tests (KC_TEST_TIME_SCALE, default 1): tests/valgrind-unit
 * sets it, since code runs 20-50 times slower there. Only latency bounds scale by it, never a
 * count or an ordering. */
int64_t kc_test_time_scale(void);

/* A scratch directory for this test process, $TMPDIR (default /tmp)/kc-<tag>-XXXXXX, created
 * now and removed with everything in it when the process exits — after a failed assertion too
 * (cmocka returns from a failing test, the process still exits normally), so keys, certificates
 * and broker data never outlive the test. KC_TEST_KEEP_TMP=1 keeps them for a post-mortem. Fails
 * the test when it cannot be created. The path stays valid until exit. */
const char *kc_test_tmpdir(const char *tag);

/* "<dir>/<name>" in a caller's buffer of `cap` bytes; fails the test rather than truncate. */
const char *kc_test_path(char *buf, size_t cap, const char *dir, const char *name);

/* A self-signed certificate with `cn`: <dir>/<name>.pem and <dir>/<name>.key (openssl). `ca`
 * adds basicConstraints CA:TRUE; `key_password` encrypts the key (NULL: unencrypted). Fails the
 * test when openssl does. */
void kc_test_self_signed(const char *dir, const char *name, const char *cn, int ca,
                         const char *key_password);

/* CLOCK_MONOTONIC in milliseconds, and a sleep that resumes after signals. Any thread. */
int64_t kc_test_now_ms(void);
void kc_test_sleep_ms(int ms);

#endif
