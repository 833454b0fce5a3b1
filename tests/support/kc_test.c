#define _XOPEN_SOURCE 700 /* nftw */
#include "kc_test.h"

#include <errno.h>
#include <jansson.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *kc_test_env(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        fprintf(stderr,
                "%s is not set: kafka tests run under tests/run-suite, which boots the "
                "testkit cluster (or set KC_BOOTSTRAP to use an existing one)\n",
                name);
        fail();
    }
    return v;
}

const char *kc_test_src_path(const char *rel)
{
    static char buf[4096];
    const char *root = getenv("KC_SOURCE_DIR");
    snprintf(buf, sizeof buf, "%s/%s", root ? root : ".", rel);
    return buf;
}

int64_t kc_test_time_scale(void)
{
    const char *v = getenv("KC_TEST_TIME_SCALE");
    long long n = v ? atoll(v) : 1;
    return n >= 1 ? n : 1;
}

/* ---- scratch directories ----------------------------------------------------------------- */

/* Owner: the test's main thread (created and removed there; tests create a handful). */
static struct {
    char *path[32];
    size_t n;
    pid_t owner; /* a forked member process exits through atexit too: only the creator removes */
} g_tmp;

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0; /* go on: remove what can be removed */
}

static void tmpdirs_remove(void)
{
    if (getpid() != g_tmp.owner)
        return;
    const char *keep = getenv("KC_TEST_KEEP_TMP");
    for (size_t i = 0; i < g_tmp.n; i++) {
        if (keep && strcmp(keep, "1") == 0)
            fprintf(stderr, "# kept %s (KC_TEST_KEEP_TMP=1)\n", g_tmp.path[i]);
        else
            nftw(g_tmp.path[i], rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(g_tmp.path[i]);
    }
    g_tmp.n = 0;
}

const char *kc_test_tmpdir(const char *tag)
{
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    int n = snprintf(tmpl, sizeof tmpl, "%s/kc-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    if (n < 0 || (size_t)n >= sizeof tmpl || g_tmp.n == sizeof g_tmp.path / sizeof *g_tmp.path)
        fail_msg("kc_test_tmpdir(%s): path too long or too many directories", tag);
    if (!mkdtemp(tmpl))
        fail_msg("kc_test_tmpdir: mkdtemp(%s) failed", tmpl);
    char *p = strdup(tmpl);
    if (!p)
        fail_msg("kc_test_tmpdir: out of memory");
    if (g_tmp.n == 0) {
        g_tmp.owner = getpid();
        atexit(tmpdirs_remove);
    }
    g_tmp.path[g_tmp.n++] = p;
    return p;
}

const char *kc_test_path(char *buf, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(buf, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap)
        fail_msg("path %s/%s does not fit in %zu bytes", dir, name, cap);
    return buf;
}

void kc_test_self_signed(const char *dir, const char *name, const char *cn, int ca,
                         const char *key_password)
{
    char cmd[8192], pw[512] = "-nodes";
    if (key_password)
        snprintf(pw, sizeof pw, "-passout pass:%s", key_password);
    int n = snprintf(cmd, sizeof cmd,
                     "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -days 1 "
                     "-subj /CN=%s %s -keyout %s/%s.key -out %s/%s.pem %s >/dev/null 2>&1",
                     cn, pw, dir, name, dir, name,
                     ca ? "-addext basicConstraints=critical,CA:TRUE" : "");
    if (n < 0 || (size_t)n >= sizeof cmd)
        fail_msg("kc_test_self_signed: command too long");
    if (system(cmd) != 0)
        fail_msg("openssl could not make %s/%s.pem", dir, name);
}

int64_t kc_test_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void kc_test_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L}, left;
    while (nanosleep(&ts, &left) != 0 && errno == EINTR)
        ts = left;
}

void kc_test_filter(void)
{
    const char *f = getenv("KC_TEST_FILTER");
    if (f && *f)
        cmocka_set_test_filter(f);
}

/* ---- the suite's cluster and configuration ------------------------------------------------ */

/* "$KC_TESTKIT SUBCOMMAND --dir DIR" into line; fails the test when it does not fit. */
static void cluster_line(char *line, size_t cap, const char *dir, const char *fmt, va_list ap)
{
    char sub[768];
    int n = vsnprintf(sub, sizeof sub, fmt, ap);
    if (n < 0 || (size_t)n >= sizeof sub)
        fail_msg("testkit command too long: %.64s...", sub);
    n = snprintf(line, cap, "%s %s --dir %s", kc_test_env("KC_TESTKIT"), sub, dir);
    if (n < 0 || (size_t)n >= cap)
        fail_msg("testkit command too long: %s", sub);
}

