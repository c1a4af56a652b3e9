/* Elementwise CUDA templates (backend "nvrtc"), f32/f16/bf16, fp32 math rounded once to the
 * output type as eager does (gelu "tanh" and silu take exp and 1/x from the MUFU unit, ~1e-6
 * relative, inside the elementwise tolerance but not bit-equal to eager):
 *   cuda_eltwise_unary:  aten::gelu (approximate "none": erf, "tanh"), aten::silu, aten::relu,
 *                        aten::clamp_min (Scalar min), and in place aten::relu_ / aten::clamp_min_
 *                        (NaN stays NaN, as eager's clamp), aten::pow.Tensor_Scalar (eager's
 *                        special exponents 0, 1, 2, 3, 0.5, -0.5, -1, -2 as it computes them,
 *                        else powf). The output non-overlapping, in any dim order, with gaps
 *                        or not (a slice of a larger buffer; in place, self is the output); the
 *                        input with any strides. The same dense layout on both sides is one
 *                        flat loop over memory order; else the input is read through its
 *                        strides as binary's are.
 *   cuda_eltwise_binary: aten::add.Tensor (y = a + alpha * b, alpha int or float, taken as float
 *                        as eager does), aten::mul.Tensor, and in place aten::add_.Tensor /
 *                        aten::mul_.Tensor. Inputs broadcast to the output (fewer dims, size-1
 *                        dims); all three tensors of one dtype, or out of place f32/f16/bf16 inputs
 *                        of two dtypes into f32 (eager widens both). The output (non-overlapping,
 *                        gaps allowed) is walked in its memory order; an input's element offset
 *                        comes from the output index through its broadcast strides (0 for a
 *                        broadcast dim), after collapsing dims that stay contiguous for every
 *                        tensor; the output's offset the same way through its own strides when
 *                        it has gaps (else it is the index). When everything collapses to
 *                        one stride-1 dim (same dense layout everywhere) it is the flat loop.
 *                        When an input transposes the output (MMDiT's residual add of a [B,C,S]
 *                        tensor seen as [B,S,C]), transpose_tile renders tiles instead.
 *                        `other` may be a Python number (`x * 0.5`: absent from in[], a scalar of
 *                        kind d/i/b, forge/job/sig.h): then self is the one operand, of the
 *                        output's dtype, and the number is compiled in as eager's CUDA kernel
 *                        takes it: the op-math float of the double (TensorIterator promotes
 *                        CPU scalars to the common dtype on CPU only; the H200 run showed the
 *                        f16/bf16 results one ulp off when narrowed first).
 *
 * The layouts, the plan and the loop are shared with cuda_eltwise_copy (cuda_copy.c,
 * through cuda_eltwise.h).
 *
 * Knobs (every combination renders a valid kernel; values that do not fit are clamped):
 *   vec      elements per vector access (1/2/4/8, at most 16 bytes; bounded by the recorded
 *            alignment and numel; with broadcasting, strides or gaps also by the innermost
 *            collapsed dim, which the output must be contiguous along and whose other dims'
 *            strides must keep its vectors aligned; an input that cannot take vectors is read as
 *            a broadcast value or element by element);
 *   unroll   vectors per thread per step (loads in flight);
 *   threads  threads per block;
 *   grid     0: one tile (threads * unroll vectors) per block; k > 0: a grid-stride loop over
 *            k * (resident blocks of a 132-SM H100/H200) blocks;
 *   transpose_tile (binary and copy_ only) 0: the loop; 32 or 64: when an operand is contiguous
 *            along a dim that is not the output's innermost (the loop would read it elements a
 *            stride apart), T x T tiles, one per block: such operands are read along their
 *            contiguous dim into shared memory, the others and the output go along the output's,
 *            so every access is coalesced (vec/unroll/grid unused). Without such an operand,
 *            with an output not contiguous along its innermost dim, or with more tiles than
 *            grid.x holds, it is the loop. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/cuda_eltwise.h"

static const kf_knob_def eltwise_knobs[K_COUNT] = {KF_EW_KNOB_DEFS};
/* the loop's knobs, then transpose_tile (appended: the loop's indices keep their meaning) */
static const kf_knob_def binary_knobs[K_TILE_COUNT] = {KF_EW_KNOB_DEFS, KF_EW_TILE_KNOB_DEF};

int kf_ew_esize(int dtype) { return dtype == KF_F32 ? 4 : 2; }

/* ---- layouts ---- */

/* Stride of input `t` along output dim d (t aligned to the right), 0 where it broadcasts; -1
 * when it does not broadcast to the output. */
static int64_t ew_bstride(const kf_job_tensor *t, const kf_job_tensor *out, int d)
{
    int k = d - (out->ndim - t->ndim);
    if (k < 0) return 0;
    if (t->sizes[k] == 1) return 0;
    if (t->sizes[k] != out->sizes[d] || t->strides[k] < 0) return -1;
    return t->strides[k];
}

/* 1 when `out` is non-overlapping (any dim order; gaps allowed) and every input broadcasts to
 * it. */
