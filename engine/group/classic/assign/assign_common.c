/*
 * Shared internals of the assignors (see assign_int.h): input indexing, Java string order and
 * hashing, HashMap iteration order, result building.
 *
 * Owner: the network thread; state lives for one kc_assign_* call.
 */
#include "group/classic/assign/assign_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"

void kc_ivec_push(kc_ivec_t *a, int32_t x, bool *oom)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 8;
        int32_t *v = realloc(a->v, cap * sizeof *v);
        if (!v) {
            *oom = true;
            return;
        }
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
}

void kc_ivec_free(kc_ivec_t *a)
{
    free(a->v);
    *a = (kc_ivec_t){0};
}

ptrdiff_t kc_ivec_find(const kc_ivec_t *a, int32_t x)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i] == x)
            return (ptrdiff_t)i;
    return -1;
}

void kc_ivec_remove_at(kc_ivec_t *a, size_t i)
{
    memmove(a->v + i, a->v + i + 1, (a->n - i - 1) * sizeof *a->v);
    a->n--;
}

bool kc_ivec_remove(kc_ivec_t *a, int32_t x)
{
    ptrdiff_t i = kc_ivec_find(a, x);
    if (i < 0)
        return false;
    kc_ivec_remove_at(a, (size_t)i);
    return true;
}

/* ---- Java strings ------------------------------------------------------------------------- */

/* Walks UTF-8 as the UTF-16 code units Java would hold. Bytes that are not valid UTF-8 are
 * taken as one unit each (Java's decoder would substitute U+FFFD; such ids don't occur). */
typedef struct {
    const unsigned char *p;
    unsigned pending; /* low surrogate still to emit, 0 if none */
} u16it_t;

static int u16_next(u16it_t *it)
{
    if (it->pending) {
        int u = (int)it->pending;
        it->pending = 0;
        return u;
    }
    const unsigned char *p = it->p;
    if (!*p)
        return -1;
    unsigned cp;
    int len;
    if (p[0] < 0x80) {
        cp = p[0];
        len = 1;
    } else if ((p[0] & 0xe0) == 0xc0 && (p[1] & 0xc0) == 0x80) {
        cp = ((p[0] & 0x1fu) << 6) | (p[1] & 0x3fu);
        len = 2;
    } else if ((p[0] & 0xf0) == 0xe0 && (p[1] & 0xc0) == 0x80 && (p[2] & 0xc0) == 0x80) {
        cp = ((p[0] & 0x0fu) << 12) | ((p[1] & 0x3fu) << 6) | (p[2] & 0x3fu);
        len = 3;
    } else if ((p[0] & 0xf8) == 0xf0 && (p[1] & 0xc0) == 0x80 && (p[2] & 0xc0) == 0x80 &&
               (p[3] & 0xc0) == 0x80) {
        cp = ((p[0] & 0x07u) << 18) | ((p[1] & 0x3fu) << 12) | ((p[2] & 0x3fu) << 6) |
             (p[3] & 0x3fu);
        len = 4;
    } else {
        cp = p[0];
        len = 1;
    }
    it->p += len;
    if (cp >= 0x10000) {
        cp -= 0x10000;
        it->pending = 0xdc00 + (cp & 0x3ff);
        return (int)(0xd800 + (cp >> 10));
    }
    return (int)cp;
}

int kc_jstr_cmp(const char *a, const char *b)
{
    u16it_t ia = {(const unsigned char *)a, 0}, ib = {(const unsigned char *)b, 0};
    for (;;) {
        int x = u16_next(&ia), y = u16_next(&ib);
        if (x != y)
            return x < 0 ? -1 : y < 0 ? 1 : x - y;
        if (x < 0)
            return 0;
    }
}

int32_t kc_jstr_hash(const char *s)
{
    u16it_t it = {(const unsigned char *)s, 0};
    uint32_t h = 0;
    for (int u; (u = u16_next(&it)) >= 0;)
        h = 31u * h + (uint32_t)u;
    return (int32_t)h;
}

int32_t kc_jtp_hash(const char *topic, int32_t partition)
{
    uint32_t r = 31u + (uint32_t)partition;
    return (int32_t)(31u * r + (uint32_t)kc_jstr_hash(topic));
}

