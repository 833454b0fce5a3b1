/* Per-consumer logging without a broker (bootstrap 127.0.0.1:1 refuses every connection, and
 * each refusal is logged by the consumer's network thread): two consumers in one process, one at
 * log.level=debug and one at error, each with its own callback. The debug one's callback gets
 * INFO and DEBUG lines named by its client.id; the error one's gets nothing below ERROR, however
 * verbose the other is (log.level was process-wide and raise-only before); nothing reaches fd 2
 * while a callback is set; and the process-wide logger of threads with no consumer is left as it
 * was. */
#include "kc_test.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "kconsume.h"

typedef struct seen {
    pthread_mutex_t mu;
    int lines, below_error, below_warn, debug, wrong_name;
    const char *name;
} seen_t;

static void on_log(void *opaque, int level, const char *subsystem, const char *name,
                   const char *message)
{
    seen_t *s = opaque;
    (void)subsystem, (void)message;
    pthread_mutex_lock(&s->mu);
    s->lines++;
    s->below_error += level > KC_LOG_ERROR;
    s->below_warn += level > KC_LOG_WARN;
    s->debug += level == KC_LOG_DEBUG;
    s->wrong_name += strcmp(name, s->name) != 0;
    pthread_mutex_unlock(&s->mu);
}

static kc_consumer_t *consumer_with(const char *level, const char *client_id, seen_t *s)
{
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "log.level", level, &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "client.id", client_id, &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "reconnect.backoff.ms", "20", &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "reconnect.backoff.max.ms", "50", &err), KC_OK);
    assert_int_equal(kc_conf_set_log_cb(conf, on_log, s, &err), KC_OK);
    kc_consumer_t *c;
    if (kc_consumer_new(conf, NULL, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    /* something to connect for: a manual assignment makes the engine ask for metadata */
    kc_topic_partition_t tp = {"kc-log-level", 0, KC_OFFSET_BEGINNING};
    assert_int_equal(kc_assign(c, &tp, 1, &err), KC_OK);
    return c;
}

static void levels_are_per_consumer(void **state)
{
    (void)state;
    kc_log_configure(NULL, NULL, KC_LOG_WARN);
    seen_t v = {.mu = PTHREAD_MUTEX_INITIALIZER, .name = "kc-verbose"};
    seen_t q = {.mu = PTHREAD_MUTEX_INITIALIZER, .name = "kc-quiet"};

    char path[] = "/tmp/kc-log-stderr-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(fd, STDERR_FILENO) >= 0);

    kc_consumer_t *a = consumer_with("debug", v.name, &v);
    kc_consumer_t *b = consumer_with("error", q.name, &q);
    for (int i = 0; i < 100; i++) {
        pthread_mutex_lock(&v.mu);
        int n = v.debug, m = v.below_warn;
        pthread_mutex_unlock(&v.mu);
        if (n >= 1 && m >= 3)
            break;
        kc_test_sleep_ms(50);
    }
    kc_destroy(a);
    kc_destroy(b);

    fflush(stderr);
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    close(fd);
    unlink(path);

    printf("# verbose: %d lines (%d debug); quiet: %d lines (%d below error); stderr %lld bytes\n",
           v.lines, v.debug, q.lines, q.below_error, (long long)st.st_size);
    assert_true(v.debug >= 1);
    assert_true(v.below_warn >= 3);
    assert_int_equal(v.wrong_name, 0);
    assert_int_equal(q.below_error, 0);
    assert_int_equal(q.wrong_name, 0);
    assert_int_equal(st.st_size, 0);
    /* this thread never had a consumer's logger: the process-wide level is still WARN */
    assert_false(kc_log_enabled(KC_LOG_INFO));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(levels_are_per_consumer)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
