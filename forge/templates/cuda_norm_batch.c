/* cuda_batch_norm_eval: inference batch norm with the running statistics,
 *   aten::native_batch_norm(input, weight?, bias?, running_mean, running_var, training=False,
 *                           momentum, eps)
 *   aten::_native_batch_norm_legit_no_training(input, weight?, bias?, running_mean,
 *                                              running_var, momentum, eps)
 * for an f32/f16/bf16 input [N, C, *] in NCHW (contiguous) or channels-last memory order, y
 * in the same order, parameters [C] of any float dtype. y = ((x - mean) * invstd) * w + b per
 * channel, invstd = rsqrt(var + eps) with eps as a float, as torch's CUDA kernels compute it.
 * save_mean / save_invstd: recent torch returns the running mean and invstd ([C], f32); some
 * paths return empty tensors ([0]). Whatever out[] says is written (nothing for 0 elements).
 *
 * Kernel: elementwise, each thread `per` vectors of `vec` elements, the block's contiguous.
 * Knobs:
 *   threads  threads per block
 *   vec      elements per vector access (clamped to alignment and size)
 *   per      vectors per thread (all loads issued before the math)
 *   table    where the per-channel parameters come from: 2 registers, loaded once (channels
 *            last when every vector of a thread starts at the same channel: the block is then
 *            made of whole channel rows and warps, 288 threads for 144 channels, else 1), 1 a
 *            shared-memory table built by each block (C up to 3072 / 6144, else 0), 0 global
 *            memory for every element (L1 hits)
 *   form     0 torch's order with {mean, invstd, w, b}; 1 folded: y = x * s + t */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "forge/templates/cuda_norm.h"

#define BN_TABLE_MAX (48 * 1024) /* static shared memory for the parameter table */

static const kf_knob_def bn_knobs[] = {
    {"threads", 4, {256, 512, 1024, 128}},
    {"vec", 4, {8, 4, 2, 1}},
    {"per", 4, {4, 2, 8, 1}},
    {"table", 3, {2, 1, 0}},
    {"form", 2, {0, 1}},
};

typedef struct bn_shape {
    int w, b, rm, rv;   /* index into in[]; w, b -1 when None */
    int layout;         /* 0 NCHW, 1 channels last */
    int64_t total, c, hw;
    double eps;
} bn_shape;

static int bn_check(const kf_job_sig *sig, bn_shape *s)
{
    static const char *const names[] = {"input", "weight", "bias", "running_mean",
                                        "running_var"};
    static const int opt_nbn[] = {0, 1, 1, 1, 1}, opt_legit[] = {0, 1, 1, 0, 0};
    int idx[5];
    memset(s, 0, sizeof *s);
    if (!sig) return 0;
    int legit = !strcmp(sig->op, "aten::_native_batch_norm_legit_no_training");
    if (!legit && strcmp(sig->op, "aten::native_batch_norm")) return 0;
    if (sig->n_out != 3 || !kf_cuda_norm_fresh_outputs(sig)) return 0;
    if (kf_template_tensor_args(sig, names, legit ? opt_legit : opt_nbn, 5, idx) < 0) return 0;
    if (idx[3] < 0 || idx[4] < 0) return 0; /* eval needs the running statistics */
    if (!legit) {
        const kf_job_scalar *tr = kf_job_scalar_find(sig, "training");
        if (!tr || tr->kind != 'b' || tr->i != 0) return 0;
    }
    s->w = idx[1];
    s->b = idx[2];
    s->rm = idx[3];
    s->rv = idx[4];
    if (kf_cuda_norm_eps(sig, -1.0, &s->eps) < 0) return 0;
    const kf_job_tensor *x = &sig->in[0];
    if (!kf_cuda_norm_float(x->dtype) || x->ndim < 2) return 0;
    s->total = kf_job_tensor_numel(x);
    s->c = x->sizes[1];
    /* blocks fit a grid for every knob value (at least 128 elements per block) */
    if (s->total <= 0 || s->c > INT_MAX / 2 || s->total / 128 >= INT_MAX) return 0;
    s->hw = s->total / x->sizes[0] / s->c;
    s->layout = kf_cuda_norm_layout(x);
    if (s->layout < 0) return 0;
    for (int i = 1; i < sig->n_in; i++) { /* weight, bias, running stats: [C] */
        const kf_job_tensor *p = &sig->in[i];
        if (!kf_cuda_norm_float(p->dtype) || p->ndim != 1 || p->sizes[0] != s->c) return 0;
    }
    const kf_job_tensor *y = &sig->out[0];
    if (y->dtype != x->dtype || !kf_job_tensor_same_shape(x, y) ||
        !kf_cuda_norm_same_layout(y, s->layout))
        return 0;
    for (int j = 1; j < 3; j++) {
        int64_t n = kf_job_tensor_numel(&sig->out[j]);
        if (n != 0 && (n != s->c || !kf_job_tensor_contiguous(&sig->out[j]))) return 0;
    }
    return 1;
}

static int bn_applies(const kf_job_sig *sig)
{
    bn_shape s;
    return bn_check(sig, &s);
}

static kf_status bn_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap);

const kf_template kf_tmpl_cuda_batch_norm_eval = {
    .name = "cuda_batch_norm_eval",
    .backend = "nvrtc",
    .n_knobs = (int)(sizeof bn_knobs / sizeof bn_knobs[0]),
    .knobs = bn_knobs,
    .applies = bn_applies,
    .render = bn_render,
};

