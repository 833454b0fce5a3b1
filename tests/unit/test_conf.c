/* Configuration: per-key validation, suggestions, conflicts, secrets, the printed reference. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "conf.h"
#include "conf_peers.h"
#include "group.h"
#include "dispatch.h"
#include "kc_test.h"
#include "oauth_refresh.h"

static kc_conf_t *C;

static int setup(void **state)
{
    (void)state;
    C = kc_conf_new();
    return C ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    kc_conf_destroy(C);
    return 0;
}

static void set_ok(const char *k, const char *v)
{
    kc_error_t e;
    kc_err_t rc = kc_conf_set(C, k, v, &e);
    if (rc != KC_OK)
        fail_msg("%s=%s: %s", k, v, e.msg);
}

static void expect_msg(const char *k, const char *v, const char *needle)
{
    kc_error_t e;
    assert_int_equal(kc_conf_set(C, k, v, &e), KC_ERR_CONFIG);
    if (!strstr(e.msg, needle))
        fail_msg("%s=%s: message \"%s\" lacks \"%s\"", k, v, e.msg, needle);
}

static void unknown_key_suggests_nearest(void **state)
{
    (void)state;
    expect_msg("bootstrap.server", "a:1", "did you mean \"bootstrap.servers\"");
    expect_msg("group.instanceid", "x", "did you mean \"group.instance.id\"");
    expect_msg("fetch.max.byte", "1", "did you mean \"fetch.max.bytes\"");
    expect_msg("enable.auto.comit", "true", "did you mean \"enable.auto.commit\"");
    kc_error_t e;
    assert_int_equal(kc_conf_set(C, "completely.unrelated.thing", "1", &e), KC_ERR_CONFIG);
    assert_null(strstr(e.msg, "did you mean"));
    assert_non_null(strstr(e.msg, "completely.unrelated.thing"));
    assert_int_equal(kc_conf_edit_distance("kitten", "sitting"), 3);
    set_ok("sasl.mechanisms", "PLAIN"); /* librdkafka's name is an alias */
}

static void bad_values_name_key_value_and_allowed(void **state)
{
    (void)state;
    expect_msg("fetch.min.bytes", "ten", "\"ten\" is not an integer");
    expect_msg("session.timeout.ms", "5", "5 is out of range (allowed: 1000..3600000)");
    expect_msg("enable.auto.commit", "yes", "allowed: true|false");
    expect_msg("auto.offset.reset", "smallest", "allowed: earliest|latest|none");
    expect_msg("isolation.level", "READ_COMMITTED", "allowed: read_committed|read_uncommitted");
    expect_msg("partition.assignment.strategy", "range,sticky", "\"sticky\" is not allowed");
    expect_msg("bootstrap.servers", "host", "not host:port");
    expect_msg("bootstrap.servers", "a:1,,b:2", "empty element");
    expect_msg("bootstrap.servers", "a:70000", "not host:port");
    expect_msg("worker.threads", "-1", "out of range");
    set_ok("bootstrap.servers", "a:9092, b:9093");
    set_ok("partition.assignment.strategy", "cooperative-sticky");
    set_ok("io.backend", "epoll");
    assert_int_equal(kc_conf_int(C, KC_CONF_WORKER_THREADS), 0);
    set_ok("worker.threads", "4");
    assert_int_equal(kc_conf_int(C, KC_CONF_WORKER_THREADS), 4);
    assert_string_equal(kc_conf_str(C, KC_CONF_ISOLATION_LEVEL), "read_committed");
    assert_true(kc_conf_bool(C, KC_CONF_CHECK_CRCS));
}

static char last_conflict[256];

static void conflict(const char *needle)
{
    kc_error_t e;
    assert_int_equal(kc_conf_validate(C, &e), KC_ERR_CONFIG);
    snprintf(last_conflict, sizeof last_conflict, "%s", e.msg);
    if (!strstr(e.msg, needle))
        fail_msg("validate: \"%s\" lacks \"%s\"", e.msg, needle);
}

