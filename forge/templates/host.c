/* The builtin template table and the helpers the templates share (template.h). The host
 * templates themselves live in templates_host_softmax.c, templates_host_norm.c,
 * templates_host_eltwise.c and templates_host_cat.c; the inline math their `math` knob selects
 * is kf_host_math_src below (declared in each user: it is private to the host templates and
 * their test). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/templates/template.h"

extern const kf_template kf_tmpl_host_row_softmax;
extern const kf_template kf_tmpl_host_layer_norm;
extern const kf_template kf_tmpl_host_eltwise_unary;
extern const kf_template kf_tmpl_host_eltwise_binary;
extern const kf_template kf_tmpl_host_cat;
extern const kf_template kf_tmpl_cuda_layer_norm;
extern const kf_template kf_tmpl_cuda_rms_norm;
extern const kf_template kf_tmpl_cuda_layer_norm_cols;
extern const kf_template kf_tmpl_cuda_rms_norm_cols;
extern const kf_template kf_tmpl_cuda_group_norm;
extern const kf_template kf_tmpl_cuda_batch_norm_eval;
extern const kf_template kf_tmpl_cuda_row_softmax;
extern const kf_template kf_tmpl_cuda_eltwise_unary;
extern const kf_template kf_tmpl_cuda_eltwise_binary;
extern const kf_template kf_tmpl_cuda_reduce_mean;
extern const kf_template kf_tmpl_cuda_eltwise_copy;
extern const kf_template kf_tmpl_cuda_max_pool2d;
extern const kf_template kf_tmpl_cuda_cat;
extern const kf_template kf_tmpl_cuda_depthwise_conv2d;
extern const kf_template kf_tmpl_cuda_solve_triangular;

const kf_template *const kf_builtin_templates[] = {
    &kf_tmpl_host_row_softmax,
    &kf_tmpl_host_layer_norm,
    &kf_tmpl_host_eltwise_unary,
    &kf_tmpl_host_eltwise_binary,
    &kf_tmpl_host_cat,
    &kf_tmpl_cuda_layer_norm,
    &kf_tmpl_cuda_rms_norm,
    &kf_tmpl_cuda_layer_norm_cols,
    &kf_tmpl_cuda_rms_norm_cols,
    &kf_tmpl_cuda_group_norm,
    &kf_tmpl_cuda_batch_norm_eval,
    &kf_tmpl_cuda_row_softmax,
    &kf_tmpl_cuda_eltwise_unary,
    &kf_tmpl_cuda_eltwise_binary,
    &kf_tmpl_cuda_reduce_mean,
    &kf_tmpl_cuda_eltwise_copy,
    &kf_tmpl_cuda_max_pool2d,
    &kf_tmpl_cuda_cat,
    &kf_tmpl_cuda_depthwise_conv2d,
    &kf_tmpl_cuda_solve_triangular,
    NULL,
};

kf_status kf_template_knob_values(const kf_template *t, const int *knob_idx, int *vals, char *err,
                                  size_t errcap)
{
    for (int k = 0; k < t->n_knobs; k++) {
        if (!knob_idx || knob_idx[k] < 0 || knob_idx[k] >= t->knobs[k].n_values) {
            if (err && errcap)
                snprintf(err, errcap, "%s: knob \"%s\" index %d out of range [0, %d)", t->name,
                         t->knobs[k].name, knob_idx ? knob_idx[k] : -1, t->knobs[k].n_values);
            return KF_ERR_INVALID;
        }
        vals[k] = t->knobs[k].values[knob_idx[k]];
    }
    return KF_OK;
}

char *kf_template_host_launch_json(const char *const *arg_types, int n)
{
    kf_strbuf b = {0};
    kf_strbuf_printf(&b, "{\"entry\":\"kf_kernel\",\"grid\":[1,1,1],\"block\":[1,1,1],\"smem\":0,"
                         "\"args\":[");
    for (int i = 0; i < n; i++) kf_strbuf_printf(&b, "%s\"%s\"", i ? "," : "", arg_types[i]);
    kf_strbuf_printf(&b, "]}");
    return kf_strbuf_take(&b);
}

void kf_template_host_prologue(kf_strbuf *b, const kf_template *t, const kf_job_sig *sig,
                               const int *vals)
{
    kf_strbuf_printf(b, "/* Kernel Forge builtin template %s for %.64s; knobs:", t->name, sig->op);
    for (int k = 0; k < t->n_knobs; k++) kf_strbuf_printf(b, " %s=%d", t->knobs[k].name, vals[k]);
    kf_strbuf_printf(b, " */\n#include <math.h>\n#include <stdint.h>\n\n");
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

