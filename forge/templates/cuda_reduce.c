/* cuda_reduce_mean: aten::mean.dim(self, int[1]? dim, bool keepdim, ScalarType? dtype) for an
 * f32/f16/bf16 input, dtype None (the output has the input's dtype), fp32 accumulation, the sum
 * divided by the reduced count and rounded once to the output dtype. (Eager's CUDA kernel
 * multiplies by a float factor out_numel / numel instead, eager's CPU kernel divides: a few ulp
 * of fp32 apart, far inside the reduction tolerance.)
 *
 * Layouts: the input dense and non-overlapping in any dim order (contiguous, channels_last, any
 * permutation; size-1 dims ignored), its dims in memory order falling into three runs,
 * [outer kept O][reduced R][inner kept I] (either kept run may be empty); a layout where kept
 * and reduced dims interleave otherwise is refused. The output is written through the strides
 * the signature gives (eager's), which must be dense and non-overlapping in some order, so every
 * element is written exactly once. Refused: dim None or [] (all dims), a repeated or
 * out-of-range dim, dtype not None, keepdim missing, an empty input, an out= / aliased output.
 *
 * Two strategies, picked from the shape:
 *  - rows (I == 1, e.g. RMSNorm's variance over the last dim): each row is R adjacent
 *    elements; a team of `tpr` threads owns one row, `rpb` rows per block; each thread sums
 *    vectors t, t + tpr, ..., then warp shuffles and (teams over 32 threads) shared memory;
 *  - columns (I > 1, e.g. a channels_last avgpool over H, W): a thread owns `vec` adjacent
 *    kept-inner elements (a column group) of one outer index and walks R with stride I,
 *    loads coalesced across adjacent threads; `ty` threads may split R, their partial sums
 *    combined by a tree in shared memory.
 *
 * Knobs (every combination renders a valid kernel; values that do not fit are clamped, so two
 * combinations may render the same kernel):
 *   threads  threads per block (columns: fewer when R is too short to split that far);
 *   rows     rows mode: rows per block (threads per row = threads / rows, at most the vectors
 *            of a row rounded up to a power of two); columns mode: column groups per block
 *            (threads splitting R = threads / rows, at most R rounded up to a power of two);
 *   vec      elements per vector load (1/2/4/8, up to 32 bytes as two 16-byte loads; clamped to
 *            what R (rows) or I (columns) and the recorded alignment allow); columns mode
 *            stores a thread's results as one vector too where the output layout allows;
 *   unroll   vector loads in flight per thread (separate accumulators in rows mode; clamped to
 *            the loads a thread has). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/template.h"

static const kf_knob_def reduce_knobs[] = {
    {"threads", 6, {32, 64, 128, 256, 512, 1024}},
    {"rows", 8, {1, 2, 4, 8, 16, 32, 64, 128}},
    {"vec", 4, {1, 2, 4, 8}},
    {"unroll", 4, {1, 2, 4, 8}},
};
enum { K_THREADS, K_ROWS, K_VEC, K_UNROLL, K_COUNT };

#define RD_MAX_LEN (1 << 30) /* R and I are ints in the kernel */

static int rd_esize(int dtype) { return dtype == KF_F32 ? 4 : 2; }

static int64_t rd_pow2_ceil(int64_t v)
{
    int64_t p = 1;
    while (p < v) p *= 2;
    return p;
}

/* ---- the shape ---- */

/* Kept dims of one run, innermost first, with their output strides; adjacent dims merged where
 * the output keeps them contiguous too. */
typedef struct rd_run {
    int n;
    int64_t size[KF_MAX_DIMS], st[KF_MAX_DIMS];
} rd_run;

/* The input as [O][R][I] in memory order, and where output element (o, i) lives. */
typedef struct rd_shape {
    int64_t o, r, i;
    rd_run outer, inner;
} rd_shape;

/* The dims of size > 1 ordered innermost first into dims[]; their count, or -1 when the tensor
 * is not dense and non-overlapping (stride 0, gaps, two dims sharing memory). */
static int rd_dense_order(const kf_job_tensor *t, int *dims)
{
    int n = 0;
    for (int d = 0; d < t->ndim; d++)
        if (t->sizes[d] != 1) dims[n++] = d;
    for (int a = 1; a < n; a++) /* insertion sort by stride; ties fail below */
        for (int b = a; b > 0 && t->strides[dims[b]] < t->strides[dims[b - 1]]; b--) {
            int tmp = dims[b];
            dims[b] = dims[b - 1];
            dims[b - 1] = tmp;
        }
    int64_t expect = 1;
    for (int k = 0; k < n; k++) {
        if (t->strides[dims[k]] != expect) return -1;
        expect *= t->sizes[dims[k]];
    }
    return n;
}

