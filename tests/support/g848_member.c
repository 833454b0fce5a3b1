/* Member processes and log analysis for the KIP-848 acceptance tests: see g848_member.h.
 * Owner: the parent test's thread; in a member process the callbacks (workers) only write. */
#include "g848_member.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kc_test.h"
#include "kconsume.h"

int64_t kc_gm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- the member process ------------------------------------------------------------------- */

static int g_fd = -1;
static volatile sig_atomic_t g_stop;

static void logline(const char *fmt, ...)
{
    char b[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof b - 1) { /* cut, but still a line of its own */
        n = (int)sizeof b - 1;
        b[n - 1] = '\n';
    }
    /* One write per line with O_APPEND: a killed member leaves only whole lines. */
    if (write(g_fd, b, (size_t)n) < 0)
        _exit(3);
}

static void m_assign(void *o, kc_part_t *p)
{
    (void)o;
    int64_t t0 = kc_gm_now_ns();
    logline("A %s %d %lld %lld\n", p->topic, (int)p->partition, (long long)t0,
            (long long)kc_gm_now_ns());
}

static kc_cb_result_t m_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o;
    int64_t t0 = kc_gm_now_ns(), first = -1, last = -1, n = 0;
    const kc_record_t *r;
    while ((r = kc_records_next(b))) {
        int64_t off = kc_record_offset(r);
        if (first < 0)
            first = off;
        if (off != last + 1 && last >= 0) { /* a gap: log what came so far as its own line */
            logline("R %s %d %lld %lld %lld %lld %lld\n", p->topic, (int)p->partition,
                    (long long)t0, (long long)kc_gm_now_ns(), (long long)first, (long long)last,
                    (long long)n);
            first = off;
            n = 0;
        }
        last = off;
        n++;
    }
    /* KC_GM_SLOW_MS: the first callback of the process overruns (max.poll.interval.ms test). */
    static _Atomic int slowed;
    const char *slow = getenv("KC_GM_SLOW_MS");
    if (slow && !atomic_exchange(&slowed, 1)) {
        long ms = atol(slow);
        struct timespec st = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&st, NULL);
        logline("W %s %d %lld %lld\n", p->topic, (int)p->partition, (long long)t0,
                (long long)kc_gm_now_ns());
    }
    /* Some work, so callbacks have a width the overlap check can catch. */
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
    if (n)
        logline("R %s %d %lld %lld %lld %lld %lld\n", p->topic, (int)p->partition, (long long)t0,
                (long long)kc_gm_now_ns(), (long long)first, (long long)last, (long long)n);
    return KC_CB_CONTINUE;
}

static void m_revoke(void *o, kc_part_t *p)
{
    (void)o;
    int64_t t0 = kc_gm_now_ns();
    /* A slow flush: an acknowledgement sent before on_revoke returned would let the next owner
     * start inside this window, and the ownership/overlap checks would see it. */
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    logline("V %s %d %lld %lld\n", p->topic, (int)p->partition, (long long)t0,
            (long long)kc_gm_now_ns());
}

static void m_lost(void *o, kc_part_t *p)
{
    (void)o;
    int64_t t0 = kc_gm_now_ns();
    logline("L %s %d %lld %lld\n", p->topic, (int)p->partition, (long long)t0,
            (long long)kc_gm_now_ns());
}

static void m_event(void *o, const kc_event_t *ev)
{
    (void)o;
    if (ev->type == KC_EVENT_ERROR)
        logline("E %d %lld %s\n", (int)ev->error->code, (long long)kc_gm_now_ns(), ev->error->msg);
    else if (ev->type == KC_EVENT_STATS) {
        /* Only the "group" object: the whole stats JSON (brokers, partitions, workers) is longer
         * than the log's line buffers, and the checks read the group's state and assignment. */
        const char *g = strstr(ev->json, "\"group\":");
        if (!g)
            return;
        g += 8;
        int depth = 0;
        const char *e = g;
        for (; *e; e++) {
            if (*e == '{' || *e == '[')
                depth++;
            else if ((*e == '}' || *e == ']') && --depth == 0)
                break;
        }
        if (*e)
            logline("S %lld %.*s\n", (long long)kc_gm_now_ns(), (int)(e - g + 1), g);
    }
}

