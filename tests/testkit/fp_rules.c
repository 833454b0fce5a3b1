/*
 * kc-fault-proxy: the control language and what the rules do to responses.
 *
 * Owner: rules and counters in fp_t are shared between the main thread (control commands) and
 * the connection threads (planning a response); every access holds fp_t.lock. fp_transform()
 * works on the calling connection thread's own frame and buffers only.
 *
 * Responses are changed by decoding them with the generated decoder, editing the struct and
 * encoding it again with the generated encoder. The one exception is corruption: a byte flipped
 * in place inside a record batch, which is exactly what a bad disk or wire would do.
 */
#include "fp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/kafka_errors.h"

static const char *kind_names[FP_KIND_COUNT] = {"inject",  "corrupt",     "truncate",
                                                "garbage", "close-after", "delay"};

/* ---- control language ------------------------------------------------------------------------ */

static bool parse_api(const char *s, int16_t *out)
{
    if (strcmp(s, "any") == 0) {
        *out = -1;
        return true;
    }
    for (int i = 0; i < KC_PROTO_API_COUNT; i++)
        if (strcasecmp(s, kc_proto_apis[i].name) == 0) {
            *out = kc_proto_apis[i].key;
            return true;
        }
    char *end;
    long k = strtol(s, &end, 10);
    if (*end || k < 0 || k > KC_PROTO_MAX_API_KEY)
        return false;
    *out = (int16_t)k;
    return true;
}

static bool parse_error(const char *s, int16_t *out)
{
    char *end;
    long c = strtol(s, &end, 10);
    if (!*end && c >= -1 && c < 1000) {
        *out = (int16_t)c;
        return true;
    }
    for (int code = -1; code < 1000; code++) {
        const kc_kafka_error_info_t *e = kc_kafka_err_info((int16_t)code);
        if (e && strcasecmp(e->name, s) == 0) {
            *out = (int16_t)code;
            return true;
        }
    }
    return false;
}

/* APIs whose responses fp_inject() knows how to edit. */
static bool injectable(int16_t api)
{
    static const int16_t ok[] = {1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 68};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (ok[i] == api)
            return true;
    return false;
}

static void stats(fp_t *fp, char *reply, size_t cap)
{
    size_t n = (size_t)snprintf(reply, cap, "OK");
    for (int k = 0; k <= KC_PROTO_MAX_API_KEY && n < cap; k++) {
        if (!fp->requests[k] && !fp->responses[k])
            continue;
        const kc_proto_api_t *api = kc_proto_api_find((int16_t)k);
        char name[16];
        snprintf(name, sizeof name, "%d", k);
        n += (size_t)snprintf(reply + n, cap - n, " %s=%llu/%llu", api ? api->name : name,
                              (unsigned long long)fp->requests[k],
                              (unsigned long long)fp->responses[k]);
    }
    for (int i = 0; i < FP_KIND_COUNT && n < cap; i++)
        n += (size_t)snprintf(reply + n, cap - n, " fired.%s=%llu", kind_names[i],
                              (unsigned long long)fp->fired[i]);
    if (n < cap)
        snprintf(reply + n, cap - n,
                 " rewritten=%llu decode_failures=%llu connections=%llu over_cap=%llu",
                 (unsigned long long)fp->rewritten, (unsigned long long)fp->decode_failures,
                 (unsigned long long)fp->connections, (unsigned long long)fp->over_cap);
}

