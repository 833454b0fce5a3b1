/* Decodes responses captured from a real Kafka 4.1.1 broker (tests/unit/fixtures/proto/, made
 * by tests/interop/capture-fixtures): each must decode completely, and re-encoding the decoded
 * message must reproduce the broker's bytes exactly. Single-threaded test. */
#include "kc_test.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)n + 1);
    assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return p;
}

static void test_broker_responses_decode_and_reencode_exactly(void **state)
{
    (void)state;
    char dirpath[1024];
    snprintf(dirpath, sizeof dirpath, "%s", kc_test_src_path("tests/unit/fixtures/proto"));
    DIR *dir = opendir(dirpath);
    assert_non_null(dir);
    int files = 0, fetch_with_records = 0, metadata_with_topic = 0;
    int seen[KC_PROTO_MAX_API_KEY + 1] = {0};
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (!strstr(de->d_name, ".bin"))
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dirpath, de->d_name);
        size_t len;
        uint8_t *data = slurp(path, &len);
        assert_true(len >= 4);
        int16_t key = (int16_t)(data[0] << 8 | data[1]);
        int16_t v = (int16_t)(data[2] << 8 | data[3]);
        const kc_proto_api_t *api = kc_proto_api_find(key);
        assert_non_null(api);
        kc_rbuf_t r = kc_rbuf(data + 4, len - 4);
        kc_error_t err;
        int32_t corr;
        if (kc_proto_read_response_header(&r, key, v, &corr, &err))
            fail_msg("%s: %s", de->d_name, err.msg);
        const uint8_t *body = r.p;
        size_t body_len = kc_rbuf_remaining(&r);
        kc_arena_t a = {0};
        void *m = calloc(1, api->response_size);
        if (api->decode_response(m, v, &r, &a, &err))
            fail_msg("%s: %s", de->d_name, err.msg);
        if (kc_rbuf_remaining(&r) != 0)
            fail_msg("%s: %zu bytes left", de->d_name, kc_rbuf_remaining(&r));
        kc_wbuf_t w = {0};
        if (api->encode_response(m, v, &w, &err))
            fail_msg("%s: re-encode: %s", de->d_name, err.msg);
        if (w.len != body_len || memcmp(w.data, body, body_len) != 0)
            fail_msg("%s: re-encoded %zu bytes differ from the broker's %zu", de->d_name, w.len,
                     body_len);
        if (key == KC_FETCH_RESPONSE_API_KEY) {
            const kc_fetch_response_t *f = m;
            if (f->responses.count == 1 && f->responses.items[0].partitions.count == 1 &&
                f->responses.items[0].partitions.items[0].records.len > 0)
                fetch_with_records++;
        }
        if (key == KC_METADATA_RESPONSE_API_KEY) {
            const kc_metadata_response_t *md = m;
            for (int32_t i = 0; i < md->topics.count; i++)
                if (md->topics.items[i].name.len == 2 &&
                    memcmp(md->topics.items[i].name.ptr, "fx", 2) == 0)
                    metadata_with_topic++;
        }
        seen[key]++;
        files++;
        kc_wbuf_free(&w);
        kc_arena_free(&a);
        free(m);
        free(data);
    }
    closedir(dir);
    print_message("%d broker responses decoded and re-encoded byte-exact\n", files);
    /* Every API of the codec is represented, and the interesting ones carry real content. */
    for (int i = 0; i < KC_PROTO_API_COUNT; i++)
        if (!seen[kc_proto_apis[i].key])
            fail_msg("no fixture for %s", kc_proto_apis[i].name);
    assert_true(files >= 100);
    assert_true(fetch_with_records >= 10); /* Fetch v4..v17 read the captured topic's records */
    assert_true(metadata_with_topic >= 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_broker_responses_decode_and_reencode_exactly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
