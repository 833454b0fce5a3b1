/* kc-test-label: threads */
/*
 * API misuse gives an error value with a message, never a crash or a hang (include/kconsume.h,
 * "Misuse"): NULL handles and arguments, bad partition lists, calls after kc_close, manual
 * assignment mixed with kc_subscribe, and the blocking calls (kc_close, kc_commit, kc_committed,
 * kc_poll, the cluster queries, kc_destroy) made from inside a callback. No broker: the consumer
 * points at a closed port, which the runtime tolerates (it keeps reconnecting in the background);
 * the stats event gives a callback to misbehave in.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kconsume.h"
#include "kc_test.h"

static kc_consumer_t *make(const char *group, const char *stats_ms, const kc_callbacks_t *cbs)
{
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "worker.threads", "2", &err), KC_OK);
    if (group)
        assert_int_equal(kc_conf_set(conf, "group.id", group, &err), KC_OK);
    if (stats_ms)
        assert_int_equal(kc_conf_set(conf, "statistics.interval.ms", stats_ms, &err), KC_OK);
    kc_consumer_t *c = NULL;
    if (kc_consumer_new(conf, cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    return c;
}

/* rc is `want` and the message names `needle`. */
static void expect(kc_err_t rc, const kc_error_t *e, kc_err_t want, const char *needle)
{
    if (rc != want)
        fail_msg("got %s (%s), want %s", kc_err_name(rc), e->msg, kc_err_name(want));
    if (!e->msg[0] || !strstr(e->msg, needle))
        fail_msg("message \"%s\" lacks \"%s\"", e->msg, needle);
}

