/*
 * The engine object: partitions (assign / remove / seek / pause), the drive loop that turns
 * state into requests, and stats. See engine.h for the threading contract.
 *
 * The drive loop (kc_eng_drive) runs after every response and timer, and on the loop's next turn
 * after a command (kc_eng_drive_soon: commands come in batches), and does, in order: one pass
 * over the partitions (which wait for ListOffsets / OffsetForLeaderEpoch, the runtime's
 * backpressure answer, each one's place in the fetch plan), then the requests: ListOffsets /
 * OffsetForLeaderEpoch, a metadata refresh if one is due or wanted, one Fetch per broker that
 * may send now; and re-arms the one timer for the earliest held-back moment. Re-entrant calls (a
 * response handled inside a send) only set a flag, so one loop pass sees a consistent state.
 *
 * Owner: network thread.
 */
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "conn_wire.h"
#include "engine_int.h"
#include "query.h"

#define MAX_SENDS 64

void kc_engine_conf_defaults(kc_engine_conf_t *c)
{
    memset(c, 0, sizeof *c);
    c->client_id = "kconsume";
    c->fetch_max_wait_ms = 500;
    c->fetch_min_bytes = 1;
    c->fetch_max_bytes = 52428800;
    c->max_partition_fetch_bytes = 1048576;
    c->isolation_level = 1;
    c->auto_offset_reset = KC_RESET_LATEST;
    c->metadata_max_age_ms = 300000;
    c->retry_backoff_ms = 100;
    c->retry_backoff_max_ms = 1000;
    c->request_timeout_ms = 30000;
    c->connect_timeout_ms = 10000;
    c->reconnect_backoff_ms = 50;
    c->reconnect_backoff_max_ms = 1000;
    c->rebootstrap = 1;
    c->rebootstrap_trigger_ms = 300000;
}

static void drive(kc_engine_t *e, int changed);

static void on_timer(kc_loop_t *loop, kc_loop_timer_t *t)
{
    (void)loop;
    drive(t->opaque, 0); /* time, or a command's kc_eng_drive_soon (which set `dirty`) */
}

kc_err_t kc_engine_new(kc_engine_t **out, kc_loop_t *loop, const kc_engine_conf_t *conf,
                       const kc_engine_sink_t *sink, kc_error_t *err)
{
    if (!conf->bootstrap_servers || !*conf->bootstrap_servers || !sink || !sink->records)
        return kc_fail(err, KC_ERR_INVALID_ARG, "engine: bootstrap servers and a sink are needed");
    kc_engine_t *e = calloc(1, sizeof *e);
    if (!e)
        return kc_fail(err, KC_ERR_NOMEM, "engine: out of memory");
    e->loop = loop;
    e->conf = *conf;
    e->sink = *sink;
    e->bootstrap = strdup(conf->bootstrap_servers);
    e->client_id = strdup(conf->client_id ? conf->client_id : "kconsume");
    e->rack = conf->client_rack && *conf->client_rack ? strdup(conf->client_rack) : NULL;
    if (!e->bootstrap || !e->client_id || (conf->client_rack && *conf->client_rack && !e->rack)) {
        kc_engine_free(e);
        return kc_fail(err, KC_ERR_NOMEM, "engine: out of memory");
    }
    e->fset = (kc_fetch_settings_t){conf->fetch_max_wait_ms, conf->fetch_min_bytes,
                                    conf->fetch_max_bytes, conf->isolation_level, e->rack};
    kc_fetch_plan_conf_t pc = {{conf->auto_offset_reset, conf->isolation_level == 1,
                                e->rack != NULL, conf->metadata_max_age_ms, conf->retry_backoff_ms,
                                conf->retry_backoff_max_ms},
                               60000};
    kc_fetch_plan_init(&e->plan, &pc);
    kc_eng_names_init(e);
    e->rng = (uint64_t)kc_now_ns() ^ (uint64_t)(uintptr_t)e;
    e->timer.cb = on_timer;
    e->timer.opaque = e;
    kc_mdr_init(&e->mdr, conf->rebootstrap ? KC_MDR_STRATEGY_REBOOTSTRAP : KC_MDR_STRATEGY_NONE,
                conf->rebootstrap_trigger_ms);
    kc_eng_brokers_init(e);
    *out = e;
    return KC_OK;
}

