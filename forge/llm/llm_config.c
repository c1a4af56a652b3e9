/* LLM configuration from the environment (llm.h). The key is read here and only here. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "forge/llm/llm.h"

#define KEY_FILE_MAX 8192

static int num(const char *(*g)(const char *), const char *name, double lo, double hi, double *out)
{
    const char *v = g(name);
    if (!v || !v[0]) return 0;
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !(d >= lo && d <= hi)) return -1;
    *out = d;
    return 0;
}

/* the key without surrounding whitespace (a key file usually ends in a newline) */
static char *trimmed_dup(const char *s, size_t n)
{
    while (n && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r')) n--;
    char *k = malloc(n + 1);
    if (!k) return NULL;
    memcpy(k, s, n);
    k[n] = 0;
    return k;
}

static kf_status read_key_file(const char *path, char **out, char *err, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return kf_fail(err, cap, KF_ERR_IO, "KFORGE_LLM_API_KEY_FILE %s: %s", path,
                       strerror(errno));
    char buf[KEY_FILE_MAX];
    size_t n = fread(buf, 1, sizeof buf, f);
    int big = n == sizeof buf;
    fclose(f);
    if (big) {
        memset(buf, 0, sizeof buf);
        return kf_fail(err, cap, KF_ERR_INVALID,
                       "KFORGE_LLM_API_KEY_FILE %s: larger than %d bytes", path, KEY_FILE_MAX);
    }
    *out = trimmed_dup(buf, n);
    memset(buf, 0, sizeof buf);
    return *out ? KF_OK : kf_fail(err, cap, KF_ERR_NOMEM, "out of memory");
}

kf_status kf_llm_config_from_env(kf_llm_config *c, const char *(*g)(const char *), char *err,
                                 size_t cap)
{
    memset(c, 0, sizeof *c);
    c->connect_timeout_s = 10, c->timeout_s = 300, c->retries = 4, c->backoff_s = 1;
    c->max_wait_s = 60, c->max_response = 4u << 20, c->max_tokens = 8192, c->temperature = 0.7;
    const char *url = g("KFORGE_LLM_URL"), *api = g("KFORGE_LLM_API"), *model = g("KFORGE_LLM_MODEL");
    if (!url || !url[0]) return kf_fail(err, cap, KF_ERR_INVALID, "KFORGE_LLM_URL is not set");
    if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
        return kf_fail(err, cap, KF_ERR_INVALID,
                       "KFORGE_LLM_URL must start with http:// or https://");
    if (strlen(url) >= sizeof c->url)
        return kf_fail(err, cap, KF_ERR_INVALID, "KFORGE_LLM_URL is longer than %zu bytes",
                       sizeof c->url - 1);
    snprintf(c->url, sizeof c->url, "%s", url);
    size_t n = strlen(c->url);
    while (n && c->url[n - 1] == '/') c->url[--n] = 0; /* "{base}/v1/..." either way */
    if (!api || !api[0] || !strcmp(api, "openai")) c->api = KF_LLM_OPENAI;
    else if (!strcmp(api, "anthropic")) c->api = KF_LLM_ANTHROPIC;
    else return kf_fail(err, cap, KF_ERR_INVALID, "KFORGE_LLM_API must be openai or anthropic");
    if (!model || !model[0])
        return kf_fail(err, cap, KF_ERR_INVALID, "KFORGE_LLM_MODEL is not set");
    if (strlen(model) >= sizeof c->model || strpbrk(model, "\"\\\r\n"))
        return kf_fail(err, cap, KF_ERR_INVALID, "KFORGE_LLM_MODEL is not a plausible model name");
    snprintf(c->model, sizeof c->model, "%s", model);

    double d;
    struct { const char *name; double lo, hi, *dst; } nums[] = {
        {"KFORGE_LLM_CONNECT_TIMEOUT_S", 0.1, 3600, &c->connect_timeout_s},
        {"KFORGE_LLM_TIMEOUT_S", 0.1, 86400, &c->timeout_s},
        {"KFORGE_LLM_BACKOFF_S", 0, 3600, &c->backoff_s},
        {"KFORGE_LLM_MAX_WAIT_S", 0, 3600, &c->max_wait_s},
        {"KFORGE_LLM_TEMPERATURE", 0, 2, &c->temperature},
    };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        if (num(g, nums[i].name, nums[i].lo, nums[i].hi, nums[i].dst))
            return kf_fail(err, cap, KF_ERR_INVALID, "%s must be a number in [%g, %g]",
                           nums[i].name, nums[i].lo, nums[i].hi);
    d = c->retries;
    if (num(g, "KFORGE_LLM_RETRIES", 0, 20, &d))
        return kf_fail(err, cap, KF_ERR_INVALID,
                       "KFORGE_LLM_RETRIES must be an integer in [0, 20]");
    c->retries = (int)d;
    d = (double)c->max_response;
    if (num(g, "KFORGE_LLM_MAX_RESPONSE_BYTES", 1024, 1 << 30, &d))
        return kf_fail(err, cap, KF_ERR_INVALID,
                       "KFORGE_LLM_MAX_RESPONSE_BYTES must be in [1024, 2^30]");
    c->max_response = (size_t)d;
    d = c->max_tokens;
    if (num(g, "KFORGE_LLM_MAX_TOKENS", 16, 1e6, &d))
        return kf_fail(err, cap, KF_ERR_INVALID, "KFORGE_LLM_MAX_TOKENS must be in [16, 1000000]");
    c->max_tokens = (int)d;

    const char *key = g("KFORGE_LLM_API_KEY"), *key_file = g("KFORGE_LLM_API_KEY_FILE");
    if (key && key[0]) {
        c->api_key = trimmed_dup(key, strlen(key));
        if (!c->api_key) return kf_fail(err, cap, KF_ERR_NOMEM, "out of memory");
    } else if (key_file && key_file[0]) {
        kf_status st = read_key_file(key_file, &c->api_key, err, cap);
        if (st != KF_OK) return st;
    }
    if (c->api_key && strpbrk(c->api_key, "\r\n")) { /* would split the header */
        kf_llm_config_clear(c);
        return kf_fail(err, cap, KF_ERR_INVALID, "the API key contains a line break");
    }
    return KF_OK;
}

void kf_llm_config_clear(kf_llm_config *c)
{
    if (!c) return;
    if (c->api_key) {
        volatile char *p = c->api_key;
        while (*p) *p++ = 0;
        free(c->api_key);
    }
    memset(c, 0, sizeof *c);
}