void fp_control(fp_t *fp, const char *line, char *reply, size_t cap)
{
    char buf[512], *save = NULL;
    snprintf(buf, sizeof buf, "%s", line);
    char *cmd = strtok_r(buf, " \t\r\n", &save);
    if (!cmd) {
        snprintf(reply, cap, "ERR empty command");
        return;
    }
    fp_rule_t r = {.api = -1, .broker = -1, .count = 1, .partition = -1, .bytes = -1};
    bool have_api = false, have_error = false;
    int64_t ms = -1, bps = -1, max = -1;
    const char *onoff = NULL;
    for (char *tok; (tok = strtok_r(NULL, " \t\r\n", &save));) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            onoff = tok;
            continue;
        }
        *eq = '\0';
        const char *k = tok, *v = eq + 1;
        bool ok = true;
        if (strcmp(k, "api") == 0)
            ok = have_api = parse_api(v, &r.api);
        else if (strcmp(k, "error") == 0)
            ok = have_error = parse_error(v, &r.error);
        else if (strcmp(k, "count") == 0)
            ok = (r.count = atoi(v)) > 0;
        else if (strcmp(k, "scope") == 0)
            ok = (r.partition_scope = strcmp(v, "partition") == 0) || strcmp(v, "top") == 0;
        else if (strcmp(k, "partition") == 0)
            r.partition = atoi(v), r.partition_scope = true;
        else if (strcmp(k, "broker") == 0)
            ok = (r.broker = atoi(v)) >= 0 && r.broker < fp->n;
        else if (strcmp(k, "bytes") == 0)
            ok = (r.bytes = atoll(v)) >= 0;
        else if (strcmp(k, "ms") == 0)
            ok = (ms = atoll(v)) >= 0 && ms <= 600000;
        else if (strcmp(k, "bytes_per_sec") == 0)
            ok = (bps = atoll(v)) >= 0;
        else if (strcmp(k, "max") == 0)
            ok = (max = atoll(v)) >= 0 && max <= INT16_MAX;
        else
            ok = false;
        if (!ok) {
            snprintf(reply, cap, "ERR bad argument %s=%s", k, v);
            return;
        }
    }
    pthread_mutex_lock(&fp->lock);
    if (strcmp(cmd, "ping") == 0) {
        snprintf(reply, cap, "OK pong");
    } else if (strcmp(cmd, "stats") == 0) {
        stats(fp, reply, cap);
    } else if (strcmp(cmd, "clear") == 0) {
        fp->n_rules = 0;
        fp->latency_ms = 0;
        fp->bandwidth = 0;
        memset(fp->blackhole, 0, sizeof fp->blackhole);
        memset(fp->hidden_api, 0, sizeof fp->hidden_api);
        memset(fp->capped_api, 0, sizeof fp->capped_api);
        snprintf(reply, cap, "OK cleared");
    } else if (strcmp(cmd, "hide-api") == 0 && have_api && r.api >= 0) {
        fp->hidden_api[r.api] = true;
        snprintf(reply, cap, "OK api %d hidden", (int)r.api);
    } else if (strcmp(cmd, "cap-api") == 0 && have_api && r.api >= 0 && max >= 0) {
        /* Not ApiVersions itself: its answer comes in the version the client asked for, so a
         * cap there would need the proxy to answer UNSUPPORTED_VERSION for the broker. */
        if (r.api == KC_API_VERSIONS_REQUEST_API_KEY) {
            snprintf(reply, cap, "ERR cap-api does not apply to ApiVersions");
        } else {
            fp->capped_api[r.api] = true;
            fp->api_cap[r.api] = (int16_t)max;
            snprintf(reply, cap, "OK api %d capped at v%d", (int)r.api, (int)max);
        }
    } else if (strcmp(cmd, "latency") == 0 && ms >= 0) {
        fp->latency_ms = (int)ms;
        snprintf(reply, cap, "OK latency %lld ms", (long long)ms);
    } else if (strcmp(cmd, "bandwidth") == 0 && bps >= 0) {
        fp->bandwidth = bps;
        snprintf(reply, cap, "OK bandwidth %lld bytes/s", (long long)bps);
    } else if (strcmp(cmd, "blackhole") == 0 && onoff &&
               (strcmp(onoff, "on") == 0 || strcmp(onoff, "off") == 0)) {
        for (int i = 0; i < fp->n; i++)
            if (r.broker < 0 || r.broker == i)
                fp->blackhole[i] = strcmp(onoff, "on") == 0;
        snprintf(reply, cap, "OK blackhole %s", onoff);
    } else {
        int kind = -1;
        for (int i = 0; i < FP_KIND_COUNT; i++)
            if (strcmp(cmd, kind_names[i]) == 0)
                kind = i;
        r.kind = (fp_kind_t)kind;
        if (kind == FP_CORRUPT && !have_api)
            r.api = KC_FETCH_REQUEST_API_KEY, have_api = true;
        if (kind < 0)
            snprintf(reply, cap, "ERR unknown command '%s'", cmd);
        else if (kind == FP_INJECT && (!have_api || !have_error || !injectable(r.api)))
            snprintf(reply, cap, "ERR inject needs api=<%s> and error=<NAME|code>",
                     have_api ? "an API the proxy can edit" : "name");
        else if (kind == FP_CORRUPT && r.api != KC_FETCH_REQUEST_API_KEY)
            snprintf(reply, cap, "ERR corrupt works on Fetch only");
        else if (kind == FP_CLOSE_AFTER && r.bytes < 0)
            snprintf(reply, cap, "ERR close-after needs bytes=N");
        else if (kind == FP_DELAY && (!have_api || ms < 0))
            snprintf(reply, cap, "ERR delay needs api=<name> and ms=N");
        else if (fp->n_rules == FP_MAX_RULES)
            snprintf(reply, cap, "ERR too many rules (clear first)");
        else {
            r.ms = (int)ms;
            fp->rules[fp->n_rules++] = r;
            snprintf(reply, cap, "OK %s armed", cmd);
        }
    }
    pthread_mutex_unlock(&fp->lock);
}

