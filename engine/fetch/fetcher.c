/*
 * Fetch on the wire: sends the request kc_fetch_plan_ready() chose for a broker and applies its
 * response. One Fetch in flight per broker (the plan guarantees it); the next one is planned as
 * soon as this response has been handed off, without waiting for other brokers.
 *
 * Records are never copied: each partition's complete batches are one kc_slice_t into the
 * response frame, handed to the sink. The network thread reads only batch headers (61 bytes
 * each) to advance the position to the last batch's last offset + 1; CRCs and decompression
 * are the workers' job. A batch whose header is malformed is reported (topic, partition,
 * offsets) and skipped past its header's last offset, so it never stalls the partition.
 *
 * Owner: network thread.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "batch/batch.h"
#include "batch/compress/compress.h"
#include "engine_int.h"
#include "proto/kafka_errors.h"
#include "versions.h"

/* The message is built here, at the version the connection picked: which form a topic takes
 * (name or id) and whether the rack goes out depend on it. The session request it is built from
 * stays valid meanwhile: the session is pending until this request ends. */
static kc_err_t fetch_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    kc_eng_broker_t *b = opaque;
    kc_engine_t *e = b->e;
    size_t before = out->len;
    kc_error_t err;
    kc_arena_reset(&b->fetch_arena);
    kc_err_t rc = kc_fetch_codec_request(&b->fetch_msg, &b->fetch_req, version, &b->fetch_set,
                                         &e->names, &b->fetch_arena, &err);
    if (rc == KC_OK)
        rc = kc_fetch_request_encode(&b->fetch_msg, version, out, &err);
    if (rc == KC_OK && e->rack && version < KC_FETCH_CODEC_RACK_VERSION && !b->rack_logged) {
        /* KIP-392 degrades to the leader: such a broker never names a read replica. */
        b->rack_logged = 1;
        kc_log(KC_LOG_INFO, "fetch",
               "broker %d speaks Fetch v%d, before KIP-392 (v%d): client.rack is not used "
               "there, partitions are read from their leaders",
               b->id, (int)version, KC_FETCH_CODEC_RACK_VERSION);
    }
    if (rc == KC_OK) {
        uint64_t n = out->len - before;
        b->st.last_request_bytes = n;
        b->st.fetch_request_bytes += n;
        if (!b->st.fetch_request_bytes_min || n < b->st.fetch_request_bytes_min)
            b->st.fetch_request_bytes_min = n;
        if (n > b->st.fetch_request_bytes_max)
            b->st.fetch_request_bytes_max = n;
    } else {
        kc_log(KC_LOG_ERROR, "fetch", "broker %d: encode: %s", b->id, err.msg);
    }
    return rc;
}

/* Consecutive batches of one partition that go to the sink as one slice: bytes [pos, end) of the
 * partition's records, offsets [first, next), the last batch's leader epoch. */
typedef struct run {
    size_t pos, end;
    int64_t first, next;
    int32_t epoch;
} run_t;

/* Hands the run to the sink and moves the position past it; false when the sink refused it (the
 * position stays before it). An empty run is taken. */
static bool run_flush(kc_engine_t *e, kc_eng_broker_t *b, size_t i, kc_buf_t *frame,
                      const uint8_t *base, run_t *r)
{
    if (r->end == r->pos)
        return true;
    kc_partition_t *p = &e->parts[i];
    kc_eng_pinfo_t *in = &e->info[i];
    kc_slice_t s = kc_slice_make(frame, base + r->pos, r->end - r->pos);
    if (e->sink.records(e->sink.opaque, in->user, in->topic, in->partition, b->id, &s, r->first,
                        r->next) != KC_OK) {
        kc_slice_release(&s);
        return false;
    }
    p->position = r->next;
    p->position_epoch = r->epoch;
    b->st.fetch_record_bytes += r->end - r->pos;
    r->pos = r->end;
    return true;
}

/* Hands the complete batches of one partition to the sink, in offset order, as few slices as
 * possible: one for all of them unless an aborted transaction's batch or a malformed header
 * comes between. The position moves past every slice the sink took; the first refusal (a full
 * ring) stops the walk and the next request asks again from there. One slice per partition and
 * response, not one per batch, because a partition's batches can be tiny (a keyed producer over
 * 10,000 partitions writes one or two records per batch) and each slice costs the sink a queue
 * entry that outweighs the records it points at.
 *
 * read_committed: the response's aborted_transactions are applied HERE, on the network thread,
 * because the list belongs to this one response while the sink only sees slices. The filter
 * (io/batch txn.c) reads only batch headers and the markers of control batches (which are never
 * compressed), so no decompression happens on this thread. Aborted batches are never handed to
 * the sink: the position just moves past them. */
