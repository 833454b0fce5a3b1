/* A share member killed while it holds acquired records (tests/support/share_driver.c, real
 * share-enabled broker): the child process joins, acquires records of a 1-partition topic, decides
 * on them without its acknowledgements ever leaving (they wait for the next ShareFetch, which never
 * comes), reports which records it held through a pipe, and then
 * - is killed with SIGKILL (its connections close: the broker releases its records at once), or
 * - is frozen with SIGSTOP (its connections stay open: the records come back only when the
 *   broker's record lock, 10 s in the testkit, or the member's session, 6 s, runs out).
 * A second member then gets every one of those records again, with delivery count 2, and every
 * record of the topic is accepted exactly once, by it.
 * Needs KC_SHARE_BOOTSTRAP, KC_SHARE_CLUSTER_DIR and KC_TESTKIT (tests/run-suite sets them).
 * kc-test-label: share */
#include "kc_test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "share_driver.h"

#define RECORDS 300

typedef struct held {
    int n;
    int32_t index[RECORDS];
} held_t;

static kc_share_ack_type_t hold(void *ctx, kc_sd_member_t *m, int64_t index, int16_t count)
{
    (void)m;
    (void)count;
    held_t *h = ctx;
    if (index >= 0 && index < RECORDS && h->n < RECORDS)
        h->index[h->n++] = (int32_t)index;
    return KC_SHARE_ACK_ACCEPT; /* queued, never sent: the process dies first */
}

typedef struct after {
    int accepted[RECORDS];
    int16_t count[RECORDS];
} after_t;

static kc_share_ack_type_t accept_rec(void *ctx, kc_sd_member_t *m, int64_t index, int16_t count)
{
    (void)m;
    after_t *a = ctx;
    if (index >= 0 && index < RECORDS) {
        a->accepted[index]++;
        a->count[index] = count;
    }
    return KC_SHARE_ACK_ACCEPT;
}

/* freeze: SIGSTOP instead of SIGKILL, so the member's connections stay open and only the
 * broker's clocks (record lock, member session) can give its records back. */
static void run(bool freeze)
{
    char group[64], prefix[32];
    snprintf(prefix, sizeof prefix, "kc-share-%s", freeze ? "frozen" : "killed");
    snprintf(group, sizeof group, "%s-g-%d", prefix, (int)getpid());
    kc_sd_setup(prefix, 1, group);
    pid_t producer = kc_sd_produce_start(RECORDS);
    while (!kc_sd_produce_done(producer))
        usleep(50 * 1000);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(fds[0]);
        static held_t h;
        kc_sd_member_t m;
        kc_sd_start(&m, 0, group, hold, &h);
        int64_t end = kc_sd_now_ms() + 30000;
        while (h.n == 0 && kc_sd_now_ms() < end)
            kc_sd_step(&m);
        ssize_t w = write(fds[1], &h, sizeof h);
        if (w != (ssize_t)sizeof h)
            _exit(1);
        for (;;)
            pause(); /* holding the records, its sockets open, until killed or stopped */
    }
    close(fds[1]);
    held_t *h = calloc(1, sizeof *h);
    assert_non_null(h);
    size_t got = 0;
    while (got < sizeof *h) {
        ssize_t r = read(fds[0], (char *)h + got, sizeof *h - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fds[0]);
    int st;
    if (!freeze) {
        kill(child, SIGKILL);
        waitpid(child, &st, 0);
    }
    assert_int_equal(got, sizeof *h);
    if (freeze)
        kill(child, SIGSTOP);
    print_message("the %s member held %d record(s)\n", freeze ? "frozen" : "killed", h->n);
    assert_true(h->n > 0);

    after_t *a = calloc(1, sizeof *a);
    assert_non_null(a);
    kc_sd_member_t m;
    kc_sd_start(&m, 1, group, accept_rec, a);
    int64_t t0 = kc_sd_now_ms(), end = t0 + 60000;
    int done = 0;
    while (kc_sd_now_ms() < end && done < RECORDS) {
        kc_sd_step(&m);
        done = 0;
        for (int i = 0; i < RECORDS; i++)
            done += a->accepted[i] > 0;
    }
    int64_t took = kc_sd_now_ms() - t0;
    kc_sd_close(&m);
    if (freeze) {
        kill(child, SIGKILL);
        waitpid(child, &st, 0);
    }
    int back_at_two = 0, twice = 0;
    for (int i = 0; i < h->n; i++)
        back_at_two += a->accepted[h->index[i]] == 1 && a->count[h->index[i]] == 2;
    for (int i = 0; i < RECORDS; i++)
        twice += a->accepted[i] > 1;
    print_message("afterwards: %d of %d record(s) accepted in %lld ms; of the %d held, %d "
                  "came back with delivery count 2; %d accepted twice\n",
                  done, RECORDS, (long long)took, h->n, back_at_two, twice);
    assert_int_equal(done, RECORDS);
    assert_int_equal(back_at_two, h->n);
    assert_int_equal(twice, 0);
    assert_int_equal(m.ack_failed, 0);
    if (freeze) /* nothing but a broker clock gave them back: not at once */
        assert_true(took >= 5000);
    free(a);
    free(h);
}

static void killed_member_records_come_back(void **state)
{
    (void)state;
    run(false);
}

static void frozen_member_records_come_back_after_the_lock(void **state)
{
    (void)state;
    run(true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(killed_member_records_come_back),
        cmocka_unit_test(frozen_member_records_come_back_after_the_lock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
