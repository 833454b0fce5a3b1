/* engine/share: acquired-range checks, acknowledgement batches and the share session's epochs,
 * partition lists and answers, driven by hand-made ShareFetch / ShareAcknowledge answers. */
#include "kc_test.h"

#include <stdio.h>
#include <string.h>

#include "batch_builder.h"
#include "proto/kafka_errors.h"
#include "share/session.h"

static kc_tp_t tp_of(uint8_t topic, int32_t partition)
{
    kc_tp_t tp = {{0}, partition};
    tp.topic_id[15] = topic;
    return tp;
}

static void acquired_checks(void **state)
{
    (void)state;
    kc_error_t e;
    kc_share_range_t ok[] = {{0, 4, 1}, {7, 9, 2}};
    assert_int_equal(kc_share_acquired_check(ok, 2, 0, 9, "t", 0, &e), KC_OK);
    assert_int_equal(kc_share_acquired_count(ok, 2, 0), 1);
    assert_int_equal(kc_share_acquired_count(ok, 2, 4), 1);
    assert_int_equal(kc_share_acquired_count(ok, 2, 5), 0);
    assert_int_equal(kc_share_acquired_count(ok, 2, 8), 2);
    assert_int_equal(kc_share_acquired_count(ok, 2, 10), 0);
    assert_int_equal(kc_share_acquired_span(ok, 2), 8);

    kc_share_range_t overlap[] = {{0, 4, 1}, {4, 9, 1}};
    assert_int_equal(kc_share_acquired_check(overlap, 2, 0, 9, "t", 3, &e), KC_ERR_MALFORMED);
    assert_non_null(strstr(e.msg, "t[3]"));
    assert_non_null(strstr(e.msg, "overlap"));
    kc_share_range_t repeat[] = {{0, 4, 1}, {0, 4, 1}};
    assert_int_equal(kc_share_acquired_check(repeat, 2, 0, 9, "t", 0, &e), KC_ERR_MALFORMED);
    assert_non_null(strstr(e.msg, "repeat"));
    kc_share_range_t past[] = {{5, 12, 1}};
    assert_int_equal(kc_share_acquired_check(past, 1, 0, 9, "t", 0, &e), KC_ERR_MALFORMED);
    assert_non_null(strstr(e.msg, "outside"));
    assert_int_equal(kc_share_acquired_check(past, 1, 0, -1, "t", 0, &e), KC_ERR_MALFORMED);
    assert_non_null(strstr(e.msg, "no records"));
    kc_share_range_t back[] = {{5, 4, 1}};
    assert_int_equal(kc_share_acquired_check(back, 1, 0, 9, "t", 0, &e), KC_ERR_MALFORMED);
    kc_share_range_t zero[] = {{1, 4, 0}};
    assert_int_equal(kc_share_acquired_check(zero, 1, 0, 9, "t", 0, &e), KC_ERR_MALFORMED);
    kc_share_range_t desc[] = {{5, 6, 1}, {0, 1, 1}};
    assert_int_equal(kc_share_acquired_check(desc, 2, 0, 9, "t", 0, &e), KC_ERR_MALFORMED);
    /* records a batch header claims up to the largest offset: acquired there is refused */
    kc_share_range_t top[] = {{INT64_MAX - 2, INT64_MAX, 1}};
    assert_int_equal(kc_share_acquired_check(top, 1, INT64_MAX - 2, INT64_MAX, "t", 0, &e),
                     KC_ERR_MALFORMED);
    assert_non_null(strstr(e.msg, "largest offset"));
    top[0].last = INT64_MAX - 1;
    assert_int_equal(kc_share_acquired_check(top, 1, INT64_MAX - 2, INT64_MAX, "t", 0, &e), KC_OK);
}

static void ack_batches(void **state)
{
    (void)state;
    kc_share_acks_t a = {0};
    kc_error_t e;
    /* out of order, as workers finish: 3,1,2 accept; 4 release; 7,8 reject */
    int64_t offs[] = {3, 1, 2, 4, 8, 7};
    kc_share_ack_type_t types[] = {KC_SHARE_ACK_ACCEPT,  KC_SHARE_ACK_ACCEPT, KC_SHARE_ACK_ACCEPT,
                                   KC_SHARE_ACK_RELEASE, KC_SHARE_ACK_REJECT, KC_SHARE_ACK_REJECT};
    for (int i = 0; i < 6; i++)
        assert_int_equal(kc_share_acks_add(&a, offs[i], offs[i], types[i], &e), KC_OK);
    assert_int_equal(kc_share_acks_add(&a, 2, 2, KC_SHARE_ACK_REJECT, &e), KC_ERR_STATE);
    assert_int_equal(kc_share_acks_add(&a, 8, 8, KC_SHARE_ACK_ACCEPT, &e), KC_ERR_STATE);
    assert_int_equal(kc_share_acks_add(&a, 5, 7, KC_SHARE_ACK_ACCEPT, &e), KC_ERR_STATE);
    assert_int_equal(kc_share_acks_add(&a, 0, 1, KC_SHARE_ACK_ACCEPT, &e), KC_ERR_STATE);
    assert_int_equal(kc_share_acks_add(&a, 9, 9, (kc_share_ack_type_t)7, &e), KC_ERR_INVALID_ARG);
    assert_int_equal(kc_share_acks_add(&a, 9, 8, KC_SHARE_ACK_ACCEPT, &e), KC_ERR_INVALID_ARG);
    assert_int_equal(a.n, 3); /* 1..3 accept, 4 release, 7..8 reject: merged by type */
    kc_arena_t ar = {0};
    kc_share_ack_batch_t *b;
    int32_t n;
    assert_int_equal(kc_share_acks_take(&a, &ar, &b, &n, &e), KC_OK);
    assert_int_equal(n, 2);
    assert_int_equal(b[0].first, 1);
    assert_int_equal(b[0].last, 4);
    assert_int_equal(b[0].n_types, 4); /* mixed: one type per offset */
    assert_int_equal(b[0].types[3], KC_SHARE_ACK_RELEASE);
    assert_int_equal(b[1].first, 7);
    assert_int_equal(b[1].last, 8);
    assert_int_equal(b[1].n_types, 1); /* uniform: one type for all */
    assert_int_equal(b[1].types[0], KC_SHARE_ACK_REJECT);
    int64_t c[KC_SHARE_ACK_TYPES] = {0};
    kc_share_ack_batches_count(b, n, c);
    assert_int_equal(c[1], 3);
    assert_int_equal(c[2], 1);
    assert_int_equal(c[3], 2);
    assert_int_equal(a.n, 0);
    /* taken: the same offset may be acknowledged again only as a new verdict (not pending) */
    assert_int_equal(kc_share_acks_add(&a, 2, 2, KC_SHARE_ACK_ACCEPT, &e), KC_OK);
    kc_share_acks_free(&a);
    kc_arena_free(&ar);
}

