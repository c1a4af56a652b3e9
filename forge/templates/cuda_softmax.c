/* cuda_row_softmax: aten::_softmax / aten::_log_softmax (self, int dim, bool half_to_float) on a
 * contiguous f32/f16/bf16 tensor, fp32 math (half_to_float: f16/bf16 in, f32 out).
 *
 * Two layouts of the reduced dim:
 *  - rows (the dim is the last one, or every dim after it has size 1): each row is KF_COLS
 *    adjacent elements; a group of threads owns a row, or with split > 1 a cluster of blocks
 *    (__cluster_dims__, partials exchanged through distributed shared memory, sm_90) does, so a
 *    few long rows still fill the GPU;
 *  - columns (a dim with inner size I > 1, e.g. dim=1 of [N,C,L]): KF_D entries I apart; adjacent
 *    threads own adjacent columns (coalesced), several threads may split the reduced dim.
 *
 * Knobs (every combination renders a valid kernel; values that do not fit a signature are clamped,
 * so two combinations may render the same kernel):
 *   threads   threads per block;
 *   rows      rows (columns mode: column groups) per block; threads per row = threads / rows, so
 *             small values are block-per-row and rows=threads/32 is warp-per-row;
 *   vec       elements per vector access (1/2/4/8, at most 16 bytes; clamped to what the row
 *             length (columns mode: I) and the recorded alignment allow);
 *   strategy  0 two passes (max, then sum of exp) then the write pass, each reading global memory;
 *             1 one online pass (running max, rescaled sum) then the write pass;
 *             2 staged: the online pass keeps what it reads, the first items of a thread in
 *             registers, the next in shared memory (up to ~224 KiB a block), so global memory is
 *             read once (only what does not fit is read again);
 *             3 staged as 2 with at most ~108 KiB of shared memory, so two blocks fit an SM;
 *   split     blocks per row (rows mode; 1/2/4/8, a cluster; clamped to the vectors in a row).
 *
 * Special values follow eager: -inf entries give 0, a row of -inf gives NaN, a NaN or +inf in a
 * row makes the whole row NaN. exp(v - max) is 2^((v - max) log2 e) on MUFU.EX2 and the softmax
 * is 2^((v - max) log2 e - log2 sum): within ~2e-6 relative, inside the reduction tolerance but
 * not bit-equal to eager. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/template.h"

static const kf_knob_def softmax_knobs[] = {
    {"threads", 6, {32, 64, 128, 256, 512, 1024}},
    {"rows", 6, {1, 2, 4, 8, 16, 32}},
    {"vec", 4, {1, 2, 4, 8}},
    {"strategy", 4, {0, 1, 2, 3}},
    {"split", 4, {1, 2, 4, 8}},
};
enum { K_THREADS, K_ROWS, K_VEC, K_STRATEGY, K_SPLIT, K_COUNT };

/* Dynamic shared memory a block may take for staging: below the 227 KiB opt-in, with room for
 * the static reduction buffers; or half an SM's 228 KiB, less the 1 KiB each block reserves. */
#define SM_SMEM_CAP (224u * 1024u)
#define SM_SMEM_HALF (108u * 1024u)
/* Up to 48 KiB of dynamic shared memory needs no opt-in, so the loader asks for one only above
 * that; static + dynamic must then stay within 48 KiB: keep this much room for the statics. */
#define SM_SMEM_DEFAULT (48u * 1024u)
#define SM_SMEM_STATIC (1u * 1024u)

static int sm_esize(int dtype) { return dtype == KF_F32 ? 4 : 2; }

/* The reduced dim of the signature split as [outer, D, inner]. */
typedef struct sm_shape {
    int64_t outer, d, inner;
} sm_shape;

static int sm_shape_of(const kf_job_sig *sig, sm_shape *sh)
{
    const kf_job_tensor *x = &sig->in[0];
    const kf_job_scalar *dim = kf_job_scalar_find(sig, "dim");
    if (!dim || dim->kind != 'i') return 0;
    int nd = x->ndim, lim = nd > 0 ? nd : 1; /* a 0-dim tensor takes dim 0 or -1 */
    if (dim->i < -lim || dim->i >= lim) return 0;
    int d = (int)(dim->i < 0 ? dim->i + lim : dim->i);
    sh->outer = sh->d = sh->inner = 1;
    for (int k = 0; k < nd; k++) {
        if (k < d) sh->outer *= x->sizes[k];
        else if (k == d) sh->d = x->sizes[k];
        else sh->inner *= x->sizes[k];
    }
    return 1;
}

