#define KF_N4 ((KF_N + 3) / 4 * 4)
#define KF_P (KF_N4 + KF_PITCH) /* floats per shared row: row j holds column j of A */

/* v[i0 .. i0 + V) from p (rows contiguous when V > 1) */
template <int V> __device__ __forceinline__ void kf_ld(float *v, const float *p)
{
    if (V == 4) {
        const float4 t = __ldg(reinterpret_cast<const float4 *>(p));
        v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
    } else if (V == 2) {
        const float2 t = __ldg(reinterpret_cast<const float2 *>(p));
        v[0] = t.x, v[1] = t.y;
    } else {
        v[0] = __ldg(p);
    }
}

template <int V> __device__ __forceinline__ void kf_st(float *p, const float *v)
{
    if (V == 4)
        __stcs(reinterpret_cast<float4 *>(p), make_float4(v[0], v[1], v[2], v[3]));
    else if (V == 2)
        __stcs(reinterpret_cast<float2 *>(p), make_float2(v[0], v[1]));
    else
        __stcs(p, v[0]);
}

/* one 16-byte broadcast load from shared memory (the compiler splits col[q] into four) */
__device__ __forceinline__ float4 kf_lds4(const float4 *p)
{
    float4 t;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(t.x), "=f"(t.y), "=f"(t.z), "=f"(t.w)
                 : "r"((unsigned)__cvta_generic_to_shared(p)) : "memory");
    return t;
}

extern "C" __global__ void __launch_bounds__(KF_NT, KF_MINB)
kf_kernel(const float *__restrict__ a, const float *__restrict__ bm, float *__restrict__ x)
{
    extern __shared__ float4 kf_sm4[];
    float *sa = reinterpret_cast<float *>(kf_sm4);
    const int tile = (int)(blockIdx.x % KF_TILES);
    long long oa = 0, ob = 0, ox = 0;
    KF_BATCH_OFFSETS
    const int c = tile * KF_NT + threadIdx.x;
    const bool live = KF_K % KF_NT == 0 || c < KF_K;
    float v[KF_N4];
    /* the column first: its loads are in flight while A is staged */
    if (live) {
        const float *bp = bm + ob + (long long)c * KF_BJ;
#pragma unroll
        for (int i = 0; i < KF_N; i += KF_BVEC)
            kf_ld<KF_BVEC>(v + i, bp + (long long)i * KF_BI);
    }
    /* A transposed into shared memory, read along its faster dim */
#pragma unroll 8
    for (int e = threadIdx.x; e < KF_N * KF_N; e += KF_NT) {
#if KF_AJ_FAST
        const int i = e / KF_N, j = e % KF_N;
#else
        const int j = e / KF_N, i = e % KF_N;
#endif
#if KF_UPPER
        if (i > j) continue; /* the other triangle is never read */
#else
        if (i < j) continue;
#endif
        sa[j * KF_P + i] = __ldg(a + oa + (long long)i * KF_AI + (long long)j * KF_AJ);
    }
    __syncthreads();
    if (!live) return;
#pragma unroll
    for (int jj = 0; jj < KF_N; jj++) {
#if KF_UPPER
        const int j = KF_N - 1 - jj; /* backward substitution */
#else
        const int j = jj;
#endif
#if !KF_UNIT
        v[j] = v[j] / sa[j * KF_P + j];
#endif
        const float xj = v[j];
        const float4 *col = reinterpret_cast<const float4 *>(sa + j * KF_P);
#if KF_UPPER
#pragma unroll
        for (int q = 0; q < (j + 3) / 4; q++) {
            const float4 t = kf_lds4(col + q);
            const float tv[4] = {t.x, t.y, t.z, t.w};
#pragma unroll
            for (int e = 0; e < 4; e++)
                if (4 * q + e < j) v[4 * q + e] -= tv[e] * xj;
        }
#else
#pragma unroll
        for (int q = (j + 1) / 4; q < KF_N4 / 4; q++) {
            const float4 t = kf_lds4(col + q);
            const float tv[4] = {t.x, t.y, t.z, t.w};
#pragma unroll
            for (int e = 0; e < 4; e++)
                if (4 * q + e > j && 4 * q + e < KF_N) v[4 * q + e] -= tv[e] * xj;
        }
#endif
    }
    float *xp = x + ox + (long long)c * KF_XJ;
#pragma unroll
    for (int i = 0; i < KF_N; i += KF_XVEC)
        kf_st<KF_XVEC>(xp + (long long)i * KF_XI, v + i);
}
