/* host_max_pool2d: (y, ind) = max_pool2d_with_indices(x) as eager's CPU kernels compute it
 * (torch's cpu/MaxPoolKernel.cpp, NCHW and channels last alike): per output (n, c, oh, ow) the
 * window's rows h0 <= ih < h1 step KF_DH and columns w0 <= iw < w1 step KF_DW (kf_window), h
 * outer, w inner; a value replaces the max when it is greater or NaN (the first of equal maxima
 * wins, and the last NaN); the max starts at -inf with the index of the
 * window's first in-range position, kept when nothing replaces it. Compared in float (f16 and
 * bf16 converted, KF_LD), stored as eager converts back (KF_ST). Index = ih * KF_W + iw.
 * KF_CL: channels last, the channels innermost, KF_CB at a time in vector lanes. */
#define KF_CB 64

/* window start (stepped up by the dilation out of the padding) and end (clipped to the input) */
static inline void kf_window(long long o, long long s, long long p, long long d, long long k,
                             long long in, long long *a, long long *b)
{
    long long lo = o * s - p, hi = lo + (k - 1) * d + 1;
    *b = hi < in ? hi : in;
    while (lo < 0) lo += d;
    *a = lo;
}

void kf_kernel(const KF_T *restrict x, KF_T *restrict y, int64_t *restrict ind)
{
#if KF_CL
#if KF_OMP
#pragma omp parallel for schedule(static)
#endif
    for (long long r = 0; r < KF_N * KF_OH; r++) {
        const long long n = r / KF_OH, oh = r % KF_OH;
        long long h0, h1;
        kf_window(oh, KF_SH, KF_PH, KF_DH, KF_KH, KF_H, &h0, &h1);
        for (long long ow = 0; ow < KF_OW; ow++) {
            long long w0, w1;
            kf_window(ow, KF_SW, KF_PW, KF_DW, KF_KW, KF_W, &w0, &w1);
            const long long o = (r * KF_OW + ow) * KF_C;
            for (long long c0 = 0; c0 < KF_C; c0 += KF_CB) {
                const long long nc = KF_C - c0 < KF_CB ? KF_C - c0 : KF_CB;
                float mv[KF_CB];
                int64_t mi[KF_CB];
                for (long long j = 0; j < nc; j++) {
                    mv[j] = -INFINITY;
                    mi[j] = h0 * KF_W + w0;
                }
                for (long long ih = h0; ih < h1; ih += KF_DH)
                    for (long long iw = w0; iw < w1; iw += KF_DW) {
                        const KF_T *restrict xp = x + ((n * KF_H + ih) * KF_W + iw) * KF_C + c0;
                        const int64_t idx = ih * KF_W + iw;
#pragma omp simd
                        for (long long j = 0; j < nc; j++) {
                            const float v = KF_LD(xp[j]);
                            const int take = (v > mv[j]) | (v != v);
                            mv[j] = take ? v : mv[j];
                            mi[j] = take ? idx : mi[j];
                        }
                    }
                for (long long j = 0; j < nc; j++) {
                    y[o + c0 + j] = KF_ST(mv[j]);
                    ind[o + c0 + j] = mi[j];
                }
            }
        }
    }
#else
#if KF_OMP
#pragma omp parallel for schedule(static)
#endif
    for (long long p = 0; p < KF_N * KF_C; p++) {
        const KF_T *restrict xp = x + p * KF_H * KF_W;
        for (long long oh = 0; oh < KF_OH; oh++) {
            long long h0, h1;
            kf_window(oh, KF_SH, KF_PH, KF_DH, KF_KH, KF_H, &h0, &h1);
            for (long long ow = 0; ow < KF_OW; ow++) {
                long long w0, w1;
                kf_window(ow, KF_SW, KF_PW, KF_DW, KF_KW, KF_W, &w0, &w1);
                float mv = -INFINITY;
                int64_t mi = h0 * KF_W + w0;
                for (long long ih = h0; ih < h1; ih += KF_DH)
                    for (long long iw = w0; iw < w1; iw += KF_DW) {
                        const float v = KF_LD(xp[ih * KF_W + iw]);
                        if (v > mv || v != v) {
                            mv = v;
                            mi = ih * KF_W + iw;
                        }
                    }
                const long long o = (p * KF_OH + oh) * KF_OW + ow;
                y[o] = KF_ST(mv);
                ind[o] = mi;
            }
        }
    }
#endif
}
