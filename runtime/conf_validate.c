/*
 * Cross-key configuration checks (kc_conf_validate): settings that are each valid alone but
 * conflict, each explained with what to change. Run at kc_consumer_new. No shared state: the
 * kc_conf_t belongs to the calling thread.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "base/err.h"

#define INT(id) kc_conf_int(c, KC_CONF_##id)
#define STR(id) kc_conf_str(c, KC_CONF_##id)
#define SET(id) kc_conf_is_set(c, KC_CONF_##id)

static bool has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

static kc_err_t check_group(const kc_conf_t *c, kc_error_t *err)
{
    const char *decided = NULL;
    kc_group_proto_choice_t proto = kc_conf_group_protocol(c, &decided);
    if (proto == KC_GROUP_PROTO_CONFLICT)
        return kc_fail(err, KC_ERR_CONFIG,
                       "%s is a classic-protocol setting and %s a KIP-848 one: with "
                       "group.protocol=auto set the ones of one protocol, or name it "
                       "(group.protocol=classic or consumer)",
                       decided,
                       SET(GROUP_REMOTE_ASSIGNOR) ? "group.remote.assignor"
                                                  : "group.consumer.session.timeout.ms");
    /* Under auto nothing of the other protocol is set (kc_conf_group_protocol): the checks of
     * a named protocol below are the ones that can fail. */
    bool classic = proto == KC_GROUP_PROTO_CLASSIC;
    bool consumer = proto == KC_GROUP_PROTO_CONSUMER;
    /* A share group has one protocol (ShareGroupHeartbeat), no static members and no offsets. */
    if (kc_conf_share(c)) {
        if (!STR(GROUP_ID)[0])
            return kc_fail(err, KC_ERR_CONFIG,
                           "group.type=share needs group.id: the share group to consume in");
        if (SET(GROUP_PROTOCOL) || proto != KC_GROUP_PROTO_AUTO)
            return kc_fail(err, KC_ERR_CONFIG,
                           "group.type=share has its own protocol: group.protocol and the "
                           "settings of the consumer-group protocols do not apply");
        if (STR(GROUP_INSTANCE_ID)[0])
            return kc_fail(err, KC_ERR_CONFIG,
                           "group.type=share: share groups have no static members; unset "
                           "group.instance.id");
        if (SET(ENABLE_AUTO_COMMIT) && kc_conf_bool(c, KC_CONF_ENABLE_AUTO_COMMIT))
            return kc_fail(err, KC_ERR_CONFIG,
                           "group.type=share commits no offsets (records are acknowledged): "
                           "unset enable.auto.commit");
    }
    if (STR(GROUP_INSTANCE_ID)[0] && !STR(GROUP_ID)[0])
        return kc_fail(err, KC_ERR_CONFIG,
                       "group.instance.id is set but group.id is not: static "
                       "membership is membership of a group; set group.id");
    /* Java refuses the same ("enable.auto.commit cannot be set to true when default group id
     * (null) is used"): without a group there is nothing to commit to. The default (true) alone
     * is not an error: it simply has no effect then. */
    if (SET(ENABLE_AUTO_COMMIT) && kc_conf_bool(c, KC_CONF_ENABLE_AUTO_COMMIT) && !STR(GROUP_ID)[0])
        return kc_fail(err, KC_ERR_CONFIG,
                       "enable.auto.commit=true needs group.id: offsets are committed to a group; "
                       "set group.id or enable.auto.commit=false");
    /* enable.auto.offset.store=false with enable.auto.commit=true is no conflict: it is the
     * at-least-once pattern of librdkafka (store after processing, auto-commit what was stored),
     * and the committable offset both read is the one kc_store_offset writes. */
    if (classic && SET(GROUP_REMOTE_ASSIGNOR))
        return kc_fail(err, KC_ERR_CONFIG,
                       "group.remote.assignor applies to group.protocol="
                       "consumer only; with classic use "
                       "partition.assignment.strategy");
    if (consumer && SET(PARTITION_ASSIGNMENT_STRATEGY))
        return kc_fail(err, KC_ERR_CONFIG,
                       "partition.assignment.strategy applies to group.protocol=classic only; with "
                       "consumer (KIP-848) the broker assigns: use group.remote.assignor");
    if (consumer &&
        (SET(SESSION_TIMEOUT_MS) || SET(HEARTBEAT_INTERVAL_MS) || SET(REBALANCE_TIMEOUT_MS)))
        return kc_fail(err, KC_ERR_CONFIG,
                       "%s is a classic-protocol setting; with group.protocol=consumer the broker "
                       "sets it (group.consumer.* broker configs)",
                       SET(SESSION_TIMEOUT_MS)      ? "session.timeout.ms"
                       : SET(HEARTBEAT_INTERVAL_MS) ? "heartbeat.interval.ms"
                                                    : "rebalance.timeout.ms");
    if (classic && SET(GROUP_CONSUMER_SESSION_TIMEOUT_MS))
        return kc_fail(err, KC_ERR_CONFIG,
                       "group.consumer.session.timeout.ms applies to group.protocol=consumer only; "
                       "with classic the member's own session.timeout.ms is the session");
    if (classic && INT(HEARTBEAT_INTERVAL_MS) >= INT(SESSION_TIMEOUT_MS))
        return kc_fail(err, KC_ERR_CONFIG,
                       "heartbeat.interval.ms (%lld) must be lower than session.timeout.ms (%lld), "
                       "typically a third of it",
                       (long long)INT(HEARTBEAT_INTERVAL_MS), (long long)INT(SESSION_TIMEOUT_MS));
    double ratio = kc_conf_fraction(c, KC_CONF_GROUP_SELF_FENCE_RATIO);
    if (classic && ratio > 0 &&
        ratio * (double)INT(SESSION_TIMEOUT_MS) < 2.0 * (double)INT(HEARTBEAT_INTERVAL_MS))
        return kc_fail(
            err, KC_ERR_CONFIG,
            "group.self.fence.ratio (%s) of session.timeout.ms (%lld) is shorter than two "
            "heartbeat.interval.ms (%lld): the member would pause whenever one heartbeat "
            "is slow; raise the ratio, lower the interval, or set the ratio to 0",
            STR(GROUP_SELF_FENCE_RATIO), (long long)INT(SESSION_TIMEOUT_MS),
            (long long)INT(HEARTBEAT_INTERVAL_MS));
    return KC_OK;
}