void kc_eng_run_while(kc_engine_t *e, int64_t deadline, bool (*busy)(kc_engine_t *e))
{
    while (busy(e) && kc_now_ms() < deadline)
        kc_loop_run_once(e->loop, 50);
}

static bool fetches_in_flight(kc_engine_t *e)
{
    for (size_t i = 0; i < e->plan.n; i++)
        if (e->plan.f[i]->in_flight)
            return true;
    return false;
}

static void wait_fetches(kc_engine_t *e, int64_t deadline)
{
    kc_eng_run_while(e, deadline, fetches_in_flight);
}

void kc_engine_close(kc_engine_t *e, int timeout_ms)
{
    if (e->closing)
        return;
    e->closing = 1;
    kc_loop_timer_stop(e->loop, &e->timer);
    int64_t deadline = kc_now_ms() + timeout_ms;
    /* Wait for fetches in flight (a session with a request pending cannot be closed), then
     * close every open session with (S, -1) so the broker frees its cache slot. */
    wait_fetches(e, deadline);
    kc_fetch_send_t sends[MAX_SENDS];
    size_t n = kc_fetch_plan_close(&e->plan, sends, MAX_SENDS);
    for (size_t i = 0; i < n; i++)
        kc_eng_fetch_send(e, &sends[i]);
    wait_fetches(e, deadline);
    kc_eng_share_close(e, deadline);
    kc_eng_telemetry_close(e, deadline);
    e->closed = 1;
    kc_eng_brokers_free(e);
    kc_eng_coord_free(e);
    kc_eng_queries_close(e);
}

void kc_engine_free(kc_engine_t *e)
{
    if (!e)
        return;
    if (!e->closing) {
        e->closing = 1;
        kc_loop_timer_stop(e->loop, &e->timer);
    }
    e->closed = 1;
    kc_eng_brokers_free(e); /* first: FindCoordinator on these finishes its op */
    kc_eng_coord_free(e);
    kc_eng_queries_close(e);
    kc_fetch_plan_free(&e->plan);
    kc_eng_share_free(e);
    kc_eng_telemetry_free(e);
    kc_eng_topics_free(e);
    for (size_t i = 0; i < e->n_parts; i++) {
        free(e->info[i].topic);
        free(e->info[i].share_st);
    }
    free(e->parts);
    free(e->info);
    kc_pidx_free(&e->by_name);
    kc_pidx_free(&e->by_tp);
    free(e->bootstrap);
    free(e->client_id);
    free(e->rack);
    free(e);
}

static void name_of(const void *ctx, size_t i, const char **topic, int32_t *partition)
{
    const kc_engine_t *e = ctx;
    *topic = e->info[i].topic;
    *partition = e->info[i].partition;
}

static bool tp_eq(const void *ctx, size_t i, const void *key)
{
    const kc_engine_t *e = ctx;
    return e->info[i].have_id && kc_tp_cmp(&e->parts[i].tp, key) == 0;
}

ssize_t kc_eng_find_part(const kc_engine_t *e, const char *topic, int32_t partition)
{
    return kc_pidx_find_name(&e->by_name, name_of, e, topic, partition);
}

ssize_t kc_eng_find_tp(const kc_engine_t *e, const kc_tp_t *tp)
{
    return kc_pidx_find(&e->by_tp, kc_pidx_hash_id(tp->topic_id, tp->partition), tp_eq, e, tp);
}

void kc_eng_part_set_id(kc_engine_t *e, size_t i, const uint8_t id[16])
{
    kc_partition_t *p = &e->parts[i];
    if (e->info[i].have_id)
        kc_pidx_remove(&e->by_tp, kc_pidx_hash_id(p->tp.topic_id, p->tp.partition), i);
    memcpy(p->tp.topic_id, id, 16);
    e->info[i].have_id = 1;
    kc_pidx_insert(&e->by_tp, kc_pidx_hash_id(p->tp.topic_id, p->tp.partition), i);
}

void kc_eng_report(kc_engine_t *e, size_t i, const kc_error_t *err)
{
    kc_log(KC_LOG_WARN, "engine", "%s", err->msg);
    if (e->sink.error)
        e->sink.error(e->sink.opaque, e->info[i].user, e->info[i].topic, e->info[i].partition, err);
}

