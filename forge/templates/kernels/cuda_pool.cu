typedef KF_TYPE kf_t;
typedef kf_vec<kf_t, KF_VEC> kf_xv;
typedef kf_xv::raw kf_raw;
#define KF_WORDS ((int)kf_xv::WORDS)
#define KF_CG (KF_C / KF_VEC)
#define KF_OWG ((KF_OWIDTH + KF_WOUT - 1) / KF_WOUT)
#define KF_SPAN ((KF_WOUT - 1) * KF_SW + (KF_KW - 1) * KF_DW + 1) /* row columns */
#if KF_STORE == 0
#define KF_ST kf_stcs
#else
#define KF_ST kf_stwb
#endif

/* the max so far of each channel of one output: its bits as loaded, its index */
struct kf_best {
    unsigned w[KF_WORDS];
    int i[KF_VEC];
};

/* eager's step: v replaces the max when greater or NaN (first max wins, last NaN) */
__device__ __forceinline__ void kf_take(kf_best &s, const kf_raw r, int idx)
{
    unsigned w[KF_WORDS];
    kf_split(r, w);
#pragma unroll
    for (int e = 0; e < KF_VEC; e++) {
        const float v = kf_get<kf_t>(w, e), m = kf_get<kf_t>(s.w, e);
        if (v > m || v != v) {
#if KF_ESIZE == 4
            s.w[e] = w[e];
#else
            const unsigned hi = (e & 1) ? 0xffff0000u : 0x0000ffffu;
            s.w[e >> 1] = (s.w[e >> 1] & ~hi) | (w[e >> 1] & hi);
#endif
            s.i[e] = idx;
        }
    }
}

/* eager's NCHW start: a window start stepped up by the dilation until in range */
__device__ __forceinline__ int kf_first(int s, int d)
{
    return s < 0 ? s + (-s + d - 1) / d * d : s;
}

__device__ __forceinline__ void kf_put_vals(kf_t *p, const unsigned (&w)[KF_WORDS])
{
    kf_raw r;
    kf_join(w, r);
    KF_ST(reinterpret_cast<kf_raw *>(p), r);
}

/* int64 indices: 16-byte pairs, or 8 bytes each (low word, then the sign) */
__device__ __forceinline__ void kf_put_idx(long long *p, const int (&v)[KF_VEC])
{
#if KF_IPAIR
#pragma unroll
    for (int e = 0; e < KF_VEC; e += 2)
        KF_ST(reinterpret_cast<uint4 *>(p + e),
              make_uint4((unsigned)v[e], (unsigned)(v[e] >> 31), (unsigned)v[e + 1],
                         (unsigned)(v[e + 1] >> 31)));
#else
#pragma unroll
    for (int e = 0; e < KF_VEC; e++)
        KF_ST(reinterpret_cast<uint2 *>(p + e),
              make_uint2((unsigned)v[e], (unsigned)(v[e] >> 31)));
#endif
}

/* one work item: KF_VEC channels from c0 of KF_WOUT outputs from (n, oh, ow0) */
__device__ __forceinline__ void kf_item(const kf_t *__restrict__ x, kf_t *__restrict__ y,
                                        long long *__restrict__ ind, kf_idx q)
{
#if KF_CL /* channels fastest, then output columns, rows, images */
    const int c0 = (int)(q % KF_CG) * KF_VEC;
    q /= KF_CG;
    const int og = (int)(q % KF_OWG);
    q /= KF_OWG;
    const int oh = (int)(q % KF_OHEIGHT);
    const int n = (int)(q / KF_OHEIGHT);
#else /* output columns fastest, then rows, channels, images */
    const int og = (int)(q % KF_OWG);
    q /= KF_OWG;
    const int oh = (int)(q % KF_OHEIGHT);
    q /= KF_OHEIGHT;
    const int c0 = (int)(q % KF_C);
    const int n = (int)(q / KF_C);
#endif
    const int ow0 = og * KF_WOUT;
    const int h0 = oh * KF_SH - KF_PH, w0 = ow0 * KF_SW - KF_PW;
    const kf_t *xb = x + ((kf_idx)n * KF_XSN + (kf_idx)c0 * KF_XSC);
    kf_best s[KF_WOUT];
#pragma unroll
    for (int p = 0; p < KF_WOUT; p++) {
#if KF_CL
        const int i0 = 0; /* eager's NHWC kernel */
#else
        const int i0 = kf_first(h0, KF_DH) * KF_W + kf_first(w0 + p * KF_SW, KF_DW);
#endif
#pragma unroll
        for (int k = 0; k < KF_WORDS; k++) s[p].w[k] = KF_NEG_INF_WORD;
#pragma unroll
        for (int e = 0; e < KF_VEC; e++) s[p].i[e] = i0;
    }
#if KF_FULL
#pragma unroll
#else
#pragma unroll 1
#endif
    for (int i = 0; i < KF_KH; i++) {
        const int h = h0 + i * KF_DH;
        if (h < 0 || h >= KF_H) continue;
        const kf_t *row = xb + (kf_idx)h * KF_XSH;
#if KF_WOUT == 1
        /* one output: each window position once */
#if KF_FULL
#pragma unroll
#else
#pragma unroll 4
#endif
        for (int k = 0; k < KF_KW; k++) {
            const int w = w0 + k * KF_DW;
            if (w < 0 || w >= KF_W) continue;
            kf_take(s[0], kf_xv::ld(row + (kf_idx)w * KF_XSW), h * KF_W + w);
        }
#else
        /* the row's span once into registers, shared by the outputs */
        kf_raw r[KF_SPAN];
#pragma unroll
        for (int j = 0; j < KF_SPAN; j++) {
            const int w = w0 + j;
            if (((KF_USED >> j) & 1) && w >= 0 && w < KF_W)
                r[j] = kf_xv::ld(row + (kf_idx)w * KF_XSW);
        }
#pragma unroll
        for (int p = 0; p < KF_WOUT; p++) {
#pragma unroll
            for (int k = 0; k < KF_KW; k++) {
                const int j = p * KF_SW + k * KF_DW, w = w0 + j;
                if (w >= 0 && w < KF_W) kf_take(s[p], r[j], h * KF_W + w);
            }
        }
#endif
    }
#pragma unroll
    for (int p = 0; p < KF_WOUT; p++) {
        const int ow = ow0 + p;
        if (KF_OWIDTH % KF_WOUT != 0 && ow >= KF_OWIDTH) break;
        kf_put_vals(y + ((kf_idx)n * KF_YSN + (kf_idx)c0 * KF_YSC + (kf_idx)oh * KF_YSH +
                         (kf_idx)ow * KF_YSW), s[p].w);
        kf_put_idx(ind + ((kf_idx)n * KF_ISN + (kf_idx)c0 * KF_ISC + (kf_idx)oh * KF_ISH +
                          (kf_idx)ow * KF_ISW), s[p].i);
    }
}

extern "C" __global__ void __launch_bounds__(KF_NT) kf_kernel(KF_PARAMS)
{
#if KF_GS
    for (kf_idx q = (kf_idx)blockIdx.x * KF_NT + threadIdx.x; q < KF_ITEMS;
         q += (kf_idx)gridDim.x * KF_NT)
        kf_item(x, y, ind, q);
#else
    const kf_idx q = (kf_idx)blockIdx.x * KF_NT + threadIdx.x;
    if (q < KF_ITEMS) kf_item(x, y, ind, q);
#endif
}
