/* Helpers for the public-API membership tests (test_group_resubscribe.c, test_group_unsubscribe.c):
 * consumers whose callbacks record, per consumer, what on_assign / on_revoke / on_lost said it
 * holds, how often each topic was revoked, where delivery got to per partition, and the last
 * KC_EVENT_ASSIGNMENT; the testkit commands; a Java console consumer in the same group.
 * Header-only (tests need no CMake change). Owner: every field of a tracker is under its `mu`
 * (callbacks run on workers, the test reads on its own thread). */
#ifndef KC_TEST_MEMBERSHIP_H
#define KC_TEST_MEMBERSHIP_H

#include "kc_test.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kconsume.h"

#define MB_MAXP 16 /* (topic, partition) pairs a tracker follows */

typedef struct mb_tp {
    char topic[64];
    int32_t partition;
    int64_t end; /* offset after the last record delivered, -1 none */
} mb_tp_t;

typedef struct mb_tracker {
    pthread_mutex_t mu;
    mb_tp_t held[MB_MAXP]; /* between on_assign and on_revoke/on_lost */
    size_t n_held;
    mb_tp_t seen[MB_MAXP]; /* every partition ever delivered, with its end */
    size_t n_seen;
    long assigns, revokes, losts, records;
    char revoked_topics[8][64]; /* per topic how many on_revoke: revoked_n[i] */
    long revoked_n[8];
    size_t n_revoked_topics;
    /* The last KC_EVENT_ASSIGNMENT, as sorted "topic:p" entries joined by ','; events counted. */
    char last_event[1024];
    long events;
    kc_consumer_t *c;
} mb_tracker_t;

static inline void mb_init(mb_tracker_t *t)
{
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
}

static inline mb_tp_t *mb_find(mb_tp_t *v, size_t n, const char *topic, int32_t p)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].partition == p && strcmp(v[i].topic, topic) == 0)
            return &v[i];
    return NULL;
}

static inline void mb_on_assign(void *o, kc_part_t *p)
{
    mb_tracker_t *t = o;
    pthread_mutex_lock(&t->mu);
    t->assigns++;
    if (t->n_held < MB_MAXP && !mb_find(t->held, t->n_held, p->topic, p->partition)) {
        mb_tp_t *h = &t->held[t->n_held++];
        snprintf(h->topic, sizeof h->topic, "%s", p->topic);
        h->partition = p->partition;
        h->end = -1;
    }
    pthread_mutex_unlock(&t->mu);
}

static inline void mb_drop(mb_tracker_t *t, kc_part_t *p)
{
    mb_tp_t *h = mb_find(t->held, t->n_held, p->topic, p->partition);
    if (h)
        *h = t->held[--t->n_held];
}

static inline void mb_on_revoke(void *o, kc_part_t *p)
{
    mb_tracker_t *t = o;
    pthread_mutex_lock(&t->mu);
    t->revokes++;
    size_t i = 0;
    while (i < t->n_revoked_topics && strcmp(t->revoked_topics[i], p->topic) != 0)
        i++;
    if (i == t->n_revoked_topics && i < 8)
        snprintf(t->revoked_topics[t->n_revoked_topics++], 64, "%s", p->topic);
    if (i < 8)
        t->revoked_n[i]++;
    mb_drop(t, p);
    pthread_mutex_unlock(&t->mu);
}

static inline void mb_on_lost(void *o, kc_part_t *p)
{
    mb_tracker_t *t = o;
    pthread_mutex_lock(&t->mu);
    t->losts++;
    mb_drop(t, p);
    pthread_mutex_unlock(&t->mu);
}

static inline kc_cb_result_t mb_on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    mb_tracker_t *t = o;
    long n = 0;
    int64_t end = -1;
    const kc_record_t *r;
    while ((r = kc_records_next(b))) {
        n++;
        end = kc_record_offset(r) + 1;
    }
    pthread_mutex_lock(&t->mu);
    t->records += n;
    mb_tp_t *s = mb_find(t->seen, t->n_seen, p->topic, p->partition);
    if (!s && t->n_seen < MB_MAXP) {
        s = &t->seen[t->n_seen++];
        snprintf(s->topic, sizeof s->topic, "%s", p->topic);
        s->partition = p->partition;
        s->end = -1;
    }
    if (s && end > s->end)
        s->end = end;
    pthread_mutex_unlock(&t->mu);
    return KC_CB_CONTINUE;
}

static int mb_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "topic:p" entries, sorted, joined by ','. */
static inline void mb_join(char *out, size_t cap, const char *const *topics, const int32_t *parts,
                           size_t n)
{
    char(*e)[80] = calloc(n ? n : 1, sizeof *e);
    char **ptr = calloc(n ? n : 1, sizeof *ptr);
    assert_non_null(e);
    assert_non_null(ptr);
    for (size_t i = 0; i < n; i++) {
        snprintf(e[i], sizeof e[i], "%s:%d", topics[i], (int)parts[i]);
        ptr[i] = e[i];
    }
    qsort(ptr, n, sizeof *ptr, mb_cmp);
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? "," : "", ptr[i]);
    free(ptr);
    free(e);
}

static inline void mb_on_event(void *o, const kc_event_t *ev)
{
    mb_tracker_t *t = o;
    if (ev->type != KC_EVENT_ASSIGNMENT)
        return;
    const char *topics[MB_MAXP];
    int32_t parts[MB_MAXP];
    size_t n = ev->assignment_len < MB_MAXP ? ev->assignment_len : MB_MAXP;
    for (size_t i = 0; i < n; i++) {
        topics[i] = ev->assignment[i].topic;
        parts[i] = ev->assignment[i].partition;
    }
    pthread_mutex_lock(&t->mu);
    t->events++;
    mb_join(t->last_event, sizeof t->last_event, topics, parts, n);
    pthread_mutex_unlock(&t->mu);
}

