/* Shared helpers for kconsume's C tests (unit and kafka). cmocka is the runner. */
#ifndef KC_TEST_H
#define KC_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "kconsume.h"

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

/* Runs the testkit's cluster script (KC_TESTKIT) with a printf-formatted subcommand against the
 * suite's cluster (--dir KC_CLUSTER_DIR), e.g. kc_test_cluster("topic create %s --partitions %d",
 * t, n). Its standard output is discarded, its standard error is not; a non-zero exit fails the
 * test naming the command. */
void kc_test_cluster(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same for a cluster a test runs itself in `dir`: returns the script's exit status (the
 * caller decides what a failure means: `up` on taken ports is tried again elsewhere); `up`'s
 * BOOTSTRAP= line goes to `bootstrap` when it is not NULL. */
int kc_test_cluster_in(const char *dir, char *bootstrap, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* kc_conf_set that fails the test on error, naming the key and the library's message but never
 * the value (it may be a password). */
void kc_test_conf_set(kc_conf_t *conf, const char *key, const char *value);
/* kc_test_conf_set for each pair of "key=value;key=value..." (a value holds no ';'). */
void kc_test_conf_set_all(kc_conf_t *conf, const char *pairs);

/* kc_consumer_new that fails the test with the library's message. */
kc_consumer_t *kc_test_consumer(kc_conf_t *conf, const kc_callbacks_t *cbs);
/* Assigns partitions 0..np-1 of `topic`, each from `offset` (KC_OFFSET_BEGINNING, ...). */
void kc_test_assign_all(kc_consumer_t *c, const char *topic, int np, int64_t offset);
/* Commits what was delivered (kc_commit with no list), reads it back with kc_committed and fails
 * the test unless the committed offsets of partitions 0..np-1 add up to `want`. */
void kc_test_commit_check(kc_consumer_t *c, const char *topic, int np, int64_t want);

/* A record's value read as a number: the testkit's keyed produce writes the record index,
 * zero-padded. -1 when the value is no such number. */
int64_t kc_test_record_index(const kc_record_t *r);
/* kc_close (up to 15 s) that fails the test with the library's message, then kc_destroy. */
void kc_test_close(kc_consumer_t *c);

/* The integer `key` of the stats JSON's "partitions" entry for (topic, partition), read with
 * jansson; -2 when the entry, the key or the JSON itself is missing (a value may be -1). */
long long kc_test_stats_part(const char *json, const char *topic, int partition, const char *key);

#endif
