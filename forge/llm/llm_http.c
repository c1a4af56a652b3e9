/* One HTTP(S) POST over libcurl (llm.h). TLS verification stays on; only http and https; the
 * response is bounded; header values (the key) never reach a message. */
#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "forge/llm/llm.h"

typedef struct sink {
    char *p;
    size_t len, cap, max;
    int too_big;
    double retry_after_s;
} sink;

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    sink *s = user;
    size_t add = size * n;
    if (add > s->max - s->len) { /* returning short makes curl stop with CURLE_WRITE_ERROR */
        s->too_big = 1;
        return 0;
    }
    if (s->len + add + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 16384;
        while (cap < s->len + add + 1) cap *= 2;
        char *p = realloc(s->p, cap);
        if (!p) return 0;
        s->p = p, s->cap = cap;
    }
    memcpy(s->p + s->len, data, add);
    s->len += add;
    s->p[s->len] = 0;
    return add;
}

static size_t on_header(char *data, size_t size, size_t n, void *user)
{
    sink *s = user;
    size_t len = size * n;
    static const char name[] = "retry-after:";
    if (len > sizeof name - 1 && len < 128 && !strncasecmp(data, name, sizeof name - 1)) {
        char v[128];
        memcpy(v, data + sizeof name - 1, len - (sizeof name - 1));
        v[len - (sizeof name - 1)] = 0;
        char *end;
        double d = strtod(v, &end);
        if (end != v && d >= 0 && d < 1e7) s->retry_after_s = d; /* the HTTP-date form: ignored */
    }
    return len;
}

int kf_http_available(void) { return 1; }

kf_status kf_http_post(const char *url, const char *const *headers, int n_headers, const char *body,
                       double connect_timeout_s, double timeout_s, size_t max_response,
                       kf_http_result *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    out->retry_after_s = -1;
    sink s = {.max = max_response, .retry_after_s = -1};
    struct curl_slist *hl = NULL;
    kf_status st = KF_ERR_IO;
    CURL *h = curl_easy_init();
    if (!h) {
        out->kind = KF_HTTP_OTHER;
        snprintf(err, cap, "curl_easy_init failed");
        return KF_ERR_NOMEM;
    }
    for (int i = 0; i < n_headers; i++) {
        struct curl_slist *t = curl_slist_append(hl, headers[i]);
        if (!t) goto free_headers;
        hl = t;
    }
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L); /* a redirect would resend the key */
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(connect_timeout_s * 1000));
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000));
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max_response);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &s);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "kernel-forge/" KF_VERSION_STRING);
    CURLcode rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
    out->retry_after_s = s.retry_after_s;
    if (rc == CURLE_OK) {
        out->kind = KF_HTTP_OK;
        out->body = s.p ? s.p : strdup("");
        out->body_len = s.len;
        s.p = NULL;
        st = out->body ? KF_OK : KF_ERR_NOMEM;
        goto free_headers;
    }
    if (s.too_big || rc == CURLE_FILESIZE_EXCEEDED) {
        out->kind = KF_HTTP_TOO_BIG;
        snprintf(err, cap, "the response is larger than %zu bytes", max_response);
    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
        out->kind = KF_HTTP_TIMEOUT;
        snprintf(err, cap, "timed out (connect %gs, total %gs)", connect_timeout_s, timeout_s);
    } else if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST) {
        out->kind = KF_HTTP_CONNECT;
        snprintf(err, cap, "cannot connect: %s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
    } else if (rc == CURLE_GOT_NOTHING || rc == CURLE_RECV_ERROR || rc == CURLE_PARTIAL_FILE ||
               rc == CURLE_SEND_ERROR) {
        out->kind = KF_HTTP_DROPPED;
        snprintf(err, cap, "connection dropped: %s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
    } else {
        out->kind = KF_HTTP_OTHER;
        snprintf(err, cap, "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
    }
    out->status = 0;
free_headers:
    curl_slist_free_all(hl);
    curl_easy_cleanup(h);
    free(s.p);
    return st;
}
