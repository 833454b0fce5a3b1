/*
 * kconsume -L (metadata listing) and -Q (offsets for times): one question to the cluster, its
 * answer on stdout in kcat's layout (plain or -J JSON, kcat's field names, with ours added), and
 * an exit code that says what went wrong. Main thread only; the public API only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"

int kc_app_exit_for(kc_err_t rc)
{
    switch (rc) {
    case KC_OK:
        return KC_CLI_EXIT_OK;
    case KC_ERR_NOT_FOUND:
        return KC_CLI_EXIT_NOT_FOUND;
    case KC_ERR_TIMEOUT:
    case KC_ERR_TRANSPORT:
        return KC_CLI_EXIT_UNREACHABLE;
    case KC_ERR_AUTH:
    case KC_ERR_TLS:
        return KC_CLI_EXIT_AUTH;
    default:
        return KC_CLI_EXIT_RUNTIME;
    }
}

/* A JSON string, or null for NULL: format.c's rule, the one -J's records use. */
static void json_str(FILE *o, const char *s)
{
    kc_cli_buf_t b = {0};
    if (kc_cli_json_str(&b, s, s ? strlen(s) : 0) == 0)
        fwrite(b.p, 1, b.len, o);
    kc_cli_buf_free(&b);
}

static void ids_plain(FILE *o, const int32_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fprintf(o, "%s%d", i ? "," : "", v[i]);
}

static void ids_json(FILE *o, const int32_t *v, size_t n)
{
    fputc('[', o);
    for (size_t i = 0; i < n; i++)
        fprintf(o, "%s{\"id\":%d}", i ? "," : "", v[i]);
    fputc(']', o);
}

static void list_plain(FILE *o, const kc_metadata_t *md, const char *what)
{
    fprintf(o, "Metadata for %s (cluster %s, controller %d):\n", what,
            md->cluster_id ? md->cluster_id : "-", md->controller_id);
    fprintf(o, " %zu brokers:\n", md->n_brokers);
    for (size_t i = 0; i < md->n_brokers; i++) {
        const kc_metadata_broker_t *b = &md->brokers[i];
        fprintf(o, "  broker %d at %s:%d%s", b->id, b->host, b->port,
                b->id == md->controller_id ? " (controller)" : "");
        if (b->rack)
            fprintf(o, " rack %s", b->rack);
        fputc('\n', o);
    }
    fprintf(o, " %zu topics:\n", md->n_topics);
    for (size_t i = 0; i < md->n_topics; i++) {
        const kc_metadata_topic_t *t = &md->topics[i];
        fprintf(o, "  topic \"%s\" with %zu partitions:", t->name, t->n_partitions);
        if (t->error_code)
            fprintf(o, " %s", kc_kafka_error_name(t->error_code));
        fputc('\n', o);
        for (size_t j = 0; j < t->n_partitions; j++) {
            const kc_metadata_partition_t *p = &t->partitions[j];
            fprintf(o, "    partition %d, leader %d, replicas: ", p->id, p->leader);
            ids_plain(o, p->replicas, p->n_replicas);
            fputs(", isrs: ", o);
            ids_plain(o, p->isr, p->n_isr);
            if (p->n_offline) {
                fputs(", offline: ", o);
                ids_plain(o, p->offline, p->n_offline);
            }
            if (p->error_code)
                fprintf(o, ": %s", kc_kafka_error_name(p->error_code));
            fputc('\n', o);
        }
    }
}

static void list_json(FILE *o, const kc_metadata_t *md, const char *what)
{
    fputs("{\"query\":{\"topic\":", o);
    json_str(o, what);
    fputs("},\"cluster_id\":", o);
    json_str(o, md->cluster_id);
    fprintf(o, ",\"controllerid\":%d,\"brokers\":[", md->controller_id);
    for (size_t i = 0; i < md->n_brokers; i++) {
        const kc_metadata_broker_t *b = &md->brokers[i];
        char name[300];
        snprintf(name, sizeof name, "%s:%d", b->host, b->port);
        fprintf(o, "%s{\"id\":%d,\"name\":", i ? "," : "", b->id);
        json_str(o, name);
        fputs(",\"rack\":", o);
        json_str(o, b->rack);
        fputc('}', o);
    }
    fputs("],\"topics\":[", o);
    for (size_t i = 0; i < md->n_topics; i++) {
        const kc_metadata_topic_t *t = &md->topics[i];
        char id[23];
        kc_topic_id_str(t->id, id);
        fputs(i ? ",{\"topic\":" : "{\"topic\":", o);
        json_str(o, t->name);
        fprintf(o, ",\"id\":\"%s\",\"internal\":%s", id, t->internal ? "true" : "false");
        if (t->error_code)
            fprintf(o, ",\"error\":\"%s\"", kc_kafka_error_name(t->error_code));
        fputs(",\"partitions\":[", o);
        for (size_t j = 0; j < t->n_partitions; j++) {
            const kc_metadata_partition_t *p = &t->partitions[j];
            fprintf(o, "%s{\"partition\":%d,\"leader\":%d,\"leader_epoch\":%d", j ? "," : "", p->id,
                    p->leader, p->leader_epoch);
            if (p->error_code)
                fprintf(o, ",\"error\":\"%s\"", kc_kafka_error_name(p->error_code));
            fputs(",\"replicas\":", o);
            ids_json(o, p->replicas, p->n_replicas);
            fputs(",\"isrs\":", o);
            ids_json(o, p->isr, p->n_isr);
            fputs(",\"offline\":", o);
            ids_json(o, p->offline, p->n_offline);
            fputc('}', o);
        }
        fputs("]}", o);
    }
    fputs("]}\n", o);
}

