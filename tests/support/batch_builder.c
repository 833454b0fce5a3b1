/* Test-only v2 batch encoder; see batch_builder.h. Single-threaded test code. */
#include "batch_builder.h"

#include <lz4frame.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "batch/crc32c.h"

static void die(const char *what)
{
    fprintf(stderr, "batch_builder: %s\n", what);
    abort();
}

static void reserve(tb_buf_t *b, size_t n)
{
    if (b->len + n <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n)
        cap *= 2;
    b->p = realloc(b->p, cap);
    if (!b->p)
        die("out of memory");
    b->cap = cap;
}

void tb_put(tb_buf_t *b, const void *p, size_t n)
{
    reserve(b, n);
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
}

void tb_free(tb_buf_t *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

static void be(tb_buf_t *b, uint64_t v, int bytes)
{
    uint8_t t[8];
    for (int i = 0; i < bytes; i++)
        t[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
    tb_put(b, t, (size_t)bytes);
}

void tb_varint(tb_buf_t *out, int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    while (z >= 0x80) {
        uint8_t c = (uint8_t)(z | 0x80);
        tb_put(out, &c, 1);
        z >>= 7;
    }
    uint8_t c = (uint8_t)z;
    tb_put(out, &c, 1);
}

static void bytes_field(tb_buf_t *b, const void *p, int32_t len)
{
    if (!p) {
        tb_varint(b, -1);
        return;
    }
    tb_varint(b, len);
    tb_put(b, p, (size_t)len);
}

void tb_record(tb_buf_t *out, const tb_record_t *r)
{
    tb_buf_t body = {0};
    uint8_t attr = 0;
    tb_put(&body, &attr, 1);
    tb_varint(&body, r->ts_delta);
    tb_varint(&body, r->off_delta);
    bytes_field(&body, r->key, r->key_len);
    bytes_field(&body, r->value, r->value_len);
    tb_varint(&body, r->n_headers);
    for (int i = 0; i < r->n_headers; i++) {
        const tb_header_t *h = &r->headers[i];
        bytes_field(&body, h->key, (int32_t)strlen(h->key));
        bytes_field(&body, h->value, h->value_len);
    }
    tb_varint(out, (int64_t)body.len);
    tb_put(out, body.p, body.len);
    tb_free(&body);
}

static void gzip_c(tb_buf_t *out, const uint8_t *in, size_t len)
{
    z_stream zs = {0};
    if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        die("deflateInit2");
    size_t bound = deflateBound(&zs, (uLong)len) + 32;
    reserve(out, bound);
    zs.next_in = (Bytef *)in;
    zs.avail_in = (uInt)len;
    zs.next_out = out->p + out->len;
    zs.avail_out = (uInt)bound;
    if (deflate(&zs, Z_FINISH) != Z_STREAM_END)
        die("deflate");
    out->len += bound - zs.avail_out;
    deflateEnd(&zs);
}

static void snappy_raw(tb_buf_t *out, const uint8_t *in, size_t len)
{
    size_t n = snappy_max_compressed_length(len);
    reserve(out, n);
    if (snappy_compress((const char *)in, len, (char *)out->p + out->len, &n) != SNAPPY_OK)
        die("snappy_compress");
    out->len += n;
}

/* xerial framing as snappy-java's SnappyOutputStream writes it: 32 KiB chunks. */
static void snappy_xerial(tb_buf_t *out, const uint8_t *in, size_t len)
{
    static const uint8_t hdr[16] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1};
    tb_put(out, hdr, sizeof hdr);
    for (size_t pos = 0; pos < len; pos += 32768) {
        size_t n = len - pos < 32768 ? len - pos : 32768;
        size_t at = out->len;
        be(out, 0, 4);
        snappy_raw(out, in + pos, n);
        uint32_t clen = (uint32_t)(out->len - at - 4);
        for (int i = 0; i < 4; i++)
            out->p[at + (size_t)i] = (uint8_t)(clen >> (24 - 8 * i));
    }
}

void tb_compress(tb_buf_t *out, int codec, bool raw_snappy, const uint8_t *in, size_t len)
{
    size_t n;
    switch (codec) {
    case 0:
        tb_put(out, in, len);
        break;
    case 1:
        gzip_c(out, in, len);
        break;
    case 2:
        raw_snappy ? snappy_raw(out, in, len) : snappy_xerial(out, in, len);
        break;
    case 3: {
        /* Independent blocks, as Kafka's producer writes them: Java's reader refuses linked
         * ones ("Dependent block stream is unsupported"). */
        LZ4F_preferences_t pref = {0};
        pref.frameInfo.blockMode = LZ4F_blockIndependent;
        n = LZ4F_compressFrameBound(len, &pref);
        reserve(out, n);
        n = LZ4F_compressFrame(out->p + out->len, n, in, len, &pref);
        if (LZ4F_isError(n))
            die("LZ4F_compressFrame");
        out->len += n;
        break;
    }
    case 4:
        n = ZSTD_compressBound(len);
        reserve(out, n);
        n = ZSTD_compress(out->p + out->len, n, in, len, 3);
        if (ZSTD_isError(n))
            die("ZSTD_compress");
        out->len += n;
        break;
    default:
        die("unknown codec");
    }
}

size_t tb_batch(tb_buf_t *out, const tb_batch_t *cfg, const tb_record_t *recs, int n)
{
    tb_buf_t plain = {0}, body = {0};
    int32_t last_delta = 0;
    if (cfg->raw_records) {
        tb_put(&plain, cfg->raw_records, cfg->raw_records_len);
        last_delta = n > 0 ? n - 1 : 0;
    } else {
        for (int i = 0; i < n; i++) {
            tb_record(&plain, &recs[i]);
            if (recs[i].off_delta > last_delta)
                last_delta = recs[i].off_delta;
        }
    }
    tb_compress(&body, cfg->codec, cfg->raw_snappy, plain.p, plain.len);
    int16_t attr = (int16_t)(cfg->codec | (cfg->log_append ? 0x08 : 0) |
                             (cfg->transactional ? 0x10 : 0) | (cfg->control ? 0x20 : 0));
    size_t start = out->len;
    be(out, (uint64_t)cfg->base_offset, 8);
    be(out, (uint64_t)(49 + body.len), 4);   /* batchLength: everything after this field */
    be(out, (uint32_t)cfg->leader_epoch, 4); /* partitionLeaderEpoch */
    uint8_t magic = 2;
    tb_put(out, &magic, 1);
    be(out, 0, 4); /* CRC, patched below */
    size_t crc_from = out->len;
    be(out, (uint16_t)attr, 2);
    be(out, (uint32_t)last_delta, 4);
    be(out, (uint64_t)cfg->base_ts, 8);
    be(out, (uint64_t)cfg->max_ts, 8);
    be(out, (uint64_t)(cfg->set_pid ? cfg->producer_id : -1), 8);
    be(out, (uint16_t)(cfg->set_pid ? cfg->producer_epoch : -1), 2);
    be(out, (uint32_t)-1, 4); /* baseSequence */
    be(out, (uint32_t)(cfg->count_override ? cfg->count_override : n), 4);
    tb_put(out, body.p, body.len);
    uint32_t crc = kc_crc32c(0, out->p + crc_from, out->len - crc_from);
    for (int i = 0; i < 4; i++)
        out->p[crc_from - 4 + (size_t)i] = (uint8_t)(crc >> (24 - 8 * i));
    tb_free(&plain);
    tb_free(&body);
    return out->len - start;
}
