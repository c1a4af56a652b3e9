typedef KF_TYPE kf_t;
#if KF_STORE == 0
#define KF_ST kf_stcs
#else
#define KF_ST kf_stwb
#endif

/* one element, widened to float */
__device__ __forceinline__ float kf_ld1(const kf_t *p)
{
    unsigned w[1];
    kf_split(kf_vec<kf_t, 1>::ld(p), w);
    return kf_get<kf_t>(w, 0);
}

/* one element, rounded to kf_t as eager's static_cast */
__device__ __forceinline__ void kf_put1(kf_t *p, float v)
{
    const float f[1] = {v};
    KF_ST(reinterpret_cast<kf_vec<kf_t, 1>::raw *>(p), kf_vec<kf_t, 1>::pack(f));
}

#if !KF_DIRECT
#if KF_LV > 1
/* xw[j] = input column start + j of one row (row[0] is column 0; at: start's element
 * offset), from KF_NCH aligned loads of KF_LV elements: the window starts d elements into
 * the first.
 * A chunk is loaded only where it holds a column of the row (so an aligned chunk never
 * leaves the row's memory granule) and a window input; columns outside the row are never
 * read by a tap. */
__device__ __forceinline__ void kf_window(const kf_t *__restrict__ row, kf_idx at,
                                          int start, float (&xw)[KF_SPAN])
{
    const int d = (int)(at & (kf_idx)(KF_LV - 1));
#if KF_ES == 4
    const int last = d + KF_SPAN - 1; /* last chunk word used */
#else
    const int q = d >> 1, last = (d + KF_SPAN - 1) >> 1;
#endif
    unsigned cw[KF_NCH * KF_LW];
#pragma unroll
    for (int c = 0; c < KF_NCH; c++) {
        const int c0 = start - d + c * KF_LV;
        if (c * KF_LW <= last && c0 < KF_W && c0 + KF_LV > 0) {
            kf_split(kf_vec<kf_t, KF_LV>::ld(row + c0), cw + c * KF_LW);
        } else {
#pragma unroll
            for (int k = 0; k < KF_LW; k++) cw[c * KF_LW + k] = 0u;
        }
    }
#if KF_ES == 4
#pragma unroll
    for (int j = 0; j < KF_SPAN; j++) {
        unsigned u = cw[j];
#pragma unroll
        for (int e = 1; e < KF_LV; e++)
            if (d == e) u = cw[e + j];
        xw[j] = __uint_as_float(u);
    }
#else
    /* whole words by selects, then an odd start by one byte_perm a word */
    unsigned ww[KF_WWN];
#pragma unroll
    for (int i = 0; i < KF_WWN; i++) {
        unsigned u = cw[i];
#pragma unroll
        for (int e = 1; e < KF_LW; e++)
            if (q == e) u = cw[e + i];
        ww[i] = u;
    }
    const unsigned sel = (d & 1) ? 0x5432u : 0x3210u;
#pragma unroll
    for (int i = 0; i < (KF_SPAN + 1) / 2; i++) {
        const unsigned a[1] = {__byte_perm(ww[i], ww[i + 1], sel)};
        xw[2 * i] = kf_get<kf_t>(a, 0);
        if (2 * i + 1 < KF_SPAN) xw[2 * i + 1] = kf_get<kf_t>(a, 1);
    }
#endif
}
#else
/* xw[j] = input column start + j of one row, element by element (columns a tap reads) */
__device__ __forceinline__ void kf_window(const kf_t *__restrict__ row, kf_idx at,
                                          int start, float (&xw)[KF_SPAN])
{
    (void)at;
#pragma unroll
    for (int j = 0; j < KF_SPAN; j++) {
        const int w = start + j;
        xw[j] = ((KF_USED >> j) & 1ull) && (unsigned)w < (unsigned)KF_W
                    ? kf_ld1(row + (kf_idx)w * KF_XSW)
                    : 0.0f;
    }
}
#endif
#endif

