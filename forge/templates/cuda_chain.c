/* cuda_chain (backend "nvrtc"): a chain job's one CUDA kernel (chain.h), from the same member
 * element functions as host_chain. Without a reduction: a grid-stride loop over the chain's
 * elements, each thread computing every member of its element, or (knob rows, the start, for
 * rows of at least 32 elements) a block per row like the reductions, so that the row's base
 * offsets (a div/mod per outer dim and input) are computed once per row, not per element. With
 * a reduction: a block per row
 * (grid-stride over rows), its threads striding the row in phase 0, the block-wide combine
 * (kernels/cuda_chain_reduce.cuh), every thread computing the row members (thread 0 stores
 * them), then phase 2 over the same columns as phase 0 (so a thread reads back only what it
 * stored); a layer-norm or softmax member (the row tail) the same way, its block sums (and the
 * softmax's block max) after phase 0. Knobs: threads
 * per block; grid = 0: a block per row / enough blocks for every element, k > 0: at most k times
 * the blocks a 132-SM H100/H200 holds; vec = 1 (where kf_chain_vec_width allows it): each thread
 * takes KF_VW consecutive elements of a row through 16-byte (or narrower) packs, in both layouts
 * and both per-element phases; warp = 1 (rows of at most KF_WARP_MAX_C elements, where a block
 * per row would leave most of its threads idle: a Swin window's softmax has 49): a warp per row,
 * KF_NT / 32 rows per block, combined with shuffles alone (a row of fewer than 32 packs: a group
 * of lanes, warp_lanes). A row tail without packs keeps its
 * input in registers when a thread takes at most KF_CACHE_MAX_CPL columns (eager's persistent
 * softmax does the same), so that its passes do not read the stored member back; with packs, a
 * layer norm's input the same up to KF_CACHE_MAX_PACKED columns, its y stored in packs. A group norm
 * ending the chain: a block per group (a run of rows), or (rows = 0: few groups, e.g. a VAE's 32
 * at batch 1) a cluster of 4 or 8 blocks (warp 0 / 1) summing through distributed shared memory
 * (sm_90), the threads striding the group's elements in phase 0 and the norm's passes alike.
 * A layer norm whose members before it read or store across the row with a stride (Whisper's
 * residual stream, transposed from its convolutions: rows adjacent in memory, a row's elements
 * T apart) takes the tile walk instead (rows = 1; rows = 0 the row walk): a block per tile of
 * KF_TR consecutive rows (warp = 1: 16, 0: 32; fewer where the shared memory does not hold
 * them), lanes over the tile's rows and groups of them over the columns, so that a strided
 * tensor is read and written in runs of adjacent rows; the norm's input kept in shared memory
 * as stored, its row sums combined there, then y written along the rows (coalesced: eager's
 * contiguous y), in 16-byte packs where the norm's weight and bias allow. The walk waits on
 * memory (one wave of blocks, their phases in step): its loops are unrolled by 4 so that more
 * loads are in flight (vec = 1: by 8, and a row-contiguous input staged there first, read along
 * its rows). The start is vec = 0 with 16 rows: on an H100, 50-63 us on MLP-Mixer's and
 * Whisper's chains, where the same without unrolling or packs took 66-75 us and staging 81-85. */
#include <stdio.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/chain.h"
#include "forge/templates/template.h"

static const kf_knob_def knobs[] = {
    {"threads", 4, {256, 128, 512, 64}},
    {"grid", 3, {0, 1, 4}},
    {"rows", 2, {1, 0}},
    {"vec", 2, {1, 0}},
    {"warp", 2, {1, 0}},
};
#define NKNOBS ((int)(sizeof knobs / sizeof knobs[0]))
#define KF_WARP_MAX_C 1024 /* longer rows: a lane would take over 32 elements */
#define KF_CACHE_MAX_CPL 16 /* registers per thread for the row tail's input */
#define KF_CACHE_MAX_PACKED 32 /* the same, a layer norm's input read in packs */
#define KF_TILE_SMEM (96 * 1024) /* the tile walk's dynamic shared memory: 2 blocks of 256 fit */

/* The tile walk's pad per row of the norm's input, so that a warp's rows fall in different
 * banks: elements of its dtype */
