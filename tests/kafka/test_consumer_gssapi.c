/* kc-test-label: threads-long */
/* SASL GSSAPI (Kerberos) through the public consumer, against the testkit's MIT KDC and the
 * brokers' GSSAPI listeners (tests/testkit/cluster-kerberos.sh):
 *  - plaintext_assign: SASL_PLAINTEXT + GSSAPI, manual assignment, every record exactly once;
 *  - ssl_group: SASL_SSL + GSSAPI, a KIP-848 group member reads everything and commits;
 *  - two_principals: two consumers in one process, each logged in as its own principal from
 *    the same keytab, consume side by side (private ticket caches: neither sees the other's);
 *  - missing_keytab / wrong_principal: KC_ERR_AUTH naming the mechanism, the principal and the
 *    service, with the Kerberos library's reason; nothing is delivered;
 *  - ticket_renewal: a principal whose tickets live CLIENT_SHORT_LIFE_S seconds consumes for
 *    several lifetimes while the broker asks for re-authentication (connections.max.reauth.ms on
 *    the GSSAPI listeners): records produced all along arrive, and the KDC's log shows new logins
 *    (AS-REQ) and service tickets (TGS-REQ) for that principal during the run.
 * Needs KC_GSSAPI_BOOTSTRAP, KC_GSSAPI_SSL_BOOTSTRAP, KC_KRB5_CONFIG, KC_CLIENT_KEYTAB,
 * KC_CLIENT_PRINCIPAL, KC_CLIENT_OTHER_PRINCIPAL, KC_CLIENT_SHORT_PRINCIPAL, KC_KDC_LOG,
 * KC_CA_FILE, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite with the gssapi listener); skips (77)
 * when the cluster has no gssapi listener (KC_GSSAPI_BOOTSTRAP unset). */
#include "kc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kconsume.h"

#define NP   2
#define RECS 400

static char topic[64];

/* Per-consumer counters: a test may run two consumers at once. */
typedef struct counts {
    _Atomic int64_t total, dups, auth_errors, other_errors;
    _Atomic int64_t next_off[NP];
    pthread_mutex_t mu;
    char last_error[512]; /* under mu: written by on_event on a worker */
} counts_t;

static counts_t ca, cb;

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    counts_t *k = o;
    const kc_record_t *r;
    while ((r = kc_records_next(b))) {
        int64_t off = kc_record_offset(r);
        /* one worker at a time per partition: a plain compare-and-store is enough */
        if (off < atomic_load(&k->next_off[p->partition]))
            atomic_fetch_add(&k->dups, 1);
        atomic_store(&k->next_off[p->partition], off + 1);
        atomic_fetch_add(&k->total, 1);
    }
    return KC_CB_CONTINUE;
}

static void on_event(void *o, const kc_event_t *ev)
{
    counts_t *k = o;
    if (ev->type != KC_EVENT_ERROR || !ev->error)
        return;
    if (ev->error->code == KC_ERR_AUTH)
        atomic_fetch_add(&k->auth_errors, 1);
    else
        atomic_fetch_add(&k->other_errors, 1);
    pthread_mutex_lock(&k->mu);
    snprintf(k->last_error, sizeof k->last_error, "%s", ev->error->msg);
    pthread_mutex_unlock(&k->mu);
}

static void reset(counts_t *k)
{
    atomic_store(&k->total, 0);
    atomic_store(&k->dups, 0);
    atomic_store(&k->auth_errors, 0);
    atomic_store(&k->other_errors, 0);
    for (int i = 0; i < NP; i++)
        atomic_store(&k->next_off[i], 0);
    pthread_mutex_lock(&k->mu);
    k->last_error[0] = 0;
    pthread_mutex_unlock(&k->mu);
}

