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

static const char softmax_body[] =
    "#define KF_NEG_INF __int_as_float(0xff800000)\n"
    "#define KF_U 4 /* vectors in flight per thread in the streaming loops */\n"
    "\n"
    "typedef KF_TIN kf_tin;\n"
    "typedef KF_TOUT kf_tout;\n"
    "\n"
    "typedef kf_vec<kf_tin, KF_VW> kf_vin;\n"
    "typedef kf_vin::raw kf_raw; /* one input vector */\n"
    "\n"
    "__device__ __forceinline__ void kf_unpack(const kf_raw r, float (&v)[KF_VW])\n"
    "{\n"
    "    kf_vin::unpack(r, v);\n"
    "}\n"
    "\n"
    "/* Round and store KF_VW results at p, 16 bytes at most per store (fp32 out of a\n"
    " * 16-bit input can be 32 bytes a vector). */\n"
    "__device__ __forceinline__ void kf_store(kf_tout *p, const float (&v)[KF_VW])\n"
    "{\n"
    "    constexpr int B = KF_VW * (int)sizeof(kf_tout), W = B > 16 ? 16 : B;\n"
    "    constexpr int E = W / (int)sizeof(kf_tout);\n"
    "#pragma unroll\n"
    "    for (int c = 0; c < KF_VW / E; c++) {\n"
    "        float e[E];\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < E; i++) e[i] = v[c * E + i];\n"
    "        kf_vec<kf_tout, E>::stw(p + c * E, e);\n"
    "    }\n"
    "}\n"
    "\n"
    "/* 2^x on the MUFU unit (ex2.approx, ~2 ulp; results below 2^-126 flush to 0, far below any\n"
    " * tolerance); exp(d) = 2^(d log2 e) with d = v - max computed exactly first */\n"
    "#define KF_L2E 1.4426950408889634f\n"
    "__device__ __forceinline__ float kf_exp2(float x)\n"
    "{\n"
    "    float y;\n"
    "    asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x));\n"
    "    return y;\n"
    "}\n"
    "__device__ __forceinline__ float kf_exp(float d) { return kf_exp2(d * KF_L2E); }\n"
    "\n"
    "/* A reduction state is (max, sum of exp(v - max)). The combines are commutative bit for bit\n"
    " * (no FMA contraction), so every lane of a butterfly ends with the same value. */\n"
    "struct kf_max_op {\n"
    "    static __device__ __forceinline__ float2 comb(float2 a, float2 b)\n"
    "    {\n"
    "        return make_float2(fmaxf(a.x, b.x), 0.0f);\n"
    "    }\n"
    "};\n"
    "struct kf_sum_op {\n"
    "    static __device__ __forceinline__ float2 comb(float2 a, float2 b)\n"
    "    {\n"
    "        return make_float2(a.x, __fadd_rn(a.y, b.y));\n"
    "    }\n"
    "};\n"
    "struct kf_ms_op {\n"
    "    static __device__ __forceinline__ float2 comb(float2 a, float2 b)\n"
    "    {\n"
    "        const float m = fmaxf(a.x, b.x);\n"
    "        if (m == KF_NEG_INF) return make_float2(m, __fadd_rn(a.y, b.y)); /* 0, or a NaN */\n"
    "        return make_float2(m, __fadd_rn(__fmul_rn(a.y, kf_exp(a.x - m)),\n"
    "                                        __fmul_rn(b.y, kf_exp(b.x - m))));\n"
    "    }\n"
    "};\n"
    "\n"
    "/* Online update with N values: -inf adds nothing; a NaN poisons the sum (fmaxf skips\n"
    " * it, so it must be caught while the max is still -inf); +inf makes the sum NaN, as\n"
    " * eager's row is. */\n"
    "template <int N> __device__ __forceinline__ void kf_online(float2 &st, const float *v)\n"
    "{\n"
    "    float vm = v[0];\n"
    "#pragma unroll\n"
    "    for (int i = 1; i < N; i++) vm = fmaxf(vm, v[i]);\n"
    "    const float m = fmaxf(st.x, vm);\n"
    "    if (m == KF_NEG_INF) {\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < N; i++)\n"
    "            if (v[i] != v[i]) st.y = v[i];\n"
    "        return;\n"
    "    }\n"
    "    if (m > st.x) st.y *= kf_exp(st.x - m);\n"
    "    st.x = m;\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < N; i++) st.y += kf_exp(v[i] - m);\n"
    "}\n"
    "\n"
    "#if KF_MODE == 0\n"
    "#define KF_NS 1 /* one state per thread: all KF_VW values belong to its row */\n"
    "#else\n"
    "#define KF_NS KF_VW /* one state per column: the KF_VW values are KF_VW columns */\n"
    "#endif\n"
    "\n"
    "__device__ __forceinline__ void kf_acc_max(float2 (&st)[KF_NS], const float (&v)[KF_VW])\n"
    "{\n"
    "#pragma unroll\n"
    "    for (int e = 0; e < KF_VW; e++) {\n"
    "        float2 &s = st[KF_MODE ? e : 0];\n"
    "        s.x = fmaxf(s.x, v[e]);\n"
    "    }\n"
    "}\n"
    "__device__ __forceinline__ void kf_acc_sum(float2 (&st)[KF_NS], const float (&v)[KF_VW])\n"
    "{\n"
    "#pragma unroll\n"
    "    for (int e = 0; e < KF_VW; e++) {\n"
    "        float2 &s = st[KF_MODE ? e : 0];\n"
    "        s.y += kf_exp(v[e] - s.x);\n"
    "    }\n"
    "}\n"
    "__device__ __forceinline__ void kf_acc_online(float2 (&st)[KF_NS], const float (&v)[KF_VW])\n"
    "{\n"
    "#if KF_MODE == 0\n"
    "    kf_online<KF_VW>(st[0], v);\n"
    "#else\n"
    "#pragma unroll\n"
    "    for (int e = 0; e < KF_VW; e++) kf_online<1>(st[e], v + e);\n"
    "#endif\n"
    "}\n"
    "\n"
    "#if KF_CL > 1\n"
    "/* ---- a row split over a cluster of KF_CL blocks (sm_90): partials meet in distributed\n"
    " * shared memory ---- */\n"
    "__device__ __forceinline__ unsigned kf_cluster_rank()\n"
    "{\n"
    "    unsigned r;\n"
    "    asm volatile(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(r));\n"
    "    return r;\n"
    "}\n"
    "__device__ __forceinline__ void kf_cluster_sync()\n"
    "{\n"
    "    asm volatile(\"barrier.cluster.arrive.release.aligned;\\n\\t\"\n"
    "                 \"barrier.cluster.wait.acquire.aligned;\" ::: \"memory\");\n"
    "}\n"
    "/* *p in the shared memory of block `rank` of this cluster */\n"
    "__device__ __forceinline__ float2 kf_dsmem_ld(const float2 *p, unsigned rank)\n"
    "{\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(p), ra;\n"
    "    float2 v;\n"
    "    asm volatile(\"mapa.shared::cluster.u32 %0, %1, %2;\"\n"
    "                 : \"=r\"(ra) : \"r\"(a), \"r\"(rank));\n"
    "    asm volatile(\"ld.shared::cluster.v2.f32 {%0, %1}, [%2];\"\n"
    "                 : \"=f\"(v.x), \"=f\"(v.y) : \"r\"(ra) : \"memory\");\n"
    "    return v;\n"
    "}\n"
    "#define KF_CLUSTER_ATTR __cluster_dims__(KF_CL, 1, 1)\n"
    "#else\n"
    "#define KF_CLUSTER_ATTR\n"
    "#endif\n"
    "\n"
    "/* Combine the states of the KF_TPR threads that share a row (rows mode: a contiguous group,\n"
    " * shuffles then shared memory, then the cluster) or a column (columns mode: threads KF_RPB\n"
    " * apart, a tree in shared memory). Every thread of the group gets the result. */\n"
    "template <class Op>\n"
    "__device__ __forceinline__ void kf_reduce(float2 (&st)[KF_NS], float2 *wbuf, float2 *cbuf,\n"
    "                                                 float2 *red)\n"
    "{\n"
    "#if KF_MODE == 0\n"
    "    float2 v = st[0];\n"
    "    constexpr int W = KF_TPR < 32 ? KF_TPR : 32;\n"
    "#pragma unroll\n"
    "    for (int off = W / 2; off > 0; off >>= 1) {\n"
    "        float2 o;\n"
    "        o.x = __shfl_xor_sync(0xffffffffu, v.x, off);\n"
    "        o.y = __shfl_xor_sync(0xffffffffu, v.y, off);\n"
    "        v = Op::comb(v, o);\n"
    "    }\n"
    "#if KF_TPR > 32\n"
    "    {\n"
    "        constexpr int NW = KF_TPR / 32;\n"
    "        const int warp = threadIdx.x >> 5, first = warp / NW * NW;\n"
    "        __syncthreads(); /* readers of the previous reduction are done with wbuf */\n"
    "        if ((threadIdx.x & 31) == 0) wbuf[warp] = v;\n"
    "        __syncthreads();\n"
    "        v = wbuf[first];\n"
    "#pragma unroll\n"
    "        for (int w = 1; w < NW; w++) v = Op::comb(v, wbuf[first + w]);\n"
    "    }\n"
    "#endif\n"
    "#if KF_CL > 1\n"
    "    {\n"
    "        const int gi = threadIdx.x / KF_TPR;\n"
    "        if (threadIdx.x % KF_TPR == 0) cbuf[gi] = v;\n"
    "        kf_cluster_sync();\n"
    "        v = kf_dsmem_ld(&cbuf[gi], 0);\n"
    "#pragma unroll\n"
    "        for (unsigned k = 1; k < KF_CL; k++) v = Op::comb(v, kf_dsmem_ld(&cbuf[gi], k));\n"
    "        kf_cluster_sync(); /* no block reuses cbuf or exits while another still reads it */\n"
    "    }\n"
    "#endif\n"
    "    st[0] = v;\n"
    "    (void)wbuf, (void)cbuf, (void)red;\n"
    "#else\n"
    "#if KF_TPR > 1\n"
    "    const int tid = threadIdx.x, g = tid / KF_RPB;\n"
    "    __syncthreads(); /* readers of the previous reduction are done with red */\n"
    "#pragma unroll\n"
    "    for (int e = 0; e < KF_VW; e++) red[tid * KF_VW + e] = st[e];\n"
    "    __syncthreads();\n"
    "#pragma unroll\n"
    "    for (int off = KF_TPR / 2; off > 0; off >>= 1) {\n"
    "        if (g < off)\n"
    "#pragma unroll\n"
    "            for (int e = 0; e < KF_VW; e++)\n"
    "                red[tid * KF_VW + e] =\n"
    "                    Op::comb(red[tid * KF_VW + e], red[(tid + off * KF_RPB) * KF_VW + e]);\n"
    "        __syncthreads();\n"
    "    }\n"
    "#pragma unroll\n"
    "    for (int e = 0; e < KF_VW; e++) st[e] = red[(tid % KF_RPB) * KF_VW + e];\n"
    "#endif\n"
    "    (void)wbuf, (void)cbuf, (void)red;\n"
    "#endif\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void KF_CLUSTER_ATTR __launch_bounds__(KF_NT, KF_MINB)\n"
    "kf_kernel(const kf_tin *__restrict__ x, kf_tout *__restrict__ y)\n"
    "{\n"
    "    extern __shared__ __align__(16) unsigned char kf_dyn[];\n"
    "    __shared__ float2 kf_wbuf[32], kf_cbuf[KF_RPB];\n"
    "    const int tid = threadIdx.x;\n"
    "    float2 *red = reinterpret_cast<float2 *>(kf_dyn);\n"
    "#if KF_SVEC > 0\n"
    "    kf_raw *stg = reinterpret_cast<kf_raw *>(kf_dyn + KF_RED_BYTES);\n"
    "#endif\n"
    "#if KF_MODE == 0\n"
    "    /* rows: group gi (KF_TPR threads) owns row `row`; block `rank` of the cluster owns\n"
    "     * its vectors [rank * KF_SLICE, +KF_SLICE); lane t takes vectors t, t + KF_TPR, ... */\n"
    "    const int gi = tid / KF_TPR, t = tid % KF_TPR;\n"
    "#if KF_CL > 1\n"
    "    const long long rank = kf_cluster_rank();\n"
    "#else\n"
    "    const long long rank = 0;\n"
    "#endif\n"
    "    const long long row = (long long)(blockIdx.x / KF_CL) * KF_RPB + gi;\n"
    "    const long long j0 = rank * KF_SLICE;\n"
    "    const int n = row < KF_NROWS ? (int)min((long long)KF_SLICE, (long long)KF_NV - j0) : 0;\n"
    "    const long long base = row * KF_COLS + j0 * KF_VW;\n"
    "    auto ok = [&](int i) { return t + KF_TPR * i < n; };\n"
    "    auto off = [&](int i) { return base + (long long)(t + KF_TPR * i) * KF_VW; };\n"
    "#else\n"
    "    /* columns: softmax over KF_D entries KF_I apart; thread (c, g) owns column group\n"
    "     * cg = block * KF_RPB + c (KF_VW adjacent columns) and takes entries g, g + KF_TPR,\n"
    "     * ... */\n"
    "    const int c = tid % KF_RPB, g = tid / KF_RPB;\n"
    "    const long long cg = (long long)blockIdx.x * KF_RPB + c;\n"
    "    const bool live = cg < KF_NCG;\n"
    "    const long long base = (cg / KF_IV) * ((long long)KF_D * KF_I) + (cg % KF_IV) * KF_VW;\n"
    "    auto ok = [&](int i) { return live && g + KF_TPR * i < KF_D; };\n"
    "    auto off = [&](int i) { return base + (long long)(g + KF_TPR * i) * KF_I; };\n"
    "#endif\n"
    "    auto ld = [&](int i) -> kf_raw {\n"
    "        return *reinterpret_cast<const kf_raw *>(x + off(i));\n"
    "    };\n"
    "    /* items [i_begin, KF_NPT) of this thread, KF_U loads in flight before their use */\n"
    "    auto stream = [&](int i_begin, auto &&src, auto &&fn) {\n"
    "#pragma unroll 1\n"
    "        for (int i0 = i_begin; i0 < KF_NPT; i0 += KF_U) {\n"
    "            kf_raw r[KF_U];\n"
    "#pragma unroll\n"
    "            for (int u = 0; u < KF_U; u++)\n"
    "                r[u] = i0 + u < KF_NPT && ok(i0 + u) ? src(i0 + u) : kf_raw();\n"
    "#pragma unroll\n"
    "            for (int u = 0; u < KF_U; u++)\n"
    "                if (i0 + u < KF_NPT && ok(i0 + u)) fn(i0 + u, r[u]);\n"
    "        }\n"
    "    };\n"
    "\n"
    "    float2 st[KF_NS];\n"
    "#pragma unroll\n"
    "    for (int s = 0; s < KF_NS; s++) st[s] = make_float2(KF_NEG_INF, 0.0f);\n"
    "\n"
    "#if KF_STRAT == 0\n"
    "    /* two passes: the max, then the sum of exp */\n"
    "    stream(0, ld, [&](int, const kf_raw &r) {\n"
    "        float v[KF_VW];\n"
    "        kf_unpack(r, v);\n"
    "        kf_acc_max(st, v);\n"
    "    });\n"
    "    kf_reduce<kf_max_op>(st, kf_wbuf, kf_cbuf, red);\n"
    "    stream(0, ld, [&](int, const kf_raw &r) {\n"
    "        float v[KF_VW];\n"
    "        kf_unpack(r, v);\n"
    "        kf_acc_sum(st, v);\n"
    "    });\n"
    "    kf_reduce<kf_sum_op>(st, kf_wbuf, kf_cbuf, red);\n"
    "#elif KF_STRAT == 1\n"
    "    /* one online pass */\n"
    "    stream(0, ld, [&](int, const kf_raw &r) {\n"
    "        float v[KF_VW];\n"
    "        kf_unpack(r, v);\n"
    "        kf_acc_online(st, v);\n"
    "    });\n"
    "    kf_reduce<kf_ms_op>(st, kf_wbuf, kf_cbuf, red);\n"
    "#else\n"
    "    /* staged: the online pass keeps items [0, KF_NREG) in registers and the next KF_SVEC\n"
    "     * in shared memory (read back by this thread only: no barrier), so only the rest, if\n"
    "     * any, is read from global memory twice */\n"
    "    kf_raw rs[KF_NREG];\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < KF_NREG; i++) rs[i] = ok(i) ? ld(i) : kf_raw();\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < KF_NREG; i++)\n"
    "        if (ok(i)) {\n"
    "            float v[KF_VW];\n"
    "            kf_unpack(rs[i], v);\n"
    "            kf_acc_online(st, v);\n"
    "        }\n"
    "    stream(KF_NREG, ld, [&](int i, const kf_raw &r) {\n"
    "        (void)i;\n"
    "#if KF_SVEC > 0\n"
    "        if (i < KF_NREG + KF_SVEC) stg[(i - KF_NREG) * KF_NT + tid] = r;\n"
    "#endif\n"
    "        float v[KF_VW];\n"
    "        kf_unpack(r, v);\n"
    "        kf_acc_online(st, v);\n"
    "    });\n"
    "    kf_reduce<kf_ms_op>(st, kf_wbuf, kf_cbuf, red);\n"
    "#endif\n"
    "\n"
    "    /* softmax: exp(v - max) / sum as 2^((v - max) log2 e - log2 sum); log_softmax:\n"
    "     * (v - max) - log(sum). A row of -inf has max -inf and sum 0: NaN either way, as\n"
    "     * eager gives. */\n"
    "    float mx[KF_NS], k[KF_NS];\n"
    "#pragma unroll\n"
    "    for (int s = 0; s < KF_NS; s++) {\n"
    "        mx[s] = st[s].x;\n"
    "        k[s] = KF_LOG ? logf(st[s].y) : -log2f(st[s].y);\n"
    "    }\n"
    "    auto put = [&](int i, const kf_raw &r) {\n"
    "        float v[KF_VW];\n"
    "        kf_unpack(r, v);\n"
    "#pragma unroll\n"
    "        for (int e = 0; e < KF_VW; e++) {\n"
    "            const int s = KF_MODE ? e : 0;\n"
    "            v[e] = KF_LOG ? (v[e] - mx[s]) - k[s]\n"
    "                          : kf_exp2(fmaf(v[e] - mx[s], KF_L2E, k[s]));\n"
    "        }\n"
    "        kf_store(y + off(i), v);\n"
    "    };\n"
    "#if KF_STRAT >= 2\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < KF_NREG; i++)\n"
    "        if (ok(i)) put(i, rs[i]);\n"
    "#if KF_SVEC > 0\n"
    "    stream(KF_NREG, [&](int i) -> kf_raw {\n"
    "        return i < KF_NREG + KF_SVEC ? stg[(i - KF_NREG) * KF_NT + tid] : ld(i);\n"
    "    }, put);\n"
    "#else\n"
    "    stream(KF_NREG, ld, put);\n"
    "#endif\n"
    "#else\n"
    "    stream(0, ld, put);\n"
    "#endif\n"
    "}\n";