static void null_handles_and_arguments(void **state)
{
    (void)state;
    kc_error_t e;
    kc_topic_partition_t tp = {"t", 0, 0};
    int64_t off;
    int32_t cnt;
    kc_records_t *b;
    const char *topics[] = {"t"};
    expect(kc_assign(NULL, &tp, 1, &e), &e, KC_ERR_INVALID_ARG, "NULL consumer");
    expect(kc_incremental_assign(NULL, &tp, 1, &e), &e, KC_ERR_INVALID_ARG, "NULL consumer");
    expect(kc_unassign(NULL, &e), &e, KC_ERR_INVALID_ARG, "NULL consumer");
    expect(kc_seek(NULL, "t", 0, KC_SEEK_BEGINNING, 0, &e), &e, KC_ERR_INVALID_ARG, "NULL");
    expect(kc_pause(NULL, &tp, 1, &e), &e, KC_ERR_INVALID_ARG, "NULL consumer");
    expect(kc_resume(NULL, &tp, 1, &e), &e, KC_ERR_INVALID_ARG, "NULL consumer");
    expect(kc_committed(NULL, &tp, 1, 100, &e), &e, KC_ERR_INVALID_ARG, "NULL consumer");
    expect(kc_commit(NULL, NULL, 0, 100, &e), &e, KC_ERR_INVALID_ARG, "NULL consumer");
    expect(kc_commit_async(NULL, NULL, 0, NULL, NULL, &e), &e, KC_ERR_INVALID_ARG, "bad");
    expect(kc_store_offset(NULL, "t", 0, 1, &e), &e, KC_ERR_INVALID_ARG, "bad");
    expect(kc_position(NULL, "t", 0, &off, &e), &e, KC_ERR_INVALID_ARG, "bad");
    kc_topic_partition_t one = {"t", 0, 0};
    expect(kc_position_list(NULL, &one, 1, &e), &e, KC_ERR_INVALID_ARG, "NULL");
    expect(kc_poll(NULL, 0, &b, &e), &e, KC_ERR_INVALID_ARG, "required");
    expect(kc_subscribe(NULL, topics, 1, &e), &e, KC_ERR_INVALID_ARG, "required");
    expect(kc_topic_partitions(NULL, "t", &cnt, 10, &e), &e, KC_ERR_INVALID_ARG, "NULL");
    expect(kc_query_watermarks(NULL, "t", 0, NULL, NULL, 10, &e), &e, KC_ERR_INVALID_ARG, "NULL");
    kc_watermarks_t wq = {.topic = "t", .partition = 0};
    expect(kc_query_watermarks_list(NULL, &wq, 1, 10, &e), &e, KC_ERR_INVALID_ARG, "NULL");
    kc_offset_time_t ot = {.topic = "t", .partition = 0, .timestamp = 0};
    expect(kc_offsets_for_times(NULL, &ot, 1, 10, &e), &e, KC_ERR_INVALID_ARG, "NULL");
    kc_metadata_t *md = (kc_metadata_t *)1;
    expect(kc_metadata(NULL, NULL, 0, 10, &md, &e), &e, KC_ERR_INVALID_ARG, "NULL");
    expect(kc_consumer_new(NULL, NULL, NULL, &e), &e, KC_ERR_INVALID_ARG, "required");
    expect(kc_conf_set(NULL, "a", "b", &e), &e, KC_ERR_INVALID_ARG, "NULL conf");
    expect(kc_conf_validate(NULL, &e), &e, KC_ERR_INVALID_ARG, "NULL conf");
    char buf[8];
    assert_int_equal(kc_member_id(NULL, buf, sizeof buf), KC_ERR_INVALID_ARG);
    kc_records_release(NULL, NULL, KC_CB_CONTINUE); /* void: must simply not crash */
    kc_destroy(NULL);
    assert_int_equal(kc_close(NULL, 0, NULL), KC_OK);
    /* the error pointer itself may be NULL everywhere */
    assert_int_equal(kc_assign(NULL, &tp, 1, NULL), KC_ERR_INVALID_ARG);

    kc_consumer_t *c = make(NULL, NULL, NULL);
    kc_topic_partition_t bad[2] = {{"t", 0, 0}, {NULL, 1, 0}};
    expect(kc_assign(c, bad, 2, &e), &e, KC_ERR_INVALID_ARG, "entry 1 has no topic name");
    bad[1] = (kc_topic_partition_t){"", 1, 0};
    expect(kc_incremental_assign(c, bad, 2, &e), &e, KC_ERR_INVALID_ARG, "entry 1");
    bad[1] = (kc_topic_partition_t){"t", -3, 0};
    expect(kc_assign(c, bad, 2, &e), &e, KC_ERR_INVALID_ARG, "partition -3 < 0");
    expect(kc_assign(c, NULL, 2, &e), &e, KC_ERR_INVALID_ARG, "NULL list of 2");
    expect(kc_pause(c, NULL, 1, &e), &e, KC_ERR_INVALID_ARG, "NULL list");
    expect(kc_position_list(c, NULL, 3, &e), &e, KC_ERR_INVALID_ARG, "NULL list of 3");
    expect(kc_position_list(c, bad, 2, &e), &e, KC_ERR_INVALID_ARG, "partition -3");
    kc_topic_partition_t unassigned = {"t", 0, 77};
    expect(kc_position_list(c, &unassigned, 1, &e), &e, KC_ERR_NOT_FOUND, "t[0] is not assigned");
    assert_int_equal(unassigned.offset, KC_OFFSET_INVALID);
    expect(kc_resume(c, bad, 2, &e), &e, KC_ERR_INVALID_ARG, "partition -3");
    expect(kc_seek(c, NULL, 0, KC_SEEK_BEGINNING, 0, &e), &e, KC_ERR_INVALID_ARG, "no topic");
    expect(kc_seek(c, "t", 0, (kc_seek_kind_t)9, 0, &e), &e, KC_ERR_INVALID_ARG, "unknown kind 9");
    expect(kc_seek(c, "t", 0, KC_SEEK_OFFSET, -5, &e), &e, KC_ERR_INVALID_ARG, "offset -5 < 0");
    expect(kc_topic_partitions(c, NULL, &cnt, 10, &e), &e, KC_ERR_INVALID_ARG, "topic");
    kc_offset_time_t neg = {.topic = "t", .partition = 0, .timestamp = -1};
    expect(kc_offsets_for_times(c, &neg, 1, 10, &e), &e, KC_ERR_INVALID_ARG, "negative");
    kc_offset_time_t nop = {.topic = NULL, .partition = 0, .timestamp = 0};
    expect(kc_offsets_for_times(c, &nop, 1, 10, &e), &e, KC_ERR_INVALID_ARG, "needs a topic");
    const char *empty[] = {""};
    kc_metadata_t *md2 = NULL;
    expect(kc_metadata(c, empty, 1, 10, &md2, &e), &e, KC_ERR_INVALID_ARG, "empty");
    assert_null(md2);
    expect(kc_subscribe(c, topics, 0, &e), &e, KC_ERR_INVALID_ARG, "required");
    const char *holes[] = {"t", NULL};
    expect(kc_subscribe(c, holes, 2, &e), &e, KC_ERR_INVALID_ARG, "empty topic name");
    /* commits and committed offsets need a group */
    expect(kc_committed(c, &tp, 1, 100, &e), &e, KC_ERR_CONFIG, "group.id");
    expect(kc_commit_async(c, NULL, 0, NULL, NULL, &e), &e, KC_ERR_CONFIG, "group.id");
    /* still usable after all that */
    assert_int_equal(kc_assign(c, &tp, 1, &e), KC_OK);
    kc_destroy(c);
}