int kf_ew_collapse(const kf_job_tensor *out, const kf_job_tensor *in, int n_in, ew_dims *dd)
{
    if (out->ndim < 0 || out->ndim > KF_MAX_DIMS || kf_job_tensor_numel(out) <= 0) return 0;
    if (n_in < 0 || n_in > KF_EW_MAX_IN) return 0;
    for (int k = 0; k < n_in; k++) {
        if (in[k].ndim < 0 || in[k].ndim > out->ndim) return 0;
        /* dims of size 1 in the output must be size 1 in the inputs too */
        for (int d = 0; d < out->ndim; d++)
            if (ew_bstride(&in[k], out, d) < 0) return 0;
    }
    int n = 0, dims[KF_MAX_DIMS];
    for (int d = 0; d < out->ndim; d++)
        if (out->sizes[d] != 1) dims[n++] = d;
    /* innermost first: by output stride (insertion sort; equal strides fail the check below) */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && out->strides[dims[j]] < out->strides[dims[j - 1]]; j--) {
            int tmp = dims[j];
            dims[j] = dims[j - 1];
            dims[j - 1] = tmp;
        }
    /* non-overlapping: each dim's stride steps past the farthest offset of the dims inside it
     * (sufficient: interleaved strides that never meet are refused too) */
    int64_t reach = 0;
    for (int i = 0; i < n; i++) {
        int64_t s = out->strides[dims[i]], m = out->sizes[dims[i]] - 1;
        if (s <= reach || s > (INT64_MAX - reach) / m) return 0;
        reach += m * s;
    }
    memset(dd, 0, sizeof *dd);
    if (n == 0) { /* one element: any stride addresses it */
        dd->nd = 1;
        dd->size[0] = 1;
        dd->yst[0] = 1;
        for (int k = 0; k < n_in; k++) dd->st[k][0] = 1;
        return 1;
    }
    for (int i = 0; i < n; i++) {
        int d = dims[i], c = dd->nd - 1;
        int64_t s[KF_EW_MAX_IN] = {0};
        for (int k = 0; k < n_in; k++) s[k] = ew_bstride(&in[k], out, d);
        int merge = dd->nd > 0 && out->strides[d] == dd->yst[c] * dd->size[c];
        for (int k = 0; k < n_in && merge; k++) merge = s[k] == dd->st[k][c] * dd->size[c];
        if (merge) {
            dd->size[c] *= out->sizes[d];
        } else {
            dd->size[dd->nd] = out->sizes[d];
            dd->yst[dd->nd] = out->strides[d];
            for (int k = 0; k < n_in; k++) dd->st[k][dd->nd] = s[k];
            dd->nd++;
        }
    }
    int64_t pk = 1;
    for (int d = 0; d < dd->nd; pk *= dd->size[d++]) dd->gaps |= dd->yst[d] != pk;
    return 1;
}

int kf_ew_float_dtype(int dtype) { return kf_template_cuda_type(dtype) != NULL; }

/* The output must not be a written-in-place argument unless the op is the in-place variant, and
 * then it must be exactly in[0]. */
int kf_ew_alias_ok(const kf_job_sig *sig, int inplace)
{
    if (!inplace) return sig->out_alias[0] == 0;
    if (sig->out_alias[0] != 1) return 0;
    const kf_job_tensor *x = &sig->in[0], *y = &sig->out[0];
    if (!kf_job_tensor_same_shape(x, y) || x->dtype != y->dtype) return 0;
    for (int d = 0; d < x->ndim; d++)
        if (x->sizes[d] != 1 && x->strides[d] != y->strides[d]) return 0;
    return 1;
}

/* Bytes a vector access may be: the recorded alignment; fresh outputs come from the allocator
 * (256-byte aligned); unknown input alignment allows no vectors. */
static int ew_align(const kf_job_tensor *t, int fresh)
{
    return t->align ? t->align : fresh ? 16 : 1;
}