static int tile_pad(const kf_chain_bind *cb)
{
    return kf_dtype_size(kf_chain_member_dtype(cb, cb->ch->m[cb->ln].ref[0].a)) == 2 ? 2 : 1;
}

/* The tile walk's dynamic shared memory for tr rows: the norm's input as stored, padded (its
 * sums are static) */
static int64_t tile_smem(const kf_chain_bind *cb, int tr)
{
    const int es = kf_dtype_size(kf_chain_member_dtype(cb, cb->ch->m[cb->ln].ref[0].a));
    return ((int64_t)tr * (cb->C + tile_pad(cb)) * es + 15) / 16 * 16;
}

/* The loop over the tile's elements along its rows (kf_i, c, r declared), "{" left open, after
 * its pragma (unroll); its bound kf_n is the tile's last element, so that it unrolls */
static const char tile_elems[] =
    "        for (int e = threadIdx.x; e < kf_n; e += KF_NT) {\n"
    "            const int kf_i = e / (int)KF_C;\n"
    "            const long long c = e - kf_i * KF_C, r = r0 + kf_i;\n";

/* The tile walk's staged input: one read along the row (contiguous in it, varying across rows)
 * by phase-0 members alone, in the norm's input's dtype, so that its block loads it into kf_xs
 * along the rows (coalesced) where its lanes, over the rows, would each touch another line; phase
 * 0 then overwrites each element with the norm's input. -1: none. */
static int staged_input(const kf_chain_bind *cb, const kf_job_sig *sig)
{
    const int nd = cb->nd, dt = kf_chain_member_dtype(cb, cb->ch->m[cb->ln].ref[0].a);
    for (int i = 0; i < sig->n_in; i++) {
        if (cb->st[i][nd - 1] != 1 || !cb->st[i][nd - 2] || sig->in[i].dtype != dt) continue;
        int ok = 1;
        for (int k = 0; ok && k < cb->n; k++)
            for (int a = 0; ok && a < cb->ch->m[k].sig.n_in; a++)
                ok = cb->phase[k] == 0 || kf_job_chain_arg(cb->ch, k, a) != i;
        if (ok) return i;
    }
    return -1;
}

/* A layer norm after members that read or store across the row with a stride (the tile walk) */
static int tile_walk_applies(const kf_chain_bind *cb, const kf_job_sig *sig)
{
    if (cb->ln < 0 || cb->gn || cb->red >= 0 || cb->cat >= 0 || cb->tail_arg >= 0 || cb->nd < 2 ||
        tile_smem(cb, 8) > KF_TILE_SMEM || sig->out[cb->ch->out0[cb->ln] + 1].dtype != KF_F32 ||
        sig->out[cb->ch->out0[cb->ln] + 2].dtype != KF_F32) /* mean and rstd: CUDA's f32 */
        return 0;
    int strided = 0;
    for (int k = 0; k < cb->n; k++) {
        if (cb->col[k]) return 0;
        strided |= cb->ostrided[k] && cb->ost[k][cb->nd - 1] != 1;
    }
    for (int i = 0; i < sig->n_in; i++) strided |= cb->st[i][cb->nd - 1] > 1;
    return strided;
}

static int applies(const kf_job_sig *sig)
{
    kf_chain_bind b;
    if (!kf_chain_bind_sig(sig, &b, NULL, 0)) return 0;
    for (int i = 0; i < sig->n_in; i++) /* no 64-bit device math for these in the engine */
        if (!kf_pw_ctype(sig->in[i].dtype, 1)) return 0;
    return 1;
}

/* A group norm's few groups (a VAE's 32 at batch 1, PoolFormer's one per image) leave most of
 * the GPU idle with a block each: start from a cluster per group (rows 0), of 8 blocks (warp 1)
 * under half a block per multiprocessor, else of 4. */
static void start(const kf_job_sig *sig, int *idx)
{
    kf_chain_bind b;
    if (!kf_chain_bind_sig(sig, &b, NULL, 0)) return;
    if (tile_walk_applies(&b, sig)) { /* 16 rows unstaged: the tile walk measured fastest */
        idx[3] = 1;
        return;
    }
    if (!b.gn || b.gn_ng >= 2 * KF_TEMPLATE_SMS) return;
    idx[2] = 1;
    idx[4] = b.gn_ng < KF_TEMPLATE_SMS / 2 ? 0 : 1;
}