static void deliver(kc_engine_t *e, kc_eng_broker_t *b, size_t i, kc_buf_t *frame, kc_bytes_t rec,
                    const kc_fetch_response_aborted_transaction_t *aborted, int32_t n_aborted)
{
    kc_partition_t *p = &e->parts[i];
    kc_eng_pinfo_t *in = &e->info[i];
    if (rec.len <= 0)
        return;
    kc_txn_filter_t txf;
    kc_decode_ctx_t dctx;
    kc_aborted_txn_t *ab = NULL;
    if (e->conf.isolation_level == 1 && n_aborted > 0 &&
        (ab = malloc((size_t)n_aborted * sizeof *ab)) != NULL) {
        for (int32_t k = 0; k < n_aborted; k++)
            ab[k] = (kc_aborted_txn_t){aborted[k].producer_id, aborted[k].first_offset};
        kc_decode_ctx_init(&dctx, 0);
        kc_txn_filter_init(&txf, ab, (size_t)n_aborted, &dctx);
    }
    const uint8_t *base = rec.ptr;
    size_t len = (size_t)rec.len, pos = 0;
    run_t run = {0};
    bool taken = true;
    while (len - pos >= KC_BATCH_HEADER_SIZE) {
        kc_batch_header_t h;
        kc_batch_header_parse(base + pos, &h);
        int64_t last = h.base_offset + (int64_t)h.last_offset_delta;
        if (h.magic != 2 || h.batch_length < KC_BATCH_HEADER_SIZE - KC_BATCH_LOG_OVERHEAD ||
            h.last_offset_delta < 0 || h.base_offset < 0) {
            if (!(taken = run_flush(e, b, i, frame, base, &run)))
                break;
            e->stats.malformed_batches++;
            kc_error_t err;
            if (h.base_offset >= 0 && last >= p->position && h.last_offset_delta >= 0) {
                kc_fail(&err, KC_ERR_MALFORMED,
                        "%s[%d]: malformed batch header at offsets %" PRId64 "..%" PRId64
                        "; skipped",
                        in->topic, in->partition, h.base_offset, last);
                p->position = last + 1;
            } else {
                /* No usable range in the header: skip one offset so the partition moves. */
                kc_fail(&err, KC_ERR_MALFORMED,
                        "%s[%d]: unreadable batch header at offset %" PRId64 "; skipped one offset",
                        in->topic, in->partition, p->position);
                p->position++;
            }
            kc_eng_report(e, i, &err);
            break;
        }
        size_t size = (size_t)KC_BATCH_LOG_OVERHEAD + (size_t)h.batch_length;
        if (size > len - pos)
            break; /* the broker cut the last batch at the size limit: normal */
        if (ab) {
            kc_batch_t bt = {.h = h,
                             .header_ok = true,
                             .data = base + pos,
                             .size = size,
                             .records = base + pos + KC_BATCH_HEADER_SIZE,
                             .records_len = size - KC_BATCH_HEADER_SIZE,
                             .topic = in->topic,
                             .partition = in->partition};
            if (kc_txn_filter_skip(&txf, &bt)) {
                if (!(taken = run_flush(e, b, i, frame, base, &run)))
                    break;
                if (last >= p->position) {
                    p->position = last + 1;
                    e->stats.aborted_skipped++;
                }
                pos += size;
                run.pos = run.end = pos;
                continue;
            }
        }
        /* Where the position will be once the run so far is taken. */
        int64_t at = run.end > run.pos ? run.next : p->position;
        if (last >= at) {
            if (run.end == run.pos) {
                run.pos = pos;
                run.first = h.base_offset > at ? h.base_offset : at;
            }
            run.end = pos + size;
            run.next = last + 1;
            run.epoch = h.partition_leader_epoch;
        } else if (!(taken = run_flush(e, b, i, frame, base, &run))) {
            break; /* a batch wholly below the position ends the run (offsets went back) */
        } else {
            run.pos = run.end = pos + size;
        }
        pos += size;
    }
    if (taken)
        (void)run_flush(e, b, i, frame, base, &run);
    if (ab) {
        kc_decode_ctx_destroy(&dctx);
        free(ab);
    }
}

/* A Fetch to broker `id` failed as a whole (see each caller). The broker backs off; partitions
 * that read from it as their KIP-392 preferred replica go back to their leaders now, so a dead
 * or unreachable follower does not hold them for the rest of the replica's lifetime. */
