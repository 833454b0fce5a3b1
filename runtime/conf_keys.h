/*
 * Every configuration key, in one X-macro table: a key exists here and nowhere else. The table
 * drives parsing, validation (with suggestions), kc_conf_get, the printed reference (--help,
 * README) and the stats dump of effective settings.
 *
 * X(id, name, type, default, min, max, allowed, flags, doc)
 *   type     INT (int64, min..max), BOOL (true|false), STR, ENUM (one of `allowed`, '|'-separated),
 *            LIST (comma-separated; each element one of `allowed` when it is not NULL)
 *   default  the value as a user would write it; "" = unset
 *   flags    SECRET: never printed, read back redacted. HOSTPORT: list elements are host:port.
 *            EMPTY_OK: an ENUM also takes "" (Java's spelling of "off"). MEMBER_ID: a STR holding
 *            a static member id (Java's character and length rules). FRACTION: a STR holding a
 *            decimal number 0 <= x < 1 (kc_conf_fraction reads it).
 *
 * isolation.level defaults to read_committed (the Java client defaults to read_uncommitted): a
 * consumer that never sees transactions pays nothing for it (the LSO equals the high watermark),
 * while one that does would otherwise deliver records of aborted transactions by default —
 * silent wrong data is the worse failure.
 *
 * group.self.fence.ratio defaults to 0.8. Fencing earlier means fewer duplicates (every record
 * a cut-off member finishes is redelivered: it can no longer commit) but a pause during shorter
 * coordinator outages. The floor is what one lost heartbeat costs: the member waits an interval
 * to send, then three intervals (at least 3 s; classic 5 s) before it resets the unanswered
 * request, so four intervals pass without an answer — 20 s of Kafka's 45 s session with its 5 s
 * KIP-848 interval (0.44), 12 s of 45 s for classic's 3 s. Measured against the memory broker:
 * a 1.5 s cut fenced a classic member with a 6 s session at 0.8 (its fence point, 4.8 s, lies
 * below the 5.5 s that cut costs), and did not with a 10 s session. 0.8 (36 s of 45 s) rides out
 * that floor plus a coordinator failover of about 16 s, and leaves a fifth of the session (9 s)
 * for the callback in flight at the fence to finish before the earliest expiry; a callback
 * longer than that can still overlap the next owner's first one. The value is a fraction: a STR
 * with the FRACTION check.
 */
#ifndef KC_RUNTIME_CONF_KEYS_H
#define KC_RUNTIME_CONF_KEYS_H

#define KC_I64MAX 9223372036854775807LL
#define KC_I32MAX 2147483647LL

