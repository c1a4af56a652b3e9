/* CUDA template for aten::cat (backend "nvrtc"): cuda_cat.
 *
 * A memory-bound copy of raw element bits (any dtype cat.h allows: the output has the
 * inputs' dtype, nothing is converted). The signature is analyzed into parts (the inputs with
 * elements, in list order, each with its offset along the cat dim) and the output's dims in
 * memory order, collapsed where everything stays contiguous (cat.c). Writes go in the
 * output's memory order, so they are coalesced whatever the inputs' layouts; an input is read
 * through its own strides (transposed views, slices, expanded dims), with vector loads where
 * its innermost collapsed dim is contiguous and its alignment and strides allow, else element
 * by element (a gather, packed into the same vector store). The kernel takes every input of the
 * list (the skipped legacy-empty and zero-length ones too, unused) and then the output.
 *
 * Two ways to find an output element's input (knob by_part):
 *   0  a grid-stride loop over the whole output: each vector's coordinate along the cat dim
 *      picks its part (compile-time offsets, an if-chain);
 *   1  blocks per part: block b belongs to one part (compile-time block ranges) and walks that
 *      part's slice of the output; no per-element choice, whole tiles per part.
 *
 * Knobs (every combination renders a valid kernel; values that do not fit are clamped):
 *   vec      elements per vector (1..16, at most 16 bytes; halved until the innermost collapsed
 *            dim, or every part's length when that dim is the cat dim, is a multiple of it);
 *   unroll   vectors per thread (loads in flight before the stores);
 *   threads  threads per block;
 *   by_part  as above (0 when the per-part blocks would not fit grid.x). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/cat.h"

enum { K_VEC, K_UNROLL, K_THREADS, K_BYPART, K_CAT_COUNT };

static const kf_knob_def cat_knobs[K_CAT_COUNT] = {
    {"vec", 5, {1, 2, 4, 8, 16}},
    {"unroll", 4, {1, 2, 4, 8}},
    {"threads", 4, {128, 256, 512, 1024}},
    {"by_part", 2, {0, 1}},
};

/* The plan and the effective knob values. */
typedef struct cat_cfg {
    kf_cat_plan p;
    int vw, un, nt, by_part;
    int gather[KF_JOB_MAX_TENSORS]; /* per part: 1 element loads, 0 vector loads */
    int64_t nvec;                   /* output vectors */
    int64_t blocks[KF_JOB_MAX_TENSORS + 1]; /* by_part: part k has blocks [blocks[k], [k+1]) */
    unsigned grid;
    int wide; /* 64-bit element offsets */
} cat_cfg;

static int cat_applies(const kf_job_sig *sig)
{
    kf_cat_plan p;
    return kf_cat_analyze(sig, &p);
}

/* Part k's vectors: its share of the output over the vector width. */
static int64_t part_vectors(const cat_cfg *c, int k)
{
    const kf_cat_plan *p = &c->p;
    int64_t n = p->cat < 0 ? p->n : p->n / p->size[p->cat] * p->part[k].len;
    return n / c->vw;
}

static void make_cfg(const kf_job_sig *sig, const int *v, cat_cfg *c)
{
    memset(c, 0, sizeof *c);
    kf_cat_analyze(sig, &c->p);
    const kf_cat_plan *p = &c->p;
    /* a vector must stay inside one part and one run of the innermost dim */
    for (c->vw = v[K_VEC]; c->vw > 1; c->vw /= 2) {
        int ok = c->vw * p->esize <= 16 && c->vw <= p->n;
        if (p->cat == 0)
            for (int k = 0; k < p->n_parts; k++) ok = ok && p->part[k].len % c->vw == 0;
        else
            ok = ok && p->size[0] % c->vw == 0;
        if (ok) break;
    }
    for (int k = 0; k < p->n_parts; k++) {
        const kf_cat_part *pt = &p->part[k];
        int vec = c->vw == 1 || (pt->st[0] == 1 && pt->align >= c->vw * p->esize);
        for (int d = 1; d < p->nd && vec; d++) vec = pt->st[d] % c->vw == 0;
        c->gather[k] = !vec;
    }
    c->nvec = p->n / c->vw;
    c->un = v[K_UNROLL];
    c->nt = v[K_THREADS];
    c->by_part = v[K_BYPART];
    int64_t tile = (int64_t)c->nt * c->un;
    if (c->by_part) {
        for (int k = 0; k < p->n_parts; k++)
            c->blocks[k + 1] = c->blocks[k] + (part_vectors(c, k) + tile - 1) / tile;
        if (c->blocks[p->n_parts] > INT32_MAX) c->by_part = 0; /* grid.x: the loop instead */
        else c->grid = (unsigned)c->blocks[p->n_parts];
    }
    if (!c->by_part) {
        int64_t tiles = (c->nvec + tile - 1) / tile;
        c->grid = (unsigned)(tiles > INT32_MAX ? INT32_MAX : tiles); /* then it loops */
    }
    int64_t reach = p->n;
    for (int k = 0; k < p->n_parts; k++)
        if (p->part[k].reach > reach) reach = p->part[k].reach;
    c->wide = reach >= INT32_MAX;
}

