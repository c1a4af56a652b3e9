/* Row r's element j is at kf_xrow(r) + j * KF_XN; rows r, r + 1 are adjacent in memory
 * (within runs of KF_VEC at least). A block owns KF_R consecutive rows; thread (c, g) =
 * (threadIdx.x % KF_CG, threadIdx.x / KF_CG) holds the KF_VEC rows from r0 =
 * blockIdx.x * KF_R + c * KF_VEC and takes the columns g, g + KF_P, ... */
#define KF_CG (KF_R / KF_VEC)     /* row groups per block */
#define KF_P (KF_BLOCK / KF_CG)   /* threads per row group */
typedef kf_vec<kf_x_t, KF_VEC> kf_xv;
typedef kf_xv::raw kf_xr;
#if KF_RMS
typedef kf_s1 kf_acc_t; /* sum of squares */
#elif KF_STATS == 0
typedef kf_s1 kf_acc_t; /* sum; the squared deviations come in a second pass */
#elif KF_STATS == 1
typedef kf_w3 kf_acc_t; /* Welford */
#else
typedef kf_s2 kf_acc_t; /* sum and sum of squares */
#endif

/* accumulate one element of a row */
__device__ __forceinline__ void kf_take1(kf_acc_t &a, const float f)
{
#if KF_RMS
    a.a += f * f;
#elif KF_STATS == 0
    a.a += f;
#elif KF_STATS == 1
    const float e[1] = {f};
    kf_welford(a, e);
#else
    a.a += f, a.b += f * f;
#endif
}

/* fn(j, f) on the columns j0 + g, j0 + g + KF_P, ... below j1 of this thread's rows, KF_U
 * loads in flight */
template <class F>
__device__ __forceinline__ void kf_cols(const kf_x_t *xg, bool active, int g, int j0,
                                        int j1, F &&fn)
{
#pragma unroll 1
    for (int jb = j0 + g; jb < j1; jb += KF_P * KF_U) {
        kf_xr r[KF_U];
#pragma unroll
        for (int u = 0; u < KF_U; u++) {
            const int j = jb + u * KF_P;
            r[u] = active && j < j1 ? kf_xv::ld(xg + (long long)j * KF_XN) : kf_xr();
        }
#pragma unroll
        for (int u = 0; u < KF_U; u++) {
            const int j = jb + u * KF_P;
            if (active && j < j1) {
                float f[KF_VEC];
                kf_xv::unpack(r[u], f);
                fn(j, f);
            }
        }
    }
}

/* Combine a[] over the KF_P threads of each row group (KF_CG apart in the block), KF_RV
 * rows at a time through red (KF_RV * KF_BLOCK entries), a tree in g order; every thread
 * of the group gets the totals. Every thread of the block calls it. */
__device__ __forceinline__ void kf_col_reduce(kf_acc_t (&a)[KF_VEC], kf_acc_t *red)
{
#if KF_P > 1
    const int g = threadIdx.x / KF_CG;
#pragma unroll
    for (int v0 = 0; v0 < KF_VEC; v0 += KF_RV) {
#pragma unroll
        for (int k = 0; k < KF_RV; k++) red[k * KF_BLOCK + threadIdx.x] = a[v0 + k];
        __syncthreads();
#pragma unroll
        for (int s = KF_P / 2; s > 0; s >>= 1) {
            if (g < s) {
#pragma unroll
                for (int k = 0; k < KF_RV; k++) {
                    kf_acc_t *p = red + k * KF_BLOCK + threadIdx.x;
                    *p = kf_comb(*p, p[s * KF_CG]);
                }
            }
            __syncthreads();
        }
#pragma unroll
        for (int k = 0; k < KF_RV; k++) a[v0 + k] = red[k * KF_BLOCK + threadIdx.x % KF_CG];
        __syncthreads(); /* red is reused by the next round or call */
    }
#else
    (void)a, (void)red;
#endif
}

