#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>

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