/* kc_callbacks_t.size: 0 and sizeof are this layout; a smaller size is refused; a larger one
 * (a program built against a later header) only if nothing past this layout is set. */
static void callbacks_size_is_checked(void **state)
{
    (void)state;
    kc_error_t e;
    kc_conf_t *conf = kc_conf_new();
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", &e), KC_OK);
    kc_consumer_t *c = NULL;
    kc_callbacks_t small = {.size = 8};
    expect(kc_consumer_new(conf, &small, &c, &e), &e, KC_ERR_INVALID_ARG, "sizeof(kc_callbacks_t)");
    struct {
        kc_callbacks_t cbs;
        void (*on_future)(void *);
    } later;
    memset(&later, 0, sizeof later);
    later.cbs.size = sizeof later;
    later.on_future = (void (*)(void *))free;
    expect(kc_consumer_new(conf, &later.cbs, &c, &e), &e, KC_ERR_UNSUPPORTED, "later kconsume.h");
    assert_null(c);
    later.on_future = NULL; /* the later layout with nothing new set works */
    assert_int_equal(kc_consumer_new(conf, &later.cbs, &c, &e), KC_OK);
    assert_int_equal(kc_close(c, 1000, &e), KC_OK);
    kc_destroy(c);
    kc_callbacks_t exact = {.size = sizeof exact};
    c = make(NULL, NULL, &exact);
    assert_int_equal(kc_close(c, 1000, &e), KC_OK);
    kc_destroy(c);
}