/* The reduced dims as a bit mask: "dim" a non-empty int list of distinct in-range dims. */
static int rd_reduced(const kf_job_sig *sig, int ndim, unsigned *mask)
{
    const kf_job_scalar *dim = kf_job_scalar_find(sig, "dim");
    *mask = 0;
    if (!dim || dim->kind != 'l' || dim->n < 1 || dim->n > ndim) return 0;
    for (int k = 0; k < dim->n; k++) {
        int64_t d = dim->v[k];
        if (d < -ndim || d >= ndim) return 0;
        if (d < 0) d += ndim;
        if (*mask >> d & 1u) return 0; /* torch refuses a repeated dim */
        *mask |= 1u << d;
    }
    return 1;
}

static void rd_run_add(rd_run *r, int64_t size, int64_t st)
{
    if (r->n > 0 && st == r->st[r->n - 1] * r->size[r->n - 1]) {
        r->size[r->n - 1] *= size;
        return;
    }
    r->size[r->n] = size;
    r->st[r->n] = st;
    r->n++;
}

/* applies(): 1 and the shape when the template serves the signature exactly. */
static int rd_shape_of(const kf_job_sig *sig, rd_shape *sh)
{
    memset(sh, 0, sizeof *sh);
    if (!sig || strcmp(sig->op, "aten::mean.dim")) return 0;
    if (sig->n_in != 1 || sig->n_out != 1 || sig->out_alias[0] != 0) return 0;
    const kf_job_tensor *x = &sig->in[0], *y = &sig->out[0];
    if (!kf_template_cuda_type(x->dtype) || y->dtype != x->dtype) return 0;
    if (x->ndim < 1 || x->ndim > KF_MAX_DIMS || y->ndim < 0 || y->ndim > KF_MAX_DIMS) return 0;
    int64_t n = kf_job_tensor_numel(x);
    if (n <= 0 || n > ((int64_t)1 << 46)) return 0;
    const kf_job_scalar *kd = kf_job_scalar_find(sig, "keepdim");
    const kf_job_scalar *dt = kf_job_scalar_find(sig, "dtype");
    if (!kd || kd->kind != 'b' || !dt || dt->kind != 'n') return 0;
    unsigned red;
    if (!rd_reduced(sig, x->ndim, &red)) return 0;

    /* the output has eager's shape; od[d]: the output dim of kept input dim d */
    int keep = kd->i != 0, od[KF_MAX_DIMS], k = 0;
    for (int d = 0; d < x->ndim; d++) {
        int is_red = red >> d & 1u;
        od[d] = keep ? d : is_red ? -1 : k;
        if (keep || !is_red) {
            if (k >= y->ndim || y->sizes[k] != (is_red ? 1 : x->sizes[d])) return 0;
            k++;
        }
    }
    int dims[KF_MAX_DIMS];
    if (k != y->ndim || kf_job_tensor_numel(y) < 0 || rd_dense_order(y, dims) < 0) return 0;

    /* the input's dims in memory order: inner kept, reduced, outer kept */
    int nd = rd_dense_order(x, dims), phase = 0;
    if (nd < 0) return 0;
    sh->o = sh->r = sh->i = 1;
    for (int j = 0; j < nd; j++) {
        int d = dims[j];
        if (red >> d & 1u) {
            if (phase == 2) return 0; /* reduced dims on both sides of a kept one */
            phase = 1;
            sh->r *= x->sizes[d];
            continue;
        }
        if (phase == 1) phase = 2;
        rd_run_add(phase == 0 ? &sh->inner : &sh->outer, x->sizes[d], y->strides[od[d]]);
        *(phase == 0 ? &sh->i : &sh->o) *= x->sizes[d];
    }
    /* grids are counted in ints */
    return sh->r <= RD_MAX_LEN && sh->i <= RD_MAX_LEN && sh->o * sh->i <= INT32_MAX;
}

static int reduce_applies(const kf_job_sig *sig)
{
    rd_shape sh;
    return rd_shape_of(sig, &sh);
}

/* ---- the plan ---- */

/* Bytes the tensor's data pointer is aligned to: as recorded; unknown: element size, or 16 for
 * a fresh output (torch's allocator). */