static int softmax_applies(const kf_job_sig *sig)
{
    if (!sig) return 0;
    if (strcmp(sig->op, "aten::_log_softmax") && strcmp(sig->op, "aten::_softmax")) return 0;
    if (sig->n_in != 1 || sig->n_out != 1 || sig->out_alias[0] != 0) return 0;
    const kf_job_tensor *x = &sig->in[0], *y = &sig->out[0];
    if (!kf_template_cuda_type(x->dtype)) return 0;
    const kf_job_scalar *h2f = kf_job_scalar_find(sig, "half_to_float");
    if (!h2f || h2f->kind != 'b') return 0;
    if (h2f->i ? (x->dtype == KF_F32 || y->dtype != KF_F32) : y->dtype != x->dtype) return 0;
    if (!kf_job_tensor_contiguous(x) || !kf_job_tensor_contiguous(y) ||
        !kf_job_tensor_same_shape(x, y))
        return 0;
    int64_t n = kf_job_tensor_numel(x);
    sm_shape sh;
    if (n <= 0 || n > ((int64_t)1 << 46) || !sm_shape_of(sig, &sh)) return 0;
    /* per-row counts are ints in the kernel; grids fit in grid.x */
    if (sh.d > (1 << 30) || sh.inner > (1 << 30)) return 0;
    if ((sh.inner == 1 ? sh.outer : sh.outer * sh.inner) > ((int64_t)1 << 31) - 1) return 0;
    return 1;
}

/* A family kernel (docs/architecture.md, "Shape families"): rows over the last dim, the row
 * count read at launch and the grid following it; every other layout keeps its constants. */
static int sm_family(const kf_job_sig *sig)
{
    const kf_job_tensor *x = &sig->in[0];
    const kf_job_scalar *dim = kf_job_scalar_find(sig, "dim");
    return x->ndim >= 2 && (dim->i == -1 || dim->i == x->ndim - 1);
}

/* Rows a family member may have: grid.x (rows times the cluster size, at most 8) and the
 * element count applies() allows. */
char *kf_cuda_softmax_family(const kf_job_sig *sig)
{
    if (!sm_family(sig)) return NULL;
    int64_t cols = sig->in[0].sizes[sig->in[0].ndim - 1], max = (((int64_t)1 << 31) - 1) / 8;
    if (cols < 1) return NULL;
    if (max > ((int64_t)1 << 46) / cols) max = ((int64_t)1 << 46) / cols;
    return kf_template_row_family(sig, 2, max);
}

/* Bytes a vector access at `p` may be: what the alignment allows (0 = unknown: none). Fresh
 * outputs are the allocator's (256-byte aligned); a recorded alignment, if any, wins. */
static int sm_align_ok(const kf_job_tensor *t, int bytes, int fresh)
{
    int a = t->align ? t->align : fresh ? 16 : 1;
    return a >= bytes;
}

/* Everything render decides from the signature and the knob values. */
typedef struct sm_plan {
    int mode; /* 0 rows, 1 columns */
    int nt, rpb, tpr, vw, cl, strat;
    int64_t nrows, cols, nv, slice; /* rows mode: rows, columns, vectors per row and block */
    int64_t npt, nreg, svec;        /* items per thread; staged in registers, shared memory */
    int64_t d, inner, ncg;          /* columns mode */
    unsigned red_bytes, smem, grid;
} sm_plan;

