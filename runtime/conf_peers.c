/*
 * What each configuration key is called by the two clients users move from (the Java client and
 * librdkafka), and the keys of theirs kconsume does not take, with what to do instead: the
 * tables behind docs/CONFIGURATION.md (kc_conf_print_reference, markdown). Read-only static data;
 * any thread. tests/unit/test_conf.c checks that every key of conf_keys.h has a row here and
 * that docs/CONFIGURATION.md is what kc_conf_print_reference writes.
 */
#include "conf_peers.h"

#include <stddef.h>
#include <string.h>

/* NULL: that client has no such key. A note says where the meaning differs. */
static const kc_conf_peer_t peers[] = {
    {"bootstrap.servers", "bootstrap.servers", "bootstrap.servers", NULL},
    {"client.id", "client.id", "client.id", NULL},
    {"client.rack", "client.rack", "client.rack", NULL},
    {"group.id", "group.id", "group.id", NULL},
    {"group.protocol", "group.protocol", "group.protocol",
     "adds auto: KIP-848 where the coordinator offers it, else classic"},
    {"group.type", NULL, NULL, "Java has a class of its own for share groups (KafkaShareConsumer)"},
    {"share.ack.events", NULL, NULL,
     "Java registers an AcknowledgementCommitCallback on KafkaShareConsumer (every answer)"},
    {"share.acquire.mode", "share.acquire.mode", NULL,
     "record_limit also bounds the records the member holds awaiting verdicts, as Java's poll "
     "does"},
    {"group.instance.id", "group.instance.id", "group.instance.id", NULL},
    {"group.remote.assignor", "group.remote.assignor", "group.remote.assignor", NULL},
    {"partition.assignment.strategy", "partition.assignment.strategy",
     "partition.assignment.strategy",
     "names (range, roundrobin, cooperative-sticky, sticky) where Java takes class names"},
    {"session.timeout.ms", "session.timeout.ms", "session.timeout.ms", NULL},
    {"group.consumer.session.timeout.ms", NULL, NULL,
     "the broker's KIP-848 session (its group.consumer.session.timeout.ms), for self-fencing"},
    {"group.self.fence.ratio", NULL, NULL, NULL},
    {"heartbeat.interval.ms", "heartbeat.interval.ms", "heartbeat.interval.ms", NULL},
    {"max.poll.interval.ms", "max.poll.interval.ms", "max.poll.interval.ms",
     "bounds one callback (or the time between kc_poll calls in pull mode)"},
    {"rebalance.timeout.ms", NULL, NULL, "Java and librdkafka use max.poll.interval.ms"},
    {"enable.auto.commit", "enable.auto.commit", "enable.auto.commit", NULL},
    {"auto.commit.interval.ms", "auto.commit.interval.ms", "auto.commit.interval.ms", NULL},
    {"enable.auto.offset.store", NULL, "enable.auto.offset.store", NULL},
    {"enable.partition.eof", NULL, "enable.partition.eof",
     "an on_event event after the partition's last on_records returned, not a message in the "
     "partition's queue"},
    {"auto.offset.reset", "auto.offset.reset", "auto.offset.reset", NULL},
    {"isolation.level", "isolation.level", "isolation.level",
     "defaults to read_committed, as librdkafka; Java defaults to read_uncommitted"},
    {"check.crcs", "check.crcs", "check.crcs", NULL},
    {"fetch.min.bytes", "fetch.min.bytes", "fetch.min.bytes", NULL},
    {"fetch.max.bytes", "fetch.max.bytes", "fetch.max.bytes", NULL},
    {"max.partition.fetch.bytes", "max.partition.fetch.bytes", "max.partition.fetch.bytes", NULL},
    {"fetch.max.wait.ms", "fetch.max.wait.ms", "fetch.wait.max.ms", NULL},
    {"queued.max.bytes", NULL, "queued.max.messages.kbytes",
     "bytes, where librdkafka counts KiB per partition"},
    {"worker.threads", NULL, NULL, NULL},
    {"callback.batch.max.records", "max.poll.records", NULL,
     "records per on_records call (or per kc_poll view)"},
    {"request.timeout.ms", "request.timeout.ms", "socket.timeout.ms", NULL},
    {"reconnect.backoff.ms", "reconnect.backoff.ms", "reconnect.backoff.ms", NULL},
    {"reconnect.backoff.max.ms", "reconnect.backoff.max.ms", "reconnect.backoff.max.ms", NULL},
    {"retry.backoff.ms", "retry.backoff.ms", "retry.backoff.ms", NULL},
    {"retry.backoff.max.ms", "retry.backoff.max.ms", "retry.backoff.max.ms", NULL},
    {"metadata.max.age.ms", "metadata.max.age.ms", "metadata.max.age.ms", NULL},
    {"socket.connection.setup.timeout.ms", "socket.connection.setup.timeout.ms",
     "socket.connection.setup.timeout.ms", NULL},
    {"socket.keepalive.enable", NULL, "socket.keepalive.enable",
     "on by default, as Java always does; librdkafka defaults to off"},
    {"connections.max.idle.ms", "connections.max.idle.ms", "connections.max.idle.ms", NULL},
    {"client.dns.lookup", "client.dns.lookup", "client.dns.lookup", NULL},
    {"metadata.recovery.strategy", "metadata.recovery.strategy", "metadata.recovery.strategy",
     NULL},
    {"metadata.recovery.rebootstrap.trigger.ms", "metadata.recovery.rebootstrap.trigger.ms",
     "metadata.recovery.rebootstrap.trigger.ms",
     "with none, an error event says so once no known broker was reachable this long"},
    {"security.protocol", "security.protocol", "security.protocol", NULL},
    {"ssl.ca.location", "ssl.truststore.location", "ssl.ca.location",
     "a PEM file (Java: with ssl.truststore.type=PEM; JKS truststores are not read)"},
    {"ssl.certificate.location", "ssl.keystore.location", "ssl.certificate.location",
     "a PEM file (Java: with ssl.keystore.type=PEM)"},
    {"ssl.key.location", "ssl.keystore.location", "ssl.key.location",
     "a PEM file (Java keeps key and certificate in one keystore)"},
    {"ssl.key.password", "ssl.key.password", "ssl.key.password", NULL},
    {"ssl.ca.pem", "ssl.truststore.certificates", "ssl.ca.pem", "Java's name is accepted too"},
    {"ssl.certificate.pem", "ssl.keystore.certificate.chain", "ssl.certificate.pem",
     "Java's name is accepted too"},
    {"ssl.key.pem", "ssl.keystore.key", "ssl.key.pem", "Java's name is accepted too"},
    {"ssl.keystore.location", "ssl.keystore.location", "ssl.keystore.location",
     "PKCS#12 only (Java: ssl.keystore.type=PKCS12)"},
    {"ssl.keystore.password", "ssl.keystore.password", "ssl.keystore.password",
     "opens the store and its key (Java has ssl.key.password for the key)"},
    {"ssl.crl.location", NULL, "ssl.crl.location", NULL},
    {"ssl.cipher.suites", "ssl.cipher.suites", "ssl.cipher.suites",
     "one list for TLS 1.2 and 1.3, IANA or OpenSSL names, as Java"},
    {"ssl.enabled.protocols", "ssl.enabled.protocols", NULL, NULL},
    {"ssl.protocol", "ssl.protocol", NULL, NULL},
    {"ssl.endpoint.identification.algorithm", "ssl.endpoint.identification.algorithm",
     "ssl.endpoint.identification.algorithm", NULL},
    {"sasl.mechanism", "sasl.mechanism", "sasl.mechanisms", "sasl.mechanisms is accepted too"},
    {"sasl.username", NULL, "sasl.username", "Java: username in sasl.jaas.config"},
    {"sasl.password", NULL, "sasl.password", "Java: password in sasl.jaas.config"},
    {"sasl.oauthbearer.method", NULL, "sasl.oauthbearer.method",
     "Java: sasl.login.callback.handler.class=OAuthBearerLoginCallbackHandler for oidc"},
    {"sasl.oauthbearer.client.id", "sasl.oauthbearer.client.credentials.client.id",
     "sasl.oauthbearer.client.id", "Java before 4.1: clientId in sasl.jaas.config"},
    {"sasl.oauthbearer.client.secret", "sasl.oauthbearer.client.credentials.client.secret",
     "sasl.oauthbearer.client.secret", "Java before 4.1: clientSecret in sasl.jaas.config"},
    {"sasl.oauthbearer.token.endpoint.url", "sasl.oauthbearer.token.endpoint.url",
     "sasl.oauthbearer.token.endpoint.url", NULL},
    {"sasl.oauthbearer.scope", NULL, "sasl.oauthbearer.scope", "Java: scope in sasl.jaas.config"},
    {"sasl.oauthbearer.extensions", NULL, "sasl.oauthbearer.extensions",
     "Java: extension_NAME options in sasl.jaas.config"},
    {"sasl.login.refresh.window.factor", "sasl.login.refresh.window.factor", NULL,
     "librdkafka refreshes at 0.8 of the lifetime, fixed; Java allows 1.0"},
    {"sasl.login.refresh.window.jitter", "sasl.login.refresh.window.jitter", NULL, NULL},
    {"sasl.login.refresh.min.period.seconds", "sasl.login.refresh.min.period.seconds", NULL, NULL},
    {"sasl.login.refresh.buffer.seconds", "sasl.login.refresh.buffer.seconds", NULL, NULL},
    {"https.ca.location", NULL, "https.ca.location",
     "Java: ssl.truststore.* options in sasl.jaas.config"},
    {"sasl.kerberos.service.name", "sasl.kerberos.service.name", "sasl.kerberos.service.name",
     NULL},
    {"sasl.kerberos.principal", NULL, "sasl.kerberos.principal",
     "Java: principal= of Krb5LoginModule in sasl.jaas.config"},
    {"sasl.kerberos.keytab", NULL, "sasl.kerberos.keytab",
     "Java: useKeyTab=true keyTab= of Krb5LoginModule in sasl.jaas.config; empty is its "
     "useTicketCache=true"},
    {"sasl.kerberos.min.time.before.relogin", "sasl.kerberos.min.time.before.relogin",
     "sasl.kerberos.min.time.before.relogin",
     "an expired login is renewed from the keytab; librdkafka runs kinit instead"},
    {"io.backend", NULL, NULL, NULL},
    {"statistics.interval.ms", NULL, "statistics.interval.ms", NULL},
    {"enable.metrics.push", "enable.metrics.push", "enable.metrics.push", NULL},
    {"log.level", NULL, "log_level", "names (error, warn, info, debug), not syslog numbers"},
    {"decompress.max.bytes", NULL, NULL, NULL},
};

