void kf_kernel(KF_PARAMS)
{
    /* eager's per-channel terms, in its order and in float, its multiply-adds fused as its
     * vectorized CPU kernel's are (bit-identical results; with invstd near 1 / sqrt(eps) an
     * unfused s is an ulp of mean * a off, past the tolerance where that product is large) */
    float a[KF_C], s[KF_C];
    const float *wp = KF_W, *bp = KF_B;
    (void)wp, (void)bp, (void)save_mean, (void)save_invstd;
    for (int64_t c = 0; c < KF_C; c++) {
        float inv = 1.0f / sqrtf(rv[c] + (float)KF_EPS), wc = 1.0f, bc = 0.0f;
#if KF_HAS_W
        wc = wp[c];
#endif
#if KF_HAS_B
        bc = bp[c];
#endif
        a[c] = inv * wc;
        s[c] = fmaf(-rm[c], a[c], bc);
    }
#if KF_CL
    /* a pixel's C channels are adjacent */
#if KF_OMP == 1
#pragma omp parallel for schedule(static)
#elif KF_OMP >= 2
#pragma omp parallel for schedule(dynamic, KF_IPC)
#endif
    for (int64_t p = 0; p < KF_N * KF_HW; p++) {
        const float *restrict xp = x + p * KF_C;
        float *restrict yp = y + p * KF_C;
#pragma omp simd
        for (int64_t c = 0; c < KF_C; c++) yp[c] = fmaf(xp[c], a[c], s[c]);
    }
#else
    /* a plane: one channel of one sample, HW adjacent elements */
#if KF_OMP == 1
#pragma omp parallel for schedule(static)
#elif KF_OMP >= 2
#pragma omp parallel for schedule(dynamic, KF_IPC)
#endif
    for (int64_t i = 0; i < KF_N * KF_C; i++) {
        const float ac = a[i % KF_C], sc = s[i % KF_C];
        const float *restrict xp = x + i * KF_HW;
        float *restrict yp = y + i * KF_HW;
#pragma omp simd
        for (int64_t j = 0; j < KF_HW; j++) yp[j] = fmaf(xp[j], ac, sc);
    }
#endif
}
