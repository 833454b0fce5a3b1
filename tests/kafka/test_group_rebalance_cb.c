/* kc-test-label: threads-long */
/* Against the suite's cluster: the group-level rebalance callback (kconsume.h on_rebalance) in
 * each protocol. Member A subscribes to a 6-partition topic, member B joins under load, then B
 * closes, then A closes. Each member's callbacks are logged as they begin and end, and for every
 * partition the log must read
 *     on_assign ended → on_rebalance(ASSIGN naming it) begins … ends → on_records… →
 *     every on_records ended → on_rebalance(REVOKE naming it) begins … ends → on_revoke
 * (no record callback overlaps either call or falls outside them; on_revoke only after it; the
 * record callbacks sleep and so does on_rebalance, so an early call would be seen overlapping),
 * on_rebalance calls never overlap and run on workers, kc_close's revocation reports the whole
 * held set, and every record is delivered exactly once across both members (graceful
 * rebalances: the revocation commits before the partition moves).
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include <stdatomic.h>

#include "membership.h"

#define NP      6
#define RECORDS 6000
#define LOGN    20000

enum { ST_NONE, ST_PENDING, ST_ACTIVE, ST_GHOST, ST_REVOKING };

typedef struct ent {
    /* 'A' on_assign ended, 'd'/'D' on_records began/ended, 'V'/'L' on_revoke/on_lost,
     * 'R'/'E' on_rebalance began/ended */
    char what;
    int partition;
    int kind;
    unsigned set;
} ent_t;

typedef struct member {
    pthread_mutex_t mu;
    ent_t log[LOGN];
    int n;
    _Atomic int reb_in, reb_overlap, reb_off_worker;
    int held[NP]; /* on_assign minus on_revoke/on_lost */
    kc_consumer_t *c;
} member_t;

/* Offsets seen per partition, over both members: exactly once. */
static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned char seen[NP][RECORDS];
static long delivered, dups;

static void put(member_t *m, char what, int partition, int kind, unsigned set)
{
    pthread_mutex_lock(&m->mu);
    if (m->n < LOGN)
        m->log[m->n++] = (ent_t){what, partition, kind, set};
    if (what == 'A')
        m->held[partition]++;
    if (what == 'V' || what == 'L')
        m->held[partition]--;
    pthread_mutex_unlock(&m->mu);
}

static void on_assign(void *o, kc_part_t *p)
{
    put(o, 'A', p->partition, 0, 0);
}

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    put(o, 'd', p->partition, 0, 0);
    const kc_record_t *r;
    pthread_mutex_lock(&seen_mu);
    while ((r = kc_records_next(b))) {
        int64_t off = kc_record_offset(r);
        if (off >= 0 && off < RECORDS) {
            if (seen[p->partition][off]++)
                dups++;
            delivered++;
        }
    }
    pthread_mutex_unlock(&seen_mu);
    kc_test_sleep_ms(30); /* keep record callbacks in flight while the group moves */
    put(o, 'D', p->partition, 0, 0);
    return KC_CB_CONTINUE;
}

static void on_revoke(void *o, kc_part_t *p)
{
    put(o, 'V', p->partition, 0, 0);
}

static void on_lost(void *o, kc_part_t *p)
{
    put(o, 'L', p->partition, 0, 0);
}

static void on_rebalance(void *o, kc_rebalance_t kind, const kc_topic_partition_t *tps, size_t n)
{
    member_t *m = o;
    if (atomic_fetch_add(&m->reb_in, 1) != 0)
        atomic_fetch_add(&m->reb_overlap, 1);
    if (kc_worker_id() < 0)
        atomic_fetch_add(&m->reb_off_worker, 1);
    unsigned set = 0;
    for (size_t i = 0; i < n; i++)
        set |= 1u << tps[i].partition;
    put(m, 'R', -1, (int)kind, set);
    kc_test_sleep_ms(20); /* a slow handler: the per-partition callbacks must wait for it */
    put(m, 'E', -1, (int)kind, set);
    atomic_fetch_sub(&m->reb_in, 1);
}

static void member_start(member_t *m, const char *group, const char *topic, const char *protocol,
                         const char *const *extra)
{
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    kc_test_conf_set(conf, "bootstrap.servers", kc_test_env("KC_BOOTSTRAP"));
    kc_test_conf_set(conf, "group.id", group);
    kc_test_conf_set(conf, "group.protocol", protocol);
    /* only the revocation commits; many small batches, so callbacks are in flight at a move */
    kc_test_conf_set_all(conf, "auto.offset.reset=earliest;auto.commit.interval.ms=600000;"
                               "fetch.max.wait.ms=100;max.partition.fetch.bytes=2048;"
                               "callback.batch.max.records=10;worker.threads=3");
    for (size_t i = 0; extra && extra[i]; i += 2)
        kc_test_conf_set(conf, extra[i], extra[i + 1]);
    kc_callbacks_t cbs = {.size = sizeof cbs,
                          .on_assign = on_assign,
                          .on_records = on_records,
                          .on_revoke = on_revoke,
                          .on_lost = on_lost,
                          .on_rebalance = on_rebalance,
                          .opaque = m};
    m->c = kc_test_consumer(conf, &cbs);
    const char *topics[] = {topic};
    if (kc_subscribe(m->c, topics, 1, &err) != KC_OK)
        fail_msg("kc_subscribe: %s", err.msg);
}