size_t kc_jmap_cap(size_t n)
{
    size_t cap = 16;
    while (n > cap / 4 * 3)
        cap *= 2;
    return cap;
}

typedef struct {
    uint32_t bucket;
    size_t idx;
} bucket_key_t;

static int bucket_key_cmp(const void *a, const void *b)
{
    const bucket_key_t *x = a, *y = b;
    if (x->bucket != y->bucket)
        return x->bucket < y->bucket ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

void kc_jmap_order(const int32_t *h, size_t n, size_t cap, size_t *order)
{
    bucket_key_t stackbuf[64];
    bucket_key_t *k = n <= 64 ? stackbuf : malloc(n * sizeof *k);
    if (!k) { /* tiny fallback: insertion order keeps the call total; only reachable on OOM */
        for (size_t i = 0; i < n; i++)
            order[i] = i;
        return;
    }
    for (size_t i = 0; i < n; i++)
        k[i] = (bucket_key_t){kc_jbucket(h[i], cap), i};
    qsort(k, n, sizeof *k, bucket_key_cmp);
    for (size_t i = 0; i < n; i++)
        order[i] = k[i].idx;
    if (k != stackbuf)
        free(k);
}

/* Java's MemberInfo.compareTo: static members first, by instance id; then by member id. */
static int member_info_cmp(const kc_assign_member_t *x, const kc_assign_member_t *y)
{
    if (x->instance_id && y->instance_id)
        return kc_jstr_cmp(x->instance_id, y->instance_id);
    if (x->instance_id)
        return -1;
    if (y->instance_id)
        return 1;
    return kc_jstr_cmp(x->member_id, y->member_id);
}

/* Orders member indices as Collections.sort(List<MemberInfo>) does. Insertion sort: stable like
 * Java's, reentrant (qsort has no context argument), and member lists are short. */
void kc_assign_sort_members(const kc_assign_member_t *members, size_t *idx, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        size_t v = idx[i], j = i;
        for (; j > 0 && member_info_cmp(&members[idx[j - 1]], &members[v]) > 0; j--)
            idx[j] = idx[j - 1];
        idx[j] = v;
    }
}

/* ---- the indexed input -------------------------------------------------------------------- */

static int topic_ptr_cmp(const void *a, const void *b)
{
    const kc_assign_topic_t *const *x = a, *const *y = b;
    return kc_jstr_cmp((*x)->name, (*y)->name);
}