/* An acquired range spanning 2^31 offsets with three records in it (a compacted log, or a broker
 * that lies): the GAPs around the records cost a range each, not an entry per offset, and the
 * batches that leave are one per range (the run is far longer than KC_SHARE_ACK_TYPES_MAX), each
 * with one type. Then a short mixed run: one batch, a type per offset. */
static void ack_huge_range(void **state)
{
    (void)state;
    kc_share_acks_t a = {0};
    kc_error_t e;
    const int64_t last = ((int64_t)1 << 31) - 1;
    int64_t recs[] = {5, 1000000, last - 1};
    /* verdicts first (workers), then the gaps between them (the fetcher), out of order */
    for (int i = 2; i >= 0; i--)
        assert_int_equal(kc_share_acks_add(&a, recs[i], recs[i], KC_SHARE_ACK_ACCEPT, &e), KC_OK);
    assert_int_equal(kc_share_acks_add(&a, 1000001, last - 2, KC_SHARE_ACK_GAP, &e), KC_OK);
    assert_int_equal(kc_share_acks_add(&a, 0, 4, KC_SHARE_ACK_GAP, &e), KC_OK);
    assert_int_equal(kc_share_acks_add(&a, last, last, KC_SHARE_ACK_GAP, &e), KC_OK);
    assert_int_equal(kc_share_acks_add(&a, 6, 999999, KC_SHARE_ACK_GAP, &e), KC_OK);
    assert_int_equal(a.n, 7);
    assert_int_equal(kc_share_acks_add(&a, 77, 77, KC_SHARE_ACK_REJECT, &e), KC_ERR_STATE);
    kc_arena_t ar = {0};
    kc_share_ack_batch_t *b;
    int32_t n;
    assert_int_equal(kc_share_acks_take(&a, &ar, &b, &n, &e), KC_OK);
    assert_int_equal(n, 7);
    int64_t next = 0, c[KC_SHARE_ACK_TYPES] = {0};
    for (int32_t i = 0; i < n; i++) {
        assert_int_equal(b[i].first, next); /* adjacent, ascending: what Kafka accepts */
        assert_int_equal(b[i].n_types, 1);
        next = b[i].last + 1;
    }
    assert_int_equal(next, last + 1);
    kc_share_ack_batches_count(b, n, c);
    assert_int_equal(c[KC_SHARE_ACK_ACCEPT], 3);
    assert_int_equal(c[KC_SHARE_ACK_GAP], last + 1 - 3);
    /* the edges: the largest offset is refused (no log reaches it), the one below it works */
    assert_int_equal(kc_share_acks_add(&a, INT64_MAX, INT64_MAX, KC_SHARE_ACK_GAP, &e),
                     KC_ERR_INVALID_ARG);
    assert_int_equal(kc_share_acks_add(&a, INT64_MAX - 3, INT64_MAX - 3, KC_SHARE_ACK_GAP, &e),
                     KC_OK);
    assert_int_equal(kc_share_acks_add(&a, INT64_MAX - 2, INT64_MAX - 1, KC_SHARE_ACK_RELEASE, &e),
                     KC_OK);
    assert_int_equal(kc_share_acks_take(&a, &ar, &b, &n, &e), KC_OK);
    assert_int_equal(n, 1);
    assert_true(b[0].first == INT64_MAX - 3 && b[0].last == INT64_MAX - 1);
    assert_int_equal(b[0].n_types, 3);
    assert_int_equal(b[0].types[2], KC_SHARE_ACK_RELEASE);
    /* a mixed run of exactly KC_SHARE_ACK_TYPES_MAX offsets is one batch, one more is two */
    for (int extra = 0; extra < 2; extra++) {
        assert_int_equal(kc_share_acks_add(&a, 0, 0, KC_SHARE_ACK_ACCEPT, &e), KC_OK);
        assert_int_equal(
            kc_share_acks_add(&a, 1, KC_SHARE_ACK_TYPES_MAX - 1 + extra, KC_SHARE_ACK_GAP, &e),
            KC_OK);
        assert_int_equal(kc_share_acks_take(&a, &ar, &b, &n, &e), KC_OK);
        assert_int_equal(n, extra ? 2 : 1);
        assert_int_equal(b[0].n_types, extra ? 1 : KC_SHARE_ACK_TYPES_MAX);
        assert_int_equal(b[n - 1].last, KC_SHARE_ACK_TYPES_MAX - 1 + extra);
    }
    /* short and mixed: one batch with a type per offset */
    assert_int_equal(kc_share_acks_add(&a, 10, 19, KC_SHARE_ACK_GAP, &e), KC_OK);
    assert_int_equal(kc_share_acks_add(&a, 20, 20, KC_SHARE_ACK_ACCEPT, &e), KC_OK);
    assert_int_equal(kc_share_acks_add(&a, 21, 29, KC_SHARE_ACK_GAP, &e), KC_OK);
    assert_int_equal(kc_share_acks_take(&a, &ar, &b, &n, &e), KC_OK);
    assert_int_equal(n, 1);
    assert_int_equal(b[0].first, 10);
    assert_int_equal(b[0].last, 29);
    assert_int_equal(b[0].n_types, 20);
    assert_int_equal(b[0].types[10], KC_SHARE_ACK_ACCEPT);
    assert_int_equal(b[0].types[11], KC_SHARE_ACK_GAP);
    kc_share_acks_free(&a);
    kc_arena_free(&ar);
}

/* ---- the session --------------------------------------------------------------------------- */

typedef struct seen {
    int records, acked, errors, resets;
    int64_t acked_first;
    int16_t acked_code;
    size_t ranges;
    int32_t lock_ms;
    char last_error[256];
} seen_t;

static void on_records(void *o, const kc_tp_t *tp, kc_bytes_t rec, const kc_share_range_t *r,
                       size_t n, int32_t lock_ms)
{
    (void)tp;
    (void)rec;
    (void)r;
    seen_t *s = o;
    s->lock_ms = lock_ms;
    s->records++;
    s->ranges += n;
}

static void on_acked(void *o, const kc_tp_t *tp, const kc_share_ack_batch_t *b, int32_t n,
                     int16_t code, const char *why)
{
    (void)tp;
    (void)n;
    (void)why;
    seen_t *s = o;
    s->acked++;
    s->acked_first = b[0].first;
    s->acked_code = code;
}

static void on_error(void *o, const kc_tp_t *tp, const kc_error_t *e)
{
    seen_t *s = o;
    if (!tp)
        s->resets++;
    else
        s->errors++;
    snprintf(s->last_error, sizeof s->last_error, "%s", e->msg);
}

static const kc_share_fetch_params_t params = {"g", "m", 500, 1, 1 << 20, 100, 100};

/* A ShareFetch answer for topic 1: partitions `parts` (n), each with records 0..9 and the
 * acquired ranges `r` (nr). */
