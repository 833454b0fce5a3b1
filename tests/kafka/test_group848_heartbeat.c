/* kc-test-label: threads */
/* KIP-848 against a real broker (ConsumerGroupHeartbeat v1):
 * - on the library's own driver (tests/support/group_harness.h): one member subscribed to a
 *   3-partition topic holds all 3 at a stable epoch that ConsumerGroupDescribe agrees with, and
 *   its leave (epoch -1) removes it from the group; a max.poll.interval.ms overrun leaves the
 *   group (-1) and stays out until the callback returns, then rejoins and gets all 3 back; a
 *   regex subscription picks up a topic created after the member joined (held under its name,
 *   which the driver's Metadata gives);
 * - the pure member (engine/group/848/member) over a blocking socket, for what a driver never
 *   sends: a heartbeat with a wrong epoch is answered FENCED_MEMBER_EPOCH, the member loses its
 *   partitions and rejoins at epoch 0 under the same member id.
 * Needs KC_BOOTSTRAP, KC_TESTKIT and KC_CLUSTER_DIR (tests/run-suite sets them). */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "group_driver.h"
#include "group_harness.h"
#include "proto/kafka_errors.h"

static bool owns(const kc_gh_view_t *v, void *want)
{
    return v->stable && v->held == *(int *)want;
}

static bool out_of_group(const kc_gh_view_t *v, void *arg)
{
    (void)arg;
    return v->held == 0 && v->epoch <= 0;
}

/* A member of a new group "kc-g848-<tag>-<pid>" (in `group`) on kc_gd_topic, once it holds all
 * 3 partitions at a stable epoch. */
static kc_gh_member_t *join_all(kc_gh_t *h, const char *tag, char group[64])
{
    snprintf(group, 64, "kc-g848-%s-%d", tag, (int)getpid());
    const char *topics[] = {kc_gd_topic};
    int three = 3;
    kc_gh_opts_t o = {.proto = &kc_g848_proto, .group = group};
    kc_gh_member_t *m = kc_gh_join(h, &o, topics, 1);
    assert_true(kc_gh_run_until(m, owns, &three, 30000));
    return m;
}

static void single_member_gets_all_and_leaves(void **state)
{
    (void)state;
    char group[64];
    kc_gh_t *h = kc_gh_start();
    kc_gh_member_t *m = join_all(h, "group", group);
    kc_gh_view_t v = kc_gh_view(m);
    assert_true(v.epoch > 0);
    assert_int_equal(v.assigns, 3);
    fprintf(stderr, "joined: epoch %d\n", (int)v.epoch);
    /* The broker agrees: one member, our id, our epoch, all 3 partitions. */
    int fd = kc_gd_coordinator(kc_test_env("KC_BOOTSTRAP"), group);
    int32_t epoch;
    int n_assigned;
    assert_int_equal(kc_gd_describe(fd, group, v.member_id, &epoch, &n_assigned), 1);
    assert_int_equal(epoch, v.epoch);
    assert_int_equal(n_assigned, 3);
    /* Leave: revoke, drop, then the epoch -1 heartbeat: the group is empty. */
    assert_true(kc_gh_close(m, 10000));
    assert_int_equal(kc_gd_describe(fd, group, v.member_id, &epoch, &n_assigned), 0);
    close(fd);
    kc_gh_stop(h);
}

/* A wrong epoch is answered FENCED_MEMBER_EPOCH: on_lost, then a rejoin at epoch 0 under the same
 * member id that gets the partitions back. */
static void fenced_rejoins(void **state)
{
    (void)state;
    const char *bootstrap = kc_test_env("KC_BOOTSTRAP");
    char group[64], id[64];
    snprintf(group, sizeof group, "kc-g848-fence-%d", (int)getpid());
    kc_gd_member_t a;
    kc_gd_member_start(&a, bootstrap, group, NULL);
    kc_gd_run_until(&a, bootstrap, group, kc_gd_owns_all, 30000);
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
    kc_gd_run_until(&a, bootstrap, group, kc_gd_owns_all, 30000);
    assert_true(kc_gd_owns_all(&a));
    assert_string_equal(a.gc.member_id, id);
    int32_t epoch;
    int n_assigned;
    assert_int_equal(kc_gd_describe(a.fd, group, id, &epoch, &n_assigned), 1);
    assert_int_equal(n_assigned, 3);
    assert_int_equal(epoch, a.gc.epoch); /* the broker and the member agree again */
    fprintf(stderr, "fenced: epoch %d → rejoined at %d with all 3\n", before, epoch);
    kc_g848_free(&a.gc);
    close(a.fd);
}

