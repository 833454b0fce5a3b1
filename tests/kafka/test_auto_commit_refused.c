/* kc-test-label: threads */
/*
 * An auto-commit the engine answers inside the call that starts it: a coordinator whose
 * ApiVersions lacks OffsetCommit (the memory broker behind the fault proxy with the API hidden),
 * so the send is refused at once and the answer runs before the start returns. The commit's
 * object is freed by that answer; the start must not touch it afterwards (under ASan a write
 * after the call was a heap-use-after-free). The refusal reaches the application as an error
 * event naming OffsetCommit, and the consumer goes on and closes.
 * Owner: the test's thread; on_event runs on a worker and shares only the atomics.
 */
#include "fault_proxy_client.h"
#include "kc_test.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "kconsume.h"

static _Atomic int64_t records;
static _Atomic int commit_errors;

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o, (void)p;
    int64_t n = 0;
    while (kc_records_next(b))
        n++;
    atomic_fetch_add(&records, n);
    return KC_CB_CONTINUE;
}

static void on_event(void *o, const kc_event_t *ev)
{
    (void)o;
    if (ev->type == KC_EVENT_ERROR && ev->error && strstr(ev->error->msg, "OffsetCommit") &&
        atomic_fetch_add(&commit_errors, 1) == 0)
        printf("# error event: %s\n", ev->error->msg);
}

static void refused_auto_commit(void **state)
{
    (void)state;
    const char *args[] = {"--topic", "A", "--partitions", "2", "--records", "500", NULL};
    char bs[256];
    pid_t pid;
    kc_fp_t *fp;
    assert_int_equal(kc_test_proxied_broker(args, bs, sizeof bs, &pid, &fp), 0);
    char reply[256];
    if (kc_fp_cmd(fp, reply, sizeof reply, "hide-api api=OffsetCommit") != 0)
        fail_msg("proxy: %s", reply);
    kc_conf_t *conf = kc_conf_new();
    kc_test_conf_set(conf, "bootstrap.servers", kc_fp_bootstrap(fp));
    kc_test_conf_set(conf, "group.id", "auto-commit-refused");
    kc_test_conf_set(conf, "group.protocol", "classic");
    kc_test_conf_set(conf, "auto.offset.reset", "earliest");
    kc_test_conf_set(conf, "enable.auto.commit", "true");
    kc_test_conf_set(conf, "auto.commit.interval.ms", "100");
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event};
    kc_consumer_t *c;
    kc_error_t e;
    if (kc_consumer_new(conf, &cbs, &c, &e) != KC_OK)
        fail_msg("kc_consumer_new: %s", e.msg);
    const char *topics[] = {"A"};
    assert_int_equal(kc_subscribe(c, topics, 1, &e), KC_OK);
    for (int i = 0; i < 1000 && (atomic_load(&records) < 1000 || atomic_load(&commit_errors) < 3);
         i++)
        kc_test_sleep_ms(10);
    printf("# %lld records, %d refused auto-commits reported\n", (long long)atomic_load(&records),
           atomic_load(&commit_errors));
    kc_close(c, 5000, NULL);
    kc_destroy(c);
    kc_test_proxied_broker_stop(pid, fp);
    assert_int_equal(atomic_load(&records), 1000);
    assert_true(atomic_load(&commit_errors) >= 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(refused_auto_commit)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