void kc_eng_api_unusable(kc_engine_t *e, int16_t api_key, const kc_error_t *why)
{
    uint8_t kind = why->code == KC_ERR_UNSUPPORTED ? 1 : why->code == KC_ERR_MALFORMED ? 2 : 4;
    if (api_key < 0 || api_key >= KC_API_KEY_MAX || (e->refused[api_key] & kind))
        return;
    e->refused[api_key] |= kind;
    kc_log(KC_LOG_ERROR, "engine", "%s", why->msg);
    if (e->sink.error)
        e->sink.error(e->sink.opaque, NULL, NULL, -1, why);
}

void kc_eng_conn_failed(kc_engine_t *e, int16_t api_key, const kc_conn_t *conn, kc_err_t rc)
{
    if (rc == KC_ERR_UNSUPPORTED || rc == KC_ERR_MALFORMED)
        kc_eng_api_unusable(e, api_key, kc_conn_refusal(conn));
}

void kc_eng_bad_answer(kc_engine_t *e, int16_t api_key, const kc_conn_t *conn, int16_t version,
                       const kc_error_t *decode_err)
{
    kc_error_t why;
    kc_wire_bad_answer(&why, kc_conn_peer(conn), api_key, version, decode_err->msg);
    kc_eng_api_unusable(e, api_key, &why);
}

void kc_eng_apply_event(kc_engine_t *e, size_t i, const kc_partition_event_t *ev)
{
    if (ev->refresh_metadata)
        e->md_wanted = 1;
    if (ev->needs_list_offsets) {
        e->info[i].reset_ts = ev->reset_timestamp;
        e->info[i].lo_retry_at = 0;
    }
    if (ev->truncated)
        e->stats.truncations++;
    if (ev->report)
        kc_eng_report(e, i, &ev->error);
}

void kc_eng_drive(kc_engine_t *e)
{
    drive(e, 1);
}

/* changed: the caller changed partitions (an answer, a command, metadata): the sets built for
 * brokers with a Fetch in flight may be stale, so none of them is repeated without a pass
 * (kc_fetch_plan_changed). The timer's passes and kc_eng_drive_quiet's change nothing. */
static void drive(kc_engine_t *e, int changed)
{
    if (e->closing)
        return;
    if (changed)
        e->dirty = 1;
    if (e->driving) {
        e->drive_again = 1;
        return;
    }
    e->driving = 1;
    int64_t wake;
    do {
        e->drive_again = 0;
        if (e->dirty)
            kc_fetch_plan_changed(&e->plan);
        e->dirty = 0;
        e->stats.drives++;
        int64_t now = kc_now_ms();
        wake = INT64_MAX;
        uint64_t gen = e->sink.fetch_gen ? e->sink.fetch_gen(e->sink.opaque) : 0;
        /* One pass over the partitions does all the per-partition work (which wait for offsets,
         * backpressure, the fetch plan): at 10,000 partitions the visits themselves are the
         * cost of a pass, so each partition is visited once. */
        kc_fetch_plan_begin(&e->plan);
        kc_error_t err;
        kc_err_t rc = KC_OK;
        bool offsets_due = false;
        e->held_back = 0;
        for (size_t i = 0; i < e->n_parts && rc == KC_OK; i++) {
            offsets_due |= kc_eng_offsets_due(e, i, now, &wake);
            kc_partition_t *p = &e->parts[i];
            kc_eng_pinfo_t *in = &e->info[i];
            p->paused = in->user_paused || !in->may_fetch || in->share;
            /* A partition whose broker has a Fetch in flight cannot be asked for before that
             * answer, and the answer drives: until then neither the runtime's backpressure
             * answer nor a backoff's end is looked at, and the plan passes it over (a backoff
             * that ended would otherwise wake the drive at once, again and again, until the
             * answer). Of the others, the runtime is asked only where its answer may have
             * changed (sink.fetch_gen), and not while the partition is paused anyway: an idle
             * consumer's answers do not change, and asking each after every Fetch answer would
             * cost a visit of the runtime's partition too. */
            if (kc_fetch_plan_passes_over(&e->plan, p, now))
                continue;
            if (e->sink.may_fetch && !in->user_paused && !in->share &&
                (!gen || !in->may_fetch || in->fetch_gen != gen)) {
                in->may_fetch = e->sink.may_fetch(e->sink.opaque, in->user) != 0;
                in->fetch_gen = gen;
                p->paused = !in->may_fetch;
            }
            if (!in->may_fetch && !in->user_paused && !in->share)
                e->held_back = 1;
            rc = kc_fetch_plan_add(&e->plan, p, now, &err);
            /* After the add, which ends a finished backoff: only one still running wakes. */
            if (p->state == KC_FS_BACKOFF && p->backoff_until_ms < wake)
                wake = p->backoff_until_ms;
        }
        if (rc != KC_OK) {
            e->held_back = 1; /* the pass stopped short: what it did not visit is unknown */
            kc_log(KC_LOG_ERROR, "engine", "fetch plan: %s", err.msg);
        }
        /* Requests go after the pass: a send can fail at once and run its handler, which must
         * not change the plan's brokers halfway through it. A handler that ran asks for
         * another pass (drive_again), and no Fetch goes on this one's plan. */
        if (offsets_due)
            kc_eng_offsets_send_due(e, now);
        kc_eng_metadata_maybe_send(e, now);
        if (!e->md_inflight && e->n_parts) {
            int64_t md = e->md_wanted ? e->md_retry_ms : e->md_next_ms;
            if (md < wake)
                wake = md;
        }
        if (rc != KC_OK)
            break;
        if (e->drive_again)
            continue;
        kc_fetch_send_t sends[MAX_SENDS];
        int64_t w = INT64_MAX;
        size_t n = kc_fetch_plan_ready(&e->plan, now, sends, MAX_SENDS, &w);
        for (size_t i = 0; i < n; i++)
            kc_eng_fetch_send(e, &sends[i]);
        if (w < wake)
            wake = w;
        kc_eng_share_drive(e, now, &wake);
    } while (e->drive_again);
    e->driving = 0;
    int64_t now = kc_now_ms();
    int64_t delay = wake == INT64_MAX ? 1000 : wake - now;
    if (delay < 1)
        delay = 1;
    if (delay > 1000)
        delay = 1000;
    kc_loop_timer_stop(e->loop, &e->timer);
    kc_loop_timer_start(e->loop, &e->timer, delay);
    e->timer_at = now + delay;
}

