/* host_group_norm: aten::native_group_norm(input, weight?, bias?, N, C, HxW, group, eps) for an
 * f32 input [N, C, *] (any number of spatial dims) in NCHW (contiguous) or channels-last memory
 * order, y in the same order (as eager allocates it), mean and rstd [N, group] f32; weight and
 * bias [C] f32, each present or None.
 *
 * A group is D = C / group channels of HxW pixels: NCHW, one block of D * HxW adjacent
 * elements; channels last, HxW runs of D adjacent elements, C apart, so a task takes GB
 * adjacent groups of a sample (at least GN_CL_RUN channels, the whole pixel's when C is
 * smaller) and walks their pixels with per-channel sums, merged into the groups' with Chan's
 * formula. Statistics in double, as host_layer_norm's (eager's float cascade sums approximate
 * the exact value), eps rounded to float first as eager does; y = ((x - mean) * rstd) * w[c] +
 * b[c] in float.
 * Knobs:
 *  variance 0 = two passes (the second sums x - mean and its square, the first's error
 *           corrected), 1 = one pass of x - x[0] and its square (channels last: per channel,
 *           x[0] its first pixel's);
 *  unroll   = accumulator lanes of an NCHW group (1: one, which `omp simd` splits into vector
 *           lanes; channels last: the channels are the lanes, the knob changes nothing);
 *  omp      = tasks (NCHW a group) over OpenMP threads: 0 off, 1 static split, 2 dynamic. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/cuda_norm.h"
#include "forge/templates/host_norm.h"

#define NAME "host_group_norm"
#define GN_CL_RUN 128  /* channels last: channels per task, at least (a run of 512 bytes) */
#define GN_MAX_C 8192  /* channels last: a task's per-channel sums live on the stack */

static const kf_knob_def gn_knobs[] = {
    {"variance", 2, {0, 1}},
    {"unroll", 3, {1, 4, 8}},
    {"omp", 3, {0, 1, 2}},
};
#define GN_NKNOBS ((int)(sizeof gn_knobs / sizeof gn_knobs[0]))

typedef struct gn_shape {
    int w, b;   /* index into in[], -1 when None */
    int layout; /* 0 NCHW, 1 channels last */
    int64_t n, c, hw, g;
    double eps;
} gn_shape;

/* 1 when the template serves sig; else 0, and why (when not NULL) says why if the op is ours
 * (left empty when it is not). */
static int gn_check(const kf_job_sig *sig, gn_shape *s, char *why, size_t cap)
{
    static const char *const names[] = {"input", "weight", "bias"};
    static const int opt[] = {0, 1, 1};
    int idx[3];
    memset(s, 0, sizeof *s);
    if (why && cap) why[0] = 0;
    if (!sig || strcmp(sig->op, "aten::native_group_norm")) return 0;
    if (sig->n_out != 3 || sig->out_alias[0] || sig->out_alias[1] || sig->out_alias[2])
        return kf_host_norm_why(why, cap, NAME, "expected 3 fresh outputs");
    if (kf_template_tensor_args(sig, names, opt, 3, idx) < 0)
        return kf_host_norm_why(why, cap, NAME, "which of weight and bias are given is unclear");
    s->w = idx[1];
    s->b = idx[2];
    if (!kf_job_scalar_int(sig, "N", &s->n) || !kf_job_scalar_int(sig, "C", &s->c) || !kf_job_scalar_int(sig, "HxW", &s->hw) ||
        !kf_job_scalar_int(sig, "group", &s->g))
        return kf_host_norm_why(why, cap, NAME, "N, C, HxW or group is not an int");
    if (s->n < 1 || s->c < 1 || s->hw < 1 || s->g < 1 || s->c % s->g)
        return kf_host_norm_why(why, cap, NAME, "empty, or C %% group != 0");
    if (kf_cuda_norm_eps(sig, -1.0, &s->eps) < 0)
        return kf_host_norm_why(why, cap, NAME, "eps is not a finite float");
    const kf_job_tensor *x = &sig->in[0];
    if (x->dtype != KF_F32)
        return kf_host_norm_why(why, cap, NAME, "input dtype %s not handled (f32 only)",
                                kf_dtype_name(x->dtype));
    if (x->ndim < 2 || x->sizes[0] != s->n || x->sizes[1] != s->c)
        return kf_host_norm_why(why, cap, NAME, "input is not [N, C, *]");
    int64_t hw = 1;
    for (int d = 2; d < x->ndim; d++) hw *= x->sizes[d];
    if (hw != s->hw) return kf_host_norm_why(why, cap, NAME, "HxW is not the input's pixels");
    if (s->n * s->c > INT64_MAX / s->hw)
        return kf_host_norm_why(why, cap, NAME, "too many elements");
    s->layout = kf_cuda_norm_layout(x);
    if (s->layout < 0)
        return kf_host_norm_why(why, cap, NAME, "input layout not handled (contiguous or "
                                                "channels-last only)");
    if (s->hw == 1) s->layout = 0; /* both orders are the same */
    if (s->layout == 1 && s->c > GN_MAX_C)
        return kf_host_norm_why(why, cap, NAME, "channels last with %lld channels (at most %d)",
                                (long long)s->c, GN_MAX_C);
    for (int i = 1; i < sig->n_in; i++) { /* weight, bias: [C] */
        const kf_job_tensor *p = &sig->in[i];
        const char *what = i == s->w ? "weight" : "bias";
        if (!kf_host_norm_f32(p, what, why, cap, NAME)) return 0;
        if (p->ndim != 1 || p->sizes[0] != s->c)
            return kf_host_norm_why(why, cap, NAME, "%s is not [C]", what);
    }
    const kf_job_tensor *y = &sig->out[0];
    if (y->dtype != KF_F32 || !kf_job_tensor_same_shape(x, y) ||
        !kf_cuda_norm_same_layout(y, s->layout))
        return kf_host_norm_why(why, cap, NAME, "output y is not an f32 tensor in the input's "
                                                "layout");
    for (int j = 1; j < 3; j++) {
        const char *what = j == 1 ? "mean" : "rstd";
        if (!kf_host_norm_f32(&sig->out[j], what, why, cap, NAME)) return 0;
        if (kf_job_tensor_numel(&sig->out[j]) != s->n * s->g)
            return kf_host_norm_why(why, cap, NAME, "%s has not N * group elements", what);
    }
    return 1;
}