/* one work item: KF_VEC outputs of row (n, c, oh) from column o0, eager's taps in order */
__device__ __forceinline__ void kf_item(const kf_t *__restrict__ x,
                                        const kf_t *__restrict__ wt,
                                        const kf_t *__restrict__ bias, kf_t *__restrict__ y,
                                        kf_idx q)
{
    const int g = (int)(q % KF_G);
    q /= KF_G;
    const int oh = (int)(q % KF_OH);
    q /= KF_OH;
    const int c = (int)(q % KF_CO);
    const int n = (int)(q / KF_CO);
    const kf_idx yrow = (kf_idx)n * KF_YSN + (kf_idx)c * KF_YSC + (kf_idx)oh * KF_YSH;
#if KF_VST /* items on the output's vector grid: the row's first one may start before it */
    const int o0 = g * KF_VEC - (int)(yrow & (kf_idx)(KF_VEC - 1));
#else
    const int o0 = g * KF_VEC;
#endif
#if KF_HAS_BIAS
    const float b0 = kf_ld1(bias + (kf_idx)c * KF_BS);
#else
    const float b0 = 0.0f;
    (void)bias;
#endif
    float acc[KF_VEC];
#pragma unroll
    for (int p = 0; p < KF_VEC; p++) acc[p] = b0;
    const kf_idx xb = (kf_idx)n * KF_XSN + (kf_idx)(c / KF_MULT) * KF_XSC;
    const kf_t *wc = wt + (kf_idx)c * KF_WSC;
    const int h0 = oh * KF_SH - KF_PH, start = o0 * KF_SW - KF_PW;
#if KF_FULL
#pragma unroll
#else
#pragma unroll 1
#endif
    for (int i = 0; i < KF_KH; i++) {
        const int h = h0 + i * KF_DH;
        if (h < 0 || h >= KF_H) continue;
        const kf_idx xrow = xb + (kf_idx)h * KF_XSH;
#if KF_DIRECT
#if KF_FULL
#pragma unroll
#else
#pragma unroll 4
#endif
        for (int k = 0; k < KF_KW; k++) {
            const int w = start + k * KF_DW;
            if ((unsigned)w < (unsigned)KF_W)
                acc[0] = fmaf(kf_ld1(wc + (kf_idx)i * KF_WSH + (kf_idx)k * KF_WSW),
                              kf_ld1(x + xrow + (kf_idx)w * KF_XSW), acc[0]);
        }
#else
        float xw[KF_SPAN];
        kf_window(x + xrow, xrow + start, start, xw);
#pragma unroll
        for (int k = 0; k < KF_KW; k++) {
            const float wk = kf_ld1(wc + (kf_idx)i * KF_WSH + (kf_idx)k * KF_WSW);
#pragma unroll
            for (int p = 0; p < KF_VEC; p++) {
                const int j = p * KF_SW + k * KF_DW;
                if ((unsigned)(start + j) < (unsigned)KF_W)
                    acc[p] = fmaf(wk, xw[j], acc[p]); /* eager's value += w * x */
            }
        }
#endif
    }
    kf_t *yr = y + yrow;
#if KF_VST /* vectors of up to 16 bytes */
    if (o0 >= 0 && o0 + KF_VEC <= KF_OW) {
#pragma unroll
        for (int v0 = 0; v0 < KF_VEC; v0 += KF_SV) {
            float f[KF_SV];
#pragma unroll
            for (int e = 0; e < KF_SV; e++) f[e] = acc[v0 + e];
            KF_ST(reinterpret_cast<kf_vec<kf_t, KF_SV>::raw *>(yr + o0 + v0),
                  kf_vec<kf_t, KF_SV>::pack(f));
        }
        return;
    }
#endif
#pragma unroll
    for (int p = 0; p < KF_VEC; p++) {
        const int w = o0 + p;
        if (w >= 0 && w < KF_OW) kf_put1(yr + (kf_idx)w * KF_YSW, acc[p]);
    }
}

extern "C" __global__ void __launch_bounds__(KF_NT) kf_kernel(KF_PARAMS)
{
#if KF_GS
    for (kf_idx q = (kf_idx)blockIdx.x * KF_NT + threadIdx.x; q < KF_ITEMS;
         q += (kf_idx)gridDim.x * KF_NT)
        kf_item(x, wt, KF_BIAS_ARG, y, q);
#else
    const kf_idx q = (kf_idx)blockIdx.x * KF_NT + threadIdx.x;
    if (q < KF_ITEMS) kf_item(x, wt, KF_BIAS_ARG, y, q);
#endif
}
