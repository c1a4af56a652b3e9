/* host_layer_norm: aten::native_layer_norm over the trailing dims named by normalized_shape, for
 * a float32 input of any non-negative strides (a transposed, expanded or sliced view) with
 * optional contiguous float32 weight and bias (None: absent from sig->in and a scalar of kind 'n'
 * under its schema name, template.h). Outputs, as eager allocates them: y contiguous of the
 * input's shape, mean and rstd with one element per row (eager's [rows..., 1...] layout, any
 * contiguous shape with that many elements works).
 *
 * A strided input: each row (the leading dims, logical row-major order) starts at a generated
 * offset kf_xrow(r); when its normalized dims are adjacent among themselves it is read in place,
 * else KF_TILE rows are gathered together into a buffer (element offsets kf_xel(j)) before the
 * row code runs on it: a transposed input has its rows' elements side by side in memory, so a
 * tile reads each cache line once.
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

#include "forge/templates/bodies.h"
#include "forge/templates/cuda_norm.h"
#include "forge/templates/host_norm.h"

#define LN_NAME "host_layer_norm"
/* A strided row whose elements are not adjacent is gathered into a buffer on the kernel's stack
 * (KF_TILE rows of KF_N floats, at most LN_TILE_FLOATS): rows longer than this are refused. */
#define LN_MAX_GATHER 65536
#define LN_TILE_FLOATS 32768
#define LN_TILE_ROWS 16

static const kf_knob_def ln_knobs[] = {
    {"variance", 3, {0, 1, 2}},
    {"unroll", 4, {1, 4, 8, 16}},
    {"omp", 4, {0, 1, 2, 3}},
};
#define LN_NKNOBS ((int)(sizeof ln_knobs / sizeof ln_knobs[0]))

/* Which optional tensors are present: 0 = no, 1 = yes; -1 when the signature is ambiguous. */
static int ln_presence(const kf_job_sig *sig, int *has_w, int *has_b)
{
    static const char *const names[] = {"input", "weight", "bias"};
    static const int optional[] = {0, 1, 1};
    int idx[3];
    if (kf_template_tensor_args(sig, names, optional, 3, idx) < 0) return -1;
    *has_w = idx[1] >= 0;
    *has_b = idx[2] >= 0;
    return 0;
}

/* 1 when the template serves sig; else 0, and why (when not NULL) says why if the op is ours
 * (left empty when it is not). */
static int ln_check(const kf_job_sig *sig, char *why, size_t cap)
{
    if (why && cap) why[0] = 0;
    if (!sig || strcmp(sig->op, "aten::native_layer_norm")) return 0;
    int has_w, has_b;
    if (sig->n_out != 3 || sig->out_alias[0] || sig->out_alias[1] || sig->out_alias[2])
        return kf_host_norm_why(why, cap, LN_NAME, "expected 3 fresh outputs");
    if (ln_presence(sig, &has_w, &has_b) < 0)
        return kf_host_norm_why(why, cap, LN_NAME, "which of weight and bias are given is unclear");
    const kf_job_tensor *x = &sig->in[0];
    if (x->dtype != KF_F32)
        return kf_host_norm_why(why, cap, LN_NAME, "input dtype %s not handled (f32 only)",
                                kf_dtype_name(x->dtype));
    if (x->ndim < 1 || kf_job_tensor_numel(x) <= 0)
        return kf_host_norm_why(why, cap, LN_NAME, "input has no elements");
    for (int d = 0; d < x->ndim; d++)
        if (x->sizes[d] > 1 && x->strides[d] < 0)
            return kf_host_norm_why(why, cap, LN_NAME, "input has a negative stride");
    const kf_job_scalar *ns = kf_job_scalar_find(sig, "normalized_shape");
    if (!ns || ns->kind != 'l' || ns->n < 1 || ns->n > x->ndim)
        return kf_host_norm_why(why, cap, LN_NAME, "normalized_shape is not a list of 1 to ndim "
                                                   "sizes");
    int64_t n = 1;
    for (int k = 0; k < ns->n; k++) {
        if (ns->v[k] != x->sizes[x->ndim - ns->n + k])
            return kf_host_norm_why(why, cap, LN_NAME, "normalized_shape is not the input's last "
                                                       "dims");
        n *= ns->v[k];
    }
    if (!kf_job_tensor_contiguous(x) && !kf_cuda_norm_block_dense(x, x->ndim - ns->n) &&
        n > LN_MAX_GATHER)
        return kf_host_norm_why(why, cap, LN_NAME, "strided rows of %lld elements (at most %d)",
                                (long long)n, LN_MAX_GATHER);
    for (int i = 1; i < sig->n_in; i++) { /* weight, bias: exactly normalized_shape */
        const kf_job_tensor *p = &sig->in[i];
        const char *what = i == 1 && has_w ? "weight" : "bias";
        if (!kf_host_norm_f32(p, what, why, cap, LN_NAME)) return 0;
        if (p->ndim != ns->n)
            return kf_host_norm_why(why, cap, LN_NAME, "%s is not normalized_shape", what);
        for (int k = 0; k < ns->n; k++)
            if (p->sizes[k] != ns->v[k])
                return kf_host_norm_why(why, cap, LN_NAME, "%s is not normalized_shape", what);
    }
    const kf_job_scalar *eps = kf_job_scalar_find(sig, "eps");
    if (!eps || (eps->kind != 'd' && eps->kind != 'i') || (eps->kind == 'd' && !isfinite(eps->d)))
        return kf_host_norm_why(why, cap, LN_NAME, "eps is not a finite number");
    int64_t rows = kf_job_tensor_numel(x) / n;
    /* eager allocates y contiguous whatever the input's strides */
    if (!kf_job_tensor_dense_f32(&sig->out[0]) || !kf_job_tensor_same_shape(x, &sig->out[0]))
        return kf_host_norm_why(why, cap, LN_NAME, "output y is not a contiguous f32 tensor of "
                                                   "the input's shape");
    for (int i = 1; i < 3; i++)
        if (!kf_job_tensor_dense_f32(&sig->out[i]) || kf_job_tensor_numel(&sig->out[i]) != rows)
            return kf_host_norm_why(why, cap, LN_NAME, "%s is not a contiguous f32 tensor of one "
                                                       "element per row",
                                    i == 1 ? "mean" : "rstd");
    return 1;
}