static void on_term(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void setc(kc_conf_t *c, const char *k, const char *v)
{
    kc_error_t e;
    if (kc_conf_set(c, k, v, &e) != KC_OK) {
        logline("E %d 0 conf %s: %s\n", (int)e.code, k, e.msg);
        _exit(4);
    }
}

void kc_gm_maybe_member(int argc, char **argv)
{
    if (argc < 6 || strcmp(argv[1], "member") != 0)
        return;
    g_fd = open(argv[5], O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (g_fd < 0)
        _exit(5);
    struct sigaction sa = {0};
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    kc_conf_t *conf = kc_conf_new();
    setc(conf, "bootstrap.servers", argv[2]);
    setc(conf, "group.id", argv[3]);
    setc(conf, "group.protocol", "consumer");
    setc(conf, "auto.offset.reset", "earliest");
    setc(conf, "worker.threads", "2");
    setc(conf, "statistics.interval.ms", "200");
    setc(conf, "enable.auto.commit", "true");
    setc(conf, "auto.commit.interval.ms", "500");
    setc(conf, "callback.batch.max.records", "100"); /* more, shorter callbacks to check */
    if (getenv("KC_GM_MAX_POLL_MS"))
        setc(conf, "max.poll.interval.ms", getenv("KC_GM_MAX_POLL_MS"));
    if (argc > 6 && *argv[6])
        setc(conf, "group.instance.id", argv[6]);
    /* KC_GM_CONF="k=v;k=v" overrides the above (group.protocol=classic, its assignors). */
    char *extra = getenv("KC_GM_CONF") ? strdup(getenv("KC_GM_CONF")) : NULL;
    char *save = NULL;
    for (char *kv = extra ? strtok_r(extra, ";", &save) : NULL; kv;
         kv = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(kv, '=');
        if (eq) {
            *eq = 0;
            setc(conf, kv, eq + 1);
        }
    }
    free(extra);
    kc_callbacks_t cbs = {.on_assign = m_assign,
                          .on_records = m_records,
                          .on_revoke = m_revoke,
                          .on_lost = m_lost,
                          .on_event = m_event};
    kc_consumer_t *c = NULL;
    kc_error_t err;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK) {
        logline("E %d 0 new: %s\n", (int)err.code, err.msg);
        _exit(6);
    }
    char *sub = strdup(argv[4]);
    const char *topics[16];
    size_t n = 0;
    for (char *s = strtok(sub, ","); s && n < 16; s = strtok(NULL, ","))
        topics[n++] = s;
    if (kc_subscribe(c, topics, n, &err) != KC_OK) {
        logline("E %d 0 subscribe: %s\n", (int)err.code, err.msg);
        _exit(7);
    }
    while (!g_stop) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kc_err_t rc = kc_close(c, 15000, &err);
    logline("X %d %lld %s\n", (int)rc, (long long)kc_gm_now_ns(), rc == KC_OK ? "" : err.msg);
    kc_destroy(c);
    free(sub);
    _exit(rc == KC_OK ? 0 : 2);
}

/* ---- the parent --------------------------------------------------------------------------- */

pid_t kc_gm_spawn(const char *group, const char *sub, const char *log, const char *instance)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* A member dies with the test: an assertion that ends the test early must not leave
         * members (a frozen one among them) consuming and loading the machine for the tests after.
         * The exec keeps the signal; the check covers a parent that died before the prctl. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(127);
        char err[600];
        snprintf(err, sizeof err, "%s.err", log);
        int fd = open(err, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execl("/proc/self/exe", "g848-member", "member", kc_test_env("KC_BOOTSTRAP"), group, sub,
              log, instance ? instance : "", (char *)NULL);
        _exit(127);
    }
    return pid;
}

int kc_gm_stop(pid_t pid)
{
    kill(pid, SIGTERM);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void kc_gm_kill9(pid_t pid)
{
    kill(pid, SIGKILL);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
}

int kc_gm_testkit(const char *cmd)
{
    char line[1024];
    snprintf(line, sizeof line, "%s %s --dir %s >/dev/null 2>&1", kc_test_env("KC_TESTKIT"), cmd,
             kc_test_env("KC_CLUSTER_DIR"));
    return system(line);
}

static void push(kc_gm_log_t *lg, const kc_gm_ev_t *e)
{
    if (lg->n == lg->cap) {
        lg->cap = lg->cap ? lg->cap * 2 : 1024;
        lg->ev = realloc(lg->ev, lg->cap * sizeof *lg->ev);
        assert_non_null(lg->ev);
    }
    lg->ev[lg->n++] = *e;
}

void kc_gm_load(kc_gm_log_t *lg, const char *path, int member)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        kc_gm_ev_t e = {0};
        e.kind = line[0];
        e.member = member;
        long long a = 0, b = 0, x = 0, y = 0, z = 0;
        int p = 0, off = 0;
        switch (e.kind) {
        case 'A':
        case 'V':
        case 'L':
        case 'W':
            if (sscanf(line + 2, "%95s %d %lld %lld", e.topic, &p, &a, &b) != 4)
                continue;
            break;
        case 'R':
            if (sscanf(line + 2, "%95s %d %lld %lld %lld %lld %lld", e.topic, &p, &a, &b, &x, &y,
                       &z) != 7)
                continue;
            break;
        case 'E':
            if (sscanf(line + 2, "%ld %lld %n", &e.code, &a, &off) < 2)
                continue;
            snprintf(e.text, sizeof e.text, "%s", line + 2 + off);
            b = a;
            break;
        case 'S':
            if (sscanf(line + 2, "%lld %n", &a, &off) < 1)
                continue;
            snprintf(e.text, sizeof e.text, "%s", line + 2 + off);
            b = a;
            break;
        case 'X':
            if (sscanf(line + 2, "%ld %lld %n", &e.code, &a, &off) < 2)
                continue;
            snprintf(e.text, sizeof e.text, "%s", line + 2 + off);
            b = a;
            break;
        default:
            continue;
        }
        e.partition = p;
        e.start = a;
        e.end = b;
        e.first = x;
        e.last = y;
        e.n = z;
        push(lg, &e);
    }
    fclose(f);
}

