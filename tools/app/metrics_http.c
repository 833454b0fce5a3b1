/*
 * --metrics-port: kc_metrics over HTTP on loopback, for a Prometheus scraper. libmicrohttpd
 * (Debian's libmicrohttpd-dev) runs the listener on its own thread; each GET takes a fresh
 * snapshot, so a scrape sees the numbers of that moment. Bound to 127.0.0.1 only: the stats
 * name topics and members, which a host's other interfaces need not see.
 *
 * Owner: the main thread starts and stops the daemon; the daemon's thread only uses the consumer
 * handle, which the main thread keeps alive until kc_app_metrics_stop has returned.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

static struct MHD_Daemon *g_daemon;

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_len, void **req_cls)
{
    (void)cls, (void)url, (void)version, (void)upload, (void)upload_len, (void)req_cls;
    struct MHD_Response *r;
    unsigned status = MHD_HTTP_OK;
    const char *type = "text/plain; version=0.0.4; charset=utf-8";
    char *text = NULL;
    size_t len = 0;
    kc_error_t e;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        static const char msg[] = "only GET\n";
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
        r = MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
    } else if (kc_metrics(kc_app.c, &text, &len, &e) != KC_OK) {
        char msg[sizeof e.msg + 2];
        int n = snprintf(msg, sizeof msg, "%s\n", e.msg);
        status = MHD_HTTP_SERVICE_UNAVAILABLE;
        r = MHD_create_response_from_buffer((size_t)n, msg, MHD_RESPMEM_MUST_COPY);
    } else {
        r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    }
    if (!r) {
        free(text);
        return MHD_NO;
    }
    if (status == MHD_HTTP_OK)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    enum MHD_Result ok = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ok;
}

int kc_app_metrics_start(int port)
{
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    g_daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, (uint16_t)port,
                                NULL, NULL, answer, NULL, MHD_OPTION_SOCK_ADDR,
                                (struct sockaddr *)&addr, MHD_OPTION_END);
    if (!g_daemon) {
        fprintf(stderr, "kconsume: --metrics-port %d: cannot listen on 127.0.0.1:%d\n", port, port);
        return -1;
    }
    return 0;
}

void kc_app_metrics_stop(void)
{
    if (g_daemon)
        MHD_stop_daemon(g_daemon);
    g_daemon = NULL;
}