void kc_eng_drive_quiet(kc_engine_t *e, int32_t broker_id)
{
    /* The answer moved no position and changed no state, and the other brokers' partitions are
     * where the last pass left them. What a pass would still find: something asked for since
     * (dirty, md_wanted), something time brings (the timer's moment: a backoff's end, offsets
     * due, metadata due), or partitions of this broker that the pass that built its set left
     * out or routed through a replica (kc_fetch_plan_settled). Share sessions are asked on
     * every pass. The timer stays as the last pass armed it. */
    int64_t now = kc_now_ms();
    if (e->closing || e->driving || e->dirty || e->md_wanted || e->share || now >= e->timer_at ||
        !kc_fetch_plan_settled(&e->plan, broker_id)) {
        drive(e, 0);
        return;
    }
    /* As in a pass: a send that fails at once runs its handler, whose drive waits for the sends
     * to be over (the plan's fetchers must stay as plan_ready left them) and then runs. */
    e->driving = 1;
    kc_fetch_send_t sends[MAX_SENDS];
    int64_t w = INT64_MAX;
    size_t n = kc_fetch_plan_ready(&e->plan, now, sends, MAX_SENDS, &w);
    for (size_t i = 0; i < n; i++) {
        e->stats.resends++;
        kc_eng_fetch_send(e, &sends[i]);
    }
    e->driving = 0;
    if (e->drive_again)
        drive(e, 0);
}

void kc_eng_drive_soon(kc_engine_t *e)
{
    if (e->closing)
        return;
    e->dirty = 1;
    if (e->driving)
        e->drive_again = 1;
    else
        kc_loop_timer_start(e->loop, &e->timer, 0);
}

void kc_engine_wake(kc_engine_t *e)
{
    /* The runtime's answers can only have changed for the better. A partition the last pass held
     * back on an idle broker (held_back) needs a pass now; one on a broker with a Fetch in flight
     * is asked again by a pass after that answer, so the change is only noted (dirty): a quiet
     * answer must not repeat a set built while the partition was refused (kc_eng_drive_quiet).
     * Share sessions are asked on every pass. A pass per wake would cost a visit of every
     * partition per partition the workers drain, thousands a second in a big catch-up while
     * every broker has a Fetch out; and wakes come in bursts, one per completion, hence the
     * loop's next turn rather than now. */
    if (e->held_back || e->share)
        kc_eng_drive_soon(e);
    else
        e->dirty = 1;
}

