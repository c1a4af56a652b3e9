/* A chat request with retries (llm.h): exponential backoff with jitter on 429, 5xx, timeouts and
 * dropped connections; Retry-After is honoured up to max_wait_s. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "forge/llm/llm.h"

/* one result type for both HTTP backends (llm_http.c, llm_http_stub.c) */
void kf_http_result_clear(kf_http_result *r)
{
    if (!r) return;
    free(r->body);
    memset(r, 0, sizeof *r);
}

static void sleep_s(double s)
{
    if (s <= 0) return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* [0, 1) from a caller-held xorshift state (no global PRNG) */
static double uniform(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    *s = x;
    return (double)(x >> 11) / 9007199254740992.0;
}

static int retryable(const kf_http_result *r)
{
    if (r->kind == KF_HTTP_TIMEOUT || r->kind == KF_HTTP_DROPPED || r->kind == KF_HTTP_CONNECT)
        return 1;
    return r->kind == KF_HTTP_OK && (r->status == 429 || r->status == 408 || r->status >= 500);
}

/* the first line of an error body, printable characters only, for the message */
static void excerpt(const char *body, size_t len, char *out, size_t cap)
{
    size_t j = 0;
    for (size_t i = 0; body && i < len && j + 1 < cap && j < 200; i++) {
        char c = body[i];
        if (c == '\n' || c == '\r') c = ' ';
        out[j++] = c >= 32 && c < 127 ? c : '?';
    }
    out[j] = 0;
}

kf_status kf_llm_chat(const kf_llm_config *c, const char *system, const char *user, uint64_t *seed,
                      kf_llm_reply *out, kf_llm_call_info *info, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    memset(info, 0, sizeof *info);
    char url[600], auth[1200] = "", version[64] = "", *key_header = NULL;
    const char *headers[4];
    int nh = 0;
    snprintf(url, sizeof url, "%s%s", c->url,
             c->api == KF_LLM_ANTHROPIC ? "/v1/messages" : "/v1/chat/completions");
    headers[nh++] = "Content-Type: application/json";
    if (c->api_key && c->api_key[0]) {
        size_t need = strlen(c->api_key) + 32;
        key_header = need <= sizeof auth ? auth : malloc(need);
        if (!key_header) return KF_ERR_NOMEM;
        snprintf(key_header, need, c->api == KF_LLM_ANTHROPIC ? "x-api-key: %s" : "Authorization: Bearer %s",
                 c->api_key);
        headers[nh++] = key_header;
    }
    if (c->api == KF_LLM_ANTHROPIC) {
        snprintf(version, sizeof version, "anthropic-version: 2023-06-01");
        headers[nh++] = version;
    }
    char *body = kf_llm_request_body(c, system, user);
    kf_status st = KF_ERR_NOMEM;
    if (!body) {
        snprintf(err, cap, "out of memory");
        goto wipe_key;
    }
    double wait = c->backoff_s;
    for (int attempt = 0;; attempt++) {
        kf_http_result r;
        char why[512] = "";
        info->attempts++;
        st = kf_http_post(url, headers, nh, body, c->connect_timeout_s, c->timeout_s, c->max_response,
                          &r, why, sizeof why);
        info->last_status = r.status;
        if (st == KF_OK && r.status >= 200 && r.status < 300) {
            st = kf_llm_parse_body(c->api, r.body, r.body_len, out, why, sizeof why);
            if (st != KF_OK) snprintf(err, cap, "llm: %s", why);
            kf_http_result_clear(&r);
            break;
        }
        if (st == KF_OK) {
            char ex[256];
            excerpt(r.body, r.body_len, ex, sizeof ex);
            snprintf(why, sizeof why, "HTTP %ld: %s", r.status, ex);
        }
        if (r.kind == KF_HTTP_UNAVAILABLE || !retryable(&r) || attempt >= c->retries) {
            snprintf(err, cap, "llm: %s (%d attempt%s)", why, info->attempts,
                     info->attempts == 1 ? "" : "s");
            st = r.kind == KF_HTTP_UNAVAILABLE ? KF_ERR_UNSUPPORTED : KF_ERR_IO;
            kf_http_result_clear(&r);
            break;
        }
        /* full backoff with +-50% jitter; the server's Retry-After wins when it says longer */
        double w = wait * (0.5 + uniform(seed));
        if (r.retry_after_s >= 0 && r.retry_after_s > w) w = r.retry_after_s;
        if (w > c->max_wait_s) w = c->max_wait_s;
        kf_http_result_clear(&r);
        sleep_s(w);
        info->waited_s += w;
        wait *= 2;
    }
    free(body);
wipe_key:
    if (key_header) {
        explicit_bzero(key_header, strlen(key_header));
        if (key_header != auth) free(key_header);
    }
    return st;
}