typedef struct answer {
    kc_share_fetch_response_t m;
    kc_share_fetch_response_share_fetchable_topic_response_t t;
    kc_share_fetch_response_partition_data_t d[4];
    kc_share_fetch_response_acquired_records_t ar[4];
    tb_buf_t batch;
} answer_t;

static const kc_share_fetch_response_t *mk(answer_t *x, const int32_t *parts, int n,
                                           const kc_share_range_t *r, int nr)
{
    memset(x, 0, sizeof *x);
    kc_share_fetch_response_init(&x->m);
    tb_record_t recs[10];
    memset(recs, 0, sizeof recs);
    for (int i = 0; i < 10; i++) {
        recs[i].off_delta = i;
        recs[i].value = "v";
        recs[i].value_len = 1;
    }
    tb_batch_t cfg = {0};
    tb_batch(&x->batch, &cfg, recs, 10);
    x->t.topic_id.b[15] = 1;
    x->t.partitions.count = n;
    x->t.partitions.items = x->d;
    for (int i = 0; i < nr; i++)
        x->ar[i] = (kc_share_fetch_response_acquired_records_t){r[i].first, r[i].last,
                                                                r[i].delivery_count};
    for (int i = 0; i < n; i++) {
        kc_share_fetch_response_partition_data_t *d = &x->d[i];
        d->partition_index = parts[i];
        d->records = (kc_bytes_t){x->batch.p, (int32_t)x->batch.len};
        d->acquired_records.count = nr;
        d->acquired_records.items = x->ar;
        d->error_message = KC_STR_NULL;
        d->acknowledge_error_message = KC_STR_NULL;
    }
    x->m.responses.count = 1;
    x->m.responses.items = &x->t;
    return &x->m;
}

/* One share session (node 1) for topic 1, the handler counting into `seen`, and the arena its
 * answers decode into: what every session test starts from. */
typedef struct fx {
    kc_share_session_t s;
    seen_t seen;
    kc_share_handler_t h;
    kc_error_t e;
    kc_tp_t p0, p1;
    kc_arena_t a;
    answer_t x;
} fx_t;

static void fx_open(fx_t *f)
{
    memset(f, 0, sizeof *f);
    kc_share_session_init(&f->s, 1);
    f->h = (kc_share_handler_t){on_records, on_acked, on_error, &f->seen};
    f->p0 = tp_of(1, 0);
    f->p1 = tp_of(1, 1);
}

/* The session gets a ShareFetch answer for `parts` with ranges `r` (mk). */
static void fx_answer(fx_t *f, const int32_t *parts, int n, const kc_share_range_t *r, int nr)
{
    kc_share_session_fetch_answer(&f->s, mk(&f->x, parts, n, r, nr), &f->a, &f->h);
    tb_free(&f->x.batch);
}

static void fx_close(fx_t *f)
{
    kc_arena_free(&f->a);
    kc_share_session_free(&f->s);
}

/* The session gets a ShareAcknowledge answer for partition 0 of topic 1: `code` (`msg`: its
 * message, NULL none), the lock's length `lock_ms` (0: not said), arriving at `now`. */
static void ack_answer(fx_t *f, int16_t code, const char *msg, int32_t lock_ms, int64_t now)
{
    kc_share_acknowledge_response_t m;
    kc_share_acknowledge_response_init(&m);
    kc_share_acknowledge_response_share_acknowledge_topic_response_t t = {0};
    kc_share_acknowledge_response_partition_data_t d = {0};
    d.partition_index = 0;
    d.error_code = code;
    d.error_message = msg ? kc_str(msg) : KC_STR_NULL;
    t.topic_id.b[15] = 1;
    t.partitions.count = 1;
    t.partitions.items = &d;
    m.responses.count = 1;
    m.responses.items = &t;
    m.acquisition_lock_timeout_ms = lock_ms;
    kc_share_session_ack_answer(&f->s, &m, now, &f->h);
}

static void session_epochs_and_acks(void **state)
{
    (void)state;
    fx_t f;
    fx_open(&f);
    kc_share_fetch_request_t q;
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_ERR_AGAIN); /* nothing */
    assert_int_equal(kc_share_session_want(&f.s, &f.p0, true, &f.e), KC_OK);
    assert_int_equal(kc_share_session_want(&f.s, &f.p1, true, &f.e), KC_OK);

    /* epoch 0: both partitions, no acknowledgements even when some are pending (an offset the
     * answer below does not acquire: one it acquires again drops its pending acknowledgement,
     * superseded_acks_dropped) */
    assert_int_equal(kc_share_session_ack(&f.s, &f.p0, 5, 5, KC_SHARE_ACK_ACCEPT, &f.e), KC_OK);
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    assert_int_equal(q.share_session_epoch, 0);
    assert_int_equal(q.topics.count, 1);
    assert_int_equal(q.topics.items[0].partitions.count, 2);
    assert_int_equal(q.topics.items[0].partitions.items[0].acknowledgement_batches.count, 0);
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_ERR_AGAIN); /* in flight */

    const kc_share_range_t r[] = {{0, 4, 1}, {6, 9, 1}};
    const int32_t both[] = {0, 1};
    fx_answer(&f, both, 2, r, 2);
    assert_int_equal(f.seen.records, 2);
    assert_int_equal(f.seen.ranges, 4);
    assert_int_equal(f.s.epoch, 1);
    assert_int_equal(f.s.c.acquired, 18);

    /* epoch 1: only p0, which carries the pending acknowledgement; nothing forgotten */
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    assert_int_equal(q.share_session_epoch, 1);
    assert_int_equal(q.topics.count, 1);
    assert_int_equal(q.topics.items[0].partitions.count, 1);
    assert_int_equal(q.topics.items[0].partitions.items[0].partition_index, 0);
    assert_int_equal(q.topics.items[0].partitions.items[0].acknowledgement_batches.count, 1);
    assert_int_equal(q.forgotten_topics_data.count, 0);
    const int32_t zero[] = {0};
    fx_answer(&f, zero, 1, NULL, 0);
    assert_int_equal(f.seen.acked, 1);
    assert_int_equal(f.seen.acked_first, 5);
    assert_int_equal(f.seen.acked_code, 0);
    assert_int_equal(f.s.c.acked[KC_SHARE_ACK_ACCEPT], 1);
    assert_int_equal(f.s.epoch, 2);

    /* p1 no longer wanted: forgotten at epoch 2; an answer naming it afterwards is refused */
    assert_int_equal(kc_share_session_want(&f.s, &f.p1, false, &f.e), KC_OK);
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    assert_int_equal(q.topics.count, 0);
    assert_int_equal(q.forgotten_topics_data.count, 1);
    assert_int_equal(q.forgotten_topics_data.items[0].partitions.items[0], 1);
    const int32_t one[] = {1};
    fx_answer(&f, one, 1, r, 2);
    assert_int_equal(f.seen.errors, 1);
    assert_non_null(strstr(f.seen.last_error, "not asked for"));
    assert_int_equal(f.seen.records, 2); /* nothing delivered of it */

    /* bad ranges: refused, nothing delivered, the session goes on */
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    const kc_share_range_t bad[] = {{0, 4, 1}, {3, 9, 1}};
    fx_answer(&f, zero, 1, bad, 2);
    assert_int_equal(f.seen.errors, 2);
    assert_non_null(strstr(f.seen.last_error, "overlap"));
    assert_int_equal(f.seen.records, 2);
    assert_int_equal(f.s.c.bad_answers, 2);
    const kc_share_range_t far[] = {{8, 20, 1}};
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    fx_answer(&f, zero, 1, far, 1);
    assert_non_null(strstr(f.seen.last_error, "outside"));

    /* the session's epoch refused: reset to 0, the acknowledgement in flight reported with it */
    assert_int_equal(kc_share_session_ack(&f.s, &f.p0, 5, 5, KC_SHARE_ACK_RELEASE, &f.e), KC_OK);
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    assert_int_equal(q.topics.items[0].partitions.items[0].acknowledgement_batches.count, 1);
    kc_share_fetch_response_t err;
    kc_share_fetch_response_init(&err);
    err.error_code = KC_KAFKA_INVALID_SHARE_SESSION_EPOCH;
    kc_share_session_fetch_answer(&f.s, &err, &f.a, &f.h);
    assert_int_equal(f.seen.resets, 1);
    assert_int_equal(f.seen.acked, 2);
    assert_int_equal(f.seen.acked_code, KC_KAFKA_INVALID_SHARE_SESSION_EPOCH);
    assert_int_equal(f.s.c.ack_errors, 1);
    assert_int_equal(f.s.epoch, 0);
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    assert_int_equal(q.share_session_epoch, 0);
    assert_int_equal(q.topics.items[0].partitions.count, 1); /* p0 again, whole */

    /* no answer at all: the same, code -1 */
    kc_share_session_failed(&f.s, &f.e, &f.h);
    assert_int_equal(f.seen.resets, 2);

    fx_close(&f);
}