#define KC_CONF_TABLE(X)                                                                           \
    X(BOOTSTRAP_SERVERS, "bootstrap.servers", LIST, "", 0, 0, NULL, HOSTPORT,                      \
      "Initial brokers, host:port[,host:port...]; the rest are learned from metadata")             \
    X(CLIENT_ID, "client.id", STR, "kconsume", 0, 0, NULL, 0,                                      \
      "Client name sent to brokers (logs, quotas)")                                                \
    X(CLIENT_RACK, "client.rack", STR, "", 0, 0, NULL, 0,                                          \
      "Rack of this client, for follower fetching (KIP-392) and rack-aware assignment")            \
    X(GROUP_ID, "group.id", STR, "", 0, 0, NULL, 0,                                                \
      "Consumer group; needed by kc_subscribe and for committing offsets")                         \
    X(GROUP_PROTOCOL, "group.protocol", ENUM, "auto", 0, 0, "auto|classic|consumer", 0,            \
      "auto = consumer where the group coordinator offers it and the group accepts it, else "      \
      "classic; consumer = KIP-848 (broker computes the assignment); classic = "                   \
      "JoinGroup/SyncGroup")                                                                       \
    X(GROUP_TYPE, "group.type", ENUM, "consumer", 0, 0, "consumer|share", 0,                       \
      "consumer = a consumer group (partitions assigned, offsets committed); share = a share "     \
      "group (KIP-932: records acquired and acknowledged one by one, no offsets)")                 \
    X(SHARE_ACK_EVENTS, "share.ack.events", ENUM, "errors", 0, 0, "errors|all", 0,                 \
      "Share groups: which broker answers to acknowledgements reach on_event as "                  \
      "KC_EVENT_SHARE_ACK: errors = the refused ones; all = every answer (applied ones too)")      \
    X(SHARE_ACQUIRE_MODE, "share.acquire.mode", ENUM, "batch_optimized", 0, 0,                     \
      "batch_optimized|record_limit", 0,                                                           \
      "Share groups: batch_optimized = each ShareFetch asks for callback.batch.max.records "      \
      "records and the broker rounds up to whole batches; record_limit = the member holds at "     \
      "most callback.batch.max.records records awaiting verdicts, and the broker acquires no "     \
      "more than that (KIP-1206, Kafka 4.2+)")                                                     \
    X(GROUP_INSTANCE_ID, "group.instance.id", STR, "", 0, 0, NULL, MEMBER_ID,                      \
      "Static membership id: a restart within the session timeout keeps the assignment")           \
    X(GROUP_REMOTE_ASSIGNOR, "group.remote.assignor", STR, "", 0, 0, NULL, 0,                      \
      "Server-side assignor for group.protocol=consumer (empty: the broker's default)")            \
    X(PARTITION_ASSIGNMENT_STRATEGY, "partition.assignment.strategy", LIST,                        \
      "range,cooperative-sticky", 0, 0, "range|roundrobin|cooperative-sticky", 0,                  \
      "Client-side assignors for group.protocol=classic, in preference order")                     \
    X(SESSION_TIMEOUT_MS, "session.timeout.ms", INT, "45000", 1000, 3600000, NULL, 0,              \
      "Classic protocol: the member is removed when no heartbeat arrives for this long")           \
    X(GROUP_CONSUMER_SESSION_TIMEOUT_MS, "group.consumer.session.timeout.ms", INT, "45000", 1000,  \
      3600000, NULL, 0,                                                                            \
      "KIP-848 protocol: the session timeout the self-fence assumes when the group's "             \
      "consumer.session.timeout.ms cannot be read (set it to the broker's value)")                 \
    X(GROUP_SELF_FENCE_RATIO, "group.self.fence.ratio", STR, "0.8", 0, 0, NULL, FRACTION,          \
      "Part of the session timeout without an answered heartbeat after which the member stops "    \
      "starting callbacks and committing until the coordinator answers (0 <= r < 1; 0 = never)")   \
    X(HEARTBEAT_INTERVAL_MS, "heartbeat.interval.ms", INT, "3000", 1, 3600000, NULL, 0,            \
      "Classic protocol: heartbeat period (KIP-848 takes the broker's interval)")                  \
    X(MAX_POLL_INTERVAL_MS, "max.poll.interval.ms", INT, "300000", 1, KC_I32MAX, NULL, 0,          \
      "A callback running longer is reported, and the member leaves the group")                    \
    X(REBALANCE_TIMEOUT_MS, "rebalance.timeout.ms", INT, "0", 0, KC_I32MAX, NULL, 0,               \
      "Classic JoinGroup rebalance timeout; 0 = max.poll.interval.ms")                             \
    X(ENABLE_AUTO_COMMIT, "enable.auto.commit", BOOL, "true", 0, 0, NULL, 0,                       \
      "Commit each partition's committable offset every auto.commit.interval.ms and on revoke")    \
    X(AUTO_COMMIT_INTERVAL_MS, "auto.commit.interval.ms", INT, "5000", 1, KC_I32MAX, NULL, 0,      \
      "Period of auto-commit")                                                                     \
    X(ENABLE_AUTO_OFFSET_STORE, "enable.auto.offset.store", BOOL, "true", 0, 0, NULL, 0,           \
      "true: a returned on_records callback advances the committable offset; false: only "         \
      "kc_store_offset does")                                                                      \
    X(ENABLE_PARTITION_EOF, "enable.partition.eof", BOOL, "false", 0, 0, NULL, 0,                  \
      "true: a KC_EVENT_PARTITION_EOF event each time a partition's delivered records reach the "  \
      "end of its log (high watermark; last stable offset under read_committed), once per end")    \
    X(AUTO_OFFSET_RESET, "auto.offset.reset", ENUM, "latest", 0, 0, "earliest|latest|none", 0,     \
      "Where to start without a committed offset, or when it is out of range; none = error")       \
    X(ISOLATION_LEVEL, "isolation.level", ENUM, "read_committed", 0, 0,                            \
      "read_committed|read_uncommitted", 0,                                                        \
      "read_committed hides aborted and open transactions (default: see the table's comment)")     \
    X(CHECK_CRCS, "check.crcs", BOOL, "true", 0, 0, NULL, 0,                                       \
      "Verify each record batch's CRC32C on the worker before delivering it")                      \
    X(FETCH_MIN_BYTES, "fetch.min.bytes", INT, "1", 0, KC_I32MAX, NULL, 0,                         \
      "The broker waits for this many bytes (or fetch.max.wait.ms) before answering")              \
    X(FETCH_MAX_BYTES, "fetch.max.bytes", INT, "52428800", 1024, KC_I32MAX, NULL, 0,               \
      "Upper bound of one Fetch response")                                                         \
    X(MAX_PARTITION_FETCH_BYTES, "max.partition.fetch.bytes", INT, "1048576", 1, KC_I32MAX, NULL,  \
      0, "Upper bound of one partition's data in a Fetch response")                                \
    X(FETCH_MAX_WAIT_MS, "fetch.max.wait.ms", INT, "500", 0, 300000, NULL, 0,                      \
      "Longest the broker holds a Fetch waiting for fetch.min.bytes")                              \
    X(QUEUED_MAX_BYTES, "queued.max.bytes", INT, "67108864", 65536, KC_I64MAX, NULL, 0,            \
      "Cap on fetched response memory held for workers; each partition gets a share")              \
    X(WORKER_THREADS, "worker.threads", INT, "0", 0, 1024, NULL, 0,                                \
      "Worker threads running callbacks; 0 = number of online CPUs")                               \
    X(CALLBACK_BATCH_MAX_RECORDS, "callback.batch.max.records", INT, "500", 1, 1000000, NULL, 0,   \
      "Most records handed to one on_records call; share groups: the records one ShareFetch "      \
      "asks for (share.acquire.mode)")                                                             \
    X(REQUEST_TIMEOUT_MS, "request.timeout.ms", INT, "30000", 100, 3600000, NULL, 0,               \
      "A request without an answer for this long fails and its connection is closed")              \
    X(RECONNECT_BACKOFF_MS, "reconnect.backoff.ms", INT, "50", 0, 3600000, NULL, 0,                \
      "First delay before reconnecting to a broker")                                               \
    X(RECONNECT_BACKOFF_MAX_MS, "reconnect.backoff.max.ms", INT, "1000", 0, 3600000, NULL, 0,      \
      "Reconnect delay doubles (with jitter) up to this")                                          \
    X(RETRY_BACKOFF_MS, "retry.backoff.ms", INT, "100", 0, 3600000, NULL, 0,                       \
      "First delay before a failed request (metadata, offsets, group) is retried")                 \
    X(RETRY_BACKOFF_MAX_MS, "retry.backoff.max.ms", INT, "1000", 0, 3600000, NULL, 0,              \
      "Retry delay doubles (with jitter) up to this")                                              \
    X(METADATA_MAX_AGE_MS, "metadata.max.age.ms", INT, "300000", 1000, KC_I32MAX, NULL, 0,         \
      "Metadata is refreshed at least this often")                                                 \
    X(SOCKET_CONNECTION_SETUP_TIMEOUT_MS, "socket.connection.setup.timeout.ms", INT, "10000", 100, \
      3600000, NULL, 0, "TCP connect and TLS handshake must finish within this")                   \
    X(SOCKET_KEEPALIVE_ENABLE, "socket.keepalive.enable", BOOL, "true", 0, 0, NULL, 0,             \
      "SO_KEEPALIVE on every broker socket (Java always sets it; librdkafka's default is false)")  \
    X(CONNECTIONS_MAX_IDLE_MS, "connections.max.idle.ms", INT, "540000", 0, KC_I32MAX, NULL, 0,    \
      "A broker connection idle this long (nothing sent or answered) is closed and opened again "  \
      "when needed (Java's default; 0 = never, librdkafka's default)")                             \
    X(CLIENT_DNS_LOOKUP, "client.dns.lookup", ENUM, "use_all_dns_ips", 0, 0,                       \
      "use_all_dns_ips|resolve_canonical_bootstrap_servers_only", 0,                               \
      "Every address of a host is tried in turn; the second value first replaces each bootstrap "  \
      "host by the canonical names of its addresses (reverse lookup), for TLS and Kerberos names") \
    X(METADATA_RECOVERY_STRATEGY, "metadata.recovery.strategy", ENUM, "rebootstrap", 0, 0,         \
      "none|rebootstrap", 0,                                                                       \
      "rebootstrap: when no known broker is reachable for the trigger time, or one answers "       \
      "REBOOTSTRAP_REQUIRED, forget the brokers and start again from bootstrap.servers")           \
    X(METADATA_RECOVERY_REBOOTSTRAP_TRIGGER_MS, "metadata.recovery.rebootstrap.trigger.ms", INT,   \
      "300000", 0, KC_I64MAX, NULL, 0,                                                             \
      "How long no known broker must be reachable before a rebootstrap")                           \
    X(SECURITY_PROTOCOL, "security.protocol", ENUM, "PLAINTEXT", 0, 0,                             \
      "PLAINTEXT|SSL|SASL_PLAINTEXT|SASL_SSL", 0, "Transport to the brokers")                      \
    X(SSL_CA_LOCATION, "ssl.ca.location", STR, "", 0, 0, NULL, 0,                                  \
      "CA bundle (PEM file) that verifies brokers; empty = system default")                        \
    X(SSL_CERTIFICATE_LOCATION, "ssl.certificate.location", STR, "", 0, 0, NULL, 0,                \
      "Client certificate (PEM) for mutual TLS")                                                   \
    X(SSL_KEY_LOCATION, "ssl.key.location", STR, "", 0, 0, NULL, 0,                                \
      "Client private key (PEM) for mutual TLS")                                                   \
    X(SSL_KEY_PASSWORD, "ssl.key.password", STR, "", 0, 0, NULL, SECRET,                           \
      "Password of ssl.key.location or ssl.key.pem")                                               \
    X(SSL_CA_PEM, "ssl.ca.pem", STR, "", 0, 0, NULL, 0,                                            \
      "CA certificates as PEM text, trusted besides ssl.ca.location (Java: "                       \
      "ssl.truststore.certificates)")                                                              \
    X(SSL_CERTIFICATE_PEM, "ssl.certificate.pem", STR, "", 0, 0, NULL, 0,                          \
      "Client certificate, chain after it, as PEM text (Java: ssl.keystore.certificate.chain)")    \
    X(SSL_KEY_PEM, "ssl.key.pem", STR, "", 0, 0, NULL, SECRET,                                     \
      "Client private key as PEM text, encrypted or not (Java: ssl.keystore.key)")                 \
    X(SSL_KEYSTORE_LOCATION, "ssl.keystore.location", STR, "", 0, 0, NULL, 0,                      \
      "PKCS#12 keystore: the client key, its certificate and the chain (instead of "               \
      "ssl.certificate.* and ssl.key.*)")                                                          \
    X(SSL_KEYSTORE_PASSWORD, "ssl.keystore.password", STR, "", 0, 0, NULL, SECRET,                 \
      "Password of ssl.keystore.location (opens the store and its key)")                           \
    X(SSL_CRL_LOCATION, "ssl.crl.location", STR, "", 0, 0, NULL, 0,                                \
      "PEM CRLs of the broker certificate's issuer: a listed (revoked) broker certificate is "     \
      "refused; a CRL for that issuer must be present")                                            \
    X(SSL_CIPHER_SUITES, "ssl.cipher.suites", STR, "", 0, 0, NULL, 0,                              \
      "The cipher suites offered, TLS 1.2 (OpenSSL or IANA names) and TLS 1.3 in one list "        \
      "(',' or ':'); a version none is named for is not offered; empty = OpenSSL's defaults")      \
    X(SSL_ENABLED_PROTOCOLS, "ssl.enabled.protocols", LIST, "TLSv1.2,TLSv1.3", 0, 0,               \
      "TLSv1.2|TLSv1.3", 0, "TLS versions this client offers")                                     \
    X(SSL_PROTOCOL, "ssl.protocol", ENUM, "TLSv1.3", 0, 0, "TLSv1.2|TLSv1.3|TLS", 0,               \
      "As Java: TLSv1.2 caps the version at TLS 1.2 whatever ssl.enabled.protocols says; "         \
      "TLSv1.3 or TLS: no cap")                                                                    \
    X(SSL_ENDPOINT_IDENTIFICATION_ALGORITHM, "ssl.endpoint.identification.algorithm", ENUM,        \
      "https", 0, 0, "https|none", EMPTY_OK,                                                       \
      "https: the broker certificate must match its host name; none or empty (Java's way): skip "  \
      "the name check, the chain is still verified (testing only)")                                \
    X(SASL_MECHANISM, "sasl.mechanism", ENUM, "PLAIN", 0, 0,                                       \
      "PLAIN|SCRAM-SHA-256|SCRAM-SHA-512|OAUTHBEARER|GSSAPI", 0,                                   \
      "SASL mechanism (security.protocol SASL_*)")                                                 \
    X(SASL_USERNAME, "sasl.username", STR, "", 0, 0, NULL, 0, "SASL user name")                    \
    X(SASL_PASSWORD, "sasl.password", STR, "", 0, 0, NULL, SECRET, "SASL password")                \
    X(SASL_OAUTHBEARER_METHOD, "sasl.oauthbearer.method", ENUM, "default", 0, 0, "default|oidc",   \
      0,                                                                                           \
      "OAUTHBEARER tokens: default = the application's token callback "                            \
      "(kc_conf_set_oauthbearer_token_cb); oidc = the client-credentials grant (KIP-768)")         \
    X(SASL_OAUTHBEARER_CLIENT_ID, "sasl.oauthbearer.client.id", STR, "", 0, 0, NULL, 0,            \
      "OIDC client id (Java: sasl.oauthbearer.client.credentials.client.id)")                      \
    X(SASL_OAUTHBEARER_CLIENT_SECRET, "sasl.oauthbearer.client.secret", STR, "", 0, 0, NULL,       \
      SECRET, "OIDC client secret (Java: sasl.oauthbearer.client.credentials.client.secret)")      \
    X(SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL, "sasl.oauthbearer.token.endpoint.url", STR, "", 0, 0,   \
      NULL, 0, "OIDC token endpoint (https://...) the client-credentials grant is POSTed to")      \
    X(SASL_OAUTHBEARER_SCOPE, "sasl.oauthbearer.scope", STR, "", 0, 0, NULL, 0,                    \
      "OIDC scope asked for (space-separated; empty: none sent)")                                  \
    X(SASL_OAUTHBEARER_EXTENSIONS, "sasl.oauthbearer.extensions", STR, "", 0, 0, NULL, 0,          \
      "SASL extensions sent with an OIDC token, key=value[,key=value...] (RFC 7628)")              \
    X(SASL_LOGIN_REFRESH_WINDOW_FACTOR, "sasl.login.refresh.window.factor", STR, "0.8", 0, 0,      \
      NULL, FRACTION,                                                                              \
      "OAUTHBEARER: refresh a token at this part of its lifetime (0.5 up to, not including, 1), "  \
      "within the two bounds below, as Java's client does")                                        \
    X(SASL_LOGIN_REFRESH_WINDOW_JITTER, "sasl.login.refresh.window.jitter", STR, "0.05", 0, 0,     \
      NULL, FRACTION,                                                                              \
      "OAUTHBEARER: up to this much more of the lifetime (0..0.25), drawn at random per token, "   \
      "so consumers sharing a token source do not refresh at once")                               \
    X(SASL_LOGIN_REFRESH_MIN_PERIOD_SECONDS, "sasl.login.refresh.min.period.seconds", INT, "60",   \
      0, 900, NULL, 0,                                                                             \
      "OAUTHBEARER: never refresh sooner than this after a token arrived (ignored, with the "      \
      "buffer, for a token that lives shorter than both together)")                                \
    X(SASL_LOGIN_REFRESH_BUFFER_SECONDS, "sasl.login.refresh.buffer.seconds", INT, "300", 0, 3600, \
      NULL, 0, "OAUTHBEARER: refresh at least this long before a token expires")                   \
    X(HTTPS_CA_LOCATION, "https.ca.location", STR, "", 0, 0, NULL, 0,                              \
      "CA bundle (PEM file) that verifies the OIDC token endpoint; empty = ssl.ca.location, "      \
      "and if that is empty too the system default")                                               \
    X(SASL_KERBEROS_SERVICE_NAME, "sasl.kerberos.service.name", STR, "kafka", 0, 0, NULL, 0,       \
      "GSSAPI: the brokers' Kerberos service; each broker is <service>@<its advertised host>")     \
    X(SASL_KERBEROS_PRINCIPAL, "sasl.kerberos.principal", STR, "", 0, 0, NULL, 0,                  \
      "GSSAPI: the client principal (user@REALM); empty = the keytab's or ticket cache's default") \
    X(SASL_KERBEROS_KEYTAB, "sasl.kerberos.keytab", STR, "", 0, 0, NULL, 0,                        \
      "GSSAPI: keytab to log in from (into a private ticket cache); empty = the default ticket "   \
      "cache (kinit)")                                                                             \
    X(SASL_KERBEROS_MIN_TIME_BEFORE_RELOGIN, "sasl.kerberos.min.time.before.relogin", INT,         \
      "60000", 0, 86400000, NULL, 0,                                                               \
      "GSSAPI: an expired login is renewed from the keytab at most this often (ms); 0 = never "    \
      "re-login (the library's own refresh from the keytab still applies)")                        \
    X(IO_BACKEND, "io.backend", ENUM, "auto", 0, 0, "auto|io_uring|epoll", 0,                      \
      "Network event loop; auto = io_uring when the kernel allows it, else epoll")                 \
    X(STATISTICS_INTERVAL_MS, "statistics.interval.ms", INT, "0", 0, 86400000, NULL, 0,            \
      "Stats JSON to on_event every this many ms; 0 = off")                                        \
    X(ENABLE_METRICS_PUSH, "enable.metrics.push", BOOL, "true", 0, 0, NULL, 0,                     \
      "KIP-714: push the metrics a cluster's client metrics subscription requests to it")          \
    X(LOG_LEVEL, "log.level", ENUM, "info", 0, 0, "error|warn|info|debug", 0,                      \
      "Most verbose level this consumer logs (to its log callback, else stderr)")                  \
    X(DECOMPRESS_MAX_BYTES, "decompress.max.bytes", INT, "67108864", 4096, KC_I32MAX, NULL, 0,     \
      "Largest decompressed record batch accepted (bounds a decompression bomb)")

typedef enum kc_conf_id {
#define KC__CONF_ID(id, ...) KC_CONF_##id,
    KC_CONF_TABLE(KC__CONF_ID)
#undef KC__CONF_ID
        KC_CONF__COUNT
} kc_conf_id_t;

#endif