int kc_app_list(void)
{
    const kc_cli_args_t *a = &kc_app.a;
    kc_error_t err;
    kc_metadata_t *md;
    kc_err_t rc = kc_metadata(kc_app.c, a->topics, a->n_topics, META_TIMEOUT_MS, &md, &err);
    if (rc != KC_OK) {
        fprintf(stderr, "kconsume: -L: %s: %s\n", kc_err_name(rc), err.msg);
        return kc_app_exit_for(rc);
    }
    char what[256] = "all topics";
    if (a->n_topics)
        snprintf(what, sizeof what, "%s%s", a->topics[0], a->n_topics > 1 ? ", ..." : "");
    if (a->json)
        list_json(stdout, md, a->n_topics ? what : "*");
    else
        list_plain(stdout, md, what);
    /* A topic asked by name and unknown to the cluster is the answer "not found"; any other
     * topic error (not authorized, ...) is a runtime error. */
    int code = KC_CLI_EXIT_OK;
    for (size_t i = 0; i < md->n_topics; i++)
        if (md->topics[i].error_code == 3)
            code = KC_CLI_EXIT_NOT_FOUND;
        else if (md->topics[i].error_code && code == KC_CLI_EXIT_OK)
            code = KC_CLI_EXIT_RUNTIME;
    kc_metadata_destroy(md);
    return code;
}

int kc_app_query(void)
{
    const kc_cli_args_t *a = &kc_app.a;
    size_t n = a->n_topics;
    kc_offset_time_t *q = calloc(n, sizeof *q);
    if (!q) {
        fprintf(stderr, "kconsume: out of memory\n");
        return KC_CLI_EXIT_RUNTIME;
    }
    for (size_t i = 0; i < n; i++)
        q[i] = (kc_offset_time_t){.topic = a->queries[i].topic,
                                  .partition = a->queries[i].partition,
                                  .timestamp = a->queries[i].timestamp};
    kc_error_t err;
    kc_err_t rc = kc_offsets_for_times(kc_app.c, q, n, META_TIMEOUT_MS, &err);
    int code = kc_app_exit_for(rc);
    if (a->json) {
        /* kcat's shape: {"topic":{"topic":"t","P":{"partition":P,"offset":O},...},...}, topics
         * in the order first asked. */
        fputc('{', stdout);
        int first_topic = 1;
        for (size_t i = 0; i < n; i++) {
            size_t k = 0;
            while (k < i && strcmp(q[k].topic, q[i].topic) != 0)
                k++;
            if (k < i)
                continue; /* printed with its topic's first entry */
            fputs(first_topic ? "" : ",", stdout);
            first_topic = 0;
            json_str(stdout, q[i].topic);
            fputs(":{\"topic\":", stdout);
            json_str(stdout, q[i].topic);
            for (size_t j = i; j < n; j++) {
                if (strcmp(q[j].topic, q[i].topic) != 0)
                    continue;
                printf(",\"%d\":{\"partition\":%d,\"offset\":%lld", q[j].partition, q[j].partition,
                       (long long)q[j].offset);
                if (q[j].err == KC_OK)
                    printf(",\"timestamp\":%lld,\"leader_epoch\":%d",
                           (long long)q[j].record_timestamp, q[j].leader_epoch);
                else
                    printf(",\"error\":\"%s\"", kc_err_name(q[j].err));
                fputc('}', stdout);
            }
            fputc('}', stdout);
        }
        fputs("}\n", stdout);
    } else {
        for (size_t i = 0; i < n; i++) {
            printf("%s [%d] offset %lld", q[i].topic, q[i].partition, (long long)q[i].offset);
            if (q[i].err != KC_OK)
                printf(": %s%s%s", kc_err_name(q[i].err), q[i].kafka_code ? " " : "",
                       q[i].kafka_code ? kc_kafka_error_name(q[i].kafka_code) : "");
            putchar('\n');
        }
    }
    if (rc != KC_OK)
        fprintf(stderr, "kconsume: -Q: %s\n", err.msg);
    free(q);
    return code;
}
