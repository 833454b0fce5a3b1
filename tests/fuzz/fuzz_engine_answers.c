/* libFuzzer: the answers of an older or lying broker as the engine reads them, beyond the
 * generated decoders (fuzz_proto_response): FindCoordinator through kc_eng_fc_decode (one key
 * before v4, the coordinators array after), OffsetFetch through the offsets codec's walk (one
 * group before v8, groups after), Fetch through the Fetch codec's walk (topics by name before
 * v13, by id after), each at any version kconsume speaks, including the oldest a Kafka 2.1
 * broker gets. An answer that does not decode must be explained naming the API and the version
 * (kc_wire_bad_answer, what the application is told); one that decodes must walk without
 * reading outside the frame.
 * Input: [which][version][body...]: which % 3 picks the answer (0 FindCoordinator, 1
 * OffsetFetch, 2 Fetch), the version is kept when in the engine's range for that API, else folded
 * into it; the seeds are fuzz_proto_response's answers of those APIs with `which` in front.
 * Single-threaded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn_wire.h"
#include "engine_int.h"
#include "fetch/codec.h"
#include "offsets_codec.h"
#include "proto/proto.h"
#include "versions.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

/* One known topic, "t" with id 1..16: what the walk needs to name topics of either form. */
static const uint8_t TOPIC_ID[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static const char *name_of(void *opaque, const uint8_t id[16])
{
    (void)opaque;
    return memcmp(id, TOPIC_ID, 16) == 0 ? "t" : NULL;
}

static int id_of(void *opaque, const char *name, size_t len, uint8_t id[16])
{
    (void)opaque;
    if (len != 1 || name[0] != 't')
        return 0;
    memcpy(id, TOPIC_ID, 16);
    return 1;
}

/* The explanation of an undecodable answer names the API and the version. */
static void explained(int16_t api_key, int16_t version, const kc_error_t *decode_err)
{
    if (decode_err->msg[0] == 0)
        abort();
    kc_error_t why;
    kc_wire_bad_answer(&why, "127.0.0.1:9092", api_key, version, decode_err->msg);
    const kc_proto_api_t *api = kc_proto_api_find(api_key);
    char v[16];
    snprintf(v, sizeof v, " v%d ", (int)version);
    if (why.code != KC_ERR_MALFORMED || !api || strstr(why.msg, api->name) != why.msg ||
        !strstr(why.msg, v))
        abort();
}

/* The byte is the version itself when in range (so seeds say what they are), else folded in. */
static int16_t fold(uint8_t b, int lo, int hi)
{
    return (int16_t)(b >= lo && b <= hi ? b : lo + b % (hi - lo + 1));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    if (len < 2)
        return 0;
    int which = data[0] % 3;
    size_t n = len - 2;
    /* An exact-size heap frame: ASan flags any read past it. */
    kc_buf_t *frame = malloc(sizeof *frame + (n ? n : 1));
    if (!frame)
        return 0;
    memset(frame, 0, sizeof *frame);
    frame->len = frame->cap = n;
    if (n)
        memcpy(frame->data, data + 2, n);
    kc_arena_t a = {0};
    kc_error_t err;
    kc_rbuf_t r = kc_rbuf(frame->data, n);
    if (which == 0) {
        int16_t v = fold(data[1], KC_ENG_FIND_COORDINATOR_MIN, KC_ENG_FIND_COORDINATOR_MAX);
        char addr[300];
        int32_t node = -1;
        int rc = kc_eng_fc_decode(frame, 0, v, addr, sizeof addr, &node);
        if (rc == 0 && strlen(addr) >= sizeof addr)
            abort();
        kc_find_coordinator_response_t m;
        if (kc_find_coordinator_response_decode(&m, v, &r, &a, &err) != KC_OK)
            explained(KC_FIND_COORDINATOR_REQUEST_API_KEY, v, &err);
    } else if (which == 1) {
        int16_t v = fold(data[1], KC_ENG_OFFSET_FETCH_MIN, KC_ENG_OFFSET_FETCH_MAX);
        kc_offset_fetch_response_t m;
        kc_offsets_fetched_iter_t it;
        kc_offsets_fetched_t f;
        int16_t top = 0;
        if (kc_offset_fetch_response_decode(&m, v, &r, &a, &err) != KC_OK)
            explained(KC_OFFSET_FETCH_REQUEST_API_KEY, v, &err);
        else if (kc_offsets_codec_fetched_init(&it, &m, v, &top))
            while (kc_offsets_codec_fetched_next(&it, &f))
                if (f.topic.len < 0 || (f.topic.len > 0 && !f.topic.ptr))
                    abort();
    } else {
        int16_t v = fold(data[1], KC_ENG_FETCH_MIN, KC_ENG_FETCH_MAX);
        kc_fetch_response_t m;
        kc_fetch_names_t names = {.name_of = name_of, .id_of = id_of};
        if (kc_fetch_response_decode(&m, v, &r, &a, &err) != KC_OK) {
            explained(KC_FETCH_REQUEST_API_KEY, v, &err);
        } else {
            kc_fetch_codec_iter_t it;
            kc_fetch_part_result_t pr;
            kc_fetch_codec_iter_init(&it, &m, v, &names);
            while (kc_fetch_codec_next(&it, &pr))
                if (pr.records.len > 0 && (pr.records.ptr < frame->data ||
                                           pr.records.ptr + pr.records.len > frame->data + n))
                    abort();
        }
    }
    kc_arena_free(&a);
    free(frame);
    return 0;
}
