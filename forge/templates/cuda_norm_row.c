/* cuda_layer_norm and cuda_rms_norm: aten::native_layer_norm and aten::_fused_rms_norm over
 * the trailing dims named by normalized_shape, for an f32/f16/bf16 input, optional weight (and
 * bias, layer_norm) of any of those dtypes, outputs as the signature gives them (y of the
 * input's shape; mean and rstd one element per row, f32 in torch, any float dtype here).
 *
 * Layouts: in x and in y the normalized dims are one block of n adjacent elements (a row);
 * rows sit where the leading dims' strides put them, each tensor its own (q/k heads seen as
 * [B, H, S, D] of a [B, S, H, D] tensor, a slice, eager's contiguous y of a strided x). A
 * contiguous tensor's row r starts at r * n; another's offset is computed from r by division
 * by the leading sizes, compile-time constants. y's elements must not overlap; x's rows may
 * (they are only read). A normalized dim that is strided is cuda_norm_cols.c's.
 *
 * Like torch: fp32 statistics, population variance, rstd = rsqrt(var + eps) with eps as a
 * float, y = w * (rstd * (x - mean)) + b; rms_norm: rstd = rsqrt(mean(x^2) + eps) with
 * eps None meaning FLT_EPSILON (torch's CUDA kernel takes the accumulate type's epsilon, for
 * f16/bf16 inputs too), y = w * (rstd * x).
 *
 * Kernel: a team of `tpr` threads per row, `rpb` rows per block. Knobs:
 *   tpr     threads per row (32: one warp, no block barrier needed; 16, 8: several short rows
 *           per warp, so a warp has more than one row's bytes in flight)
 *   rpb     rows per block (clamped to 1024 threads per block; with tpr < 32, warps' worth of
 *           rows, so a block is whole warps)
 *   vec     elements per vector access (clamped to what alignment and the row length allow)
 *   cache   where the row waits between passes: 1 registers (rows of up to 16 vectors per
 *           thread, else 0), 2 shared memory (up to 200 KiB per block, else 0), 0 re-read
 *           from global memory (an L1/L2 hit)
 *   stats   (layer_norm) 0 two passes (exact), 1 Welford, 2 sum and sum of squares
 *   reduce  0 warp shuffles + one shared-memory step, 1 shared-memory tree */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/templates/cuda_norm.h"

#define ROW_SMEM_MAX (200 * 1024) /* dynamic shared memory for staged rows */
#define ROW_REG_MAX 16            /* vectors per thread kept in registers */

static const kf_knob_def ln_knobs[] = {
    {"tpr", 8, {256, 512, 1024, 128, 64, 32, 16, 8}},
    {"rpb", 4, {1, 2, 4, 8}},
    {"vec", 4, {8, 4, 2, 1}},
    {"cache", 3, {1, 2, 0}},
    {"stats", 3, {0, 1, 2}},
    {"reduce", 2, {0, 1}},
};
/* the same minus stats (a sum of squares is all rms_norm needs) */
static const kf_knob_def rms_knobs[] = {
    {"tpr", 8, {256, 512, 1024, 128, 64, 32, 16, 8}},
    {"rpb", 4, {1, 2, 4, 8}},
    {"vec", 4, {8, 4, 2, 1}},
    {"cache", 3, {1, 2, 0}},
    {"reduce", 2, {0, 1}},
};

/* The signature, checked: rows of n adjacent elements in x and in y. */
static int row_check(const kf_job_sig *sig, int rms, kf_norm_rows *r)
{
    if (!kf_cuda_norm_rows_parse(sig, rms, r)) return 0;
    const int lead = sig->in[0].ndim - r->nn;
    return kf_cuda_norm_block_dense(&sig->in[0], lead) &&
           kf_cuda_norm_block_dense(&sig->out[0], lead);
}

static int ln_applies(const kf_job_sig *sig)
{
    kf_norm_rows r;
    return row_check(sig, 0, &r);
}

static int rms_applies(const kf_job_sig *sig)
{
    kf_norm_rows r;
    return row_check(sig, 1, &r);
}

/* Every row count of the tuned normalized shape (docs/architecture.md, "Shape families") when
 * x and y are contiguous (rows at r * n) and mean / rstd are eager's [rows..., 1...]: the
 * kernel then reads its rows at launch and its grid follows them. */
char *kf_cuda_norm_row_family(const kf_job_sig *sig)
{
    int rms = !strcmp(sig->op, "aten::_fused_rms_norm");
    kf_norm_rows r;
    if (!row_check(sig, rms, &r)) return NULL;
    return kf_template_lead_family(sig, sig->in[0].ndim - r.nn, INT_MAX);
}