static int rd_align(const kf_job_tensor *t, int fresh)
{
    int a = t->align > 0 ? t->align : fresh ? 16 : rd_esize(t->dtype);
    return a > 16 ? 16 : a;
}

/* A vector of `bytes` may be accessed at the tensor's alignment (32 bytes go as two 16s). */
static int rd_vec_fits(const kf_job_tensor *t, int fresh, int bytes)
{
    int need = bytes > 16 ? 16 : bytes, a = rd_align(t, fresh);
    return need <= a && a % need == 0;
}

/* The widest vector of at most `want` elements the vectorized dim and the alignment allow. */
static int rd_vec_width(const kf_job_sig *sig, const rd_shape *sh, int want)
{
    int64_t len = sh->i > 1 ? sh->i : sh->r;
    int es = rd_esize(sig->in[0].dtype), vw = want;
    while (vw > 1 && (len % vw || !rd_vec_fits(&sig->in[0], 0, vw * es))) vw /= 2;
    return vw;
}

typedef struct rd_plan {
    int mode;         /* 0 rows (I == 1), 1 columns */
    int nt, vw, un;   /* threads per block, elements per vector, loads in flight */
    int rpb, tpr;     /* rows: rows per block, threads per row */
    int tx, ty;       /* columns: column groups per block, threads splitting R */
    int ovec;         /* columns: a thread's vw results are one vector store */
    int wide;         /* 64-bit element offsets */
    int64_t nv;       /* rows: vectors per row */
    int64_t npt;      /* loads per thread: vectors of a row (rows), rows of R (columns) */
    int64_t ncg;      /* columns: column groups, O * I / vw */
    unsigned grid;
} rd_plan;

static void rd_make_plan(const kf_job_sig *sig, const rd_shape *sh, const int *v, rd_plan *p)
{
    memset(p, 0, sizeof *p);
    p->mode = sh->i > 1;
    p->nt = v[K_THREADS];
    p->vw = rd_vec_width(sig, sh, v[K_VEC]);
    int rows = v[K_ROWS] < p->nt ? v[K_ROWS] : p->nt;
    if (p->mode == 0) {
        p->nv = sh->r / p->vw;
        p->tpr = p->nt / rows;
        if (p->tpr > rd_pow2_ceil(p->nv)) p->tpr = (int)rd_pow2_ceil(p->nv); /* idle threads */
        p->rpb = p->nt / p->tpr;
        p->npt = (p->nv + p->tpr - 1) / p->tpr;
        p->grid = (unsigned)((sh->o + p->rpb - 1) / p->rpb);
    } else {
        p->ty = p->nt / rows;
        if (p->ty > rd_pow2_ceil(sh->r)) p->ty = (int)rd_pow2_ceil(sh->r);
        p->tx = p->nt / p->ty;
        p->ncg = sh->o * (sh->i / p->vw);
        p->npt = (sh->r + p->ty - 1) / p->ty;
        p->grid = (unsigned)((p->ncg + p->tx - 1) / p->tx);
        /* vw adjacent i are adjacent in the output, and every vector starts aligned */
        int es = rd_esize(sig->out[0].dtype);
        p->ovec = p->vw > 1 && sh->inner.n == 1 && sh->inner.st[0] == 1 &&
                  rd_vec_fits(&sig->out[0], 1, p->vw * es);
        for (int d = 0; d < sh->outer.n && p->ovec; d++) p->ovec = sh->outer.st[d] % p->vw == 0;
    }
    p->un = v[K_UNROLL];
    while (p->un > 1 && p->un > p->npt) p->un /= 2;
    p->wide = sh->o * sh->r * sh->i > INT32_MAX;
}

/* ---- the source: #defines, the offset functions below, then kernels/cuda_reduce.cu ---- */

/* Terms of kf_out_off for one run of kept dims indexed by `var` (its flat index, innermost
 * dim fastest). */
static void rd_emit_run(kf_strbuf *b, const rd_run *r, const char *var)
{
    int64_t below = 1;
    for (int d = 0; d < r->n; d++) {
        kf_strbuf_printf(b, " + %s", var);
        if (below > 1) kf_strbuf_printf(b, " / %lld", (long long)below);
        if (d + 1 < r->n) kf_strbuf_printf(b, " %% %lld", (long long)r->size[d]);
        if (r->st[d] != 1) kf_strbuf_printf(b, " * %lld", (long long)r->st[d]);
        below *= r->size[d];
    }
}

