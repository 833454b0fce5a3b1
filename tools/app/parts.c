/*
 * kconsume CLI: the partition registry, one part_t per partition ever assigned, found by name.
 *
 * Any thread (the main thread under manual assignment and for the -e checks, workers in
 * on_assign): the list is under reg_mu; entries are never freed while the consumer runs, so a
 * pointer taken under the lock stays valid after it.
 */
#include <stdlib.h>
#include <string.h>

#include "app.h"

part_t *kc_app_part_get(const char *topic, int32_t partition)
{
    pthread_mutex_lock(&kc_app.reg_mu);
    part_t *p;
    for (p = kc_app.parts; p; p = p->next)
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
        }
    }
    pthread_mutex_unlock(&kc_app.reg_mu);
    return p;
}
