/* engine/group/offset_pending: a group member's partitions whose committed offset could not be read
 * are kept and asked again (never started from auto.offset.reset); non-retriable refusals are
 * reported (again only for a new refusal or after KC_OPEND_REPORT_MS), not started, and asked
 * again too, so they start once readable; answers for partitions revoked or assigned afresh
 * meanwhile are ignored; 40,000 partitions kept, removed in part and answered keep the index and
 * the entries in step. */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "group/offset_pending.h"
#include "proto/kafka_errors.h"

/* What the hooks saw. */
static struct {
    char topic[8][16];
    int32_t part[8];
    int64_t start[8];
    int n_assign, n_error;
    int16_t error_code;
    char error_msg[512];
} seen;

static kc_err_t assign(void *o, const char *topic, int32_t partition, int64_t start,
                       kc_error_t *err)
{
    (void)o;
    (void)err;
    int i = seen.n_assign++;
    snprintf(seen.topic[i], sizeof seen.topic[i], "%s", topic);
    seen.part[i] = partition;
    seen.start[i] = start;
    return KC_OK;
}

static void error(void *o, const kc_error_t *e, bool fatal)
{
    (void)o;
    assert_false(fatal);
    seen.n_error++;
    seen.error_code = e->kafka_code;
    snprintf(seen.error_msg, sizeof seen.error_msg, "%s", e->msg);
}

static const kc_group_hooks_t HOOKS = {.assign = assign, .error = error};

static kc_engine_offset_t ent(int32_t p, int64_t off, int16_t code)
{
    return (kc_engine_offset_t){"t", p, off, -1, NULL, code};
}

static void first_fetch_sorts_partitions(void **state)
{
    (void)state;
    memset(&seen, 0, sizeof seen);
    kc_opend_t p;
    kc_opend_init(&p, 100, 1000);
    /* 0: committed 42; 1: no commit (reset); 2: pending transaction; 3: not authorized;
     * 4: not named by the answer. */
    kc_engine_offset_t r[5] = {
        ent(0, 42, 0), ent(1, -1, 0), ent(2, -1, KC_KAFKA_UNSTABLE_OFFSET_COMMIT),
        ent(3, -1, KC_KAFKA_GROUP_AUTHORIZATION_FAILED), ent(4, -1, KC_KAFKA_UNKNOWN_SERVER_ERROR)};
    kc_opend_apply(&p, false, KC_ERR_BROKER, r, 5, &HOOKS, "g", 1000);
    assert_int_equal(seen.n_assign, 2);
    assert_int_equal(seen.part[0], 0);
    assert_int_equal(seen.start[0], 42);
    assert_int_equal(seen.part[1], 1);
    assert_int_equal(seen.start[1], KC_ENGINE_START_RESET);
    assert_int_equal(seen.n_error, 1);
    assert_int_equal(seen.error_code, KC_KAFKA_GROUP_AUTHORIZATION_FAILED);
    assert_non_null(strstr(seen.error_msg, "t[3]"));
    assert_non_null(strstr(seen.error_msg, "NOT consumed"));
    assert_int_equal(p.n, 3); /* 2, 3 and 4 are asked again */

    /* Not before the backoff, then one retry at a time. */
    kc_engine_offset_t *offs;
    assert_int_equal(kc_opend_take_due(&p, 1050, &offs), 0);
    assert_int_equal(kc_opend_take_due(&p, 1100, &offs), 3);
    free(offs);
    assert_int_equal(kc_opend_take_due(&p, 5000, &offs), 0);

    /* The retry times out: all kept, the backoff doubled, no new report. */
    kc_engine_offset_t t[3] = {ent(2, -1, 0), ent(3, -1, 0), ent(4, -1, 0)};
    kc_opend_apply(&p, true, KC_ERR_TIMEOUT, t, 3, &HOOKS, "g", 2000);
    assert_int_equal(seen.n_assign, 2);
    assert_int_equal(seen.n_error, 1);
    assert_int_equal(p.n, 3);
    assert_int_equal(kc_opend_take_due(&p, 2150, &offs), 0);
    assert_int_equal(kc_opend_take_due(&p, 2200, &offs), 3);
    free(offs);

    /* 2 and 4 start at their committed offsets; 3 is still refused: kept, not reported again
     * this soon (the same refusal 1.3 s after the report). */
    kc_engine_offset_t ok[3] = {ent(2, 7, 0), ent(3, -1, KC_KAFKA_GROUP_AUTHORIZATION_FAILED),
                                ent(4, 9, 0)};
    kc_opend_apply(&p, true, KC_ERR_BROKER, ok, 3, &HOOKS, "g", 2300);
    assert_int_equal(seen.n_assign, 4);
    assert_int_equal(seen.start[2], 7);
    assert_int_equal(seen.start[3], 9);
    assert_int_equal(seen.n_error, 1);
    assert_int_equal(p.n, 1);
    assert_false(p.inflight);

    /* Still refused KC_OPEND_REPORT_MS after the first report: reported again. */
    int64_t now = 1000 + KC_OPEND_REPORT_MS;
    assert_int_equal(kc_opend_take_due(&p, now, &offs), 1);
    free(offs);
    kc_engine_offset_t still = ent(3, -1, KC_KAFKA_GROUP_AUTHORIZATION_FAILED);
    kc_opend_apply(&p, true, KC_ERR_BROKER, &still, 1, &HOOKS, "g", now);
    assert_int_equal(seen.n_error, 2);
    assert_non_null(strstr(seen.error_msg, "t[3] GROUP_AUTHORIZATION_FAILED"));

    /* The ACL is fixed: the next retry (at most retry.backoff.max.ms later) starts it. */
    assert_int_equal(kc_opend_take_due(&p, now + 100, &offs), 0);
    assert_int_equal(kc_opend_take_due(&p, now + 1000, &offs), 1);
    free(offs);
    kc_engine_offset_t fixed = ent(3, 12, 0);
    kc_opend_apply(&p, true, KC_ERR_BROKER, &fixed, 1, &HOOKS, "g", now + 1100);
    assert_int_equal(seen.n_assign, 5);
    assert_int_equal(seen.part[4], 3);
    assert_int_equal(seen.start[4], 12);
    assert_int_equal(seen.n_error, 2);
    assert_int_equal(p.n, 0);
    kc_opend_free(&p);
}