static void sm_make_plan(const kf_job_sig *sig, const int *v, sm_plan *p)
{
    const kf_job_tensor *x = &sig->in[0], *y = &sig->out[0];
    int ei = sm_esize(x->dtype), eo = sm_esize(y->dtype);
    sm_shape sh;
    sm_shape_of(sig, &sh);
    memset(p, 0, sizeof *p);
    p->mode = sh.inner > 1;
    p->nt = v[K_THREADS];
    p->rpb = v[K_ROWS] < p->nt ? v[K_ROWS] : p->nt;
    p->tpr = p->nt / p->rpb;
    int64_t len = p->mode ? sh.inner : sh.d; /* what the vector must divide */
    p->vw = v[K_VEC];
    while (p->vw > 1) {
        int out_bytes = p->vw * eo > 16 ? 16 : p->vw * eo;
        if (p->vw * ei <= 16 && len % p->vw == 0 && sm_align_ok(x, p->vw * ei, 0) &&
            sm_align_ok(y, out_bytes, 1))
            break;
        p->vw /= 2;
    }
    /* bytes of registers a thread may stage: a quarter of its share of the register file when
     * one block (strategy 3: two blocks) of this size fills an SM, at most 32 registers */
    p->strat = v[K_STRATEGY];
    int64_t reg_bytes = (p->strat == 3 ? 32768 : 65536) / p->nt;
    if (reg_bytes > 128) reg_bytes = 128;
    int64_t items;
    if (p->mode == 0) {
        p->nrows = sh.outer;
        p->cols = sh.d;
        p->nv = sh.d / p->vw;
        int64_t blocks = (p->nrows + p->rpb - 1) / p->rpb;
        p->cl = v[K_SPLIT];
        while (p->cl > 1 && (p->cl > p->nv || blocks * p->cl > INT32_MAX)) p->cl /= 2;
        p->slice = (p->nv + p->cl - 1) / p->cl;
        p->npt = (p->slice + p->tpr - 1) / p->tpr;
        p->grid = (unsigned)(blocks * p->cl);
        items = p->npt;
    } else {
        p->d = sh.d;
        p->inner = sh.inner;
        p->ncg = sh.outer * (sh.inner / p->vw);
        p->cl = 1;
        p->npt = (sh.d + p->tpr - 1) / p->tpr;
        p->grid = (unsigned)((p->ncg + p->rpb - 1) / p->rpb);
        p->red_bytes = p->tpr > 1 ? (unsigned)(p->nt * p->vw * 8) : 0;
        items = p->npt;
    }
    if (p->strat >= 2) {
        int64_t item = (int64_t)p->vw * ei, cap = p->strat == 2 ? SM_SMEM_CAP : SM_SMEM_HALF;
        p->nreg = reg_bytes / item; /* >= 2: item <= 16 bytes, reg_bytes >= 32 */
        if (p->nreg > items) p->nreg = items;
        p->svec = (cap - p->red_bytes) / ((int64_t)p->nt * item);
        if (p->svec > items - p->nreg) p->svec = items - p->nreg;
        for (;;) { /* not just under the default limit (see SM_SMEM_DEFAULT) */
            int64_t bytes = p->red_bytes + p->svec * p->nt * item;
            if (p->svec == 0 || bytes <= SM_SMEM_DEFAULT - SM_SMEM_STATIC ||
                bytes > SM_SMEM_DEFAULT)
                break;
            p->svec--;
        }
    }
    p->smem = p->red_bytes + (unsigned)(p->svec * p->nt * p->vw * ei);
}

static kf_status softmax_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                                char **launch_json, char *err, size_t errcap);

static int knob_index(int k, int value)
{
    for (int i = 0; i < softmax_knobs[k].n_values; i++)
        if (softmax_knobs[k].values[i] == value) return i;
    return 0;
}

/* Where the search starts (the H200 runs' best region): 256 threads, 16-byte vectors, staged
 * with two blocks an SM; rows up to 8 KB get 64 threads each, longer ones a block, and when
 * long rows are too few for two waves of 132 SMs, clusters split them. A row of at most 64
 * vectors (Swin's 49-wide windows) would leave 64 threads one vector each and a reduction
 * through shared memory: it gets the smallest team, at most a warp, whose threads hold two
 * vectors each and reduce by shuffles alone, as eager's warp softmax does (a job may get only a
 * few candidates: on Swin the 64-thread start stayed at 0.33x of eager). */