kf_status kf_template_render_begin(const kf_template *t, const kf_job_sig *sig, const int *knob_idx,
                                   int *vals, char **source, char **launch_json, char *err,
                                   size_t errcap)
{
    if (source) *source = NULL;
    if (launch_json) *launch_json = NULL;
    if (!sig || !source || !launch_json) {
        if (err && errcap) snprintf(err, errcap, "%s: missing argument", t->name);
        return KF_ERR_INVALID;
    }
    if (!t->applies(sig)) {
        if (err && errcap)
            snprintf(err, errcap, "%s: does not apply to this %.64s signature", t->name, sig->op);
        return KF_ERR_UNSUPPORTED;
    }
    return kf_template_knob_values(t, knob_idx, vals, err, errcap);
}

kf_status kf_template_host_finish(const kf_template *t, kf_strbuf *b, const char *const *arg_types,
                                  int n, char **source, char **launch_json, char *err,
                                  size_t errcap)
{
    *source = kf_strbuf_take(b);
    *launch_json = kf_template_host_launch_json(arg_types, n);
    if (*source && *launch_json) return KF_OK;
    free(*source);
    free(*launch_json);
    *source = *launch_json = NULL;
    if (err && errcap) snprintf(err, errcap, "%s: out of memory", t->name);
    return KF_ERR_NOMEM;
}

/* ---- inline math for host kernels ---- */

/* Float exp, sigmoid and erf that GCC vectorizes without -ffast-math: straight-line code,
 * selects as ternaries, fmaf for the polynomials (ISO C mode does not contract a*b+c on its
 * own), no float->int conversion (the round-to-integer trick keeps n in the bits of t, so NaN is
 * no undefined behaviour), unsigned arithmetic on the bit patterns. Each clamp costs a compare
 * and a blend (GCC keeps NaN through `x < lo ? lo : x`, and chained clamps cost more), so the
 * kernels use kf_expf_neg (one clamp) and build the rest on it. Worst relative errors, measured
 * over every float against double libm: kf_expf and kf_expf_neg 8.5e-8 (denormal results within
 * one denormal step), kf_sigmoidf 1.8e-7, kf_erff 3.6e-7 (6 steps of the float grid just below
 * 1; the rational fit itself is 2e-8).
 * Special values as libm: exp(-inf) = 0, exp(+inf) and overflow = +inf, exp(NaN) = NaN;
 * sigmoid(-inf) = 0, sigmoid(+inf) = 1; erf(+-inf) = +-1; NaN stays NaN throughout. */
