/* kc-test-label: threads-long */
/* SASL GSSAPI when the KDC does not answer: the client's krb5.conf (a copy of the testkit's)
 * names a KDC address where a socket listens but never answers, so every login waits out the
 * Kerberos library's own bound (~25 s in MIT krb5 1.20 over TCP). The consumer reports
 * KC_ERR_AUTH naming the mechanism, the principal, the service and the library's reason (no KDC
 * could be reached), nothing is delivered, and kc_close returns in bounded time. The login runs
 * on the loop's offload thread (io/offload.h; tests/unit/test_offload measures that the loop
 * keeps its timers meanwhile), so the wait is the library's, not the network thread's.
 * Needs the variables of test_consumer_gssapi (tests/run-suite with the gssapi listener); skips
 * (77) when KC_GSSAPI_BOOTSTRAP is unset. */
#include "kc_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "kconsume.h"

static _Atomic int64_t total, auth_errors;
static _Atomic int64_t first_error_ms;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char last_error[512]; /* under mu */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o;
    (void)p;
    while (kc_records_next(b))
        atomic_fetch_add(&total, 1);
    return KC_CB_CONTINUE;
}

static void on_event(void *o, const kc_event_t *ev)
{
    (void)o;
    if (ev->type != KC_EVENT_ERROR || !ev->error || ev->error->code != KC_ERR_AUTH)
        return;
    int64_t zero = 0;
    atomic_compare_exchange_strong(&first_error_ms, &zero, now_ms());
    atomic_fetch_add(&auth_errors, 1);
    pthread_mutex_lock(&mu);
    snprintf(last_error, sizeof last_error, "%s", ev->error->msg);
    pthread_mutex_unlock(&mu);
}

/* A TCP socket on loopback that accepts connections into its backlog and never answers. */
static int silent_listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 16) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        fail_msg("cannot make the silent KDC socket");
    *port = ntohs(a.sin_port);
    return fd;
}

/* Copies the testkit's krb5.conf, replacing its KDC address with 127.0.0.1:port. */
static void write_conf(const char *from, const char *to, int port)
{
    FILE *in = fopen(from, "r"), *out = fopen(to, "w");
    if (!in || !out)
        fail_msg("cannot copy %s to %s", from, to);
    char line[1024];
    int replaced = 0;
    while (fgets(line, sizeof line, in)) {
        if (strstr(line, "kdc = 127.0.0.1:")) {
            fprintf(out, "        kdc = 127.0.0.1:%d\n", port);
            replaced++;
        } else {
            fputs(line, out);
        }
    }
    fclose(in);
    fclose(out);
    assert_int_equal(replaced, 1);
}

static void kdc_does_not_answer(void **state)
{
    (void)state;
    int port, fd = silent_listener(&port);
    char conf_path[512];
    kc_test_path(conf_path, sizeof conf_path, kc_test_tmpdir("gssapi-kdc"), "krb5.conf");
    write_conf(kc_test_env("KC_KRB5_CONFIG"), conf_path, port);
    setenv("KRB5_CONFIG", conf_path, 1);

    kc_conf_t *conf = kc_conf_new();
    kc_test_conf_set(conf, "bootstrap.servers", kc_test_env("KC_GSSAPI_BOOTSTRAP"));
    kc_test_conf_set(conf, "security.protocol", "SASL_PLAINTEXT");
    kc_test_conf_set(conf, "sasl.mechanism", "GSSAPI");
    kc_test_conf_set(conf, "sasl.kerberos.principal", kc_test_env("KC_CLIENT_PRINCIPAL"));
    kc_test_conf_set(conf, "sasl.kerberos.keytab", kc_test_env("KC_CLIENT_KEYTAB"));
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event};
    kc_consumer_t *c = NULL;
    kc_error_t err;
    int64_t t0 = now_ms();
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    kc_topic_partition_t tp = {"kc-gssapi-kdc-none", 0, KC_OFFSET_BEGINNING};
    assert_int_equal(kc_assign(c, &tp, 1, &err), KC_OK);
    for (int i = 0; i < 600 && atomic_load(&auth_errors) == 0; i++)
        usleep(100 * 1000);
    char le[512];
    pthread_mutex_lock(&mu);
    snprintf(le, sizeof le, "%s", last_error);
    pthread_mutex_unlock(&mu);
    int64_t t_err = atomic_load(&first_error_ms) - t0;
    int64_t t1 = now_ms();
    (void)kc_close(c, 3000, &err);
    kc_destroy(c);
    int64_t t_close = now_ms() - t1;
    close(fd);
    printf("# KDC silent: KC_ERR_AUTH after %lld ms, close took %lld ms: %s\n", (long long)t_err,
           (long long)t_close, le);
    assert_true(atomic_load(&auth_errors) > 0);
    assert_int_equal(atomic_load(&total), 0);
    assert_non_null(strstr(le, "SASL GSSAPI"));
    assert_non_null(strstr(le, kc_test_env("KC_CLIENT_PRINCIPAL")));
    assert_non_null(strstr(le, "kafka@localhost"));
    assert_non_null(strstr(le, "KDC"));
    /* MIT krb5 1.20 waits ~25 s for a KDC that accepts TCP and never answers, whatever
     * kdc_timeout says (kinit takes the same 25 s): the library's bound, on the offload thread. */
    assert_true(t_err < 40000);
    assert_true(t_close < 15000);
}

int main(void)
{
    if (!getenv("KC_GSSAPI_BOOTSTRAP") || !*getenv("KC_GSSAPI_BOOTSTRAP")) {
        printf("# skipped: KC_GSSAPI_BOOTSTRAP is not set (the cluster has no gssapi listener: "
               "tests/testkit/cluster up --listeners ...,gssapi; tests/run-suite starts one)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(kdc_does_not_answer)};
    kc_test_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
