#if KF_MATH
#define KF_EXP(v) kf_expf_neg(v) /* arguments are x - max <= 0, or NaN */
#else
#define KF_EXP(v) expf(v)
#endif
#if KF_MATH && KF_COLS >= 16
/* The vector loops run over whole vectors of KF_VW columns; the last KF_TAIL columns are
 * done as one more whole vector that overlaps the one before (KF_OV..KF_COLS), its first
 * KF_DUP lanes left out of the sums, rather than by a scalar epilogue. */
#define KF_VW 16
#define KF_MAIN (KF_COLS - KF_COLS % KF_VW)
#else
#define KF_VW 1
#define KF_MAIN KF_COLS
#endif
#define KF_TAIL (KF_COLS - KF_MAIN)
#define KF_OV (KF_COLS - KF_VW)
#define KF_DUP (KF_VW - KF_TAIL)
/* the unrolled part of a row; a constant, so an empty tail loop is visibly empty */
#define KF_BODY (KF_COLS - KF_COLS % KF_UNROLL)

#if KF_STRATEGY == 1 && KF_MATH
/* online by blocks: fold p[0..n) (but p[0..lo) only into the max: they are counted
 * already) into the running max *m and sum *s of exp(x - *m): the block's max, the sum
 * rescaled to it once, then the block's exps, all branch-free; c = 0 while every element so
 * far is -inf (so that -inf - c is -inf, not NaN) */
static inline void kf_online(const float *restrict p, int64_t n, int64_t lo, float *m,
                             float *s)
{
    float bm = *m, bs = 0.0f;
#pragma omp simd reduction(max : bm)
    for (int64_t j = 0; j < n; j++) bm = p[j] > bm ? p[j] : bm;
    float c = bm == -INFINITY ? 0.0f : bm;
#pragma omp simd reduction(+ : bs)
    for (int64_t j = 0; j < n; j++) {
        float e = KF_EXP(p[j] - c);
        bs += j >= lo ? e : 0.0f;
    }
    *s = *s * KF_EXP(*m - c) + bs;
    *m = bm;
}
#endif

