/* Eval batch norm: y = ((x - mean[c]) * invstd[c]) * w[c] + b[c] with the running
 * statistics, channel c = dim 1. Each thread takes KF_PER vectors of KF_VEC elements, a
 * block's vectors contiguous: all loads first, then the math and the stores. */
#define KF_NVEC (KF_TOTAL / KF_VEC)
typedef kf_vec<kf_x_t, KF_VEC> kf_xv;
typedef kf_vec<kf_y_t, KF_VEC> kf_yv;
typedef kf_xv::raw kf_xr;

/* the parameters of channel c: KF_FORM 0 {mean, invstd, w, b}, 1 {scale, shift} folded */
#if KF_FORM == 0
typedef float4 kf_p_t;
#else
typedef float2 kf_p_t;
#endif
__device__ __forceinline__ kf_p_t kf_param(int c, const kf_w_t *__restrict__ w,
                                           const kf_b_t *__restrict__ b,
                                           const kf_rm_t *__restrict__ rm,
                                           const kf_rv_t *__restrict__ rv)
{
    const float m = kf_to_f(rm[c]), is = rsqrtf(kf_to_f(rv[c]) + (float)(KF_EPS));
#if KF_HAS_W
    const float wc = kf_to_f(w[c]);
#else
    const float wc = 1.f;
    (void)w;
#endif
#if KF_HAS_B
    const float bc = kf_to_f(b[c]);
#else
    const float bc = 0.f;
    (void)b;
#endif
#if KF_FORM == 0
    return make_float4(m, is, wc, bc);
#else
    const float s = is * wc;
    return make_float2(s, bc - m * s);
#endif
}
__device__ __forceinline__ float kf_apply(const kf_p_t p, float v)
{
#if KF_FORM == 0
    return ((v - p.x) * p.y) * p.z + p.w; /* torch's order */
#else
    return v * p.x + p.y;
#endif
}

/* channel of element e0 + e of vector starting at element e0 */
#if KF_CL
#define KF_CH0(e0) ((int)((e0) % KF_C))
#if KF_C % KF_VEC == 0
#define KF_CH(e0, c0, e) ((c0) + (e))
#else
#define KF_CH(e0, c0, e) ((int)(((e0) + (e)) % KF_C))
#endif
#else
#define KF_CH0(e0) ((int)(((e0) / KF_HW) % KF_C))
#if KF_HW % KF_VEC == 0
#define KF_CH(e0, c0, e) (c0)
#else
#define KF_CH(e0, c0, e) ((int)((((e0) + (e)) / KF_HW) % KF_C))
#endif
#endif

extern "C" __global__ void __launch_bounds__(KF_BLOCK) kf_kernel(KF_PARAMS)
{
    const long long first = (long long)blockIdx.x * (KF_BLOCK * KF_PER) + threadIdx.x;
#if KF_TABLE == 2
    /* every vector of this thread starts at the same channel: parameters in registers */
    kf_p_t preg[KF_VEC];
    {
        const int c0 = KF_CH0(first * KF_VEC);
#pragma unroll
        for (int e = 0; e < KF_VEC; e++) preg[e] = kf_param(c0 + e, KF_W, KF_B, rm, rv);
    }
#define KF_P(c, e) preg[e]
#elif KF_TABLE == 1
    __shared__ kf_p_t kf_tab[KF_C];
    for (int c = threadIdx.x; c < KF_C; c += KF_BLOCK)
        kf_tab[c] = kf_param(c, KF_W, KF_B, rm, rv);
    __syncthreads();
#define KF_P(c, e) kf_tab[c]
#else
#define KF_P(c, e) kf_param(c, KF_W, KF_B, rm, rv)
#endif
#if KF_SAVE_MEAN || KF_SAVE_INVSTD
    if (blockIdx.x == 0) /* eager's save_mean / save_invstd: the statistics it used */
        for (int c = threadIdx.x; c < KF_C; c += KF_BLOCK) {
#if KF_SAVE_MEAN
            save_mean[c] = kf_from_f<kf_sm_t>(kf_to_f(rm[c]));
#endif
#if KF_SAVE_INVSTD
            save_invstd[c] = kf_from_f<kf_si_t>(rsqrtf(kf_to_f(rv[c]) + (float)(KF_EPS)));
#endif
        }
#endif
    kf_xr r[KF_PER];
#pragma unroll
    for (int k = 0; k < KF_PER; k++) {
        const long long i = first + (long long)k * KF_BLOCK;
        if (i < KF_NVEC) r[k] = kf_xv::ld(x + i * KF_VEC);
    }
#pragma unroll
    for (int k = 0; k < KF_PER; k++) {
        const long long i = first + (long long)k * KF_BLOCK;
        if (i < KF_NVEC) {
            const long long e0 = i * KF_VEC;
            const int c0 = KF_CH0(e0);
            (void)c0;
            float f[KF_VEC], o[KF_VEC];
            kf_xv::unpack(r[k], f);
#pragma unroll
            for (int e = 0; e < KF_VEC; e++) {
                const int c = KF_CH(e0, c0, e);
                (void)c;
                o[e] = kf_apply(KF_P(c, e), f[e]);
            }
            kf_yv::st(y + e0, o);
        }
    }
}