static void conflicts_are_explained(void **state)
{
    (void)state;
    kc_error_t e;
    conflict("bootstrap.servers is required");
    set_ok("bootstrap.servers", "127.0.0.1:9092");
    assert_int_equal(kc_conf_validate(C, &e), KC_OK);

    set_ok("group.instance.id", "i1");
    conflict("group.instance.id is set but group.id is not");
    set_ok("group.id", "g");
    assert_int_equal(kc_conf_validate(C, &e), KC_OK);

    /* Manual store with auto-commit: librdkafka's at-least-once pattern, accepted. */
    set_ok("enable.auto.offset.store", "false");
    set_ok("enable.auto.commit", "true");
    assert_int_equal(kc_conf_validate(C, &e), KC_OK);
    set_ok("enable.auto.commit", "false");
    assert_int_equal(kc_conf_validate(C, &e), KC_OK);

    set_ok("sasl.mechanism", "SCRAM-SHA-256");
    conflict("does not use SASL");
    set_ok("security.protocol", "SASL_SSL");
    conflict("needs sasl.username and sasl.password");
    set_ok("sasl.username", "u");
    set_ok("sasl.password", "p");
    assert_int_equal(kc_conf_validate(C, &e), KC_OK);
    /* Kerberos keys belong to sasl.mechanism=GSSAPI, which does not take a user/password. */
    set_ok("sasl.kerberos.keytab", "/etc/kc.keytab");
    conflict("sasl.kerberos.* is set but the login is not Kerberos");
    set_ok("sasl.mechanism", "GSSAPI");
    conflict("not sasl.username/sasl.password");
    kc_conf_t *k = kc_conf_new();
    kc_conf_t *outer = C;
    C = k;
    set_ok("bootstrap.servers", "h:1");
    set_ok("security.protocol", "SASL_PLAINTEXT");
    set_ok("sasl.mechanism", "GSSAPI");
    assert_int_equal(kc_conf_validate(C, &e), KC_OK); /* the default ticket cache */
    set_ok("sasl.kerberos.principal", "kc@EXAMPLE.ORG");
    set_ok("sasl.kerberos.keytab", "/etc/kc.keytab");
    set_ok("sasl.kerberos.min.time.before.relogin", "0");
    assert_string_equal(kc_conf_str(C, KC_CONF_SASL_KERBEROS_SERVICE_NAME), "kafka");
    assert_int_equal(kc_conf_validate(C, &e), KC_OK);
    expect_msg("sasl.kerberos.min.time.before.relogin", "-1", "out of range");
    expect_msg("sasl.mechanism", "KERBEROS",
               "allowed: PLAIN|SCRAM-SHA-256|SCRAM-SHA-512|OAUTHBEARER|GSSAPI");
    kc_conf_destroy(k);
    C = outer;
    set_ok("sasl.mechanism", "SCRAM-SHA-256");
    kc_conf_t *fresh = kc_conf_new(); /* drop the keytab setting: start over with SCRAM */
    kc_conf_destroy(C);
    C = fresh;
    set_ok("bootstrap.servers", "127.0.0.1:9092");
    set_ok("group.instance.id", "i1");
    set_ok("group.id", "g");
    set_ok("enable.auto.offset.store", "false");
    set_ok("enable.auto.commit", "false");
    set_ok("security.protocol", "SASL_SSL");
    set_ok("sasl.mechanism", "SCRAM-SHA-256");
    set_ok("sasl.username", "u");
    set_ok("sasl.password", "p");
    assert_int_equal(kc_conf_validate(C, &e), KC_OK);

    set_ok("group.protocol", "consumer");
    set_ok("session.timeout.ms", "6000");
    conflict("classic-protocol setting");
    set_ok("group.protocol", "classic");
    set_ok("heartbeat.interval.ms", "6000");
    conflict("heartbeat.interval.ms (6000) must be lower than session.timeout.ms (6000)");
    set_ok("heartbeat.interval.ms", "2000");
    set_ok("group.remote.assignor", "uniform");
    conflict("group.remote.assignor applies to group.protocol=consumer");

    kc_conf_t *d = kc_conf_new();
    kc_conf_t *keep = C;
    C = d;
    set_ok("bootstrap.servers", "h:1");
    set_ok("queued.max.bytes", "100000");
    set_ok("max.partition.fetch.bytes", "200000");
    conflict("no fetch would fit under the cap");
    set_ok("queued.max.bytes", "200000");
    set_ok("ssl.ca.location", "/ca.pem");
    conflict("does not use TLS");
    C = keep;
    kc_conf_destroy(d);
}

