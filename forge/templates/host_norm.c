/* host_layer_norm: aten::native_layer_norm over the trailing dims named by normalized_shape, for
 * a contiguous float32 input with optional float32 weight and bias (None: absent from sig->in and
 * a scalar of kind 'n' under its schema name, template.h). Outputs: y like the input, mean and
 * rstd with one element per row (eager's [rows..., 1...] layout, any contiguous shape with that
 * many elements works).
 *
 * Statistics are accumulated in double (the output is within float rounding of the exact value,
 * which is what torch's cascaded float sums approximate); y = (x - mean) * rstd * w + b in float.
 * Knobs:
 *  variance 0 = two passes (mean, then sum of squared deviations), 1 = Welford (one pass, lanes
 *           merged with Chan's formula), 2 = one pass of sums of (x - x[0]) and its square: the
 *           shift is an element of the row, so (mean - shift)^2 <= n var and the cancellation in
 *           q - s^2/n costs at most a factor n of double rounding;
 *  unroll   = accumulator lanes (1: one accumulator, which `omp simd` splits into vector lanes);
 *  omp      = rows over OpenMP threads: 0 off, 1 static split, 2/3 dynamic chunks of about
 *           8K/32K elements. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/templates/template.h"

static const kf_knob_def ln_knobs[] = {
    {"variance", 3, {0, 1, 2}},
    {"unroll", 4, {1, 4, 8, 16}},
    {"omp", 4, {0, 1, 2, 3}},
};
#define LN_NKNOBS ((int)(sizeof ln_knobs / sizeof ln_knobs[0]))

/* Which optional tensors are present: 0 = no, 1 = yes; -1 when the signature is ambiguous. */
static int ln_presence(const kf_job_sig *sig, int *has_w, int *has_b)
{
    const kf_job_scalar *ws = kf_job_scalar_find(sig, "weight");
    const kf_job_scalar *bs = kf_job_scalar_find(sig, "bias");
    int w_none = ws && ws->kind == 'n', b_none = bs && bs->kind == 'n';
    switch (sig->n_in) {
    case 1: *has_w = *has_b = 0; return 0;
    case 3: *has_w = *has_b = 1; return w_none || b_none ? -1 : 0;
    case 2:
        if (w_none == b_none) return -1;
        *has_w = !w_none;
        *has_b = !b_none;
        return 0;
    default: return -1;
    }
}

static int ln_applies(const kf_job_sig *sig)
{
    if (!sig || strcmp(sig->op, "aten::native_layer_norm")) return 0;
    int has_w, has_b;
    if (ln_presence(sig, &has_w, &has_b) < 0 || sig->n_out != 3) return 0;
    const kf_job_tensor *x = &sig->in[0];
    if (x->ndim < 1 || !kf_job_tensor_dense_f32(x)) return 0;
    const kf_job_scalar *ns = kf_job_scalar_find(sig, "normalized_shape");
    if (!ns || ns->kind != 'l' || ns->n < 1 || ns->n > x->ndim) return 0;
    int64_t n = 1;
    for (int k = 0; k < ns->n; k++) {
        if (ns->v[k] != x->sizes[x->ndim - ns->n + k]) return 0;
        n *= ns->v[k];
    }
    for (int i = 1; i < sig->n_in; i++) { /* weight, bias: exactly normalized_shape */
        const kf_job_tensor *p = &sig->in[i];
        if (!kf_job_tensor_dense_f32(p) || p->ndim != ns->n) return 0;
        for (int k = 0; k < ns->n; k++)
            if (p->sizes[k] != ns->v[k]) return 0;
    }
    const kf_job_scalar *eps = kf_job_scalar_find(sig, "eps");
    if (!eps || (eps->kind != 'd' && eps->kind != 'i') || (eps->kind == 'd' && !isfinite(eps->d)))
        return 0;
    int64_t rows = kf_job_tensor_numel(x) / n;
    if (!kf_job_tensor_dense_f32(&sig->out[0]) || !kf_job_tensor_same_shape(x, &sig->out[0]))
        return 0;
    for (int i = 1; i < 3; i++)
        if (!kf_job_tensor_dense_f32(&sig->out[i]) || kf_job_tensor_numel(&sig->out[i]) != rows)
            return 0;
    return 1;
}

