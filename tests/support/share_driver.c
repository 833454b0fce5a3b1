/* A share-group member for kafka tests (share_driver.h). */
#include "share_driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "batch/batch.h"
#include "broker_blocking.h"
#include "group/share/wire.h"
#include "group_driver.h"
#include "kc_test.h"
#include "proto/proto.h"

char kc_sd_topic[64];
uint8_t kc_sd_topic_id[16];

int64_t kc_sd_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void kc_sd_testkit(const char *args)
{
    char line[1024];
    snprintf(line, sizeof line, "%s %s --dir %s >/dev/null 2>&1", kc_test_env("KC_TESTKIT"), args,
             kc_test_env("KC_SHARE_CLUSTER_DIR"));
    if (system(line) != 0)
        fail_msg("failed: %s", line);
}

void kc_sd_setup(const char *prefix, int partitions, const char *group)
{
    char cmd[512];
    snprintf(kc_sd_topic, sizeof kc_sd_topic, "%s-%d", prefix, (int)getpid());
    snprintf(cmd, sizeof cmd, "topic create %s --partitions %d", kc_sd_topic, partitions);
    kc_sd_testkit(cmd);
    kc_sd_group_config(group, "share.auto.offset.reset=earliest");
    int fd = kc_tb_connect(kc_test_env("KC_SHARE_BOOTSTRAP"));
    assert_true(fd >= 0);
    kc_gd_metadata_topic(fd, kc_sd_topic, kc_sd_topic_id, partitions);
    close(fd);
}

void kc_sd_group_config(const char *group, const char *setting)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "tool ConfigCommand --bootstrap-server %s --entity-type groups --entity-name %s "
             "--alter --add-config %s",
             kc_test_env("KC_SHARE_BOOTSTRAP"), group, setting);
    kc_sd_testkit(cmd);
}

static pid_t produce_start(int records, int linger_ms);

void kc_sd_produce(int records)
{
    pid_t producer = kc_sd_produce_start(records);
    while (!kc_sd_produce_done(producer))
        kc_test_sleep_ms(50);
}

void kc_sd_produce_one_batch(int records)
{
    pid_t producer = produce_start(records, 1000);
    while (!kc_sd_produce_done(producer))
        kc_test_sleep_ms(50);
}

pid_t kc_sd_produce_start(int records)
{
    return produce_start(records, 5);
}

static pid_t produce_start(int records, int linger_ms)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "produce %s --records %d --size 8 --keys 30 --linger-ms %d",
             kc_sd_topic, records, linger_ms);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char line[1024];
        snprintf(line, sizeof line, "%s %s --dir %s >/dev/null 2>&1", getenv("KC_TESTKIT"), cmd,
                 getenv("KC_SHARE_CLUSTER_DIR"));
        _exit(system(line) == 0 ? 0 : 1);
    }
    return pid;
}

bool kc_sd_produce_done(pid_t pid)
{
    int st;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == 0)
        return false;
    if (r != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("producing to %s failed", kc_sd_topic);
    return true;
}

pid_t kc_sd_testkit_start(const char *args, const char *out)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char line[2048];
        snprintf(line, sizeof line, "%s %s --dir %s >%s 2>%s.err", getenv("KC_TESTKIT"), args,
                 getenv("KC_SHARE_CLUSTER_DIR"), out, out);
        int rc = system(line);
        _exit(WIFEXITED(rc) ? WEXITSTATUS(rc) : 1);
    }
    return pid;
}

bool kc_sd_child_done(pid_t pid, int *status)
{
    int st;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == 0)
        return false;
    *status = r == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return true;
}

static kc_err_t sgd_encode(const void *m, int16_t v, kc_wbuf_t *w, kc_error_t *e)
{
    return kc_share_group_describe_request_encode(m, v, w, e);
}

int kc_sd_describe_members(kc_sd_member_t *m, const char *group)
{
    kc_share_group_describe_request_t q;
    kc_share_group_describe_request_init(&q);
    kc_str_t g = kc_str(group);
    q.group_ids.count = 1;
    q.group_ids.items = &g;
    uint8_t *frame;
    kc_rbuf_t r;
    kc_tb_exchange(m->hb_fd, KC_SHARE_GROUP_DESCRIBE_REQUEST_API_KEY, 1, &q, sgd_encode, &frame,
                   &r);
    kc_arena_t a = {0};
    kc_error_t e;
    kc_share_group_describe_response_t resp;
    assert_int_equal(kc_share_group_describe_response_decode(&resp, 1, &r, &a, &e), KC_OK);
    int n = resp.groups.count == 1 && resp.groups.items[0].error_code == 0
                ? resp.groups.items[0].members.count
                : -1;
    free(frame);
    kc_arena_free(&a);
    return n;
}