const char kf_host_math_src[] =
    "/* ---- inline math (math=1): branch-free, vectorizable ---- */\n"
    "static inline float kf_u2f(uint32_t u)\n"
    "{\n"
    "    union { uint32_t u; float f; } c;\n"
    "    c.u = u;\n"
    "    return c.f;\n"
    "}\n"
    "static inline uint32_t kf_f2u(float f)\n"
    "{\n"
    "    union { uint32_t u; float f; } c;\n"
    "    c.f = f;\n"
    "    return c.u;\n"
    "}\n"
    "/* exp(r) for |r| <= ln2/2: 1 + r + r^2 P(r), P of degree 4 (relative minimax fit, 3e-9) */\n"
    "static inline float kf_exp_poly(float r)\n"
    "{\n"
    "    float p = 1.3814539416e-03f;\n"
    "    p = fmaf(p, r, 8.3687454462e-03f);\n"
    "    p = fmaf(p, r, 4.1668388993e-02f);\n"
    "    p = fmaf(p, r, 1.6666521132e-01f);\n"
    "    p = fmaf(p, r, 4.9999994040e-01f);\n"
    "    return fmaf(p, r * r, r) + 1.0f;\n"
    "}\n"
    "/* clamped x (NaN stays NaN) -> t = 1.5 * 2^23 + n, n = round(x / ln2) in its low bits, and\n"
    " * r = x - n ln2, with ln2 in two parts so that r is exact enough for any n in range */\n"
    "#define KF_EXP_REDUCE(xc, t, r)                                  \\\n"
    "    float t = fmaf(xc, 1.44269504088896341f, 0x1.8p23f);          \\\n"
    "    float n_ = t - 0x1.8p23f;                                    \\\n"
    "    float r = fmaf(n_, -0.693359375f, xc);                       \\\n"
    "    r = fmaf(n_, 2.12194440e-4f, r)\n"
    "/* exp(x) for x <= 0 or NaN (softmax's x - max): 2^n = 2^(n+64) * 2^-64, the first product\n"
    " * exact, the second rounding once (to a denormal, or to 0 below exp(-104)) */\n"
    "static inline float kf_expf_neg(float x)\n"
    "{\n"
    "    float xc = x < -104.0f ? -104.0f : x;\n"
    "    KF_EXP_REDUCE(xc, t, r);\n"
    "    float s = kf_u2f((kf_f2u(t) - 0x4B400000u + 191u) << 23);\n"
    "    return kf_exp_poly(r) * s * 0x1p-64f;\n"
    "}\n"
    "/* exp(x) for any x: 2^n applied as 2^h * 2^(n-h), h = floor(n/2), so that both factors\n"
    " * are normal for n in [-150, 129] and the result (denormal, or overflow to inf) rounds once\n"
    " */\n"
    "static inline float kf_expf(float x)\n"
    "{\n"
    "    float xc = x < -104.0f ? -104.0f : x;\n"
    "    xc = xc > 89.0f ? 89.0f : xc; /* exp(89) > FLT_MAX */\n"
    "    KF_EXP_REDUCE(xc, t, r);\n"
    "    uint32_t n = kf_f2u(t) - 0x4B400000u;\n"
    "    uint32_t h = (uint32_t)((int32_t)n >> 1);\n"
    "    return kf_exp_poly(r) * kf_u2f((h + 127u) << 23) * kf_u2f((n - h + 127u) << 23);\n"
    "}\n"
    "/* 1 / (1 + exp(-z)) from e = exp(-|z|) <= 1, which cannot overflow: 1 / (1 + e) for z >= 0,\n"
    " * e / (1 + e) below */\n"
    "static inline float kf_sigmoidf(float z)\n"
    "{\n"
    "    float e = kf_expf_neg(-fabsf(z));\n"
    "    return (z >= 0.0f ? 1.0f : e) / (1.0f + e);\n"
    "}\n"
    "/* erf(x) = x P(x^2) / Q(x^2) for |x| <= 3.925 (a relative minimax fit, 2e-8); beyond, erf\n"
    " * rounds to +-1 in float, and the select drops whatever the rational gave there (NaN at\n"
    " * inf) */\n"
    "static inline float kf_erff(float x)\n"
    "{\n"
    "    float a = fabsf(x), u = a * a;\n"
    "    float p = 2.041971186e-06f;\n"
    "    p = fmaf(p, u, 2.848067523e-04f);\n"
    "    p = fmaf(p, u, 3.779555667e-03f);\n"
    "    p = fmaf(p, u, 5.279011766e-02f);\n"
    "    p = fmaf(p, u, 1.907826764e-01f);\n"
    "    p = fmaf(p, u, 1.128379145e+00f);\n"
    "    float q = 3.800398222e-05f;\n"
    "    q = fmaf(q, u, 1.165198537e-03f);\n"
    "    q = fmaf(q, u, 1.499733027e-02f);\n"
    "    q = fmaf(q, u, 1.142570311e-01f);\n"
    "    q = fmaf(q, u, 5.024094646e-01f);\n"
    "    q = fmaf(q, u, 1.0f);\n"
    "    float y = a * p / q;\n"
    "    return copysignf(a > 3.925f ? 1.0f : y, x);\n"
    "}\n"
    "\n";
