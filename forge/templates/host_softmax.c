/* host_row_softmax: aten::_softmax / aten::_log_softmax over the last dim of a contiguous float32
 * tensor, one row at a time.
 *
 * Knobs:
 *  strategy 0 = two passes (max, then sum of exp; softmax stores exp(x - max) on the way and
 *           rescales it), 1 = one online pass keeping a running max and a sum rescaled when the
 *           max grows (per element with libm, per block of 256 * unroll columns with math=1),
 *           softmax then computes exp again for the output;
 *  unroll   = independent accumulator lanes in the reductions (1: one accumulator, which
 *           `omp simd` splits into vector lanes);
 *  omp      = rows over OpenMP threads: 0 off, 1 static split, 2/3 dynamic chunks of about
 *           8K/32K elements;
 *  math     = 1: inline vectorizable exp (kf_host_math_src), 0: libm expf (listed first so
 *           that the search starts from the fast one).
 * -INFINITY entries contribute 0 (a row that is all -INFINITY gives NaN, as eager does); a NaN
 * makes its row NaN. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/templates/template.h"

extern const char kf_host_math_src[]; /* templates_host.c */

static const kf_knob_def softmax_knobs[] = {
    {"strategy", 2, {0, 1}},
    {"unroll", 4, {1, 4, 8, 16}},
    {"omp", 4, {0, 1, 2, 3}},
    {"math", 2, {1, 0}},
};
#define SOFTMAX_NKNOBS ((int)(sizeof softmax_knobs / sizeof softmax_knobs[0]))

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
    "#if KF_MATH\n"
    "#define KF_EXP(v) kf_expf_neg(v) /* arguments are x - max <= 0, or NaN */\n"
    "#else\n"
    "#define KF_EXP(v) expf(v)\n"
    "#endif\n"
    "#if KF_MATH && KF_COLS >= 16\n"
    "/* The vector loops run over whole vectors of KF_VW columns; the last KF_TAIL columns are\n"
    " * done as one more whole vector that overlaps the one before (KF_OV..KF_COLS), its first\n"
    " * KF_DUP lanes left out of the sums, rather than by a scalar epilogue. */\n"
    "#define KF_VW 16\n"
    "#define KF_MAIN (KF_COLS - KF_COLS % KF_VW)\n"
    "#else\n"
    "#define KF_VW 1\n"
    "#define KF_MAIN KF_COLS\n"
    "#endif\n"
    "#define KF_TAIL (KF_COLS - KF_MAIN)\n"
    "#define KF_OV (KF_COLS - KF_VW)\n"
    "#define KF_DUP (KF_VW - KF_TAIL)\n"
    "/* the unrolled part of a row; a constant, so an empty tail loop is visibly empty */\n"
    "#define KF_BODY (KF_COLS - KF_COLS % KF_UNROLL)\n"
    "\n"
    "#if KF_STRATEGY == 1 && KF_MATH\n"
    "/* online by blocks: fold p[0..n) (but p[0..lo) only into the max: they are counted\n"
    " * already) into the running max *m and sum *s of exp(x - *m): the block's max, the sum\n"
    " * rescaled to it once, then the block's exps, all branch-free; c = 0 while every element so\n"
    " * far is -inf (so that -inf - c is -inf, not NaN) */\n"
    "static inline void kf_online(const float *restrict p, int64_t n, int64_t lo, float *m,\n"
    "                             float *s)\n"
    "{\n"
    "    float bm = *m, bs = 0.0f;\n"
    "#pragma omp simd reduction(max : bm)\n"
    "    for (int64_t j = 0; j < n; j++) bm = p[j] > bm ? p[j] : bm;\n"
    "    float c = bm == -INFINITY ? 0.0f : bm;\n"
    "#pragma omp simd reduction(+ : bs)\n"
    "    for (int64_t j = 0; j < n; j++) {\n"
    "        float e = KF_EXP(p[j] - c);\n"
    "        bs += j >= lo ? e : 0.0f;\n"
    "    }\n"
    "    *s = *s * KF_EXP(*m - c) + bs;\n"
    "    *m = bm;\n"
    "}\n"
    "#endif\n"
    "\n"
    "static void kf_row(const float *restrict x, float *restrict y)\n"
    "{\n"
    "    float m, s;\n"
    "    int64_t j;\n"
    "#if KF_STRATEGY == 0 && KF_UNROLL == 1\n"
    "    m = -INFINITY;\n"
    "#pragma omp simd reduction(max : m)\n"
    "    for (j = 0; j < KF_MAIN; j++) m = x[j] > m ? x[j] : m;\n"
    "#if KF_TAIL\n"
    "#pragma omp simd reduction(max : m)\n"
    "    for (j = KF_OV; j < KF_COLS; j++) m = x[j] > m ? x[j] : m;\n"
    "#endif\n"
    "    s = 0.0f;\n"
    "#pragma omp simd reduction(+ : s)\n"
    "    for (j = 0; j < KF_MAIN; j++) {\n"
    "        float e = KF_EXP(x[j] - m);\n"
    "#if !KF_LOG\n"
    "        y[j] = e;\n"
    "#endif\n"
    "        s += e;\n"
    "    }\n"
    "#if KF_TAIL\n"
    "#pragma omp simd reduction(+ : s)\n"
    "    for (j = KF_OV; j < KF_COLS; j++) {\n"
    "        float e = KF_EXP(x[j] - m); /* the same value again in the KF_DUP lanes */\n"
    "#if !KF_LOG\n"
    "        y[j] = e;\n"
    "#endif\n"
    "        s += j >= KF_MAIN ? e : 0.0f;\n"
    "    }\n"
    "#endif\n"
    "#elif KF_STRATEGY == 0\n"
    "    float mx[KF_UNROLL], sm[KF_UNROLL];\n"
    "    for (int u = 0; u < KF_UNROLL; u++) mx[u] = -INFINITY, sm[u] = 0.0f;\n"
    "    for (j = 0; j < KF_BODY; j += KF_UNROLL)\n"
    "        for (int u = 0; u < KF_UNROLL; u++) mx[u] = x[j + u] > mx[u] ? x[j + u] : mx[u];\n"
    "    for (j = KF_BODY; j < KF_COLS; j++) mx[0] = x[j] > mx[0] ? x[j] : mx[0];\n"
    "    m = mx[0];\n"
    "    for (int u = 1; u < KF_UNROLL; u++) m = mx[u] > m ? mx[u] : m;\n"
    "    for (j = 0; j < KF_BODY; j += KF_UNROLL)\n"
    "        for (int u = 0; u < KF_UNROLL; u++) {\n"
    "            float e = KF_EXP(x[j + u] - m);\n"
    "#if !KF_LOG\n"
    "            y[j + u] = e;\n"
    "#endif\n"
    "            sm[u] += e;\n"
    "        }\n"
    "    for (j = KF_BODY; j < KF_COLS; j++) {\n"
    "        float e = KF_EXP(x[j] - m);\n"
    "#if !KF_LOG\n"
    "        y[j] = e;\n"
    "#endif\n"
    "        sm[0] += e;\n"
    "    }\n"
    "    s = 0.0f;\n"
    "    for (int u = 0; u < KF_UNROLL; u++) s += sm[u];\n"
    "#elif KF_MATH\n"
    "#define KF_OBLK (256 * KF_UNROLL)\n"
    "    m = -INFINITY;\n"
    "    s = 0.0f;\n"
    "    for (j = 0; j < KF_MAIN; j += KF_OBLK)\n"
    "        kf_online(x + j, KF_MAIN - j < KF_OBLK ? KF_MAIN - j : KF_OBLK, 0, &m, &s);\n"
    "#if KF_TAIL\n"
    "    kf_online(x + KF_OV, KF_VW, KF_DUP, &m, &s);\n"
    "#endif\n"
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
    "    /* the output, from x alone (so the overlapping last vector may write it twice) except\n"
    "     * for the rescale of softmax's stored exps, which leaves the KF_DUP lanes alone */\n"
    "#if KF_LOG\n"
    "    float ls = logf(s);\n"
    "#pragma omp simd\n"
    "    for (j = 0; j < KF_MAIN; j++) y[j] = (x[j] - m) - ls;\n"
    "#if KF_TAIL\n"
    "#pragma omp simd\n"
    "    for (j = KF_OV; j < KF_COLS; j++) y[j] = (x[j] - m) - ls;\n"
    "#endif\n"
    "#else\n"
    "    float r = 1.0f / s;\n"
    "#if KF_STRATEGY == 0 && KF_UNROLL > 1\n"
    "#pragma omp simd\n"
    "    for (j = 0; j < KF_COLS; j++) y[j] *= r; /* the lanes wrote each y once */\n"
    "#elif KF_STRATEGY == 0\n"
    "#pragma omp simd\n"
    "    for (j = 0; j < KF_MAIN; j++) y[j] *= r;\n"
    "#if KF_TAIL\n"
    "#pragma omp simd\n"
    "    for (j = KF_OV; j < KF_COLS; j++) y[j] *= j >= KF_MAIN ? r : 1.0f;\n"
    "#endif\n"
    "#else\n"
    "#pragma omp simd\n"
    "    for (j = 0; j < KF_MAIN; j++) y[j] = KF_EXP(x[j] - m) * r;\n"
    "#if KF_TAIL\n"
    "#pragma omp simd\n"
    "    for (j = KF_OV; j < KF_COLS; j++) y[j] = KF_EXP(x[j] - m) * r;\n"
    "#endif\n"
    "#endif\n"
    "#endif\n"
    "}\n"
    "\n"
    "void kf_kernel(const float *restrict x, float *restrict y)\n"
    "{\n"
    "#if KF_OMP == 1\n"
    "#pragma omp parallel for schedule(static)\n"
    "#elif KF_OMP >= 2\n"
    "#pragma omp parallel for schedule(dynamic, KF_RPC)\n"
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
    int vals[SOFTMAX_NKNOBS];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    const kf_job_tensor *x = &sig->in[0];
    int64_t cols = x->sizes[x->ndim - 1], rows = kf_job_tensor_numel(x) / cols;
    /* rows per dynamic OpenMP chunk: about 8K (omp 2) or 32K (omp 3) elements */
    int64_t rpc = (vals[2] == 3 ? 32768 : 8192) / cols;
    rpc = rpc < 1 ? 1 : rpc > rows ? rows : rpc;

    kf_strbuf b = {0};
    kf_template_host_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b,
                     "#define KF_ROWS %lldLL\n#define KF_COLS %lldLL\n#define KF_LOG %d\n"
                     "#define KF_RPC %lld\n/* inputs: self; outputs: out */\n\n%s%s",
                     (long long)rows, (long long)cols, !strcmp(sig->op, "aten::_log_softmax"),
                     (long long)rpc, vals[3] ? kf_host_math_src : "", softmax_body);
    static const char *const args[] = {"const float*", "float*"};
    return kf_template_host_finish(t, &b, args, 2, source, launch_json, err, errcap);
}