/* A partition no longer wanted while the request that named it is in flight: the broker put it
 * in the session all the same, so its records in that answer are handed over (the caller
 * releases them) and the next request forgets it; before, the session thought the broker did
 * not hold it, never forgot it, and refused every later answer naming it, whose acquired
 * records then stayed locked until their lock ran out, again and again. */
/* The acquire mode and record count a ShareFetch asks with (share.acquire.mode, KIP-1206): on
 * the wire from v2, where the broker reads it back. */
static void acquire_mode_sent(void **state)
{
    (void)state;
    fx_t f;
    fx_open(&f);
    assert_int_equal(kc_share_session_want(&f.s, &f.p0, true, &f.e), KC_OK);
    const kc_share_fetch_params_t strict = {"g",     "m", 500, 1,
                                            1 << 20, 7,   7,   KC_SHARE_ACQUIRE_RECORD_LIMIT};
    kc_share_fetch_request_t q;
    assert_int_equal(kc_share_session_fetch(&f.s, &strict, &q, &f.e), KC_OK);
    assert_int_equal(q.max_records, 7);
    assert_int_equal(q.batch_size, 7);
    assert_int_equal(q.share_acquire_mode, KC_SHARE_ACQUIRE_RECORD_LIMIT);
    kc_wbuf_t w = {0};
    assert_int_equal(kc_share_fetch_request_encode(&q, 2, &w, &f.e), KC_OK);
    kc_rbuf_t r = kc_rbuf(w.data, w.len);
    kc_share_fetch_request_t back;
    kc_arena_t a = {0};
    assert_int_equal(kc_share_fetch_request_decode(&back, 2, &r, &a, &f.e), KC_OK);
    assert_int_equal(back.share_acquire_mode, KC_SHARE_ACQUIRE_RECORD_LIMIT);
    assert_int_equal(back.max_records, 7);
    kc_arena_free(&a);
    kc_wbuf_free(&w);
    fx_close(&f);
}

static void unwanted_in_flight_is_forgotten(void **state)
{
    (void)state;
    fx_t f;
    fx_open(&f);
    kc_share_fetch_request_t q;
    assert_int_equal(kc_share_session_want(&f.s, &f.p0, true, &f.e), KC_OK);
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK); /* epoch 0: p0 */
    const int32_t zero[] = {0}, one[] = {1};
    fx_answer(&f, zero, 1, NULL, 0);
    /* epoch 1 names p1, which is unwanted before the answer comes */
    assert_int_equal(kc_share_session_want(&f.s, &f.p1, true, &f.e), KC_OK);
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    assert_int_equal(q.topics.items[0].partitions.count, 1);
    assert_int_equal(q.topics.items[0].partitions.items[0].partition_index, 1);
    assert_int_equal(kc_share_session_want(&f.s, &f.p1, false, &f.e), KC_OK);
    const kc_share_range_t r[] = {{0, 9, 1}};
    fx_answer(&f, one, 1, r, 1);
    assert_int_equal(f.seen.errors, 0);
    assert_int_equal(f.seen.records, 1);
    /* the next request forgets it */
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    assert_int_equal(q.forgotten_topics_data.count, 1);
    assert_int_equal(q.forgotten_topics_data.items[0].partitions.items[0], 1);
    fx_answer(&f, zero, 1, NULL, 0);
    /* p0, known, unwanted while a request that neither names nor forgets it is in flight: the
     * answer does not make it forgotten, the request after it forgets it */
    assert_int_equal(kc_share_session_want(&f.s, &f.p1, true, &f.e), KC_OK);
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    assert_int_equal(q.forgotten_topics_data.count, 0);
    assert_int_equal(kc_share_session_want(&f.s, &f.p0, false, &f.e), KC_OK);
    fx_answer(&f, one, 1, NULL, 0);
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    assert_int_equal(q.forgotten_topics_data.count, 1);
    assert_int_equal(q.forgotten_topics_data.items[0].partitions.items[0], 0);
    fx_answer(&f, one, 1, NULL, 0);
    assert_int_equal(f.seen.errors, 0);
    fx_close(&f);
}

