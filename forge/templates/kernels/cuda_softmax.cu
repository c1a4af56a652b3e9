#define KF_NEG_INF __int_as_float(0xff800000)
#define KF_U 4 /* vectors in flight per thread in the streaming loops */

typedef KF_TIN kf_tin;
typedef KF_TOUT kf_tout;

typedef kf_vec<kf_tin, KF_VW> kf_vin;
typedef kf_vin::raw kf_raw; /* one input vector */

__device__ __forceinline__ void kf_unpack(const kf_raw r, float (&v)[KF_VW])
{
    kf_vin::unpack(r, v);
}

/* Round and store KF_VW results at p, 16 bytes at most per store (fp32 out of a
 * 16-bit input can be 32 bytes a vector). */
__device__ __forceinline__ void kf_store(kf_tout *p, const float (&v)[KF_VW])
{
    constexpr int B = KF_VW * (int)sizeof(kf_tout), W = B > 16 ? 16 : B;
    constexpr int E = W / (int)sizeof(kf_tout);
#pragma unroll
    for (int c = 0; c < KF_VW / E; c++) {
        float e[E];
#pragma unroll
        for (int i = 0; i < E; i++) e[i] = v[c * E + i];
        kf_vec<kf_tout, E>::stw(p + c * E, e);
    }
}

/* 2^x on the MUFU unit (ex2.approx, ~2 ulp; results below 2^-126 flush to 0, far below any
 * tolerance); exp(d) = 2^(d log2 e) with d = v - max computed exactly first */
#define KF_L2E 1.4426950408889634f
__device__ __forceinline__ float kf_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ float kf_exp(float d) { return kf_exp2(d * KF_L2E); }

/* A reduction state is (max, sum of exp(v - max)). The combines are commutative bit for bit
 * (no FMA contraction), so every lane of a butterfly ends with the same value. */
struct kf_max_op {
    static __device__ __forceinline__ float2 comb(float2 a, float2 b)
    {
        return make_float2(fmaxf(a.x, b.x), 0.0f);
    }
};
struct kf_sum_op {
    static __device__ __forceinline__ float2 comb(float2 a, float2 b)
    {
        return make_float2(a.x, __fadd_rn(a.y, b.y));
    }
};
struct kf_ms_op {
    static __device__ __forceinline__ float2 comb(float2 a, float2 b)
    {
        const float m = fmaxf(a.x, b.x);
        if (m == KF_NEG_INF) return make_float2(m, __fadd_rn(a.y, b.y)); /* 0, or a NaN */
        return make_float2(m, __fadd_rn(__fmul_rn(a.y, kf_exp(a.x - m)),
                                        __fmul_rn(b.y, kf_exp(b.x - m))));
    }
};

/* Online update with N values: -inf adds nothing; a NaN poisons the sum (fmaxf skips
 * it, so it must be caught while the max is still -inf); +inf makes the sum NaN, as
 * eager's row is. */
template <int N> __device__ __forceinline__ void kf_online(float2 &st, const float *v)
{
    float vm = v[0];
#pragma unroll
    for (int i = 1; i < N; i++) vm = fmaxf(vm, v[i]);
    const float m = fmaxf(st.x, vm);
    if (m == KF_NEG_INF) {
#pragma unroll
        for (int i = 0; i < N; i++)
            if (v[i] != v[i]) st.y = v[i];
        return;
    }
    if (m > st.x) st.y *= kf_exp(st.x - m);
    st.x = m;
#pragma unroll
    for (int i = 0; i < N; i++) st.y += kf_exp(v[i] - m);
}

#if KF_MODE == 0
#define KF_NS 1 /* one state per thread: all KF_VW values belong to its row */
#else
#define KF_NS KF_VW /* one state per column: the KF_VW values are KF_VW columns */
#endif

__device__ __forceinline__ void kf_acc_max(float2 (&st)[KF_NS], const float (&v)[KF_VW])
{
#pragma unroll
    for (int e = 0; e < KF_VW; e++) {
        float2 &s = st[KF_MODE ? e : 0];
        s.x = fmaxf(s.x, v[e]);
    }
}
__device__ __forceinline__ void kf_acc_sum(float2 (&st)[KF_NS], const float (&v)[KF_VW])
{
#pragma unroll
    for (int e = 0; e < KF_VW; e++) {
        float2 &s = st[KF_MODE ? e : 0];
        s.y += kf_exp(v[e] - s.x);
    }
}
__device__ __forceinline__ void kf_acc_online(float2 (&st)[KF_NS], const float (&v)[KF_VW])
{
#if KF_MODE == 0
    kf_online<KF_VW>(st[0], v);
#else
#pragma unroll
    for (int e = 0; e < KF_VW; e++) kf_online<1>(st[e], v + e);
#endif
}

#if KF_CL > 1
/* ---- a row split over a cluster of KF_CL blocks (sm_90): partials meet in distributed
 * shared memory ---- */