static int held_count(member_t *m)
{
    pthread_mutex_lock(&m->mu);
    int n = 0;
    for (int i = 0; i < NP; i++)
        n += m->held[i] > 0;
    pthread_mutex_unlock(&m->mu);
    return n;
}

static long delivered_now(void)
{
    pthread_mutex_lock(&seen_mu);
    long n = delivered;
    pthread_mutex_unlock(&seen_mu);
    return n;
}

/* Reads m's log against the per-partition order above; fails with the first violation. Counts
 * the on_rebalance calls of each kind in r[]. States: NONE → (on_assign) PENDING → (ASSIGN
 * begins) ASSIGNING → (it ends) ACTIVE → (REVOKE begins) REVOKING_CB → (it ends) REVOKING →
 * (on_revoke) NONE; GHOST: named by an ASSIGN before any on_assign (revoked before it ran). */
enum { ST_ASSIGNING = ST_REVOKING + 1, ST_REVOKING_CB };
static void check_log(member_t *m, const char *who, int r[3])
{
    int st[NP] = {0};
    for (int i = 0; i < m->n; i++) {
        const ent_t *e = &m->log[i];
        int p = e->partition;
        switch (e->what) {
        case 'A':
            if (st[p] != ST_NONE)
                fail_msg("%s: entry %d: on_assign of %d in state %d", who, i, p, st[p]);
            st[p] = ST_PENDING;
            break;
        case 'd':
        case 'D':
            if (st[p] != ST_ACTIVE)
                fail_msg("%s: entry %d: on_records of %d %s outside its ASSIGN..REVOKE calls "
                         "(state %d)",
                         who, i, p, e->what == 'd' ? "began" : "ended", st[p]);
            break;
        case 'V':
        case 'L':
            if (st[p] != ST_REVOKING)
                fail_msg("%s: entry %d: on_%s of %d before on_rebalance named it (state %d)", who,
                         i, e->what == 'V' ? "revoke" : "lost", p, st[p]);
            st[p] = ST_NONE;
            break;
        case 'R':
        case 'E':
            if (e->what == 'R')
                r[e->kind]++;
            for (int q = 0; q < NP; q++) {
                if (!(e->set & (1u << q)))
                    continue;
                int want, next;
                if (e->kind == KC_REBALANCE_ASSIGN && e->what == 'R') {
                    if (st[q] == ST_NONE) { /* revoked before its on_assign ran */
                        st[q] = ST_GHOST;
                        continue;
                    }
                    want = ST_PENDING, next = ST_ASSIGNING;
                } else if (e->kind == KC_REBALANCE_ASSIGN) {
                    if (st[q] == ST_GHOST)
                        continue;
                    want = ST_ASSIGNING, next = ST_ACTIVE;
                } else if (e->what == 'R') {
                    if (st[q] == ST_GHOST) {
                        st[q] = ST_NONE;
                        continue;
                    }
                    want = ST_ACTIVE, next = ST_REVOKING_CB;
                } else {
                    if (st[q] == ST_NONE)
                        continue; /* a ghost's */
                    want = ST_REVOKING_CB, next = ST_REVOKING;
                }
                if (st[q] != want)
                    fail_msg("%s: entry %d: on_rebalance %s (%s) names %d in state %d", who, i,
                             e->kind == KC_REBALANCE_ASSIGN ? "ASSIGN"
                             : e->kind == KC_REBALANCE_LOST ? "LOST"
                                                            : "REVOKE",
                             e->what == 'R' ? "begins" : "ends", q, st[q]);
                st[q] = next;
            }
            break;
        }
    }
    for (int p = 0; p < NP; p++)
        if (st[p] != ST_NONE)
            fail_msg("%s: partition %d ends in state %d after kc_close", who, p, st[p]);
    if (m->n >= LOGN)
        fail_msg("%s: log full", who);
}