/* ---- rendering ---- */

/* Raw element and vector moves (kernels/cuda_cat_move.cuh): kf_ld<GATHER, IS0>(p, o) the KF_VW
 * elements at element offset o (GATHER: each IS0 apart), kf_st(p, v) one store; vectors through
 * the prologue's kf_vec words, a gather packed into them with shifts (registers only). */

/* element k of a gathered vector into its 32-bit words, by element size */
static const char *const put_e[9] = {
    [1] = "    w[k >> 2] |= (unsigned)e << (8 * (k & 3));\n",
    [2] = "    w[k >> 1] |= (unsigned)e << (16 * (k & 1));\n",
    [4] = "    w[k] = e;\n",
    [8] = "    w[2 * k] = (unsigned)e;\n    w[2 * k + 1] = (unsigned)(e >> 32);\n",
};

static const char *const raw_elem[9] = {
    [1] = "unsigned char", [2] = "unsigned short", [4] = "unsigned", [8] = "unsigned long long",
};

/* `const kf_idx c<d> = ...;` for the coordinates of linear index `var` over dims of sizes sz[]
 * (those with need[d], when need is given: an unused one would draw a warning) */
static void emit_coords(kf_strbuf *b, const cat_cfg *c, const int64_t *sz, const int *need,
                        const char *var, const char *indent)
{
    const char *u = c->wide ? "ull" : "u";
    int64_t pk = 1;
    for (int d = 0; d < c->p.nd; pk *= sz[d], d++) {
        if (need && !need[d]) continue;
        kf_strbuf_printf(b, "%sconst kf_idx c%d = %s", indent, d, var);
        if (pk > 1) kf_strbuf_printf(b, " / %lld%s", (long long)pk, u);
        if (d + 1 < c->p.nd) kf_strbuf_printf(b, " %% %lld%s", (long long)sz[d], u);
        kf_strbuf_printf(b, ";\n");
    }
}

/* sum over dims of c<d> * st[d] (+ base), zero strides left out; the cat coordinate less
 * `cat_off` when cat_off > 0 */
static void emit_offset(kf_strbuf *b, const cat_cfg *c, const int64_t *st, int64_t cat_off,
                        int64_t base)
{
    const char *u = c->wide ? "ull" : "u";
    int terms = 0;
    for (int d = 0; d < c->p.nd; d++) {
        if (st[d] == 0) continue;
        kf_strbuf_printf(b, "%s", terms++ ? " + " : "");
        if (d == c->p.cat && cat_off > 0)
            kf_strbuf_printf(b, "(c%d - %lld%s)", d, (long long)cat_off, u);
        else
            kf_strbuf_printf(b, "c%d", d);
        if (st[d] != 1) kf_strbuf_printf(b, " * %lld%s", (long long)st[d], u);
    }
    if (base) kf_strbuf_printf(b, "%s%lld%s", terms++ ? " + " : "", (long long)base, u);
    if (!terms) kf_strbuf_printf(b, "0%s", u);
}

static void emit_params(kf_strbuf *b, const kf_job_sig *sig)
{
    for (int i = 0; i < sig->n_in; i++) kf_strbuf_printf(b, "const kf_e *__restrict__ x%d, ", i);
    kf_strbuf_printf(b, "kf_e *__restrict__ y");
}

