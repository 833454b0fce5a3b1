/* The broker "state" of the stats (engine/brokers.c kc_engine_conn_state_name): every io/conn
 * state has its own name, and real connections on loopback show the names as they go: a
 * listener that accepts but never answers holds one in "apiversions"; a closed port leaves one
 * in "backoff" after its first refused attempt; an engine broker with no connection is "idle". */
#include "kc_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "conn.h"
#include "engine.h"
#include "loop.h"

static void every_state_named(void **state)
{
    (void)state;
    assert_string_equal(kc_engine_conn_state_name(0, KC_CONN_READY, 0), "idle");
    assert_string_equal(kc_engine_conn_state_name(1, KC_CONN_DOWN, 0), "down");
    assert_string_equal(kc_engine_conn_state_name(1, KC_CONN_DOWN, 2), "backoff");
    assert_string_equal(kc_engine_conn_state_name(1, KC_CONN_CONNECTING, 0), "connecting");
    assert_string_equal(kc_engine_conn_state_name(1, KC_CONN_SECURING, 0), "tls");
    assert_string_equal(kc_engine_conn_state_name(1, KC_CONN_HANDSHAKE, 0), "apiversions");
    assert_string_equal(kc_engine_conn_state_name(1, KC_CONN_AUTH, 0), "auth");
    assert_string_equal(kc_engine_conn_state_name(1, KC_CONN_READY, 0), "up");
    assert_string_equal(kc_engine_conn_state_name(1, KC_CONN_RESETTING, 1), "down");
    assert_string_equal(kc_engine_conn_state_name(1, KC_CONN_FAILED, 0), "failed");
}

/* A loopback listener (backlog accepts the connection; nobody ever answers). *port set. */
static int listener(int *port, int do_listen)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    *port = ntohs(a.sin_port);
    if (do_listen)
        assert_int_equal(listen(fd, 4), 0);
    return fd;
}

static const char *name_of(kc_conn_t *c)
{
    return kc_engine_conn_state_name(1, kc_conn_state(c), kc_conn_failures(c));
}

/* Runs the loop until the connection's state name is `want` (or 3 s pass); returns the name. */
static const char *run_until_named(kc_loop_t *loop, kc_conn_t *c, const char *want)
{
    int64_t end = kc_now_ms() + 3000;
    while (strcmp(name_of(c), want) != 0 && kc_now_ms() < end)
        kc_loop_run_once(loop, 20);
    return name_of(c);
}

static kc_conn_t *open_conn(kc_loop_t *loop, int port)
{
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    kc_conn_opts_t o = {0};
    o.servers = addr;
    o.client_id = "state-test";
    o.connect_timeout_ms = 2000;
    o.request_timeout_ms = 2000;
    o.reconnect_backoff_ms = 1000; /* long enough to be seen waiting */
    o.reconnect_backoff_max_ms = 1000;
    kc_conn_t *c = NULL;
    kc_error_t err;
    assert_int_equal(kc_conn_new(&c, loop, &o, &err), KC_OK);
    assert_string_equal(name_of(c), "down"); /* not started */
    kc_conn_start(c);
    return c;
}

static void close_conn(kc_loop_t *loop, kc_conn_t *c)
{
    kc_conn_close(c);
    for (int i = 0; i < 20; i++)
        kc_loop_run_once(loop, 5); /* the loop returns the socket's ops, then the conn frees */
}

static void real_connections_named(void **state)
{
    (void)state;
    kc_loop_t *loop = NULL;
    kc_error_t err;
    assert_int_equal(kc_loop_new(&loop, KC_LOOP_AUTO, &err), KC_OK);

    int port;
    int lfd = listener(&port, 1);
    kc_conn_t *c = open_conn(loop, port);
    assert_string_equal(run_until_named(loop, c, "apiversions"), "apiversions");
    close_conn(loop, c);
    close(lfd);

    int fd = listener(&port, 0); /* bound, not listening: refused */
    c = open_conn(loop, port);
    assert_string_equal(run_until_named(loop, c, "backoff"), "backoff");
    assert_true(kc_conn_failures(c) >= 1);
    close_conn(loop, c);
    close(fd);
    kc_loop_free(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(every_state_named),
                                       cmocka_unit_test(real_connections_named)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
