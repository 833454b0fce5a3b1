/* libFuzzer: the classic member's leader and follower paths with hostile member metadata and a
 * hostile assignment — what other members (any client) and the broker put in JoinGroup and
 * SyncGroup. Decoded subscriptions go through the assignors, so this also feeds them inputs no
 * well-behaved client sends. Single-threaded.
 * Input: [assignor 0-3][n members 0-7] n × ([u16 len][metadata]) then the SyncGroup assignment. */
#include <stdlib.h>
#include <string.h>

#include "group/classic/member.h"

/* Small partition counts keep one run's work bounded; the name decides, deterministically. */
static int32_t lookup(void *ctx, const char *t)
{
    (void)ctx;
    size_t n = strlen(t);
    return n ? (int32_t)((unsigned char)t[0] % 9) : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    if (len < 2)
        return 0;
    kc_classic_config_t c = {0};
    c.group_id = "g";
    c.assignors[0] = (kc_assignor_t)(data[0] % 4);
    c.n_assignors = 1;
    c.session_timeout_ms = 10000;
    c.heartbeat_interval_ms = 1000;
    c.commit_timeout_ms = 1000;
    c.auto_commit = true;
    size_t n = data[1] % 8, pos = 2;
    kc_classic_t m;
    kc_error_t e;
    if (kc_classic_init(&m, &c, lookup, NULL, &e))
        abort();
    const char *topics[] = {"a", "b"};
    kc_classic_subscribe(&m, topics, 2, &e);
    kc_classic_coordinator_known(&m, 0);
    kc_classic_out_t o;
    while (kc_classic_poll(&m, 0, &o))
        ;
    /* Exact-size heap copies, so ASan sees any read past a member's metadata. */
    kc_join_group_response_member_t mem[8];
    uint8_t *copies[9] = {0};
    char ids[8][4];
    size_t k = 0;
    for (; k < n && pos + 2 <= len; k++) {
        size_t ml = (size_t)data[pos] << 8 | data[pos + 1];
        pos += 2;
        if (ml > len - pos)
            ml = len - pos;
        copies[k] = malloc(ml ? ml : 1);
        if (ml)
            memcpy(copies[k], data + pos, ml);
        pos += ml;
        ids[k][0] = 'm', ids[k][1] = (char)('0' + k), ids[k][2] = 0;
        mem[k] = (kc_join_group_response_member_t){
            kc_str(ids[k]), KC_STR_NULL, {copies[k], (int32_t)ml}};
    }
    kc_join_group_response_t jr;
    kc_join_group_response_init(&jr);
    jr.generation_id = 1;
    jr.protocol_name = kc_str(kc_assignor_name(c.assignors[0]));
    jr.leader = kc_str("m0");
    jr.member_id = kc_str("m0");
    jr.members.count = (int32_t)k;
    jr.members.items = mem;
    kc_classic_join_response(&m, &jr, 1);
    size_t al = len - pos;
    copies[8] = malloc(al ? al : 1);
    if (al)
        memcpy(copies[8], data + pos, al);
    kc_sync_group_response_t sr;
    kc_sync_group_response_init(&sr);
    sr.assignment = (kc_bytes_t){copies[8], (int32_t)al};
    for (int i = 0; i < 16 && kc_classic_poll(&m, 2, &o); i++)
        if (o.kind == KC_CLASSIC_SEND_SYNC)
            kc_classic_sync_response(&m, &sr, 2);
        else if (o.kind == KC_CLASSIC_ASSIGN)
            kc_classic_action_done(&m, o.seq, 2);
    for (size_t i = 0; i < 9; i++)
        free(copies[i]);
    kc_classic_free(&m);
    return 0;
}