/* by_part 0: the part of each output vector from its cat coordinate */
static void emit_by_element(kf_strbuf *b, const kf_job_sig *sig, const cat_cfg *c)
{
    const kf_cat_plan *p = &c->p;
    const char *u = c->wide ? "ull" : "u";
    kf_strbuf_printf(b, "/* output element i (memory order): its vector, from the part that "
                        "holds it */\n__device__ __forceinline__ kf_r kf_fetch(kf_idx i");
    for (int k = 0; k < p->n_parts; k++)
        kf_strbuf_printf(b, ", const kf_e *__restrict__ x%d", p->part[k].in);
    kf_strbuf_printf(b, ")\n{\n");
    int need[KF_MAX_DIMS] = {0}; /* the output's offset is i: coordinates only for the inputs */
    for (int d = 0; d < p->nd; d++) {
        need[d] = d == p->cat;
        for (int k = 0; k < p->n_parts; k++) need[d] |= p->part[k].st[d] != 0;
    }
    emit_coords(b, c, p->size, need, "i", "    ");
    for (int k = 0; k < p->n_parts; k++) {
        const kf_cat_part *pt = &p->part[k];
        if (k + 1 < p->n_parts)
            kf_strbuf_printf(b, "    if (c%d < %lld%s) ", p->cat, (long long)(pt->off + pt->len),
                             u);
        else
            kf_strbuf_printf(b, "    ");
        kf_strbuf_printf(b, "return kf_ld<%d, %lldLL>(x%d, ", c->gather[k], (long long)pt->st[0],
                         pt->in);
        emit_offset(b, c, pt->st, pt->off, 0);
        kf_strbuf_printf(b, ");\n");
    }
    kf_strbuf_printf(b,
                     "}\n\n"
                     "extern \"C\" __global__ void __launch_bounds__(KF_NT) kf_kernel(");
    emit_params(b, sig);
    kf_strbuf_printf(b, ")\n{\n"
                        "    const int tid = threadIdx.x;\n"
                        "    for (long long q0 = (long long)blockIdx.x * KF_TILE; q0 < KF_NVEC;\n"
                        "         q0 += (long long)gridDim.x * KF_TILE) {\n"
                        "        kf_r v[KF_UN];\n"
                        "#pragma unroll\n"
                        "        for (int u = 0; u < KF_UN; u++) {\n"
                        "            const long long q = q0 + u * KF_NT + tid;\n"
                        "            if (q < KF_NVEC) v[u] = kf_fetch((kf_idx)(q * KF_VW)");
    for (int k = 0; k < p->n_parts; k++) kf_strbuf_printf(b, ", x%d", p->part[k].in);
    kf_strbuf_printf(b, ");\n"
                        "        }\n"
                        "#pragma unroll\n"
                        "        for (int u = 0; u < KF_UN; u++) {\n"
                        "            const long long q = q0 + u * KF_NT + tid;\n"
                        "            if (q < KF_NVEC) kf_st(y + q * KF_VW, v[u]);\n"
                        "        }\n"
                        "    }\n"
                        "}\n");
}

/* by_part 1: one device function per part over its slice, the kernel picks it by block */
static void emit_by_part(kf_strbuf *b, const kf_job_sig *sig, const cat_cfg *c)
{
    const kf_cat_plan *p = &c->p;
    for (int k = 0; k < p->n_parts; k++) {
        const kf_cat_part *pt = &p->part[k];
        int64_t sz[KF_MAX_DIMS];
        for (int d = 0; d < p->nd; d++) sz[d] = kf_cat_part_size(p, k, d);
        long long nv = (long long)part_vectors(c, k);
        kf_strbuf_printf(b,
                         "/* part %d: input %d at %lld along the cat dim, %lld long: %lld vectors, "
                         "blocks [%lld, %lld) */\n"
                         "__device__ __forceinline__ void kf_part%d(long long t, "
                         "const kf_e *__restrict__ x, kf_e *__restrict__ y)\n{\n"
                         "    const long long q0 = t * KF_TILE + threadIdx.x;\n"
                         "    kf_r v[KF_UN];\n"
                         "    kf_idx yo[KF_UN];\n"
                         "#pragma unroll\n"
                         "    for (int u = 0; u < KF_UN; u++) {\n"
                         "        const long long q = q0 + u * KF_NT;\n"
                         "        if (q < %lldLL) {\n"
                         "            const kf_idx j = (kf_idx)(q * KF_VW);\n",
                         k, pt->in, (long long)pt->off, (long long)pt->len, nv,
                         (long long)c->blocks[k], (long long)c->blocks[k + 1], k, nv);
        emit_coords(b, c, sz, NULL, "j", "            ");
        kf_strbuf_printf(b, "            yo[u] = ");
        emit_offset(b, c, p->ost, 0, p->cat >= 0 ? pt->off * p->ost[p->cat] : 0);
        kf_strbuf_printf(b, ";\n            v[u] = kf_ld<%d, %lldLL>(x, ", c->gather[k],
                         (long long)pt->st[0]);
        emit_offset(b, c, pt->st, 0, 0);
        kf_strbuf_printf(b, ");\n"
                            "        }\n"
                            "    }\n"
                            "#pragma unroll\n"
                            "    for (int u = 0; u < KF_UN; u++)\n"
                            "        if (q0 + u * KF_NT < %lldLL) kf_st(y + yo[u], v[u]);\n"
                            "}\n\n",
                         nv);
    }
    kf_strbuf_printf(b, "extern \"C\" __global__ void __launch_bounds__(KF_NT) kf_kernel(");
    emit_params(b, sig);
    kf_strbuf_printf(b, ")\n{\n    const long long b = blockIdx.x;\n");
    for (int k = 0; k < p->n_parts; k++) {
        if (k + 1 < p->n_parts)
            kf_strbuf_printf(b, "    %sif (b < %lldLL) ", k ? "else " : "",
                             (long long)c->blocks[k + 1]);
        else
            kf_strbuf_printf(b, "    %s", k ? "else " : "");
        kf_strbuf_printf(b, "kf_part%d(b - %lldLL, x%d, y);\n", k, (long long)c->blocks[k],
                         p->part[k].in);
    }
    kf_strbuf_printf(b, "}\n");
}

