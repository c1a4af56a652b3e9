/* Elementwise host templates over contiguous float32 tensors of the same shape:
 *   host_eltwise_unary:  aten::gelu (approximate "none": the erf formula, "tanh": the tanh
 *                        formula), aten::silu, aten::relu (NaN stays NaN, as eager's clamp does);
 *   host_eltwise_binary: aten::add.Tensor (y = a + alpha * b, alpha int or float, cast to float
 *                        as eager does) and aten::mul.Tensor; no broadcasting. `other` may be a
 *                        Python number (`x + 1e-6`: absent from in[], a scalar of kind d/i/b,
 *                        forge/job/sig.h), converted to float as eager does for a float32 tensor
 *                        and printed into the kernel as its exact bits.
 * Knobs: unroll = elements per inner step; omp = chunks over OpenMP threads (0 off, 1 static
 * split, 2 dynamic: a thread takes one chunk at a time); chunk = elements per chunk; unary only:
 * math = 1 inline vectorizable forms (kf_body_host_math_h: gelu with kf_erff, tanh-gelu and silu as
 * x * kf_sigmoidf(z), since 0.5 (1 + tanh(z/2)) = sigmoid(z)), 0 libm erff/tanhf/expf; listed
 * first so that the search starts from the fast one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/template.h"

static const kf_knob_def unary_knobs[] = {
    {"unroll", 3, {1, 4, 8}},
    {"omp", 3, {0, 1, 2}},
    {"chunk", 2, {1024, 16384}},
    {"math", 2, {1, 0}},
};
#define UNARY_NKNOBS ((int)(sizeof unary_knobs / sizeof unary_knobs[0]))

static const kf_knob_def binary_knobs[] = {
    {"unroll", 3, {1, 4, 8}},
    {"omp", 3, {0, 1, 2}},
    {"chunk", 2, {1024, 16384}},
};
#define BINARY_NKNOBS ((int)(sizeof binary_knobs / sizeof binary_knobs[0]))

/* The chunk loop, kernels/host_eltwise.c, is the kernel's body; KF_F(i) computes element i. */

enum { UN_GELU_ERF = 0, UN_GELU_TANH = 1, UN_SILU = 2, UN_RELU = 3 };

/* The unary op of this signature (UN_*), or -1. */
static int unary_kind(const kf_job_sig *sig)
{
    if (!strcmp(sig->op, "aten::silu")) return UN_SILU;
    if (!strcmp(sig->op, "aten::relu")) return UN_RELU;
    if (!strcmp(sig->op, "aten::gelu")) {
        const kf_job_scalar *a = kf_job_scalar_find(sig, "approximate");
        if (!a || a->kind != 's') return -1;
        if (!strcmp(a->s, "none")) return UN_GELU_ERF;
        if (!strcmp(a->s, "tanh")) return UN_GELU_TANH;
    }
    return -1;
}

static int unary_applies(const kf_job_sig *sig)
{
    if (!sig || unary_kind(sig) < 0 || sig->n_in != 1 || sig->n_out != 1) return 0;
    return kf_job_tensor_dense_f32(&sig->in[0]) && kf_job_tensor_dense_f32(&sig->out[0]) &&
           kf_job_tensor_same_shape(&sig->in[0], &sig->out[0]);
}

/* the element function, [math][kind] */
static const char *const unary_fn[2][4] = {
    {
        [UN_GELU_ERF] = "    return 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f));\n",
        [UN_GELU_TANH] = "    float inner = 0.79788456080286535588f *\n"
                         "                  (v + 0.044715f * v * v * v);\n"
                         "    return 0.5f * v * (1.0f + tanhf(inner));\n",
        [UN_SILU] = "    return v / (1.0f + expf(-v));\n",
        [UN_RELU] = "    return (v > 0.0f || isnan(v)) ? v : 0.0f;\n",
    },
    {
        [UN_GELU_ERF] = "    return 0.5f * v * (1.0f + kf_erff(v * 0.70710678118654752440f));\n",
        /* 0.5 (1 + tanh(w)) = sigmoid(2 w); 2 sqrt(2/pi) = 1.5957691216057308 */
        [UN_GELU_TANH] = "    float z = 1.5957691216057308f * (v + 0.044715f * v * v * v);\n"
                         "    return v * kf_sigmoidf(z);\n",
        [UN_SILU] = "    return v * kf_sigmoidf(v);\n",
        [UN_RELU] = "    return v < 0.0f ? 0.0f : v; /* NaN stays NaN */\n",
    },
};