__device__ __forceinline__ unsigned kf_cluster_rank()
{
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ void kf_cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
/* *p in the shared memory of block `rank` of this cluster */
__device__ __forceinline__ float2 kf_dsmem_ld(const float2 *p, unsigned rank)
{
    unsigned a = (unsigned)__cvta_generic_to_shared(p), ra;
    float2 v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
                 : "=r"(ra) : "r"(a), "r"(rank));
    asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];"
                 : "=f"(v.x), "=f"(v.y) : "r"(ra) : "memory");
    return v;
}
#define KF_CLUSTER_ATTR __cluster_dims__(KF_CL, 1, 1)
#else
#define KF_CLUSTER_ATTR
#endif

/* Combine the states of the KF_TPR threads that share a row (rows mode: a contiguous group,
 * shuffles then shared memory, then the cluster) or a column (columns mode: threads KF_RPB
 * apart, a tree in shared memory). Every thread of the group gets the result. */
template <class Op>
__device__ __forceinline__ void kf_reduce(float2 (&st)[KF_NS], float2 *wbuf, float2 *cbuf,
                                                 float2 *red)
{
#if KF_MODE == 0
    float2 v = st[0];
    constexpr int W = KF_TPR < 32 ? KF_TPR : 32;
#pragma unroll
    for (int off = W / 2; off > 0; off >>= 1) {
        float2 o;
        o.x = __shfl_xor_sync(0xffffffffu, v.x, off);
        o.y = __shfl_xor_sync(0xffffffffu, v.y, off);
        v = Op::comb(v, o);
    }
#if KF_TPR > 32
    {
        constexpr int NW = KF_TPR / 32;
        const int warp = threadIdx.x >> 5, first = warp / NW * NW;
        __syncthreads(); /* readers of the previous reduction are done with wbuf */
        if ((threadIdx.x & 31) == 0) wbuf[warp] = v;
        __syncthreads();
        v = wbuf[first];
#pragma unroll
        for (int w = 1; w < NW; w++) v = Op::comb(v, wbuf[first + w]);
    }
#endif
#if KF_CL > 1
    {
        const int gi = threadIdx.x / KF_TPR;
        if (threadIdx.x % KF_TPR == 0) cbuf[gi] = v;
        kf_cluster_sync();
        v = kf_dsmem_ld(&cbuf[gi], 0);
#pragma unroll
        for (unsigned k = 1; k < KF_CL; k++) v = Op::comb(v, kf_dsmem_ld(&cbuf[gi], k));
        kf_cluster_sync(); /* no block reuses cbuf or exits while another still reads it */
    }
#endif
    st[0] = v;
    (void)wbuf, (void)cbuf, (void)red;
#else
#if KF_TPR > 1
    const int tid = threadIdx.x, g = tid / KF_RPB;
    __syncthreads(); /* readers of the previous reduction are done with red */
#pragma unroll
    for (int e = 0; e < KF_VW; e++) red[tid * KF_VW + e] = st[e];
    __syncthreads();
#pragma unroll
    for (int off = KF_TPR / 2; off > 0; off >>= 1) {
        if (g < off)
#pragma unroll
            for (int e = 0; e < KF_VW; e++)
                red[tid * KF_VW + e] =
                    Op::comb(red[tid * KF_VW + e], red[(tid + off * KF_RPB) * KF_VW + e]);
        __syncthreads();
    }
#pragma unroll
    for (int e = 0; e < KF_VW; e++) st[e] = red[(tid % KF_RPB) * KF_VW + e];
#endif
    (void)wbuf, (void)cbuf, (void)red;
#endif
}

