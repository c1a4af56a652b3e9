/* cuda_solve_triangular: aten::linalg_solve_triangular(A, B, *, upper, left=True,
 * unitriangular) -> X with A X = B, for f32 A [..., n, n] (n <= 128) and B [..., n, k], the
 * batch dims broadcast as torch broadcasts them, A's other triangle never read (nor its diagonal
 * when unitriangular), as eager's cuBLAS trsm. Only left = True (X A = B is refused).
 *
 * Why: Qwen 3.5's Gated DeltaNet (transformers' torch fallback) solves 2048 unit lower
 * triangular 64x64 systems with 128 right-hand sides twice per layer; eager's batched trsm takes
 * ~0.4 ms per call on an H200, ten times the time its 164 MB of traffic need.
 *
 * Kernel: one block per (batch, tile of `threads` columns), one thread per column of B. A is
 * staged transposed in shared memory (row j of it holds column j of A), the thread's column in
 * registers (n floats), and the substitution runs column by column: x_j = b_j (/ a_jj), then
 * b_i -= a_ij x_j for every row i after j (before j when upper), the a_ij read four at a time
 * as broadcasts from shared memory. Loops are fully unrolled (n is a #define), so the column
 * stays in registers; the rows of B and X are read and written through their strides, as
 * vectors along the rows where they are contiguous there.
 * Knobs (every combination renders a valid kernel; values that do not fit are clamped):
 *   threads    columns per block (clamped to k rounded up to a warp)
 *   vec        rows per load/store of B and of X where rows are contiguous and aligned
 *   pitch      floats added to each shared row of A^T: 4 spreads the transposing stores
 *              over more banks
 *   minblocks  __launch_bounds__' minimum resident blocks (registers against occupancy) */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/template.h"

static const kf_knob_def solve_knobs[] = {
    {"threads", 4, {32, 64, 128, 256}},
    {"vec", 3, {1, 2, 4}},
    {"pitch", 2, {0, 4}},
    {"minblocks", 3, {1, 2, 4}},
};
enum { K_THREADS, K_VEC, K_PITCH, K_MINB, K_COUNT };

#define SOLVE_MAX_N 128 /* the column lives in registers */
#define SOLVE_MAX_BATCH_DIMS (KF_MAX_DIMS - 2)

/* ---- the signature ---- */

typedef struct solve_shape {
    int upper, unit;
    int64_t n, k, batch;
    int nb;                           /* X's batch dims */
    int64_t bsz[SOLVE_MAX_BATCH_DIMS]; /* their sizes */
    /* per batch dim of X: the strides of A, B and X (0 where A or B broadcasts) */
    int64_t as[SOLVE_MAX_BATCH_DIMS], bs[SOLVE_MAX_BATCH_DIMS], xs[SOLVE_MAX_BATCH_DIMS];
    int64_t ai, aj, bi, bj, xi, xj; /* within a matrix: row and column strides */
} solve_shape;

static int solve_bool(const kf_job_sig *sig, const char *name, int *v)
{
    const kf_job_scalar *s = kf_job_scalar_find(sig, name);
    if (!s || s->kind != 'b' || (s->i != 0 && s->i != 1)) return 0;
    *v = (int)s->i;
    return 1;
}

/* t's stride for X's batch dim d (of nb), right-aligned; 0 where t broadcasts; -1 when t's
 * size there is neither 1 nor X's */
static int64_t solve_bstride(const kf_job_tensor *t, int nb, int d, int64_t xsize)
{
    int td = d - (nb - (t->ndim - 2));
    if (td < 0) return 0;
    if (t->sizes[td] == xsize) return xsize == 1 ? 0 : t->strides[td];
    return t->sizes[td] == 1 ? 0 : -1;
}

