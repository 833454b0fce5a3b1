/* kc-test-label: threads */
/* The stats JSON stays valid JSON whatever client.id holds. Kafka never validates client.id and
 * the classic coordinator builds the member id from it (client.id + "-" + a UUID), so a classic
 * member whose client.id holds a double quote, a backslash and control characters (tab, newline,
 * 0x01, DEL) has them in "member_id". Every stats object must parse (tests/support/
 * check_stats.py, Python's json), match the contract, and one must carry a member id that starts
 * with exactly that client.id once decoded. Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR. */
#include "kc_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"

/* The awkward bytes, in the order the decoded member id must show them. */
static const char CLIENT_ID[] = "kc\"esc\\ape\t\n\x01\x7f-end";

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static int n_joined;

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o, (void)p, (void)b;
    return KC_CB_CONTINUE;
}

static void on_event(void *o, const kc_event_t *ev)
{
    (void)o;
    if (ev->type != KC_EVENT_STATS)
        return;
    pthread_mutex_lock(&mu);
    fprintf(out, "%s\n", ev->json);
    /* joined: the member id is the coordinator's, which starts with the client.id */
    if (strstr(ev->json, "\"member_id\":\"kc"))
        n_joined++;
    pthread_mutex_unlock(&mu);
}

static int joined(void)
{
    pthread_mutex_lock(&mu);
    int n = n_joined;
    pthread_mutex_unlock(&mu);
    return n;
}

static void classic_member_id_escaped(void **state)
{
    (void)state;
    char topic[64], group[64];
    snprintf(topic, sizeof topic, "kc-esc-%d", (int)getpid());
    snprintf(group, sizeof group, "kc-esc-g-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions 2 --replication 1", topic);

    char path[] = "/tmp/kc-stats-esc-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    out = fdopen(fd, "w");
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", kc_test_env("KC_BOOTSTRAP"), &err),
                     KC_OK);
    assert_int_equal(kc_conf_set(conf, "group.id", group, &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "group.protocol", "classic", &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "client.id", CLIENT_ID, &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "statistics.interval.ms", "100", &err), KC_OK);
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    const char *topics[] = {topic};
    assert_int_equal(kc_subscribe(c, topics, 1, &err), KC_OK);
    for (int i = 0; i < 300 && joined() < 3; i++)
        kc_test_sleep_ms(100);
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
    fclose(out);
    printf("# %d stats objects after the join\n", joined());
    assert_true(joined() >= 3);

    /* The prefix goes to the checker hex-encoded: the shell would mangle the raw bytes. */
    char hex[2 * sizeof CLIENT_ID + 1];
    for (size_t i = 0; i + 1 < sizeof CLIENT_ID; i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)CLIENT_ID[i]);
    char check[1024];
    snprintf(check, sizeof check, "python3 %s %s --member-id-prefix-hex %s",
             kc_test_src_path("tests/support/check_stats.py"), path, hex);
    int rc = system(check);
    unlink(path);
    assert_int_equal(rc, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(classic_member_id_escaped)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