static void replicas_to_leaders(kc_engine_t *e, int32_t id, int64_t now)
{
    kc_eng_broker_t *b = kc_eng_broker_get(e, id);
    if (b)
        b->replica_failed_ms = now;
    for (size_t i = 0; i < e->n_parts; i++)
        if (kc_partition_on_broker_failure(&e->parts[i], id)) {
            e->dirty = 1; /* it moves to its leader's set, which may be out: kc_eng_drive_quiet */
            e->stats.replica_fallbacks++;
            kc_log(KC_LOG_DEBUG, "fetch", "%s[%d]: read replica %d failed; back to leader %d",
                   e->info[i].topic, e->info[i].partition, id, e->parts[i].leader_id);
        }
}

/* The read replica a leader named, or -1 (stay on the leader) while that broker's last Fetch
 * failure is recent (KC_ENG_REPLICA_AVOID_MS). */
static int32_t usable_replica(kc_engine_t *e, int32_t replica, int64_t now)
{
    if (replica < 0)
        return replica;
    kc_eng_broker_t *r = kc_eng_broker_get(e, replica);
    if (r && r->replica_failed_ms && now - r->replica_failed_ms < KC_ENG_REPLICA_AVOID_MS) {
        e->stats.replica_avoided++;
        return -1;
    }
    return replica;
}

static void fetch_failed(kc_engine_t *e, int32_t id, int64_t now)
{
    kc_fetch_plan_on_failure(&e->plan, id, now);
    replicas_to_leaders(e, id, now);
}

static void fetch_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off,
                       int16_t version, void *opaque)
{
    kc_eng_broker_t *b = opaque;
    kc_engine_t *e = b->e;
    int64_t now = kc_now_ms();
    if (e->closed) {
        kc_buf_unref(frame);
        return;
    }
    if (rc != KC_OK) {
        kc_eng_conn_failed(e, KC_FETCH_REQUEST_API_KEY, conn, rc);
        b->st.fetch_errors++;
        fetch_failed(e, b->id, now);
        /* A broker that stopped answering may have lost its leaderships: a dead leader sends
         * no NOT_LEADER, so only fresh metadata moves its partitions to the new leaders. */
        e->md_wanted = 1;
        kc_eng_drive(e);
        return;
    }
    kc_arena_reset(&b->fetch_arena); /* the request message is no longer needed */
    kc_error_t err;
    kc_fetch_response_t m;
    kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
    if (kc_fetch_response_decode(&m, version, &r, &b->fetch_arena, &err) != KC_OK) {
        kc_eng_bad_answer(e, KC_FETCH_REQUEST_API_KEY, conn, version, &err);
        b->st.fetch_errors++;
        fetch_failed(e, b->id, now);
        kc_buf_unref(frame);
        kc_eng_drive(e);
        return;
    }
    b->st.fetch_responses++;
    b->replica_failed_ms = 0; /* it answers again: fit to be a read replica */
    kc_session_resp_t sr = kc_fetch_codec_session_resp(&m);
    kc_session_outcome_t o =
        kc_fetch_plan_on_response(&e->plan, b->id, &sr, m.throttle_time_ms, now);
    kc_fetcher_t *f = kc_fetch_plan_find(&e->plan, b->id);
    if (f) {
        b->st.fetch_session_id = f->session.stats.session_id;
        b->st.fetch_session_epoch = f->session.stats.epoch;
    }
    if (o == KC_SESSION_RESET)
        b->st.fetch_session_resets++;
    if (o == KC_SESSION_FALLBACK)
        b->st.fetch_session_fallbacks++;
    if (o == KC_SESSION_FAILED) {
        b->st.fetch_errors++;
        kc_log(KC_LOG_WARN, "fetch", "broker %d: Fetch failed: %s", b->id,
               kc_kafka_err_name(m.error_code));
        /* The version came from the broker's own ApiVersions: a broker refusing it will refuse
         * every Fetch, and the backoff alone would say nothing to the application. */
        if (m.error_code == KC_KAFKA_UNSUPPORTED_VERSION) {
            kc_error_t why;
            kc_fail_kafka(&why, m.error_code,
                          "Fetch v%d: broker %d (%s) refuses a version its ApiVersions offers",
                          (int)version, b->id, kc_conn_peer(conn));
            kc_eng_api_unusable(e, KC_FETCH_REQUEST_API_KEY, &why);
        }
        replicas_to_leaders(e, b->id, now); /* the plan already backed the broker off */
    }
    size_t named = 0;
    if ((o == KC_SESSION_OK || o == KC_SESSION_FALLBACK) && f && !e->closing) {
        kc_fetch_codec_iter_t it;
        kc_fetch_codec_iter_init(&it, &m, version, &e->names);
        kc_fetch_part_result_t pr;
        while (kc_fetch_codec_next(&it, &pr)) {
            named++;
            ssize_t i = kc_eng_find_tp(e, &pr.tp);
            if (i < 0)
                continue; /* unassigned while the request was in flight */
            kc_partition_t *p = &e->parts[i];
            if (pr.error_code) {
                kc_partition_event_t ev;
                if (pr.has_current_leader && pr.leader_id >= 0)
                    e->md_wanted = 1; /* KIP-951 names the new leader; metadata confirms it */
                kc_partition_on_fetch_error(p, pr.error_code, b->id != p->leader_id,
                                            &e->plan.conf.part, now, &ev);
                kc_eng_apply_event(e, (size_t)i, &ev);
                continue;
            }
            const kc_session_part_t *held = kc_session_held(&f->session, &pr.tp);
            if (!held || !kc_fetch_plan_accepts(p, b->id, held->fetch_offset, &e->plan.conf, now)) {
                e->stats.stale_dropped++;
                continue;
            }
            deliver(e, b, (size_t)i, frame, pr.records, pr.aborted, pr.n_aborted);
            int32_t replica = usable_replica(e, pr.preferred_read_replica, now);
            kc_partition_on_fetch_ok(&e->parts[i], pr.high_watermark, pr.last_stable_offset,
                                     pr.log_start_offset, replica, &e->plan.conf.part, now);
            const kc_partition_t *pp = &e->parts[i];
            int64_t end =
                e->plan.conf.part.read_committed ? pp->last_stable_offset : pp->high_watermark;
            if (e->sink.at_end && end >= 0 && pp->position == end)
                e->sink.at_end(e->sink.opaque, e->info[i].user, end);
            /* A leader that names a replica answers at once and empty (Kafka does not wait
             * fetch.max.wait.ms then): while we pass the replica over, pace the leader. */
            if (replica < 0 && pr.preferred_read_replica >= 0 && pr.records.len <= 0)
                kc_partition_hold(&e->parts[i], &e->plan.conf.part, now);
        }
    }
    kc_buf_unref(frame);
    /* An incremental session's answer names only partitions with something new: none named,
     * nothing to re-plan for this broker. */
    if (o == KC_SESSION_OK && named == 0 && m.throttle_time_ms <= 0)
        kc_eng_drive_quiet(e, b->id);
    else
        kc_eng_drive(e);
}

