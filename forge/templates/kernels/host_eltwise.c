#define KF_NCHUNK ((KF_N + KF_CHUNK - 1) / KF_CHUNK)
{
#if KF_OMP == 1
#pragma omp parallel for schedule(static)
#elif KF_OMP == 2
#pragma omp parallel for schedule(dynamic, 1)
#endif
    for (int64_t ck = 0; ck < KF_NCHUNK; ck++) {
        int64_t lo = ck * KF_CHUNK, n = KF_N - lo < KF_CHUNK ? KF_N - lo : KF_CHUNK;
        int64_t hi = lo + n - n % KF_UNROLL;
        for (int64_t i = lo; i < hi; i += KF_UNROLL)
            for (int u = 0; u < KF_UNROLL; u++) KF_F(i + u);
        for (int t = 0; t < (int)(n % KF_UNROLL); t++) KF_F(hi + t); /* tail */
    }
}