static void run(const char *protocol, const char *const *extra, const char *tag)
{
    char topic[64], group[64];
    snprintf(topic, sizeof topic, "kc-rcb-%s-%d", tag, (int)getpid());
    snprintf(group, sizeof group, "kc-rcb-%s-%d", tag, (int)getpid());
    mb_topic(topic, NP, RECORDS / NP * NP);
    memset(seen, 0, sizeof seen);
    delivered = dups = 0;
    static member_t a, b;
    kc_error_t err;

    member_start(&a, group, topic, protocol, extra);
    int64_t end = kc_test_now_ms() + 60000 * kc_test_time_scale();
    while ((held_count(&a) < NP || delivered_now() < 200) && kc_test_now_ms() < end)
        kc_test_sleep_ms(50);
    assert_int_equal(held_count(&a), NP);

    member_start(&b, group, topic, protocol, extra);
    end = kc_test_now_ms() + 60000 * kc_test_time_scale();
    while ((held_count(&b) == 0 || held_count(&a) + held_count(&b) != NP) && kc_test_now_ms() < end)
        kc_test_sleep_ms(50);
    if (held_count(&b) == 0 || held_count(&a) + held_count(&b) != NP)
        fail_msg("%s: B never got a share (A %d, B %d)", protocol, held_count(&a), held_count(&b));
    long at_join = delivered_now();
    /* B works on its share before it leaves: its revocation meets record callbacks in flight */
    end = kc_test_now_ms() + 30000 * kc_test_time_scale();
    while (kc_test_now_ms() < end) {
        pthread_mutex_lock(&b.mu);
        int views = 0;
        for (int i = 0; i < b.n; i++)
            views += b.log[i].what == 'D';
        pthread_mutex_unlock(&b.mu);
        if (views >= 5)
            break;
        kc_test_sleep_ms(20);
    }

    assert_int_equal(kc_close(b.c, 30000, &err), KC_OK);
    end = kc_test_now_ms() + 60000 * kc_test_time_scale();
    while ((held_count(&a) < NP || delivered_now() < RECORDS) && kc_test_now_ms() < end)
        kc_test_sleep_ms(50);
    assert_int_equal(held_count(&a), NP);
    unsigned a_held_at_close = (1u << NP) - 1;
    assert_int_equal(kc_close(a.c, 30000, &err), KC_OK);

    int ra[3] = {0}, rb[3] = {0};
    pthread_mutex_lock(&a.mu);
    pthread_mutex_lock(&b.mu);
    printf("# %s: %ld delivered (%ld by B's join), %ld twice; log entries A %d, B %d\n", protocol,
           delivered, at_join, dups, a.n, b.n);
    check_log(&a, "A", ra);
    check_log(&b, "B", rb);
    /* kc_close's revocation: the last on_rebalance of each member is a REVOKE, and A's (which
     * held every partition when it closed) names all of them */
    for (member_t *m = &a; m; m = m == &a ? &b : NULL) {
        int last = -1;
        for (int i = 0; i < m->n; i++)
            if (m->log[i].what == 'R')
                last = i;
        assert_true(last >= 0);
        assert_int_equal(m->log[last].kind, KC_REBALANCE_REVOKE);
        assert_true(m->log[last].set != 0);
        if (m == &a)
            assert_int_equal(m->log[last].set, a_held_at_close);
    }
    printf("# %s: A %d/%d/%d, B %d/%d/%d on_rebalance (assign/revoke/lost)\n", protocol, ra[0],
           ra[1], ra[2], rb[0], rb[1], rb[2]);
    pthread_mutex_unlock(&b.mu);
    pthread_mutex_unlock(&a.mu);
    assert_true(ra[KC_REBALANCE_ASSIGN] >= 1 && ra[KC_REBALANCE_REVOKE] >= 1);
    assert_true(rb[KC_REBALANCE_ASSIGN] >= 1 && rb[KC_REBALANCE_REVOKE] >= 1);
    assert_int_equal(ra[KC_REBALANCE_LOST] + rb[KC_REBALANCE_LOST], 0);
    assert_int_equal(atomic_load(&a.reb_overlap) + atomic_load(&b.reb_overlap), 0);
    assert_int_equal(atomic_load(&a.reb_off_worker) + atomic_load(&b.reb_off_worker), 0);
    assert_int_equal(delivered, RECORDS);
    assert_int_equal(dups, 0);
    kc_destroy(b.c);
    kc_destroy(a.c);
}

static void classic_eager(void **state)
{
    (void)state;
    const char *extra[] = {"partition.assignment.strategy", "range", "heartbeat.interval.ms", "500",
                           NULL};
    run("classic", extra, "ce");
}

static void classic_cooperative(void **state)
{
    (void)state;
    const char *extra[] = {"partition.assignment.strategy", "cooperative-sticky",
                           "heartbeat.interval.ms", "500", NULL};
    run("classic", extra, "cc");
}

static void kip848(void **state)
{
    (void)state;
    run("consumer", NULL, "cg");
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (getenv("KC_TEST_FILTER")) /* one case by name */
        cmocka_set_test_filter(getenv("KC_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(classic_eager),
        cmocka_unit_test(classic_cooperative),
        cmocka_unit_test(kip848),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