static void session_acknowledge_and_close(void **state)
{
    (void)state;
    fx_t f;
    fx_open(&f);
    kc_share_acknowledge_request_t q;
    assert_int_equal(kc_share_session_want(&f.s, &f.p0, true, &f.e), KC_OK);
    /* no session yet: nothing can be acknowledged or closed */
    assert_int_equal(kc_share_session_acknowledge(&f.s, "g", "m", true, &q, &f.e), KC_ERR_AGAIN);
    kc_share_fetch_request_t fq;
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &fq, &f.e), KC_OK);
    const kc_share_range_t r[] = {{0, 9, 1}};
    const int32_t zero[] = {0};
    fx_answer(&f, zero, 1, r, 1);
    for (int64_t o = 0; o < 10; o++)
        assert_int_equal(kc_share_session_ack(&f.s, &f.p0, o, o,
                                              o == 9 ? KC_SHARE_ACK_REJECT : KC_SHARE_ACK_ACCEPT,
                                              &f.e),
                         KC_OK);
    assert_int_equal(kc_share_session_acknowledge(&f.s, "g", "m", true, &q, &f.e), KC_OK);
    assert_int_equal(q.share_session_epoch, -1);
    assert_int_equal(q.topics.count, 1);
    assert_int_equal(q.topics.items[0].partitions.items[0].acknowledgement_batches.count, 1);
    assert_int_equal(q.topics.items[0]
                         .partitions.items[0]
                         .acknowledgement_batches.items[0]
                         .acknowledge_types.count,
                     10);
    ack_answer(&f, KC_KAFKA_INVALID_RECORD_STATE, "lock expired", 0, 0);
    assert_int_equal(f.seen.acked, 1);
    assert_int_equal(f.seen.acked_code, KC_KAFKA_INVALID_RECORD_STATE);
    assert_int_equal(f.s.c.ack_errors, 10);
    assert_true(f.s.closed);
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &fq, &f.e), KC_ERR_AGAIN);
    fx_close(&f);
}

/* Verdicts on records of a partition that left the session before they came: the partition is
 * forgotten at once (the broker stops acquiring its records for this member) but keeps its
 * entry while records are held, so the verdicts are queued and leave in a ShareAcknowledge,
 * never in a ShareFetch (which would put it back in the broker's session); the entry goes once
 * they are answered. Before, the entry went with the forget and each verdict was refused
 * ("not fetched"), leaving its records locked to this member until it closed. */
static void verdicts_after_forget(void **state)
{
    (void)state;
    fx_t f;
    fx_open(&f);
    kc_share_fetch_request_t q;
    const kc_share_range_t r[] = {{0, 9, 1}};
    const int32_t zero[] = {0}, one[] = {1};
    assert_int_equal(kc_share_session_want(&f.s, &f.p0, true, &f.e), KC_OK);
    assert_int_equal(kc_share_session_want(&f.s, &f.p1, true, &f.e), KC_OK);
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK); /* epoch 0 */
    fx_answer(&f, zero, 1, r, 1);
    /* all ten handed to the application */
    assert_int_equal(kc_share_session_hold(&f.s, &f.p0, 0, 9, 1, KC_SHARE_NO_DEADLINE, &f.e),
                     KC_OK);
    assert_int_equal(kc_share_session_held(&f.s, &f.p0), 10);
    assert_int_equal(kc_share_session_held(&f.s, &f.p1), 0);

    /* p0 revoked while its records are being processed: forgotten by the next ShareFetch */
    assert_int_equal(kc_share_session_want(&f.s, &f.p0, false, &f.e), KC_OK);
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    assert_int_equal(q.topics.count, 0);
    assert_int_equal(q.forgotten_topics_data.count, 1);
    assert_int_equal(q.forgotten_topics_data.items[0].partitions.items[0], 0);
    fx_answer(&f, one, 1, NULL, 0);
    assert_int_equal(f.seen.errors, 0);
    assert_int_equal(f.s.n, 2); /* p0 kept: its records are held */

    /* the verdicts come: queued, and a ShareAcknowledge goes before the next ShareFetch */
    assert_int_equal(kc_share_session_verdict(&f.s, &f.p0, 0, 8, 1, KC_SHARE_ACK_ACCEPT, 0, &f.e),
                     KC_OK);
    assert_int_equal(kc_share_session_held(&f.s, &f.p0), 1);
    assert_int_equal(kc_share_session_verdict(&f.s, &f.p0, 9, 9, 1, KC_SHARE_ACK_REJECT, 0, &f.e),
                     KC_OK);
    assert_int_equal(kc_share_session_held(&f.s, &f.p0), 0);
    uint64_t mark = kc_share_session_ack_mark(&f.s); /* a commit of acknowledgements waits on it */
    assert_false(kc_share_session_answered(&f.s, mark));
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_ERR_AGAIN);
    assert_non_null(strstr(f.e.msg, "acknowledgements go first"));
    kc_share_acknowledge_request_t aq;
    assert_int_equal(kc_share_session_acknowledge(&f.s, "g", "m", false, &aq, &f.e), KC_OK);
    assert_int_equal(aq.share_session_epoch, 2);
    assert_int_equal(aq.topics.count, 1);
    assert_int_equal(aq.topics.items[0].partitions.count, 1);
    assert_int_equal(aq.topics.items[0].partitions.items[0].partition_index, 0);
    assert_int_equal(aq.topics.items[0].partitions.items[0].acknowledgement_batches.count, 1);
    assert_false(kc_share_session_answered(&f.s, mark)); /* in flight */
    ack_answer(&f, 0, NULL, 0, 0);
    assert_true(kc_share_session_answered(&f.s, mark));
    assert_int_equal(f.seen.acked, 1);
    assert_int_equal(f.seen.acked_code, 0);
    assert_int_equal(f.s.c.acked[KC_SHARE_ACK_ACCEPT], 9);
    assert_int_equal(f.s.c.acked[KC_SHARE_ACK_REJECT], 1);
    assert_int_equal(f.s.n, 1); /* p0 gone: nothing held, nothing owed */
    assert_int_equal(f.s.epoch, 3);

    /* the fetch goes on with p1 only, and never names p0 */
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    assert_int_equal(q.topics.count, 0);
    assert_int_equal(q.forgotten_topics_data.count, 0);
    fx_close(&f);
}

/* A verdict on a partition that is known to the broker but no longer wanted rides a
 * ShareAcknowledge too (a ShareFetch naming it would acquire more of its records). */