static int solve_check(const kf_job_sig *sig, solve_shape *s)
{
    memset(s, 0, sizeof *s);
    if (!sig || strcmp(sig->op, "aten::linalg_solve_triangular")) return 0;
    if (sig->n_in != 2 || sig->n_out != 1 || sig->out_alias[0]) return 0;
    const kf_job_tensor *a = &sig->in[0], *b = &sig->in[1], *x = &sig->out[0];
    if (a->dtype != KF_F32 || b->dtype != KF_F32 || x->dtype != KF_F32) return 0;
    int left;
    if (!solve_bool(sig, "upper", &s->upper) || !solve_bool(sig, "left", &left) ||
        !solve_bool(sig, "unitriangular", &s->unit) || !left)
        return 0;
    if (a->ndim < 2 || b->ndim < 2 || a->ndim > KF_MAX_DIMS || b->ndim > KF_MAX_DIMS) return 0;
    int xn = a->ndim > b->ndim ? a->ndim : b->ndim;
    if (x->ndim != xn) return 0;
    s->n = a->sizes[a->ndim - 1];
    s->k = b->sizes[b->ndim - 1];
    if (s->n < 1 || s->n > SOLVE_MAX_N || a->sizes[a->ndim - 2] != s->n ||
        b->sizes[b->ndim - 2] != s->n || s->k < 1 || s->k > INT32_MAX)
        return 0;
    if (x->sizes[xn - 2] != s->n || x->sizes[xn - 1] != s->k) return 0;
    const kf_job_tensor *ts[3] = {a, b, x};
    for (int t = 0; t < 3; t++)
        for (int d = 0; d < ts[t]->ndim; d++)
            if (ts[t]->strides[d] < 0 || ts[t]->sizes[d] < 0) return 0;
    s->nb = xn - 2;
    s->batch = 1;
    for (int d = 0; d < s->nb; d++) {
        int64_t n = x->sizes[d];
        s->bsz[d] = n;
        s->as[d] = solve_bstride(a, s->nb, d, n);
        s->bs[d] = solve_bstride(b, s->nb, d, n);
        s->xs[d] = n == 1 ? 0 : x->strides[d];
        if (n < 1 || s->as[d] < 0 || s->bs[d] < 0) return 0;
        /* X's size is the broadcast of A's and B's: some input has it, unless it is 1 */
        int ad = d - (s->nb - (a->ndim - 2)), bd = d - (s->nb - (b->ndim - 2));
        if (n > 1 && !(ad >= 0 && a->sizes[ad] == n) && !(bd >= 0 && b->sizes[bd] == n)) return 0;
        if (s->batch > INT32_MAX / n) return 0;
        s->batch *= n;
    }
    /* the grid of the narrowest tiles (a warp of columns each) fits in grid.x */
    if ((s->k + 31) / 32 > INT32_MAX / s->batch) return 0;
    s->ai = a->strides[a->ndim - 2], s->aj = a->strides[a->ndim - 1];
    s->bi = b->strides[b->ndim - 2], s->bj = b->strides[b->ndim - 1];
    s->xi = x->strides[xn - 2], s->xj = x->strides[xn - 1];
    return 1;
}

static int solve_applies(const kf_job_sig *sig)
{
    solve_shape s;
    return solve_check(sig, &s);
}

/* ---- the plan: effective knob values ---- */

typedef struct solve_plan {
    int threads, minb, bvec, xvec;
    int64_t tiles;
    const char *threads_why, *vec_why;
} solve_plan;

/* Rows of t (row stride 1) may move v at a time: every column and batch start, and n, are
 * multiples of v, and so is the data pointer's alignment (fresh outputs: 16 bytes) */
static int solve_vec_fits(const kf_job_tensor *t, int fresh, const solve_shape *s,
                          const int64_t *bstrides, int64_t ri, int64_t rj, int v)
{
    if (v == 1) return 1;
    if (ri != 1 || s->n % v || (s->k > 1 && rj % v)) return 0;
    for (int d = 0; d < s->nb; d++)
        if (bstrides[d] % v) return 0;
    int align = t->align > 0 ? t->align : fresh ? 16 : 4;
    return align >= 4 * v;
}

static void solve_make_plan(const kf_job_sig *sig, const solve_shape *s, const int *v,
                            solve_plan *p)
{
    memset(p, 0, sizeof *p);
    int64_t kw = (s->k + 31) / 32 * 32;
    p->threads = v[K_THREADS] > kw ? (int)kw : v[K_THREADS];
    if (p->threads < v[K_THREADS]) p->threads_why = "k rounded up to a warp";
    p->minb = v[K_MINB];
    p->bvec = p->xvec = v[K_VEC];
    while (!solve_vec_fits(&sig->in[1], 0, s, s->bs, s->bi, s->bj, p->bvec)) p->bvec /= 2;
    while (!solve_vec_fits(&sig->out[0], 1, s, s->xs, s->xi, s->xj, p->xvec)) p->xvec /= 2;
    if (p->bvec < v[K_VEC] || p->xvec < v[K_VEC])
        p->vec_why = "rows not contiguous, n or the alignment";
    p->tiles = (s->k + p->threads - 1) / p->threads;
}