/* ---- planning ----------------------------------------------------------------------------------
 */

void fp_plan_response(fp_t *fp, int16_t api, int broker, fp_plan_t *plan)
{
    *plan = (fp_plan_t){.close_after = -1};
    pthread_mutex_lock(&fp->lock);
    if (api >= 0 && api <= KC_PROTO_MAX_API_KEY)
        fp->responses[api]++;
    plan->latency_ms = fp->latency_ms;
    plan->bandwidth = fp->bandwidth;
    if (api == KC_API_VERSIONS_REQUEST_API_KEY)
        for (int k = 0; k <= KC_PROTO_MAX_API_KEY; k++) {
            plan->hide_apis |= plan->hidden[k] = fp->hidden_api[k];
            plan->cap_apis |= plan->capped[k] = fp->capped_api[k];
            plan->cap[k] = fp->api_cap[k];
        }
    for (int i = 0; i < fp->n_rules; i++) {
        fp_rule_t *r = &fp->rules[i];
        if ((r->api >= 0 && r->api != api) || (r->broker >= 0 && r->broker != broker) ||
            r->kind == FP_CLOSE_AFTER)
            continue;
        if (r->kind == FP_DELAY) {
            plan->latency_ms += r->ms;
            fp->fired[FP_DELAY]++;
            r->count--;
            continue;
        }
        bool *slot = r->kind == FP_INJECT     ? &plan->inject
                     : r->kind == FP_CORRUPT  ? &plan->corrupt
                     : r->kind == FP_TRUNCATE ? &plan->truncate
                                              : &plan->garbage;
        if (*slot)
            continue;
        *slot = true;
        if (r->kind == FP_INJECT)
            plan->inject_rule = *r;
        if (r->kind == FP_TRUNCATE)
            plan->truncate_bytes = r->bytes;
        /* corrupt is counted when a batch was actually found (fp_transform) */
        if (r->kind != FP_CORRUPT)
            fp->fired[r->kind]++;
        r->count--;
    }
    /* close-after is per connection: the caller claims it once (claim_close_after() in
     * fault_proxy.c). */
    int j = 0;
    for (int i = 0; i < fp->n_rules; i++)
        if (fp->rules[i].count > 0)
            fp->rules[j++] = fp->rules[i];
    fp->n_rules = j;
    pthread_mutex_unlock(&fp->lock);
}

bool fp_over_cap(fp_t *fp, int16_t api, int16_t version)
{
    if (api < 0 || api > KC_PROTO_MAX_API_KEY)
        return false;
    pthread_mutex_lock(&fp->lock);
    bool over = fp->capped_api[api] && version > fp->api_cap[api];
    fp->over_cap += over;
    pthread_mutex_unlock(&fp->lock);
    return over;
}

/* ---- transforms ---------------------------------------------------------------------------------
 */

static bool is_loopback(kc_str_t h)
{
    return (h.len == 9 && memcmp(h.ptr, "localhost", 9) == 0) ||
           (h.len >= 4 && memcmp(h.ptr, "127.", 4) == 0);
}