static int gn_applies(const kf_job_sig *sig)
{
    gn_shape s;
    return gn_check(sig, &s, NULL, 0);
}

static int gn_why_not(const kf_job_sig *sig, char *why, size_t cap)
{
    gn_shape s;
    if (gn_check(sig, &s, why, cap)) return 0;
    return why && cap && why[0];
}

static kf_status gn_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap);

const kf_template kf_tmpl_host_group_norm = {
    .name = NAME,
    .backend = "host",
    .n_knobs = GN_NKNOBS,
    .knobs = gn_knobs,
    .applies = gn_applies,
    .render = gn_render,
    .why_not = gn_why_not,
};

static kf_status gn_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_host_group_norm;
    int vals[GN_NKNOBS];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    gn_shape s;
    gn_check(sig, &s, NULL, 0);
    int64_t d = s.c / s.g;
    /* channels last: groups per task */
    int64_t gb = s.layout ? (GN_CL_RUN + d - 1) / d : 1;
    if (gb > s.g) gb = s.g;

    const char *args[6];
    int na = 0;
    args[na++] = "const float*";
    if (s.w >= 0) args[na++] = "const float*";
    if (s.b >= 0) args[na++] = "const float*";
    args[na++] = "float*";
    args[na++] = "float*";
    args[na++] = "float*";

    kf_strbuf b = {0};
    kf_template_host_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b,
                     "#define KF_N %lldLL\n#define KF_C %lldLL\n#define KF_HW %lldLL\n"
                     "#define KF_G %lldLL\n#define KF_D %lldLL\n#define KF_CL %d\n"
                     "#define KF_GB %lldLL /* channels last: groups per task */\n"
                     "#define KF_EPS %.17g\n#define KF_HAS_W %d\n#define KF_HAS_B %d\n"
                     "/* inputs: input%s%s; outputs: out, mean, rstd */\n"
                     "#define KF_PARAMS const float *restrict x, %s%sfloat *restrict y, "
                     "float *restrict mean, float *restrict rstd\n"
                     "#define KF_W %s\n#define KF_B %s\n\n%s",
                     (long long)s.n, (long long)s.c, (long long)s.hw, (long long)s.g,
                     (long long)d, s.layout, (long long)gb, s.eps, s.w >= 0, s.b >= 0,
                     s.w >= 0 ? ", weight" : "", s.b >= 0 ? ", bias" : "",
                     s.w >= 0 ? "const float *restrict w, " : "",
                     s.b >= 0 ? "const float *restrict b, " : "",
                     s.w >= 0 ? "w" : "(const float *)0", s.b >= 0 ? "b" : "(const float *)0",
                     kf_body_host_norm_group_c);
    return kf_template_host_finish(t, &b, args, na, source, launch_json, err, errcap);
}