/* Exact float bits of a scalar, for `__uint_as_float(0x...u)`. */
static unsigned kf_ew_fbits(float f)
{
    unsigned u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* ---- the shared render: flat or indexed loop around kf_op ---- */

/* Vectors of vw elements along collapsed dim 0 stay contiguous under strides st: stride 1 there,
 * and every other dim moves by whole vectors. */
static int ew_vec_strides(const ew_dims *dd, const int64_t *st, int vw)
{
    int ok = st[0] == 1;
    for (int d = 1; d < dd->nd && ok; d++) ok = st[d] % vw == 0;
    return ok;
}

/* `ops` are the operands read (sig->in, or copy_'s src); `y` is written: sig->out[0], which is
 * sig->in[0] when in place. */
void kf_ew_make_plan(const kf_job_sig *sig, const kf_job_tensor *ops, int nin, int inplace,
                         int copy, const int *v, ew_plan *p)
{
    memset(p, 0, sizeof *p);
    p->nin = nin;
    p->inplace = inplace;
    p->copy = copy;
    p->dtype = sig->out[0].dtype;
    p->esize = kf_ew_esize(p->dtype);
    p->dtype_a = ops[0].dtype;
    p->esize_a = kf_ew_esize(p->dtype_a);
    p->dtype_b = nin == 2 ? ops[1].dtype : p->dtype_a;
    p->esize_b = kf_ew_esize(p->dtype_b);
    const int esz[2] = {p->esize_a, p->esize_b};
    p->n = kf_job_tensor_numel(&sig->out[0]);
    kf_ew_collapse(&sig->out[0], ops, nin, &p->dd);
    const ew_dims *dd = &p->dd;
    p->flat = dd->nd == 1 && !dd->gaps;
    for (int k = 0; k < nin; k++) p->flat = p->flat && dd->st[k][0] == 1;

    int out_align = ew_align(inplace ? &sig->in[0] : &sig->out[0], !inplace);
    p->vw = v[K_VEC];
    for (; p->vw > 1; p->vw /= 2) {
        int bytes = p->vw * p->esize, bytes_a = p->vw * p->esize_a, bytes_b = p->vw * p->esize_b;
        if (bytes > 16 || bytes_a > 16 || bytes_b > 16 || p->vw > p->n || out_align < bytes)
            continue;
        if (!p->flat && (dd->size[0] % p->vw || !ew_vec_strides(dd, dd->yst, p->vw))) continue;
        int ok = 1;
        for (int k = 0; k < nin && p->flat; k++) ok = ok && ew_align(&ops[k], 0) >= p->vw * esz[k];
        if (ok) break;
    }
    for (int k = 0; k < nin; k++) {
        if (p->flat) continue; /* mode 0: flat vectors, alignment checked above */
        int vec_ok =
            ew_vec_strides(dd, dd->st[k], p->vw) && ew_align(&ops[k], 0) >= p->vw * esz[k];
        /* a one-element vector loads at its exact offset, whatever the stride */
        p->mode[k] = p->vw == 1 || vec_ok ? 0 : dd->st[k][0] == 0 ? 1 : 2;
    }
    p->nvec = p->n / p->vw;
    p->tail = p->n % p->vw; /* nonzero only when flat */
    p->un = v[K_UNROLL];
    p->nt = v[K_THREADS];
    p->gs = v[K_GRID];
    int64_t tile = (int64_t)p->nt * p->un, tiles = (p->nvec + tile - 1) / tile;
    if (tiles < 1) tiles = 1;
    p->grid = kf_template_grid(tiles, p->nt, &p->gs);
    /* largest element offset any operand or the output (past n only with gaps) reaches */
    int64_t reach = p->n;
    for (int k = 0; k < nin + (dd->gaps ? 1 : 0); k++) {
        const int64_t *st = k < nin ? dd->st[k] : dd->yst;
        int64_t r = 0;
        for (int d = 0; d < dd->nd; d++) r += (dd->size[d] - 1) * st[d];
        if (r + p->vw > reach) reach = r + p->vw;
    }
    p->wide = reach >= INT32_MAX;
}

/* KF_PARAMS: the kernel's arguments (the launch record's order, kf_ew_finish) */
static void ew_emit_params(kf_strbuf *b, const ew_plan *p)
{
    if (p->copy) /* copy_(self, src): src may be self itself */
        kf_strbuf_printf(b, "#define KF_PARAMS kf_t *y, const kf_ta *a\n");
    else if (p->nin == 1)
        kf_strbuf_printf(b, "#define KF_PARAMS %s\n",
                         p->inplace ? "kf_t *y"
                                    : "const kf_t *__restrict__ a, kf_t *__restrict__ y");
    else if (p->dtype_a != p->dtype || p->dtype_b != p->dtype) /* mixed: out of place only */
        kf_strbuf_printf(b,
                         "#define KF_PARAMS const kf_ta *__restrict__ a, const %s *__restrict__ b, "
                         "kf_t *__restrict__ y\n",
                         kf_template_cuda_type(p->dtype_b));
    else
        kf_strbuf_printf(b, "#define KF_PARAMS %s\n",
                         p->inplace ? "kf_t *y, const kf_t *b"
                                    : "const kf_t *__restrict__ a, const kf_t *__restrict__ b, "
                                      "kf_t *__restrict__ y");
}

/* kf_off_<name>(i): the element offset under strides st (an operand's, or the output's) of
 * output element i (memory order) */
static void ew_emit_offset(kf_strbuf *b, const ew_dims *dd, const int64_t *st, const char *name)
{
    kf_strbuf_printf(b, "__device__ __forceinline__ kf_idx kf_off_%s(kf_idx i)\n{\n", name);
    int same = 1; /* a dense output's own layout: the offset is i */
    int64_t pk = 1;
    for (int d = 0; d < dd->nd; d++) {
        same = same && st[d] == pk;
        pk *= dd->size[d];
    }
    if (same) {
        kf_strbuf_printf(b, "    return i;\n}\n");
        return;
    }
    kf_strbuf_printf(b, "    return 0");
    pk = 1;
    for (int d = 0; d < dd->nd; d++) {
        if (st[d] != 0) {
            kf_strbuf_printf(b, " + ");
            if (pk > 1) kf_strbuf_printf(b, "i / %lld", (long long)pk);
            else kf_strbuf_printf(b, "i");
            if (d + 1 < dd->nd) kf_strbuf_printf(b, " %% %lld", (long long)dd->size[d]);
            kf_strbuf_printf(b, " * %lld", (long long)st[d]);
        }
        pk *= dd->size[d];
    }
    kf_strbuf_printf(b, ";\n}\n");
}

/* The source after the prologue: the plan's constants, kf_op (given), offsets, the loop: the
 * loop up to its store (kernels/cuda_eltwise_loop.cuh), the store (the output may have gaps)
 * and the rest (kernels/cuda_eltwise_loop_tail.cuh). */
void kf_ew_emit(kf_strbuf *b, const ew_plan *p, const char *op_src)
{
    const char *t = kf_template_cuda_type(p->dtype), *ta = kf_template_cuda_type(p->dtype_a);
    kf_strbuf_printf(b, "#define KF_TYPE_A %s\n#define KF_COPY %d\n", ta, p->copy);
    kf_strbuf_printf(b,
                     "#define KF_TYPE %s\n#define KF_NIN %d\n#define KF_INPLACE %d\n"
                     "#define KF_VW %d\n#define KF_UN %d\n#define KF_NT %d\n#define KF_GS %d\n"
                     "#define KF_N %lldLL\n#define KF_NVEC %lldLL\n#define KF_TAIL %lld\n",
                     t, p->nin, p->inplace, p->vw, p->un, p->nt, p->gs != 0, (long long)p->n,
                     (long long)p->nvec, (long long)p->tail);
    for (int k = 0; k < p->nin; k++)
        kf_strbuf_printf(b, "#define KF_%cMODE %d\n#define KF_%cIS0 %lldLL\n", "AB"[k], p->mode[k],
                         "AB"[k], (long long)(p->flat ? 1 : p->dd.st[k][0]));
    if (p->nin == 1) kf_strbuf_printf(b, "#define KF_BMODE 0\n#define KF_BIS0 0LL\n");
    ew_emit_params(b, p);
    if (!p->flat) {
        kf_strbuf_printf(b, "/* collapsed dims, innermost first:");
        for (int d = 0; d < p->dd.nd; d++) {
            kf_strbuf_printf(b, " [%lld: ", (long long)p->dd.size[d]);
            if (p->dd.gaps) kf_strbuf_printf(b, "y %lld, ", (long long)p->dd.yst[d]);
            kf_strbuf_printf(b, "a %lld", (long long)p->dd.st[0][d]);
            if (p->nin == 2) kf_strbuf_printf(b, ", b %lld", (long long)p->dd.st[1][d]);
            kf_strbuf_printf(b, "]");
        }
        kf_strbuf_printf(b, " */\n");
    }
    kf_strbuf_printf(b, "typedef %s kf_idx;\n\n%s\n", p->wide ? "unsigned long long" : "unsigned",
                     op_src);
    ew_emit_offset(b, &p->dd, p->dd.st[0], "a");
    if (p->nin == 2) ew_emit_offset(b, &p->dd, p->dd.st[1], "b");
    if (p->dd.gaps) ew_emit_offset(b, &p->dd, p->dd.yst, "y");
    /* a dense output is stored at its memory-order index; one with gaps through its strides */
    kf_strbuf_printf(b, "\n%s                kf_v::stw(y + %s, r);\n%s",
                     kf_body_cuda_eltwise_loop_cuh,
                     p->dd.gaps ? "kf_off_y((kf_idx)(q * KF_VW))" : "q * KF_VW",
                     kf_body_cuda_eltwise_loop_tail_cuh);
}

/* ---- tiles: an operand that transposes the output ---- */

int kf_ew_tile_dim(const ew_dims *dd, int nin)
{
    if (dd->yst[0] != 1) return -1;
    for (int k = 0; k < nin; k++) {
        if (dd->st[k][0] <= 1) continue; /* read along dim 0, or broadcast: one value a vector */
        for (int d = 1; d < dd->nd; d++)
            if (dd->st[k][d] == 1) return d;
    }
    return -1;
}

void kf_ew_plan_tiles(ew_plan *p, int T)
{
    int k = kf_ew_tile_dim(&p->dd, p->nin);
    if (T <= 0 || k < 0) return;
    int64_t t0 = (p->dd.size[0] + T - 1) / T, tk = (p->dd.size[k] + T - 1) / T;
    int64_t tiles = t0 * tk * (p->n / (p->dd.size[0] * p->dd.size[k]));
    if (tiles > INT32_MAX) return; /* one block per tile must fit grid.x: the loop instead */
    p->tile = T;
    p->tk = k;
    p->ntile[0] = t0;
    p->ntile[1] = tk;
    p->grid = (unsigned)tiles;
}

void kf_ew_tile_start(const kf_job_sig *sig, const kf_job_tensor *ops, int nin, int *idx)
{
    ew_dims dd;
    idx[K_TILE] = 0;
    if (kf_ew_collapse(&sig->out[0], ops, nin, &dd) && kf_ew_tile_dim(&dd, nin) > 0)
        idx[K_TILE] = kf_ew_esize(sig->out[0].dtype) == 2 ? 2 : 1;
}

/* One block per tile: operands contiguous along dim k (KF_xSH >= 0) are staged through shared
 * memory, read along k; the output and the other operands go along dim 0, the output's
 * contiguous dim. Every warp access is a run of consecutive elements. The kernel is
 * kernels/cuda_eltwise_tile.cuh, after the constants and kf_bases emitted here. */
void kf_ew_emit_tiles(kf_strbuf *b, const ew_plan *p, const char *op_src)
{
    const ew_dims *dd = &p->dd;
    const int k = p->tk, T = p->tile;
    const int64_t *ys = dd->yst; /* contiguous along dim 0 (kf_ew_tile_dim), any gaps beyond */
    int sh[2] = {-1, -1}, nsh = 0; /* staged: contiguous along k, strided along dim 0 */
    for (int q = 0; q < p->nin; q++)
        if (dd->st[q][k] == 1 && dd->st[q][0] > 1) sh[q] = nsh++;
    kf_strbuf_printf(b, "/* tiles of %d x %d over collapsed dims 0 and %d; staged:%s%s */\n", T, T,
                     k, sh[0] >= 0 ? " a" : "", sh[1] >= 0 ? " b" : "");
    kf_strbuf_printf(b,
                     "#define KF_VW 1 /* element accesses, coalesced by the tiles */\n"
                     "#define KF_TYPE %s\n#define KF_TYPE_A %s\n#define KF_COPY %d\n"
                     "#define KF_NIN %d\n#define KF_INPLACE %d\n#define KF_NT %d\n#define KF_T %d\n"
                     "#define KF_D0 %lldLL\n#define KF_DK %lldLL\n#define KF_PK ((kf_idx)%lldLL)\n"
                     "#define KF_T0 %lldLL\n#define KF_TK %lldLL\n#define KF_NSH %d\n",
                     kf_template_cuda_type(p->dtype), kf_template_cuda_type(p->dtype_a), p->copy,
                     p->nin, p->inplace, p->nt, T, (long long)dd->size[0], (long long)dd->size[k],
                     (long long)ys[k], (long long)p->ntile[0], (long long)p->ntile[1], nsh);
    for (int q = 0; q < 2; q++) {
        kf_strbuf_printf(b, "#define KF_%cSH %d\n", "AB"[q], sh[q]);
        if (q < p->nin)
            kf_strbuf_printf(b,
                             "#define KF_%c0 ((kf_idx)%lldLL)\n#define KF_%cK ((kf_idx)%lldLL)\n",
                             "AB"[q], (long long)dd->st[q][0], "AB"[q], (long long)dd->st[q][k]);
    }
    ew_emit_params(b, p);
    kf_strbuf_printf(b, "typedef %s kf_idx;\n\n%s\n", p->wide ? "unsigned long long" : "unsigned",
                     op_src);
    kf_strbuf_printf(b, "/* batch dims (size: output stride, a stride%s):",
                     p->nin == 2 ? ", b stride" : "");
    for (int d = 1; d < dd->nd; d++) {
        if (d == k) continue;
        kf_strbuf_printf(b, " [%lld: %lld, %lld", (long long)dd->size[d], (long long)ys[d],
                         (long long)dd->st[0][d]);
        if (p->nin == 2) kf_strbuf_printf(b, ", %lld", (long long)dd->st[1][d]);
        kf_strbuf_printf(b, "]");
    }
    kf_strbuf_printf(b, " */\n__device__ __forceinline__ void kf_bases(long long q, kf_idx &yo, "
                        "kf_idx &ao%s)\n{\n", p->nin == 2 ? ", kf_idx &bo" : "");
    for (int d = 1; d < dd->nd; d++) {
        if (d == k) continue;
        kf_strbuf_printf(b,
                         "    { const kf_idx c = (kf_idx)(q %% %lldLL); q /= %lldLL; "
                         "yo += c * %lldu; ao += c * %lldu;",
                         (long long)dd->size[d], (long long)dd->size[d], (long long)ys[d],
                         (long long)dd->st[0][d]);
        if (p->nin == 2) kf_strbuf_printf(b, " bo += c * %lldu;", (long long)dd->st[1][d]);
        kf_strbuf_printf(b, " }\n");
    }
    kf_strbuf_printf(b, "    (void)q;\n}\n\n%s", kf_body_cuda_eltwise_tile_cuh);
}

kf_status kf_ew_finish(const kf_template *t, kf_strbuf *b, const ew_plan *p, char **source,
                           char **launch_json, char *err, size_t errcap)
{
    const char *ty = kf_template_cuda_type(p->dtype);
    char cty[40], mty[40], aty[40], bty[40];
    snprintf(cty, sizeof cty, "const %s*", ty);
    snprintf(mty, sizeof mty, "%s*", ty);
    snprintf(aty, sizeof aty, "const %s*", kf_template_cuda_type(p->dtype_a));
    snprintf(bty, sizeof bty, "const %s*", kf_template_cuda_type(p->dtype_b));
    const char *args[3];
    int n = 0;
    args[n++] = p->inplace ? mty : p->copy ? cty : aty;
    if (p->copy) args[n++] = aty;
    if (p->nin == 2) args[n++] = bty;
    if (!p->inplace) args[n++] = mty;
    const unsigned grid[3] = {p->grid, 1, 1}, block[3] = {(unsigned)p->nt, 1, 1};
    return kf_template_cuda_finish(t, b, args, n, grid, block, 0, source, launch_json, err,
                                   errcap);
}

/* ---- unary ---- */

enum { UN_GELU_ERF, UN_GELU_TANH, UN_SILU, UN_RELU, UN_CLAMP_MIN, UN_POW };

/* The op of this signature (UN_*) and whether it is in place, or -1. */
static int unary_kind(const kf_job_sig *sig, int *inplace)
{
    static const struct {
        const char *op;
        int kind, inplace;
    } ops[] = {
        {"aten::gelu", UN_GELU_ERF, 0},       {"aten::silu", UN_SILU, 0},
        {"aten::relu", UN_RELU, 0},           {"aten::relu_", UN_RELU, 1},
        {"aten::clamp_min", UN_CLAMP_MIN, 0}, {"aten::clamp_min_", UN_CLAMP_MIN, 1},
        {"aten::pow.Tensor_Scalar", UN_POW, 0},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (strcmp(sig->op, ops[i].op)) continue;
        *inplace = ops[i].inplace;
        if (ops[i].kind != UN_GELU_ERF) return ops[i].kind;
        const kf_job_scalar *a = kf_job_scalar_find(sig, "approximate");
        if (!a || a->kind != 's') return -1;
        if (!strcmp(a->s, "none")) return UN_GELU_ERF;
        if (!strcmp(a->s, "tanh")) return UN_GELU_TANH;
        return -1;
    }
    return -1;
}

/* clamp_min's bound as eager takes it: Scalar -> float -> the tensor's dtype (it refuses a bound
 * the dtype cannot hold); *f is the float value. 0 when unusable (NaN, out of range, missing). */
static int clamp_bound(const kf_job_sig *sig, int dtype, float *f)
{
    const kf_job_scalar *m = kf_job_scalar_find(sig, "min");
    if (!m || (m->kind != 'd' && m->kind != 'i')) return 0;
    double d = m->kind == 'i' ? (double)m->i : m->d;
    if (isnan(d)) return 0;
    double lim = dtype == KF_F32 ? 3.4028234663852886e38 : dtype == KF_F16 ? 65504.0
                                                                           : 3.3895313892515355e38;
    if (!isinf(d) && fabs(d) > lim) return 0;
    *f = (float)d;
    return 1;
}

/* pow's exponent as eager takes it (a double, applied in float math); 0 when unusable */
static int pow_exponent(const kf_job_sig *sig, double *e)
{
    const kf_job_scalar *x = kf_job_scalar_find(sig, "exponent");
    if (!x || (x->kind != 'd' && x->kind != 'i')) return 0;
    *e = x->kind == 'i' ? (double)x->i : x->d;
    return isfinite(*e) && fabs(*e) < 1e30;
}

static int unary_applies(const kf_job_sig *sig)
{
    int inplace = 0;
    if (!sig || sig->n_in != 1 || sig->n_out != 1) return 0;
    int kind = unary_kind(sig, &inplace);
    if (kind < 0 || !kf_ew_alias_ok(sig, inplace)) return 0;
    const kf_job_tensor *x = &sig->in[0], *y = &sig->out[0];
    if (!kf_ew_float_dtype(x->dtype) || y->dtype != x->dtype || !kf_job_tensor_same_shape(x, y))
        return 0;
    float lo;
    double e;
    if (kind == UN_CLAMP_MIN && !clamp_bound(sig, x->dtype, &lo)) return 0;
    if (kind == UN_POW && !pow_exponent(sig, &e)) return 0;
    if (kf_job_tensor_numel(x) > ((int64_t)1 << 46)) return 0;
    ew_dims dd;
    return kf_ew_collapse(y, x, 1, &dd);
}

static kf_status unary_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                              char **launch_json, char *err, size_t errcap);

