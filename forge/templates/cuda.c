/* Helpers shared by the CUDA templates (template.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/template.h"

void kf_template_cuda_prologue(kf_strbuf *b, const kf_template *t, const kf_job_sig *sig,
                               const int *vals)
{
    kf_strbuf_printf(b, "/* Kernel Forge builtin template %s for %.64s; knobs:", t->name, sig->op);
    for (int k = 0; k < t->n_knobs; k++) kf_strbuf_printf(b, " %s=%d", t->knobs[k].name, vals[k]);
    kf_strbuf_printf(b, " */\n%s", kf_body_cuda_common_cuh);
    for (int k = 0; k < t->n_knobs; k++) {
        char up[64];
        size_t i = 0;
        for (; t->knobs[k].name[i] && i + 1 < sizeof up; i++) {
            char c = t->knobs[k].name[i];
            up[i] = (char)(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
        }
        up[i] = 0;
        kf_strbuf_printf(b, "#define KF_%s %d\n", up, vals[k]);
    }
}

void kf_template_define(kf_strbuf *b, const char *name, long long v, const char *why)
{
    kf_strbuf_printf(b, "#define %s %lld%s%s%s\n", name, v, why ? " /* " : "", why ? why : "",
                     why ? " */" : "");
}

unsigned kf_template_grid(int64_t blocks, int threads, int *gs)
{
    if (*gs) {
        int64_t cap = (int64_t)*gs * KF_TEMPLATE_SMS * (2048 / threads);
        if (blocks > cap) blocks = cap;
    }
    if (blocks > INT32_MAX) { /* more blocks than grid.x holds: loop */
        blocks = INT32_MAX;
        *gs = 1;
    }
    return (unsigned)blocks;
}

const char *kf_template_cuda_type(int dtype)
{
    switch (dtype) {
    case KF_F32: return "float";
    case KF_F16: return "__half";
    case KF_BF16: return "__nv_bfloat16";
    default: return NULL;
    }
}

char *kf_template_cuda_launch_json(const char *const *arg_types, int n, const unsigned grid[3],
                                   const unsigned block[3], unsigned smem)
{
    kf_strbuf b = {0};
    kf_strbuf_printf(&b, "{\"entry\":\"kf_kernel\",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],"
                         "\"smem\":%u,\"args\":[",
                     grid[0], grid[1], grid[2], block[0], block[1], block[2], smem);
    for (int i = 0; i < n; i++) kf_strbuf_printf(&b, "%s\"%s\"", i ? "," : "", arg_types[i]);
    kf_strbuf_printf(&b, "]}");
    return kf_strbuf_take(&b);
}

kf_status kf_template_cuda_finish(const kf_template *t, kf_strbuf *b, const char *const *arg_types,
                                  int n, const unsigned grid[3], const unsigned block[3],
                                  unsigned smem, char **source, char **launch_json, char *err,
                                  size_t errcap)
{
    *source = kf_strbuf_take(b);
    *launch_json = kf_template_cuda_launch_json(arg_types, n, grid, block, smem);
    if (*source && *launch_json) return KF_OK;
    free(*source);
    free(*launch_json);
    *source = *launch_json = NULL;
    if (err && errcap) snprintf(err, errcap, "%s: out of memory", t->name);
    return KF_ERR_NOMEM;
}