/* ---- the kernel: kernels/cuda_solve.cu, after the #defines render() prints ---- */

static kf_status solve_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                              char **launch_json, char *err, size_t errcap);

/* Where the search starts: 128 columns per block, 4-row vectors where the rows allow it. */
static void solve_start(const kf_job_sig *sig, int *idx)
{
    (void)sig;
    idx[K_THREADS] = 2;
    idx[K_VEC] = 2;
    idx[K_PITCH] = 1;
}

const kf_template kf_tmpl_cuda_solve_triangular = {
    .name = "cuda_solve_triangular",
    .backend = "nvrtc",
    .n_knobs = K_COUNT,
    .knobs = solve_knobs,
    .applies = solve_applies,
    .render = solve_render,
    .start = solve_start,
};

static kf_status solve_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                              char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_cuda_solve_triangular;
    int vals[K_COUNT];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    solve_shape s;
    solve_check(sig, &s);
    solve_plan p;
    solve_make_plan(sig, &s, vals, &p);

    kf_strbuf b = {0};
    kf_template_cuda_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b, "/* inputs: A, B; output: X; %s%s, left */\n/* effective knob values */\n",
                     s.upper ? "upper" : "lower", s.unit ? ", unitriangular" : "");
    kf_template_define(&b, "KF_NT", p.threads, p.threads_why);
    kf_template_define(&b, "KF_BVEC", p.bvec, p.vec_why);
    kf_template_define(&b, "KF_XVEC", p.xvec, NULL);
    kf_template_define(&b, "KF_MINB", p.minb, NULL);
    kf_strbuf_printf(&b,
                     "/* the signature */\n#define KF_N %lld\n#define KF_K %lld\n"
                     "#define KF_UPPER %d\n#define KF_UNIT %d\n#define KF_TILES %lldLL\n"
                     "#define KF_AI %lldLL\n#define KF_AJ %lldLL\n#define KF_AJ_FAST %d\n"
                     "#define KF_BI %lldLL\n#define KF_BJ %lldLL\n"
                     "#define KF_XI %lldLL\n#define KF_XJ %lldLL\n",
                     (long long)s.n, (long long)s.k, s.upper, s.unit, (long long)p.tiles,
                     (long long)s.ai, (long long)s.aj, s.aj <= s.ai, (long long)s.bi,
                     (long long)s.bj, (long long)s.xi, (long long)s.xj);
    /* the batch index into offsets, innermost dim first (dims of size 1 add nothing) */
    kf_strbuf_printf(&b, "#define KF_BATCH_OFFSETS \\\n");
    if (s.batch > 1)
        kf_strbuf_printf(&b, "    long long r = blockIdx.x / KF_TILES; /* the batch index */ \\\n");
    for (int d = s.nb - 1; d >= 0; d--) {
        if (s.bsz[d] == 1) continue;
        kf_strbuf_printf(&b,
                         "    { const long long q = r %% %lldLL; r /= %lldLL; oa += q * %lldLL; "
                         "ob += q * %lldLL; ox += q * %lldLL; } \\\n",
                         (long long)s.bsz[d], (long long)s.bsz[d], (long long)s.as[d],
                         (long long)s.bs[d], (long long)s.xs[d]);
    }
    kf_strbuf_printf(&b, "    /* batch %lld */\n\n%s", (long long)s.batch, kf_body_cuda_solve_cu);

    const char *args[3] = {"const float*", "const float*", "float*"};
    const unsigned grid[3] = {(unsigned)(p.tiles * s.batch), 1, 1};
    const unsigned block[3] = {(unsigned)p.threads, 1, 1};
    unsigned smem = (unsigned)(s.n * (((s.n + 3) / 4 * 4) + vals[K_PITCH]) * 4);
    return kf_template_cuda_finish(t, &b, args, 3, grid, block, smem, source, launch_json, err,
                                   errcap);
}
