/* cuda_layer_norm_cols and cuda_rms_norm_cols: aten::native_layer_norm and aten::_fused_rms_norm
 * over ONE normalized dim that is strided (stride S != 1), where the innermost leading dim of
 * size > 1 has stride 1: rows adjacent in memory, their elements S apart, as in a [B, C, S]
 * tensor seen as [B, S, C] and normalized over C. Numerics as cuda_norm_row.c says
 * (fp32 statistics, population variance, torch's eps, y = w * (rstd * (x - mean)) + b).
 *
 * Layouts served: y with x's strides (every dim of size > 1), written like x is read; or y whose
 * normalized dim is contiguous (eager's contiguous y), written through a shared-memory tile so
 * both sides stay coalesced. y's elements must not overlap; mean / rstd one per row in logical
 * row order (contiguous). Anything else (two normalized dims, a stride-0 normalized dim, the
 * stride-1 dim elsewhere, another y layout) is refused and eager keeps it.
 *
 * Kernel: a block owns `rows` consecutive rows, as rows/vec groups of `vec` adjacent rows (one
 * vector access per column); the threads of a group (threads / groups of them) split its n
 * columns, so a warp reads runs of adjacent rows (coalesced); their partial statistics meet in
 * shared memory (a tree, in a fixed order). Another read of x (an L2 hit) writes y; stats=0
 * reads it once more for the squared deviations. Knobs:
 *   threads  threads per block
 *   rows     rows per block (clamped to threads * vec, and to what the rows need)
 *   vec      adjacent rows per thread, one vector access (clamped to what the alignment, the
 *            strides and the stride-1 dim's size allow)
 *   unroll   columns loaded ahead per thread
 *   tile     columns per shared-memory tile when y is transposed (clamped to the row and to
 *            the static shared memory; unused when y has x's layout)
 *   stats    (layer_norm) 0 two passes (exact), 1 Welford, 2 sum and sum of squares */
#include <stdio.h>
#include <string.h>

#include "forge/templates/cuda_norm.h"

#define COLS_SMEM_MAX (46 * 1024) /* static shared memory: below the 48 KiB of a plain launch */
#define COLS_RED_MAX (12 * 1024)  /* of which the statistics' reduction buffer */

static const kf_knob_def ln_knobs[] = {
    {"threads", 5, {256, 512, 128, 1024, 64}},
    {"rows", 5, {64, 32, 128, 256, 16}},
    {"vec", 4, {8, 4, 2, 1}},
    {"unroll", 4, {4, 8, 2, 1}},
    {"tile", 3, {64, 32, 16}},
    {"stats", 3, {0, 1, 2}},
};
/* the same minus stats (a sum of squares is all rms_norm needs) */
static const kf_knob_def rms_knobs[] = {
    {"threads", 5, {256, 512, 128, 1024, 64}},
    {"rows", 5, {64, 32, 128, 256, 16}},
    {"vec", 4, {8, 4, 2, 1}},
    {"unroll", 4, {4, 8, 2, 1}},
    {"tile", 3, {64, 32, 16}},
};

/* The signature, checked; *run: the stride-1 dim, *yt: y's normalized dim is contiguous. */
static int cols_check(const kf_job_sig *sig, int rms, kf_norm_rows *r, int *run, int *yt)
{
    if (!kf_cuda_norm_rows_parse(sig, rms, r) || r->nn != 1 || r->n < 2) return 0;
    const kf_job_tensor *x = &sig->in[0], *y = &sig->out[0];
    const int nd = x->ndim;
    if (x->strides[nd - 1] < 2) return 0; /* 1: rows (the row template); 0: broadcast */
    int d = nd - 2;
    while (d >= 0 && x->sizes[d] == 1) d--;
    if (d < 0 || x->strides[d] != 1) return 0; /* adjacent rows must be adjacent in memory */
    *run = d;
    int same = 1;
    for (int k = 0; k < nd; k++) same &= x->sizes[k] == 1 || y->strides[k] == x->strides[k];
    *yt = !same;
    return same || y->strides[nd - 1] == 1;
}

static int ln_applies(const kf_job_sig *sig)
{
    kf_norm_rows r;
    int run, yt;
    return cols_check(sig, 0, &r, &run, &yt);
}

static int rms_applies(const kf_job_sig *sig)
{
    kf_norm_rows r;
    int run, yt;
    return cols_check(sig, 1, &r, &run, &yt);
}

/* Every dim of size > 1 but the stride-1 one has a stride that is a multiple of v. */
static int strides_div(const kf_job_tensor *t, int run, int64_t v)
{
    for (int d = 0; d < t->ndim; d++)
        if (d != run && t->sizes[d] > 1 && t->strides[d] % v) return 0;
    return 1;
}

/* Everything render decides from the signature and the knob values. */
typedef struct cols_plan {
    kf_norm_rows r;
    int run, yt;                  /* the stride-1 dim; y transposed */
    int threads, rows, vec, unroll, tile, stats, vy, rv;
    const char *rows_why, *vec_why, *tile_why;
} cols_plan;

