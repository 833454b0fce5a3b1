/* engine/group/848/member against a real broker (KIP-848), over a blocking socket — the state
 * machine is pure, so the test is its driver (tests/support/group_driver.c): FindCoordinator,
 * then ConsumerGroupHeartbeat v1 requests exactly as kc_g848_heartbeat_due builds them, responses
 * fed back, actions carried out. Here:
 * - one member subscribed to a 3-partition topic owns all 3 at a stable, acknowledged epoch
 *   (ConsumerGroupDescribe agrees), and its leave (epoch -1) removes it from the group;
 * - FENCED_MEMBER_EPOCH from the broker → on_lost, rejoin at epoch 0, same member id;
 *   max.poll overrun → leave -1, stale (no heartbeats), rejoin when the callback returns;
 * - a regex subscription picks up a topic created after the member joined, resolved through a
 *   METADATA action.
 * Needs KC_BOOTSTRAP, KC_TESTKIT and KC_CLUSTER_DIR (tests/run-suite sets them). */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker_blocking.h"
#include "group_driver.h"
#include "proto/kafka_errors.h"
#include "proto/proto.h"

/* Carries out every due action; returns partitions assigned by ASSIGN actions. */
static int run_actions(kc_g848_t *gc, int *fd, const char *bootstrap, const char *group)
{
    int assigned = 0;
    kc_g848_action_t act;
    while (kc_g848_next_action(gc, kc_gd_now_ms(), &act)) {
        switch (act.kind) {
        case KC_G848_ACT_ASSIGN:
            assigned += (int)act.parts->n;
            /* fallthrough */
        case KC_G848_ACT_REVOKE:
        case KC_G848_ACT_LOSE:
        case KC_G848_ACT_DROP:
            kc_g848_action_done(gc, act.seq, kc_gd_now_ms());
            break;
        case KC_G848_ACT_COMMIT:
            fail_msg("no commit expected (commit_on_revoke off)");
            break;
        case KC_G848_ACT_REDISCOVER:
            close(*fd);
            *fd = kc_gd_coordinator(bootstrap, group);
            kc_g848_coordinator_ready(gc, kc_gd_now_ms());
            break;
        case KC_G848_ACT_METADATA:
            kc_g848_on_metadata(gc, kc_gd_now_ms());
            break;
        case KC_G848_ACT_ERROR:
            fail_msg("group error: %s", act.error.msg);
            break;
        default:
            break;
        }
    }
    return assigned;
}