static void secrets_never_printed(void **state)
{
    (void)state;
    set_ok("sasl.password", "hunter2-secret");
    set_ok("ssl.key.password", "another-secret");
    char buf[64];
    size_t len = sizeof buf;
    assert_int_equal(kc_conf_get(C, "sasl.password", buf, &len), KC_OK);
    assert_string_equal(buf, "[redacted]");
    len = sizeof buf;
    assert_int_equal(kc_conf_get(C, "group.protocol", buf, &len), KC_OK);
    assert_string_equal(buf, "auto");
    len = 3;
    assert_int_equal(kc_conf_get(C, "client.id", buf, &len), KC_ERR_TOO_LARGE);
    assert_int_equal(len, strlen("kconsume") + 1);
    assert_int_equal(kc_conf_get(C, "nope", buf, NULL), KC_ERR_NOT_FOUND);

    kc_error_t e;
    assert_int_equal(kc_conf_set(C, "sasl.password", "", &e), KC_OK);
    /* a bad value for a secret key is reported without echoing it (no secret INT keys exist,
     * so check the reference and the error path of a non-secret key instead) */
    char *text = NULL;
    size_t tlen = 0;
    FILE *f = open_memstream(&text, &tlen);
    kc_conf_print_reference(f, 0);
    fclose(f);
    assert_null(strstr(text, "hunter2"));
    assert_non_null(strstr(text, "bootstrap.servers"));
    assert_non_null(strstr(text, "decompress.max.bytes"));
    assert_non_null(strstr(text, "sasl.password"));
    free(text);
    f = open_memstream(&text, &tlen);
    kc_conf_print_reference(f, 1);
    fclose(f);
    assert_non_null(strstr(text, "| `isolation.level` | enum | read_committed |"));
    free(text);

    kc_conf_t *d = kc_conf_dup(C);
    len = sizeof buf;
    assert_int_equal(kc_conf_get(d, "ssl.key.password", buf, &len), KC_OK);
    assert_string_equal(d->val[KC_CONF_SSL_KEY_PASSWORD], "another-secret");
    kc_conf_destroy(d);
}

/* Every key of the table, by its declared type: the default is accepted; values just outside
 * the range, of the wrong type or not in the allowed set are refused with a message that names
 * the key, the bad value (never a secret) and what is allowed. A key added to the table is
 * audited here with no test to write. */
static void every_key_is_validated(void **state)
{
    (void)state;
    char bad[64], want[160];
    for (int id = 0; id < KC_CONF__COUNT; id++) {
        kc_conf_key_info_t k;
        kc_conf_key_info((kc_conf_id_t)id, &k);
        assert_non_null(k.name);
        if (k.def[0] || k.type == KC_CONF_T_STR || k.empty_ok)
            set_ok(k.name, k.def);
        switch (k.type) {
        case KC_CONF_T_INT:
            snprintf(want, sizeof want, "%s: ", k.name);
            expect_msg(k.name, "12x", want);
            expect_msg(k.name, "12x", "is not an integer");
            expect_msg(k.name, "", "is not an integer");
            snprintf(want, sizeof want, "(allowed: %lld..%lld)", (long long)k.min,
                     (long long)k.max);
            if (k.min > INT64_MIN) {
                snprintf(bad, sizeof bad, "%lld", (long long)k.min - 1);
                expect_msg(k.name, bad, want);
                expect_msg(k.name, bad, k.name);
            }
            if (k.max < INT64_MAX) {
                snprintf(bad, sizeof bad, "%lld", (long long)k.max + 1);
                expect_msg(k.name, bad, want);
            } else {
                expect_msg(k.name, "9223372036854775808", "is not an integer"); /* overflow */
            }
            snprintf(bad, sizeof bad, "%lld", (long long)k.min);
            set_ok(k.name, bad);
            snprintf(bad, sizeof bad, "%lld", (long long)k.max);
            set_ok(k.name, bad);
            break;
        case KC_CONF_T_BOOL:
            expect_msg(k.name, "yes", k.name);
            expect_msg(k.name, "yes", "\"yes\" is not a boolean (allowed: true|false)");
            set_ok(k.name, "true");
            set_ok(k.name, "false");
            break;
        case KC_CONF_T_ENUM:
        case KC_CONF_T_LIST:
            if (!k.allowed) {
                assert_int_equal(k.type, KC_CONF_T_LIST); /* an ENUM always lists its words */
                break;
            }
            snprintf(want, sizeof want, "allowed: %s", k.allowed);
            expect_msg(k.name, "no-such-value", want);
            expect_msg(k.name, "no-such-value", k.name);
            expect_msg(k.name, "no-such-value", "\"no-such-value\" is not allowed");
            for (const char *p = k.allowed; *p;) {
                size_t n = strcspn(p, "|");
                snprintf(bad, sizeof bad, "%.*s", (int)n, p);
                set_ok(k.name, bad);
                p += n + (p[n] == '|');
            }
            if (k.type == KC_CONF_T_ENUM && !k.empty_ok)
                expect_msg(k.name, "", want);
            break;
        case KC_CONF_T_STR:
            break;
        }
    }
}