/* What on_assign/on_revoke say is held, in mb_join's form. Under t->mu. */
static inline void mb_held_str(mb_tracker_t *t, char *out, size_t cap)
{
    const char *topics[MB_MAXP];
    int32_t parts[MB_MAXP];
    for (size_t i = 0; i < t->n_held; i++) {
        topics[i] = t->held[i].topic;
        parts[i] = t->held[i].partition;
    }
    mb_join(out, cap, topics, parts, t->n_held);
}

/* How many held partitions are of `topic`. Under t->mu. */
static inline size_t mb_held_of(const mb_tracker_t *t, const char *topic)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_held; i++)
        n += strcmp(t->held[i].topic, topic) == 0;
    return n;
}

static inline long mb_revoked_of(const mb_tracker_t *t, const char *topic)
{
    for (size_t i = 0; i < t->n_revoked_topics; i++)
        if (strcmp(t->revoked_topics[i], topic) == 0)
            return t->revoked_n[i];
    return 0;
}

/* A consumer of `group` under `protocol` ("consumer" / "classic"), callbacks into t. extra: more
 * key/value pairs (NULL-terminated), e.g. the classic assignor. */
static inline kc_consumer_t *mb_consumer(mb_tracker_t *t, const char *group, const char *protocol,
                                         const char *const *extra)
{
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    const char *kv[][2] = {{"bootstrap.servers", kc_test_env("KC_BOOTSTRAP")},
                           {"group.id", group},
                           {"group.protocol", protocol},
                           {"auto.offset.reset", "earliest"},
                           /* only the revocation commits: its offsets are the test's to check */
                           {"auto.commit.interval.ms", "600000"},
                           {"fetch.max.wait.ms", "100"},
                           {"worker.threads", "3"}};
    for (size_t i = 0; i < sizeof kv / sizeof *kv; i++)
        if (kc_conf_set(conf, kv[i][0], kv[i][1], &err) != KC_OK)
            fail_msg("%s: %s", kv[i][0], err.msg);
    for (size_t i = 0; extra && extra[i]; i += 2)
        if (kc_conf_set(conf, extra[i], extra[i + 1], &err) != KC_OK)
            fail_msg("%s: %s", extra[i], err.msg);
    kc_callbacks_t cbs = {.on_assign = mb_on_assign,
                          .on_records = mb_on_records,
                          .on_revoke = mb_on_revoke,
                          .on_lost = mb_on_lost,
                          .on_event = mb_on_event,
                          .opaque = t};
    if (kc_consumer_new(conf, &cbs, &t->c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    return t->c;
}

static inline long records_of_tracker(mb_tracker_t *t)
{
    pthread_mutex_lock(&t->mu);
    long n = t->records;
    pthread_mutex_unlock(&t->mu);
    return n;
}

/* Waits up to ms for cond(t) (evaluated under t->mu); false on timeout. */
typedef bool (*mb_cond_fn)(mb_tracker_t *t, const void *arg);
static inline bool mb_wait(mb_tracker_t *t, mb_cond_fn cond, const void *arg, int ms)
{
    int64_t end = kc_test_now_ms() + ms * kc_test_time_scale();
    for (;;) {
        pthread_mutex_lock(&t->mu);
        bool ok = cond(t, arg);
        pthread_mutex_unlock(&t->mu);
        if (ok)
            return true;
        if (kc_test_now_ms() > end)
            return false;
        kc_test_sleep_ms(50);
    }
}

static inline void mb_run(const char *cmd)
{
    char line[1024];
    snprintf(line, sizeof line, "%s %s --dir %s >/dev/null", kc_test_env("KC_TESTKIT"), cmd,
             kc_test_env("KC_CLUSTER_DIR"));
    if (system(line) != 0)
        fail_msg("failed: %s", line);
}

static inline void mb_topic(const char *name, int parts, int records)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "topic create %s --partitions %d", name, parts);
    mb_run(cmd);
    snprintf(cmd, sizeof cmd, "produce %s --records %d --size 40 --keys 64", name, records);
    mb_run(cmd);
}

/* Java's console consumer in `group` on `topic`; props: NULL-terminated consumer properties. */
static inline pid_t mb_java(const char *group, const char *topic, const char *const *props)
{
    char cp[1024], cmd[512];
    snprintf(cmd, sizeof cmd, "%s classpath --dir %s", kc_test_env("KC_TESTKIT"),
             kc_test_env("KC_CLUSTER_DIR"));
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    assert_non_null(fgets(cp, sizeof cp, f));
    pclose(f);
    cp[strcspn(cp, "\n")] = 0;
    const char *argv[32] = {"java",
                            "-Xmx256m",
                            "-cp",
                            cp,
                            "org.apache.kafka.tools.consumer.ConsoleConsumer",
                            "--bootstrap-server",
                            kc_test_env("KC_BOOTSTRAP"),
                            "--topic",
                            topic,
                            "--group",
                            group};
    size_t n = 11;
    for (size_t i = 0; props && props[i] && n + 3 < 32; i++) {
        argv[n++] = "--consumer-property";
        argv[n++] = props[i];
    }
    argv[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        FILE *null = freopen("/dev/null", "w", stdout);
        (void)null;
        null = freopen("/dev/null", "w", stderr);
        execvp("java", (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    return pid;
}

static inline void mb_java_stop(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
}

#endif
