/* CUDA template for aten::copy_ (backend "nvrtc"): self[...] = src, between f32/f16/bf16 (a
 * cast: src widened to float exactly, rounded once to self's dtype as eager does) and/or
 * layouts. self is dense (any dim order); src broadcasts to it with any strides.
 *
 * Two ways to walk it:
 *   the elementwise loop (templates_cuda_eltwise.c): self in memory order, src read through its
 *     strides (vectors where its innermost dim is contiguous, else element by element);
 *   transpose_tile T > 0, when src is a transposition of self (its contiguous dim is not
 *     self's): T x T tiles through shared memory, read along src's contiguous dim and written
 *     along self's, so both sides are coalesced (the elementwise loop would read src elements
 *     a stride apart).
 *
 * Knobs: vec, unroll, threads, grid as the elementwise templates (vec/unroll/grid unused by
 * tiles), transpose_tile (0: the elementwise loop; 32 or 64: tiles of that side, when src
 * transposes). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "templates_cuda_eltwise.h"

enum { K_TILE = K_COUNT, K_COPY_COUNT };

static const kf_knob_def copy_knobs[K_COPY_COUNT] = {
    KF_EW_KNOB_DEFS,
    {"transpose_tile", 3, {0, 32, 64}},
};

static int copy_applies(const kf_job_sig *sig)
{
    if (!sig || strcmp(sig->op, "aten::copy_") || sig->n_in != 2 || sig->n_out != 1) return 0;
    if (!kf_ew_alias_ok(sig, 1)) return 0;
    const kf_job_tensor *y = &sig->out[0], *src = &sig->in[1];
    if (!kf_ew_float_dtype(y->dtype) || !kf_ew_float_dtype(src->dtype)) return 0;
    if (kf_job_tensor_numel(y) > ((int64_t)1 << 46)) return 0;
    ew_dims dd;
    return kf_ew_collapse(y, src, 1, &dd);
}

/* The collapsed dim (> 0) along which src is contiguous while self's innermost dim is not: a
 * transposition; -1 otherwise. */
static int transposed_dim(const ew_dims *dd)
{
    if (dd->st[0][0] == 1) return -1;
    for (int d = 1; d < dd->nd; d++)
        if (dd->st[0][d] == 1) return d;
    return -1;
}

static void copy_start(const kf_job_sig *sig, int *idx)
{
    kf_ew_start(sig, idx);
    ew_dims dd;
    idx[K_TILE] = 0;
    if (kf_ew_collapse(&sig->out[0], &sig->in[1], 1, &dd) && transposed_dim(&dd) > 0)
        idx[K_TILE] = kf_ew_esize(sig->out[0].dtype) == 2 ? 2 : 1;
}

static kf_status copy_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                             char **launch_json, char *err, size_t errcap);

const kf_template kf_tmpl_cuda_eltwise_copy = {
    .name = "cuda_eltwise_copy",
    .backend = "nvrtc",
    .n_knobs = K_COPY_COUNT,
    .knobs = copy_knobs,
    .applies = copy_applies,
    .render = copy_render,
    .start = copy_start,
};

static const char tile_body[] =
    "typedef KF_TYPE kf_t;\n"
    "typedef KF_TYPE_A kf_ta;\n"
    "#define KF_ROWS (KF_NT / KF_T) /* tile rows a pass covers */\n"
    "\n"
    "extern \"C\" __global__ void __launch_bounds__(KF_NT) kf_kernel(kf_t *y, const kf_ta *a)\n"
    "{\n"
    "    __shared__ float sh[KF_T][KF_T + 1]; /* +1: columns fall in distinct banks */\n"
    "    long long t = blockIdx.x;\n"
    "    const long long i0 = (t % KF_T0) * KF_T; /* along self's contiguous dim */\n"
    "    t /= KF_T0;\n"
    "    const long long k0 = (t % KF_TK) * KF_T; /* along src's contiguous dim */\n"
    "    t /= KF_TK;\n"
    "    kf_idx yo = 0, so = 0;\n"
    "    kf_bases(t, yo, so);\n"
    "    const int tx = threadIdx.x % KF_T, ty = threadIdx.x / KF_T;\n"
    "    for (int r = ty; r < KF_T; r += KF_ROWS)\n"
    "        if (k0 + tx < KF_DK && i0 + r < KF_D0)\n"
    "            sh[r][tx] = kf_to_f(a[so + (kf_idx)(k0 + tx) + (kf_idx)(i0 + r) * KF_S0]);\n"
    "    __syncthreads();\n"
    "    for (int r = ty; r < KF_T; r += KF_ROWS)\n"
    "        if (i0 + tx < KF_D0 && k0 + r < KF_DK)\n"
    "            y[yo + (kf_idx)(i0 + tx) + (kf_idx)(k0 + r) * KF_PK] = "
    "kf_from_f<kf_t>(sh[tx][r]);\n"
    "}\n";

