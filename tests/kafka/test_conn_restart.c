/* Broker killed and restarted under a connection (testkit kill-broker / start-broker), on both
 * backends: requests in flight fail fast with KC_ERR_TRANSPORT, the connection comes back by
 * itself (backoff), and the next request succeeds. Needs KC_BOOTSTRAP, KC_TESTKIT and
 * KC_CLUSTER_DIR (tests/run-suite sets them). KC_BOOTSTRAP may list several brokers: the test
 * kills the node it is actually connected to (its port mapped to a node id through the testkit's
 * cluster.env: node n listens on KT_PORT_BASE + 10 (n - 1)), restarts it, and waits until it is
 * ready again before finishing, so the cluster is whole for the tests that follow. */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "conn.h"
#include "loop.h"

typedef struct mreq {
    kc_err_t err;
    int done;
} mreq;

static kc_err_t enc_metadata(kc_wbuf_t *out, int16_t v, void *opaque)
{
    (void)opaque;
    kc_metadata_request_t m;
    kc_metadata_request_init(&m);
    m.topics.count = -1;
    return kc_metadata_request_encode(&m, v, out, NULL);
}

static void on_metadata(kc_conn_t *c, kc_err_t err, kc_buf_t *f, size_t off, int16_t v, void *op)
{
    (void)c, (void)off, (void)v;
    mreq *m = op;
    m->err = err;
    m->done = 1;
    kc_buf_unref(f);
}

static void send_md(kc_conn_t *c, mreq *m)
{
    kc_conn_req_spec_t s = {.api_key = 3,
                            .min_version = KC_METADATA_REQUEST_MIN_VERSION,
                            .max_version = KC_METADATA_REQUEST_MAX_VERSION,
                            .encode = enc_metadata,
                            .cb = on_metadata,
                            .opaque = m};
    assert_int_equal(kc_conn_send(c, &s, NULL), KC_OK);
}

static void testkit(const char *what)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s --dir '%s' >/dev/null", kc_test_env("KC_TESTKIT"), what,
             kc_test_env("KC_CLUSTER_DIR"));
    assert_int_equal(system(cmd), 0);
}

/* The testkit node id serving `peer` ("host:port"), from KC_CLUSTER_DIR/cluster.env. */
static int node_of_peer(const char *peer)
{
    char path[512], line[256];
    snprintf(path, sizeof path, "%s/cluster.env", kc_test_env("KC_CLUSTER_DIR"));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int base = -1, brokers = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "KT_PORT_BASE=", 13))
            base = atoi(line + 13);
        else if (!strncmp(line, "KT_BROKERS=", 11))
            brokers = atoi(line + 11);
    }
    fclose(f);
    const char *colon = strrchr(peer, ':');
    assert_non_null(colon);
    int port = atoi(colon + 1);
    assert_true(base > 0 && port >= base && (port - base) % 10 == 0);
    int node = (port - base) / 10 + 1;
    assert_true(node >= 1 && node <= brokers);
    return node;
}

static void run_backend(kc_loop_backend_t b)
{
    kc_loop_t *loop = NULL;
    if (kc_loop_new(&loop, b, NULL) != KC_OK)
        skip();
    /* The epoll run starts from the second bootstrap entry (when there is one), so the node
     * killed is not always node 1 and the address -> node mapping is exercised. */
    char servers[1024];
    const char *bs = kc_test_env("KC_BOOTSTRAP"), *comma = strchr(bs, ',');
    if (b == KC_LOOP_EPOLL && comma)
        snprintf(servers, sizeof servers, "%s,%.*s", comma + 1, (int)(comma - bs), bs);
    else
        snprintf(servers, sizeof servers, "%s", bs);
    kc_conn_opts_t o = {.servers = servers,
                        .request_timeout_ms = 30000,
                        .reconnect_backoff_ms = 50,
                        .reconnect_backoff_max_ms = 1000};
    kc_conn_t *c = NULL;
    assert_int_equal(kc_conn_new(&c, loop, &o, NULL), KC_OK);
    kc_conn_start(c);
    int64_t end = kc_now_ns() + 15000000000LL;
    while (kc_conn_state(c) != KC_CONN_READY && kc_now_ns() < end)
        kc_loop_run_once(loop, 100);
    assert_int_equal(kc_conn_state(c), KC_CONN_READY);

    enum { N = 200 };
    static mreq reqs[N];
    memset(reqs, 0, sizeof reqs);
    for (int i = 0; i < N; i++)
        send_md(c, &reqs[i]);
    char what[64];
    int node = node_of_peer(kc_conn_peer(c));
    print_message("# connected to %s = node %d: killing it\n", kc_conn_peer(c), node);
    snprintf(what, sizeof what, "kill-broker %d", node);
    testkit(what); /* the requests are encoded and in flight on the old socket */
    int64_t t0 = kc_now_ns();
    int done = 0;
    while (done < N && kc_now_ns() - t0 < 10000000000LL) {
        kc_loop_run_once(loop, 100);
        done = 0;
        for (int i = 0; i < N; i++)
            done += reqs[i].done;
    }
    int64_t fail_ms = (kc_now_ns() - t0) / 1000000;
    int transport = 0;
    for (int i = 0; i < N; i++) {
        assert_true(reqs[i].done);
        assert_true(reqs[i].err == KC_OK || reqs[i].err == KC_ERR_TRANSPORT);
        transport += reqs[i].err == KC_ERR_TRANSPORT;
    }
    print_message("# %s: %d of %d failed with KC_ERR_TRANSPORT within %lld ms of the kill\n",
                  kc_loop_backend_name(loop), transport, N, (long long)fail_ms);
    assert_true(transport > 0);
    assert_true(fail_ms < 5000); /* fast: far below request.timeout.ms */

    snprintf(what, sizeof what, "start-broker %d", node); /* returns once the node is ready */
    testkit(what);
    mreq after = {0};
    send_md(c, &after);
    end = kc_now_ns() + 30000000000LL;
    while (!after.done && kc_now_ns() < end)
        kc_loop_run_once(loop, 100);
    assert_true(after.done);
    assert_int_equal(after.err, KC_OK);
    kc_conn_stats_t st;
    kc_conn_get_stats(c, &st);
    assert_true(st.connects >= 2);
    kc_loop_stats_t ls;
    kc_loop_get_stats(loop, &ls);
    if (b == KC_LOOP_URING)
        assert_true(ls.submissions > 0);
    kc_conn_close(c);
    for (int i = 0; i < 20; i++)
        kc_loop_run_once(loop, 5);
    kc_loop_free(loop);
}

static void restart_io_uring(void **s)
{
    (void)s;
    run_backend(KC_LOOP_URING);
}

static void restart_epoll(void **s)
{
    (void)s;
    run_backend(KC_LOOP_EPOLL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(restart_io_uring),
        cmocka_unit_test(restart_epoll),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