/* Where the search starts: 16-byte vectors, two in flight, 256 threads, a tile per block. */
void kf_ew_start(const kf_job_sig *sig, int *idx)
{
    (void)sig;
    idx[K_VEC] = 3;
    idx[K_UNROLL] = 1;
    idx[K_THREADS] = 1;
}

const kf_template kf_tmpl_cuda_eltwise_unary = {
    .name = "cuda_eltwise_unary",
    .backend = "nvrtc",
    .n_knobs = K_COUNT,
    .knobs = eltwise_knobs,
    .applies = unary_applies,
    .render = unary_render,
    .start = kf_ew_start,
};

static kf_status unary_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                              char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_cuda_eltwise_unary;
    int vals[K_COUNT], inplace = 0;
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    int kind = unary_kind(sig, &inplace);
    ew_plan p;
    kf_ew_make_plan(sig, sig->in, 1, inplace, 0, vals, &p);

    kf_strbuf b = {0};
    kf_template_cuda_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b, "/* inputs: self; outputs: %s */\n", inplace ? "self (in place)" : "out");
    /* 2^x and 1/x on the MUFU unit, flushing subnormal results to 0 (far below any tolerance):
     * the IEEE expf and division cost ~20 instructions an element, enough to make gelu and silu
     * compute-bound at HBM speed (kernels/cuda_mufu.cuh) */
    char op[1024];
    switch (kind) {
    case UN_GELU_ERF: /* x * 0.5 * (1 + erf(x * M_SQRT1_2)) */
        snprintf(op, sizeof op,
                 "__device__ __forceinline__ float kf_op(float v)\n{\n"
                 "    return 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f));\n}\n");
        break;
    case UN_GELU_TANH:
        /* eager: 0.5 x (1 + tanh(u)), u = kBeta (x + kKappa x^3), kBeta = sqrt(2 / pi); the same
         * as x / (1 + exp(-2u)), here on MUFU (ex2, rcp): ~1e-6 relative, and better than
         * eager's 1 + tanh where that cancels (abs. difference ~1e-7 there) */
        snprintf(op, sizeof op, "%s"
                 "__device__ __forceinline__ float kf_op(float v)\n{\n"
                 "    const float u = 0.79788456080286535588f * (v + 0.044715f * (v * v * v));\n"
                 "    return v * kf_rcp(1.0f + kf_ex2(u * -2.8853900817779268f));\n}\n",
                 kf_body_cuda_mufu_cuh);
        break;
    case UN_SILU: /* eager: x / (1 + exp(-x)); exp and 1/y on MUFU: ~1e-6 relative */
        snprintf(op, sizeof op, "%s"
                 "__device__ __forceinline__ float kf_op(float v)\n{\n"
                 "    return v * kf_rcp(1.0f + kf_ex2(v * -1.4426950408889634f));\n}\n",
                 kf_body_cuda_mufu_cuh);
        break;
    case UN_POW: { /* eager's special cases (sqrt, rsqrt, x*x, ...), else powf, in float */
        double e = 0;
        pow_exponent(sig, &e);
        const char *expr = e == 0.0    ? "1.0f"
                           : e == 1.0  ? "v"
                           : e == 2.0  ? "v * v"
                           : e == 3.0  ? "v2 * v"
                           : e == 0.5  ? "sqrtf(v)"
                           : e == -0.5 ? "rsqrtf(v)"
                           : e == -1.0 ? "1.0f / v"
                           : e == -2.0 ? "1.0f / v2"
                                       : NULL;
        /* x^3, x^-2: eager rounds x * x to a half / bfloat16 first (it multiplies in that type) */
        char v2[96] = "v * v";
        if (p.dtype == KF_F16 || p.dtype == KF_BF16)
            snprintf(v2, sizeof v2, "kf_to_f(kf_from_f<%s>(v * v))", kf_template_cuda_type(p.dtype));
        if (expr)
            snprintf(op, sizeof op,
                     "/* exponent = %.17g */\n"
                     "__device__ __forceinline__ float kf_op(float v)\n{\n"
                     "    const float v2 = %s;\n    (void)v2;\n    return %s;\n}\n",
                     e, v2, expr);
        else
            snprintf(op, sizeof op,
                     "/* exponent = %.17g */\n"
                     "__device__ __forceinline__ float kf_op(float v)\n{\n"
                     "    return powf(v, __uint_as_float(0x%08xu));\n}\n",
                     e, kf_ew_fbits((float)e));
        break;
    }
    default: { /* relu = clamp_min(0); the bound is rounded to the dtype first, as eager does */
        float lo = 0.0f;
        if (kind == UN_CLAMP_MIN) clamp_bound(sig, p.dtype, &lo);
        snprintf(op, sizeof op,
                 "/* min = %.9g */\n"
                 "__device__ __forceinline__ float kf_op(float v)\n{\n"
                 "    const float lo = kf_to_f(kf_from_f<%s>(__uint_as_float(0x%08xu)));\n"
                 "    return v != v ? v : fmaxf(v, lo);\n}\n",
                 (double)lo, kf_template_cuda_type(p.dtype), kf_ew_fbits(lo));
        break;
    }
    }
    kf_ew_emit(&b, &p, op);
    return kf_ew_finish(t, &b, &p, source, launch_json, err, errcap);
}

