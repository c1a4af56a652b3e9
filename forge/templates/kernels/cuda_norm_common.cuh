/* ---- reductions: sums, and Welford triples merged with Chan's formula ---- */
struct kf_s1 { float a; };
struct kf_s2 { float a, b; };
struct kf_w3 { float n, m, q; }; /* count, mean, sum of squared deviations */
__device__ __forceinline__ kf_s1 kf_comb(const kf_s1 x, const kf_s1 y)
{
    kf_s1 r;
    r.a = x.a + y.a;
    return r;
}
__device__ __forceinline__ kf_s2 kf_comb(const kf_s2 x, const kf_s2 y)
{
    kf_s2 r;
    r.a = x.a + y.a, r.b = x.b + y.b;
    return r;
}
__device__ __forceinline__ kf_w3 kf_comb(const kf_w3 x, const kf_w3 y)
{
    const float n = x.n + y.n;
    if (n == 0.f) return x;
    const float d = y.m - x.m, f = y.n / n;
    kf_w3 r;
    r.n = n, r.m = x.m + d * f, r.q = x.q + y.q + d * d * x.n * f;
    return r;
}
__device__ __forceinline__ kf_s1 kf_shfl(kf_s1 v, int o)
{
    v.a = __shfl_xor_sync(0xffffffffu, v.a, o);
    return v;
}
__device__ __forceinline__ kf_s2 kf_shfl(kf_s2 v, int o)
{
    v.a = __shfl_xor_sync(0xffffffffu, v.a, o);
    v.b = __shfl_xor_sync(0xffffffffu, v.b, o);
    return v;
}
__device__ __forceinline__ kf_w3 kf_shfl(kf_w3 v, int o)
{
    v.n = __shfl_xor_sync(0xffffffffu, v.n, o);
    v.m = __shfl_xor_sync(0xffffffffu, v.m, o);
    v.q = __shfl_xor_sync(0xffffffffu, v.q, o);
    return v;
}
/* Welford over a vector: its own mean and squared deviations, merged into a with Chan's
 * formula (one approximate division per vector; the weights only need a few ulps). */
template <int V> __device__ __forceinline__ void kf_welford(kf_w3 &a, const float (&f)[V])
{
    float s = 0.f, q = 0.f;
#pragma unroll
    for (int e = 0; e < V; e++) s += f[e];
    const float m = s * (1.f / V);
#pragma unroll
    for (int e = 0; e < V; e++) q += (f[e] - m) * (f[e] - m);
    const float n = a.n + (float)V, d = m - a.m, r = __fdividef((float)V, n);
    a.q += q + d * d * a.n * r;
    a.m += d * r;
    a.n = n;
}

/* Combine v over the KF_TEAM threads of this thread's team (aligned groups of KF_TEAM
 * threads); every thread of the team gets the same result, combined in lane order. Every
 * thread of the block must call it (it synchronizes the block). buf: KF_RED_FLOATS floats
 * of shared memory. */
#if KF_REDUCE == 0
#define KF_RED_FLOATS (KF_BLOCK / 32 * 3)
#else
#define KF_RED_FLOATS (KF_BLOCK * 3)
#endif
template <class A> __device__ __forceinline__ A kf_team_reduce(A v, float *buf)
{
    A *red = reinterpret_cast<A *>(buf);
    (void)red;
#if KF_REDUCE == 0
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 1; o < (KF_TEAM < 32 ? KF_TEAM : 32); o <<= 1) { /* within the team */
        const A u = kf_shfl(v, o);
        v = (lane & o) ? kf_comb(u, v) : kf_comb(v, u); /* the lower lanes' part first */
    }
#if KF_TEAM > 32
    const int warp = threadIdx.x >> 5, first = warp & ~(KF_TEAM / 32 - 1);
    if (lane == 0) red[warp] = v;
    __syncthreads();
    v = red[first];
#pragma unroll
    for (int k = 1; k < KF_TEAM / 32; k++) v = kf_comb(v, red[first + k]);
    __syncthreads(); /* buf is reused by the next call */
#endif
#else
    const int lt = threadIdx.x & (KF_TEAM - 1);
    red[threadIdx.x] = v;
    __syncthreads();
#pragma unroll
    for (int s = KF_TEAM / 2; s > 0; s >>= 1) {
        if (lt < s) red[threadIdx.x] = kf_comb(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    v = red[threadIdx.x - lt];
    __syncthreads();
#endif
    return v;
}

