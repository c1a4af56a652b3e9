/* One row of KF_NORM elements per team of KF_TPR threads, KF_RPB rows per block. */
#define KF_NV (KF_NORM / KF_VEC)                  /* vectors per row */
#define KF_PER ((KF_NV + KF_TPR - 1) / KF_TPR)    /* vectors per thread, at most */
typedef kf_vec<kf_x_t, KF_VEC> kf_xv;
typedef kf_vec<kf_y_t, KF_VEC> kf_yv;
typedef kf_xv::raw kf_xr;
typedef kf_vec<kf_w_t, KF_VEC> kf_wv;
typedef kf_vec<kf_b_t, KF_VEC> kf_bv;
#if KF_RMS
typedef kf_s1 kf_acc_t; /* sum of squares */
#elif KF_STATS == 0
typedef kf_s1 kf_acc_t; /* sum; the squared deviations come in a second pass */
#elif KF_STATS == 1
typedef kf_w3 kf_acc_t; /* Welford */
#else
typedef kf_s2 kf_acc_t; /* sum and sum of squares */
#endif

/* accumulate one vector */
__device__ __forceinline__ void kf_take(kf_acc_t &a, const float (&f)[KF_VEC])
{
#if KF_RMS
#pragma unroll
    for (int e = 0; e < KF_VEC; e++) a.a += f[e] * f[e];
#elif KF_STATS == 0
#pragma unroll
    for (int e = 0; e < KF_VEC; e++) a.a += f[e];
#elif KF_STATS == 1
    kf_welford(a, f);
#else
#pragma unroll
    for (int e = 0; e < KF_VEC; e++) a.a += f[e], a.b += f[e] * f[e];
#endif
}

#if KF_CACHE == 1
#define KF_FETCH(k, i) reg[k]
#elif KF_CACHE == 2
#define KF_FETCH(k, i) stage[i]
#else
#define KF_FETCH(k, i) kf_xv::ld(xr + (long long)(i) * KF_VEC)
#endif

extern "C" __global__ void __launch_bounds__(KF_BLOCK) kf_kernel(KF_PARAMS)
{
    __shared__ float kf_red[KF_RED_FLOATS];
#if KF_CACHE == 2
    extern __shared__ __align__(16) unsigned char kf_smem[];
    kf_xr *const stage =
        reinterpret_cast<kf_xr *>(kf_smem) + (threadIdx.x / KF_TPR) * KF_NV;
#elif KF_CACHE == 1
    kf_xr reg[KF_PER];
#endif
    const int lt = threadIdx.x % KF_TPR;
    const long long row = (long long)blockIdx.x * KF_RPB + threadIdx.x / KF_TPR;
    const bool active = row < KF_M; /* spare teams of the last block join the barriers */
    const kf_x_t *const xr = x + (active ? KF_XROW(row) : 0LL);

    /* pass 1: read the row once, keep it where KF_CACHE says, accumulate */
    kf_acc_t acc = {};
#if KF_CACHE == 1
#pragma unroll
#else
#pragma unroll 4
#endif
    for (int k = 0; k < KF_PER; k++) {
        const int i = lt + k * KF_TPR;
        if (active && i < KF_NV) {
            const kf_xr r = kf_xv::ld(xr + (long long)i * KF_VEC);
#if KF_CACHE == 1
            reg[k] = r;
#elif KF_CACHE == 2
            stage[i] = r; /* read back by this same thread only: no barrier needed */
#endif
            float f[KF_VEC];
            kf_xv::unpack(r, f);
            kf_take(acc, f);
        }
    }
    acc = kf_team_reduce(acc, kf_red);

#if KF_RMS
    const float var = acc.a / (float)KF_NORM; /* mean of squares */
#elif KF_STATS == 0
    const float mean = acc.a / (float)KF_NORM;
    kf_s1 sq = {};
#if KF_CACHE == 1
#pragma unroll
#else
#pragma unroll 4
#endif
    for (int k = 0; k < KF_PER; k++) {
        const int i = lt + k * KF_TPR;
        if (active && i < KF_NV) {
            float f[KF_VEC];
            kf_xv::unpack(KF_FETCH(k, i), f);
#pragma unroll
            for (int e = 0; e < KF_VEC; e++) {
                const float d = f[e] - mean;
                sq.a += d * d;
            }
        }
    }
    sq = kf_team_reduce(sq, kf_red);
    const float var = sq.a / (float)KF_NORM;
#elif KF_STATS == 1
    const float mean = acc.m, var = acc.q / (float)KF_NORM;
#else
    const float mean = acc.a / (float)KF_NORM, var = acc.b / (float)KF_NORM - mean * mean;
#endif
    const float rstd = rsqrtf(fmaxf(var, 0.f) + (float)(KF_EPS));
    if (active && lt == 0) {
#if !KF_RMS
        mean_out[row] = kf_from_f<kf_m_t>(mean);
#endif
        rstd_out[row] = kf_from_f<kf_r_t>(rstd);
    }

    /* last pass: y = w * (rstd * (x - mean)) + b, in torch's order */
    kf_y_t *const yr = y + (active ? KF_YROW(row) : 0LL);
#if KF_CACHE == 1
#pragma unroll
#else
#pragma unroll 4
#endif
    for (int k = 0; k < KF_PER; k++) {
        const int i = lt + k * KF_TPR;
        if (active && i < KF_NV) {
            float f[KF_VEC], o[KF_VEC];
            kf_xv::unpack(KF_FETCH(k, i), f);
#if KF_HAS_W
            float wv[KF_VEC];
            kf_wv::unpack(kf_wv::ld(w + (long long)i * KF_VEC), wv);
#endif
#if KF_HAS_B
            float bv[KF_VEC];
            kf_bv::unpack(kf_bv::ld(b + (long long)i * KF_VEC), bv);
#endif
#pragma unroll
            for (int e = 0; e < KF_VEC; e++) {
#if KF_RMS
                float t = rstd * f[e];
#else
                float t = rstd * (f[e] - mean);
#endif
#if KF_HAS_W
                t = wv[e] * t;
#endif
#if KF_HAS_B
                t = t + bv[e];
#endif
                o[e] = t;
            }
            kf_yv::st(yr + (long long)i * KF_VEC, o);
        }
    }
}
