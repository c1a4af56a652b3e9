/* Sums of x[j] - k and of its square over n adjacent elements, added to *s and *q. */
static inline void kf_sums(const float *restrict x, int64_t n, double k, double *s, double *q)
{
#if KF_UNROLL == 1
    double a = 0.0, c = 0.0;
#pragma omp simd reduction(+ : a, c)
    for (int64_t j = 0; j < n; j++) {
        double d = (double)x[j] - k;
        a += d;
        c += d * d;
    }
#else
    double sa[KF_UNROLL], qa[KF_UNROLL];
    for (int u = 0; u < KF_UNROLL; u++) sa[u] = 0.0, qa[u] = 0.0;
    int64_t j, body = n - n % KF_UNROLL;
    for (j = 0; j < body; j += KF_UNROLL)
        for (int u = 0; u < KF_UNROLL; u++) {
            double d = (double)x[j + u] - k;
            sa[u] += d;
            qa[u] += d * d;
        }
    for (; j < n; j++) {
        double d = (double)x[j] - k;
        sa[0] += d;
        qa[0] += d * d;
    }
    double a = 0.0, c = 0.0;
    for (int u = 0; u < KF_UNROLL; u++) a += sa[u], c += qa[u];
#endif
    *s += a;
    *q += c;
}

/* A group's runs: NCHW one block of D * HW elements for the statistics, D runs of HW (one per
 * channel) for y; channels last HW runs of D (a pixel's channels of the group), C apart. */
#if KF_CL
#define KF_SRUNS KF_HW
#define KF_SRUN KF_D
#define KF_RUNS KF_HW
#define KF_RUN KF_D
#define KF_STEP KF_C
#else
#define KF_SRUNS 1
#define KF_SRUN (KF_D * KF_HW)
#define KF_RUNS KF_D
#define KF_RUN KF_HW
#define KF_STEP KF_HW
#endif
#define KF_GN ((double)(KF_D * KF_HW))

/* x, y: the group's first element; c0 its first channel */
static void kf_group(const float *restrict x, const float *restrict w, const float *restrict b,
                     float *restrict y, int64_t c0, float *restrict mean_out,
                     float *restrict rstd_out)
{
    double mean, var, s = 0.0, q = 0.0;
    (void)w, (void)b, (void)c0;
#if KF_VARIANCE == 0
    for (int64_t r = 0; r < KF_SRUNS; r++) kf_sums(x + r * KF_STEP, KF_SRUN, 0.0, &s, &q);
    mean = s / KF_GN;
    s = 0.0, q = 0.0;
    for (int64_t r = 0; r < KF_SRUNS; r++) kf_sums(x + r * KF_STEP, KF_SRUN, mean, &s, &q);
#else
    mean = (double)x[0];
    for (int64_t r = 0; r < KF_SRUNS; r++) kf_sums(x + r * KF_STEP, KF_SRUN, mean, &s, &q);
#endif
    /* the remaining offset of the mean: 0 up to rounding after two passes */
    double ds = s / KF_GN;
    mean += ds;
    var = q / KF_GN - ds * ds;
    /* rounding may leave it a hair below 0; NaN (from inf - inf) stays NaN, as in eager */
    if (var < 0.0) var = 0.0;
    float mf = (float)mean, rf = (float)(1.0 / sqrt(var + (double)(float)KF_EPS));
    /* x - mean as (x - mf) - ml: mf's rounding error would be a large share of a small
     * deviation from a large mean */
    float ml = (float)(mean - (double)mf);
    for (int64_t r = 0; r < KF_RUNS; r++) {
        const float *restrict xr = x + r * KF_STEP;
        float *restrict yr = y + r * KF_STEP;
#if KF_CL
#pragma omp simd
        for (int64_t j = 0; j < KF_RUN; j++) {
            float v = ((xr[j] - mf) - ml) * rf;
#if KF_HAS_W
            v *= w[c0 + j];
#endif
#if KF_HAS_B
            v += b[c0 + j];
#endif
            yr[j] = v;
        }
#else
        float wc = 1.0f, bc = 0.0f;
#if KF_HAS_W
        wc = w[c0 + r];
#endif
#if KF_HAS_B
        bc = b[c0 + r];
#endif
#pragma omp simd
        for (int64_t j = 0; j < KF_RUN; j++) {
            float v = ((xr[j] - mf) - ml) * rf;
#if KF_HAS_W
            v *= wc;
#endif
#if KF_HAS_B
            v += bc;
#endif
            yr[j] = v;
        }
        (void)wc, (void)bc;
#endif
    }
    *mean_out = mf;
    *rstd_out = rf;
}

void kf_kernel(KF_PARAMS)
{
#if KF_OMP == 1
#pragma omp parallel for schedule(static)
#elif KF_OMP == 2
#pragma omp parallel for schedule(dynamic, 1)
#endif
    for (int64_t i = 0; i < KF_N * KF_G; i++) {
        int64_t n = i / KF_G, g = i % KF_G;
        int64_t base = KF_CL ? n * KF_HW * KF_C + g * KF_D : i * KF_D * KF_HW;
        kf_group(x + base, KF_W, KF_B, y + base, g * KF_D, mean + i, rstd + i);
    }
}