void kc_gm_free(kc_gm_log_t *lg)
{
    free(lg->ev);
    memset(lg, 0, sizeof *lg);
}

typedef struct own {
    int member, part;
    int64_t from, to;
} own_t;

static int part_index(char parts[][96], int nparts, const char *topic, int32_t p)
{
    char k[160];
    snprintf(k, sizeof k, "%s/%d", topic, (int)p);
    for (int i = 0; i < nparts; i++)
        if (strcmp(parts[i], k) == 0)
            return i;
    return -1;
}

kc_gm_sample_result_t kc_gm_sample(const kc_gm_log_t *lg, int members, const int64_t *death,
                                   char parts[][96], int nparts, int64_t from, int64_t to,
                                   int64_t step_ns, int64_t settle_from)
{
    kc_gm_sample_result_t res = {0};
    own_t *iv = calloc(lg->n + 1, sizeof *iv);
    size_t ni = 0;
    assert_non_null(iv);
    /* Open intervals per (member, part): the index of the open one, -1 when none. */
    int *open = malloc(sizeof(int) * (size_t)(members * nparts));
    for (int i = 0; i < members * nparts; i++)
        open[i] = -1;
    for (size_t i = 0; i < lg->n; i++) {
        const kc_gm_ev_t *e = &lg->ev[i];
        if (e->kind != 'A' && e->kind != 'V' && e->kind != 'L')
            continue;
        int pi = part_index(parts, nparts, e->topic, e->partition);
        if (pi < 0 || e->member >= members)
            continue;
        int *o = &open[e->member * nparts + pi];
        if (e->kind == 'A') {
            iv[ni] = (own_t){e->member, pi, e->start, INT64_MAX};
            *o = (int)ni++;
        } else if (*o >= 0) {
            iv[*o].to = e->end;
            *o = -1;
        }
    }
    for (size_t i = 0; i < ni; i++)
        if (iv[i].to == INT64_MAX && death && death[iv[i].member] != INT64_MAX)
            iv[i].to = death[iv[i].member];
    int *owners = calloc((size_t)nparts, sizeof *owners);
    for (int64_t t = from; t <= to; t += step_ns) {
        memset(owners, 0, sizeof *owners * (size_t)nparts);
        for (size_t i = 0; i < ni; i++)
            if (iv[i].from <= t && t <= iv[i].to)
                owners[iv[i].part]++;
        res.samples++;
        bool uncovered = false;
        for (int p = 0; p < nparts; p++) {
            if (owners[p] > 1 && owners[p] - 1 > res.max_intersection) {
                res.max_intersection = owners[p] - 1;
                snprintf(res.first_conflict, sizeof res.first_conflict, "%s: %d owners at t=%lld",
                         parts[p], owners[p], (long long)t);
            }
            uncovered |= owners[p] == 0;
        }
        if (t >= settle_from && uncovered)
            res.uncovered_after_settle++;
    }
    free(owners);
    free(open);
    free(iv);
    return res;
}

static int ev_cmp(const void *x, const void *y)
{
    const kc_gm_ev_t *a = *(const kc_gm_ev_t *const *)x, *b = *(const kc_gm_ev_t *const *)y;
    int c = strcmp(a->topic, b->topic);
    if (c)
        return c;
    if (a->partition != b->partition)
        return a->partition < b->partition ? -1 : 1;
    return (a->start > b->start) - (a->start < b->start);
}

long kc_gm_overlaps(const kc_gm_log_t *lg, char *why, size_t cap)
{
    const kc_gm_ev_t **v = calloc(lg->n + 1, sizeof *v);
    size_t m = 0;
    assert_non_null(v);
    for (size_t i = 0; i < lg->n; i++)
        if (strchr("ARVL", lg->ev[i].kind))
            v[m++] = &lg->ev[i];
    qsort(v, m, sizeof *v, ev_cmp);
    long n = 0;
    /* Sorted by partition and start: only the following intervals that start before this one
     * ends can overlap it (one member's own callbacks never overlap, so the scan is short). */
    for (size_t i = 0; i < m; i++) {
        const kc_gm_ev_t *a = v[i];
        for (size_t j = i + 1; j < m; j++) {
            const kc_gm_ev_t *b = v[j];
            if (b->partition != a->partition || strcmp(a->topic, b->topic) != 0 ||
                b->start > a->end)
                break;
            if (b->member == a->member)
                continue;
            if (!n && why)
                snprintf(why, cap, "%s[%d]: member %d %c [%lld,%lld] vs member %d %c [%lld,%lld]",
                         a->topic, (int)a->partition, a->member, a->kind, (long long)a->start,
                         (long long)a->end, b->member, b->kind, (long long)b->start,
                         (long long)b->end);
            n++;
        }
    }
    free(v);
    return n;
}