void kc_test_cluster(const char *fmt, ...)
{
    char line[1536];
    va_list ap;
    va_start(ap, fmt);
    cluster_line(line, sizeof line - 16, kc_test_env("KC_CLUSTER_DIR"), fmt, ap);
    va_end(ap);
    strcat(line, " >/dev/null");
    if (system(line) != 0)
        fail_msg("failed: %s", line);
}

int kc_test_cluster_in(const char *dir, char *bootstrap, size_t cap, const char *fmt, ...)
{
    char line[1536];
    va_list ap;
    va_start(ap, fmt);
    cluster_line(line, sizeof line, dir, fmt, ap);
    va_end(ap);
    FILE *f = popen(line, "r");
    if (!f)
        fail_msg("popen: %s", line);
    char buf[512];
    while (fgets(buf, sizeof buf, f))
        if (bootstrap && strncmp(buf, "BOOTSTRAP=", 10) == 0)
            snprintf(bootstrap, cap, "%.*s", (int)strcspn(buf + 10, "\n"), buf + 10);
    return pclose(f);
}

void kc_test_conf_set(kc_conf_t *conf, const char *key, const char *value)
{
    kc_error_t e;
    if (kc_conf_set(conf, key, value, &e) != KC_OK)
        fail_msg("kc_conf_set %s: %s", key, e.msg);
}

void kc_test_conf_set_all(kc_conf_t *conf, const char *pairs)
{
    char *copy = strdup(pairs), *save = NULL;
    assert_non_null(copy);
    for (char *kv = strtok_r(copy, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            fail_msg("kc_test_conf_set_all: \"%s\" is no key=value", kv);
        *eq = '\0';
        kc_test_conf_set(conf, kv, eq + 1);
    }
    free(copy);
}

/* ---- consumers ------------------------------------------------------------------------------ */

kc_consumer_t *kc_test_consumer(kc_conf_t *conf, const kc_callbacks_t *cbs)
{
    kc_consumer_t *c = NULL;
    kc_error_t err;
    if (kc_consumer_new(conf, cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    return c;
}

enum { MAX_PARTS = 256 };

void kc_test_assign_all(kc_consumer_t *c, const char *topic, int np, int64_t offset)
{
    kc_topic_partition_t tps[MAX_PARTS];
    if (np < 1 || np > MAX_PARTS)
        fail_msg("kc_test_assign_all: %d partitions", np);
    for (int i = 0; i < np; i++)
        tps[i] = (kc_topic_partition_t){topic, i, offset};
    kc_error_t err;
    if (kc_assign(c, tps, (size_t)np, &err) != KC_OK)
        fail_msg("kc_assign: %s", err.msg);
}

void kc_test_commit_check(kc_consumer_t *c, const char *topic, int np, int64_t want)
{
    kc_topic_partition_t got[MAX_PARTS];
    if (np < 1 || np > MAX_PARTS)
        fail_msg("kc_test_commit_check: %d partitions", np);
    kc_error_t err;
    if (kc_commit(c, NULL, 0, 30000, &err) != KC_OK)
        fail_msg("kc_commit: %s", err.msg);
    for (int i = 0; i < np; i++)
        got[i] = (kc_topic_partition_t){topic, i, 0};
    if (kc_committed(c, got, (size_t)np, 30000, &err) != KC_OK)
        fail_msg("kc_committed: %s", err.msg);
    int64_t sum = 0;
    for (int i = 0; i < np; i++)
        sum += got[i].offset > 0 ? got[i].offset : 0;
    if (sum != want)
        fail_msg("committed offsets of %s add up to %lld, %lld wanted", topic, (long long)sum,
                 (long long)want);
}

long long kc_test_stats_part(const char *json, const char *topic, int partition, const char *key)
{
    json_t *o = json ? json_loads(json, 0, NULL) : NULL;
    long long v = -2;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(o, "partitions"), i, e)
    {
        const char *t = json_string_value(json_object_get(e, "topic"));
        json_t *x = json_object_get(e, key);
        if (t && strcmp(t, topic) == 0 &&
            json_integer_value(json_object_get(e, "partition")) == partition &&
            json_is_integer(x)) {
            v = json_integer_value(x);
            break;
        }
    }
    json_decref(o);
    return v;
}

int64_t kc_test_record_index(const kc_record_t *r)
{
    size_t len;
    const char *v = kc_record_value(r, &len);
    char num[32];
    if (!v || len == 0 || len > 30)
        return -1;
    memcpy(num, v, len);
    num[len] = '\0';
    return atoll(num);
}

void kc_test_close(kc_consumer_t *c)
{
    kc_error_t err;
    if (kc_close(c, 15000, &err) != KC_OK)
        fail_msg("kc_close: %s", err.msg);
    kc_destroy(c);
}
