/* engine/fetch/session against a model of the broker's KIP-227 session cache, under random changes,
 * lost requests, lost responses and evictions: after every successful response the broker's
 * session must hold exactly the wanted (unpaused) partitions with the fields we last chose. A
 * desynchronised session (the bug KIP-227 clients get wrong) shows up here as a mismatch. */
#include "kc_test.h"

#include <stdlib.h>
#include <string.h>

#include "fetch/session.h"

#define NPART 12

/* The broker side: one session per client, as FetchSession/FetchManager behave. */
typedef struct broker {
    int32_t id, next_id, expect_epoch;
    kc_session_part_t held[NPART * 2];
    size_t n;
} broker_t;

static kc_session_part_t *bfind(broker_t *b, const kc_tp_t *tp)
{
    for (size_t i = 0; i < b->n; i++)
        if (kc_tp_cmp(&b->held[i].tp, tp) == 0)
            return &b->held[i];
    return NULL;
}

static void bput(broker_t *b, const kc_session_part_t *p)
{
    kc_session_part_t *h = bfind(b, &p->tp);
    if (!h)
        h = &b->held[b->n++];
    *h = *p;
}

static void bdel(broker_t *b, const kc_tp_t *tp)
{
    kc_session_part_t *h = bfind(b, tp);
    if (h)
        *h = b->held[--b->n];
}

/* Applies a request; returns the response. */
static kc_session_resp_t broker_handle(broker_t *b, const kc_session_req_t *r)
{
    kc_session_resp_t resp = {0, 0};
    if (r->epoch == -1) {
        if (r->session_id && r->session_id == b->id)
            b->id = 0;
        return resp; /* sessionless or close */
    }
    if (r->epoch == 0) {
        b->id = ++b->next_id; /* (S,0) closes S; either way a new session */
        b->n = 0;
        for (size_t i = 0; i < r->n_parts; i++)
            bput(b, &r->parts[i]);
        b->expect_epoch = 1;
        resp.session_id = b->id;
        return resp;
    }
    if (r->session_id != b->id || b->id == 0) {
        resp.error_code = KC_KAFKA_FETCH_SESSION_ID_NOT_FOUND;
        return resp;
    }
    if (r->epoch != b->expect_epoch) {
        resp.error_code = KC_KAFKA_INVALID_FETCH_SESSION_EPOCH;
        return resp;
    }
    for (size_t i = 0; i < r->n_parts; i++)
        bput(b, &r->parts[i]);
    for (size_t i = 0; i < r->n_forgotten; i++)
        bdel(b, &r->forgotten[i]);
    b->expect_epoch = kc_session_next_epoch(b->expect_epoch);
    resp.session_id = b->id;
    return resp;
}

static void assert_broker_holds(broker_t *b, const kc_session_part_t *w, const uint8_t *in,
                                size_t n)
{
    size_t want = 0;
    for (size_t i = 0; i < n; i++) {
        if (!in[i] || w[i].paused)
            continue;
        want++;
        kc_session_part_t *h = bfind(b, &w[i].tp);
        if (!h)
            fail_msg("broker lacks partition %d", (int)w[i].tp.partition);
        assert_int_equal(h->fetch_offset, w[i].fetch_offset);
        assert_int_equal(h->leader_epoch, w[i].leader_epoch);
        assert_int_equal(h->max_bytes, w[i].max_bytes);
    }
    assert_int_equal(b->n, want);
}

static void random_walk_never_desynchronises(void **state)
{
    (void)state;
    srand(12345);
    broker_t b;
    memset(&b, 0, sizeof b);
    kc_session_t s;
    kc_session_init(&s, 1, 0);
    kc_session_part_t all[NPART];
    uint8_t in[NPART];
    for (int i = 0; i < NPART; i++) {
        memset(&all[i], 0, sizeof all[i]);
        all[i].tp.topic_id[0] = (uint8_t)(i % 3);
        all[i].tp.partition = i;
        all[i].log_start_offset = -1;
        all[i].max_bytes = 1024;
        in[i] = (uint8_t)(i % 2);
    }
    unsigned checks = 0, resets = 0, incremental = 0;
    /* Set when the broker's state moved without the client knowing (eviction, or a request
     * applied whose answer was lost); cleared by the next answer. A reset is legitimate only
     * then: a request lost before the broker saw it must cost nothing. */
    int desync = 0;
    for (int step = 0; step < 20000; step++) {
        int i = rand() % NPART;
        switch (rand() % 8) {
        case 0:
            all[i].fetch_offset += 1 + rand() % 50;
            break; /* consumed */
        case 1:
            all[i].fetch_offset = rand() % 100;
            break; /* seek */
        case 2:
            all[i].paused ^= 1;
            break;
        case 3:
            in[i] ^= 1;
            break; /* assign / unassign */
        case 4:
            all[i].leader_epoch++;
            break;
        case 5:
            all[i].max_bytes = 512 << (rand() % 4);
            break;
        default:
            break; /* nothing changed */
        }
        kc_session_part_t w[NPART], snap[NPART];
        uint8_t snap_in[NPART];
        size_t n = 0;
        for (int k = 0; k < NPART; k++)
            if (in[k])
                w[n++] = all[k];
        memcpy(snap, all, sizeof snap);
        memcpy(snap_in, in, sizeof snap_in);
        kc_session_req_t req;
        kc_error_t e;
        kc_err_t rc = kc_session_build(&s, w, n, step, &req, &e);
        if (rc == KC_ERR_AGAIN)
            continue;
        assert_int_equal(rc, KC_OK);
        if (!req.full)
            incremental++;
        if (rand() % 50 == 0) {
            b.id = 0; /* broker restart / eviction */
            desync = 1;
        }
        int fate = rand() % 10;
        if (fate == 0) { /* lost on the way: the broker never saw it */
            kc_session_on_failure(&s);
            continue;
        }
        kc_session_resp_t resp = broker_handle(&b, &req);
        if (fate == 1) { /* the broker applied it, the answer was lost */
            desync = 1;
            kc_session_on_failure(&s);
            continue;
        }
        kc_session_outcome_t o = kc_session_on_response(&s, &resp, step);
        if (o == KC_SESSION_RESET) {
            if (!desync)
                fail_msg("step %d: reset without a reason (a lost request desynchronised us)",
                         step);
            desync = 0;
            resets++;
            continue;
        }
        assert_int_equal(o, KC_SESSION_OK);
        desync = 0;
        assert_broker_holds(&b, snap, snap_in, NPART);
        checks++;
    }
    /* The walk must have exercised what it claims to. */
    assert_true(checks > 10000);
    assert_true(resets > 100);
    assert_true(incremental > 10000);
    kc_session_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_walk_never_desynchronises),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