/* group.self.fence.ratio: a fraction 0 <= x < 1, checked when set; the classic session must
 * leave two heartbeat intervals before the fence point; its KIP-848 session key is refused for
 * classic. */
static void self_fence_settings(void **state)
{
    (void)state;
    kc_error_t e;
    assert_true(kc_conf_fraction(C, KC_CONF_GROUP_SELF_FENCE_RATIO) == 0.8); /* the default */
    const char *good[] = {"0", "0.5", ".25", "0.999", "0.0"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        set_ok("group.self.fence.ratio", good[i]);
    assert_true(kc_conf_fraction(C, KC_CONF_GROUP_SELF_FENCE_RATIO) == 0.0);
    const char *bad[] = {"1", "1.0", "-0.1", "", ".", "0.8x", "nan", "inf", "8e-1", "+0.5", " 0.5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        expect_msg("group.self.fence.ratio", bad[i], "group.self.fence.ratio: ");
        expect_msg("group.self.fence.ratio", bad[i], "is not a fraction");
    }
    assert_true(kc_conf_fraction(C, KC_CONF_GROUP_SELF_FENCE_RATIO) == 0.0); /* unchanged */
    set_ok("bootstrap.servers", "h:1");
    set_ok("group.id", "g");
    set_ok("group.protocol", "classic");
    set_ok("session.timeout.ms", "6000");
    set_ok("heartbeat.interval.ms", "2000");
    set_ok("group.self.fence.ratio", "0.5");
    conflict("shorter than two heartbeat.interval.ms");
    set_ok("group.self.fence.ratio", "0"); /* off: no constraint */
    assert_int_equal(kc_conf_validate(C, &e), KC_OK);
    set_ok("group.self.fence.ratio", "0.8");
    assert_int_equal(kc_conf_validate(C, &e), KC_OK);
    set_ok("group.consumer.session.timeout.ms", "10000");
    conflict("group.consumer.session.timeout.ms applies to group.protocol=consumer only");
    set_ok("group.protocol", "consumer");
    set_ok("session.timeout.ms", "45000");
    kc_conf_destroy(C);
    C = kc_conf_new();
    set_ok("bootstrap.servers", "h:1");
    set_ok("group.id", "g");
    set_ok("group.consumer.session.timeout.ms", "10000");
    assert_int_equal(kc_conf_validate(C, &e), KC_OK);
}

static void member_id_and_empty_identification(void **state)
{
    (void)state;
    set_ok("group.instance.id", "host-1.pod_2");
    set_ok("group.instance.id", ""); /* unset: dynamic membership */
    expect_msg("group.instance.id", "a b", "has the character ' ' (allowed: a-z A-Z 0-9 . _ -)");
    expect_msg("group.instance.id", "..", "\"..\" is not allowed");
    char long_id[300];
    memset(long_id, 'x', 250);
    long_id[250] = '\0';
    expect_msg("group.instance.id", long_id, "250 characters is too long (allowed: at most 249)");
    long_id[249] = '\0';
    set_ok("group.instance.id", long_id);
    /* Java's way to switch the host name check off is the empty value */
    set_ok("ssl.endpoint.identification.algorithm", "");
    set_ok("ssl.endpoint.identification.algorithm", "none");
    expect_msg("ssl.endpoint.identification.algorithm", "HTTPS", "allowed: https|none or empty");
}

static void more_conflicts_are_explained(void **state)
{
    (void)state;
    kc_error_t e;
    set_ok("bootstrap.servers", "h:1");
    /* as Java: an explicit enable.auto.commit=true without a group has nothing to commit to */
    set_ok("enable.auto.commit", "true");
    conflict("enable.auto.commit=true needs group.id");
    set_ok("group.id", "g");
    assert_int_equal(kc_conf_validate(C, &e), KC_OK);
    /* rebalance.timeout.ms is classic's JoinGroup field: under auto it means classic, with
     * consumer named it conflicts */
    set_ok("rebalance.timeout.ms", "60000");
    assert_int_equal(kc_conf_validate(C, &e), KC_OK);
    set_ok("group.protocol", "consumer");
    conflict("rebalance.timeout.ms is a classic-protocol setting");
    set_ok("group.protocol", "classic");
    assert_int_equal(kc_conf_validate(C, &e), KC_OK);
    /* other ways to conflict, each explained */
    set_ok("group.protocol", "consumer");
    kc_conf_destroy(C);
    C = kc_conf_new();
    set_ok("bootstrap.servers", "h:1");
    set_ok("group.id", "g");
    set_ok("group.protocol", "consumer");
    set_ok("partition.assignment.strategy", "range");
    conflict("partition.assignment.strategy applies to group.protocol=classic only");
    kc_conf_destroy(C);
    C = kc_conf_new();
    set_ok("bootstrap.servers", "h:1");
    set_ok("fetch.min.bytes", "2000000");
    set_ok("fetch.max.bytes", "1048576");
    conflict("fetch.min.bytes (2000000) exceeds fetch.max.bytes (1048576)");
    set_ok("fetch.min.bytes", "1");
    set_ok("reconnect.backoff.ms", "5000");
    conflict("reconnect.backoff.ms (5000) exceeds reconnect.backoff.max.ms (1000)");
    set_ok("reconnect.backoff.ms", "50");
    set_ok("retry.backoff.ms", "2000");
    conflict("retry.backoff.ms (2000) exceeds retry.backoff.max.ms (1000)");
    set_ok("retry.backoff.ms", "100");
    set_ok("fetch.max.wait.ms", "30000");
    conflict("fetch.max.wait.ms (30000) must be below request.timeout.ms (30000)");
    set_ok("fetch.max.wait.ms", "500");
    /* TLS files: the password needs its key; a path must be readable at creation */
    set_ok("security.protocol", "SSL");
    set_ok("ssl.key.password", "s3cr3t-never-shown");
    conflict("ssl.key.password is set but ssl.key.location is not");
    assert_null(strstr(last_conflict, "s3cr3t"));
    set_ok("ssl.certificate.location", "/nonexistent/kc-cert.pem");
    conflict("mutual TLS needs both");
    set_ok("ssl.key.location", "/nonexistent/kc-key.pem");
    conflict("ssl.certificate.location: cannot read \"/nonexistent/kc-cert.pem\": No such file");
    assert_null(strstr(last_conflict, "s3cr3t"));
    set_ok("ssl.certificate.location", "/dev/null");
    set_ok("ssl.key.location", "/dev/null");
    assert_int_equal(kc_conf_validate(C, &e), KC_OK);
    set_ok("ssl.ca.location", "/nonexistent/ca.pem");
    conflict("ssl.ca.location: cannot read");
}

static void runtime_options_from_conf(void **state)
{
    (void)state;
    kc_rt_opts_t o = {0};
    kc_rt_opts_from_conf(C, &o);
    assert_int_equal(o.workers, sysconf(_SC_NPROCESSORS_ONLN)); /* 0 = online CPUs */
    assert_int_equal(o.max_records, 500);
    assert_true(o.auto_store);
    set_ok("worker.threads", "3");
    set_ok("callback.batch.max.records", "7");
    set_ok("queued.max.bytes", "1048576");
    set_ok("max.poll.interval.ms", "1234");
    set_ok("enable.auto.offset.store", "false");
    kc_rt_opts_from_conf(C, &o);
    assert_int_equal(o.workers, 3);
    assert_int_equal(o.max_records, 7);
    assert_int_equal(o.queued_max_bytes, 1048576);
    assert_int_equal(o.max_poll_interval_ms, 1234);
    assert_false(o.auto_store);
    /* runtime/memory_budget.c's response bound: a thirty-second of the cap, never below one
     * partition's. */
    assert_int_equal(o.frame_max_bytes, 1048576);
    set_ok("queued.max.bytes", "268435456");
    kc_rt_opts_from_conf(C, &o);
    assert_int_equal(o.frame_max_bytes, 8388608);
}

/* The classic member's JoinGroup rebalance timeout: rebalance.timeout.ms, or
 * max.poll.interval.ms when it is 0 (the default). It was max.poll.interval.ms always. */
static void classic_rebalance_timeout(void **state)
{
    (void)state;
    set_ok("group.protocol", "classic");
    kc_group_conf_t gc;
    kc_rt_group_conf(C, &gc);
    assert_int_equal(gc.classic_rebalance_timeout_ms, 300000);
    set_ok("max.poll.interval.ms", "60000");
    kc_rt_group_conf(C, &gc);
    assert_int_equal(gc.classic_rebalance_timeout_ms, 60000);
    set_ok("rebalance.timeout.ms", "20000");
    kc_rt_group_conf(C, &gc);
    assert_int_equal(gc.classic_rebalance_timeout_ms, 20000);
    assert_int_equal(gc.session_timeout_ms, 45000);
}

/* Each protocol reads its own keys: session.timeout.ms and heartbeat.interval.ms are the
 * classic member's, group.consumer.session.timeout.ms the KIP-848 self-fence's; the assignor keys
 * likewise. Shared keys map the same way for both. */
static void group_conf_per_protocol(void **state)
{
    (void)state;
    set_ok("group.id", "g1");
    set_ok("group.instance.id", "i1");
    set_ok("session.timeout.ms", "30000");
    set_ok("heartbeat.interval.ms", "2000");
    set_ok("group.consumer.session.timeout.ms", "20000");
    set_ok("partition.assignment.strategy", "roundrobin");
    set_ok("group.remote.assignor", "range");
    set_ok("max.poll.interval.ms", "70000");
    set_ok("request.timeout.ms", "12000");
    set_ok("enable.auto.commit", "false");
    kc_group_conf_t k, c;
    kc_rt_group_conf(C, &k);
    c = k;
    assert_string_equal(k.group_id, "g1");
    assert_string_equal(c.group_instance_id, "i1");
    assert_int_equal(k.consumer_session_timeout_ms, 20000);
    assert_int_equal(c.session_timeout_ms, 30000);
    assert_int_equal(c.heartbeat_interval_ms, 2000);
    assert_string_equal(k.server_assignor, "range");
    assert_string_equal(c.assignors, "roundrobin");
    assert_int_equal(k.rebalance_timeout_ms, 70000);
    assert_int_equal(c.classic_rebalance_timeout_ms, 70000);
    assert_false(k.commit_on_revoke);
    assert_false(c.commit_on_revoke);
    assert_int_equal(k.commit_timeout_ms, 12000);
    assert_int_equal(c.coordinator_timeout_ms, 12000);
    /* both kinds set: auto cannot decide and validation says why; a named protocol decides */
    kc_error_t e;
    set_ok("bootstrap.servers", "127.0.0.1:9092");
    assert_int_equal(kc_conf_group_protocol(C, NULL), KC_GROUP_PROTO_CONFLICT);
    assert_int_equal(kc_conf_validate(C, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "group.protocol=auto"));
    set_ok("group.protocol", "classic");
    assert_ptr_equal(kc_rt_group_protocol(C), &kc_classic_proto);
}

/* group.protocol=auto, the default: nothing set leaves the choice to the coordinator (NULL); a
 * setting only one protocol has decides for it and is named; classic settings are accepted
 * (they were refused while the default was consumer). */
static void group_protocol_auto(void **state)
{
    (void)state;
    const char *key = "x";
    assert_string_equal(kc_conf_str(C, KC_CONF_GROUP_PROTOCOL), "auto");
    assert_int_equal(kc_conf_group_protocol(C, &key), KC_GROUP_PROTO_AUTO);
    assert_null(key);
    assert_null(kc_rt_group_protocol(C));
    set_ok("group.id", "g");
    set_ok("bootstrap.servers", "127.0.0.1:9092");
    set_ok("partition.assignment.strategy", "range");
    assert_int_equal(kc_conf_group_protocol(C, &key), KC_GROUP_PROTO_CLASSIC);
    assert_string_equal(key, "partition.assignment.strategy");
    kc_error_t e;
    assert_int_equal(kc_conf_validate(C, &e), KC_OK);
    assert_ptr_equal(kc_rt_group_protocol(C), &kc_classic_proto);
}

static void group_protocol_auto_consumer_key(void **state)
{
    (void)state;
    const char *key = NULL;
    set_ok("group.remote.assignor", "uniform");
    assert_int_equal(kc_conf_group_protocol(C, &key), KC_GROUP_PROTO_CONSUMER);
    assert_string_equal(key, "group.remote.assignor");
    assert_ptr_equal(kc_rt_group_protocol(C), &kc_g848_proto);
    set_ok("group.protocol", "consumer"); /* named: no key decided */
    assert_int_equal(kc_conf_group_protocol(C, &key), KC_GROUP_PROTO_CONSUMER);
    assert_null(key);
}

/* docs/CONFIGURATION.md is what kc_conf_print_reference writes (make docs regenerates it), and
 * every key has its row of the other clients' names (runtime/conf_peers.c). */
static void configuration_doc_is_current(void **state)
{
    (void)state;
    for (int i = 0; i < KC_CONF__COUNT; i++)
        if (!kc_conf_peer(kc_conf_name((kc_conf_id_t)i)))
            fail_msg("runtime/conf_peers.c has no row for %s", kc_conf_name((kc_conf_id_t)i));
    char *want = NULL;
    size_t wlen = 0;
    FILE *f = open_memstream(&want, &wlen);
    kc_conf_print_reference(f, 1);
    fclose(f);
    const char *src = getenv("KC_SOURCE_DIR");
    assert_non_null(src);
    char path[4096];
    snprintf(path, sizeof path, "%s/docs/CONFIGURATION.md", src);
    FILE *d = fopen(path, "rb");
    if (!d)
        fail_msg("%s is missing: make docs writes it", path);
    char *have = malloc(wlen + 2);
    size_t hlen = fread(have, 1, wlen + 1, d);
    fclose(d);
    if (hlen != wlen || memcmp(have, want, wlen) != 0) {
        size_t at = 0;
        while (at < hlen && at < wlen && have[at] == want[at])
            at++;
        fail_msg("docs/CONFIGURATION.md is stale (first difference at byte %zu): run make docs "
                 "and commit it",
                 at);
    }
    free(have);
    free(want);
}

/* Java's sasl.login.refresh.* keys and bounds, read into the refresher's settings. */
static void oauth_refresh_keys(void **state)
{
    (void)state;
    kc_error_t e;
    set_ok("bootstrap.servers", "h:1");
    kc_oauth_refresh_conf_t r;
    kc_oauth_refresh_conf(C, &r);
    assert_true(r.factor == 0.8 && r.jitter == 0.05);
    assert_int_equal(r.min_period_ms, 60000);
    assert_int_equal(r.buffer_ms, 300000);
    set_ok("sasl.login.refresh.window.factor", "0.4");
    conflict("sasl.login.refresh.window.factor: 0.4 is below 0.5");
    set_ok("sasl.login.refresh.window.factor", "0.9");
    set_ok("sasl.login.refresh.window.jitter", "0.3");
    conflict("sasl.login.refresh.window.jitter: 0.3 is above 0.25");
    set_ok("sasl.login.refresh.window.jitter", "0");
    expect_msg("sasl.login.refresh.window.factor", "1.5", "is not a fraction");
    expect_msg("sasl.login.refresh.buffer.seconds", "3601", "out of range (allowed: 0..3600)");
    expect_msg("sasl.login.refresh.min.period.seconds", "901", "out of range (allowed: 0..900)");
    set_ok("sasl.login.refresh.buffer.seconds", "30");
    set_ok("sasl.login.refresh.min.period.seconds", "5");
    assert_int_equal(kc_conf_validate(C, &e), KC_OK);
    kc_oauth_refresh_conf(C, &r);
    assert_true(r.factor == 0.9 && r.jitter == 0);
    assert_int_equal(r.min_period_ms, 5000);
    assert_int_equal(r.buffer_ms, 30000);
}

/* The TLS material keys: Java's names of the PEM settings are aliases, the passwords and the PEM
 * key are secrets, and the conflicts between sources are explained by key. */
static void tls_material_keys(void **state)
{
    (void)state;
    const char *key_text =
        "-----BEGIN PRIVATE KEY-----\nkc-unit-key-body-Z9\n-----END PRIVATE KEY-----\n";
    set_ok("bootstrap.servers", "h:1");
    set_ok("ssl.keystore.key", key_text); /* Java's name of ssl.key.pem */
    set_ok("ssl.keystore.certificate.chain", "CERT");
    set_ok("ssl.truststore.certificates", "CA");
    assert_string_equal(kc_conf_str(C, KC_CONF_SSL_KEY_PEM), key_text);
    assert_string_equal(kc_conf_str(C, KC_CONF_SSL_CERTIFICATE_PEM), "CERT");
    assert_string_equal(kc_conf_str(C, KC_CONF_SSL_CA_PEM), "CA");
    set_ok("ssl.keystore.password", "kc-unit-ks-pw-Z9");
    const char *secret[] = {"ssl.key.pem", "ssl.keystore.key", "ssl.keystore.password"};
    char buf[256];
    for (size_t i = 0; i < 3; i++) {
        size_t len = sizeof buf;
        assert_int_equal(kc_conf_get(C, secret[i], buf, &len), KC_OK);
        assert_string_equal(buf, "[redacted]");
    }
    size_t len = sizeof buf;
    assert_int_equal(kc_conf_get(C, "ssl.truststore.certificates", buf, &len), KC_OK);
    assert_string_equal(buf, "CA"); /* certificates are public */
    len = sizeof buf;
    assert_int_equal(kc_conf_get(C, "ssl.enabled.protocols", buf, &len), KC_OK);
    assert_string_equal(buf, "TLSv1.2,TLSv1.3");
    expect_msg("ssl.enabled.protocols", "TLSv1.1", "allowed: TLSv1.2|TLSv1.3");
    expect_msg("ssl.protocol", "SSLv3", "allowed: TLSv1.2|TLSv1.3|TLS");
    kc_error_t e;
    /* not TLS: each material key is named */
    assert_int_equal(kc_conf_validate(C, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "does not use TLS"));
    assert_null(strstr(e.msg, "kc-unit"));
    set_ok("security.protocol", "SSL");
    set_ok("ssl.key.pem", "");
    set_ok("ssl.certificate.pem", "");
    set_ok("ssl.keystore.password", "");
    set_ok("ssl.crl.location", "/nonexistent/kc-crl.pem");
    assert_int_equal(kc_conf_validate(C, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "ssl.crl.location: cannot read \"/nonexistent/kc-crl.pem\""));
    set_ok("ssl.crl.location", "/dev/null");
    assert_int_equal(kc_conf_validate(C, &e), KC_OK);
    set_ok("ssl.keystore.password", "kc-unit-ks-pw-Z9");
    assert_int_equal(kc_conf_validate(C, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "ssl.keystore.password is set but ssl.keystore.location is not"));
    assert_null(strstr(e.msg, "kc-unit"));
    set_ok("ssl.keystore.location", "/dev/null");
    assert_int_equal(kc_conf_validate(C, &e), KC_OK);
    set_ok("ssl.key.pem", key_text);
    set_ok("ssl.certificate.location", "/dev/null");
    assert_int_equal(kc_conf_validate(C, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "two client identities"));
    assert_null(strstr(e.msg, "kc-unit"));
    set_ok("ssl.keystore.location", "");
    set_ok("ssl.keystore.password", "");
    assert_int_equal(kc_conf_validate(C, &e), KC_OK); /* a file certificate with a PEM key */
    set_ok("ssl.certificate.pem", "CERT");
    assert_int_equal(kc_conf_validate(C, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "ssl.certificate.location and ssl.certificate.pem are both set"));
    set_ok("ssl.certificate.location", "");
    set_ok("ssl.key.location", "/dev/null");
    assert_int_equal(kc_conf_validate(C, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "ssl.key.location and ssl.key.pem are both set"));
    set_ok("ssl.key.location", "");
    set_ok("ssl.key.pem", "");
    assert_int_equal(kc_conf_validate(C, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "mutual TLS needs both"));
    /* the printed reference holds no secret */
    char *text = NULL;
    size_t tlen = 0;
    FILE *f = open_memstream(&text, &tlen);
    kc_conf_print_reference(f, 1);
    fclose(f);
    assert_non_null(strstr(text, "`ssl.keystore.location`"));
    assert_null(strstr(text, "kc-unit"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(unknown_key_suggests_nearest, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_values_name_key_value_and_allowed, setup, teardown),
        cmocka_unit_test_setup_teardown(conflicts_are_explained, setup, teardown),
        cmocka_unit_test_setup_teardown(secrets_never_printed, setup, teardown),
        cmocka_unit_test(configuration_doc_is_current),
        cmocka_unit_test_setup_teardown(runtime_options_from_conf, setup, teardown),
        cmocka_unit_test_setup_teardown(classic_rebalance_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(group_conf_per_protocol, setup, teardown),
        cmocka_unit_test_setup_teardown(group_protocol_auto, setup, teardown),
        cmocka_unit_test_setup_teardown(group_protocol_auto_consumer_key, setup, teardown),
        cmocka_unit_test_setup_teardown(every_key_is_validated, setup, teardown),
        cmocka_unit_test_setup_teardown(member_id_and_empty_identification, setup, teardown),
        cmocka_unit_test_setup_teardown(more_conflicts_are_explained, setup, teardown),
        cmocka_unit_test_setup_teardown(self_fence_settings, setup, teardown),
        cmocka_unit_test_setup_teardown(oauth_refresh_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(tls_material_keys, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
