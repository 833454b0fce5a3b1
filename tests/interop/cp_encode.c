/* Interop helper for consumer_protocol.test.sh. Single-threaded.
 *   cp_encode encode CASES   prints "<kind> <hex>" per case, encoded by the generated codec
 *   cp_encode decode         reads "<kind> <hex>" lines, prints each decoded in case form
 * The case format is described at the top of consumer_protocol.cases. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"

static kc_arena_t arena;

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "cp_encode: %s: %s\n", what, detail);
    exit(1);
}

static char *dup_str(const char *s, size_t n)
{
    char *p = kc_arena_calloc(&arena, n + 1, 1);
    memcpy(p, s, n);
    return p;
}

/* The value after "name=" in field f. */
static const char *val(const char *f)
{
    const char *eq = strchr(f, '=');
    if (!eq)
        die("field without '='", f);
    return eq + 1;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static kc_bytes_t parse_hex(const char *s)
{
    if (strcmp(s, "null") == 0)
        return KC_BYTES_NULL;
    size_t n = strlen(s) / 2;
    uint8_t *p = kc_arena_calloc(&arena, n + 1, 1);
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            die("bad hex", s);
        p[i] = (uint8_t)(hi << 4 | lo);
    }
    return (kc_bytes_t){p, (int32_t)n};
}

static kc_str_t *parse_topics(const char *s, int32_t *count)
{
    kc_str_t *items = kc_arena_calloc(&arena, strlen(s) + 1, sizeof *items);
    *count = 0;
    while (*s) {
        size_t n = strcspn(s, ",");
        items[(*count)++] = (kc_str_t){dup_str(s, n), (int32_t)n};
        s += n + (s[n] == ',');
    }
    return items;
}

/* Every generated topic/partitions struct has this layout: one parser fills any of them. */
typedef struct {
    kc_str_t topic;
    struct {
        int32_t count;
        int32_t *items;
    } partitions;
} tp_t;
_Static_assert(sizeof(tp_t) == sizeof(kc_consumer_protocol_subscription_topic_partition_t) &&
                   sizeof(tp_t) == sizeof(kc_consumer_protocol_assignment_topic_partition_t) &&
                   sizeof(tp_t) == sizeof(kc_sticky_assignor_user_data_topic_assignment_t),
               "topic-partition layouts differ");

static tp_t *parse_parts(const char *s, int32_t *count)
{
    tp_t *items = kc_arena_calloc(&arena, strlen(s) + 1, sizeof *items);
    *count = 0;
    while (*s) {
        size_t n = strcspn(s, ";");
        const char *colon = memchr(s, ':', n);
        if (!colon)
            die("bad partitions", s);
        tp_t *tp = &items[(*count)++];
        tp->topic = (kc_str_t){dup_str(s, (size_t)(colon - s)), (int32_t)(colon - s)};
        tp->partitions.items = kc_arena_calloc(&arena, n, sizeof(int32_t));
        for (const char *p = colon + 1; p < s + n;) {
            tp->partitions.items[tp->partitions.count++] = (int32_t)strtol(p, (char **)&p, 10);
            if (*p == ',')
                p++;
        }
        s += n + (s[n] == ';');
    }
    return items;
}

static void print_hex(const char *kind, const kc_wbuf_t *w)
{
    printf("%s ", kind);
    for (size_t i = 0; i < w->len; i++)
        printf("%02x", w->data[i]);
    printf("\n");
}

static void encode_case(char *line)
{
    char *f[8] = {0};
    int n = 0;
    for (char *tok = strtok(line, "|"); tok && n < 8; tok = strtok(NULL, "|"))
        f[n++] = tok;
    /* strtok skips empty fields; the case format never has an empty field between bars. */
    kc_wbuf_t w = {0};
    kc_error_t err;
    kc_err_t rc;
    if (strcmp(f[0], "sub") == 0 && n == 7) {
        kc_consumer_protocol_subscription_t s;
        kc_consumer_protocol_subscription_init(&s);
        s.topics.items = parse_topics(val(f[2]), &s.topics.count);
        s.user_data = parse_hex(val(f[3]));
        s.owned_partitions.items = (void *)parse_parts(val(f[4]), &s.owned_partitions.count);
        s.generation_id = atoi(val(f[5]));
        const char *rack = val(f[6]);
        s.rack_id = strcmp(rack, "null") == 0 ? KC_STR_NULL : kc_str(rack);
        rc = kc_consumer_protocol_subscription_encode_versioned(&s, (int16_t)atoi(f[1]), &w, &err);
    } else if (strcmp(f[0], "assign") == 0 && n == 4) {
        kc_consumer_protocol_assignment_t a;
        kc_consumer_protocol_assignment_init(&a);
        a.assigned_partitions.items = (void *)parse_parts(val(f[2]), &a.assigned_partitions.count);
        a.user_data = parse_hex(val(f[3]));
        rc = kc_consumer_protocol_assignment_encode_versioned(&a, (int16_t)atoi(f[1]), &w, &err);
    } else if (strcmp(f[0], "sticky") == 0 && n == 3) {
        kc_sticky_assignor_user_data_t u;
        kc_sticky_assignor_user_data_init(&u);
        u.previous_assignment.items = (void *)parse_parts(val(f[2]), &u.previous_assignment.count);
        u.generation = atoi(f[1]);
        rc = kc_sticky_assignor_user_data_encode(&u, 1, &w, &err);
    } else {
        die("bad case", f[0]);
        return;
    }
    if (rc)
        die("encode", err.msg);
    print_hex(f[0], &w);
    kc_wbuf_free(&w);
}