static void kf_row(const float *restrict x, float *restrict y)
{
    float m, s;
    int64_t j;
#if KF_STRATEGY == 0 && KF_UNROLL == 1
    m = -INFINITY;
#pragma omp simd reduction(max : m)
    for (j = 0; j < KF_MAIN; j++) m = x[j] > m ? x[j] : m;
#if KF_TAIL
#pragma omp simd reduction(max : m)
    for (j = KF_OV; j < KF_COLS; j++) m = x[j] > m ? x[j] : m;
#endif
    s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (j = 0; j < KF_MAIN; j++) {
        float e = KF_EXP(x[j] - m);
#if !KF_LOG
        y[j] = e;
#endif
        s += e;
    }
#if KF_TAIL
#pragma omp simd reduction(+ : s)
    for (j = KF_OV; j < KF_COLS; j++) {
        float e = KF_EXP(x[j] - m); /* the same value again in the KF_DUP lanes */
#if !KF_LOG
        y[j] = e;
#endif
        s += j >= KF_MAIN ? e : 0.0f;
    }
#endif
#elif KF_STRATEGY == 0
    float mx[KF_UNROLL], sm[KF_UNROLL];
    for (int u = 0; u < KF_UNROLL; u++) mx[u] = -INFINITY, sm[u] = 0.0f;
    for (j = 0; j < KF_BODY; j += KF_UNROLL)
        for (int u = 0; u < KF_UNROLL; u++) mx[u] = x[j + u] > mx[u] ? x[j + u] : mx[u];
    for (j = KF_BODY; j < KF_COLS; j++) mx[0] = x[j] > mx[0] ? x[j] : mx[0];
    m = mx[0];
    for (int u = 1; u < KF_UNROLL; u++) m = mx[u] > m ? mx[u] : m;
    for (j = 0; j < KF_BODY; j += KF_UNROLL)
        for (int u = 0; u < KF_UNROLL; u++) {
            float e = KF_EXP(x[j + u] - m);
#if !KF_LOG
            y[j + u] = e;
#endif
            sm[u] += e;
        }
    for (j = KF_BODY; j < KF_COLS; j++) {
        float e = KF_EXP(x[j] - m);
#if !KF_LOG
        y[j] = e;
#endif
        sm[0] += e;
    }
    s = 0.0f;
    for (int u = 0; u < KF_UNROLL; u++) s += sm[u];
#elif KF_MATH
#define KF_OBLK (256 * KF_UNROLL)
    m = -INFINITY;
    s = 0.0f;
    for (j = 0; j < KF_MAIN; j += KF_OBLK)
        kf_online(x + j, KF_MAIN - j < KF_OBLK ? KF_MAIN - j : KF_OBLK, 0, &m, &s);
#if KF_TAIL
    kf_online(x + KF_OV, KF_VW, KF_DUP, &m, &s);
#endif
#else
    /* online: lane u keeps max mm[u] and sum ss[u] of exp(x - mm[u]); -inf adds nothing */
    float mm[KF_UNROLL], ss[KF_UNROLL];
    for (int u = 0; u < KF_UNROLL; u++) mm[u] = -INFINITY, ss[u] = 0.0f;
#define KF_ONLINE(u, v)                                   \
    do {                                                  \
        float v_ = (v);                                   \
        if (v_ > mm[u]) {                                 \
            ss[u] = ss[u] * expf(mm[u] - v_) + 1.0f;      \
            mm[u] = v_;                                   \
        } else if (v_ != -INFINITY) {                     \
            ss[u] += expf(v_ - mm[u]);                    \
        }                                                 \
    } while (0)
    for (j = 0; j < KF_BODY; j += KF_UNROLL)
        for (int u = 0; u < KF_UNROLL; u++) KF_ONLINE(u, x[j + u]);
    for (j = KF_BODY; j < KF_COLS; j++) KF_ONLINE(0, x[j]);
    m = mm[0];
    for (int u = 1; u < KF_UNROLL; u++) m = mm[u] > m ? mm[u] : m;
    s = 0.0f;
    for (int u = 0; u < KF_UNROLL; u++)
        if (ss[u] != 0.0f) s += ss[u] * expf(mm[u] - m);
#endif
    /* the output, from x alone (so the overlapping last vector may write it twice) except
     * for the rescale of softmax's stored exps, which leaves the KF_DUP lanes alone */
#if KF_LOG
    float ls = logf(s);
#pragma omp simd
    for (j = 0; j < KF_MAIN; j++) y[j] = (x[j] - m) - ls;
#if KF_TAIL
#pragma omp simd
    for (j = KF_OV; j < KF_COLS; j++) y[j] = (x[j] - m) - ls;
#endif
#else
    float r = 1.0f / s;
#if KF_STRATEGY == 0 && KF_UNROLL > 1
#pragma omp simd
    for (j = 0; j < KF_COLS; j++) y[j] *= r; /* the lanes wrote each y once */
#elif KF_STRATEGY == 0
#pragma omp simd
    for (j = 0; j < KF_MAIN; j++) y[j] *= r;
#if KF_TAIL
#pragma omp simd
    for (j = KF_OV; j < KF_COLS; j++) y[j] *= j >= KF_MAIN ? r : 1.0f;
#endif
#else
#pragma omp simd
    for (j = 0; j < KF_MAIN; j++) y[j] = KF_EXP(x[j] - m) * r;
#if KF_TAIL
#pragma omp simd
    for (j = KF_OV; j < KF_COLS; j++) y[j] = KF_EXP(x[j] - m) * r;
#endif
#endif
#endif
}

/* rows: a launch argument (a family kernel: any row count of KF_COLS columns) */
void kf_kernel(const float *restrict x, float *restrict y, int64_t rows)
{
#if KF_OMP == 1
#pragma omp parallel for schedule(static)
#elif KF_OMP >= 2
#pragma omp parallel for schedule(dynamic, KF_RPC)
#endif
    for (int64_t r = 0; r < rows; r++) kf_row(x + r * KF_COLS, y + r * KF_COLS);
}
