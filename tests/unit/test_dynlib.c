/* kc-test-label: threads */
/* Libraries loaded on first use (io/base/dynlib.h):
 *  consumer_maps_no_login_library  a consumer without OIDC or GSSAPI maps neither libcurl nor MIT
 *                                  krb5 (they are not linked); one with sasl.mechanism=GSSAPI
 *                                  maps krb5's, still not libcurl.
 *  missing_library_says_which      a library that is not installed, or lacks a symbol: an error
 *                                  naming the library, the Debian package, what needs it and the
 *                                  symbol, again on the next call (each call tries again).
 *  concurrent_first_loads          four threads load one library at once: each sees the whole
 *                                  table, equal to dlsym's own answers (TSan: the publication). */
#include "kc_test.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/dynlib.h"
#include "kconsume.h"

/* Whether /proc/self/maps names a file whose name contains `part`. */
static bool mapped(const char *part)
{
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, part) != NULL;
    fclose(f);
    return found;
}

static void show(const char *who)
{
    printf("# %s: libcurl %d, libgssapi_krb5 %d, libkrb5 %d\n", who, mapped("libcurl"),
           mapped("libgssapi_krb5"), mapped("libkrb5.so"));
}

static kc_consumer_t *consumer(const char *const (*kv)[2], size_t n)
{
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    if (kc_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", &err) != KC_OK)
        fail_msg("%s", err.msg);
    for (size_t i = 0; i < n; i++)
        if (kc_conf_set(conf, kv[i][0], kv[i][1], &err) != KC_OK)
            fail_msg("%s: %s", kv[i][0], err.msg);
    kc_consumer_t *c;
    if (kc_consumer_new(conf, NULL, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    return c;
}

static void consumer_maps_no_login_library(void **state)
{
    (void)state;
    kc_consumer_t *plain = consumer(NULL, 0);
    show("plain consumer");
    assert_false(mapped("libcurl"));
    assert_false(mapped("libgssapi_krb5"));
    assert_false(mapped("libkrb5.so"));
    const char *const gss[][2] = {{"security.protocol", "SASL_PLAINTEXT"},
                                  {"sasl.mechanism", "GSSAPI"}};
    kc_consumer_t *k = consumer(gss, 2);
    show("GSSAPI consumer");
    assert_true(mapped("libgssapi_krb5"));
    assert_true(mapped("libkrb5.so"));
    assert_false(mapped("libcurl"));
    kc_error_t err;
    (void)kc_close(k, 5000, &err);
    kc_destroy(k);
    (void)kc_close(plain, 5000, &err);
    kc_destroy(plain);
}

static struct {
    void *version;
} nothing;
static const char *const nothing_names[] = {"zlibVersion"};

#define ZLIB_SYMS(X) X(version, zlibVersion) X(crc, crc32)
static struct {
    ZLIB_SYMS(KC_DYNLIB_FIELD)
} lz;
static const char *const zlib_names[] = {ZLIB_SYMS(KC_DYNLIB_NAME)};

static void missing_library_says_which(void **state)
{
    (void)state;
    kc_dynlib_t absent = KC_DYNLIB("libkc-not-there.so.7", "kc-not-there", "the test's login",
                                   nothing_names, nothing);
    kc_error_t err;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(kc_dynlib_load(&absent, &err), KC_ERR_UNSUPPORTED);
        printf("# %s\n", err.msg);
        assert_non_null(strstr(err.msg, "libkc-not-there.so.7"));
        assert_non_null(strstr(err.msg, "Debian package kc-not-there"));
        assert_non_null(strstr(err.msg, "the test's login needs"));
    }
    static const char *const odd_names[] = {"zlibVersion", "kc_no_such_symbol"};
    static struct {
        void *a, *b;
    } odd;
    kc_dynlib_t lacking = KC_DYNLIB("libz.so.1", "zlib1g", "the test's login", odd_names, odd);
    assert_int_equal(kc_dynlib_load(&lacking, &err), KC_ERR_UNSUPPORTED);
    printf("# %s\n", err.msg);
    assert_non_null(strstr(err.msg, "kc_no_such_symbol"));
    assert_non_null(strstr(err.msg, "libz.so.1"));
}

static kc_dynlib_t zlib_lib = KC_DYNLIB("libz.so.1", "zlib1g", "the test", zlib_names, lz);

static void *load_and_use(void *arg)
{
    (void)arg;
    kc_error_t err;
    if (kc_dynlib_load(&zlib_lib, &err) != KC_OK)
        return (void *)"load failed";
    /* The table as this thread sees it: every pointer the loader wrote. */
    if (strcmp(lz.version(), zlibVersion()) != 0)
        return (void *)"zlibVersion differs";
    if (lz.crc(0, (const Bytef *)"kconsume", 8) != crc32(0, (const Bytef *)"kconsume", 8))
        return (void *)"crc32 differs";
    return NULL;
}

static void concurrent_first_loads(void **state)
{
    (void)state;
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, load_and_use, NULL), 0);
    for (int i = 0; i < 4; i++) {
        void *why;
        pthread_join(t[i], &why);
        if (why)
            fail_msg("thread %d: %s", i, (const char *)why);
    }
    void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    assert_ptr_equal((void *)lz.version, dlsym(h, "zlibVersion"));
    dlclose(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(consumer_maps_no_login_library),
        cmocka_unit_test(missing_library_says_which),
        cmocka_unit_test(concurrent_first_loads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