static void unwanted_known_acks_by_acknowledge(void **state)
{
    (void)state;
    fx_t f;
    fx_open(&f);
    kc_share_fetch_request_t q;
    const kc_share_range_t r[] = {{0, 9, 1}};
    const int32_t both[] = {0, 1};
    assert_int_equal(kc_share_session_want(&f.s, &f.p0, true, &f.e), KC_OK);
    assert_int_equal(kc_share_session_want(&f.s, &f.p1, true, &f.e), KC_OK);
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    fx_answer(&f, both, 2, r, 1);
    assert_int_equal(kc_share_session_ack(&f.s, &f.p0, 0, 9, KC_SHARE_ACK_ACCEPT, &f.e), KC_OK);
    assert_int_equal(kc_share_session_want(&f.s, &f.p0, false, &f.e), KC_OK);
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_ERR_AGAIN);
    kc_share_acknowledge_request_t aq;
    assert_int_equal(kc_share_session_acknowledge(&f.s, "g", "m", false, &aq, &f.e), KC_OK);
    assert_int_equal(aq.topics.items[0].partitions.items[0].partition_index, 0);
    uint64_t mark = kc_share_session_ack_mark(&f.s);
    kc_share_session_failed(&f.s, &f.e, &f.h); /* no answer: reported lost, the session reopens */
    assert_true(kc_share_session_answered(&f.s, mark)); /* answered: lost */
    assert_int_equal(f.seen.acked, 1);
    assert_int_equal(f.seen.acked_code, -1);
    assert_int_equal(f.s.epoch, 0);
    /* epoch 0 names only the wanted partition, and carries no acknowledgement */
    assert_int_equal(kc_share_session_ack(&f.s, &f.p1, 0, 0, KC_SHARE_ACK_ACCEPT, &f.e), KC_OK);
    mark = kc_share_session_ack_mark(&f.s);
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    assert_int_equal(q.topics.items[0].partitions.count, 1);
    assert_int_equal(q.topics.items[0].partitions.items[0].partition_index, 1);
    assert_int_equal(q.topics.items[0].partitions.items[0].acknowledgement_batches.count, 0);
    const int32_t one[] = {1};
    fx_answer(&f, one, 1, NULL, 0);
    assert_false(kc_share_session_answered(&f.s, mark)); /* waits for the next request */
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    assert_int_equal(q.topics.items[0].partitions.items[0].acknowledgement_batches.count, 1);
    fx_answer(&f, one, 1, NULL, 0);
    assert_true(kc_share_session_answered(&f.s, mark));
    fx_close(&f);
}

/* A reset session that wants nothing cannot open itself again, and ShareAcknowledge needs it
 * open: its acknowledgements are reported lost and dropped, so a commit waiting on them gets an
 * answer instead of its timeout. */
static void stranded_acks_reported(void **state)
{
    (void)state;
    fx_t f;
    fx_open(&f);
    kc_share_fetch_request_t q;
    kc_share_acknowledge_request_t aq;
    const kc_share_range_t r[] = {{0, 9, 1}};
    const int32_t zero[] = {0};
    assert_int_equal(kc_share_session_want(&f.s, &f.p0, true, &f.e), KC_OK);
    assert_false(kc_share_session_strand(&f.s, "x", &f.h)); /* nothing to strand */
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    fx_answer(&f, zero, 1, r, 1);
    assert_int_equal(kc_share_session_hold(&f.s, &f.p0, 0, 9, 1, KC_SHARE_NO_DEADLINE, &f.e),
                     KC_OK);
    assert_int_equal(kc_share_session_want(&f.s, &f.p0, false, &f.e), KC_OK);
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK); /* forgets p0 */
    kc_share_session_failed(&f.s, &f.e, &f.h); /* no answer: reset to epoch 0 */
    assert_int_equal(f.s.epoch, 0);
    assert_int_equal(kc_share_session_verdict(&f.s, &f.p0, 0, 9, 1, KC_SHARE_ACK_ACCEPT, 0, &f.e),
                     KC_OK);
    uint64_t mark = kc_share_session_ack_mark(&f.s);
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_ERR_AGAIN);
    assert_int_equal(kc_share_session_acknowledge(&f.s, "g", "m", false, &aq, &f.e), KC_ERR_AGAIN);
    assert_true(kc_share_session_strand(&f.s, "stranded", &f.h));
    assert_int_equal(f.seen.acked, 1);
    assert_int_equal(f.seen.acked_first, 0);
    assert_int_equal(f.seen.acked_code, -1);
    assert_int_equal(f.s.c.ack_lost, 10);
    assert_true(kc_share_session_answered(&f.s, mark));
    assert_int_equal(f.s.n, 0);
    assert_false(kc_share_session_strand(&f.s, "x", &f.h));
    fx_close(&f);
}

static void epoch_wraps(void **state)
{
    (void)state;
    assert_int_equal(kc_share_next_epoch(0), 1);
    assert_int_equal(kc_share_next_epoch(41), 42);
    assert_int_equal(kc_share_next_epoch(INT32_MAX), 1);
}

/* A verdict names its delivery: one given after that delivery's lock ran out, or after the
 * broker handed its records out again, is refused and never queued (share/held.h); the answer's
 * lock length reaches the records handler, which sets the deadline. */
static void late_verdicts_not_sent(void **state)
{
    (void)state;
    fx_t f;
    fx_open(&f);
    kc_share_fetch_request_t q;
    const kc_share_range_t r[] = {{0, 9, 1}};
    const int32_t zero[] = {0};
    assert_int_equal(kc_share_session_want(&f.s, &f.p0, true, &f.e), KC_OK);
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    kc_share_fetch_response_t *m = (kc_share_fetch_response_t *)mk(&f.x, zero, 1, r, 1);
    m->acquisition_lock_timeout_ms = 10000;
    kc_share_session_fetch_answer(&f.s, m, &f.a, &f.h);
    tb_free(&f.x.batch);
    assert_int_equal(f.seen.lock_ms, 10000);

    /* the lock ran out before the verdict */
    assert_int_equal(kc_share_session_hold(&f.s, &f.p0, 0, 9, 1, 1000 + 10000, &f.e), KC_OK);
    assert_int_equal(
        kc_share_session_verdict(&f.s, &f.p0, 0, 9, 1, KC_SHARE_ACK_ACCEPT, 11000, &f.e),
        KC_ERR_STATE);
    assert_non_null(strstr(f.e.msg, "lock of delivery 1 ran out"));
    assert_false(kc_share_session_has_acks(&f.s));
    assert_int_equal(kc_share_session_held(&f.s, &f.p0), 0);
    assert_int_equal(f.s.c.ack_late, 10);

    /* handed back to this member (delivery 2) while the callback of delivery 1 still ran */
    assert_int_equal(kc_share_session_hold(&f.s, &f.p0, 0, 9, 1, 30000, &f.e), KC_OK);
    assert_int_equal(kc_share_session_hold(&f.s, &f.p0, 0, 9, 2, 40000, &f.e), KC_OK);
    assert_int_equal(kc_share_session_held(&f.s, &f.p0), 10);
    assert_int_equal(
        kc_share_session_verdict(&f.s, &f.p0, 0, 9, 2, KC_SHARE_ACK_RELEASE, 20000, &f.e), KC_OK);
    assert_int_equal(
        kc_share_session_verdict(&f.s, &f.p0, 0, 9, 1, KC_SHARE_ACK_ACCEPT, 20001, &f.e),
        KC_ERR_STATE);
    assert_non_null(strstr(f.e.msg, "handed out again"));
    assert_int_equal(f.s.c.ack_late, 20);
    /* what leaves is delivery 2's RELEASE alone */
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    const kc_share_fetch_request_fetch_partition_t *fp = &q.topics.items[0].partitions.items[0];
    assert_int_equal(fp->acknowledgement_batches.count, 1);
    assert_int_equal(fp->acknowledgement_batches.items[0].first_offset, 0);
    assert_int_equal(fp->acknowledgement_batches.items[0].last_offset, 9);
    assert_int_equal(fp->acknowledgement_batches.items[0].acknowledge_types.items[0],
                     KC_SHARE_ACK_RELEASE);
    fx_close(&f);
}