extern "C" __global__ void KF_CLUSTER_ATTR __launch_bounds__(KF_NT, KF_MINB)
kf_kernel(const kf_tin *__restrict__ x, kf_tout *__restrict__ y
#ifdef KF_ROWS_ARG
          , long long kf_rows /* a family kernel: the row count at launch (KF_NROWS) */
#endif
)
{
    extern __shared__ __align__(16) unsigned char kf_dyn[];
    __shared__ float2 kf_wbuf[32], kf_cbuf[KF_RPB];
    const int tid = threadIdx.x;
    float2 *red = reinterpret_cast<float2 *>(kf_dyn);
#if KF_SVEC > 0
    kf_raw *stg = reinterpret_cast<kf_raw *>(kf_dyn + KF_RED_BYTES);
#endif
#if KF_MODE == 0
    /* rows: group gi (KF_TPR threads) owns row `row`; block `rank` of the cluster owns
     * its vectors [rank * KF_SLICE, +KF_SLICE); lane t takes vectors t, t + KF_TPR, ... */
    const int gi = tid / KF_TPR, t = tid % KF_TPR;
#if KF_CL > 1
    const long long rank = kf_cluster_rank();
#else
    const long long rank = 0;
#endif
    const long long row = (long long)(blockIdx.x / KF_CL) * KF_RPB + gi;
    const long long j0 = rank * KF_SLICE;
    const int n = row < KF_NROWS ? (int)min((long long)KF_SLICE, (long long)KF_NV - j0) : 0;
    const long long base = row * KF_COLS + j0 * KF_VW;
    auto ok = [&](int i) { return t + KF_TPR * i < n; };
    auto off = [&](int i) { return base + (long long)(t + KF_TPR * i) * KF_VW; };
#else
    /* columns: softmax over KF_D entries KF_I apart; thread (c, g) owns column group
     * cg = block * KF_RPB + c (KF_VW adjacent columns) and takes entries g, g + KF_TPR,
     * ... */
    const int c = tid % KF_RPB, g = tid / KF_RPB;
    const long long cg = (long long)blockIdx.x * KF_RPB + c;
    const bool live = cg < KF_NCG;
    const long long base = (cg / KF_IV) * ((long long)KF_D * KF_I) + (cg % KF_IV) * KF_VW;
    auto ok = [&](int i) { return live && g + KF_TPR * i < KF_D; };
    auto off = [&](int i) { return base + (long long)(g + KF_TPR * i) * KF_I; };
#endif
    auto ld = [&](int i) -> kf_raw {
        return *reinterpret_cast<const kf_raw *>(x + off(i));
    };
    /* items [i_begin, KF_NPT) of this thread, KF_U loads in flight before their use */
    auto stream = [&](int i_begin, auto &&src, auto &&fn) {
#pragma unroll 1
        for (int i0 = i_begin; i0 < KF_NPT; i0 += KF_U) {
            kf_raw r[KF_U];
#pragma unroll
            for (int u = 0; u < KF_U; u++)
                r[u] = i0 + u < KF_NPT && ok(i0 + u) ? src(i0 + u) : kf_raw();
#pragma unroll
            for (int u = 0; u < KF_U; u++)
                if (i0 + u < KF_NPT && ok(i0 + u)) fn(i0 + u, r[u]);
        }
    };

    float2 st[KF_NS];
#pragma unroll
    for (int s = 0; s < KF_NS; s++) st[s] = make_float2(KF_NEG_INF, 0.0f);

#if KF_STRAT == 0
    /* two passes: the max, then the sum of exp */
    stream(0, ld, [&](int, const kf_raw &r) {
        float v[KF_VW];
        kf_unpack(r, v);
        kf_acc_max(st, v);
    });
    kf_reduce<kf_max_op>(st, kf_wbuf, kf_cbuf, red);
    stream(0, ld, [&](int, const kf_raw &r) {
        float v[KF_VW];
        kf_unpack(r, v);
        kf_acc_sum(st, v);
    });
    kf_reduce<kf_sum_op>(st, kf_wbuf, kf_cbuf, red);
#elif KF_STRAT == 1
    /* one online pass */
    stream(0, ld, [&](int, const kf_raw &r) {
        float v[KF_VW];
        kf_unpack(r, v);
        kf_acc_online(st, v);
    });
    kf_reduce<kf_ms_op>(st, kf_wbuf, kf_cbuf, red);
#else
    /* staged: the online pass keeps items [0, KF_NREG) in registers and the next KF_SVEC
     * in shared memory (read back by this thread only: no barrier), so only the rest, if
     * any, is read from global memory twice */
    kf_raw rs[KF_NREG];
#pragma unroll
    for (int i = 0; i < KF_NREG; i++) rs[i] = ok(i) ? ld(i) : kf_raw();
#pragma unroll
    for (int i = 0; i < KF_NREG; i++)
        if (ok(i)) {
            float v[KF_VW];
            kf_unpack(rs[i], v);
            kf_acc_online(st, v);
        }
    stream(KF_NREG, ld, [&](int i, const kf_raw &r) {
        (void)i;
#if KF_SVEC > 0
        if (i < KF_NREG + KF_SVEC) stg[(i - KF_NREG) * KF_NT + tid] = r;
#endif
        float v[KF_VW];
        kf_unpack(r, v);
        kf_acc_online(st, v);
    });
    kf_reduce<kf_ms_op>(st, kf_wbuf, kf_cbuf, red);
#endif

    /* softmax: exp(v - max) / sum as 2^((v - max) log2 e - log2 sum); log_softmax:
     * (v - max) - log(sum). A row of -inf has max -inf and sum 0: NaN either way, as
     * eager gives. */
    float mx[KF_NS], k[KF_NS];
#pragma unroll
    for (int s = 0; s < KF_NS; s++) {
        mx[s] = st[s].x;
        k[s] = KF_LOG ? logf(st[s].y) : -log2f(st[s].y);
    }
    auto put = [&](int i, const kf_raw &r) {
        float v[KF_VW];
        kf_unpack(r, v);
#pragma unroll
        for (int e = 0; e < KF_VW; e++) {
            const int s = KF_MODE ? e : 0;
            v[e] = KF_LOG ? (v[e] - mx[s]) - k[s]
                          : kf_exp2(fmaf(v[e] - mx[s], KF_L2E, k[s]));
        }
        kf_store(y + off(i), v);
    };
#if KF_STRAT >= 2
#pragma unroll
    for (int i = 0; i < KF_NREG; i++)
        if (ok(i)) put(i, rs[i]);
#if KF_SVEC > 0
    stream(KF_NREG, [&](int i) -> kf_raw {
        return i < KF_NREG + KF_SVEC ? stg[(i - KF_NREG) * KF_NT + tid] : ld(i);
    }, put);
#else
    stream(KF_NREG, ld, put);
#endif
#else
    stream(0, ld, put);
#endif
}