static void calls_after_close_say_closed(void **state)
{
    (void)state;
    kc_error_t e;
    kc_consumer_t *c = make("g-misuse", NULL, NULL);
    kc_topic_partition_t tp = {"t", 0, 0};
    assert_int_equal(kc_close(c, 1000, &e), KC_OK);
    assert_int_equal(kc_close(c, 1000, &e), KC_OK); /* idempotent */
    expect(kc_assign(c, &tp, 1, &e), &e, KC_ERR_CLOSED, "closed");
    expect(kc_unassign(c, &e), &e, KC_ERR_CLOSED, "closed");
    expect(kc_seek(c, "t", 0, KC_SEEK_END, 0, &e), &e, KC_ERR_CLOSED, "closed");
    expect(kc_pause(c, &tp, 1, &e), &e, KC_ERR_CLOSED, "closed");
    expect(kc_commit(c, NULL, 0, 100, &e), &e, KC_ERR_CLOSED, "closed");
    expect(kc_commit_async(c, NULL, 0, NULL, NULL, &e), &e, KC_ERR_CLOSED, "closed");
    expect(kc_committed(c, &tp, 1, 100, &e), &e, KC_ERR_CLOSED, "closed");
    const char *topics[] = {"t"};
    expect(kc_subscribe(c, topics, 1, &e), &e, KC_ERR_CLOSED, "closed");
    expect(kc_query_watermarks(c, "t", 0, NULL, NULL, 100, &e), &e, KC_ERR_CLOSED, "closed");
    kc_watermarks_t wq[2] = {{.topic = "t", .partition = 0}, {.topic = "t", .partition = 1}};
    expect(kc_query_watermarks_list(c, wq, 2, 100, &e), &e, KC_ERR_CLOSED, "closed");
    assert_int_equal(wq[1].err, KC_ERR_CLOSED); /* every entry says why it has no answer */
    assert_int_equal(wq[1].high, -1);
    wq[1].partition = -1; /* checked before anything is asked */
    expect(kc_query_watermarks_list(c, wq, 2, 100, &e), &e, KC_ERR_INVALID_ARG, "entry 1");
    wq[1].topic = NULL;
    expect(kc_query_watermarks_list(c, wq, 2, 100, &e), &e, KC_ERR_INVALID_ARG, "entry 1");
    kc_offset_time_t ot = {.topic = "t", .partition = 0, .timestamp = 0};
    expect(kc_offsets_for_times(c, &ot, 1, 100, &e), &e, KC_ERR_CLOSED, "closed");
    kc_offset_time_t bad[2] = {{.topic = "t", .partition = 0, .timestamp = 0},
                               {.topic = "t", .partition = 1, .timestamp = -5}};
    expect(kc_offsets_for_times(c, bad, 2, 100, &e), &e, KC_ERR_INVALID_ARG, "negative");
    assert_int_equal(bad[0].err, KC_ERR_INVALID_ARG); /* every entry says why, on any failure */
    assert_int_equal(bad[0].offset, -1);
    kc_metadata_t *md = NULL;
    expect(kc_metadata(c, NULL, 0, 100, &md, &e), &e, KC_ERR_CLOSED, "closed");
    kc_records_t *b = (kc_records_t *)1;
    expect(kc_poll(c, 10, &b, &e), &e, KC_ERR_CLOSED, "closed");
    assert_null(b);
    kc_destroy(c);
}

static void manual_assignment_and_subscribe_exclude_each_other(void **state)
{
    (void)state;
    kc_error_t e;
    const char *topics[] = {"t"};
    kc_topic_partition_t tp = {"t", 0, 0};
    kc_consumer_t *c = make("g-misuse", NULL, NULL);
    assert_int_equal(kc_assign(c, &tp, 1, &e), KC_OK);
    expect(kc_subscribe(c, topics, 1, &e), &e, KC_ERR_STATE, "manual assignment is in use");
    kc_destroy(c);

    c = make("g-misuse", NULL, NULL);
    if (kc_subscribe(c, topics, 1, &e) != KC_OK)
        fail_msg("subscribe: %s", e.msg);
    expect(kc_assign(c, &tp, 1, &e), &e, KC_ERR_STATE, "subscribed to a group");
    expect(kc_incremental_assign(c, &tp, 1, &e), &e, KC_ERR_STATE, "subscribed to a group");
    expect(kc_unassign(c, &e), &e, KC_ERR_STATE, "subscribed to a group");
    assert_int_equal(kc_close(c, 2000, &e), KC_OK);
    kc_destroy(c);

    /* kc_subscribe without group.id says what is missing */
    c = make(NULL, NULL, NULL);
    kc_err_t rc = kc_subscribe(c, topics, 1, &e);
    assert_int_not_equal(rc, KC_OK);
    if (!strstr(e.msg, "group.id"))
        fail_msg("subscribe without group.id: \"%s\"", e.msg);
    kc_destroy(c);
}

/* ---- blocking calls from callback context ------------------------------------------------- */

typedef struct {
    _Atomic(kc_consumer_t *) c;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    kc_err_t rc[11];
    kc_error_t err[11];
} cbctx_t;