/* ---- binary ---- */

/* 'a' add, 'm' mul, 0 none; *inplace set */
static int binary_kind(const kf_job_sig *sig, int *inplace)
{
    *inplace = 0;
    if (!strcmp(sig->op, "aten::add.Tensor")) return 'a';
    if (!strcmp(sig->op, "aten::mul.Tensor")) return 'm';
    *inplace = 1;
    if (!strcmp(sig->op, "aten::add_.Tensor")) return 'a';
    if (!strcmp(sig->op, "aten::mul_.Tensor")) return 'm';
    return 0;
}

/* alpha as eager takes it (a float); 0 when unusable */
static int add_alpha(const kf_job_sig *sig, float *f)
{
    const kf_job_scalar *al = kf_job_scalar_find(sig, "alpha");
    *f = 1.0f;
    if (!al) return 1;
    if (al->kind == 'i') *f = (float)al->i;
    else if (al->kind == 'd' && isfinite((float)al->d)) *f = (float)al->d;
    else return 0;
    return 1;
}

/* `other` may be a wrapped Python number (kf_job_scalar_float: then one input) */
static int binary_applies(const kf_job_sig *sig)
{
    int inplace = 0;
    float alpha, other;
    if (!sig || sig->n_out != 1) return 0;
    const int nin = kf_job_scalar_float(sig, "other", &other) ? 1 : 2;
    if (sig->n_in != nin || kf_job_scalar_find(sig, "self")) return 0;
    int kind = binary_kind(sig, &inplace);
    if (!kind || !kf_ew_alias_ok(sig, inplace)) return 0;
    if (kind == 'a' && !add_alpha(sig, &alpha)) return 0;
    int dt = sig->out[0].dtype, da = sig->in[0].dtype, db = nin == 2 ? sig->in[1].dtype : dt;
    /* a number never changes a float tensor's dtype: self is the output's (no cast here) */
    if (nin == 1 && da != dt) return 0;
    if (!kf_ew_float_dtype(dt) || !kf_ew_float_dtype(da) || !kf_ew_float_dtype(db)) return 0;
    /* one dtype; or mixed f32/f16/bf16 into f32, out of place (eager: both widened to f32) */
    if ((da != dt || db != dt) && (inplace || dt != KF_F32)) return 0;
    if (kf_job_tensor_numel(&sig->out[0]) > ((int64_t)1 << 46)) return 0;
    ew_dims dd;
    return kf_ew_collapse(&sig->out[0], sig->in, nin, &dd);
}