static kf_status row_render(const kf_template *t, int rms, const kf_job_sig *sig,
                            const int *knob_idx, char **source, char **launch_json, char *err,
                            size_t errcap)
{
    int vals[6];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    kf_norm_rows r;
    row_check(sig, rms, &r);
    int tpr = vals[0], rpb = vals[1], vec = vals[2], cache = vals[3];
    int stats = rms ? 0 : vals[4], reduce = vals[rms ? 4 : 5];
    const kf_job_tensor *x = &sig->in[0], *y = &sig->out[0];
    const int lead = x->ndim - r.nn;

    /* effective values: every combination renders a kernel that is right for this signature */
    if (rpb * tpr > 1024) rpb = 1024 / tpr;
    if (tpr < 32) rpb *= 32 / tpr; /* whole warps: the team shuffles take all 32 lanes */
    for (;; vec /= 2) { /* every row of x and y starts on a vector boundary */
        int ok = vec == 1 || (r.n % vec == 0 && kf_cuda_norm_vec_fits(x, 0, vec) &&
                              kf_cuda_norm_vec_fits(y, 1, vec) &&
                              kf_cuda_norm_lead_strides_div(x, lead, vec) &&
                              kf_cuda_norm_lead_strides_div(y, lead, vec));
        for (int i = 1; ok && vec > 1 && i < sig->n_in; i++)
            ok = kf_cuda_norm_vec_fits(&sig->in[i], 0, vec);
        if (ok) break;
    }
    int64_t nv = r.n / vec, per = (nv + tpr - 1) / tpr;
    int64_t stage_bytes = (int64_t)rpb * r.n * kf_cuda_norm_esize(x->dtype);
    const char *cache_why = NULL;
    if (cache == 1 && per > ROW_REG_MAX) {
        cache = 0;
        cache_why = "a row is too long for registers: re-read";
    }
    if (cache == 2 && stage_bytes > ROW_SMEM_MAX) {
        cache = 0;
        cache_why = "rows too long for shared memory: re-read";
    }

    const char *args[KF_JOB_MAX_TENSORS + KF_JOB_MAX_OUTPUTS];
    int na = kf_cuda_norm_args(sig, args);
    char *fam_rec = kf_cuda_norm_row_family(sig);
    const int fam = fam_rec != NULL;
    free(fam_rec);

    kf_strbuf b = {0};
    kf_template_cuda_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b, "/* effective knob values */\n");
    kf_cuda_norm_set(&b, "KF_TPR", tpr, NULL);
    kf_cuda_norm_set(&b, "KF_RPB", rpb, NULL);
    kf_cuda_norm_set(&b, "KF_VEC", vec, NULL);
    kf_cuda_norm_set(&b, "KF_CACHE", cache, cache_why);
    kf_cuda_norm_set(&b, "KF_STATS", stats, NULL);
    kf_cuda_norm_set(&b, "KF_REDUCE", reduce, NULL);
    kf_strbuf_printf(&b,
                     "#define KF_TEAM KF_TPR\n#define KF_BLOCK (KF_TPR * KF_RPB)\n"
                     "/* the signature */\n");
    if (fam) /* the rows: rstd's element count, after the pointers */
        kf_strbuf_printf(&b, "#define KF_M kf_m /* rows: a launch argument (tuned on %lld) */\n",
                         (long long)r.rows);
    else
        kf_strbuf_printf(&b, "#define KF_M %lldLL /* rows */\n", (long long)r.rows);
    kf_strbuf_printf(&b,
                     "#define KF_NORM %lld /* elements per row */\n#define KF_EPS %.17g\n"
                     "#define KF_RMS %d\n#define KF_HAS_W %d\n#define KF_HAS_B %d\n"
                     "typedef %s kf_x_t;\ntypedef %s kf_w_t;\ntypedef %s kf_b_t;\n"
                     "typedef %s kf_y_t;\ntypedef %s kf_m_t;\ntypedef %s kf_r_t;\n",
                     (long long)r.n, r.eps, rms, r.w >= 0, r.b >= 0,
                     kf_template_cuda_type(x->dtype),
                     kf_template_cuda_type(r.w >= 0 ? sig->in[r.w].dtype : KF_F32),
                     kf_template_cuda_type(r.b >= 0 ? sig->in[r.b].dtype : KF_F32),
                     kf_template_cuda_type(sig->out[0].dtype),
                     kf_template_cuda_type(rms ? KF_F32 : sig->out[1].dtype),
                     kf_template_cuda_type(sig->out[rms ? 1 : 2].dtype));
    kf_strbuf_printf(&b, "#define KF_PARAMS const kf_x_t *__restrict__ x, %s%s"
                         "kf_y_t *__restrict__ y, %skf_r_t *__restrict__ rstd_out%s\n\n%s\n",
                     r.w >= 0 ? "const kf_w_t *__restrict__ w, " : "",
                     r.b >= 0 ? "const kf_b_t *__restrict__ b, " : "",
                     rms ? "" : "kf_m_t *__restrict__ mean_out, ", fam ? ", long long kf_m" : "",
                     kf_body_cuda_norm_common_cuh);
    /* where row `row` starts: r * n in a contiguous tensor (the kernel as it always was) */
    for (int k = 0; k < 2; k++) {
        const kf_job_tensor *t = k ? y : x;
        const char *fn = k ? "kf_yrow" : "kf_xrow", *mac = k ? "KF_YROW" : "KF_XROW";
        if (kf_job_tensor_contiguous(t)) {
            kf_strbuf_printf(&b, "#define %s(r) ((r) * KF_NORM)\n", mac);
        } else {
            kf_cuda_norm_emit_row_offset(&b, fn, t, lead);
            kf_strbuf_printf(&b, "#define %s(r) %s((unsigned)(r))\n", mac, fn);
        }
    }
    kf_strbuf_printf(&b, "%s", kf_body_cuda_norm_row_cu);
    unsigned grid[3] = {(unsigned)((r.rows + rpb - 1) / rpb), 1, 1};
    unsigned block[3] = {(unsigned)(tpr * rpb), 1, 1};
    unsigned smem = cache == 2 ? (unsigned)stage_bytes : 0;
    st = kf_template_cuda_finish(t, &b, args, na, grid, block, smem, source, launch_json, err,
                                 errcap);
    if (!fam) return st;
    char rows_int[24];
    snprintf(rows_int, sizeof rows_int, "numel(t%d)", na - 1);
    return kf_template_rows_arg(t, st, rows_int, (unsigned)rpb, 1, source, launch_json, err,
                                errcap);
}

