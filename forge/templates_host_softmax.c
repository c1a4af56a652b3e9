/* host_row_softmax: aten::_softmax / aten::_log_softmax over the last dim of a contiguous float32
 * tensor, one row at a time.
 *
 * Knobs: strategy 0 = two passes (max, then sum of exp; softmax stores exp(x - max) on the way and
 * rescales it), 1 = one online pass keeping a running max and a sum rescaled when the max grows;
 * unroll = independent accumulator lanes in the reductions; omp = rows split over OpenMP threads.
 * -INFINITY entries contribute 0 (a row that is all -INFINITY gives NaN, as eager does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template.h"

static const kf_knob_def softmax_knobs[] = {
    {"strategy", 2, {0, 1}},
    {"unroll", 3, {1, 4, 8}},
    {"omp", 2, {0, 1}},
};

static int softmax_applies(const kf_job_sig *sig)
{
    if (!sig) return 0;
    int is_log = !strcmp(sig->op, "aten::_log_softmax");
    if (!is_log && strcmp(sig->op, "aten::_softmax")) return 0;
    if (sig->n_in != 1 || sig->n_out != 1) return 0;
    const kf_job_tensor *x = &sig->in[0], *y = &sig->out[0];
    if (x->ndim < 1 || !kf_job_tensor_dense_f32(x) || !kf_job_tensor_dense_f32(y) ||
        !kf_job_tensor_same_shape(x, y))
        return 0;
    const kf_job_scalar *dim = kf_job_scalar_find(sig, "dim");
    if (!dim || dim->kind != 'i' || (dim->i != -1 && dim->i != x->ndim - 1)) return 0;
    const kf_job_scalar *h2f = kf_job_scalar_find(sig, "half_to_float");
    if (!h2f || h2f->kind != 'b' || h2f->i != 0) return 0;
    return 1;
}

static const char softmax_body[] =
    "/* the unrolled part of a row; a constant, so an empty tail loop is visibly empty */\n"
    "#define KF_BODY (KF_COLS - KF_COLS % KF_UNROLL)\n"
    "static void kf_row(const float *restrict x, float *restrict y)\n"
    "{\n"
    "    float m, s;\n"
    "    int64_t j;\n"
    "#if KF_STRATEGY == 0\n"
    "    float mx[KF_UNROLL], sm[KF_UNROLL];\n"
    "    for (int u = 0; u < KF_UNROLL; u++) mx[u] = -INFINITY, sm[u] = 0.0f;\n"
    "    for (j = 0; j < KF_BODY; j += KF_UNROLL)\n"
    "        for (int u = 0; u < KF_UNROLL; u++) mx[u] = x[j + u] > mx[u] ? x[j + u] : mx[u];\n"
    "    for (j = KF_BODY; j < KF_COLS; j++) mx[0] = x[j] > mx[0] ? x[j] : mx[0];\n"
    "    m = mx[0];\n"
    "    for (int u = 1; u < KF_UNROLL; u++) m = mx[u] > m ? mx[u] : m;\n"
    "    for (j = 0; j < KF_BODY; j += KF_UNROLL)\n"
    "        for (int u = 0; u < KF_UNROLL; u++) {\n"
    "            float e = expf(x[j + u] - m);\n"
    "#if !KF_LOG\n"
    "            y[j + u] = e;\n"
    "#endif\n"
    "            sm[u] += e;\n"
    "        }\n"
    "    for (j = KF_BODY; j < KF_COLS; j++) {\n"
    "        float e = expf(x[j] - m);\n"
    "#if !KF_LOG\n"
    "        y[j] = e;\n"
    "#endif\n"
    "        sm[0] += e;\n"
    "    }\n"
    "    s = 0.0f;\n"
    "    for (int u = 0; u < KF_UNROLL; u++) s += sm[u];\n"
    "#else\n"
    "    /* online: lane u keeps max mm[u] and sum ss[u] of exp(x - mm[u]); -inf adds nothing */\n"
    "    float mm[KF_UNROLL], ss[KF_UNROLL];\n"
    "    for (int u = 0; u < KF_UNROLL; u++) mm[u] = -INFINITY, ss[u] = 0.0f;\n"
    "#define KF_ONLINE(u, v)                                   \\\n"
    "    do {                                                  \\\n"
    "        float v_ = (v);                                   \\\n"
    "        if (v_ > mm[u]) {                                 \\\n"
    "            ss[u] = ss[u] * expf(mm[u] - v_) + 1.0f;      \\\n"
    "            mm[u] = v_;                                   \\\n"
    "        } else if (v_ != -INFINITY) {                     \\\n"
    "            ss[u] += expf(v_ - mm[u]);                    \\\n"
    "        }                                                 \\\n"
    "    } while (0)\n"
    "    for (j = 0; j < KF_BODY; j += KF_UNROLL)\n"
    "        for (int u = 0; u < KF_UNROLL; u++) KF_ONLINE(u, x[j + u]);\n"
    "    for (j = KF_BODY; j < KF_COLS; j++) KF_ONLINE(0, x[j]);\n"
    "    m = mm[0];\n"
    "    for (int u = 1; u < KF_UNROLL; u++) m = mm[u] > m ? mm[u] : m;\n"
    "    s = 0.0f;\n"
    "    for (int u = 0; u < KF_UNROLL; u++)\n"
    "        if (ss[u] != 0.0f) s += ss[u] * expf(mm[u] - m);\n"
    "#endif\n"
    "#if KF_LOG\n"
    "    float ls = logf(s);\n"
    "    for (j = 0; j < KF_COLS; j++) y[j] = (x[j] - m) - ls;\n"
    "#else\n"
    "    float r = 1.0f / s;\n"
    "#if KF_STRATEGY == 0\n"
    "    for (j = 0; j < KF_COLS; j++) y[j] *= r;\n"
    "#else\n"
    "    for (j = 0; j < KF_COLS; j++) y[j] = expf(x[j] - m) * r;\n"
    "#endif\n"
    "#endif\n"
    "}\n"
    "\n"
    "void kf_kernel(const float *restrict x, float *restrict y)\n"
    "{\n"
    "#if KF_OMP\n"
    "#pragma omp parallel for schedule(static)\n"
    "#endif\n"
    "    for (int64_t r = 0; r < KF_ROWS; r++) kf_row(x + r * KF_COLS, y + r * KF_COLS);\n"
    "}\n";

static kf_status softmax_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                                char **launch_json, char *err, size_t errcap);

const kf_template kf_tmpl_host_row_softmax = {
    .name = "host_row_softmax",
    .backend = "host",
    .n_knobs = (int)(sizeof softmax_knobs / sizeof softmax_knobs[0]),
    .knobs = softmax_knobs,
    .applies = softmax_applies,
    .render = softmax_render,
};

static kf_status softmax_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                                char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_host_row_softmax;
    int vals[3];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    const kf_job_tensor *x = &sig->in[0];
    int64_t cols = x->sizes[x->ndim - 1], rows = kf_job_tensor_numel(x) / cols;

    kf_strbuf b = {0};
    kf_template_host_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b,
                     "#define KF_ROWS %lldLL\n#define KF_COLS %lldLL\n#define KF_LOG %d\n"
                     "/* inputs: self; outputs: out */\n\n%s",
                     (long long)rows, (long long)cols, !strcmp(sig->op, "aten::_log_softmax"),
                     softmax_body);
    static const char *const args[] = {"const float*", "float*"};
    return kf_template_host_finish(t, &b, args, 2, source, launch_json, err, errcap);
}