/* `other` may be a wrapped Python number (kf_job_scalar_float: then one input) */
static int binary_applies(const kf_job_sig *sig)
{
    float other;
    if (!sig || sig->n_out != 1) return 0;
    const int n_in = kf_job_scalar_float(sig, "other", &other) ? 1 : 2;
    if (sig->n_in != n_in || kf_job_scalar_find(sig, "self")) return 0;
    if (!strcmp(sig->op, "aten::add.Tensor")) {
        const kf_job_scalar *al = kf_job_scalar_find(sig, "alpha");
        if (al && al->kind != 'i' && !(al->kind == 'd' && isfinite((float)al->d))) return 0;
    } else if (strcmp(sig->op, "aten::mul.Tensor")) {
        return 0;
    }
    for (int i = 0; i < n_in; i++)
        if (!kf_job_tensor_dense_f32(&sig->in[i]) ||
            !kf_job_tensor_same_shape(&sig->in[i], &sig->out[0]))
            return 0;
    return kf_job_tensor_dense_f32(&sig->out[0]);
}

static kf_status unary_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                              char **launch_json, char *err, size_t errcap);
static kf_status binary_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                               char **launch_json, char *err, size_t errcap);

const kf_template kf_tmpl_host_eltwise_unary = {
    .name = "host_eltwise_unary",
    .backend = "host",
    .n_knobs = UNARY_NKNOBS,
    .knobs = unary_knobs,
    .applies = unary_applies,
    .render = unary_render,
};

const kf_template kf_tmpl_host_eltwise_binary = {
    .name = "host_eltwise_binary",
    .backend = "host",
    .n_knobs = BINARY_NKNOBS,
    .knobs = binary_knobs,
    .applies = binary_applies,
    .render = binary_render,
};

static kf_status unary_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                              char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_host_eltwise_unary;
    int vals[UNARY_NKNOBS];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    kf_strbuf b = {0};
    kf_template_host_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b,
                     "#define KF_N %lldLL\n/* inputs: self; outputs: out */\n\n%s"
                     "static inline float kf_f(float v)\n{\n%s}\n\n"
                     "#define KF_F(i) (y[i] = kf_f(x[i]))\n"
                     "void kf_kernel(const float *restrict x, float *restrict y)\n%s",
                     (long long)kf_job_tensor_numel(&sig->in[0]),
                     vals[3] ? kf_body_host_math_h : "", unary_fn[vals[3] != 0][unary_kind(sig)],
                     kf_body_host_eltwise_c);
    static const char *const args[] = {"const float*", "float*"};
    return kf_template_host_finish(t, &b, args, 2, source, launch_json, err, errcap);
}

static kf_status binary_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                               char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_host_eltwise_binary;
    int vals[BINARY_NKNOBS];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    float other = 0.0f;
    const int scalar = kf_job_scalar_float(sig, "other", &other);
    kf_strbuf b = {0};
    kf_template_host_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b, "#define KF_N %lldLL\n/* inputs: self%s; outputs: out */\n",
                     (long long)kf_job_tensor_numel(&sig->in[0]), scalar ? "" : ", other");
    /* a Python number `other`: the constant KF_OTHER in c[i]'s place (%a: its exact bits) */
    if (scalar)
        kf_strbuf_printf(&b, "#define KF_OTHER ((float)%a) /* other = %.9g */\n", (double)other,
                         (double)other);
    const char *c = scalar ? "KF_OTHER" : "c[i]";
    if (!strcmp(sig->op, "aten::mul.Tensor")) {
        kf_strbuf_printf(&b, "#define KF_F(i) (y[i] = a[i] * %s)\n", c);
    } else {
        const kf_job_scalar *al = kf_job_scalar_find(sig, "alpha");
        float alpha = !al ? 1.0f : al->kind == 'i' ? (float)al->i : (float)al->d;
        if (alpha == 1.0f)
            kf_strbuf_printf(&b, "#define KF_F(i) (y[i] = a[i] + %s)\n", c);
        else /* %.9g round-trips a float exactly */
            kf_strbuf_printf(&b,
                             "#define KF_ALPHA ((float)%.9g)\n"
                             "#define KF_F(i) (y[i] = a[i] + KF_ALPHA * %s)\n",
                             (double)alpha, c);
    }
    if (scalar) {
        kf_strbuf_printf(&b, "\nvoid kf_kernel(const float *restrict a, float *restrict y)\n%s",
                         kf_body_host_eltwise_c);
        static const char *const args[] = {"const float*", "float*"};
        return kf_template_host_finish(t, &b, args, 2, source, launch_json, err, errcap);
    }
    kf_strbuf_printf(&b,
                     "\nvoid kf_kernel(const float *restrict a, const float *restrict c, "
                     "float *restrict y)\n%s",
                     kf_body_host_eltwise_c);
    static const char *const args[] = {"const float*", "const float*", "float*"};
    return kf_template_host_finish(t, &b, args, 3, source, launch_json, err, errcap);
}