static void print_bytes(kc_bytes_t b)
{
    if (b.len < 0) {
        printf("null");
        return;
    }
    for (int32_t i = 0; i < b.len; i++)
        printf("%02x", b.ptr[i]);
}

static void print_parts(const tp_t *tp, int32_t count)
{
    for (int32_t i = 0; i < count; i++) {
        printf("%s%.*s:", i ? ";" : "", (int)tp[i].topic.len, tp[i].topic.ptr);
        for (int32_t j = 0; j < tp[i].partitions.count; j++)
            printf("%s%d", j ? "," : "", (int)tp[i].partitions.items[j]);
    }
}

static void decode_line(const char *kind, const char *hex)
{
    kc_bytes_t b = parse_hex(hex);
    kc_rbuf_t r = kc_rbuf(b.ptr, (size_t)b.len);
    kc_error_t err;
    int16_t v;
    if (strcmp(kind, "sub") == 0) {
        kc_consumer_protocol_subscription_t s;
        if (kc_consumer_protocol_subscription_decode_versioned(&s, &v, &r, &arena, &err))
            die("decode", err.msg);
        printf("sub|%d|topics=", v);
        for (int32_t i = 0; i < s.topics.count; i++)
            printf("%s%.*s", i ? "," : "", (int)s.topics.items[i].len, s.topics.items[i].ptr);
        printf("|userdata=");
        print_bytes(s.user_data);
        printf("|owned=");
        print_parts((const tp_t *)s.owned_partitions.items, s.owned_partitions.count);
        printf("|gen=%d|rack=", (int)s.generation_id);
        if (s.rack_id.len < 0)
            printf("null");
        else
            printf("%.*s", (int)s.rack_id.len, s.rack_id.ptr);
    } else if (strcmp(kind, "assign") == 0) {
        kc_consumer_protocol_assignment_t a;
        if (kc_consumer_protocol_assignment_decode_versioned(&a, &v, &r, &arena, &err))
            die("decode", err.msg);
        printf("assign|%d|parts=", v);
        print_parts((const tp_t *)a.assigned_partitions.items, a.assigned_partitions.count);
        printf("|userdata=");
        print_bytes(a.user_data);
    } else if (strcmp(kind, "sticky") == 0) {
        kc_sticky_assignor_user_data_t u;
        /* As Java: V1 (with generation) first, V0 when V1 does not parse. */
        kc_rbuf_t r0 = r;
        if (kc_sticky_assignor_user_data_decode(&u, 1, &r, &arena, &err) ||
            kc_rbuf_remaining(&r) != 0) {
            r = r0;
            if (kc_sticky_assignor_user_data_decode(&u, 0, &r, &arena, &err))
                die("decode", err.msg);
        }
        printf("sticky|%d|parts=", (int)u.generation);
        print_parts((const tp_t *)u.previous_assignment.items, u.previous_assignment.count);
    } else {
        die("bad kind", kind);
    }
    if (kc_rbuf_remaining(&r) != 0)
        die("decode", "trailing bytes");
    printf("\n");
}

int main(int argc, char **argv)
{
    char line[4096];
    if (argc == 3 && strcmp(argv[1], "encode") == 0) {
        FILE *f = fopen(argv[2], "r");
        if (!f)
            die("open", argv[2]);
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = 0;
            if (line[0] && line[0] != '#')
                encode_case(line);
        }
        fclose(f);
    } else if (argc == 2 && strcmp(argv[1], "decode") == 0) {
        while (fgets(line, sizeof line, stdin)) {
            line[strcspn(line, "\n")] = 0;
            char *sp = strchr(line, ' ');
            if (!sp)
                die("bad input", line);
            *sp = 0;
            decode_line(line, sp + 1);
        }
    } else {
        fprintf(stderr, "usage: cp_encode encode CASES | cp_encode decode < LINES\n");
        return 2;
    }
    kc_arena_free(&arena);
    return 0;
}