kc_err_t kc_engine_add(kc_engine_t *e, const char *topic, int32_t partition, int64_t offset,
                       void *user, kc_error_t *err)
{
    if (e->closing)
        return kc_fail(err, KC_ERR_CLOSED, "engine closing");
    if (!topic || partition < 0)
        return kc_fail(err, KC_ERR_INVALID_ARG, "assign: bad topic-partition");
    if (kc_eng_find_part(e, topic, partition) >= 0)
        return kc_fail(err, KC_ERR_STATE, "%s[%d] is already assigned", topic, partition);
    int64_t ts = 0;
    if (offset == KC_ENGINE_START_RESET) {
        if (kc_partition_reset_timestamp(e->conf.auto_offset_reset, &ts, err) != KC_OK)
            return kc_fail(err, KC_ERR_STATE,
                           "%s[%d]: no starting offset and auto.offset.reset=none", topic,
                           partition);
    } else if (offset == KC_ENGINE_START_EARLIEST || offset == KC_ENGINE_START_LATEST) {
        ts = offset;
    } else if (offset < 0) {
        return kc_fail(err, KC_ERR_INVALID_ARG, "assign: bad offset %lld", (long long)offset);
    }
    /* Both indexes hold every partition at most once: room for one more now means the inserts
     * below and kc_eng_part_set_id's cannot fail. */
    if (kc_pidx_reserve(&e->by_name, e->n_parts + 1, err) != KC_OK ||
        kc_pidx_reserve(&e->by_tp, e->n_parts + 1, err) != KC_OK)
        return KC_ERR_NOMEM;
    if (e->n_parts == e->cap_parts) {
        size_t cap = e->cap_parts ? e->cap_parts * 2 : 16;
        kc_partition_t *np = realloc(e->parts, cap * sizeof *np);
        if (!np)
            return kc_fail(err, KC_ERR_NOMEM, "assign: out of memory");
        e->parts = np;
        kc_eng_pinfo_t *ni = realloc(e->info, cap * sizeof *ni);
        if (!ni)
            return kc_fail(err, KC_ERR_NOMEM, "assign: out of memory");
        e->info = ni;
        e->cap_parts = cap;
    }
    kc_eng_pinfo_t *in = &e->info[e->n_parts];
    memset(in, 0, sizeof *in);
    in->topic = strdup(topic);
    if (!in->topic)
        return kc_fail(err, KC_ERR_NOMEM, "assign: out of memory");
    in->partition = partition;
    in->user = user;
    in->committed = -1;
    in->may_fetch = 1;
    in->gen = ++e->gen;
    in->reset_ts = ts;
    kc_partition_t *p = &e->parts[e->n_parts];
    kc_tp_t tp = {{0}, partition};
    kc_partition_init(p, &tp, e->conf.max_partition_fetch_bytes);
    if (offset >= 0)
        kc_partition_seek(p, offset);
    size_t i = e->n_parts++;
    kc_pidx_insert(&e->by_name, kc_pidx_hash_name(in->topic, partition), i);
    e->md_wanted = 1;
    kc_eng_metadata_apply_part(e, i); /* from the cache, if the topic is known already */
    kc_eng_drive_soon(e);
    return KC_OK;
}

kc_err_t kc_engine_remove(kc_engine_t *e, const char *topic, int32_t partition, kc_error_t *err)
{
    ssize_t i = kc_eng_find_part(e, topic, partition);
    if (i < 0)
        return kc_fail(err, KC_ERR_NOT_FOUND, "%s[%d] is not assigned", topic, partition);
    if (e->info[i].share && e->info[i].have_id)
        kc_eng_share_forget(e, &e->parts[i].tp);
    kc_pidx_remove(&e->by_name, kc_pidx_hash_name(topic, partition), (size_t)i);
    if (e->info[i].have_id)
        kc_pidx_remove(&e->by_tp, kc_pidx_hash_id(e->parts[i].tp.topic_id, partition), (size_t)i);
    free(e->info[i].topic);
    free(e->info[i].share_st);
    size_t last = e->n_parts - 1;
    if ((size_t)i != last) {
        e->parts[i] = e->parts[last];
        e->info[i] = e->info[last];
        kc_pidx_move(&e->by_name, kc_pidx_hash_name(e->info[i].topic, e->info[i].partition), last,
                     (size_t)i);
        if (e->info[i].have_id)
            kc_pidx_move(&e->by_tp,
                         kc_pidx_hash_id(e->parts[i].tp.topic_id, e->parts[i].tp.partition), last,
                         (size_t)i);
    }
    e->n_parts--;
    kc_eng_drive_soon(e); /* the partition leaves its session: forgotten on the next request */
    return KC_OK;
}

