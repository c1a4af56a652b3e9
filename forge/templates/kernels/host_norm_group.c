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

#if !KF_CL
/* NCHW: a group is one block of D * HW elements, D runs of HW (a channel each) */
#define KF_GN ((double)(KF_D * KF_HW))

/* x, y: the group's first element; c0 its first channel */
static void kf_group(const float *restrict x, const float *restrict w, const float *restrict b,
                     float *restrict y, int64_t c0, float *restrict mean_out,
                     float *restrict rstd_out)
{
    double mean, var, s = 0.0, q = 0.0;
    (void)w, (void)b, (void)c0;
#if KF_VARIANCE == 0
    kf_sums(x, KF_D * KF_HW, 0.0, &s, &q);
    mean = s / KF_GN;
    s = 0.0, q = 0.0;
#else
    mean = (double)x[0];
#endif
    kf_sums(x, KF_D * KF_HW, mean, &s, &q);
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
    for (int64_t r = 0; r < KF_D; r++) {
        const float *restrict xr = x + r * KF_HW;
        float *restrict yr = y + r * KF_HW;
        float wc = 1.0f, bc = 0.0f;
#if KF_HAS_W
        wc = w[c0 + r];
#endif
#if KF_HAS_B
        bc = b[c0 + r];
#endif
#pragma omp simd
        for (int64_t j = 0; j < KF_HW; j++) {
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
    for (int64_t i = 0; i < KF_N * KF_G; i++)
        kf_group(x + i * KF_D * KF_HW, KF_W, KF_B, y + i * KF_D * KF_HW, i % KF_G * KF_D,
                 mean + i, rstd + i);
}
#else
/* Channels last: a task is KF_GB adjacent groups of one sample, walked pixel by pixel (a
 * pixel's KF_GB * D channels are adjacent), per-channel sums merged into the groups' (a group
 * alone would read a few floats of every cache line). */
#define KF_NB ((KF_G + KF_GB - 1) / KF_GB) /* tasks per sample */
#define KF_CB (KF_GB * KF_D)               /* channels of a task, at most */
#define KF_GN ((double)(KF_D * KF_HW))

/* x, y: the sample's first element; g0, ng: its groups; mean_out / rstd_out: group g0's */
static void kf_groups(const float *restrict x, const float *restrict w, const float *restrict b,
                      float *restrict y, int64_t g0, int64_t ng, float *restrict mean_out,
                      float *restrict rstd_out)
{
    const int64_t c0 = g0 * KF_D, nc = ng * KF_D;
    double s[KF_CB], q[KF_CB], k[KF_CB];
    float mf[KF_CB], ml[KF_CB], rf[KF_CB];
    (void)w, (void)b;
    for (int64_t c = 0; c < nc; c++) s[c] = q[c] = 0.0;
#if KF_VARIANCE == 0
    /* the groups' means, then sums of x - mean */
    for (int64_t p = 0; p < KF_HW; p++) {
        const float *restrict xp = x + p * KF_C + c0;
#pragma omp simd
        for (int64_t c = 0; c < nc; c++) s[c] += (double)xp[c];
    }
    for (int64_t g = 0; g < ng; g++) {
        double m = 0.0;
        for (int64_t c = g * KF_D; c < (g + 1) * KF_D; c++) m += s[c];
        for (int64_t c = g * KF_D; c < (g + 1) * KF_D; c++) k[c] = m / KF_GN, s[c] = 0.0;
    }
#else
    /* one pass, each channel shifted by its first pixel */
    for (int64_t c = 0; c < nc; c++) k[c] = (double)x[c0 + c];
#endif
    for (int64_t p = 0; p < KF_HW; p++) {
        const float *restrict xp = x + p * KF_C + c0;
#pragma omp simd
        for (int64_t c = 0; c < nc; c++) {
            double d = (double)xp[c] - k[c];
            s[c] += d;
            q[c] += d * d;
        }
    }
    for (int64_t g = 0; g < ng; g++) {
        /* Chan: channel c has HW elements of mean k + s / HW and M2 q - s^2 / HW */
        double mean = 0.0, m2 = 0.0;
        for (int64_t c = g * KF_D; c < (g + 1) * KF_D; c++) mean += k[c] + s[c] / (double)KF_HW;
        mean /= (double)KF_D;
        for (int64_t c = g * KF_D; c < (g + 1) * KF_D; c++) {
            double mc = k[c] + s[c] / (double)KF_HW, dm = mc - mean;
            m2 += q[c] - s[c] * (s[c] / (double)KF_HW) + (double)KF_HW * dm * dm;
        }
        double var = m2 / KF_GN;
        /* rounding may leave it a hair below 0; NaN (from inf - inf) stays NaN, as in eager */
        if (var < 0.0) var = 0.0;
        float gm = (float)mean, gr = (float)(1.0 / sqrt(var + (double)(float)KF_EPS));
        float gl = (float)(mean - (double)gm); /* x - mean as (x - mf) - ml */
        for (int64_t c = g * KF_D; c < (g + 1) * KF_D; c++) mf[c] = gm, ml[c] = gl, rf[c] = gr;
        mean_out[g] = gm;
        rstd_out[g] = gr;
    }
    for (int64_t p = 0; p < KF_HW; p++) {
        const float *restrict xp = x + p * KF_C + c0;
        float *restrict yp = y + p * KF_C + c0;
#pragma omp simd
        for (int64_t c = 0; c < nc; c++) {
            float v = ((xp[c] - mf[c]) - ml[c]) * rf[c];
#if KF_HAS_W
            v *= w[c0 + c];
#endif
#if KF_HAS_B
            v += b[c0 + c];
#endif
            yp[c] = v;
        }
    }
}

void kf_kernel(KF_PARAMS)
{
#if KF_OMP == 1
#pragma omp parallel for schedule(static)
#elif KF_OMP == 2
#pragma omp parallel for schedule(dynamic, 1)
#endif
    for (int64_t i = 0; i < KF_N * KF_NB; i++) {
        int64_t n = i / KF_NB, g0 = i % KF_NB * KF_GB;
        int64_t ng = KF_G - g0 < KF_GB ? KF_G - g0 : KF_GB;
        kf_groups(x + n * KF_HW * KF_C, KF_W, KF_B, y + n * KF_HW * KF_C, g0, ng,
                  mean + n * KF_G + g0, rstd + n * KF_G + g0);
    }
}
#endif
