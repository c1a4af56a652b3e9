/* cuda_reduce_generic: the generic reduction over [O outputs][R reduced] (reduce_ops.h). A team
 * of KF_TPR threads owns one output (KF_RPB = KF_NT / KF_TPR outputs per block): thread t folds
 * elements t, t + KF_TPR, ... (KF_UN loads in flight), then the team merges its states with
 * warp shuffles and, for teams over a warp, through shared memory; every thread of the team gets
 * the result (the first pass's `m` is needed by all). KF_TPR 1 is a thread per output: adjacent
 * threads read adjacent kept elements, which suits a strided R (x.sum(0)). */
#ifndef KF_PMERGE
#define KF_PMERGE(s, t) KF_MERGE(s, t)
#endif

template <int PRE> __device__ __forceinline__ kf_st kf_team(kf_st s, kf_st *red)
{
#pragma unroll
    for (int off = (KF_TPR < 32 ? KF_TPR : 32) / 2; off > 0; off >>= 1) {
        kf_st t;
        t.a = __shfl_xor_sync(0xffffffffu, s.a, off);
        t.i = __shfl_xor_sync(0xffffffffu, s.i, off);
        if (PRE)
            KF_PMERGE(s, t);
        else
            KF_MERGE(s, t);
    }
#if KF_TPR > 32
    /* the team's warps, merged in the same order by every thread */
    const int tid = threadIdx.x, w0 = tid / KF_TPR * (KF_TPR / 32);
    if ((tid & 31) == 0) red[tid >> 5] = s;
    __syncthreads();
    s = red[w0];
#pragma unroll 1
    for (int k = 1; k < KF_TPR / 32; k++) {
        kf_st t = red[w0 + k];
        if (PRE)
            KF_PMERGE(s, t);
        else
            KF_MERGE(s, t);
    }
    __syncthreads(); /* red is used again */
#else
    (void)red;
#endif
    return s;
}

extern "C" __global__ void __launch_bounds__(KF_NT) kf_kernel(KF_PARAMS)
{
#if KF_TPR > 32
    __shared__ kf_st red[KF_NT / 32];
#else
    kf_st *red = 0;
#endif
    const int tid = threadIdx.x, t = tid % KF_TPR;
    const long long o = (long long)blockIdx.x * KF_RPB + tid / KF_TPR;
    const bool live = o < KF_O; /* spare teams of the last block join the merges */
    const KF_TIN *const xo = x + (live ? kf_in_o(o) : 0);
    kf_st s;
#if KF_PRE /* m: the first pass's result, read by the step and the stores */
    KF_PINIT(s);
    s.i = 0;
#pragma unroll 1
    for (long long r0 = t; live && r0 < KF_R; r0 += (long long)KF_TPR * KF_UN) {
        kf_acc v[KF_UN];
#pragma unroll
        for (int u = 0; u < KF_UN; u++) {
            const long long r = r0 + (long long)u * KF_TPR;
            v[u] = r < KF_R ? KF_LD(xo[kf_in_r(r)]) : (kf_acc)0;
        }
#pragma unroll
        for (int u = 0; u < KF_UN; u++)
            if (r0 + (long long)u * KF_TPR < KF_R) KF_PSTEP(s, v[u]);
    }
    s = kf_team<1>(s, red);
    const kf_acc m = KF_PFINAL(s);
#endif
    KF_INIT(s);
#pragma unroll 1
    for (long long r0 = t; live && r0 < KF_R; r0 += (long long)KF_TPR * KF_UN) {
        kf_acc v[KF_UN];
#pragma unroll
        for (int u = 0; u < KF_UN; u++) {
            const long long r = r0 + (long long)u * KF_TPR;
            v[u] = r < KF_R ? KF_LD(xo[kf_in_r(r)]) : (kf_acc)0;
        }
#pragma unroll
        for (int u = 0; u < KF_UN; u++) {
            const long long r = r0 + (long long)u * KF_TPR;
            if (r < KF_R) KF_STEP(s, v[u], r);
        }
    }
    s = kf_team<0>(s, red);
    if (live && t == 0) KF_STORE(o, s);
}