void kc_eng_fetch_send(kc_engine_t *e, kc_fetch_send_t *s)
{
    int32_t id = s->fetcher->broker_id;
    int64_t now = kc_now_ms();
    kc_eng_broker_t *b = kc_eng_broker_get(e, id);
    kc_conn_t *c = b ? kc_eng_broker_conn(e, id) : NULL;
    /* Also a connection reconnecting after a failed attempt: a request queued there would wait
     * out request.timeout.ms while the broker is gone (killed leader). */
    if (!c || (kc_conn_state(c) != KC_CONN_READY && kc_conn_failures(c) > 0)) {
        fetch_failed(e, id, now);
        e->md_wanted = 1;
        return;
    }
    kc_error_t err;
    b->fetch_set = e->fset;
    if (e->sink.budget) {
        int64_t left = e->sink.budget(e->sink.opaque) / (int64_t)(e->n_brokers ? e->n_brokers : 1);
        if (left < b->fetch_set.max_bytes)
            b->fetch_set.max_bytes = left > 0 ? (int32_t)left : 1;
    }
    b->fetch_req = s->req;
    b->fetch_close = s->req.close;
    b->fetch_epoch = s->req.epoch;
    kc_conn_req_spec_t spec = {KC_FETCH_REQUEST_API_KEY,
                               KC_ENG_FETCH_MIN,
                               kc_fetch_codec_max_version(&s->req),
                               fetch_encode,
                               fetch_done,
                               b};
    kc_err_t rc = kc_conn_send(c, &spec, &err);
    if (rc != KC_OK) {
        if (rc == KC_ERR_UNSUPPORTED)
            kc_eng_api_unusable(e, KC_FETCH_REQUEST_API_KEY, &err);
        else
            kc_log(KC_LOG_ERROR, "fetch", "broker %d: %s", id, err.msg);
        fetch_failed(e, id, now);
        return;
    }
    b->st.fetch_requests++;
    b->st.fetch_partitions_sent += s->req.n_parts;
    b->st.fetch_forgotten_sent += s->req.n_forgotten;
    b->st.last_request_parts = s->req.n_parts;
    b->st.fetch_session_id = s->req.session_id;
    b->st.fetch_session_epoch = s->req.epoch;
}
