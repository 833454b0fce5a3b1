/* libFuzzer: ConsumerProtocolSubscription / ConsumerProtocolAssignment (with their int16 version
 * prefix, as group members send them) and StickyAssignor user data. Single-threaded.
 * Input: [kind: 0 subscription, 1 assignment, 2 sticky user data][bytes]. */
#include "fuzz_proto_common.h"

#define VERSIONED(name)                                                                            \
    static void fz_##name(const uint8_t *data, size_t len)                                         \
    {                                                                                              \
        uint8_t *frame = malloc(len ? len : 1);                                                    \
        if (len)                                                                                   \
            memcpy(frame, data, len);                                                              \
        kc_arena_t a = {0};                                                                        \
        kc_error_t err;                                                                            \
        kc_##name##_t m;                                                                           \
        int16_t v;                                                                                 \
        kc_rbuf_t r = kc_rbuf(frame, len);                                                         \
        if (kc_##name##_decode_versioned(&m, &v, &r, &a, &err) == KC_OK) {                         \
            int16_t use = v > KC_##name##_MAX_VERSION ? KC_##name##_MAX_VERSION : v;               \
            kc_wbuf_t w = {0};                                                                     \
            if (kc_##name##_encode_versioned(&m, use, &w, &err) != KC_OK)                          \
                abort();                                                                           \
            kc_wbuf_free(&w);                                                                      \
        }                                                                                          \
        kc_arena_free(&a);                                                                         \
        free(frame);                                                                               \
    }

#define KC_consumer_protocol_subscription_MAX_VERSION KC_CONSUMER_PROTOCOL_SUBSCRIPTION_MAX_VERSION
#define KC_consumer_protocol_assignment_MAX_VERSION   KC_CONSUMER_PROTOCOL_ASSIGNMENT_MAX_VERSION
VERSIONED(consumer_protocol_subscription)
VERSIONED(consumer_protocol_assignment)

static kc_err_t sticky_dec(void *m, int16_t v, kc_rbuf_t *r, kc_arena_t *a, kc_error_t *err)
{
    return kc_sticky_assignor_user_data_decode(m, v, r, a, err);
}
static kc_err_t sticky_enc(const void *m, int16_t v, kc_wbuf_t *w, kc_error_t *err)
{
    return kc_sticky_assignor_user_data_encode(m, v, w, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    if (len < 1)
        return 0;
    switch (data[0] % 3) {
    case 0:
        fz_consumer_protocol_subscription(data + 1, len - 1);
        break;
    case 1:
        fz_consumer_protocol_assignment(data + 1, len - 1);
        break;
    default:
        /* Java reads V1 and falls back to V0; exercise both. */
        for (int16_t v = 0; v <= 1; v++)
            fz_check(sticky_dec, sticky_enc, sizeof(kc_sticky_assignor_user_data_t), v, data + 1,
                     len - 1);
    }
    return 0;
}
