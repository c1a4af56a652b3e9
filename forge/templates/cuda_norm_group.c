/* cuda_group_norm: aten::native_group_norm(input, weight?, bias?, N, C, HxW, group, eps) for
 * an f32/f16/bf16 input [N, C, *] in NCHW (contiguous) or channels-last memory order, output y
 * in the same order; mean and rstd [N, group] in the dtype the signature gives (torch 2.11 on
 * CUDA: the input's). Weight and bias [C], any float dtype, each present or None.
 *
 * Like torch: fp32 statistics, population variance, eps rounded to the input's dtype first,
 * rstd = rsqrt(max(var, 0) + eps), y = a * x + b with a = rstd * w[c] and
 * b = -a * mean + bias[c] computed from mean and rstd as stored (rounded to their dtype), or
 * y = (x - mean) * rstd without weight and bias.
 *
 * Kernel: a team of `tpg` threads per group, `gpb` groups per block; or a group split over a
 * thread-block cluster of `split` blocks (sm_90+: __cluster_dims__, statistics merged through
 * distributed shared memory), each block taking a contiguous share of the group. Knobs:
 *   tpg     threads per group team (per block when split > 1)
 *   gpb     groups per block (1 when split > 1; clamped to 1024 threads per block)
 *   split   blocks per group (a cluster of 1, 2, 4 or 8)
 *   vec     elements per vector access (clamped to alignment, group size and, channels last,
 *           channels per group)
 *   regs    1: keep the block's share in registers between passes (up to 16 vectors per
 *           thread, else as stage says): the input is read from global memory once
 *   stage   KiB of shared memory per block that keep the block's share of the group between
 *           passes (the rest is re-read, from L2 mostly): all of it means the input is read
 *           from global memory once; less leaves room for more blocks per SM; 0 re-reads all
 *   stats   0 two passes (exact), 1 Welford, 2 sum and sum of squares
 *   reduce  0 warp shuffles + one shared-memory step, 1 shared-memory tree
 * Channels last with weight or bias keeps each group's a and b in a shared-memory table. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "forge/templates/cuda_norm.h"

#define GN_SMEM_TOTAL (220 * 1024) /* static + dynamic shared memory per block, at most */
#define GN_STAGE_MAX (200 * 1024)  /* dynamic (staging) shared memory per block, at most */
#define GN_ABTAB_MAX (32 * 1024)   /* the a, b table (static shared memory) */
#define GN_REG_MAX 16              /* vectors per thread kept in registers */

static const kf_knob_def gn_knobs[] = {
    {"tpg", 6, {512, 1024, 256, 128, 64, 32}},
    {"gpb", 4, {1, 2, 4, 8}},
    {"split", 4, {8, 4, 2, 1}},
    {"vec", 4, {8, 4, 2, 1}},
    {"regs", 2, {0, 1}},
    {"stage", 5, {64, 200, 96, 32, 0}},
    {"stats", 3, {0, 1, 2}},
    {"reduce", 2, {0, 1}},
};

typedef struct gn_shape {
    int w, b;           /* index into in[], -1 when None */
    int layout;         /* 0 NCHW, 1 channels last */
    int64_t n, c, hw, g;
    double eps;
} gn_shape;

static int gn_check(const kf_job_sig *sig, gn_shape *s)
{
    static const char *const names[] = {"input", "weight", "bias"};
    static const int opt[] = {0, 1, 1};
    int idx[3];
    memset(s, 0, sizeof *s);
    if (!sig || strcmp(sig->op, "aten::native_group_norm") || sig->n_out != 3 ||
        !kf_cuda_norm_fresh_outputs(sig))
        return 0;
    if (kf_template_tensor_args(sig, names, opt, 3, idx) < 0) return 0;
    s->w = idx[1];
    s->b = idx[2];
    if (!kf_job_scalar_int(sig, "N", &s->n) || !kf_job_scalar_int(sig, "C", &s->c) || !kf_job_scalar_int(sig, "HxW", &s->hw) ||
        !kf_job_scalar_int(sig, "group", &s->g))
        return 0;
    if (s->n < 1 || s->c < 1 || s->hw < 1 || s->g < 1 || s->c % s->g) return 0;
    if (kf_cuda_norm_eps(sig, -1.0, &s->eps) < 0) return 0;
    const kf_job_tensor *x = &sig->in[0];
    if (!kf_cuda_norm_float(x->dtype) || x->ndim < 2 || x->sizes[0] != s->n ||
        x->sizes[1] != s->c)
        return 0;
    int64_t hw = 1;
    for (int d = 2; d < x->ndim; d++) hw *= x->sizes[d];
    if (hw != s->hw || kf_job_tensor_numel(x) <= 0) return 0;
    /* indices: vectors of a group are ints, blocks fit a grid */
    if (s->c / s->g * s->hw > INT_MAX / 2 || s->n * s->g > INT_MAX / 8) return 0;
    s->layout = kf_cuda_norm_layout(x);
    if (s->layout < 0) return 0;
    for (int i = 1; i < sig->n_in; i++) { /* weight, bias: [C] */
        const kf_job_tensor *p = &sig->in[i];
        if (!kf_cuda_norm_float(p->dtype) || p->ndim != 1 || p->sizes[0] != s->c) return 0;
    }
    const kf_job_tensor *y = &sig->out[0];
    if (y->dtype != x->dtype || !kf_job_tensor_same_shape(x, y) ||
        !kf_cuda_norm_same_layout(y, s->layout))
        return 0;
    for (int j = 1; j < 3; j++)
        if (!kf_job_tensor_contiguous(&sig->out[j]) ||
            kf_job_tensor_numel(&sig->out[j]) != s->n * s->g)
            return 0;
    return 1;
}

