/* kc-test-label: threads */
/* client.dns.lookup against the suite's PLAINTEXT listener, with bootstrap.servers given as the
 * IP literal 127.0.0.1:port (the testkit's own form):
 *  - canonical: resolve_canonical_bootstrap_servers_only replaces the literal by the name its
 *    reverse lookup gives (computed here with getnameinfo, the literal itself when the system has
 *    no name for it); the consumer logs the canonical address it connects to, and consumes the
 *    topic through it;
 *  - as_configured: use_all_dns_ips (the default) keeps the literal: no canonical line, and the
 *    same topic consumed.
 * Needs KC_BOOTSTRAP (a 127.0.0.1 address), KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "kc_test.h"

#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kconsume.h"

#define RECS 100

static char topic[64], want_line[600];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int canonical_lines, matching_lines;
static long records;

static void on_log(void *opaque, int level, const char *subsystem, const char *name,
                   const char *message)
{
    (void)opaque, (void)level, (void)name;
    if (strcmp(subsystem, "conn") != 0 || !strstr(message, "canonical bootstrap address"))
        return;
    pthread_mutex_lock(&mu);
    canonical_lines++;
    matching_lines += strstr(message, want_line) != NULL;
    printf("# log [%s] %s\n", subsystem, message);
    pthread_mutex_unlock(&mu);
}

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o, (void)p;
    long n = 0;
    while (kc_records_next(b))
        n++;
    pthread_mutex_lock(&mu);
    records += n;
    pthread_mutex_unlock(&mu);
    return KC_CB_CONTINUE;
}

static int setup(void **state)
{
    (void)state;
    snprintf(topic, sizeof topic, "kc-dns-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions 1 --replication 1", topic);
    kc_test_cluster("produce %s --records %d --size 50", topic, RECS);
    return 0;
}

/* Consumes the topic with bootstrap.servers = the first suite address and `lookup`. */
static void consume(const char *lookup)
{
    char first[128];
    const char *b = kc_test_env("KC_BOOTSTRAP");
    snprintf(first, sizeof first, "%.*s", (int)strcspn(b, ","), b);
    if (strncmp(first, "127.0.0.1:", 10) != 0)
        fail_msg("KC_BOOTSTRAP %s: expected a 127.0.0.1 address", b);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    char name[256];
    if (getnameinfo((struct sockaddr *)&sin, sizeof sin, name, sizeof name, NULL, 0, NI_NAMEREQD) !=
        0)
        snprintf(name, sizeof name, "127.0.0.1");
    pthread_mutex_lock(&mu);
    snprintf(want_line, sizeof want_line, "canonical bootstrap address %s:%s", name, first + 10);
    canonical_lines = matching_lines = 0;
    records = 0;
    pthread_mutex_unlock(&mu);
    kc_conf_t *conf = kc_conf_new();
    kc_test_conf_set(conf, "bootstrap.servers", first);
    kc_test_conf_set(conf, "client.dns.lookup", lookup);
    kc_test_conf_set(conf, "auto.offset.reset", "earliest");
    kc_error_t err;
    assert_int_equal(kc_conf_set_log_cb(conf, on_log, NULL, &err), KC_OK);
    kc_callbacks_t cbs = {.on_records = on_records};
    kc_consumer_t *c = NULL;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    kc_topic_partition_t tp = {topic, 0, KC_OFFSET_BEGINNING};
    assert_int_equal(kc_assign(c, &tp, 1, &err), KC_OK);
    long got = 0;
    for (int i = 0; i < 300 && got < RECS; i++) {
        kc_test_sleep_ms(100);
        pthread_mutex_lock(&mu);
        got = records;
        pthread_mutex_unlock(&mu);
    }
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
    printf("# client.dns.lookup=%s: %ld of %d records, %d canonical line(s), want \"%s\"\n", lookup,
           got, RECS, canonical_lines, want_line);
    assert_int_equal(got, RECS);
}

static void canonical(void **state)
{
    (void)state;
    consume("resolve_canonical_bootstrap_servers_only");
    assert_true(matching_lines >= 1);
    assert_int_equal(matching_lines, canonical_lines); /* no other name */
}

static void as_configured(void **state)
{
    (void)state;
    consume("use_all_dns_ips");
    assert_int_equal(canonical_lines, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(canonical),
        cmocka_unit_test(as_configured),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