static void rd_emit(kf_strbuf *b, const kf_job_sig *sig, const rd_shape *sh, const rd_plan *p)
{
    kf_strbuf_printf(b,
                     "/* inputs: self; outputs: out; self in memory order as [O][R][I] */\n"
                     "#define KF_T %s\n#define KF_MODE %d /* %s */\n"
                     "#define KF_O %lldLL\n#define KF_R %lld\n#define KF_I %lld\n"
                     "#define KF_NT %d\n#define KF_VW %d\n#define KF_UN %d\n#define KF_NPT %lld\n",
                     kf_template_cuda_type(sig->in[0].dtype), p->mode,
                     p->mode ? "columns" : "rows", (long long)sh->o, (long long)sh->r,
                     (long long)sh->i, p->nt, p->vw, p->un, (long long)p->npt);
    if (p->mode == 0)
        kf_strbuf_printf(b, "#define KF_TPR %d\n#define KF_RPB %d\n#define KF_NV %lld\n", p->tpr,
                         p->rpb, (long long)p->nv);
    else
        kf_strbuf_printf(b,
                         "#define KF_TX %d\n#define KF_TY %d\n#define KF_IV %lldLL\n"
                         "#define KF_NCG %lldLL\n#define KF_OVEC %d\n",
                         p->tx, p->ty, (long long)(sh->i / p->vw), (long long)p->ncg, p->ovec);
    kf_strbuf_printf(b, "typedef %s kf_idx;\n\n", p->wide ? "unsigned long long" : "unsigned");
    /* the output element of outer index o and inner index i, through eager's strides */
    kf_strbuf_printf(b, "__device__ __forceinline__ kf_idx kf_out_off(kf_idx o, kf_idx i)\n{\n"
                        "    (void)o, (void)i;\n    return 0");
    rd_emit_run(b, &sh->inner, "i");
    rd_emit_run(b, &sh->outer, "o");
    kf_strbuf_printf(b, ";\n}\n\n%s", kf_body_cuda_reduce_cu);
}

static kf_status reduce_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                               char **launch_json, char *err, size_t errcap);

/* Where the search starts: 256 threads, 16-byte (f32: 32-byte) vectors, 4 loads in flight;
 * rows: a team per row big enough that each thread takes about 4 vectors (a warp at least);
 * columns: R split over up to 8 threads, each taking 16 rows or more. */
static void reduce_start(const kf_job_sig *sig, int *idx)
{
    rd_shape sh;
    if (!rd_shape_of(sig, &sh)) return;
    idx[K_THREADS] = 3;
    idx[K_VEC] = 3;
    idx[K_UNROLL] = 2;
    int split = 1; /* threads per row (rows), or splitting R (columns) */
    if (sh.i == 1) {
        int64_t nv = sh.r / rd_vec_width(sig, &sh, 8);
        split = 32;
        while (split < 256 && split * 4 < nv) split *= 2;
    } else {
        while (split < 8 && split * 32 <= sh.r) split *= 2;
    }
    int rows = 256 / split, k = 0;
    while ((1 << k) < rows && k + 1 < reduce_knobs[K_ROWS].n_values) k++;
    idx[K_ROWS] = k; /* columns: at most 128 groups, so R goes to at least 2 threads */
}

const kf_template kf_tmpl_cuda_reduce_mean = {
    .name = "cuda_reduce_mean",
    .backend = "nvrtc",
    .n_knobs = K_COUNT,
    .knobs = reduce_knobs,
    .applies = reduce_applies,
    .render = reduce_render,
    .start = reduce_start,
};

static kf_status reduce_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                               char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_cuda_reduce_mean;
    int vals[K_COUNT];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    rd_shape sh;
    rd_shape_of(sig, &sh);
    rd_plan p;
    rd_make_plan(sig, &sh, vals, &p);

    kf_strbuf b = {0};
    kf_template_cuda_prologue(&b, t, sig, vals);
    rd_emit(&b, sig, &sh, &p);

    const char *ty = kf_template_cuda_type(sig->in[0].dtype);
    char a_in[40], a_out[40];
    snprintf(a_in, sizeof a_in, "const %s*", ty);
    snprintf(a_out, sizeof a_out, "%s*", ty);
    const char *args[] = {a_in, a_out};
    const unsigned grid[3] = {p.grid, 1, 1}, block[3] = {(unsigned)p.nt, 1, 1};
    return kf_template_cuda_finish(t, &b, args, 2, grid, block, 0, source, launch_json, err,
                                   errcap);
}
