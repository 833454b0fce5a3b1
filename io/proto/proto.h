/*
 * The codec's front door: the generated API table, header-version rules and version
 * negotiation. Include this to get every generated message type.
 *
 * Threads: the functions are pure; a kc_proto_versions_t belongs to whoever filled it (the
 * network thread, per connection).
 */
#ifndef KC_PROTO_PROTO_H
#define KC_PROTO_PROTO_H

#include "proto/apis.gen.h"
#include "proto/consumer_protocol.gen.h"
#include "proto/request_header.gen.h"
#include "proto/response_header.gen.h"
#include "proto/sticky_assignor_user_data.gen.h"

/* Largest API key in our table; negotiated versions are indexed by key. */
#define KC_PROTO_MAX_API_KEY KC_PROTO_API_MAX_KEY

/* Header versions for a request of `api_key` at `version`, chosen by the API's flexibleVersions:
 * request header v2 / response header v1 when flexible, else v1 / v0. ApiVersions responses
 * always use header v0 (a broker must answer it before it knows what the client speaks).
 * -1 for an API this codec does not know. */
int16_t kc_proto_request_header_version(int16_t api_key, int16_t version);
int16_t kc_proto_response_header_version(int16_t api_key, int16_t version);

/* Per-connection negotiated versions: version[key] or -1 when the broker and we share none. */
typedef struct kc_proto_versions {
    int16_t version[KC_PROTO_MAX_API_KEY + 1];
} kc_proto_versions_t;

/* Intersects our table (min_version..max_stable per API) with the broker's ApiVersions answer and
 * picks the newest common version per API. Fails (KC_ERR_BROKER) when the response carries an
 * error code; an API with no overlap just gets -1 — callers decide whether they need it. */
kc_err_t kc_proto_negotiate(const kc_api_versions_response_t *resp, kc_proto_versions_t *out,
                            kc_error_t *err);

/* Appends one complete request frame to w: the int32 size, the request header at the version
 * the API's flexibleVersions dictate, then `body` (the API's kc_<api>_request_t) at `version`.
 * On failure w is restored to its length on entry. */
kc_err_t kc_proto_write_request(kc_wbuf_t *w, int16_t api_key, int16_t version,
                                int32_t correlation_id, kc_str_t client_id, const void *body,
                                kc_error_t *err);

/* Reads the response header of a frame body (after the size) for a request of (api_key,
 * version), leaving r at the response body. */
kc_err_t kc_proto_read_response_header(kc_rbuf_t *r, int16_t api_key, int16_t version,
                                       int32_t *correlation_id, kc_error_t *err);

#endif
