#include "tally.h"

#include <stdio.h>
#include <string.h>

#include "kc_test.h"

void kc_tally_reset(kc_tally_t *t)
{
    atomic_store(&t->total, 0);
    atomic_store(&t->dups, 0);
    atomic_store(&t->errors, 0);
    for (int i = 0; i < KC_TALLY_CODES; i++)
        atomic_store(&t->errors_of[i], 0);
    for (int i = 0; i < KC_TALLY_PARTS; i++)
        atomic_store(&t->next_off[i], 0);
    /* Initialised once per tally (a static tally is zeroed: the flag says whether mu exists);
     * reset only runs while no consumer uses the tally. */
    if (!t->mu_ready) {
        pthread_mutex_init(&t->mu, NULL);
        t->mu_ready = true;
    }
    t->last_error[0] = 0;
    t->last_stats[0] = 0;
}

void kc_tally_records(kc_tally_t *t, const kc_part_t *p, kc_records_t *batch)
{
    if (p->partition < 0 || p->partition >= KC_TALLY_PARTS)
        fail_msg("partition %d is past the tally's %d", (int)p->partition, KC_TALLY_PARTS);
    _Atomic int64_t *next = &t->next_off[p->partition];
    const kc_record_t *r;
    while ((r = kc_records_next(batch))) {
        int64_t off = kc_record_offset(r);
        /* Never moved back: every record of a replayed range counts, not only its first. */
        if (off < atomic_load(next))
            atomic_fetch_add(&t->dups, 1);
        else
            atomic_store(next, off + 1);
        atomic_fetch_add(&t->total, 1);
    }
}

void kc_tally_event(kc_tally_t *t, const kc_event_t *ev)
{
    if (ev->type == KC_EVENT_ERROR && ev->error) {
        int i = -(int)ev->error->code;
        if (i >= 0 && i < KC_TALLY_CODES)
            atomic_fetch_add(&t->errors_of[i], 1);
        atomic_fetch_add(&t->errors, 1);
        pthread_mutex_lock(&t->mu);
        snprintf(t->last_error, sizeof t->last_error, "%s", ev->error->msg);
        pthread_mutex_unlock(&t->mu);
    } else if (ev->type == KC_EVENT_STATS && ev->json) {
        pthread_mutex_lock(&t->mu);
        snprintf(t->last_stats, sizeof t->last_stats, "%s", ev->json);
        pthread_mutex_unlock(&t->mu);
    }
}

kc_cb_result_t kc_tally_on_records(void *tally, kc_part_t *p, kc_records_t *batch)
{
    kc_tally_records(tally, p, batch);
    return KC_CB_CONTINUE;
}

void kc_tally_on_event(void *tally, const kc_event_t *ev)
{
    kc_tally_event(tally, ev);
}

int64_t kc_tally_errors_of(kc_tally_t *t, kc_err_t code)
{
    int i = -(int)code;
    return i >= 0 && i < KC_TALLY_CODES ? atomic_load(&t->errors_of[i]) : 0;
}

static void copy_locked(kc_tally_t *t, const char *src, char *out, size_t cap)
{
    pthread_mutex_lock(&t->mu);
    snprintf(out, cap, "%s", src);
    pthread_mutex_unlock(&t->mu);
}

void kc_tally_last_error(kc_tally_t *t, char *out, size_t cap)
{
    copy_locked(t, t->last_error, out, cap);
}

void kc_tally_last_stats(kc_tally_t *t, char *out, size_t cap)
{
    copy_locked(t, t->last_stats, out, cap);
}

int64_t kc_tally_wait(kc_tally_t *t, int64_t want, int timeout_ms, int settle_ms, const char *what)
{
    int64_t end = kc_test_now_ms() + timeout_ms;
    while (atomic_load(&t->total) < want && kc_test_now_ms() < end)
        kc_test_sleep_ms(50);
    kc_test_sleep_ms(settle_ms);
    char le[1024];
    kc_tally_last_error(t, le, sizeof le);
    int64_t total = atomic_load(&t->total);
    printf("# %s: delivered %lld of %lld, dups %lld, errors %lld%s%s%s\n", what, (long long)total,
           (long long)want, (long long)atomic_load(&t->dups), (long long)atomic_load(&t->errors),
           le[0] ? " (last: " : "", le, le[0] ? ")" : "");
    return total;
}

void kc_tally_expect(kc_tally_t *t, int64_t want, int timeout_ms, const char *what)
{
    int64_t total = kc_tally_wait(t, want, timeout_ms, 300, what);
    if (total != want || atomic_load(&t->dups) != 0)
        fail_msg("%s: %lld records with %lld duplicates, %lld wanted with none", what,
                 (long long)total, (long long)atomic_load(&t->dups), (long long)want);
}