static void on_event(void *opaque, const kc_event_t *ev)
{
    cbctx_t *x = opaque;
    kc_consumer_t *c = atomic_load(&x->c);
    if (ev->type != KC_EVENT_STATS || !c)
        return;
    pthread_mutex_lock(&x->mu);
    int first = !x->done;
    pthread_mutex_unlock(&x->mu);
    if (!first)
        return;
    kc_topic_partition_t tp = {"t", 0, 0};
    kc_records_t *b;
    int32_t n;
    int i = 0;
    x->rc[i] = kc_close(c, 1000, &x->err[i]), i++;
    x->rc[i] = kc_commit(c, NULL, 0, 1000, &x->err[i]), i++;
    x->rc[i] = kc_committed(c, &tp, 1, 1000, &x->err[i]), i++;
    x->rc[i] = kc_poll(c, 1000, &b, &x->err[i]), i++;
    x->rc[i] = kc_topic_partitions(c, "t", &n, 1000, &x->err[i]), i++;
    x->rc[i] = kc_query_watermarks(c, "t", 0, NULL, NULL, 1000, &x->err[i]), i++;
    kc_watermarks_t wq = {.topic = "t", .partition = 0};
    x->rc[i] = kc_query_watermarks_list(c, &wq, 1, 1000, &x->err[i]), i++;
    kc_offset_time_t ot = {.topic = "t", .partition = 0, .timestamp = 0};
    x->rc[i] = kc_offsets_for_times(c, &ot, 1, 1000, &x->err[i]), i++;
    kc_metadata_t *md;
    x->rc[i] = kc_metadata(c, NULL, 0, 1000, &md, &x->err[i]), i++;
    kc_destroy(c); /* ignored, logged */
    /* the non-blocking calls stay allowed in callbacks */
    x->rc[i] = kc_poll(c, 0, &b, &x->err[i]), i++;
    x->rc[i] = kc_pause(c, &tp, 1, &x->err[i]), i++; /* not assigned: an answer, not a hang */
    pthread_mutex_lock(&x->mu);
    x->done = 1;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

static kc_cb_result_t on_records(void *opaque, kc_part_t *p, kc_records_t *b)
{
    (void)opaque, (void)p, (void)b;
    return KC_CB_CONTINUE;
}

static void blocking_calls_from_a_callback_are_refused(void **state)
{
    (void)state;
    cbctx_t x = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event, .opaque = &x};
    kc_consumer_t *c = make("g-misuse", "20", &cbs);
    atomic_store(&x.c, c);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 60; /* generous: valgrind runs this too */
    pthread_mutex_lock(&x.mu);
    while (!x.done)
        if (pthread_cond_timedwait(&x.cv, &x.mu, &dl) != 0)
            break;
    int done = x.done;
    pthread_mutex_unlock(&x.mu);
    assert_true(done);
    static const char *fns[] = {"kc_close",
                                "kc_commit",
                                "kc_committed",
                                "kc_poll",
                                "kc_topic_partitions",
                                "kc_query_watermarks called", /* not _list's message */
                                "kc_query_watermarks_list",
                                "kc_offsets_for_times",
                                "kc_metadata"};
    for (int i = 0; i < 9; i++) {
        expect(x.rc[i], &x.err[i], KC_ERR_STATE, fns[i]);
        expect(x.rc[i], &x.err[i], KC_ERR_STATE, "from a kconsume callback");
    }
    /* kc_poll(0) in push mode: the push-mode refusal, not the callback one */
    expect(x.rc[9], &x.err[9], KC_ERR_STATE, "push mode");
    assert_int_not_equal(x.rc[10], KC_ERR_STATE);
    /* the refused kc_close did not half-close it: the app thread still can */
    kc_error_t e;
    kc_topic_partition_t tp = {"t", 0, 0};
    assert_int_equal(kc_assign(c, &tp, 1, &e), KC_OK);
    assert_int_equal(kc_close(c, 2000, &e), KC_OK);
    kc_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(null_handles_and_arguments),
        cmocka_unit_test(callbacks_size_is_checked),
        cmocka_unit_test(calls_after_close_say_closed),
        cmocka_unit_test(manual_assignment_and_subscribe_exclude_each_other),
        cmocka_unit_test(blocking_calls_from_a_callback_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