static int acc_bytes(int rms, int stats) { return rms || stats == 0 ? 4 : stats == 1 ? 12 : 8; }

static void cols_make_plan(const kf_job_sig *sig, int rms, const int *v, cols_plan *p)
{
    const kf_job_tensor *x = &sig->in[0], *y = &sig->out[0];
    const int nd = x->ndim;
    memset(p, 0, sizeof *p);
    cols_check(sig, rms, &p->r, &p->run, &p->yt);
    p->threads = v[0], p->rows = v[1], p->vec = v[2], p->unroll = v[3], p->tile = v[4];
    p->stats = rms ? 0 : v[5];

    /* a vector covers vec adjacent rows of one run of the stride-1 dim, and every vector of x
     * (and of y when it has x's layout) starts on a vector boundary */
    for (; p->vec > 1; p->vec /= 2) {
        int ok = x->sizes[p->run] % p->vec == 0 && kf_cuda_norm_vec_fits(x, 0, p->vec) &&
                 strides_div(x, p->run, p->vec) &&
                 (p->yt || kf_cuda_norm_vec_fits(y, 1, p->vec));
        if (ok) break;
    }
    if (p->vec != v[2]) p->vec_why = "the largest that the sizes, strides and alignment allow";
    /* a block holds at most one row group per thread, and not many more rows than there are */
    if (p->rows > p->threads * p->vec) {
        p->rows = p->threads * p->vec;
        p->rows_why = "one row group per thread at most";
    }
    while (p->rows > p->vec && p->rows / 2 >= p->r.rows) {
        p->rows /= 2;
        p->rows_why = "no more rows than the tensor has";
    }
    /* threads with no column to take: fewer threads (whole warps) */
    int cg = p->rows / p->vec;
    while (p->threads > 32 && p->threads / 2 >= cg && p->threads / cg / 2 >= p->r.n)
        p->threads /= 2;
    int ab = acc_bytes(rms, p->stats);
    p->rv = p->vec;
    while (p->rv > 1 && p->rv * p->threads * ab > COLS_RED_MAX) p->rv /= 2;

    if (!p->yt) {
        p->tile = 0, p->vy = 1;
        p->tile_why = "y has x's layout: no tile";
        return;
    }
    int ey = kf_cuda_norm_esize(y->dtype);
    for (p->vy = 8; p->vy > 1; p->vy /= 2)
        if (p->vy * ey <= 16 && p->r.n % p->vy == 0 &&
            kf_cuda_norm_lead_strides_div(y, nd - 1, p->vy) && kf_cuda_norm_vec_fits(y, 1, p->vy))
            break;
    int64_t span = p->vy;
    while (span < p->r.n) span *= 2;
    if (p->tile > span) {
        p->tile = (int)span;
        p->tile_why = "no wider than the row";
    }
    for (;;) {
        int64_t bytes = (int64_t)(p->threads > cg ? p->rv * p->threads : 1) * ab +
                        (int64_t)p->tile * (p->rows + 1) * 4 + (int64_t)p->rows * 16;
        if (bytes <= COLS_SMEM_MAX || p->tile <= p->vy) break;
        p->tile /= 2;
        p->tile_why = "static shared memory";
    }
}

