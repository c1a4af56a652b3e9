/* host_max_pool2d: aten::max_pool2d_with_indices on the host, as eager's CPU kernels compute it
 * (kernels/host_pool.c says how), for an f32, f16 or bf16 input [N, C, H, W] (contiguous or
 * channels last, the format eager picks) or [C, H, W], any kernel size, stride, padding,
 * dilation and ceil_mode torch accepts (pool_shape.h reads the signature).
 * Knob: omp, the planes (NCHW) or the rows of output pixels (channels last) over OpenMP threads
 * (0 off). */
#include <stdio.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/pointwise_ops.h"
#include "forge/templates/pool_shape.h"
#include "forge/templates/template.h"

static const kf_knob_def hp_knobs[] = {
    {"omp", 2, {0, 1}},
};

static int hp_applies(const kf_job_sig *sig)
{
    kf_pool_shape s;
    return kf_pool_check(sig, 0, &s);
}

static kf_status hp_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap);

const kf_template kf_tmpl_host_max_pool2d = {
    .name = "host_max_pool2d",
    .backend = "host",
    .n_knobs = 1,
    .knobs = hp_knobs,
    .applies = hp_applies,
    .render = hp_render,
};

static kf_status hp_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_host_max_pool2d;
    int v[1];
    kf_status st = kf_template_render_begin(t, sig, knob_idx, v, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    kf_pool_shape s;
    kf_pool_check(sig, 0, &s);
    const int dt = sig->in[0].dtype;
    kf_strbuf b = {0};
    kf_template_host_prologue(&b, t, sig, v);
    if (dt != KF_F32) kf_pw_emit_math(&b, KF_F32, 0, 0); /* kf_pw_h2f and the others */
    static const char *const ld[] = {"(v)", "kf_pw_h2f(v)", "kf_pw_bf2f(v)"};
    static const char *const st_[] = {"(v)", "kf_pw_f2h(v)", "kf_pw_f2bf(v)"};
    const int k = dt == KF_F16 ? 1 : dt == KF_BF16 ? 2 : 0;
    kf_strbuf_printf(&b,
                     "/* inputs: self; outputs: values, indices */\ntypedef %s KF_T;\n"
                     "#define KF_LD(v) %s\n#define KF_ST(v) %s\n#define KF_CL %d\n"
                     "#define KF_N %lldLL\n#define KF_C %lldLL\n#define KF_H %lldLL\n"
                     "#define KF_W %lldLL\n#define KF_OH %lldLL\n#define KF_OW %lldLL\n"
                     "#define KF_KH %lldLL\n#define KF_KW %lldLL\n#define KF_SH %lldLL\n"
                     "#define KF_SW %lldLL\n#define KF_PH %lldLL\n#define KF_PW %lldLL\n"
                     "#define KF_DH %lldLL\n#define KF_DW %lldLL\n\n%s",
                     k ? "uint16_t" : "float", ld[k], st_[k], s.cl, (long long)s.n,
                     (long long)s.c, (long long)s.h, (long long)s.w, (long long)s.oh,
                     (long long)s.ow, (long long)s.kh, (long long)s.kw, (long long)s.sh,
                     (long long)s.sw, (long long)s.ph, (long long)s.pw, (long long)s.dh,
                     (long long)s.dw, kf_body_host_pool_c);
    const char *rec = dt == KF_F16 ? "__half" : dt == KF_BF16 ? "__nv_bfloat16" : "float";
    char a0[40], a1[40];
    snprintf(a0, sizeof a0, "const %s*", rec);
    snprintf(a1, sizeof a1, "%s*", rec);
    const char *args[] = {a0, a1, "int64_t*"};
    return kf_template_host_finish(t, &b, args, 3, source, launch_json, err, errcap);
}
