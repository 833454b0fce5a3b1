/*
 * A Metadata answer made into the public kc_metadata_t (query.h, kc_eng_metadata_export).
 *
 * The application may keep the answer past the consumer, so it borrows nothing: one allocation
 * holds the structs, the id arrays and the strings, laid out by a sizing pass and a filling pass
 * over the same walk, and kc_metadata_destroy is a single free. Pure; any thread.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/metadata.gen.h"
#include "query.h"

typedef struct slab {
    char *p;   /* NULL while sizing */
    size_t at; /* bytes taken */
} slab_t;

static void *take(slab_t *s, size_t n, size_t align)
{
    s->at = (s->at + align - 1) / align * align;
    void *r = s->p ? s->p + s->at : NULL;
    s->at += n;
    return r;
}

/* NULL for the null string, else a NUL-terminated copy. */
static const char *str(slab_t *s, kc_str_t v)
{
    if (v.len < 0)
        return NULL;
    char *r = take(s, (size_t)v.len + 1, 1);
    if (r) {
        memcpy(r, v.ptr, (size_t)v.len);
        r[v.len] = '\0';
    }
    return r;
}

static const int32_t *ids(slab_t *s, const int32_t *items, int32_t count, size_t *n)
{
    *n = count > 0 ? (size_t)count : 0;
    int32_t *r = take(s, *n * sizeof *r, _Alignof(int32_t));
    if (r && *n)
        memcpy(r, items, *n * sizeof *r);
    return r;
}

static void walk(slab_t *s, const kc_metadata_response_t *m, kc_metadata_t *out)
{
    size_t nb = m->brokers.count > 0 ? (size_t)m->brokers.count : 0;
    size_t nt = m->topics.count > 0 ? (size_t)m->topics.count : 0;
    kc_metadata_broker_t *b = take(s, nb * sizeof *b, _Alignof(kc_metadata_broker_t));
    kc_metadata_topic_t *t = take(s, nt * sizeof *t, _Alignof(kc_metadata_topic_t));
    if (out) {
        out->cluster_id = str(s, m->cluster_id);
        out->controller_id = m->controller_id;
        out->brokers = b;
        out->n_brokers = nb;
        out->topics = t;
        out->n_topics = nt;
    } else {
        str(s, m->cluster_id);
    }
    for (size_t i = 0; i < nb; i++) {
        const kc_metadata_response_broker_t *w = &m->brokers.items[i];
        kc_metadata_broker_t v = {w->node_id, str(s, w->host), w->port, str(s, w->rack)};
        if (v.host == NULL && s->p) /* a null host is not a host; "" keeps the field a string */
            v.host = "";
        if (b)
            b[i] = v;
    }
    for (size_t i = 0; i < nt; i++) {
        const kc_metadata_response_topic_t *w = &m->topics.items[i];
        size_t np = w->partitions.count > 0 ? (size_t)w->partitions.count : 0;
        kc_metadata_partition_t *p = take(s, np * sizeof *p, _Alignof(kc_metadata_partition_t));
        kc_metadata_topic_t v = {.name = str(s, w->name),
                                 .error_code = w->error_code,
                                 .internal = w->is_internal,
                                 .partitions = p,
                                 .n_partitions = np};
        if (v.name == NULL && s->p)
            v.name = "";
        memcpy(v.id, w->topic_id.b, sizeof v.id);
        for (size_t j = 0; j < np; j++) {
            const kc_metadata_response_partition_t *wp = &w->partitions.items[j];
            kc_metadata_partition_t vp = {.id = wp->partition_index,
                                          .error_code = wp->error_code,
                                          .leader = wp->leader_id,
                                          .leader_epoch = wp->leader_epoch};
            vp.replicas = ids(s, wp->replica_nodes.items, wp->replica_nodes.count, &vp.n_replicas);
            vp.isr = ids(s, wp->isr_nodes.items, wp->isr_nodes.count, &vp.n_isr);
            vp.offline =
                ids(s, wp->offline_replicas.items, wp->offline_replicas.count, &vp.n_offline);
            if (p)
                p[j] = vp;
        }
        if (t)
            t[i] = v;
    }
}

static int part_cmp(const void *a, const void *b)
{
    const kc_metadata_partition_t *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

static int broker_cmp(const void *a, const void *b)
{
    const kc_metadata_broker_t *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

kc_metadata_t *kc_eng_metadata_export(const kc_metadata_response_t *m)
{
    slab_t s = {NULL, 0};
    take(&s, sizeof(kc_metadata_t), _Alignof(kc_metadata_t));
    walk(&s, m, NULL);
    s.p = calloc(1, s.at);
    if (!s.p)
        return NULL;
    s.at = 0;
    kc_metadata_t *md = take(&s, sizeof *md, _Alignof(kc_metadata_t));
    walk(&s, m, md);
    qsort((void *)md->brokers, md->n_brokers, sizeof md->brokers[0], broker_cmp);
    for (size_t i = 0; i < md->n_topics; i++)
        qsort((void *)md->topics[i].partitions, md->topics[i].n_partitions,
              sizeof md->topics[i].partitions[0], part_cmp);
    return md;
}