kc_err_t kc_engine_seek(kc_engine_t *e, const char *topic, int32_t partition, kc_engine_seek_t kind,
                        int64_t value, kc_error_t *err)
{
    ssize_t i = kc_eng_find_part(e, topic, partition);
    if (i < 0)
        return kc_fail(err, KC_ERR_NOT_FOUND, "%s[%d] is not assigned", topic, partition);
    if ((kind == KC_ENGINE_SEEK_OFFSET || kind == KC_ENGINE_SEEK_TIMESTAMP) && value < 0)
        return kc_fail(err, KC_ERR_INVALID_ARG, "seek: negative %s",
                       kind == KC_ENGINE_SEEK_OFFSET ? "offset" : "timestamp");
    kc_partition_t *p = &e->parts[i];
    kc_eng_pinfo_t *in = &e->info[i];
    in->gen = ++e->gen; /* answers to requests about the old position are stale now */
    in->lo_inflight = in->val_inflight = 0;
    in->lo_retry_at = 0;
    switch (kind) {
    case KC_ENGINE_SEEK_OFFSET:
        kc_partition_seek(p, value);
        break;
    case KC_ENGINE_SEEK_BEGINNING:
    case KC_ENGINE_SEEK_END:
    case KC_ENGINE_SEEK_TIMESTAMP:
        in->reset_ts = kind == KC_ENGINE_SEEK_BEGINNING ? -2
                       : kind == KC_ENGINE_SEEK_END     ? -1
                                                        : value;
        p->state = KC_FS_AWAIT_RESET;
        p->position_epoch = KC_NO_EPOCH;
        break;
    }
    kc_eng_drive_soon(e); /* an answer for the old position is refused already (gen, position) */
    return KC_OK;
}

kc_err_t kc_engine_pause(kc_engine_t *e, const char *topic, int32_t partition, int paused,
                         kc_error_t *err)
{
    ssize_t i = kc_eng_find_part(e, topic, partition);
    if (i < 0)
        return kc_fail(err, KC_ERR_NOT_FOUND, "%s[%d] is not assigned", topic, partition);
    e->info[i].user_paused = paused != 0;
    if (paused) /* now, so that an answer read before the drive is not delivered */
        e->parts[i].paused = 1;
    kc_eng_drive_soon(e);
    return KC_OK;
}

size_t kc_engine_broker_stats(const kc_engine_t *e, kc_engine_broker_stats_t *out, size_t max)
{
    for (size_t i = 0; i < e->n_brokers && i < max; i++) {
        const kc_eng_broker_t *b = e->brokers[i];
        out[i] = b->st;
        out[i].io_backend = kc_loop_backend_name(e->loop);
        out[i].state = kc_engine_conn_state_name(b->conn != NULL,
                                                 b->conn ? kc_conn_state(b->conn) : KC_CONN_DOWN,
                                                 b->conn ? kc_conn_failures(b->conn) : 0);
        if (b->conn) {
            kc_conn_stats_t cs;
            kc_conn_get_stats(b->conn, &cs);
            out[i].connects += cs.connects; /* b->st: those of the connections before */
            out[i].reauths += cs.reauths;
        }
    }
    return e->n_brokers;
}

kc_err_t kc_engine_part_stats(const kc_engine_t *e, const char *topic, int32_t partition,
                              kc_engine_part_stats_t *out, kc_error_t *err)
{
    ssize_t i = kc_eng_find_part(e, topic, partition);
    if (i < 0)
        return kc_fail(err, KC_ERR_NOT_FOUND, "%s[%d] is not assigned", topic, partition);
    const kc_partition_t *p = &e->parts[i];
    *out = (kc_engine_part_stats_t){
        p->position, e->info[i].committed, p->high_watermark, p->last_stable_offset,
        p->lag,      p->leader_id,         p->state};
    return KC_OK;
}

void kc_engine_set_committed(kc_engine_t *e, const char *topic, int32_t partition, int64_t offset)
{
    ssize_t i = kc_eng_find_part(e, topic, partition);
    if (i >= 0)
        e->info[i].committed = offset;
}

void kc_engine_stats(const kc_engine_t *e, kc_engine_stats_t *out)
{
    *out = e->stats;
}
