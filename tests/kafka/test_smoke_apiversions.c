/* Smoke test of the whole stack at its lowest level: a blocking TCP connection to the first
 * broker of KC_BOOTSTRAP and one ApiVersions v0 exchange.
 *
 * Owner: the test's main thread (no other threads).
 *
 * The ApiVersions v0 encoding below is written by hand ON PURPOSE and only here: it is the
 * smallest possible request (header v1, empty body), so this test checks the broker and the
 * testkit independently of the generated codec (a codec bug can neither pass nor fail it).
 * Everywhere else the house rule holds: wire formats come from the generator. */
#include "kc_test.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker_blocking.h"

enum { API_FETCH = 1, API_API_VERSIONS = 18 };

static int read_full(int fd, uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static uint16_t be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}
static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void apiversions_v0_lists_fetch_v12(void **state)
{
    (void)state;
    const char *bootstrap = kc_test_env("KC_BOOTSTRAP");
    int fd = kc_tb_connect(bootstrap);
    if (fd < 0)
        fail_msg("cannot connect to the first broker of KC_BOOTSTRAP=%s", bootstrap);

    /* Request header v1: api_key, api_version, correlation_id, client_id (int16-length
     * string). ApiVersions v0 has an empty body. */
    static const char client_id[] = "kc-smoke";
    const int32_t corr = 0x4b430001;
    uint8_t req[4 + 2 + 2 + 4 + 2 + sizeof client_id - 1];
    uint8_t *p = req + 4;
    uint16_t v16;
    uint32_t v32;
    v16 = htons(API_API_VERSIONS), memcpy(p, &v16, 2), p += 2;
    v16 = htons(0), memcpy(p, &v16, 2), p += 2;
    v32 = htonl((uint32_t)corr), memcpy(p, &v32, 4), p += 4;
    v16 = htons(sizeof client_id - 1), memcpy(p, &v16, 2), p += 2;
    memcpy(p, client_id, sizeof client_id - 1), p += sizeof client_id - 1;
    v32 = htonl((uint32_t)(p - req - 4)), memcpy(req, &v32, 4);
    assert_int_equal(write(fd, req, (size_t)(p - req)), (ssize_t)(p - req));

    uint8_t szb[4];
    assert_int_equal(read_full(fd, szb, 4), 0);
    uint32_t size = be32(szb);
    assert_true(size >= 4 + 2 + 4 && size < (1u << 20));
    uint8_t *resp = malloc(size);
    assert_non_null(resp);
    assert_int_equal(read_full(fd, resp, size), 0);
    close(fd);

    /* Response header v0 (ApiVersions responses never use the flexible header), then
     * error_code, and an int32-counted array of (api_key, min_version, max_version). */
    assert_int_equal((int32_t)be32(resp), corr);
    assert_int_equal((int16_t)be16(resp + 4), 0);
    uint32_t n = be32(resp + 6);
    assert_true((uint64_t)n * 6 == size - 10);
    int fetch_max = -1, api_versions_seen = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *e = resp + 10 + 6 * i;
        int16_t key = (int16_t)be16(e), min = (int16_t)be16(e + 2), max = (int16_t)be16(e + 4);
        assert_true(min <= max);
        if (key == API_FETCH)
            fetch_max = max;
        if (key == API_API_VERSIONS)
            api_versions_seen = 1;
    }
    free(resp);
    assert_true(api_versions_seen);
    if (fetch_max < 12)
        fail_msg("Fetch max version %d < 12 (kconsume needs the flexible Fetch, v12 and up)",
                 fetch_max);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(apiversions_v0_lists_fetch_v12),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