static void single_member_gets_all_and_leaves(void **state)
{
    (void)state;
    const char *bootstrap = kc_test_env("KC_BOOTSTRAP");
    char group[64];
    snprintf(group, sizeof group, "kc-g848-group-%d", (int)getpid());
    int fd = kc_gd_coordinator(bootstrap, group);

    kc_g848_config_t c = {0};
    c.group_id = group;
    c.rebalance_timeout_ms = 30000;
    c.commit_on_revoke = false;
    c.commit_timeout_ms = 5000;
    c.coordinator_timeout_ms = 30000;
    c.retry_backoff_ms = 100;
    c.retry_backoff_max_ms = 1000;
    c.lookup = kc_gd_lookup;
    kc_g848_t gc;
    kc_error_t e;
    assert_int_equal(kc_g848_init(&gc, &c, &e), KC_OK);
    const char *topics[] = {kc_gd_topic};
    assert_int_equal(kc_g848_subscribe(&gc, topics, 1, NULL, kc_gd_now_ms(), &e), KC_OK);

    int assigned = 0, beats = 0, acked_with = -1;
    int64_t end = kc_gd_now_ms() + 30000;
    bool acked = false;
    while (kc_gd_now_ms() < end && !acked) {
        assigned += run_actions(&gc, &fd, bootstrap, group);
        int sent;
        int code = kc_gd_heartbeat(fd, &gc, &sent);
        if (code >= 0) {
            beats++;
            if (code != 0)
                fprintf(stderr, "heartbeat answered %s\n", kc_kafka_err_name((int16_t)code));
            /* The ack is the beat that carried the reconciled set; its answer must be clean. */
            if (code == 0 && sent == 3 && gc.state == KC_G848_STABLE) {
                acked = true;
                acked_with = sent;
            }
        }
        assigned += run_actions(&gc, &fd, bootstrap, group);
        int64_t wake = kc_g848_next_wakeup(&gc, kc_gd_now_ms());
        int64_t nap = wake - kc_gd_now_ms();
        usleep((useconds_t)(nap < 5 ? 5 : nap > 200 ? 200 : nap) * 1000);
    }
    assert_true(acked);
    assert_int_equal(acked_with, 3);
    assert_int_equal(assigned, 3);
    assert_int_equal(gc.rc.owned.n, 3);
    assert_true(gc.epoch > 0);
    fprintf(stderr, "joined: epoch %d after %d heartbeats, interval %d ms\n", gc.epoch, beats,
            gc.interval_ms);

    /* The broker agrees: one member, our id, our epoch, all 3 partitions. */
    int32_t epoch;
    int n_assigned;
    assert_int_equal(kc_gd_describe(fd, group, gc.member_id, &epoch, &n_assigned), 1);
    assert_int_equal(epoch, gc.epoch);
    assert_int_equal(n_assigned, 3);

    /* Leave: revoke (no commit), drop, then the epoch -1 heartbeat. */
    kc_g848_close(&gc, kc_gd_now_ms());
    end = kc_gd_now_ms() + 10000;
    int leave_code = -1;
    while (gc.state != KC_G848_UNSUBSCRIBED && kc_gd_now_ms() < end) {
        run_actions(&gc, &fd, bootstrap, group);
        kc_consumer_group_heartbeat_request_t q;
        if (gc.state == KC_G848_LEAVING &&
            kc_g848_heartbeat_due(&gc, kc_gd_now_ms(), KC_GD_HB_V, &q, &e) == KC_OK) {
            assert_int_equal(q.member_epoch, -1);
            uint8_t *frame;
            kc_rbuf_t r;
            kc_tb_exchange(fd, KC_CONSUMER_GROUP_HEARTBEAT_REQUEST_API_KEY, KC_GD_HB_V, &q,
                           (kc_tb_encode_fn)kc_consumer_group_heartbeat_request_encode, &frame, &r);
            kc_arena_t a = {0};
            kc_consumer_group_heartbeat_response_t resp;
            assert_int_equal(
                kc_consumer_group_heartbeat_response_decode(&resp, KC_GD_HB_V, &r, &a, &e), KC_OK);
            leave_code = resp.error_code;
            assert_int_equal(resp.member_epoch, -1);
            kc_g848_on_heartbeat_response(&gc, kc_gd_now_ms(), &resp);
            free(frame);
            kc_arena_free(&a);
        } else {
            int sent;
            kc_gd_heartbeat(fd, &gc, &sent); /* regular beats while revoking, if due */
            usleep(10 * 1000);
        }
    }
    assert_int_equal(gc.state, KC_G848_UNSUBSCRIBED);
    assert_int_equal(leave_code, 0);
    assert_int_equal(gc.rc.owned.n, 0);
    assert_int_equal(kc_gd_describe(fd, group, gc.member_id, &epoch, &n_assigned), 0);
    kc_g848_free(&gc);
    close(fd);
}

/* The broker's answers to the two ways a member loses its partitions. A wrong epoch is answered
 * FENCED_MEMBER_EPOCH: on_lost, then a rejoin at epoch 0 under the same member id that gets the
 * partitions back. A callback that overran max.poll.interval.ms: leave with -1, STALE (no
 * heartbeats) until it returns, then rejoin and get them back. */