static void last_error(counts_t *k, char *out, size_t cap)
{
    pthread_mutex_lock(&k->mu);
    snprintf(out, cap, "%s", k->last_error);
    pthread_mutex_unlock(&k->mu);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void produce(int n)
{
    kc_test_cluster("produce %s --records %d --size 100", topic, n);
}

static int setup(void **state)
{
    (void)state;
    pthread_mutex_init(&ca.mu, NULL);
    pthread_mutex_init(&cb.mu, NULL);
    /* The Kerberos library reads its configuration (realm, KDC address) from KRB5_CONFIG; an
     * application points it at its krb5.conf the same way (or uses /etc/krb5.conf). */
    setenv("KRB5_CONFIG", kc_test_env("KC_KRB5_CONFIG"), 1);
    snprintf(topic, sizeof topic, "kc-gssapi-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions %d --replication 1", topic, NP);
    produce(RECS);
    return 0;
}

static kc_conf_t *base_conf(int ssl, const char *principal, const char *keytab)
{
    kc_conf_t *c = kc_conf_new();
    kc_test_conf_set(c, "bootstrap.servers",
                     kc_test_env(ssl ? "KC_GSSAPI_SSL_BOOTSTRAP" : "KC_GSSAPI_BOOTSTRAP"));
    kc_test_conf_set(c, "security.protocol", ssl ? "SASL_SSL" : "SASL_PLAINTEXT");
    if (ssl)
        kc_test_conf_set(c, "ssl.ca.location", kc_test_env("KC_CA_FILE"));
    kc_test_conf_set(c, "sasl.mechanism", "GSSAPI");
    kc_test_conf_set(c, "sasl.kerberos.service.name", "kafka");
    kc_test_conf_set(c, "sasl.kerberos.principal",
                     principal ? principal : kc_test_env("KC_CLIENT_PRINCIPAL"));
    kc_test_conf_set(c, "sasl.kerberos.keytab", keytab ? keytab : kc_test_env("KC_CLIENT_KEYTAB"));
    kc_test_conf_set(c, "worker.threads", "2");
    return c;
}

static kc_consumer_t *start(kc_conf_t *conf, counts_t *k)
{
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event, .opaque = k};
    kc_consumer_t *c = NULL;
    kc_error_t err;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    return c;
}

static void assign_all(kc_consumer_t *c)
{
    kc_topic_partition_t tps[NP];
    for (int i = 0; i < NP; i++)
        tps[i] = (kc_topic_partition_t){topic, i, KC_OFFSET_BEGINNING};
    kc_error_t err;
    assert_int_equal(kc_assign(c, tps, NP, &err), KC_OK);
}

static void wait_n(counts_t *k, int64_t want, const char *what)
{
    for (int i = 0; i < 600 && atomic_load(&k->total) < want; i++)
        usleep(100 * 1000);
    usleep(300 * 1000);
    char le[512];
    last_error(k, le, sizeof le);
    printf("# %s: delivered %lld of %lld, dups %lld, errors %lld (%s)\n", what,
           (long long)atomic_load(&k->total), (long long)want, (long long)atomic_load(&k->dups),
           (long long)(atomic_load(&k->auth_errors) + atomic_load(&k->other_errors)), le);
    assert_int_equal(atomic_load(&k->total), want);
    assert_int_equal(atomic_load(&k->dups), 0);
    assert_int_equal(atomic_load(&k->auth_errors), 0);
}

static void plaintext_assign(void **state)
{
    (void)state;
    reset(&ca);
    kc_consumer_t *c = start(base_conf(0, NULL, NULL), &ca);
    assign_all(c);
    wait_n(&ca, RECS, "SASL_PLAINTEXT GSSAPI, manual assignment");
    kc_error_t err;
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
}