static kf_status softmax_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                                char **launch_json, char *err, size_t errcap);

/* Where the search starts (the H200 runs' best region): 256 threads, 16-byte vectors, staged
 * with two blocks an SM; rows up to 8 KB get 64 threads each, longer ones a block, and when
 * long rows are too few for two waves of 132 SMs, clusters split them. */
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
    for (int s = 0; bytes > 8192 && s < 3 && (sh.outer << s) < 2 * 132; s++) idx[K_SPLIT] = s + 1;
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
    if (p.mode == 0)
        kf_strbuf_printf(&b,
                         "#define KF_NROWS %lldLL\n#define KF_COLS %lldLL\n#define KF_NV %lld\n"
                         "#define KF_SLICE %lld\n",
                         (long long)p.nrows, (long long)p.cols, (long long)p.nv,
                         (long long)p.slice);
    else
        kf_strbuf_printf(&b,
                         "#define KF_D %lld\n#define KF_I %lldLL\n#define KF_IV %lldLL\n"
                         "#define KF_NCG %lldLL\n",
                         (long long)p.d, (long long)p.inner, (long long)(p.inner / p.vw),
                         (long long)p.ncg);
    kf_strbuf_printf(&b, "\n%s", softmax_body);

    char a_in[40], a_out[40];
    snprintf(a_in, sizeof a_in, "const %s*", tin);
    snprintf(a_out, sizeof a_out, "%s*", tout);
    const char *args[] = {a_in, a_out};
    const unsigned grid[3] = {p.grid, 1, 1}, block[3] = {(unsigned)p.nt, 1, 1};
    return kf_template_cuda_finish(t, &b, args, 2, grid, block, p.smem, source, launch_json, err,
                                   errcap);
}