static void fenced_and_max_poll_rejoin(void **state)
{
    (void)state;
    const char *bootstrap = kc_test_env("KC_BOOTSTRAP");
    char group[64], id[64];
    snprintf(group, sizeof group, "kc-g848-fence-%d", (int)getpid());
    kc_gd_member_t a;
    kc_gd_member_start(&a, bootstrap, group, NULL);
    kc_gd_run_until(&a, NULL, bootstrap, group, kc_gd_owns_all, 30000);
    assert_true(kc_gd_owns_all(&a));
    strcpy(id, a.gc.member_id);
    int32_t before = a.gc.epoch;
    a.gc.epoch += 7; /* what a member that missed its own epoch bump would send */
    a.gc.hb_now = true;
    int sent;
    assert_int_equal(kc_gd_heartbeat(a.fd, &a.gc, &sent), KC_KAFKA_FENCED_MEMBER_EPOCH);
    assert_int_equal(a.gc.state, KC_G848_FENCED);
    kc_g848_action_t act;
    assert_true(kc_g848_next_action(&a.gc, kc_gd_now_ms(), &act));
    assert_int_equal(act.kind, KC_G848_ACT_LOSE);
    assert_int_equal(act.parts->n, 3);
    kc_g848_action_done(&a.gc, act.seq, kc_gd_now_ms());
    kc_gd_run_until(&a, NULL, bootstrap, group, kc_gd_owns_all, 30000);
    assert_true(kc_gd_owns_all(&a));
    assert_string_equal(a.gc.member_id, id);
    int32_t epoch;
    int n_assigned;
    assert_int_equal(kc_gd_describe(a.fd, group, id, &epoch, &n_assigned), 1);
    assert_int_equal(n_assigned, 3);
    assert_int_equal(epoch, a.gc.epoch); /* the broker and the member agree again */
    fprintf(stderr, "fenced: epoch %d → rejoined at %d with all 3\n", before, epoch);

    /* max.poll.interval.ms overrun. */
    kc_g848_poll_expired(&a.gc, kc_gd_now_ms());
    kc_gd_run_until(&a, NULL, bootstrap, group, kc_gd_stale, 10000);
    assert_true(kc_gd_stale(&a));
    assert_int_equal(kc_gd_describe(a.fd, group, id, &epoch, &n_assigned), 0); /* left: -1 */
    usleep(1200 * 1000);
    kc_gd_member_step(&a, NULL, bootstrap, group, 0); /* no heartbeat while stale */
    assert_true(kc_gd_stale(&a));
    kc_g848_poll_resumed(&a.gc, kc_gd_now_ms());
    kc_gd_run_until(&a, NULL, bootstrap, group, kc_gd_owns_all, 30000);
    assert_true(kc_gd_owns_all(&a));
    assert_int_equal(kc_gd_describe(a.fd, group, id, &epoch, &n_assigned), 1);
    assert_int_equal(n_assigned, 3);
    kc_g848_free(&a.gc);
    close(a.fd);
}

/* subscribed_topic_regex (v1), evaluated by the broker: the member gets the matching topic, and a
 * topic created after it joined arrives too — by an id `lookup` does not know yet, so the
 * partitions wait for the METADATA action (never acknowledged before they are resolved). */
static void regex_picks_up_new_topic(void **state)
{
    (void)state;
    const char *bootstrap = kc_test_env("KC_BOOTSTRAP");
    char group[64], regex[96];
    snprintf(group, sizeof group, "kc-g848-rx-%d", (int)getpid());
    snprintf(regex, sizeof regex, "kc-g848-%d.*", (int)getpid()); /* matches `topic` */
    kc_gd_member_t a;
    kc_gd_member_start_regex(&a, bootstrap, group, NULL, regex);
    kc_gd_run_until(&a, NULL, bootstrap, group, kc_gd_owns_all, 30000);
    assert_true(kc_gd_owns_all(&a));
    snprintf(kc_gd_topic2, sizeof kc_gd_topic2, "kc-g848-%d-late", (int)getpid());
    kc_test_cluster("topic create %s --partitions 2", kc_gd_topic2);
    int64_t t0 = kc_gd_now_ms();
    kc_gd_run_until(&a, NULL, bootstrap, group, kc_gd_owns_five, 60000);
    assert_true(kc_gd_owns_five(&a));
    assert_true(a.metadata_asks >= 1);
    fprintf(stderr,
            "regex: new topic's 2 partitions owned %lld ms after creation (%d metadata asks)\n",
            (long long)(kc_gd_now_ms() - t0), a.metadata_asks);
    kc_g848_free(&a.gc);
    close(a.fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(single_member_gets_all_and_leaves),
        cmocka_unit_test(fenced_and_max_poll_rejoin),
        cmocka_unit_test(regex_picks_up_new_topic),
    };
    return cmocka_run_group_tests(tests, kc_gd_create_topic, NULL);
}