static kc_err_t check_security(const kc_conf_t *c, kc_error_t *err)
{
    /* Java's bounds (SaslConfigs): a factor below a half refreshes far too often, a jitter above
     * a quarter spreads the refreshes over most of the lifetime (kc_oauth_refresh_at_ms never
     * refreshes later than the expiry itself). */
    if (kc_conf_fraction(c, KC_CONF_SASL_LOGIN_REFRESH_WINDOW_FACTOR) < 0.5)
        return kc_fail(err, KC_ERR_CONFIG,
                       "sasl.login.refresh.window.factor: %s is below 0.5 (allowed: 0.5 up to, not "
                       "including, 1)",
                       STR(SASL_LOGIN_REFRESH_WINDOW_FACTOR));
    if (kc_conf_fraction(c, KC_CONF_SASL_LOGIN_REFRESH_WINDOW_JITTER) > 0.25)
        return kc_fail(err, KC_ERR_CONFIG,
                       "sasl.login.refresh.window.jitter: %s is above 0.25 (allowed: 0..0.25)",
                       STR(SASL_LOGIN_REFRESH_WINDOW_JITTER));
    const char *proto = STR(SECURITY_PROTOCOL);
    bool sasl = has_prefix(proto, "SASL_");
    bool tls = strcmp(proto, "SSL") == 0 || strcmp(proto, "SASL_SSL") == 0;
    if (!sasl && (SET(SASL_MECHANISM) || SET(SASL_USERNAME) || SET(SASL_PASSWORD)))
        return kc_fail(err, KC_ERR_CONFIG,
                       "%s is set but security.protocol=%s does not use SASL; use SASL_SSL (or "
                       "SASL_PLAINTEXT on a trusted network)",
                       SET(SASL_MECHANISM)  ? "sasl.mechanism"
                       : SET(SASL_USERNAME) ? "sasl.username"
                                            : "sasl.password",
                       proto);
    bool oauth = strcmp(STR(SASL_MECHANISM), "OAUTHBEARER") == 0;
    bool oidc = strcmp(STR(SASL_OAUTHBEARER_METHOD), "oidc") == 0;
    if (oauth && (SET(SASL_USERNAME) || SET(SASL_PASSWORD)))
        return kc_fail(err, KC_ERR_CONFIG,
                       "sasl.mechanism=OAUTHBEARER takes no %s: the token is the credential "
                       "(sasl.oauthbearer.method=oidc, or a token callback)",
                       SET(SASL_USERNAME) ? "sasl.username" : "sasl.password");
    if (oidc && (!STR(SASL_OAUTHBEARER_CLIENT_ID)[0] || !STR(SASL_OAUTHBEARER_CLIENT_SECRET)[0] ||
                 !STR(SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL)[0]))
        return kc_fail(err, KC_ERR_CONFIG,
                       "sasl.oauthbearer.method=oidc needs sasl.oauthbearer.client.id, "
                       "sasl.oauthbearer.client.secret and sasl.oauthbearer.token.endpoint.url "
                       "(%s is missing)",
                       !STR(SASL_OAUTHBEARER_CLIENT_ID)[0] ? "sasl.oauthbearer.client.id"
                       : !STR(SASL_OAUTHBEARER_CLIENT_SECRET)[0]
                           ? "sasl.oauthbearer.client.secret"
                           : "sasl.oauthbearer.token.endpoint.url");
    if (oidc && !has_prefix(STR(SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL), "https://"))
        return kc_fail(err, KC_ERR_CONFIG,
                       "sasl.oauthbearer.token.endpoint.url must be an https:// URL (the client "
                       "secret would otherwise travel in the clear)");
    if (!oidc && (SET(SASL_OAUTHBEARER_CLIENT_ID) || SET(SASL_OAUTHBEARER_CLIENT_SECRET) ||
                  SET(SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL) || SET(SASL_OAUTHBEARER_SCOPE) ||
                  SET(SASL_OAUTHBEARER_EXTENSIONS) || SET(HTTPS_CA_LOCATION)))
        return kc_fail(err, KC_ERR_CONFIG,
                       "sasl.oauthbearer.* OIDC settings are set but sasl.oauthbearer.method is "
                       "not oidc");
    if (oidc && !(sasl && oauth))
        return kc_fail(err, KC_ERR_CONFIG,
                       "sasl.oauthbearer.method=oidc needs security.protocol=SASL_SSL (or "
                       "SASL_PLAINTEXT) and sasl.mechanism=OAUTHBEARER");
    bool gssapi = strcmp(STR(SASL_MECHANISM), "GSSAPI") == 0;
    bool kerberos_set = SET(SASL_KERBEROS_SERVICE_NAME) || SET(SASL_KERBEROS_PRINCIPAL) ||
                        SET(SASL_KERBEROS_KEYTAB) || SET(SASL_KERBEROS_MIN_TIME_BEFORE_RELOGIN);
    if (kerberos_set && !(sasl && gssapi))
        return kc_fail(err, KC_ERR_CONFIG,
                       "sasl.kerberos.* is set but the login is not Kerberos: use "
                       "sasl.mechanism=GSSAPI with security.protocol SASL_SSL or SASL_PLAINTEXT");
    if (sasl && gssapi && (SET(SASL_USERNAME) || SET(SASL_PASSWORD)))
        return kc_fail(err, KC_ERR_CONFIG,
                       "sasl.mechanism=GSSAPI logs in with sasl.kerberos.principal and "
                       "sasl.kerberos.keytab, not sasl.username/sasl.password");
    if (sasl && !oauth && !gssapi && (!STR(SASL_USERNAME)[0] || !STR(SASL_PASSWORD)[0]))
        return kc_fail(err, KC_ERR_CONFIG,
                       "security.protocol=%s with sasl.mechanism=%s needs "
                       "sasl.username and sasl.password",
                       proto, STR(SASL_MECHANISM));
    static const kc_conf_id_t tls_keys[] = {KC_CONF_SSL_CA_LOCATION,
                                            KC_CONF_SSL_CA_PEM,
                                            KC_CONF_SSL_CERTIFICATE_LOCATION,
                                            KC_CONF_SSL_CERTIFICATE_PEM,
                                            KC_CONF_SSL_KEY_LOCATION,
                                            KC_CONF_SSL_KEY_PEM,
                                            KC_CONF_SSL_KEY_PASSWORD,
                                            KC_CONF_SSL_KEYSTORE_LOCATION,
                                            KC_CONF_SSL_KEYSTORE_PASSWORD,
                                            KC_CONF_SSL_CRL_LOCATION,
                                            KC_CONF_SSL_CIPHER_SUITES,
                                            KC_CONF_SSL_ENABLED_PROTOCOLS,
                                            KC_CONF_SSL_PROTOCOL,
                                            KC_CONF_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM};
    for (size_t i = 0; !tls && i < sizeof tls_keys / sizeof tls_keys[0]; i++)
        if (kc_conf_is_set(c, tls_keys[i]))
            return kc_fail(err, KC_ERR_CONFIG,
                           "%s is set but security.protocol=%s does not use TLS; use SSL or "
                           "SASL_SSL",
                           kc_conf_name(tls_keys[i]), proto);
    /* One source per piece: a file or PEM text, and a keystore instead of both. */
    if (STR(SSL_CERTIFICATE_LOCATION)[0] && STR(SSL_CERTIFICATE_PEM)[0])
        return kc_fail(err, KC_ERR_CONFIG,
                       "ssl.certificate.location and ssl.certificate.pem are both set: set one");
    if (STR(SSL_KEY_LOCATION)[0] && STR(SSL_KEY_PEM)[0])
        return kc_fail(err, KC_ERR_CONFIG,
                       "ssl.key.location and ssl.key.pem are both set: set one");
    bool cert = STR(SSL_CERTIFICATE_LOCATION)[0] || STR(SSL_CERTIFICATE_PEM)[0];
    bool key = STR(SSL_KEY_LOCATION)[0] || STR(SSL_KEY_PEM)[0];
    if (STR(SSL_KEYSTORE_LOCATION)[0] && (cert || key))
        return kc_fail(
            err, KC_ERR_CONFIG, "ssl.keystore.location and %s are two client identities: set one",
            cert
                ? (STR(SSL_CERTIFICATE_PEM)[0] ? "ssl.certificate.pem" : "ssl.certificate.location")
                : (STR(SSL_KEY_PEM)[0] ? "ssl.key.pem" : "ssl.key.location"));
    if (cert != key)
        return kc_fail(err, KC_ERR_CONFIG,
                       "mutual TLS needs both ssl.certificate.location and ssl.key.location (or "
                       "their .pem forms)");
    if (STR(SSL_KEY_PASSWORD)[0] && !key)
        return kc_fail(err, KC_ERR_CONFIG,
                       "ssl.key.password is set but ssl.key.location is not (nor ssl.key.pem): the "
                       "password decrypts that key");
    if (STR(SSL_KEYSTORE_PASSWORD)[0] && !STR(SSL_KEYSTORE_LOCATION)[0])
        return kc_fail(err, KC_ERR_CONFIG,
                       "ssl.keystore.password is set but ssl.keystore.location is not: the "
                       "password opens that keystore");
    /* Files are checked here, at kc_consumer_new, as Java checks them when the client is built:
     * a typo in a path should not surface as a TLS failure at the first connection. */
    static const kc_conf_id_t files[] = {KC_CONF_SSL_CA_LOCATION, KC_CONF_SSL_CERTIFICATE_LOCATION,
                                         KC_CONF_SSL_KEY_LOCATION, KC_CONF_SSL_KEYSTORE_LOCATION,
                                         KC_CONF_SSL_CRL_LOCATION};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        const char *path = kc_conf_str(c, files[i]);
        if (path[0] && access(path, R_OK) != 0)
            return kc_fail(err, KC_ERR_CONFIG, "%s: cannot read \"%s\": %s", kc_conf_name(files[i]),
                           path, strerror(errno));
    }
    return KC_OK;
}