static kf_status render(const kf_job_sig *sig, const int *knob_idx, char **source,
                        char **launch_json, char *err, size_t errcap);

const kf_template kf_tmpl_cuda_chain = {
    .name = "cuda_chain",
    .backend = "nvrtc",
    .n_knobs = NKNOBS,
    .knobs = knobs,
    .applies = applies,
    .render = render,
    .start = start,
};

/* The tile walk's y in packs (16 bytes of the widest of y, weight and bias; a plain layer norm
 * ending the chain, its weight and bias aligned to them): the pack's width, or 1 */
static int tile_y_packs(const kf_chain_bind *cb, const kf_job_sig *sig)
{
    const kf_job_member *jm = &cb->ch->m[cb->ln];
    int es = kf_dtype_size(kf_chain_member_dtype(cb, cb->ln));
    for (int a = 1; a < jm->sig.n_in && a < 3; a++)
        if (kf_dtype_size(jm->sig.in[a].dtype) > es) es = kf_dtype_size(jm->sig.in[a].dtype);
    const int vw = es <= 8 ? 16 / es : 1;
    return vw > 1 && cb->C % vw == 0 && kf_chain_tail_packs(cb, sig, vw) ? vw : 1;
}

/* The tile walk (the comment at the top): phase 0 with the lanes over the tile's rows, each
 * thread's row sums meeting in shared memory (mean, then the squared deviations from the stored
 * input), then y and the epilogue along the rows. */
