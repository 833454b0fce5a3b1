/* A corrupt batch on disk, through the public API: three batches are produced to a
 * one-replica partition, its broker is stopped cleanly (so its restart does not re-validate the
 * segment), one payload byte of the middle batch is flipped in the .log file, the broker is
 * restarted. The consumer must report the batch (on_event, KC_ERR_CRC naming the partition and
 * offsets), skip it, and still deliver every record after it — the partition never stalls.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "kc_test.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kconsume.h"

#define PER_RUN 100

static char topic[64];
static _Atomic int64_t delivered, last_offset = -1, errors;
static uint8_t seen[3 * PER_RUN * 2];
static char err_msg[512];

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o, (void)p;
    const kc_record_t *r;
    while ((r = kc_records_next(b))) {
        int64_t off = kc_record_offset(r);
        if (off >= 0 && off < (int64_t)sizeof seen)
            seen[off] = 1;
        atomic_fetch_add(&delivered, 1);
        atomic_store(&last_offset, off);
    }
    return KC_CB_CONTINUE;
}

static void on_event(void *o, const kc_event_t *ev)
{
    (void)o;
    if (ev->type == KC_EVENT_ERROR) {
        if (atomic_fetch_add(&errors, 1) == 0)
            snprintf(err_msg, sizeof err_msg, "%s (%s)", ev->error->msg,
                     kc_err_name(ev->error->code));
    }
}

static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* Flips a payload byte of the batch holding `offset`; returns its [base, last] range. */
static void corrupt(const char *path, int64_t offset, int64_t *base, int64_t *last)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    struct stat st;
    assert_int_equal(fstat(fileno(f), &st), 0);
    uint8_t *d = malloc((size_t)st.st_size);
    assert_non_null(d);
    assert_int_equal(fread(d, 1, (size_t)st.st_size, f), (size_t)st.st_size);
    size_t pos = 0;
    *base = *last = -1;
    while (pos + 61 <= (size_t)st.st_size) {
        int64_t b = (int64_t)be(d + pos, 8);
        size_t size = 12 + (size_t)be(d + pos + 8, 4);
        int64_t l = b + (int64_t)be(d + pos + 23, 4);
        if (offset >= b && offset <= l) {
            size_t at = pos + size - 3; /* inside the last record: covered by the CRC */
            d[at] ^= 0x5a;
            assert_int_equal(fseek(f, (long)at, SEEK_SET), 0);
            assert_int_equal(fwrite(&d[at], 1, 1, f), 1);
            *base = b, *last = l;
            break;
        }
        pos += size;
    }
    fclose(f);
    free(d);
    assert_true(*base >= 0);
}

static void corrupt_batch_reported_skipped(void **state)
{
    (void)state;
    snprintf(topic, sizeof topic, "kc-core-corrupt-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions 1 --replication 1", topic);
    for (int i = 0; i < 3; i++) {
        kc_test_cluster("produce %s --records %d --size 100", topic, PER_RUN);
    }
    const char *dir = kc_test_env("KC_CLUSTER_DIR");
    int node = 0;
    char path[512];
    for (int n = 1; n <= 9 && !node; n++) {
        snprintf(path, sizeof path, "%s/node-%d/data/%s-0/00000000000000000000.log", dir, n, topic);
        if (access(path, R_OK) == 0)
            node = n;
    }
    assert_true(node > 0);
    kc_test_cluster("stop-broker %d", node);
    int64_t cb, cl;
    corrupt(path, PER_RUN + PER_RUN / 2, &cb, &cl);
    kc_test_cluster("start-broker %d", node); /* returns once the broker is ready again */
    printf("# corrupted the batch at offsets %lld..%lld on node %d\n", (long long)cb, (long long)cl,
           node);

    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", kc_test_env("KC_BOOTSTRAP"), &err),
                     KC_OK);
    assert_int_equal(kc_conf_set(conf, "worker.threads", "1", &err), KC_OK);
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event};
    kc_consumer_t *c = NULL;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    kc_topic_partition_t tp = {topic, 0, KC_OFFSET_BEGINNING};
    assert_int_equal(kc_assign(c, &tp, 1, &err), KC_OK);
    int64_t want = 3 * PER_RUN - (cl - cb + 1);
    for (int i = 0; i < 600 && (atomic_load(&delivered) < want || atomic_load(&errors) == 0); i++)
        usleep(100 * 1000);
    usleep(300 * 1000);
    printf("# delivered %lld (want %lld), errors %lld: %s\n", (long long)atomic_load(&delivered),
           (long long)want, (long long)atomic_load(&errors), err_msg);
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);

    assert_true(atomic_load(&errors) >= 1);
    assert_non_null(strstr(err_msg, topic));
    assert_int_equal(atomic_load(&delivered), want);
    for (int64_t o = 0; o < 3 * PER_RUN; o++)
        assert_int_equal(seen[o], o >= cb && o <= cl ? 0 : 1); /* later records delivered */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(corrupt_batch_reported_skipped)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
