/*
 * The consumer's OAUTHBEARER token refresher: obtains tokens from the application's token
 * callback (kc_conf_set_oauthbearer_token_cb) or the OIDC client (runtime/oidc.h) and puts
 * them into the token slot the network thread reads (io/oauth_token.h).
 *
 * Threads: kc_oauth_refresher_new runs the first fetch on the calling thread (kc_consumer_new's:
 * a consumer that cannot get a token fails creation with the reason). kc_oauth_refresher_start
 * then starts the refresher's own thread ("kc-oauth"), which fetches again when
 * kc_oauth_refresh_at_ms says (the sasl.login.refresh.* settings), and after a failure every 1 s
 * doubling to 10 s (never the network thread: both sources may block). kc_oauth_refresher_free
 * (kc_consumer_close, after the network thread stopped) wakes it, waits for a fetch in progress
 * and joins it. The struct is owned by the consumer; `mu` guards `stop`, the rest belongs to the
 * refresher's thread once it runs.
 */
#ifndef KC_RUNTIME_OAUTH_REFRESH_H
#define KC_RUNTIME_OAUTH_REFRESH_H

#include "base/err.h"
#include "base/log.h"
#include "conf.h"
#include "oauth_token.h"

/* When to refresh a token (the sasl.login.refresh.* settings; Java's rule, so a fleet of Java
 * and kconsume consumers behaves alike): at factor + jitter * draw of its lifetime, counted from
 * start_ms (when it arrived), but no later than buffer before it expires and no sooner than
 * min_period after now; a token living shorter than min_period + buffer gets the plain fraction.
 * The time left after the refresh is for a slow endpoint and retries before the broker's KIP-368
 * session, which ends with the token, closes a connection that has not re-authenticated. */
typedef struct kc_oauth_refresh_conf {
    double factor, jitter;            /* window.factor 0.5..1, window.jitter 0..0.25 */
    int64_t min_period_ms, buffer_ms; /* min.period.seconds, buffer.seconds */
} kc_oauth_refresh_conf_t;

typedef struct kc_oauth_refresher kc_oauth_refresher_t;

/* NULL *out and KC_OK when the configuration does not use OAUTHBEARER. Otherwise the first
 * token is in kc_oauth_refresher_slot() on success. KC_ERR_CONFIG when OAUTHBEARER has neither
 * method=oidc nor a token callback; the source's error (KC_ERR_AUTH, KC_ERR_TRANSPORT, ...)
 * when the first fetch fails. */
kc_err_t kc_oauth_refresher_new(const kc_conf_t *conf, kc_oauth_refresher_t **out, kc_error_t *err);
/* Starts the refresh thread, logging through `log` (must outlive the refresher). */
kc_err_t kc_oauth_refresher_start(kc_oauth_refresher_t *r, const kc_logger_t *log, kc_error_t *err);
kc_oauth_slot_t *kc_oauth_refresher_slot(kc_oauth_refresher_t *r);
/* NULL-safe. */
void kc_oauth_refresher_free(kc_oauth_refresher_t *r);

/* The wall-clock time to refresh a token that arrived at start_ms and expires at expiry_ms; `draw`
 * in [0, 1) picks the jitter. now_ms when it has expired. Pure. */
int64_t kc_oauth_refresh_at_ms(const kc_oauth_refresh_conf_t *c, int64_t now_ms, int64_t start_ms,
                               int64_t expiry_ms, double draw);
/* The four settings from the configuration. */
void kc_oauth_refresh_conf(const kc_conf_t *conf, kc_oauth_refresh_conf_t *out);

#endif