static kc_err_t check_sizes(const kc_conf_t *c, kc_error_t *err)
{
    if (INT(FETCH_MIN_BYTES) > INT(FETCH_MAX_BYTES))
        return kc_fail(err, KC_ERR_CONFIG, "fetch.min.bytes (%lld) exceeds fetch.max.bytes (%lld)",
                       (long long)INT(FETCH_MIN_BYTES), (long long)INT(FETCH_MAX_BYTES));
    /* The cap must hold at least one partition's fetch, or no fetch could ever be allowed. */
    if (INT(QUEUED_MAX_BYTES) < INT(MAX_PARTITION_FETCH_BYTES))
        return kc_fail(err, KC_ERR_CONFIG,
                       "queued.max.bytes (%lld) is smaller than max.partition.fetch.bytes (%lld): "
                       "no fetch would fit under the cap",
                       (long long)INT(QUEUED_MAX_BYTES), (long long)INT(MAX_PARTITION_FETCH_BYTES));
    if (INT(RECONNECT_BACKOFF_MS) > INT(RECONNECT_BACKOFF_MAX_MS))
        return kc_fail(err, KC_ERR_CONFIG,
                       "reconnect.backoff.ms (%lld) exceeds reconnect.backoff.max.ms (%lld)",
                       (long long)INT(RECONNECT_BACKOFF_MS),
                       (long long)INT(RECONNECT_BACKOFF_MAX_MS));
    if (INT(RETRY_BACKOFF_MS) > INT(RETRY_BACKOFF_MAX_MS))
        return kc_fail(err, KC_ERR_CONFIG,
                       "retry.backoff.ms (%lld) exceeds retry.backoff.max.ms (%lld)",
                       (long long)INT(RETRY_BACKOFF_MS), (long long)INT(RETRY_BACKOFF_MAX_MS));
    if (INT(FETCH_MAX_WAIT_MS) >= INT(REQUEST_TIMEOUT_MS))
        return kc_fail(err, KC_ERR_CONFIG,
                       "fetch.max.wait.ms (%lld) must be below request.timeout.ms (%lld), or every "
                       "idle fetch would time out",
                       (long long)INT(FETCH_MAX_WAIT_MS), (long long)INT(REQUEST_TIMEOUT_MS));
    return KC_OK;
}

kc_err_t kc_conf_validate(const kc_conf_t *c, kc_error_t *err)
{
    if (!c)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_conf_validate: NULL conf");
    if (!STR(BOOTSTRAP_SERVERS)[0])
        return kc_fail(err, KC_ERR_CONFIG, "bootstrap.servers is required (host:port[,...])");
    kc_err_t rc;
    if ((rc = check_group(c, err)) || (rc = check_security(c, err)) || (rc = check_sizes(c, err)))
        return rc;
    kc_error_clear(err);
    return KC_OK;
}