static int gn_applies(const kf_job_sig *sig)
{
    gn_shape s;
    return gn_check(sig, &s);
}

static kf_status gn_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap);

const kf_template kf_tmpl_cuda_group_norm = {
    .name = "cuda_group_norm",
    .backend = "nvrtc",
    .n_knobs = (int)(sizeof gn_knobs / sizeof gn_knobs[0]),
    .knobs = gn_knobs,
    .applies = gn_applies,
    .render = gn_render,
};

static kf_status gn_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_cuda_group_norm;
    int vals[8];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    gn_shape s;
    gn_check(sig, &s);
    int tpg = vals[0], gpb = vals[1], split = vals[2], vec = vals[3], regs = vals[4];
    int stage = vals[5], stats = vals[6], reduce = vals[7];
    const kf_job_tensor *x = &sig->in[0];
    int64_t d = s.c / s.g, e = d * s.hw, ngrp = s.n * s.g;

    /* effective values */
    if (split > 1) gpb = 1;
    if (gpb * tpg > 1024) gpb = 1024 / tpg;
    for (;; vec /= 2) {
        /* a vector never leaves its group; channels last: nor its pixel */
        int ok = vec == 1 || ((s.layout ? d : e) % vec == 0 && kf_cuda_norm_vec_fits(x, 0, vec) &&
                              kf_cuda_norm_vec_fits(&sig->out[0], 1, vec));
        if (ok) break;
    }
    int block = tpg * gpb, affine = s.w >= 0 || s.b >= 0;
    int abtab = affine && s.layout == 1 && gpb * d * 8 <= GN_ABTAB_MAX;
    int64_t static_smem = (int64_t)(reduce ? block : block / 32) * 12 + 64;
    if (abtab) static_smem += gpb * d * 8;
    int64_t raw = (int64_t)vec * kf_cuda_norm_esize(x->dtype);
    int64_t share = (e / vec + split - 1) / split, room = GN_SMEM_TOTAL - static_smem;
    if (room > GN_STAGE_MAX) room = GN_STAGE_MAX;
    if (room > (int64_t)stage * 1024) room = (int64_t)stage * 1024;
    int64_t staged = room / (gpb * raw);
    if (staged > share) staged = share;
    const char *regs_why = NULL;
    if (regs && (share + tpg - 1) / tpg > GN_REG_MAX) {
        regs = 0;
        regs_why = "too many vectors per thread for registers";
    }
    if (regs) staged = 0;

    const char *args[KF_JOB_MAX_TENSORS + KF_JOB_MAX_OUTPUTS];
    int na = kf_cuda_norm_args(sig, args);

    kf_strbuf b = {0};
    kf_template_cuda_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b, "/* effective knob values */\n");
    kf_cuda_norm_set(&b, "KF_TPG", tpg, NULL);
    kf_cuda_norm_set(&b, "KF_GPB", gpb, NULL);
    kf_cuda_norm_set(&b, "KF_SPLIT", split, NULL);
    kf_cuda_norm_set(&b, "KF_VEC", vec, NULL);
    kf_cuda_norm_set(&b, "KF_REGS", regs, regs_why);
    kf_cuda_norm_set(&b, "KF_STATS", stats, NULL);
    kf_cuda_norm_set(&b, "KF_REDUCE", reduce, NULL);
    kf_strbuf_printf(&b,
                     "#define KF_STAGED %lld /* vectors of a team's share kept in shared "
                     "memory */\n#define KF_ABTAB %d\n"
                     "#define KF_TEAM KF_TPG\n#define KF_BLOCK (KF_TPG * KF_GPB)\n"
                     "/* the signature */\n#define KF_N %lldLL\n#define KF_C %lld\n"
                     "#define KF_HW %lldLL\n#define KF_G %lld\n#define KF_CL %d\n"
                     "#define KF_EPS %.17g\n#define KF_HAS_W %d\n#define KF_HAS_B %d\n"
                     "typedef %s kf_x_t;\ntypedef %s kf_w_t;\ntypedef %s kf_b_t;\n"
                     "typedef %s kf_y_t;\ntypedef %s kf_m_t;\ntypedef %s kf_r_t;\n",
                     (long long)staged, abtab, (long long)s.n, (long long)s.c, (long long)s.hw,
                     (long long)s.g, s.layout, s.eps, s.w >= 0, s.b >= 0,
                     kf_template_cuda_type(x->dtype),
                     kf_template_cuda_type(s.w >= 0 ? sig->in[s.w].dtype : KF_F32),
                     kf_template_cuda_type(s.b >= 0 ? sig->in[s.b].dtype : KF_F32),
                     kf_template_cuda_type(sig->out[0].dtype),
                     kf_template_cuda_type(sig->out[1].dtype),
                     kf_template_cuda_type(sig->out[2].dtype));
    kf_strbuf_printf(&b, "#define KF_PARAMS const kf_x_t *__restrict__ x, %s%s"
                         "kf_y_t *__restrict__ y, kf_m_t *__restrict__ mean_out, "
                         "kf_r_t *__restrict__ rstd_out\n\n%s\n%s%s",
                     s.w >= 0 ? "const kf_w_t *__restrict__ w, " : "",
                     s.b >= 0 ? "const kf_b_t *__restrict__ b, " : "", kf_body_cuda_norm_common_cuh,
                     split > 1 ? kf_body_cuda_cluster_cuh : "", kf_body_cuda_norm_group_cu);
    unsigned grid[3] = {(unsigned)(split > 1 ? ngrp * split : (ngrp + gpb - 1) / gpb), 1, 1};
    unsigned blk[3] = {(unsigned)block, 1, 1};
    unsigned smem = (unsigned)(staged * gpb * raw);
    return kf_template_cuda_finish(t, &b, args, na, grid, blk, smem, source, launch_json, err,
                                   errcap);
}