static const char *lookup(void *ctx, const uint8_t id[16])
{
    (void)ctx;
    return memcmp(id, kc_sd_topic_id, 16) == 0 ? kc_sd_topic : NULL;
}

static kc_err_t sgh_encode(const void *m, int16_t v, kc_wbuf_t *w, kc_error_t *e)
{
    return kc_gshare_wire.encode(m, v, w, e);
}

static kc_err_t sf_encode(const void *m, int16_t v, kc_wbuf_t *w, kc_error_t *e)
{
    return kc_share_fetch_request_encode(m, v, w, e);
}

static kc_err_t sa_encode(const void *m, int16_t v, kc_wbuf_t *w, kc_error_t *e)
{
    return kc_share_acknowledge_request_encode(m, v, w, e);
}

void kc_sd_start(kc_sd_member_t *m, int id, const char *group, kc_sd_verdict_fn verdict, void *ctx)
{
    memset(m, 0, sizeof *m);
    m->id = id;
    m->group = group;
    m->verdict = verdict;
    m->ctx = ctx;
    kc_g848_config_t c = {0};
    c.group_id = group;
    c.commit_on_revoke = false;
    c.commit_timeout_ms = 5000;
    c.coordinator_timeout_ms = 30000;
    c.retry_backoff_ms = 100;
    c.retry_backoff_max_ms = 1000;
    c.lookup = lookup;
    kc_error_t e;
    assert_int_equal(kc_g848_init(&m->gc, &c, &e), KC_OK);
    const char *topics[] = {kc_sd_topic};
    assert_int_equal(kc_g848_subscribe(&m->gc, topics, 1, NULL, kc_sd_now_ms(), &e), KC_OK);
    m->hb_fd = kc_gd_coordinator(kc_test_env("KC_SHARE_BOOTSTRAP"), group);
    m->fetch_fd = kc_tb_connect(kc_test_env("KC_SHARE_BOOTSTRAP"));
    assert_true(m->fetch_fd >= 0);
    kc_share_session_init(&m->ss, 1);
    kc_decode_ctx_init(&m->dctx, 0);
}

static void actions(kc_sd_member_t *m)
{
    kc_g848_action_t a;
    kc_error_t e;
    while (kc_g848_next_action(&m->gc, kc_sd_now_ms(), &a)) {
        switch (a.kind) {
        case KC_G848_ACT_ASSIGN:
        case KC_G848_ACT_REVOKE:
        case KC_G848_ACT_LOSE:
            for (size_t i = 0; i < a.parts->n; i++) {
                kc_tp_t tp = {.partition = a.parts->items[i].partition};
                memcpy(tp.topic_id, a.parts->items[i].topic->id, 16);
                assert_int_equal(
                    kc_share_session_want(&m->ss, &tp, a.kind == KC_G848_ACT_ASSIGN, &e), KC_OK);
            }
            m->owned += a.kind == KC_G848_ACT_ASSIGN ? (int)a.parts->n : -(int)a.parts->n;
            m->ever_assigned = m->ever_assigned || a.kind == KC_G848_ACT_ASSIGN;
            kc_g848_action_done(&m->gc, a.seq, kc_sd_now_ms());
            break;
        case KC_G848_ACT_DROP:
            kc_g848_action_done(&m->gc, a.seq, kc_sd_now_ms());
            break;
        case KC_G848_ACT_REDISCOVER:
            kc_g848_coordinator_ready(&m->gc, kc_sd_now_ms());
            break;
        case KC_G848_ACT_ERROR:
            if (a.fatal)
                fail_msg("member %d: fatal: %s", m->id, a.error.msg);
            m->errors++;
            m->last_error = a.error;
            break;
        default:
            fail_msg("member %d: unexpected action %d", m->id, a.kind);
        }
    }
}

