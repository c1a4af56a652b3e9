/* kf_http_post when kernel_forge was built without libcurl headers (llm.h): every request fails
 * with a clear message, and everything else builds and runs. */
#include <stdio.h>
#include <string.h>

#include "forge/llm/llm.h"

int kf_http_available(void) { return 0; }

kf_status kf_http_post(const char *url, const char *const *headers, int n_headers, const char *body,
                       double connect_timeout_s, double timeout_s, size_t max_response,
                       kf_http_result *out, char *err, size_t cap)
{
    (void)url, (void)headers, (void)n_headers, (void)body;
    (void)connect_timeout_s, (void)timeout_s, (void)max_response;
    memset(out, 0, sizeof *out);
    out->kind = KF_HTTP_UNAVAILABLE;
    out->retry_after_s = -1;
    if (err && cap)
        snprintf(err, cap, "kforge-worker was built without libcurl: the LLM proposer is not "
                           "available (install the libcurl headers, e.g. libcurl4-openssl-dev, "
                           "and rebuild)");
    return KF_ERR_UNSUPPORTED;
}
