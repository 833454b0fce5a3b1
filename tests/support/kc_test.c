#define _XOPEN_SOURCE 700 /* nftw */
#include "kc_test.h"

#include <errno.h>
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
