/* io/tls.c as a connection transport (see conn_tls.h). Owner: the network thread. The wrappers
 * only adapt kc_tls_t * to the hook's void *; io/tls.h was shaped for exactly this use. */
#include "conn_tls.h"

static kc_err_t t_handshake(void *t, kc_error_t *err)
{
    return kc_tls_handshake(t, err);
}

static kc_err_t t_write(void *t, const void *data, size_t len, kc_error_t *err)
{
    return kc_tls_write(t, data, len, err);
}

static size_t t_out_peek(void *t, const uint8_t **data)
{
    return kc_tls_out_peek(t, data);
}

static void t_out_consume(void *t, size_t n)
{
    kc_tls_out_consume(t, n);
}

static kc_err_t t_feed(void *t, const uint8_t *data, size_t len, kc_error_t *err)
{
    return kc_tls_feed(t, data, len, err);
}

static kc_err_t t_read(void *t, void *buf, size_t cap, size_t *n, kc_error_t *err)
{
    return kc_tls_read(t, buf, cap, n, err);
}

static void t_free(void *t)
{
    kc_tls_free(t);
}

static kc_err_t t_shutdown(void *t, kc_error_t *err)
{
    return kc_tls_shutdown(t, err);
}

static const kc_conn_transport_vt tls_vt = {t_handshake, t_write, t_out_peek, t_out_consume,
                                            t_feed,      t_read,  t_free,     t_shutdown};

kc_err_t kc_conn_tls_transport_new(void *opaque, const char *host, const kc_conn_transport_vt **vt,
                                   void **t, kc_error_t *err)
{
    kc_conn_tls_t *cfg = opaque;
    kc_tls_t *s = NULL;
    kc_err_t rc = kc_tls_new(cfg->ctx, cfg->server_name ? cfg->server_name : host, &s, err);
    if (rc != KC_OK)
        return rc;
    *vt = &tls_vt;
    *t = s;
    return KC_OK;
}