/* A broker address the client was told → the proxy's listener for that broker. */
static bool map_addr(fp_t *fp, kc_str_t *host, int32_t *port)
{
    static const char local[] = "127.0.0.1";
    for (int i = 0; i < fp->n; i++) {
        kc_str_t up = kc_str(fp->up_host[i]);
        bool same = host->len == up.len && memcmp(host->ptr, up.ptr, (size_t)up.len) == 0;
        if (*port == fp->up_port[i] && (same || (is_loopback(*host) && is_loopback(up)))) {
            *host = kc_str(local);
            *port = fp->listen_port[i];
            return true;
        }
    }
    return false;
}

static bool rewrite(fp_t *fp, int16_t api, int16_t v, void *body)
{
    bool changed = false;
    if (api == KC_METADATA_REQUEST_API_KEY) {
        kc_metadata_response_t *m = body;
        for (int32_t i = 0; i < m->brokers.count; i++)
            changed |= map_addr(fp, &m->brokers.items[i].host, &m->brokers.items[i].port);
    } else if (api == KC_FIND_COORDINATOR_REQUEST_API_KEY) {
        kc_find_coordinator_response_t *m = body;
        if (v < 4 && m->error_code == 0)
            changed |= map_addr(fp, &m->host, &m->port);
        for (int32_t i = 0; v >= 4 && i < m->coordinators.count; i++)
            changed |= map_addr(fp, &m->coordinators.items[i].host, &m->coordinators.items[i].port);
    } else if (api == KC_FETCH_REQUEST_API_KEY) {
        kc_fetch_response_t *m = body;
        for (int32_t i = 0; m->has_node_endpoints && i < m->node_endpoints.count; i++)
            changed |=
                map_addr(fp, &m->node_endpoints.items[i].host, &m->node_endpoints.items[i].port);
    }
    return changed;
}

#define EACH(arr, x) for (int32_t x##_i = 0; x##_i < (arr).count; x##_i++)
#define AT(arr, x)   (&(arr).items[x##_i])

static bool inject(int16_t api, int16_t v, void *body, const fp_rule_t *r)
{
    int16_t e = r->error;
    bool part = r->partition_scope;
    switch (api) {
    case 1: { /* Fetch */
        kc_fetch_response_t *m = body;
        if (!part) {
            /* What a broker sends for a session error: no partitions, session id 0. */
            m->error_code = e;
            m->responses.count = 0;
            m->session_id = 0;
            return true;
        }
        EACH(m->responses, t) EACH(AT(m->responses, t)->partitions, p)
        {
            kc_fetch_response_partition_data_t *d = AT(AT(m->responses, t)->partitions, p);
            if (r->partition < 0 || d->partition_index == r->partition) {
                d->error_code = e;
                d->records = (kc_bytes_t){NULL, 0};
            }
        }
        return true;
    }
    case 2: { /* ListOffsets */
        kc_list_offsets_response_t *m = body;
        EACH(m->topics, t)
        EACH(AT(m->topics, t)->partitions, p)
        if (r->partition < 0 ||
            AT(AT(m->topics, t)->partitions, p)->partition_index == r->partition)
            AT(AT(m->topics, t)->partitions, p)->error_code = e;
        return true;
    }
    case 3: { /* Metadata */
        kc_metadata_response_t *m = body;
        if (!part && v >= 13)
            m->error_code = e;
        EACH(m->topics, t)
        {
            if (!part)
                AT(m->topics, t)->error_code = e;
            else
                EACH(AT(m->topics, t)->partitions, p)
            if (r->partition < 0 ||
                AT(AT(m->topics, t)->partitions, p)->partition_index == r->partition)
                AT(AT(m->topics, t)->partitions, p)->error_code = e;
        }
        return true;
    }
    case 8: { /* OffsetCommit: errors are per partition only */
        kc_offset_commit_response_t *m = body;
        EACH(m->topics, t)
        EACH(AT(m->topics, t)->partitions, p)
        if (r->partition < 0 ||
            AT(AT(m->topics, t)->partitions, p)->partition_index == r->partition)
            AT(AT(m->topics, t)->partitions, p)->error_code = e;
        return true;
    }
    case 9: { /* OffsetFetch */
        kc_offset_fetch_response_t *m = body;
        if (v < 8) {
            if (!part)
                m->error_code = e;
            else
                EACH(m->topics, t)
            EACH(AT(m->topics, t)->partitions, p)
            AT(AT(m->topics, t)->partitions, p)->error_code = e;
        } else {
            EACH(m->groups, g)
            {
                if (!part)
                    AT(m->groups, g)->error_code = e;
                else
                    EACH(AT(m->groups, g)->topics, t)
                EACH(AT(AT(m->groups, g)->topics, t)->partitions, p)
                AT(AT(AT(m->groups, g)->topics, t)->partitions, p)->error_code = e;
            }
        }
        return true;
    }
    case 10: { /* FindCoordinator */
        kc_find_coordinator_response_t *m = body;
        if (v < 4)
            m->error_code = e, m->node_id = -1, m->host = kc_str(""), m->port = -1;
        EACH(m->coordinators, c)
        {
            kc_find_coordinator_response_coordinator_t *co = AT(m->coordinators, c);
            co->error_code = e, co->node_id = -1, co->host = kc_str(""), co->port = -1;
        }
        return true;
    }
    case 11:
        ((kc_join_group_response_t *)body)->error_code = e;
        return true;
    case 12:
        ((kc_heartbeat_response_t *)body)->error_code = e;
        return true;
    case 13:
        ((kc_leave_group_response_t *)body)->error_code = e;
        return true;
    case 14:
        ((kc_sync_group_response_t *)body)->error_code = e;
        return true;
    case 15: { /* DescribeGroups: errors are per group only */
        kc_describe_groups_response_t *m = body;
        EACH(m->groups, g)
        AT(m->groups, g)->error_code = e;
        return true;
    }
    case 16:
        ((kc_list_groups_response_t *)body)->error_code = e;
        return true;
    case 18:
        ((kc_api_versions_response_t *)body)->error_code = e;
        return true;
    case 68:
        ((kc_consumer_group_heartbeat_response_t *)body)->error_code = e;
        return true;
    }
    return false;
}

