/* kc-test-label: threads */
/*
 * A KIP-848 member whose coordinator's broker dies while the surviving brokers still name it in
 * FindCoordinator (a real cluster does so until the controller fences the dead broker, ~9 s):
 * the member asks again once per retry backoff (retry.backoff.ms doubling to
 * retry.backoff.max.ms), never as fast as the answers come back. Two memory-broker nodes; node 0
 * coordinates every group (README), node 1 keeps naming it after node 0 is stopped, and its
 * FindCoordinator count over a few seconds is what is checked.
 * Owner: the test's main thread; the callback only bumps an atomic.
 */
#include "fault_proxy_client.h"
#include "kc_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "kconsume.h"

#define TOPIC "D"

static atomic_int g_assigned;

static void on_assign(void *o, kc_part_t *p)
{
    (void)o, (void)p;
    atomic_fetch_add(&g_assigned, 1);
}

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o, (void)p, (void)b;
    return KC_CB_CONTINUE;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A loopback port nobody listens on right now (the broker binds it a moment later). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* The "requests api=NAME key=K count=N" line of a memory broker's stats file (0 when absent). */
static long requests(const char *stats, const char *api)
{
    FILE *f = fopen(stats, "r");
    if (!f)
        return 0;
    char line[256], name[64];
    long n = 0, count;
    int key;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "requests api=%63s key=%d count=%ld", name, &key, &count) == 3 &&
            strcmp(name, api) == 0)
            n = count;
    fclose(f);
    return n;
}

static void rediscovery_backs_off(void **state)
{
    (void)state;
    const char *dir = kc_test_tmpdir("deadcoord");
    char stats[512], peers[128], bs0[256], bs1[256];
    kc_test_path(stats, sizeof stats, dir, "node1.stats");
    int p0 = free_port(), p1 = free_port();
    snprintf(peers, sizeof peers, "127.0.0.1:%d,127.0.0.1:%d", p0, p1);
    const char *a0[] = {"--node-id",    "0", "--peers",   peers, "--topic", TOPIC,
                        "--partitions", "2", "--records", "100", NULL};
    const char *a1[] = {
        "--node-id", "1",         "--peers", peers,          "--topic", TOPIC, "--partitions",
        "2",         "--records", "100",     "--stats-file", stats,     NULL};
    pid_t n0 = kc_testkit_spawn("kc-memory-broker", a0, bs0, sizeof bs0);
    assert_true(n0 > 0);
    pid_t n1 = kc_testkit_spawn("kc-memory-broker", a1, bs1, sizeof bs1);
    assert_true(n1 > 0);

    kc_conf_t *conf = kc_conf_new();
    kc_test_conf_set(conf, "bootstrap.servers", bs1); /* node 1 only: FindCoordinator goes there */
    kc_test_conf_set(conf, "group.id", "dead-coordinator");
    kc_test_conf_set(conf, "group.protocol", "consumer");
    kc_test_conf_set(conf, "enable.auto.commit",
                     "false"); /* heartbeats alone ask for the coordinator */
    kc_test_conf_set(conf, "auto.offset.reset", "earliest");
    /* FindCoordinator shares node 1's connection with the fetches, and a broker answers one
     * request of a connection at a time: a fetch waiting for records spaces the answers out by
     * its wait (500 ms by default), which would hide how often the member asks. */
    kc_test_conf_set(conf, "fetch.max.wait.ms", "20");
    kc_test_conf_set(conf, "retry.backoff.ms", "100");
    kc_test_conf_set(conf, "retry.backoff.max.ms", "1000");
    kc_callbacks_t cbs = {.on_assign = on_assign, .on_records = on_records};
    kc_consumer_t *c;
    kc_error_t e;
    if (kc_consumer_new(conf, &cbs, &c, &e) != KC_OK)
        fail_msg("kc_consumer_new: %s", e.msg);
    const char *topics[] = {TOPIC};
    assert_int_equal(kc_subscribe(c, topics, 1, &e), KC_OK);
    int64_t end = now_ms() + 20000;
    while (atomic_load(&g_assigned) < 2 && now_ms() < end)
        sleep_ms(50);
    assert_int_equal(atomic_load(&g_assigned), 2);

    assert_int_equal(kc_testkit_stop(n0), 0); /* the coordinator is gone; node 1 still names it */
    sleep_ms(2200); /* the member has noticed; the stats file has been rewritten since */
    long before = requests(stats, "FindCoordinator");
    sleep_ms(4000);
    long after = requests(stats, "FindCoordinator");
    /* 4 s at a backoff of at most 1 s (±20%): about 4-5 rediscoveries; allow for the timing of
     * the stats file (rewritten every second). Asking at once after every answer made this
     * thousands. */
    printf("# FindCoordinator at node 1 in 4 s with the coordinator dead: %ld (before %ld)\n",
           after - before, before);
    assert_true(after - before <= 12);

    (void)kc_close(c, 2000, &e); /* the leave has nowhere to go: bounded by the timeout */
    kc_destroy(c);
    assert_int_equal(kc_testkit_stop(n1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(rediscovery_backs_off)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