/* A callback overran max.poll.interval.ms: the member leaves with -1 and stays out (no
 * heartbeats) until it returns, then rejoins and gets all 3 back. */
static void max_poll_leaves_and_rejoins(void **state)
{
    (void)state;
    char group[64];
    int three = 3;
    kc_gh_t *h = kc_gh_start();
    kc_gh_member_t *m = join_all(h, "poll", group);
    kc_gh_view_t v = kc_gh_view(m);
    kc_gh_overrun(m, 1);
    assert_true(kc_gh_run_until(m, out_of_group, NULL, 10000));
    int fd = kc_gd_coordinator(kc_test_env("KC_BOOTSTRAP"), group);
    int32_t epoch;
    int n_assigned;
    assert_int_equal(kc_gd_describe(fd, group, v.member_id, &epoch, &n_assigned), 0); /* -1 */
    usleep(1200 * 1000);
    assert_int_equal(kc_gd_describe(fd, group, v.member_id, &epoch, &n_assigned), 0);
    v = kc_gh_view(m);
    assert_true(out_of_group(&v, NULL)); /* still out while the callback runs */
    kc_gh_overrun(m, 0);
    assert_true(kc_gh_run_until(m, owns, &three, 30000));
    v = kc_gh_view(m);
    assert_int_equal(kc_gd_describe(fd, group, v.member_id, &epoch, &n_assigned), 1);
    assert_int_equal(n_assigned, 3);
    close(fd);
    assert_true(kc_gh_close(m, 10000));
    kc_gh_stop(h);
}

/* subscribed_topic_regex (v1), evaluated by the broker: the member gets the matching topic, and a
 * topic created after it joined arrives too, by an id the member's topics do not name yet: its
 * partitions reach the application under their name, which only the driver's Metadata gives. */
static void regex_picks_up_new_topic(void **state)
{
    (void)state;
    char group[64], regex[96], late[96];
    snprintf(group, sizeof group, "kc-g848-rx-%d", (int)getpid());
    /* `kc_gd_topic` and the late one, nothing of another process whose pid starts alike */
    snprintf(regex, sizeof regex, "^kc-g848-%d(-late)?$", (int)getpid());
    const char *topics[] = {regex};
    int three = 3, five = 5;
    kc_gh_t *h = kc_gh_start();
    kc_gh_opts_t o = {.proto = &kc_g848_proto, .group = group};
    kc_gh_member_t *m = kc_gh_join(h, &o, topics, 1);
    assert_true(kc_gh_run_until(m, owns, &three, 30000));
    snprintf(late, sizeof late, "kc-g848-%d-late", (int)getpid());
    kc_test_cluster("topic create %s --partitions 2", late);
    int64_t t0 = kc_gd_now_ms();
    assert_true(kc_gh_run_until(m, owns, &five, 60000));
    kc_gh_view_t v = kc_gh_view(m);
    int late_parts = 0;
    for (int i = 0; i < v.held; i++)
        late_parts += strcmp(v.parts[i].topic, late) == 0;
    assert_int_equal(late_parts, 2);
    fprintf(stderr, "regex: new topic's 2 partitions held %lld ms after creation\n",
            (long long)(kc_gd_now_ms() - t0));
    assert_true(kc_gh_close(m, 10000));
    kc_gh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(single_member_gets_all_and_leaves),
        cmocka_unit_test(fenced_rejoins),
        cmocka_unit_test(max_poll_leaves_and_rejoins),
        cmocka_unit_test(regex_picks_up_new_topic),
    };
    return cmocka_run_group_tests(tests, kc_gd_create_topic, NULL);
}