/* Flips the last byte of the first complete record batch (inside the CRC32C range, which runs
 * from the attributes to the end of the batch). False when the response carries no batch. */
static bool corrupt_fetch(kc_fetch_response_t *m)
{
    EACH(m->responses, t) EACH(AT(m->responses, t)->partitions, p)
    {
        kc_bytes_t rec = AT(AT(m->responses, t)->partitions, p)->records;
        if (rec.len < 61)
            continue;
        const uint8_t *q = rec.ptr + 8;
        int64_t size = 12 + (int64_t)((uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 |
                                      (uint32_t)q[2] << 8 | q[3]);
        if (size > 61 && size <= rec.len) {
            ((uint8_t *)rec.ptr)[size - 1] ^= 0x5a; /* the view points into our own frame */
            return true;
        }
    }
    return false;
}

static void raw(const kt_frame_t *f, kc_wbuf_t *out)
{
    out->len = 0;
    if (kc_wbuf_reserve(out, (size_t)f->len + 4) != KC_OK)
        return;
    uint8_t *p = out->data;
    p[0] = (uint8_t)(f->len >> 24), p[1] = (uint8_t)(f->len >> 16), p[2] = (uint8_t)(f->len >> 8);
    p[3] = (uint8_t)f->len;
    memcpy(p + 4, f->buf, f->len);
    out->len = (size_t)f->len + 4;
}

void fp_transform(fp_t *fp, int16_t api, int16_t v, kt_frame_t *f, const fp_plan_t *plan,
                  kc_wbuf_t *out, kc_arena_t *a)
{
    const kc_proto_api_t *desc = kc_proto_api_find(api);
    bool want = plan->inject || plan->corrupt || plan->hide_apis || plan->cap_apis ||
                api == KC_METADATA_REQUEST_API_KEY || api == KC_FIND_COORDINATOR_REQUEST_API_KEY ||
                api == KC_FETCH_REQUEST_API_KEY;
    if (!desc || v < desc->min_version || v > desc->max_version || !want) {
        raw(f, out);
        return;
    }
    kc_error_t err;
    kc_rbuf_t r = kc_rbuf(f->buf, f->len);
    kc_response_header_t h;
    void *body = kc_arena_calloc(a, 1, desc->response_size);
    bool changed = false, corrupted = false;
    bool header_ok = body && kc_response_header_decode(&h, kc_proto_response_header_version(api, v),
                                                       &r, a, &err) == KC_OK;
    /* KIP-511: a broker older than the ApiVersions version asked answers UNSUPPORTED_VERSION in
     * the v0 layout, listing what it speaks; the client reads it that way, and so do we (the
     * body is read and written back at v0, its own layout). */
    int16_t bv = v;
    if (header_ok && api == KC_API_VERSIONS_REQUEST_API_KEY && r.end - r.p >= 2 && r.p[0] == 0 &&
        r.p[1] == KC_KAFKA_UNSUPPORTED_VERSION)
        bv = 0;
    if (!header_ok || desc->decode_response(body, bv, &r, a, &err) != KC_OK) {
        pthread_mutex_lock(&fp->lock);
        fp->decode_failures++;
        pthread_mutex_unlock(&fp->lock);
        fprintf(stderr, "kc-fault-proxy: cannot decode %s v%d response, forwarded as is: %s\n",
                desc->name, v, body ? err.msg : "no memory");
        raw(f, out);
        return;
    }
    if (plan->corrupt && api == KC_FETCH_REQUEST_API_KEY)
        corrupted = corrupt_fetch(body);
    bool rewritten = rewrite(fp, api, v, body);
    if (plan->hide_apis && api == KC_API_VERSIONS_REQUEST_API_KEY) {
        kc_api_versions_response_t *m = body;
        int32_t j = 0;
        for (int32_t i = 0; i < m->api_keys.count; i++) {
            int16_t k = m->api_keys.items[i].api_key;
            if (k < 0 || k > KC_PROTO_MAX_API_KEY || !plan->hidden[k])
                m->api_keys.items[j++] = m->api_keys.items[i];
        }
        changed |= j != m->api_keys.count;
        m->api_keys.count = j;
    }
    if (plan->cap_apis && api == KC_API_VERSIONS_REQUEST_API_KEY) {
        /* An older broker: the newest version offered is the cap; a cap below the broker's own
         * floor leaves no version, which is an API the broker lacks. */
        kc_api_versions_response_t *m = body;
        int32_t j = 0;
        for (int32_t i = 0; i < m->api_keys.count; i++) {
            kc_api_versions_response_api_version_t *e = &m->api_keys.items[i];
            int16_t k = e->api_key;
            if (k >= 0 && k <= KC_PROTO_MAX_API_KEY && plan->capped[k]) {
                if (plan->cap[k] < e->min_version) {
                    changed = true;
                    continue;
                }
                if (plan->cap[k] < e->max_version) {
                    e->max_version = plan->cap[k];
                    changed = true;
                }
            }
            m->api_keys.items[j++] = *e;
        }
        m->api_keys.count = j;
    }
    if (plan->inject)
        changed |= inject(api, v, body, &plan->inject_rule);
    changed |= rewritten;
    pthread_mutex_lock(&fp->lock);
    fp->rewritten += rewritten;
    if (corrupted)
        fp->fired[FP_CORRUPT]++;
    else if (plan->corrupt && api == KC_FETCH_REQUEST_API_KEY && fp->n_rules < FP_MAX_RULES)
        /* Nothing to corrupt in this response (no batch): keep the rule for the next one. */
        fp->rules[fp->n_rules++] =
            (fp_rule_t){.kind = FP_CORRUPT, .api = api, .broker = -1, .count = 1};
    pthread_mutex_unlock(&fp->lock);
    out->len = 0;
    if (changed && kt_response_begin(out, api, v, h.correlation_id, &err) == KC_OK &&
        desc->encode_response(body, bv, out, &err) == KC_OK) {
        kt_response_end(out, 0);
        return;
    }
    if (changed)
        fprintf(stderr, "kc-fault-proxy: re-encoding %s v%d failed: %s\n", desc->name, v, err.msg);
    raw(f, out); /* unchanged, or corrupted in place */
}
