/*
 * Stats on demand: kc_stats hands over one stats JSON object (stats_json.c, the one source of
 * every number) and kc_metrics renders it in the Prometheus text format. The snapshot is taken on
 * the network thread (KC_COP_STATS); parsing it back (jansson) and rendering run on the caller's
 * thread, so a scrape costs the network thread one stats object and nothing more, and a field added
 * to the JSON appears here without a second emitter to keep in step.
 *
 * Mapping: an object's numbers become one family each, `kconsume_<scope>_<field>`, its booleans
 * 0/1, its strings labels of `kconsume_<scope>_info 1`; arrays of objects (brokers, partitions,
 * workers) become one sample per element, labelled by the element's identity. Fields that only
 * grow are counters (suffix _total). Samples of one family are written together, as the format
 * requires.
 *
 * Owner: the calling thread (everything here is local to one call).
 */
#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "consumer_int.h"

/* The fields that only grow (README's stats table: totals). */
static const char *const counters[] = {
    "fetch_requests",
    "fetch_request_bytes",
    "fetch_partitions_sent",
    "fetch_forgotten_sent",
    "fetch_responses",
    "fetch_errors",
    "fetch_record_bytes",
    "connects",
    "reauths",
    "callbacks",
    "records",
    "busy_ns",
    "rebalances",
    "heartbeats",
    "heartbeat_errors",
    "commits",
    "commit_failures",
    "rediscoveries",
    "self_fences",
    "poll_leaves",
    "subscription_requests",
    "pushes",
    "push_errors",
    "pushes_skipped",
};

static bool is_counter(const char *field)
{
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++)
        if (strcmp(field, counters[i]) == 0)
            return true;
    return false;
}

/* A metric name is [a-zA-Z_:][a-zA-Z0-9_:]*: anything else in a field name becomes '_'. */
static void put_name_part(kc_json_t *w, const char *s)
{
    for (; *s; s++)
        kc_json_raw(w, "%c", isalnum((unsigned char)*s) || *s == '_' ? *s : '_');
}

/* A label value: backslash, double quote and newline escaped, the rest as it is. */
static void put_label_value(kc_json_t *w, const char *s)
{
    kc_json_raw(w, "\"");
    for (; *s; s++) {
        if (*s == '\\')
            kc_json_raw(w, "\\\\");
        else if (*s == '"')
            kc_json_raw(w, "\\\"");
        else if (*s == '\n')
            kc_json_raw(w, "\\n");
        else
            kc_json_raw(w, "%c", *s);
    }
    kc_json_raw(w, "\"");
}

/* The labels every sample of one element carries: client_id, then the element's identity. */
typedef struct labels {
    const char *client_id;
    const char *names[2];
    char values[2][256];
    int n;
} labels_t;

static void put_labels(kc_json_t *w, const labels_t *l, const char *extra_name,
                       const char *extra_value)
{
    kc_json_raw(w, "{client_id=");
    put_label_value(w, l->client_id);
    for (int i = 0; i < l->n; i++) {
        kc_json_raw(w, ",%s=", l->names[i]);
        put_label_value(w, l->values[i]);
    }
    if (extra_name) {
        kc_json_raw(w, ",");
        put_name_part(w, extra_name);
        kc_json_raw(w, "=");
        put_label_value(w, extra_value);
    }
    kc_json_raw(w, "}");
}

static void family_head(kc_json_t *w, const char *scope, const char *field, const char *type)
{
    bool counter = strcmp(type, "counter") == 0;
    kc_json_raw(w, "# HELP kconsume_%s_", scope);
    put_name_part(w, field);
    kc_json_raw(w, "%s the stats JSON's %s %s\n# TYPE kconsume_%s_", counter ? "_total" : "", scope,
                field, scope);
    put_name_part(w, field);
    kc_json_raw(w, "%s %s\n", counter ? "_total" : "", type);
}