static void heartbeat(kc_sd_member_t *m)
{
    kc_consumer_group_heartbeat_request_t q;
    kc_error_t e;
    kc_err_t rc = kc_g848_heartbeat_due(&m->gc, kc_sd_now_ms(), 1, &q, &e);
    if (rc == KC_ERR_AGAIN)
        return;
    if (rc != KC_OK)
        fail_msg("member %d: heartbeat_due: %s", m->id, e.msg);
    kc_g848_heartbeat_sent(&m->gc, kc_sd_now_ms());
    uint8_t *frame;
    kc_rbuf_t r;
    kc_tb_exchange(m->hb_fd, KC_SHARE_GROUP_HEARTBEAT_REQUEST_API_KEY, 1, &q, sgh_encode, &frame,
                   &r);
    kc_arena_t a = {0};
    kc_consumer_group_heartbeat_response_t resp;
    if (kc_gshare_wire.decode(&resp, 1, &r, &a, &e) != KC_OK)
        fail_msg("member %d: ShareGroupHeartbeat answer: %s", m->id, e.msg);
    if (resp.error_code)
        fprintf(stderr, "member %d: ShareGroupHeartbeat: %s\n", m->id,
                kc_kafka_error_name(resp.error_code));
    kc_g848_on_heartbeat_response(&m->gc, kc_sd_now_ms(), &resp);
    free(frame);
    kc_arena_free(&a);
}

/* ---- answers ------------------------------------------------------------------------------ */