static kf_status cat_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                            char **launch_json, char *err, size_t errcap);

/* Where the search starts: 16-byte vectors, two in flight, 256 threads, blocks per part. */
static void cat_start(const kf_job_sig *sig, int *idx)
{
    (void)sig;
    idx[K_VEC] = 4;
    idx[K_UNROLL] = 1;
    idx[K_THREADS] = 1;
    idx[K_BYPART] = 1;
}

const kf_template kf_tmpl_cuda_cat = {
    .name = "cuda_cat",
    .backend = "nvrtc",
    .n_knobs = K_CAT_COUNT,
    .knobs = cat_knobs,
    .applies = cat_applies,
    .render = cat_render,
    .start = cat_start,
};

static kf_status cat_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                            char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_cuda_cat;
    int vals[K_CAT_COUNT];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    cat_cfg c;
    make_cfg(sig, vals, &c);
    const kf_cat_plan *p = &c.p;

    kf_strbuf b = {0};
    kf_template_cuda_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b, "/* inputs: tensors.0..%d (list order; unused: legacy empty or zero "
                         "length); outputs: out */\n/* collapsed dims, innermost first [size: out "
                         "stride; part strides]:",
                     sig->n_in - 1);
    for (int d = 0; d < p->nd; d++) {
        kf_strbuf_printf(&b, " [%lld%s: %lld;", (long long)p->size[d], d == p->cat ? " cat" : "",
                         (long long)p->ost[d]);
        for (int k = 0; k < p->n_parts; k++)
            kf_strbuf_printf(&b, " %lld", (long long)p->part[k].st[d]);
        kf_strbuf_printf(&b, "]");
    }
    kf_strbuf_printf(&b, " */\n");
    kf_strbuf_printf(&b,
                     "#define KF_ES %d\n#define KF_VW %d\n#define KF_UN %d\n#define KF_NT %d\n"
                     "#define KF_SPLIT %d /* by_part, as rendered */\n#define KF_N %lldLL\n"
                     "#define KF_NVEC %lldLL\n"
                     "#define KF_TILE ((long long)KF_NT * KF_UN)\n"
                     "typedef %s kf_e;\ntypedef %s kf_idx;\n\n",
                     p->esize, c.vw, c.un, c.nt, c.by_part, (long long)p->n, (long long)c.nvec,
                     raw_elem[p->esize], c.wide ? "unsigned long long" : "unsigned");
    kf_strbuf_printf(&b,
                     "#if KF_VW > 1\n__device__ __forceinline__ void kf_put_e(unsigned *w, int "
                     "k, kf_e e)\n{\n%s}\n#endif\n",
                     put_e[p->esize]);
    kf_strbuf_printf(&b, "%s", kf_body_cuda_cat_move_cuh);
    if (c.by_part) emit_by_part(&b, sig, &c);
    else emit_by_element(&b, sig, &c);

    char cty[48], mty[48];
    const char *ty = kf_cat_launch_type(p->dtype, 0);
    snprintf(cty, sizeof cty, "const %s*", ty);
    snprintf(mty, sizeof mty, "%s*", ty);
    const char *args[KF_JOB_MAX_TENSORS + 1];
    for (int i = 0; i < sig->n_in; i++) args[i] = cty;
    args[sig->n_in] = mty;
    const unsigned grid[3] = {c.grid, 1, 1}, block[3] = {(unsigned)c.nt, 1, 1};
    return kf_template_cuda_finish(t, &b, args, sig->n_in + 1, grid, block, 0, source,
                                   launch_json, err, errcap);
}
