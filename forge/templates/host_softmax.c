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
 *  math     = 1: inline vectorizable exp (kf_body_host_math_h), 0: libm expf (listed first so
 *           that the search starts from the fast one).
 * -INFINITY entries contribute 0 (a row that is all -INFINITY gives NaN, as eager does); a NaN
 * makes its row NaN. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/template.h"

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
    int64_t cols = x->sizes[x->ndim - 1];
    /* rows per dynamic OpenMP chunk: about 8K (omp 2) or 32K (omp 3) elements (a chunk longer
     * than the call's rows is one chunk) */
    int64_t rpc = (vals[2] == 3 ? 32768 : 8192) / cols;
    rpc = rpc < 1 ? 1 : rpc;

    /* a family kernel: the row count is a launch argument (kf_host_softmax_family) */
    kf_strbuf b = {0};
    kf_template_host_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b,
                     "#define KF_COLS %lldLL\n#define KF_LOG %d\n"
                     "#define KF_RPC %lld\n/* inputs: self; outputs: out; then rows */\n\n%s%s",
                     (long long)cols, !strcmp(sig->op, "aten::_log_softmax"),
                     (long long)rpc, vals[3] ? kf_body_host_math_h : "", kf_body_host_softmax_c);
    static const char *const args[] = {"const float*", "float*"};
    static const char *const ints[] = {"numel(t0)/size(t0,-1)"};
    st = kf_template_host_finish(t, &b, args, 2, source, launch_json, err, errcap);
    if (st == KF_OK && !(*launch_json = kf_template_launch_add_ints(*launch_json, ints, 1))) {
        free(*source);
        *source = NULL;
        snprintf(err, errcap, "%s: out of memory", t->name);
        return KF_ERR_NOMEM;
    }
    return st;
}

/* Every row count of the tuned row length: rows are read at launch, the columns, dtype and
 * dim stay the signature's; both arguments contiguous (applies() asked that of the tuned one). */
char *kf_host_softmax_family(const kf_job_sig *sig)
{
    return kf_template_row_family(sig, 2, ((int64_t)1 << 31) - 1);
}