static void ssl_group(void **state)
{
    (void)state;
    reset(&ca);
    kc_conf_t *conf = base_conf(1, NULL, NULL);
    char group[80];
    snprintf(group, sizeof group, "%s-ssl", topic);
    kc_test_conf_set(conf, "group.id", group);
    kc_test_conf_set(conf, "auto.offset.reset", "earliest");
    kc_test_conf_set(conf, "enable.auto.commit", "false");
    kc_consumer_t *c = start(conf, &ca);
    const char *sub[] = {topic};
    kc_error_t err;
    if (kc_subscribe(c, sub, 1, &err) != KC_OK)
        fail_msg("kc_subscribe: %s", err.msg);
    wait_n(&ca, RECS, "SASL_SSL GSSAPI, group member");
    /* The coordinator connection authenticates too: commit and read back. */
    if (kc_commit(c, NULL, 0, 30000, &err) != KC_OK)
        fail_msg("kc_commit: %s", err.msg);
    kc_topic_partition_t got[NP];
    for (int i = 0; i < NP; i++)
        got[i] = (kc_topic_partition_t){topic, i, 0};
    if (kc_committed(c, got, NP, 30000, &err) != KC_OK)
        fail_msg("kc_committed: %s", err.msg);
    int64_t sum = 0;
    for (int i = 0; i < NP; i++)
        sum += got[i].offset > 0 ? got[i].offset : 0;
    assert_int_equal(sum, RECS);
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);
}

static void two_principals(void **state)
{
    (void)state;
    reset(&ca);
    reset(&cb);
    kc_consumer_t *a = start(base_conf(0, kc_test_env("KC_CLIENT_PRINCIPAL"), NULL), &ca);
    kc_consumer_t *b = start(base_conf(1, kc_test_env("KC_CLIENT_OTHER_PRINCIPAL"), NULL), &cb);
    assign_all(a);
    assign_all(b);
    wait_n(&ca, RECS, "first principal");
    wait_n(&cb, RECS, "second principal, same process");
    kc_error_t err;
    assert_int_equal(kc_close(a, 5000, &err), KC_OK);
    assert_int_equal(kc_close(b, 5000, &err), KC_OK);
    kc_destroy(a);
    kc_destroy(b);
}

/* Runs a consumer that must fail to log in; returns its last error in `le`. */
static void expect_auth_error(kc_conf_t *conf, char *le, size_t cap)
{
    reset(&ca);
    kc_consumer_t *c = start(conf, &ca);
    assign_all(c);
    for (int i = 0; i < 150 && atomic_load(&ca.auth_errors) == 0; i++)
        usleep(100 * 1000);
    last_error(&ca, le, cap);
    printf("# %lld auth error(s): %s\n", (long long)atomic_load(&ca.auth_errors), le);
    assert_true(atomic_load(&ca.auth_errors) > 0);
    assert_int_equal(atomic_load(&ca.total), 0);
    int64_t t0 = now_ms();
    kc_error_t err;
    (void)kc_close(c, 3000, &err);
    kc_destroy(c);
    assert_true(now_ms() - t0 < 10000);
}

static void missing_keytab(void **state)
{
    (void)state;
    char path[512], le[512];
    snprintf(path, sizeof path, "%s/krb/no-such.keytab", kc_test_env("KC_CLUSTER_DIR"));
    expect_auth_error(base_conf(0, NULL, path), le, sizeof le);
    assert_non_null(strstr(le, "SASL GSSAPI"));
    assert_non_null(strstr(le, kc_test_env("KC_CLIENT_PRINCIPAL")));
    assert_non_null(strstr(le, "kafka@localhost"));
    assert_non_null(strstr(le, "no-such.keytab")); /* names the file, and why */
    assert_non_null(strstr(le, "No such file"));
}

static void wrong_principal(void **state)
{
    (void)state;
    char le[512];
    const char *who = "kconsume-nobody@KCTEST.LOCAL";
    expect_auth_error(base_conf(0, who, NULL), le, sizeof le);
    assert_non_null(strstr(le, "SASL GSSAPI"));
    assert_non_null(strstr(le, who));
    assert_non_null(strstr(le, "kafka@localhost"));
    assert_non_null(strstr(le, "has no key for")); /* the keytab lacks it, and we say so */
}

/* KIP-368 re-authentications on live connections, from the connections' debug log lines. */
static _Atomic int reauths, resets;