static kf_status render_tile(const kf_template *t, const kf_job_sig *sig, const kf_chain_bind *bind,
                             const int *vals, char **source, char **launch_json, char *err,
                             size_t errcap)
{
    kf_chain_bind sb = *bind, *cb = &sb;
    cb->staged = vals[3] ? staged_input(cb, sig) : -1;
    const int xm = cb->ch->m[cb->ln].ref[0].a, k = cb->ln;
    /* the norm's input stored dense (its input alone strided): from kf_xs along the rows */
    const int xlate = !cb->ostrided[xm];
    cb->dead[xm] |= xlate;
    int nt = vals[0], gs = vals[1], tr = vals[4] ? 16 : 32;
    while (tr > 8 && (tile_smem(cb, tr) > KF_TILE_SMEM || tr > nt)) tr /= 2;
    unsigned grid = kf_template_grid((cb->R + tr - 1) / tr, nt, &gs);
    kf_strbuf b = {0};
    kf_template_cuda_prologue(&b, t, sig, vals);
    kf_chain_emit_defs(&b, cb, 1, "__device__ __forceinline__");
    kf_strbuf_printf(&b, "#define KF_NT %d\n#define KF_TR %d /* rows per tile%s */\n"
                         "#define KF_XPAD %d\n#define KF_NG (KF_NT / KF_TR) /* column groups */\n",
                     nt, tr, tr != (vals[4] ? 16 : 32) ? ": what the shared memory and threads allow" : "",
                     tile_pad(cb));
    char unroll[40]; /* loads in flight per thread: the walk waits on memory, not on its math */
    snprintf(unroll, sizeof unroll, "#pragma unroll %d\n", vals[3] ? 8 : 4);
    const int vw = tile_y_packs(cb, sig);
    char types[KF_JOB_MAX_TENSORS + KF_JOB_MAX_OUTPUTS][40];
    const char *args[KF_JOB_MAX_TENSORS + KF_JOB_MAX_OUTPUTS];
    kf_strbuf_printf(&b, "\nextern \"C\" __global__ void __launch_bounds__(KF_NT) kf_kernel(");
    int na = kf_chain_emit_params(&b, cb, sig, 1, types, args);
    kf_strbuf_printf(&b, ")\n{\n");
    const char *xt = kf_pw_ctype(kf_chain_member_dtype(cb, xm), 1);
    kf_strbuf_printf(&b, "    extern __shared__ __align__(16) unsigned char kf_dyn[];\n"
                         "    %s (*const kf_xs)[KF_C + KF_XPAD] = reinterpret_cast<%s (*)[KF_C + KF_XPAD]>(kf_dyn);\n"
                         "    __shared__ kf_ct kf_ps[KF_NT], kf_ms[KF_TR], kf_rs[KF_TR];\n"
                         "    const int kf_tx = threadIdx.x %% KF_TR, kf_ty = threadIdx.x / KF_TR;\n"
                         "    for (long long r0 = (long long)blockIdx.x * KF_TR; r0 < KF_R; "
                         "r0 += (long long)gridDim.x * KF_TR) {\n"
                         "        const int kf_n = (int)(KF_R - r0 < KF_TR ? KF_R - r0 : KF_TR) * (int)KF_C;\n",
                     xt, xt);
    if (cb->staged >= 0) /* its rows in shared memory first, read along them */
        kf_strbuf_printf(&b, "%s%s            kf_xs[kf_i][c] = p%d[kf_rb%d(r) + c];\n        }\n"
                             "        __syncthreads();\n", unroll, tile_elems, cb->staged, cb->staged);
    kf_strbuf_printf(&b, "        kf_ct kf_s = (kf_ct)0;\n"
                         "        if (r0 + kf_tx < KF_R) {\n"
                         "            const long long r = r0 + kf_tx;\n");
    kf_chain_emit_rowbases(&b, cb, "            ");
    kf_strbuf_printf(&b, "%s            for (long long c = kf_ty; c < KF_C; c += KF_NG) {\n", unroll);
    kf_chain_emit_phase(&b, cb, 0, 1, "                ", "");
    kf_strbuf_printf(&b, "                kf_xs[kf_tx][c] = v%d;\n            }\n        }\n", xm);
    /* the row's sums: each thread's columns, then its row's column groups in order */
    static const char sums[] =
        "        kf_ps[threadIdx.x] = %s;\n        __syncthreads();\n"
        "        if (threadIdx.x < KF_TR) {\n            kf_ct t = (kf_ct)0;\n"
        "            for (int g = 0; g < KF_NG; g++) t += kf_ps[g * KF_TR + threadIdx.x];\n";
    kf_strbuf_printf(&b, sums, "kf_s");
    kf_strbuf x = {0};
    kf_chain_emit_tile_x(&x, cb, "kf_xs[kf_tx][c]");
    kf_strbuf_printf(&b, "            kf_ms[threadIdx.x] = t / (kf_ct)KF_C;\n        }\n"
                         "        __syncthreads();\n        kf_ct kf_q = (kf_ct)0;\n"
                         "        if (r0 + kf_tx < KF_R) {\n            const kf_ct kf_mean = kf_ms[kf_tx];\n"
                         "            for (long long c = kf_ty; c < KF_C; c += KF_NG) {\n"
                         "                const kf_ct d = %s - kf_mean;\n"
                         "                kf_q += d * d;\n            }\n        }\n", x.p);
    kf_strbuf_free(&x);
    kf_strbuf_printf(&b, sums, "kf_q");
    kf_strbuf_printf(&b, "            const kf_ct kf_rstd = rsqrtf(t / (kf_ct)KF_C + (kf_ct)KF_LN_EPS);\n"
                         "            kf_rs[threadIdx.x] = kf_rstd;\n"
                         "            if (r0 + threadIdx.x < KF_R) {\n"
                         "                y%d_1[r0 + threadIdx.x] = kf_ms[threadIdx.x];\n"
                         "                y%d_2[r0 + threadIdx.x] = kf_rstd;\n            }\n"
                         "        }\n        __syncthreads();\n",
                     k, k);
    /* y along the rows: consecutive threads, consecutive columns (or packs of them) of a row */
    if (vw > 1) {
        kf_strbuf x = {0}, each = {0};
        kf_chain_emit_tile_x(&x, cb, "kf_xs[kf_i][c0 + e]");
        if (xlate) {
            kf_strbuf_printf(&each, "                {\n                    const long long c = c0 + e;\n");
            kf_chain_emit_store(&each, cb, xm, "kf_xs[kf_i][c]", "                    ");
            kf_strbuf_printf(&each, "                }\n");
        }
        kf_strbuf_printf(&b, "#define KF_VW %d\n#pragma unroll 2\n"
                             "        for (int kf_e = threadIdx.x; kf_e < kf_n / KF_VW; kf_e += KF_NT) {\n"
                             "            const int kf_i = kf_e / (int)(KF_C / KF_VW);\n"
                             "            const long long c0 = (kf_e - kf_i * (KF_C / KF_VW)) * KF_VW, "
                             "r = r0 + kf_i;\n"
                             "            const kf_ct kf_mean = kf_ms[kf_i], kf_rstd = kf_rs[kf_i];\n", vw);
        for (int a = 0; a < 2; a++) { /* the weight's and bias's row bases alone: registers */
            const int i = a ? cb->ln_b : cb->ln_w;
            if (i >= 0) kf_strbuf_printf(&b, "            const long long rb%d = kf_rb%d(r);\n", i, i);
        }
        kf_chain_emit_ln_y_pack(&b, cb, x.p, each.p, "        ");
        kf_strbuf_free(&x);
        kf_strbuf_free(&each);
    } else {
        kf_strbuf_printf(&b, "%s%s            const kf_ct kf_mean = kf_ms[kf_i], kf_rstd = kf_rs[kf_i];\n",
                         unroll, tile_elems);
        kf_chain_emit_rowbases(&b, cb, "            ");
        if (xlate) kf_chain_emit_store(&b, cb, xm, "kf_xs[kf_i][c]", "            ");
        kf_chain_emit_ln_tile_y(&b, cb, "kf_xs[kf_i][c]", "        ");
    }
    kf_strbuf_printf(&b, "        }\n        __syncthreads(); /* the next tile's rows */\n    }\n}\n");
    const unsigned g[3] = {grid, 1, 1}, blk[3] = {(unsigned)nt, 1, 1};
    return kf_template_cuda_finish(t, &b, args, na, g, blk, (unsigned)tile_smem(cb, tr), source,
                                   launch_json, err, errcap);
}

