/*
 * C side of tests/interop/assignors.test.sh: reads the case file AssignorDriver.java writes (the
 * format is described there), runs kconsume's four assignors over every case and prints the
 * results in the same canonical form as the Java driver, so the two outputs can be diffed.
 *
 * Owner: single-threaded test program.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/classic/assign/assign.h"

#define MAXM   1024
#define MAXT   64
#define MAXTOK 4096

typedef struct {
    char *id, *instance, *rack, *userdata;
    int gen;
    const char *topics[MAXT];
    size_t ntopics;
    kc_assign_tp_t *owned;
    size_t nowned;
    kc_assign_tp_t *prev;
    size_t nprev;
} cmember_t;

typedef struct {
    kc_assign_topic_t t;
    const char ***racks; /* [n][k] */
    size_t *nracks;
} ctopic_t;

static char *dupnull(const char *s)
{
    return strcmp(s, "-") == 0 ? NULL : strdup(s);
}

/* "t:p,t:p" into an array whose topic strings point into `s` (modified in place). */
static kc_assign_tp_t *parse_tps(char *s, size_t *n)
{
    *n = 0;
    if (strcmp(s, "-") == 0)
        return NULL;
    size_t cap = 1;
    for (char *p = s; *p; p++)
        cap += *p == ',';
    kc_assign_tp_t *v = calloc(cap, sizeof *v);
    for (char *save = NULL, *e = strtok_r(s, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(e, ':');
        *colon = '\0';
        v[(*n)++] = (kc_assign_tp_t){e, atoi(colon + 1)};
    }
    return v;
}

static void print_result(const char *id, const char *name, const cmember_t *ms, size_t nm,
                         kc_err_t rc, const kc_assign_result_t *r)
{
    printf("case %s %s\n", id, name);
    if (rc != KC_OK) {
        printf("ERROR\n");
        return;
    }
    for (size_t m = 0; m < nm; m++) {
        printf("%s ", ms[m].id);
        if (r->members[m].n == 0)
            printf("-");
        for (size_t i = 0; i < r->members[m].n; i++)
            printf("%s%s:%d", i ? "," : "", r->members[m].tps[i].topic,
                   (int)r->members[m].tps[i].partition);
        printf("\n");
    }
}

static void run_case(const char *id, cmember_t *ms, size_t nm, ctopic_t *ts, size_t nt)
{
    static kc_assign_member_t in_m[MAXM];
    kc_assign_topic_t in_t[MAXT];
    for (size_t t = 0; t < nt; t++)
        in_t[t] = ts[t].t;
    for (int a = 0; a < 4; a++) {
        for (size_t m = 0; m < nm; m++) {
            const cmember_t *c = &ms[m];
            const char *ud = c->userdata;
            kc_assign_member_t *x = &in_m[m];
            *x = (kc_assign_member_t){.member_id = c->id,
                                      .instance_id = c->instance,
                                      .rack = c->rack,
                                      .topics = c->topics,
                                      .n_topics = c->ntopics,
                                      .owned = c->owned,
                                      .n_owned = c->nowned,
                                      .generation = c->gen};
            if (!ud)
                continue;
            if (a == KC_ASSIGNOR_STICKY && ud[0] != 'c') {
                x->has_user_data = true;
                x->prev = c->prev;
                x->n_prev = c->nprev;
                x->prev_has_generation = ud[0] == 'g';
                x->prev_generation = ud[0] == 'g' ? atoi(ud + 1) : 0;
            } else if (a == KC_ASSIGNOR_COOPERATIVE_STICKY && ud[0] == 'c') {
                x->has_user_data = true;
                x->prev_has_generation = true;
                x->prev_generation = atoi(ud + 1);
            }
        }
        kc_assign_input_t in = {in_m, nm, in_t, nt};
        kc_assign_result_t r;
        kc_error_t err;
        kc_err_t rc = kc_assign_run((kc_assignor_t)a, &in, &r, &err);
        if (rc != KC_OK)
            fprintf(stderr, "case %s %s: %s\n", id, kc_assignor_name((kc_assignor_t)a), err.msg);
        print_result(id, kc_assignor_name((kc_assignor_t)a), ms, nm, rc, &r);
        kc_assign_result_free(&r);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CASES\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    char *line = NULL;
    size_t cap = 0;
    char id[256] = "";
    static cmember_t ms[MAXM];
    static ctopic_t ts[MAXT];
    size_t nm = 0, nt = 0;
    char **keep = NULL; /* lines whose memory the case points into */
    size_t nkeep = 0;
    while (getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        char *l = strdup(line);
        keep = realloc(keep, (nkeep + 1) * sizeof *keep);
        keep[nkeep++] = l;
        char *tok[MAXTOK];
        int n = 0;
        for (char *save = NULL, *e = strtok_r(l, " ", &save); e && n < MAXTOK;
             e = strtok_r(NULL, " ", &save))
            tok[n++] = e;
        if (n == 0)
            continue;
        if (strcmp(tok[0], "case") == 0) {
            snprintf(id, sizeof id, "%s", tok[1]);
            nm = nt = 0;
        } else if (strcmp(tok[0], "topic") == 0) {
            if (nt == MAXT || n > MAXTOK - 1) {
                fprintf(stderr, "assign_driver: case %s too large\n", id);
                return 1;
            }
            ctopic_t *t = &ts[nt++];
            *t = (ctopic_t){.t = {.name = tok[1], .n_partitions = atoi(tok[2])}};
            if (n > 3) {
                int np = t->t.n_partitions;
                t->racks = calloc((size_t)np, sizeof *t->racks);
                t->nracks = calloc((size_t)np, sizeof *t->nracks);
                for (int p = 0; p < np && 3 + p < n; p++) {
                    char *s = tok[3 + p];
                    if (strcmp(s, "-") == 0)
                        continue;
                    t->racks[p] = calloc(strlen(s) + 1, sizeof(char *));
                    for (char *save = NULL, *e = strtok_r(s, ",", &save); e;
                         e = strtok_r(NULL, ",", &save))
                        t->racks[p][t->nracks[p]++] = strcmp(e, "~") == 0 ? NULL : e;
                }
                t->t.replica_racks = (const char *const *const *)t->racks;
                t->t.n_replica_racks = t->nracks;
            }
        } else if (strcmp(tok[0], "member") == 0) {
            if (nm == MAXM || n < 8) {
                fprintf(stderr, "assign_driver: case %s: bad or too many members\n", id);
                return 1;
            }
            cmember_t *m = &ms[nm++];
            *m = (cmember_t){.id = strdup(tok[1]),
                             .instance = dupnull(tok[2]),
                             .rack = dupnull(tok[3]),
                             .gen = atoi(tok[4]),
                             .userdata = dupnull(tok[7])};
            if (strcmp(tok[5], "-") != 0)
                for (char *save = NULL, *e = strtok_r(tok[5], ",", &save); e && m->ntopics < MAXT;
                     e = strtok_r(NULL, ",", &save))
                    m->topics[m->ntopics++] = e;
            m->owned = parse_tps(tok[6], &m->nowned);
            if (m->userdata && m->userdata[0] != 'c') {
                char *colon = strchr(tok[7], ':');
                m->prev = parse_tps(colon + 1, &m->nprev);
            }
        } else if (strcmp(tok[0], "end") == 0) {
            run_case(id, ms, nm, ts, nt);
            for (size_t i = 0; i < nm; i++) {
                free(ms[i].id);
                free(ms[i].instance);
                free(ms[i].rack);
                free(ms[i].userdata);
                free(ms[i].owned);
                free(ms[i].prev);
            }
            for (size_t i = 0; i < nt; i++) {
                for (int p = 0; ts[i].racks && p < ts[i].t.n_partitions; p++)
                    free(ts[i].racks[p]);
                free(ts[i].racks);
                free(ts[i].nracks);
            }
            for (size_t i = 0; i < nkeep; i++)
                free(keep[i]);
            nkeep = 0;
            nm = nt = 0;
        }
    }
    for (size_t i = 0; i < nkeep; i++)
        free(keep[i]);
    free(keep);
    free(line);
    fclose(f);
    return 0;
}
