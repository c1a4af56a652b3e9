typedef KF_T kf_t;
typedef kf_vec<kf_t, KF_VW> kf_v;
typedef kf_v::raw kf_raw;

#if KF_MODE == 0
/* rows: team `row` of KF_TPR threads sums KF_NV vectors of KF_VW adjacent elements */
__device__ __forceinline__ float kf_vsum(const kf_raw r)
{
    float f[KF_VW], s = 0.0f;
    kf_v::unpack(r, f);
#pragma unroll
    for (int e = 0; e < KF_VW; e++) s += f[e];
    return s;
}

extern "C" __global__ void __launch_bounds__(KF_NT)
kf_kernel(const kf_t *__restrict__ x, kf_t *__restrict__ y)
{
#if KF_TPR > 32
    __shared__ float kf_red[KF_NT / 32];
#endif
    const int tid = threadIdx.x, t = tid % KF_TPR;
    const long long row = (long long)blockIdx.x * KF_RPB + tid / KF_TPR;
    const bool live = row < KF_O; /* spare teams of the last block join the barrier */
    const kf_t *const xr = x + (live ? (kf_idx)row * (kf_idx)KF_R : (kf_idx)0);
    float acc[KF_UN];
#pragma unroll
    for (int u = 0; u < KF_UN; u++) acc[u] = 0.0f;
#pragma unroll 1
    for (int k0 = 0; k0 < KF_NPT; k0 += KF_UN) {
        kf_raw r[KF_UN];
#pragma unroll
        for (int u = 0; u < KF_UN; u++) {
            const int j = t + (k0 + u) * KF_TPR;
            r[u] = live && j < KF_NV ? kf_v::ld(xr + (kf_idx)j * KF_VW) : kf_raw();
        }
#pragma unroll
        for (int u = 0; u < KF_UN; u++)
            if (live && t + (k0 + u) * KF_TPR < KF_NV) acc[u] += kf_vsum(r[u]);
    }
    float s = acc[0];
#pragma unroll
    for (int u = 1; u < KF_UN; u++) s += acc[u];
    /* the team: a butterfly inside the warp (a team of < 32 lanes is an aligned group),
     * then its warps' sums through shared memory */
#pragma unroll
    for (int off = (KF_TPR < 32 ? KF_TPR : 32) / 2; off > 0; off >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, off);
#if KF_TPR > 32
    if ((tid & 31) == 0) kf_red[tid >> 5] = s;
    __syncthreads();
    if (t == 0) {
        const int w0 = tid >> 5;
        s = kf_red[w0];
#pragma unroll
        for (int w = 1; w < KF_TPR / 32; w++) s += kf_red[w0 + w];
    }
#endif
    if (live && t == 0) y[kf_out_off((kf_idx)row, 0)] = kf_from_f<kf_t>(s / (float)KF_R);
}

#else
/* columns: thread (c, g) owns column group cg = block * KF_TX + c, i.e. KF_VW adjacent
 * inner elements of outer index o, and sums rows g, g + KF_TY, ... of R (KF_I apart) */
extern "C" __global__ void __launch_bounds__(KF_NT)
kf_kernel(const kf_t *__restrict__ x, kf_t *__restrict__ y)
{
#if KF_TY > 1
    __shared__ float kf_red[KF_NT * KF_VW];
#endif
    const int tid = threadIdx.x, c = tid % KF_TX, g = tid / KF_TX;
    const long long cg = (long long)blockIdx.x * KF_TX + c;
    const bool live = cg < KF_NCG; /* spare threads of the last block join the barriers */
    const kf_idx o = live ? (kf_idx)(cg / KF_IV) : 0, i = live ? (kf_idx)(cg % KF_IV) * KF_VW : 0;
    const kf_t *const xc = x + o * ((kf_idx)KF_R * (kf_idx)KF_I) + i;
    float acc[KF_VW];
#pragma unroll
    for (int e = 0; e < KF_VW; e++) acc[e] = 0.0f;
#pragma unroll 1
    for (int k0 = 0; k0 < KF_NPT; k0 += KF_UN) {
        kf_raw r[KF_UN];
#pragma unroll
        for (int u = 0; u < KF_UN; u++) {
            const int rr = g + (k0 + u) * KF_TY;
            r[u] = live && rr < KF_R ? kf_v::ld(xc + (kf_idx)rr * (kf_idx)KF_I) : kf_raw();
        }
#pragma unroll
        for (int u = 0; u < KF_UN; u++)
            if (live && g + (k0 + u) * KF_TY < KF_R) {
                float f[KF_VW];
                kf_v::unpack(r[u], f);
#pragma unroll
                for (int e = 0; e < KF_VW; e++) acc[e] += f[e];
            }
    }
#if KF_TY > 1
    /* the KF_TY partial sums of a column group: a tree in shared memory, [g][c][e] */
#pragma unroll
    for (int e = 0; e < KF_VW; e++) kf_red[tid * KF_VW + e] = acc[e];
    __syncthreads();
#pragma unroll
    for (int s = KF_TY / 2; s > 0; s >>= 1) {
        if (g < s)
#pragma unroll
            for (int e = 0; e < KF_VW; e++)
                kf_red[tid * KF_VW + e] += kf_red[(tid + s * KF_TX) * KF_VW + e];
        __syncthreads();
    }
#pragma unroll
    for (int e = 0; e < KF_VW; e++) acc[e] = kf_red[tid * KF_VW + e];
#endif
    if (live && g == 0) {
        float m[KF_VW];
#pragma unroll
        for (int e = 0; e < KF_VW; e++) m[e] = acc[e] / (float)KF_R;
#if KF_OVEC
        kf_v::stw(y + kf_out_off(o, i), m);
#else
#pragma unroll
        for (int e = 0; e < KF_VW; e++) y[kf_out_off(o, i + e)] = kf_from_f<kf_t>(m[e]);
#endif
    }
}
#endif