static kf_status cols_render(const kf_template *t, int rms, const kf_job_sig *sig,
                             const int *knob_idx, char **source, char **launch_json, char *err,
                             size_t errcap)
{
    int vals[6];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    cols_plan p;
    cols_make_plan(sig, rms, vals, &p);
    const kf_job_tensor *x = &sig->in[0], *y = &sig->out[0];
    const kf_norm_rows *r = &p.r;

    const char *args[KF_JOB_MAX_TENSORS + KF_JOB_MAX_OUTPUTS];
    int na = kf_cuda_norm_args(sig, args);

    kf_strbuf b = {0};
    kf_template_cuda_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b, "/* effective knob values: every combination renders a kernel that is "
                         "right for this signature */\n");
    kf_cuda_norm_set(&b, "KF_THREADS", p.threads,
                     p.threads != vals[0] ? "threads with no column to take: fewer" : NULL);
    kf_cuda_norm_set(&b, "KF_ROWS", p.rows, p.rows_why);
    kf_cuda_norm_set(&b, "KF_VEC", p.vec, p.vec_why);
    kf_cuda_norm_set(&b, "KF_TILE", p.tile, p.tile_why);
    kf_cuda_norm_set(&b, "KF_STATS", p.stats, NULL);
    kf_strbuf_printf(&b,
                     "#define KF_BLOCK KF_THREADS\n#define KF_R KF_ROWS\n#define KF_U KF_UNROLL\n"
                     "#define KF_TEAM 32 /* kf_team_reduce is not used here */\n"
                     "#define KF_REDUCE 0\n"
                     "#define KF_RV %d /* rows per reduction round (shared memory) */\n"
                     "#define KF_YT %d /* y transposed: its rows are contiguous */\n"
                     "#define KF_VY %d /* elements per vector store of a y row (transposed) */\n"
                     "/* the signature */\n#define KF_M %lldLL /* rows */\n"
                     "#define KF_NORM %lld /* elements per row */\n"
                     "#define KF_XN %lldLL /* their stride */\n#define KF_EPS %.17g\n"
                     "#define KF_RMS %d\n#define KF_HAS_W %d\n#define KF_HAS_B %d\n"
                     "typedef %s kf_x_t;\ntypedef %s kf_w_t;\ntypedef %s kf_b_t;\n"
                     "typedef %s kf_y_t;\ntypedef %s kf_m_t;\ntypedef %s kf_r_t;\n",
                     p.rv, p.yt, p.vy, (long long)r->rows, (long long)r->n,
                     (long long)x->strides[x->ndim - 1], r->eps, rms, r->w >= 0, r->b >= 0,
                     kf_template_cuda_type(x->dtype),
                     kf_template_cuda_type(r->w >= 0 ? sig->in[r->w].dtype : KF_F32),
                     kf_template_cuda_type(r->b >= 0 ? sig->in[r->b].dtype : KF_F32),
                     kf_template_cuda_type(y->dtype),
                     kf_template_cuda_type(rms ? KF_F32 : sig->out[1].dtype),
                     kf_template_cuda_type(sig->out[rms ? 1 : 2].dtype));
    kf_strbuf_printf(&b, "#define KF_PARAMS const kf_x_t *__restrict__ x, %s%s"
                         "kf_y_t *__restrict__ y, %skf_r_t *__restrict__ rstd_out\n\n%s\n",
                     r->w >= 0 ? "const kf_w_t *__restrict__ w, " : "",
                     r->b >= 0 ? "const kf_b_t *__restrict__ b, " : "",
                     rms ? "" : "kf_m_t *__restrict__ mean_out, ", kf_body_cuda_norm_common_cuh);
    kf_cuda_norm_emit_row_offset(&b, "kf_xrow", x, x->ndim - 1);
    if (p.yt) kf_cuda_norm_emit_row_offset(&b, "kf_yrow", y, y->ndim - 1);
    kf_strbuf_printf(&b, "\n%s", kf_body_cuda_norm_cols_cu);
    unsigned grid[3] = {(unsigned)((r->rows + p.rows - 1) / p.rows), 1, 1};
    unsigned block[3] = {(unsigned)p.threads, 1, 1};
    return kf_template_cuda_finish(t, &b, args, na, grid, block, 0, source, launch_json, err,
                                   errcap);
}

/* Start with enough blocks to fill a GPU (a few per SM of an H100/H200): the most rows per
 * block that still give 512 blocks, else the fewest; the other knobs at their first value. */
static void cols_start(const kf_job_sig *sig, int *knob_idx)
{
    kf_norm_rows r;
    int run, yt, rms = sig && !strcmp(sig->op, "aten::_fused_rms_norm");
    const kf_knob_def *rows = &ln_knobs[1];
    memset(knob_idx, 0, sizeof(int) * (rms ? 5 : 6));
    if (!cols_check(sig, rms, &r, &run, &yt)) return;
    int best = -1, fewest = 0;
    for (int k = 0; k < rows->n_values; k++) {
        if (rows->values[k] < rows->values[fewest]) fewest = k;
        if ((r.rows + rows->values[k] - 1) / rows->values[k] >= 512 &&
            (best < 0 || rows->values[k] > rows->values[best]))
            best = k;
    }
    knob_idx[1] = best >= 0 ? best : fewest;
}

static kf_status ln_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap);
static kf_status rms_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                            char **launch_json, char *err, size_t errcap);

const kf_template kf_tmpl_cuda_layer_norm_cols = {
    .name = "cuda_layer_norm_cols",
    .backend = "nvrtc",
    .n_knobs = (int)(sizeof ln_knobs / sizeof ln_knobs[0]),
    .knobs = ln_knobs,
    .applies = ln_applies,
    .render = ln_render,
    .start = cols_start,
};

const kf_template kf_tmpl_cuda_rms_norm_cols = {
    .name = "cuda_rms_norm_cols",
    .backend = "nvrtc",
    .n_knobs = (int)(sizeof rms_knobs / sizeof rms_knobs[0]),
    .knobs = rms_knobs,
    .applies = rms_applies,
    .render = rms_render,
    .start = cols_start,
};

static kf_status ln_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap)
{
    return cols_render(&kf_tmpl_cuda_layer_norm_cols, 0, sig, knob_idx, source, launch_json, err,
                       errcap);
}

static kf_status rms_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                            char **launch_json, char *err, size_t errcap)
{
    return cols_render(&kf_tmpl_cuda_rms_norm_cols, 1, sig, knob_idx, source, launch_json, err,
                       errcap);
}