/* A refusal of a partition not refused before is reported at once, however recent the last
 * report. */
static void new_refusal_reported_at_once(void **state)
{
    (void)state;
    memset(&seen, 0, sizeof seen);
    kc_opend_t p;
    kc_opend_init(&p, 100, 1000);
    kc_engine_offset_t a = ent(0, -1, KC_KAFKA_GROUP_AUTHORIZATION_FAILED);
    kc_opend_apply(&p, false, KC_ERR_BROKER, &a, 1, &HOOKS, "g", 1000);
    assert_int_equal(seen.n_error, 1);
    kc_engine_offset_t b = ent(1, -1, KC_KAFKA_GROUP_ID_NOT_FOUND);
    kc_opend_apply(&p, false, KC_ERR_BROKER, &b, 1, &HOOKS, "g", 1010);
    assert_int_equal(seen.n_error, 2);
    assert_int_equal(seen.error_code, KC_KAFKA_GROUP_ID_NOT_FOUND);
    assert_int_equal(p.n, 2);
    kc_opend_free(&p);
}

static void revoked_or_reassigned_during_retry(void **state)
{
    (void)state;
    memset(&seen, 0, sizeof seen);
    kc_opend_t p;
    kc_opend_init(&p, 100, 1000);
    kc_engine_offset_t r[2] = {ent(0, -1, KC_KAFKA_COORDINATOR_LOAD_IN_PROGRESS),
                               ent(1, -1, KC_KAFKA_COORDINATOR_LOAD_IN_PROGRESS)};
    kc_opend_apply(&p, false, KC_ERR_BROKER, r, 2, &HOOKS, "g", 0);
    assert_int_equal(p.n, 2);
    kc_engine_offset_t *offs;
    assert_int_equal(kc_opend_take_due(&p, 100, &offs), 2);
    free(offs);
    /* 0 revoked; 1 revoked and assigned afresh, its new first fetch failing too. */
    kc_opend_remove(&p, "t", 0);
    kc_opend_remove(&p, "t", 1);
    kc_engine_offset_t again = ent(1, -1, KC_KAFKA_UNSTABLE_OFFSET_COMMIT);
    kc_opend_apply(&p, false, KC_ERR_BROKER, &again, 1, &HOOKS, "g", 150);
    /* The old retry's answer must start neither. */
    kc_engine_offset_t old[2] = {ent(0, 5, 0), ent(1, 6, 0)};
    kc_opend_apply(&p, true, KC_OK, old, 2, &HOOKS, "g", 200);
    assert_int_equal(seen.n_assign, 0);
    assert_int_equal(p.n, 1);
    /* Closing: nothing more asked. */
    kc_opend_clear(&p);
    assert_int_equal(kc_opend_take_due(&p, 100000, &offs), 0);
    kc_opend_free(&p);
}

