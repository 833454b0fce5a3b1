/* kc-test-label: threads */
/* socket.connection.setup.timeout.ms and reconnect.backoff(.max).ms reach the connections the
 * consumer opens (they were validated and then ignored: every connection used 10 s / 50 ms /
 * 1 s). A local "broker" accepts TCP and never answers; with security.protocol=SSL each attempt
 * hangs in the TLS handshake, which the setup timeout covers (TCP connect and TLS; requests,
 * ApiVersions included, have request.timeout.ms), and the next attempt follows after the
 * reconnect backoff: over 2.5 s, setup 300 ms + backoff 100 ms makes about six attempts, the
 * defaults one. */
#include "kc_test.h"

#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "kconsume.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Connections accepted on `lfd` within `ms` (each kept open, silent, until the end). */
static int count_accepts(int lfd, int ms)
{
    int fds[64], n = 0;
    int64_t end = now_ms() + ms;
    while (now_ms() < end && n < 64) {
        struct pollfd p = {lfd, POLLIN, 0};
        if (poll(&p, 1, 50) == 1) {
            int fd = accept(lfd, NULL, NULL);
            if (fd >= 0)
                fds[n++] = fd;
        }
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
    return n;
}

static int attempts_with(const char *setup_ms, const char *backoff_ms)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(lfd, 64), 0);
    socklen_t al = sizeof a;
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &al), 0);
    char bs[64];
    snprintf(bs, sizeof bs, "127.0.0.1:%d", ntohs(a.sin_port));

    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", bs, &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "security.protocol", "SSL", &err), KC_OK);
    assert_int_equal(
        kc_conf_set(conf, "log.level", getenv("TLOG") ? getenv("TLOG") : "error", &err), KC_OK);
    if (setup_ms) {
        assert_int_equal(kc_conf_set(conf, "socket.connection.setup.timeout.ms", setup_ms, &err),
                         KC_OK);
        assert_int_equal(kc_conf_set(conf, "reconnect.backoff.ms", backoff_ms, &err), KC_OK);
        assert_int_equal(kc_conf_set(conf, "reconnect.backoff.max.ms", backoff_ms, &err), KC_OK);
    }
    kc_consumer_t *c;
    if (kc_consumer_new(conf, NULL, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    kc_topic_partition_t tp = {"t", 0, KC_OFFSET_BEGINNING};
    assert_int_equal(kc_assign(c, &tp, 1, &err), KC_OK); /* needs metadata: connects */
    int n = count_accepts(lfd, 2500);
    kc_close(c, 1000, NULL);
    kc_destroy(c);
    close(lfd);
    return n;
}

static void setup_timeout_and_backoff_applied(void **state)
{
    (void)state;
    int set = attempts_with("300", "100");
    int dflt = attempts_with(NULL, NULL);
    printf("# connection attempts in 2.5 s: setup 300 ms + backoff 100 ms: %d; defaults: %d\n", set,
           dflt);
    assert_true(set >= 4);
    assert_true(dflt <= 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(setup_timeout_and_backoff_applied)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