static int ln_applies(const kf_job_sig *sig)
{
    return ln_check(sig, NULL, 0);
}

static int ln_why_not(const kf_job_sig *sig, char *why, size_t cap)
{
    if (ln_check(sig, why, cap)) return 0;
    return why && cap && why[0];
}

static kf_status ln_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap);

/* The leading dims (rows) of x: normalized_shape's dims are the trailing ones. */
static int ln_lead(const kf_job_sig *sig)
{
    return sig->in[0].ndim - kf_job_scalar_find(sig, "normalized_shape")->n;
}

/* Every row count of the tuned normalized shape (docs/architecture.md, "Shape families"): the
 * kernel reads its rows at launch when the rows' tensors (x, y, mean, rstd) are contiguous with
 * the rows as their leading dims (eager's [rows..., 1...] statistics). */
char *kf_host_layer_norm_family(const kf_job_sig *sig)
{
    return kf_template_lead_family(sig, ln_lead(sig), ((int64_t)1 << 31) - 1);
}

const kf_template kf_tmpl_host_layer_norm = {
    .name = LN_NAME,
    .backend = "host",
    .n_knobs = (int)(sizeof ln_knobs / sizeof ln_knobs[0]),
    .knobs = ln_knobs,
    .applies = ln_applies,
    .render = ln_render,
    .why_not = ln_why_not,
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
    /* a family kernel reads its rows at launch (the element count of mean) */
    char *fam_rec = kf_host_layer_norm_family(sig);
    const int fam = fam_rec != NULL;
    free(fam_rec);
    /* rows per dynamic OpenMP chunk: about 8K (omp 2) or 32K (omp 3) elements (a family
     * kernel's: not cut to the tuned rows, a chunk longer than a call's rows is one chunk) */
    int64_t rpc = (vals[2] == 3 ? 32768 : 8192) / n;
    rpc = rpc < 1 ? 1 : rpc > rows && !fam ? rows : rpc;

    /* a strided input: read in place (its rows' elements adjacent) or gathered in tiles */
    const int strided = !kf_job_tensor_contiguous(x), lead = ln_lead(sig);
    const int xdense = strided && kf_cuda_norm_block_dense(x, lead);
    int64_t tile = LN_TILE_FLOATS / n;
    tile = tile < 1 ? 1 : tile > LN_TILE_ROWS ? LN_TILE_ROWS : tile > rows ? rows : tile;
    if (strided && !xdense) { /* dynamic chunks count tiles */
        rpc /= tile;
        if (rpc < 1) rpc = 1;
    }

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
    if (fam)
        kf_strbuf_printf(&b, "#define KF_ROWS kf_rows /* a launch argument, after the pointers "
                             "(tuned on %lld rows) */\n",
                         (long long)rows);
    else
        kf_strbuf_printf(&b, "#define KF_ROWS %lldLL\n", (long long)rows);
    kf_strbuf_printf(&b,
                     "#define KF_N %lldLL\n#define KF_EPS %.17g\n"
                     "#define KF_RPC %lld\n"
                     "#define KF_HAS_W %d\n#define KF_HAS_B %d\n"
                     "/* inputs: input%s%s; outputs: out, mean, rstd */\n"
                     "#define KF_PARAMS const float *restrict x, %s%sfloat *restrict y, "
                     "float *restrict mean, float *restrict rstd%s\n"
                     "#define KF_W %s\n#define KF_B %s\n",
                     (long long)n, e, (long long)rpc, has_w, has_b,
                     has_w ? ", weight" : "",
                     has_b ? ", bias" : "", has_w ? "const float *restrict w, " : "",
                     has_b ? "const float *restrict b, " : "", fam ? ", int64_t kf_rows" : "",
                     has_w ? "w" : "(const float *)0",
                     has_b ? "b" : "(const float *)0");
    if (strided) {
        kf_strbuf_printf(&b, "/* a strided input: rows at kf_xrow(r), %s */\n"
                             "#define KF_STRIDED 1\n#define KF_XDENSE %d\n#define KF_TILE %lld\n",
                         xdense ? "each row's elements adjacent (read in place)"
                                : "elements at kf_xel(j) (gathered a tile of rows at a time)",
                         xdense, (long long)tile);
        kf_host_norm_emit_offset(&b, "kf_xrow", x, 0, lead);
        if (!xdense) kf_host_norm_emit_offset(&b, "kf_xel", x, lead, x->ndim);
    }
    kf_strbuf_printf(&b, "\n%s", kf_body_host_norm_c);
    st = kf_template_host_finish(t, &b, args, na, source, launch_json, err, errcap);
    if (!fam) return st;
    char rows_int[24];
    snprintf(rows_int, sizeof rows_int, "numel(t%d)", na - 2);
    return kf_template_rows_arg(t, st, rows_int, 0, 0, source, launch_json, err, errcap);
}