/* Many partitions of two topics, kept, removed in part, asked again and answered: every lookup,
 * swap-removal and index move agrees with what is pending. */
#define MANY 20000
static unsigned char started[2][MANY];
static int many_assigned;

static kc_err_t count_assign(void *o, const char *topic, int32_t partition, int64_t start,
                             kc_error_t *err)
{
    (void)o, (void)err;
    assert_true(partition >= 0 && partition < MANY);
    assert_int_equal(start, partition + 1);
    started[topic[0] == 'b'][partition]++;
    many_assigned++;
    return KC_OK;
}

static const kc_group_hooks_t COUNT_HOOKS = {.assign = count_assign, .error = error};

static void many_partitions(void **state)
{
    (void)state;
    memset(&seen, 0, sizeof seen);
    memset(started, 0, sizeof started);
    many_assigned = 0;
    kc_opend_t p;
    kc_opend_init(&p, 100, 1000);
    kc_engine_offset_t *r = calloc(2 * MANY, sizeof *r);
    assert_non_null(r);
    for (int i = 0; i < 2 * MANY; i++)
        r[i] = (kc_engine_offset_t){
            i % 2 ? "b" : "a", i / 2, -1, -1, NULL, KC_KAFKA_COORDINATOR_LOAD_IN_PROGRESS};
    kc_opend_apply(&p, false, KC_ERR_BROKER, r, 2 * MANY, &COUNT_HOOKS, "g", 0);
    assert_int_equal(p.n, 2 * MANY);
    /* Revoked: every third partition of "a" and every fifth of "b". */
    size_t left = 2 * MANY;
    for (int i = 0; i < MANY; i++) {
        if (i % 3 == 0)
            kc_opend_remove(&p, "a", i), left--;
        if (i % 5 == 0)
            kc_opend_remove(&p, "b", i), left--;
    }
    kc_opend_remove(&p, "a", 0); /* again: no longer there */
    kc_opend_remove(&p, "c", 1); /* never was */
    assert_int_equal(p.n, left);
    kc_engine_offset_t *offs;
    assert_int_equal(kc_opend_take_due(&p, 100, &offs), left);
    free(offs);
    /* The answer names every partition, the revoked ones too; only the pending start. */
    for (int i = 0; i < 2 * MANY; i++)
        r[i] = (kc_engine_offset_t){i % 2 ? "b" : "a", i / 2, i / 2 + 1, -1, NULL, 0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kc_opend_apply(&p, true, KC_OK, r, 2 * MANY, &COUNT_HOOKS, "g", 200);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("answer for %d pending partitions applied in %.1f ms\n", (int)left,
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    assert_int_equal(many_assigned, (int)left);
    for (int i = 0; i < MANY; i++) {
        assert_int_equal(started[0][i], i % 3 != 0);
        assert_int_equal(started[1][i], i % 5 != 0);
    }
    assert_int_equal(p.n, 0);
    assert_int_equal(seen.n_error, 0);
    free(r);
    kc_opend_free(&p);
}

static void retriable_verdicts(void **state)
{
    (void)state;
    assert_true(kc_opend_retriable(KC_ERR_TIMEOUT, 0));
    assert_true(kc_opend_retriable(KC_ERR_TRANSPORT, 0));
    assert_true(kc_opend_retriable(KC_ERR_BROKER, KC_KAFKA_UNSTABLE_OFFSET_COMMIT));
    assert_true(kc_opend_retriable(KC_ERR_BROKER, KC_KAFKA_COORDINATOR_LOAD_IN_PROGRESS));
    assert_true(kc_opend_retriable(KC_ERR_BROKER, KC_KAFKA_NOT_COORDINATOR));
    assert_true(kc_opend_retriable(KC_ERR_BROKER, KC_KAFKA_UNKNOWN_SERVER_ERROR)); /* unanswered */
    assert_false(kc_opend_retriable(KC_ERR_BROKER, KC_KAFKA_GROUP_AUTHORIZATION_FAILED));
    assert_false(kc_opend_retriable(KC_ERR_BROKER, KC_KAFKA_GROUP_ID_NOT_FOUND));
    assert_false(kc_opend_retriable(KC_OK, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(first_fetch_sorts_partitions),
        cmocka_unit_test(revoked_or_reassigned_during_retry),
        cmocka_unit_test(new_refusal_reported_at_once),
        cmocka_unit_test(retriable_verdicts),
        cmocka_unit_test(many_partitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
