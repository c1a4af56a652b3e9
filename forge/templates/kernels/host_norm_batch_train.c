#define KF_CNT ((double)(KF_N * KF_HW)) /* values per channel */

/* Channel c's statistics (mean, sum of squared deviations) into the saved ones and the running
 * ones, as eager's CPU kernel computes them; its y terms a and s, from the saved floats. */
static void kf_finish(int64_t c, double mean, double q, const float *restrict w,
                      const float *restrict b, float *restrict rm, float *restrict rv,
                      float *restrict save_mean,
                      float *restrict save_invstd, float *restrict a, float *restrict s)
{
    float m = (float)mean, inv = (float)(1.0 / sqrt(q / KF_CNT + KF_EPS)), wc = 1.0f, bc = 0.0f;
    save_mean[c] = m;
    save_invstd[c] = inv;
#if KF_RUNNING
    rm[c] = (float)(KF_MOMENTUM * mean + (1.0 - KF_MOMENTUM) * (double)rm[c]);
    rv[c] = (float)(KF_MOMENTUM * (q / (KF_CNT - 1.0)) + (1.0 - KF_MOMENTUM) * (double)rv[c]);
#endif
#if KF_HAS_W
    wc = w[c];
#endif
#if KF_HAS_B
    bc = b[c];
#endif
    (void)w, (void)b, (void)rm, (void)rv;
    *a = inv * wc;
    *s = fmaf(-m, *a, bc);
}

void kf_kernel(KF_PARAMS)
{
#if !KF_CL
    /* a channel is N planes of HW adjacent elements */
#if KF_OMP == 1
#pragma omp parallel for schedule(static)
#elif KF_OMP == 2
#pragma omp parallel for schedule(dynamic, 1)
#endif
    for (int64_t c = 0; c < KF_C; c++) {
        double sum = 0.0, q = 0.0;
        for (int64_t n = 0; n < KF_N; n++) {
            const float *restrict xp = x + (n * KF_C + c) * KF_HW;
#pragma omp simd reduction(+ : sum)
            for (int64_t j = 0; j < KF_HW; j++) sum += (double)xp[j];
        }
        const double mean = sum / KF_CNT;
        for (int64_t n = 0; n < KF_N; n++) {
            const float *restrict xp = x + (n * KF_C + c) * KF_HW;
#pragma omp simd reduction(+ : q)
            for (int64_t j = 0; j < KF_HW; j++) {
                double d = (double)xp[j] - mean;
                q += d * d;
            }
        }
        float a, s;
        kf_finish(c, mean, q, KF_W, KF_B, KF_RM, KF_RV, save_mean, save_invstd, &a, &s);
        for (int64_t n = 0; n < KF_N; n++) {
            const float *restrict xp = x + (n * KF_C + c) * KF_HW;
            float *restrict yp = y + (n * KF_C + c) * KF_HW;
#pragma omp simd
            for (int64_t j = 0; j < KF_HW; j++) yp[j] = fmaf(xp[j], a, s);
        }
    }
#else
    /* channels last: a task is KF_CB adjacent channels, walked pixel by pixel */
#define KF_NT ((KF_C + KF_CB - 1) / KF_CB)
#if KF_OMP == 1
#pragma omp parallel for schedule(static)
#elif KF_OMP == 2
#pragma omp parallel for schedule(dynamic, 1)
#endif
    for (int64_t t = 0; t < KF_NT; t++) {
        const int64_t c0 = t * KF_CB, nc = KF_C - c0 < KF_CB ? KF_C - c0 : KF_CB;
        double sum[KF_CB], q[KF_CB], mean[KF_CB];
        float a[KF_CB], s[KF_CB];
        for (int64_t c = 0; c < nc; c++) sum[c] = q[c] = 0.0;
        for (int64_t p = 0; p < KF_N * KF_HW; p++) {
            const float *restrict xp = x + p * KF_C + c0;
#pragma omp simd
            for (int64_t c = 0; c < nc; c++) sum[c] += (double)xp[c];
        }
        for (int64_t c = 0; c < nc; c++) mean[c] = sum[c] / KF_CNT;
        for (int64_t p = 0; p < KF_N * KF_HW; p++) {
            const float *restrict xp = x + p * KF_C + c0;
#pragma omp simd
            for (int64_t c = 0; c < nc; c++) {
                double d = (double)xp[c] - mean[c];
                q[c] += d * d;
            }
        }
        for (int64_t c = 0; c < nc; c++)
            kf_finish(c0 + c, mean[c], q[c], KF_W, KF_B, KF_RM, KF_RV, save_mean, save_invstd,
                      &a[c], &s[c]);
        for (int64_t p = 0; p < KF_N * KF_HW; p++) {
            const float *restrict xp = x + p * KF_C + c0;
            float *restrict yp = y + p * KF_C + c0;
#pragma omp simd
            for (int64_t c = 0; c < nc; c++) yp[c] = fmaf(xp[c], a[c], s[c]);
        }
    }
#endif
}