/* A verdict queued in time for delivery 1, whose lock had run out at the broker all the same
 * (it started before the answer arrived), and an answer that acquires those records again as
 * delivery 2: the queued acknowledgements of the re-acquired offsets are dropped and reported
 * (KC_SHARE_ACK_UNSENT), never sent to count for delivery 2; the rest still leave. */
static void superseded_acks_dropped(void **state)
{
    (void)state;
    fx_t f;
    fx_open(&f);
    kc_share_fetch_request_t q;
    const kc_share_range_t first[] = {{0, 9, 1}}, again[] = {{3, 5, 2}};
    const int32_t zero[] = {0};
    assert_int_equal(kc_share_session_want(&f.s, &f.p0, true, &f.e), KC_OK);
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    fx_answer(&f, zero, 1, first, 1);
    assert_int_equal(kc_share_session_hold(&f.s, &f.p0, 0, 9, 1, 1000, &f.e), KC_OK);
    /* the next ShareFetch leaves before the verdict comes (in time by the member's clock) */
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    assert_int_equal(kc_share_session_verdict(&f.s, &f.p0, 0, 9, 1, KC_SHARE_ACK_ACCEPT, 999, &f.e),
                     KC_OK);
    fx_answer(&f, zero, 1, again, 1); /* 3..5 are back, as delivery 2 */
    assert_int_equal(f.seen.acked, 1);
    assert_int_equal(f.seen.acked_code, KC_SHARE_ACK_UNSENT);
    assert_int_equal(f.seen.acked_first, 3);
    assert_int_equal(f.s.c.ack_late, 3);
    /* what leaves: 0..2 and 6..9 accepted */
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    const kc_share_fetch_request_fetch_partition_t *fp = &q.topics.items[0].partitions.items[0];
    assert_int_equal(fp->acknowledgement_batches.count, 2);
    assert_int_equal(fp->acknowledgement_batches.items[0].first_offset, 0);
    assert_int_equal(fp->acknowledgement_batches.items[0].last_offset, 2);
    assert_int_equal(fp->acknowledgement_batches.items[1].first_offset, 6);
    assert_int_equal(fp->acknowledgement_batches.items[1].last_offset, 9);
    fx_close(&f);
}

/* p0's records 0..9 acquired (delivery 1, a 10 s lock told) and handed out, their lock surely
 * out at 11000: where the renewal tests start. */
static void fx_hold_ten(fx_t *f)
{
    kc_share_fetch_request_t q;
    const kc_share_range_t r[] = {{0, 9, 1}};
    const int32_t zero[] = {0};
    assert_int_equal(kc_share_session_want(&f->s, &f->p0, true, &f->e), KC_OK);
    assert_int_equal(kc_share_session_fetch(&f->s, &params, &q, &f->e), KC_OK);
    kc_share_fetch_response_t *m = (kc_share_fetch_response_t *)mk(&f->x, zero, 1, r, 1);
    m->acquisition_lock_timeout_ms = 10000;
    kc_share_session_fetch_answer(&f->s, m, &f->a, &f->h);
    tb_free(&f->x.batch);
    assert_int_equal(kc_share_session_hold(&f->s, &f->p0, 0, 9, 1, 11000, &f->e), KC_OK);
}

/* Lock renewal (KIP-1222): a renewal of held records leaves in a ShareAcknowledge with
 * IsRenewAck (never with a ShareFetch, which then could fetch nothing), the broker's answer moves
 * the held records' deadline, so a verdict after the old deadline is sent; a renewal of records
 * whose lock ran out is refused; a verdict replaces a renewal still pending; a refused renewal
 * leaves the deadline alone. */
static void renewals(void **state)
{
    (void)state;
    fx_t f;
    fx_open(&f);
    kc_share_fetch_request_t q;
    kc_share_acknowledge_request_t aq;
    const int32_t zero[] = {0};
    fx_hold_ten(&f);

    /* after the deadline: refused, nothing queued, still held (the verdict reports it) */
    assert_int_equal(kc_share_session_renew(&f.s, &f.p0, 0, 9, 1, 11000, &f.e), KC_ERR_STATE);
    assert_non_null(strstr(f.e.msg, "ran out before the renewal"));
    assert_false(kc_share_session_has_acks(&f.s));
    /* another delivery's records: refused */
    assert_int_equal(kc_share_session_renew(&f.s, &f.p0, 0, 9, 2, 5000, &f.e), KC_ERR_STATE);

    /* in time: queued; the fetch waits, a ShareAcknowledge with IsRenewAck carries it */
    assert_int_equal(kc_share_session_renew(&f.s, &f.p0, 3, 9, 1, 5000, &f.e), KC_OK);
    assert_true(kc_share_session_has_renewals(&f.s));
    assert_int_equal(kc_share_session_held(&f.s, &f.p0), 10); /* a renewal is no verdict */
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_ERR_AGAIN);
    assert_int_equal(kc_share_session_acknowledge(&f.s, "g", "m", false, &aq, &f.e), KC_OK);
    assert_true(aq.is_renew_ack);
    const kc_share_acknowledge_request_acknowledge_partition_t *ap =
        &aq.topics.items[0].partitions.items[0];
    assert_int_equal(ap->acknowledgement_batches.count, 1);
    assert_int_equal(ap->acknowledgement_batches.items[0].first_offset, 3);
    assert_int_equal(ap->acknowledgement_batches.items[0].last_offset, 9);
    assert_int_equal(ap->acknowledgement_batches.items[0].acknowledge_types.items[0],
                     KC_SHARE_ACK_RENEW);
    ack_answer(&f, 0, NULL, 12000, 9000); /* renewed at 9000 for 12 s */
    assert_false(kc_share_session_has_renewals(&f.s));
    assert_int_equal(f.s.c.renewed, 7);
    assert_int_equal(kc_share_session_deadline(&f.s, &f.p0, 3, 1), 21000);
    assert_int_equal(kc_share_session_deadline(&f.s, &f.p0, 2, 1), 11000); /* not renewed */
    assert_int_equal(kc_share_session_deadline(&f.s, &f.p0, 3, 2), -1);

    /* past the old deadline, before the new one: 3..9 are sent, 0..2 refused */
    assert_int_equal(
        kc_share_session_verdict(&f.s, &f.p0, 0, 2, 1, KC_SHARE_ACK_ACCEPT, 15000, &f.e),
        KC_ERR_STATE);
    assert_int_equal(
        kc_share_session_verdict(&f.s, &f.p0, 3, 9, 1, KC_SHARE_ACK_ACCEPT, 15000, &f.e), KC_OK);
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    assert_false(q.is_renew_ack);
    const kc_share_fetch_request_fetch_partition_t *fp = &q.topics.items[0].partitions.items[0];
    assert_int_equal(fp->acknowledgement_batches.count, 1);
    assert_int_equal(fp->acknowledgement_batches.items[0].first_offset, 3);
    assert_int_equal(fp->acknowledgement_batches.items[0].acknowledge_types.items[0],
                     KC_SHARE_ACK_ACCEPT);
    fx_answer(&f, zero, 1, NULL, 0);

    /* a verdict on records whose renewal has not left yet replaces it */
    assert_int_equal(kc_share_session_hold(&f.s, &f.p0, 10, 19, 1, 30000, &f.e), KC_OK);
    assert_int_equal(kc_share_session_renew(&f.s, &f.p0, 10, 19, 1, 20000, &f.e), KC_OK);
    assert_int_equal(kc_share_session_renew(&f.s, &f.p0, 12, 19, 1, 20001, &f.e), KC_OK);
    assert_int_equal(
        kc_share_session_verdict(&f.s, &f.p0, 10, 14, 1, KC_SHARE_ACK_REJECT, 20002, &f.e), KC_OK);
    assert_int_equal(kc_share_session_acknowledge(&f.s, "g", "m", false, &aq, &f.e), KC_OK);
    assert_true(aq.is_renew_ack);
    ap = &aq.topics.items[0].partitions.items[0];
    assert_int_equal(ap->acknowledgement_batches.count, 1); /* one run, a type per offset */
    assert_int_equal(ap->acknowledgement_batches.items[0].first_offset, 10);
    assert_int_equal(ap->acknowledgement_batches.items[0].last_offset, 19);
    assert_int_equal(ap->acknowledgement_batches.items[0].acknowledge_types.count, 10);
    assert_int_equal(ap->acknowledgement_batches.items[0].acknowledge_types.items[4],
                     KC_SHARE_ACK_REJECT);
    assert_int_equal(ap->acknowledgement_batches.items[0].acknowledge_types.items[5],
                     KC_SHARE_ACK_RENEW);
    /* refused: the deadline stays */
    ack_answer(&f, KC_KAFKA_INVALID_RECORD_STATE, NULL, 12000, 21000);
    assert_int_equal(kc_share_session_deadline(&f.s, &f.p0, 15, 1), 30000);
    assert_int_equal(f.s.c.renewed, 7);
    fx_close(&f);
}

