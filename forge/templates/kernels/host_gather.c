/* host_gather: out[c] = src[so(c) + index[io(c)] * KF_GST] row by row (gather_ops.h). Every
 * index is checked first; one outside [0, KF_V) declines the call (KF_KERNEL_LATER: eager runs
 * and raises its error), before anything is written. */
#define KF_KERNEL_RETURNS_INT 1

int kf_kernel(const KF_T *restrict src, const KF_IDX *restrict idx, KF_T *restrict out)
{
    long long bad = 0;
#pragma omp simd reduction(| : bad)
    for (long long e = 0; e < KF_IN; e++) {
        const long long i = (long long)idx[kf_ix(e)];
        bad |= (i < 0) | (i >= KF_V);
    }
    if (bad) return 1000; /* KF_KERNEL_LATER */
#if KF_OMP
#pragma omp parallel for schedule(static)
#endif
    for (long long q = 0; q < KF_Q; q++) {
        const long long io = kf_io(q), oo = kf_oo(q);
        const KF_T *restrict s = src + kf_so(q);
#if KF_IST0 == 0
        /* one index per row (embedding, index_select off the last dim): a strided row copy */
        s += (long long)idx[io] * KF_GST;
        for (long long k = 0; k < KF_D0; k++) out[oo + k * KF_OST0] = s[k * KF_SST0];
#else
        for (long long k = 0; k < KF_D0; k++)
            out[oo + k * KF_OST0] = s[(long long)idx[io + k * KF_IST0] * KF_GST + k * KF_SST0];
#endif
    }
    return 0;
}
