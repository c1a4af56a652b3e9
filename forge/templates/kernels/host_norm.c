/* the unrolled part of a row; a constant, so an empty tail loop is visibly empty */
#define KF_BODY (KF_N - KF_N % KF_UNROLL)
static void kf_row(const float *restrict x, const float *restrict w,
                   const float *restrict b,
                   float *restrict y, float *restrict mean_out, float *restrict rstd_out)
{
    double mean, var;
    int64_t j;
    (void)w, (void)b;
#if KF_VARIANCE == 0 && KF_UNROLL == 1
    double s = 0.0, q = 0.0;
#pragma omp simd reduction(+ : s)
    for (j = 0; j < KF_N; j++) s += (double)x[j];
    mean = s / (double)KF_N;
#pragma omp simd reduction(+ : q)
    for (j = 0; j < KF_N; j++) {
        double d = (double)x[j] - mean;
        q += d * d;
    }
    var = q / (double)KF_N;
#elif KF_VARIANCE == 0
    double sa[KF_UNROLL], qa[KF_UNROLL];
    for (int u = 0; u < KF_UNROLL; u++) sa[u] = 0.0, qa[u] = 0.0;
    for (j = 0; j < KF_BODY; j += KF_UNROLL)
        for (int u = 0; u < KF_UNROLL; u++) sa[u] += (double)x[j + u];
    for (j = KF_BODY; j < KF_N; j++) sa[0] += (double)x[j];
    double s = 0.0;
    for (int u = 0; u < KF_UNROLL; u++) s += sa[u];
    mean = s / (double)KF_N;
    for (j = 0; j < KF_BODY; j += KF_UNROLL)
        for (int u = 0; u < KF_UNROLL; u++) {
            double d = (double)x[j + u] - mean;
            qa[u] += d * d;
        }
    for (j = KF_BODY; j < KF_N; j++) {
        double d = (double)x[j] - mean;
        qa[0] += d * d;
    }
    double q = 0.0;
    for (int u = 0; u < KF_UNROLL; u++) q += qa[u];
    var = q / (double)KF_N;
#elif KF_VARIANCE == 1
    /* every lane has seen `cnt` elements after the blocked loop */
    double wm[KF_UNROLL], wq[KF_UNROLL];
    for (int u = 0; u < KF_UNROLL; u++) wm[u] = 0.0, wq[u] = 0.0;
    int64_t cnt = 0;
    for (j = 0; j < KF_BODY; j += KF_UNROLL) {
        double inv = 1.0 / (double)++cnt;
        for (int u = 0; u < KF_UNROLL; u++) {
            double v = (double)x[j + u], d = v - wm[u];
            wm[u] += d * inv;
            wq[u] += d * (v - wm[u]);
        }
    }
    double n = (double)cnt;
    mean = wm[0];
    double q = wq[0];
    /* Chan: merge lane u (cnt, wm[u], wq[u]) into (n, mean, q) */
    for (int u = 1; u < KF_UNROLL && cnt > 0; u++) {
        double d = wm[u] - mean, nn = n + (double)cnt;
        mean += d * ((double)cnt / nn);
        q += wq[u] + d * d * (n * (double)cnt / nn);
        n = nn;
    }
    for (j = KF_BODY; j < KF_N; j++) {
        double v = (double)x[j], d = v - mean;
        n += 1.0;
        mean += d / n;
        q += d * (v - mean);
    }
    var = q / (double)KF_N;
#else
    /* sums of d = x - x[0] and d^2 */
    const double k = (double)x[0];
#if KF_UNROLL == 1
    double s = 0.0, q = 0.0;
#pragma omp simd reduction(+ : s, q)
    for (j = 0; j < KF_N; j++) {
        double d = (double)x[j] - k;
        s += d;
        q += d * d;
    }
#else
    double sa[KF_UNROLL], qa[KF_UNROLL];
    for (int u = 0; u < KF_UNROLL; u++) sa[u] = 0.0, qa[u] = 0.0;
    for (j = 0; j < KF_BODY; j += KF_UNROLL)
        for (int u = 0; u < KF_UNROLL; u++) {
            double d = (double)x[j + u] - k;
            sa[u] += d;
            qa[u] += d * d;
        }
    for (j = KF_BODY; j < KF_N; j++) {
        double d = (double)x[j] - k;
        sa[0] += d;
        qa[0] += d * d;
    }
    double s = 0.0, q = 0.0;
    for (int u = 0; u < KF_UNROLL; u++) s += sa[u], q += qa[u];
#endif
    double ds = s / (double)KF_N;
    mean = k + ds;
    var = q / (double)KF_N - ds * ds;
#endif
    /* rounding may leave it a hair below 0; NaN (from inf - inf) stays NaN, as in eager */
    if (var < 0.0) var = 0.0;
    float mf = (float)mean, rf = (float)(1.0 / sqrt(var + (double)(float)KF_EPS));
    /* x - mean as (x - mf) - ml: mf's rounding error would be a large share of a small
     * deviation from a large mean (x near 1000: 3e-5) */
    float ml = (float)(mean - (double)mf);
#pragma omp simd
    for (j = 0; j < KF_N; j++) {
        float v = ((x[j] - mf) - ml) * rf;
#if KF_HAS_W
        v *= w[j];
#endif
#if KF_HAS_B
        v += b[j];
#endif
        y[j] = v;
    }
    *mean_out = mf;
    *rstd_out = rf;
}

#ifndef KF_STRIDED /* a contiguous input: row r at r * KF_N */
void kf_kernel(KF_PARAMS)
{
#if KF_OMP == 1
#pragma omp parallel for schedule(static)
#elif KF_OMP >= 2
#pragma omp parallel for schedule(dynamic, KF_RPC)
#endif
    for (int64_t r = 0; r < KF_ROWS; r++)
        kf_row(x + r * KF_N, KF_W, KF_B, y + r * KF_N, mean + r, rstd + r);
}
#elif KF_XDENSE /* a strided input whose rows are blocks of adjacent elements */
void kf_kernel(KF_PARAMS)
{
#if KF_OMP == 1
#pragma omp parallel for schedule(static)
#elif KF_OMP >= 2
#pragma omp parallel for schedule(dynamic, KF_RPC)
#endif
    for (int64_t r = 0; r < KF_ROWS; r++)
        kf_row(x + kf_xrow(r), KF_W, KF_B, y + r * KF_N, mean + r, rstd + r);
}
#else /* a strided input gathered KF_TILE rows at a time (y is contiguous) */
#define KF_TILES ((KF_ROWS + KF_TILE - 1) / KF_TILE)
void kf_kernel(KF_PARAMS)
{
#if KF_OMP == 1
#pragma omp parallel for schedule(static)
#elif KF_OMP >= 2
#pragma omp parallel for schedule(dynamic, KF_RPC)
#endif
    for (int64_t t = 0; t < KF_TILES; t++) {
        float buf[KF_TILE * KF_N];
        int64_t ro[KF_TILE], r0 = t * KF_TILE;
        int nr = KF_ROWS - r0 < KF_TILE ? (int)(KF_ROWS - r0) : KF_TILE;
        for (int i = 0; i < nr; i++) ro[i] = kf_xrow(r0 + i);
        for (int64_t j = 0; j < KF_N; j++) {
            const float *xe = x + kf_xel(j);
            for (int i = 0; i < nr; i++) buf[i * KF_N + j] = xe[ro[i]];
        }
        for (int i = 0; i < nr; i++)
            kf_row(buf + i * KF_N, KF_W, KF_B, y + (r0 + i) * KF_N, mean + r0 + i,
                   rstd + r0 + i);
    }
}
#endif