static void on_records(void *o, const kc_tp_t *tp, kc_bytes_t rec, const kc_share_range_t *r,
                       size_t n, int32_t lock_ms)
{
    (void)lock_ms;
    kc_sd_member_t *m = o;
    kc_batch_splitter_t sp;
    kc_batch_splitter_init_bytes(&sp, rec.ptr, (size_t)rec.len, kc_sd_topic, tp->partition, true);
    kc_batch_t b;
    kc_error_t e;
    /* the acquired offsets that carried a record; the others are acknowledged as gaps */
    int64_t span = kc_share_acquired_span(r, n);
    int64_t *seen = calloc((size_t)span + 1, sizeof *seen);
    size_t n_seen = 0;
    assert_non_null(seen);
    kc_err_t rc;
    while ((rc = kc_batch_next(&sp, &b, &e)) != KC_ERR_NOT_FOUND) {
        if (rc != KC_OK)
            fail_msg("member %d: batch: %s", m->id, e.msg);
        if (kc_batch_is_control(&b))
            continue;
        kc_record_iter_t it;
        assert_int_equal(kc_batch_records(&m->dctx, &b, &it, &e), KC_OK);
        kc_record_t rr;
        while ((rc = kc_record_next(&it, &rr, &e)) == KC_OK) {
            int16_t count = kc_share_acquired_count(r, n, rr.offset);
            if (!count)
                continue; /* not acquired by us: never delivered */
            char num[32];
            int len = rr.value_len > 0 && rr.value_len < 31 ? rr.value_len : 0;
            memcpy(num, rr.value, (size_t)len);
            num[len] = '\0';
            m->delivered++;
            kc_share_ack_type_t t = m->verdict(m->ctx, m, atoll(num), count);
            assert_int_equal(kc_share_session_ack(&m->ss, tp, rr.offset, rr.offset, t, &e), KC_OK);
            seen[n_seen++] = rr.offset;
        }
        assert_int_equal(rc, KC_ERR_NOT_FOUND);
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (int64_t o2 = r[i].first; o2 <= r[i].last; o2++) {
            while (k < n_seen && seen[k] < o2)
                k++;
            if (k < n_seen && seen[k] == o2)
                continue;
            assert_int_equal(kc_share_session_ack(&m->ss, tp, o2, o2, KC_SHARE_ACK_GAP, &e), KC_OK);
        }
    free(seen);
}

static void on_acked(void *o, const kc_tp_t *tp, const kc_share_ack_batch_t *b, int32_t n,
                     int16_t code, const char *why)
{
    (void)tp;
    kc_sd_member_t *m = o;
    int64_t c[KC_SHARE_ACK_TYPES] = {0};
    kc_share_ack_batches_count(b, n, c);
    uint64_t total = (uint64_t)(c[0] + c[1] + c[2] + c[3]);
    if (code == 0) {
        m->acked_ok += total;
        return;
    }
    m->ack_failed += total;
    fprintf(stderr, "member %d: acknowledgement of %llu record(s) from %lld: code %d %s\n", m->id,
            (unsigned long long)total, (long long)b[0].first, (int)code, why);
}

static void on_error(void *o, const kc_tp_t *tp, const kc_error_t *e)
{
    (void)tp;
    kc_sd_member_t *m = o;
    m->errors++;
    m->last_error = *e;
    fprintf(stderr, "member %d: %s\n", m->id, e->msg);
}

static void fetch(kc_sd_member_t *m)
{
    kc_share_handler_t h = {on_records, on_acked, on_error, m};
    kc_share_fetch_params_t p = {m->group, m->gc.member_id, 100, 1, 1 << 20, 50, 50};
    kc_share_fetch_request_t q;
    kc_error_t e;
    if (kc_share_session_fetch(&m->ss, &p, &q, &e) == KC_OK) {
        uint8_t *frame;
        kc_rbuf_t r;
        kc_tb_exchange(m->fetch_fd, KC_SHARE_FETCH_REQUEST_API_KEY, 1, &q, sf_encode, &frame, &r);
        kc_arena_t a = {0};
        kc_share_fetch_response_t resp;
        if (kc_share_fetch_response_decode(&resp, 1, &r, &a, &e) != KC_OK)
            fail_msg("member %d: ShareFetch answer: %s", m->id, e.msg);
        kc_share_session_fetch_answer(&m->ss, &resp, &a, &h);
        free(frame);
        kc_arena_free(&a);
        return;
    }
    /* Nothing to fetch (no partition assigned): acknowledgements still pending go alone. */
    kc_share_acknowledge_request_t aq;
    if (kc_share_session_acknowledge(&m->ss, m->group, m->gc.member_id, false, &aq, &e) != KC_OK)
        return;
    uint8_t *frame;
    kc_rbuf_t r;
    kc_tb_exchange(m->fetch_fd, KC_SHARE_ACKNOWLEDGE_REQUEST_API_KEY, 1, &aq, sa_encode, &frame,
                   &r);
    kc_arena_t a = {0};
    kc_share_acknowledge_response_t resp;
    assert_int_equal(kc_share_acknowledge_response_decode(&resp, 1, &r, &a, &e), KC_OK);
    kc_share_session_ack_answer(&m->ss, &resp, kc_now_ms(), &h);
    free(frame);
    kc_arena_free(&a);
}

void kc_sd_step(kc_sd_member_t *m)
{
    kc_g848_tick(&m->gc, kc_sd_now_ms());
    actions(m);
    heartbeat(m);
    actions(m);
    fetch(m);
}

void kc_sd_close(kc_sd_member_t *m)
{
    /* The acknowledgements first, closing the share session: once the member left, the broker
     * releases what it still held and verdicts on those records would be refused. */
    kc_share_handler_t h = {on_records, on_acked, on_error, m};
    kc_share_acknowledge_request_t q;
    kc_error_t e;
    if (kc_share_session_acknowledge(&m->ss, m->group, m->gc.member_id, true, &q, &e) == KC_OK) {
        uint8_t *frame;
        kc_rbuf_t r;
        kc_tb_exchange(m->fetch_fd, KC_SHARE_ACKNOWLEDGE_REQUEST_API_KEY, 1, &q, sa_encode, &frame,
                       &r);
        kc_arena_t a = {0};
        kc_share_acknowledge_response_t resp;
        assert_int_equal(kc_share_acknowledge_response_decode(&resp, 1, &r, &a, &e), KC_OK);
        kc_share_session_ack_answer(&m->ss, &resp, kc_now_ms(), &h);
        free(frame);
        kc_arena_free(&a);
    }
    kc_g848_close(&m->gc, kc_sd_now_ms());
    int64_t end = kc_sd_now_ms() + 10000;
    while (m->gc.state != KC_G848_UNSUBSCRIBED && kc_sd_now_ms() < end) {
        kc_g848_tick(&m->gc, kc_sd_now_ms());
        actions(m);
        heartbeat(m);
        usleep(10 * 1000);
    }
    assert_int_equal(m->gc.state, KC_G848_UNSUBSCRIBED);
    close(m->hb_fd);
    close(m->fetch_fd);
    kc_share_session_free(&m->ss);
    kc_decode_ctx_destroy(&m->dctx);
    kc_g848_free(&m->gc);
}

kc_consumer_t *kc_sd_consumer(const char *group, const char *more, const kc_callbacks_t *cbs)
{
    kc_conf_t *conf = kc_conf_new();
    assert_non_null(conf);
    kc_test_conf_set(conf, "bootstrap.servers", kc_test_env("KC_SHARE_BOOTSTRAP"));
    kc_test_conf_set(conf, "group.id", group);
    kc_test_conf_set(conf, "group.type", "share");
    kc_test_conf_set(conf, "fetch.max.wait.ms", "200");
    if (more)
        kc_test_conf_set_all(conf, more);
    kc_consumer_t *c = kc_test_consumer(conf, cbs); /* the consumer owns conf now */
    const char *topics[] = {kc_sd_topic};
    kc_error_t err;
    if (kc_subscribe(c, topics, 1, &err) != KC_OK)
        fail_msg("kc_subscribe: %s", err.msg);
    return c;
}
