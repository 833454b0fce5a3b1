/* libFuzzer: a Metadata answer from a hostile broker, decoded and made into the public
 * kc_metadata_t (engine/query_metadata.c). Whatever decodes must export into one allocation that
 * holds exactly the answer: every count, id, string and array read back equal to the wire
 * message's (brokers and each topic's partitions sorted by id). Input: [api key 3][version][body],
 * the seeds' layout (fuzz_proto_response's). Single-threaded. */
#include <stdlib.h>
#include <string.h>

#include "proto/metadata.gen.h"
#include "query.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

/* The C string holds the wire string's bytes; a NUL inside them ends it there (a name with a NUL
 * is no name a C caller could use anyway). */
static int str_same(const char *c, kc_str_t w)
{
    if (w.len < 0)
        return 1; /* null: NULL or "" by the field (checked by the caller) */
    size_t n = c ? strlen(c) : 0;
    return c && n <= (size_t)w.len && memcmp(c, w.ptr, n) == 0 &&
           (n == (size_t)w.len || w.ptr[n] == '\0');
}

static int ids_eq(const int32_t *v, size_t n, const int32_t *w, int32_t count)
{
    return n == (count > 0 ? (size_t)count : 0) && (!n || memcmp(v, w, n * sizeof *v) == 0);
}

static int part_same(const kc_metadata_partition_t *p, const kc_metadata_response_partition_t *w)
{
    return p->id == w->partition_index && p->leader == w->leader_id &&
           p->leader_epoch == w->leader_epoch && p->error_code == w->error_code &&
           ids_eq(p->replicas, p->n_replicas, w->replica_nodes.items, w->replica_nodes.count) &&
           ids_eq(p->isr, p->n_isr, w->isr_nodes.items, w->isr_nodes.count) &&
           ids_eq(p->offline, p->n_offline, w->offline_replicas.items, w->offline_replicas.count);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    if (len < 2 || data[0] != 3)
        return 0;
    int16_t v = (int16_t)(data[1] % 14);
    uint8_t *frame = malloc(len - 2 ? len - 2 : 1); /* exact size: ASan sees any overread */
    memcpy(frame, data + 2, len - 2);
    kc_arena_t a = {0};
    kc_error_t err;
    kc_metadata_response_t m;
    kc_rbuf_t r = kc_rbuf(frame, len - 2);
    if (kc_metadata_response_decode(&m, v, &r, &a, &err) == KC_OK) {
        kc_metadata_t *md = kc_eng_metadata_export(&m);
        if (!md)
            abort(); /* inputs are small: out of memory is not the answer */
        size_t nb = m.brokers.count > 0 ? (size_t)m.brokers.count : 0;
        size_t nt = m.topics.count > 0 ? (size_t)m.topics.count : 0;
        if (md->n_brokers != nb || md->n_topics != nt || md->controller_id != m.controller_id ||
            !str_same(md->cluster_id, m.cluster_id) || (m.cluster_id.len < 0) != !md->cluster_id)
            abort();
        for (size_t i = 0; i + 1 < nb; i++) /* sorted by id */
            if (md->brokers[i].id > md->brokers[i + 1].id)
                abort();
        for (size_t i = 0; i < nb; i++) {
            size_t j = 0; /* the wire broker with this id and address */
            while (j < nb && !(m.brokers.items[j].node_id == md->brokers[i].id &&
                               m.brokers.items[j].port == md->brokers[i].port &&
                               str_same(md->brokers[i].host, m.brokers.items[j].host)))
                j++;
            if (j == nb || !md->brokers[i].host)
                abort();
        }
        for (size_t i = 0; i < nt; i++) {
            const kc_metadata_topic_t *t = &md->topics[i];
            const kc_metadata_response_topic_t *w = &m.topics.items[i];
            size_t np = w->partitions.count > 0 ? (size_t)w->partitions.count : 0;
            if (!t->name || !str_same(t->name, w->name) || t->n_partitions != np ||
                t->error_code != w->error_code || memcmp(t->id, w->topic_id.b, 16) != 0)
                abort();
            for (size_t j = 0; j < np; j++) {
                const kc_metadata_partition_t *p = &t->partitions[j];
                if (j + 1 < np && p->id > t->partitions[j + 1].id)
                    abort();  /* sorted by id */
                size_t k = 0; /* the wire partition it came from */
                while (k < np && !part_same(p, &w->partitions.items[k]))
                    k++;
                if (k == np)
                    abort();
            }
        }
        free(md);
    }
    kc_arena_free(&a);
    free(frame);
    return 0;
}