/* Renewals that can no longer help are dropped, never sent: of records that lapsed, at close
 * (which releases what is held), and when the session is reset (a new one must be opened before
 * anything is acknowledged: they are reported lost, so their caller hears at once); and the
 * answer to a renewal beside verdicts (one type per offset) keeps one hold, not one per offset. */
static void renewals_dropped(void **state)
{
    (void)state;
    fx_t f;
    fx_open(&f);
    kc_share_fetch_request_t q;
    kc_share_acknowledge_request_t aq;
    const int32_t zero[] = {0};
    fx_hold_ten(&f);

    /* lapsed: its renewal goes with it */
    assert_int_equal(kc_share_session_renew(&f.s, &f.p0, 0, 4, 1, 5000, &f.e), KC_OK);
    kc_share_session_lapsed(&f.s, &f.p0, 0, 4, 1);
    assert_false(kc_share_session_has_renewals(&f.s));

    /* a renewal beside a verdict: one batch with a type per offset; its answer renews 7..9 as
     * one hold */
    assert_int_equal(
        kc_share_session_verdict(&f.s, &f.p0, 5, 6, 1, KC_SHARE_ACK_ACCEPT, 5000, &f.e), KC_OK);
    assert_int_equal(kc_share_session_renew(&f.s, &f.p0, 7, 9, 1, 5000, &f.e), KC_OK);
    assert_int_equal(kc_share_session_acknowledge(&f.s, "g", "m", false, &aq, &f.e), KC_OK);
    assert_true(aq.is_renew_ack);
    assert_int_equal(aq.topics.items[0].partitions.items[0].acknowledgement_batches.count, 1);
    assert_int_equal(aq.topics.items[0]
                         .partitions.items[0]
                         .acknowledgement_batches.items[0]
                         .acknowledge_types.count,
                     5);
    ack_answer(&f, 0, NULL, 12000, 6000);
    assert_int_equal(f.s.parts[0].held.n, 1);
    assert_int_equal(kc_share_session_deadline(&f.s, &f.p0, 7, 1), 18000);
    assert_int_equal(kc_share_session_deadline(&f.s, &f.p0, 9, 1), 18000);
    assert_int_equal(f.s.c.renewed, 3);

    /* reset with a renewal queued behind the request in flight: reported lost, not kept for a
     * session that must first be opened again */
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK);
    assert_int_equal(kc_share_session_renew(&f.s, &f.p0, 7, 9, 1, 7000, &f.e), KC_OK);
    uint64_t mark = kc_share_session_ack_mark(&f.s);
    size_t acked = f.seen.acked;
    kc_error_t why;
    kc_fail(&why, KC_ERR_TRANSPORT, "connection lost");
    kc_share_session_failed(&f.s, &why, &f.h);
    assert_false(kc_share_session_has_renewals(&f.s));
    assert_int_equal(f.seen.acked, acked + 1);
    assert_int_equal(f.seen.acked_code, -1);
    assert_int_equal(f.seen.acked_first, 7);
    assert_true(kc_share_session_answered(&f.s, mark)); /* a commit waiting on it ends */
    assert_int_equal(kc_share_session_deadline(&f.s, &f.p0, 7, 1), 18000); /* still held */

    /* close: a renewal pending is not sent (nor does it make the close a v2 request) */
    assert_int_equal(kc_share_session_fetch(&f.s, &params, &q, &f.e), KC_OK); /* opens again */
    fx_answer(&f, zero, 1, NULL, 0);
    assert_int_equal(kc_share_session_renew(&f.s, &f.p0, 7, 9, 1, 8000, &f.e), KC_OK);
    assert_int_equal(kc_share_session_acknowledge(&f.s, "g", "m", true, &aq, &f.e), KC_OK);
    assert_int_equal(aq.share_session_epoch, KC_SHARE_EPOCH_CLOSE);
    assert_false(aq.is_renew_ack);
    assert_int_equal(aq.topics.count, 0);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(acquired_checks),
        cmocka_unit_test(ack_batches),
        cmocka_unit_test(acquire_mode_sent),
        cmocka_unit_test(ack_huge_range),
        cmocka_unit_test(session_epochs_and_acks),
        cmocka_unit_test(unwanted_in_flight_is_forgotten),
        cmocka_unit_test(session_acknowledge_and_close),
        cmocka_unit_test(verdicts_after_forget),
        cmocka_unit_test(unwanted_known_acks_by_acknowledge),
        cmocka_unit_test(stranded_acks_reported),
        cmocka_unit_test(late_verdicts_not_sent),
        cmocka_unit_test(superseded_acks_dropped),
        cmocka_unit_test(renewals),
        cmocka_unit_test(renewals_dropped),
        cmocka_unit_test(epoch_wraps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
