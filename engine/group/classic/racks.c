/*
 * group.protocol=classic: the replica racks of the subscribed topics' partitions, taken from the
 * driver's own Metadata answers (io.c) and handed to the leader's assignors through
 * kc_classic_racks_fn (KIP-881 rack-aware assignment). Java's leader reads the same thing from
 * its metadata cache: each replica's broker, and that broker's rack from the brokers list (a
 * replica whose broker is not listed, or has no rack, counts as no rack).
 *
 * Owner: network thread (the driver's state; see proto_int.h).
 */
#include <stdlib.h>
#include <string.h>

#include "group/classic/proto_int.h"
#include "proto/metadata.gen.h"

void kc_classic_io_racks_free(kc_classic_io_t *g)
{
    for (size_t j = 0; g->racks && j < g->n_topics; j++) {
        free(g->racks[j].per_part);
        free(g->racks[j].n_per_part);
        free(g->racks[j].flat);
    }
    free(g->racks);
    g->racks = NULL;
    for (size_t i = 0; i < g->n_rack_names; i++)
        free(g->rack_names[i]);
    free(g->rack_names);
    g->rack_names = NULL;
    g->n_rack_names = 0;
}

/* The rack of broker `node` in this answer (a string owned by g), NULL when none. */
static const char *rack_of(const kc_classic_io_t *g, const kc_metadata_response_t *m, int32_t node)
{
    for (int32_t i = 0; i < m->brokers.count && (size_t)i < g->n_rack_names; i++)
        if (m->brokers.items[i].node_id == node)
            return g->rack_names[i];
    return NULL;
}

/* One topic's table from its metadata; false (nothing kept) when a partition index is out of
 * range or missing. */
static bool topic_racks(kc_classic_io_t *g, kc_classic_racks_t *tr, const kc_metadata_response_t *m,
                        const kc_metadata_response_topic_t *t)
{
    /* a decoded count is never negative, but say so: GCC's range analysis cannot see it */
    if (t->partitions.count <= 0)
        return false;
    size_t np = (size_t)t->partitions.count;
    size_t total = 0;
    for (size_t i = 0; i < np; i++)
        total += t->partitions.items[i].replica_nodes.count > 0
                     ? (size_t)t->partitions.items[i].replica_nodes.count
                     : 0;
    tr->per_part = calloc(np, sizeof *tr->per_part);
    tr->n_per_part = calloc(np, sizeof *tr->n_per_part);
    tr->flat = calloc(total ? total : 1, sizeof *tr->flat);
    bool *seen = calloc(np, sizeof *seen);
    bool ok = tr->per_part && tr->n_per_part && tr->flat && seen;
    size_t k = 0;
    for (size_t i = 0; ok && i < np; i++) {
        const kc_metadata_response_partition_t *p = &t->partitions.items[i];
        int32_t idx = p->partition_index;
        if (idx < 0 || (size_t)idx >= np || seen[idx]) {
            ok = false;
            break;
        }
        seen[idx] = true;
        tr->per_part[idx] = (const char *const *)&tr->flat[k];
        for (int32_t r = 0; r < p->replica_nodes.count; r++)
            tr->flat[k++] = rack_of(g, m, p->replica_nodes.items[r]);
        tr->n_per_part[idx] = p->replica_nodes.count > 0 ? (size_t)p->replica_nodes.count : 0;
    }
    free(seen);
    if (ok) {
        tr->n_parts = np;
        return true;
    }
    free(tr->per_part);
    free(tr->n_per_part);
    free(tr->flat);
    memset(tr, 0, sizeof *tr);
    return false;
}

void kc_classic_io_racks_update(kc_classic_io_t *g, const kc_metadata_response_t *m)
{
    kc_classic_io_racks_free(g);
    g->racks = calloc(g->n_topics ? g->n_topics : 1, sizeof *g->racks);
    int32_t nb = m->brokers.count > 0 ? m->brokers.count : 0;
    g->rack_names = calloc(nb ? (size_t)nb : 1, sizeof *g->rack_names);
    if (!g->racks || !g->rack_names) {
        kc_classic_io_racks_free(
            g); /* no racks: the assignment is still valid, only not rack-aware */
        return;
    }
    g->n_rack_names = (size_t)nb;
    for (int32_t i = 0; i < nb; i++) {
        kc_str_t r = m->brokers.items[i].rack;
        if (r.len >= 0 && !(g->rack_names[i] = strndup(r.ptr ? r.ptr : "", (size_t)r.len))) {
            kc_classic_io_racks_free(g);
            return;
        }
    }
    for (int32_t i = 0; i < m->topics.count; i++) {
        const kc_metadata_response_topic_t *t = &m->topics.items[i];
        if (t->error_code != 0 || t->partitions.count <= 0)
            continue;
        for (size_t j = 0; j < g->n_topics; j++)
            if ((size_t)t->name.len == strlen(g->topics[j]) &&
                memcmp(t->name.ptr, g->topics[j], (size_t)t->name.len) == 0)
                (void)topic_racks(g, &g->racks[j], m, t);
    }
}

bool kc_classic_io_racks_of(void *ctx, const char *topic, int32_t n_partitions,
                            const char *const *const **racks, const size_t **n)
{
    kc_classic_io_t *g = ctx;
    for (size_t j = 0; g->racks && j < g->n_topics; j++)
        if (strcmp(g->topics[j], topic) == 0) {
            if (g->racks[j].n_parts != n_partitions || !g->racks[j].per_part)
                return false;
            *racks = g->racks[j].per_part;
            *n = g->racks[j].n_per_part;
            return true;
        }
    return false;
}