/* Keys users bring from the other clients that kconsume does not take. */
static const kc_conf_foreign_t foreign[] = {
    {"Java", "key.deserializer, value.deserializer",
     "records are bytes: decode them in on_records (kc_record_key / kc_record_value)"},
    {"Java", "sasl.jaas.config",
     "sasl.username and sasl.password; for Krb5LoginModule sasl.kerberos.principal and "
     "sasl.kerberos.keytab"},
    {"librdkafka", "sasl.kerberos.kinit.cmd",
     "none: kconsume logs in from sasl.kerberos.keytab itself (MIT krb5), no kinit process"},
    {"Java", "default.api.timeout.ms", "every blocking call takes its own timeout argument"},
    {"Java", "allow.auto.create.topics", "a consumer never creates topics"},
    {"Java", "interceptor.classes, metric.reporters", "on_event (stats) and kc_metrics"},
    {"Java", "ssl.keystore.type, ssl.truststore.type",
     "keystores are PKCS#12 (ssl.keystore.location), other material PEM (files or text)"},
    {"librdkafka", "debug", "log.level=debug"},
    {"librdkafka", "queued.min.messages", "queued.max.bytes bounds what waits for the callbacks"},
    {"librdkafka", "fetch.error.backoff.ms", "retry.backoff.ms"},
    {"librdkafka", "topic.metadata.refresh.interval.ms", "metadata.max.age.ms"},
    {"librdkafka", "api.version.request, broker.version.fallback",
     "versions are always negotiated with ApiVersions (Kafka 2.1 and later)"},
};

const kc_conf_peer_t *kc_conf_peer(const char *name)
{
    for (size_t i = 0; i < sizeof peers / sizeof *peers; i++)
        if (strcmp(peers[i].name, name) == 0)
            return &peers[i];
    return NULL;
}

const kc_conf_foreign_t *kc_conf_foreign(size_t *n)
{
    *n = sizeof foreign / sizeof *foreign;
    return foreign;
}