extern "C" __global__ void __launch_bounds__(KF_BLOCK) kf_kernel(KF_PARAMS)
{
    __shared__ kf_acc_t kf_red[KF_P > 1 ? KF_RV * KF_BLOCK : 1];
    const int c = threadIdx.x % KF_CG, g = threadIdx.x / KF_CG;
    const long long r0 = (long long)blockIdx.x * KF_R + c * KF_VEC;
    /* KF_M is a multiple of KF_VEC: a group is all in or all out; spare groups of the last
     * block join the barriers */
    const bool active = r0 < KF_M;
    const kf_x_t *const xg = x + (active ? kf_xrow((unsigned)r0) : 0LL);

    /* pass 1: accumulate */
    kf_acc_t acc[KF_VEC] = {};
    kf_cols(xg, active, g, 0, KF_NORM, [&](int, const float (&f)[KF_VEC]) {
#pragma unroll
        for (int v = 0; v < KF_VEC; v++) kf_take1(acc[v], f[v]);
    });
    kf_col_reduce(acc, kf_red);

#if !KF_RMS
    float mean[KF_VEC];
#endif
    float rstd[KF_VEC];
#if !KF_RMS && KF_STATS == 0
#pragma unroll
    for (int v = 0; v < KF_VEC; v++) mean[v] = acc[v].a / (float)KF_NORM, acc[v].a = 0.f;
    kf_cols(xg, active, g, 0, KF_NORM, [&](int, const float (&f)[KF_VEC]) {
#pragma unroll
        for (int v = 0; v < KF_VEC; v++) {
            const float d = f[v] - mean[v];
            acc[v].a += d * d;
        }
    });
    kf_col_reduce(acc, kf_red);
#endif
#pragma unroll
    for (int v = 0; v < KF_VEC; v++) {
#if KF_RMS
        const float var = acc[v].a / (float)KF_NORM; /* mean of squares */
#elif KF_STATS == 0
        const float var = acc[v].a / (float)KF_NORM;
#elif KF_STATS == 1
        const float var = acc[v].q / (float)KF_NORM;
        mean[v] = acc[v].m;
#else
        mean[v] = acc[v].a / (float)KF_NORM;
        const float var = acc[v].b / (float)KF_NORM - mean[v] * mean[v];
#endif
        rstd[v] = rsqrtf(fmaxf(var, 0.f) + (float)(KF_EPS));
    }
    if (active && g == 0) {
#pragma unroll
        for (int v = 0; v < KF_VEC; v++) {
#if !KF_RMS
            mean_out[r0 + v] = kf_from_f<kf_m_t>(mean[v]);
#endif
            rstd_out[r0 + v] = kf_from_f<kf_r_t>(rstd[v]);
        }
    }

    /* last pass: y = w * (rstd * (x - mean)) + b, in torch's order */
#if !KF_YT
    /* y has x's strides: written as x is read */
    kf_y_t *const yg = y + (active ? kf_xrow((unsigned)r0) : 0LL);
    kf_cols(xg, active, g, 0, KF_NORM, [&](int j, const float (&f)[KF_VEC]) {
#if KF_HAS_W
        const float wj = kf_to_f(w[j]);
#endif
#if KF_HAS_B
        const float bj = kf_to_f(b[j]);
#endif
        float o[KF_VEC];
#pragma unroll
        for (int v = 0; v < KF_VEC; v++) {
#if KF_RMS
            float t = rstd[v] * f[v];
#else
            float t = rstd[v] * (f[v] - mean[v]);
#endif
#if KF_HAS_W
            t = wj * t;
#endif
#if KF_HAS_B
            t = t + bj;
#endif
            o[v] = t;
        }
        kf_vec<kf_y_t, KF_VEC>::st(yg + (long long)j * KF_XN, o);
    });
#else
    /* y's rows are contiguous: KF_TILE columns at a time go through shared memory, read
     * along the rows (coalesced in x), written along the columns (coalesced in y) */
    __shared__ float kf_tile[KF_TILE][KF_R + 1]; /* +1: conflict-free column reads */
#if !KF_RMS
    __shared__ float kf_sm[KF_R];
#endif
    __shared__ float kf_sr[KF_R];
    __shared__ long long kf_yb[KF_R];
    if (g == 0) {
#pragma unroll
        for (int v = 0; v < KF_VEC; v++) {
#if !KF_RMS
            kf_sm[c * KF_VEC + v] = mean[v];
#endif
            kf_sr[c * KF_VEC + v] = rstd[v];
        }
    }
    for (int i = threadIdx.x; i < KF_R; i += KF_BLOCK) {
        const long long r = (long long)blockIdx.x * KF_R + i;
        kf_yb[i] = r < KF_M ? kf_yrow((unsigned)r) : -1LL;
    }
    constexpr int NJ = KF_TILE / KF_VY; /* vectors of a row in one tile */
#pragma unroll 1
    for (int c0 = 0; c0 < KF_NORM; c0 += KF_TILE) {
        __syncthreads(); /* the tile's readers are done (first: kf_sm, kf_sr, kf_yb set) */
        kf_cols(xg, active, g, c0, min(c0 + KF_TILE, KF_NORM),
                [&](int j, const float (&f)[KF_VEC]) {
#pragma unroll
                    for (int v = 0; v < KF_VEC; v++) kf_tile[j - c0][c * KF_VEC + v] = f[v];
                });
        __syncthreads();
        for (int e = threadIdx.x; e < KF_R * NJ; e += KF_BLOCK) {
            const int i = e / NJ, jv = e % NJ, j = c0 + jv * KF_VY;
            const long long yb = kf_yb[i];
            if (yb < 0 || j >= KF_NORM) continue; /* KF_VY divides KF_NORM */
            float o[KF_VY];
#pragma unroll
            for (int k = 0; k < KF_VY; k++) {
                const float xv = kf_tile[jv * KF_VY + k][i];
#if KF_RMS
                float t = kf_sr[i] * xv;
#else
                float t = kf_sr[i] * (xv - kf_sm[i]);
#endif
#if KF_HAS_W
                t = kf_to_f(w[j + k]) * t;
#endif
#if KF_HAS_B
                t = t + kf_to_f(b[j + k]);
#endif
                o[k] = t;
            }
            kf_vec<kf_y_t, KF_VY>::st(y + yb + j, o);
        }
    }
#endif
}
