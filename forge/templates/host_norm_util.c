/* Helpers of the host normalization templates (host_norm.h). */
#include <stdarg.h>
#include <stdio.h>

#include "forge/templates/cuda_norm.h"
#include "forge/templates/host_norm.h"

int kf_host_norm_why(char *why, size_t cap, const char *name, const char *fmt, ...)
{
    if (!why || !cap) return 0;
    int n = snprintf(why, cap, "%s: ", name);
    if (n < 0 || (size_t)n >= cap) return 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why + n, cap - (size_t)n, fmt, ap);
    va_end(ap);
    return 0;
}

int kf_host_norm_f32(const kf_job_tensor *t, const char *what, char *why, size_t cap,
                     const char *name)
{
    if (t->dtype != KF_F32)
        return kf_host_norm_why(why, cap, name, "%s dtype %s not handled (f32 only)", what,
                                kf_dtype_name(t->dtype));
    if (!kf_job_tensor_contiguous(t))
        return kf_host_norm_why(why, cap, name, "%s is not contiguous", what);
    if (kf_job_tensor_numel(t) <= 0)
        return kf_host_norm_why(why, cap, name, "%s has no elements", what);
    return 1;
}

void kf_host_norm_emit_offset(kf_strbuf *b, const char *name, const kf_job_tensor *t, int from,
                              int to)
{
    int64_t size[KF_MAX_DIMS], stride[KF_MAX_DIMS];
    const int nd = kf_cuda_norm_merge_dims(t, from, to, size, stride);
    kf_strbuf_printf(b, "static inline int64_t %s(int64_t i)\n{\n    int64_t o = 0;\n", name);
    for (int k = 0; k + 1 < nd; k++)
        kf_strbuf_printf(b, "    o += (i %% %lldLL) * %lldLL;\n    i /= %lldLL;\n",
                         (long long)size[k], (long long)stride[k], (long long)size[k]);
    if (nd > 0) kf_strbuf_printf(b, "    o += i * %lldLL;\n", (long long)stride[nd - 1]);
    else kf_strbuf_printf(b, "    (void)i;\n");
    kf_strbuf_printf(b, "    return o;\n}\n");
}