int kc_actx_topic(const kc_actx_t *c, const char *name)
{
    size_t lo = 0, hi = c->nt;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int r = kc_jstr_cmp(c->topic[mid]->name, name);
        if (r == 0)
            return (int)mid;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

int32_t kc_actx_gp(const kc_actx_t *c, const kc_assign_tp_t *tp)
{
    int t = tp->topic ? kc_actx_topic(c, tp->topic) : -1;
    if (t < 0 || tp->partition < 0 || tp->partition >= c->topic[t]->n_partitions)
        return -1;
    return c->toff[t] + tp->partition;
}

bool kc_actx_subscribes(const kc_actx_t *c, size_t m, int t)
{
    return kc_ivec_find(&c->subs[m], t) >= 0;
}

bool kc_actx_gp_has_rack(const kc_actx_t *c, int32_t gp, const char *rack)
{
    for (size_t i = 0; i < c->gp_nracks[gp]; i++)
        if (strcmp(c->gp_racks[gp][i], rack) == 0)
            return true;
    return false;
}

bool kc_actx_racks_uniform(const kc_actx_t *c, int32_t from, int32_t to)
{
    /* Each partition's set equals the union iff it holds every rack of the union; the union's
     * racks are exactly the racks of some partition, so walking each distinct rack once (the
     * first partition that has it) is enough. */
    for (int32_t q = from; q < to; q++)
        for (size_t r = 0; r < c->gp_nracks[q]; r++) {
            const char *rack = c->gp_racks[q][r];
            bool seen_before = false;
            for (int32_t e = from; e < q && !seen_before; e++)
                seen_before = kc_actx_gp_has_rack(c, e, rack);
            if (seen_before)
                continue; /* already checked against every partition */
            for (int32_t gp = from; gp < to; gp++)
                if (!kc_actx_gp_has_rack(c, gp, rack))
                    return false;
        }
    return true;
}

void kc_actx_free(kc_actx_t *c)
{
    if (c->subs)
        for (size_t m = 0; m < c->nm; m++)
            kc_ivec_free(&c->subs[m]);
    if (c->out)
        for (size_t m = 0; m < c->nm; m++)
            kc_ivec_free(&c->out[m]);
    if (c->gp_racks)
        for (int32_t i = 0; i < c->total; i++)
            free(c->gp_racks[i]);
    free(c->topic);
    free(c->toff);
    free(c->gp_topic);
    free(c->gp_racks);
    free(c->gp_nracks);
    free(c->mrack);
    free(c->subs);
    free(c->horder);
    free(c->out);
    *c = (kc_actx_t){0};
}

static bool someone_subscribes(const kc_assign_input_t *in, const char *topic)
{
    for (size_t m = 0; m < in->n_members; m++)
        for (size_t i = 0; i < in->members[m].n_topics; i++)
            if (in->members[m].topics[i] && strcmp(in->members[m].topics[i], topic) == 0)
                return true;
    return false;
}

kc_err_t kc_actx_init(kc_actx_t *c, const kc_assign_input_t *in, kc_error_t *err)
{
    *c = (kc_actx_t){.in = in, .nm = in->n_members};
    size_t nm = in->n_members;
    c->topic = calloc(in->n_topics + 1, sizeof *c->topic);
    c->toff = calloc(in->n_topics + 1, sizeof *c->toff);
    c->mrack = calloc(nm + 1, sizeof *c->mrack);
    c->subs = calloc(nm + 1, sizeof *c->subs);
    c->out = calloc(nm + 1, sizeof *c->out);
    c->horder = calloc(nm + 1, sizeof *c->horder);
    int32_t *mh = calloc(nm + 1, sizeof *mh);
    if (!c->topic || !c->toff || !c->mrack || !c->subs || !c->out || !c->horder || !mh)
        goto nomem;
    for (size_t i = 0; i < in->n_topics; i++) {
        if (!in->topics[i].name) {
            free(mh);
            kc_actx_free(c);
            return kc_fail(err, KC_ERR_INVALID_ARG, "assign: topic %zu has no name", i);
        }
        /* Java's assignors only ever see topics that some member subscribes to */
        if (in->topics[i].n_partitions > 0 && someone_subscribes(in, in->topics[i].name))
            c->topic[c->nt++] = &in->topics[i];
    }
    qsort(c->topic, c->nt, sizeof *c->topic, topic_ptr_cmp);
    for (size_t t = 0; t + 1 < c->nt; t++)
        if (kc_jstr_cmp(c->topic[t]->name, c->topic[t + 1]->name) == 0) {
            free(mh);
            kc_actx_free(c);
            return kc_fail(err, KC_ERR_INVALID_ARG, "assign: topic '%s' listed twice",
                           c->topic[t]->name);
        }
    for (size_t t = 0; t < c->nt; t++)
        c->toff[t + 1] = c->toff[t] + c->topic[t]->n_partitions;
    c->total = c->toff[c->nt];
    c->gp_topic = calloc((size_t)c->total + 1, sizeof *c->gp_topic);
    c->gp_racks = calloc((size_t)c->total + 1, sizeof *c->gp_racks);
    c->gp_nracks = calloc((size_t)c->total + 1, sizeof *c->gp_nracks);
    if (!c->gp_topic || !c->gp_racks || !c->gp_nracks)
        goto nomem;
    for (size_t t = 0; t < c->nt; t++) {
        const kc_assign_topic_t *tp = c->topic[t];
        for (int32_t p = 0; p < tp->n_partitions; p++) {
            int32_t gp = c->toff[t] + p;
            c->gp_topic[gp] = (int32_t)t;
            if (!tp->replica_racks || !tp->n_replica_racks || !tp->n_replica_racks[p])
                continue;
            size_t nr = tp->n_replica_racks[p];
            c->gp_racks[gp] = calloc(nr, sizeof(char *));
            if (!c->gp_racks[gp])
                goto nomem;
            for (size_t r = 0; r < nr; r++) {
                const char *rk = tp->replica_racks[p][r];
                if (rk && !kc_actx_gp_has_rack(c, gp, rk))
                    c->gp_racks[gp][c->gp_nracks[gp]++] = rk;
            }
        }
    }
    for (size_t m = 0; m < nm; m++) {
        const kc_assign_member_t *mb = &in->members[m];
        if (!mb->member_id) {
            free(mh);
            kc_actx_free(c);
            return kc_fail(err, KC_ERR_INVALID_ARG, "assign: member %zu has no id", m);
        }
        for (size_t j = 0; j < m; j++)
            if (strcmp(in->members[j].member_id, mb->member_id) == 0) {
                free(mh);
                kc_actx_free(c);
                return kc_fail(err, KC_ERR_INVALID_ARG, "assign: member id '%s' listed twice",
                               mb->member_id);
            }
        c->mrack[m] = mb->rack && mb->rack[0] ? mb->rack : NULL;
        for (size_t i = 0; i < mb->n_topics; i++) {
            int t = mb->topics[i] ? kc_actx_topic(c, mb->topics[i]) : -1;
            if (t >= 0)
                kc_ivec_push(&c->subs[m], t, &c->oom);
        }
        mh[m] = kc_jstr_hash(mb->member_id);
    }
    kc_jmap_order(mh, nm, kc_jmap_cap(nm), c->horder);
    free(mh);
    if (c->oom)
        goto nomem;
    return KC_OK;
nomem:
    free(mh);
    kc_actx_free(c);
    return kc_fail(err, KC_ERR_NOMEM, "assign: out of memory indexing the input");
}

static int i32_cmp(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

kc_err_t kc_actx_finish(kc_actx_t *c, kc_assign_result_t *r, kc_error_t *err)
{
    *r = (kc_assign_result_t){0};
    if (c->oom)
        return kc_fail(err, KC_ERR_NOMEM, "assign: out of memory");
    r->members = calloc(c->nm + 1, sizeof *r->members);
    if (!r->members)
        return kc_fail(err, KC_ERR_NOMEM, "assign: out of memory");
    r->n_members = c->nm;
    for (size_t m = 0; m < c->nm; m++) {
        kc_ivec_t *o = &c->out[m];
        if (o->n > 1)
            qsort(o->v, o->n, sizeof *o->v, i32_cmp);
        r->members[m].tps = calloc(o->n + 1, sizeof *r->members[m].tps);
        if (!r->members[m].tps) {
            kc_assign_result_free(r);
            return kc_fail(err, KC_ERR_NOMEM, "assign: out of memory");
        }
        for (size_t i = 0; i < o->n; i++) {
            int32_t gp = o->v[i];
            r->members[m].tps[i] =
                (kc_assign_tp_t){c->topic[c->gp_topic[gp]]->name, kc_actx_pnum(c, gp)};
        }
        r->members[m].n = o->n;
    }
    return KC_OK;
}

void kc_assign_result_free(kc_assign_result_t *r)
{
    if (!r || !r->members)
        return;
    for (size_t m = 0; m < r->n_members; m++)
        free(r->members[m].tps);
    free(r->members);
    *r = (kc_assign_result_t){0};
}

static const char *const names[] = {"range", "roundrobin", "sticky", "cooperative-sticky"};

const char *kc_assignor_name(kc_assignor_t a)
{
    return (unsigned)a < 4 ? names[a] : "unknown";
}

int kc_assignor_from_name(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (name && strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

kc_err_t kc_assign_run(kc_assignor_t a, const kc_assign_input_t *in, kc_assign_result_t *out,
                       kc_error_t *err)
{
    switch (a) {
    case KC_ASSIGNOR_RANGE:
        return kc_assign_range(in, out, err);
    case KC_ASSIGNOR_ROUNDROBIN:
        return kc_assign_roundrobin(in, out, err);
    case KC_ASSIGNOR_STICKY:
        return kc_assign_sticky(in, out, err);
    case KC_ASSIGNOR_COOPERATIVE_STICKY:
        return kc_assign_cooperative_sticky(in, out, err);
    }
    *out = (kc_assign_result_t){0};
    return kc_fail(err, KC_ERR_INVALID_ARG, "assign: unknown assignor %d", (int)a);
}