/* The identity labels of one element of `scope`. */
static void element_labels(const char *scope, json_t *el, labels_t *l)
{
    l->n = 0;
    const char *const *keys;
    static const char *const broker[] = {"id", NULL}, *const part[] = {"topic", "partition", NULL},
                             *const worker[] = {"id", NULL}, *const session[] = {"broker", NULL},
                             *const none[] = {NULL};
    static const char *const broker_l[] = {"broker"}, *const part_l[] = {"topic", "partition"},
                             *const worker_l[] = {"worker"}, *const session_l[] = {"broker"};
    const char *const *lnames;
    if (strcmp(scope, "broker") == 0)
        keys = broker, lnames = broker_l;
    else if (strcmp(scope, "partition") == 0)
        keys = part, lnames = part_l;
    else if (strcmp(scope, "worker") == 0)
        keys = worker, lnames = worker_l;
    else if (strcmp(scope, "share_session") == 0)
        keys = session, lnames = session_l;
    else
        keys = none, lnames = NULL;
    for (int i = 0; keys[i] && i < 2; i++) {
        json_t *v = json_object_get(el, keys[i]);
        l->names[l->n] = lnames[i];
        if (json_is_string(v))
            snprintf(l->values[l->n], sizeof l->values[0], "%s", json_string_value(v));
        else
            snprintf(l->values[l->n], sizeof l->values[0], "%lld",
                     (long long)json_integer_value(v));
        l->n++;
    }
}

static bool is_identity(const char *scope, const char *key)
{
    if (strcmp(scope, "partition") == 0)
        return strcmp(key, "topic") == 0 || strcmp(key, "partition") == 0;
    if (strcmp(scope, "broker") == 0 || strcmp(scope, "worker") == 0)
        return strcmp(key, "id") == 0;
    if (strcmp(scope, "share_session") == 0)
        return strcmp(key, "broker") == 0;
    return false;
}

/* The families of `els` (objects of one scope; a lone object is an array of one). The first
 * element's keys decide the families, in its order. */
static void put_scope(kc_json_t *w, const char *scope, json_t *els, const char *client_id)
{
    if (!json_array_size(els))
        return;
    json_t *first = json_array_get(els, 0);
    const char *key;
    json_t *v;
    labels_t l = {.client_id = client_id};
    bool has_strings = false;
    json_object_foreach(first, key, v)
    {
        if (is_identity(scope, key))
            continue;
        if (json_is_string(v)) {
            has_strings = true;
            continue;
        }
        if (!json_is_number(v) && !json_is_boolean(v))
            continue; /* nested arrays (the group's assignment) are the partitions' families */
        bool counter = is_counter(key);
        family_head(w, scope, key, counter ? "counter" : "gauge");
        size_t i;
        json_t *el;
        json_array_foreach(els, i, el)
        {
            json_t *x = json_object_get(el, key);
            if (!x)
                continue;
            element_labels(scope, el, &l);
            kc_json_raw(w, "kconsume_%s_", scope);
            put_name_part(w, key);
            kc_json_raw(w, "%s", counter ? "_total" : "");
            put_labels(w, &l, NULL, NULL);
            if (json_is_boolean(x))
                kc_json_raw(w, " %d\n", json_is_true(x) ? 1 : 0);
            else if (json_is_integer(x))
                kc_json_raw(w, " %lld\n", (long long)json_integer_value(x));
            else
                kc_json_raw(w, " %.17g\n", json_real_value(x));
        }
    }
    if (!has_strings)
        return;
    /* every string field a label of one _info sample per element */
    kc_json_raw(w,
                "# HELP kconsume_%s_info the stats JSON's %s strings, as labels\n"
                "# TYPE kconsume_%s_info gauge\n",
                scope, scope, scope);
    size_t i;
    json_t *el;
    json_array_foreach(els, i, el)
    {
        element_labels(scope, el, &l);
        kc_json_raw(w, "kconsume_%s_info{client_id=", scope);
        put_label_value(w, client_id);
        for (int j = 0; j < l.n; j++) {
            kc_json_raw(w, ",%s=", l.names[j]);
            put_label_value(w, l.values[j]);
        }
        json_object_foreach(el, key, v)
        {
            if (!json_is_string(v) || is_identity(scope, key))
                continue;
            kc_json_raw(w, ",");
            put_name_part(w, key);
            kc_json_raw(w, "=");
            put_label_value(w, json_string_value(v));
        }
        kc_json_raw(w, "} 1\n");
    }
}