static kf_status binary_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                               char **launch_json, char *err, size_t errcap);

static void binary_start(const kf_job_sig *sig, int *idx)
{
    float other;
    kf_ew_start(sig, idx);
    kf_ew_tile_start(sig, sig->in, kf_job_scalar_float(sig, "other", &other) ? 1 : 2, idx);
}

const kf_template kf_tmpl_cuda_eltwise_binary = {
    .name = "cuda_eltwise_binary",
    .backend = "nvrtc",
    .n_knobs = K_TILE_COUNT,
    .knobs = binary_knobs,
    .applies = binary_applies,
    .render = binary_render,
    .start = binary_start,
};

static kf_status binary_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                               char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_cuda_eltwise_binary;
    int vals[K_TILE_COUNT], inplace = 0;
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    int kind = binary_kind(sig, &inplace);
    float other = 0.0f;
    const int scalar = kf_job_scalar_float(sig, "other", &other);
    ew_plan p;
    kf_ew_make_plan(sig, sig->in, scalar ? 1 : 2, inplace, 0, vals, &p);
    kf_ew_plan_tiles(&p, vals[K_TILE]);

    kf_strbuf b = {0};
    kf_template_cuda_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b, "/* inputs: self%s; outputs: %s */\n", scalar ? "" : ", other",
                     inplace ? "self (in place)" : "out");
    char op[512];
    if (scalar) {
        /* kf_op(v) of self alone: the number as eager's CUDA functor gets it, a float, and
         * alpha as a float */
        float alpha = 1.0f;
        if (kind == 'a') add_alpha(sig, &alpha);
        char expr[64];
        if (kind == 'm')
            snprintf(expr, sizeof expr, "v * s");
        else if (alpha == 1.0f)
            snprintf(expr, sizeof expr, "v + s");
        else
            snprintf(expr, sizeof expr, "v + __uint_as_float(0x%08xu) * s", kf_ew_fbits(alpha));
        snprintf(op, sizeof op,
                 "/* other = %.9g (a Python number), alpha = %.9g */\n"
                 "__device__ __forceinline__ float kf_op(float v)\n{\n"
                 "    const float s = __uint_as_float(0x%08xu);\n"
                 "    return %s;\n}\n",
                 (double)other, (double)alpha, kf_ew_fbits(other), expr);
    } else if (kind == 'm') {
        snprintf(op, sizeof op,
                 "__device__ __forceinline__ float kf_op(float a, float b)\n{\n"
                 "    return a * b;\n}\n");
    } else {
        float alpha;
        add_alpha(sig, &alpha);
        if (alpha == 1.0f)
            snprintf(op, sizeof op,
                     "__device__ __forceinline__ float kf_op(float a, float b)\n{\n"
                     "    return a + b;\n}\n");
        else
            snprintf(op, sizeof op,
                     "/* alpha = %.9g */\n"
                     "__device__ __forceinline__ float kf_op(float a, float b)\n{\n"
                     "    return a + __uint_as_float(0x%08xu) * b;\n}\n",
                     (double)alpha, kf_ew_fbits(alpha));
    }
    if (p.tile) {
        kf_ew_emit_tiles(&b, &p, op);
    } else {
        /* no operand transposes the output (or the tiles overflow the grid): the loop */
        if (vals[K_TILE])
            kf_strbuf_printf(&b, "/* transpose_tile = %d: no operand transposes the output */\n",
                             vals[K_TILE]);
        kf_ew_emit(&b, &p, op);
    }
    return kf_ew_finish(t, &b, &p, source, launch_json, err, errcap);
}