static void softmax_start(const kf_job_sig *sig, int *idx)
{
    sm_shape sh;
    if (!sm_shape_of(sig, &sh)) return;
    idx[K_THREADS] = 3;
    idx[K_VEC] = 3;
    idx[K_STRATEGY] = 3;
    if (sh.inner != 1) return;
    int64_t bytes = sh.d * sm_esize(sig->in[0].dtype);
    idx[K_ROWS] = bytes <= 8192 ? 2 : 0;
    for (int s = 0; bytes > 8192 && s < 3 && (sh.outer << s) < 2 * KF_TEMPLATE_SMS; s++) idx[K_SPLIT] = s + 1;
    int v[K_COUNT];
    for (int k = 0; k < K_COUNT; k++) v[k] = softmax_knobs[k].values[idx[k]];
    sm_plan p;
    sm_make_plan(sig, v, &p);
    if (p.nv > 64) return;
    int tpr = 1;
    while (tpr < 32 && 2 * tpr < p.nv) tpr *= 2;
    int threads = 256, rows = 256 / tpr;
    if (rows > 32) rows = 32, threads = 32 * tpr;
    idx[K_THREADS] = knob_index(K_THREADS, threads);
    idx[K_ROWS] = knob_index(K_ROWS, rows);
}

const kf_template kf_tmpl_cuda_row_softmax = {
    .name = "cuda_row_softmax",
    .backend = "nvrtc",
    .n_knobs = K_COUNT,
    .knobs = softmax_knobs,
    .applies = softmax_applies,
    .render = softmax_render,
    .start = softmax_start,
};

static kf_status softmax_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                                char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_cuda_row_softmax;
    int vals[K_COUNT];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    sm_plan p;
    sm_make_plan(sig, vals, &p);
    const char *tin = kf_template_cuda_type(sig->in[0].dtype);
    const char *tout = kf_template_cuda_type(sig->out[0].dtype);

    kf_strbuf b = {0};
    kf_template_cuda_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b,
                     "/* inputs: self; outputs: out */\n"
                     "#define KF_TIN %s\n#define KF_TOUT %s\n#define KF_LOG %d\n"
                     "#define KF_MODE %d /* %s */\n"
                     "#define KF_NT %d\n#define KF_RPB %d\n#define KF_TPR %d\n#define KF_VW %d\n"
                     "#define KF_CL %d\n#define KF_STRAT %d\n#define KF_NPT %lld\n"
                     "#define KF_NREG %lld\n#define KF_SVEC %lld\n#define KF_RED_BYTES %u\n"
                     "#define KF_MINB %d /* blocks per SM the registers must allow */\n",
                     tin, tout, !strcmp(sig->op, "aten::_log_softmax"), p.mode,
                     p.mode ? "columns" : "rows", p.nt, p.rpb, p.tpr, p.vw, p.cl, p.strat,
                     (long long)p.npt, (long long)p.nreg, (long long)p.svec, p.red_bytes,
                     p.strat == 3 && p.nt <= 512 ? 2 : 1);
    const int fam = sm_family(sig);
    if (fam)
        kf_strbuf_printf(&b, "#define KF_ROWS_ARG 1\n#define KF_NROWS kf_rows /* a launch argument, "
                             "after the pointers (tuned on %lld rows) */\n",
                         (long long)p.nrows);
    else if (p.mode == 0)
        kf_strbuf_printf(&b, "#define KF_NROWS %lldLL\n", (long long)p.nrows);
    if (p.mode == 0)
        kf_strbuf_printf(&b, "#define KF_COLS %lldLL\n#define KF_NV %lld\n#define KF_SLICE %lld\n",
                         (long long)p.cols, (long long)p.nv, (long long)p.slice);
    else
        kf_strbuf_printf(&b,
                         "#define KF_D %lld\n#define KF_I %lldLL\n#define KF_IV %lldLL\n"
                         "#define KF_NCG %lldLL\n",
                         (long long)p.d, (long long)p.inner, (long long)(p.inner / p.vw),
                         (long long)p.ncg);
    kf_strbuf_printf(&b, "\n%s", kf_body_cuda_softmax_cu);

    char a_in[40], a_out[40];
    snprintf(a_in, sizeof a_in, "const %s*", tin);
    snprintf(a_out, sizeof a_out, "%s*", tout);
    const char *args[] = {a_in, a_out};
    const unsigned grid[3] = {p.grid, 1, 1}, block[3] = {(unsigned)p.nt, 1, 1};
    st = kf_template_cuda_finish(t, &b, args, 2, grid, block, p.smem, source, launch_json, err,
                                 errcap);
    if (!fam) return st;
    return kf_template_rows_arg(t, st, "numel(t0)/size(t0,-1)", (unsigned)p.rpb,
                                (unsigned)p.cl, source, launch_json, err, errcap);
}
