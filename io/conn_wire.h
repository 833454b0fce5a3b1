/*
 * The Kafka framing the connection layer needs, over the generated codec (io/proto/): header
 * versions, the request header, the response header, and the ApiVersions handshake. The
 * connection calls only these, so the codec's API stays behind this one file.
 * Pure functions; any thread.
 */
#ifndef KC_IO_CONN_WIRE_H
#define KC_IO_CONN_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "proto/proto.h"

#define KC_API_KEY_MAX  128
#define KC_API_VERSIONS 18

/* Header versions for (api_key, version): request header 1 or 2, response header 0 or 1.
 * KC_ERR_UNSUPPORTED for an API the codec does not know. */
kc_err_t kc_wire_header_versions(int16_t api_key, int16_t version, int *req_hdr, int *resp_hdr);

kc_err_t kc_wire_request_header(kc_wbuf_t *w, int16_t api_key, int16_t version, int32_t corr,
                                const char *client_id, int req_hdr, kc_error_t *err);

/* Correlation id and where the body starts, bounds-checked. */
kc_err_t kc_wire_response_header(const uint8_t *p, size_t len, int resp_hdr, int32_t *corr,
                                 size_t *body_off, kc_error_t *err);

/* The broker's supported version ranges, indexed by api key; min = -1 when unsupported. */
typedef struct kc_api_ranges {
    int16_t min[KC_API_KEY_MAX], max[KC_API_KEY_MAX];
} kc_api_ranges_t;

kc_err_t kc_wire_apiversions_request(kc_wbuf_t *w, int16_t version, kc_error_t *err);
/* Decodes an ApiVersions response body. A broker that does not support `version` answers in v0
 * layout with UNSUPPORTED_VERSION; that case returns KC_ERR_BROKER with that kafka_code and
 * still fills `out` from the v0 body when it can. */
kc_err_t kc_wire_apiversions_response(const uint8_t *p, size_t len, int16_t version,
                                      kc_api_ranges_t *out, kc_error_t *err);

/* Why a request of `api_key` that speaks [min, max] cannot go to a broker offering `r`:
 * KC_ERR_UNSUPPORTED with a message naming the API, the broker (`peer`), the broker's range (or
 * that it does not offer the API) and ours, e.g. "Fetch: broker 127.0.0.1:9092 offers v4-v6,
 * kconsume speaks v7-v18: no version in common". A broker older than the oldest version we
 * speak can only be diagnosed from those three facts, so every refusal carries them. */
kc_err_t kc_wire_version_refusal(kc_error_t *err, const char *peer, const kc_api_ranges_t *r,
                                 int16_t api_key, int16_t min, int16_t max);

/* Why an answer to a request of `api_key` at `version` cannot be used: KC_ERR_MALFORMED with a
 * message naming the API, the version, the broker (`peer`) and what did not decode (`why`), e.g.
 * "Fetch v12 answer from broker 127.0.0.1:9092 does not decode: ResponseHeader v1: ...". The
 * broker offered that version in ApiVersions, so asking again gets the same bytes: the caller
 * reports it rather than retrying in silence. */
kc_err_t kc_wire_bad_answer(kc_error_t *err, const char *peer, int16_t api_key, int16_t version,
                            const char *why);

/* Appends raw bytes (the frame size prefix). KC_ERR_NOMEM on failure. */
kc_err_t kc_wire_append(kc_wbuf_t *w, const void *p, size_t n);

#endif