/* Short rows (fewer than 256 vectors of 8): the search starts with the smallest team that
 * still covers a row in one vector each, and the most rows per block, rather than a 256-thread
 * team that would sit mostly idle (MMDiT's 64-element q/k heads). Longer rows start at 0s. */
static void row_start(const kf_job_sig *sig, int *knob_idx)
{
    kf_norm_rows r;
    int rms = sig && !strcmp(sig->op, "aten::_fused_rms_norm");
    const kf_knob_def *tpr = &ln_knobs[0], *rpb = &ln_knobs[1];
    memset(knob_idx, 0, sizeof(int) * (rms ? 5 : 6));
    if (!row_check(sig, rms, &r) || r.n / 8 >= tpr->values[0]) return;
    int best = 0;
    for (int k = 0; k < tpr->n_values; k++)
        if (tpr->values[k] >= r.n / 8 && tpr->values[k] < tpr->values[best]) best = k;
    knob_idx[0] = best;
    knob_idx[1] = rpb->n_values - 1;
}

static kf_status ln_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap);
static kf_status rms_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                            char **launch_json, char *err, size_t errcap);

const kf_template kf_tmpl_cuda_layer_norm = {
    .name = "cuda_layer_norm",
    .backend = "nvrtc",
    .n_knobs = (int)(sizeof ln_knobs / sizeof ln_knobs[0]),
    .knobs = ln_knobs,
    .applies = ln_applies,
    .render = ln_render,
    .start = row_start,
};

const kf_template kf_tmpl_cuda_rms_norm = {
    .name = "cuda_rms_norm",
    .backend = "nvrtc",
    .n_knobs = (int)(sizeof rms_knobs / sizeof rms_knobs[0]),
    .knobs = rms_knobs,
    .applies = rms_applies,
    .render = rms_render,
    .start = row_start,
};

static kf_status ln_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap)
{
    return row_render(&kf_tmpl_cuda_layer_norm, 0, sig, knob_idx, source, launch_json, err,
                      errcap);
}

static kf_status rms_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                            char **launch_json, char *err, size_t errcap)
{
    return row_render(&kf_tmpl_cuda_rms_norm, 1, sig, knob_idx, source, launch_json, err,
                      errcap);
}