/* A scope of one object (the group, share totals, telemetry), when the stats have it. */
static void put_object_scope(kc_json_t *w, const char *scope, json_t *obj, const char *client_id)
{
    if (!json_is_object(obj))
        return;
    json_t *one = json_array();
    json_array_append(one, obj);
    put_scope(w, scope, one, client_id);
    json_decref(one);
}

/* The whole text of one stats object; NULL when it does not parse or memory runs out. */
static char *render(const char *stats, const char *client_id, kc_error_t *err)
{
    json_error_t je;
    json_t *root = json_loads(stats, 0, &je);
    if (!json_is_object(root)) {
        json_decref(root);
        kc_fail(err, KC_ERR_STATE, "kc_metrics: the stats JSON does not parse: %s (column %d)",
                je.text, je.column);
        return NULL;
    }
    kc_json_t w;
    kc_json_init(&w, 16384);
    /* the top level's own numbers: one object, scope "consumer" */
    json_t *top = json_object();
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        if (json_is_number(v) && strcmp(key, "ts_ms") != 0)
            json_object_set(top, key, v);
    }
    json_t *one = json_array();
    json_array_append_new(one, top);
    put_scope(&w, "consumer", one, client_id);
    json_decref(one);
    put_scope(&w, "broker", json_object_get(root, "brokers"), client_id);
    put_scope(&w, "partition", json_object_get(root, "partitions"), client_id);
    put_object_scope(&w, "group", json_object_get(root, "group"), client_id);
    put_scope(&w, "worker", json_object_get(root, "workers"), client_id);
    put_object_scope(&w, "share", json_object_get(root, "share"), client_id);
    put_scope(&w, "share_session", json_object_get(root, "share_sessions"), client_id);
    put_object_scope(&w, "telemetry", json_object_get(root, "telemetry"), client_id);
    json_decref(root);
    kc_json_raw(&w, "%s", "");
    char *text = kc_json_take(&w);
    if (!text)
        kc_fail(err, KC_ERR_NOMEM, "kc_metrics: out of memory");
    return text;
}

/* One stats object taken now on the network thread; `who` names the API call in errors. */
static kc_err_t snapshot(kc_consumer_t *c, const char *who, char **json, kc_error_t *err)
{
    if (json)
        *json = NULL;
    kc_err_t rc = kc_consumer_guard(c, who, false, err);
    if (rc != KC_OK)
        return rc;
    if (!json)
        return kc_fail(err, KC_ERR_INVALID_ARG, "%s: NULL output", who);
    kc_ccall_t k = {.op = KC_COP_STATS};
    if ((rc = kc_consumer_call(c, &k, err)) != KC_OK)
        return rc;
    *json = k.text;
    return KC_OK;
}

KC_API kc_err_t kc_stats(kc_consumer_t *c, char **json, size_t *len, kc_error_t *err)
{
    kc_err_t rc = snapshot(c, "kc_stats", json, err);
    if (rc == KC_OK && len)
        *len = strlen(*json);
    return rc;
}

KC_API kc_err_t kc_metrics(kc_consumer_t *c, char **text, size_t *len, kc_error_t *err)
{
    char *stats;
    if (text)
        *text = NULL;
    kc_err_t rc = snapshot(c, "kc_metrics", text ? &stats : NULL, err);
    if (rc != KC_OK)
        return rc;
    char *out = render(stats, kc_conf_str(c->conf, KC_CONF_CLIENT_ID), err);
    free(stats);
    if (!out)
        return err ? err->code : KC_ERR_NOMEM;
    *text = out;
    if (len)
        *len = strlen(out);
    return KC_OK;
}