/* Tiles along dims 0 and k (t[0], t[1]); the grid is one block per tile of every batch index. */
static int64_t tile_grid(const ew_plan *p, int k, int T, int64_t t[2])
{
    t[0] = (p->dd.size[0] + T - 1) / T;
    t[1] = (p->dd.size[k] + T - 1) / T;
    return t[0] * t[1] * (p->n / (p->dd.size[0] * p->dd.size[k]));
}

/* The tiled transposition: dims 0 (self's contiguous) and k (src's) are tiled, every other
 * collapsed dim is a batch index b, decoded by kf_bases into both base offsets. */
static void emit_tiles(kf_strbuf *b, const ew_plan *p, int k, int T, const int64_t t[2])
{
    const ew_dims *dd = &p->dd;
    int64_t pk = 1, ys[KF_MAX_DIMS]; /* self's stride of each collapsed dim: it is dense */
    for (int d = 0; d < dd->nd; d++) {
        ys[d] = pk;
        pk *= dd->size[d];
    }
    kf_strbuf_printf(b,
                     "#define KF_VW 1 /* element accesses, coalesced by the tiles */\n"
                     "#define KF_TYPE %s\n#define KF_TYPE_A %s\n#define KF_NT %d\n#define KF_T %d\n"
                     "#define KF_D0 %lldLL\n#define KF_DK %lldLL\n#define KF_S0 %lldLL\n"
                     "#define KF_PK %lldLL\n#define KF_T0 %lldLL\n#define KF_TK %lldLL\n",
                     kf_template_cuda_type(p->dtype), kf_template_cuda_type(p->dtype_a), p->nt, T,
                     (long long)dd->size[0], (long long)dd->size[k], (long long)dd->st[0][0],
                     (long long)ys[k], (long long)t[0], (long long)t[1]);
    kf_strbuf_printf(b, "typedef %s kf_idx;\n\n", p->wide ? "unsigned long long" : "unsigned");
    kf_strbuf_printf(b, "/* batch dims (size: self stride, src stride):");
    for (int d = 1; d < dd->nd; d++)
        if (d != k)
            kf_strbuf_printf(b, " [%lld: %lld, %lld]", (long long)dd->size[d], (long long)ys[d],
                             (long long)dd->st[0][d]);
    kf_strbuf_printf(b, " */\n__device__ __forceinline__ void kf_bases(long long b, kf_idx &yo, "
                        "kf_idx &so)\n{\n");
    for (int d = 1; d < dd->nd; d++) {
        if (d == k) continue;
        kf_strbuf_printf(b,
                         "    { const long long c = b %% %lldLL; b /= %lldLL; yo += (kf_idx)c * "
                         "%lldLL; so += (kf_idx)c * %lldLL; }\n",
                         (long long)dd->size[d], (long long)dd->size[d], (long long)ys[d],
                         (long long)dd->st[0][d]);
    }
    kf_strbuf_printf(b, "    (void)b;\n}\n\n%s", tile_body);
}

static kf_status copy_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                             char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_cuda_eltwise_copy;
    int vals[K_COPY_COUNT];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    ew_plan p;
    kf_ew_make_plan(sig, &sig->in[1], 1, 1, 1, vals, &p);
    int k = transposed_dim(&p.dd), T = k > 0 ? vals[K_TILE] : 0;
    int64_t nt[2] = {0, 0};
    if (T > 0) { /* whole tiles must fit the grid */
        int64_t tiles = tile_grid(&p, k, T, nt);
        if (tiles > INT32_MAX) T = 0;
        else p.grid = (unsigned)tiles;
    }

    kf_strbuf b = {0};
    kf_template_cuda_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b, "/* inputs: self, src; outputs: self (in place) */\n");
    if (T > 0) {
        kf_strbuf_printf(&b, "/* tiles of %d x %d: src is contiguous along collapsed dim %d */\n",
                         T, T, k);
        emit_tiles(&b, &p, k, T, nt);
    } else {
        if (vals[K_TILE])
            kf_strbuf_printf(&b, "/* transpose_tile = %d: src does not transpose self here */\n",
                             vals[K_TILE]);
        /* the value rounded once to self's dtype (src -> float is exact) */
        kf_ew_emit(&b, &p, "__device__ __forceinline__ float kf_op(float v) { return v; }\n");
    }
    return kf_ew_finish(t, &b, &p, source, launch_json, err, errcap);
}