static void on_log(void *o, int level, const char *subsystem, const char *name, const char *msg)
{
    (void)o;
    (void)level;
    (void)name;
    if (strcmp(subsystem, "conn") != 0)
        return;
    if (strstr(msg, "re-authenticated"))
        atomic_fetch_add(&reauths, 1);
    else if (strncmp(msg, "reset:", 6) == 0)
        atomic_fetch_add(&resets, 1);
}

/* Lines of the KDC's log that name `what` and `who`. */
static int kdc_log_count(const char *what, const char *who)
{
    FILE *f = fopen(kc_test_env("KC_KDC_LOG"), "r");
    if (!f)
        fail_msg("cannot read %s", kc_test_env("KC_KDC_LOG"));
    char line[2048];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, what) && strstr(line, who) && strstr(line, "ISSUE"))
            n++;
    fclose(f);
    return n;
}

static void ticket_renewal(void **state)
{
    (void)state;
    const char *who = kc_test_env("KC_CLIENT_SHORT_PRINCIPAL");
    int life_s = atoi(kc_test_env("KC_CLIENT_SHORT_LIFE_S"));
    assert_true(life_s > 0 && life_s <= 120);
    reset(&ca);
    int as0 = kdc_log_count("AS_REQ", who), tgs0 = kdc_log_count("TGS_REQ", who);
    kc_conf_t *conf = base_conf(0, who, NULL);
    /* Re-login as soon as a login has expired (the default waits a minute between logins). */
    kc_test_conf_set(conf, "sasl.kerberos.min.time.before.relogin", "1000");
    kc_test_conf_set(conf, "log.level", "debug");
    kc_error_t lerr;
    assert_int_equal(kc_conf_set_log_cb(conf, on_log, NULL, &lerr), KC_OK);
    kc_consumer_t *c = start(conf, &ca);
    assign_all(c);
    wait_n(&ca, RECS, "short tickets, start");
    /* Keep consuming for more than two ticket lifetimes, with new records every few seconds:
     * each re-authentication after the first lifetime needs a new TGT from the keytab. */
    int64_t want = RECS, end = now_ms() + (int64_t)(2 * life_s + 15) * 1000;
    while (now_ms() < end) {
        produce(50);
        want += 50;
        sleep(5);
    }
    wait_n(&ca, want, "short tickets, after several lifetimes");
    int as = kdc_log_count("AS_REQ", who) - as0, tgs = kdc_log_count("TGS_REQ", who) - tgs0;
    printf("# %s: %d login(s) (AS-REQ), %d service ticket(s) (TGS-REQ), %d re-authentication(s), "
           "%d connection reset(s) in %d s; tickets live %d s\n",
           who, as, tgs, atomic_load(&reauths), atomic_load(&resets), 2 * life_s + 15, life_s);
    /* The broker asks every connection to re-authenticate within connections.max.reauth.ms
     * (20 s on the testkit's GSSAPI listeners): each did so on the live connection. */
    assert_true(atomic_load(&reauths) >= 3);
    /* The first login, and at least one for each further lifetime the run spanned. */
    assert_true(as >= 3);
    assert_true(tgs >= 3);
    assert_int_equal(atomic_load(&ca.other_errors), 0);
    kc_error_t err;
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
}

int main(void)
{
    if (!getenv("KC_GSSAPI_BOOTSTRAP") || !*getenv("KC_GSSAPI_BOOTSTRAP")) {
        printf("# skipped: KC_GSSAPI_BOOTSTRAP is not set (the cluster has no gssapi listener: "
               "tests/testkit/cluster up --listeners ...,gssapi; tests/run-suite starts one)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plaintext_assign), cmocka_unit_test(ssl_group),
        cmocka_unit_test(two_principals),   cmocka_unit_test(missing_keytab),
        cmocka_unit_test(wrong_principal),  cmocka_unit_test(ticket_renewal),
    };
    kc_test_filter();
    return cmocka_run_group_tests(tests, setup, NULL);
}