/* warp = 1's threads per row: a warp, or for a row of fewer than 32 packs (PVT's first
 * stages: 32 and 64 channels) the fewest lanes that take one pack each, so that a warp's loads
 * are not mostly idle lanes: a power of two, the rows of a warp combined apart */
static int warp_lanes(int64_t C, int vw)
{
    int lanes = 32;
    while (lanes > 1 && (int64_t)(lanes / 2) * vw >= C) lanes /= 2;
    return lanes;
}

static kf_status render(const kf_job_sig *sig, const int *knob_idx, char **source,
                        char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_cuda_chain;
    int vals[NKNOBS];
    kf_status st = kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    kf_chain_bind cb;
    kf_chain_bind_sig(sig, &cb, NULL, 0);
    int nt = vals[0], gs = vals[1];
    int64_t n = cb.R * cb.C;
    if (vals[2] && tile_walk_applies(&cb, sig))
        return render_tile(t, sig, &cb, vals, source, launch_json, err, errcap);
    int rows = cb.red >= 0 || cb.tail >= 0 || (vals[2] && cb.C >= 32); /* a block per row */
    int warp = rows && !cb.gn && vals[4] && cb.C <= KF_WARP_MAX_C;      /* a warp per row */
    int vw = vals[3] && !cb.gn && cb.tail_arg < 0 ? kf_chain_vec_width(&cb, sig) : 1;
    /* the row tail's input kept in registers (a lane's columns, unrolled), not read back */
    int lanes = warp ? warp_lanes(cb.C, vw) : nt, cpl = (int)((cb.C + lanes - 1) / lanes);
    /* kf_chain_emit_tail's cuda: 1 read back, 2 registers, 3 registers in packs (below) */
    int cache = rows && !cb.gn && cb.tail >= 0 && cb.tail_arg < 0 && cb.red < 0 && vw == 1 &&
                cpl <= KF_CACHE_MAX_CPL ? 2 : 0;
    /* with packs: a layer norm's input in registers, ppl packs per thread, y stored in packs */
    int ppl = vw > 1 ? (int)((cb.C / vw + lanes - 1) / lanes) : 0;
    if (rows && ppl * vw <= KF_CACHE_MAX_PACKED && kf_chain_tail_packs(&cb, sig, vw)) cache = 3;
    /* a group norm's blocks per group: one, or a cluster of 4 or 8 (rows 0, warp 0 / 1) */
    int cl = !cb.gn || vals[2] ? 1 : vals[4] ? 8 : 4;
    unsigned grid = cb.gn ? kf_template_grid(cb.gn_ng * cl, nt, &gs) / (unsigned)cl * (unsigned)cl
                  : warp ? kf_template_grid((cb.R + nt / lanes - 1) / (nt / lanes), nt, &gs)
                  : rows ? kf_template_grid(cb.R, nt, &gs)
                         : kf_template_grid((n / vw + nt - 1) / nt, nt, &gs);

    kf_strbuf b = {0};
    kf_template_cuda_prologue(&b, t, sig, vals);
    kf_chain_emit_defs(&b, &cb, 1, "__device__ __forceinline__");
    kf_strbuf_printf(&b, "#define KF_NT %d\n#define KF_ROW_WARP %d\n", nt, warp);
    if (warp) /* the threads that share a row: a warp, or an aligned group of its lanes */
        kf_strbuf_printf(&b, "#define KF_LANES %d\n#define KF_LANE (threadIdx.x & (KF_LANES - 1))\n"
                             "#define KF_GMASK %s\n", lanes,
                         lanes == 32 ? "0xffffffffu"
                                     : "(((1u << KF_LANES) - 1u) << (threadIdx.x & 31 & ~(KF_LANES - 1)))");
    else
        kf_strbuf_printf(&b, "#define KF_LANES KF_NT\n#define KF_LANE threadIdx.x\n");
    if (cache == 3)
        kf_strbuf_printf(&b, "#define KF_PPL %d /* packs per thread */\n#define KF_CPL (KF_PPL * KF_VW)\n"
                             "#define KF_COL(j) (((long long)KF_LANE + (long long)((j) / KF_VW) * KF_LANES) "
                             "* KF_VW + (j) %% KF_VW)\n", ppl);
    else if (cache)
        kf_strbuf_printf(&b, "#define KF_CPL %d /* columns per thread */\n"
                             "#define KF_COL(j) (KF_LANE + (long long)(j) * KF_LANES)\n", cpl);
    if (cb.gn) { /* a group's elements strided over its cluster's threads */
        kf_strbuf_printf(&b, "#define KF_CL %d /* blocks per group (the rows and warp knobs; vec does "
                             "not apply) */\n#define KF_GES ((long long)KF_CL * KF_NT)\n", cl);
        kf_strbuf_printf(&b, "#define KF_GE0 (%s(long long)threadIdx.x)\n",
                         cl > 1 ? "(long long)kf_cluster_rank() * KF_NT + " : "");
    }
    if (vw > 1)
        kf_strbuf_printf(&b, "#define KF_VW %d /* elements per pack */\n", vw);
    else if (vals[3] && !cb.gn)
        kf_strbuf_printf(&b, "/* vec=1: one element per access (the row length, strides or "
                             "alignment do not allow packs) */\n");
    if (cl > 1) kf_strbuf_printf(&b, "%s", kf_body_cuda_cluster_cuh);
    if (cb.red >= 0 || cb.tail >= 0) kf_strbuf_printf(&b, "%s", kf_body_cuda_chain_reduce_cuh);
    char types[KF_JOB_MAX_TENSORS + KF_JOB_MAX_OUTPUTS][40];
    const char *args[KF_JOB_MAX_TENSORS + KF_JOB_MAX_OUTPUTS];
    kf_strbuf_printf(&b, "\nextern \"C\" __global__ void %s__launch_bounds__(KF_NT) kf_kernel(",
                     cl > 1 ? "__cluster_dims__(KF_CL, 1, 1) " : "");
    int na = kf_chain_emit_params(&b, &cb, sig, 1, types, args);
    kf_strbuf_printf(&b, ")\n{\n");
    kf_chain_emit_prologue(&b, &cb, 1, "    ");
    /* the columns a thread takes of its row, the same in phases 0 and 2 */
    const char *cols = vw > 1 ? "        for (long long c0 = (long long)KF_LANE * KF_VW; c0 < KF_C; "
                                "c0 += KF_LANES * KF_VW) {\n"
                              : "        for (long long c = KF_LANE; c < KF_C; c += KF_LANES) {\n";
    if (!rows && vw > 1) {
        kf_strbuf_printf(&b, "    const long long step = (long long)gridDim.x * KF_NT;\n"
                             "    for (long long i = (long long)blockIdx.x * KF_NT + threadIdx.x; "
                             "i < KF_R * (KF_C / KF_VW); i += step) {\n"
                             "        const long long r = i / (KF_C / KF_VW), "
                             "c0 = (i - r * (KF_C / KF_VW)) * KF_VW;\n");
        kf_chain_emit_rowbases(&b, &cb, "        ");
        kf_chain_emit_phase_vec(&b, &cb, 0, "        ");
        kf_strbuf_printf(&b, "    }\n}\n");
    } else if (!rows) {
        kf_strbuf_printf(&b, "    const long long step = (long long)gridDim.x * KF_NT;\n"
                             "    for (long long i = (long long)blockIdx.x * KF_NT + threadIdx.x; "
                             "i < KF_R * KF_C; i += step) {\n"
                             "        const long long r = i / KF_C, c = i - r * KF_C;\n");
        kf_chain_emit_rowbases(&b, &cb, "        ");
        kf_chain_emit_phase(&b, &cb, 0, 1, "        ", "");
        kf_strbuf_printf(&b, "    }\n}\n");
    } else if (cb.gn) { /* a block per group, its threads over the group's elements */
        kf_strbuf_printf(&b, "    for (long long g = blockIdx.x / KF_CL; g < KF_NG; g += gridDim.x / KF_CL) {\n");
        kf_chain_emit_tail_begin(&b, &cb, 1, "        ");
        kf_strbuf_printf(&b, "        %s\n", kf_chain_group_loop(1));
        kf_chain_emit_rowbases(&b, &cb, "            ");
        kf_chain_emit_phase(&b, &cb, 0, 1, "            ", "");
        kf_strbuf_printf(&b, "        }\n");
        kf_chain_emit_tail(&b, &cb, 1, 0, "        ");
        kf_strbuf_printf(&b, "    }\n}\n");
    } else {
        if (warp)
            kf_strbuf_printf(&b, "    for (long long r = (long long)blockIdx.x * (KF_NT / KF_LANES) + "
                                 "threadIdx.x / KF_LANES; r < KF_R; r += (long long)gridDim.x * "
                                 "(KF_NT / KF_LANES)) {\n");
        else
            kf_strbuf_printf(&b, "    for (long long r = blockIdx.x; r < KF_R; r += gridDim.x) {\n");
        kf_chain_emit_rowbases(&b, &cb, "        ");
        kf_chain_emit_tail_begin(&b, &cb, cache ? cache : 1, "        ");
        if (cb.red >= 0) kf_strbuf_printf(&b, "        kf_ct acc = KF_RINIT;\n");
        char lb[256];
        if (cache == 3) {
            kf_chain_emit_phase_vec_cache(&b, &cb, "        ");
        } else {
            if (cache) kf_strbuf_printf(&b, "        %s\n", kf_chain_cols_loop(lb, sizeof lb, 2, "        "));
            else kf_strbuf_printf(&b, "%s", cols);
            if (vw > 1) kf_chain_emit_phase_vec(&b, &cb, 0, "            ");
            else kf_chain_emit_phase(&b, &cb, 0, 1, "            ", "");
            if (cache) kf_chain_emit_tail_cache(&b, &cb, "            ");
            kf_strbuf_printf(&b, "        }\n");
        }
        kf_chain_emit_tail(&b, &cb, cache ? cache : 1, 0, "        ");
        if (cb.red >= 0) {
            kf_strbuf_printf(&b, "        acc = kf_chain_row_reduce(acc);\n");
            kf_chain_emit_red_value(&b, &cb, 1, "        ", "if (KF_LANE == 0) ");
            kf_chain_emit_phase(&b, &cb, 1, 1, "        ", "if (KF_LANE == 0) ");
            kf_strbuf_printf(&b, "%s", cols);
            if (vw > 1) kf_chain_emit_phase_vec(&b, &cb, 2, "            ");
            else kf_chain_emit_phase(&b, &cb, 2, 1, "            ", "");
            kf_strbuf_printf(&b, "        }\n");
        }
        kf_strbuf_printf(&b, "    }\n}\n");
    }
    const unsigned g[3] = {grid, 1, 1}, blk[3] = {(unsigned)nt, 1, 1};
    return kf_template_cuda_finish(t, &b, args, na, g, blk, 0, source, launch_json, err, errcap);
}
