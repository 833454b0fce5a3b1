/*
 * kconsume CLI: the partition registry, one part_t per partition ever assigned, found by name
 * through a hash (the -e check looks up every held partition each tick: 10,000 of them).
 *
 * Any thread (the main thread under manual assignment and for the -e checks, workers in
 * on_assign): the list is under reg_mu; entries are never freed while the consumer runs, so a
 * pointer taken under the lock stays valid after it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

/* FNV-1a over the topic name and the partition number. */
static size_t bucket_of(const char *topic, int32_t partition)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *c = (const unsigned char *)topic; *c; c++)
        h = (h ^ *c) * 16777619u;
    for (int i = 0; i < 4; i++)
        h = (h ^ (uint8_t)((uint32_t)partition >> (8 * i))) * 16777619u;
    return h % KC_APP_PART_BUCKETS;
}

part_t *kc_app_part_get(const char *topic, int32_t partition)
{
    size_t b = bucket_of(topic, partition);
    pthread_mutex_lock(&kc_app.reg_mu);
    part_t *p;
    for (p = kc_app.part_buckets[b]; p; p = p->hnext)
        if (p->partition == partition && !strcmp(p->topic, topic))
            break;
    if (!p) {
        p = calloc(1, sizeof *p);
        if (p && !(p->topic = strdup(topic))) {
            free(p);
            p = NULL;
        }
        if (p) {
            p->partition = partition;
            atomic_init(&p->end, -1);
            atomic_init(&p->pos, -1);
            atomic_init(&p->worker, -1);
            p->next = kc_app.parts;
            kc_app.parts = p;
            p->hnext = kc_app.part_buckets[b];
            kc_app.part_buckets[b] = p;
        }
    }
    pthread_mutex_unlock(&kc_app.reg_mu);
    return p;
}