static const char ln_body[] =
    "/* the unrolled part of a row; a constant, so an empty tail loop is visibly empty */\n"
    "#define KF_BODY (KF_N - KF_N % KF_UNROLL)\n"
    "static void kf_row(const float *restrict x, const float *restrict w,\n"
    "                   const float *restrict b,\n"
    "                   float *restrict y, float *restrict mean_out, float *restrict rstd_out)\n"
    "{\n"
    "    double mean, var;\n"
    "    int64_t j;\n"
    "    (void)w, (void)b;\n"
    "#if KF_VARIANCE == 0 && KF_UNROLL == 1\n"
    "    double s = 0.0, q = 0.0;\n"
    "#pragma omp simd reduction(+ : s)\n"
    "    for (j = 0; j < KF_N; j++) s += (double)x[j];\n"
    "    mean = s / (double)KF_N;\n"
    "#pragma omp simd reduction(+ : q)\n"
    "    for (j = 0; j < KF_N; j++) {\n"
    "        double d = (double)x[j] - mean;\n"
    "        q += d * d;\n"
    "    }\n"
    "    var = q / (double)KF_N;\n"
    "#elif KF_VARIANCE == 0\n"
    "    double sa[KF_UNROLL], qa[KF_UNROLL];\n"
    "    for (int u = 0; u < KF_UNROLL; u++) sa[u] = 0.0, qa[u] = 0.0;\n"
    "    for (j = 0; j < KF_BODY; j += KF_UNROLL)\n"
    "        for (int u = 0; u < KF_UNROLL; u++) sa[u] += (double)x[j + u];\n"
    "    for (j = KF_BODY; j < KF_N; j++) sa[0] += (double)x[j];\n"
    "    double s = 0.0;\n"
    "    for (int u = 0; u < KF_UNROLL; u++) s += sa[u];\n"
    "    mean = s / (double)KF_N;\n"
    "    for (j = 0; j < KF_BODY; j += KF_UNROLL)\n"
    "        for (int u = 0; u < KF_UNROLL; u++) {\n"
    "            double d = (double)x[j + u] - mean;\n"
    "            qa[u] += d * d;\n"
    "        }\n"
    "    for (j = KF_BODY; j < KF_N; j++) {\n"
    "        double d = (double)x[j] - mean;\n"
    "        qa[0] += d * d;\n"
    "    }\n"
    "    double q = 0.0;\n"
    "    for (int u = 0; u < KF_UNROLL; u++) q += qa[u];\n"
    "    var = q / (double)KF_N;\n"
    "#elif KF_VARIANCE == 1\n"
    "    /* every lane has seen `cnt` elements after the blocked loop */\n"
    "    double wm[KF_UNROLL], wq[KF_UNROLL];\n"
    "    for (int u = 0; u < KF_UNROLL; u++) wm[u] = 0.0, wq[u] = 0.0;\n"
    "    int64_t cnt = 0;\n"
    "    for (j = 0; j < KF_BODY; j += KF_UNROLL) {\n"
    "        double inv = 1.0 / (double)++cnt;\n"
    "        for (int u = 0; u < KF_UNROLL; u++) {\n"
    "            double v = (double)x[j + u], d = v - wm[u];\n"
    "            wm[u] += d * inv;\n"
    "            wq[u] += d * (v - wm[u]);\n"
    "        }\n"
    "    }\n"
    "    double n = (double)cnt;\n"
    "    mean = wm[0];\n"
    "    double q = wq[0];\n"
    "    /* Chan: merge lane u (cnt, wm[u], wq[u]) into (n, mean, q) */\n"
    "    for (int u = 1; u < KF_UNROLL && cnt > 0; u++) {\n"
    "        double d = wm[u] - mean, nn = n + (double)cnt;\n"
    "        mean += d * ((double)cnt / nn);\n"
    "        q += wq[u] + d * d * (n * (double)cnt / nn);\n"
    "        n = nn;\n"
    "    }\n"
    "    for (j = KF_BODY; j < KF_N; j++) {\n"
    "        double v = (double)x[j], d = v - mean;\n"
    "        n += 1.0;\n"
    "        mean += d / n;\n"
    "        q += d * (v - mean);\n"
    "    }\n"
    "    var = q / (double)KF_N;\n"
    "#else\n"
    "    /* sums of d = x - x[0] and d^2 */\n"
    "    const double k = (double)x[0];\n"
    "#if KF_UNROLL == 1\n"
    "    double s = 0.0, q = 0.0;\n"
    "#pragma omp simd reduction(+ : s, q)\n"
    "    for (j = 0; j < KF_N; j++) {\n"
    "        double d = (double)x[j] - k;\n"
    "        s += d;\n"
    "        q += d * d;\n"
    "    }\n"
    "#else\n"
    "    double sa[KF_UNROLL], qa[KF_UNROLL];\n"
    "    for (int u = 0; u < KF_UNROLL; u++) sa[u] = 0.0, qa[u] = 0.0;\n"
    "    for (j = 0; j < KF_BODY; j += KF_UNROLL)\n"
    "        for (int u = 0; u < KF_UNROLL; u++) {\n"
    "            double d = (double)x[j + u] - k;\n"
    "            sa[u] += d;\n"
    "            qa[u] += d * d;\n"
    "        }\n"
    "    for (j = KF_BODY; j < KF_N; j++) {\n"
    "        double d = (double)x[j] - k;\n"
    "        sa[0] += d;\n"
    "        qa[0] += d * d;\n"
    "    }\n"
    "    double s = 0.0, q = 0.0;\n"
    "    for (int u = 0; u < KF_UNROLL; u++) s += sa[u], q += qa[u];\n"
    "#endif\n"
    "    double ds = s / (double)KF_N;\n"
    "    mean = k + ds;\n"
    "    var = q / (double)KF_N - ds * ds;\n"
    "#endif\n"
    "    /* rounding may leave it a hair below 0; NaN (from inf - inf) stays NaN, as in eager */\n"
    "    if (var < 0.0) var = 0.0;\n"
    "    float mf = (float)mean, rf = (float)(1.0 / sqrt(var + (double)(float)KF_EPS));\n"
    "    /* x - mean as (x - mf) - ml: mf's rounding error would be a large share of a small\n"
    "     * deviation from a large mean (x near 1000: 3e-5) */\n"
    "    float ml = (float)(mean - (double)mf);\n"
    "#pragma omp simd\n"
    "    for (j = 0; j < KF_N; j++) {\n"
    "        float v = ((x[j] - mf) - ml) * rf;\n"
    "#if KF_HAS_W\n"
    "        v *= w[j];\n"
    "#endif\n"
    "#if KF_HAS_B\n"
    "        v += b[j];\n"
    "#endif\n"
    "        y[j] = v;\n"
    "    }\n"
    "    *mean_out = mf;\n"
    "    *rstd_out = rf;\n"
    "}\n"
    "\n"
    "void kf_kernel(KF_PARAMS)\n"
    "{\n"
    "#if KF_OMP == 1\n"
    "#pragma omp parallel for schedule(static)\n"
    "#elif KF_OMP >= 2\n"
    "#pragma omp parallel for schedule(dynamic, KF_RPC)\n"
    "#endif\n"
    "    for (int64_t r = 0; r < KF_ROWS; r++)\n"
    "        kf_row(x + r * KF_N, KF_W, KF_B, y + r * KF_N, mean + r, rstd + r);\n"
    "}\n";

