/* Prints, one hex line per scenario of classic_subscription.cases, the JoinGroup protocol
 * metadata kconsume's classic member sends (engine/group/classic/member:
 * kc_classic_encode_subscription) for the scenario's assignor, topics, owned partitions,
 * generation, rack and last assignment. classic_subscription.test.sh compares the lines with
 * Java's. Single-threaded tool. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/classic/member.h"

static int32_t no_topics(void *ctx, const char *t)
{
    (void)ctx;
    (void)t;
    return 0;
}

static int add_tps(kc_classic_t *m, kc_tpset_t *s, char *spec)
{
    for (char *tp = strtok(spec, ","); tp; tp = strtok(NULL, ",")) {
        char *dash = strrchr(tp, '-');
        if (!dash)
            return -1;
        *dash = 0;
        const kc_gtopic_t *t = kc_gtopics_name(&m->interned, tp, -1);
        if (!t || kc_tpset_add(s, t, atoi(dash + 1)))
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    FILE *f = argc == 2 ? fopen(argv[1], "r") : NULL;
    if (!f) {
        fprintf(stderr, "usage: classic_sub CASES\n");
        return 2;
    }
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!line[0] || line[0] == '#')
            continue;
        char *fld[7];
        char *p = line;
        for (int i = 0; i < 7; i++) {
            fld[i] = p;
            p = strchr(p, '|');
            if (p)
                *p++ = 0;
            else if (i < 6)
                return fprintf(stderr, "bad case\n"), 1;
        }
        kc_classic_config_t c = {0};
        c.group_id = "g";
        int a = kc_assignor_from_name(fld[0]);
        if (a < 0)
            return fprintf(stderr, "unknown assignor %s\n", fld[0]), 1;
        c.assignors[0] = (kc_assignor_t)a;
        c.n_assignors = 1;
        c.session_timeout_ms = 45000;
        c.heartbeat_interval_ms = 3000;
        c.rack = fld[4][0] ? fld[4] : NULL;
        kc_classic_t m;
        kc_error_t e;
        if (kc_classic_init(&m, &c, no_topics, NULL, &e))
            return fprintf(stderr, "%s\n", e.msg), 1;
        const char *topics[16];
        size_t nt = 0;
        for (char *t = strtok(fld[1], ","); t && nt < 16; t = strtok(NULL, ","))
            topics[nt++] = t;
        if (kc_classic_subscribe(&m, topics, nt, &e) || add_tps(&m, &m.rc.owned, fld[2]))
            return fprintf(stderr, "bad topics/owned\n"), 1;
        m.generation = atoi(fld[3]);
        if (strcmp(fld[5], "none") != 0) {
            if (add_tps(&m, &m.last_assigned, fld[5]))
                return fprintf(stderr, "bad last assignment\n"), 1;
            m.last_assigned_gen = atoi(fld[6]);
        }
        kc_wbuf_t w = {0};
        if (kc_classic_encode_subscription(&m, (kc_assignor_t)a, &w, &e))
            return fprintf(stderr, "%s\n", e.msg), 1;
        for (size_t i = 0; i < w.len; i++)
            printf("%02x", w.data[i]);
        printf("\n");
        kc_wbuf_free(&w);
        kc_classic_free(&m);
    }
    fclose(f);
    return 0;
}