static kf_status bn_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_cuda_batch_norm_eval;
    int vals[5];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    bn_shape s;
    bn_check(sig, &s);
    int threads = vals[0], vec = vals[1], per = vals[2], table = vals[3], form = vals[4];
    const kf_job_tensor *x = &sig->in[0];

    /* effective values */
    for (;; vec /= 2)
        if (vec == 1 || (s.total % vec == 0 && kf_cuda_norm_vec_fits(x, 0, vec) &&
                         kf_cuda_norm_vec_fits(&sig->out[0], 1, vec)))
            break;
    /* channels last with C a whole number of vectors: a block of whole channel rows keeps each
     * thread on the same channels, its parameters in registers (table 2). Otherwise (EfficientNet's
     * 24, 40, 144, ... channels and 256 threads) the shared table's reads of 8 consecutive
     * channels by a warp's threads, 8 channels apart, conflict 8 ways. */
    int block = threads;
    const char *block_why = NULL;
    const int64_t row_threads = s.c % vec ? 0 : s.c / vec;
    if (table == 2 && s.layout == 1 && row_threads && ((int64_t)threads * vec) % s.c) {
        int64_t unit = row_threads; /* whole rows and whole warps: lcm(rows' threads, 32) */
        while (unit % 32) unit += row_threads;
        if (unit <= 1024) {
            block = (int)(unit <= threads ? threads / unit * unit : unit);
            block_why = "whole channel rows and warps per block: parameters in registers";
        }
    }
    const char *table_why = NULL;
    if (table == 2 && !(s.layout == 1 && s.c % vec == 0 && ((int64_t)block * vec) % s.c == 0)) {
        table = 1;
        table_why = "vectors of a thread start at different channels: table";
    }
    if (table == 1 && s.c * (form ? 8 : 16) > BN_TABLE_MAX) {
        table = 0;
        table_why = "too many channels for a shared-memory table: global";
    }
    int64_t nvec = s.total / vec, chunk = (int64_t)block * per;
    int64_t blocks = (nvec + chunk - 1) / chunk;

    const char *args[KF_JOB_MAX_TENSORS + KF_JOB_MAX_OUTPUTS];
    int na = kf_cuda_norm_args(sig, args);

    kf_strbuf b = {0};
    kf_template_cuda_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b, "/* effective knob values */\n");
    kf_cuda_norm_set(&b, "KF_VEC", vec, NULL);
    kf_cuda_norm_set(&b, "KF_TABLE", table, table_why);
    kf_cuda_norm_set(&b, "KF_BLOCK", block, block_why);
    kf_strbuf_printf(&b,
                     "#define KF_TEAM 32\n#define KF_REDUCE 0\n"
                     "/* the signature */\n#define KF_TOTAL %lldLL\n#define KF_C %lld\n"
                     "#define KF_HW %lldLL\n#define KF_CL %d\n#define KF_EPS %.17g\n"
                     "#define KF_HAS_W %d\n#define KF_HAS_B %d\n"
                     "#define KF_SAVE_MEAN %d\n#define KF_SAVE_INVSTD %d\n"
                     "typedef %s kf_x_t;\ntypedef %s kf_w_t;\ntypedef %s kf_b_t;\n"
                     "typedef %s kf_rm_t;\ntypedef %s kf_rv_t;\ntypedef %s kf_y_t;\n"
                     "typedef %s kf_sm_t;\ntypedef %s kf_si_t;\n"
                     "#define KF_W %s\n#define KF_B %s\n",
                     (long long)s.total, (long long)s.c, (long long)s.hw, s.layout, s.eps,
                     s.w >= 0, s.b >= 0, kf_job_tensor_numel(&sig->out[1]) > 0,
                     kf_job_tensor_numel(&sig->out[2]) > 0, kf_template_cuda_type(x->dtype),
                     kf_template_cuda_type(s.w >= 0 ? sig->in[s.w].dtype : KF_F32),
                     kf_template_cuda_type(s.b >= 0 ? sig->in[s.b].dtype : KF_F32),
                     kf_template_cuda_type(sig->in[s.rm].dtype),
                     kf_template_cuda_type(sig->in[s.rv].dtype),
                     kf_template_cuda_type(sig->out[0].dtype),
                     kf_template_cuda_type(sig->out[1].dtype),
                     kf_template_cuda_type(sig->out[2].dtype), s.w >= 0 ? "w" : "(const float *)0",
                     s.b >= 0 ? "b" : "(const float *)0");
    kf_strbuf_printf(&b, "#define KF_PARAMS const kf_x_t *__restrict__ x, %s%s"
                         "const kf_rm_t *__restrict__ rm, const kf_rv_t *__restrict__ rv, "
                         "kf_y_t *__restrict__ y, kf_sm_t *__restrict__ save_mean, "
                         "kf_si_t *__restrict__ save_invstd\n\n%s\n%s",
                     s.w >= 0 ? "const kf_w_t *__restrict__ w, " : "",
                     s.b >= 0 ? "const kf_b_t *__restrict__ b, " : "", kf_body_cuda_norm_common_cuh,
                     kf_body_cuda_norm_batch_cu);
    unsigned grid[3] = {(unsigned)blocks, 1, 1};
    unsigned blk[3] = {(unsigned)block, 1, 1};
    return kf_template_cuda_finish(t, &b, args, na, grid, blk, 0, source, launch_json, err,
                                   errcap);
}