static kf_status ln_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap);

const kf_template kf_tmpl_host_layer_norm = {
    .name = "host_layer_norm",
    .backend = "host",
    .n_knobs = (int)(sizeof ln_knobs / sizeof ln_knobs[0]),
    .knobs = ln_knobs,
    .applies = ln_applies,
    .render = ln_render,
};

static kf_status ln_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_host_layer_norm;
    int vals[LN_NKNOBS];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    int has_w = 0, has_b = 0;
    ln_presence(sig, &has_w, &has_b);
    const kf_job_tensor *x = &sig->in[0];
    const kf_job_scalar *ns = kf_job_scalar_find(sig, "normalized_shape"),
                        *eps = kf_job_scalar_find(sig, "eps");
    int64_t n = 1;
    for (int k = 0; k < ns->n; k++) n *= ns->v[k];
    int64_t rows = kf_job_tensor_numel(x) / n;
    double e = eps->kind == 'd' ? eps->d : (double)eps->i;
    /* rows per dynamic OpenMP chunk: about 8K (omp 2) or 32K (omp 3) elements */
    int64_t rpc = (vals[2] == 3 ? 32768 : 8192) / n;
    rpc = rpc < 1 ? 1 : rpc > rows ? rows : rpc;

    const char *args[6];
    int na = 0;
    args[na++] = "const float*";
    if (has_w) args[na++] = "const float*";
    if (has_b) args[na++] = "const float*";
    args[na++] = "float*";
    args[na++] = "float*";
    args[na++] = "float*";

    kf_strbuf b = {0};
    kf_template_host_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b,
                     "#define KF_ROWS %lldLL\n#define KF_N %lldLL\n#define KF_EPS %.17g\n"
                     "#define KF_RPC %lld\n"
                     "#define KF_HAS_W %d\n#define KF_HAS_B %d\n"
                     "/* inputs: input%s%s; outputs: out, mean, rstd */\n"
                     "#define KF_PARAMS const float *restrict x, %s%sfloat *restrict y, "
                     "float *restrict mean, float *restrict rstd\n"
                     "#define KF_W %s\n#define KF_B %s\n\n%s",
                     (long long)rows, (long long)n, e, (long long)rpc, has_w, has_b,
                     has_w ? ", weight" : "",
                     has_b ? ", bias" : "", has_w ? "const float *restrict w, " : "",
                     has_b ? "const float *restrict b, " : "", has_w ? "w" : "(const float *)0",
                     has_b ? "b" : "(const float *)0", ln_body);
    return kf_template_host_finish(t, &b, args, na, source, launch_json, err, errcap);
}
