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
 * (they are only read). A normalized dim that is strided is templates_cuda_norm_cols.c's.
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
#include <stdio.h>
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

static const char row_kernel[] =
    "/* One row of KF_NORM elements per team of KF_TPR threads, KF_RPB rows per block. */\n"
    "#define KF_NV (KF_NORM / KF_VEC)                  /* vectors per row */\n"
    "#define KF_PER ((KF_NV + KF_TPR - 1) / KF_TPR)    /* vectors per thread, at most */\n"
    "typedef kf_vec<kf_x_t, KF_VEC> kf_xv;\n"
    "typedef kf_vec<kf_y_t, KF_VEC> kf_yv;\n"
    "typedef kf_xv::raw kf_xr;\n"
    "typedef kf_vec<kf_w_t, KF_VEC> kf_wv;\n"
    "typedef kf_vec<kf_b_t, KF_VEC> kf_bv;\n"
    "#if KF_RMS\n"
    "typedef kf_s1 kf_acc_t; /* sum of squares */\n"
    "#elif KF_STATS == 0\n"
    "typedef kf_s1 kf_acc_t; /* sum; the squared deviations come in a second pass */\n"
    "#elif KF_STATS == 1\n"
    "typedef kf_w3 kf_acc_t; /* Welford */\n"
    "#else\n"
    "typedef kf_s2 kf_acc_t; /* sum and sum of squares */\n"
    "#endif\n"
    "\n"
    "/* accumulate one vector */\n"
    "__device__ __forceinline__ void kf_take(kf_acc_t &a, const float (&f)[KF_VEC])\n"
    "{\n"
    "#if KF_RMS\n"
    "#pragma unroll\n"
    "    for (int e = 0; e < KF_VEC; e++) a.a += f[e] * f[e];\n"
    "#elif KF_STATS == 0\n"
    "#pragma unroll\n"
    "    for (int e = 0; e < KF_VEC; e++) a.a += f[e];\n"
    "#elif KF_STATS == 1\n"
    "    kf_welford(a, f);\n"
    "#else\n"
    "#pragma unroll\n"
    "    for (int e = 0; e < KF_VEC; e++) a.a += f[e], a.b += f[e] * f[e];\n"
    "#endif\n"
    "}\n"
    "\n"
    "#if KF_CACHE == 1\n"
    "#define KF_FETCH(k, i) reg[k]\n"
    "#elif KF_CACHE == 2\n"
    "#define KF_FETCH(k, i) stage[i]\n"
    "#else\n"
    "#define KF_FETCH(k, i) kf_xv::ld(xr + (long long)(i) * KF_VEC)\n"
    "#endif\n"
    "\n"
    "extern \"C\" __global__ void __launch_bounds__(KF_BLOCK) kf_kernel(KF_PARAMS)\n"
    "{\n"
    "    __shared__ float kf_red[KF_RED_FLOATS];\n"
    "#if KF_CACHE == 2\n"
    "    extern __shared__ __align__(16) unsigned char kf_smem[];\n"
    "    kf_xr *const stage =\n"
    "        reinterpret_cast<kf_xr *>(kf_smem) + (threadIdx.x / KF_TPR) * KF_NV;\n"
    "#elif KF_CACHE == 1\n"
    "    kf_xr reg[KF_PER];\n"
    "#endif\n"
    "    const int lt = threadIdx.x % KF_TPR;\n"
    "    const long long row = (long long)blockIdx.x * KF_RPB + threadIdx.x / KF_TPR;\n"
    "    const bool active = row < KF_M; /* spare teams of the last block join the barriers */\n"
    "    const kf_x_t *const xr = x + (active ? KF_XROW(row) : 0LL);\n"
    "\n"
    "    /* pass 1: read the row once, keep it where KF_CACHE says, accumulate */\n"
    "    kf_acc_t acc = {};\n"
    "#if KF_CACHE == 1\n"
    "#pragma unroll\n"
    "#else\n"
    "#pragma unroll 4\n"
    "#endif\n"
    "    for (int k = 0; k < KF_PER; k++) {\n"
    "        const int i = lt + k * KF_TPR;\n"
    "        if (active && i < KF_NV) {\n"
    "            const kf_xr r = kf_xv::ld(xr + (long long)i * KF_VEC);\n"
    "#if KF_CACHE == 1\n"
    "            reg[k] = r;\n"
    "#elif KF_CACHE == 2\n"
    "            stage[i] = r; /* read back by this same thread only: no barrier needed */\n"
    "#endif\n"
    "            float f[KF_VEC];\n"
    "            kf_xv::unpack(r, f);\n"
    "            kf_take(acc, f);\n"
    "        }\n"
    "    }\n"
    "    acc = kf_team_reduce(acc, kf_red);\n"
    "\n"
    "#if KF_RMS\n"
    "    const float var = acc.a / (float)KF_NORM; /* mean of squares */\n"
    "#elif KF_STATS == 0\n"
    "    const float mean = acc.a / (float)KF_NORM;\n"
    "    kf_s1 sq = {};\n"
    "#if KF_CACHE == 1\n"
    "#pragma unroll\n"
    "#else\n"
    "#pragma unroll 4\n"
    "#endif\n"
    "    for (int k = 0; k < KF_PER; k++) {\n"
    "        const int i = lt + k * KF_TPR;\n"
    "        if (active && i < KF_NV) {\n"
    "            float f[KF_VEC];\n"
    "            kf_xv::unpack(KF_FETCH(k, i), f);\n"
    "#pragma unroll\n"
    "            for (int e = 0; e < KF_VEC; e++) {\n"
    "                const float d = f[e] - mean;\n"
    "                sq.a += d * d;\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "    sq = kf_team_reduce(sq, kf_red);\n"
    "    const float var = sq.a / (float)KF_NORM;\n"
    "#elif KF_STATS == 1\n"
    "    const float mean = acc.m, var = acc.q / (float)KF_NORM;\n"
    "#else\n"
    "    const float mean = acc.a / (float)KF_NORM, var = acc.b / (float)KF_NORM - mean * mean;\n"
    "#endif\n"
    "    const float rstd = rsqrtf(fmaxf(var, 0.f) + (float)(KF_EPS));\n"
    "    if (active && lt == 0) {\n"
    "#if !KF_RMS\n"
    "        mean_out[row] = kf_from_f<kf_m_t>(mean);\n"
    "#endif\n"
    "        rstd_out[row] = kf_from_f<kf_r_t>(rstd);\n"
    "    }\n"
    "\n"
    "    /* last pass: y = w * (rstd * (x - mean)) + b, in torch's order */\n"
    "    kf_y_t *const yr = y + (active ? KF_YROW(row) : 0LL);\n"
    "#if KF_CACHE == 1\n"
    "#pragma unroll\n"
    "#else\n"
    "#pragma unroll 4\n"
    "#endif\n"
    "    for (int k = 0; k < KF_PER; k++) {\n"
    "        const int i = lt + k * KF_TPR;\n"
    "        if (active && i < KF_NV) {\n"
    "            float f[KF_VEC], o[KF_VEC];\n"
    "            kf_xv::unpack(KF_FETCH(k, i), f);\n"
    "#if KF_HAS_W\n"
    "            float wv[KF_VEC];\n"
    "            kf_wv::unpack(kf_wv::ld(w + (long long)i * KF_VEC), wv);\n"
    "#endif\n"
    "#if KF_HAS_B\n"
    "            float bv[KF_VEC];\n"
    "            kf_bv::unpack(kf_bv::ld(b + (long long)i * KF_VEC), bv);\n"
    "#endif\n"
    "#pragma unroll\n"
    "            for (int e = 0; e < KF_VEC; e++) {\n"
    "#if KF_RMS\n"
    "                float t = rstd * f[e];\n"
    "#else\n"
    "                float t = rstd * (f[e] - mean);\n"
    "#endif\n"
    "#if KF_HAS_W\n"
    "                t = wv[e] * t;\n"
    "#endif\n"
    "#if KF_HAS_B\n"
    "                t = t + bv[e];\n"
    "#endif\n"
    "                o[e] = t;\n"
    "            }\n"
    "            kf_yv::st(yr + (long long)i * KF_VEC, o);\n"
    "        }\n"
    "    }\n"
    "}\n"
    ;

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
                     "/* the signature */\n#define KF_M %lldLL /* rows */\n"
                     "#define KF_NORM %lld /* elements per row */\n#define KF_EPS %.17g\n"
                     "#define KF_RMS %d\n#define KF_HAS_W %d\n#define KF_HAS_B %d\n"
                     "typedef %s kf_x_t;\ntypedef %s kf_w_t;\ntypedef %s kf_b_t;\n"
                     "typedef %s kf_y_t;\ntypedef %s kf_m_t;\ntypedef %s kf_r_t;\n",
                     (long long)r.rows, (long long)r.n, r.eps, rms, r.w >= 0, r.b >= 0,
                     kf_template_cuda_type(x->dtype),
                     kf_template_cuda_type(r.w >= 0 ? sig->in[r.w].dtype : KF_F32),
                     kf_template_cuda_type(r.b >= 0 ? sig->in[r.b].dtype : KF_F32),
                     kf_template_cuda_type(sig->out[0].dtype),
                     kf_template_cuda_type(rms ? KF_F32 : sig->out[1].dtype),
                     kf_template_cuda_type(sig->out[rms ? 1 : 2].dtype));
    kf_strbuf_printf(&b, "#define KF_PARAMS const kf_x_t *__restrict__ x, %s%s"
                         "kf_y_t *__restrict__ y, %skf_r_t *__restrict__ rstd_out\n\n%s\n",
                     r.w >= 0 ? "const kf_w_t *__restrict__ w, " : "",
                     r.b >= 0 ? "const kf_b_t *__restrict__ b, " : "",
                     rms ? "" : "kf_m_t *__restrict__ mean_out, ", kf_cuda_norm_device);
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
    kf_strbuf_printf(&b, "%s", row_kernel);
    unsigned grid[3] = {(unsigned)((r.rows + rpb - 1) / rpb), 1, 1};
    unsigned block[3] = {(unsigned)(tpr * rpb), 1, 1};
    unsigned smem = cache == 2 ? (unsigned)stage_bytes : 0;
    return kf_template_cuda_finish(t, &b, args, na, grid, block, smem, source, launch_json, err,
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
